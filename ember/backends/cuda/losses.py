"""cross_entropy and its backward for an asynchronous device: no value is read back.

The shared xp kernels (ember/backends/xp/fused.py) branch on values in device memory (are
all targets valid? how many?), which on the CPU is free and on a GPU waits for the device
three times a training step. These compute the same results with masks instead, so the
work stays queued. Written against any array module `xp` (the CUDA table passes CuPy; the
tests run the same code on NumPy against the shared kernels).

Targets out of [0, C) (other than ignore_index) are clamped into range instead of
checked: a check would wait for the device (PyTorch's CUDA kernel asserts on the device).
"""

from __future__ import annotations

from typing import Any


def kernels(xp: Any) -> dict[str, Any]:
    float64 = xp.float64

    def picked_rows(target, ignore_index, classes):
        valid = target != ignore_index
        safe = xp.clip(xp.where(valid, target, 0), 0, classes - 1)
        return valid, safe

    def cross_entropy(logits, target, ignore_index=-100, reduction="mean"):
        """Loss of (N, C) logits against class indices, and the softmax saved for
        backward."""
        shifted = logits - logits.max(axis=1, keepdims=True)
        probs = xp.exp(shifted)
        total = probs.sum(axis=1, keepdims=True)
        probs /= total
        valid, safe = picked_rows(target, ignore_index, logits.shape[1])
        picked = xp.take_along_axis(shifted, safe[:, None], axis=1)[:, 0]
        losses = xp.where(valid, xp.log(total[:, 0]) - picked, 0).astype(logits.dtype)
        if reduction == "none":
            return losses, probs
        loss = losses.sum(dtype=float64)
        if reduction == "mean":  # 0 / 0 is NaN when every target is ignored, as PyTorch's
            loss = loss / valid.sum(dtype=float64)
        return xp.asarray(loss).astype(logits.dtype), probs

    def cross_entropy_backward(probs, target, g, ignore_index=-100, reduction="mean"):
        valid, safe = picked_rows(target, ignore_index, probs.shape[1])
        grad = probs.copy()
        grad[xp.arange(len(target)), safe] -= valid.astype(grad.dtype)
        grad *= valid[:, None].astype(grad.dtype)  # ignored rows get no gradient
        if reduction == "none":
            grad *= g[:, None]
        elif reduction == "sum":
            grad *= xp.asarray(g).astype(grad.dtype)
        else:
            count = xp.maximum(valid.sum(dtype=float64), 1)
            grad *= (xp.asarray(g, dtype=float64) / count).astype(grad.dtype)
        return grad

    return {"cross_entropy": cross_entropy, "cross_entropy_backward": cross_entropy_backward}
