"""Matrix products: matmul, einsum, and the fused linear layer with its backward."""

from __future__ import annotations

from ember.backends.xp.lib import ArrayLib, Kernel


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, as_array, low_precision = lib.xp, lib.as_array, lib.low_precision
    product = lib.matmul

    def matmul(a, b):
        return as_array(product(a, b)).astype(a.dtype, copy=False)

    def einsum(*xs, equation):
        return as_array(xp.einsum(equation, *xs, optimize=len(xs) > 1))

    def linear(x, w, b=None):
        """x @ w.T + b in one call (the transpose is a BLAS flag, not a copy)."""
        out = matmul(x, w.T)
        if b is not None:
            out += b
        return as_array(out).astype(x.dtype, copy=False)

    def linear_backward(x, w, g, needs=(True, True, True)):
        """Gradients of linear: (g @ w, g2.T @ x2, g2.sum(0)) with leading dims
        flattened."""
        g2 = g.reshape(-1, g.shape[-1])
        gx = product(g, w) if needs[0] else None
        gw = product(g2.T, x.reshape(-1, x.shape[-1])) if needs[1] else None
        gb = g2.sum(0, dtype=xp.float32 if g.dtype in low_precision else None).astype(
            g.dtype, copy=False) if len(needs) > 2 and needs[2] else None
        return gx, gw, gb

    return {"matmul": matmul, "einsum": einsum, "linear": linear,
            "linear_backward": linear_backward}
