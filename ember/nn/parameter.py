"""`Parameter` and `Buffer`: the tensor kinds a `Module` registers when they are assigned
as attributes."""

from __future__ import annotations

from typing import Any

import ember
from ember import Tensor
from ember.core.dtype import printed_in_api

__all__ = ["Parameter", "Buffer"]


@printed_in_api(".nn.parameter")  # <class 'torch.nn.parameter.Parameter'> under the alias
class Parameter(Tensor):
    r"""A kind of Tensor that is to be considered a module parameter.

    Parameters are :class:`~ember.Tensor` subclasses that, when assigned as attributes of
    a :class:`Module`, are added to its list of parameters (and appear in
    :meth:`Module.parameters`). Assigning a plain Tensor has no such effect.

    Args:
        data (Tensor): parameter tensor. The parameter shares its storage (and version
            counter) with it, as ``torch.nn.Parameter`` does.
        requires_grad (bool, optional): if the parameter requires gradient. ``no_grad``
            does not change this default. Default: ``True``
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be a Tensor, not "
                            f"{type(data).__name__}")
        # A new leaf over the same storage: an in-place write through either is seen by
        # both, and they share the version counter (as `detach()` does).
        p = cls._make(data._data, data._dtype, data._device, data._backend)
        p._vc = data._vc
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            result.grad = self.grad.detach().clone()
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    # `isinstance(t, Buffer)` is true for the plain tensors `Buffer(...)` returns
    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


@printed_in_api(".nn.parameter")
class Buffer(Tensor, metaclass=_BufferMeta):
    r"""A kind of Tensor that should not be considered a model parameter but is part of
    the module's state (e.g. BatchNorm's ``running_mean``).

    Assigning a ``Buffer`` as a :class:`Module` attribute registers it as a buffer, as
    :meth:`Module.register_buffer` does.

    Args:
        data (Tensor): buffer tensor.
        persistent (bool, optional): whether the buffer is part of the module's
            :attr:`state_dict`. Default: ``True``
    """

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:
        if data is None:
            data = ember.empty(0)
        t = data.detach()
        if data.requires_grad:
            t.requires_grad_(True)
        t.persistent = persistent
        t._is_buffer = True
        return t
