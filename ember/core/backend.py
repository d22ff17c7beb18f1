"""The contract a hardware backend implements. Backends import this module and nothing
else from ember.

A backend owns *buffers*: its own array objects (a NumPy array, a CuPy array, an OpenCL
buffer with strides ...). A buffer must expose `.shape` (a tuple of ints). ember's core
never looks inside a buffer; it passes buffers to the backend's kernels and to the
memory functions below.

Kernels are plain callables in `Backend.kernels`, keyed by op name:

    kernel(*buffers, **attrs) -> buffer | tuple of buffers

Every op is declared once in core (ember.core.opdef; `ember ops --kernels` lists them):
a primitive's kernel takes the positional operands and keyword-only attributes of its
declared rule; a fused kernel (optional: without it, core runs the composite it replaces)
has its declared signature. Core has already checked shapes, broadcasting, dtypes and
devices when a kernel runs, so a kernel trusts its inputs. Binary elementwise kernels
receive operands already cast to one compute dtype; either operand may instead be a
Python scalar of that dtype's kind. Creation kernels (`full`, `arange`, `rand`, ...)
receive no buffers, and a `device` attribute (the device index) instead.

A backend that lacks a primitive's kernel still works: the op runs on the CPU backend
through `to_numpy`/`from_numpy` (with a warning; an error under EMBER_STRICT=1). So a new
backend needs the memory functions and the view/in-place kernels (`REQUIRED_KERNELS`),
and may add kernels one by one.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ember.core.dtype as _dtypes
from ember.core.dtype import (  # noqa: F401 - re-exported: the dtype vocabulary of the contract
    ALL_DTYPES,
    COMPLEX_DTYPES,
    EVERY_DTYPE,
    FLOAT8_DTYPES,
    FLOATING_DTYPES,
    LIMITED_DTYPES,
    bfloat16,
    bool_,
    dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)

_NUMPY_DTYPES: dict = {}  # dtype -> NumPy dtype, filled as asked (tensor.item() asks)


def numpy_dtype(d: dtype) -> Any:
    """The NumPy dtype that holds `d` on the host (bfloat16 through ml_dtypes)."""
    found = _NUMPY_DTYPES.get(d)
    if found is not None:
        return found
    import numpy as np

    if d is bfloat16:
        import ml_dtypes

        found = np.dtype(ml_dtypes.bfloat16)
    elif d in FLOAT8_DTYPES:
        from ember.core import float8

        found = float8.numpy_type(d.name)
    else:
        found = np.dtype(d.name)
    _NUMPY_DTYPES[d] = found
    return found


def to_float8(values: Any, name: str) -> Any:
    """A NumPy array of real `values` as float8 dtype `name`, rounded (and saturated) as
    PyTorch converts (ember.core.float8)."""
    from ember.core import float8

    return float8.to_float8(values, name)


def from_numpy_dtype(np_dtype: Any) -> dtype:
    """The ember dtype of a NumPy dtype, or TypeError for one ember does not have."""
    name = str(np_dtype)
    for d in EVERY_DTYPE + LIMITED_DTYPES + FLOAT8_DTYPES:
        if d.name == name:
            return d
    raise TypeError(f"can't convert NumPy arrays of dtype {name}; ember supports "
                    f"{', '.join(d.name for d in EVERY_DTYPE)}")


_float32_matmul_precision = "highest"


def get_float32_matmul_precision() -> str:
    """The precision float32 matrix products may use: "highest" (float32 throughout, the
    default), "high" or "medium" (a backend may use TF32 or similar; the CUDA backend uses
    TF32 tensor cores). `ember.backends.cuda.matmul.allow_tf32` reads and sets the same."""
    return _float32_matmul_precision


def set_float32_matmul_precision(precision: str) -> None:
    """Set the precision float32 matrix products may use ("highest", "high", "medium");
    as PyTorch, anything else warns and changes nothing."""
    global _float32_matmul_precision
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        import warnings

        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", stacklevel=2)
        return
    _float32_matmul_precision = precision


# scaled_dot_product_attention's kernel switches (PyTorch's torch._C._set_sdp_use_*): set
# by `ember.backends.cuda.enable_*_sdp` and `ember.nn.attention.sdpa_kernel`, read by
# `ember.nn.functional.scaled_dot_product_attention` on every device, as PyTorch's are.
SDP_KERNELS = ("flash", "mem_efficient", "math", "cudnn", "overrideable")
_sdp_use = dict.fromkeys(SDP_KERNELS, True)


def sdp_use(kernel: str) -> bool:
    """Whether scaled_dot_product_attention may use `kernel` (one of SDP_KERNELS)."""
    return _sdp_use[kernel]


def set_sdp_use(kernel: str, enabled: bool) -> None:
    """Allow or forbid `kernel` (one of SDP_KERNELS) to scaled_dot_product_attention."""
    if not isinstance(enabled, bool):
        # PyTorch's messages, down to the three switches that name the math one
        name = {"cudnn": "cudnn", "overrideable": "overrideable"}.get(kernel, "math")
        got = ("%s" if kernel == "cudnn" else "") + type(enabled).__name__
        raise RuntimeError(f"set_sdp_use_{name} expects a bool, but got {got}")
    _sdp_use[kernel] = enabled


@contextlib.contextmanager
def sdp_kernels_only(kernels: Iterable[str]) -> Iterator[dict]:
    """Allow exactly `kernels` to scaled_dot_product_attention inside the block (yielding
    PyTorch's empty context dict), then restore the switches as they were."""
    kernels = set(kernels)
    previous = dict(_sdp_use)
    try:
        _sdp_use.update((k, k in kernels) for k in SDP_KERNELS)
        yield {}
    finally:
        _sdp_use.update(previous)


def api_name() -> str:
    """The module name that user-facing messages give ember ("torch" under the alias)."""
    return _dtypes.API_NAME


API_VERSION = 1
"""The contract's version. A backend built for another version is refused at load."""

Kernel = Callable[..., Any]


@dataclass(frozen=True)
class ElementwiseChain:
    """Elementwise ops that `ember.compile` asks a backend to run as one kernel
    (`Backend.fuse_elementwise`): a recorded step's chain whose intermediates nothing
    else reads, e.g. a bias add and a ReLU, or an optimizer's update arithmetic.

    `ops` run in order; each is `(op name, operands, result dtype)`, an operand being
    `("input", i)` (the i-th buffer the kernel receives), `("op", j)` (the result of the
    j-th op, read elementwise) or `("scalar", number)` (a Python number already of the
    compute dtype's kind). `inputs` gives each buffer's shape and dtype; every shape
    broadcasts to `shape`, the shape of the last op's result, which has `dtype`."""

    ops: tuple[tuple[str, tuple[tuple[str, Any], ...], dtype], ...]
    inputs: tuple[tuple[tuple[int, ...], dtype], ...]
    shape: tuple[int, ...]
    dtype: dtype

    @property
    def name(self) -> str:
        """How the profiler shows the fused kernel: `fused[add+relu]`."""
        return "fused[" + "+".join(op for op, _, _ in self.ops) + "]"

    def expressions(self, formulas: dict[str, str], input: Callable[[int], str],
                    scalar: Callable[[int, Any], str]) -> list[str]:
        """Each op's expression for a generated kernel: `formulas[op]` formatted with its
        operands written as `input(i)`, `v{j}` (the j-th op's result, which the kernel
        names so) and `scalar(k, value)` (the chain's k-th scalar, counted in order)."""
        scalars = 0
        out = []
        for op, operands, _ in self.ops:
            args = []
            for kind, value in operands:
                if kind == "input":
                    args.append(input(value))
                elif kind == "op":
                    args.append(f"v{value}")
                else:
                    args.append(scalar(scalars, value))
                    scalars += 1
            out.append(formulas[op].format(*args))
        return out

    def loop_dims(self) -> tuple[tuple[int, ...], list[tuple[bool, ...]]] | None:
        """The loop nest a generated kernel runs: `merged_dims` of the result's shape and
        the inputs' shapes."""
        return merged_dims(tuple(self.shape), [tuple(s) for s, _ in self.inputs])


def merged_dims(shape: tuple[int, ...], inputs: list[tuple[int, ...]]
                ) -> tuple[tuple[int, ...], list[tuple[bool, ...]]] | None:
    """The result's shape with adjacent dimensions merged where every input is present
    (True) or broadcast (False) in both alike, and each input's pattern over them; None
    for an input that does not broadcast to `shape`."""
    dims: list[int] = []
    patterns: list[list[bool]] = [[] for _ in inputs]
    for k, size in enumerate(shape):
        if size == 1:
            continue  # every input has 1 here too
        here = []
        for s in inputs:
            j = k - (len(shape) - len(s))
            own = s[j] if j >= 0 else 1
            if own not in (1, size):
                return None
            here.append(own == size)
        if dims and all(p[-1] == h for p, h in zip(patterns, here)):
            dims[-1] *= size
            continue
        dims.append(size)
        for p, h in zip(patterns, here):
            p.append(h)
    if not dims:
        return (1,), [(False,) for _ in inputs]
    return tuple(dims), [tuple(p) for p in patterns]


def logical_to_physical_perm(shape: tuple, strides_of: list[tuple],
                             check: bool = False) -> tuple[list[int], bool]:
    """The dims from the outermost in memory to the innermost, judged over the strides of
    every operand in `strides_of` (PyTorch's elementwise output order, which backends
    give their elementwise results, and `Tensor.dim_order`): an insertion sort from the
    innermost dim where a zero stride says nothing, a smaller stride is inner, and of
    equal strides the longer dim is outer.
    With `check`, also whether some neighbours were left unordered (ambiguous)."""
    ndim = len(shape)

    def should_swap(a: int, b: int) -> int:
        for strides in strides_of:
            sa, sb = strides[a], strides[b]
            if sa == 0 or sb == 0:
                continue
            if sa == sb:
                if shape[b] >= shape[a]:
                    continue
                return 1
            return -1 if sb > sa else 1
        return 0

    perm = list(reversed(range(ndim)))  # innermost first while sorting
    for i in range(1, ndim):
        d1 = i
        for d0 in reversed(range(i)):
            comparison = should_swap(perm[d0], perm[d1])
            if comparison > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif comparison < 0:
                break
    ambiguous = check and any(should_swap(perm[i], perm[i + 1]) != -1
                              for i in range(ndim - 1))
    return list(reversed(perm)), ambiguous


def dense_strides(shape: tuple, strides: tuple) -> bool:
    """Whether strides cover the elements with neither gaps nor overlap, in some order of
    the dims (c10's is_non_overlapping_and_dense): what a PyTorch copy keeps exactly."""
    expected = 1
    for st, n in sorted((st, n) for n, st in zip(shape, strides) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers "
           "to a single memory location. Please clone() the tensor before performing the "
           "operation.")
"""PyTorch's error for a write into a tensor whose elements share memory (an expanded
view), in its words: what a backend's write kernels raise (core's overlap checks raise it
too, and a fill, which PyTorch writes into shared elements, is retried on seeing it)."""


class ViewNotPossible(RuntimeError):
    """Raised by a `reshape` kernel called with copy=False when the buffer's strides do not
    allow a view; core then copies (`reshape`) or raises (`view`)."""


@_dtypes.printed_in_api()
class OutOfMemoryError(RuntimeError):
    """A device ran out of memory (`torch.OutOfMemoryError`): the message names the device,
    the bytes asked for and the bytes free. The allocator stays usable afterwards."""


def human_bytes(n: float) -> str:
    """`n` bytes as people read them: "512 bytes", "1.50 GiB", "4.00 TiB"."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}" if unit != "bytes" else f"{int(n)} bytes"
        n /= 1024
    return str(n)


def host_out_of_memory(op: str, err: MemoryError) -> OutOfMemoryError:
    """The RuntimeError PyTorch raises when host memory runs out ("can't allocate memory:
    you tried to allocate N bytes"), for the MemoryError NumPy (or Python) raised in `op`.
    NumPy's names the array's shape and dtype, from which the bytes are counted."""
    shape, dtype = getattr(err, "shape", None), getattr(err, "dtype", None)
    if shape is None or dtype is None:
        return OutOfMemoryError(f"{op}: CPU out of memory: can't allocate memory ({err})")
    nbytes = dtype.itemsize
    for s in shape:
        nbytes *= int(s)
    return OutOfMemoryError(f"{op}: CPU out of memory: can't allocate memory: you tried to "
                            f"allocate {nbytes} bytes ({human_bytes(nbytes)})")


@_dtypes.printed_in_api("._C")
class _LinAlgError(RuntimeError):
    """A matrix a factorization cannot handle: singular for an inverse or a solve, not
    positive-definite for Cholesky, an SVD that does not converge
    (`torch.linalg.LinAlgError`, a RuntimeError; `ember.linalg.LinAlgError`). Kernels
    raise it only where they cannot report LAPACK's `info` in their result.

    Named and placed as PyTorch's class is (`torch._C._LinAlgError`, printed `ember._C`
    or, under the torch alias, `torch._C`), so a program that prints or compares
    `type(e).__name__` sees PyTorch's; `ember._C` holds it for pickling by that path."""


LinAlgError = _LinAlgError


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """Raised by integer division and remainder kernels for a zero divisor: a RuntimeError,
    as PyTorch raises, and a ZeroDivisionError, as Python does. Its message is PyTorch's
    ("ZeroDivisionError"); the op that refused goes in a note."""

    def __init__(self, op: str = "", *args: object) -> None:
        super().__init__("ZeroDivisionError", *args)
        if op and op != "ZeroDivisionError":  # (not when unpickled from its own args)
            self.add_note(f"{op}: integer division by zero")

    def __reduce__(self) -> tuple:
        return RuntimeError, self.args


# printed as PyTorch's (a traceback's "RuntimeError: ZeroDivisionError", `type(e).__name__`);
# pickled as a builtin RuntimeError (another process gets PyTorch's type and message)
IntegerDivisionByZero.__name__ = IntegerDivisionByZero.__qualname__ = "RuntimeError"
IntegerDivisionByZero.__module__ = "builtins"


@dataclass
class DeviceInfo:
    """What `ember devices` shows of one device, and what the scheduler plans with."""

    name: str
    memory_bytes: int | None = None  # total memory, None when unknown
    compute_units: int | None = None
    peak_gflops: float | None = None  # rough float32 throughput, None when unknown
    details: dict[str, Any] = field(default_factory=dict)  # anything else worth showing


class Backend:
    """Base class of every backend. Subclasses set `name` and fill in the methods.

    Attributes:
        name: the device type users write (`"cpu"`, `"cuda"`, `"my_npu"`).
        api_version: the contract version it was written for (`API_VERSION`).
        priority: preference among accelerators when ember picks a default device
            (higher first); the CPU is always the last resort.
        kernels: op name -> kernel. Another plugin may add to it (the
            `ember_backend_kernels` hook).
        dtypes: the dtypes its buffers can hold; core refuses, naming the op and the
            device, to make a tensor of any other dtype on it. The default is the real
            dtypes (`ALL_DTYPES`); a backend whose kernels take complex buffers adds
            `COMPLEX_DTYPES` (the CPU and CUDA backends, on the shared xp kernels).
    """

    name: str = ""
    api_version: int = API_VERSION
    priority: int = 0
    is_accelerator: bool = False  # whether device="auto" may choose it
    autocast_dtype: dtype | None = None
    """The low-precision dtype `ember.autocast(<this device type>)` uses when given none
    (PyTorch's: bfloat16 on the CPU, float16 on CUDA); None: float16."""
    supports_out: bool = False
    """True when elementwise kernels (unary, binary) accept `out=buffer` (same shape and
    dtype as their result) and write into it; in-place ops then cost one kernel."""

    shape_only: bool = False
    """True for a backend whose buffers have a shape and a dtype but no data (ember's
    `meta` device): core never copies values out of it (PyTorch's "Cannot copy out of
    meta tensor; no data!"), ops whose result's shape depends on the data raise
    NotImplementedError, and the CPU fallback runs without a warning."""
    fusible_ops: frozenset[str] = frozenset()
    """The elementwise ops `fuse_elementwise` can put into one kernel (ember.compile's
    chains are made of these only)."""
    half_vector_lanes: Callable[[], int] | None = None
    """float16/bfloat16 elements per SIMD vector of the PyTorch kernels this backend
    reproduces, where their rounding depends on which elements a vector loop takes (the
    CPU's: 16 with AVX2, 32 with AVX-512); None: every element is rounded alike."""

    def __init__(self) -> None:
        self.kernels: dict[str, Kernel] = {}
        self.dtypes: frozenset[dtype] = frozenset(ALL_DTYPES)

    # -- availability ---------------------------------------------------------------
    def is_available(self) -> bool:
        """Whether at least one device can be used now. Must not raise."""
        return self.unavailable_reason() is None

    def unavailable_reason(self) -> str | None:
        """Why the backend cannot be used (missing library, no device ...), or None."""
        return None

    def device_count(self) -> int:
        return 1 if self.is_available() else 0

    def device_info(self, index: int) -> DeviceInfo:
        return DeviceInfo(name=self.name)

    def current_device(self) -> int:
        """The device index that a device string without an index (`"cuda"`) means."""
        return getattr(self, "_current_device", 0)

    def set_device(self, index: int) -> None:
        """Make `index` the current device (`ember.accelerator.set_device_index`)."""
        self._current_device = index

    # -- memory ---------------------------------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype: dtype, device: int) -> Any:
        """An uninitialised buffer."""
        raise NotImplementedError

    def from_numpy(self, array: Any, device: int) -> Any:
        """A buffer holding a copy of a NumPy array (same dtype, same shape)."""
        raise NotImplementedError

    def to_numpy(self, buffer: Any) -> Any:
        """A NumPy array holding the buffer's values (a copy, or the buffer itself)."""
        raise NotImplementedError

    def to_device(self, buffer: Any, device: int) -> Any:
        """The buffer's values on another device of this backend."""
        return self.from_numpy(self.to_numpy(buffer), device)

    def from_host_async(self, array: Any, device: int) -> Any | None:
        """Optional: a copy of a host array that need not be finished when this returns
        (`x.to(device, non_blocking=True)`); None when the backend has none, and
        `from_numpy` is used."""
        return None

    def share_memory(self, buffer: Any) -> Any | None:
        """Optional: a copy of `buffer` (one a tensor owns, not a view) in memory other
        processes can map, with its strides (`Tensor.share_memory_`); None where there is
        nothing to move (device memory that processes reach by other means, as PyTorch's
        CUDA tensors)."""
        return None

    def memory_stats(self, device: int) -> dict[str, int]:
        """Optional: the device allocator's counters, by PyTorch's names
        (`allocated_bytes.all.current`, `reserved_bytes.all.peak` ...); {} when none."""
        return {}

    def owns(self, buffer: Any) -> bool:
        """True when `buffer` is not a view of other memory, so autograd may keep it as a
        leaf's `.grad` without copying (when no other tensor object refers to it)."""
        return False

    def buffer_device(self, buffer: Any) -> int:
        """The index of the device that holds `buffer`."""
        return 0

    def is_contiguous(self, buffer: Any) -> bool:
        """Whether the buffer's elements are dense in row-major order (`Tensor.contiguous`
        copies the ones that are not). A backend whose buffers are always dense keeps
        this default."""
        return True

    def strides(self, buffer: Any) -> tuple[int, ...]:
        """The buffer's strides, in elements (`Tensor.stride`). Default: a dense
        row-major buffer's (a backend whose buffers can be strided views overrides this,
        `storage_offset` and `data_ptr`)."""
        strides, acc = [], 1
        for s in reversed(tuple(buffer.shape)):
            strides.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(strides))

    def storage_offset(self, buffer: Any) -> int:
        """Where the buffer's first element lies in the memory it shares with other views,
        in elements (`Tensor.storage_offset`). Default: 0."""
        return 0

    def data_ptr(self, buffer: Any) -> int:
        """The address of the buffer's first element (`Tensor.data_ptr`); views of one
        memory give addresses `storage_offset * itemsize` apart. Default: 0."""
        return 0

    def storage(self, buffer: Any) -> Any | None:
        """Optional (ember.compile's buffer planning): the object holding the memory of
        `buffer`, the same for every view of it (NumPy: the array at the root of `.base`);
        None when unknown, or when `buffer` is not one of this backend's buffers (an opaque
        state a fused kernel returns). A replay reuses only memory whose storage it
        knows, and only storage that `owns` (writable, not a view) and that no argument,
        parameter or earlier kernel call already had: a kernel that keeps memory it hands
        out (a cached constant, a workspace) must hand it out read-only."""
        return None

    def fuse_elementwise(self, chain: ElementwiseChain) -> Kernel | None:
        """Optional (ember.compile): one kernel computing `chain`, called as
        `kernel(*buffers, out=None)` with the chain's input buffers, that returns the
        result, written into `out` when given (a buffer of the result's shape and dtype
        that the replay no longer needs; it may be one of the inputs). None where the
        backend cannot, or where one kernel would not be faster: the ops then run one by
        one."""
        return None

    def export_to(self, buffer: Any, other: Backend, device: int) -> Any | None:
        """Optional direct transfer to another backend (DLPack, peer copy ...); None
        when there is none, and ember copies through host memory."""
        return None

    # -- execution ------------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        """Seed every device's random number generator."""

    def synchronize(self, device: int | None = None) -> None:
        """Wait for all queued work on a device (all devices when None)."""

    def collectives(self) -> Any | None:
        """Optional: this backend's own collective communication for ember.distributed
        (NCCL on CUDA), or None: tensors are then staged through host memory for MPI."""
        return None

    # -- device timing (ember.profiler) ---------------------------------------------------
    def start_device_timing(self) -> bool:
        """Start timing the work this backend's devices run, on the devices' own clocks,
        until `stop_device_timing`. Returns False when there is nothing to time apart from
        the host: a synchronous backend (the CPU), whose kernels' time is the op's own.
        Must not create a device context that does not exist yet: a device first used
        while timing is on is timed from its first use."""
        return False

    def device_activities(self) -> list[DeviceActivity]:
        """The device work launched since the last call, oldest first, while timing is on.
        The profiler calls this on entering and leaving every op, and gives the work to the
        op that launched it: it must be cheap (no waiting for the device). A stretch (an
        activity with no kernel name) is kept only where an op ran on this backend's
        devices since the last call, so host-only work records no empty device events."""
        return []

    def stop_device_timing(self) -> None:
        """Stop timing. Activities already returned stay readable."""


def cache_dir() -> Path:
    """ember's folder for what it keeps between processes (device traits, a backend's
    compiled kernels): `$EMBER_CACHE_DIR`, else the user's cache folder. It may not exist
    yet, nor be writable."""
    override = os.environ.get("EMBER_CACHE_DIR", "").strip()
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("ember", appauthor=False))


class _BackwardState(threading.local):  # per thread, as each thread runs its own backward
    retain_graph = False
    # False while the backward running is autograd.grad / backward(inputs=...): a reentrant
    # checkpoint cannot give gradients to chosen inputs (torch.autograd._is_checkpoint_valid)
    checkpoint_valid = True


backward_state = _BackwardState()


def backward_retains_graph() -> bool:
    """Whether the backward pass running on this thread keeps its graph
    (`retain_graph=True`). A backward kernel that reuses what its forward saved (the CPU's
    LSTM/GRU layers write gate gradients over the saved gates) must leave it intact then:
    a later backward pass through the same graph reads it again."""
    return backward_state.retain_graph


class DeviceActivity:
    """Work that ran on a device while timing was on: one kernel (`name` is the kernel's),
    or everything queued between two of the profiler's calls (`name` None: the profiler
    names it after the op that launched it).

    `times()` gives its (start, end) in nanoseconds of the host's `time.perf_counter_ns`
    clock, waiting for the work to finish; a backend maps its device clock onto the host's
    (OpenCL: from the time each kernel was queued, on both clocks).
    """

    __slots__ = ("name", "device", "_times")

    def __init__(self, name: str | None, device: int,
                 times: Callable[[], tuple[int, int]]) -> None:
        self.name = name
        self.device = device
        self._times = times

    def times(self) -> tuple[int, int]:
        return self._times()


# -- plugin registration --------------------------------------------------------------
import pluggy  # noqa: E402 - kept beside what plugins need from the contract

hookimpl = pluggy.HookimplMarker("ember")
"""Mark a plugin's hook implementations: `@hookimpl def ember_backends(): ...`."""

REQUIRED_KERNELS = frozenset({"reshape", "permute", "expand", "getitem", "setitem", "assign",
                              "strided_view", "view_dtype"})
"""Kernels every backend must have natively: views and in-place writes cannot be emulated
through a copy to the CPU. Every other op falls back to the CPU backend when missing."""

REQUIRED_COMPLEX_KERNELS = frozenset({"view_as_real"})
"""The views of complex tensors, required of a backend that holds complex dtypes."""
