"""`Variable`, PyTorch's deprecated wrapper: since PyTorch 0.4 a tensor is a Variable, so
`Variable(t)` just returns a tensor, and every tensor is an instance of `Variable`."""

from __future__ import annotations

import warnings
from typing import Any

from ember.core.creation import empty
from ember.core.tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Variable(data=None, requires_grad=False, volatile=False) -> Tensor

    Deprecated: returns `data` detached (sharing its storage) with `requires_grad` set;
    with no data, an empty tensor. `volatile` has no effect (use `ember.no_grad()`).
    `isinstance(t, Variable)` holds for every tensor.
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = False,
                volatile: bool = False) -> Tensor:  # type: ignore[misc]
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            return empty(0).requires_grad_(bool(requires_grad))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        return data.detach().requires_grad_(bool(requires_grad))
