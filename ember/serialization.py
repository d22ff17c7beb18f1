"""`ember.save` / `ember.load`, with PyTorch 2.6+'s semantics.

`ember.save` writes PyTorch's checkpoint format, as `torch.save` writes it: a zip archive
(`ember.torch_zip`) holding `data.pkl`, the object's pickle, in which tensors are
PyTorch's tensor reductions over persistent storage ids (`ember.torch_pickler`), and one
raw record per storage. `torch.load` reads ember's files, and ember's programs see the
same files (`os.path.getsize`, `zipfile`) that PyTorch's do.

`ember.load` reads PyTorch's files (`.pt`/`.pth`, zip or legacy; `ember.torch_checkpoint`)
and the safetensors files that ember's earlier `ember.save` wrote (tensors named by
path, the object's structure as JSON metadata; `_load_ember` below). With
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
import os
import pickle
import struct
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

from ember import checkpoint_io
from ember.checkpoint_io import FormatError, UnsupportedError, place
from ember.core import dtype as dt
from ember.core.device import device as Device
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


# -- save -----------------------------------------------------------------------------


def save(obj: Any, f: str | os.PathLike | BinaryIO, pickle_module: Any = pickle,
         pickle_protocol: int = DEFAULT_PROTOCOL, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Saves an object to a disk file (or a binary file-like object) in PyTorch's format.

    The file is what `torch.save` writes: a zip archive whose `data.pkl` pickles the
    object with each tensor's storage as a record of its own, so `torch.load` reads it
    (and for a state dict, `data.pkl` is byte for byte torch's). Tensors that view one
    storage share it in the file. Anything else (a whole `nn.Module`, an instance of your
    class) is pickled as usual; loading it needs `weights_only=False`. Saving to a path
    is atomic: the file is written beside it and renamed over it, so an interrupted save
    leaves the old file.

    Args:
        obj: the object to save.
        f: a path, or a binary file-like object with `write`.
        pickle_module: the module whose pure-Python `Pickler` (a `pickle._Pickler`)
            pickles the object.
        pickle_protocol: the pickle protocol (PyTorch's default, 2).
        _use_new_zipfile_serialization: False writes PyTorch's legacy (pre-1.6) layout,
            a stream of pickles and storages, as `torch.save` then does.
        _disable_byteorder_record: write the `byteorder` record last, as PyTorch's
            writer then does, instead of before the tensor data.
    """
    from ember import torch_pickler, torch_zip  # imported when a file is saved

    legacy = not _use_new_zipfile_serialization
    try:
        data, storages = torch_pickler.dumps(obj, pickle_protocol, pickle_module, legacy)
    except RecursionError:
        raise RuntimeError("ember.save: the object is nested too deeply to save") from None

    def write(out: BinaryIO, folder: str) -> None:
        if legacy:
            return _write_legacy(out, data, storages, pickle_protocol)
        archive = torch_zip.ZipWriter(out, folder)
        archive.write_record("data.pkl", data)
        archive.write_record(".format_version", b"1")
        archive.write_record(".storage_alignment", str(torch_zip.ALIGNMENT).encode())
        if not _disable_byteorder_record:
            archive.write_record("byteorder", sys.byteorder.encode())
        for storage in storages:
            arr = storage.array
            archive.write_record(f"data/{storage.key}", arr.reshape(-1).view(np.uint8)
                                 if arr.size else b"")
        archive.close(big_endian=sys.byteorder == "big")

    if hasattr(f, "write"):
        write(f, torch_zip.archive_name(None))
        return
    from ember.atomic_write import atomic_write

    path = os.fspath(f)
    archive = torch_zip.archive_name(os.fsdecode(path))
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")  # PyTorch's words
    with atomic_write(path) as out:
        write(out, archive)


def _write_legacy(out: BinaryIO, data: bytes, storages: list, protocol: int) -> None:
    """PyTorch's legacy layout (`_use_new_zipfile_serialization=False`): pickles of its
    magic number, protocol version and system info, the object's pickle, a pickle of the
    storage keys, then each storage as its element count (int64) and bytes."""
    from ember.torch_checkpoint import LEGACY_MAGIC, LEGACY_PROTOCOL

    sizes = {"short": 2, "int": 4, "long": struct.calcsize("=l")}
    head = (LEGACY_MAGIC, LEGACY_PROTOCOL, {"protocol_version": LEGACY_PROTOCOL,
                                           "little_endian": sys.byteorder == "little",
                                           "type_sizes": sizes})
    for value in head:
        out.write(pickle.dumps(value, protocol=protocol))
    out.write(data)
    storages = sorted(storages, key=lambda s: s.key)  # PyTorch writes them by sorted key
    out.write(pickle.dumps([s.key for s in storages], protocol=protocol))
    for storage in storages:
        out.write(struct.pack("<q", storage.array.size))
        if storage.array.size:
            out.write(storage.array.reshape(-1).view(np.uint8))


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
