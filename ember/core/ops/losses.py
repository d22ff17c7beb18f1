"""Losses: the loss functions of `nn.functional`, each declared once, with PyTorch's
signatures and semantics (the deprecated `size_average`/`reduce` pair, `reduction`,
weights, `ignore_index` ...).

They are composites, written with the ops of the families before this one, and
differentiated through those ops — except cross entropy of (N, C) logits against class
indices, which has fused kernels and a declared gradient. Declaring them gives autocast
their classes: PyTorch's autocast computes most losses in float32 (its CPU lists, and
`AT_FORALL_FP32` of `aten/src/ATen/autocast_mode.h` on CUDA). `ember.nn.functional`
re-exports them; they are not in the top-level namespace (PyTorch's `torch.kl_div` and
the like are ATen ops with other signatures), so every one has the "internal" variant.
"""

from __future__ import annotations

import math
import sys
import warnings
from typing import Any

from ember.core import costs, tracing
from ember.core import dtype as dt
from ember.core.apply import record_grad
from ember.core.creation import full as _full
from ember.core.creation import zeros_like
from ember.core.declare import composite, fused_kernel
from ember.core.dispatch import check_castable, not_implemented_for, run_fused
from ember.core.errors import with_context
from ember.core.grad_mode import no_grad, state
from ember.core.graph import record
from ember.core.host import host_array
from ember.core.opdef import OPS, Grad
from ember.core.opdef import Precision as P
from ember.core.ops import elementwise as E
from ember.core.ops import reduction as R
from ember.core.ops.indexing import gather, scatter
from ember.core.ops.nn import log_softmax, softmax
from ember.core.ops.shape import squeeze, unsqueeze
from ember.core.tensor import Tensor

# -- reductions and warnings ----------------------------------------------------------


def _warn_at_caller(message: str) -> None:
    """Warn at the frame that called the loss: the first one outside ember.core (the op's
    function and the wrappers `declare` puts around it are all in core)."""
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("ember.core"):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _legacy_string(size_average: bool | None, reduce: bool | None) -> str:
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _legacy_message(reduction: str) -> str:
    return ("size_average and reduce args will be deprecated, please use reduction="
            f"'{reduction}' instead.")


def _legacy_reduction(size_average: bool | None, reduce: bool | None,
                      stacklevel: int = 3) -> str:
    """The reduction the deprecated `size_average`/`reduce` pair means, with PyTorch's
    warning `stacklevel` frames up (the loss modules' constructors call this)."""
    reduction = _legacy_string(size_average, reduce)
    warnings.warn(_legacy_message(reduction), stacklevel=stacklevel)
    return reduction


def _reduction_arg(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """The reduction a loss function uses: the deprecated `size_average`/`reduce` pair wins
    (with PyTorch's warning, pointing at the loss's caller); an invalid one raises."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_string(size_average, reduce)
        _warn_at_caller(_legacy_message(reduction))
    _check_reduction(reduction)
    return reduction


def _check_reduction(reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _target_size_check(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        _warn_at_caller(f"Using a target size ({target.shape}) that is different to the "
                        f"input size ({input.shape}). This will likely lead to incorrect "
                        "results due to broadcasting. Please ensure they have the same size.")


def _weighted(loss: Tensor, input: Tensor, weight: Tensor | None, reduction: str,
              mean_by_weight: bool = True) -> Tensor:
    """torch's `weight=` of mse/l1/huber: elementwise; 'mean' divides by the weights' sum
    (mse, l1) or by the element count (huber), as torch does."""
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_by_weight else loss.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     "'sum'.")


def _log1p_exp(x: Tensor) -> Tensor:
    """`log(1 + e^x)` (softplus with beta 1 and no threshold)."""
    return E.log1p(E.exp(x))


def _logsigmoid(x: Tensor) -> Tensor:
    """`log(1 / (1 + e^-x))`, computed stably."""
    return E.minimum_of(x, 0.0) - E.log1p(E.exp(-E.abs(x)))


def _pairwise_distance(x1: Tensor, x2: Tensor, p: float, eps: float) -> Tensor:
    """`nn.functional.pairwise_distance`: the p-norm of `x1 - x2 + eps` over the last dim."""
    return R.norm(x1 - x2 + eps, p, -1)


# -- regression losses ----------------------------------------------------------------


def _refuse_complex(kernel: str, *tensors: Tensor) -> None:
    """PyTorch's error for a loss without a complex kernel, which names the kernel
    (``"mse_cpu" not implemented for 'ComplexFloat'``), not the op."""
    for x in tensors:
        if x.dtype.is_complex:
            raise not_implemented_for(kernel, x)


def _refuse_integral(kernel: str, input: Tensor, target: Tensor) -> None:
    """PyTorch's mse, smooth L1 and Huber kernels are built for floating dtypes only: an
    integer or bool common dtype of input and target is refused, naming the kernel."""
    common = dt.promote_types(input.dtype, target.dtype)
    if not (common.is_floating_point or common.is_complex):
        raise not_implemented_for(kernel, input, common)


def _numeric_target(input: Tensor, target: Tensor) -> Tensor:
    """A bool target as the input's dtype: PyTorch's mse, smooth L1 and Huber kernels
    promote it (their `input - target` is not the `-` operator, which refuses bool)."""
    return target.to(input.dtype) if target.dtype is dt.bool_ and \
        input.dtype is not dt.bool_ else target


def _mse_grad(grad: Tensor, input: Tensor, target: Tensor, reduction: str) -> Tensor:
    """ATen's mse_loss_backward: `(input - target) * norm * grad`, norm 2 (2 / numel for
    'mean'); the target's gradient is the same with the two swapped."""
    diff = input - target
    return diff * (2.0 / diff.numel() if reduction == "mean" else 2.0) * grad


@composite(complex=True, variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(3),
           grad=Grad("MseLossBackward0",
                     input=lambda grad, input, target, reduction:
                     _mse_grad(grad, input, target, reduction),
                     target=lambda grad, input, target, reduction:
                     _mse_grad(grad, target, input, reduction)))
def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    r"""Mean squared error: :math:`(x - y)^2`, reduced."""
    _refuse_complex("mse", input, target)
    _refuse_integral("mse", input, target)
    _target_size_check(input, target)
    target = _numeric_target(input, target)
    reduction = _reduction_arg(size_average, reduce, reduction)
    if weight is not None:  # differentiated through its ops, as PyTorch's weighted form
        diff = input - target
        return _weighted(diff * diff, diff, weight, reduction)
    with no_grad():  # one node, PyTorch's MseLossBackward0
        diff = input - target
        loss = _reduce(diff * diff, reduction)
    record_grad(OPS["mse_loss"], (input, target), {"reduction": reduction}, loss)
    return loss


@composite(complex=True, variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(3))
def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    r"""Mean absolute error: :math:`|x - y|`, reduced."""
    _target_size_check(input, target)
    reduction = _reduction_arg(size_average, reduce, reduction)
    diff = input - target
    return _weighted(E.abs(diff), diff, weight, reduction)


def _smooth_l1_grad(grad: Tensor, input: Tensor, target: Tensor, reduction: str,
                    beta: float) -> Tensor:
    """ATen's smooth_l1_loss_backward: `d / beta` inside (-beta, beta), else sign(d),
    times the gradient (over the element count for 'mean'); d = input - target."""
    d = input - target
    norm = 1.0 / d.numel() if reduction == "mean" else 1.0
    # (at |d| = beta both forms agree; the sign's, constant, gives PyTorch's second
    # derivative there: 0)
    return E.where(E.abs(d) < beta, d * (norm / beta) * grad, E.sign(d) * norm * grad)


def _huber_grad(grad: Tensor, input: Tensor, target: Tensor, reduction: str,
                delta: float) -> Tensor:
    """ATen's huber_loss_backward: `d` inside [-delta, delta], else `delta * sign(d)`,
    times the gradient (over the element count for 'mean'); d = input - target."""
    d = input - target
    norm = 1.0 / d.numel() if reduction == "mean" else 1.0
    return E.where(d <= -delta, -norm * delta * grad,
                   E.where(d >= delta, norm * delta * grad, d * norm * grad))


@composite(complex=True, variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(6),
           grad=Grad("SmoothL1LossBackward0",
                     input=lambda grad, input, target, reduction, beta:
                     _smooth_l1_grad(grad, input, target, reduction, beta),
                     target=lambda grad, input, target, reduction, beta:
                     -_smooth_l1_grad(grad, input, target, reduction, beta)))
def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    r""":math:`0.5 d^2 / \beta` where :math:`|d| < \beta`, else :math:`|d| - 0.5\beta`."""
    _refuse_complex("smooth_l1", input, target)
    _target_size_check(input, target)
    target = _numeric_target(input, target)
    reduction = _reduction_arg(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:  # PyTorch's l1_loss then
        return _reduce(E.abs(input - target), reduction)
    _refuse_integral("smooth_l1", input, target)
    with no_grad():  # one node, PyTorch's SmoothL1LossBackward0
        diff = input - target
        ad = E.abs(diff)
        loss = _reduce(E.where(ad < beta, diff * diff * (0.5 / beta), ad - 0.5 * beta),
                       reduction)
    record_grad(OPS["smooth_l1_loss"], (input, target), {"reduction": reduction, "beta": beta},
                loss)
    return loss


@composite(complex=True, variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(6),
           grad=Grad("HuberLossBackward0",
                     input=lambda grad, input, target, reduction, delta:
                     _huber_grad(grad, input, target, reduction, delta),
                     target=lambda grad, input, target, reduction, delta:
                     -_huber_grad(grad, input, target, reduction, delta)))
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    r""":math:`0.5 d^2` where :math:`|d| < \delta`, else :math:`\delta(|d| - 0.5\delta)`."""
    _refuse_complex("huber", input, target)
    _refuse_integral("huber", input, target)
    # (its kernel writes into a tensor of the input's dtype: an integer input refuses the
    # float result)
    check_castable("huber_loss", dt.promote_types(input.dtype, target.dtype), input.dtype)
    _target_size_check(input, target)
    target = _numeric_target(input, target)
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None:  # differentiated through its ops, as PyTorch's weighted form
        diff = input - target
        ad = E.abs(diff)
        loss = E.where(ad < delta, diff * diff * 0.5, (ad - 0.5 * delta) * delta)
        return _weighted(loss, diff, weight, reduction, mean_by_weight=False)
    with no_grad():  # one node, PyTorch's HuberLossBackward0
        diff = input - target
        ad = E.abs(diff)
        loss = _reduce(E.where(ad < delta, diff * diff * 0.5, (ad - 0.5 * delta) * delta),
                       reduction)
        # PyTorch's kernel writes into a tensor of the input's dtype (smooth L1's doesn't)
        loss = loss.to(input.dtype) if input.dtype.is_floating_point else loss
    record_grad(OPS["huber_loss"], (input, target), {"reduction": reduction, "delta": delta},
                loss)
    return loss


# -- classification: negative log likelihood and cross entropy -------------------------


def _class_weight_shape(input: Tensor, class_dim: int) -> tuple:
    shape = [1] * input.ndim
    shape[class_dim] = input.shape[class_dim]
    return tuple(shape)


def _nll_grad(grad: Tensor, input_shape: tuple, class_dim: int, reduction: str, safe: Tensor,
              valid: Tensor, w: Tensor, total: Tensor) -> Tensor:
    """ATen's nll_loss_backward: `-w[t] * grad` (over the total weight for 'mean') at each
    sample's target class; zeros elsewhere, and in the rows of ignored targets."""
    scale = -grad / total if reduction == "mean" else -grad
    picked = E.where(valid, w * scale, 0.0)
    zeros = _full(tuple(input_shape), 0.0, dtype=picked.dtype, device=picked.device)
    return scatter(zeros, class_dim, unsqueeze(safe, class_dim), unsqueeze(picked, class_dim))


def _class_index_target(input: Tensor, target: Tensor) -> Tensor:
    """`target` checked as class indices for `input`, in PyTorch's order (shape and dtype
    checks interleave as its kernels do them); int64, or uint8 for a 1-D or 2-D input,
    which is widened. PyTorch's errors."""
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim == 1:
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        target = _index_dtype(target, byte=True)
        if target.ndim == 1 and target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
        return target
    batch = target.shape[0] if target.ndim else 0
    if input.shape[0] != batch:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({batch}).")
    expected = tuple(input.shape[:1]) + tuple(input.shape[2:])
    if input.ndim == 4 and tuple(target.shape) != expected:  # (PyTorch's nll_loss2d)
        if target.ndim != 3:
            raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                               f"targets of dimension: {target.ndim}")
        raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: "
                           f"{list(target.shape)}")
    if tuple(target.shape) != expected:
        if input.ndim == 2:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        raise RuntimeError(f"Expected target size {list(expected)}, got "
                           f"{list(target.shape)}")
    return _index_dtype(target, byte=input.ndim == 2)


def _index_dtype(target: Tensor, byte: bool) -> Tensor:
    """An int64 target as it is, a uint8 one widened where `byte` (the 1-D/2-D kernel takes
    them; the N-d one refuses), any other dtype refused."""
    if target.dtype is dt.int64:
        return target
    if target.dtype is dt.uint8:
        if not byte:
            raise RuntimeError("expected scalar type Long but found Byte")
        return E.to_dtype(target, dt.int64)
    raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                       f"{dt.SCALAR_TYPE_NAMES[target.dtype.name]}")


def _in_order(values: list[Tensor]) -> Tensor | None:
    """The sum of `values` (tensors of one half dtype) added one by one, each sum
    rounded to the dtype; None for none."""
    total = None
    for v in values:
        total = v if total is None else total + v
    return total


def _half_cascade_sum(values: Tensor) -> Tensor:
    """The sum of a 1-D float16/bfloat16 tensor as PyTorch's CPU nll_loss adds its batch:
    in the dtype, rounded at each step, through 8 levels of partial sums. Element 0 goes
    to the top level; after it, level 0 adds the elements one by one and hands its sum
    to level 1 every 16 elements, level 1 hands its sum on every 16 hand-ins, and so on;
    the top level keeps all it gets. The result: the levels' sums added bottom up."""
    n = values.shape[0]
    if n == 0:
        return values.sum()
    levels: list[Tensor | None] = []
    pending = values[1:]  # what the current level adds, in order
    for _ in range(7):
        full = pending.shape[0] // 16
        tail = pending[16 * full:]
        levels.append(_in_order([tail[i] for i in range(tail.shape[0])]))
        groups = pending[:16 * full].reshape(full, 16)
        pending = _in_order([groups[:, j] for j in range(16)]) if full else pending[:0]
    levels.append(_in_order([values[0]] + [pending[i] for i in range(pending.shape[0])]))
    total = _in_order([v for v in levels if v is not None])
    return total * 1  # (a new tensor, not a view of `values`)


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(1), grad=Grad("NllLossBackward0", input=_nll_grad),
           fused=("nll_loss",))
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    r"""Negative log likelihood of log-probabilities ``input`` at class indices
    ``target``: :math:`-w_{y_n} x_{n, y_n}`; ``'mean'`` divides by the sum of the
    weights of the non-ignored targets.

    Shapes: input ``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``; target ``(N)``, ``()`` or
    ``(N, d1, ...)`` of class indices.
    """
    reduction = _reduction_arg(size_average, reduce, reduction)
    target = _class_index_target(input, target)
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    if weight is not None and input.ndim > 2:  # (PyTorch's nll_loss2d: counts only)
        if weight.numel() != n_classes:
            raise RuntimeError("weight tensor should be defined either for all or no classes")
        weight = weight.reshape(n_classes)
    elif weight is not None and (weight.ndim != 1 or weight.shape[0] != n_classes):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} "
                           f"classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    if input.ndim == 1:
        target = target.reshape(())
    valid = target != ignore_index
    safe = E.where(valid, target, 0)
    fused = run_fused("nll_loss", input, safe, valid, weight, reduction=reduction) \
        if input.ndim == 2 and input._dtype in _NLL_FUSED and \
        (weight is None or weight._dtype is input._dtype) else None
    if fused is None or fused[0] is None:
        loss, w, total = _nll_loss(input, safe, valid, weight, class_dim, n_classes, reduction)
    else:
        loss, w, total = fused
    record_grad(OPS["nll_loss"], (input,), {"class_dim": class_dim, "reduction": reduction,
                                           "safe": safe, "valid": valid, "w": w,
                                           "total": total}, loss,
                label=_nll_label(input.ndim, reduction))
    return loss


_NLL_FUSED = (dt.float32, dt.float64)  # (half floats: PyTorch's cascade, in ember ops)

fused_kernel("nll_loss", replaces="nll_loss", same_dtype=False, outputs=("like",) * 3,
             signature="nll_loss(logp, safe, valid, weight | None, *, reduction) -> "
                       "(loss, w, total)",
             doc="The loss of (N, C) float32/float64 log-probabilities at the int64 class "
                 "indices `safe` (0 where `valid` is False), each sample weighted by `w` "
                 "(`weight` at its class, or 1; 0 where not valid), reduced; `total` is "
                 "the sum of `w`. Nones where a class index is out of range (core raises "
                 "PyTorch's error then).")


def _nll_loss(input: Tensor, safe: Tensor, valid: Tensor, weight: Tensor | None,
              class_dim: int, n_classes: int, reduction: str) -> tuple:
    """nll_loss's (loss, w, total) in ember ops, after its check of the targets' range."""
    # one host read for the bounds check (gather would wrap negative targets around);
    # a check, not part of the computation: a trace records none of it
    with tracing.paused():
        if safe.numel() and bool(((safe < 0) | (safe >= n_classes)).any()):
            lo, hi = int(safe.min()), int(safe.max())
            raise IndexError(f"Target {lo if lo < 0 else hi} is out of bounds.")
    with no_grad():  # one node, PyTorch's NllLossBackward0
        picked = squeeze(gather(input, class_dim, unsqueeze(safe, class_dim)), class_dim)
        if weight is not None:
            w = E.where(valid, weight.index_select(0, safe.reshape(-1)).reshape(safe.shape),
                        0.0)
        else:
            w = valid.to(input.dtype)
        loss = E.where(valid, -picked * w, 0.0)  # an ignored target's NaN input counts 0
        total = w.sum()
        # PyTorch's half-float sum over a batch: its cascade in the dtype (see
        # _half_cascade_sum), where no target is ignored (an ignored one moves the steps)
        cascade = reduction != "none" and input._dtype in dt.HALF_DTYPES and \
            input.ndim <= 2 and bool(valid.all())
        if cascade:
            total = _half_cascade_sum(w.reshape(-1)) if weight is not None else total
            loss = _half_cascade_sum(loss.reshape(-1))
        else:
            loss = loss.sum() if reduction != "none" else loss
        if reduction == "mean":
            loss = loss / total
    return loss, w, total


def _nll_label(ndim: int, reduction: str) -> str:
    """PyTorch's node: nll_loss2d's for spatial inputs (other ranks than 4 viewed to 4-D
    and, unreduced, back: a view's node then)."""
    if ndim <= 2:
        return "NllLossBackward0"
    if reduction == "none" and ndim != 4:
        return "ViewBackward0"
    return "NllLoss2DBackward0"



def _cross_entropy_prob_target(input: Tensor, target: Tensor, weight: Tensor | None,
                               reduction: str, label_smoothing: float) -> Tensor:
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        prod = prod * weight.reshape(_class_weight_shape(input, class_dim))
    if reduction == "none":
        return -prod.sum(class_dim)
    if reduction == "sum":
        return -prod.sum()
    count = input.numel() // n_classes
    return -prod.sum() / (count if count else float("nan"))


def _cross_entropy_grad(grad, input, probs, target, ignore_index, reduction):
    if state.enabled:  # a recorded backward (create_graph): probs as a function of input
        probs = softmax(input, 1)
    fused = run_fused("cross_entropy_backward", probs, target, grad,
                      ignore_index=ignore_index, reduction=reduction)
    if fused is not None:
        return fused
    valid = E.ne(target, ignore_index)
    safe = E.where(valid, target, 0)
    onehot = scatter(zeros_like(probs), 1, unsqueeze(safe, 1), 1.0)
    g = E.mul(E.sub(probs, onehot), unsqueeze(E.to_dtype(valid, probs.dtype), 1))
    if reduction == "none":
        return E.mul(g, unsqueeze(grad, 1))
    if reduction == "mean":
        grad = E.div(grad, E.clamp(R.sum(E.to_dtype(valid, probs.dtype)), min=1.0))
    return E.mul(g, grad)


@composite(variants="", traced_as_node=True, precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(10), fused=("cross_entropy", "cross_entropy_backward"),
           grad=Grad("NllLossBackward0", input=_cross_entropy_grad))
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    r"""Cross entropy between logits ``input`` and ``target``: class indices (int) or
    class probabilities (float, same shape as ``input``).

    Equivalent to ``nll_loss(log_softmax(input, 1), target)`` for class indices, with
    optional class ``weight``, ``ignore_index`` and ``label_smoothing`` (a mixture of
    the target with the uniform distribution), exactly as torch computes them. (N, C)
    logits against (N,) class indices without weights or smoothing, the common case, run
    as one fused kernel where the backend has one, with one gradient node.

    Shapes: input ``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``.
    """
    reduction = _reduction_arg(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing:g}")  # (a C++ double, as PyTorch prints it)
    class_dim = 0 if input.ndim == 1 else 1
    if target.dtype.is_floating_point and target.shape == input.shape:
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_prob_target(input, target, weight, reduction, label_smoothing)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        log_softmax(input, class_dim)  # (refuses it as PyTorch's does: no integer kernel)
    # (half floats: PyTorch's log_softmax then nll_loss, which round in their own ways)
    if weight is None and label_smoothing == 0.0 and input.ndim == 2 and target.ndim == 1 \
            and target.shape[0] == input.shape[0] and target.dtype is dt.int64 \
            and input._dtype not in dt.HALF_DTYPES:
        return _cross_entropy_indices(input, target, ignore_index, reduction)
    target = _class_index_target(input, target)
    logp = log_softmax(input, class_dim)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0.0:
        return nll
    n_classes = input.shape[class_dim]
    t = target.reshape(()) if input.ndim == 1 else target
    ignore = t == ignore_index
    if weight is not None:
        smooth = -(logp * weight.reshape(_class_weight_shape(input, class_dim))).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = E.where(ignore, 0.0, smooth)
    if reduction == "mean":
        if weight is not None:
            safe = E.where(ignore, 0, t)
            tw = E.where(ignore, 0.0, weight.index_select(0, safe.reshape(-1))
                         .reshape(safe.shape))
            smooth = smooth.sum() / tw.sum()
        else:
            smooth = smooth.sum() / ignore.logical_not().sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _cross_entropy_indices(input: Tensor, target: Tensor, ignore_index: int,
                           reduction: str) -> Tensor:
    """(N, C) logits against (N,) class indices: one fused kernel and one gradient node
    where the backend has the kernels, else log_softmax + gather, differentiated through
    its ops."""
    _check_targets(target, input.shape[1], ignore_index)
    fused = run_fused("cross_entropy", input, target, ignore_index=ignore_index,
                      reduction=reduction)
    if fused is None:
        return _cross_entropy_composite(input, target, ignore_index, reduction)
    loss, probs = fused
    record_grad(OPS["cross_entropy"], (input,), {"probs": probs, "target": target,
                                                 "ignore_index": ignore_index,
                                                 "reduction": reduction}, loss)
    return loss


fused_kernel("cross_entropy", replaces="cross_entropy", same_dtype=False,
             outputs=("like", "like"),
             signature="cross_entropy(logits, target, *, ignore_index, reduction) -> "
                       "(loss, softmax)",
             doc="The loss of (N, C) logits against int64 class indices, and the softmax "
                 "its backward reads.")
fused_kernel("cross_entropy_backward", replaces="cross_entropy backward", backward=True,
             same_dtype=False,
             signature="cross_entropy_backward(softmax, target, grad, *, ignore_index, "
                       "reduction) -> grad_logits",
             doc="The gradient of cross_entropy with respect to the logits.")


def _check_targets(target: Tensor, classes: int, ignore_index: int) -> None:
    """PyTorch's IndexError for a class index outside [0, classes) (ignore_index aside).

    Only for CPU targets, where the values are already in host memory: on an accelerator
    the check would wait for the device every step (PyTorch's CUDA kernels do not check
    synchronously either); backends' kernels must stay in bounds on their own."""
    if target.numel() == 0 or target._device.type != "cpu":
        return
    values = host_array(target)  # (reading the host array records nothing in a trace)
    if values.min() >= 0 and values.max() < classes:  # the common case: two reductions
        return
    bad = values[(values != ignore_index) & ((values < 0) | (values >= classes))]
    if bad.size:
        raise IndexError(f"Target {int(bad[0])} is out of bounds.")


def _cross_entropy_composite(input: Tensor, target: Tensor, ignore_index: int,
                             reduction: str) -> Tensor:
    logp = log_softmax(input, 1)
    valid = E.ne(target, ignore_index)
    safe = E.where(valid, target, 0)
    picked = squeeze(gather(logp, 1, unsqueeze(safe, 1)), 1)
    losses = E.where(valid, E.neg(picked), 0.0)
    if reduction == "none":
        return losses
    total = R.sum(losses)
    if reduction == "sum":
        return total
    return E.div(total, R.sum(E.to_dtype(valid, input.dtype)))


# -- binary classification ------------------------------------------------------------


# (PyTorch's CUDA autocast refuses binary_cross_entropy, "unsafe to autocast"; ember has
# no such class, so accelerators compute it in float32 as the CPU does)
def _bce_input_grad(grad: Tensor, input: Tensor, target: Tensor, weight: Tensor | None,
                    reduction: str) -> Tensor:
    """ATen's binary_cross_entropy_backward: `(x - y) / max((1 - x) x, 1e-12)`, times the
    gradient and the weight, over the element count for 'mean'."""
    g = grad * (input - target) / E.clamp((1.0 - input) * input, min=1e-12)
    if weight is not None:
        g = g * weight
    return g / input.numel() if reduction == "mean" else g


def _bce_target_grad(grad: Tensor, input: Tensor, target: Tensor, weight: Tensor | None,
                     reduction: str) -> Tensor:
    """ATen's binary_cross_entropy_target_backward: `log(1 - x) - log(x)` (each clamped at
    -100, as the forward's), times the gradient and the weight, over the count for 'mean'."""
    g = (E.log(1.0 - input).clamp(min=-100.0) - E.log(input).clamp(min=-100.0)) * grad
    if weight is not None:
        g = g * weight
    return g / target.numel() if reduction == "mean" else g


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(8),
           grad=Grad("BinaryCrossEntropyBackward0", input=_bce_input_grad,
                     target=_bce_target_grad))
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    r"""Binary cross entropy of probabilities ``input``:
    :math:`-w[y \log x + (1 - y) \log(1 - x)]`, each log clamped at -100 as in torch."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the "
                         "same size.")
    if target.dtype is not input.dtype:
        raise with_context(RuntimeError(
            f"Found dtype {dt.SCALAR_TYPE_NAMES.get(target.dtype.name)} but expected "
            f"{dt.SCALAR_TYPE_NAMES.get(input.dtype.name)}"),
            f"binary_cross_entropy: target {target.dtype}, input {input.dtype}")
    with tracing.paused():  # a check, not part of the computation (NaN fails it too)
        if input.numel() and not bool(R.all(E.logical_and(input >= 0, input <= 1))):
            raise RuntimeError("all elements of input should be between 0 and 1")
    with no_grad():  # one node, PyTorch's BinaryCrossEntropyBackward0
        log_x = E.log(input).clamp(min=-100.0)
        log_1mx = E.log(1.0 - input).clamp(min=-100.0)
        loss = -(target * log_x + (1.0 - target) * log_1mx)
        if weight is not None:
            loss = loss * weight
        loss = _reduce(loss, reduction)
    record_grad(OPS["binary_cross_entropy"], (input, target),
                {"weight": weight, "reduction": reduction}, loss)
    return loss


def _bce_logits_input_grad(grad: Tensor, input: Tensor, target: Tensor, weight: Tensor | None,
                           pos_weight: Tensor | None, reduction: str) -> Tensor:
    """ATen's binary_cross_entropy_with_logits_backward: `sigmoid(x) - y` (with
    `pos_weight` p: `(p y + 1 - y) sigmoid(x) - p y`), times the weight and the gradient,
    over the element count for 'mean'."""
    if pos_weight is not None:
        t = pos_weight * target
        g = (t + 1.0 - target) * E.sigmoid(input) - t
    else:
        g = E.sigmoid(input) - target
    if weight is not None:
        g = g * weight
    g = g * grad
    return g / input.numel() if reduction == "mean" else g


def _bce_logits_target_grad(grad: Tensor, input: Tensor, target: Tensor,
                            weight: Tensor | None, pos_weight: Tensor | None,
                            reduction: str) -> Tensor:
    """ATen's binary_cross_entropy_with_logits_target_backward: `-x` (with `pos_weight` p:
    `logsigmoid(-x) - p logsigmoid(x)`), times the gradient and the weight, over the
    element count for 'mean'."""
    if pos_weight is not None:
        g = _logsigmoid(-input) - _logsigmoid(input) * pos_weight
    else:
        g = -input
    g = g * grad
    if weight is not None:
        g = g * weight
    return g / target.numel() if reduction == "mean" else g


def _check_logits_target(input: Tensor, target: Tensor) -> None:
    """PyTorch's kernel computes `(1 - target).mul_(input)`: a bool target fails the
    `1 - target`, an integer one the in-place multiply by a float input."""
    if target.dtype is dt.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if not (target.dtype.is_floating_point or target.dtype.is_complex):
        names = dt.SCALAR_TYPE_NAMES
        promoted = dt.promote_types(input.dtype, target.dtype)
        raise with_context(RuntimeError(
            f"result type {names.get(promoted.name, promoted)} can't be cast to the desired "
            f"output type {names.get(target.dtype.name, target.dtype)}"),
            "binary_cross_entropy_with_logits: an integer target (give it as a float)")


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(10),
           grad=Grad("BinaryCrossEntropyWithLogitsBackward0", input=_bce_logits_input_grad,
                     target=_bce_logits_target_grad))
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    r"""Sigmoid + binary cross entropy in one numerically stable step:
    :math:`-w[p_c\, y \log\sigma(x) + (1 - y)\log(1 - \sigma(x))]`, where ``pos_weight``
    :math:`p_c` weights the positive examples of each class (broadcast over the last
    dimension)."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    _check_logits_target(input, target)
    with no_grad():  # one node, PyTorch's BinaryCrossEntropyWithLogitsBackward0
        # -log(sigmoid(x)) = softplus(-x), computed stably
        neg_log_sig = E.log1p(E.exp(-E.abs(input))) - E.minimum_of(input, 0.0)
        if pos_weight is not None:
            log_weight = (pos_weight - 1.0) * target + 1.0
            loss = (1.0 - target) * input + log_weight * neg_log_sig
        else:
            loss = (1.0 - target) * input + neg_log_sig
        if weight is not None:
            loss = loss * weight
        loss = _reduce(loss, reduction)
    record_grad(OPS["binary_cross_entropy_with_logits"], (input, target),
                {"weight": weight, "pos_weight": pos_weight, "reduction": reduction}, loss)
    return loss


def _soft_margin_grad(grad: Tensor, input: Tensor, target: Tensor, reduction: str) -> Tensor:
    """ATen's soft_margin_loss_backward: `-y sigmoid(-y x)` times the gradient, over the
    element count for 'mean'."""
    scale = input.numel() if reduction == "mean" else None
    with no_grad():  # one node, as PyTorch's SoftMarginLossBackwardBackward0
        s = E.sigmoid(-target * input)
        g = -target * s * grad
        g = g / scale if scale else g

    def backward(node: Any, gg: Tensor) -> tuple:
        # d/d grad: -y sigmoid(-y x); d/d x: y^2 sigmoid(-y x) (1 - sigmoid(-y x)) grad
        d_grad = d_input = None
        if node.needs[0]:
            d_grad = (-target * s * gg).sum_to_size(grad.shape)
            d_grad = d_grad / scale if scale else d_grad
        if node.needs[1]:
            d_input = gg * grad * target * target * s * (1 - s)
            d_input = d_input / scale if scale else d_input
        return d_grad, d_input
    record("SoftMarginLossBackwardBackward0", backward, (grad, input), g)
    return g


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(5),
           grad=Grad("SoftMarginLossBackward0", input=_soft_margin_grad))
def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    r""":math:`\log(1 + e^{-y x})` for targets :math:`y \in \{-1, 1\}`."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if state.enabled and target.requires_grad:
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect "
                           "to argument 'target'. This input cannot have requires_grad True.")
    with no_grad():  # one node, PyTorch's SoftMarginLossBackward0
        # PyTorch's `neg_out(output, input).mul_(target)...`: a result of the input's dtype
        # (a bool or wider target included)
        loss = _log1p_exp(-input * target)
        loss = _reduce(loss.to(input.dtype) if input.dtype.is_floating_point else loss,
                       reduction)
    record_grad(OPS["soft_margin_loss"], (input,), {"target": target, "reduction": reduction},
                loss)
    return loss


# (not in PyTorch's autocast lists: a composite of logsigmoid, sum and division there, so
# its class is its ops')
@composite(variants="", cost=costs.reduction(12))
def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    r"""Multi-label one-versus-all loss: the mean over classes of the binary cross
    entropy with logits."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    loss = -(target * _logsigmoid(input) + (1.0 - target) * _logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]
    return _reduce(loss, reduction)


# -- distributions --------------------------------------------------------------------


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(5))
def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    r"""Kullback-Leibler divergence with log-probabilities ``input``:
    :math:`y (\log y - x)` (``log_target``: :math:`e^y (y - x)`).

    ``reduction='batchmean'`` divides the sum by the batch size (the true KL divergence);
    ``'mean'`` divides by the number of elements, as torch does (with its warning).
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_string(size_average, reduce)
        _warn_at_caller(_legacy_message(reduction))
    elif reduction == "mean":
        _warn_at_caller("reduction: 'mean' divides the total loss by both the batch size and "
                        "the support size.'batchmean' divides only by the batch size, and "
                        "aligns with the KL div math definition.'mean' will be changed to "
                        "behave the same as 'batchmean' in the next major release.")
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not (input.dtype.is_floating_point or input.dtype.is_complex) or \
            not (target.dtype.is_floating_point or target.dtype.is_complex):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = E.exp(target) * (target - input)
    else:
        # xlogy(t, t) - t * x: 0 log 0 = 0, and a negative target gives NaN, as in torch
        zero = target == 0
        safe = E.where(zero, 1.0, target)
        loss = E.where(zero, 0.0, target * E.log(safe)) - target * input
    if reduction == "batchmean":
        if input.ndim == 0:
            return loss.sum()
        return loss.sum() / input.shape[0]
    return _reduce(loss, reduction)


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(4))
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    r"""Poisson negative log likelihood: :math:`e^x - y x` (``log_input``) or
    :math:`x - y \log(x + \epsilon)`; ``full`` adds the Stirling term."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if log_input:
        loss = E.exp(input) - target * input
    else:
        loss = input - target * E.log(input + eps)
    if full:
        safe = E.where(target > 1, target, 1.0)
        stirling = safe * E.log(safe) - safe + 0.5 * E.log(safe * (2 * math.pi))
        loss = loss + E.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


# (not in PyTorch's autocast lists: a Python composite there, whose bfloat16 inputs give a
# bfloat16 loss under CPU autocast)
@composite(variants="", cost=costs.reduction(7))
def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    r"""Gaussian negative log likelihood:
    :math:`\frac{1}{2}(\log \max(var, \epsilon) + (x - y)^2 / \max(var, \epsilon))`."""
    _check_reduction(reduction)
    if not isinstance(var, Tensor):
        var = _full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    with tracing.paused():
        negative = bool((var < 0).any())
    if negative:
        raise ValueError("var has negative entry/entries")
    # clamped in place without autograd, as PyTorch's: the gradient flows to every var,
    # those below eps too (as if not clamped)
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    diff = input - target
    loss = (E.log(var) + diff * diff / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)



# -- margins and embeddings -----------------------------------------------------------


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(5))
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    r""":math:`\max(0, -y (x_1 - x_2) + margin)`."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(6))
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    r""":math:`x` where :math:`y = 1`, :math:`\max(0, margin - x)` where :math:`y = -1`."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    margin_clamp = (margin - input).clamp(min=0.0)
    out_margin = E.where(target != 1, margin_clamp, 0.0)
    out_self = E.where(target != -1, input, 0.0)
    return _reduce(out_margin + out_self, reduction)


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(6))
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    r""":math:`1 - \cos(x_1, x_2)` where :math:`y = 1`, :math:`\max(0, \cos - margin)`
    where :math:`y = -1`."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.ndim != target.ndim + 1 or input2.ndim != target.ndim + 1:
        raise RuntimeError(f"{target.ndim}D target tensor expects {target.ndim + 1}D input "
                           f"tensors, but found inputs with sizes {list(input1.shape)} and "
                           f"{list(input2.shape)}.")
    eps = 1e-12
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod / E.sqrt(mag1 * mag2)
    pos = E.where(target == 1, 1.0 - cos, 0.0)
    neg = E.where(target == -1, (cos - margin).clamp(min=0.0), 0.0)
    return _reduce(pos + neg, reduction)


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(8))
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    r""":math:`\max(d(a, p) - d(a, n) + margin, 0)` with the pairwise ``p``-distance."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    d_pos = _pairwise_distance(anchor, positive, p, eps)
    d_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = E.minimum(d_neg, _pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0.0), reduction)


__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "soft_margin_loss",
    "multilabel_soft_margin_loss", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "triplet_margin_loss",
]


# -- nnmisc family (issue 16): multi-class margins and CTC -----------------------------


def _multi_margin_checks(input: Tensor, target: Tensor, p: int, weight: Tensor | None) -> int:
    """PyTorch's argument checks of multi_margin_loss; the number of classes."""
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0):
        raise RuntimeError(f"multi_margin_loss: Expected non-empty vector or matrix with "
                           f"optional 0-dim batch size, but got: {list(input.shape)}")
    classes = input.shape[-1] if input.ndim else 1
    batch = input.shape[0] if input.ndim == 2 else 1
    if target.numel() != batch or target.ndim > 1:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size, expected {batch} "
                           f"but got {list(target.shape)}")
    _check_targets(target.reshape(-1), classes, -1 - classes)  # no index is ignored
    return classes


@composite(node_label="MultiMarginLossBackward0", variants="", precision=P.FLOAT32,
           cpu_precision=P.FLOAT32, cost=costs.reduction(6))
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average: bool | None = None,
                      reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    r"""Multi-class hinge loss of scores ``input`` (N, C) or (C,) against class indices:
    :math:`\frac{1}{C}\sum_{i \ne y} w_y \max(0, margin - x_y + x_i)^p`."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    classes = _multi_margin_checks(input, target, p, weight)
    x = input.reshape(-1, classes)
    t = target.reshape(-1, 1)
    picked = gather(x, 1, t)
    z = margin - picked + x
    hinge = E.where(z > 0, z, 0.0)  # as PyTorch's `if (z > 0)`: a NaN margin adds nothing
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * gather(weight, 0, t.reshape(-1)).unsqueeze(1)
    # the target's own column is not a margin violation (skipped, even where it is NaN)
    own = scatter(zeros_like(hinge), 1, t, 1.0)
    loss = E.where(own > 0, 0.0, hinge).sum(1) / classes
    if input.ndim < 2:
        loss = loss.reshape(target.shape)
    return _reduce(loss, reduction)


@composite(node_label="MultilabelMarginLossBackward0", variants="", precision=P.FLOAT32,
           cpu_precision=P.FLOAT32, cost=costs.reduction(6))
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    r"""Multi-label hinge loss: each row of ``target`` lists its classes, ended by the
    first ``-1``; :math:`\sum_{j, i} \max(0, 1 - (x_{y_j} - x_i)) / C` over its classes
    :math:`y_j` and the classes :math:`i` it does not list."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0):
        raise RuntimeError(f"multilabel_margin_loss: Expected non-empty vector or matrix "
                           f"with optional 0-dim batch size, but got: {list(input.shape)}")
    if target.shape != input.shape:
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: "
                           f"{list(target.shape)} for input of size: {list(input.shape)}")
    classes = input.shape[-1] if input.ndim else 1
    x = input.reshape(-1, classes)
    t = target.reshape(-1, classes)
    # the labels before the first -1 count
    valid = R.cumsum(E.to_dtype(t == -1, dt.int64), 1) == 0
    _check_targets(E.where(valid, t, 0).reshape(-1), classes, -1 - classes)
    safe = E.where(valid, t, 0)
    picked = gather(x, 1, safe)  # (N, K): the score of each listed class
    onehot = E.logical_and(E.eq(unsqueeze(safe, 2), _arange_like(classes, t)),
                           unsqueeze(valid, 2))
    is_target = R.any(onehot, 1)  # (N, C)
    hinge = (1.0 - unsqueeze(picked, 2) + unsqueeze(x, 1)).clamp(min=0.0)
    keep = E.logical_and(unsqueeze(valid, 2), unsqueeze(E.logical_not(is_target), 1))
    loss = E.where(keep, hinge, 0.0).sum((1, 2)) / classes
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def _arange_like(n: int, like: Tensor) -> Tensor:
    """0 .. n - 1 (int64) on `like`'s device."""
    from ember.core.creation import arange
    return arange(n, dtype=dt.int64, device=like.device)


def _lengths(name: str, lengths: Tensor | list | tuple | int, batch: int) -> list[int]:
    if isinstance(lengths, Tensor):
        values = [int(v) for v in host_array(lengths).reshape(-1).tolist()]
    elif isinstance(lengths, int):
        values = [lengths]
    else:
        values = [int(v) for v in lengths]
    if len(values) != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return values


_CTC_ARGS = " (while checking arguments for ctc_loss_allocate_outputs)"  # PyTorch's suffix


def _lse(*terms: Tensor) -> Tensor:
    """log(sum(exp(terms))) of same-shape tensors; all -inf gives -inf (not NaN)."""
    top = terms[0]
    for t in terms[1:]:
        top = E.maximum(top, t)
    shift = E.where(E.isinf(top), 0.0, top)
    total = E.exp(terms[0] - shift)
    for t in terms[1:]:
        total = total + E.exp(t - shift)
    return E.log(total) + shift


def _shift(x: Tensor, k: int, fill: float) -> Tensor:
    """`x` moved `k` places along its last dim (right for k > 0, left for k < 0)."""
    from ember.core.ops.shape import cat
    pad = _full(tuple(x.shape[:-1]) + (abs(k),), fill, dtype=x.dtype, device=x.device)
    if k > 0:
        return cat([pad, x[..., :-k]], -1)
    return cat([x[..., -k:], pad], -1)


def _ctc_grad(grad, log_probs, lp_ext, labels, skip, skip_back, log_alpha, nll, in_lens,
              ext_lens, zero_infinity):
    """PyTorch's _ctc_loss_backward: exp(lp) - exp(log(sum over the label's positions of
    alpha beta) + nll - lp), zero after each input's end (and for infinite losses with
    zero_infinity); beta is computed here, by the backward recursion."""
    from ember.core.ops.shape import stack
    T, N, L = lp_ext.shape
    neg_inf = float("-inf")
    time = _arange_like(T, lp_ext)
    last_t = (in_lens - 1).reshape(1, N)
    s_idx = _arange_like(L, lp_ext).reshape(1, L)
    final = E.logical_or(s_idx == (ext_lens - 1).reshape(N, 1),
                         s_idx == (ext_lens - 2).reshape(N, 1))
    betas = [None] * T
    beta = _full((N, L), neg_inf, dtype=lp_ext.dtype, device=lp_ext.device)
    for t in range(T - 1, -1, -1):
        step = _lse(beta, _shift(beta, -1, neg_inf),
                    E.where(skip_back, _shift(beta, -2, neg_inf), neg_inf)) + lp_ext[t]
        at_end = (last_t == t).reshape(N, 1)
        beta = E.where(at_end, E.where(final, lp_ext[t], neg_inf),
                       E.where((last_t > t).reshape(N, 1), step, neg_inf))
        betas[t] = beta
    log_beta = stack(betas, 0)
    ab = log_alpha + log_beta  # (T, N, L)
    top = R.amax(ab, 2, keepdim=True)
    top = E.where(E.isinf(top), 0.0, top)
    C = log_probs.shape[2]
    sums = zeros_like(log_probs).scatter_add(
        2, labels.reshape(1, N, L).expand(T, N, L), E.exp(ab - top))
    lcab = E.log(sums) + top
    g = E.exp(log_probs) - E.exp(lcab + nll.reshape(1, N, 1) - log_probs)
    live = (time.reshape(T, 1) <= last_t).reshape(T, N, 1)
    if zero_infinity:
        live = E.logical_and(live, E.logical_not(E.isinf(nll)).reshape(1, N, 1))
    del C
    return E.where(live, g * grad.reshape(1, N, 1), 0.0)


@composite(variants="", cost=costs.reduction(12),
           grad=Grad("CtcLossBackward0", log_probs=_ctc_grad))
def _ctc_nll(log_probs: Tensor, targets: Tensor, input_lengths: list, target_lengths: list,
             blank: int, zero_infinity: bool) -> Tensor:
    """Each sequence's CTC negative log likelihood (N,), by the forward (alpha) recursion
    over the blank-extended labels, and its gradient with PyTorch's formula."""
    from ember.core.creation import tensor
    from ember.core.grad_mode import no_grad
    from ember.core.ops.shape import stack
    T, N, C = log_probs.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    # PyTorch's checks in its order: the targets, then each sequence's input length
    for n in target_lengths:
        if n < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got "
                               f"value {n}{_CTC_ARGS}")
    flat = host_array(targets).tolist()
    if targets.ndim == 1:  # concatenated targets
        starts = [sum(target_lengths[:n]) for n in range(N)]
        if sum(target_lengths) != len(flat):
            raise RuntimeError(f"Expected tensor to have size {sum(target_lengths)} at "
                               f"dimension 0, but got size {len(flat)} for argument #2 "
                               f"'targets'{_CTC_ARGS}")
        rows = [flat[s:s + n] for s, n in zip(starts, target_lengths)]
    else:
        if any(n > targets.shape[1] for n in target_lengths):
            raise RuntimeError(f"Expected tensor to have size at least {max(target_lengths)} "
                               f"at dimension 1, but got size {targets.shape[1]} for argument "
                               f"#2 'targets'{_CTC_ARGS}")
        rows = [flat[n][:k] for n, k in enumerate(target_lengths)]
    for n in input_lengths:
        if not 0 <= n <= T:
            bound = "at least 0" if n < 0 else f"at most {T}"
            raise RuntimeError(f"Expected input_lengths to have value {bound}, but got value "
                               f"{n}{_CTC_ARGS}")
    width = 2 * max(target_lengths, default=0) + 1
    ext = [[blank] * width for _ in range(N)]
    for n, row in enumerate(rows):
        for i, label in enumerate(row):
            ext[n][2 * i + 1] = int(label)
    # s may skip from s - 2 when l'(s) is a label that differs from l'(s - 2)
    skip = [[s >= 2 and e[s] != blank and e[s] != e[s - 2] for s in range(width)] for e in ext]
    skip_back = [[s + 2 < width and e[s] != blank and e[s] != e[s + 2]
                  for s in range(width)] for e in ext]
    device = log_probs.device
    labels = tensor(ext, dtype=dt.int64, device=device)
    skip_t = tensor(skip, dtype=dt.bool_, device=device)
    skip_back_t = tensor(skip_back, dtype=dt.bool_, device=device)
    in_lens = tensor(input_lengths, dtype=dt.int64, device=device)
    ext_lens = tensor([2 * k + 1 for k in target_lengths], dtype=dt.int64, device=device)
    neg_inf = float("-inf")
    with no_grad():
        lp_ext = gather(log_probs, 2, labels.reshape(1, N, width).expand(T, N, width))
        s_idx = _arange_like(width, log_probs).reshape(1, width)
        alpha = E.where(s_idx < 2, lp_ext[0], neg_inf) if T else None
        alpha = E.where(s_idx < ext_lens.reshape(N, 1), alpha, neg_inf) if T else None
        alphas = [alpha] if T else []
        for t in range(1, T):
            step = _lse(alpha, _shift(alpha, 1, neg_inf),
                        E.where(skip_t, _shift(alpha, 2, neg_inf), neg_inf)) + lp_ext[t]
            alpha = E.where((in_lens > t).reshape(N, 1), step, alpha)
            alphas.append(alpha)
        if T:
            log_alpha = stack(alphas, 0)
            last = gather(alpha, 1, E.clamp(stack([ext_lens - 1, ext_lens - 2], 1), min=0))
            last = E.where(stack([ext_lens >= 1, ext_lens >= 2], 1), last, neg_inf)
            nll = -_lse(last[:, 0], last[:, 1])
        else:
            log_alpha = _full((0, N, width), neg_inf, dtype=log_probs.dtype, device=device)
            nll = _full((N,), float("inf"), dtype=log_probs.dtype, device=device)
        # an empty input explains only an empty target
        nll = E.where(in_lens == 0, E.where(ext_lens == 1, 0.0, float("inf")), nll)
        out = E.where(E.isinf(nll), 0.0, nll) if zero_infinity else nll
    record_grad(OPS["_ctc_nll"], (log_probs,), {
        "lp_ext": lp_ext, "labels": labels, "skip": skip_t, "skip_back": skip_back_t,
        "log_alpha": log_alpha, "nll": nll, "in_lens": in_lens, "ext_lens": ext_lens,
        "zero_infinity": zero_infinity}, out)
    return out


@composite(variants="", precision=P.FLOAT32, cpu_precision=P.FLOAT32,
           cost=costs.reduction(12))
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | list,
             target_lengths: Tensor | list, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    r"""The Connectionist Temporal Classification loss ("Connectionist Temporal
    Classification: Labelling Unsegmented Sequence Data with Recurrent Neural Networks",
    Graves et al.): the negative log likelihood of each target sequence summed over its
    alignments with the input.

    Args:
        log_probs: ``(T, N, C)`` or ``(T, C)`` log-probabilities (``log_softmax``).
        targets: ``(N, S)`` padded, or the ``sum(target_lengths)`` targets concatenated.
        input_lengths: ``(N,)`` lengths of the inputs (each <= T).
        target_lengths: ``(N,)`` lengths of the targets.
        blank (int): the blank label (default: 0).
        reduction (str): ``'none'``, ``'mean'`` (each loss divided by its target length,
            then the batch mean) or ``'sum'`` (default: 'mean').
        zero_infinity (bool): replace infinite losses (an input too short for its target)
            and their gradients by zero (default: False).
    """
    _check_reduction(reduction)
    if not log_probs.dtype.is_floating_point:
        raise RuntimeError(f"ctc_loss: expected floating point log_probs, got "
                           f"{log_probs.dtype}")
    batched = log_probs.ndim == 3
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs of 2 or 3 dims, got "
                           f"{log_probs.ndim}")
    if not batched:
        log_probs = unsqueeze(log_probs, 1)
        targets = unsqueeze(targets, 0)
    N = log_probs.shape[1]
    in_lens = _lengths("input_lengths", input_lengths, N)
    tgt_lens = _lengths("target_lengths", target_lengths, N)
    nll = _ctc_nll(log_probs, targets, in_lens, tgt_lens, blank, zero_infinity)
    if reduction == "mean":
        from ember.core.creation import tensor
        divisor = tensor([max(k, 1) for k in tgt_lens], dtype=nll.dtype, device=nll.device)
        return (nll / divisor).mean()
    if reduction == "sum":
        return nll.sum()
    return nll if batched else nll.reshape(())


__all__ += ["multi_margin_loss", "multilabel_margin_loss", "ctc_loss"]
