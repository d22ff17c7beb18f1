"""The Tensor: a backend buffer, its dtype and device, and its place in the autograd graph.

This module holds what a tensor *is*: its fields, attributes, conversions to Python and
NumPy, and its autograd entry points. Its ops (`x.add(y)`, `x + y`, `x.sum()`, `x.add_(y)`
...) are not written here: each op is declared once (ember.core.ops) and its declaration
attaches the methods, operators and in-place variants it names to this class.
"""

from __future__ import annotations

import math
import operator
import warnings
import weakref
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

from ember.core import dtype as dt
from ember.core import engine, grad_mode, torch_function, tracing
from ember.core.backend import Backend
from ember.core.device import device as Device
from ember.core.errors import legacy_new_keywords, type_name, warn_once, with_context
from ember.core.grad_mode import InferenceVersion, new_version
from ember.core.grad_mode import state as grad_state
from ember.core.graph import Node, refresh_view, relabel, shown_as
from ember.core.hooks import RemovableHandle
from ember.core.host import dtype_arg, host_array, to_host
from ember.core.placement import resolve
from ember.core.printing import tensor_repr
from ember.core.shapes import normalize_dim
from ember.core.view_strides import view_offset, view_strides

# the dtypes NumPy has no type for: `numpy()` refuses them (PyTorch's TypeError)
_NUMPY_LESS = frozenset((dt.bfloat16, dt.complex32, *dt.FLOAT8_DTYPES))

_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


def _warn_t_once(ndim: int) -> None:
    """PyTorch's deprecation of `x.T` off matrices, once per process for each wording (its
    TORCH_WARN_ONCE)."""
    if ndim == 0:
        msg = ("Tensor.T is deprecated on 0-D tensors. This function is the identity in these "
               "cases.")
    else:
        msg = ("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
               "deprecated and it will throw an error in a future release. Consider `x.mT` to "
               "transpose batches of matrices or `x.permute(*" + dt.API_NAME + ".arange(x.ndim - "
               "1, -1, -1))` to reverse the dimensions of a tensor.")
    warn_once(msg, UserWarning, stacklevel=3)


@dt.printed_in_api()  # <class 'ember.Tensor'>, <class 'torch.Tensor'> under the alias
class Tensor:
    """A multi-dimensional array on a device, with PyTorch's semantics.

    Create tensors with `ember.tensor`, `ember.zeros`, ... rather than this class.
    """

    # Fields every tensor sets live in slots; the rarely set ones below are class-level
    # defaults that an instance overrides in its __dict__ only when needed. This keeps
    # creating a tensor (every op's output) cheap.
    __slots__ = ("_data", "_dtype", "_device", "_backend", "_requires_grad", "_node", "_vc",
                 "__weakref__", "__dict__")
    _output_nr = 0  # which output of `_node` this tensor is
    _grad_acc = None  # the AccumulateGrad node of a leaf that requires grad
    _grad = None
    _base = None  # the tensor whose storage a view shares
    _conj_view = False  # a conj() result, or a view of one: PyTorch's conjugate bit (is_conj)
    _strides_of = None  # a view's recipe for PyTorch's strides (ember.core.view_strides)
    _strides_depth = 0  # how many views deep that recipe chain is
    _view_fn = None  # recreates this view from `_base` (for in-place writes through it)
    _view_vc = 0  # the version at which this view's graph node was taken from its base
    _view_mode = None  # "no_grad" / "inference": the view was made with grad mode off;
    # "multi": it is one of the views an op returned several of (split), or a view of one
    _multi_output = None  # which of those several views this one is
    _hooks = None  # gradient hooks of a leaf
    _post_accumulate_hooks = None  # hooks run after a leaf's .grad is accumulated
    _shared = False  # share_memory_ was called
    _grad_dtype: Any = "same"  # the dtype backward casts a leaf's gradient to (None: none)
    is_sparse = False  # True for the sparse COO tensors (ember.core.sparse_coo)
    is_quantized = False  # True for the quantized tensors (ember.core.quantized)
    _fw_tangent = None  # the forward-AD tangent at the dual level (ember.core.forward_ad)
    _prints_as_tensor = True  # repr's prefix is `tensor(`, not the class name (read per class)

    # -- construction -----------------------------------------------------------------
    @classmethod
    def _make(cls, data: Any, dtype: dt.dtype, device: Device, backend: Backend) -> Tensor:
        t = object.__new__(cls)
        t._data = data
        t._dtype = dtype
        t._device = device
        t._backend = backend
        t._requires_grad = False
        t._node = None
        t._vc = new_version() if grad_mode.inference_entered else [0]
        if tracing.tape is not None:
            tracing.tape.created(t)
        return t

    @classmethod
    def _from_data(cls, data: Any, dtype: Any = None, device: Any = None,
                   op: str = "tensor") -> Tensor:
        """A new tensor holding a copy of `data` (a number, nested lists, an array); `op`
        names the factory in argument errors."""
        arr, d = to_host(data, dtype_arg(dtype, op))
        dev, backend = resolve(device)
        if d not in backend.dtypes:
            from ember.core.dispatch import check_dtype

            check_dtype("tensor", backend, d, dev)
        return cls._make(backend.from_numpy(arr, dev.index or 0), d, dev, backend)

    def __new__(cls, *args: Any, device: Any = None, **kwargs: Any) -> Tensor:
        """`torch.Tensor(...)`, the legacy constructor of the default dtype (float32):
        `Tensor(2, 3)` or `Tensor(size)` is uninitialised, `Tensor(data)` a copy of lists or
        an array converted to that dtype (as PyTorch: `Tensor(float64_array)` is float32),
        `Tensor(t)` the tensor `t` itself (PyTorch: an alias of it, of its dtype)."""
        if kwargs:  # PyTorch's legacy constructor takes no dtype nor requires_grad
            raise legacy_new_keywords(args, {"device": device, **kwargs}
                                      if device is not None else kwargs)
        if len(args) == 1 and isinstance(args[0], Tensor):
            return args[0]  # PyTorch returns an alias of any tensor, keeping its dtype
        d = dt.get_default_dtype()
        # sizes: ints, or (from the second on) one-element integer tensors, as PyTorch's
        # `Tensor(2, lengths[0])`
        if args and all(isinstance(a, int) and not isinstance(a, bool) or
                        i and isinstance(a, Tensor) and a.numel() == 1 and
                        not a._dtype.is_floating_point and not a._dtype.is_complex
                        for i, a in enumerate(args)) or \
                len(args) == 1 and isinstance(args[0], Size):
            shape = tuple(args[0]) if isinstance(args[0], Size) else tuple(int(a) for a in args)
            if any(n < 0 for n in shape):
                raise RuntimeError(f"Trying to create tensor with negative dimension "
                                   f"{min(shape)}: {list(shape)}")
            dev, backend = resolve(device)
            t = cls._make(backend.empty(shape, d, dev.index or 0), d, dev, backend)
        else:
            if args and isinstance(args[0], str):
                raise TypeError("new(): invalid data type 'str'")
            t = cls._from_data(args[0] if args else [], d, device)
        return t

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    # -- subclasses and __torch_function__ (ember.core.torch_function) ------------------
    __torch_function__ = classmethod(torch_function.default_torch_function)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        torch_function.subclass_defined(cls)
        # ember's own subclasses stand for PyTorch's tensor types (told apart from a
        # program's where they are made: the printed names change their __module__ later)
        if cls.__module__.partition(".")[0] == "ember":
            _EMBER_CLASSES.add(cls)

    def as_subclass(self, cls: type) -> Tensor:
        """A `cls` instance sharing this tensor's data, attached to the autograd graph
        (a view of this tensor, as in PyTorch): changes through either are seen by both.

        Args:
            cls (type): a subclass of Tensor.
        """
        from ember.core.grad_mode import state

        _check_subclass(cls)
        with torch_function.DisableTorchFunction():
            if self._requires_grad and state.enabled:
                out = relabel(self.view_as(self), "AliasBackward0", (self,))
            else:
                out = _alias(self)
        try:
            out.__class__ = cls
        except TypeError:  # a subclass with __slots__ of its own: another object layout
            out = _moved_into(out, cls)
        return out

    @staticmethod
    def _make_subclass(cls: type, data: Tensor, require_grad: bool = False, **_: Any
                       ) -> Tensor:
        """A `cls` instance sharing `data`'s storage, outside the autograd graph (a new
        leaf), requiring grad if `require_grad` (PyTorch's `Tensor._make_subclass`)."""
        _check_subclass(cls)
        out = cls._make(data._data, data._dtype, data._device, data._backend)
        out._vc = data._vc
        if require_grad:
            out.requires_grad_(True)
        return out

    # -- attributes -------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return _tuple_new(Size, self._data.shape)  # (unchecked: the hot path)

    @property
    def dtype(self) -> dt.dtype:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def requires_grad(self) -> bool:
        # a view made with grad mode off still requires grad while its base does (PyTorch's
        # DifferentiableViewMeta), though nothing recorded it
        return self._requires_grad or (self._view_mode is not None and self._base.requires_grad)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        # (PyTorch words this refusal three ways: here, in `requires_grad_()` and in the
        # factories' `requires_grad=True`, see `factory_requires_grad`)
        if type(value) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        if value and not self._dtype._differentiable:
            raise with_context(RuntimeError("only Tensors of floating point and complex dtype "
                                            "can require gradients"), f"got {self._dtype}")
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set whether autograd records ops on this tensor (leaves only), in place."""
        if type(requires_grad) is not bool:
            name = "Tensor" if isinstance(requires_grad, Tensor) else type_name(requires_grad)
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be "
                            f"bool, not {name}")
        if self._node is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        if requires_grad and not self._dtype._differentiable:
            raise with_context(RuntimeError("only Tensors of floating point dtype can require "
                                            "gradients"), f"got {self._dtype}")
        if requires_grad and type(self._vc) is InferenceVersion and not grad_state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self) -> Tensor | None:
        if self._grad is None and self._node is not None and not self.retains_grad:
            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                                f"{type(value).__name__}")
            want = self._dtype if self._grad_dtype == "same" else self._grad_dtype
            if want is not None and value._dtype is not want:
                from ember.core.storage import cpp_type_name, scalar_type_name
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{cpp_type_name(value._dtype)}'"
                    f" to a tensor with grad_dtype '{scalar_type_name(want)}'. The gradient "
                    "must match the tensor's grad_dtype (defaults to the tensor's dtype). You "
                    "can set the tensor's grad_dtype attribute with a specific dtype, or None "
                    "to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of "
                    "a tensor and its gradient may break downstream systems that assume they "
                    "match.")
            if value.shape != self.shape:
                raise RuntimeError(f"attempting to assign a gradient of size "
                                   f"'{list(value.shape)}' to a tensor of size "
                                   f"'{list(self.shape)}'. Please ensure that the gradient and "
                                   "the tensor are the same size")
            if value._device is not self._device:
                raise RuntimeError(f"assigned grad has data located on a different device: "
                                   f"{value._device} vs {self._device}")
        self._grad = value

    @property
    def grad_fn(self) -> Node | None:
        if self._view_fn is not None and self._view_vc != self._vc[0] and self._requires_grad:
            refresh_view(self)  # written in place since: PyTorch regenerates it on access
        return shown_as(self._node)

    @property
    def _version(self) -> int:
        if type(self._vc) is InferenceVersion:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vc[0]

    @property
    def data(self) -> Tensor:
        """This tensor's values outside autograd: `detach()`, but with a version counter of
        its own, as PyTorch's, so writes through it (Tacotron 2's
        `outputs[0].data.masked_fill_(mask, 0.0)`) go unseen by the graph."""
        out = self.detach()
        if type(out._vc) is not InferenceVersion:
            out._vc = [0]
        return out

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        self._data, self._dtype = value._data, value._dtype
        self._device, self._backend = value._device, value._backend

    @property
    def T(self) -> Tensor:  # noqa: N802
        if self.ndim != 2:
            _warn_t_once(self.ndim)
        return self.permute(tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> Tensor:  # noqa: N802
        if self.ndim == 1:  # (PyTorch gives a 0-D tensor back itself)
            raise RuntimeError("tensor.mT is only supported on matrices or batches of "
                               "matrices. Got 1-D tensor.")
        return self if self.ndim == 0 else self.transpose(-2, -1)

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def get_device(self) -> int:
        """The index of the device holding this tensor; -1 for the CPU."""
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    def size(self, dim: int | None = None) -> Size | int:
        if dim is None:
            return self.shape
        return self._data.shape[normalize_dim("size", dim, self.ndim)]

    def dim(self) -> int:
        return len(self._data.shape)

    def numel(self) -> int:
        return math.prod(self._data.shape)

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def type_name(self) -> str:
        """PyTorch's legacy type name (`torch.FloatTensor`), as its messages print it."""
        return self.type()

    # -- memory layout (SHAPE family: tensor attributes) --------------------------------
    def stride(self, dim: int | None = None) -> tuple[int, ...] | int:
        """The step, in elements, between neighbours along each dimension (`dim`'s)."""
        shape = self._data.shape
        if 0 in shape:  # NumPy's strides of an empty array are its own: PyTorch's view's
            # rules, else row-major
            strides = view_strides(self) if self._strides_of is not None else None
            if strides is None:
                strides = [1] * len(shape)
                for d in range(len(shape) - 2, -1, -1):
                    strides[d] = strides[d + 1] * max(shape[d + 1], 1)
            return tuple(strides) if dim is None else \
                strides[normalize_dim("stride", dim, self.ndim)]
        strides = list(self._backend.strides(self._data))
        for d in range(len(strides) - 1, -1, -1):
            # a dimension of size 1 added by indexing with None or by expand has stride 0
            # in NumPy-like backends; PyTorch gives it unsqueeze's stride
            if shape[d] == 1 and strides[d] == 0:
                strides[d] = shape[d + 1] * strides[d + 1] if d + 1 < len(strides) else 1
        if self._strides_of is not None and 1 in shape:
            # size-1 dims address no memory: a view's are PyTorch's choice, replayed by
            # its rules (and taken only where they agree with the buffer on every other dim)
            replayed = view_strides(self)
            if replayed is not None and all(r == s or n == 1 for r, s, n
                                            in zip(replayed, strides, shape)):
                strides = replayed
        strides = tuple(strides)
        if dim is None:
            return strides
        return strides[normalize_dim("stride", dim, self.ndim)]

    def storage_offset(self) -> int:
        """Where this tensor's first element lies in its storage, in elements."""
        if self._strides_of is not None and 0 in self._data.shape:
            offset = view_offset(self)  # (an empty array keeps no offset)
            if offset is not None:
                return offset
        return self._backend.storage_offset(self._data)

    def data_ptr(self) -> int:
        """The address of the first element (views of one storage differ by their
        `storage_offset` times the element size)."""
        return self._backend.data_ptr(self._data)

    const_data_ptr = data_ptr

    def _storage_owner(self) -> Tensor:
        return self._base if self._base is not None else self

    def untyped_storage(self) -> Any:
        """The memory this tensor shares with its views, counted in bytes."""
        from ember.core.storage import UntypedStorage

        return UntypedStorage._of(self._storage_owner())

    def storage(self) -> Any:
        """The memory this tensor shares with its views, as a typed 1-D array."""
        from ember.core.storage import TypedStorage, warn_typed_storage_removal

        warn_typed_storage_removal(stacklevel=2)
        return TypedStorage._of(self._storage_owner())

    def storage_type(self) -> type:
        """The class of `storage()` (`ember.FloatStorage` for float32 ...)."""
        from ember.core.storage import storage_type

        return storage_type(self._dtype)

    @property
    def nbytes(self) -> int:
        return self.numel() * self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def layout(self) -> Any:
        from ember.core.storage import strided

        return strided

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def name(self) -> None:
        return None  # named tensors are not supported

    @property
    def volatile(self) -> bool:
        import warnings

        warnings.warn("volatile was removed (Variable.volatile is always False)",
                      UserWarning, stacklevel=2)
        return False

    @property
    def grad_dtype(self) -> dt.dtype | None:
        """The dtype backward gives this leaf's `.grad` (its own dtype unless set; None:
        whatever dtype the gradient has)."""
        if self._node is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return self._dtype if self._grad_dtype == "same" else self._grad_dtype

    @grad_dtype.setter
    def grad_dtype(self, value: dt.dtype | None) -> None:
        if self._node is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, dt.dtype):
            raise RuntimeError(f"grad_dtype must be a {dt.API_NAME}.dtype or None, but got "
                               f"{type(value).__name__}")
        self._grad_dtype = value

    @property
    def is_meta(self) -> bool:
        return self._device.type == "meta"

    @property
    def is_mps(self) -> bool:
        return self._device.type == "mps"

    @property
    def is_xla(self) -> bool:
        return self._device.type == "xla"

    @property
    def is_xpu(self) -> bool:
        return self._device.type == "xpu"

    @property
    def is_mtia(self) -> bool:
        return self._device.type == "mtia"

    @property
    def is_ipu(self) -> bool:
        return self._device.type == "ipu"

    @property
    def is_vulkan(self) -> bool:
        return self._device.type == "vulkan"

    @property
    def is_mkldnn(self) -> bool:
        """False: ember has no MKL-DNN (opaque) layout."""
        return False

    @property
    def is_nested(self) -> bool:
        """False: ember has no nested tensors."""
        return False

    @property
    def is_maia(self) -> bool:
        return self._device.type == "maia"

    def is_shared(self) -> bool:
        """Whether the tensor's memory is shared with other processes (`share_memory_`)."""
        return self._shared

    def share_memory_(self) -> Tensor:
        """Moves the storage to shared memory, in place: processes forked afterwards, and
        processes the tensor is sent to through `ember.multiprocessing`, then work on the
        same memory (Hogwild training). A no-op if already shared, and on devices whose
        memory is reached by other means (CUDA). A view moves its base and is re-derived
        from it; other views of that base taken earlier keep the old memory, so share a
        tensor before taking views of it (`Module.share_memory()` does).

        Returns:
            Tensor: self
        """
        if self._shared:
            return self
        base = self._base
        if base is not None:
            if self._view_fn is None:
                raise RuntimeError("share_memory_(): this view cannot be re-derived from "
                                   "the tensor it views; call share_memory_() on that "
                                   "tensor first, then take the view")
            base.share_memory_()
            from ember.core import grad_mode

            with grad_mode.no_grad():
                self._data = self._view_fn(base)._data
        else:
            moved = self._backend.share_memory(self._data)
            if moved is not None:
                self._data = moved
        self._shared = True
        return self

    def ndimension(self) -> int:
        return self.dim()

    @property
    def H(self) -> Tensor:  # noqa: N802
        if self.ndim not in (0, 2):
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self.ndim}-D tensor."
                               + (" For batches of matrices, consider using tensor.mH"
                                  if self.ndim > 2 else ""))
        return self.adjoint() if self.ndim == 2 else self.view_as(self)

    @property
    def mH(self) -> Tensor:  # noqa: N802
        if self.ndim == 1:  # (PyTorch gives a 0-D tensor back itself)
            raise RuntimeError("tensor.mH is only supported on matrices or batches of "
                               "matrices. Got 1-D tensor.")
        return self if self.ndim == 0 else self.adjoint()

    def resize_(self, *sizes: Any, memory_format: Any = None) -> Tensor:
        """Gives this tensor the shape `sizes` in place: its first elements are kept (in
        row-major order), any new ones are uninitialized."""
        from ember.core.ops.shape import sizes_arg

        shape = sizes_arg(sizes)
        if self._requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        if any(s < 0 for s in shape):  # (PyTorch's words: its size product overflows)
            raise RuntimeError("numel: integer multiplication overflow")
        if shape == tuple(self.shape):
            return self
        if self._base is not None:
            raise RuntimeError("resize_: a view of another tensor cannot be resized")
        keep = min(self.numel(), math.prod(shape))
        old = self.detach().reshape(-1)[:keep].clone()
        self._data = self._backend.empty(shape, self._dtype, self._device.index or 0)
        if keep:
            self.detach().view(-1)[:keep].copy_(old)
        self._vc[0] += 1
        return self

    def resize(self, *sizes: Any) -> Tensor:
        """Deprecated: this tensor viewed with the shape `sizes`, which must hold as many
        elements (the differentiable form of `resize_`)."""
        from ember.core.ops.shape import sizes_arg

        return self._resized(sizes_arg(sizes), "resize")

    def resize_as(self, tensor: Tensor) -> Tensor:
        """Deprecated: `resize` to the shape of `tensor`."""
        return self._resized(tuple(tensor.shape), "resize_as")

    def _resized(self, shape: tuple[int, ...], op: str) -> Tensor:
        import warnings

        warnings.warn(f"non-inplace {op} is deprecated", UserWarning, stacklevel=3)
        if math.prod(shape) != self.numel():
            raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} "
                               f"({math.prod(shape)} elements in total), but the given tensor "
                               f"has a size of {'x'.join(map(str, self.shape))} "
                               f"({self.numel()} elements). autograd's resize can only change "
                               "the shape of a given tensor, while preserving the number of "
                               "elements. ")
        return self.reshape(shape)

    def is_set_to(self, tensor: Tensor) -> bool:
        """Whether this tensor and `tensor` are the same view of the same memory (storage,
        offset, shape and strides)."""
        return (self._storage_owner() is tensor._storage_owner()
                or self.data_ptr() - self.storage_offset() * self.element_size()
                == tensor.data_ptr() - tensor.storage_offset() * tensor.element_size()) \
            and self.storage_offset() == tensor.storage_offset() \
            and tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride()

    def resize_as_(self, the_template: Tensor, memory_format: Any = None) -> Tensor:
        """`resize_` to the shape of `the_template`."""
        return self.resize_(tuple(the_template.shape))

    def set_(self, source: Any = None, storage_offset: int = 0, size: Any = None,
             stride: Any = None) -> Tensor:
        """Makes this tensor share `source`'s memory, shape and dtype (a tensor); with
        no source, an empty tensor."""
        if self._requires_grad and self._node is None:
            raise RuntimeError("set_: a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if source is not None and not isinstance(source, Tensor) and \
                hasattr(source, "_owner"):  # a storage: a tensor over all of it
            from ember.core.storage import UntypedStorage, cpp_type_name, scalar_type_name

            flat = source._owner.detach().reshape(-1)
            if isinstance(source, UntypedStorage):
                flat = flat.view(self._dtype)
            elif source.dtype is not self._dtype:
                raise RuntimeError(f"Expected a Storage of type {cpp_type_name(self._dtype)} "
                                   "or an UntypedStorage, but got type "
                                   f"{scalar_type_name(source.dtype)} for argument 1 "
                                   "'storage'")
            source = flat if size is not None or storage_offset else flat.view(-1)
            if size is None and storage_offset:
                size = (flat.numel() - storage_offset,)
        if source is None:
            self._data = self._backend.empty((0,), self._dtype, self._device.index or 0)
        elif isinstance(source, Tensor):
            if size is not None:
                if stride is None:
                    stride = tuple(math.prod(size[d + 1:]) for d in range(len(size)))
                source = source.as_strided(size, stride, storage_offset)
            owner = source._storage_owner()
            self._data, self._dtype = source._data, source._dtype
            self._device, self._backend = source._device, source._backend
        else:
            raise TypeError(f"set_(): expected a Tensor source, got {type(source).__name__}")
        # no longer a view of its old base: its storage is now `source`'s (or its own)
        self.__dict__.pop("_view_fn", None)
        self.__dict__.pop("_base", None)
        if source is not None and owner is not self:
            self._base = owner
        self._vc[0] += 1
        return self

    def _apply_python(self, op: str, fn: Callable, *others: Tensor) -> Tensor:
        if self._device.type != "cpu":
            raise RuntimeError(f"{op} is only implemented on CPU tensors")
        import numpy as np

        args = [host_array(self)] + [host_array(o.expand_as(self)) for o in others]
        values = np.vectorize(fn, otypes=[args[0].dtype])(*args)
        from ember.core.creation import tensor

        self.copy_(tensor(values, dtype=self._dtype))
        return self

    def apply_(self, callable: Callable) -> Tensor:  # noqa: A002 - PyTorch's name
        """Replaces each element `x` with `callable(x)` (CPU tensors; slow, as PyTorch's)."""
        return self._apply_python("apply_", callable)

    def map_(self, tensor: Tensor, callable: Callable) -> Tensor:  # noqa: A002
        """Replaces each element `x` with `callable(x, y)`, `y` from `tensor` (broadcast)."""
        return self._apply_python("map_", callable, tensor)

    def map2_(self, x: Tensor, y: Tensor, callable: Callable) -> Tensor:  # noqa: A002
        """Replaces each element `a` with `callable(a, b, c)`, `b` and `c` from `x` and `y`."""
        return self._apply_python("map2_", callable, x, y)

    # -- conversion -------------------------------------------------------------------
    def item(self) -> bool | int | float:
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                               "Scalar")
        self._check_has_data("item")
        tracing.note_python_value(self, "item")
        return host_array(self).item()  # (NumPy's item() takes any one-element array)

    def tolist(self) -> Any:
        tracing.note_python_value(self, "tolist")
        return host_array(self).tolist()

    def numpy(self, *, force: bool = False) -> Any:
        """A NumPy array of the values; shares memory with a CPU tensor. `force`: a
        copy where sharing is impossible (a tensor that requires grad, on another device,
        or with the conjugate bit)."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._device.type != "cpu" and not force:
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        arr = host_array(self)  # (forced, a meta tensor's "no data" error comes first)
        if self._dtype in _NUMPY_LESS:
            raise TypeError("Got unsupported ScalarType "
                            f"{dt.SCALAR_TYPE_NAMES[self._dtype.name]}")
        if self._conj_view and not force and self._dtype.is_complex:
            raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. Use "
                               "tensor.resolve_conj().numpy() instead.")
        return arr

    def pin_memory(self) -> Tensor:
        """A copy of this CPU tensor in page-locked memory, for asynchronous copies to an
        accelerator (`to(device, non_blocking=True)`); itself if pinned already."""
        from ember.core import pinning

        return pinning.pin_memory(self)

    def is_pinned(self) -> bool:
        """Whether this tensor is in page-locked host memory."""
        from ember.core import pinning

        return pinning.is_pinned(self)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: Any = None) -> Any:
        """A DLPack capsule sharing this tensor's memory (the DLPack protocol)."""
        from ember.core import dlpack

        return dlpack.tensor_dlpack(self, stream=stream, max_version=max_version,
                                    dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        from ember.core import dlpack

        return dlpack.tensor_dlpack_device(self)

    # NumPy defers to Tensor's reflected operators (`np.float64(2) * x` is a Tensor, as in
    # PyTorch) rather than turning the tensor into an array
    __array_priority__ = 1000

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        arr = self.numpy()  # (as PyTorch's __array__)
        return arr if dtype is None else arr.astype(dtype)

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False
                       ) -> Tensor:
        """NumPy's result of a ufunc that took this tensor (`np.sin(t)`, `t + array`), as a
        tensor sharing its memory: PyTorch's, which makes a bool result uint8 and a
        scalar result a 0-d tensor."""
        from ember.core.creation import from_numpy

        if array.dtype == bool:
            array = array.astype("uint8")
        return from_numpy(array)

    def __bool__(self) -> bool:
        n = self.numel()
        if n != 1:  # PyTorch's messages
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0
                               else "Boolean value of Tensor with more than one value is "
                                    "ambiguous")
        self._check_has_data("item")
        tracing.note_python_value(self, "bool")
        return bool(host_array(self).reshape(()).item())

    def __float__(self) -> float:
        self._one_element()
        if self._requires_grad:
            from ember.core.grad_mode import state

            if state.enabled:  # PyTorch warns once a process, where the graph is recorded
                warn_once("Converting a tensor with requires_grad=True to a scalar may lead "
                          "to unexpected behavior.\nConsider using tensor.detach() first.",
                          UserWarning, stacklevel=2)
        return float(self._real_item("double"))

    def __complex__(self) -> complex:
        return complex(self.item())

    def __int__(self) -> int:
        self._one_element()
        return int(self._real_item("int64_t"))

    def _real_item(self, c_type: str) -> Any:
        """The element as a real number: a complex one's real part when its imaginary part
        is zero, else PyTorch's overflow error naming the C++ type converted to."""
        value = self.item()
        if isinstance(value, complex):
            if value.imag:
                raise RuntimeError(f"value cannot be converted to type {c_type} without "
                                   "overflow")
            value = value.real
        return value

    def _check_has_data(self, method: str) -> None:
        """A meta tensor has no values to read (PyTorch's error)."""
        if self._backend.shape_only:
            raise RuntimeError(f"Tensor.{method}() cannot be called on {self._device.type} "
                               "tensors")

    def _one_element(self) -> None:
        """`float(t)` / `int(t)` of a tensor of other than one element: PyTorch's
        ValueError (`.item()` raises a RuntimeError of its own)."""
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")

    def __index__(self) -> int:
        if self._dtype.is_floating_point or self._dtype.is_complex or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __repr__(self) -> str:
        return tensor_repr(self)

    def __format__(self, format_spec: str) -> str:
        """`f"{loss:.4f}"`: a 0-d tensor formats as its Python number, as in PyTorch;
        any other tensor takes only the empty spec (its printed form)."""
        if self._data.ndim == 0 and type(self) is Tensor:
            return self.detach().item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __hash__(self) -> int:
        return id(self)

    def __iter__(self):
        if not self._data.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __reduce_ex__(self, protocol: int) -> Any:
        args = (host_array(self).copy(), str(self._device), self._requires_grad)
        state = user_state(self) if type(self) is not Tensor or self.__dict__ else None
        if type(self) is Tensor and not state:
            return (_rebuild_tensor, args)
        # a subclass, or attributes a program set: rebuilt as PyTorch rebuilds them
        return (_rebuild_from_type_v2, (_rebuild_tensor, type(self), args, state))

    def __deepcopy__(self, memo: dict) -> Tensor:
        if id(self) in memo:
            return memo[id(self)]
        if self._node is not None:  # (PyTorch's words, its double space included)
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.  If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        with torch_function.DisableTorchFunction():
            out = self.detach().clone()
        if type(self) is not Tensor:  # a subclass copies as itself (PyTorch's new_empty)
            out = Tensor._make_subclass(type(self), out)
        out._requires_grad = self._requires_grad
        if self._grad is not None:
            out._grad = self._grad.clone()
        memo[id(self)] = out
        if type(self) is not Tensor or self.__dict__:
            set_state(out, deepcopy(user_state(self), memo))
        return out

    def dequantize(self) -> Tensor:
        """The float values of a quantized tensor; a float tensor is itself (PyTorch's
        `x.dequantize()` of a float tensor)."""
        return self

    # -- autograd ---------------------------------------------------------------------
    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate the gradient of this tensor into the `.grad` of graph leaves."""
        engine.backward(self, gradient, retain_graph, create_graph, inputs)

    def detach(self) -> Tensor:
        """A tensor sharing storage with this one, outside the autograd graph."""
        out = Tensor._make(self._data, self._dtype, self._device, self._backend)
        out._vc = self._vc
        if self._conj_view:
            out._conj_view = True
        if tracing.active is not None:
            tracing.primitive("alias", (self,), {}, out)
        return out

    def detach_(self) -> Tensor:
        self._node = None
        self._requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Keep `.grad` for this non-leaf tensor after backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._node is None:
            return
        node = self._node
        if node.retain is None:
            node.retain = {}
        # a weak reference: the node holding this tensor would be a reference cycle
        node.retain[self._output_nr] = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        if self._node is None or not self._node.retain:
            return False
        ref = self._node.retain.get(self._output_nr)
        return ref is not None and ref() is self

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call `hook(grad)` when this tensor's gradient is computed; it may return a new
        gradient to use instead."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if self._node is None:
            if self._hooks is None:
                self._hooks = []
            self._hooks.append(hook)
            return RemovableHandle.of_list_entry(self._hooks, hook)
        node = self._node
        if node.pre_hooks is None:
            node.pre_hooks = {}
        hooks = node.pre_hooks.setdefault(self._output_nr, [])
        hooks.append(hook)
        return RemovableHandle.of_list_entry(hooks, hook)


    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]
                                           ) -> RemovableHandle:
        """Call `hook(tensor)` after a gradient has been accumulated into this leaf's
        `.grad` during backward (not by `autograd.grad`); the hook returns None.

        Returns a handle whose `remove()` removes the hook.
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if self._node is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = []
        self._post_accumulate_hooks.append(hook)
        return RemovableHandle.of_list_entry(self._post_accumulate_hooks, hook)


torch_function.Tensor = Tensor


def _check_subclass(cls: Any) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")


def _alias(t: Tensor) -> Tensor:
    """A new tensor object over `t`'s storage and version counter (not in the graph)."""
    out = Tensor._make(t._data, t._dtype, t._device, t._backend)
    out._vc = t._vc
    if t._base is not None:
        out._base, out._view_fn = t._base, t._view_fn
    return out


@dt.printed_in_api()
class Size(tuple):
    """A tensor's shape: a tuple of ints that prints as PyTorch's does.

    As ``torch.Size``: built from any iterable of integers (``int``, ``bool``, 0-d integer
    tensors: anything with ``__index__``), and concatenation, repetition and slicing give
    a Size again.
    """

    __slots__ = ()

    def __new__(cls, sizes: Iterable[Any] = ()) -> Size:
        items = tuple(sizes)
        for i, item in enumerate(items):
            if type(item) is not int:
                try:
                    items = items[:i] + (operator.index(item),) + items[i + 1:]
                except TypeError:
                    raise TypeError(f"{dt.API_NAME}.Size() takes an iterable of 'int' (item "
                                    f"{i} is '{type(item).__name__}')") from None
        return tuple.__new__(cls, items)

    def __repr__(self) -> str:
        return f"{dt.API_NAME}.Size([{', '.join(str(s) for s in self)}])"

    def __reduce__(self) -> tuple:
        return (Size, (tuple(self),))

    def numel(self) -> int:
        return math.prod(self)

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return _tuple_new(Size, out) if isinstance(key, slice) else out

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to "
                            f"{dt.API_NAME}.Size")
        return _tuple_new(Size, tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _tuple_new(Size, tuple.__add__(other, self))

    def __mul__(self, times):
        if not hasattr(times, "__index__"):
            raise TypeError(f"can't multiply sequence by non-int of type "
                            f"'{type(times).__name__}'")
        return _tuple_new(Size, tuple.__mul__(self, times))

    __rmul__ = __mul__


_tuple_new = tuple.__new__  # a Size from a tuple of ints, unchecked


def factory_requires_grad(t: Tensor) -> Tensor:
    """`t.requires_grad_()` for a factory's (or Parameter's) `requires_grad=True`, with
    their message for a dtype that cannot require gradients."""
    if not t._dtype._differentiable:
        raise with_context(RuntimeError("Only Tensors of floating point and complex dtype can "
                                        "require gradients"), f"got {t._dtype}")
    return t.requires_grad_(True)



def _moved_into(t: Tensor, cls: type) -> Tensor:
    """A new `cls` instance holding `t`'s fields (`t`, just made, is dropped): how a
    tensor becomes an instance of a subclass whose own `__slots__` change the layout."""
    out = object.__new__(cls)
    for name in ("_data", "_dtype", "_device", "_backend", "_requires_grad", "_node", "_vc"):
        setattr(out, name, getattr(t, name))
    out.__dict__.update(t.__dict__)
    return out


def user_state(t: Tensor) -> Any:
    """The attributes a program set on `t`, which travel with it when pickled or copied,
    as PyTorch's `_get_obj_state`: a dict, or `(dict, slots)` for a subclass with
    `__slots__` of its own. ember's own rarely set fields (a view's `_base`, hooks) live
    in the instance dict too, overriding defaults of ember's classes: those are left out."""
    mro = type(t).__mro__
    own = next(c for c in mro if _ember_class(c))
    attrs = {k: v for k, v in t.__dict__.items() if not hasattr(own, k)}
    names = [name for c in mro[:mro.index(own)]
             for name in ((c.__slots__,) if isinstance(c.__dict__.get("__slots__"), str)
                          else c.__dict__.get("__slots__", ()))]
    slots = {name: getattr(t, name) for name in names if hasattr(t, name)}
    return (attrs, slots) if slots else attrs


def _ember_class(cls: type) -> bool:
    """Whether `cls` is one of ember's classes (not a program's subclass)."""
    return cls is Tensor or cls in _EMBER_CLASSES


_EMBER_CLASSES: set[type] = set()


def _rebuild_from_type_v2(func: Any, new_type: type, args: tuple, state: Any) -> Tensor:
    """Unpickling a tensor subclass, or a tensor with attributes, as PyTorch's
    `torch._tensor._rebuild_from_type_v2`: `func(*args)` made a `new_type` (with
    `as_subclass`), then its state restored by the class's own `__setstate__` if it
    has one, else set as attributes (`state` a dict, or PyTorch's `(dict, slots)`)."""
    result = func(*args)
    if type(result) is not new_type:  # (a view in the graph, as PyTorch's: not a leaf)
        result = result.as_subclass(new_type)
    if getattr(new_type, "__setstate__", None) is not None:
        result.__setstate__(state)
    else:
        set_state(result, state)
    return result


def set_state(t: Tensor, state: Any) -> None:
    """Set the attributes of `state` (a dict, or `(dict, slots)`) on `t`, as PyTorch's
    `_set_obj_state`."""
    for part in state if isinstance(state, tuple) else (state,):
        if isinstance(part, dict):
            for name, value in part.items():
                if isinstance(name, str):
                    setattr(t, name, value)


def _rebuild_tensor(array: Any, device: str, requires_grad: bool) -> Tensor:
    """Unpickling (for copies and DataLoader workers; ember.save keeps tensors out of its
    pickles)."""
    t = Tensor._from_data(array, None, device)  # the array's own dtype
    return factory_requires_grad(t) if requires_grad else t
