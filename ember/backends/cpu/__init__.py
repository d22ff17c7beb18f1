"""The CPU backend: kernels on NumPy (OpenBLAS for matmul).

Importing this module is cheap and does not import NumPy, so that ember can point
OpenBLAS at the right kernels (see blas.py) before NumPy loads.
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import Any

from ember.core.backend import (
    EVERY_DTYPE,
    FLOAT8_DTYPES,
    LIMITED_DTYPES,
    Backend,
    DeviceInfo,
    ElementwiseChain,
    bfloat16,
    dtype,
    hookimpl,
)


def hide_ieee_warnings() -> None:
    """NumPy reports IEEE arithmetic (inf - inf, 0 / 0, overflow) as RuntimeWarnings;
    PyTorch computes the same NaN and inf silently. Hide them for the kernels' modules only
    (the user's own NumPy code still warns; an errstate around each call would cost a
    microsecond per op). Installed when ember is imported (ember/_early imports this
    package), so that it sits outside a `warnings.catch_warnings()` block in which a
    program runs its first op: the block would drop a filter added inside it on exit. The
    kernels add it again when they load (`filterwarnings` keeps a single copy)."""
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember\.backends\.")


hide_ieee_warnings()


class CPUBackend(Backend):
    """Tensors in host memory, as NumPy arrays."""

    name = "cpu"
    priority = 0
    supports_out = True
    autocast_dtype = bfloat16  # PyTorch's CPU autocast default

    @staticmethod
    def half_vector_lanes() -> int:
        return half_vector_lanes()

    def __init__(self) -> None:
        super().__init__()
        from ember.backends.cpu import fusion, gru, kernels, losses, lstm, memory

        self.malloc_policy = memory.keep_freed_memory()
        self._k = kernels
        self.kernels.update(kernels.KERNELS)
        self.kernels.update(lstm.KERNELS)
        self.kernels.update(gru.KERNELS)
        self.kernels.update(losses.kernels(kernels.KERNELS))
        self.fusible_ops = fusion.FUSIBLE
        # complex too: the xp kernels take it; and PyTorch's shell unsigned dtypes and its
        # float8 dtypes (ml_dtypes' types: made, cast, copied and printed)
        self.dtypes = frozenset(EVERY_DTYPE + LIMITED_DTYPES + FLOAT8_DTYPES)

    def device_count(self) -> int:
        return 1

    def device_info(self, index: int) -> DeviceInfo:
        from ember.backends.cpu import blas

        info = blas.openblas_info()
        details = {"cores": os.cpu_count(),
                   "blas": f"OpenBLAS on {info.get('corename')} kernels (this CPU's best: "
                           f"{info.get('best') or 'unknown'})",
                   "private blas": (info.get("fast_path") or {}).get("state")
                   if info.get("slow") else "not needed (NumPy already runs the best tier)",
                   "host memory": _MALLOC_POLICY.get(self.malloc_policy, self.malloc_policy)}
        if info.get("slow"):
            details["warning"] = info.get("advice")
        return DeviceInfo(name=_cpu_name(), memory_bytes=_total_memory(),
                          compute_units=os.cpu_count(), details=details)

    def empty(self, shape: tuple[int, ...], dtype: dtype, device: int) -> Any:
        return self._k.empty(shape, dtype)

    def from_numpy(self, array: Any, device: int) -> Any:
        return array  # the CPU shares host memory; core copies where it must

    def to_numpy(self, buffer: Any) -> Any:
        return buffer

    def to_device(self, buffer: Any, device: int) -> Any:
        return buffer

    def is_contiguous(self, buffer: Any) -> bool:
        return buffer.flags.c_contiguous

    def share_memory(self, buffer: Any) -> Any:
        from ember.backends.cpu import shared_memory

        if shared_memory.block_of(buffer) is not None:
            return buffer  # already in a shared block
        return shared_memory.share(buffer)

    def owns(self, buffer: Any) -> bool:
        return buffer.base is None and buffer.flags.writeable

    def strides(self, buffer: Any) -> tuple[int, ...]:
        return tuple(s // buffer.itemsize for s in buffer.strides)

    def storage_offset(self, buffer: Any) -> int:
        # the array owning the memory: the last array down the chain of `base`s (a strided
        # view's base is NumPy's stride-tricks wrapper, whose base is the array again)
        root = node = buffer
        while getattr(node, "base", None) is not None:
            node = node.base
            if type(node) is type(buffer):
                root = node
        return (self.data_ptr(buffer) - self.data_ptr(root)) // buffer.itemsize

    def storage(self, buffer: Any) -> Any | None:
        if type(buffer).__name__ != "ndarray":  # an opaque state (a fused kernel's)
            return None
        root = node = buffer
        while getattr(node, "base", None) is not None:
            node = node.base
            if type(node) is type(buffer):
                root = node
        return root

    def fuse_elementwise(self, chain: ElementwiseChain) -> Any | None:
        from ember.backends.cpu import fusion

        return fusion.fuse(chain)

    def data_ptr(self, buffer: Any) -> int:
        return buffer.__array_interface__["data"][0]

    def manual_seed(self, seed: int) -> None:
        self._k.manual_seed(seed)


_MALLOC_POLICY = {
    "cached": "freed memory kept for reuse (memory.py; EMBER_CPU_MALLOC=system to turn off)",
    "system": "the C library's defaults (EMBER_CPU_MALLOC=system)",
}


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "CPU"


def _total_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def get_cpu_capability() -> str:
    """The widest SIMD instruction set this CPU and OS run: "AVX512", "AVX2" or "DEFAULT"
    (`torch.backends.cpu.get_cpu_capability()`)."""
    from ember.backends.cpu import blas

    core = blas.detect_coretype()
    if core in ("SkylakeX", "Cooperlake"):
        return "AVX512"
    return "AVX2" if core in ("Haswell", "Zen") else "DEFAULT"


@functools.cache
def half_vector_lanes() -> int:
    """float16/bfloat16 elements per vector of PyTorch's CPU kernels on this machine
    (ATen's ``Vectorized<BFloat16>::size()``): 32 where it runs its AVX-512 kernels, else
    16 (AVX2's, and the 32-byte default's)."""
    return 32 if get_cpu_capability() == "AVX512" else 16


@hookimpl
def ember_backends():
    return [CPUBackend]
