"""`ember.nn.utils.parametrizations` (PyTorch's torch.nn.utils.parametrizations):
`orthogonal`, `weight_norm` and `spectral_norm` as parametrizations
(`nn.utils.parametrize`), the forms PyTorch recommends over the hook-based
`nn.utils.weight_norm`/`spectral_norm`. `orthogonal` makes complex weights unitary."""

from __future__ import annotations

from enum import Enum, auto

import ember
from ember.core.tensor import Tensor
from ember.nn import functional as F
from ember.nn.module import Module
from ember.nn.utils import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.size(-2), q.size(-1)
    eye = ember.eye(k, dtype=q.dtype, device=q.device)
    return ember.allclose(q.mH @ q, eye, atol=10.0 * n * ember.finfo(q.dtype).eps)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q factor of a tall `a = QR` (`a` may be complex) with diag(R) real and
    non-negative."""
    x, tau = ember.geqrf(a)
    q = ember.linalg.householder_product(x, tau)
    return q * x.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X, n, k = X.mT, k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = ember.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH  # skew-Hermitian: its exponential (or Cayley map) is unitary
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = ember.matrix_exp(A)
            else:
                eye = ember.eye(n, dtype=A.dtype, device=A.device)
                Q = ember.linalg.solve(ember.add(eye, A, alpha=-0.5), ember.add(eye, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = ember.linalg.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
        with ember.no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {Q.shape}.")
            q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q, n, k = Q.mT, k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations when "
                                              "use_trivialization=False.")
                A, tau = ember.geqrf(Q)
                diag = A.diagonal(dim1=-2, dim2=-1)
                diag.sign_()
                diag[tau == 0.0] *= -1
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = ember.randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype,
                                device=Q.device)
                Q = _make_orthogonal(ember.cat([Q, N], dim=-1))
            self.base = Q
            neg_id = ember.zeros_like(q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    r"""Apply an orthogonal or unitary parametrization to a matrix or a batch of matrices:
    ``module.name`` stays orthogonal (:math:`Q^T Q = I` for tall matrices) while the
    original is trained freely.

    Args:
        module (nn.Module): module on which to register the parametrization.
        name (str, optional): name of the tensor to make orthogonal. Default: ``"weight"``.
        orthogonal_map (str, optional): One of the following: ``"matrix_exp"``,
            ``"cayley"``, ``"householder"``. Default: ``"matrix_exp"`` if the matrix is
            square, ``"householder"`` otherwise.
        use_trivialization (bool, optional): whether to use the dynamic trivialization
            framework (the ``base`` buffer). Default: ``True``.

    Returns:
        The original module with an orthogonal parametrization registered to the specified
        weight.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return ember._weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return ember.norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    r"""Apply weight normalization to a parameter in the given module:
    :math:`\mathbf{w} = g \dfrac{\mathbf{v}}{\|\mathbf{v}\|}`, with the magnitude ``g``
    in ``parametrizations.<name>.original0`` and the direction ``v`` in ``original1``.

    Args:
        module (Module): containing module.
        name (str, optional): name of weight parameter. Default: ``"weight"``.
        dim (int, optional): dimension over which to compute the norm (``None``: the
            whole tensor). Default: 0.

    Returns:
        The original module with the weight norm parametrization.
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict: dict, prefix: str, local_metadata: dict,
                                 strict: bool, missing_keys: list, unexpected_keys: list,
                                 error_msgs: list) -> None:
        # a checkpoint of the old nn.utils.weight_norm (HiFi-GAN's `weight_g`/`weight_v`)
        # loads into the parametrization's `original0`/`original1`, as in PyTorch
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # start from a good estimate of the singular vectors
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:  # the output dimension first
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # the buffers are updated in place, as PyTorch's (out=)
        with ember.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ember.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ember.mv(weight_mat.H, self._u), dim=0,
                                          eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ember.vdot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    r"""Apply spectral normalization to a parameter in the given module:
    :math:`\mathbf{W}_{SN} = \dfrac{\mathbf{W}}{\sigma(\mathbf{W})}`, :math:`\sigma`
    estimated by power iteration (the singular vectors are the buffers ``_u`` and ``_v``
    of the parametrization, updated on every access in training mode).

    Args:
        module (nn.Module): containing module.
        name (str, optional): name of weight parameter. Default: ``"weight"``.
        n_power_iterations (int, optional): number of power iterations. Default: 1.
        eps (float, optional): epsilon for numerical stability. Default: ``1e-12``.
        dim (int, optional): dimension corresponding to number of outputs (1 for
            ConvTranspose modules, else 0).

    Returns:
        The original module with a new parametrization registered to the specified weight.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ember.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d,
                                       ConvTranspose3d)) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
