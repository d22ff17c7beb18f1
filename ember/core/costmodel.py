"""The cost model: an op's time on a device from its declared cost and the device's traits.

    time(op) = launches * launch + max(FLOPs / rate, bytes / bandwidth)

`launch` is the measured end-to-end time of a tiny op: ember's dispatch, the device's
launch, and recording its autograd node when the op records one. A list op (`_foreach_add_`)
launches one kernel per tensor: the backends loop over the list. `rate` is the matmul
rate at that op's FLOPs for the BLAS-like ops (matmul, and any op doing more than
`BLAS_INTENSITY` FLOPs a byte: linear, convolution) and the elementwise FLOP rate for the
rest; `bandwidth` the elementwise bandwidth at that many bytes. The larger of the two
terms goes to the estimate's "compute" or "memory" part. Moving data that is not on the
device yet adds bytes / host<->device bandwidth ("transfers").

A history refines it, as StarPU's history-based performance models do: measured times
kept per (op, shapes, dtypes, device) replace the formula for the ops measured
(`History`). On the device a plan's step was recorded on, the op times measured while
recording replace both (`estimate(..., seconds=)`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ember.core import costs, traits
from ember.core.opdef import OPS, Cost


@dataclass
class Estimate:
    """A step's estimated time on one device, in seconds, by where it goes."""

    compute_s: float = 0.0
    memory_s: float = 0.0
    launch_s: float = 0.0
    transfer_s: float = 0.0
    measured_s: float = 0.0  # ops whose time comes from the history, not the formula
    host_s: float = 0.0  # the host's work between ops (Python: modules, autograd engine)
    ops: int = 0
    measured_ops: int = 0

    @property
    def total_s(self) -> float:
        return self.compute_s + self.memory_s + self.launch_s + self.transfer_s + \
            self.measured_s + self.host_s

    def __iadd__(self, other: Estimate) -> Estimate:
        for name in ("compute_s", "memory_s", "launch_s", "transfer_s", "measured_s",
                     "host_s", "ops", "measured_ops"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self


@dataclass(frozen=True)
class OpWork:
    """One op call of a workload: the op, a key of its operands' shapes and dtypes (for
    the history), and its declared cost."""

    op: str
    signature: str
    flops: float
    bytes: float
    phase: str = "forward"  # "forward", "backward" or "optimizer"
    records_grad: bool = False  # autograd records a node for it (training's forward)
    group: int = -1  # a fused op's forward and backward share a group (see Workload)
    launches: int = 1  # kernels it launches: a list op launches one per tensor


BLAS_INTENSITY = 4.0
"""FLOPs per byte moved above which an op runs at matmul rates: matmul, linear and
convolution (and their backward) do hundreds; elementwise ops and reductions one or two."""


def is_blas(work: OpWork) -> bool:
    """Whether an op call runs at matmul rates rather than elementwise rates."""
    decl = OPS.get(work.op)
    if decl is not None and decl.cost is costs.matmul:
        return True
    return work.flops > BLAS_INTENSITY * max(work.bytes, 1.0)


def op_cost(op: str, args: tuple, attrs: dict) -> Cost:
    """The declared cost of one call (no cost declared: nothing but its launch)."""
    decl = OPS.get(op)
    if decl is None or decl.cost is None:
        return Cost()
    try:
        return decl.cost(*args, **attrs)
    except Exception:  # a cost function that does not know this call: count the launch
        return Cost()


def estimate_op(work: OpWork, t: traits.DeviceTraits, history: History | None = None) -> Estimate:
    """One op's estimated time on the device of traits `t`."""
    if history is not None:
        seconds = history.lookup(work.op, work.signature, t.device)
        if seconds is not None:
            return Estimate(measured_s=seconds, ops=1, measured_ops=1)
    rate = t.matmul_rate(work.flops) if is_blas(work) else t.vector_gflops * 1e9
    compute = work.flops / rate
    memory = work.bytes / t.bandwidth(work.bytes) if work.bytes else 0.0
    launch = t.launch_s * work.launches + (t.record_s if work.records_grad else 0.0)
    if compute >= memory:
        return Estimate(compute_s=compute, launch_s=launch, ops=1)
    return Estimate(memory_s=memory, launch_s=launch, ops=1)


def kernel_s(work: OpWork, t: traits.DeviceTraits) -> float:
    """The formula's time of an op's work on the device of traits `t`, launch left out."""
    rate = t.matmul_rate(work.flops) if is_blas(work) else t.vector_gflops * 1e9
    return max(work.flops / rate, work.bytes / t.bandwidth(work.bytes) if work.bytes else 0.0)


def carried_over(works: list[OpWork], seconds: list[float | None], source: traits.DeviceTraits,
                 target: list[OpWork], t: traits.DeviceTraits,
                 same_kernels: bool = True) -> list[float | None]:
    """The kernel times `seconds` of `works`, measured on the device of traits `source`,
    carried over to the ops `target` on the device of traits `t`: an op measured there
    (the same op and operands) takes its measured time scaled by the formula's ratio
    between the two devices, so what the formula misses on both (a fused LSTM layer's
    time steps, a slow BLAS path) is kept and only the devices' difference is modelled;
    other ops get None (the formula's). With `same_kernels` False (the target's backend
    has other kernels: what the formula misses is partly the source's implementation's),
    the geometric mean of that and the formula's own time."""
    measured: dict[tuple[str, str], tuple[float, OpWork]] = {}
    for w, s in zip(works, seconds):
        if s is not None:
            measured.setdefault((w.op, w.signature), (s, w))
    out: list[float | None] = []
    for w in target:
        found = measured.get((w.op, w.signature))
        if found is None:
            out.append(None)
            continue
        s, w0 = found
        base, own = kernel_s(w0, source), kernel_s(w, t)
        carried = s * own / base if base > 0 else s
        out.append(carried if same_kernels else math.sqrt(carried * own))
    return out


def estimate(works: list[OpWork], t: traits.DeviceTraits, transfer_bytes: float = 0.0,
             history: History | None = None, host_s: float = 0.0,
             seconds: list[float | None] | None = None) -> Estimate:
    """The summed estimate of `works` on one device, plus moving `transfer_bytes` there,
    plus `host_s` of the host's own work between the ops. `seconds`: each work's kernel
    time (beyond a tiny op's) measured on this very device (None where not measured),
    used before the history and the formula; its launch is still the traits'."""
    total = Estimate(transfer_s=t.transfer_s(transfer_bytes), host_s=host_s)
    cache: dict[tuple[str, str, bool, int], Estimate] = {}
    for i, w in enumerate(works):
        measured = seconds[i] if seconds is not None else None
        if measured is not None:  # the kernel's work, measured; its launch, the traits'
            launch = t.launch_s * w.launches + (t.record_s if w.records_grad else 0.0)
            total += Estimate(measured_s=measured, launch_s=launch, ops=1, measured_ops=1)
            continue
        key = (w.op, w.signature, w.records_grad, w.launches)
        one = cache.get(key)
        if one is None:
            one = cache[key] = estimate_op(w, t, history)
        total += one
    return total


@dataclass
class History:
    """Measured op times per (op, shapes and dtypes, device): the refinement of the
    formula, kept as StarPU's history-based models keep theirs. `record` adds a
    measurement; `lookup` gives the median once an entry has `min_samples`. Saved as
    JSON next to the trait cache (`load`/`save`)."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    min_samples: int = 3
    max_samples: int = 20

    @staticmethod
    def _key(op: str, signature: str, device: str) -> str:
        return f"{device}|{op}|{signature}"

    def record(self, op: str, signature: str, device: str, seconds: float) -> None:
        times = self.samples.setdefault(self._key(op, signature, device), [])
        times.append(float(seconds))
        del times[:-self.max_samples]  # keep the latest: drivers and machines change

    def lookup(self, op: str, signature: str, device: str) -> float | None:
        times = self.samples.get(self._key(op, signature, device))
        if not times or len(times) < self.min_samples:
            return None
        ordered = sorted(times)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2

    def __len__(self) -> int:
        return len(self.samples)

    @staticmethod
    def path() -> Path:
        return traits.cache_dir() / "history.json"

    @classmethod
    def load(cls) -> History:
        """The saved history; empty when there is none or it is corrupt."""
        try:
            data = json.loads(cls.path().read_text())
            samples = {str(k): [float(x) for x in v] for k, v in data["samples"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return cls()
        return cls(samples)

    def save(self) -> None:
        path = self.path()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"samples": self.samples}))
        os.replace(tmp, path)


def signature(args: Any) -> str:
    """A key for an op call's operands, as the history keeps it: each tensor's dtype and
    shape, and each list of tensors' shapes, in order (`float32[64, 32],TensorList[[3]]`);
    other arguments are left out. `signature_of` makes the same key from the profiler's
    description of a call."""
    shapes, dtypes = [], []
    for a in args:
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            shapes.append(list(a.shape))
            dtypes.append(getattr(a.dtype, "name", str(a.dtype)))
        elif isinstance(a, (list, tuple)) and a and all(hasattr(x, "shape") for x in a):
            shapes.append([list(x.shape) for x in a])
            dtypes.append("TensorList")
    return signature_of(shapes, dtypes)


def signature_of(shapes: list, dtypes: list) -> str:
    """`signature` from shapes and dtype names (the profiler's `input_shapes` and
    `input_dtypes`: scalars and other arguments, whose dtype is "Scalar" or "", skipped)."""
    return ",".join(f"{d}{s}" for s, d in zip(shapes, dtypes) if d not in ("", "Scalar"))
