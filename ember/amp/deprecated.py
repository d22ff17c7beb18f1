"""The FutureWarning of PyTorch's deprecated per-device spellings (`torch.cuda.amp.*`,
`torch.cpu.amp.*`), naming the API as the program imported it."""

from __future__ import annotations

import warnings

from ember.core import dtype as dt


def warn_device_amp(device_type: str, name: str, stacklevel: int = 3) -> None:
    """Warn that `<api>.<device_type>.amp.<name>(args...)` is deprecated, as PyTorch does."""
    api = dt.API_NAME
    warnings.warn(f"`{api}.{device_type}.amp.{name}(args...)` is deprecated. Please use "
                  f"`{api}.amp.{name}('{device_type}', args...)` instead.", FutureWarning,
                  stacklevel=stacklevel)
