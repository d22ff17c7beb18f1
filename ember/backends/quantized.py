"""`ember.backends.quantized`, as `torch.backends.quantized`: the quantized engine a script
selects (`torch.backends.quantized.engine = "x86"`). ember's quantized kernels compute
what FBGEMM (the x86 engine) computes whichever engine is named; the names PyTorch's x86
build supports are accepted, others refused as PyTorch refuses them."""

from __future__ import annotations

import sys
from types import ModuleType

supported_engines = ["qnnpack", "onednn", "x86", "fbgemm"]


class _QuantizedModule(ModuleType):
    """The module's class: `engine` is checked when set."""

    _engine = "x86"

    @property
    def engine(self) -> str:
        return self._engine

    @engine.setter
    def engine(self, name: str) -> None:
        if name not in supported_engines:
            raise RuntimeError(f"{name} is not a valid value for quantized engine")
        type(self)._engine = name


sys.modules[__name__].__class__ = _QuantizedModule
