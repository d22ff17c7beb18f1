"""`ember._tensor` (torch._tensor): where PyTorch programs import `Tensor` and `_convert`
(the default `__torch_function__`'s conversion of results to a subclass) from."""

from __future__ import annotations

from ember.core.tensor import Tensor  # noqa: F401 - re-exported
from ember.core.torch_function import convert as _convert  # noqa: F401
