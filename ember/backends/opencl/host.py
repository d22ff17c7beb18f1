"""The ops OpenCL C has no functions for, computed on the host: the special functions
(digamma, polygamma, erfinv, i0, the Bessel functions, the incomplete gamma and zeta
functions ...), the rarer integer ops (gcd, lcm, the shifts), nextafter, the matrix
factorizations (LAPACK's work: det, inv, solve, Cholesky, QR, SVD, eigh, LU), and the
opmath kernels (PyTorch's rounding of add(alpha=), addcmul, addcdiv, lerp).

Each kernel reads its operands back, runs the shared xp kernel over NumPy (SciPy for the
special functions, imported on the first call) and writes the result to the device. It
is this backend's own kernel, so it runs under EMBER_STRICT=1 too; it costs a round trip
through host memory, as the generic CPU fallback would, without its warning.
"""

from __future__ import annotations

import importlib
from typing import Any

from ember.backends.opencl.buffer import CLBuffer
from ember.backends.opencl.kernels import from_numpy, to_numpy

HOST_OPS = (
    "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "nextafter", "digamma",
    "erfinv", "i0", "igamma", "igammac", "polygamma", "special_zeta", "special_i0e",
    "special_i1", "special_i1e", "special_erfcx", "special_ndtri", "special_bessel_j0",
    "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
    "special_modified_bessel_i0", "special_modified_bessel_i1", "special_modified_bessel_k0",
    "special_modified_bessel_k1", "special_scaled_modified_bessel_k0",
    "special_scaled_modified_bessel_k1", "special_airy_ai",
)
# the factorizations: small matrices, sequential pivoting: LAPACK on the host
HOST_LINALG = ("det", "_linalg_slogdet", "_linalg_inv_ex", "_linalg_solve_ex",
               "_linalg_cholesky_ex", "_linalg_qr", "_geqrf", "_linalg_svd", "_linalg_eigh",
               "_linalg_eig", "_linalg_lu_factor_ex", "_linalg_solve_triangular",
               "_linalg_ldl_factor_ex", "_linalg_ldl_solve")

_table: dict[str, Any] = {}


def _host_table() -> dict[str, Any]:
    if not _table:
        import numpy as np

        from ember.backends.xp import Hooks, make_kernels

        _table.update(make_kernels(np, hooks=Hooks(
            special=lambda: importlib.import_module("scipy.special"))))
    return _table


def _on_host(op: str) -> Any:
    def kernel(*args: Any, **attrs: Any) -> CLBuffer:
        first = next(a for a in args if type(a) is CLBuffer)
        host = [to_numpy(a) if type(a) is CLBuffer else a for a in args]
        like = next(h for h, a in zip(host, args) if type(a) is CLBuffer)
        out = _host_table()[op](*host, **attrs)
        # (every one of these ops keeps its operands' dtype: a bfloat16 result that NumPy
        # widened with a Python scalar goes back to bfloat16)
        return from_numpy(out.astype(like.dtype, copy=False), first.dev)
    kernel.__name__ = op
    return kernel


# PyTorch's rounding of add(alpha=), addcmul, addcdiv and lerp (xp/opmath.py: fused
# multiply-adds, one rounding), which the device's kernels do not reproduce yet
HOST_OPMATH = ("opmath_axpy", "opmath_addcmul", "opmath_addcdiv", "opmath_lerp")

KERNELS: dict[str, Any] = {op: _on_host(op) for op in HOST_OPS + HOST_LINALG + HOST_OPMATH}
