"""`ember.linalg`, PyTorch's `torch.linalg`: linear algebra on matrices and batches of them.

Every function here is a declared op's (ember/core/ops/factorizations.py, norms.py and
linalg.py): the namespace only gives them their `torch.linalg` names, so there is one
implementation and the same checks, gradients and backends as `ember.det`, `ember.svd` ...
Complex matrices (complex64/complex128) go through the same functions; `eig` and
`eigvals` return complex results even for real input, as PyTorch's.
"""

from __future__ import annotations

from ember.core.backend import LinAlgError
from ember.core.ops import factorizations as _f
from ember.core.ops import linalg as _l
from ember.core.ops import norms as _n

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
    "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor",
    "ldl_factor_ex", "ldl_solve", "lstsq", "lu",
    "lu_factor",
    "lu_factor_ex", "lu_solve",
    "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
    "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
    "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm",
]

cholesky = _f.linalg_cholesky
cholesky_ex = _f.linalg_cholesky_ex
cond = _n.linalg_cond
cross = _l.linalg_cross
det = _f.det
diagonal = _f.linalg_diagonal
eig = _f.linalg_eig
eigh = _f.linalg_eigh
eigvals = _f.linalg_eigvals
eigvalsh = _f.linalg_eigvalsh
householder_product = _f.linalg_householder_product
inv = _f.linalg_inv
inv_ex = _f.linalg_inv_ex
ldl_factor = _f.linalg_ldl_factor
ldl_factor_ex = _f.linalg_ldl_factor_ex
ldl_solve = _f.linalg_ldl_solve
lstsq = _f.linalg_lstsq
lu = _f.linalg_lu
lu_factor = _f.linalg_lu_factor
lu_factor_ex = _f.linalg_lu_factor_ex
lu_solve = _f.linalg_lu_solve
matmul = _l.matmul
matrix_exp = _f.matrix_exp
matrix_norm = _n.linalg_matrix_norm
matrix_power = _f.matrix_power
matrix_rank = _f.linalg_matrix_rank
multi_dot = _l.linalg_multi_dot
norm = _n.linalg_norm
pinv = _f.linalg_pinv
qr = _f.linalg_qr
slogdet = _f.linalg_slogdet
solve = _f.linalg_solve
solve_ex = _f.linalg_solve_ex
solve_triangular = _f.linalg_solve_triangular
svd = _f.linalg_svd
svdvals = _f.linalg_svdvals
tensorinv = _f.linalg_tensorinv
tensorsolve = _f.linalg_tensorsolve
vander = _f.linalg_vander
vecdot = _l.linalg_vecdot
vector_norm = _n.linalg_vector_norm
