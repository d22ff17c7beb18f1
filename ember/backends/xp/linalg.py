"""Matrix products (matmul, einsum, the fused linear layer with its backward) and the
matrix factorizations (inverse, solve, det, slogdet, Cholesky, QR, SVD, eigh, LU)."""

from __future__ import annotations

import math

from ember.backends.xp.lib import ArrayLib, Kernel
from ember.core.backend import LinAlgError, logical_to_physical_perm

TRSM_BLOCK = 64
"""Rows a triangular solve substitutes one by one before a matrix product updates the
rest (the loop is Python's; the product is BLAS's)."""


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, as_array, low_precision, quiet = lib.xp, lib.as_array, lib.low_precision, lib.quiet
    product = lib.matmul

    def matmul(a, b):
        return as_array(product(a, b)).astype(a.dtype, copy=False)

    def einsum(*xs, equation):
        if xs[0].dtype in low_precision:  # PyTorch's: products in float32, rounded once
            wide = [x.astype(xp.float32) for x in xs]
            return einsum(*wide, equation=equation).astype(xs[0].dtype)
        out = as_array(xp.einsum(equation, *xs, optimize=len(xs) > 1))
        order = _einsum_layout(equation, [x.shape for x in xs]) if out.ndim > 1 else None
        if order is None:
            return out
        inverse = [0] * len(order)
        for i, d in enumerate(order):
            inverse[d] = i
        return xp.ascontiguousarray(out.transpose(order)).transpose(inverse)

    def linear(x, w, b=None):
        """x @ w.T + b in one call (the transpose is a BLAS flag, not a copy). Half
        floats accumulate in float32 and the bias is added before the one rounding, as
        PyTorch's addmm does (rounding the product first differs by an ulp)."""
        if x.dtype in low_precision:
            out = as_array(product(x.astype(xp.float32), w.T.astype(xp.float32)))
            if b is not None:
                out += b.astype(xp.float32)
            return out.astype(x.dtype)
        out = as_array(product(x, w.T))
        if out.dtype != x.dtype:
            out = out.astype(x.dtype)
        if b is not None:
            out += b
        return out

    def linear_backward(x, w, g, needs=(True, True, True)):
        """Gradients of linear: (g @ w, g2.T @ x2, g2.sum(0)) with leading dims
        flattened (their count given: -1 is ambiguous for a zero-size feature dim)."""
        last = g.shape[-1]
        g2 = g.reshape(-1, last) if last else g.reshape(math.prod(g.shape[:-1]), 0)
        gx = product(g, w) if needs[0] else None
        gw = product(g2.T, x.reshape(g2.shape[0], x.shape[-1])) if needs[1] else None
        gb = g2.sum(0, dtype=xp.float32 if g.dtype in low_precision else None).astype(
            g.dtype, copy=False) if len(needs) > 2 and needs[2] else None
        return gx, gw, gb

    table = {"matmul": matmul, "einsum": einsum, "linear": linear,
             "linear_backward": linear_backward}

    # -- factorizations (LAPACK through xp.linalg): each returns its outputs flattened
    # and concatenated along one last axis, the layout core's unpacking expects (a
    # primitive has one output; ember/core/ops/factorizations.py splits it back)

    linalg = xp.linalg
    lapack_error = getattr(linalg, "LinAlgError", ArithmeticError)

    def pack(*parts, batch):
        flat = [as_array(p) for p in parts]
        flat = [p.reshape(batch + (math.prod(p.shape[len(batch):]),)) for p in flat]
        dtype = flat[0].dtype
        if any(f.dtype.kind == "c" for f in flat):  # (eigh's real eigenvalues, complex vectors)
            dtype = xp.result_type(*[f.dtype for f in flat if f.dtype.kind in "fc"])
        return xp.concatenate([f.astype(dtype, copy=False) for f in flat], axis=-1)

    def lu_in_place(lu):
        """Partial-pivoting LU of a (b, m, n) array, in place (LAPACK's getrf semantics:
        the first largest |pivot|, a zero pivot leaves its column unscaled); returns the
        1-based pivots (b, k) and the 1-based index of the first zero pivot (0: none)."""
        b, m, n = lu.shape
        k = min(m, n)
        rows = xp.arange(b)
        pivots = xp.zeros((b, k), dtype=xp.int64)
        info = xp.zeros(b, dtype=xp.int64)
        with quiet():
            for j in range(k):
                p = idamax(lu[:, j:, j]) + j
                pivots[:, j] = p + 1
                top = lu[rows, j].copy()
                lu[rows, j] = lu[rows, p]
                lu[rows, p] = top
                d = lu[:, j, j]
                zero = d == 0
                info = xp.where((info == 0) & zero, j + 1, info)
                scale = xp.where(zero, 1, d)[:, None]
                # divided by the pivot, as PyTorch's LAPACK (MKL) does it: reference getf2's
                # reciprocal rounds differently, and an exactly singular float32 matrix
                # (0.1, 0.2; 0.3, 0.6) would then keep a round-off pivot
                lu[:, j + 1:, j] /= scale
                lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j:j + 1] * lu[:, j:j + 1, j + 1:]
        return pivots, info

    def idamax(columns):
        """BLAS's i?amax of each row of `columns` (b, m): the first index of the largest
        |value|, where a NaN is never larger (NumPy's argmax takes the first NaN) and a
        NaN first value wins (nothing compares larger than it)."""
        size = xp.abs(columns)
        nan = xp.isnan(size)
        size = xp.where(nan, -1, size)
        size[:, :1] = xp.where(nan[:, :1], xp.inf, size[:, :1])
        return xp.argmax(size, axis=1)

    def solve_triangular(a, b, *, upper, unitriangular):
        """X with A @ X = B for a (batch of) triangular A, reading its upper or lower
        triangle (ones taken for its diagonal if `unitriangular`): BLAS trsm's column
        substitution, dividing by each pivot and never skipping a zero, so that inf and
        NaN spread as in PyTorch's (an LU of the whole matrix spreads them further).
        Blocks of rows past the diagonal block are updated by one matrix product."""
        n = a.shape[-1]
        if n > TRSM_BLOCK:
            fast = blas_triangular_solve(a, b, upper, unitriangular)
            if fast is not None:
                return fast
        x = xp.array(b, dtype=a.dtype, copy=True)
        starts = list(range(0, n, TRSM_BLOCK))
        with quiet():
            for start in (reversed(starts) if upper else starts):
                stop = min(start + TRSM_BLOCK, n)
                for k in (range(stop - 1, start - 1, -1) if upper else range(start, stop)):
                    if not unitriangular:
                        x[..., k, :] /= a[..., k, k, None]
                    rest = slice(start, k) if upper else slice(k + 1, stop)
                    x[..., rest, :] -= a[..., rest, k, None] * x[..., k, None, :]
                beyond = slice(0, start) if upper else slice(stop, n)
                if n > stop - start:
                    x[..., beyond, :] -= as_array(product(a[..., beyond, start:stop],
                                                          x[..., start:stop, :]))
        return x

    def far_from_overflow(a, x):
        """Whether A's LU and a substitution with X's values (both finite) cannot
        overflow however their sums are ordered: n * max|A| * max|X| with a margin of
        2^10 for the growth of partial pivoting stays finite."""
        if a.size == 0 or x.size == 0:
            return True
        with quiet():
            largest = xp.abs(a).max() * xp.abs(x).max() * a.shape[-1] * 1024
        return bool(xp.isfinite(largest)) and bool(largest < xp.finfo(a.dtype).max)

    def blas_triangular_solve(a, b, upper, unitriangular):
        """A large triangular solve through the array module's LAPACK, where no inf or
        NaN can arise (finite operands far from overflow, no zero or subnormal pivot), so
        only round-off differs from the substitution; None elsewhere. A lower triangle is
        solved reversed (an upper one, which getrf leaves unpivoted)."""
        t = xp.triu(a) if upper else xp.tril(a)
        n = a.shape[-1]
        if unitriangular:
            t = xp.where(xp.eye(n, dtype=bool), xp.ones((), dtype=a.dtype), t)
        pivots = xp.abs(xp.diagonal(t, axis1=-2, axis2=-1))
        if not (far_from_overflow(t, b) and bool((pivots >= xp.finfo(a.dtype).tiny).all())):
            return None
        if not upper:
            t, b = t[..., ::-1, ::-1], b[..., ::-1, :]
        try:
            x = as_array(linalg.solve(t, b))
        except lapack_error:
            return None
        if not far_from_overflow(t, x):
            return None
        return x if upper else xp.ascontiguousarray(x[..., ::-1, :])

    def lu_solve(lu, pivots, b):
        """X with A @ X = B from the LU factorization of each A of a (b, n, n) batch
        (LAPACK's getrs): B's rows swapped as the 1-based `pivots` say, then the two
        triangular solves."""
        x = b.copy()
        rows = xp.arange(x.shape[0])
        for j in range(pivots.shape[-1]):
            p = pivots[:, j] - 1
            top = x[rows, j].copy()
            x[rows, j] = x[rows, p]
            x[rows, p] = top
        x = solve_triangular(lu, x, upper=False, unitriangular=True)
        return solve_triangular(lu, x, upper=True, unitriangular=False)

    def inv_ex(a):
        """PyTorch's: the solution of A X = I (`solve_ex`'s getrf and getrs where inf,
        NaN or overflow is about)."""
        eye = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
        return solve_ex(a, eye)

    def solve_ex(a, b):
        """LAPACK's gesv (getrf, then getrs). The array module's is fast; where it meets
        a non-finite value, a singular matrix or values whose products may overflow,
        getrf and getrs are done here, as PyTorch's LAPACK does them, so NaN and inf
        spread to the same rows."""
        batch = a.shape[:-2]
        x = None
        if far_from_overflow(a, b):
            try:
                x = as_array(linalg.solve(a, b))
                if not far_from_overflow(a, x):
                    x = None
                elif not near_singular(a, b, x):
                    return pack(x, xp.zeros(batch, dtype=xp.int64), batch=batch)
            except lapack_error:
                x = None
        lu = a.reshape((math.prod(batch),) + a.shape[-2:]).copy()
        pivots, info = lu_in_place(lu)
        if x is not None and not bool(info.any()):
            # a nonsingular (if ill-conditioned) matrix: the array module's solution
            return pack(x, xp.zeros(batch, dtype=xp.int64), batch=batch)
        x = lu_solve(lu, pivots, b.reshape((math.prod(batch),) + b.shape[-2:]))
        return pack(x.reshape(b.shape), info.reshape(batch), batch=batch)

    def near_singular(a, b, x):
        """Whether a solution's size says A may be singular in PyTorch's arithmetic:
        max|A| max|X| / max|B| beyond 1/eps (a lower bound of A's condition number). The
        array module's LAPACK may fuse multiply-adds (an exact zero pivot of PyTorch's
        getrf then leaves round-off), so such a matrix is factored again here."""
        if a.size == 0 or b.size == 0:
            return False
        with quiet():
            bound = xp.abs(a).max() * xp.abs(x).max() * xp.finfo(a.dtype).eps
            return bool(bound > xp.abs(b).max())

    def lu_of_transpose(a):
        """The diagonal of U and the parity of the row swaps (-1 odd, 1 even) of the LU
        of each A^T of a (.., n, n) batch, as getrf computes it in PyTorch: its LAPACK
        reads a row-major A as the column-major A^T (det(A^T) = det(A)), and around inf
        and NaN those pivots differ from A's."""
        batch, n = a.shape[:-2], a.shape[-1]
        lu = xp.swapaxes(a, -1, -2).reshape((math.prod(batch), n, n)).copy()
        pivots, _ = lu_in_place(lu)
        swaps = (pivots != xp.arange(1, n + 1)).sum(axis=-1)
        parity = xp.where(swaps % 2 == 1, -1, 1).astype(a.dtype)
        diagonal = xp.diagonal(lu, axis1=-2, axis2=-1)
        return diagonal.reshape(batch + (n,)), parity.reshape(batch)

    def det(a):
        """The array module's, of A^T as PyTorch's (a singular A's round-off then cancels
        as there); where it meets a non-finite value, from getrf's LU as in PyTorch (see
        `lu_of_transpose`)."""
        if bool(xp.isfinite(a).all()):
            out = as_array(linalg.det(xp.swapaxes(a, -1, -2)))
            if bool(xp.isfinite(out).all()):
                return out
        diagonal, parity = lu_of_transpose(a)
        with quiet():
            return as_array(diagonal.prod(axis=-1) * parity)

    def slogdet(a):
        """The array module's; where it meets a non-finite value, from getrf's LU as in
        PyTorch (see `lu_of_transpose`): the product of the signs of U's diagonal and of
        the row swaps, the sum of the logs of its absolute values."""
        batch = a.shape[:-2]
        if bool(xp.isfinite(a).all()):
            sign, logabsdet = converged("linalg.slogdet", linalg.slogdet,
                                        xp.swapaxes(a, -1, -2))
            if bool(xp.isfinite(logabsdet).all()):
                return pack(sign, logabsdet, batch=batch)
        diagonal, parity = lu_of_transpose(a)
        with quiet():
            # (PyTorch's sign of a NaN is 0)
            sign = xp.where(xp.isnan(diagonal), 0, xp.sign(diagonal)).prod(axis=-1) * parity
            logabsdet = xp.log(xp.abs(diagonal)).sum(axis=-1)
        return pack(sign, logabsdet, batch=batch)

    def partial_cholesky(m):
        """LAPACK's potrf on one matrix that may not be positive-definite: the lower
        factor's columns before the first pivot that is not positive (or NaN), that
        pivot's value `a_jj - |l_j|^2` on the diagonal, `m`'s own lower entries after it
        (the strict upper triangle zero), and the order of that minor (0: none)."""
        n = m.shape[-1]
        factor = xp.tril(m)
        for j in range(n):
            row = factor[j, :j]
            pivot = (m[j, j] - (row * row.conj()).sum()).real
            if not pivot > 0:
                factor[j, j] = pivot
                return factor, j + 1
            root = math.sqrt(float(pivot))
            factor[j, j] = root
            factor[j + 1:, j] = (m[j + 1:, j] - factor[j + 1:, :j] @ row.conj()) / root
        return factor, 0

    def adjoint(m):
        m = xp.swapaxes(m, -1, -2)
        return m.conj() if m.dtype.kind == "c" else m

    def cholesky_ex(a, *, upper):
        # LAPACK reads the named triangle: the upper one of A is the lower one of A^H
        src = adjoint(a) if upper else a
        batch = a.shape[:-2]
        info = xp.zeros(batch, dtype=xp.int64)
        try:
            factor = linalg.cholesky(src)
            # LAPACK stops at a NaN pivot too (NumPy's factor is then NaN from there on)
            failed = xp.isnan(xp.diagonal(factor, axis1=-2, axis2=-1)).any(axis=-1)
        except lapack_error:
            factor, failed = xp.zeros_like(src), xp.ones(batch, dtype=bool)
        if bool(failed.any()):  # LAPACK's partial factors, one matrix at a time
            factor, info = factor.copy(), info.copy()
            for index in zip(*xp.nonzero(failed)) if batch else [()]:
                index = tuple(int(i) for i in index)
                factor[index], info[index] = partial_cholesky(src[index])
            ok = (info == 0)[..., None, None]
            if bool(ok.any()):
                factor = xp.where(ok, linalg.cholesky(xp.where(ok, src, xp.eye(
                    a.shape[-1], dtype=a.dtype))), factor)
        if upper:  # U = L^H
            factor = adjoint(factor)
        return pack(factor, info, batch=batch)

    def qr(a, *, mode):
        batch = a.shape[:-2]
        if mode == "r":
            return pack(linalg.qr(a, mode="r"), batch=batch)
        q, r = converged("linalg.qr", linalg.qr, a, mode=mode)
        return pack(q, r, batch=batch)

    def converged(op, f, a, *args, **kwargs):
        try:
            return f(a, *args, **kwargs)
        except lapack_error:
            why = ("the input matrix is ill-conditioned or has too many repeated "
                   "values") if bool(xp.isfinite(a).all()) else \
                "the input matrix contained non-finite values"
            raise LinAlgError(f"{op}: The algorithm failed to converge because {why}.") \
                from None

    def geqrf(a):
        h, tau = converged("geqrf", linalg.qr, a, mode="raw")  # h is LAPACK's, transposed
        return pack(xp.swapaxes(h, -1, -2), tau, batch=a.shape[:-2])

    def svd(a, *, full_matrices):
        batch = a.shape[:-2]
        finite = xp.isfinite(a).all(axis=(-2, -1))
        if not bool(finite.all()):
            # PyTorch raises for a NaN; NumPy's LAPACK can loop forever on an infinity,
            # where PyTorch's returns NaN singular values: solve a stand-in, set NaN
            nan = xp.isnan(a).any(axis=(-2, -1)).reshape(-1)
            if bool(nan.any()):
                where = f"(Batch element {int(xp.argmax(nan))}): " if batch else ""
                raise LinAlgError(f"linalg.svd: {where}The algorithm failed to converge "
                                  "because the input matrix contained non-finite values.")
            bad = ~finite[..., None, None]
            u, s, vh = linalg.svd(xp.where(bad, xp.zeros((), dtype=a.dtype), a),
                                  full_matrices=full_matrices)
            return pack(xp.where(bad, xp.nan, u), xp.where(bad[..., 0], xp.nan, s),
                        xp.where(bad, xp.nan, vh), batch=batch)
        u, s, vh = converged("linalg.svd", linalg.svd, a, full_matrices=full_matrices)
        return pack(u, s, vh, batch=batch)

    def eigh(a, *, UPLO):
        w, v = converged("linalg.eigh", linalg.eigh, a, UPLO=UPLO)
        return pack(w, v, batch=a.shape[:-2])

    def eig(a):
        """The eigenvalues and eigenvectors (unit columns, LAPACK geev's), complex even
        for a real A (NumPy returns real arrays when every eigenvalue is real)."""
        if not bool(xp.isfinite(a).all()):
            raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or "
                               "NaNs.")
        w, v = converged("linalg.eig", linalg.eig, a)
        complex_ = xp.result_type(a.dtype, xp.complex64)
        return pack(w.astype(complex_, copy=False), v, batch=a.shape[:-2])

    def lu_factor_ex(a):
        batch, (m, n) = a.shape[:-2], a.shape[-2:]
        lu = a.reshape((math.prod(batch), m, n)).copy()
        pivots, info = lu_in_place(lu)
        return pack(lu, pivots, info, batch=batch)

    table.update({"_linalg_inv_ex": inv_ex, "_linalg_solve_ex": solve_ex, "det": det,
                  "_linalg_slogdet": slogdet, "_linalg_cholesky_ex": cholesky_ex,
                  "_linalg_qr": qr, "_geqrf": geqrf, "_linalg_svd": svd, "_linalg_eigh": eigh,
                  "_linalg_lu_factor_ex": lu_factor_ex,
                  "_linalg_solve_triangular": solve_triangular})
    if hasattr(linalg, "eig"):  # (CuPy has none: the CUDA backend runs the CPU's)
        table["_linalg_eig"] = eig
    return table


def _einsum_layout(equation: str, shapes: list[tuple[int, ...]]) -> list[int] | None:
    """The memory order (outermost first) of PyTorch's einsum result of two or more
    operands, which a later `view` depends on: its last pairwise contraction is a bmm
    whose row-major result holds the output dims present (size > 1) in both operands,
    then those only in the left one (everything before the last operand) and the rest,
    each group in output order and the group with the earlier output dim first, and is
    permuted to the output's order (NumPy's einsum answers
    in other layouts); row-major where that pair has nothing to contract. None for one
    operand: PyTorch returns views of it."""
    inputs, _, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) < 2:
        return None
    if not _:  # the implicit form: the labels seen once, in alphabetical order
        output = "".join(sorted(c for c in set(inputs) if c != "," and inputs.count(c) == 1))

    def present(term_shapes: list[tuple[str, tuple[int, ...]]]) -> set[str]:
        return {label for term, shape in term_shapes for label, n in zip(term, shape)
                if n != 1}

    pairs = list(zip(terms, shapes))
    left, right = present(pairs[:-1]), present(pairs[-1:])
    if not (left & right) - set(output):
        # nothing to contract in the last pair: PyTorch multiplies the operands (laid out
        # in output order) elementwise, in the layout its TensorIterator picks
        return _elementwise_layout(output, pairs) if len(pairs) == 2 else \
            list(range(len(output)))
    both = [i for i, c in enumerate(output) if c in left and c in right]
    left_only = [i for i, c in enumerate(output) if c in left and c not in right]
    rest = [i for i, c in enumerate(output) if c not in left]
    if rest and (not left_only or rest[0] < left_only[0]):
        return both + rest + left_only  # (the operands swapped: the earlier output dim leads)
    return both + left_only + rest


def _elementwise_layout(output: str, pairs: list[tuple[str, tuple[int, ...]]]) -> list[int]:
    """The memory order (outermost first) of PyTorch's elementwise result of row-major
    operands viewed in the output's dims (TensorIterator's reorder_dimensions: an
    insertion sort of the dims, fastest first, by the first operand's strides, a
    broadcast dim deferring to the next operand, equal strides putting the smaller dim
    first)."""
    sizes = {}
    for term, shape in pairs:
        for c, n in zip(term, shape):
            sizes[c] = max(sizes.get(c, 1), n)
    strides = []
    for term, shape in pairs:
        own = {}
        step = 1
        for c, n in zip(reversed(term), reversed(shape)):
            own[c] = 0 if n == 1 and sizes[c] != 1 else step
            step *= n
        strides.append([own.get(c, 0) for c in output])
    shape = tuple(sizes.get(c, 1) for c in output)
    return logical_to_physical_perm(shape, strides)[0]
