"""`torch.utils.hooks`: the handle every `register_*_hook` returns."""

from ember.core.hooks import RemovableHandle

__all__ = ["RemovableHandle"]
