"""`ember.nn.init`: fill tensors in place with PyTorch's initialisation schemes.

Every function works under `no_grad` (so it can initialise a Parameter that requires
grad), returns the tensor it filled, and takes an optional `generator` for
reproducible draws.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import ember
from ember import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
    "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
    "kaiming_normal_", "orthogonal_", "sparse_",
]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
               "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    r"""The recommended gain for a nonlinearity (scales the std of the init).

    ================= ====================================================
    nonlinearity      gain
    ================= ====================================================
    Linear / Identity :math:`1`
    Conv{1,2,3}D      :math:`1`
    Sigmoid           :math:`1`
    Tanh              :math:`\frac{5}{3}`
    ReLU              :math:`\sqrt{2}`
    Leaky Relu        :math:`\sqrt{\frac{2}{1 + \text{negative\_slope}^2}}`
    SELU              :math:`\frac{3}{4}`
    ================= ====================================================

    Args:
        nonlinearity: the non-linear function's name (``nn.functional`` name).
        param: optional parameter for the non-linear function (leaky_relu's slope).
    """
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or \
                isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: ember.Generator | None = None) -> Tensor:
    r"""Fill with values drawn from :math:`\mathcal{U}(a, b)`."""
    with ember.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: ember.Generator | None = None) -> Tensor:
    r"""Fill with values drawn from :math:`\mathcal{N}(\text{mean}, \text{std}^2)`."""
    with ember.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: ember.Generator | None = None) -> Tensor:
    r"""Fill with values drawn from :math:`\mathcal{N}(\text{mean}, \text{std}^2)`
    truncated to :math:`[a, b]`: PyTorch's rejection sampling, draw for draw (normals
    redrawn where they fall outside; for a narrow window, uniform proposals on [a, b]
    accepted by the density), so the same seed gives PyTorch's values."""
    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    with ember.no_grad():
        p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        if p > 0.3:
            # the bounds as the tensor's dtype holds them, so the test matches the values
            lo, hi = (ember.tensor(v, dtype=tensor.dtype).item() for v in (a, b))
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                bad = (result < lo) | (result > hi)
                if not bool(bad.any()):
                    break
                fresh = ember.empty_like(result).normal_(mean, std, generator=generator)
                result = ember.where(bad, fresh, result)
            if result is not tensor:
                tensor.copy_(result)
            return tensor
        # the mass inside [a, b] is small: propose uniformly on [a, b] and accept with the
        # normal density relative to its peak on the interval
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2

        def log_pdf(x: Tensor) -> Tensor:
            return ((x - mean) / std) ** 2 * -0.5 - log_peak

        def accept_draw() -> Tensor:
            return ember.empty_like(tensor).uniform_(generator=generator).log_()

        tensor.uniform_(a, b, generator=generator)
        pending = accept_draw() > log_pdf(tensor)
        result = tensor
        while bool(pending.any()):
            cand = ember.empty_like(tensor).uniform_(a, b, generator=generator)
            result = ember.where(pending, cand, result)
            pending = ember.where(pending, accept_draw() > log_pdf(cand), pending)
        if result is not tensor:
            tensor.copy_(result)
    return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    r"""Fill with the value ``val``."""
    with ember.no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    r"""Fill with the scalar value 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    r"""Fill with the scalar value 0."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    r"""Fill a 2-D tensor with the identity matrix (ones on the main diagonal)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with ember.no_grad():
        tensor.copy_(ember.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    r"""Fill a {3, 4, 5}-D convolution weight with the Dirac delta, so the convolution
    preserves (as many as possible of) its input channels, per group."""
    dims = tensor.ndim
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    with ember.no_grad():
        tensor.zero_()
        centre = tuple(s // 2 for s in sizes[2:])
        for g in range(groups):
            for d in range(min_dim):
                tensor[(g * out_per_group + d, d) + centre] = 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = math.prod(tensor.shape[2:]) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid = ["fan_in", "fan_out"]
    if mode not in valid:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: ember.Generator | None = None) -> Tensor:
    r"""Glorot uniform: :math:`\mathcal{U}(-a, a)` with
    :math:`a = \text{gain} \sqrt{6 / (\text{fan\_in} + \text{fan\_out})}`."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: ember.Generator | None = None) -> Tensor:
    r"""Glorot normal: :math:`\mathcal{N}(0, \text{std}^2)` with
    :math:`\text{std} = \text{gain} \sqrt{2 / (\text{fan\_in} + \text{fan\_out})}`."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: ember.Generator | None = None) -> Tensor:
    r"""He uniform: :math:`\mathcal{U}(-b, b)` with
    :math:`b = \text{gain} \sqrt{3 / \text{fan\_mode}}`.

    Args:
        a: the negative slope of the rectifier after this layer (leaky_relu only).
        mode: ``'fan_in'`` (preserves the forward variance) or ``'fan_out'`` (backward).
        nonlinearity: the ``nn.functional`` name of the nonlinearity.
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: ember.Generator | None = None) -> Tensor:
    r"""He normal: :math:`\mathcal{N}(0, \text{std}^2)` with
    :math:`\text{std} = \text{gain} / \sqrt{\text{fan\_mode}}`."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def _orthonormal_columns(a: Tensor) -> Tensor:
    """The Q of a thin QR of `a` (rows >= cols), with R's diagonal positive.

    Gram-Schmidt with one re-orthogonalisation pass per column ("twice is enough"),
    in float64: as accurate as Householder QR for the well-conditioned Gaussian matrices
    `orthogonal_` factors. The positive diagonal makes Q Haar-distributed, as torch's
    sign correction does.
    """
    rows, cols = a.shape
    q = ember.zeros(rows, cols, dtype=a.dtype, device=a.device)
    for j in range(cols):
        v = a[:, j]
        if j > 0:
            basis = q[:, :j]
            for _ in range(2):
                v = v - ember.mv(basis, ember.mv(basis.t(), v))
        q[:, j] = v / ember.norm(v)
    return q


def orthogonal_(tensor: Tensor, gain: float = 1,
                generator: ember.Generator | None = None) -> Tensor:
    r"""Fill with a (semi-)orthogonal matrix (Saxe et al. 2013): rows or columns, which
    ever are fewer, are orthonormal. Dimensions after the first are flattened.

    Args:
        gain: scaling factor.
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with ember.no_grad():
        # PyTorch's draw (in the tensor's dtype, so the stream matches), factored in float64
        flat = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        flat = flat.to(ember.float64)
        if rows < cols:
            flat = flat.t().contiguous()
        q = _orthonormal_columns(flat)
        if rows < cols:
            q = q.t()
        tensor.copy_((q * gain).reshape(tensor.shape).to(tensor.dtype))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01,
            generator: ember.Generator | None = None) -> Tensor:
    r"""Fill a 2-D tensor as a sparse matrix: in each column a ``sparsity`` fraction of
    the entries is zero, the rest drawn from :math:`\mathcal{N}(0, \text{std}^2)`."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with ember.no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            # (PyTorch draws the zeros' rows from the global generator, not `generator`)
            zero_rows = ember.randperm(rows, device=tensor.device)
            tensor[zero_rows[:num_zeros], col] = 0
    return tensor


def _deprecated(meth: Any) -> Any:
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)
    deprecated_init.__name__ = old_name
    deprecated_init.__doc__ = f"Deprecated alias of :func:`{new_name}`."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
