"""`Parameter` and `Buffer`: the tensor kinds a `Module` registers when they are assigned
as attributes."""

from __future__ import annotations

from typing import Any

import ember
from ember import Tensor
from ember.core.dtype import printed_in_api
from ember.core.tensor import factory_requires_grad, set_state, user_state
from ember.core.torch_function import _disabled_torch_function_impl

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


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

    # ops on a parameter return plain tensors, as PyTorch's; it prints as a tensor
    __torch_function__ = _disabled_torch_function_impl
    _prints_as_tensor = True

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
        return factory_requires_grad(p) if requires_grad else p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        # (its .grad is not copied, as PyTorch's Parameter.__deepcopy__ does not)
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: int) -> Any:
        # (as PyTorch's: a Parameter, its attributes kept; a subclass's type is not)
        state = user_state(self) if self.__dict__ else None
        return (_rebuild_parameter, (self.detach(), self.requires_grad, state or None))


def _rebuild_parameter(data: Tensor, requires_grad: bool, state: Any = None) -> Parameter:
    param = Parameter(data, requires_grad)
    if state:
        set_state(param, state)
    return param


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

    __torch_function__ = _disabled_torch_function_impl  # (its instances are plain tensors)

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:
        if data is None:
            data = ember.empty(0)
        t = data.detach()
        if data.requires_grad:
            t.requires_grad_(True)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedTensorMixin:
    """What uninitialized parameters and buffers share: an empty placeholder that a lazy
    module replaces, in place, with a tensor of the inferred shape (`materialize`)."""

    cls_to_become: type
    __torch_function__ = _disabled_torch_function_impl

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        r"""Give the tensor its shape, in place: the object becomes a ``cls_to_become``
        (a :class:`Parameter` or a Tensor) of that shape, uninitialized values, on its own
        device and dtype unless `device`/`dtype` say otherwise. An optimizer holding it
        keeps working, as the object stays the same.

        Args:
            shape (tuple): the shape of the materialized tensor.
            device (ember.device, optional): its device. Default: this tensor's.
            dtype (ember.dtype, optional): its dtype. Default: this tensor's.
        """
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = ember.empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    def _placeholder(self) -> Tensor:
        """The empty tensor this one holds, as a plain tensor."""
        return Tensor._make(self._data, self._dtype, self._device, self._backend)

    def _converted(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """A conversion (`to`, `cuda`, `double`...: what a module's `to` applies before
        the first forward) of the placeholder, still uninitialized, as PyTorch's are."""
        out = getattr(self._placeholder(), method)(*args, **kwargs)
        if not isinstance(out, Tensor):
            return out  # type() without arguments: the type's name
        lazy = type(self)._make(out._data, out._dtype, out._device, out._backend)
        if self.requires_grad:
            lazy.requires_grad_(True)
        lazy.__dict__.update(self.__dict__)
        return lazy

    def to(self, *args: Any, **kwargs: Any) -> Any:
        return self._converted("to", *args, **kwargs)

    def cuda(self, *args: Any, **kwargs: Any) -> Any:
        return self._converted("cuda", *args, **kwargs)

    def cpu(self, *args: Any, **kwargs: Any) -> Any:
        return self._converted("cpu", *args, **kwargs)

    def type(self, *args: Any, **kwargs: Any) -> Any:
        return self._converted("type", *args, **kwargs)

    def half(self) -> Any:
        return self._converted("half")

    def bfloat16(self) -> Any:
        return self._converted("bfloat16")

    def float(self) -> Any:
        return self._converted("float")

    def double(self) -> Any:
        return self._converted("double")

    @property
    def shape(self) -> Any:
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error "
            "usually happens in `load_state_dict` when trying to load an uninitialized "
            "parameter into an initialized one. Call `forward` to initialize the parameters "
            "before accessing their attributes.")

    def share_memory_(self) -> Any:
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, protocol: int) -> Any:
        return (self.__class__, (self.requires_grad,))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    r"""A parameter whose shape is not known yet (a lazy module's ``weight`` before its
    first forward). Its first forward calls :meth:`materialize`, which turns it into a
    :class:`Parameter` of the inferred shape, in place.

    Args:
        requires_grad (bool, optional): Default: ``True``
        device, dtype: of the parameter it becomes.
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None,
                dtype: Any = None) -> UninitializedParameter:
        return super().__new__(cls, ember.empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        pass

    def __deepcopy__(self, memo: dict) -> UninitializedParameter:
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    r"""A buffer whose shape is not known yet (a lazy batch norm's running statistics);
    :meth:`materialize` turns it into a plain tensor of the inferred shape, in place.

    Args:
        requires_grad (bool, optional): Default: ``False``
        device, dtype: of the tensor it becomes.
        persistent (bool, optional): part of the module's ``state_dict``. Default: ``True``
    """

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> UninitializedBuffer:
        data = ember.empty(0, device=device, dtype=dtype)
        t = cls._make(data._data, data._dtype, data._device, data._backend)
        if requires_grad:
            t.requires_grad_(True)
        t.persistent = persistent
        return t

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                 persistent: bool = True) -> None:
        pass


def is_lazy(param: Any) -> bool:
    """Whether `param` is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)
