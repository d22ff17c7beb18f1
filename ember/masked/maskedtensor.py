"""`MaskedTensor` (`torch.masked.MaskedTensor`): a tensor's values with a bool mask of
the same shape, True where a value is specified. Printed, reduced and combined as
PyTorch's: unspecified elements print as `--`, reductions run over the specified ones
(their result specified where any element was), elementwise arithmetic keeps the mask.

ember's is a plain class holding the two tensors, not a Tensor subclass: the
`__torch_dispatch__` machinery PyTorch builds it on has no counterpart here, so
`isinstance(mt, Tensor)` is False and only the operations below are defined.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import ember
from ember.core.tensor import Tensor

_PROTOTYPE = ("The PyTorch API of MaskedTensors is in prototype stage and will change in the "
              "near future. Please open a Github issue for features requests and see our "
              "documentation on the torch.masked module for further information about the "
              "project.")


def is_masked_tensor(obj: Any) -> bool:
    """Whether `obj` is a MaskedTensor."""
    return isinstance(obj, MaskedTensor)


class MaskedTensor:
    """A tensor `data` whose elements are specified where `mask` is True.

    Args:
        data (Tensor): the values.
        mask (Tensor): a bool tensor of `data`'s shape.
        requires_grad (bool): whether `data` records operations for autograd.
    """

    def __init__(self, data: Tensor, mask: Tensor, requires_grad: bool = False) -> None:
        if is_masked_tensor(data) or not isinstance(data, Tensor):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, Tensor):
            raise TypeError("mask must be a Tensor")
        warnings.warn(_PROTOTYPE, UserWarning, stacklevel=3)
        if requires_grad:
            data = data.detach().requires_grad_()
        self._masked_data, self._masked_mask = data, mask
        if data.dim() != mask.dim():
            raise ValueError("data.dim() must equal mask.dim()")
        if data.size() != mask.size():
            raise ValueError("data.size() must equal mask.size()")
        if mask.dtype is not ember.bool:
            raise TypeError("mask must have dtype bool.")

    def get_data(self) -> Tensor:
        """The values (specified or not), detached."""
        return self._masked_data.detach()

    def get_mask(self) -> Tensor:
        """The bool mask: True where an element is specified."""
        return self._masked_mask

    def to_tensor(self, value: Any) -> Tensor:
        """The values with `value` where no element is specified."""
        return self.get_data().masked_fill(~self.get_mask(), value)

    # -- what a tensor of the data's kind says about itself --------------------------------

    shape = property(lambda self: self._masked_data.shape)
    dtype = property(lambda self: self._masked_data.dtype)
    device = property(lambda self: self._masked_data.device)
    layout = property(lambda self: self._masked_data.layout)
    requires_grad = property(lambda self: self._masked_data.requires_grad)
    ndim = property(lambda self: self._masked_data.ndim)
    is_sparse = property(lambda self: False)

    def dim(self) -> int:
        return self._masked_data.dim()

    def size(self, dim: int | None = None) -> Any:
        return self._masked_data.size(dim)

    def is_sparse_coo(self) -> bool:
        return False

    def is_sparse_csr(self) -> bool:
        return False

    def __repr__(self) -> str:
        formatter = "{0:8.4f}"
        if self.dim() == 0:
            value = self.get_data().item()
            text = formatter.format(value) if isinstance(value, float) else str(value)
            if not self.get_mask().item():
                text = "--"
            return f"MaskedTensor({text}, {self.get_mask().item()})"
        s = _masked_tensor_str(self.get_data(), self.get_mask(), formatter)
        return "MaskedTensor(\n" + "\n".join("  " + si for si in s.split("\n")) + "\n)"

    # -- reductions: over the specified elements; specified where any element was -----------

    def _reduce(self, name: str, dim: Any, keepdim: bool, **kwargs: Any) -> MaskedTensor:
        from ember import masked

        mask = self.get_mask()
        data = getattr(masked, name)(self._masked_data, dim, keepdim=keepdim, mask=mask,
                                     **kwargs)
        dims = tuple(range(mask.ndim)) if dim is None else \
            ((dim,) if isinstance(dim, int) else tuple(dim))
        return MaskedTensor(data, mask.any(dims, keepdim=keepdim) if dims else mask)

    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> MaskedTensor:
        return self._reduce("sum", dim, keepdim, dtype=dtype)

    def mean(self, dim: Any = None, keepdim: bool = False, *,
             dtype: Any = None) -> MaskedTensor:
        return self._reduce("mean", dim, keepdim, dtype=dtype)

    def amax(self, dim: Any = None, keepdim: bool = False) -> MaskedTensor:
        return self._reduce("amax", dim, keepdim)

    def amin(self, dim: Any = None, keepdim: bool = False) -> MaskedTensor:
        return self._reduce("amin", dim, keepdim)

    def prod(self, dim: Any = None, keepdim: bool = False, *,
             dtype: Any = None) -> MaskedTensor:
        return self._reduce("prod", dim, keepdim, dtype=dtype)

    # -- elementwise: the data combined, the mask kept ------------------------------------

    def _binary(self, other: Any, fn: Callable[[Any, Any], Any]) -> MaskedTensor:
        if is_masked_tensor(other):
            if not ember.equal(self.get_mask(), other.get_mask()):
                raise ValueError("Input masks must match. If you need support for this, "
                                 "please open an issue on Github.")
            other = other._masked_data
        return MaskedTensor(fn(self._masked_data, other), self.get_mask())

    def __neg__(self) -> MaskedTensor:
        return MaskedTensor(-self._masked_data, self.get_mask())

    def __abs__(self) -> MaskedTensor:
        return MaskedTensor(self._masked_data.abs(), self.get_mask())


def _operator(fn: Callable[[Any, Any], Any]) -> Callable:
    def method(self: MaskedTensor, other: Any) -> MaskedTensor:
        return self._binary(other, fn)
    return method


# (PyTorch's MaskedTensor has no reflected operators: `2 - mt` raises TypeError there too)
for _name in ("add", "sub", "mul", "truediv", "pow"):
    setattr(MaskedTensor, f"__{_name}__", _operator(getattr(operator, _name)))


def _masked_tensor_str(data: Tensor, mask: Tensor, formatter: str) -> str:
    """PyTorch's nested-list text: each value formatted (floats by `formatter`), `--`
    right-aligned to 8 characters where unspecified."""
    if data.dim() == 1:
        values = [d.item() for d in data]
        texts = [formatter.format(v) if isinstance(v, float) else str(v) for v in values]
        hidden = [not m for m in mask.tolist()]
        width = max(8 if h else len(t) for t, h in zip(texts, hidden))
        return "[" + ", ".join("--".rjust(width) if h else t
                               for t, h in zip(texts, hidden)) + "]"
    subs = [_masked_tensor_str(d, m, formatter) for d, m in zip(data, mask)]
    subs = ["\n".join("  " + si for si in s.split("\n")) for s in subs]
    return "[\n" + ",\n".join(subs) + "\n]"


def masked_tensor(data: Tensor, mask: Tensor, requires_grad: bool = False) -> MaskedTensor:
    """A MaskedTensor of a copy of `data` (detached) and `mask`."""
    return MaskedTensor(data.detach().clone(), mask, requires_grad)


def as_masked_tensor(data: Tensor, mask: Tensor) -> MaskedTensor:
    """A MaskedTensor of `data` itself (differentiable through it) and `mask`."""
    return MaskedTensor(data, mask)
