"""`ember.save` / `ember.load`: checkpoints in the safetensors format, never pickle.

A checkpoint holds the tensors of a (nested) object as safetensors entries named by
their path (`model.fc1.weight`, `optimizer.state.0.momentum_buffer`), and the object's
shape — dicts (string or int keys), lists, tuples, numbers, strings, booleans, None — as
JSON in the file's metadata. Loading rebuilds the object from data only, so a checkpoint
cannot run code. Writes are atomic: the file is written beside the target, flushed to
disk, then renamed over it, so a crash mid-save leaves the old file intact.
"""

from __future__ import annotations

import json
import math
import os
import struct
import tempfile
from typing import Any

import numpy as np

from ember.core import dtype as dt
from ember.core.backend import numpy_dtype
from ember.core.device import device as Device
from ember.core.host import host_array
from ember.core.tensor import Tensor

FORMAT = "ember.checkpoint/1"
_SAFETENSORS_DTYPES = {"F16": dt.float16, "BF16": dt.bfloat16, "F32": dt.float32,
                       "F64": dt.float64, "I8": dt.int8, "I16": dt.int16, "I32": dt.int32,
                       "I64": dt.int64, "U8": dt.uint8, "BOOL": dt.bool_}


def _safetensors():
    try:
        import safetensors
    except ImportError:
        raise ImportError("ember.save/ember.load need the safetensors package: "
                          "pip install 'ember[data]' (or pip install safetensors)") from None
    return safetensors


# -- save -----------------------------------------------------------------------------


class _Encoder:
    """Turns an object into JSON-able structure plus a table of named host arrays."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def encode(self, value: Any, path: str) -> Any:
        if isinstance(value, Tensor):
            return self._tensor(value, path)
        if isinstance(value, (np.ndarray, np.number, np.bool_)):
            return self._numpy(value, path)
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return value
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"__float__": repr(value)}
        if isinstance(value, dict):
            items = []
            for key, item in value.items():
                if isinstance(key, bool) or not isinstance(key, (str, int)):
                    raise TypeError(f"ember.save: dict keys must be str or int, got "
                                    f"{type(key).__name__} {key!r} at '{path or '<root>'}'")
                child = f"{path}.{key}" if path else str(key)
                items.append([key if isinstance(key, str) else {"__int__": key},
                              self.encode(item, child)])
            return {"__dict__": items}
        if isinstance(value, (list, tuple)):
            tag = "__list__" if isinstance(value, list) else "__tuple__"
            return {tag: [self.encode(v, f"{path}.{i}" if path else str(i))
                          for i, v in enumerate(value)]}
        if isinstance(value, dt.dtype):
            return {"__dtype__": value.name}
        if isinstance(value, Device):
            return {"__device__": str(value)}
        raise TypeError(f"ember.save: cannot store a {type(value).__name__} at "
                        f"'{path or '<root>'}': checkpoints hold tensors, numbers, strings, "
                        "booleans, None, lists, tuples and dicts only (no pickle)")

    def _tensor(self, t: Tensor, path: str) -> dict:
        key = path or "tensor"
        if key in self.arrays:
            n = 1
            while f"{key}#{n}" in self.arrays:
                n += 1
            key = f"{key}#{n}"
        self.arrays[key] = np.array(host_array(t.detach()), order="C")  # keeps 0-d
        return {"__tensor__": key, "device": str(t.device), "requires_grad": t.requires_grad}


    def _numpy(self, value: np.ndarray | np.generic, path: str) -> dict:
        # stored as tensor data (no pickle), tagged so that it loads back as NumPy: what
        # torch.load gives for a NumPy array or scalar it saved
        try:
            as_tensor = Tensor._from_data(np.asarray(value))
        except TypeError as err:
            raise TypeError(f"ember.save: cannot store the NumPy {type(value).__name__} at "
                            f"'{path or '<root>'}': {err}") from None
        record = self._tensor(as_tensor, path)
        return {"__numpy__": record["__tensor__"], "scalar": isinstance(value, np.generic)}


def save(obj: Any, f: str | os.PathLike) -> None:
    """Save `obj` (a state dict, or any nest of tensors, NumPy arrays and scalars, numbers,
    strings, lists, tuples and dicts) to the file `f` in the safetensors format,
    atomically."""
    safetensors = _safetensors()
    encoder = _Encoder()
    structure = encoder.encode(obj, "")  # fails before the file is touched
    specs = {name: safetensors.TensorSpec(dtype=_spec_dtype(arr), shape=list(arr.shape),
                                          data_ptr=arr.ctypes.data, data_len=arr.nbytes)
             for name, arr in encoder.arrays.items()}
    metadata = {"format": FORMAT, "structure": json.dumps(structure)}
    data = safetensors.serialize(specs, metadata=metadata)
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_folder(folder)


def _spec_dtype(arr: np.ndarray) -> str:
    for d in dt.ALL_DTYPES:
        if numpy_dtype(d) == arr.dtype:
            return d.name
    raise TypeError(f"ember.save: unsupported array dtype {arr.dtype}")


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- load -----------------------------------------------------------------------------


def load(f: str | os.PathLike, map_location: Any = None, weights_only: bool = True) -> Any:
    """Load what `ember.save` wrote. `map_location` (a device, a string, a dict mapping
    saved device names to new ones, or a callable `(tensor, saved_device) -> tensor`)
    places the tensors; by default they return to the devices they were saved from.

    A plain safetensors file from another tool loads as a dict of tensors.
    """
    safetensors = _safetensors()
    path = os.fspath(f)
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        entries = dict(safetensors.deserialize(data))
    except Exception as err:  # SafetensorError: truncated, corrupted, or not safetensors
        raise RuntimeError(f"ember.load: {path!r} is not a valid checkpoint (a corrupted, "
                           f"truncated or non-safetensors file): {err}") from None
    header_len = struct.unpack("<Q", data[:8])[0]
    metadata = json.loads(data[8:8 + header_len]).get("__metadata__") or {}
    arrays = {name: _array(name, entry, path) for name, entry in entries.items()}
    if metadata.get("format") != FORMAT:
        from ember.core.creation import from_numpy
        return {name: _place(from_numpy(arr), "cpu", map_location)
                for name, arr in arrays.items()}
    try:
        structure = json.loads(metadata["structure"])
    except (KeyError, json.JSONDecodeError) as err:
        raise RuntimeError(f"ember.load: {path!r} has a damaged structure record: "
                           f"{err}") from None
    return _Decoder(arrays, map_location, path).decode(structure)


def _array(name: str, entry: dict, path: str) -> np.ndarray:
    d = _SAFETENSORS_DTYPES.get(entry["dtype"])
    if d is None:
        raise RuntimeError(f"ember.load: tensor {name!r} in {path!r} has dtype "
                           f"{entry['dtype']}, which ember does not support")
    return np.frombuffer(bytes(entry["data"]), dtype=numpy_dtype(d)).reshape(entry["shape"])


def _place(t: Tensor, saved: str, map_location: Any) -> Tensor:
    if map_location is None:
        target = saved
    elif callable(map_location) and not isinstance(map_location, (str, Device)):
        return map_location(t, saved)
    elif isinstance(map_location, dict):
        target = map_location.get(saved, saved)
    else:
        target = map_location
    if str(target) == "cpu":
        return t
    try:
        return t.to(target)
    except RuntimeError as err:
        raise RuntimeError(f"ember.load: a tensor was saved on {saved!r}, which cannot be "
                           f"used here ({err}); pass map_location='cpu' to load it on the "
                           "CPU") from None


class _Decoder:
    def __init__(self, arrays: dict, map_location: Any, path: str) -> None:
        self.arrays, self.map_location, self.path = arrays, map_location, path

    def decode(self, node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        if "__tensor__" in node:
            return self._tensor(node)
        if "__numpy__" in node:
            arr = self._array(node["__numpy__"]).copy()  # writable, as unpickled arrays are
            return arr[()] if node.get("scalar") else arr
        if "__dict__" in node:
            return {(k["__int__"] if isinstance(k, dict) else k): self.decode(v)
                    for k, v in node["__dict__"]}
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
        raise RuntimeError(f"ember.load: {self.path!r} has an unknown record {node!r}")

    def _tensor(self, node: dict) -> Tensor:
        from ember.core.creation import tensor

        t = _place(tensor(self._array(node["__tensor__"])), node.get("device", "cpu"),
                   self.map_location)
        if node.get("requires_grad"):
            t.requires_grad_(True)
        return t

    def _array(self, key: str) -> np.ndarray:
        if key not in self.arrays:
            raise RuntimeError(f"ember.load: {self.path!r} lacks tensor {key!r} that its "
                               "structure names (the file is damaged)")
        return self.arrays[key]
