"""`ember.utils.model_zoo.load_url`: PyTorch's old name for
`ember.hub.load_state_dict_from_url`."""

from __future__ import annotations

from ember.hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
