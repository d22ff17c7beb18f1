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

import importlib
import math
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


_ERF_COEFFICIENTS: tuple[np.ndarray, ...] | None = None


def erf(numpy_kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The kernel for `erf(x, out=None)`: one compiled pass from _FIRST_USE contiguous
    float32/float64 elements (NumPy's float32 formula takes ~40 passes in float64, its
    float64 one a Python call of math.erf per element), else `numpy_kernel`. float32 runs
    the NumPy kernel's Cephes formula, rounded step by step as it is; float64 libm's erf."""
    def kernel(x, out=None):
        global _ERF_COEFFICIENTS
        if type(x) is np.ndarray and x.dtype in (_F32, _F64) and x.size >= _FIRST_USE and \
                x.flags.c_contiguous and (module := kernels()) is not None:
            y = _flat_out(x, out)
            if y is not None:
                try:
                    if x.dtype == _F64:
                        module.erf_libm(x.reshape(-1), y.reshape(-1))
                    else:
                        if _ERF_COEFFICIENTS is None:
                            from ember.backends.xp import elementwise as xp_elementwise
                            _ERF_COEFFICIENTS = tuple(np.array(c, dtype=np.float64) for c
                                                      in xp_elementwise.erf_coefficients())
                        module.erf_cephes(x.reshape(-1), y.reshape(-1), *_ERF_COEFFICIENTS)
                except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
                    _disable(e)
                else:
                    return y
        return numpy_kernel(x, out=out)
    kernel.__name__ = kernel.__qualname__ = "erf"
    return kernel


def _flat32(x: Any, like: np.ndarray) -> np.ndarray | None:
    """`x` as a flat float32 array if it is a contiguous one of `like`'s shape."""
    if type(x) is np.ndarray and x.dtype == _F32 and x.shape == like.shape and \
            x.flags.c_contiguous:
        return x.reshape(-1)
    return None


def fma64(a: Any, b: float, c: Any) -> np.ndarray | None:
    """``a * b + c`` rounded once to float64, through NumPy's longdouble: exact where it
    has x87's 64-bit significand and the product needs no more (a float64 times an
    integer below 2**11: arange's); elsewhere within an ulp. None where the longdouble
    is float64 itself."""
    if np.finfo(np.longdouble).nmant < 63:
        return None
    wide = np.asarray(a, np.longdouble) * np.longdouble(b) + np.asarray(c, np.longdouble)
    return wide.astype(np.float64)


def fma(a: Any, b: Any, c: Any) -> np.ndarray | None:
    """``a * b + c`` rounded once to float32 in one compiled pass (the opmath rules' fma;
    NumPy's emulation takes three passes and a float64 temporary): where a and c are
    contiguous float32 arrays of one shape from _BACKWARD_MIN elements on, and b is one
    too or a number. None where it does not apply."""
    if type(a) is not np.ndarray or a.size < _BACKWARD_MIN:
        return None
    flat_a, flat_c = _flat32(a, a), _flat32(c, a)
    by_number = isinstance(b, (float, np.floating))
    flat_b = None if by_number else _flat32(b, a)
    if flat_a is None or flat_c is None or (flat_b is None and not by_number) or \
            (module := kernels()) is None:
        return None
    out = np.empty_like(a)
    try:
        if by_number:
            module.fma32_by_number(flat_a, float(b), flat_c, out.reshape(-1))
        else:
            module.fma32(flat_a, flat_b, flat_c, out.reshape(-1))
    except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
        _disable(e)
        return None
    return out


def scale_add(x: Any, scale: float, y: Any) -> bool:
    """``x = x * scale + y`` in place, rounded after each step (SGD's momentum buffer:
    PyTorch's `buf.mul_(momentum).add_(grad)`), in one compiled pass where x and y are
    contiguous float32 arrays of one shape from _BACKWARD_MIN elements on (NumPy: two
    passes); False where it does not apply."""
    if type(x) is not np.ndarray or x.size < _BACKWARD_MIN:
        return False
    flat_x, flat_y = _flat32(x, x), _flat32(y, x)
    if flat_x is None or flat_y is None or (module := kernels()) is None:
        return False
    try:
        module.scale_add32(flat_x, float(scale), flat_y)
    except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
        _disable(e)
        return False
    return True


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


# -- the CNN passes: ReLU, max pooling (numba_conv.py) -----------------------------------
# Measured at the benchmark CNN's sizes (see numba_conv.py and docs/architecture.md, "The
# CPU's convolutions and pooling"): from _CONV_FIRST_USE elements the compiled pass wins
# on one core (relu of 1.4M floats 0.13 ms against NumPy's 0.32, its backward 0.22 against
# 0.70, the 2x2 pool 0.23 against 0.97 and its backward 1.1 against 2.5); from
# _CONV_PARALLEL on, it runs on all cores (below, on a loaded 2-core machine the parallel
# passes lost: see the docs).

_CONV_FIRST_USE = 4096
_CONV_PARALLEL = 1 << 22
_FLOATS = (_F32, _F64)
_companions: dict[str, ModuleType] = {}


def _companion(name: str) -> ModuleType | None:
    """`ember.backends.cpu.<name>` (a module of numba kernels beside numba_kernels),
    imported on the first call; None where numba is off, missing or broken (the state
    `kernels()` keeps)."""
    if name not in _companions and kernels() is not None:
        try:
            _companions[name] = importlib.import_module(f"ember.backends.cpu.{name}")
        except Exception as e:  # noqa: BLE001 - a broken numba must not break ember
            _disable(e)
    return _companions.get(name) if _module is not None else None


def conv_kernels() -> ModuleType | None:
    """numba_conv, imported on the first call (None without numba)."""
    return _companion("numba_conv")


def _qualifies(*arrays: Any, size: int | None = None) -> bool:
    """Contiguous float32/float64 ndarrays of one dtype, large enough (the first's size,
    or `size`) for a compiled pass."""
    first = arrays[0]
    return all(type(a) is np.ndarray and a.dtype == first.dtype and a.flags.c_contiguous
               for a in arrays) and first.dtype in _FLOATS and \
        (first.size if size is None else size) >= _CONV_FIRST_USE


def _loop(module: ModuleType, name: str, size: int) -> Callable[..., Any]:
    """numba_conv's `<name>_serial` or, from _CONV_PARALLEL elements on, `<name>_parallel`."""
    return getattr(module, name + ("_parallel" if size >= _CONV_PARALLEL else "_serial"))


def relu(numpy_kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The kernel for `relu(x, out=None)`: one compiled pass where x qualifies."""
    def kernel(x, out=None):
        if _qualifies(x) and (module := conv_kernels()) is not None:
            y = _flat_out(x, out)
            if y is not None:
                try:
                    _loop(module, "relu", x.size)(x.reshape(-1), y.reshape(-1))
                except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
                    _disable(e)
                else:
                    return y
        return numpy_kernel(x, out=out)
    kernel.__name__ = kernel.__qualname__ = "relu"
    return kernel


def relu_backward(numpy_kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The kernel for `relu_backward(y, g)`: `y <= 0 ? 0 : g` in one compiled pass."""
    def kernel(y, g):
        if _qualifies(y, g) and g.shape == y.shape and (module := conv_kernels()) is not None:
            out = np.empty_like(g)
            try:
                _loop(module, "relu_backward", y.size)(y.reshape(-1), g.reshape(-1),
                                                       out.reshape(-1))
            except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
                _disable(e)
            else:
                return out
        return numpy_kernel(y, g)
    kernel.__name__ = kernel.__qualname__ = "relu_backward"
    return kernel


def _planes(shape: tuple, kernel_size: tuple, *params: tuple) -> tuple | None:
    """A 1-d or 2-d pool's arrays as (N*C, H, W) planes and its parameters as 2-d ones
    (a 1-d pool is a 2-d one of height 1); None for 3-d."""
    if len(kernel_size) == 2:
        return (shape[0] * shape[1],) + tuple(shape[2:]), (kernel_size,) + params
    if len(kernel_size) == 1:
        # stride and dilation 1 along the new axis, padding and extra 0
        as_2d = [(1,) + tuple(kernel_size)] + [((0,) if i in (1, 3) else (1,)) + tuple(p)
                                               for i, p in enumerate(params)]
        return (shape[0] * shape[1], 1, shape[2]), tuple(as_2d)
    return None


def _tiles_2x2(kernel_size, stride, padding, dilation, extra) -> bool:
    return tuple(kernel_size) == (2, 2) and tuple(stride) == (2, 2) and not any(padding) \
        and not any(extra) and tuple(dilation) == (1, 1)


_NO_INDICES = np.empty((0, 0, 0), np.int64)


def max_pool(numpy_kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The kernel for `max_pool` (xp/pooling.py's signature): compiled for 1-d and 2-d
    pools of any geometry on contiguous float32/float64 input."""
    def kernel(x, kernel_size, stride, padding, dilation, extra, need_indices=True):
        geometry = _planes(x.shape, kernel_size, stride, padding, dilation, extra)
        if geometry is not None and _qualifies(x) and (module := conv_kernels()) is not None:
            plane_shape, (k, s, p, d, e) = geometry
            outs = tuple((size + 2 * pp + ee - dd * (kk - 1) - 1) // ss + 1 for size, kk, ss,
                         pp, dd, ee in zip(plane_shape[1:], k, s, p, d, e))
            planes = x.reshape(plane_shape)
            values = np.empty((plane_shape[0],) + outs, x.dtype)
            idx = np.empty(values.shape, np.int64) if need_indices else _NO_INDICES
            try:
                if _tiles_2x2(k, s, p, d, e) and not need_indices:
                    _loop(module, "max_pool_2x2", x.size)(planes, values)
                else:
                    _loop(module, "max_pool", x.size)(planes, values, idx, need_indices,
                                                      *k, *s, *p, *d)
            except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
                _disable(e)
            else:
                shape = tuple(x.shape[:2]) + outs[2 - len(kernel_size):]
                return values.reshape(shape), idx.reshape(shape) if need_indices else None
        return numpy_kernel(x, kernel_size, stride, padding, dilation, extra, need_indices)
    kernel.__name__ = kernel.__qualname__ = "max_pool"
    return kernel


def max_pool_backward(numpy_kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The kernel for `max_pool_backward` (xp/pooling.py's signature): each window's pick
    recomputed from x (PyTorch's rule, NaN included; 2x2 float32 windows from x and the
    values), or read from the indices."""
    def kernel(g, x, values, idx, input_shape, kernel_size, stride, padding, dilation,
               extra):
        size = math.prod(input_shape)
        geometry = _planes(tuple(input_shape), kernel_size, stride, padding, dilation, extra)
        source = (g, x) if idx is None else (g,)
        if geometry is not None and _qualifies(*source, size=size) and \
                (idx is None or (idx.flags.c_contiguous and idx.dtype == np.int64)) and \
                (module := conv_kernels()) is not None:
            plane_shape, (k, s, p, d, e) = geometry
            g3 = g.reshape((plane_shape[0], -1) + g.shape[-1:])
            fast = idx is None and g.dtype == _F32 and _tiles_2x2(k, s, p, d, e) and \
                _qualifies(g, values, size=size)
            grad = (np.empty if fast else np.zeros)(plane_shape, g.dtype)
            try:
                if fast:
                    _loop(module, "max_pool_2x2_backward", size)(
                        g3, x.reshape(plane_shape), values.reshape(g3.shape), grad)
                else:
                    x3 = grad if x is None else x.reshape(plane_shape)  # (unread with idx)
                    i3 = _NO_INDICES if idx is None else idx.reshape(g3.shape)
                    _loop(module, "max_pool_backward", size)(
                        g3, x3, i3, idx is not None, grad, *k, *s, *p, *d)
            except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
                _disable(e)
            else:
                return grad.reshape(tuple(input_shape))
        return numpy_kernel(g, x, values, idx, input_shape, kernel_size, stride, padding,
                            dilation, extra)
    kernel.__name__ = kernel.__qualname__ = "max_pool_backward"
    return kernel


def _columns_pass(name: str, source: np.ndarray, result: np.ndarray, kernel_size, dilation,
                  padding, stride, outs) -> np.ndarray | None:
    """Runs numba_conv's column kernel `name` from `source` into `result` (a 2-d
    convolution's geometry passed as it takes it); None where `source` does not qualify
    or numba fails (NumPy's copies then run)."""
    if len(kernel_size) != 2 or not _qualifies(source) or (module := conv_kernels()) is None:
        return None
    try:
        getattr(module, name)(source, result, *kernel_size, *stride, *padding, *dilation,
                              *outs)
    except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
        _disable(e)
        return None
    return result


def im2col_batch_last(x, kernel_size, dilation, padding, stride, outs):
    """`Hooks.im2col_batch_last`: a 2-d convolution's batch-last columns (C*K, L*N) in one
    compiled pass over each channel, or None (NumPy's copies run)."""
    cols = np.empty((x.shape[1] * math.prod(kernel_size), math.prod(outs) * x.shape[0]),
                    x.dtype)
    return _columns_pass("im2col_batch_last", x, cols, kernel_size, dilation, padding,
                         stride, outs)


def col2im_batch_last(cols, x_shape, kernel_size, dilation, padding, stride, outs):
    """`Hooks.col2im_batch_last`: the input gradient (N, C, H, W) from the gradient of
    batch-last columns in one compiled pass over each channel, or None."""
    grad = np.empty(tuple(x_shape), cols.dtype)
    return _columns_pass("col2im_batch_last", cols, grad, kernel_size, dilation, padding,
                         stride, outs)


# -- PyTorch's random transforms (numba_random.py) ----------------------------------------

# When a random transform runs compiled: from _RANDOM_MIN values on once numba is loaded
# for anything, from _RANDOM_FIRST_USE on before. The NumPy reference takes ~0.35 us a
# float32 normal (~60 passes), ~0.8 us a float64 one (libm through Python) and ~2 us a
# randperm swap (2-core AMD EPYC), so from 64k values on it costs 25-130 ms a call, and
# numba's first use (~1.5 s: its import, and on the first compiled call its registries,
# which import SciPy's linalg) is repaid by a few such draws; a 40M-value embedding's
# normal_ takes ~0.1 s instead of ~14 s. Smaller draws never import numba.
_RANDOM_MIN = 1024
_RANDOM_FIRST_USE = 1 << 16


def random_kernels(size: int) -> ModuleType | None:
    """numba_random for a transform of `size` values; None where that is too small to be
    worth it, or numba is off, missing or broken."""
    if size < (_RANDOM_MIN if _module is not None else _RANDOM_FIRST_USE):
        return None
    return _companion("numba_random")


def normal_fill16(u: np.ndarray, mean: float, std: float) -> np.ndarray | None:
    """The `pytorch_normal_fill16` kernel: normals from float32 or float64 uniforms in
    blocks of 16 (ember/core/cpu_random.py's `_box_muller_16`, compiled), `* std + mean`
    fused unless std is 1 and mean 0; None where it does not run (the reference runs)."""
    if type(u) is not np.ndarray or u.dtype not in _FLOATS or u.ndim != 1 or u.size % 16 \
            or not u.flags.c_contiguous or \
            (module := random_kernels(u.size)) is None:
        return None
    out = np.empty_like(u)
    try:
        module.normal_fill16(u, u.dtype.type(mean), u.dtype.type(std),
                             not (std == 1 and mean == 0), out)
    except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
        _disable(e)
        return None
    return out


def randperm_shuffle(draws: np.ndarray, inside_out: bool) -> np.ndarray | None:
    """The `pytorch_randperm_shuffle` kernel: PyTorch's Fisher-Yates shuffle of
    0 .. n-1 from its int64 draws (forward swaps of i and i + draws[i], n - 1 draws; or
    inside-out, n draws); None where it does not run."""
    n = draws.size + (0 if inside_out else 1)
    if type(draws) is not np.ndarray or draws.dtype != np.int64 or \
            (module := random_kernels(n)) is None:
        return None
    try:
        if inside_out:
            perm = np.empty(n, np.int64)
            module.randperm_inside_out(draws, perm)
        else:
            perm = np.arange(n, dtype=np.int64)
            module.randperm_swaps(draws, perm)
    except Exception as e:  # noqa: BLE001 - a numba failure: NumPy from now on
        _disable(e)
        return None
    return perm


# -- PyTorch's order of equal keys (numba_sort.py) --------------------------------------

_SORT_KEYS = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32,
                                         np.int64, np.uint8))


def sort_kernels() -> ModuleType | None:
    """numba_sort, imported on the first call (None without numba)."""
    return _companion("numba_sort")


def mode_index(x: np.ndarray, dim: int) -> np.ndarray | None:
    """The fused `mode_index`: the index ATen's CPU mode picks in each row along `dim`
    (keepdim-shaped), by the compiled std::sort; None where it does not run (a dtype it
    does not take, a NaN, fewer than _FIRST_USE elements before numba is loaded: the
    pure-Python emulation costs less than numba's import there)."""
    if x.dtype not in _SORT_KEYS or x.shape[dim] == 0 or \
            (x.size < _FIRST_USE and "numba_sort" not in _companions) or \
            (x.dtype.kind == "f" and np.isnan(x).any()) or (module := sort_kernels()) is None:
        return None
    moved = np.moveaxis(x, dim, -1)
    rows = np.ascontiguousarray(moved).reshape(-1, moved.shape[-1])
    out = np.empty(rows.shape[0], dtype=np.int64)
    try:
        module.mode_rows(rows, out)
    except Exception as e:  # noqa: BLE001 - a numba failure: the emulation from now on
        _disable(e)
        return None
    return np.expand_dims(out.reshape(moved.shape[:-1]), dim)


# -- PyTorch's order of additions in sums (numba_sum.py) ---------------------------------

def sum_kernels(size: int) -> ModuleType | None:
    """numba_sum, for a sum of `size` elements: from _FIRST_USE elements on, or at any
    size once numba is loaded (below, cascade_sum's NumPy code costs less than numba's
    import); None without numba."""
    if size < _FIRST_USE and _module is None:
        return None
    return _companion("numba_sum")
