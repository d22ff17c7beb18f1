"""Linear algebra: matrix factorizations and what is built on them (`torch.linalg`).

The primitives are the factorizations LAPACK computes: inverse, solve, det, slogdet,
Cholesky, QR, SVD, symmetric eigendecomposition, LU. A primitive has one output, and
most factorizations have several (Q and R; U, S and Vh; a factor and LAPACK's `info`), so
their kernels return the outputs flattened and concatenated along one last axis and
`_split` cuts them back out (views, so autograd sends each output's gradient into the
one packed gradient the declared formula reads). Everything else (`pinv`, `lstsq`,
`matrix_rank`, `matrix_exp`, `lu_solve` ...; norms, `cond` and distances in
ember.core.ops.norms) is a composite of those and of ordinary ops, so it runs on every
backend and differentiates through its parts.

Kernels (signatures of their rules); batch dimensions lead, `info` is LAPACK's (0: the
matrix was fine; k > 0: the k-th pivot or leading minor failed), results of matrices
that failed are NaN (an inverse or a solve: what getrs leaves, inf or NaN, as PyTorch's):

    det                   kernel(A) -> det (..)
    _linalg_slogdet       kernel(A) -> [sign, logabsdet] (.., 2)
    _linalg_inv_ex        kernel(A) -> [inverse, info] (.., n*n + 1)
    _linalg_solve_ex      kernel(A, B) -> [X, info] (.., n*k + 1); B is (.., n, k) with A's
                          batch dimensions
    _linalg_cholesky_ex   kernel(A, *, upper) -> [L (or U), info] (.., n*n + 1)
    _linalg_qr            kernel(A, *, mode) -> [Q, R] (mode "r": [R])
    _geqrf                kernel(A) -> [a, tau]: LAPACK's compact QR (Householder vectors
                          below R's diagonal, and their scales)
    _linalg_svd           kernel(A, *, full_matrices) -> [U, S, Vh]
    _linalg_eigh          kernel(A, *, UPLO) -> [eigenvalues, eigenvectors]
    _linalg_lu_factor_ex  kernel(A) -> [LU, pivots (1-based), info] (partial pivoting)
    _linalg_ldl_factor_ex kernel(A, *, hermitian) -> [LD, pivots (1-based, signed), info]
                          (Bunch-Kaufman, LAPACK sytrf/hetrf's lower compact form)
    _linalg_ldl_solve     kernel(LD, pivots, B, *, hermitian) -> X (sytrs/hetrs; one
                          batch shape, not packed)

    _linalg_eig           kernel(A) -> [eigenvalues, eigenvectors] (.., n + n*n), complex
                          even for a real A

Complex matrices: inverse, solve, det, slogdet, Cholesky, QR, SVD, eigh and eig (and the
composites over them that are declared `complex`) take complex64/complex128 with
PyTorch's gradients, written once for both kinds: `.mH` is `.mT` on real matrices and
`conj` leaves real tensors alone. A packed result is complex when A is, and its real
parts (slogdet's logabsdet, singular values, Hermitian eigenvalues) come back out with
`.real`, a view, so their gradients reach the packed gradient.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.apply import apply_labelled, record_grad
from ember.core.backend import LinAlgError
from ember.core.creation import arange, empty_permuted, eye, randn, tensor, zeros
from ember.core.declare import composite, primitive, write_out
from ember.core.dispatch import kernel_refuses, not_implemented_for, user_stacklevel
from ember.core.grad_mode import no_grad
from ember.core.graph import relabel
from ember.core.memory_format import contiguous_format
from ember.core.opdef import OPS, Cost, Grad, OutMeta
from ember.core.opdef import Precision as P
from ember.core.ops.elementwise import conj, where
from ember.core.ops.linalg import _word
from ember.core.ops.shape import cat
from ember.core.return_types import return_type
from ember.core.shapes import broadcast_shapes, normalize_dim
from ember.core.tensor import Tensor

# -- checks -----------------------------------------------------------------------------


# ops whose dtype PyTorch leaves to its CPU kernel: {op: (kernel, whether the op checks
# for a floating dtype first)}; the kernel then refuses what is not float32/64 (or
# complex) as NotImplementedError, after the shape checks
_CPU_KERNELS = {"linalg.det": ("lu", True), "linalg.cholesky": ("cholesky", True),
                "linalg.qr": ("geqrf", True), "linalg.svd": ("linalg_svd", True),
                "geqrf": ("geqrf", False), "linalg.eigh": ("linalg_eigh", False),
                "linalg.lu_factor": ("lu", False), "linalg.lu_factor_ex": ("lu", False),
                "linalg.lu": ("lu", False), "lu": ("lu", False)}


def _check(op: str, A: Any, *, square: bool = True, name: str = "A") -> None:
    """PyTorch's checks of a matrix operand: at least 2-D, floating (float32 or float64:
    LAPACK has no half precision), square where the op needs it."""
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    kernel, typed = _CPU_KERNELS.get(op, (None, True))
    if typed and not A.dtype._differentiable:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{_word(A.dtype)}")
    if kernel is None and A.dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {_word(A.dtype)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if kernel is not None and (not A.dtype._differentiable
                               or A.dtype in (dt.float16, dt.bfloat16)):
        raise not_implemented_for(kernel, A)


def _dense_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _relaid(t: Tensor, matrix: bool | None = None) -> Tensor:
    """`t` with each matrix column-major (a batch of vectors, with `matrix=False`, dense),
    in a buffer of its own unless it already is: PyTorch's strides exactly, a size-1
    dimension's included (which `contiguous()` leaves as they are)."""
    matrix = t.ndim >= 2 if matrix is None else matrix
    shape = tuple(t.shape)
    if not matrix:
        if tuple(t.stride()) == _dense_strides(shape):
            return t
        return t.clone(memory_format=contiguous_format)
    strides = _dense_strides(shape[:-2] + (shape[-1], shape[-2]))
    if tuple(t.stride()) == strides[:-2] + (strides[-1], strides[-2]):
        return t
    return t.mT.clone(memory_format=contiguous_format).mT


def _lapack_layout(t: Tensor) -> Tensor:
    """`t` laid out as PyTorch's LAPACK-backed ops return their results: each matrix
    column-major (Fortran order, as LAPACK writes it), the batch dense; a (batch of)
    vector or scalar dense. Strides are visible (`.stride()`, `.is_contiguous()`)."""
    out = _relaid(t)
    label = getattr(t._node, "label", None)
    if label and out is not t:  # the op's node (`LinalgInvExBackward0`), not the copy's
        relabel(out, label, (t,))
    return out


def _split(packed: Tensor, *shapes: tuple[int, ...], lapack: bool = False) -> list[Tensor]:
    """The outputs a packed kernel result holds, each (batch..., *shape); with `lapack`,
    each in PyTorch's layout (`_lapack_layout`: matrices column-major) rather than a view
    of the packed buffer."""
    batch = tuple(packed.shape[:-1])
    outs, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        out = packed[..., start:start + size].reshape(batch + tuple(shape))
        if lapack:
            out = _relaid(out, len(shape) >= 2)
        outs.append(out)
        start += size
    label = getattr(packed._node, "label", None)
    if label:  # each output shows the kernel's node (`LinalgQrBackward0`), as PyTorch's
        for out in outs:
            relabel(out, label, (packed,))
    return outs


def _info(packed: Tensor) -> Tensor:
    """LAPACK's info as PyTorch gives it (int32), from its slot of a packed result (the
    real part, where the result is complex)."""
    return (packed.real if packed.dtype.is_complex else packed).detach().to(dt.int32)


def _raise_info(op: str, info: Tensor, message: str, error: type = LinAlgError) -> None:
    """Raise LinAlgError (or `error`) for the first matrix whose `info` is not 0 (`message`
    formats its info); PyTorch names the batch element when there is a batch."""
    if info.numel() == 0:
        return
    flat = info.reshape(-1)
    if not bool((flat != 0).any()):
        return
    values = flat.tolist()
    index = next(i for i, v in enumerate(values) if v != 0)
    where_ = f"(Batch element {index}): " if info.ndim else ""
    raise error(f"{op}: {where_}{message.format(info=values[index])}")


def _eye_like(n: int, like: Tensor) -> Tensor:
    return eye(n, dtype=like.dtype, device=like.device)


def _diag(x: Tensor) -> Tensor:
    """The main diagonals of a batch of square matrices."""
    i = arange(x.shape[-1], device=x.device)
    return x[..., i, i]


def _diag_embed(v: Tensor) -> Tensor:
    return v.unsqueeze(-1) * _eye_like(v.shape[-1], v)


def _matrix_cost(flops_per_n3: float):
    def cost(A: Any, *rest: Any, **kwargs: Any) -> Cost:
        n = max(A.shape[-2:]) if len(A.shape) >= 2 else 1
        batch = costs.numel(A) / max(1, A.shape[-1] * A.shape[-2]) if len(A.shape) >= 2 else 1
        return Cost(flops_per_n3 * batch * n ** 3, 2 * costs.nbytes(A))
    return cost


_WARNED: set[str] = set()


def deprecated(op: str, advice: str) -> None:
    """PyTorch's deprecation warning for `torch.<op>`, once per process as PyTorch does."""
    if op not in _WARNED:
        _WARNED.add(op)
        warnings.warn(f"torch.{op} is deprecated in favor of {advice}", UserWarning,
                      stacklevel=user_stacklevel())  # (the caller's line, however wrapped)


# -- determinants ---------------------------------------------------------------------------


def _det_rule(A):
    _check("linalg.det", A)
    return OutMeta(tuple(A.shape[:-2]), A.dtype, None)


def _inv_t(A: Tensor) -> Tensor:
    """inv(A)^H, for the gradients of det and slogdet (NaN for a singular A)."""
    return _inv_ex(A)[0].mH


@primitive(complex=True, variants="function method", rule=_det_rule, cost=_matrix_cost(2 / 3),
           grad=Grad(A=lambda grad, A, result:
                     (grad * conj(result)).unsqueeze(-1).unsqueeze(-1) * _inv_t(A)))
def det(A: Tensor) -> Tensor:
    """The determinant of a square matrix (or of each in a batch). Its gradient is
    `conj(det(A)) * inv(A)^H` (PyTorch's, for invertible A)."""
    return apply_labelled(OPS["det"], "LinalgDetBackward0", A)


def _slogdet_rule(A):
    _check("linalg.slogdet", A)
    return OutMeta(tuple(A.shape[:-2]) + (2,), A.dtype, None)


def _slogdet_grad(grad, A, result):
    """PyTorch's slogdet_backward: the log-determinant's gradient `g` times inv(A)^H; for
    a complex A, g = g_logabsdet + i Im(conj(sign) g_sign) (the sign's phase is the
    log-determinant's imaginary part; a real A's sign has no gradient)."""
    g = grad[..., 1]
    if A._dtype.is_complex:
        g = g.real + (conj(result[..., 0]) * grad[..., 0]).imag * 1j
    return g.unsqueeze(-1).unsqueeze(-1) * _inv_t(A)


@primitive(complex=True, variants="", rule=_slogdet_rule, cost=_matrix_cost(2 / 3),
           grad=Grad(A=_slogdet_grad))
def _linalg_slogdet(A: Tensor) -> Tensor:
    """The sign and the log of the absolute value of the determinant, packed (.., 2)."""
    return apply_labelled(OPS["_linalg_slogdet"], "LinalgSlogdetBackward0", A)


def _slogdet_parts(A: Tensor) -> tuple[Tensor, Tensor]:
    sign, logabsdet = _split(_linalg_slogdet(A), (), (), lapack=True)
    return sign, (logabsdet.real if A.dtype.is_complex else logabsdet)


SlogdetResult = return_type("slogdet", ["sign", "logabsdet"])


@composite(complex=True, variants="function method out", cost=_matrix_cost(2 / 3))
def slogdet(A: Tensor) -> Any:
    """The sign and the natural log of the absolute value of the determinant, as a named
    pair `(sign, logabsdet)`: `det = sign * exp(logabsdet)` without overflow. For a
    singular matrix, `(0, -inf)`; for a complex one, the sign is `det / |det|` and
    logabsdet is real."""
    return SlogdetResult(*_slogdet_parts(A))


LinalgSlogdetResult = return_type("linalg_slogdet", ["sign", "logabsdet"])


@composite(complex=True, variants="out", cost=_matrix_cost(2 / 3))
def linalg_slogdet(A: Tensor) -> Any:
    """`linalg.slogdet`: `slogdet`'s pair, as PyTorch's `torch.return_types.linalg_slogdet`
    (`torch.slogdet` returns `torch.return_types.slogdet`)."""
    return LinalgSlogdetResult(*_slogdet_parts(A))


@composite(complex=True, variants="function method", cost=_matrix_cost(2 / 3))
def logdet(input: Tensor) -> Tensor:
    """The natural log of the determinant: NaN where it is negative, -inf where it is 0;
    of a complex matrix, the complex log `log(sign) + logabsdet`."""
    _check("logdet", input)
    sign, logabsdet = slogdet(input)
    if input.dtype.is_complex:
        return sign.log() + logabsdet
    return where(sign < 0, math.nan, logabsdet)


# -- inverse and solve ------------------------------------------------------------------


def _inv_rule(A):
    _check("linalg.inv", A)
    n = A.shape[-1]
    return OutMeta(tuple(A.shape[:-2]) + (n * n + 1,), A.dtype, None)


def _inv_grad(grad, result, A_shape):
    n = A_shape[-1]
    (gX,), (X,) = _split(grad, (n, n)), _split(result, (n, n))
    return -(X.mH @ gX @ X.mH)


@primitive(complex=True, variants="", rule=_inv_rule, cost=_matrix_cost(2.0),
           grad=Grad(A=_inv_grad))
def _linalg_inv_ex(A: Tensor) -> Tensor:
    """The inverse and LAPACK's info, packed (.., n*n + 1)."""
    return apply_labelled(OPS["_linalg_inv_ex"], "LinalgInvExBackward0", A)


InvExResult = return_type("linalg_inv_ex", ["inverse", "info"])


def _inv_ex(A: Tensor) -> tuple[Tensor, Tensor]:
    n = A.shape[-1]
    inverse, info = _split(_linalg_inv_ex(A), (n, n), (), lapack=True)
    return inverse, _info(info)


_SINGULAR = ("The diagonal element {info} is zero, the inversion could not be completed "
             "because the input matrix is singular.")


@composite(complex=True, variants="", cost=_matrix_cost(2.0), cpu_precision=P.FLOAT32)
def linalg_inv(A: Tensor, *, out: Any = None) -> Tensor:
    """`linalg.inv`: the inverse of a square matrix (or of each in a batch); raises
    LinAlgError for a singular one."""
    return _checked_inverse("linalg.inv", A, out)


def _checked_inverse(op: str, A: Tensor, out: Any = None) -> Tensor:
    inverse, info = _inv_ex(A)
    _raise_info(op, info, _SINGULAR)  # (`op`: the name PyTorch's error gives)
    return inverse if out is None else _write("linalg.inv", out, inverse)


@composite(complex=True, variants="function method", cost=_matrix_cost(2.0),
           cpu_precision=P.FLOAT32)
def inverse(input: Tensor, *, out: Any = None) -> Tensor:
    """The inverse of a square matrix (`linalg.inv`)."""
    return linalg_inv(input, out=out)


@composite(complex=True, variants="", cost=_matrix_cost(2.0), cpu_precision=P.FLOAT32)
def linalg_inv_ex(A: Tensor, *, check_errors: bool = False) -> Any:
    """`linalg.inv_ex`: the inverse and LAPACK's `info` (int32: 0, or the index of the
    first zero pivot of a singular matrix, whose inverse is then NaN) without raising,
    unless `check_errors`."""
    inverse_, info = _inv_ex(A)
    if check_errors:
        _raise_info("linalg.inv_ex", info, _SINGULAR)
    return InvExResult(inverse_, info)


def _solve_rule(A, B):
    _check("linalg.solve", A)
    n, k = A.shape[-1], B.shape[-1]
    return OutMeta(tuple(A.shape[:-2]) + (n * k + 1,), A.dtype, None)


def _solve_grads(grad, A, B, result, needs):
    n, k = A.shape[-1], B.shape[-1]
    (gX,), (X,) = _split(grad, (n, k)), _split(result, (n, k))
    gB = linalg_solve(A.mH, gX)
    return (-(gB @ X.mH) if needs[0] else None), (gB if needs[1] else None)


@primitive(complex=True, variants="", rule=_solve_rule, cost=_matrix_cost(2 / 3),
           grad=Grad(each=_solve_grads))
def _linalg_solve_ex(A: Tensor, B: Tensor) -> Tensor:
    """The solution X of `A @ X = B` and LAPACK's info, packed (.., n*k + 1)."""
    return apply_labelled(OPS["_linalg_solve_ex"], "LinalgSolveExBackward0", A, B)


def _solve_operands(op: str, A: Tensor, B: Tensor, vectors: bool = True
                    ) -> tuple[Tensor, Tensor, bool]:
    """A and B broadcast to one batch, B as matrices; whether B was a (batch of) vector
    (B is always matrices where not `vectors`)."""
    _check(op, A)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of "
                           f"type {_word(A.dtype)} and B of type {_word(B.dtype)} instead")
    vector = vectors and (B.ndim == 1 or (B.ndim == A.ndim - 1 and
                                          tuple(B.shape) == tuple(A.shape[:-1])))
    if vector:
        B = B.unsqueeze(-1)
    if B.ndim < 2 or B.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and "
                           f"{'x'.join(str(s) for s in B.shape[-2:])})")
    batch = broadcast_shapes(op, tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    return A.expand(batch + tuple(A.shape[-2:])), B.expand(batch + tuple(B.shape[-2:])), vector


def _solve(op: str, A: Tensor, B: Tensor, left: bool, check: bool) -> tuple[Tensor, Tensor]:
    if not left:  # X A = B  <=>  A^T X^T = B^T
        X, info = _solve(op, A.mT, B.mT, True, check)
        return X.mT, info
    A, B, vector = _solve_operands(op, A, B)
    X, info = _split(_linalg_solve_ex(A, B), tuple(B.shape[-2:]), ())
    # (a batch of vectors comes back as the matrix it makes, column-major, as PyTorch's)
    X = _lapack_layout(X.squeeze(-1) if vector else X)
    info = _info(info)
    if check:  # (PyTorch names this one error torch.linalg.solve, its others linalg.solve)
        _raise_info("torch." + op if op in ("linalg.solve", "linalg.solve_ex") else op, info,
                    "The solver failed because the input matrix is singular.")
    return X, info


SolveExResult = return_type("linalg_solve_ex", ["result", "info"])


@composite(complex=True, variants="", cost=_matrix_cost(2 / 3), cpu_precision=P.FLOAT32,
           node_label="LinalgSolveExBackward0")
def linalg_solve(A: Tensor, B: Tensor, *, left: bool = True, out: Any = None) -> Tensor:
    """`linalg.solve`: the solution X of `A @ X = B` (`X @ A = B` with `left=False`); B is
    a matrix, or a vector (B.ndim == 1, or A's shape without its last dimension); batches
    broadcast. Raises LinAlgError for a singular A."""
    X, _ = _solve("linalg.solve", A, B, left, True)
    return X if out is None else _write("linalg.solve", out, X)


@composite(complex=True, variants="", cost=_matrix_cost(2 / 3))
def linalg_solve_ex(A: Tensor, B: Tensor, *, left: bool = True,
                    check_errors: bool = False) -> Any:
    """`linalg.solve_ex`: `linalg.solve` and LAPACK's `info` (int32), without raising
    unless `check_errors`."""
    return SolveExResult(*_solve("linalg.solve_ex", A, B, left, check_errors))


def _solve_triangular_rule(A, B, *, upper, unitriangular):
    return OutMeta(tuple(B.shape), A.dtype, None)


def _solve_triangular_grads(grad, A, result, upper, unitriangular, needs):
    """PyTorch's: gB = A^-H gX; gA = -gB X^H on the triangle A's solve read."""
    gB = _linalg_solve_triangular(A.mH, grad, upper=not upper, unitriangular=unitriangular)
    gA = None
    if needs[0]:
        gA = -(gB @ result.mH)
        gA = gA.triu(int(unitriangular)) if upper else gA.tril(-int(unitriangular))
    return gA, (gB if needs[1] else None)


@primitive(complex=True, variants="", rule=_solve_triangular_rule, cost=_matrix_cost(1 / 3),
           grad=Grad(each=_solve_triangular_grads))
def _linalg_solve_triangular(A: Tensor, B: Tensor, *, upper: bool,
                             unitriangular: bool = False) -> Tensor:
    """The solution X of `A @ X = B` by triangular substitution (BLAS trsm), reading A's
    upper or lower triangle; A and B have one batch shape."""
    return apply_labelled(OPS["_linalg_solve_triangular"], "LinalgSolveTriangularBackward0",
                          A, B, upper=bool(upper), unitriangular=bool(unitriangular))


@composite(complex=True, variants="", cost=_matrix_cost(1 / 3),
           node_label="LinalgSolveTriangularBackward0")
def linalg_solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                            unitriangular: bool = False, out: Any = None) -> Tensor:
    """`linalg.solve_triangular`: the solution X of `A @ X = B` (`X @ A = B` with
    `left=False`) reading only A's upper or lower triangle (and taking its diagonal to be
    ones with `unitriangular`). B must be a matrix (a batch of them)."""
    _check("linalg.solve_triangular", A)
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    if (B.shape[-2] if left else B.shape[-1]) != A.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {'AX = B' if left else 'XA = B'} "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    X = _lapack_layout(_triangular_solve("linalg.solve_triangular", A, B, upper, left,
                                         unitriangular))
    return X if out is None else _write("linalg.solve_triangular", out, X)


def _triangular_solve(op: str, A: Tensor, B: Tensor, upper: bool, left: bool,
                      unitriangular: bool) -> Tensor:
    if not left:  # X A = B  <=>  A^T X^T = B^T, and A^T's other triangle holds A's
        return _triangular_solve(op, A.mT, B.mT, not upper, True, unitriangular).mT
    A, B, _ = _solve_operands(op, A, B, vectors=False)
    return _linalg_solve_triangular(A, B, upper=upper, unitriangular=unitriangular)


TriangularSolveResult = return_type("triangular_solve", ["solution", "cloned_coefficient"])


@composite(variants="function method", cost=_matrix_cost(1 / 3), cpu_precision=P.FLOAT32)
def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> Any:
    """The solution X of `A @ X = input` (`A^T @ X = input` with `transpose`) for a
    triangular A, and a copy of A (deprecated in PyTorch for
    `linalg.solve_triangular`)."""
    deprecated("triangular_solve", "torch.linalg.solve_triangularand will be removed in a "
               "future PyTorch release.\ntorch.linalg.solve_triangular has its arguments "
               "reversed and does not return a copy of one of the inputs.\nX = "
               "torch.triangular_solve(B, A).solution\nshould be replaced with\nX = "
               "torch.linalg.solve_triangular(A, B).")
    X = _triangular_solve("triangular_solve", A.mT if transpose else A, input,
                          upper != transpose, True, unitriangular)
    X = relabel(_lapack_layout(X), "TriangularSolveBackward0", (input, A))
    return TriangularSolveResult(X, _relaid(A.clone()))


def _write(name: str, out: Any, result: Tensor) -> Tensor:
    """`result` written into `out=`; an empty `out` (resized) takes the result's layout
    (column-major matrices), as PyTorch restrides a resized `out`."""
    if isinstance(out, Tensor) and out.numel() == 0 and result.numel() and \
            out._base is None and result.device == out.device:
        order = sorted(range(result.ndim), key=lambda d: -result.stride(d))
        out._data = empty_permuted(tuple(result.shape), order, dtype=out.dtype,
                                   device=out.device)._data
    return write_out(name, out, result)


# -- Cholesky -----------------------------------------------------------------------------


def _cholesky_rule(A, *, upper):
    _check("linalg.cholesky", A)
    n = A.shape[-1]
    return OutMeta(tuple(A.shape[:-2]) + (n * n + 1,), A.dtype, None)


def _cholesky_grad(grad, result, A_shape, upper):
    """PyTorch's: gA = L^-H Φ(L^H gL) L^-1, symmetrized."""
    n = A_shape[-1]
    (gL,), (L,) = _split(grad, (n, n)), _split(result, (n, n))
    if upper:
        L, gL = L.mH, gL.mH
    gA = (L.mH @ gL).tril()
    gA = 0.5 * (gA + gA.tril(-1).mH)
    if gA.dtype.is_complex:  # Φ's diagonal: its real part (the Hermitian part of L^H gL)
        gA = gA - _diag_embed(_diag(gA).imag * 0.5j)
    gA = linalg_solve_triangular(L.mH, gA, upper=True)
    return linalg_solve_triangular(L, gA, upper=False, left=False)


@primitive(complex=True, variants="", rule=_cholesky_rule, cost=_matrix_cost(1 / 3),
           grad=Grad(A=_cholesky_grad))
def _linalg_cholesky_ex(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor and LAPACK's info, packed (.., n*n + 1)."""
    return apply_labelled(OPS["_linalg_cholesky_ex"], "LinalgCholeskyExBackward0", A,
                          upper=bool(upper))


CholeskyExResult = return_type("linalg_cholesky_ex", ["L", "info"])
_NOT_PD = ("The factorization could not be completed because the input is not "
           "positive-definite (the leading minor of order {info} is not positive-definite).")


def _cholesky_ex(A: Tensor, upper: bool) -> tuple[Tensor, Tensor]:
    n = A.shape[-1] if A.ndim >= 2 else 0
    L, info = _split(_linalg_cholesky_ex(A, upper=upper), (n, n), (), lapack=True)
    return L, _info(info)


@composite(complex=True, variants="", cost=_matrix_cost(1 / 3), cpu_precision=P.FLOAT32,
           node_label="LinalgCholeskyExBackward0")
def linalg_cholesky(A: Tensor, *, upper: bool = False, out: Any = None) -> Tensor:
    """`linalg.cholesky`: the lower-triangular L with `A = L @ L^T` of a symmetric
    positive-definite A (reading its lower triangle), or the upper U = L^T with `upper`
    (reading the upper one). Raises LinAlgError when A is not positive-definite."""
    L, info = _cholesky_ex(A, upper)
    _raise_info("linalg.cholesky", info, _NOT_PD)
    return L if out is None else _write("linalg.cholesky", out, L)


@composite(complex=True, variants="", cost=_matrix_cost(1 / 3), cpu_precision=P.FLOAT32)
def linalg_cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> Any:
    """`linalg.cholesky_ex`: `linalg.cholesky` and LAPACK's `info` (int32: 0, or the order
    of the leading minor that is not positive-definite, whose factor is then NaN) without
    raising, unless `check_errors`."""
    L, info = _cholesky_ex(A, upper)
    if check_errors:
        _raise_info("linalg.cholesky_ex", info, _NOT_PD)
    return CholeskyExResult(L, info)


@composite(complex=True, variants="function method", cost=_matrix_cost(1 / 3),
           cpu_precision=P.FLOAT32)
def cholesky(input: Tensor, upper: bool = False, *, out: Any = None) -> Tensor:
    """The Cholesky factor (deprecated in PyTorch for `linalg.cholesky`)."""
    deprecated("cholesky", "torch.linalg.cholesky and will be removed in a future PyTorch "
               "release.\nL = torch.cholesky(A)\nshould be replaced with\nL = "
               "torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould be "
               "replaced with\nU = torch.linalg.cholesky(A).mH\nThis transform will produce "
               "equivalent results for all valid (symmetric positive definite) inputs.")
    L, info = _cholesky_ex(input, upper)
    _raise_info("cholesky", info, _NOT_PD)  # (PyTorch's error names `cholesky`)
    return L if out is None else _write("linalg.cholesky", out, L)


def _cholesky_solve_factor_grad(grad, input2, result, upper):
    """PyTorch's: the factor is differentiated as a whole matrix, `A = L @ L^T`."""
    gB = cholesky_solve(grad, input2, upper)
    common = gB @ result.mH
    common = common + common.mH
    return -(input2 @ common) if upper else -(common @ input2)


@composite(complex=True, variants="function method", cost=_matrix_cost(2 / 3), grad=Grad(
    input=lambda grad, input2, upper: cholesky_solve(grad, input2, upper),
    input2=_cholesky_solve_factor_grad))
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """The solution X of `A @ X = input` given A's Cholesky factor `input2` (lower, or
    upper with `upper`): `A = L @ L^H`."""
    _check("cholesky_solve", input2, name="input2")
    if input.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input.ndim} "
                           "dimensions instead")
    with no_grad():
        L = input2.mH if upper else input2
        Y = linalg_solve_triangular(L, input, upper=False)
        X = linalg_solve_triangular(L.mH, Y, upper=True)
    X = _relaid(X)
    record_grad(OPS["cholesky_solve"], (input, input2), {"upper": upper}, X,
                "CholeskySolveBackward0")
    return X


@composite(complex=True, variants="function method", cost=_matrix_cost(1.0),
           cpu_precision=P.FLOAT32, node_label="CholeskyInverseBackward0")
def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """The inverse of `A = L @ L^T` given its Cholesky factor L (`A = U^T @ U` given U
    with `upper`)."""
    _check("cholesky_inverse", input, name="input")
    # LAPACK's potri refuses a factor with a zero on its diagonal, as PyTorch does
    diagonals = input.diagonal(dim1=-2, dim2=-1).detach().reshape(-1, input.shape[-1])
    info = [next((i + 1 for i, v in enumerate(row) if v == 0), 0)
            for row in diagonals.tolist()]
    _raise_info("cholesky_inverse", tensor(info).reshape(tuple(input.shape[:-2])), _SINGULAR)
    return cholesky_solve(_eye_like(input.shape[-1], input).expand(tuple(input.shape)),
                          input, upper)


# -- QR ------------------------------------------------------------------------------------


def _qr_shapes(shape: tuple, mode: str) -> tuple[tuple, tuple]:
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    if mode == "complete":
        return (m, m), (m, n)
    if mode == "r":
        return (0,), (k, n)
    return (m, k), (k, n)


def _qr_rule(A, *, mode):
    _check("linalg.qr", A, square=False)
    q, r = _qr_shapes(tuple(A.shape), mode)
    return OutMeta(tuple(A.shape[:-2]) + (math.prod(q) + math.prod(r),), A.dtype, None)


def _qr_grad(grad, result, A_shape, mode):
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                           "going to differentiate through linalg.qr.")
    m, n = A_shape[-2], A_shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")
    qs, rs = _qr_shapes(tuple(A_shape), mode)
    gQ, gR = _split(grad, qs, rs)
    Q, R = _split(result, qs, rs)
    gA = gR @ R.mH - Q.mH @ gQ
    if m >= n:  # X + X^H with the (real) diagonal halved, from the upper triangle
        sym = gA.triu()
        sym = sym + sym.mH
        sym = sym - _diag_embed(_diag(sym) * 0.5)
        gA = Q @ sym + gQ
        return linalg_solve_triangular(R.mH, gA, upper=False, left=False)
    # X - X^H, lower triangle, with the (imaginary) diagonal halved
    skew = (-gA - (-gA).mH).tril()
    if skew.dtype.is_complex:
        skew = skew - _diag_embed(_diag(skew) * 0.5)
    gA = linalg_solve_triangular(R[..., :m].mH, Q @ skew, upper=False, left=False)
    gA = cat([gA, zeros(tuple(R.shape[:-1]) + (n - m,), dtype=gA.dtype, device=gA.device)],
             -1)
    return gA + Q @ gR


@primitive(complex=True, variants="", rule=_qr_rule, cost=_matrix_cost(4 / 3),
           grad=Grad(A=_qr_grad))
def _linalg_qr(A: Tensor, *, mode: str = "reduced") -> Tensor:
    """Q and R, packed."""
    return apply_labelled(OPS["_linalg_qr"], "LinalgQrBackward0", A, mode=mode)


QRResult = return_type("linalg_qr", ["Q", "R"])


@composite(complex=True, variants="out", cost=_matrix_cost(4 / 3), cpu_precision=P.FLOAT32)
def linalg_qr(A: Tensor, mode: str = "reduced", *, out: Any = None) -> Any:
    """`linalg.qr`: `A = Q @ R` with Q orthonormal columns and R upper triangular, as a
    named pair. `mode`: "reduced" (Q is m x k, R k x n, k = min(m, n)), "complete" (Q is
    m x m) or "r" (R alone; Q is empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    _check("linalg.qr", A, square=False)
    qs, rs = _qr_shapes(tuple(A.shape), mode)
    Q, R = _split(_linalg_qr(A, mode=mode), qs, rs, lapack=True)
    if mode == "r":
        Q = zeros(0, dtype=A.dtype, device=A.device)
    return QRResult(Q, R)


QrResult = return_type("qr", ["Q", "R"])


@composite(variants="function method", cost=_matrix_cost(4 / 3), cpu_precision=P.FLOAT32)
def qr(input: Tensor, some: bool = True) -> Any:
    """The QR decomposition (deprecated in PyTorch for `linalg.qr`): reduced with `some`,
    else complete."""
    deprecated("qr", "torch.linalg.qr and will be removed in a future PyTorch release.\nThe "
               "boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
               "Q, R = torch.qr(A, some)\nshould be replaced with\nQ, R = torch.linalg.qr(A, "
               "'reduced' if some else 'complete')")
    return QrResult(*linalg_qr(input, "reduced" if some else "complete"))


# -- Householder reflectors: geqrf and what reads its output ------------------------------


def _geqrf_rule(A):
    _check("geqrf", A, square=False)
    m, n = A.shape[-2:]
    return OutMeta(tuple(A.shape[:-2]) + (m * n + min(m, n),), A.dtype, None)


@primitive(complex=True, variants="", rule=_geqrf_rule, cost=_matrix_cost(4 / 3))
def _geqrf(A: Tensor) -> Tensor:
    """LAPACK's geqrf output, packed."""
    return apply_labelled(OPS["_geqrf"], "GeqrfBackward0", A)


GeqrfResult = return_type("geqrf", ["a", "tau"])


@composite(complex=True, variants="function method", cost=_matrix_cost(4 / 3),
           cpu_precision=P.FLOAT32)
def geqrf(input: Tensor) -> Any:
    """The QR decomposition in LAPACK's compact form `(a, tau)`: R on and above `a`'s
    diagonal, the Householder vectors below it (their leading 1 implied), and their
    scales `tau` (see `linalg.householder_product`, `ormqr`). Not differentiable, as in
    PyTorch."""
    _check("geqrf", input, square=False)
    m, n = input.shape[-2:]
    a, tau = _split(_geqrf(input), (m, n), (min(m, n),), lapack=True)
    return GeqrfResult(a, tau)


def _larf(v: Tensor, tau: Tensor, C: Tensor, left: bool) -> Tensor:
    """LAPACK's dlarf: `H @ C` (`C @ H` where not `left`) for H = I - tau v v^T, over the
    part of C LAPACK reads: nothing where tau is 0; v's entries up to its last nonzero one,
    and C's columns (rows where not `left`) up to the last one nonzero there. So a NaN tau
    or an infinite entry reaches what it reaches in PyTorch's orgqr and ormqr and no more.
    v (.., L), tau (..), C (.., L, c) (or (.., c, L))."""
    side = -2 if left else -1  # C's dimension v runs along
    other = C.shape[-1 if left else -2]
    if other == 0:
        return C
    length = arange(1, v.shape[-1] + 1, device=v.device)
    last_v = where(v != 0, length, 0).amax(-1, keepdim=True)
    in_v = length <= last_v  # (.., L)
    v_full, v = v, where(in_v, v, 0.0)
    in_v = in_v.unsqueeze(-1 if left else -2)
    read = where(in_v, C, 0.0)
    across = arange(1, other + 1, device=C.device)
    last_c = where((read != 0).any(side), across, 0).amax(-1, keepdim=True)
    in_c = (across <= last_c).unsqueeze(-2 if left else -1)
    t = tau.unsqueeze(-1).unsqueeze(-1)
    # (dger's order: the scale times w first, then v's entries times that; a product in
    # another order overflows elsewhere)
    # (complex: H = I - tau v v^H, zlarf's; conj leaves real v as it is)
    if left:  # H C = C - v (tau v^H C)
        update = v.unsqueeze(-1) * (t * (conj(v).unsqueeze(-2) @ read))
        untrimmed = C - v_full.unsqueeze(-1) * (t * (conj(v_full).unsqueeze(-2) @ C))
    else:  # C H = C - (C v) (tau v^H)
        update = (read @ v.unsqueeze(-1)) * (t * conj(v).unsqueeze(-2))
        untrimmed = C - (C @ v_full.unsqueeze(-1)) * (t * conj(v_full).unsqueeze(-2))
    trimmed = where(in_v & in_c & (t != 0), C - update, C)
    # the trimming changes no finite value, but it would cut the gradient of the zeros it
    # skips (d/dv_j of a trailing zero, d/dtau where tau is 0): where the values agree
    # the untrimmed product carries the gradient, as PyTorch's analytic one does
    return where(untrimmed == trimmed, untrimmed, trimmed)


def _reflector(A: Tensor, i: int) -> Tensor:
    """v_i: column i of A below the diagonal, with the 1 LAPACK implies on it."""
    one = _eye_like(1, A)[0].expand(tuple(A.shape[:-2]) + (1,))
    return cat([one, A[..., i + 1:, i]], -1)


def _reflect(A: Tensor, tau: Tensor, C: Tensor, left: bool, transpose: bool) -> Tensor:
    """`Q @ C` (`Q^T @ C` with `transpose`; `C @ Q` / `C @ Q^T` with `left=False`) for
    Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^T (see `_reflector`): LAPACK's dorm2r, each
    reflector applied to the rows (columns) from i on, without forming Q."""
    k = tau.shape[-1]
    order = range(k) if left == transpose else range(k - 1, -1, -1)
    for i in order:
        v = _reflector(A, i)
        if left:
            C = cat([C[..., :i, :], _larf(v, tau[..., i], C[..., i:, :], True)], -2)
        else:
            C = cat([C[..., :, :i], _larf(v, tau[..., i], C[..., :, i:], False)], -1)
    return C


def _householder_columns(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 ... H_k: LAPACK's dorg2r, from the last reflector back;
    H_i reaches only rows i.. of columns i + 1.. (the columns before it are set after it,
    so a NaN tau leaves them finite, as in PyTorch's)."""
    m, n = A.shape[-2:]
    Q = _eye_like(m, A)[:, :n].expand(tuple(A.shape))
    for i in range(tau.shape[-1] - 1, -1, -1):
        v, t = _reflector(A, i), tau[..., i]
        if i < n - 1:
            block = _larf(v, t, Q[..., i:, i + 1:], True)
            Q = cat([Q[..., :, :i + 1], cat([Q[..., :i, i + 1:], block], -2)], -1)
        column = cat([zeros(tuple(A.shape[:-2]) + (i,), dtype=A.dtype, device=A.device),
                      1 - t.unsqueeze(-1), -t.unsqueeze(-1) * v[..., 1:]], -1)
        Q = cat([Q[..., :, :i], column.unsqueeze(-1), Q[..., :, i + 1:]], -1)
    return Q


def _householder_checks(op: str, A: Tensor, tau: Tensor) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if A.ndim - tau.ndim != 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{A.ndim}")
    if A.dtype is not tau.dtype:
        raise RuntimeError(f"{op}: tau dtype {tau.dtype} does not match input dtype "
                           f"{A.dtype}")


@composite(complex=True, variants="", cost=_matrix_cost(4 / 3), cpu_precision=P.FLOAT32,
           node_label="LinalgHouseholderProductBackward0")
def linalg_householder_product(A: Tensor, tau: Tensor, *, out: Any = None) -> Tensor:
    """`linalg.householder_product`: the first n columns of the product of the Householder
    reflectors stored in A (m x n, m >= n) and `tau` (geqrf's output gives Q of the QR
    decomposition). Differentiable through its parts."""
    _householder_checks("torch.linalg.householder_product", A, tau)
    result = _lapack_layout(_householder_columns(A, tau))
    return result if out is None else _write("linalg.householder_product", out, result)


@composite(variants="function method", cost=_matrix_cost(4 / 3), cpu_precision=P.FLOAT32,
           node_label="LinalgHouseholderProductBackward0")
def orgqr(input: Tensor, input2: Tensor) -> Tensor:
    """The Q of geqrf's compact form (`linalg.householder_product`)."""
    return linalg_householder_product(input, input2)


@composite(variants="function method", cost=_matrix_cost(4 / 3), cpu_precision=P.FLOAT32,
           node_label="OrmqrBackward0")
def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    """`Q @ input3` for the Q (m x m) of geqrf's compact form `(input, input2)`:
    `Q^T` with `transpose`, from the right with `left=False`."""
    if input.ndim < 2 or input3.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if input.shape[-1] < input2.shape[-1]:
        raise RuntimeError("torch.ormqr: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    m = input3.shape[-2] if left else input3.shape[-1]
    if input.shape[-2] != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to "
                           f"input.shape[-2]")
    return _lapack_layout(_reflect(input, input2, input3, left, transpose))


# -- SVD and the symmetric eigendecomposition -------------------------------------------


def _svd_shapes(shape: tuple, full_matrices: bool) -> tuple[tuple, tuple, tuple]:
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    if full_matrices:
        return (m, m), (k,), (n, n)
    return (m, k), (k,), (k, n)


def _svd_rule(A, *, full_matrices):
    _check("linalg.svd", A, square=False)
    shapes = _svd_shapes(tuple(A.shape), full_matrices)
    return OutMeta(tuple(A.shape[:-2]) + (sum(math.prod(s) for s in shapes),), A.dtype, None)


_SVD_PHASE = ("svd_backward: The singular vectors in the complex case are specified up to "
              "multiplication by e^{i phi}. The specified loss function depends on this "
              "phase term, making it ill-defined.")


def _svd_grad(grad, result, A_shape, full_matrices):
    """PyTorch's svd_backward, defined where the singular values differ (and, for complex
    A, where the loss does not depend on the singular vectors' phases)."""
    shapes = _svd_shapes(tuple(A_shape), full_matrices)
    gU, gS, gVh = _split(grad, *shapes)
    U, S, Vh = _split(result, *shapes)
    complex_ = S.dtype.is_complex
    if complex_:  # (the packed singular values are complex with zero imaginary parts)
        S, gS = S.real, gS.real
    m, n = A_shape[-2], A_shape[-1]
    k = S.shape[-1]
    if full_matrices:
        U, gU, Vh, gVh = U[..., :k], gU[..., :k], Vh[..., :k, :], gVh[..., :k, :]
    UhgU = U.mH @ gU
    UhgU = UhgU - UhgU.mH
    VhgV = Vh @ gVh.mH
    VhgV = VhgV - VhgV.mH
    if complex_:  # PyTorch's test: allclose(Im diag UhgU, -Im diag VhgV, 1e-2, 1e-2)
        a, b = _diag(UhgU).imag, -_diag(VhgV).imag
        if not bool(((a - b).abs() <= 1e-2 + 1e-2 * b.abs()).all()):
            raise RuntimeError(_SVD_PHASE)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye_like(k, S)
    gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E + _diag_embed(gS)
    if complex_:  # the phase of U's columns: i Im(diag(U^H gU)) / S
        gA = gA + _diag_embed(_diag(UhgU) / (2 * S))
    if m > n:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (U.mH @ gUSinv)
        return gA @ Vh
    if m < n:
        gA = gA @ Vh
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - (SinvgVh @ Vh.mH) @ Vh
        return U @ gA
    return U @ gA @ Vh


@primitive(complex=True, variants="", rule=_svd_rule, cost=_matrix_cost(12.0),
           grad=Grad(A=_svd_grad))
def _linalg_svd(A: Tensor, *, full_matrices: bool = True) -> Tensor:
    """U, S and Vh, packed."""
    return apply_labelled(OPS["_linalg_svd"], "LinalgSvdBackward0", A,
                          full_matrices=bool(full_matrices))


SVDResult = return_type("linalg_svd", ["U", "S", "Vh"])


def _svd(A: Tensor, full_matrices: bool) -> list[Tensor]:
    _check("linalg.svd", A, square=False)
    U, S, Vh = _split(_linalg_svd(A, full_matrices=full_matrices),
                      *_svd_shapes(tuple(A.shape), full_matrices), lapack=True)
    return [U, S.real if S.dtype.is_complex else S, Vh]


@composite(complex=True, variants="", cost=_matrix_cost(12.0), cpu_precision=P.FLOAT32)
def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: Any = None) -> Any:
    """`linalg.svd`: `A = U @ diag(S) @ Vh`, singular values descending, as a named triple;
    U is m x m and Vh n x n with `full_matrices`, else m x k and k x n. The gradient is
    PyTorch's: defined where the singular values are distinct (and, for U and Vh, when the
    loss does not depend on their signs)."""
    return SVDResult(*_svd(A, full_matrices))


@composite(complex=True, variants="", cost=_matrix_cost(12.0), cpu_precision=P.FLOAT32)
def linalg_svdvals(A: Tensor, *, driver: Any = None) -> Tensor:
    """`linalg.svdvals`: the singular values, descending."""
    return _svd(A, False)[1]


SvdResult = return_type("svd", ["U", "S", "V"])


@composite(complex=True, variants="function method", cost=_matrix_cost(12.0),
           cpu_precision=P.FLOAT32)
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> Any:
    """The SVD as `(U, S, V)` with `input = U @ diag(S) @ V^T` (note V, not Vh): reduced
    with `some`. With `compute_uv=False`, U and V are zero-filled (m x m and n x n)."""
    if not compute_uv:
        S = linalg_svdvals(input)
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        return SvdResult(zeros(batch + (m, m), dtype=input.dtype, device=input.device), S,
                         zeros(batch + (n, n), dtype=input.dtype, device=input.device))
    U, S, Vh = _svd(input, not some)
    return SvdResult(U, S, Vh.mH)


def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """An orthonormal basis (.., m, q) of A's range, by randomized subspace iteration
    (Halko, Martinsson and Tropp 2009, algorithm 4.4, as PyTorch's `_lowrank`)."""
    def times(X: Tensor, adjoint: bool = False) -> Tensor:
        op, off = (A.mT, None if M is None else M.mT) if adjoint else (A, M)
        return op @ X if off is None else op @ X - off @ X
    R = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = linalg_qr(times(R)).Q
    for _ in range(niter):
        Q = linalg_qr(times(Q, adjoint=True)).Q
        Q = linalg_qr(times(Q)).Q
    return Q


def _svd_lowrank(op: str, A: Tensor, q: int | None, niter: int, M: Tensor | None) -> Any:
    q = 6 if q is None else q
    if not A.dtype.is_floating_point:
        A = A.to(dt.get_default_dtype())
    m, n = A.shape[-2:]
    if M is not None:
        M = M.expand(tuple(A.shape))
    if m < n:
        A = A.mT
        M = None if M is None else M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT @ A if M is None else Q.mT @ A - Q.mT @ M
    U, S, Vh = _svd(B, False)
    U, V = Q @ U, Vh.mT
    return (V, S, U) if m < n else (U, S, V)  # a plain tuple, as PyTorch's


@composite(variants="function", cost=_matrix_cost(12.0), cpu_precision=P.FLOAT32)
def svd_lowrank(A: Tensor, q: int | None = 6, niter: int = 2, M: Tensor | None = None) -> Any:
    """An approximate rank-`q` SVD `(U, S, V)` of `A - M` by randomized subspace iteration
    (`niter` power iterations); exact up to rounding when the rank is at most `q`. Draws
    from ember's random generator, so U and V differ from PyTorch's by the generator (not
    the subspace they span)."""
    return _svd_lowrank("svd_lowrank", A, q, niter, M)


@composite(variants="function", cost=_matrix_cost(12.0), cpu_precision=P.FLOAT32)
def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> Any:
    """Principal component analysis of the rows of `A`: `svd_lowrank` of A with its
    column means subtracted (`center`); `q` defaults to min(6, m, n)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - A.mean(-2, keepdim=True)
    return _svd_lowrank("pca_lowrank", A, q, niter, None)


def _eigh_rule(A, *, UPLO):
    _check("linalg.eigh", A)
    n = A.shape[-1]
    return OutMeta(tuple(A.shape[:-2]) + (n + n * n,), A.dtype, None)


def _eigh_grad(grad, result, A_shape):
    """PyTorch's linalg_eig_backward for a symmetric A, defined where the eigenvalues
    differ."""
    n = A_shape[-1]
    gL, gV = _split(grad, (n,), (n, n))
    L, V = _split(result, (n,), (n, n))
    if L.dtype.is_complex:  # (the packed eigenvalues are real, held as complex)
        L, gL = L.real, gL.real
    VhgV = V.mH @ gV
    if VhgV.dtype.is_complex and not bool((_diag(VhgV).imag.abs() <= 1e-2).all()):
        raise RuntimeError(_EIG_PHASE)
    VhgV = (VhgV - VhgV.mH) * 0.5
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + _eye_like(n, L)
    gA = VhgV / E
    gA = gA - _diag_embed(_diag(gA)) + _diag_embed(gL)
    return V @ gA @ V.mH


@primitive(complex=True, variants="", rule=_eigh_rule, cost=_matrix_cost(9.0),
           grad=Grad(A=_eigh_grad))
def _linalg_eigh(A: Tensor, *, UPLO: str = "L") -> Tensor:
    """The eigenvalues and eigenvectors, packed."""
    return apply_labelled(OPS["_linalg_eigh"], "LinalgEighBackward0", A, UPLO=UPLO)


EighResult = return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])


def _eigh(A: Tensor, UPLO: str) -> list[Tensor]:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _check("linalg.eigh", A)
    n = A.shape[-1]
    L, V = _split(_linalg_eigh(A, UPLO=UPLO), (n,), (n, n), lapack=True)
    return [L.real if L.dtype.is_complex else L, V]


@composite(complex=True, variants="out", cost=_matrix_cost(9.0), cpu_precision=P.FLOAT32)
def linalg_eigh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> Any:
    """`linalg.eigh`: the eigenvalues (ascending) and orthonormal eigenvectors (columns) of
    a symmetric matrix, reading its lower triangle (`UPLO="U"`: the upper one)."""
    return EighResult(*_eigh(A, UPLO))


@composite(complex=True, variants="out", cost=_matrix_cost(9.0), cpu_precision=P.FLOAT32)
def linalg_eigvalsh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> Tensor:
    """`linalg.eigvalsh`: the eigenvalues of a symmetric matrix, ascending."""
    return _eigh(A, UPLO)[0]


# -- the general eigendecomposition: complex results ---------------------------------------

_EIG_PHASE = ("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
              "multiplication by e^{i phi}. The specified loss function depends on this "
              "quantity, so it is ill-defined.")


def _eig_rule(A):
    _eig_check(A)
    n = A.shape[-1]
    out = A.dtype if A.dtype.is_complex else A.dtype.to_complex()
    return OutMeta(tuple(A.shape[:-2]) + (n + n * n,), out, None)


def _eig_check(A: Any, op: str = "linalg.eig") -> None:
    """PyTorch's errors for linalg.eig's input: its complex output type first (no
    complex integers), then the matrix checks."""
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"Unknown Complex ScalarType for {_word(A.dtype)}")
    if A.dtype in (dt.float16, dt.bfloat16):
        raise kernel_refuses("linalg_eig_out_cpu", A.dtype)
    _check(op, A)


def _eig_grad(grad, result, A_shape):
    """PyTorch's linalg_eig_backward: with A = V diag(L) V^-1,
    gA = V^-H (diag(gL) + (V^H gV - V^H V diag(Re(diag(V^H gV)))) / conj(E)) V^H,
    E_ij = L_j - L_i (the off-diagonal part; the diagonal is gL's). A real A takes the
    real part (the node does that)."""
    n = A_shape[-1]
    gL, gV = _split(grad, (n,), (n, n))
    L, V = _split(result, (n,), (n, n))
    Vh = V.mH
    VhgV = Vh @ gV
    diag_VhgV = _diag(VhgV)
    if not bool((diag_VhgV.imag.abs() <= 1e-2).all()):
        raise RuntimeError(_EIG_PHASE)
    gA = VhgV - Vh @ (V * diag_VhgV.real.unsqueeze(-2))
    Lc = L.conj()
    gA = gA / (Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + _eye_like(n, L))
    gA = gA - _diag_embed(_diag(gA)) + _diag_embed(gL)
    return linalg_solve(Vh, gA @ Vh)


@primitive(complex=True, variants="", rule=_eig_rule, cost=_matrix_cost(25.0),
           grad=Grad(A=_eig_grad))
def _linalg_eig(A: Tensor) -> Tensor:
    """The eigenvalues and eigenvectors, packed (complex)."""
    return apply_labelled(OPS["_linalg_eig"], "LinalgEigBackward0", A)


EigResult = return_type("linalg_eig", ["eigenvalues", "eigenvectors"])


def _eig(A: Tensor, op: str = "linalg.eig") -> list[Tensor]:
    _eig_check(A, op)
    n = A.shape[-1]
    return _split(_linalg_eig(A), (n,), (n, n), lapack=True)


@composite(complex=True, variants="out", cost=_matrix_cost(25.0))
def linalg_eig(A: Tensor, *, out: Any = None) -> Any:
    """`linalg.eig`: the eigenvalues and eigenvectors (unit columns) of a square matrix,
    `A = V diag(L) V^-1`; complex (complex64 for float32, complex128 for float64) even
    for a real A. The gradient is PyTorch's: defined for distinct eigenvalues and a loss
    that does not depend on the eigenvectors' phases."""
    return EigResult(*_eig(A))


@composite(complex=True, variants="out", cost=_matrix_cost(25.0))
def linalg_eigvals(A: Tensor, *, out: Any = None) -> Tensor:
    """`linalg.eigvals`: the eigenvalues of a square matrix, complex even for a real A."""
    return _eig(A, "linalg.eigvals")[0]


# -- built on the SVD: pinv, rank, least squares ------------------------------


def _tolerance(op: str, S: Tensor, shape: tuple, atol: Any, rtol: Any) -> Tensor | float:
    """PyTorch's threshold for "zero" singular values: max(atol, rtol * largest), rtol's
    default eps * max(m, n) unless only atol is given (then 0)."""
    if rtol is None:
        given_atol = atol is not None and (not isinstance(atol, (int, float)) or atol > 0)
        eps = 2.0 ** -52 if S.dtype is dt.float64 else 2.0 ** -23
        rtol = 0.0 if given_atol else eps * max(shape[-2], shape[-1])
    atol = 0.0 if atol is None else atol
    largest = S.amax(-1, keepdim=True) if S.shape[-1] else zeros(1, dtype=S.dtype,
                                                                  device=S.device)
    tol = largest * rtol
    if isinstance(atol, Tensor):
        return tol.maximum(atol.unsqueeze(-1))
    return tol.clamp(min=atol)


@composite(complex=True, variants="", cost=_matrix_cost(12.0), node_label="LinalgPinvBackward0")
def linalg_pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,
                out: Any = None) -> Tensor:
    """`linalg.pinv`: the Moore-Penrose pseudo-inverse, through the SVD (the
    eigendecomposition with `hermitian`); singular values at or below
    `max(atol, rtol * largest)` count as zero."""
    _check("linalg.pinv", A, square=hermitian)
    if hermitian:
        L, V = _eigh(A, "L")
        tol = _tolerance("linalg.pinv", L.abs(), tuple(A.shape), atol, rtol)
        Linv = where(L.abs() > tol, 1 / where(L == 0, 1.0, L), 0.0)
        result = (V * Linv.unsqueeze(-2)) @ V.mH
    else:
        U, S, Vh = _svd(A, False)
        tol = _tolerance("linalg.pinv", S, tuple(A.shape), atol, rtol)
        Sinv = where(S > tol, 1 / where(S == 0, 1.0, S), 0.0)
        result = (Vh.mH * Sinv.unsqueeze(-2)) @ U.mH
    return result if out is None else _write("linalg.pinv", out, result)


@composite(complex=True, variants="function method", cost=_matrix_cost(12.0),
           cpu_precision=P.FLOAT32)
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """The pseudo-inverse (`linalg.pinv` with `rtol=rcond`)."""
    return linalg_pinv(input, rtol=rcond)


@composite(complex=True, variants="", cost=_matrix_cost(12.0), cpu_precision=P.FLOAT32)
def linalg_matrix_rank(A: Tensor, *, atol: Any = None, rtol: Any = None,
                       hermitian: bool = False, out: Any = None) -> Tensor:
    """`linalg.matrix_rank`: the number of singular values above `max(atol, rtol *
    largest)` (int64)."""
    _check("linalg.matrix_rank", A, square=hermitian)
    S = _eigh(A, "L")[0].abs() if hermitian else _svd(A, False)[1]
    tol = _tolerance("linalg.matrix_rank", S, tuple(A.shape), atol, rtol)
    result = (S > tol).sum(-1)
    return result if out is None else _write("linalg.matrix_rank", out, result)


LstsqResult = return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _check_lstsq(A: Tensor, B: Tensor, driver: str | None) -> bool:
    """PyTorch's checks of `linalg.lstsq(A, B)`, in its order (and its words); whether `B`
    is a (batch of) vector(s): 1-D, or shaped as `A` without its last dimension."""
    op = "torch.linalg.lstsq"
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError(f"{op}: other must have at least 1 dimension.")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {_word(A.dtype)} and other's dtype "
                           f"{_word(B.dtype)}")
    dim_diff = A.ndim - B.ndim
    if not 0 <= dim_diff <= 1:
        raise RuntimeError(f"{op}: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = B.ndim == 1 or (dim_diff == 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rows = B.shape[-1] if vector else B.shape[-2]
    if rows != A.shape[-2]:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size("
                           f"{-1 if vector else -2})")
    if driver not in (None, "gelsy", "gelsd", "gelss", "gels"):
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           "gelss)")
    # (a matrix B one dimension short: PyTorch broadcasts A's batch against B's leading
    # dimensions, its rows included, and so refuses it unless those broadcast)
    broadcast_shapes(op, tuple(A.shape[:-2]),
                     tuple(B.shape[:-1]) if dim_diff and not vector else tuple(B.shape[:-2]))
    if not (A.dtype.is_complex or A.dtype in (dt.float32, dt.float64)):
        raise RuntimeError("This function doesn't handle types other than float and double")
    return vector


def _lstsq_layout(X: Tensor, m: int) -> Tensor:
    """X (.., n, k) as PyTorch's lstsq returns it: the first n rows of the column-major
    (.., max(m, n), k) right-hand side LAPACK overwrote with the solution."""
    n = X.shape[-2]
    if m <= n:
        return _relaid(X)
    padded = cat([X, X.new_zeros(tuple(X.shape[:-2]) + (m - n, X.shape[-1]))], -2)
    return _relaid(padded)[..., :n, :]


@composite(complex=True, variants="", cost=_matrix_cost(12.0), cpu_precision=P.FLOAT32,
           node_label="LinalgLstsqBackward0")
def linalg_lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *,
                 driver: str | None = None) -> Any:
    """`linalg.lstsq`: the X minimizing `||A @ X - B||` (through the pseudo-inverse), with
    what PyTorch's CPU driver "gelsy" returns besides: the residuals (empty), the rank and
    the singular values (empty)."""
    vector = _check_lstsq(A, B, driver)
    Bm = B.unsqueeze(-1) if vector else B
    rtol = rcond if rcond is not None and rcond > 0 else None
    X = _lstsq_layout(linalg_pinv(A, rtol=rtol) @ Bm, A.shape[-2])
    if vector:
        X = X.squeeze(-1)
    empty = zeros(0, dtype=A.dtype.to_real(), device=A.device)  # (real, for complex A)
    rank = linalg_matrix_rank(A, rtol=rtol) if driver != "gels" else \
        zeros(0, dtype=dt.int64, device=A.device)
    sv = empty if driver in (None, "gelsy", "gels") else _svd(A, False)[1]
    residuals = empty
    m, n = A.shape[-2:]
    # the drivers other than gelsy return the squared residuals of full-rank tall problems
    if driver not in (None, "gelsy") and m > n and (
            driver == "gels" or bool((rank == n).all())):
        Xm = X.unsqueeze(-1) if vector else X
        residuals = ((A @ Xm - Bm).abs() ** 2).sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    return LstsqResult(X, residuals, rank, sv)


# -- LU ------------------------------------------------------------------------------------


def _lu_rule(A):
    _check("linalg.lu_factor", A, square=False)
    m, n = A.shape[-2:]
    return OutMeta(tuple(A.shape[:-2]) + (m * n + min(m, n) + 1,), A.dtype, None)


def _lu_grad(grad, result, A_shape):
    """PyTorch's linalg_lu_backward: the gradient of the compact LU (its strictly lower
    part L's, the rest U's) back to A = P L U, for square, wide and tall A."""
    m, n = A_shape[-2], A_shape[-1]
    k = min(m, n)
    gLU, _, _ = _split(grad, (m, n), (k,), ())
    LU, pivots, _ = _split(result, (m, n), (k,), ())
    P, L, U = lu_unpack(LU.detach(), pivots.detach().to(dt.int32))
    gL, gU = gLU[..., :, :k].tril(-1), gLU[..., :k, :].triu()
    if m == n:
        gA = (L.mT @ gL).tril(-1) + (gU @ U.mT).triu()
        gA = linalg_solve_triangular(U.mT, gA, upper=False, left=False)
        gA = linalg_solve_triangular(L.mT, gA, upper=True, unitriangular=True)
    elif m < n:  # wide: U = [U1 | U2]
        gA = (L.mT @ gL - gU @ U.mT).tril(-1)
        gA = linalg_solve_triangular(U[..., :k].mT, gA, upper=False, left=False)
        gA = cat([gA + gU[..., :k].triu(), gU[..., k:]], -1)
        gA = linalg_solve_triangular(L.mT, gA, upper=True, unitriangular=True)
    else:  # tall: L = [L1; L2]
        gA = (gU @ U.mT - L.mT @ gL).triu()
        gA = linalg_solve_triangular(L[..., :k, :].mT, gA, upper=True, unitriangular=True)
        gA = cat([gA + gL[..., :k, :].tril(-1), gL[..., k:, :]], -2)
        gA = linalg_solve_triangular(U.mT, gA, upper=False, left=False)
    return P @ gA


@primitive(variants="", rule=_lu_rule, cost=_matrix_cost(2 / 3), grad=Grad(A=_lu_grad))
def _linalg_lu_factor_ex(A: Tensor) -> Tensor:
    """LU (partial pivoting), the 1-based pivots and LAPACK's info, packed."""
    return apply_labelled(OPS["_linalg_lu_factor_ex"], "LinalgLuFactorExBackward0", A)


LUFactorResult = return_type("linalg_lu_factor", ["LU", "pivots"])
LUFactorExResult = return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])


def _lu_factor(op: str, A: Tensor, pivot: bool) -> tuple[Tensor, Tensor, Tensor]:
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")
    _check(op, A, square=False)
    m, n = A.shape[-2:]
    LU, pivots, info = _split(_linalg_lu_factor_ex(A), (m, n), (min(m, n),), (),
                              lapack=True)
    return LU, pivots.to(dt.int32), info.to(dt.int32)


_LU_SINGULAR = ("U[{info},{info}] is zero and using it on lu_solve would result in a "
                "division by zero. If you still want to perform the factorization, consider "
                "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


@composite(variants="out", cost=_matrix_cost(2 / 3))
def linalg_lu_factor(A: Tensor, *, pivot: bool = True, out: Any = None) -> Any:
    """`linalg.lu_factor`: the LU factorization with partial pivoting in LAPACK's compact
    form: L (unit diagonal, below it) and U in one matrix, and the 1-based pivots (int32).
    Raises LinAlgError for a singular matrix."""
    LU, pivots, info = _lu_factor("linalg.lu_factor", A, pivot)
    _raise_info("torch.linalg.lu_factor", info, _LU_SINGULAR, RuntimeError)
    return LUFactorResult(LU, pivots)


@composite(variants="out", cost=_matrix_cost(2 / 3))
def linalg_lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False,
                        out: Any = None) -> Any:
    """`linalg.lu_factor_ex`: `linalg.lu_factor` and LAPACK's info (the first zero
    pivot, 1-based) without raising."""
    LU, pivots, info = _lu_factor("linalg.lu_factor_ex", A, pivot)
    if check_errors:
        _raise_info("torch.linalg.lu_factor_ex", info, _LU_SINGULAR, RuntimeError)
    return LUFactorExResult(LU, pivots, info)


def _permutation(pivots: Tensor, m: int) -> Tensor:
    """The row order (int64, batch..., m) that LAPACK's 1-based row swaps make."""
    batch = tuple(pivots.shape[:-1])
    rows = []
    for swaps in pivots.reshape(-1, pivots.shape[-1]).tolist() if pivots.numel() else \
            [[]] * math.prod(batch):
        perm = list(range(m))
        for i, p in enumerate(swaps):
            perm[i], perm[p - 1] = perm[p - 1], perm[i]
        rows.append(perm)
    return tensor(rows, dtype=dt.int64, device=pivots.device).reshape(batch + (m,))


@composite(variants="function method out", cost=_matrix_cost(2 / 3), cpu_precision=P.FLOAT32)
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out: Any = None) -> Any:
    """The LU factorization in compact form, `(A_LU, pivots)` (with `get_infos`, also the
    int32 infos; singular matrices then do not raise). Deprecated in PyTorch for
    `linalg.lu_factor`."""
    deprecated("lu", "torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be removed "
               "in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould "
               "be replaced with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand"
               "\nLU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\nshould be "
               "replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)")
    LU, pivots, info = _lu_factor("lu", A, pivot)
    # (a singular matrix does not raise: PyTorch's check covers illegal arguments only)
    return (LU, pivots, info) if get_infos else (LU, pivots)


LUUnpackResult = return_type("lu_unpack", ["P", "L", "U"])


@composite(variants="function", cost=costs.movement)
def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True) -> Any:
    """The permutation P, unit lower-triangular L and upper-triangular U (`A = P @ L @ U`)
    out of `lu_factor`'s compact form; empty tensors for what is not unpacked."""
    if LU_pivots.dtype is not dt.int32:
        raise RuntimeError("lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype. Note: this function is intended to be used "
                           "with the output produced by torch.linalg.lu_factor")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    empty = zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    L = U = P = empty
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + eye(m, k, dtype=LU_data.dtype,
                                               device=LU_data.device)
        U = LU_data[..., :k, :].triu()
    if unpack_pivots:
        perm = _permutation(LU_pivots, m)
        # P[perm[i], i] = 1: row i of P^T A is row perm[i] of A
        P = (perm.unsqueeze(-2) == arange(m, device=LU_data.device).unsqueeze(-1)).to(
            LU_data.dtype)
    return LUUnpackResult(P, L, U)


LUResult = return_type("linalg_lu", ["P", "L", "U"])


@composite(variants="out", cost=_matrix_cost(2 / 3), node_label="LinalgLuBackward0")
def linalg_lu(A: Tensor, *, pivot: bool = True, out: Any = None) -> Any:
    """`linalg.lu`: `A = P @ L @ U` with partial pivoting, as a named triple."""
    LU, pivots, _ = _lu_factor("linalg.lu", A, pivot)
    return LUResult(*lu_unpack(LU, pivots))


@composite(variants="", cost=_matrix_cost(2.0), node_label="LinalgLuSolveBackward0")
def linalg_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
                    adjoint: bool = False, out: Any = None) -> Tensor:
    """`linalg.lu_solve`: the solution X of `A @ X = B` given `lu_factor(A)` (`A^T @ X = B`
    with `adjoint`, `X @ A = B` with `left=False`)."""
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return linalg_lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT
    n = LU.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    P, L, U = lu_unpack(LU, pivots)
    if adjoint:  # A^T = U^T L^T P^T
        Y = linalg_solve_triangular(U.mT, B, upper=False)
        Y = linalg_solve_triangular(L.mT, Y, upper=True, unitriangular=True)
        X = _permute_rows(Y, P.argmax(-1))  # P @ Y
    else:
        Y = linalg_solve_triangular(L, _permute_rows(B, P.argmax(-2)), upper=False,
                                    unitriangular=True)  # P^T @ B
        X = linalg_solve_triangular(U, Y, upper=True)
    X = _lapack_layout(X)
    return X if out is None else _write("linalg.lu_solve", out, X)


def _permute_rows(B: Tensor, rows: Tensor) -> Tensor:
    """B's rows in the order `rows` (.., n) gives: a permutation matrix's product taken as
    LAPACK's row swaps take it (a product would spread an inf in B as 0 * inf = NaN)."""
    batch = broadcast_shapes("linalg.lu_solve", tuple(rows.shape[:-1]), tuple(B.shape[:-2]))
    index = rows.unsqueeze(-1).expand(batch + (B.shape[-2], B.shape[-1]))
    return B.expand(batch + tuple(B.shape[-2:])).gather(-2, index)


@composite(variants="function method", cost=_matrix_cost(2.0),
           node_label="LinalgLuSolveBackward0")
def lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """The solution of `A @ X = input` given A's LU factorization (deprecated in PyTorch
    for `linalg.lu_solve`)."""
    deprecated("lu_solve", "torch.linalg.lu_solveand will be removed in a future PyTorch "
               "release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
               "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = "
               "torch.linalg.lu_solve(LU, pivots, B)")
    return linalg_lu_solve(LU_data, LU_pivots, input)


# -- LDL (symmetric indefinite) -----------------------------------------------------------


def _ldl_check(op: str, A: Any) -> None:
    if A.dtype in (dt.float16, dt.bfloat16):  # (before _check's LAPACK-precision error)
        raise kernel_refuses("ldl_factor_kernel_cpu", A.dtype)
    _check(op, A)


def _ldl_factor_rule(A, *, hermitian):
    n = A.shape[-1]
    return OutMeta(tuple(A.shape[:-2]) + (n * n + n + 1,), A.dtype, None)


# (PyTorch differentiates neither the factor nor the solve: no gradient is declared)
@primitive(complex=True, variants="", rule=_ldl_factor_rule, cost=_matrix_cost(1 / 3))
def _linalg_ldl_factor_ex(A: Tensor, *, hermitian: bool = False) -> Tensor:
    """LAPACK sytrf/hetrf (lower): the compact LD, the signed 1-based pivots and info,
    packed."""
    return apply_labelled(OPS["_linalg_ldl_factor_ex"], "", A, hermitian=hermitian)


LDLFactorResult = return_type("linalg_ldl_factor", ["LD", "pivots"])
LDLFactorExResult = return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def _ldl_factor(op: str, A: Tensor, hermitian: bool) -> tuple[Tensor, Tensor, Tensor]:
    _ldl_check(op, A)
    n = A.shape[-1]
    LD, pivots, info = _split(_linalg_ldl_factor_ex(A, hermitian=hermitian), (n, n), (n,), (),
                              lapack=True)
    return LD, _info(pivots), _info(info)


def _ldl_raise(info: Tensor) -> None:
    # PyTorch's error check knows no positive info of sytrf (a zero block of D): its
    # internal assert fires, a RuntimeError
    if info.numel() and bool((info != 0).any()):
        first = next(v for v in info.reshape(-1).tolist() if v != 0)
        raise RuntimeError(f"torch.linalg.ldl_factor: Unknown error code: {first}.")


@composite(complex=True, variants="", cost=_matrix_cost(1 / 3))
def linalg_ldl_factor(A: Tensor, *, hermitian: bool = False, out: Any = None) -> Any:
    """`linalg.ldl_factor`: the LDL factorization of a symmetric (Hermitian, with
    `hermitian=True`) matrix with Bunch-Kaufman pivoting, in LAPACK's compact form (LD)
    and its signed 1-based pivots (int32); only A's lower triangle is read."""
    LD, pivots, info = _ldl_factor("torch.linalg.ldl_factor_ex", A, hermitian)
    _ldl_raise(info)
    if out is not None:
        _write("linalg.ldl_factor", out[0], LD)
        _write("linalg.ldl_factor", out[1], pivots)
        return LDLFactorResult(out[0], out[1])
    return LDLFactorResult(LD, pivots)


@composite(complex=True, variants="", cost=_matrix_cost(1 / 3))
def linalg_ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False,
                         out: Any = None) -> Any:
    """`linalg.ldl_factor_ex`: `linalg.ldl_factor` and LAPACK's info (the first zero
    diagonal block of D, 1-based) without raising unless `check_errors`."""
    LD, pivots, info = _ldl_factor("torch.linalg.ldl_factor_ex", A, hermitian)
    if check_errors:
        _ldl_raise(info)
    if out is not None:
        for target, value in zip(out, (LD, pivots, info)):
            _write("linalg.ldl_factor_ex", target, value)
        return LDLFactorExResult(*out)
    return LDLFactorExResult(LD, pivots, info)


def _ldl_solve_rule(LD, pivots, B, *, hermitian):
    return OutMeta(tuple(B.shape), B.dtype, None)


@primitive(complex=True, variants="", rule=_ldl_solve_rule, cost=_matrix_cost(2.0))
def _linalg_ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *,
                      hermitian: bool = False) -> Tensor:
    """LAPACK sytrs/hetrs (lower) on operands of one batch shape."""
    return apply_labelled(OPS["_linalg_ldl_solve"], "", LD, pivots, B, hermitian=hermitian)


@composite(complex=True, variants="", cost=_matrix_cost(2.0))
def linalg_ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False,
                     out: Any = None) -> Tensor:
    """`linalg.ldl_solve`: the solution X of `A @ X = B` given `linalg.ldl_factor(A)`'s
    LD and pivots (batch dimensions broadcast)."""
    op = "torch.linalg.ldl_solve"
    if LD.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if B.ndim < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but "
                         "got -2)")
    if pivots.dtype.is_floating_point or pivots.dtype.is_complex or pivots.dtype is dt.bool_:
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got {_word(pivots.dtype)}")
    if tuple(LD.shape[:-1]) != tuple(pivots.shape):
        raise RuntimeError(f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, "
                           f"but got pivots with shape {list(pivots.shape)} instead")
    n = LD.shape[-1]
    if LD.shape[-2] != n:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{LD.shape[-2]} by {n} matrices")
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is {n} by {n} "
                           f"but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_word(B.dtype)} and A of type {_word(LD.dtype)} instead.")
    batch = broadcast_shapes(op, tuple(LD.shape[:-2]), tuple(B.shape[:-2]))
    X = _linalg_ldl_solve(LD.expand(batch + (n, n)), pivots.expand(batch + (n,)),
                          B.expand(batch + tuple(B.shape[-2:])), hermitian=hermitian)
    X = _lapack_layout(X)
    return X if out is None else _write("linalg.ldl_solve", out, X)


# -- powers and exponentials -----------------------------------------------------------


@composite(complex=True, variants="function method", cost=_matrix_cost(2.0),
           cpu_precision=P.LOWER)
def matrix_power(input: Tensor, n: int) -> Tensor:
    """The matrix raised to the integer power `n` (by repeated squaring; a negative power
    is one of the inverse, 0 the identity)."""
    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {input.shape[-2] if input.ndim > 1 else 1} by "
                           f"{input.shape[-1] if input.ndim else 1} matrices")
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    if n == 0:
        return _eye_like(input.shape[-1], input).expand(tuple(input.shape)).clone()
    base = linalg_inv(input) if n < 0 else input
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


@composite(complex=True, variants="function method", cost=_matrix_cost(40.0),
           node_label="LinalgMatrixExpBackward0")
def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential `sum_k A^k / k!`, by scaling and squaring: a Taylor
    polynomial of `A / 2^s` (with `||A / 2^s||_1 <= 1/2`), squared `s` times."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices, but they "
                           f"are {A.shape[-2] if A.ndim > 1 else 1} by "
                           f"{A.shape[-1] if A.ndim else 1} matrices")
    if not A.dtype._differentiable:
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {_word(A.dtype)}")
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    # each matrix's own scaling by its 1-norm, as PyTorch's: a batch-wide one would let a
    # large (or non-finite) matrix cost the others their accuracy
    norms = A.detach().abs().sum(-2).amax(-1).reshape(-1).tolist()
    steps = [max(0, math.ceil(math.log2(v / 0.5))) if math.isfinite(v) and v > 0.5 else 0
             for v in norms]
    batch = tuple(A.shape[:-2]) + (1, 1)

    def scale(exponents: list[int]) -> Tensor:
        return tensor([2.0 ** -e for e in exponents], dtype=A.dtype,
                      device=A.device).reshape(batch)
    # (2^-s in two factors: one would underflow in float32 for the largest norms)
    X = A * scale([e // 2 for e in steps]) * scale([e - e // 2 for e in steps]) \
        if any(steps) else A
    one = _eye_like(n, A)
    degree = 18 if A.dtype is dt.float64 else 10  # truncation below the dtype's epsilon
    E = one + X / degree
    for k in range(degree - 1, 0, -1):
        E = one + (X @ E) / k
    remaining = tensor(steps, device=A.device).reshape(batch)
    for step in range(max(steps)):
        E = where(remaining > step, E @ E, E)
    return E


# -- tensors as operators ---------------------------------------------------------------


@composite(variants="", cost=_matrix_cost(2.0))
def linalg_tensorinv(A: Tensor, ind: int = 2, *, out: Any = None) -> Tensor:
    """`linalg.tensorinv`: the tensor X with `tensordot(X, A, ind)` the identity: A as a
    matrix (its first `ind` dimensions the rows), inverted, reshaped."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if math.prod(rows) != math.prod(cols):
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                           f"{math.prod(cols)} != {math.prod(rows)}")
    # (its error names `inv`, PyTorch's inner call)
    result = _checked_inverse("inv", A.reshape(math.prod(rows), math.prod(cols)))
    result = result.reshape(cols + rows)
    return result if out is None else _write("linalg.tensorinv", out, result)


@composite(variants="", cost=_matrix_cost(2 / 3), cpu_precision=P.FLOAT32)
def linalg_tensorsolve(A: Tensor, B: Tensor, dims: Any = None, *, out: Any = None) -> Tensor:
    """`linalg.tensorsolve`: the X with `tensordot(A, X, X.ndim) == B` (the dimensions
    `dims` of A moved to the end first)."""
    if dims is not None:
        dims = [normalize_dim("linalg.tensorsolve", d, A.ndim) for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    rest = tuple(A.shape[B.ndim:])
    if math.prod(A.shape[:B.ndim]) != math.prod(rest) or tuple(A.shape[:B.ndim]) != \
            tuple(B.shape):
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                           f"but got {math.prod(rest)} != {math.prod(A.shape[:B.ndim])}")
    result = linalg_solve(A.reshape(B.numel(), math.prod(rest)),
                          B.reshape(B.numel())).reshape(rest)
    return result if out is None else _write("linalg.tensorsolve", out, result)


@composite(variants="", cost=costs.movement)
def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """`linalg.diagonal`: the diagonal (`offset` above the main one, below when negative)
    of the matrices in dimensions `dim1`, `dim2`, as the last dimension."""
    d1 = normalize_dim("linalg.diagonal", dim1, A.ndim)
    d2 = normalize_dim("linalg.diagonal", dim2, A.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    x = A.movedim((d1, d2), (-2, -1))
    rows, cols = x.shape[-2], x.shape[-1]
    size = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    i = arange(size, device=A.device)
    return x[..., i - min(offset, 0), i + max(offset, 0)]


@composite(variants="function", cost=costs.pointwise(1))
def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of the 1-D `x`: columns `x ** (N-1)` .. `x ** 0` (reversed
    with `increasing`), as PyTorch builds it (a cumulative product, in `x`'s dtype
    promoted with int64)."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    out_dtype = dt.promote_types(x.dtype, dt.int64)
    if n == 0:
        return zeros((x.shape[0], 0), dtype=out_dtype, device=x.device)
    columns = [x.new_ones((x.shape[0], 1), dtype=out_dtype)]
    if n > 1:
        columns.append(x.to(out_dtype).unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1))
    result = cat(columns, 1)
    return result if increasing else result.flip(1)


@composite(variants="", cost=costs.pointwise(1))
def linalg_vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """`linalg.vander`: the Vandermonde matrix of powers 0 .. N-1 of `x` (last dimension),
    increasing."""
    if x.ndim == 0:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = arange(n, device=x.device)
    if x.dtype is dt.bool_:
        x = x.to(dt.int64)
    return x.unsqueeze(-1) ** powers.to(x.dtype)
