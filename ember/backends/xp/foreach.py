"""List ("foreach") kernels, which update a whole list of arrays in place in one call, and
SGD's fused update: what the optimizers run."""

from __future__ import annotations

from typing import Any

from ember.backends.xp import opmath
from ember.backends.xp.lib import ArrayLib, Kernel


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, as_array, ndarray = lib.xp, lib.as_array, lib.xp.ndarray
    axpy = lib.hooks.axpy or _never
    scale_add = lib.hooks.scale_add or _never

    rule, bare = opmath.rules(lib), opmath.rules(lib, silenced=False)
    opmath_axpy, low_precision = rule["axpy"], lib.low_precision

    def axpy_(alpha, y, x, opmath_axpy_=rule["axpy_"]):
        """`x += alpha * y` in place by PyTorch's rule: the backend's axpy where it applies
        (one pass; OpenBLAS's saxpy is the same fused multiply-add), not for a half dtype
        (a hook may compute in it)."""
        if x.dtype in low_precision or not axpy(alpha, y, x):
            opmath_axpy_(x, y, alpha)

    def by_number(ufunc, x, number, out=None):
        """`x * number` or `x / number` (into `out` if given), by PyTorch's rule for a half
        dtype (opmath.half_by_number)."""
        result = opmath.half_by_number(xp, ufunc, (x, number), out, low_precision)
        return ufunc(x, number, out=out) if result is None else result

    def binary(ufunc, inplace):
        sign = {xp.add: 1, xp.subtract: -1}.get(ufunc)  # the ops with an alpha
        scales = ufunc in (xp.multiply, xp.true_divide)

        def kernel(xs, others, alpha=1):
            ys = _each(others, len(xs))
            scaled = alpha != 1 and sign is not None
            results = []
            for x, y in zip(xs, ys):
                array = isinstance(y, ndarray)
                if scaled and array:
                    if inplace:
                        axpy_(sign * alpha, y, x)
                        continue
                    out = opmath_axpy(x, y, sign * alpha)
                elif scales and not array:
                    out = by_number(ufunc, x, y, out=x if inplace else None)
                else:
                    y = y if alpha == 1 else xp.multiply(y, alpha)
                    out = ufunc(x, y, out=x) if inplace else ufunc(x, y)
                if not inplace:
                    results.append(as_array(out))
                elif out is not x:  # (not already written in place)
                    x[...] = out
            return None if inplace else results
        return kernel

    def list_rule(name):
        """`x = rule(x, a, b, value)` for each x of the list, in place."""
        fn = rule[name]

        def kernel(xs, t1s, t2s, value=1):
            for x, a, b, v in zip(xs, t1s, t2s, _each(value, len(xs))):
                x[...] = fn(x, a, b, v)
        return kernel

    def lerp_(xs, ends, weight):
        lerp = rule["lerp"]
        for x, end, w in zip(xs, ends, _each(weight, len(xs))):
            x[...] = lerp(x, end, w)

    def sqrt(xs):  # as_array: a 0-d parameter's result stays an array, written in place next
        return [as_array(xp.sqrt(x)) for x in xs]

    def sqrt_(xs):
        for x in xs:
            xp.sqrt(x, out=x)

    def neg(xs):
        return [as_array(xp.negative(x)) for x in xs]

    def neg_(xs):
        for x in xs:
            xp.negative(x, out=x)

    def zero_(xs):
        for x in xs:
            x.fill(0)

    def copy_(xs, srcs):
        for x, s in zip(xs, srcs):
            xp.copyto(x, s, casting="unsafe")

    def fused_sgd_(params, grads, bufs, lr, momentum, dampening, weight_decay, nesterov,
                   maximize):
        """SGD's update in place (every momentum buffer exists), each step rounded as
        PyTorch's single-tensor loop rounds it: `add(alpha=)` by the opmath rule, `mul_`
        by the exact number. The rules run bare, inside one quiet state for the list."""
        with lib.quiet():
            for i, (p, g) in enumerate(zip(params, grads)):
                if maximize:
                    g = xp.negative(g)
                if weight_decay != 0:
                    g = bare["axpy"](g, p, weight_decay)
                if momentum != 0:
                    buf = bufs[i]
                    if dampening != 0 or not scale_add(buf, momentum, g):
                        by_number(xp.multiply, buf, momentum, out=buf)
                        if dampening == 0:
                            buf += g
                        else:
                            axpy_(1 - dampening, g, buf, bare["axpy_"])
                    g = bare["axpy"](g, buf, momentum) if nesterov else buf
                axpy_(-lr, g, p, bare["axpy_"])

    return {
        "_fused_sgd_": fused_sgd_,
        "_foreach_add_": binary(xp.add, True), "_foreach_add": binary(xp.add, False),
        "_foreach_sub_": binary(xp.subtract, True),
        "_foreach_mul_": binary(xp.multiply, True), "_foreach_mul": binary(xp.multiply, False),
        "_foreach_div_": binary(xp.true_divide, True),
        "_foreach_div": binary(xp.true_divide, False),
        "_foreach_maximum_": binary(xp.maximum, True),
        "_foreach_addcmul_": list_rule("addcmul"), "_foreach_addcdiv_": list_rule("addcdiv"),
        "_foreach_lerp_": lerp_,
        "_foreach_sqrt": sqrt, "_foreach_sqrt_": sqrt_, "_foreach_neg": neg,
        "_foreach_neg_": neg_,
        "_foreach_zero_": zero_, "_foreach_copy_": copy_,
    }


def _never(*args: Any) -> bool:
    """An absent axpy or scale_add hook: it never applies."""
    return False


def _each(values: Any, n: int) -> list:
    """A per-tensor list of scalars, or one scalar for every tensor."""
    return values if isinstance(values, (list, tuple)) else [values] * n
