"""`torch.PyTorchFileReader` and `torch.PyTorchFileWriter`: record-level access to the zip
container of `torch.save` files, as libraries that read checkpoints lazily use it
(Lightning's lazy loader, `torch.serialization` internals).

Record names are relative to the archive's folder (`data.pkl`, `data/0`, `byteorder`), as
PyTorch's `PyTorchStreamReader` gives them. Both ends reuse ember's own checkpoint code:
the writer is `torch_zip.ZipWriter` (PyTorch's byte layout), the reader Python's
`zipfile` over the same file.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any, BinaryIO

import numpy as np

from ember.torch_zip import FILE_FORMAT_VERSION, ZipWriter, archive_name

_DATA_DIR_VERSION = 6  # from this format version on, PyTorch files it as `.data/version`


def _not_found(name: str) -> RuntimeError:
    return RuntimeError(
        f"PytorchStreamReader failed locating file {name}: file not found. This is an internal "
        "miniz error. If you are seeing this error, there is a high likelihood that your "
        "checkpoint file is corrupted. This can happen if the checkpoint was not saved "
        "properly, was transferred incorrectly, or the file was modified after saving.")


class PyTorchFileReader:
    """Reads the records of a `torch.save` zip archive from a path or a binary file."""

    def __init__(self, name_or_buffer: str | BinaryIO) -> None:
        if isinstance(name_or_buffer, (str, bytes)) or hasattr(name_or_buffer, "__fspath__"):
            self._fh: BinaryIO = open(name_or_buffer, "rb")  # noqa: SIM115 - held open
        else:
            self._fh = name_or_buffer
        try:
            self._zip = zipfile.ZipFile(self._fh)
        except zipfile.BadZipFile as err:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {err}") from None
        names = self._zip.namelist()
        folder = names[0].split("/", 1)[0] + "/" if names and "/" in names[0] else ""
        self._prefix = folder
        self._infos = {n[len(folder):]: self._zip.getinfo(n) for n in names
                       if n.startswith(folder)}

    def _info(self, name: str) -> zipfile.ZipInfo:
        info = self._infos.get(name)
        if info is None:
            raise _not_found(name)
        return info

    def get_all_records(self) -> list[str]:
        """Every record's name, in the archive's order."""
        return list(self._infos)

    def has_record(self, name: str) -> bool:
        return name in self._infos

    def get_record(self, name: str) -> bytes:
        """A record's bytes."""
        return self._zip.read(self._info(name))

    def get_record_size(self, name: str) -> int:
        return self._info(name).file_size

    def get_record_header_offset(self, name: str) -> int:
        return self._info(name).header_offset

    def get_record_offset(self, name: str) -> int:
        """Where the record's bytes begin in the file (after its local header)."""
        from ember.torch_checkpoint import _record_offset

        return _record_offset(self._fh, self._info(name))

    get_record_offset_no_read = get_record_offset

    def get_storage_from_record(self, name: str, numel: int, dtype: Any) -> Any:
        """A 1-D tensor of `numel` elements of `dtype` over the record's bytes
        (`torch.UntypedStorage` as the dtype: bytes)."""
        from ember.core import dtype as dt
        from ember.core.backend import numpy_dtype
        from ember.core.creation import from_numpy

        d = dtype if isinstance(dtype, dt.dtype) else dt.uint8
        data = np.frombuffer(bytearray(self.get_record(name)), dtype=numpy_dtype(d))
        return from_numpy(data[:numel])

    def serialization_id(self) -> str:
        info = self._infos.get(".data/serialization_id")
        return self._zip.read(info).decode() if info is not None else ""


class PyTorchFileWriter:
    """Writes records into a new `torch.save` zip archive, byte for byte as PyTorch's
    `PyTorchStreamWriter` lays them out; `write_end_of_file` closes it."""

    def __init__(self, name_or_buffer: str | BinaryIO, compute_crc32: bool = True,
                 storage_alignment: int = 64) -> None:
        if isinstance(name_or_buffer, (str, bytes)) or hasattr(name_or_buffer, "__fspath__"):
            path = str(name_or_buffer)
            self._fh: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed at the end
            self._owned = True
        else:
            path, self._fh, self._owned = None, name_or_buffer, False
        self._name = archive_name(path)
        self._writer = ZipWriter(self._fh, self._name)
        self._written: set[str] = set()
        self._version = FILE_FORMAT_VERSION

    def write_record(self, name: str, data: bytes | Any, size: int) -> None:
        """Writes `size` bytes of `data` (bytes, a buffer or a tensor's storage) as a
        record."""
        if name in self._written:
            raise RuntimeError(f"Tried to serialize file twice: {name}")
        if hasattr(data, "numpy"):
            data = data.numpy().tobytes()
        self._writer.write_record(name, memoryview(data).cast("B")[:size])
        self._written.add(name)

    def write_record_metadata(self, name: str, size: int) -> None:
        """Reserves a record of `size` zero bytes."""
        self.write_record(name, bytes(size), size)

    def get_all_written_records(self) -> set[str]:
        return set(self._written)

    def archive_name(self) -> str:
        return self._name

    def serialization_id(self) -> str:
        return self._writer.serialization_id()

    def set_min_version(self, version: int) -> None:
        """Raises the file format version the archive records (never below PyTorch's
        minimum, 3)."""
        self._version = max(self._version, int(version))

    def write_end_of_file(self) -> None:
        """Writes the version record (as PyTorch names it for the version), the closing
        records and the central directory."""
        if self._version > FILE_FORMAT_VERSION:
            name = ".data/version" if self._version >= _DATA_DIR_VERSION else "version"
            self._writer.write_record(name, f"{self._version}\n".encode())
        self._writer.close()
        if self._owned:
            self._fh.close()
        elif isinstance(self._fh, io.IOBase):
            self._fh.flush()
