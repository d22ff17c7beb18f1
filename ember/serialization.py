"""`ember.save` / `ember.load`, with PyTorch 2.6+'s semantics.

`ember.save` writes ember's own format: safetensors, whose entries are the tensors of a
(nested) object named by their path (`model.fc1.weight`), and whose metadata holds the
object's shape as JSON — dicts (string or int keys), OrderedDicts, lists, tuples,
numbers, strings, booleans, None, dtypes, devices; NumPy arrays are stored as tensor
data. What JSON cannot hold (a whole `nn.Module`, a set, an instance of some class) is
pickled in place, as `torch.save` does, with its tensors still stored as entries.

`ember.load` reads ember's format and PyTorch's (`.pt`/`.pth`, zip or legacy). With
`weights_only=True`, the default as in PyTorch 2.6+, every pickle goes through the
restricted unpickler of `ember.weights_unpickler`: tensors, containers, numbers and
strings load; anything else raises `pickle.UnpicklingError` naming the global and saying
how to load it (`weights_only=False`, or `add_safe_globals`), and no code runs.

Writes are atomic (see `ember.atomic_write`); a damaged file raises a RuntimeError that
names it.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import io
import json
import math
import os
import pickle
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

from ember import checkpoint_io
from ember.checkpoint_io import FormatError, UnsupportedError, place
from ember.core import dtype as dt
from ember.core.device import device as Device
from ember.core.host import host_array
from ember.core.quantized import rebuild_quantized
from ember.core.tensor import Tensor
from ember.weights_unpickler import (
    UnsafeGlobalError,
    WeightsUnpickler,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
    weights_only_message,
)

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals"]

FORMAT = "ember.checkpoint/1"
DEFAULT_PROTOCOL = 2  # PyTorch's default pickle protocol


def _parameter_class() -> type:
    from ember.nn.parameter import Parameter

    return Parameter


def _is_data(t: Tensor) -> bool:
    """Whether `t` holds values to store (an uninitialized parameter of a lazy module
    holds none: it is pickled as what it is)."""
    from ember.nn.parameter import is_lazy

    return not is_lazy(t)


# -- save -----------------------------------------------------------------------------


class _Encoder:
    """Turns an object into a JSON-able structure plus a table of named host arrays;
    what JSON cannot hold is pickled, its tensors kept out of the pickle as entries."""

    def __init__(self, pickle_module: Any, protocol: int) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._entry_of: dict[int, str] = {}  # id of a tensor's storage -> its entry
        self._keep: list[Any] = []  # keeps those ids' objects alive while saving
        self.pickle_module, self.protocol = pickle_module, protocol
        # CPU tensors that view one storage differently (a base and its slices) are saved
        # as that storage once plus each view's offset and strides, so they share memory
        # again after loading, as in PyTorch. A first pass (`plan`) finds such storages.
        self._planning = False
        self._views: dict[int, set] = {}  # id of a storage -> the views saved of it
        self._shared: set[int] = set()

    def plan(self, value: Any) -> None:
        self._planning = True
        try:
            self.encode(value, "")
        finally:
            self._planning = False
        self._shared = {root for root, views in self._views.items() if len(views) > 1}

    def encode(self, value: Any, path: str) -> Any:
        if isinstance(value, Tensor) and value.is_sparse:
            return self._sparse(value, path)
        if isinstance(value, Tensor) and value.is_quantized:  # its integers are an entry
            return {"__pickle__": self._pickle(value, path)}
        if isinstance(value, Tensor) and _is_data(value):
            return self._tensor(value, path)
        if isinstance(value, (np.ndarray, np.number, np.bool_)):
            return self._numpy(value, path)
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"__float__": repr(value)}
        if isinstance(value, dict) and type(value) in (dict, collections.OrderedDict) and all(
                isinstance(k, (str, int)) and not isinstance(k, bool) for k in value):
            tag = "__dict__" if type(value) is dict else "__odict__"
            return {tag: [[k if isinstance(k, str) else {"__int__": k},
                           self.encode(v, f"{path}.{k}" if path else str(k))]
                          for k, v in value.items()]}
        if type(value) in (list, tuple):
            tag = "__list__" if type(value) is list else "__tuple__"
            return {tag: [self.encode(v, f"{path}.{i}" if path else str(i))
                          for i, v in enumerate(value)]}
        if isinstance(value, dt.dtype):
            return {"__dtype__": value.name}
        if isinstance(value, Device):
            return {"__device__": str(value)}
        return {"__pickle__": self._pickle(value, path)}

    def _storage_entry(self, root: np.ndarray, path: str) -> str:
        key = self._entry_of.get(id(root))
        if key is None:
            key = self._new_key(path)
            self.arrays[key] = root
            self._entry_of[id(root)] = key
        return key

    def _new_key(self, path: str) -> str:
        key, n = path or "tensor", 1
        while key in self.arrays:
            key = f"{path or 'tensor'}#{n}"
            n += 1
        return key

    def _entry(self, t: Tensor, path: str) -> str:
        """The entry holding `t`'s values: one per storage, so tensors that share one
        (tied weights, a parameter and its state-dict alias) are stored once."""
        known = self._entry_of.get(id(t._data))
        if known is not None and tuple(self.arrays[known].shape) == tuple(t.shape) \
                and self.arrays[known].dtype == host_array(t).dtype:
            return known
        key = self._new_key(path)
        arr = host_array(t.detach())  # a CPU tensor's own array: written, not copied
        self.arrays[key] = arr if arr.flags.c_contiguous else np.array(arr, order="C")
        self._entry_of[id(t._data)] = key
        self._keep.append(t._data)
        return key

    def _tensor(self, t: Tensor, path: str) -> dict:
        view = checkpoint_io.storage_view(host_array(t)) if t.device.type == "cpu" else None
        if self._planning:
            if view is not None:
                self._views.setdefault(id(view[0]), set()).add((view[1], t.shape, view[2]))
                self._keep.append(view[0])
            return {}
        if view is not None and id(view[0]) in self._shared:
            record = {"__tensor__": self._storage_entry(view[0], path),
                      "view": [view[1], list(t.shape), list(view[2])]}
        else:
            record = {"__tensor__": self._entry(t, path)}
        record.update(device=str(t.device), requires_grad=t.requires_grad)
        if isinstance(t, _parameter_class()):
            record["parameter"] = True
        return record

    def _sparse(self, t: Tensor, path: str) -> dict:
        """A sparse COO tensor: its indices and values as tensors, and its size."""
        return {"__sparse__": [self._tensor(t._indices(), f"{path}.indices"),
                               self._tensor(t._values().detach(), f"{path}.values")],
                "size": list(t.shape), "coalesced": t.is_coalesced(),
                "requires_grad": t.requires_grad}

    def _numpy(self, value: np.ndarray | np.generic, path: str) -> dict:
        # stored as tensor data (no pickle), tagged so that it loads back as NumPy
        if self._planning:
            return {}
        try:
            as_tensor = Tensor._from_data(np.asarray(value))
        except TypeError as err:
            raise TypeError(f"ember.save: cannot store the NumPy {type(value).__name__} at "
                            f"'{path or '<root>'}': {err}") from None
        return {"__numpy__": self._entry(as_tensor, path),
                "scalar": isinstance(value, np.generic)}

    def _pickle(self, value: Any, path: str) -> str:
        buffer = io.BytesIO()
        pickler = self.pickle_module.Pickler(buffer, protocol=self.protocol)
        counter = iter(range(1 << 62))

        def persistent_id(obj: Any) -> Any:
            if isinstance(obj, Tensor) and obj.is_sparse:
                return ("ember.sparse", self._sparse(obj, f"{path}.@{next(counter)}"))
            if isinstance(obj, Tensor) and obj.is_quantized:
                return None  # pickled as its integers (an entry) and its quantizer
            if isinstance(obj, Tensor) and _is_data(obj):
                return ("ember.tensor", self._tensor(obj, f"{path}.@{next(counter)}"))
            if isinstance(obj, (np.ndarray, np.number, np.bool_)):
                return ("ember.numpy", self._numpy(obj, f"{path}.@{next(counter)}"))
            return None

        pickler.persistent_id = persistent_id
        pickler.dump(value)
        return base64.b64encode(buffer.getvalue()).decode("ascii")


def save(obj: Any, f: str | os.PathLike | BinaryIO, pickle_module: Any = pickle,
         pickle_protocol: int = DEFAULT_PROTOCOL, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Saves an object to a disk file (or a binary file-like object).

    Tensors (on any device), NumPy arrays, numbers, strings, dtypes, devices, and lists,
    tuples and dicts of them are stored as data; anything else (a whole `nn.Module`, an
    instance of your class) is pickled, as `torch.save` does, and `ember.load` then
    needs `weights_only=False` to read it. Saving to a path is atomic: the file is
    written beside it and renamed over it, so an interrupted save leaves the old file.

    Args:
        obj: the object to save.
        f: a path, or a binary file-like object with `write`.
        pickle_module: the module whose `Pickler` pickles what data cannot hold.
        pickle_protocol: the pickle protocol for that.
        _use_new_zipfile_serialization, _disable_byteorder_record: PyTorch's switches
            between its file layouts, accepted so that programs passing them run; ember
            writes its one format either way.
    """
    encoder = _Encoder(pickle_module, pickle_protocol)
    try:
        encoder.plan(obj)
        structure = encoder.encode(obj, "")  # fails before the file is touched
    except RecursionError:
        raise RuntimeError("ember.save: the object is nested too deeply to save") from None
    metadata = {"format": FORMAT, "structure": json.dumps(structure)}
    if hasattr(f, "write"):
        checkpoint_io.write(f, encoder.arrays, metadata)
        return
    from ember.atomic_write import atomic_write

    folder = os.path.dirname(os.path.abspath(os.fspath(f)))
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")  # PyTorch's words
    with atomic_write(f) as out:
        checkpoint_io.write(out, encoder.arrays, metadata)


# -- load -----------------------------------------------------------------------------


def load(f: str | os.PathLike | BinaryIO, map_location: Any = None, pickle_module: Any = None,
         *, weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args: Any) -> Any:
    """Loads an object saved with `ember.save` or `torch.save` from a file.

    With `weights_only=True` (the default, as in PyTorch 2.6+), only tensors, dicts,
    lists, tuples, sets, numbers, strings, dtypes and devices load, through a restricted
    unpickler that runs no code from the file; anything else raises
    `pickle.UnpicklingError` naming it (allow trusted classes with `add_safe_globals`).
    Tensors that share storage in the file share memory after loading.

    Args:
        f: a path, or a binary file-like object with `read` and `seek`.
        map_location: where the tensors go: a device or string, a dict from saved device
            names to new ones, or a callable `(tensor, saved_device) -> tensor`. By
            default each returns to the device it was saved from.
        pickle_module: the module whose `Unpickler` reads pickles (only with
            `weights_only=False`).
        weights_only: load only tensors, primitive types, dicts and allowlisted types.
        mmap: map the file's tensor data copy-on-write instead of reading it (paths
            only): tensors are paged in as they are used.
    """
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    if mmap and hasattr(f, "read"):
        raise ValueError("ember.load: mmap=True needs a file path, not a file object")
    from ember import torch_checkpoint  # zipfile: imported when a file is loaded

    name = repr(os.fspath(f)) if not hasattr(f, "read") else "the file object"
    with _opened(f) as fh:
        head = fh.read(8)
        fh.seek(0)
        mmap_path = os.fspath(f) if mmap else None
        try:
            if torch_checkpoint.is_zip(head):
                return torch_checkpoint.load_zip(fh, map_location, mmap_path,
                                                 trusted=not weights_only)
            if torch_checkpoint.is_legacy(head):
                return torch_checkpoint.load_legacy(fh, map_location, trusted=not weights_only)
            return _load_ember(fh, map_location, weights_only, pickle_module, mmap_path)
        except UnsafeGlobalError as err:
            raise pickle.UnpicklingError(weights_only_message(f"{err} (in {name})")) from None
        except UnsupportedError as err:
            raise RuntimeError(f"ember.load: cannot load {name}: {err}") from None
        except FormatError as err:
            raise RuntimeError(f"ember.load: {name} is not a valid checkpoint (a corrupted, "
                               f"truncated or foreign file): {err}{_kind_hint(head)}") from None
        except RecursionError:
            raise RuntimeError(f"ember.load: {name} is nested too deeply to load "
                               "(a damaged or hostile file)") from None
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError,
                AttributeError, UnicodeDecodeError, OverflowError) as err:
            raise RuntimeError(f"ember.load: {name} is not a valid checkpoint (a corrupted, "
                               f"truncated or foreign file): {type(err).__name__}: {err}"
                               f"{_kind_hint(head)}") from None


@contextlib.contextmanager
def _opened(f: Any) -> Iterator[BinaryIO]:
    if hasattr(f, "read"):
        yield f
    else:
        with open(os.fspath(f), "rb") as fh:
            yield fh


def _kind_hint(head: bytes) -> str:
    from ember import torch_checkpoint

    if torch_checkpoint.is_zip(head):
        return " [a zip archive, read as a PyTorch (torch.save) file]"
    if torch_checkpoint.is_legacy(head):
        return " [a pickle stream, read as a legacy PyTorch (torch.save) file]"
    return ""


def _load_ember(fh: BinaryIO, map_location: Any, weights_only: bool, pickle_module: Any,
                mmap_path: str | None) -> Any:
    arrays, metadata = checkpoint_io.read(fh, mmap_path)
    from ember.core.creation import from_numpy

    if metadata.get("format") != FORMAT:  # plain safetensors from another tool
        return {name: place(from_numpy(arr), "cpu", map_location)
                for name, arr in arrays.items()}
    try:
        structure = json.loads(metadata["structure"])
    except (KeyError, TypeError, json.JSONDecodeError) as err:
        raise FormatError(f"its structure record is damaged: {err}") from None
    return _Decoder(arrays, map_location, weights_only, pickle_module).decode(structure)


class _Decoder:
    def __init__(self, arrays: dict, map_location: Any, weights_only: bool,
                 pickle_module: Any) -> None:
        self.arrays, self.map_location = arrays, map_location
        self.weights_only, self.pickle_module = weights_only, pickle_module
        self._tensors: dict[tuple, Tensor] = {}

    def decode(self, node: Any) -> Any:
        if isinstance(node, list):
            raise FormatError("its structure has a bare list where a record belongs")
        if not isinstance(node, dict):
            return node
        if "__tensor__" in node:
            return self._tensor(node)
        if "__sparse__" in node:
            return self._sparse(node)
        if "__numpy__" in node:
            arr = self._array(node["__numpy__"])
            return arr[()] if node.get("scalar") else arr
        if "__dict__" in node or "__odict__" in node:
            kind = dict if "__dict__" in node else collections.OrderedDict
            return kind((k["__int__"] if isinstance(k, dict) else k, self.decode(v))
                        for k, v in node["__dict__" if kind is dict else "__odict__"])
        if "__list__" in node:
            return [self.decode(v) for v in node["__list__"]]
        if "__tuple__" in node:
            return tuple(self.decode(v) for v in node["__tuple__"])
        if "__float__" in node:
            return float(node["__float__"])
        if "__dtype__" in node:
            return dt.from_name(node["__dtype__"])
        if "__device__" in node:
            return Device(node["__device__"])
        if "__pickle__" in node:
            return self._unpickle(node["__pickle__"])
        raise FormatError(f"its structure has an unknown record {str(node)[:80]}")

    def _tensor(self, node: dict) -> Tensor:
        from ember.core.creation import from_numpy

        view = node.get("view")
        key = (node["__tensor__"], node.get("device", "cpu"), bool(node.get("requires_grad")),
               bool(node.get("parameter")), str(view))
        t = self._tensors.get(key)
        if t is None:  # the same record twice is the same tensor (tied weights)
            arr = self._array(key[0])
            if view is not None:  # a view of a storage that other tensors share
                if not (isinstance(view, list) and len(view) == 3):
                    raise FormatError(f"tensor {key[0]!r} has a damaged view {view!r}")
                arr = checkpoint_io.strided_view(arr.reshape(-1), *view)
            t = place(from_numpy(arr), key[1], self.map_location)
            if key[3]:
                t = _parameter_class()(t, requires_grad=key[2])
            elif key[2]:
                t.requires_grad_(True)
            self._tensors[key] = t
        return t

    def _sparse(self, node: dict) -> Tensor:
        from ember.core.sparse_coo import make

        parts, size = node["__sparse__"], node.get("size")
        if not (isinstance(parts, list) and len(parts) == 2 and isinstance(size, list)):
            raise FormatError(f"it has a damaged sparse tensor record {str(node)[:80]}")
        indices, values = (self._tensor(p) for p in parts)
        out = make(indices, values, tuple(size), bool(node.get("coalesced")))
        return out.requires_grad_(True) if node.get("requires_grad") else out

    def _array(self, key: Any) -> np.ndarray:
        if not isinstance(key, str) or key not in self.arrays:
            raise FormatError(f"it lacks tensor {key!r} that its structure names")
        return self.arrays[key]

    def _unpickle(self, text: Any) -> Any:
        if not isinstance(text, str):
            raise FormatError("its pickled record is damaged")
        data = io.BytesIO(base64.b64decode(text, validate=True))

        def persistent(pid: Any) -> Any:
            kinds = {"ember.tensor": "__tensor__", "ember.numpy": "__numpy__",
                     "ember.sparse": "__sparse__"}
            if not (isinstance(pid, tuple) and len(pid) == 2 and isinstance(pid[1], dict)
                    and kinds.get(pid[0]) in pid[1]):
                raise pickle.UnpicklingError(f"persistent id {str(pid)[:80]} is not an "
                                             "ember tensor")
            return self.decode(pid[1])

        if self.weights_only:
            return WeightsUnpickler(data, _EMBER_GLOBALS, persistent).load()
        unpickler = (self.pickle_module or pickle).Unpickler(data)
        unpickler.persistent_load = persistent
        return unpickler.load()


# the globals ember's own pickled records may use under weights_only=True
_EMBER_GLOBALS = {"ember.core.dtype._by_name": dt.from_name,
                  "ember.core.quantized.rebuild_quantized": rebuild_quantized,
                  "ember.core.device.device": Device}
