"""Tensor predicates and attributes that PyTorch also has as functions (`torch.numel`,
`torch.is_nonzero`, `torch.is_signed` ...), and the small views of this kind (`adjoint`,
`resolve_neg`, `type_as`). The attributes that are only Tensor's (`stride`, `storage`,
`nbytes` ...) live on the Tensor class (ember.core.tensor)."""

from __future__ import annotations

from ember.core import costs
from ember.core.declare import composite
from ember.core.grad_mode import InferenceVersion
from ember.core.ops.elementwise import to_dtype
from ember.core.ops.shape import transpose
from ember.core.tensor import Tensor


@composite(complex=True, variants="function", cost=costs.view)
def detach(input: Tensor) -> Tensor:
    """A tensor sharing `input`'s storage, outside the autograd graph."""
    return input.detach()


@composite(complex=True, variants="function", cost=costs.view)
def numel(input: Tensor) -> int:
    """The number of elements of `input`."""
    return input.numel()


@composite(complex=True, variants="function", cost=costs.view)
def is_floating_point(input: Tensor) -> bool:
    """Whether `input`'s dtype is a floating-point type."""
    return input.is_floating_point()


@composite(complex=True, variants="function", cost=costs.view)
def get_device(input: Tensor) -> int:
    """The index of the device holding `input`; -1 for the CPU."""
    return input.get_device()


@composite(complex=True, cost=costs.view)
def is_signed(input: Tensor) -> bool:
    """Whether `input`'s dtype is signed (all but bool, the unsigned integers and
    float8_e8m0fnu)."""
    return input.dtype.is_signed


@composite(complex=True, cost=costs.view)
def is_nonzero(input: Tensor) -> bool:
    """Whether the one element of `input` is not zero."""
    n = input.numel()
    if n != 1:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0
                           else "Boolean value of Tensor with more than one value is "
                                "ambiguous")
    return bool(input.item())


@composite(complex=True, cost=costs.view)
def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether `input` and `other` have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


@composite(complex=True, cost=costs.view)
def is_inference(input: Tensor) -> bool:
    """Whether `input` is an inference tensor: one made inside `inference_mode` (or a view
    of one)."""
    return type(input._vc) is InferenceVersion


@composite(complex=True, cost=costs.view)
def is_neg(input: Tensor) -> bool:
    """Whether `input` is a lazily negated view (never: ember negates eagerly)."""
    return False


@composite(complex=True, cost=costs.view)
def is_distributed(input: Tensor) -> bool:
    """Always False, as in PyTorch."""
    return False


@composite(complex=True, cost=costs.view)
def resolve_neg(input: Tensor) -> Tensor:
    """`input` itself: ember has no lazily negated views to materialize."""
    return input


@composite(complex=True, cost=costs.view)
def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions: a view of a real tensor; of a
    complex one, a conjugated copy (ember conjugates eagerly)."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.ndim}-D tensor.")
    out = transpose(input, -2, -1)
    return out.conj() if input.dtype.is_complex else out


@composite(complex=True, variants="method", cost=costs.pointwise(0))
def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor cast to `other`'s dtype (itself when it has it already)."""
    return to_dtype(self, other.dtype)
