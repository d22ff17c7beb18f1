"""`lobpcg`: a few extreme eigenpairs of a symmetric (positive definite) generalized
eigenproblem `A X = B X diag(E)`, with PyTorch's signature, checks and results.

PyTorch iterates LOBPCG (Knyazev's locally optimal block preconditioned conjugate
gradient) to its tolerance. ember solves the same problem exactly, up to rounding, with a
dense symmetric eigendecomposition (`B`'s Cholesky factor turns the generalized problem
into a standard one), so the result is what LOBPCG converges to: the same eigenvalues,
and eigenvectors up to sign. The iteration's knobs (`X`'s start, `iK`, `niter`, `tol`,
`method`, `tracker`, the ortho parameters) are accepted for compatibility; `X` still
sets how many pairs are returned. Meant for the sizes PyTorch's tests and small models
use (a dense decomposition costs O(m^3) per matrix).
"""

from __future__ import annotations

from typing import Any

from ember.core import costs
from ember.core.declare import composite
from ember.core.ops.factorizations import linalg_cholesky, linalg_eigh, linalg_solve_triangular
from ember.core.tensor import Tensor


@composite(variants="function", cost=costs.matmul)
def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None,
           n: int | None = None, iK: Tensor | None = None, niter: int | None = None,
           tol: float | None = None, largest: bool | None = None, method: str | None = None,
           tracker: Any = None, ortho_iparams: dict | None = None,
           ortho_fparams: dict | None = None, ortho_bparams: dict | None = None) -> tuple:
    """The `k` largest (or, with `largest=False`, smallest) eigenvalues `E` of
    `A X = B X diag(E)` (`A` symmetric, `B` symmetric positive definite; batches in
    leading dimensions), in decreasing (increasing) order, and their eigenvectors `X`
    (m, k), B-orthonormal. Returns `(E, X)`."""
    m = A.shape[-1]
    if A.ndim < 2 or A.shape[-2] != m:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise AssertionError(f"A and B must have the same shapes, got {A.shape} and "
                             f"{B.shape}")
    if k is None:
        k = 1 if X is None else X.shape[-1]
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows "
                         f"(={m}) is smaller than 3 x the number of requested eigenpairs "
                         f"(={n})")
    if k <= 0:
        raise ValueError(f"lobpcg: expected k > 0 requested eigenpairs, got k={k}")
    largest = True if largest is None else largest
    if B is None:
        values, vectors = linalg_eigh(A)
    else:  # L^-1 A L^-T y = e y, x = L^-T y
        L = linalg_cholesky(B)
        left = linalg_solve_triangular(L, A, upper=False)
        C = linalg_solve_triangular(L, left.transpose(-2, -1), upper=False)
        values, y = linalg_eigh((C + C.transpose(-2, -1)) * 0.5)
        vectors = linalg_solve_triangular(L.transpose(-2, -1), y, upper=True)
    if largest:  # eigh sorts increasing: the last k, largest first
        return values[..., m - k:].flip(-1), vectors[..., m - k:].flip(-1)
    return values[..., :k], vectors[..., :k]
