"""Where the CPU backend runs numba-compiled kernels (numba_kernels.py) instead of NumPy.

numba is imported on the first call that qualifies (not by ``import ember``, nor by the
CPU backend's import): importing it takes ~0.5 s and loading the kernels from numba's disk
cache ~0.1 s more (compiling them, on a fresh checkout, a few seconds). Calls that do not
qualify keep the NumPy kernel:

- float32 only for the transcendental functions: on float64, numba calls libm's scalar
  functions (the llvmlite wheels have no SVML), 4-5x slower than NumPy's SIMD loops;
- contiguous arrays with ``out`` either absent or a contiguous array of the same dtype
  and shape that is the input itself or does not overlap it;
- from a size on (measured on a 2-core AMD EPYC Zen 4 with AVX-512, float32, time per
  call NumPy / numba): ``sigmoid`` (NumPy: five passes) 6.2/0.7 us at 1k elements,
  27/7.5 us at 16k; ``tanh`` 7.0/5.7 us and ``exp`` 9.8/7.5 us at 16k (NumPy's own SIMD
  loops: ~0.4 ns an element, the compiled ones ~0.3); the backward formulas
  ``tanh_backward``/``sigmoid_backward`` (NumPy: three passes) 3.7/1.5 us at 4k. Below
  ``_FIRST_USE`` elements nothing loads numba, so a program of small tensors never pays
  its import. ``log`` stays NumPy (its SIMD loop beats the compiled one: 6.4/9.9 us).
- from ``_PARALLEL`` elements on, the loops run on all cores (numba's ``prange``); below,
  waking the threads costs more than it saves (and on a loaded machine a parallel call
  waits for its slowest thread).

``EMBER_NUMBA=0`` turns all of it off (NumPy everywhere). Without numba installed, or if
it fails to load or compile, the NumPy kernels run; the reason is kept in
:data:`unavailable` (and shown by a warning once, for a failure other than a missing
numba).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)

_FIRST_USE = 1024
_UNARY_MIN = {"sigmoid": 1024, "tanh": 16384, "exp": 16384}  # float32 elements
_BACKWARD_MIN = 1024  # float32 and float64
_PARALLEL = 1 << 20

_module: ModuleType | None = None
unavailable: str | None = None  # why the compiled kernels are off, once known


def kernels() -> ModuleType | None:
    """numba_kernels, imported on the first call; None where numba is off or missing."""
    global _module, unavailable
    if _module is None and unavailable is None:
        if os.environ.get("EMBER_NUMBA", "1") == "0":
            unavailable = "turned off by EMBER_NUMBA=0"
        else:
            try:
                from ember.backends.cpu import numba_kernels
            except ImportError as e:
                unavailable = f"numba cannot be imported ({e})"
            except Exception as e:  # noqa: BLE001 - a broken numba must not break ember
                _disable(e)
            else:
                _module = numba_kernels
    return _module


def _disable(error: BaseException) -> None:
    global _module, unavailable
    _module = None
    unavailable = f"numba failed: {type(error).__name__}: {error}"
    warnings.warn(f"ember's CPU backend: {unavailable}; running NumPy's kernels instead",
                  RuntimeWarning, stacklevel=3)


def _flat_out(x: np.ndarray, out: np.ndarray | None) -> np.ndarray | None:
    """Where a compiled loop over x may write: a new array, or `out` when it can take the
    result directly; None when it cannot (the NumPy kernel then handles it)."""
    if out is None:
        return np.empty_like(x)
    if out.dtype == x.dtype and out.shape == x.shape and out.flags.c_contiguous and \
            out.flags.writeable and (out is x or not np.may_share_memory(out, x)):
        return out
    return None


def unary(op: str, numpy_kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The kernel for elementwise `op(x, out=None)`: compiled where it qualifies (see the
    module's docstring), else `numpy_kernel`."""
    minimum = max(_UNARY_MIN[op], _FIRST_USE)

    def kernel(x, out=None):
        if type(x) is np.ndarray and x.dtype == _F32 and x.size >= minimum and \
                x.flags.c_contiguous and (module := kernels()) is not None:
            y = _flat_out(x, out)
            if y is not None:
                serial, parallel = module.UNARY[op]
                try:
                    (parallel if x.size >= _PARALLEL else serial)(x.reshape(-1), y.reshape(-1))
                except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
                    _disable(e)
                else:
                    return y
        return numpy_kernel(x, out=out)
    kernel.__name__ = kernel.__qualname__ = op
    return kernel


def backward(op: str, numpy_kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The kernel for `op(y, g)` (``tanh_backward``, ``sigmoid_backward``): one compiled
    pass where y and g are contiguous float32/float64 arrays of one shape and dtype."""
    def kernel(y, g):
        if type(y) is np.ndarray and type(g) is np.ndarray and y.dtype in (_F32, _F64) and \
                g.dtype == y.dtype and g.shape == y.shape and y.size >= _BACKWARD_MIN and \
                y.flags.c_contiguous and g.flags.c_contiguous and \
                (module := kernels()) is not None:
            out = np.empty_like(y)
            try:
                getattr(module, op)(y.reshape(-1), g.reshape(-1), out.reshape(-1))
            except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
                _disable(e)
            else:
                return out
        return numpy_kernel(y, g)
    kernel.__name__ = kernel.__qualname__ = op
    return kernel


_layers_ready: bool | None = None
_layers: tuple[ModuleType, int, np.ndarray] | None = None  # once ready


def recurrent_layers(dtype: np.dtype) -> tuple[ModuleType, int, np.ndarray] | None:
    """``(numba_kernels, gemm, int_kind)`` for the whole-layer recurrent kernels
    (``lstm_layer_forward``/``_backward``, ``gru_layer_forward``/``_backward``): `gemm` the
    address of NumPy's own ``cblas_sgemm``, `int_kind` an empty array whose dtype is that
    BLAS's integer type. None where they do not apply: a dtype other than float32, no
    numba, or a BLAS that ctypes cannot reach. The first call runs each kernel on one
    element, so that a compile failure shows here, before a layer is half computed."""
    global _layers_ready, _layers
    if _layers_ready and _module is not None and dtype == _F32:  # (None after a failure)
        return _layers
    module = kernels() if dtype == _F32 else None
    if module is None or _layers_ready is False:
        return None
    import ctypes

    from ember.backends.cpu import blas

    fn = blas.gemm_fn(_F32)
    if fn is None:
        return None
    kernels_args = (module, ctypes.cast(fn, ctypes.c_void_p).value,
                    np.empty(0, np.int64 if fn.argtypes[3] is ctypes.c_int64 else np.int32))
    if _layers_ready is None:
        try:
            _try_layers(*kernels_args)
        except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
            _layers_ready = False
            _disable(e)
            return None
        _layers_ready, _layers = True, kernels_args
    return kernels_args


def _try_layers(module: ModuleType, gemm: int, int_kind: np.ndarray) -> None:
    """Run every whole-layer kernel once on one sample, one step, one hidden unit."""
    def z(*shape: int) -> np.ndarray:
        return np.zeros(shape, _F32)
    for reverse in (False, True):
        module.lstm_layer_forward(gemm, int_kind, z(4, 1), z(4), z(1, 1), z(1, 4), z(2, 1),
                                  z(1, 1), reverse)
        module.lstm_layer_backward(gemm, int_kind, z(4, 1), z(1, 4), z(2, 1), z(1, 1),
                                   z(1, 1), z(1, 1), reverse)
        module.gru_layer_forward(gemm, int_kind, z(3, 1), z(3), z(3), z(1, 1), z(1, 3),
                                 z(1, 3), z(1, 1), z(1, 1), reverse)
        module.gru_layer_backward(gemm, int_kind, z(3, 1), z(1, 1), z(1, 3), z(1, 1),
                                  z(1, 1), z(1, 1), z(1, 1), reverse)
