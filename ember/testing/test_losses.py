"""The losses (ember.core.ops.losses, `nn.functional.*_loss`) on the device under test:
values against NumPy references for every reduction, in float32 and float64, with class
weights, ignore_index, label smoothing, probability targets and the other options; the
same cases against PyTorch where it is installed. (Their gradients: ember.testing.opinfo.)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import ember
from ember.testing import support as S
from ember.testing.opinfo import nnf

REDUCTIONS = ("none", "mean", "sum")
_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}

RNG = np.random.default_rng(21)
X = RNG.uniform(-2, 2, (4, 5))
Y = RNG.uniform(-2, 2, (4, 5))
W = RNG.uniform(0.5, 1.5, (4, 5))
PROB = RNG.uniform(0.05, 0.95, (4, 5))
TARGET01 = RNG.uniform(0, 1, (4, 5))
SIGNS = np.where(RNG.random((4, 5)) < 0.5, -1.0, 1.0)
ROW_SIGNS = np.array([1.0, -1.0, -1.0, 1.0])
LABELS = (RNG.random((4, 5)) < 0.5).astype(np.float64)
CLASSES = np.array([1, -100, 4, 0])  # one ignored target
CLASS_W = RNG.uniform(0.5, 1.5, 5)
X3 = RNG.uniform(-2, 2, (2, 5, 3))  # (N, C, d)
T3 = np.array([[0, 4, 2], [-100, 1, 3]])
SOFT = np.exp(Y) / np.exp(Y).sum(1, keepdims=True)


# -- NumPy references ------------------------------------------------------------------


def _reduce(loss: np.ndarray, reduction: str) -> np.ndarray:
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


def _logsigmoid(x: np.ndarray) -> np.ndarray:
    return np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x)))


def _weighted(loss: np.ndarray, w: np.ndarray | None, reduction: str,
              mean_by_weight: bool = True) -> np.ndarray:
    if w is None:
        return _reduce(loss, reduction)
    loss = loss * w
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


def _nll(logp: np.ndarray, target: np.ndarray, weight: np.ndarray | None,
         reduction: str, ignore_index: int = -100) -> np.ndarray:
    """(N, C, *d) log-probabilities (or (C,)) at class indices (N, *d) (or ())."""
    if logp.ndim == 1:
        logp, target = logp[None], np.asarray(target).reshape(1)
        squeeze = True
    else:
        squeeze = False
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    picked = np.take_along_axis(logp, safe[:, None], 1)[:, 0]
    w = (weight[safe] if weight is not None else np.ones_like(picked)) * valid
    loss = -picked * w
    if reduction == "none":
        return loss[0] if squeeze else loss
    return loss.sum() if reduction == "sum" else loss.sum() / w.sum()


def _cross_entropy(x: np.ndarray, target: np.ndarray, weight: np.ndarray | None,
                   reduction: str, label_smoothing: float = 0.0,
                   ignore_index: int = -100) -> np.ndarray:
    cdim = 0 if x.ndim == 1 else 1
    c = x.shape[cdim]
    logp = _log_softmax(x, cdim)
    wshape = [1] * x.ndim
    wshape[cdim] = c
    wb = np.ones(wshape) if weight is None else weight.reshape(wshape)
    if target.dtype.kind == "f":  # probabilities
        t = target * (1 - label_smoothing) + label_smoothing / c
        per = -(logp * t * wb).sum(cdim)
        if reduction == "mean":
            return per.sum() / (x.size // c)
        return _reduce(per, reduction)
    nll = _nll(logp, target, weight, reduction, ignore_index)
    if label_smoothing == 0.0:
        return nll
    valid = target != ignore_index
    smooth = np.where(valid, -(logp * wb).sum(cdim), 0.0)
    if reduction == "mean":
        safe = np.where(valid, target, 0)
        tw = (weight[safe] if weight is not None else np.ones(safe.shape)) * valid
        smooth = smooth.sum() / tw.sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / c)


def _bce(x, y, w, reduction):
    loss = -(y * np.maximum(np.log(x), -100) + (1 - y) * np.maximum(np.log(1 - x), -100))
    return _reduce(loss if w is None else loss * w, reduction)


def _bce_logits(x, y, w, pw, reduction):
    lw = 1.0 if pw is None else 1 + (pw - 1) * y
    loss = (1 - y) * x + lw * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))
    return _reduce(loss if w is None else loss * w, reduction)


def _kl(x, t, log_target, reduction):
    if log_target:
        loss = np.exp(t) * (t - x)
    else:
        loss = np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0) - t * x
    if reduction == "batchmean":
        return loss.sum() / x.shape[0]
    return _reduce(loss, reduction)


def _poisson(x, t, log_input, full, reduction, eps=1e-8):
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        s = np.where(t > 1, t, 1.0)
        loss = loss + np.where(t > 1, s * np.log(s) - s + 0.5 * np.log(2 * np.pi * s), 0.0)
    return _reduce(loss, reduction)


def _gaussian(x, t, var, full, reduction, eps=1e-6):
    if var.shape != x.shape:
        var = var[..., None]
    var = np.maximum(var, eps)
    loss = 0.5 * (np.log(var) + (x - t) ** 2 / var)
    if full:
        loss = loss + 0.5 * np.log(2 * np.pi)
    return _reduce(loss, reduction)


def _cosine_embedding(a, b, y, margin, reduction):
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))
    loss = np.where(y == 1, 1 - cos, 0.0) + np.where(y == -1, np.maximum(cos - margin, 0), 0.0)
    return _reduce(loss, reduction)


def _triplet(a, p, n, margin, norm_p, swap, reduction, eps=1e-6):
    def dist(u, v):
        return (np.abs(u - v + eps) ** norm_p).sum(-1) ** (1.0 / norm_p)
    d_neg = dist(a, n)
    if swap:
        d_neg = np.minimum(d_neg, dist(p, n))
    return _reduce(np.maximum(dist(a, p) - d_neg + margin, 0.0), reduction)


def _smooth_l1(d, beta, reduction):
    ad = np.abs(d)
    loss = ad if beta == 0 else np.where(ad < beta, 0.5 * d * d / beta, ad - 0.5 * beta)
    return _reduce(loss, reduction)


def _huber(d, delta, w, reduction):
    ad = np.abs(d)
    loss = np.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))
    return _weighted(loss, w, reduction, mean_by_weight=False)


# -- the cases -------------------------------------------------------------------------


@dataclass(frozen=True)
class LossCase:
    """One call of `nn.functional.<op>`: its arrays (float ones take the dtype under test;
    integer ones are class indices), keyword arguments (arrays among them become tensors
    too), and the NumPy reference of its value for a reduction."""

    op: str
    args: tuple[np.ndarray, ...]
    ref: Callable[[str], Any]
    kwargs: dict[str, Any] = field(default_factory=dict)
    reductions: tuple[str, ...] = REDUCTIONS
    id: str = ""


def _m(loss, reduction):  # the mean/sum/none of an elementwise NumPy loss
    return _reduce(loss, reduction)


CASES: list[LossCase] = [
    LossCase("mse_loss", (X, Y), lambda r: _m((X - Y) ** 2, r)),
    LossCase("mse_loss", (X, Y), lambda r: _weighted((X - Y) ** 2, W, r), {"weight": W},
             id="weight"),
    LossCase("l1_loss", (X, Y), lambda r: _m(np.abs(X - Y), r)),
    LossCase("l1_loss", (X, Y), lambda r: _weighted(np.abs(X - Y), W, r), {"weight": W},
             id="weight"),
    LossCase("smooth_l1_loss", (X, Y), lambda r: _smooth_l1(X - Y, 1.0, r)),
    LossCase("smooth_l1_loss", (X, Y), lambda r: _smooth_l1(X - Y, 0.5, r), {"beta": 0.5},
             id="beta"),
    LossCase("smooth_l1_loss", (X, Y), lambda r: _smooth_l1(X - Y, 0.0, r), {"beta": 0.0},
             id="beta0"),
    LossCase("huber_loss", (X, Y), lambda r: _huber(X - Y, 1.0, None, r)),
    LossCase("huber_loss", (X, Y), lambda r: _huber(X - Y, 0.5, W, r),
             {"delta": 0.5, "weight": W}, id="weight"),
    LossCase("nll_loss", (_log_softmax(X, 1), CLASSES),
             lambda r: _nll(_log_softmax(X, 1), CLASSES, None, r)),
    LossCase("nll_loss", (_log_softmax(X, 1), CLASSES),
             lambda r: _nll(_log_softmax(X, 1), CLASSES, CLASS_W, r), {"weight": CLASS_W},
             id="weight"),
    LossCase("nll_loss", (X3, np.where(T3 == -100, 2, T3)),
             lambda r: _nll(X3, np.where(T3 == -100, 2, T3), None, r, ignore_index=2),
             {"ignore_index": 2}, id="spatial"),
    LossCase("nll_loss", (X[0], np.array(3)), lambda r: _nll(X[0], np.array(3), None, r),
             id="unbatched"),
    LossCase("cross_entropy", (X, CLASSES), lambda r: _cross_entropy(X, CLASSES, None, r)),
    LossCase("cross_entropy", (X, CLASSES),
             lambda r: _cross_entropy(X, CLASSES, CLASS_W, r, 0.2),
             {"weight": CLASS_W, "label_smoothing": 0.2}, id="weight-smoothing"),
    LossCase("cross_entropy", (X, CLASSES), lambda r: _cross_entropy(X, CLASSES, None, r, 0.1),
             {"label_smoothing": 0.1}, id="smoothing"),
    LossCase("cross_entropy", (X, SOFT), lambda r: _cross_entropy(X, SOFT, CLASS_W, r, 0.1),
             {"weight": CLASS_W, "label_smoothing": 0.1}, id="probabilities"),
    LossCase("cross_entropy", (X3, T3), lambda r: _cross_entropy(X3, T3, None, r),
             id="spatial"),
    LossCase("binary_cross_entropy", (PROB, TARGET01),
             lambda r: _bce(PROB, TARGET01, None, r)),
    LossCase("binary_cross_entropy", (PROB, TARGET01), lambda r: _bce(PROB, TARGET01, W, r),
             {"weight": W}, id="weight"),
    LossCase("binary_cross_entropy_with_logits", (X * 4, TARGET01),
             lambda r: _bce_logits(X * 4, TARGET01, None, None, r)),
    LossCase("binary_cross_entropy_with_logits", (X * 4, TARGET01),
             lambda r: _bce_logits(X * 4, TARGET01, W, CLASS_W, r),
             {"weight": W, "pos_weight": CLASS_W}, id="weights"),
    LossCase("kl_div", (_log_softmax(X, 1), SOFT),
             lambda r: _kl(_log_softmax(X, 1), SOFT, False, r),
             reductions=REDUCTIONS + ("batchmean",)),
    LossCase("kl_div", (_log_softmax(X, 1), np.log(SOFT)),
             lambda r: _kl(_log_softmax(X, 1), np.log(SOFT), True, r), {"log_target": True},
             reductions=REDUCTIONS + ("batchmean",), id="log_target"),
    LossCase("soft_margin_loss", (X, SIGNS), lambda r: _m(np.log1p(np.exp(-SIGNS * X)), r)),
    LossCase("multilabel_soft_margin_loss", (X, LABELS),
             lambda r: _m((-(LABELS * _logsigmoid(X) + (1 - LABELS) * _logsigmoid(-X))
                           * W).mean(-1), r), {"weight": W}),
    LossCase("poisson_nll_loss", (X, np.abs(Y) * 2),
             lambda r: _poisson(X, np.abs(Y) * 2, True, True, r), {"full": True}),
    LossCase("poisson_nll_loss", (np.abs(X), np.abs(Y) * 2),
             lambda r: _poisson(np.abs(X), np.abs(Y) * 2, False, False, r),
             {"log_input": False}, id="rates"),
    LossCase("gaussian_nll_loss", (X, Y, W), lambda r: _gaussian(X, Y, W, True, r),
             {"full": True}),
    LossCase("gaussian_nll_loss", (X, Y, W[:, 0]), lambda r: _gaussian(X, Y, W[:, 0], False, r),
             id="per-row-var"),
    LossCase("margin_ranking_loss", (X, Y, SIGNS),
             lambda r: _m(np.maximum(-SIGNS * (X - Y) + 0.3, 0), r), {"margin": 0.3}),
    LossCase("hinge_embedding_loss", (X, SIGNS),
             lambda r: _m(np.where(SIGNS == 1, X, np.maximum(0.5 - X, 0)), r),
             {"margin": 0.5}),
    LossCase("cosine_embedding_loss", (X, Y, ROW_SIGNS),
             lambda r: _cosine_embedding(X, Y, ROW_SIGNS, 0.1, r), {"margin": 0.1}),
    LossCase("triplet_margin_loss", (X, Y, Y[::-1].copy()),
             lambda r: _triplet(X, Y, Y[::-1], 1.0, 2, False, r)),
    LossCase("triplet_margin_loss", (X, Y, Y[::-1].copy()),
             lambda r: _triplet(X, Y, Y[::-1], 0.5, 1, True, r),
             {"margin": 0.5, "p": 1, "swap": True}, id="p1-swap"),
]


def _case_id(case: LossCase) -> str:
    return f"{case.op}-{case.id}" if case.id else case.op


def _on(lib: Any, device: Any, a: Any, dtype: str) -> Any:
    """An array as `lib`'s tensor: float arrays in `dtype`, integer ones as int64."""
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.kind == "f":
        a = a.astype(dtype)
    if lib is ember:
        return S.on(device, a)
    return lib.tensor(a)


def _call(lib: Any, device: Any, case: LossCase, dtype: str, reduction: str) -> Any:
    args = [_on(lib, device, a, dtype) for a in case.args]
    kwargs = {k: _on(lib, device, v, dtype) for k, v in case.kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kl_div's 'mean' warns, as PyTorch's does
        return getattr(nnf(lib), case.op)(*args, reduction=reduction, **kwargs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_loss_values(device: ember.device, case: LossCase, dtype: str) -> None:
    rtol, atol = _TOL[dtype]
    for reduction in case.reductions:
        out = _call(ember, device, case, dtype, reduction)
        S.assert_matches(out, np.asarray(case.ref(reduction)), device,
                         dtype=getattr(ember, dtype), rtol=rtol, atol=atol,
                         what=f"{_case_id(case)}(reduction={reduction!r}), {dtype}")


@pytest.mark.skipif(S.torch is None, reason="PyTorch (the oracle) is not installed")
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_loss_values_match_torch(device: ember.device, case: LossCase) -> None:
    torch = S.torch
    rtol, atol = _TOL["float64"]
    for reduction in case.reductions:
        out = _call(ember, device, case, "float64", reduction)
        ref = _call(torch, None, case, "float64", reduction)
        S.assert_matches(out, ref.numpy(), device, rtol=rtol, atol=atol,
                         what=f"{_case_id(case)}(reduction={reduction!r}) vs torch")


def test_loss_errors(device: ember.device) -> None:
    """PyTorch's checks: reductions, target shapes and class indices."""
    F = nnf(ember)
    x, y = S.on(device, X), S.on(device, Y)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.mse_loss(x, y, reduction="foo")
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(x, y[:2])
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Float"):
        F.nll_loss(x, S.on(device, np.zeros(4, np.float32)))
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        F.nll_loss(x, S.on(device, np.array([0, 1, -3, 0])))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, y, S.on(device, -W))


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

COVERS = {case.op for case in CASES}
"""The declared ops whose values this module's tests check."""
