"""The implicit reparameterisation gradients of gamma and Dirichlet draws, as PyTorch computes
them (ATen's `standard_gamma_grad_one` and `dirichlet_grad_one`, vectorised over ember ops).

For a draw x held at its CDF value, ``dx/dalpha = -(dF(x; alpha)/dalpha) / f(x; alpha)``;
PyTorch evaluates it with a Taylor series for small x, a saddle-point expansion for large
shapes and fitted rational approximations elsewhere. Every branch is computed for every
element (in float64) and the element's branch is selected, so this runs on any device.
"""

from __future__ import annotations

import ember

__all__ = ["dirichlet_grad", "standard_gamma_grad"]

_GAMMA_COEF_UV = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07),
)

_BETA_COEF = (  # [p or q][power of u][power of a][power of b]
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)


def _nan_to_zero(t):
    return ember.where(ember.isnan(t), ember.zeros_like(t), t)


def standard_gamma_grad(alpha, x):
    """d x / d alpha of unit-rate Gamma(alpha) draws `x` (PyTorch's `_standard_gamma_grad`)."""
    a, v = alpha.double(), x.double()
    # Taylor series for small x
    numer = ember.ones_like(v)
    denom = a.clone()
    series1, series2 = numer / denom, numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-v / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = v.pow(a)
    gamma_pdf = v.pow(a - 1) * ember.exp(-v)
    gamma_cdf = pow_x_alpha * series1
    gamma_cdf_alpha = (v.log() - ember.digamma(a)) * gamma_cdf - pow_x_alpha * series2
    small_x = _nan_to_zero(-gamma_cdf_alpha / gamma_pdf)
    # Rice saddle point expansion for large alpha
    numer_1 = 1 + 24 * a * (1 + 12 * a)
    numer_2 = (1440 * a * a + 6 * v * (53 - 120 * v) - 65 * v * v / a
               + a * (107 + 3600 * v))
    near_mode = numer_1 * numer_2 / (1244160 * a * a * a * a)
    denom = (8 * a).sqrt()
    term2 = denom / (a - v)
    term3 = (v - a - a * (v / a).log()).pow(-1.5)
    term23 = ember.where(v < a, term2 - term3, term2 + term3)
    term1 = (v / a).log() * term23 - (2 / a).sqrt() * (a + v) / ((a - v) * (a - v))
    stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
    saddle = -stirling * (v * term1) / denom
    large_alpha = ember.where((0.9 * a <= v) & (v <= 1.1 * a), near_mode, saddle)
    # bivariate rational approximation elsewhere
    u, w = (v / a).log(), a.log()
    c = [_GAMMA_COEF_UV[0][i] + u * (_GAMMA_COEF_UV[1][i] + u * _GAMMA_COEF_UV[2][i])
         for i in range(8)]
    p = c[0] + w * (c[1] + w * (c[2] + w * c[3]))
    q = c[4] + w * (c[5] + w * (c[6] + w * c[7]))
    rational = ember.exp(p / q)
    out = ember.where(v < 0.8, small_x, ember.where(a > 8.0, large_alpha, rational))
    return out.to(alpha.dtype)


def _beta_grad_alpha_small(x, alpha, beta):
    """Taylor expansion of d x / d alpha for Beta(alpha, beta) draws near 0."""
    factor = ember.digamma(alpha) - ember.digamma(alpha + beta) - x.log()
    numer = ember.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * ((i - beta) * x / i)
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    return _nan_to_zero(x * (1 - x).pow(-beta) * series)


def _beta_grad_beta_small(x, alpha, beta):
    """Taylor expansion of d x / d beta for Beta(alpha, beta) draws near 0."""
    factor = ember.digamma(alpha + beta) - ember.digamma(beta)
    numer, betas, dbetas = ember.ones_like(x), ember.ones_like(x), ember.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    return _nan_to_zero(-(1 - x).pow(1 - beta) * series)


def _beta_grad_alpha_mid(x, alpha, beta):
    """Rice saddle point expansion of d x / d alpha for large alpha and beta."""
    total = alpha + beta
    mean = alpha / total
    std = (alpha * beta / (total + 1)).sqrt() / total
    b2 = beta * beta
    poly = 47 * x * b2 * b2 + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * b2 * beta + alpha * (
            3 * (59 + 180 * beta - 90 * x) * b2 + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                    8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
    near_mean = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / (2 * alpha * beta / total).sqrt()
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha))
                * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * b2
    axbx = alpha * (x - 1) + beta * x
    term1_den = (2 * alpha / beta).sqrt() * total.pow(1.5) * axbx * axbx
    term1 = term1_num / term1_den
    term2 = 0.5 * (alpha / (total * x)).log()
    term3 = (8 * alpha * beta / total).sqrt() / (beta * x + alpha * (x - 1))
    term4 = (beta * (beta / (total * (1 - x))).log()
             + alpha * (alpha / (total * x)).log()).pow(-1.5)
    term1234 = term1 + term2 * (term3 + ember.where(x < mean, term4, -term4))
    saddle = stirling * prefactor * term1234
    return ember.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near_mean, saddle)


def dirichlet_grad(x, concentration, total):
    """PyTorch's `_dirichlet_grad`: d x / d alpha of a Beta(alpha, total - alpha) marginal
    draw `x`, scaled by 1 / (1 - x), from which Dirichlet's backward is built."""
    v, alpha, tot = x.double(), concentration.double(), total.double()
    beta = tot - alpha
    boundary = tot * v * (1 - v)
    small = _beta_grad_alpha_small(v, alpha, beta)
    large = -_beta_grad_beta_small(1 - v, beta, alpha)
    mid = _beta_grad_alpha_mid(v, alpha, beta)
    u = v.log()
    a = alpha.log() - u
    b = tot.log() - a
    pq = []
    for coef in _BETA_COEF:
        acc = ember.zeros_like(v)
        for i, pow_u in enumerate((1.0, u, u * u)):
            for j, pow_a in enumerate((1.0, a, a * a)):
                c = coef[i][j]
                acc = acc + pow_u * pow_a * (c[0] + b * (c[1] + b * (c[2] + b * c[3])))
        pq.append(acc)
    approx = v * (ember.digamma(tot) - ember.digamma(alpha)) / beta
    rational = pq[0] / pq[1] * approx
    out = ember.where((v <= 0.5) & (boundary < 2.5), small,
                      ember.where((v >= 0.5) & (boundary < 0.75), large,
                                  ember.where((alpha > 6) & (beta > 6), mid, rational)))
    return out.to(x.dtype)
