"""`ember.plan(model, example_inputs)`: where a model's step should run, and why."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ember.core import costmodel, plugins, scheduler
from ember.core.device import device as Device
from ember.core.scheduler import fmt_bytes, fmt_time
from ember.scheduling.workload import Workload, from_parameters, fused_set, record_step


@dataclass
class Plan:
    """The scheduler's answer for one model step.

    Attributes:
        device: the device chosen (what `"auto"` now resolves to).
        candidates: every device considered, fastest estimate first: each with its
            estimate (`.estimate`: compute, memory traffic, launches, transfers, the
            host's own work, total)
            and its free memory (`.memory_free`, bytes).
        memory_needed: bytes the step needs on its device (parameters, gradients,
            optimizer state, activations, inputs).
        reasons: the decision in words.
        workload: the ops recorded (`.works`), their FLOPs and bytes.
    """

    device: Device
    candidates: list[scheduler.Option]
    memory_needed: int
    reasons: list[str]
    workload: Workload
    order: list[Device]

    def estimate(self, device: Any) -> costmodel.Estimate:
        """The estimate for one device."""
        want = Device(device)
        for o in self.candidates:
            if o.device == want:
                return o.estimate
        raise KeyError(f"{want} was not a candidate of this plan (candidates: "
                       f"{', '.join(str(o.device) for o in self.candidates)})")

    def __str__(self) -> str:
        w = self.workload
        kind = "training step" if w.training else "forward pass"
        lines = [f"Plan: run on {self.device}",
                 f"  work: one {kind}: {len(w.works)} ops ({w.count('forward')} forward, "
                 f"{w.count('backward')} backward, {w.count('optimizer')} optimizer), "
                 f"{w.flops / 1e9:.3g} GFLOP, {fmt_bytes(w.bytes)} of memory traffic, "
                 f"{fmt_bytes(w.input_bytes)} of inputs a step",
                 f"  memory needed: {fmt_bytes(self.memory_needed)}", ""]
        head = ["device", "estimate", "compute", "memory", "launches", "transfers", "host",
                "measured", "free memory", ""]
        rows = []
        for o in self.candidates:
            e = o.estimate
            note = "chosen" if o.device == self.device else (
                "too small" if not o.fits else "not an accelerator" if not o.eligible else "")
            if not o.measured_traits:
                note = (note + ", default traits").lstrip(", ")
            if o.probed:
                note = (note + ", step recorded there").lstrip(", ")
            rows.append([str(o.device), fmt_time(e.total_s), fmt_time(e.compute_s),
                         fmt_time(e.memory_s), f"{fmt_time(e.launch_s)} ({e.ops})",
                         fmt_time(e.transfer_s), fmt_time(e.host_s),
                         f"{fmt_time(e.measured_s)} ({e.measured_ops})" if e.measured_ops
                         else "-", fmt_bytes(o.memory_free), note])
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
        for row in [head] + rows:
            lines.append("  " + "  ".join(c.ljust(n) for c, n in zip(row, widths)).rstrip())
        lines.append("")
        lines += [f"  - {r}" for r in self.reasons]
        return "\n".join(lines)

    __repr__ = __str__


def plan(model: Any, example_inputs: Any, training: bool = True,
         devices: list[Any] | None = None,
         history: costmodel.History | None = None, probe: bool = True) -> Plan:
    r"""Estimate one step of `model` on every device `"auto"` may choose, choose one, and
    record the choice (every later `"auto"` resolves to it).

    Args:
        model (Module or callable): the model; it runs a few times at `example_inputs`,
            on its own device, to record and time its ops (its weights, gradients and
            buffers are left as they were; random ops such as dropout do draw numbers).
        example_inputs (Tensor or tuple): one batch, as the model is called with it.
        training (bool): estimate a training step (forward, backward, optimizer update);
            False: a forward pass. Default: True.
        devices (list, optional): the devices to choose among. Default: every available
            device is estimated and listed, and the choice is among those `"auto"` may
            pick (the accelerators and the CPU).
        history (History, optional): measured op times that replace the formula's
            (default: the saved history, `ember.core.costmodel.History.load()`).
        probe (bool): where a step is estimated to be short (under `PROBE_BELOW_S`) on
            another device, and the model is a Module small enough to copy, run the
            step on a copy there too, and estimate each such device (the model's own
            included) as the step timed on it, instead of carrying the first device's
            op times over. Default: True.

    Returns:
        Plan: the choice, every candidate's estimate with its breakdown, the memory
        needed against the memory free, and the reasons. ``print(plan)`` shows it.
    """
    eligible, wanted = _candidates(devices)
    kernels = [plugins.get_backend(d.type).kernels for d in wanted]
    work = record_step(model, example_inputs, training, [fused_set(k) for k in kernels])

    def probed(device: Device) -> Workload | None:
        return _record_on(device, model, example_inputs, training)
    return _plan(work, devices, history, probed if probe else None)


def _candidates(devices: list[Any] | None) -> tuple[list[Device], list[Device]]:
    """(the devices that may be chosen, the devices estimated)."""
    if devices is None:  # every available device is listed; "auto" chooses among some
        return (scheduler.candidate_devices(),
                scheduler.candidate_devices(accelerators_only=False))
    chosen = [Device(d) for d in devices]  # the caller's list: all of them may be chosen
    return chosen, chosen


def _plan(work: Workload, devices: list[Any] | None,
          history: costmodel.History | None,
          probed: Callable[[Device], Workload | None] | None = None) -> Plan:
    eligible, wanted = _candidates(devices)
    if history is None:
        history = costmodel.History.load()
    host_s = host_overhead(work, history)
    source = _normal(work.source_device)

    def works_on(device: Device) -> list[costmodel.OpWork]:
        if _normal(device) == source:
            return work.works
        return work.works_for(plugins.get_backend(device.type).kernels)

    def seconds_on(device: Device) -> list[float | None] | None:
        if work.seconds is None or _normal(device) == source:
            return work.seconds
        from ember.core import calibration

        same = fused_set(plugins.get_backend(device.type).kernels) == work.own_fused
        return costmodel.carried_over(work.works, work.seconds,
                                      calibration.traits_of(source), works_on(device),
                                      calibration.traits_of(device), same_kernels=same)

    opts = scheduler.options(works_on, work.memory_bytes, work.input_bytes, wanted,
                             eligible, history, host_s, seconds_on)
    if probed is not None:
        opts = _refine_by_probes(opts, source, work, probed)
    decision = scheduler.decide(opts, work.memory_bytes)
    scheduler.record(decision.device, decision.order)
    return Plan(decision.device, opts, work.memory_bytes, decision.reasons, work,
                decision.order)


def _normal(device: Any) -> Device:
    d = Device(device)
    return d if d.type == "cpu" or d.index is not None else Device(d.type, 0)


PROBE_BELOW_S = 0.25
"""A device whose step is estimated under this many seconds is measured by `plan`
(a copy of the model runs the step there), when the copy needs under `PROBE_MEMORY`."""
PROBE_MEMORY = 256 << 20


def _refine_by_probes(opts: list[scheduler.Option], source: Device, work: Workload,
                      probed: Callable[[Device], Workload | None]) -> list[scheduler.Option]:
    """The options, each short step re-estimated as the step timed on its device: on the
    source device the recording's own plain pass, on the others a recording made there.
    Probed devices are then compared measurement against measurement. Carried-over
    times assume the devices differ only as their traits say; a device's own dispatch
    path, memory allocator or kernel wrappers (host work the traits' tiny op does not
    show) then go unseen, and calibrations taken at different moments of a shared
    machine's load differ by more than close devices do."""
    from ember.core import calibration

    if work.memory_bytes > PROBE_MEMORY or not any(
            _normal(o.device) != source for o in opts):
        return opts  # too large to copy, or nothing to compare the source with
    out = []
    for o in opts:
        if not o.fits or o.estimate.total_s > PROBE_BELOW_S:
            out.append(o)
            continue
        own = work if _normal(o.device) == source else probed(o.device)
        if own is None or own.measured_s is None:
            out.append(o)
            continue
        # the step as timed there without hooks (the per-op times of the recorded passes
        # each include a wait for the device, which a device of many small ops, OpenCL
        # running an LSTM step by step, pays op by op), plus bringing the inputs there
        moved = own.input_bytes if o.device.type != "cpu" else 0
        n = len(own.works)
        est = costmodel.Estimate(measured_s=own.measured_s, ops=n, measured_ops=n,
                                 transfer_s=calibration.traits_of(o.device).transfer_s(moved))
        out.append(dataclasses.replace(o, estimate=est, probed=True))
    return sorted(out, key=lambda o: o.estimate.total_s)


def _record_on(device: Device, model: Any, example_inputs: Any,
               training: bool) -> Workload | None:
    """`record_step` of a copy of `model` on `device`, or None where the model cannot be
    copied there (not a Module, state that does not move, an error on that device)."""
    import copy

    from ember.core.tensor import Tensor
    from ember.nn import Module

    if not isinstance(model, Module):
        return None
    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    try:
        twin = copy.deepcopy(model).to(device)
        moved = tuple(t.to(device) if isinstance(t, Tensor) else t for t in inputs)
        return record_step(twin, moved, training)
    except Exception:  # noqa: BLE001 - a probe that fails leaves the estimate as it was
        return None


def host_overhead(work: Workload, history: costmodel.History | None = None) -> float:
    """Seconds a step spends on the host between its ops: the step's measured time on its
    own device, less the time of its ops there (each op timed while the step was recorded;
    the optimizer's from the formula), never below 0. The host's Python work (modules, the
    autograd engine) does not depend on the device that runs the kernels, so every device
    pays it; the ops' own time, measured on one device, is that device's alone."""
    if work.measured_s is None:
        return 0.0
    from ember.core import calibration

    t = calibration.traits_of(work.source_device)
    ops = costmodel.estimate(work.works, t, 0, history, seconds=work.seconds)
    return max(0.0, work.measured_s - ops.total_s)


def place_module(module: Any, convert: Any) -> Any:
    """`module.to("auto")`: the recorded choice, else a plan from the module's parameters;
    moved with `convert(device)`, falling back to the next device on out-of-memory."""
    if scheduler.chosen() is None:
        _plan(from_parameters(module), None, None)
    return scheduler.with_fallback(convert)
