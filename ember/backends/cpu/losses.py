"""The CPU's cross-entropy kernels: the shared ones (backends/xp/fused.py) in fewer NumPy
calls.

A classifier's loss is small ((N, C) logits with C in the tens), so its time is the
number of NumPy calls, ~0.5-1 us each, and NumPy's slow loop for reductions along short
rows, not arithmetic. The shared kernels make 17 calls forward (several through NumPy's
Python wrappers: `max`, `sum`, `all`) and 7 backward; these make ~11 and 3, and none
reduces along a short row (2-core AMD EPYC, alternating in one process: (4, 8) logits
11.6 -> 9.7 us forward, 6.9 -> 4.5 us backward; (128, 10) 22 -> 13.5 and 8.2 -> 5.5).
The loss is its decomposition's to the bit, `nll_loss(log_softmax(x))`: `log(sum(exp(x -
max))) - (x[t] - max)` per row with the CPU's exp, sum and log kernels, added in PyTorch's
order; the gradient `(softmax - onehot(t)) * scale`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backends.cpu import cascade_sum

_constants: dict[tuple, np.ndarray] = {}


def _constant(key: tuple, make: Any) -> np.ndarray:
    """`make()` as a read-only array, made once per `key` (the cache starts afresh when
    many batch sizes or widths have passed)."""
    array = _constants.get(key)
    if array is None:
        if len(_constants) > 128:
            _constants.clear()
        array = _constants[key] = make()
        array.flags.writeable = False
    return array


def _rows(n: int) -> np.ndarray:
    """`arange(n)` (int64, read-only), made once per batch size."""
    return _constant(("rows", n), lambda: np.arange(n))


def _all_valid(target: np.ndarray, ignore_index: int, classes: int) -> bool:
    """Whether no target is `ignore_index`, in one call. Targets are class indices in
    [0, classes) or `ignore_index` (core checks CPU targets before the kernel runs), so
    with the usual negative `ignore_index` a non-negative minimum says it."""
    if not target.size:
        return True
    if ignore_index < 0:
        return bool(np.minimum.reduce(target) >= 0)
    if ignore_index >= classes:
        return bool(np.maximum.reduce(target) < classes)
    return not np.equal(target, ignore_index).any()


def kernels(shared: dict[str, Any]) -> dict[str, Any]:
    """The CPU's `cross_entropy` and `cross_entropy_backward`; `shared` (the kernels made
    from backends/xp) runs the cases these leave to it: ignored targets, an empty batch,
    and the backward of `reduction="none"`."""
    shared_forward = shared["cross_entropy"]
    shared_backward = shared["cross_entropy_backward"]

    def cross_entropy(logits: np.ndarray, target: np.ndarray, ignore_index: int = -100,
                      reduction: str = "mean") -> tuple[np.ndarray, np.ndarray]:
        """The loss of (N, C) logits against class indices, and the softmax backward
        reads."""
        if not logits.shape[0] or not _all_valid(target, ignore_index, logits.shape[1]):
            return shared_forward(logits, target, ignore_index, reduction)
        return _forward(logits, target, reduction, shared)

    def cross_entropy_backward(probs: np.ndarray, target: np.ndarray, g: np.ndarray,
                               ignore_index: int = -100, reduction: str = "mean") -> np.ndarray:
        """The gradient of `cross_entropy` with respect to the logits."""
        if not probs.shape[0] or reduction == "none" or \
                not _all_valid(target, ignore_index, probs.shape[1]):
            return shared_backward(probs, target, g, ignore_index, reduction)
        return _backward(probs, target, g, reduction)

    return {"cross_entropy": cross_entropy, "cross_entropy_backward": cross_entropy_backward,
            "nll_loss": nll_loss}


def nll_loss(logp: np.ndarray, safe: np.ndarray, valid: np.ndarray, weight: Any = None,
             reduction: str = "mean") -> tuple:
    """The fused `nll_loss` of (N, C) float32/float64 log-probabilities: core's
    decomposition in NumPy calls, each step rounded as its ops round it (its sums as the
    CPU's `sum` kernel adds them); Nones where a target is out of range (core raises)."""
    if safe.size and (np.minimum.reduce(safe) < 0 or np.maximum.reduce(safe) >= logp.shape[1]):
        return None, None, None
    zero = logp.dtype.type(0)
    picked = logp[_rows(logp.shape[0]), safe]
    w = valid.astype(logp.dtype) if weight is None else np.where(valid, weight[safe], zero)
    loss = np.where(valid, np.negative(picked) * w, zero)
    total = cascade_sum.sum_all(w)
    if reduction != "none":
        loss = cascade_sum.sum_all(loss)
    if reduction == "mean":
        loss = np.asarray(np.true_divide(loss, total))
    return loss, w, total


def _forward(logits: np.ndarray, target: np.ndarray, reduction: str, table: dict[str, Any]
             ) -> tuple[np.ndarray, np.ndarray]:
    """The loss as its decomposition, `nll_loss(log_softmax(x))`, computes it, to the
    bit: the CPU's own `exp`, `sum` (PyTorch's order of adds) and `log` kernels, looked up
    in `table` at the call (the compiled ones replace NumPy's once numba loads), and the
    losses added as nll_loss adds them."""
    n = logits.shape[0]
    shifted = np.subtract(logits, _row_max(logits)[:, None])
    probs = table["exp"](shifted)
    total = table["sum"](probs, (1,), False)
    losses = np.subtract(table["log"](total), shifted[_rows(n), target])
    np.divide(probs, total[:, None], out=probs)
    if reduction == "none":
        return losses.astype(logits.dtype, copy=False), probs
    loss = cascade_sum.sum_all(losses)
    if reduction == "mean":
        loss = np.true_divide(loss, losses.dtype.type(n))
    return np.asarray(loss, dtype=logits.dtype), probs


_NARROW = 64  # classes below which a row reduction runs over a transposed copy


def _row_max(x: np.ndarray) -> np.ndarray:
    """The max of each row of (N, C) `x`. NumPy reduces a short contiguous row in a slow
    loop ((128, 10) float32: 15 us); over the transposed copy it takes C vector passes
    (3 us, the copy included)."""
    if x.shape[1] < _NARROW and x.shape[0] > 16:
        return np.maximum.reduce(np.ascontiguousarray(x.T), axis=0)
    return np.maximum.reduce(x, axis=1)


def _backward(probs: np.ndarray, target: np.ndarray, g: np.ndarray, reduction: str
              ) -> np.ndarray:
    n = probs.shape[0]
    scale = probs.dtype.type(g.item() if reduction == "sum" else g.item() / n)
    grad = np.multiply(probs, scale)
    grad[_rows(n), target] -= scale
    return grad
