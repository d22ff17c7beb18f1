"""ember's built-in backends, and `ember.backends` as `torch.backends`.

Each backend here (cpu, cuda, opencl) is a plugin registered through the `ember.backends`
entry points, exactly as a third party's is; core never imports them by name.

The same package answers the flags that PyTorch scripts touch, so that they run
unchanged: `ember.backends.cudnn.benchmark = True`, `ember.backends.cuda.matmul.allow_tf32`,
`ember.backends.mps.is_available()`, `ember.backends.cpu.get_cpu_capability()`. Each
submodule loads on first use, and none of them imports CuPy, pyopencl or NumPy.
"""

from __future__ import annotations

import importlib
from types import ModuleType

_SUBMODULES = ("cpu", "cuda", "opencl", "cudnn", "mps", "quantized", "xp", "mkldnn", "mkl",
               "openmp", "nnpack", "opt_einsum", "mha")


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
