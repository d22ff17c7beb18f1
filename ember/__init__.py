"""ember: a define-by-run deep-learning framework with PyTorch's API and pluggable
hardware backends.

    import ember
    x = ember.randn(3, 4, requires_grad=True)
    (x @ x.T).sum().backward()
"""

# ruff: noqa: I001 - the import order below matters (see the two comments)

# Before anything imports NumPy: point OpenBLAS at the kernels this CPU can run (it reads
# OPENBLAS_CORETYPE once, when it loads). Does nothing if NumPy is already imported.
from ember.backends.cpu import blas as _blas

_blas.configure_before_numpy()

# The tensor module first: importing it binds the Tensor methods from ember.core.functions,
# which the other core modules need.
from ember.core.tensor import Size, Tensor  # noqa: E402, F401
from ember import autograd, utils  # noqa: E402, F401
from ember.core.autograd import (  # noqa: E402, F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.core.creation import (  # noqa: E402, F401
    Generator,
    default_generator,
    get_default_device,
    initial_seed,
    set_default_device,
)
from ember.core.device import device  # noqa: E402, F401
from ember.core.dtype import (  # noqa: E402, F401
    bfloat16,
    can_cast,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from ember.core.dtype import bool_ as bool  # noqa: E402, A001, F401
from ember.core.foreach import *  # noqa: E402, F401, F403 - the _foreach_* list ops
from ember.core.foreach import _foreach_norm  # noqa: E402, F401
from ember.core.nnops import (  # noqa: E402, F401
    _fused_lstm_cell, _fused_lstm_cell_backward, _fused_lstm_layer, _fused_lstm_layer_backward)
from ember.core.functions import *  # noqa: E402, F401, F403
from ember.core.functions import (  # noqa: E402, F401 - names `import *` skips or shadows
    abs,
    all,
    any,
    max,
    min,
    pow,
    round,
    sum,
)
from ember.core.nnops import (  # noqa: E402, F401
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    col2im,
    constant_pad_nd,
    conv1d,
    conv2d,
    conv_transpose2d,
    cross_entropy,
    im2col,
    layer_norm,
    linear,
    max_pool1d,
    max_pool2d,
)
from ember.serialization import load, save  # noqa: E402, F401

half, double, long, short = float16, float64, int64, int16
float = float32  # noqa: A001 - PyTorch's alias
int = int32  # noqa: A001

__version__ = "0.1.0"


def is_tensor(obj: object) -> "builtins.bool":
    """True if `obj` is an ember Tensor."""
    return isinstance(obj, Tensor)


def devices() -> list:
    """Every device that can be used now, e.g. `[device(type='cpu'), ...]`."""
    from ember.core import scheduler

    out = []
    for backend in sorted(scheduler.available_backends(), key=lambda b: b.name != "cpu"):
        if backend.name == "cpu":
            out.append(device("cpu"))
        else:
            out.extend(device(backend.name, i) for i in range(backend.device_count()))
    return out


import builtins  # noqa: E402


_SUBMODULES = {"nn", "optim", "jit", "onnx", "exporters", "testing", "demo", "cli"}


def __getattr__(name: str):
    """`ember.nn`, `ember.optim` ... import on first use (keeps `import ember` fast)."""
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute {name!r}")
