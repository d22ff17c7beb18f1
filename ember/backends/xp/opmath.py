"""PyTorch's "opmath" rounding rules for `add(alpha=)`, addcmul, addcdiv and lerp: the
one place they are written. Core's composites reach them as fused kernels
(`opmath_axpy` ...), and the list ops and SGD's fused step (foreach.py) call them.

PyTorch's CPU kernels compute float16, bfloat16 and float32 in float32 and round once to
the dtype, and fuse the last multiply-add where they use `fmadd` (checked bit for bit
against torch 2.13 on large and scalar-sized inputs):

- `x + alpha * y`: `fma(alpha, y, x)`, alpha first rounded to x's dtype;
- addcmul: `fma(value * t1, t2, x)`, value in float32 (not rounded to a half dtype);
- addcdiv: `x + value * t1 / t2`, unfused;
- lerp: `fma(w, end - x, x)` where |w| < 0.5, else `fma(w - 1, end - x, end)`;
- a half-precision tensor times or divided by a number (`half_by_number`): in float32,
  the number not rounded to the tensor's dtype (the mul and div kernels read the scalar as
  float), rounded once; add, sub, pow and fmod round the number to the dtype first, as
  NumPy's weak-scalar rule does.

An fma in float32 is the backend's `fma` hook where it applies (the CPU's: one
numba-compiled pass), else emulated in float64, which holds the product of two float32
numbers exactly: the sum's one rounding (to float32) stands in for the fma's. float64 follows the
plain formulas (PyTorch fuses there too; NumPy has no float64 fma).
"""

from __future__ import annotations

from typing import Any

from ember.backends.xp.lib import ArrayLib, Kernel, disordered, in_torch_order
from ember.core.backend import float32 as _float32


def half_by_number(xp: Any, f: Any, args: tuple, out: Any, low_precision: Any) -> Any:
    """`f(*args, out=out)` by PyTorch's rule for a half-precision array times or divided
    by a number (`f` is `xp.multiply` or `xp.true_divide`); None where the rule does not
    apply (another function, two arrays or none, another dtype). `low_precision`: the
    half-precision dtypes. The elementwise kernels (each backend's `call_elementwise`)
    and the list ops read it."""
    if len(args) != 2 or (f is not xp.multiply and f is not xp.true_divide):
        return None
    ndarray = xp.ndarray
    a, b = args
    if isinstance(a, ndarray) is isinstance(b, ndarray):
        return None
    dtype = (a if isinstance(a, ndarray) else b).dtype
    if dtype not in low_precision:
        return None
    wide = [x.astype(xp.float32) if isinstance(x, ndarray) else xp.float32(x) for x in args]
    result = xp.asarray(f(*wide)).astype(dtype)
    if out is None:
        return result
    xp.copyto(out, result)
    return out


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    as_array = lib.as_array  # (NumPy gives a 0-d operation's result as a scalar)

    def kernel(rule: Kernel) -> Kernel:
        return lambda *args, **kwargs: as_array(rule(*args, **kwargs))
    return {"opmath_" + name: kernel(rule) for name, rule in rules(lib).items()
            if not name.endswith("_")}


def rules(lib: ArrayLib, silenced: bool = True) -> dict[str, Kernel]:
    """The rules by name (axpy, addcmul, addcdiv, lerp), each `(x, ...) -> new array` of
    x's dtype, broadcast as NumPy does, and `axpy_`, axpy written into x; infinities and
    NaNs come out silently (as PyTorch's), without NumPy's warnings. `silenced=False`
    gives the rules bare, for a caller that holds `lib.quiet()` around a loop of calls."""
    xp, float32, float64, quiet = lib.xp, lib.xp.float32, lib.xp.float64, lib.quiet
    ndarray = xp.ndarray
    narrow = lib.low_precision | {lib.dtypes[_float32]}  # computed in float32
    single = lib.dtypes[_float32]
    hook = lib.hooks.fma

    def fma(a, b, c, dtype):
        """`a * b + c` of float32 values (or values a float32 holds exactly), rounded once
        to float32, then to `dtype`: by the backend's hook where it applies, else
        emulated in float64, which holds the product exactly."""
        if hook is not None and (out := hook(a, b, c)) is not None:
            return out.astype(dtype, copy=False)
        wide = xp.multiply(a, b, dtype=float64)
        if isinstance(wide, ndarray) and (wide.shape == c.shape or not c.shape):
            wide += c  # (no second temporary)
        else:
            wide = xp.add(wide, c)
        return wide.astype(float32).astype(dtype, copy=False)

    def operand(a, dtype):
        """An array operand, or a number in the result's dtype (PyTorch's wrapped number;
        a host scalar, which CuPy takes too)."""
        return a if isinstance(a, ndarray) else dtype.type(a)

    def axpy(x, y, alpha):
        """`x + alpha * y`."""
        y = operand(y, x.dtype)
        if x.dtype not in narrow:
            return xp.add(x, xp.multiply(y, alpha))
        alpha = float32(x.dtype.type(alpha))  # (rounded to the dtype)
        return fma(y, alpha, x, x.dtype)  # (a half dtype's values: exact in float64)

    def axpy_(x, y, alpha):
        """`x += alpha * y` in place, rounded as `axpy`; y an array of x's shape and dtype.
        A float32 x below the hook's size takes the float64 emulation written straight
        into x (one temporary, not four: an optimizer's step over small parameters)."""
        if x.dtype != single or x.shape != y.shape or y.dtype != single:
            x[...] = axpy(x, y, alpha)
            return
        alpha = float32(alpha)
        if hook is not None and (out := hook(y, alpha, x)) is not None:
            x[...] = out
            return
        # (each ufunc on one dtype: NumPy's mixed float32/float64 loops cost ~2 us more)
        wide = y.astype(float64)
        wide *= float(alpha)
        wide += x.astype(float64)
        x[...] = wide  # (the float32 rounding: the fma's one)

    def addcmul(x, t1, t2, value):
        """`x + value * t1 * t2`."""
        t1, t2 = operand(t1, x.dtype), operand(t2, x.dtype)
        if x.dtype not in narrow:
            return xp.add(x, xp.multiply(xp.multiply(t1, value), t2))
        scaled = xp.multiply(t1, float32(value), dtype=float32)
        return fma(scaled, t2, x, x.dtype)

    def addcdiv(x, t1, t2, value):
        """`x + value * t1 / t2`."""
        dtype = x.dtype
        t1, t2 = operand(t1, dtype), operand(t2, dtype)
        if dtype in narrow:
            x, t1, t2 = (a.astype(float32, copy=False) for a in (x, t1, t2))
            value = float32(value)
        out = xp.add(x, xp.true_divide(xp.multiply(t1, value), t2))
        return out.astype(dtype, copy=False)

    def lerp(x, end, weight):
        """`x + weight * (end - x)` as PyTorch's kernel: from `end` back where |weight| >=
        0.5 (exact at weight 1). `weight`: a number or an array."""
        dtype, end = x.dtype, operand(end, x.dtype)
        if dtype in narrow:
            x, end = x.astype(float32, copy=False), end.astype(float32, copy=False)
            weight = weight.astype(float32, copy=False) if isinstance(weight, ndarray) else \
                float32(weight)
        diff = xp.subtract(end, x)
        small = xp.abs(weight) < 0.5
        if not isinstance(weight, ndarray):  # one branch for every element
            coeff, base = (weight, x) if small else (weight - 1, end)
        else:
            coeff, base = xp.where(small, weight, weight - 1), xp.where(small, x, end)
        if dtype not in narrow:
            return xp.add(base, xp.multiply(diff, coeff))
        return fma(diff, coeff, base, dtype)

    def quietly(rule: Kernel) -> Kernel:
        def run(*args: Any, **kwargs: Any) -> Any:
            with quiet():
                return rule(*args, **kwargs)
        return run

    def laid_out(rule: Kernel) -> Kernel:
        """`rule` whose result is laid out as TensorIterator lays out a pointwise op's
        (x's memory order first: a channels-last x keeps its format)."""
        def first_decides(*args: Any, **kwargs: Any) -> Any:
            # a row-major x of the result's shape orders it (the fma keeps its first
            # factor's order, NumPy may keep another operand's)
            out, x = rule(*args, **kwargs), args[0]
            if type(out) is ndarray and not out.flags.c_contiguous and \
                    type(x) is ndarray and x.flags.c_contiguous and x.shape == out.shape:
                return xp.ascontiguousarray(out)
            return out
        ordered = in_torch_order(first_decides, ndarray)

        def run(*args: Any, **kwargs: Any) -> Any:
            return (ordered if disordered(args, ndarray) else first_decides)(*args, **kwargs)
        return run

    bare = {"axpy": axpy, "axpy_": axpy_, "addcmul": laid_out(addcmul),
            "addcdiv": laid_out(addcdiv), "lerp": laid_out(lerp)}
    return {name: quietly(rule) for name, rule in bare.items()} if silenced else bare

