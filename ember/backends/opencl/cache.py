"""The on-disk cache of compiled OpenCL programs.

A program is compiled once per (device, driver, source, options): its binary is written
to ``$EMBER_OPENCL_CACHE_DIR`` (default ``$XDG_CACHE_HOME/ember/opencl``, i.e.
``~/.cache/ember/opencl``), and a later process loads the binary instead of compiling
the source. A binary the driver refuses is deleted and the source compiled again.

PoCL and NVIDIA cache source builds themselves (PoCL in ~/.cache/pocl/kcache, with the
per-kernel work-group functions it generates at a kernel's first launch; NVIDIA in
~/.nv/ComputeCache), so by default this cache serves the other drivers; see
`enabled`.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Any

VERSION = "1"  # bump when the sources' conventions change incompatibly


def enabled(cl_device: Any) -> bool:
    """``EMBER_OPENCL_CACHE=1``: always; ``=0``: never; unset: for drivers that do not
    cache source builds themselves (PoCL and NVIDIA do, and reading a PoCL binary back
    costs about as much as its build, so there the driver's cache is the better one)."""
    flag = os.environ.get("EMBER_OPENCL_CACHE", "").strip().lower()
    if flag in ("0", "false", "no", "off"):
        return False
    if flag in ("1", "true", "yes", "on"):
        return True
    try:
        from pyopencl.characterize import has_src_build_cache

        return not has_src_build_cache(cl_device)
    except Exception:
        return True


def directory() -> str:
    explicit = os.environ.get("EMBER_OPENCL_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                            ".cache")
    return os.path.join(base, "ember", "opencl")


def key(cl_device: Any, source: str, options: tuple[str, ...]) -> str:
    """Everything the binary depends on: the driver, the device, the options, the
    source."""
    h = hashlib.sha256()
    for part in (VERSION, cl_device.platform.name, cl_device.platform.version,
                 cl_device.name, cl_device.version, cl_device.driver_version,
                 " ".join(options), source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def load(digest: str) -> bytes | None:
    path = os.path.join(directory(), digest + ".bin")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def store(digest: str, binary: bytes) -> None:
    """Write atomically (a temporary file renamed into place), so concurrent processes
    never read a half-written binary. Failure to write is not an error."""
    if not binary:
        return
    folder = directory()
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(binary)
        os.replace(tmp, os.path.join(folder, digest + ".bin"))
    except OSError:
        pass


def forget(digest: str) -> None:
    try:
        os.remove(os.path.join(directory(), digest + ".bin"))
    except OSError:
        pass
