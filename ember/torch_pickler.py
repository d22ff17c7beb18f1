"""The pickle of a PyTorch checkpoint (`data.pkl`), written without PyTorch: ember's
tensors, parameters, dtypes, devices and sizes are pickled as PyTorch's own are, so that
`torch.load` rebuilds torch tensors from them, and a state dict's pickle is byte for byte
the one `torch.save` writes.

A tensor becomes `torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())`, its storage a persistent id `("storage",
torch.<Type>Storage, key, location, numel)` whose bytes the caller writes as the record
`data/<key>`; tensors that view one storage share one key. A `Parameter` becomes
`torch._utils._rebuild_parameter(data, requires_grad, OrderedDict())`, a quantized tensor
`torch._utils._rebuild_qtensor` over its integers' storage (`torch.QInt8Storage` ...) with
its quantizer, and a `ScriptObject` PyTorch's NEWOBJ + BUILD of `torch.ScriptObject`.
Pickle's own `save_global` would import `torch` to check such a name, and torch is no
dependency, so
the pickler writes those GLOBAL opcodes itself (`_Global`). It builds each reduction
with fresh objects where PyTorch's `__reduce_ex__` does (size tuples, the hooks dict, a
parameter's `.data`) and shared ones where PyTorch shares (a storage's key, the "cpu"
location), since pickle's memo turns shared objects into back-references: that is what
makes the bytes equal. Attributes a program set on a tensor travel as its state
(`torch._tensor._rebuild_from_type_v2`), as in PyTorch. Everything else pickles as usual
(a whole `nn.Module` refers to its ember classes).
"""

from __future__ import annotations

import collections
import io
import pickle
from typing import Any, BinaryIO

import numpy as np

from ember import checkpoint_io
from ember.core import dtype as dt
from ember.core.device import device as Device
from ember.core.host import host_array
from ember.core.quantized import per_channel_affine, per_tensor_affine, qscheme
from ember.core.storage import TypedStorage
from ember.core.tensor import Size, Tensor, _ember_class, user_state
from ember.script_object import ScriptObject

# the element type of each dtype's storage class, as PyTorch names it when it pickles
STORAGE_NAMES = {
    dt.float64: "DoubleStorage", dt.float32: "FloatStorage", dt.float16: "HalfStorage",
    dt.bfloat16: "BFloat16Storage", dt.int64: "LongStorage", dt.int32: "IntStorage",
    dt.int16: "ShortStorage", dt.int8: "CharStorage", dt.uint8: "ByteStorage",
    dt.bool_: "BoolStorage", dt.complex64: "ComplexFloatStorage",
    dt.complex128: "ComplexDoubleStorage",
    dt.qint8: "QInt8Storage", dt.quint8: "QUInt8Storage", dt.qint32: "QInt32Storage",
    dt.quint4x2: "QUInt4x2Storage",
}
_CPU = "cpu"  # one object, as PyTorch's location tag for the CPU is (pickle memoizes it)
_STORAGE = "storage"


class _Global:
    """A global of PyTorch's that a pickle names (`torch._utils._rebuild_tensor_v2`)."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:  # pickle's save_reduce wants a callable
        raise TypeError(f"{self.module}.{self.name} is PyTorch's; ember only names it")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_REBUILD_PARAMETER_WITH_STATE = _Global("torch._utils", "_rebuild_parameter_with_state")
_REBUILD_FROM_TYPE = _Global("torch._tensor", "_rebuild_from_type_v2")
_TENSOR = _Global("torch", "Tensor")
_REBUILD_SPARSE = _Global("torch._utils", "_rebuild_sparse_tensor")
_GET_LAYOUT = _Global("torch.serialization", "_get_layout")
_DEVICE = _Global("torch", "device")
_SIZE = _Global("torch", "Size")
_STORAGE_TYPES = {d: _Global("torch", name) for d, name in STORAGE_NAMES.items()}
_DTYPES = {d: _Global("torch", d.name) for d in dt.EVERY_DTYPE + dt.QUANTIZED_DTYPES}
_REBUILD_QTENSOR = _Global("torch._utils", "_rebuild_qtensor")
_SCRIPT_OBJECT = _Global("torch", "ScriptObject")


class Storage:
    """One storage to write as the record `data/<key>`: its bytes (a C-contiguous host
    array) and the device it was saved from (None: the CPU)."""

    __slots__ = ("key", "array", "dtype", "device", "legacy")

    def __init__(self, key: str, array: np.ndarray, d: dt.dtype, device: Device | None,
                 legacy: bool = False) -> None:
        self.key, self.array, self.dtype, self.device = key, array, d, device
        self.legacy = legacy  # the legacy layout's ids end with a view record (None)

    def persistent_id(self) -> tuple:
        # a fresh tuple each time, as PyTorch's persistent_id returns; the location of a
        # device other than the CPU is a fresh string too (PyTorch builds "cuda:0" anew),
        # ember's other devices by their own name, which torch.load maps (map_location)
        device = self.device
        location = _CPU if device is None else f"{device.type}:{device.index or 0}"
        pid = (_STORAGE, _STORAGE_TYPES[self.dtype], self.key, location, self.array.size)
        return pid + (None,) if self.legacy else pid


class _StorageRef:
    """What a tensor's reduction holds in place of its storage (a persistent id)."""

    __slots__ = ("storage",)

    def __init__(self, storage: Storage) -> None:
        self.storage = storage


def _parameter_class() -> type:
    from ember.nn.parameter import Parameter

    return Parameter


def _holds_data(t: Tensor) -> bool:
    from ember.nn.parameter import is_lazy

    return not is_lazy(t)


class StorageTable:
    """The storages a pickle refers to, in the order PyTorch numbers them (first use)."""

    def __init__(self, legacy: bool = False) -> None:
        self.legacy = legacy
        self.storages: list[Storage] = []
        # (id of a CPU storage's array or a device buffer, dtype) -> its storage
        self._known: dict[tuple[int, dt.dtype], Storage] = {}
        self._keep: list[Any] = []  # keeps those ids' objects alive while saving

    def _storage(self, ident: Any, array: np.ndarray, d: dt.dtype,
                 device: Device | None) -> Storage:
        storage = self._known.get((id(ident), d))
        if storage is None:
            storage = Storage(str(len(self.storages)), array, d, device, self.legacy)
            self.storages.append(storage)
            self._known[(id(ident), d)] = storage
            self._keep.append(ident)
        return storage

    def view(self, t: Tensor, d: dt.dtype | None = None
             ) -> tuple[Storage, int, tuple[int, ...], tuple[int, ...]]:
        """`t` as (its storage, offset, size, stride): a CPU tensor as a view of the
        array its memory belongs to, so that its views share that storage; a tensor on
        another device, or whose memory NumPy cannot trace, as a dense copy. `d` names
        the storage's dtype where it is not `t`'s (a quantized tensor's integers)."""
        size, d = tuple(t.shape), d or t.dtype
        if t.device.type == "cpu":
            arr = host_array(t)
            view = checkpoint_io.storage_view(arr)
            if view is not None:
                root, offset, _ = view
                return self._storage(root, root, d, None), offset, size, t.stride()
        on_cpu = t.device.type == "cpu"
        arr = np.ascontiguousarray(host_array(t.detach()))
        storage = self._storage(arr if on_cpu else t._data, arr, d,
                                None if on_cpu else t.device)
        return storage, 0, size, _dense_strides(size)


def _dense_strides(size: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(size):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


class TorchPickler(pickle._Pickler):
    """Pickles as `torch.save`'s pickler does, ember objects standing for torch's."""

    def __init__(self, file: BinaryIO, protocol: int, table: StorageTable) -> None:
        super().__init__(file, protocol)
        self.table = table

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is _StorageRef:
            return obj.storage.persistent_id()
        if type(obj) is TypedStorage:  # a storage saved as itself: all of its memory
            return self.table.view(obj._owner.detach().reshape(-1))[0].persistent_id()
        return None

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        if type(obj) is _Global:
            return self._save_name(obj, obj)
        if type(obj) is dt.dtype:  # torch.float32 pickles as the name torch.float32
            return self._save_name(obj, _DTYPES[obj])
        if type(obj) is qscheme:  # so does torch.per_tensor_affine
            return self._save_name(obj, _Global("torch", obj.name))
        if type(obj) is ScriptObject:
            return self._save_script_object(obj)
        return super().save(obj, save_persistent_id)

    def _save_script_object(self, obj: ScriptObject) -> None:
        """`torch.ScriptObject.__new__()` then BUILD with its state, as PyTorch pickles a
        TorchScript custom class's object."""
        memo = self.memo.get(id(obj))
        if memo is not None:
            self.write(self.get(memo[0]))
            return
        if self.proto < 2:
            raise pickle.PicklingError("a torch.ScriptObject pickles with protocol 2 or "
                                       f"later, not {self.proto}")
        self.save(_SCRIPT_OBJECT)
        self.save(())
        self.write(pickle.NEWOBJ)
        self.memoize(obj)
        # PyTorch's C++ __getstate__ builds its strings anew for each object, so that
        # none is pickled as a back-reference to an earlier one
        values = tuple(_fresh(v) if type(v) is str else v for v in obj.values)
        self.save((values, _fresh(obj.qualified_name)))
        self.write(pickle.BUILD)

    def _save_name(self, obj: Any, name: _Global) -> None:
        memo = self.memo.get(id(obj))
        if memo is not None:
            self.write(self.get(memo[0]))
            return
        if self.proto >= 4:
            self.save(name.module)
            self.save(name.name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{name.module}\n{name.name}\n".encode("ascii"))
        self.memoize(obj)

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            if not _holds_data(obj):
                return NotImplemented  # an uninitialized parameter pickles as itself
            state = user_state(obj)
            if isinstance(obj, _parameter_class()):
                args = (obj.detach(), obj.requires_grad, collections.OrderedDict())
                if state:
                    return (_REBUILD_PARAMETER_WITH_STATE, (*args, state))
                return (_REBUILD_PARAMETER, args)
            if obj.is_quantized:
                func, args = _REBUILD_QTENSOR, self._quantized_args(obj)
            elif obj.is_sparse:
                return (_REBUILD_SPARSE, (_SPARSE_COO, (obj._indices(), obj._values().detach(),
                                                      Size(obj.shape), obj.is_coalesced())))
            elif hasattr(obj, "_cidx"):  # CSR, CSC, BSR, BSC: PyTorch's __reduce_ex__ parts
                return (_REBUILD_SPARSE, (_Layout(obj.layout._name),
                                          (obj._cidx, obj._pidx, obj.values().detach(),
                                           Size(obj.shape))))
            else:
                storage, offset, size, stride = self.table.view(obj)
                func, args = _REBUILD_TENSOR, (_StorageRef(storage), offset, size, stride,
                                               obj.requires_grad, collections.OrderedDict())
            subclass = not _ember_class(type(obj))  # (ember's stand for PyTorch's)
            if state or subclass:  # (PyTorch names the subclass itself, pickled by name)
                return (_REBUILD_FROM_TYPE, (func, type(obj) if subclass else _TENSOR, args,
                                             state))
            return (func, args)
        if type(obj) is _Layout:
            return (_GET_LAYOUT, (f"torch.{obj.name}",))
        if isinstance(obj, Device):
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return (_DEVICE, args)
        if isinstance(obj, Size):
            return (_SIZE, (tuple(obj),))
        return NotImplemented


    def _quantized_args(self, t: Any) -> tuple:
        """`torch._utils._rebuild_qtensor`'s arguments, as PyTorch's `__reduce_ex__`
        builds them: the integers' storage typed as the quantized dtype, then the
        quantizer as `(per_tensor_affine, scale, zero_point)` or `(per_channel_affine,
        scales, zero_points, axis)` (float64 and int64 tensors, fresh copies)."""
        storage, offset, size, stride = self.table.view(t._int, t.dtype)
        if t._axis is None:
            quantizer = (per_tensor_affine, float(t._scale), int(t._zero_point))
        else:  # PyTorch writes per_channel_affine for float-qparams tensors too
            quantizer = (per_channel_affine, t.q_per_channel_scales(),
                         t.q_per_channel_zero_points(), t._axis)
        return (_StorageRef(storage), offset, size, stride, quantizer, t.requires_grad,
                collections.OrderedDict())


def _fresh(text: str) -> str:
    """An equal string that is not `text` (pickle's memo goes by identity)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")


class _Layout:
    """A sparse layout (`torch.sparse_coo`, `torch.sparse_csr` ...), which PyTorch pickles
    as a call of `_get_layout` with its name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


_SPARSE_COO = _Layout("sparse_coo")


def dumps(obj: Any, protocol: int, pickle_module: Any = pickle,
          legacy: bool = False) -> tuple[bytes, list[Storage]]:
    """The pickle of `obj` as PyTorch writes it, and the storages it refers to (with
    `legacy`, as PyTorch's legacy layout refers to them)."""
    pickler_class = TorchPickler
    if pickle_module is not pickle:
        base = getattr(pickle_module, "_Pickler", None) or getattr(pickle_module, "Pickler",
                                                                    None)
        if not (isinstance(base, type) and issubclass(base, pickle._Pickler)):
            name = getattr(pickle_module, "__name__", pickle_module)
            raise TypeError(f"ember.save: pickle_module {name!r} has no pure-Python Pickler "
                            "(a subclass of pickle._Pickler) to write PyTorch's tensor "
                            "records with")
        pickler_class = type("TorchPickler", (TorchPickler, base), {})
    table = StorageTable(legacy)
    buffer = io.BytesIO()
    pickler_class(buffer, protocol, table).dump(obj)
    return buffer.getvalue(), table.storages
