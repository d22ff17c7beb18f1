"""The CUDA backend's kernel table: the shared kernels of ember/backends/xp on CuPy, with
what CuPy's NumPy API cannot do as well, as CuPy ElementwiseKernels (each compiled by
NVRTC on first use, per dtype):

- the activation backwards in one pass each (the shared `relu_backward` reads a flag back
  from the device to decide on a slow path, which would wait for the GPU on every call);
- cross_entropy and its backward with masks instead of branches on device values
  (losses.py: the shared ones wait for the GPU three times a step);
- SGD's in-place updates (the `axpy` hook: one pass, as BLAS's on the CPU);
- matmul through cuBLAS, float16 with float32 accumulation (CuPy's compute type), TF32
  for float32 when `ember.backends.cuda.matmul.allow_tf32` is set;
- random numbers from one cupy.random.RandomState per device, seeded by ember.manual_seed;
- the LSTM cell forward and backward in one launch each (recurrent.py).

Everything else (conv as one GEMM over the batch, max_pool and its backward, the
_foreach_* list ops, softmax through its decomposition) is the shared xp code, which runs
on CuPy unchanged.

bfloat16 is CuPy 14's ml_dtypes.bfloat16: its own elementwise ops and reductions run on
it; the one-pass kernels above compute bfloat16 through CuPy's operators instead (their
C++ source is written for float types with int constructors), and a matmul CuPy cannot
run in bfloat16 runs in float32 and is rounded back (PyTorch accumulates bfloat16
products in float32 too).

Where CuPy's results differ from NumPy's (found on an H200 with CuPy 14.2), the hooks
below make them agree: `maximum.at`/`minimum.at` round float64 through float32 (float64
scatter_reduce amax/amin reduce in rounds of plain writes instead), float64 `erf` takes
cupyx.scipy.special's (the shared polynomial is float32-exact only), and a write into a
broadcast view (a zero stride) raises PyTorch's overlap error, as NumPy's read-only
flag makes it on the CPU.
"""

from __future__ import annotations

import importlib
from typing import Any

import cupy

from ember.backends.cuda import flags, losses, recurrent, runtime
from ember.backends.xp import Hooks, make_kernels
from ember.core.backend import EVERY_DTYPE, bfloat16, numpy_dtype

_NP = {d: numpy_dtype(d) for d in EVERY_DTYPE}
_BF16 = cupy.dtype(_NP[bfloat16])
_FLOATS = (cupy.dtype(cupy.float32), cupy.dtype(cupy.float64))

generators = runtime.Generators()

# -- one-pass kernels -------------------------------------------------------------------

_tanh_backward = cupy.ElementwiseKernel("T y, T g", "T out", "out = (T(1) - y * y) * g",
                                        "ember_tanh_backward")
_sigmoid_backward = cupy.ElementwiseKernel("T y, T g", "T out", "out = (T(1) - y) * y * g",
                                           "ember_sigmoid_backward")
# (y <= 0, not !(y > 0): a NaN output passes its gradient, as PyTorch's threshold_backward)
_relu_backward = cupy.ElementwiseKernel("T y, T g", "T out", "out = y <= T(0) ? T(0) : g",
                                        "ember_relu_backward")
_axpy = cupy.ElementwiseKernel("T x, T a", "T y", "y += a * x", "ember_axpy")


def _one_pass(kernel: Any, formula: Any) -> Any:
    """A one-pass kernel of (y, g), with bfloat16 through CuPy's operators (`formula`)."""
    def run(y: Any, g: Any) -> Any:
        if y.dtype == _BF16:
            return formula(y, g).astype(_BF16, copy=False)
        return kernel(y, g)
    return run


def _same(x: Any, y: Any) -> bool:
    return isinstance(x, cupy.ndarray) and x.dtype == y.dtype and x.shape == y.shape and \
        x.dtype != _BF16


def axpy(alpha: float, x: Any, y: Any) -> bool:
    if not _same(x, y):
        return False
    _axpy(x, y.dtype.type(alpha), y)
    return True


def _matmul(a: Any, b: Any) -> Any:
    if a.dtype == _BF16:
        return _bf16_matmul(a, b)
    if a.dtype == cupy.float32 and flags.matmul.allow_tf32:
        # CuPy reads its compute type per call; TF32 only while the flag is on
        with _tf32():
            return cupy.matmul(a, b)
    return cupy.matmul(a, b)  # cuBLAS; float16 accumulates in float32 (CuPy's default)


_bf16_in_cublas = True  # until CuPy refuses a bfloat16 product


def _bf16_matmul(a: Any, b: Any) -> Any:
    """A bfloat16 product through cuBLAS where CuPy runs one, else in float32 and rounded
    back (both accumulate in float32)."""
    global _bf16_in_cublas
    if _bf16_in_cublas:
        try:
            return cupy.matmul(a, b)
        except (TypeError, NotImplementedError, ValueError):
            _bf16_in_cublas = False
    f32 = cupy.float32
    return cupy.matmul(a.astype(f32), b.astype(f32)).astype(_BF16)


def _has_overlap(buffer: Any) -> bool:
    """Whether elements share memory (a broadcast view: a zero stride on a dimension
    longer than one), which PyTorch refuses to write into."""
    return any(st == 0 and n > 1 for st, n in zip(buffer.strides, buffer.shape))


def _exact_at(ufunc: Any, dtype: Any) -> bool:
    """Whether CuPy's `ufunc.at` is exact for `dtype` (its maximum/minimum.at round
    float64 through float32; the dtypes it refuses raise TypeError, also handled)."""
    return ufunc is cupy.add or dtype != cupy.float64


def _special() -> Any:
    return importlib.import_module("cupyx.scipy.special")


_COMPUTE_TYPE_TF32 = 7  # CuPy's compute type (cupy._core._routines_linalg.pxd)


class _tf32:
    """float32 matmuls on TF32 tensor cores while inside."""

    def __enter__(self) -> None:
        from cupy._core import _routines_linalg as linalg

        self.linalg, self.saved = linalg, linalg.get_compute_type(cupy.float32)
        linalg.set_compute_type(cupy.float32, _COMPUTE_TYPE_TF32)

    def __exit__(self, *exc: Any) -> None:
        self.linalg.set_compute_type(cupy.float32, self.saved)


# -- random numbers ---------------------------------------------------------------------


def _uniform_like(draw: Any, shape: tuple, dtype: Any) -> Any:
    native = _NP[dtype] if _NP[dtype] in _FLOATS else cupy.dtype(cupy.float32)
    return draw(shape, dtype=native).astype(_NP[dtype], copy=False)


def rand(shape, dtype, device=0):
    with runtime.device(device):
        return _uniform_like(generators.get(device).random_sample, shape, dtype)


def randn(shape, dtype, device=0):
    with runtime.device(device):
        return _uniform_like(generators.get(device).standard_normal, shape, dtype)


def randint(shape, dtype, low, high, device=0):
    with runtime.device(device):
        out = generators.get(device).randint(low, high, size=shape, dtype=cupy.int64)
        return out.astype(_NP[dtype], copy=False)


def randperm(n, dtype, device=0):
    with runtime.device(device):
        return generators.get(device).permutation(n).astype(_NP[dtype], copy=False)


def _on_device(kernel: Any) -> Any:
    """A creation kernel run with its `device` current (CuPy allocates there)."""
    def run(*args: Any, device: int = 0, **attrs: Any) -> Any:
        with runtime.device(device):
            return kernel(*args, device=device, **attrs)
    return run


KERNELS: dict[str, Any] = make_kernels(cupy, hooks=Hooks(
    matmul=_matmul,
    axpy=axpy,
    read_only=_has_overlap,
    exact_ufunc_at=_exact_at,
    exact_erf=lambda x: _special().erf(x),
    special=_special,
))
KERNELS.update(losses.kernels(cupy))  # the shared ones read values back (see losses.py)
KERNELS.update(recurrent.kernels(KERNELS))  # one launch per LSTM cell (see recurrent.py)
KERNELS.update({
    "tanh_backward": _one_pass(_tanh_backward, lambda y, g: (1 - y * y) * g),
    "sigmoid_backward": _one_pass(_sigmoid_backward, lambda y, g: (1 - y) * y * g),
    "relu_backward": _one_pass(_relu_backward, lambda y, g: cupy.where(y <= 0, 0, g)),
    "rand": rand, "randn": randn, "randint": randint, "randperm": randperm,
})
for _name in ("full", "arange"):
    KERNELS[_name] = _on_device(KERNELS[_name])


def guard_devices(table: dict[str, Any]) -> dict[str, Any]:
    """With several GPUs: each kernel runs with the device of its first array current, as
    CuPy launches on the current device. (With one GPU this costs nothing, and is skipped.)"""
    def guarded(kernel: Any) -> Any:
        def run(*args: Any, **attrs: Any) -> Any:
            for a in args:
                if isinstance(a, cupy.ndarray):
                    with a.device:
                        return kernel(*args, **attrs)
                if isinstance(a, (list, tuple)) and a and isinstance(a[0], cupy.ndarray):
                    with a[0].device:
                        return kernel(*args, **attrs)
            return kernel(*args, **attrs)
        return run
    return {name: guarded(k) for name, k in table.items()}
