"""The scheduler behind `device="auto"`: which device a piece of work should run on.

It compares the cost model's estimate (`ember.core.costmodel`) of the work on every
device `"auto"` may choose (the accelerators and the CPU), using each device's measured
traits (`ember.core.traits`), and applies three rules:

- a device that cannot hold the work (memory needed > its free memory) is out;
- the CPU keeps the work unless another device is estimated at least `MARGIN` times
  faster (moving a program off the host for a gain within the model's error is a loss);
- otherwise the fastest device wins.

The choice is recorded (`chosen()`): once made, every later `"auto"` resolves to it, so
the rest of the program agrees with it. `ember.plan` makes an informed choice and
replaces the record; without one, the first `"auto"` that has work to judge makes it
(`model.to("auto")`: the model's parameters; a factory or `tensor.to("auto")`: the
tensor's size). `with_fallback` moves on to the next device when placing runs out of
memory (`model.to("auto")` uses it); a single tensor made with `"auto"` that does not fit
raises its device's error, as it would on that device named.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ember.core import plugins
from ember.core.device import device as Device

if TYPE_CHECKING:  # imported where used: `import ember` does not load the cost model
    from ember.core import costmodel

MARGIN = 1.1
"""How much faster than the CPU another device must be estimated to take the work."""
HEADROOM = 0.9
"""The share of a device's free memory the work may use."""


def available_backends(accelerators_only: bool = False) -> list:
    """Loaded backends that can be used now, preferred first (the CPU last). With
    `accelerators_only`, only those `"auto"` may choose (and the CPU)."""
    plugins.registry.ensure_loaded()
    usable = [b for b in plugins.registry.backends.values()
              if (not accelerators_only or b.is_accelerator or b.name == "cpu")
              and plugins.safe_unavailable_reason(b) is None]
    if os.environ.get("EMBER_BACKENDS", "").strip():  # the user's order is the preference
        return usable
    return sorted(usable, key=lambda b: (b.name == "cpu", -b.priority))


def candidate_devices(accelerators_only: bool = True) -> list[Device]:
    """Every device of the usable backends (those `"auto"` may choose by default)."""
    out = []
    for b in available_backends(accelerators_only):
        if b.name == "cpu":
            out.append(Device("cpu"))
            continue
        try:
            count = b.device_count()
        except plugins.PLUGIN_ERRORS:  # a device probe must not break planning
            count = 0
        out.extend(Device(b.name, i) for i in range(count))
    return out


@dataclass
class Option:
    """One device's case for a piece of work."""

    device: Device
    estimate: costmodel.Estimate
    memory_free: int | None
    fits: bool
    eligible: bool = True  # False: listed for comparison, but "auto" does not choose it
    measured_traits: bool = True
    probed: bool = False  # estimated from a step recorded on this device (`ember.plan`)


@dataclass
class Decision:
    device: Device
    options: list[Option]  # fastest first
    reasons: list[str]
    order: list[Device]  # the fallback order: the chosen device, then the next ...


def fmt_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def options(works: list[costmodel.OpWork] | Callable[[Device], list[costmodel.OpWork]],
            memory_needed: int, input_bytes: int, devices: list[Device],
            eligible: list[Device] | None = None, history: costmodel.History | None = None,
            host_s: float = 0.0,
            seconds: Callable[[Device], list[float | None] | None] | None = None,
            ) -> list[Option]:
    """The estimate of `works` (a list, or a function giving each device's list) on each
    device, fastest first. `input_bytes` come from the host every step (to every device
    but the CPU); `host_s` is the host's own work a step, the same on every device;
    `seconds(device)`: the ops' times measured on that device, where there are some."""
    from ember.core import calibration, costmodel

    calibration.prepare(devices)  # the devices not measured yet: under one progress bar
    out = []
    for d in devices:
        t = calibration.traits_of(d)
        moved = input_bytes if d.type != "cpu" else 0
        ops = works(d) if callable(works) else works
        est = costmodel.estimate(ops, t, moved, history, host_s,
                                 seconds(d) if seconds is not None else None)
        free = t.memory_free
        fits = free is None or memory_needed <= free * HEADROOM
        out.append(Option(d, est, free, fits, eligible is None or d in eligible, t.measured))
    return sorted(out, key=lambda o: o.estimate.total_s)


def decide(opts: list[Option], memory_needed: int) -> Decision:
    """Apply the rules (module doc) to the options; the reasons say why, in words."""
    reasons: list[str] = []
    usable = [o for o in opts if o.eligible and o.fits]
    for o in opts:
        if o.eligible and not o.fits:
            reasons.append(f"{o.device} cannot hold the work: it needs "
                           f"{fmt_bytes(memory_needed)}, {fmt_bytes(o.memory_free)} free")
    if not usable:
        cpu = next((o for o in opts if o.device.type == "cpu"), None)
        reasons.append("no device has room for it; the CPU runs it (it may swap)")
        chosen = cpu.device if cpu is not None else Device("cpu")
        return Decision(chosen, opts, reasons, [chosen])
    best = usable[0]
    cpu = next((o for o in usable if o.device.type == "cpu"), None)
    chosen = best
    if cpu is not None and best is not cpu:
        gain = cpu.estimate.total_s / max(best.estimate.total_s, 1e-12)
        if gain < MARGIN:
            chosen = cpu
            reasons.append(f"{best.device} is estimated only {gain:.2f}x faster than the CPU "
                           f"(less than {MARGIN}x): the work stays on the CPU")
        else:
            reasons.append(f"{best.device} is estimated {gain:.1f}x faster than the CPU "
                           f"({fmt_time(best.estimate.total_s)} against "
                           f"{fmt_time(cpu.estimate.total_s)} a step)")
    elif cpu is not None:
        others = [o for o in usable if o is not cpu]
        if others:
            o = others[0]
            ratio = o.estimate.total_s / max(cpu.estimate.total_s, 1e-12)
            reasons.append(f"small work stays on the CPU: the next best, {o.device}, is "
                           f"estimated {ratio:.1f}x slower ({_dominant(o.estimate)})")
        else:
            reasons.append("the CPU is the only device 'auto' may choose")
    for o in opts:
        if not o.eligible:
            reasons.append(f"{o.device} is listed for comparison; 'auto' does not choose it "
                           "(its backend is not an accelerator)")
    if any(not o.measured_traits for o in opts):
        reasons.append("some devices' traits are defaults, not measurements "
                       "(run `ember devices --calibrate`)")
    order = [chosen.device] + [o.device for o in usable if o is not chosen]
    return Decision(chosen.device, opts, reasons, order)


def _dominant(e: costmodel.Estimate) -> str:
    parts = {"op launches": e.launch_s, "compute": e.compute_s, "memory traffic": e.memory_s,
             "host<->device transfers": e.transfer_s, "measured op times": e.measured_s,
             "the host's own work": e.host_s}
    name, seconds = max(parts.items(), key=lambda kv: kv[1])
    return f"mostly {name}: {fmt_time(seconds)} of {fmt_time(e.total_s)}"


# -- the recorded choice ----------------------------------------------------------------

_chosen: Device | None = None
_order: list[Device] = []


def chosen() -> Device | None:
    """The device `"auto"` resolves to now, or None before any choice."""
    return _chosen


def record(device: Device, order: list[Device] | None = None) -> None:
    """Make `device` the choice every later `"auto"` resolves to."""
    global _chosen, _order
    _chosen = Device(device)
    _order = list(order or [_chosen])


def forget() -> None:
    """Forget the recorded choice: the next `"auto"` chooses afresh."""
    global _chosen, _order
    _chosen, _order = None, []


def choose(works: list[costmodel.OpWork], memory_needed: int,
           input_bytes: int = 0) -> Decision:
    """Decide where `works` run among the devices `"auto"` may choose, and record it."""
    devices = candidate_devices()
    if len(devices) == 1:  # nothing to compare (the CPU alone): nothing to measure
        decision = Decision(devices[0], [], ["the only device 'auto' may choose"],
                            devices)
        record(decision.device, decision.order)
        return decision
    decision = decide(options(works, memory_needed, input_bytes, devices), memory_needed)
    record(decision.device, decision.order)
    return decision


def default_device(nbytes: int = 0) -> Device:
    """The device `"auto"` resolves to: the recorded choice; else a choice for a tensor of
    `nbytes` (one elementwise pass over it), recorded."""
    if _chosen is not None:
        return _chosen
    from ember.core import costmodel

    work = [costmodel.OpWork("add", f"{nbytes} bytes", nbytes / 4, 3.0 * nbytes)]
    try:
        return choose(work, nbytes).device
    except Exception as err:  # planning must never make "auto" fail: the CPU always works
        warnings.warn(f"ember: 'auto' could not plan ({type(err).__name__}: {err}); "
                      "using the CPU", stacklevel=3)
        record(Device("cpu"))
        return Device("cpu")


def is_out_of_memory(err: BaseException) -> bool:
    """Whether `err` is a device running out of memory: ember's `OutOfMemoryError` (what
    the CUDA backend raises), MemoryError, or a device library's own (CuPy's
    OutOfMemoryError, OpenCL's MEM_OBJECT_ALLOCATION_FAILURE ...)."""
    from ember.core.backend import OutOfMemoryError

    if isinstance(err, (MemoryError, OutOfMemoryError)):
        return True
    text = f"{type(err).__name__} {err}".lower()
    return any(s in text for s in ("out of memory", "outofmemory", "allocation_failure",
                                   "allocation failure", "out_of_resources"))


T = TypeVar("T")


def with_fallback(place: Callable[[Device], T], order: list[Device] | None = None) -> T:
    """`place(device)` on the chosen device; if it runs out of memory there, on the next
    device of the plan's order, with a warning naming both. The device that worked
    becomes the recorded choice."""
    order = list(order or _order or [chosen() or Device("cpu")])
    if Device("cpu") not in order:
        order.append(Device("cpu"))
    last: BaseException | None = None
    for i, device in enumerate(order):
        try:
            result = place(device)
        except Exception as err:
            if not is_out_of_memory(err) or i == len(order) - 1:
                raise
            nxt = order[i + 1]
            warnings.warn(f"ember: out of memory on {device} ({type(err).__name__}: {err}); "
                          f"'auto' falls back to {nxt}", ResourceWarning, stacklevel=3)
            last = err
            continue
        if last is not None or _chosen != device:
            record(device, order[i:])
        return result
    raise RuntimeError("unreachable")  # pragma: no cover


def describe_auto() -> str:
    """One line for `ember devices`: what `"auto"` resolves to now."""
    if _chosen is not None:
        return f"device='auto' resolves to {_chosen} (recorded by an earlier choice)"
    return ("device='auto' chooses per workload: small work stays on the CPU, large work "
            "goes to the fastest device that can hold it (`ember devices --explain SPEC "
            "--input-shape ...` shows a plan)")

