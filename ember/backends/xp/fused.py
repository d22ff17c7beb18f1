"""Fused kernels for composite ops and backward formulas (docs/architecture.md, "Fused
kernels and list ops"): `<op>_backward` for tanh, sigmoid, relu, exp and log, softmax and
log-softmax, the cross-entropy loss, and one LSTM step. The fused linear layer is in
linalg.py, conv and pooling in conv.py and pooling.py, max(dim)/min(dim) in
reductions.py."""

from __future__ import annotations

import math
from typing import Any

from ember.backends.xp.lib import ArrayLib, Kernel, in_float32


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    table = _backward_formulas(lib)
    table.update(_softmax(lib))
    table.update(_cross_entropy(lib))
    table.update(_lstm_cell(lib))
    return table


def _backward_formulas(lib: ArrayLib) -> dict[str, Kernel]:
    xp, quiet, gemm_dtypes = lib.xp, lib.quiet, lib.gemm_dtypes

    low_precision = lib.low_precision

    def opmath(formula):
        """Half floats computed in float32 and rounded once, as PyTorch's kernels."""
        def kernel(y, g):
            if y.dtype in low_precision:
                return in_float32(xp, formula, y, g)
            return formula(y, g)
        return kernel

    @opmath
    def tanh_backward(y, g):
        out = xp.multiply(y, y)
        xp.subtract(1, out, out=out)
        return xp.multiply(out, g, out=out)

    @opmath
    def sigmoid_backward(y, g):
        out = xp.subtract(1, y)
        out *= y
        return xp.multiply(out, g, out=out)

    def relu_backward(y, g):
        """0 where y <= 0, else g (g at a NaN y, as PyTorch's threshold_backward): a
        multiply by the mask (3x faster than xp.where), with xp.where's exact zeros kept
        where g holds a NaN or an infinity."""
        keep = xp.logical_not(y <= 0)
        with quiet():  # inf * 0 is replaced below
            out = xp.multiply(g, keep.astype(g.dtype))  # (a float mask multiplies faster)
        if not all_finite(out):
            out = xp.where(keep, g, g.dtype.type(0))
        return out

    def all_finite(x) -> bool:
        """Whether x holds no NaN or infinity; may say False for finite values whose
        squares overflow (callers then take an exact slow path). A BLAS dot is one pass
        without a temporary (on NumPy 2.5x faster than its pairwise sum, 1.1x than
        isfinite(...).all())."""
        with quiet():
            if x.dtype in gemm_dtypes and x.flags.c_contiguous:
                flat = x.reshape(-1)
                return bool(xp.isfinite(xp.dot(flat, flat)))
            return bool(xp.isfinite(x.sum()))

    def exp_backward(y, g):
        return xp.multiply(g, y)

    def log_backward(x, g):
        with quiet():
            return xp.divide(g, x)

    return {"tanh_backward": tanh_backward, "sigmoid_backward": sigmoid_backward,
            "relu_backward": relu_backward, "exp_backward": exp_backward,
            "log_backward": log_backward}


def _softmax(lib: ArrayLib) -> dict[str, Kernel]:
    return softmax_kernels(lib.xp, lib.quiet, lib.xp.exp,
                           lambda a, dims, keepdim: a.sum(axis=dims, keepdims=keepdim))


def softmax_kernels(xp: Any, quiet: Any, exp: Kernel, total: Kernel) -> dict[str, Kernel]:
    """softmax and log_softmax along `dim` as the composites' decomposition computes them
    (the maximum subtracted first; a NaN or an infinity gives what it gives there), in
    three passes over one buffer instead of five ops' dispatches (an 8x8 softmax: ~70 ->
    ~15 us). `exp` and `total(a, dims, keepdim)` are the backend's `exp` and `sum` kernels,
    so the result is the decomposition's to the bit (the CPU's exp and its adds in
    PyTorch's order). `quiet()` is the backend's floating-point-warnings silencer."""

    def softmax(x, dim):
        with quiet():  # (inf - inf in a row of infinities: NaN, silently, as PyTorch)
            out = exp(xp.subtract(x, x.max(axis=dim, keepdims=True)))
            out /= total(out, (dim,), True)
        return out

    def log_softmax(x, dim):
        with quiet():
            out = xp.subtract(x, x.max(axis=dim, keepdims=True))
            sums = total(exp(out), (dim,), True)
            out -= xp.log(sums, out=sums)
        return out

    return {"softmax": softmax, "log_softmax": log_softmax}


def _cross_entropy(lib: ArrayLib) -> dict[str, Kernel]:
    xp = lib.xp

    def cross_entropy(logits, target, ignore_index=-100, reduction="mean"):
        """Loss of (N, C) logits against class indices, and the softmax saved for
        backward."""
        shifted = logits - logits.max(axis=1, keepdims=True)
        probs = xp.exp(shifted)
        total = probs.sum(axis=1, keepdims=True)
        probs /= total
        valid = target != ignore_index
        rows = xp.arange(len(target))
        if valid.all():  # the common case, without the masking
            losses = xp.log(total[:, 0])
            losses -= shifted[rows, target]
            losses = losses.astype(logits.dtype, copy=False)
        else:
            picked = shifted[rows, xp.where(valid, target, 0)]
            losses = xp.where(valid, xp.log(total[:, 0]) - picked, 0).astype(logits.dtype)
        if reduction == "none":
            return losses, probs
        total_loss = losses.sum(dtype=xp.float64)
        if reduction == "mean":
            count = valid.sum()
            total_loss = total_loss / count if count else math.nan
        return xp.asarray(total_loss, dtype=logits.dtype), probs

    def cross_entropy_backward(probs, target, g, ignore_index=-100, reduction="mean"):
        valid = target != ignore_index
        grad = probs.copy()
        if valid.all():  # the common case, without the masking
            grad[xp.arange(len(target)), target] -= 1
        else:
            rows = xp.nonzero(valid)[0]
            grad[rows, target[rows]] -= 1
            grad[~valid] = 0
        if reduction == "none":
            grad *= g[:, None]
        else:
            scale = g.item() if reduction == "sum" else g.item() / max(int(valid.sum()), 1)
            grad *= grad.dtype.type(scale)
        return grad

    return {"cross_entropy": cross_entropy, "cross_entropy_backward": cross_entropy_backward}


def _lstm_cell(lib: ArrayLib) -> dict[str, Kernel]:
    xp = lib.xp

    def sigmoid_(x):
        """In place: sigmoid(x) = 0.5 * tanh(x / 2) + 0.5."""
        x *= 0.5
        xp.tanh(x, out=x)
        x *= 0.5
        x += 0.5
        return x

    def lstm_cell(input_gates, hidden_gates, cx):
        """One LSTM step (gates i, f, g, o); returns hy, cy and the activated gates."""
        hidden = cx.shape[1]
        gates = xp.add(input_gates, hidden_gates)
        sigmoid_(gates[:, :2 * hidden])
        xp.tanh(gates[:, 2 * hidden:3 * hidden], out=gates[:, 2 * hidden:3 * hidden])
        sigmoid_(gates[:, 3 * hidden:])
        i, f = gates[:, :hidden], gates[:, hidden:2 * hidden]
        g, o = gates[:, 2 * hidden:3 * hidden], gates[:, 3 * hidden:]
        cy = xp.multiply(f, cx)
        cy += i * g
        hy = xp.tanh(cy)
        hy *= o
        return hy, cy, gates

    def lstm_cell_backward(grad_hy, grad_cy, cx, cy, gates):
        hidden = cx.shape[1]
        i, f = gates[:, :hidden], gates[:, hidden:2 * hidden]
        g, o = gates[:, 2 * hidden:3 * hidden], gates[:, 3 * hidden:]
        t = xp.tanh(cy)
        grad = xp.empty_like(gates)
        # output gate: grad_hy * tanh(cy) * o * (1 - o)
        go = grad[:, 3 * hidden:]
        xp.subtract(1, o, out=go)
        go *= o
        go *= t
        go *= grad_hy
        # cell: gc = grad_hy * o * (1 - t^2) (+ grad_cy)
        xp.multiply(t, t, out=t)
        xp.subtract(1, t, out=t)
        t *= o
        t *= grad_hy
        gc = t
        if grad_cy is not None:
            gc += grad_cy
        gi, gf, gg = grad[:, :hidden], grad[:, hidden:2 * hidden], grad[:, 2 * hidden:3 * hidden]
        xp.subtract(1, i, out=gi)
        gi *= i
        gi *= g
        gi *= gc
        xp.subtract(1, f, out=gf)
        gf *= f
        gf *= cx
        gf *= gc
        xp.multiply(g, g, out=gg)
        xp.subtract(1, gg, out=gg)
        gg *= i
        gg *= gc
        return grad, xp.multiply(gc, f)

    return {"lstm_cell": lstm_cell, "lstm_cell_backward": lstm_cell_backward}
