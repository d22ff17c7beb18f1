"""`ember.special`: PyTorch's `torch.special` namespace.

Most names are other names of ember's own functions (`expit` is `ember.sigmoid`,
`gammaln` is `ember.lgamma`); the functions torch has only here (`i0e`, `i1`, `ndtr`,
`xlog1py`, `entr` ...) are ops declared in ember.core.ops.elementwise_math as
`special_<name>`, without a top-level function.
"""

from __future__ import annotations

from ember.core.ops.elementwise import erf, expm1, log1p, round, sigmoid
from ember.core.ops.elementwise_math import (
    digamma,
    erfc,
    erfinv,
    exp2,
    i0,
    igamma,
    igammac,
    lgamma,
    logit,
    mvlgamma,
    polygamma,
    sinc,
    special_airy_ai,
    special_bessel_j0,
    special_bessel_j1,
    special_bessel_y0,
    special_bessel_y1,
    special_entr,
    special_erfcx,
    special_i0e,
    special_i1,
    special_i1e,
    special_log_ndtr,
    special_modified_bessel_i0,
    special_modified_bessel_i1,
    special_modified_bessel_k0,
    special_modified_bessel_k1,
    special_ndtr,
    special_ndtri,
    special_scaled_modified_bessel_k0,
    special_scaled_modified_bessel_k1,
    special_spherical_bessel_j0,
    special_xlog1py,
    special_zeta,
    xlogy,
)
from ember.core.ops.nn import log_softmax, softmax
from ember.core.ops.polynomials import (
    special_chebyshev_polynomial_t,
    special_chebyshev_polynomial_u,
    special_chebyshev_polynomial_v,
    special_chebyshev_polynomial_w,
    special_hermite_polynomial_h,
    special_hermite_polynomial_he,
    special_laguerre_polynomial_l,
    special_legendre_polynomial_p,
    special_shifted_chebyshev_polynomial_t,
    special_shifted_chebyshev_polynomial_u,
    special_shifted_chebyshev_polynomial_v,
    special_shifted_chebyshev_polynomial_w,
)
from ember.core.ops.reduction import logsumexp

expit = sigmoid
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma
gammainc = igamma
gammaincc = igammac
erfcx = special_erfcx
i0e = special_i0e
i1 = special_i1
i1e = special_i1e
ndtr = special_ndtr
ndtri = special_ndtri
log_ndtr = special_log_ndtr
xlog1py = special_xlog1py
entr = special_entr
bessel_j0 = special_bessel_j0
bessel_j1 = special_bessel_j1
bessel_y0 = special_bessel_y0
bessel_y1 = special_bessel_y1
modified_bessel_i0 = special_modified_bessel_i0
modified_bessel_i1 = special_modified_bessel_i1
modified_bessel_k0 = special_modified_bessel_k0
modified_bessel_k1 = special_modified_bessel_k1
scaled_modified_bessel_k0 = special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = special_scaled_modified_bessel_k1
spherical_bessel_j0 = special_spherical_bessel_j0
zeta = special_zeta
airy_ai = special_airy_ai
chebyshev_polynomial_t = special_chebyshev_polynomial_t
chebyshev_polynomial_u = special_chebyshev_polynomial_u
chebyshev_polynomial_v = special_chebyshev_polynomial_v
chebyshev_polynomial_w = special_chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = special_shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = special_shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = special_shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = special_shifted_chebyshev_polynomial_w
hermite_polynomial_h = special_hermite_polynomial_h
hermite_polynomial_he = special_hermite_polynomial_he
laguerre_polynomial_l = special_laguerre_polynomial_l
legendre_polynomial_p = special_legendre_polynomial_p

__all__ = [
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "zeta",
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
    "expit", "expm1", "gammainc", "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e",
    "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr",
    "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "airy_ai",
]
