"""Reading PyTorch checkpoints (`torch.save` files) without PyTorch and without running
their code: `ember.load` comes here for them.

Two layouts exist. The zip one (PyTorch 1.6 and later): `<name>/data.pkl` is a pickle
whose tensors point, through persistent ids `("storage", storage_type, key, location,
numel)`, at raw records `<name>/data/<key>`, stored uncompressed; `<name>/byteorder` says
their byte order. The legacy one: pickles of a magic number, a protocol version and
system info, then the object's pickle, a pickle listing storage keys, then each storage
as an int64 element count followed by its bytes.

Each storage becomes one NumPy buffer read straight from the file (no intermediate
copies), and each tensor a strided NumPy view of it (`_rebuild_tensor_v2`), so tensors
that share a storage in PyTorch share memory here and loading peaks at about the file's
size. The pickle is read by `WeightsUnpickler`: only tensors (quantized ones too),
parameters, dtypes, qschemes, devices, sizes and containers are allowed, so no code from
the file runs (with `weights_only=False`, also `torch.ScriptObject`'s state, kept as an
`ember.script_object.ScriptObject`).
"""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
import zlib
from typing import Any, BinaryIO

import numpy as np

from ember.checkpoint_io import (
    MAX_HEADER,
    UnsupportedError,
    place,
    read_into,
    strided_view,
)
from ember.checkpoint_io import FormatError as CheckpointError
from ember.core import dtype as dt
from ember.core.backend import numpy_dtype
from ember.core.device import device as Device
from ember.core.quantized import qscheme_by_name
from ember.core.tensor import Size, Tensor, _rebuild_from_type_v2, set_state
from ember.script_object import ScriptObject
from ember.weights_unpickler import WeightsUnpickler

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001

# PyTorch's typed storage classes -> the dtype of their elements
_STORAGE_DTYPES = {
    "DoubleStorage": dt.float64, "FloatStorage": dt.float32, "HalfStorage": dt.float16,
    "BFloat16Storage": dt.bfloat16, "LongStorage": dt.int64, "IntStorage": dt.int32,
    "ShortStorage": dt.int16, "CharStorage": dt.int8, "ByteStorage": dt.uint8,
    "BoolStorage": dt.bool_, "ComplexFloatStorage": dt.complex64,
    "ComplexDoubleStorage": dt.complex128, "QInt8Storage": dt.qint8,
    "QUInt8Storage": dt.quint8, "QInt32Storage": dt.qint32, "QUInt4x2Storage": dt.quint4x2,
}
_TORCH_DTYPES = {
    "float64": dt.float64, "double": dt.float64, "float32": dt.float32,
    "float": dt.float32, "float16": dt.float16, "half": dt.float16,
    "bfloat16": dt.bfloat16, "int64": dt.int64, "long": dt.int64, "int32": dt.int32,
    "int": dt.int32, "int16": dt.int16, "short": dt.int16, "int8": dt.int8,
    "uint8": dt.uint8, "bool": dt.bool_, "complex64": dt.complex64, "cfloat": dt.complex64,
    "complex128": dt.complex128, "cdouble": dt.complex128, "qint8": dt.qint8,
    "quint8": dt.quint8, "qint32": dt.qint32, "quint4x2": dt.quint4x2,
}
_QSCHEME_NAMES = ("per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
                  "per_channel_symmetric", "per_channel_affine_float_qparams")


def _elements(d: dt.dtype) -> dt.dtype:
    """The dtype a storage's elements are read as: a quantized storage's integers."""
    return dt.STORAGE_OF[d.name] if d in dt.QUANTIZED_DTYPES else d


def is_zip(head: bytes) -> bool:
    return head[:4] == b"PK\x03\x04"


def is_legacy(head: bytes) -> bool:
    """A pickle stream (PROTO 2-5) whose first 8 bytes, read as safetensors' header
    length, are no plausible length: the legacy layout starts with the pickled magic
    number. (An ember file's header length can begin with byte 0x80 too.)"""
    return (len(head) == 8 and head[0] == 0x80 and 2 <= head[1] <= 5
            and int.from_bytes(head, "little") > MAX_HEADER)


_TENSOR_TYPE, _PARAMETER_TYPE = "torch.Tensor", "torch.nn.parameter.Parameter"


class _Storage:
    """One storage: a byte buffer, and the element dtype its typed class names (None
    for an `UntypedStorage`, whose tensors name their dtype)."""

    __slots__ = ("buffer", "dtype", "location", "_typed")

    def __init__(self, buffer: np.ndarray, dtype: dt.dtype | None, location: str) -> None:
        self.buffer, self.dtype, self.location = buffer, dtype, location
        self._typed: dict[dt.dtype, np.ndarray] = {}

    def typed(self, d: dt.dtype, big_endian: bool) -> np.ndarray:
        d = _elements(d)
        arr = self._typed.get(d)
        if arr is None:
            np_dtype = numpy_dtype(d)
            if self.buffer.nbytes % np_dtype.itemsize:
                raise CheckpointError(f"a storage of {self.buffer.nbytes} bytes cannot hold "
                                      f"{d.name} elements")
            arr = (self.buffer if self.buffer.dtype == np_dtype
                   else self.buffer.view(np.uint8).view(np_dtype))
            if big_endian and np_dtype.itemsize > 1:
                arr.byteswap(inplace=True)
            self._typed[d] = arr
        return arr


class _TorchReader:
    """The globals a PyTorch pickle may name, resolved to ember objects."""

    def __init__(self, map_location: Any, big_endian: bool = False) -> None:
        self.map_location, self.big_endian = map_location, big_endian

    def allowed(self, trusted: bool = False) -> dict[str, Any]:
        """The globals a pickle may name; with `trusted` (`weights_only=False`), also
        `torch.ScriptObject`, which PyTorch's weights-only loading refuses too."""
        table: dict[str, Any] = {
            "torch._utils._rebuild_tensor": self.rebuild_tensor_v1,
            "torch._utils._rebuild_tensor_v2": self.rebuild_tensor_v2,
            "torch._utils._rebuild_tensor_v3": self.rebuild_tensor_v3,
            "torch._utils._rebuild_qtensor": self.rebuild_qtensor,
            "torch._utils._rebuild_parameter": self.rebuild_parameter,
            "torch._utils._rebuild_parameter_with_state": self.rebuild_parameter,
            "torch._tensor._rebuild_from_type_v2": self.rebuild_from_type_v2,
            "torch._utils._rebuild_sparse_tensor": _rebuild_sparse_tensor,
            "torch.serialization._get_layout": _get_layout,
            "torch.Size": Size,
            "torch.device": _torch_device,
            # types named only as the new_type of _rebuild_from_type_v2: markers, never
            # classes, so that a pickle cannot construct (allocate) them with its own args
            "torch.Tensor": _TENSOR_TYPE,
            "torch.nn.parameter.Parameter": _PARAMETER_TYPE,
            "torch.storage.UntypedStorage": "UntypedStorage",
        }
        for storage in _STORAGE_DTYPES:
            table[f"torch.{storage}"] = storage
            table[f"torch.cuda.{storage}"] = storage
        for name, d in _TORCH_DTYPES.items():
            table[f"torch.{name}"] = d
        for name in _QSCHEME_NAMES:
            table[f"torch.{name}"] = qscheme_by_name(name)
        if trusted:  # ember's stand-in, so that no torch is imported
            table["torch.ScriptObject"] = ScriptObject
        return table

    # -- tensors --------------------------------------------------------------------
    def rebuild_tensor_v2(self, storage: Any, offset: int, size: Any, stride: Any,
                          requires_grad: bool = False, hooks: Any = None,
                          metadata: Any = None) -> Tensor:
        return self._tensor(storage, offset, size, stride, requires_grad, None)

    def rebuild_tensor_v3(self, storage: Any, offset: int, size: Any, stride: Any,
                          requires_grad: bool, hooks: Any, dtype: Any,
                          metadata: Any = None) -> Tensor:
        return self._tensor(storage, offset, size, stride, requires_grad, dtype)

    def rebuild_tensor_v1(self, storage: Any, offset: int, size: Any, stride: Any) -> Tensor:
        return self._tensor(storage, offset, size, stride, False, None)

    def rebuild_qtensor(self, storage: Any, offset: int, size: Any, stride: Any,
                        quantizer: Any, requires_grad: Any = False, hooks: Any = None
                        ) -> Tensor:
        """A quantized tensor: its integers viewed from the storage as a plain tensor's,
        its quantizer checked as PyTorch's `_rebuild_qtensor` checks it."""
        if not isinstance(storage, _Storage) or storage.dtype not in dt.QUANTIZED_DTYPES:
            raise CheckpointError(f"a quantized tensor's storage is not a quantized one "
                                  f"({getattr(storage, 'dtype', storage)!r})")
        ints = self._tensor(storage, offset, size, stride, False, _elements(storage.dtype))
        return quantized_from_parts(ints, storage.dtype, quantizer)

    def rebuild_parameter(self, data: Tensor, requires_grad: bool, hooks: Any = None,
                          state: Any = None) -> Tensor:
        result = _parameter_class()(_check_tensor(data), requires_grad=bool(requires_grad))
        set_state(result, state)
        return result

    def rebuild_from_type_v2(self, func: Any, new_type: Any, args: Any, state: Any) -> Tensor:
        if isinstance(new_type, type) and issubclass(new_type, Tensor) \
                and isinstance(args, tuple):
            # a program's subclass: its class was found by name, so the load is trusted
            # (weights_only=False) or the class an allowed global
            return _rebuild_from_type_v2(lambda: _check_tensor(func(*args)), new_type, (),
                                         state)
        if new_type not in (_TENSOR_TYPE, _PARAMETER_TYPE) or not isinstance(args, tuple):
            raise UnsupportedError(f"it holds a tensor subclass {new_type!r}")
        result = _check_tensor(func(*args))
        if new_type == _PARAMETER_TYPE and not isinstance(result, _parameter_class()):
            result = _parameter_class()(result, requires_grad=result.requires_grad)
        set_state(result, state)
        return result

    def _tensor(self, storage: Any, offset: Any, size: Any, stride: Any,
                requires_grad: Any, d: Any) -> Tensor:
        from ember.core.creation import from_numpy

        if not isinstance(storage, _Storage):
            raise pickle.UnpicklingError(f"a tensor's storage is a {type(storage).__name__}")
        d = d if d is not None else storage.dtype
        if not isinstance(d, dt.dtype):
            raise CheckpointError("an untyped storage's tensor names no dtype")
        flat = storage.typed(d, self.big_endian)
        arr = strided_view(flat, offset, _ints("size", size), _ints("stride", stride))
        t = place(from_numpy(arr), storage.location, self.map_location)
        if requires_grad:
            t.requires_grad_(True)
        return t


def quantized_from_parts(ints: Tensor, d: dt.dtype, quantizer: Any) -> Tensor:
    """The quantized tensor of dtype `d` holding `ints`, its quantizer as pickled:
    `(scheme, scale, zero_point)` or `(scheme, scales, zero_points, axis)` (tensors, or
    lists in older files)."""
    from ember.core import quantized as q

    scheme = quantizer[0] if isinstance(quantizer, tuple) and quantizer else None
    if scheme is q.per_tensor_affine and len(quantizer) == 3:
        _, scale, zero_point = quantizer
        if not (isinstance(scale, (int, float)) and isinstance(zero_point, int)):
            raise CheckpointError(f"a quantized tensor's scale and zero point are "
                                  f"{scale!r}, {zero_point!r}")
        return q.rebuild_quantized(ints, d, scheme.name, float(scale), int(zero_point), None)
    if scheme in (q.per_channel_affine, q.per_channel_affine_float_qparams) \
            and len(quantizer) == 4:
        _, scales, zero_points, axis = quantizer
        if not (isinstance(axis, int) and 0 <= axis < ints.ndim):
            raise CheckpointError(f"_rebuild_qtensor: per_channel axis {axis!r} out of range "
                                  f"for size {tuple(ints.shape)}")
        float_zero_points = scheme is q.per_channel_affine_float_qparams
        scales = _channel_values(scales, dt.float32 if float_zero_points else dt.float64)
        zero_points = _channel_values(zero_points,
                                      dt.float32 if float_zero_points else dt.int64)
        channels = ints.shape[axis]
        if scales.shape != (channels,) or zero_points.shape != (channels,):
            raise CheckpointError(
                f"_rebuild_qtensor: per_channel scales/zero_points length must equal "
                f"size[axis]={channels}, got scales={scales.numel()}, "
                f"zero_points={zero_points.numel()}")
        return q.rebuild_quantized(ints, d, scheme.name, scales, zero_points, axis)
    raise UnsupportedError(f"it holds a quantized tensor of quantizer {str(quantizer)[:80]}; "
                           "ember reads per_tensor_affine and per_channel_affine ones")


def _channel_values(values: Any, d: dt.dtype) -> Tensor:
    from ember.core.creation import tensor

    if isinstance(values, list):
        return tensor(values, dtype=d)
    return _check_tensor(values).to(d)


_SPARSE_LAYOUTS = ("torch.sparse_coo", "torch.sparse_csr", "torch.sparse_csc",
                   "torch.sparse_bsr", "torch.sparse_bsc")


def _get_layout(name: Any) -> str:
    if name not in _SPARSE_LAYOUTS:
        raise UnsupportedError(f"it holds a tensor of layout {name!r}; ember has the sparse "
                               "layouts " + ", ".join(_SPARSE_LAYOUTS))
    return name


def _rebuild_sparse_tensor(layout: Any, data: Any) -> Tensor:
    """A sparse tensor: COO from its indices, values, size and coalesced flag; CSR, CSC,
    BSR and BSC from their compressed and plain indices, values and size (checked as
    PyTorch checks a loaded one, with its invariants)."""
    from ember.core.sparse_coo import make

    if layout not in _SPARSE_LAYOUTS or not (isinstance(data, tuple) and len(data) == 4):
        raise CheckpointError(f"a sparse tensor record is damaged ({layout!r})")
    if layout != "torch.sparse_coo":
        from ember.core.sparse_compressed import sparse_compressed_tensor

        cidx, pidx, values, size = data
        cidx, pidx = _check_tensor(cidx), _check_tensor(pidx)
        values, size = _check_tensor(values), _ints("size", size)
        try:
            return sparse_compressed_tensor(cidx, pidx, values, size,
                                            layout=_compressed_layout(layout))
        except RuntimeError as err:
            raise CheckpointError(f"a {layout} tensor is invalid: {err}") from None
    indices, values, size, coalesced = data
    indices, values, size = _check_tensor(indices), _check_tensor(values), _ints("size", size)
    if indices.ndim != 2 or indices.shape[0] > len(size) or values.shape[:1] != indices.shape[1:]:
        raise CheckpointError(f"a sparse tensor's indices {tuple(indices.shape)} and values "
                              f"{tuple(values.shape)} do not fit its size {tuple(size)}")
    return make(indices, values, tuple(size), bool(coalesced))


def _compressed_layout(name: str) -> Any:
    from ember.core import sparse_coo

    return getattr(sparse_coo, name[len("torch."):])


def _ints(what: str, value: Any) -> list[int]:
    if not isinstance(value, (tuple, list)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise CheckpointError(f"a tensor's {what} is {value!r}, not a tuple of ints")
    return list(value)


def _check_tensor(value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise pickle.UnpicklingError(f"a parameter's data is a {type(value).__name__}")
    return value


def _parameter_class() -> type:
    from ember.nn.parameter import Parameter

    return Parameter


def _torch_device(type_or_str: Any, index: Any = None) -> Device:
    if not isinstance(type_or_str, str) or not (index is None or isinstance(index, int)):
        raise pickle.UnpicklingError(f"torch.device{(type_or_str, index)!r} is not a device")
    return Device(type_or_str, index)


def _storage_dtype(storage_type: Any) -> dt.dtype | None:
    if storage_type == "UntypedStorage":
        return None
    if storage_type in _STORAGE_DTYPES:
        return _STORAGE_DTYPES[storage_type]
    raise pickle.UnpicklingError(f"a persistent id names storage type {storage_type!r}")


class _TorchUnpickler(WeightsUnpickler):
    """Names PyTorch dtypes and storages ember lacks (uint16, float8...) as
    such, rather than as disallowed globals."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return super().find_class(module, name)
        except pickle.UnpicklingError:
            if module in ("torch", "torch.cuda") and (name.endswith("Storage") or (
                    name[:1].islower() and any(c.isdigit() for c in name))):
                raise UnsupportedError(f"it holds torch.{name} data, which ember has no "
                                      "dtype for (ember has bool, uint8, int8/16/32/64, "
                                      "float16, bfloat16, float32, float64, complex64, "
                                      "complex128 and the quantized qint8, quint8, qint32 "
                                      "and quint4x2)") from None
            raise


# -- the zip layout -------------------------------------------------------------------


def _record_offset(fh: BinaryIO, info: zipfile.ZipInfo) -> int:
    """Where a stored record's bytes begin: after its local header, whose name and extra
    field lengths may differ from the central directory's."""
    fh.seek(info.header_offset)
    local = fh.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise CheckpointError(f"record {info.filename!r} has a damaged local header")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + name_len + extra_len


def _element_type(d: dt.dtype | None, nbytes: int) -> np.dtype:
    """The NumPy dtype to read a storage of `nbytes` as: its elements' (bytes for an
    untyped storage, or one whose size does not fit its type, which is reported when a
    tensor views it)."""
    if d is None or nbytes % d.itemsize:
        return np.dtype(np.uint8)
    return numpy_dtype(_elements(d))


def load_zip(fh: BinaryIO, map_location: Any, mmap_path: str | None = None,
             trusted: bool = False) -> Any:
    """The object a zip-layout `torch.save` file holds."""
    try:
        return _load_zip(fh, map_location, mmap_path, trusted)
    except zipfile.BadZipFile as err:  # a record fails its CRC, a header is damaged
        raise CheckpointError(f"a damaged zip archive ({err})") from None


def _load_zip(fh: BinaryIO, map_location: Any, mmap_path: str | None,
              trusted: bool) -> Any:
    try:
        archive = zipfile.ZipFile(fh)
        names = archive.namelist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as err:
        raise CheckpointError(f"a damaged zip archive ({err})") from None
    pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if any(n.endswith("/constants.pkl") and n.count("/") == 1 for n in names):
        raise UnsupportedError("it is a TorchScript archive (torch.jit.save), which holds "
                               "code; ember.load reads torch.save files")
    if not pickles:
        raise CheckpointError("a zip archive without data.pkl, not a torch.save file")
    prefix = pickles[0][: -len("data.pkl")]
    infos = {info.filename: info for info in archive.infolist()}
    big_endian = False
    if prefix + "byteorder" in infos:
        big_endian = archive.read(prefix + "byteorder").strip() == b"big"
    reader = _TorchReader(map_location, big_endian)
    storages: dict[str, _Storage] = {}

    def persistent(pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] in ("storage", b"storage")):
            raise pickle.UnpicklingError(f"persistent id {pid!r} is not a storage")
        _, storage_type, key, location, numel = pid
        d = _storage_dtype(storage_type)
        key = str(key)
        if key in storages:
            return storages[key]
        info = infos.get(f"{prefix}data/{key}")
        if info is None:
            raise CheckpointError(f"storage {key!r} is missing from the archive")
        # a typed storage is read into an array of its dtype, so that the arrays of its
        # tensors are views of that array (ember.save then finds their shared storage)
        elements = _element_type(d, info.file_size)
        count = info.file_size // elements.itemsize
        if info.compress_type != zipfile.ZIP_STORED:
            buffer = np.frombuffer(bytearray(archive.read(info.filename)), dtype=elements)
        elif mmap_path is not None:
            offset = _record_offset(fh, info)
            buffer = (np.memmap(mmap_path, dtype=elements, mode="c", offset=offset,
                                shape=(count,))
                      if count else np.empty(0, elements))
        else:
            offset = _record_offset(fh, info)
            buffer = read_into(fh, offset, np.empty(count, elements), f"storage {key!r}")
            if zlib.crc32(buffer.view(np.uint8)) & 0xFFFFFFFF != info.CRC:
                raise CheckpointError(f"storage {key!r} fails its CRC check (corrupted)")
        storage = _Storage(buffer, d, str(location.decode() if isinstance(location, bytes)
                                          else location))
        storages[key] = storage
        return storage

    data = archive.read(prefix + "data.pkl")
    return _public_storages(_TorchUnpickler(io.BytesIO(data), reader.allowed(trusted),
                                            persistent, trusted).load(), reader)


def _public_storages(obj: Any, reader: _TorchReader) -> Any:
    """`obj` with each storage pickled as itself (`torch.save({"s": t.storage()})`) made
    a TypedStorage over its memory (the tensors loaded from it share that memory), in the
    containers a checkpoint holds."""
    if isinstance(obj, _Storage):
        from ember.core.creation import from_numpy
        from ember.core.storage import TypedStorage

        if obj.dtype is None:
            raise UnsupportedError("it holds an UntypedStorage")
        flat = obj.typed(obj.dtype, reader.big_endian)
        return TypedStorage._of(place(from_numpy(flat), obj.location, reader.map_location))
    if type(obj) in (list, tuple):
        items = [_public_storages(v, reader) for v in obj]
        if any(a is not b for a, b in zip(items, obj)):
            return type(obj)(items)
        return obj
    if isinstance(obj, dict):
        for k, v in list(obj.items()):
            new = _public_storages(v, reader)
            if new is not v:
                obj[k] = new
    return obj


# -- the legacy layout ----------------------------------------------------------------


def load_legacy(fh: BinaryIO, map_location: Any, trusted: bool = False) -> Any:
    """The object a legacy-layout `torch.save` file holds."""
    def plain() -> Any:
        return WeightsUnpickler(fh, {}).load()

    if plain() != LEGACY_MAGIC:
        raise CheckpointError("a pickle, but not a torch.save file (no PyTorch magic "
                              "number); ember.load reads ember.save and torch.save files")
    if plain() != LEGACY_PROTOCOL:
        raise CheckpointError("invalid protocol version")
    sys_info = plain()
    big_endian = isinstance(sys_info, dict) and sys_info.get("little_endian") is False
    reader = _TorchReader(map_location, big_endian)
    storages: dict[str, _Storage] = {}
    views: dict[str, _Storage] = {}

    def persistent(pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[0] in ("storage", b"storage")):
            raise pickle.UnpicklingError(f"persistent id {pid!r} is not a storage (old "
                                         "files that saved module source are not supported)")
        _, storage_type, key, location, numel, view = pid
        d = _storage_dtype(storage_type)
        if d is None or not isinstance(numel, int) or numel < 0:
            raise pickle.UnpicklingError(f"persistent id {pid!r} is damaged")
        key = str(key)
        if key not in storages:
            # filled after the pickle, from the records that follow it
            storages[key] = _Storage(np.empty(numel, numpy_dtype(_elements(d))), d,
                                     str(location))
        root = storages[key]
        if view is None:
            return root
        view_key, offset, size = view
        if str(view_key) not in views:
            views[str(view_key)] = _Storage(root.buffer[offset:offset + size], d,
                                            root.location)
        return views[str(view_key)]

    result = _TorchUnpickler(fh, reader.allowed(trusted), persistent, trusted).load()
    keys = plain()
    if not isinstance(keys, list):
        raise CheckpointError("the storage key list is damaged")
    for key in keys:
        storage = storages.get(str(key))
        if storage is None:
            raise CheckpointError(f"storage {key!r} is listed but never used")
        head = fh.read(8)
        if len(head) != 8:
            raise CheckpointError(f"storage {key!r} is truncated")
        numel = struct.unpack("<q", head)[0]
        if numel * storage.dtype.itemsize != storage.buffer.nbytes:
            raise CheckpointError(f"storage {key!r} holds {numel} elements, the pickle says "
                                  f"{storage.buffer.nbytes // storage.dtype.itemsize}")
        read_into(fh, fh.tell(), storage.buffer, f"storage {key!r}")
    return _public_storages(result, reader)
