"""Writing the zip container of PyTorch's checkpoints (`torch.save`) byte for byte as
PyTorch 2.13 writes it (its `PyTorchStreamWriter`, which drives miniz).

Every record `<archive>/<name>` is stored uncompressed, its bytes starting at a multiple
of 64 (`.storage_alignment`): the local header's extra field is an `FB` block of `Z`s
sized to get there, so a reader can map tensor data straight from the file. Local
headers carry no CRC or sizes (general-purpose flag bit 3); a data descriptor after each
record does, and the central directory repeats them. The archive always ends with the
zip64 end records, as miniz writes them when told `MZ_ZIP_FLAG_WRITE_ZIP64`; offsets or
sizes past 4 GiB get zip64 extra fields.

The records stream out one after another, so a tensor's bytes are written from its own
memory, never gathered into one buffer.
"""

from __future__ import annotations

import struct
import zlib
from typing import BinaryIO

ALIGNMENT = 64  # torch.utils.serialization.config.save.storage_alignment's default
FILE_FORMAT_VERSION = 3  # caffe2::serialize::kMinProducedFileFormatVersion
_U32 = 0xFFFFFFFF
_UTF8, _DESCRIPTOR = 0x0800, 0x0008  # general-purpose flags: UTF-8 name; sizes follow
_MASK64 = (1 << 64) - 1
_CHUNK = 1 << 24  # CRC and write a big record in 16 MiB pieces


def archive_name(path: str | None) -> str:
    """The folder every record lives in: the file's base name without its last
    extension (`ck.model.pt` -> `ck.model`), as PyTorch names it; `archive` for a file
    object or a name that is not ASCII (PyTorch writes those through a Python stream)."""
    if path is None or not path.isascii():
        return "archive"
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base else base
    if not stem:  # PyTorch's writer refuses it too ("dir/", ".pt")
        raise RuntimeError(f"ember.save: invalid file name: {path}")
    return stem


def _hash_combine(seed: int, value: int) -> int:
    # c10::hash_combine on 64-bit size_t
    return seed ^ ((value + 0x9E3779B9 + ((seed << 6) & _MASK64) + (seed >> 2)) & _MASK64)


class ZipWriter:
    """Writes records into `out` under the folder `name`; `close` writes PyTorch's
    closing records (`version`, `byteorder` if missing, `.data/serialization_id`) and the
    central directory."""

    def __init__(self, out: BinaryIO, name: str) -> None:
        self._out, self._prefix = out, name + "/"
        self._pos = 0
        # name, flags, crc, size, offset of each record
        self._entries: list[tuple[bytes, int, int, int, int]] = []
        self._names: list[str] = []
        self._crc_hash = 0

    def _write(self, data: bytes | memoryview) -> None:
        self._out.write(data)
        self._pos += len(data)

    def write_record(self, name: str, data: bytes | memoryview) -> None:
        """Writes one record (its bytes, uncompressed and 64-aligned)."""
        data = memoryview(data).cast("B")
        size = len(data)
        full = (self._prefix + name).encode("utf-8")
        offset = self._pos
        zip64 = _zip64_local(offset, size)
        start = offset + 30 + len(full) + 4 + len(zip64)
        pad = -start % ALIGNMENT
        extra = zip64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
        # an empty record has no data descriptor: its header's zero CRC and sizes are true
        flags = _UTF8 | (_DESCRIPTOR if size else 0)
        self._write(struct.pack("<4s5H3I2H", b"PK\x03\x04", 0, flags, 0, 0, 0, 0, 0, 0,
                                len(full), len(extra)) + full + extra)
        crc = 0
        for begin in range(0, size, _CHUNK):
            piece = data[begin:begin + _CHUNK]
            crc = zlib.crc32(piece, crc)
            self._write(piece)
        if size:
            wide = size >= _U32 or offset >= _U32
            self._write(struct.pack("<4sIQQ" if wide else "<4sIII", b"PK\x07\x08", crc, size,
                                    size))
            # PyTorch's writer combines the CRCs it sees pass in data descriptors
            self._crc_hash = _hash_combine(self._crc_hash, crc)
        self._entries.append((full, flags, crc, size, offset))
        self._names.append(name)

    def close(self, big_endian: bool = False) -> None:
        """Finishes the archive as PyTorch's writer does when it is closed."""
        if "version" not in self._names and ".data/version" not in self._names:
            self.write_record("version", f"{FILE_FORMAT_VERSION}\n".encode())
        if "byteorder" not in self._names:
            self.write_record("byteorder", b"big" if big_endian else b"little")
        self.write_record(".data/serialization_id", self.serialization_id().encode())
        self._central_directory()

    def serialization_id(self) -> str:
        """PyTorch's 40-digit id: the record names' hashes combined in the order PyTorch's
        `std::unordered_set` of them iterates, then their data's CRC-32s combined."""
        names = 0
        for code in _hash_set_order([_murmur64(n.encode()) for n in self._names]):
            names = _hash_combine(names, code)
        return f"{names:020d}{self._crc_hash:020d}"

    def _central_directory(self) -> None:
        begin = self._pos
        for full, flags, crc, size, offset in self._entries:
            extra = b""
            if size >= _U32 or offset >= _U32:
                fields = (struct.pack("<QQ", size, size) if size >= _U32 else b"") + (
                    struct.pack("<Q", offset) if offset >= _U32 else b"")
                extra = struct.pack("<HH", 1, len(fields)) + fields
            small = min(size, _U32)
            self._write(struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 0, 0, flags, 0, 0, 0,
                                    crc, small, small, len(full), len(extra), 0, 0, 0, 0,
                                    min(offset, _U32)) + full + extra)
        end = self._pos
        count = len(self._entries)
        self._write(struct.pack("<4sQ2H2I4Q", b"PK\x06\x06", 44, 0x031E, 0x002D, 0, 0,
                                count, count, end - begin, begin))
        self._write(struct.pack("<4sIQI", b"PK\x06\x07", 0, end, 1))
        self._write(struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, min(count, 0xFFFF),
                                min(count, 0xFFFF), min(end - begin, _U32), min(begin, _U32), 0))


def _zip64_local(offset: int, size: int) -> bytes:
    """The zip64 extra field miniz puts in a local header for a record past 4 GiB."""
    if size < _U32 and offset < _U32:
        return b""
    fields = (struct.pack("<QQ", size, size) if size >= _U32 else b"") + (
        struct.pack("<Q", offset) if offset >= _U32 else b"")
    return struct.pack("<HH", 1, len(fields)) + fields


def _murmur64(data: bytes, seed: int = 0xC70F6907) -> int:
    """libstdc++'s `std::hash<std::string>` on 64-bit (MurmurHash64A)."""
    m, r = 0xC6A4A7935BD1E995, 47
    h = (seed ^ (len(data) * m)) & _MASK64
    end = len(data) - len(data) % 8
    for i in range(0, end, 8):
        k = int.from_bytes(data[i:i + 8], "little")
        k = (k * m) & _MASK64
        k ^= k >> r
        k = (k * m) & _MASK64
        h ^= k
        h = (h * m) & _MASK64
    if len(data) % 8:
        h ^= int.from_bytes(data[end:], "little")
        h = (h * m) & _MASK64
    h ^= h >> r
    h = (h * m) & _MASK64
    h ^= h >> r
    return h


# libstdc++'s bucket counts (`__prime_list`, from 2) and its first small-count table
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73,
           79, 83, 89, 97, 103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211,
           227, 241, 257, 277, 293, 313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619,
           661, 709, 761, 823, 887, 953, 1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741,
           1879, 2029, 2179, 2357, 2549, 2753, 2971, 3209, 3469, 3739, 4027, 4349, 4703,
           5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783, 9497, 10273, 11113, 12011,
           12983, 14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281, 26267, 28411,
           30727, 33223, 35933, 38873, 42043, 45481, 49201, 53201, 57557, 62233, 67307,
           72817, 78779, 85229, 92203, 99733, 107897, 116731, 126271, 136607, 147793,
           159871, 172933, 187091, 202409, 218971, 236897, 256279, 277261, 299951, 324503,
           351061, 379787, 410857, 444487, 480881, 520241, 562841, 608903, 658753, 712697,
           771049, 834181, 902483, 976369)
_FAST_BUCKETS = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)


def _hash_set_order(codes: list[int]) -> list[int]:
    """The order in which libstdc++'s `unordered_set` (max load factor 1) iterates keys
    with hash `codes` inserted in that order. It is one singly linked list; each bucket
    points at the node before its first. A key whose bucket is empty goes to the front
    (the bucket of the old front then starts after it); one whose bucket is not goes
    first in that bucket. A rehash re-inserts the list, front to back, into more
    buckets."""
    head = -1  # the sentinel "before begin" node
    nxt: dict[int, int | None] = {head: None}  # node (index into codes) -> next node
    n_buckets, next_resize = 1, 0
    before: list[int | None] = [None]  # bucket -> the node before its first

    def link(i: int) -> None:
        b = codes[i] % n_buckets
        if before[b] is not None:
            nxt[i] = nxt[before[b]]
            nxt[before[b]] = i
        else:
            nxt[i] = nxt[head]
            nxt[head] = i
            if nxt[i] is not None:
                before[codes[nxt[i]] % n_buckets] = i
            before[b] = head

    for i in range(len(codes)):
        if i + 1 > next_resize:  # _Prime_rehash_policy::_M_need_rehash
            least = max(i + 1, 0 if next_resize else 11)
            if least >= n_buckets:
                want = max(least + 1, n_buckets * 2)
                if want < len(_FAST_BUCKETS):
                    n_buckets = _FAST_BUCKETS[want]
                else:
                    n_buckets = next((p for p in _PRIMES[6:] if p >= want), want)
                old, node = [], nxt[head]
                while node is not None:
                    old.append(node)
                    node = nxt[node]
                nxt[head], before = None, [None] * n_buckets
                for j in old:
                    link(j)
            next_resize = n_buckets
        link(i)
    order, node = [], nxt[head]
    while node is not None:
        order.append(codes[node])
        node = nxt[node]
    return order
