"""Linear algebra: products. `matmul` (and `mm`, `bmm`, `mv`, `dot`, `@`), `outer`, the
addmm family (`addmm`, `addmv`, `addr`, `baddbmm`, `addbmm`), `inner`, `vdot`, `kron`,
`tensordot`, `multi_dot`, `cross`, `vecdot`, `einsum`. Factorizations and what is built
on them: ember.core.ops.factorizations.

Kernels (signatures of their rules):

    matmul   kernel(input, other) -> y, NumPy's matmul semantics (1-D operands and batch
             broadcasting); both operands share a dtype.
    einsum   kernel(*operands, equation=) -> y; the equation has no ellipsis left.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.apply import apply, apply_labelled
from ember.core.declare import composite, primitive, write_out
from ember.core.dispatch import kernel_refuses, refuse_unsigned, user_stacklevel
from ember.core.errors import with_context
from ember.core.opdef import OPS, Cost, Grad, OutMeta, metadata_rule
from ember.core.opdef import Precision as P
from ember.core.ops.elementwise import conj, to_dtype
from ember.core.ops.shape import cat
from ember.core.shapes import broadcast_shapes, fmt_shape, normalize_dim
from ember.core.storage import cpp_type_name, scalar_type_name
from ember.core.tensor import Tensor

# -- rules ----------------------------------------------------------------------------


@metadata_rule
def _matmul_rule(input, other):
    a, b = input, other
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if a.dtype is not b.dtype:
        raise with_context(RuntimeError(_matmul_dtype_message(a, b)),
                           f"matmul: operands of {a.dtype} and {b.dtype}")
    sa = (1,) + a.shape if a.ndim == 1 else a.shape
    sb = b.shape + (1,) if b.ndim == 1 else b.shape
    if sa[-1] != sb[-2]:
        raise with_context(RuntimeError(_matmul_shape_message(a.shape, b.shape)),
                           f"matmul: shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
    batch = broadcast_shapes("matmul", sa[:-2], sb[:-2])
    shape = batch + (sa[-2], sb[-1])
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    if a.dtype is dt.bool_:
        _refuse_bool_matmul(a.ndim, b.ndim, sa[-1], shape)
    return OutMeta(shape, a.dtype, None)


def _refuse_bool_matmul(a_ndim: int, b_ndim: int, k: int, shape: tuple) -> None:
    """PyTorch's refusal of bool operands, by the kernel its path reaches (dot, mv or mm
    of the folded batch, bmm); all but dot return at once (zeros) when there is nothing
    to sum or no result."""
    if a_ndim == b_ndim == 1:
        raise kernel_refuses("dot", dt.bool_)
    if k and math.prod(shape):
        kernel = "addmv_impl_cpu" if b_ndim == 1 else \
            "addmm_impl_cpu_" if b_ndim == 2 else "bmm"
        raise kernel_refuses(kernel, dt.bool_)


def _matmul_dtype_message(a: Tensor, b: Tensor) -> str:
    """PyTorch's message for operands of two dtypes: the kernel it reaches names them."""
    if a.ndim == b.ndim == 1:
        return (f"dot : expected both vectors to have same dtype, but found "
                f"{scalar_type_name(a.dtype)} and {scalar_type_name(b.dtype)}")
    if b.ndim == 1:  # addmv of the folded batch: its result (of the vector's dtype) first
        vec, mat = dt.SCALAR_TYPE_NAMES[b.dtype.name], dt.SCALAR_TYPE_NAMES[a.dtype.name]
        return f"addmv input tensors must have the same dtype, but got {vec}, {mat}, and {vec}"
    if b.ndim == 2:  # mm of the folded batch
        return (f"expected m1 and m2 to have the same dtype, but got: "
                f"{cpp_type_name(a.dtype)} != {cpp_type_name(b.dtype)}")
    return f"expected scalar type {scalar_type_name(a.dtype)} but found " \
           f"{scalar_type_name(b.dtype)}"


def _matmul_shape_message(a: tuple, b: tuple) -> str:
    """PyTorch's message for shapes that do not multiply: each of torch.matmul's paths
    (dot, mv, mm of the folded batch, bmm) words it its own way."""
    if len(a) == len(b) == 1:
        return (f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have "
                f"the same number of elements, but got {a[0]} and {b[0]} elements respectively")
    if len(b) == 1:  # mv of the folded batch
        rows = math.prod(a[:-1])
        return f"size mismatch, got input ({rows}), mat ({rows}x{a[-1]}), vec ({b[0]})"
    if len(b) == 2:  # mm of the folded batch
        return (f"mat1 and mat2 shapes cannot be multiplied ({math.prod(a[:-1])}x{a[-1]} and "
                f"{b[0]}x{b[1]})")
    sa = (1,) + a if len(a) == 1 else a
    batch = math.prod(broadcast_shapes("matmul", sa[:-2], b[:-2]))
    return (f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{batch}, {sa[-1]}] but got: [{batch}, {b[-2]}].")


def _einsum_rule(*operands, equation):
    common = functools.reduce(dt.promote_types, (x.dtype for x in operands))
    lhs, _, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): equation {equation!r} names {len(terms)} operands "
                           f"but {len(operands)} were given")
    sizes: dict[str, int] = {}
    for k, (term, x) in enumerate(zip(terms, operands)):
        if "." in term:
            raise RuntimeError("einsum(): ellipsis ('...') is not supported yet")
        if len(term) != x.ndim:
            raise with_context(RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(term)}) does not "
                f"match the number of dimensions ({x.ndim}) for operand {k} and no ellipsis "
                f"was given"), f"einsum: operand {k} has shape {fmt_shape(x.shape)}")
        for c, s in zip(term, x.shape):
            if sizes.setdefault(c, s) != s and s != 1 and sizes[c] != 1:
                raise with_context(RuntimeError(
                    f"einsum(): subscript {c} has size {s} for operand {k} which does not "
                    f"broadcast with previously seen size {sizes[c]}"),
                    f"einsum: operand {k} has shape {fmt_shape(x.shape)}")
            sizes[c] = max(sizes[c], s)
    if not _:
        rhs = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    return OutMeta(tuple(sizes[c] for c in rhs), common, common)


# -- matmul ---------------------------------------------------------------------------


def _matmul_grads(grad, input, other, needs):
    # complex operands: conjugates (`grad @ other.mH`), PyTorch's convention
    a, b, g = conj(input), conj(other), grad
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
                  (1, 2): "SqueezeBackward4"}


def _matmul_label(input: Tensor, other: Tensor) -> str:
    """The grad_fn PyTorch's matmul leaves: dot, mv and mm for small operands; past those its
    folding ends in an unsqueezed mm's squeeze, an _unsafe_view of the bmm, or (a matrix
    times a batch, when the matrix needs its gradient) a clone of the transposed product."""
    label = _MATMUL_LABELS.get((input.ndim, other.ndim))
    if label is not None:
        return label
    if input.ndim == 2 and input.requires_grad:
        return "CloneBackward0"
    return "UnsafeViewBackward0"


@primitive(complex=True,
           variants="function method out", exact_out=True, rule=_matmul_rule, cost=costs.matmul,
           precision=P.LOWER, cpu_precision=P.LOWER, grad=Grad(each=_matmul_grads),
           operators="__matmul__ __rmatmul__")
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product, with NumPy's rules for 1-D operands and batch broadcasting."""
    if getattr(input, "is_sparse", False) or getattr(other, "is_sparse", False):
        from ember.core.sparse_ops import sparse_matmul  # (only a sparse operand pays)

        return sparse_matmul(input, other, "matmul")
    return apply_labelled(OPS["matmul"], _matmul_label(input, other), input, other)


@composite(complex=True,
           variants="function method out", exact_out=True, cost=costs.matmul, precision=P.LOWER,
           cpu_precision=P.LOWER)
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The product of two matrices."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise with_context(RuntimeError(f"{'self' if input.ndim != 2 else 'mat2'} must be a "
                                        f"matrix"),
                           f"mm: {input.ndim}-D and {mat2.ndim}-D operands")
    return matmul(input, mat2)


@composite(complex=True,
           variants="function method out", exact_out=True, cost=costs.matmul, precision=P.LOWER,
           cpu_precision=P.LOWER)
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """The batched product of two (b, n, m) and (b, m, p) tensors."""
    if input.ndim != 3 or mat2.ndim != 3:
        raise with_context(RuntimeError(f"{'batch1' if input.ndim != 3 else 'batch2'} must be "
                                        f"a 3D tensor"),
                           f"bmm: {input.ndim}-D and {mat2.ndim}-D operands")
    want = [input.shape[0], input.shape[2]]
    if list(mat2.shape[:2]) != want:
        raise with_context(RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: {want} but got: "
            f"{list(mat2.shape[:2])}."), f"bmm: shapes {fmt_shape(input.shape)} and "
                                         f"{fmt_shape(mat2.shape)}")
    if getattr(input, "is_sparse", False) or getattr(mat2, "is_sparse", False):
        return matmul(input, mat2)
    return apply_labelled(OPS["matmul"], "BmmBackward0", input, mat2)


@composite(complex=True, variants="function method out", exact_out="mv", cost=costs.matmul,
           precision=P.LOWER)
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


@composite(complex=True, variants="function method out", exact_out="dot", cost=costs.matmul,
           precision=P.PROMOTE)
def dot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors (neither conjugated: `vdot` conjugates the
    first)."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and "
                           f"{other.ndim}D tensors")
    _same_dtype("dot", input, other)
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] "
                           f"and src [{other.shape[0]}] to have the same number of elements, "
                           f"but got {input.shape[0]} and {other.shape[0]} elements "
                           f"respectively")
    return matmul(input, other)


@composite(complex=True, variants="function method out", cost=costs.pointwise(1), aliases="ger")
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


def _scaled_sum(op: str, input: Tensor, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    """`beta * input + alpha * product`, PyTorch's way for the addmm family: with `beta=0`
    `input` is ignored (its NaN and infinities do not reach the result), and for integer
    operands a floating-point `alpha` or `beta` is truncated to an integer (`addr` refuses
    it)."""
    if not (input.dtype._differentiable or product.dtype._differentiable):
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float) and op == "addr":
                raise RuntimeError(f"For integral input tensors, argument {name} must not be "
                                   "a floating point number.")
        alpha, beta = int(alpha), int(beta)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product.expand(broadcast_shapes(op, tuple(input.shape), tuple(product.shape)))
    shape = broadcast_shapes(op, tuple(input.shape), tuple(product.shape))
    if shape != tuple(product.shape):
        raise RuntimeError(f"{op}: the result of shape {fmt_shape(tuple(product.shape))} "
                           f"cannot take an input of shape {fmt_shape(tuple(input.shape))}")
    return (input * beta if beta != 1 else input) + product


def _need_dims(op: str, name: str, x: Tensor, ndim: int) -> None:
    """PyTorch's message for an operand of the addmm family with the wrong rank."""
    if x.ndim != ndim:
        raise RuntimeError(f"{name} must be a matrix, got {x.ndim}-D tensor" if ndim == 2 else
                           f"addr: Expected 1-D argument {name}, but got {x.ndim}-D"
                           if ndim == 1 else f"{name} must be a 3D tensor")


@composite(complex=True, node_label="AddmmBackward0",
           variants="function method inplace out", exact_out=True, cost=_addmm_cost,
           precision=P.LOWER, cpu_precision=P.LOWER)
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1,
          alpha: Any = 1) -> Tensor:
    """`beta * input + alpha * (mat1 @ mat2)`; with `beta=0`, `input` is ignored (its NaN
    and infinities do not reach the result)."""
    _need_dims("addmm", "mat1", mat1, 2)
    _need_dims("addmm", "mat2", mat2, 2)
    for name, x in (("self", input), ("mat1", mat1)):  # (PyTorch's order of checks)
        if x.dtype is not mat2.dtype:
            raise RuntimeError(f"{name} and mat2 must have the same dtype, but got "
                               f"{scalar_type_name(x.dtype)} and "
                               f"{scalar_type_name(mat2.dtype)}")
    return _plus_product(addmm, input, mat1, mat2, matmul, beta, alpha)


def _plus_product(op: Any, input: Tensor, a: Tensor, b: Tensor, product: Any, beta: Any,
                  alpha: Any) -> Tensor:
    """`beta * input + alpha * product(a, b)` for the addmm family's `op`: rounded once for
    half floats, as PyTorch's CPU kernels."""
    once = _rounded_once(op, input, a, b, beta, alpha)
    return once if once is not None else \
        _scaled_sum(op.__name__, input, product(a, b), beta, alpha)


def _rounded_once(op: Any, input: Tensor, a: Tensor, b: Tensor, beta: Any,
                  alpha: Any) -> Tensor | None:
    """`op(input, a, b)` of half-precision tensors as PyTorch's CPU kernels compute it:
    the product and the sum in float32, rounded once (not the product rounded, then the
    sum); None for other dtypes."""
    half = input._dtype
    if half not in dt.HALF_DTYPES or a._dtype is not half or b._dtype is not half:
        return None
    wide = [to_dtype(x, dt.float32) for x in (input, a, b)]
    return to_dtype(op(*wide, beta=beta, alpha=alpha), half)


@composite(complex=True, variants="function method inplace out", exact_out=True,
           cost=_addmm_cost, node_label="AddmvBackward0",
           precision=P.LOWER)
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """`beta * input + alpha * (mat @ vec)` for a matrix `mat` and a vector `vec`."""
    if mat.ndim != 2 or vec.ndim != 1 or mat.shape[1] != vec.shape[0]:
        def sizes(x: Tensor) -> str:
            return "(" + "x".join(str(n) for n in x.shape) + ")"
        raise RuntimeError(f"size mismatch, got input {sizes(input)}, mat {sizes(mat)}, vec "
                           f"{sizes(vec)}")
    if not input.dtype is mat.dtype is vec.dtype:
        raise RuntimeError("addmv input tensors must have the same dtype, but got " +
                           ", ".join(scalar_type_name(x.dtype) for x in (input, mat)) +
                           f", and {scalar_type_name(vec.dtype)}")
    return _plus_product(addmv, input, mat, vec, matmul, beta, alpha)


@composite(complex=True, variants="function method inplace out", exact_out=True,
           cost=_addmm_cost,
           precision=P.LOWER)
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """`beta * input + alpha * outer(vec1, vec2)`."""
    _need_dims("addr", "vec1", vec1, 1)
    _need_dims("addr", "vec2", vec2, 1)
    if input.dtype is dt.bool_ and vec1.dtype is dt.bool_:  # PyTorch: logical and/or
        prod_ = vec1.unsqueeze(1).logical_and(vec2.unsqueeze(0))
        return prod_ if beta == 0 else input.logical_or(prod_) if alpha else input.clone()
    return _scaled_sum("addr", input, outer(vec1, vec2), beta, alpha)


@composite(complex=True, variants="function method inplace out", exact_out=True,
           cost=_addmm_cost, node_label="BaddbmmBackward0",
           precision=P.LOWER, cpu_precision=P.LOWER)
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,
            alpha: Any = 1) -> Tensor:
    """`beta * input + alpha * bmm(batch1, batch2)`."""
    _need_dims("baddbmm", "batch1", batch1, 3)
    _need_dims("baddbmm", "batch2", batch2, 3)
    if tuple(batch2.shape[:2]) != (batch1.shape[0], batch1.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch1.shape[0]}, {batch1.shape[2]}] but got: "
                           f"[{batch2.shape[0]}, {batch2.shape[1]}].")
    if input.dtype is not batch1.dtype:  # (batch2's is bmm's check)
        raise RuntimeError(f"Input dtypes must be the same, got: input "
                           f"{cpp_type_name(input.dtype)}, batch1: {cpp_type_name(batch1.dtype)}"
                           f", batch2: {cpp_type_name(batch2.dtype)}")
    return _plus_product(baddbmm, input, batch1, batch2, bmm, beta, alpha)


@composite(complex=True, variants="function method inplace out", exact_out=True,
           cost=_addmm_cost, node_label="AddbmmBackward0",
           precision=P.LOWER, cpu_precision=P.LOWER)
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,
           alpha: Any = 1) -> Tensor:
    """`beta * input + alpha * sum_i(batch1[i] @ batch2[i])`: the batched products summed
    into one matrix (one matrix product over the batch and inner dimensions together)."""
    _need_dims("addbmm", "batch1", batch1, 3)
    _need_dims("addbmm", "batch2", batch2, 3)
    b, n, m = batch1.shape
    if batch2.shape[0] != b:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {b} and "
                           f"{batch2.shape[0]}")
    if batch2.shape[1] != m:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({n}x{m} and "
                           f"{batch2.shape[1]}x{batch2.shape[2]})")
    if b and input._dtype in dt.HALF_DTYPES and batch1._dtype is input._dtype and \
            batch2._dtype is input._dtype:
        # PyTorch's CPU kernel: an addmm per batch into the result, each rounded
        out = input
        for i in range(b):
            out = addmm(out, batch1[i], batch2[i], beta=beta if i == 0 else 1, alpha=alpha)
        return out
    product = matmul(batch1.permute(1, 0, 2).reshape(n, b * m),
                     batch2.reshape(b * m, batch2.shape[2]))
    return _scaled_sum("addbmm", input, product, beta, alpha)


# -- products of vectors and tensors ----------------------------------------------------


@composite(complex=True, variants="function method out", cost=costs.matmul,
           cpu_precision=P.LOWER)
def inner(input: Tensor, other: Tensor) -> Tensor:
    """The dot product over the last dimension of both tensors (a product with a 0-d one)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


@composite(complex=True, variants="function method out", cost=costs.matmul)
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors (the first conjugated: the same for real ones)."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           "tensors")
    _same_dtype("vdot", input, other)
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and "
                           f"src [{other.shape[0]}] to have the same number of elements, but "
                           f"got {input.shape[0]} and {other.shape[0]} elements respectively")
    return matmul(conj(input), other)


_WORDS = {"float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16",
          "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _same_dtype(op: str, input: Tensor, other: Tensor) -> None:
    if input.dtype is not other.dtype:  # (PyTorch's message says "dot" for vdot too)
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_word(input.dtype)} and {_word(other.dtype)}")


def _word(d: dt.dtype) -> str:
    """PyTorch's name of a dtype in its C++ messages (`Float`, `Long` ...)."""
    return _WORDS.get(d.name, d.name)


@composite(complex=True, variants="function method out", cost=costs.pointwise(1),
           node_label="UnsafeViewBackward0")
def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: every element of `input` times all of `other`, in blocks
    (the shorter shape is padded with leading 1s)."""
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    a = input.reshape(tuple(x for s in sa for x in (s, 1)))
    b = other.reshape(tuple(x for s in sb for x in (1, s)))
    return (a * b).reshape(tuple(x * y for x, y in zip(sa, sb)))


@composite(complex=True, variants="function", cost=costs.matmul,
           cpu_precision=P.LOWER)
def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Any = None) -> Tensor:
    """Contracts `a`'s dimensions `dims[0]` with `b`'s `dims[1]` (an int `d`: `a`'s last
    `d` with `b`'s first `d`); the free dimensions of `a`, then of `b`, remain."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(-dims, 0)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[i]} in dim {i} and second has size {b.shape[j]} in "
                               f"dim {j}")
    da = [d % a.ndim if a.ndim else d for d in da]
    db = [d % b.ndim if b.ndim else d for d in db]
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_word(a.dtype)} but found {_word(b.dtype)}")
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    left = a.permute(*free_a, *da).reshape(math.prod(a.shape[d] for d in free_a), k)
    right = b.permute(*db, *free_b).reshape(k, math.prod(b.shape[d] for d in free_b))
    result = matmul(left, right).reshape(tuple(a.shape[d] for d in free_a) +
                                         tuple(b.shape[d] for d in free_b))
    if out is not None:
        return write_out("tensordot", out, result)
    return result


def _multi_dot(op: str, tensors: Sequence[Tensor]) -> Tensor:
    """The product of a chain of matrices (the first and last may be vectors), multiplied
    in the order that costs the fewest operations."""
    n = len(tensors)
    for i, t in enumerate(tensors):
        if i in (0, n - 1):
            if t.ndim not in (1, 2):
                raise RuntimeError(f"{op}(): the first and last tensors should be 1D or 2D "
                                   f"but got {t.ndim}D")
        elif t.ndim != 2:
            raise RuntimeError(f"{op}(): tensor {i} must be 2D but got {t.ndim}D")
    mats = list(tensors)
    if mats[0].ndim == 1:
        mats[0] = mats[0].unsqueeze(0)
    if mats[-1].ndim == 1:
        mats[-1] = mats[-1].unsqueeze(1)
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"{op}(): tensors {i} and {i + 1} with shapes "
                               f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} "
                               "cannot be multiplied")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min((cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1]
                                           * dims[j + 1], s) for s in range(i, j))

    def chain(i: int, j: int) -> Tensor:
        return mats[i] if i == j else matmul(chain(i, split[i][j]), chain(split[i][j] + 1, j))
    result = chain(0, n - 1)
    if tensors[0].ndim == 1:
        result = result.squeeze(0)
    if tensors[-1].ndim == 1:
        result = result.squeeze(-1)
    return result


@composite(complex=True, variants="", cost=costs.matmul, precision=P.LOWER,
           cpu_precision=P.LOWER)
def linalg_multi_dot(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """`linalg.multi_dot`: the product of two or more matrices in the cheapest order; the
    first may be a row vector and the last a column vector (1-D)."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    result = _multi_dot("multi_dot", tensors)
    return result if out is None else write_out("linalg.multi_dot", out, result)


@composite(variants="function", cost=costs.matmul, precision=P.LOWER,
           cpu_precision=P.LOWER)
def chain_matmul(*matrices: Tensor, out: Any = None) -> Tensor:
    """The product of 2-D matrices in the cheapest order (deprecated in PyTorch for
    `linalg.multi_dot`)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    _deprecated_chain_matmul()
    for t in matrices:
        if t.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t.ndim}, expected 2 instead.")
    result = matrices[0].clone() if len(matrices) == 1 else \
        _multi_dot("chain_matmul", matrices)
    return result if out is None else write_out("chain_matmul", out, result)


_CHAIN_MATMUL_WARNED: list[bool] = []


def _deprecated_chain_matmul() -> None:
    """PyTorch's deprecation warning, once per process as PyTorch gives it."""
    if not _CHAIN_MATMUL_WARNED:
        _CHAIN_MATMUL_WARNED.append(True)
        warnings.warn("torch.chain_matmul is deprecated and will be removed in a future "
                      "PyTorch release. Use torch.linalg.multi_dot instead, which accepts a "
                      "list of two or more tensors rather than multiple parameters.",
                      UserWarning, stacklevel=4)


def _cross_dim(op: str, a: Tensor, b: Tensor, dim: int | None) -> tuple[Tensor, Tensor, int]:
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_word(a.dtype)} but found {_word(b.dtype)}")
    if a.ndim != b.ndim:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(op, tuple(a.shape), tuple(b.shape))
    a, b = a.expand(shape), b.expand(shape)
    if dim is None:  # torch.cross: the first dimension of size 3
        dim = next((d for d, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"{op}: no dimension of size 3 in input")
    d = normalize_dim(op, dim, len(shape))
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[d]} and {b.shape[d]}")
    return a, b, d


def _cross(a: Tensor, b: Tensor, d: int) -> Tensor:
    i = [a.narrow(d, k, 1) for k in range(3)]
    j = [b.narrow(d, k, 1) for k in range(3)]
    return cat([i[1] * j[2] - i[2] * j[1], i[2] * j[0] - i[0] * j[2],
                i[0] * j[1] - i[1] * j[0]], d)


@composite(variants="function method out", cost=costs.pointwise(3),
           node_label="LinalgCrossBackward0")
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along `dim` (None: the first dimension of size 3,
    with PyTorch's deprecation warning)."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use torch.linalg.cross."
                      "\nThe default value of dim will change to agree with that of "
                      "linalg.cross in a future release.", UserWarning,
                      stacklevel=user_stacklevel())
    a, b, d = _cross_dim("linalg.cross", input, other, dim)
    return _cross(a, b, d)


@composite(complex=True, variants="", cost=costs.pointwise(3),
           node_label="LinalgCrossBackward0")
def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Any = None) -> Tensor:
    """`linalg.cross`: the cross product of 3-vectors along `dim` (broadcasting)."""
    a, b, d = _cross_dim("linalg.cross", input, other, dim)
    result = _cross(a, b, d)
    return result if out is None else write_out("linalg.cross", out, result)


@composite(complex=True, variants="", cost=costs.pointwise(2), cpu_precision=P.LOWER)
def linalg_vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out: Any = None) -> Tensor:
    """`linalg.vecdot`: the dot product of vectors along `dim` (broadcasting), `x`
    conjugated."""
    if not x.dtype._differentiable:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {_word(x.dtype)}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but x "
                           f"has dtype {_word(x.dtype)} and y has dtype {_word(y.dtype)} "
                           "instead.")
    result = (conj(x) * y).sum(dim)  # (x conjugated, as PyTorch's)
    return result if out is None else write_out("linalg.vecdot", out, result)


# -- einsum ---------------------------------------------------------------------------


def _parse_checks(equation: str, n_operands: int) -> None:
    """PyTorch's checks of an einsum equation as it parses it, in its order and words
    (positions count the spaces, which PyTorch skips)."""
    lhs, arrow, rhs = equation.partition("->")

    def dots_at(text: str, i: int) -> bool:
        return i + 2 < len(text) and text[i + 1] == "." and text[i + 2] == "."

    def invalid(i: int) -> RuntimeError:
        return RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                            "string, subscripts must be in [a-zA-Z]")

    counts: dict[str, int] = {}
    op, i, ellipsis = 0, 0, False
    while i < len(lhs):
        c = lhs[i]
        if c == ".":
            if ellipsis:
                raise RuntimeError(f"einsum(): found '.' for operand {op} for which an "
                                   "ellipsis was already found")
            if not dots_at(lhs, i):
                raise RuntimeError(f"einsum(): found '.' for operand {op} that is not part "
                                   "of any ellipsis")
            ellipsis, i = True, i + 2
        elif c == ",":
            op, ellipsis = op + 1, False
            if op >= n_operands:
                raise RuntimeError("einsum(): fewer operands were provided than specified "
                                   "in the equation")
        elif c != " ":
            if not c.isascii() or not c.isalpha():
                raise invalid(i)
            counts[c] = counts.get(c, 0) + 1
        i += 1
    if op != n_operands - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    seen: set[str] = set()
    i, ellipsis = 0, False
    while arrow and i < len(rhs):
        c = rhs[i]
        if c == ".":
            if ellipsis:
                raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) "
                                   "was already found")
            if not dots_at(rhs, i):
                raise RuntimeError("einsum(): found '.' for output that is not part of any "
                                   "ellipsis (...)")
            ellipsis, i = True, i + 2
        elif c != " ":
            if not c.isascii() or not c.isalpha():
                raise invalid(len(lhs) + 2 + i)
            if c in seen:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once "
                                   "in the output")
            if c not in counts:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   "equation for any input operand")
            seen.add(c)
        i += 1


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


def _contraction_dtypes(equation: str, operands: Sequence[Tensor]) -> Sequence[Tensor]:
    """The dtypes PyTorch's einsum computes in: operands contracted over a shared summed
    subscript meet in a batched matmul, which takes one dtype only (its error otherwise);
    a lone operand summed over a subscript is summed as `sum` does, an integer one into
    int64. Otherwise (products only) the operands' dtypes promote."""
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    summed = {c for c in lhs if c not in rhs and c != ","}
    if len(operands) == 1:
        x = operands[0]
        if summed and not (x.dtype.is_floating_point or x.dtype.is_complex):
            return (x.to(dtype=dt.int64),)
        return operands
    shared = any(sum(c in t for t in terms) > 1 for c in summed)
    first = operands[0].dtype
    if shared and first in dt.LIMITED_DTYPES and _multiplies(terms, operands, summed):
        refuse_unsigned("bmm", operands[0])  # (before the dtypes are compared, as PyTorch)
    for x in operands[1:]:
        if shared and x.dtype is not first:
            raise RuntimeError(f"expected scalar type {dt.SCALAR_TYPE_NAMES[first.name]} "
                               f"but found {dt.SCALAR_TYPE_NAMES[x.dtype.name]}")
    return operands


def _multiplies(terms: Sequence[str], operands: Sequence[Tensor], summed: set) -> bool:
    """Whether PyTorch's einsum meets a batched matmul: no operand is empty (it returns
    zeros first) and a summed subscript has a size other than 1 in two operands (a
    dimension of size 1 is squeezed or summed away before)."""
    if not all(x.numel() for x in operands):
        return False
    wide = [c for term, x in zip(terms, operands) for c, s in set(zip(term, x.shape))
            if s != 1 and c in summed]
    return any(wide.count(c) > 1 for c in summed)


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
        # (straight to the op: the grad may meet an operand of another dtype that the
        # forward promoted, which the user-facing dtype check would refuse)
        gi = apply(OPS["einsum"], *[conj(o) for j, o in enumerate(operands) if j != i], grad,
                   equation=sub_eq)
        # broadcast back over letters summed only within this operand, and where this
        # operand's size 1 met a larger size (the node then sums those down)
        sizes = [gi.shape[kept.index(c)] if c in kept else 1 for c in term]
        full = tuple(x.shape[k] if n == 1 else n for k, n in enumerate(sizes))
        if tuple(gi.shape) != full:
            gi = gi.reshape(tuple(sizes)).expand(full)
        grads.append(gi)
    return tuple(grads)


def _sublist_equation(args: tuple) -> tuple[str, tuple]:
    """The equation and operands of einsum's sublist form (operand, subscripts, ...,
    [output subscripts]), as PyTorch's `torch.einsum` translates them."""
    def letter(n: Any) -> str:
        if n is Ellipsis:
            return "..."
        if 0 <= n < 26:
            return chr(ord("A") + n)
        if 26 <= n < 52:
            return chr(ord("a") + n - 26)
        raise ValueError("einsum(): subscript in subscript list is not within the valid "
                         "range [0, 52)")
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one "
                         "operand, or at least one operand and its subscripts list")
    equation = ",".join("".join(letter(n) for n in sub) for sub in args[1::2])
    if len(args) % 2 == 1:
        equation += "->" + "".join(letter(n) for n in args[-1])
        return equation, tuple(args[:-1:2])
    return equation, tuple(args[::2])


def _einsum_label(equation: str, n: int) -> str:
    """The node PyTorch's einsum ends in: a lone operand's sum (`SumBackward1`) or
    permute (`PermuteBackward0`); for several, the view of its bmm when any subscript is
    summed (`ViewBackward0`), else their product (`MulBackward0`)."""
    lhs, arrow, rhs = equation.partition("->")
    letters = set(lhs) - {",", "."}
    if not arrow:  # implicit output: the subscripts that appear once
        rhs = "".join(c for c in letters if lhs.count(c) == 1)
    summed = letters - set(rhs)
    if n == 1:
        return "SumBackward1" if summed else "PermuteBackward0"
    return "ViewBackward0" if summed else "MulBackward0"


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


@primitive(complex=True,
           variants="function", rule=_einsum_rule, cost=_einsum_cost, precision=P.LOWER,
           cpu_precision=P.LOWER, grad=Grad(each=_einsum_grads))
def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, e.g. `einsum("bij,bjk->bik", a, b)`; `...` stands for
    broadcast dimensions. Also PyTorch's sublist form, `einsum(a, [0, 1], b, [1, 2], [0, 2])`
    (integers 0-51 for letters, `...` for Ellipsis)."""
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    _parse_checks(equation, len(operands))
    equation = _expand_ellipsis(equation.replace(" ", ""), operands)
    operands = _contraction_dtypes(equation, operands)
    return apply_labelled(OPS["einsum"], _einsum_label(equation, len(operands)), *operands,
                          equation=equation)
