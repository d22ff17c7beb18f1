"""The LDL factorization of symmetric and Hermitian matrices with Bunch-Kaufman pivoting,
and the solve that reads it: LAPACK's sytf2/hetf2 and sytrs/hetrs (lower triangle),
written against the array module, as `torch.linalg.ldl_factor_ex` / `ldl_solve` return
and read them.

The factor is LAPACK's compact form: L's multipliers below the diagonal, D's 1x1 blocks
on it and each 2x2 block's off-diagonal entry on the subdiagonal (where L has a zero),
the upper triangle zero. L is the product form `P1 L1 P2 L2 ...`: an interchange is
applied to the trailing matrix only, so the solve replays the pivots one by one. Pivots
are 1-based and signed as LAPACK's: `k` for a 1x1 block whose row was swapped with row
`k`, `-k` on both rows of a 2x2 block. `hermitian=False` on a complex matrix is the
complex symmetric factorization (zsytrf), as in LAPACK; pivot searches use LAPACK's
`|re| + |im|` on complex entries.
"""

from __future__ import annotations

import math

from ember.backends.xp.lib import ArrayLib, Kernel

ALPHA = (1.0 + math.sqrt(17.0)) / 8.0
"""Bunch-Kaufman's threshold: the growth bound that chooses a 2x2 pivot over a 1x1."""


def kernels(lib: ArrayLib) -> dict[str, Kernel]:
    xp, as_array = lib.xp, lib.as_array

    def outer(x, y):
        """x[i] * y[j] (broadcast: CuPy's ufuncs have no `outer`)."""
        return x[..., :, None] * y[..., None, :]

    def magnitude(x):
        """LAPACK's cabs1 on complex entries (|re| + |im|), abs on real ones."""
        return xp.abs(x.real) + xp.abs(x.imag) if x.dtype.kind == "c" else xp.abs(x)

    def factor_one(a, hermitian):
        """sytf2/hetf2 with UPLO='L' on one (n, n) array, in place; returns the pivots
        and info (the 1-based index of the first zero 1x1 pivot, 0 when none)."""
        n = a.shape[0]
        herm = hermitian and a.dtype.kind == "c"
        conj = (lambda x: x.conj()) if herm else (lambda x: x)
        diag_abs = (lambda x: abs(float(x.real))) if herm else (lambda x: float(magnitude(x)))
        pivots, info, k = [0] * n, 0, 0
        while k < n:
            kstep, absakk = 1, diag_abs(a[k, k])
            imax, colmax = k, 0.0
            if k < n - 1:
                column = magnitude(a[k + 1:, k])
                imax = k + 1 + int(xp.argmax(column))
                colmax = float(column[imax - k - 1])
            if max(absakk, colmax) == 0.0 or math.isnan(absakk):
                info = info or k + 1  # a zero column: D[k, k] = 0, nothing to eliminate
                kp = k
                if herm:
                    a[k, k] = a[k, k].real
            else:
                if absakk >= ALPHA * colmax:
                    kp = k
                else:
                    rowmax = float(magnitude(a[imax, k:imax]).max())
                    if imax < n - 1:
                        rowmax = max(rowmax, float(magnitude(a[imax + 1:, imax]).max()))
                    if absakk >= ALPHA * colmax * (colmax / rowmax):
                        kp = k
                    elif diag_abs(a[imax, imax]) >= ALPHA * rowmax:
                        kp = imax
                    else:
                        kp, kstep = imax, 2
                kk = k + kstep - 1
                if kp != kk:  # interchange rows and columns kk and kp of the trailing matrix
                    if kp < n - 1:
                        a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                    segment = conj(a[kk + 1:kp, kk]).copy()
                    a[kk + 1:kp, kk] = conj(a[kp, kk + 1:kp])
                    a[kp, kk + 1:kp] = segment
                    if herm:
                        a[kp, kk] = a[kp, kk].conj()
                    a[kk, kk], a[kp, kp] = a[kp, kp].copy(), a[kk, kk].copy()
                    if herm:
                        a[kk, kk], a[kp, kp] = a[kk, kk].real, a[kp, kp].real
                    if kstep == 2:
                        if herm:
                            a[k, k] = a[k, k].real
                        a[k + 1, k], a[kp, k] = a[kp, k].copy(), a[k + 1, k].copy()
                elif herm:
                    a[k, k] = a[k, k].real
                    if kstep == 2:
                        a[k + 1, k + 1] = a[k + 1, k + 1].real
                if kstep == 1:
                    eliminate_one(a, k, herm, conj)
                else:
                    eliminate_two(a, k, herm, conj)
            if kstep == 1:
                pivots[k] = kp + 1
            else:
                pivots[k] = pivots[k + 1] = -(kp + 1)
            k += kstep
        return pivots, info

    def real_diagonal(block):
        i = xp.arange(block.shape[0])
        block[i, i] = block[i, i].real

    def eliminate_one(a, k, herm, conj):
        """A 1x1 pivot: the rank-1 update of the trailing matrix (syr/her) and L's
        column."""
        if k == a.shape[0] - 1:
            return
        r1 = 1.0 / (a[k, k].real if herm else a[k, k])
        x = a[k + 1:, k].copy()
        a[k + 1:, k + 1:] += outer(x, conj(x) * -r1)
        if herm:
            real_diagonal(a[k + 1:, k + 1:])
        a[k + 1:, k] = x * r1

    def eliminate_two(a, k, herm, conj):
        """A 2x2 pivot: the rank-2 update of the trailing matrix and L's two columns."""
        if k >= a.shape[0] - 2:
            return
        ck, ck1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
        if herm:
            d = abs(a[k + 1, k])
            d11, d22 = a[k + 1, k + 1].real / d, a[k, k].real / d
            d21 = a[k + 1, k] / d
            scale = (1.0 / (d11 * d22 - 1.0)) / d
            wk = scale * (d11 * ck - d21 * ck1)
            wkp1 = scale * (d22 * ck1 - d21.conj() * ck)
        else:
            d21 = a[k + 1, k]
            d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
            d21 = (1.0 / (d11 * d22 - 1.0)) / d21
            wk = d21 * (d11 * ck - ck1)
            wkp1 = d21 * (d22 * ck1 - ck)
        trailing = a[k + 2:, k + 2:]
        trailing -= outer(ck, conj(wk))
        trailing -= outer(ck1, conj(wkp1))
        if herm:
            real_diagonal(trailing)
        a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1

    def ldl_factor_ex(a, *, hermitian):
        batch, n = a.shape[:-2], a.shape[-1]
        flat = a.reshape((math.prod(batch), n, n)).copy()
        pivots = xp.zeros((flat.shape[0], n), dtype=xp.int64)
        info = xp.zeros(flat.shape[0], dtype=xp.int64)
        with lib.quiet():  # (a zero pivot divides by zero, as LAPACK's does)
            for i in range(flat.shape[0]):
                p, info[i] = factor_one(flat[i], hermitian)
                pivots[i] = xp.asarray(p, dtype=xp.int64)
        flat = xp.tril(flat)  # LAPACK leaves the upper triangle as it was; PyTorch zeroes it
        parts = [flat.reshape(batch + (n * n,)), pivots.reshape(batch + (n,)),
                 info.reshape(batch + (1,))]
        return xp.concatenate([as_array(p).astype(a.dtype, copy=False) for p in parts],
                              axis=-1)

    def solve_one(ld, pivots, b, hermitian):
        """sytrs/hetrs with UPLO='L': A X = B for A = L D L^T (L D L^H), B (n, k) in
        place."""
        n = ld.shape[0]
        herm = hermitian and ld.dtype.kind == "c"
        conj = (lambda x: x.conj()) if herm else (lambda x: x)
        k = 0
        while k < n:  # L D Y = B
            if pivots[k] > 0:
                kp = pivots[k] - 1
                if kp != k:
                    b[[k, kp]] = b[[kp, k]]
                b[k + 1:] -= outer(ld[k + 1:, k], b[k])
                b[k] *= 1.0 / (ld[k, k].real if herm else ld[k, k])
                k += 1
            else:
                kp = -pivots[k] - 1
                if kp != k + 1:
                    b[[k + 1, kp]] = b[[kp, k + 1]]
                if k < n - 2:
                    b[k + 2:] -= outer(ld[k + 2:, k], b[k])
                    b[k + 2:] -= outer(ld[k + 2:, k + 1], b[k + 1])
                akm1k = ld[k + 1, k]
                akm1 = ld[k, k] / conj(akm1k)
                ak = ld[k + 1, k + 1] / akm1k
                denom = akm1 * ak - 1.0
                bkm1, bk = b[k] / conj(akm1k), b[k + 1] / akm1k
                b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
                k += 2
        k = n - 1
        while k >= 0:  # L^T X = Y (L^H)
            if pivots[k] > 0:
                if k < n - 1:
                    b[k] -= conj(ld[k + 1:, k]) @ b[k + 1:]
                kp = pivots[k] - 1
                if kp != k:
                    b[[k, kp]] = b[[kp, k]]
                k -= 1
            else:
                if k < n - 1:
                    b[k] -= conj(ld[k + 1:, k]) @ b[k + 1:]
                    b[k - 1] -= conj(ld[k + 1:, k - 1]) @ b[k + 1:]
                kp = -pivots[k] - 1
                if kp != k:
                    b[[k, kp]] = b[[kp, k]]
                k -= 2
        return b

    def ldl_solve(ld, pivots, b, *, hermitian):
        """X of A X = B from ldl_factor's (LD, pivots); the three operands come with one
        batch shape."""
        batch, (n, k) = b.shape[:-2], b.shape[-2:]
        count = math.prod(batch)
        lds = ld.reshape((count, n, n))
        pivs = pivots.reshape((count, n)).tolist()
        x = b.reshape((count, n, k)).copy()
        with lib.quiet():
            for i in range(count):
                solve_one(lds[i], pivs[i], x[i], hermitian)
        return x.reshape(b.shape)

    return {"_linalg_ldl_factor_ex": ldl_factor_ex, "_linalg_ldl_solve": ldl_solve}
