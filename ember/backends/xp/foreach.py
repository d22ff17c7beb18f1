"""List ("foreach") kernels, which update a whole list of arrays in place in one call, and
SGD's fused update: what the optimizers run."""

from __future__ import annotations

from typing import Any

from ember.backends.xp.lib import ArrayLib, Kernel


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, as_array, quiet, ndarray = lib.xp, lib.as_array, lib.quiet, lib.xp.ndarray
    axpy, axpby = lib.hooks.axpy or _never, lib.hooks.axpby or _never

    def binary(ufunc, inplace):
        # an in-place add (the optimizers' updates) goes through the backend's axpy where
        # it applies: one pass, no temporary for `alpha`
        use_axpy = inplace and ufunc is xp.add

        def kernel(xs, others, alpha=1):
            ys = _each(others, len(xs))
            if inplace:
                for x, y in zip(xs, ys):
                    if use_axpy and isinstance(y, ndarray) and axpy(alpha, y, x):
                        continue
                    ufunc(x, y if alpha == 1 else xp.multiply(y, alpha), out=x)
                return None
            return [as_array(ufunc(x, y if alpha == 1 else xp.multiply(y, alpha)))
                    for x, y in zip(xs, ys)]
        return kernel

    def addcmul_(xs, t1s, t2s, value=1):
        for x, a, b, v in zip(xs, t1s, t2s, _each(value, len(xs))):
            tmp = xp.multiply(a, b)
            if v != 1:
                tmp *= v
            x += tmp

    def addcdiv_(xs, t1s, t2s, value=1):
        with quiet():
            for x, a, b, v in zip(xs, t1s, t2s, _each(value, len(xs))):
                tmp = xp.divide(a, b)
                if v != 1:
                    tmp *= v
                x += tmp

    def lerp_(xs, ends, weight):
        for x, end, w in zip(xs, ends, _each(weight, len(xs))):
            x += w * (end - x)

    def sqrt(xs):  # as_array: a 0-d parameter's result stays an array, written in place next
        return [as_array(xp.sqrt(x)) for x in xs]

    def sqrt_(xs):
        for x in xs:
            xp.sqrt(x, out=x)

    def neg(xs):
        return [as_array(xp.negative(x)) for x in xs]

    def zero_(xs):
        for x in xs:
            x.fill(0)

    def copy_(xs, srcs):
        for x, s in zip(xs, srcs):
            xp.copyto(x, s, casting="unsafe")

    def fused_sgd_(params, grads, bufs, lr, momentum, dampening, weight_decay, nesterov,
                   maximize):
        """SGD's update in place (every momentum buffer exists): with momentum, the buffer
        update ``m * buf + (1 - d) * g`` is one axpby and the step one axpy where the
        backend has them, two passes instead of four."""
        for i, (p, g) in enumerate(zip(params, grads)):
            if maximize:
                g = xp.negative(g)
            if weight_decay != 0:
                g = g + xp.multiply(p, weight_decay)
            if momentum != 0:
                buf = bufs[i]
                if not axpby(1 - dampening, g, momentum, buf):
                    buf *= momentum
                    buf += g if dampening == 0 else xp.multiply(g, 1 - dampening)
                g = g + xp.multiply(buf, momentum) if nesterov else buf
            if not axpy(-lr, g, p):
                p -= xp.multiply(g, lr)

    return {
        "_fused_sgd_": fused_sgd_,
        "_foreach_add_": binary(xp.add, True), "_foreach_add": binary(xp.add, False),
        "_foreach_sub_": binary(xp.subtract, True),
        "_foreach_mul_": binary(xp.multiply, True), "_foreach_mul": binary(xp.multiply, False),
        "_foreach_div_": binary(xp.true_divide, True),
        "_foreach_div": binary(xp.true_divide, False),
        "_foreach_maximum_": binary(xp.maximum, True),
        "_foreach_addcmul_": addcmul_, "_foreach_addcdiv_": addcdiv_, "_foreach_lerp_": lerp_,
        "_foreach_sqrt": sqrt, "_foreach_sqrt_": sqrt_, "_foreach_neg": neg,
        "_foreach_zero_": zero_, "_foreach_copy_": copy_,
    }


def _never(*args: Any) -> bool:
    """An absent axpy/axpby hook: it never applies."""
    return False


def _each(values: Any, n: int) -> list:
    """A per-tensor list of scalars, or one scalar for every tensor."""
    return values if isinstance(values, (list, tuple)) else [values] * n
