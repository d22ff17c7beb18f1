"""Linear algebra: `matmul` (and `mm`, `bmm`, `mv`, `dot`, `@`), `outer`, `addmm`,
`einsum`.

Kernels (signatures of their rules):

    matmul   kernel(input, other) -> y, NumPy's matmul semantics (1-D operands and batch
             broadcasting); both operands share a dtype.
    einsum   kernel(*operands, equation=) -> y; the equation has no ellipsis left.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.apply import apply, apply_labelled
from ember.core.declare import composite, primitive
from ember.core.opdef import OPS, Cost, Grad, OutMeta
from ember.core.opdef import Precision as P
from ember.core.shapes import broadcast_shapes, fmt_shape
from ember.core.tensor import Tensor

# -- rules ----------------------------------------------------------------------------


def _matmul_rule(input, other):
    a, b = input, other
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got "
                           f"{a.ndim}D and {b.ndim}D tensors")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"matmul: expected both operands to have the same dtype, but got "
                           f"{a.dtype} and {b.dtype}")
    if a.dtype is dt.bool_:
        raise RuntimeError("matmul: not implemented for dtype ember.bool")
    sa = (1,) + a.shape if a.ndim == 1 else a.shape
    sb = b.shape + (1,) if b.ndim == 1 else b.shape
    if sa[-1] != sb[-2]:
        raise RuntimeError(f"matmul: mat1 and mat2 shapes cannot be multiplied "
                           f"({sa[-2]}x{sa[-1]} and {sb[-2]}x{sb[-1]}); full shapes "
                           f"{fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
    batch = broadcast_shapes("matmul", sa[:-2], sb[:-2])
    shape = batch + (sa[-2], sb[-1])
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    return OutMeta(shape, a.dtype, None)


def _einsum_rule(*operands, equation):
    common = functools.reduce(dt.promote_types, (x.dtype for x in operands))
    lhs, _, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): equation {equation!r} names {len(terms)} operands "
                           f"but {len(operands)} were given")
    sizes: dict[str, int] = {}
    for term, x in zip(terms, operands):
        if "." in term:
            raise RuntimeError("einsum(): ellipsis ('...') is not supported yet")
        if len(term) != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in {term!r} does not "
                               f"match the dimensions of operand shape {fmt_shape(x.shape)}")
        for c, s in zip(term, x.shape):
            if sizes.setdefault(c, s) != s and s != 1 and sizes[c] != 1:
                raise RuntimeError(f"einsum(): subscript {c} has size {s} for operand shape "
                                   f"{fmt_shape(x.shape)} which does not broadcast with "
                                   f"previously seen size {sizes[c]}")
            sizes[c] = max(sizes[c], s)
    if not _:
        rhs = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    return OutMeta(tuple(sizes[c] for c in rhs), common, common)


# -- matmul ---------------------------------------------------------------------------


def _matmul_grads(grad, input, other, needs):
    a, b, g = input, other, grad
    if a.ndim == 1 and b.ndim == 1:  # a dot product: g is 0-d
        return (g * b if needs[0] else None), (g * a if needs[1] else None)
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = g2.unsqueeze(-2)
    if b.ndim == 1:
        g2 = g2.unsqueeze(-1)
    ga = gb = None
    if needs[0]:
        ga = matmul(g2, b2.transpose(-1, -2)).sum_to_size(tuple(a2.shape)).reshape(a.shape)
    if needs[1]:
        gb = matmul(a2.transpose(-1, -2), g2).sum_to_size(tuple(b2.shape)).reshape(b.shape)
    return ga, gb


_MATMUL_LABELS = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0",
                  (3, 3): "BmmBackward0"}


@primitive(variants="function method out", exact_out=True, rule=_matmul_rule, cost=costs.matmul,
           precision=P.LOWER, cpu_precision=P.LOWER, grad=Grad(each=_matmul_grads),
           operators="__matmul__ __rmatmul__")
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product, with NumPy's rules for 1-D operands and batch broadcasting."""
    label = _MATMUL_LABELS.get((input.ndim, other.ndim), "MatmulBackward0")
    return apply_labelled(OPS["matmul"], label, input, other)


@composite(variants="function method out", exact_out=True, cost=costs.matmul, precision=P.LOWER,
           cpu_precision=P.LOWER)
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The product of two matrices."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: {'self' if input.ndim != 2 else 'mat2'} must be a matrix "
                           f"(expected 2D tensors, got {input.ndim}D and {mat2.ndim}D)")
    return matmul(input, mat2)


@composite(variants="function method out", exact_out=True, cost=costs.matmul, precision=P.LOWER,
           cpu_precision=P.LOWER)
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """The batched product of two (b, n, m) and (b, m, p) tensors."""
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: {'batch1' if input.ndim != 3 else 'batch2'} must be a 3D "
                           f"tensor (got {input.ndim}D and {mat2.ndim}D)")
    want = [input.shape[0], input.shape[2]]
    if list(mat2.shape[:2]) != want:
        raise RuntimeError(f"bmm: Expected size for first two dimensions of batch2 tensor to "
                           f"be: {want} but got: {list(mat2.shape[:2])}.")
    return matmul(input, mat2)


@composite(variants="function method out", exact_out=True, cost=costs.matmul, precision=P.LOWER)
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix and a vector."""
    if not input.ndim:
        raise IndexError("mv: Dimension specified as 0 but tensor has no dimensions")
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: vector + matrix @ vector expected, got 1, {input.ndim}, "
                           f"{vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"mv: size mismatch, got input ({input.shape[0]}), mat "
                           f"({input.shape[0]}x{input.shape[1]}), vec ({vec.shape[0]})")
    return matmul(input, vec)


@composite(variants="function method out", exact_out=True, cost=costs.matmul, precision=P.PROMOTE)
def dot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"dot: 1D tensors expected, but got {input.ndim}D and "
                           f"{other.ndim}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"dot: inconsistent tensor size, expected tensor [{input.shape[0]}] "
                           f"and src [{other.shape[0]}] to have the same number of elements, "
                           f"but got {input.shape[0]} and {other.shape[0]} elements "
                           f"respectively")
    return matmul(input, other)


@composite(variants="function method out", cost=costs.pointwise(1), aliases="ger")
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two 1-D tensors."""
    for what, x in (("self", input), ("vec2", vec2)):
        if x.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {what}, but got {x.ndim}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def _addmm_cost(input: Any, mat1: Any, mat2: Any, **kwargs: Any) -> Cost:
    c = costs.matmul(mat1, mat2)
    return Cost(c.flops + 2 * costs.numel(input), c.bytes + costs.nbytes(input))


@composite(variants="function method out", exact_out=True, cost=_addmm_cost, precision=P.LOWER,
           cpu_precision=P.LOWER)
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1,
          alpha: Any = 1) -> Tensor:
    """`beta * input + alpha * (mat1 @ mat2)`; with `beta=0`, `input` is ignored (its NaN
    and infinities do not reach the result)."""
    prod_ = matmul(mat1, mat2)
    if alpha != 1:
        prod_ = prod_ * alpha
    if beta == 0:
        return prod_.expand(broadcast_shapes("addmm", tuple(input.shape), tuple(prod_.shape)))
    return (input * beta if beta != 1 else input) + prod_


# -- einsum ---------------------------------------------------------------------------


def _expand_ellipsis(equation: str, operands: Sequence[Tensor]) -> str:
    """Rewrite `...` into explicit letters (NumPy's rules), so the rest of einsum only
    ever sees plain subscripts."""
    if "." not in equation:
        return equation
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): equation {equation!r} names {len(terms)} operands but "
                           f"{len(operands)} were given")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
             if c not in equation]
    widths = [x.ndim - (len(t) - 3) if "..." in t else 0 for t, x in zip(terms, operands)]
    if any(w < 0 for w in widths):
        raise RuntimeError(f"einsum(): operand has fewer dimensions than subscripts in "
                           f"{equation!r}")
    n = max(widths)
    letters = "".join(spare[:n])
    terms = [t.replace("...", letters[n - w:]) for t, w in zip(terms, widths)]
    if arrow:
        rhs = rhs.replace("...", letters)
    else:  # implicit output: broadcast dims first, then the letters that occur once
        joined = "".join(t for t in terms)
        rhs = letters + "".join(sorted(c for c in set(joined) - set(letters)
                                       if joined.count(c) == 1))
    return ",".join(terms) + "->" + rhs


def _einsum_grads(grad, operands, equation, needs):
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if not arrow:
        rhs = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    grads = []
    for i, (term, x) in enumerate(zip(terms, operands)):
        if not needs[i]:
            grads.append(None)
            continue
        if len(set(term)) != len(term):
            raise RuntimeError(f"einsum backward: repeated subscripts in {term!r} are not "
                               "supported")
        others = [t for j, t in enumerate(terms) if j != i]
        avail = set(rhs).union(*others) if others else set(rhs)
        kept = "".join(c for c in term if c in avail)
        sub_eq = ",".join(others + [rhs]) + "->" + kept
        gi = einsum(sub_eq, *[o for j, o in enumerate(operands) if j != i], grad)
        # broadcast back over letters summed only within this operand, and where this
        # operand's size 1 met a larger size (the node then sums those down)
        sizes = [gi.shape[kept.index(c)] if c in kept else 1 for c in term]
        full = tuple(x.shape[k] if n == 1 else n for k, n in enumerate(sizes))
        if tuple(gi.shape) != full:
            gi = gi.reshape(tuple(sizes)).expand(full)
        grads.append(gi)
    return tuple(grads)


def _einsum_cost(*operands: Any, equation: str) -> Cost:
    sizes: dict[str, int] = {}
    terms = equation.partition("->")[0].split(",")
    for term, x in zip(terms, operands):
        sizes.update(zip(term, x.shape))
    work = 1
    for s in sizes.values():
        work *= s
    return Cost(2.0 * work * max(1, len(operands) - 1),
                sum(costs.nbytes(x) for x in operands))


@primitive(variants="function", rule=_einsum_rule, cost=_einsum_cost, precision=P.LOWER,
           cpu_precision=P.LOWER, grad=Grad(each=_einsum_grads))
def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, e.g. `einsum("bij,bjk->bik", a, b)`; `...` stands for
    broadcast dimensions."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return apply(OPS["einsum"], *operands,
                 equation=_expand_ellipsis(equation.replace(" ", ""), operands))
