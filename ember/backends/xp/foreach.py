"""List ("foreach") kernels, which update a whole list of arrays in place in one call, and
SGD's fused update: what the optimizers run."""

from __future__ import annotations

from typing import Any

from ember.backends.xp.lib import ArrayLib, Kernel


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, as_array, quiet, ndarray = lib.xp, lib.as_array, lib.quiet, lib.xp.ndarray
    axpy, axpby = lib.hooks.axpy or _never, lib.hooks.axpby or _never

    low_precision, float32 = lib.low_precision, lib.xp.float32

    def half_alpha(ufunc, x, y, alpha):
        """PyTorch's half-precision `x op alpha * y`: alpha rounded to x's dtype, the rest
        in float32, one rounding at the end."""
        scale = xp.asarray(alpha, x.dtype).astype(float32)
        wide = y.astype(float32) if isinstance(y, ndarray) else float32(y)
        return ufunc(x.astype(float32), xp.multiply(wide, scale)).astype(x.dtype)

    def binary(ufunc, inplace):
        # an in-place add (the optimizers' updates) goes through the backend's axpy where
        # it applies: one pass, no temporary for `alpha`
        use_axpy = inplace and ufunc is xp.add
        with_alpha = ufunc in (xp.add, xp.subtract)

        def kernel(xs, others, alpha=1):
            ys = _each(others, len(xs))
            if inplace:
                for x, y in zip(xs, ys):
                    if alpha != 1 and with_alpha and x.dtype in low_precision:
                        x[...] = half_alpha(ufunc, x, y, alpha)
                        continue
                    if use_axpy and isinstance(y, ndarray) and axpy(alpha, y, x):
                        continue
                    ufunc(x, y if alpha == 1 else xp.multiply(y, alpha), out=x)
                return None
            return [as_array(half_alpha(ufunc, x, y, alpha)
                             if alpha != 1 and with_alpha and x.dtype in low_precision
                             else ufunc(x, y if alpha == 1 else xp.multiply(y, alpha)))
                    for x, y in zip(xs, ys)]
        return kernel

    def half_addc(op, x, a, b, v):
        """PyTorch's half-precision addcmul/addcdiv: `x + v * a op b` in float32 (v not
        rounded), one rounding at the end; addcmul's kernel fuses the last multiply-add
        (float64 holds that product exactly)."""
        scaled = xp.multiply(a.astype(float32), float32(v))
        if op is xp.multiply:
            fused = scaled.astype(xp.float64) * b + x.astype(xp.float64)
            x[...] = fused.astype(float32).astype(x.dtype)
            return
        x[...] = (x.astype(float32) + op(scaled, b.astype(float32))).astype(x.dtype)

    def addcmul_(xs, t1s, t2s, value=1):
        for x, a, b, v in zip(xs, t1s, t2s, _each(value, len(xs))):
            if x.dtype in low_precision:
                half_addc(xp.multiply, x, a, b, v)
                continue
            tmp = xp.multiply(a, b)
            if v != 1:
                tmp *= v
            x += tmp

    def addcdiv_(xs, t1s, t2s, value=1):
        with quiet():
            for x, a, b, v in zip(xs, t1s, t2s, _each(value, len(xs))):
                if x.dtype in low_precision:
                    half_addc(xp.true_divide, x, a, b, v)
                    continue
                # PyTorch's kernel: `x + v * a / b`, the product first
                tmp = xp.multiply(a, v) if v != 1 else a
                x += xp.divide(tmp, b)

    def fused_lerp(x, end, w):
        """PyTorch's lerp kernel: `fma(w, end - x, x)` below |w| 0.5, else
        `fma(w - 1, end - x, end)`, in float32 (a half dtype's too); float64 holds the
        product exactly, so its one rounding stands in for the fma's."""
        w = float(float32(w))
        small = abs(w) < 0.5
        coeff = w if small else float(float32(w - 1))
        diff = xp.subtract(end.astype(float32), x.astype(float32)).astype(xp.float64)
        base = (x if small else end).astype(xp.float64)
        x[...] = (base + diff * coeff).astype(float32).astype(x.dtype)

    def lerp_(xs, ends, weight):
        for x, end, w in zip(xs, ends, _each(weight, len(xs))):
            if x.dtype in low_precision and not isinstance(w, ndarray):
                fused_lerp(x, end, w)
                continue
            x += w * (end - x)

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

    def half_sgd_(p, g, buf, lr, momentum, dampening, weight_decay, nesterov):
        """SGD's half-precision step as PyTorch's single-tensor loop rounds it: each
        `add(alpha=)` in float32 with alpha in the dtype, `mul_` by the exact number."""
        if weight_decay != 0:
            g = half_alpha(xp.add, g, p, weight_decay)
        if buf is not None:
            buf[...] = xp.multiply(buf.astype(float32), float32(momentum)).astype(buf.dtype)
            buf[...] = half_alpha(xp.add, buf, g, 1 - dampening) if dampening != 0 else \
                xp.add(buf, g)
            g = half_alpha(xp.add, g, buf, momentum) if nesterov else buf
        p[...] = half_alpha(xp.add, p, g, -lr)

    def fused_sgd_(params, grads, bufs, lr, momentum, dampening, weight_decay, nesterov,
                   maximize):
        """SGD's update in place (every momentum buffer exists): with momentum, the buffer
        update ``m * buf + (1 - d) * g`` is one axpby and the step one axpy where the
        backend has them, two passes instead of four."""
        for i, (p, g) in enumerate(zip(params, grads)):
            if maximize:
                g = xp.negative(g)
            if p.dtype in low_precision:
                half_sgd_(p, g, bufs[i] if momentum != 0 else None, lr, momentum, dampening,
                          weight_decay, nesterov)
                continue
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
        "_foreach_neg_": neg_,
        "_foreach_zero_": zero_, "_foreach_copy_": copy_,
    }


def _never(*args: Any) -> bool:
    """An absent axpy/axpby hook: it never applies."""
    return False


def _each(values: Any, n: int) -> list:
    """A per-tensor list of scalars, or one scalar for every tensor."""
    return values if isinstance(values, (list, tuple)) else [values] * n
