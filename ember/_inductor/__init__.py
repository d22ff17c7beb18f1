"""`torch._inductor`: the names programs touch around `torch.compile` (its `config`).
ember's compiler replays recorded kernels (ember.jit.compiled); see config.py."""

from __future__ import annotations

from ember._inductor import config

__all__ = ["config"]
