"""The recording behind `ember.profiler.profile`: what runs while a profile records, and
how the ranges it saw become FunctionEvents.

While recording, four sources open ranges on a per-thread stack, so nesting is known
when a range opens (no reconstruction from intervals afterwards):

- every declared op, through the op-entry hook of `ember.core.interpose` (order 0:
  outermost, so autocast's casts show inside the op they serve). Composite ops call
  other ops, so `ember::linear` holds `ember::matmul` as PyTorch's `aten::linear` holds
  `aten::addmm`;
- every node the autograd engine runs backward (`interpose.install_backward`), named as
  PyTorch names it (`MulBackward0`); the ops of its gradient formula nest inside;
- every module call, through the global module hooks of `ember.nn.modules.module`
  (`nn.Module: Model.layer1.0`, the module's path from the outermost module called);
- `record_function` ranges and the profile's `ProfilerStep#N`.

Device work is timed on the device, through the backend contract
(`Backend.start_device_timing` / `device_activities`): on entering and leaving every
range the recorder takes what each timed backend launched since, and gives it to the
innermost open range: the op that launched it. The kernels' device times are read when
the profile stops (the backend waits for them then), so recording never waits for a
device.

When no profile records, none of this is installed: an op pays the one global check of
`interpose.active`, a module call the one of `Module.__call__`, a backward node one more.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from ember.core import interpose
from ember.core.declare import INPLACE
from ember.core.tensor import Tensor
from ember.profiler.activity import device_type_of
from ember.profiler.events import EventList, FunctionEvent
from ember.profiler.memory import MemoryRecord, MemoryTracker

CPU_OP, USER_ANNOTATION, PYTHON_FUNCTION, KERNEL = \
    "cpu_op", "user_annotation", "python_function", "kernel"
STEP_PREFIX = "ProfilerStep#"
MODULE_PREFIX = "nn.Module: "
OP_PREFIX = "ember::"

_now = time.perf_counter_ns

current: Recorder | None = None
"""The recorder recording now (one at a time), or None: what `record_function` reads."""


class Range:
    """One open or closed range while recording (times in perf_counter ns). Fields every
    range sets are slots; the others are class defaults, set per instance only when
    recorded (one range per op: its creation is the profiler's hottest path)."""

    __slots__ = ("name", "cat", "tid", "parent", "start", "end", "device", "__dict__")

    shapes: list | None = None
    dtypes: list | None = None
    stack: list | None = None
    flops = 0
    cpu_mem = 0
    dev_mem = 0
    module: str | None = None  # with_modules: the module path around an op
    scope = 0  # 1: a backward node
    obj: Any = None  # a module range's module (while recording)
    path: str | None = None  # a module range's path

    def __init__(self, name: str, cat: str, tid: int, parent: Range | None) -> None:
        self.name = name
        self.cat = cat
        self.tid = tid
        self.parent = parent
        self.start = self.end = 0
        self.device: Any = None  # the device an op ran on (an ember.device)


class Result:
    """What one profile recorded, ready to read: the events, memory records, the device
    names, and the clock's origin."""

    def __init__(self, events: EventList, memory: list[MemoryRecord], base_ns: int,
                 devices: dict[str, str]) -> None:
        self.events = events
        self.memory = memory
        self.base_ns = base_ns  # Unix time (ns) of time 0 of the events
        self.devices = devices  # "opencl:0" -> the device's name


class Recorder:
    """Records ranges, kernels and memory between `start()` and `stop()`; `start()`
    again continues (a profile with `acc_events=True`). `result()` builds the events."""

    def __init__(self, *, cpu: bool = True, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 backends: list | None = None) -> None:
        self.cpu = cpu
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.profile_memory = profile_memory
        self.backends = list(backends or [])  # those whose devices to time
        self.ranges: list[Range] = []
        self.activities: list[tuple[Any, str, Range | None]] = []
        self.timed: list[Any] = []
        self.recording = False
        self.t0: int | None = None
        self.base_ns = 0
        self._local = threading.local()
        self._stacks: list[list[Range]] = []
        self._handles: list[Any] = []
        # the backends an op ran on since the last drain: a device's stretch of queued work
        # (an activity with no kernel name) is kept only where one did, so host-only code
        # records no empty device events
        self._used: set[str] = set()
        # the hooks, bound once: interpose.remove finds a hook by identity
        self._op_hook, self._node_hook = self._on_op, self._on_node
        self._device_hook = self._on_device_op
        self.memory = MemoryTracker(self.top, self._tid) if profile_memory else None

    # -- starting and stopping ---------------------------------------------------------
    def start(self) -> None:
        global current
        if current is not None and current is not self:
            raise RuntimeError("ember.profiler: another profile is already recording; "
                               "profiles cannot nest or overlap")
        if self.recording:
            return
        current = self
        self.recording = True
        if self.memory is not None:
            self.memory.active = True
        for backend in self.backends:
            try:
                if backend.start_device_timing():
                    self.timed.append(backend)
            except Exception as err:  # a backend's timing must not break the program
                warnings.warn(f"ember.profiler: cannot time {backend.name} devices: "
                              f"{type(err).__name__}: {err}", stacklevel=3)
        if self.cpu:
            from ember.nn.modules import module as nn_module

            interpose.install(self._op_hook, 0)
            interpose.install_backward(self._node_hook)
            self._handles = [
                nn_module.register_module_forward_pre_hook(self._module_enter),
                nn_module.register_module_forward_hook(self._module_exit, always_call=True)]
        elif self.timed:  # no op events, but the devices' stretches need their ops' devices
            interpose.install(self._device_hook, 0)
        if self.t0 is None:  # time 0 of the events: now that everything is ready
            self.t0 = _now()
            self.base_ns = time.time_ns() - (_now() - self.t0)

    def stop(self) -> None:
        """Stop recording: hooks removed, ranges still open closed now, device timing
        stopped (after the last launches are taken)."""
        global current
        if not self.recording:
            return
        if self.cpu:
            interpose.remove(self._op_hook)
            interpose.remove_backward(self._node_hook)
            for handle in self._handles:
                handle.remove()
            self._handles = []
        elif self.timed:
            interpose.remove(self._device_hook)
        end = _now()
        self._drain(self.top())
        for frames in self._stacks:  # ranges left open (an exception, a missing exit)
            while frames:
                r = frames.pop()
                r.end = end
                self.ranges.append(r)
        for backend in self.timed:
            try:
                backend.stop_device_timing()
            except Exception as err:
                warnings.warn(f"ember.profiler: stopping {backend.name} timing failed: "
                              f"{type(err).__name__}: {err}", stacklevel=3)
        self.timed = []
        if self.memory is not None:
            self.memory.stop()
        self.recording = False
        current = None

    # -- the thread's stack of open ranges ---------------------------------------------
    def _frames(self) -> list[Range]:
        local = self._local
        try:
            return local.frames
        except AttributeError:
            frames = local.frames = []
            local.tid = threading.get_native_id()
            self._stacks.append(frames)
            return frames

    def _tid(self) -> int:
        self._frames()
        return self._local.tid

    def top(self) -> Range | None:
        """The innermost open range of the calling thread."""
        frames = self._frames()
        return frames[-1] if frames else None

    def _drain(self, owner: Range | None) -> None:
        """Give the device work launched since the last call to `owner`."""
        used = self._used
        for backend in self.timed:
            acts = backend.device_activities()
            if acts:
                name = backend.name
                self.activities.extend((a, name, owner) for a in acts
                                       if a.name is not None or name in used)
        used.clear()

    def _push(self, frames: list[Range], r: Range) -> None:
        if self.timed:
            self._drain(r.parent)
        frames.append(r)
        r.start = _now()

    def _pop(self, frames: list[Range], r: Range) -> None:
        if r.end:  # closed already (by an outer range that closed first)
            return
        r.end = end = _now()
        if self.timed:
            self._drain(r)
        if frames and frames[-1] is r:
            frames.pop()
        elif any(f is r for f in frames):  # ranges opened inside and never closed
            while frames:
                f = frames.pop()
                if f is r:
                    break
                f.end = end
                self.ranges.append(f)
        self.ranges.append(r)

    # -- user ranges (record_function) -------------------------------------------------
    def enter_range(self, name: str) -> Range:
        frames = self._frames()
        r = Range(name, USER_ANNOTATION, self._local.tid, frames[-1] if frames else None)
        self._push(frames, r)
        return r

    def exit_range(self, r: Range) -> None:
        self._pop(self._frames(), r)

    # -- ops (the op-entry hook) -------------------------------------------------------
    def _on_op(self, op: Any, name: str, call: Callable[[tuple, dict], Any], args: tuple,
               kwargs: dict) -> Any:
        frames = self._frames()
        parent = frames[-1] if frames else None
        r = Range(_event_name(op, name), CPU_OP, self._local.tid, parent)
        if self.record_shapes:
            r.shapes, r.dtypes = _describe(args, kwargs)
        if self.with_flops:
            r.flops = _flops(op, args, kwargs)
        if self.with_stack:
            r.stack = _python_stack()
        if self.with_modules:
            r.module = _module_of(frames)
        if self.timed:
            self._drain(parent)
        frames.append(r)
        r.start = _now()
        out = None
        try:
            out = call(args, kwargs)
        finally:
            r.device = _device_of(args, out)
            if r.device is not None:
                self._used.add(r.device.type)
            self._pop(frames, r)
        if self.memory is not None:
            self.memory.outputs(r, out, args, kwargs)
        return out

    def _on_device_op(self, op: Any, name: str, call: Callable[[tuple, dict], Any],
                      args: tuple, kwargs: dict) -> Any:
        """The op hook of a profile without the CPU activity: notes the op's device."""
        out = None
        try:
            out = call(args, kwargs)
            return out
        finally:
            device = _device_of(args, out)
            if device is not None:
                self._used.add(device.type)

    # -- backward nodes ----------------------------------------------------------------
    def _on_node(self, node: Any, run: Callable[[], Any]) -> Any:
        frames = self._frames()
        r = Range(node.name(), CPU_OP, self._local.tid, frames[-1] if frames else None)
        r.scope = 1  # PyTorch's BACKWARD_FUNCTION scope
        self._push(frames, r)
        try:
            return run()
        finally:
            self._pop(frames, r)

    # -- module calls (global module hooks) --------------------------------------------
    def _module_enter(self, module: Any, args: tuple) -> None:
        frames = self._frames()
        outer = next((f for f in reversed(frames) if f.obj is not None), None)
        path = _module_path(outer, module)
        r = Range(MODULE_PREFIX + path, PYTHON_FUNCTION, self._local.tid,
                  frames[-1] if frames else None)
        r.obj, r.path = module, path
        self._push(frames, r)

    def _module_exit(self, module: Any, args: tuple, output: Any) -> None:
        frames = self._frames()
        for f in reversed(frames):
            if f.obj is module:
                self._pop(frames, f)
                break

    # -- results -------------------------------------------------------------------------
    def result(self, *, use_device: str | None = None) -> Result:
        """The events recorded so far (the recording must be stopped)."""
        t0 = self.t0 or 0
        ranges = sorted(self.ranges, key=lambda r: (r.start, -r.end))
        events: list[FunctionEvent] = []
        by_range: dict[int, FunctionEvent] = {}
        for r in ranges:
            name = r.name
            trace_name = name
            if name.startswith(STEP_PREFIX):
                name = "ProfilerStep*"  # steps average together (PyTorch's wildcard)
            e = FunctionEvent(
                len(events), name, r.tid, (r.start - t0) / 1e3, (r.end - t0) / 1e3,
                trace_name=trace_name, input_shapes=r.shapes, input_dtypes=r.dtypes,
                stack=r.stack, scope=r.scope, flops=r.flops,
                is_user_annotation=r.cat == USER_ANNOTATION,
                is_python_function=r.cat == PYTHON_FUNCTION,
                device=None if r.device is None else str(r.device),
                module_hierarchy=r.module, category=r.cat)
            e._ns = (r.start - t0, r.end - t0)
            e.cpu_memory_usage, e.device_memory_usage = r.cpu_mem, r.dev_mem
            events.append(e)
            by_range[id(r)] = e
            r.obj = None  # the module: not kept alive by the results
        for r in ranges:
            if r.parent is not None:
                parent = by_range.get(id(r.parent))
                if parent is not None:
                    e = by_range[id(r)]
                    e.set_cpu_parent(parent)
                    parent.append_cpu_child(e)
        for e in reversed(events):  # children start after their parent: totals bottom-up
            if e.cpu_children:
                e.cpu_memory_usage += sum(c.cpu_memory_usage for c in e.cpu_children)
                e.device_memory_usage += sum(c.device_memory_usage for c in e.cpu_children)

        kernels, devices = self._kernel_events(events, by_range, t0)
        if use_device is None and kernels:
            use_device = kernels[0].device.split(":")[0]
        out = EventList(sorted(events + kernels, key=lambda e: e.time_range.start),
                        use_device=use_device, profile_memory=self.profile_memory,
                        with_flops=self.with_flops)
        for e in out:
            e.use_device = use_device
        out._build_tree()
        kept = {id(e) for e in out}
        for k in kernels:  # a kernel of a dropped duplicate belongs to its parent
            while k.linked is not None and id(k.linked) not in kept:
                k.linked = k.linked.cpu_parent
        memory = self.memory.records if self.memory is not None else []
        for m in memory:
            m.ns -= t0
        if self.memory is not None:
            self.memory.records = []
        self.ranges = []  # turned into events: a later cycle (acc_events) starts afresh
        self.activities = []
        return Result(out, memory, self.base_ns, devices)

    def _kernel_events(self, events: list[FunctionEvent], by_range: dict, t0: int
                       ) -> tuple[list[FunctionEvent], dict[str, str]]:
        kernels: list[FunctionEvent] = []
        devices: dict[str, str] = {}
        for act, backend_name, owner in self.activities:
            try:
                start, end = act.times()
            except Exception as err:  # a device error: that kernel's time is unknown
                warnings.warn(f"ember.profiler: a {backend_name} kernel's time could not be "
                              f"read: {type(err).__name__}: {err}", stacklevel=3)
                continue
            launcher = by_range.get(id(owner)) if owner is not None else None
            name = act.name or (launcher.name if launcher is not None else backend_name)
            label = f"{backend_name}:{act.device}"
            devices.setdefault(label, _device_name(backend_name, act.device))
            k = FunctionEvent(len(events) + len(kernels), name, 0, (start - t0) / 1e3,
                              (end - t0) / 1e3, device_type=device_type_of(backend_name),
                              device_index=act.device, device=label, category=KERNEL)
            k._ns = (start - t0, end - t0)
            if launcher is not None:
                launcher.append_kernel(name, act.device, k.time_range.elapsed_us())
                k.linked = launcher
            kernels.append(k)
        return kernels, devices



# -- what an op's range records ----------------------------------------------------------

_names: dict[tuple[str, str], str] = {}


def _event_name(op: Any, name: str) -> str:
    """`ember::add`, `ember::add_` (in-place) for `add`, `add_`, `__add__`, `__iadd__`."""
    key = (op.name, name)
    event = _names.get(key)
    if event is None:
        if name.startswith("__"):
            name = op.name + "_" if name in INPLACE else op.name
        event = _names[key] = OP_PREFIX + name
    return event


def _describe(args: tuple, kwargs: dict) -> tuple[list, list]:
    """Each input's shape and dtype name (PyTorch's "Input Dims" and "Input type")."""
    shapes, dtypes = [], []
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            shapes.append(list(a._data.shape))
            dtypes.append(a._dtype.name)
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
            shapes.append([list(x._data.shape) for x in a])
            dtypes.append("TensorList")
        else:
            shapes.append([])
            dtypes.append("Scalar" if isinstance(a, (bool, int, float, complex)) else "")
    return shapes, dtypes


def _flops(op: Any, args: tuple, kwargs: dict) -> int:
    """The op's FLOPs from its declared cost (0 without one, or for arguments the cost
    function does not take)."""
    cost = op.cost
    if cost is None:
        return 0
    try:
        return int(cost(*args, **kwargs).flops)
    except Exception:  # a method's own signature (`x.view(2, 3)`), odd arguments
        return 0


def _device_of(args: tuple, out: Any) -> Any:
    for a in (*args, out):
        if isinstance(a, Tensor):
            return a._device
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            return a[0]._device
    return None


_SKIPPED = tuple(os.path.join(os.path.dirname(os.path.dirname(__file__)), d) + os.sep
                 for d in ("core", "profiler"))


def _python_stack(limit: int = 64) -> list[str]:
    """`file(line): function` of the callers, innermost first, without ember's core and
    profiler frames (PyTorch's `with_stack` entries)."""
    out = []
    f = sys._getframe(2)
    while f is not None and len(out) < limit:
        code = f.f_code
        if not code.co_filename.startswith(_SKIPPED):
            out.append(f"{code.co_filename}({f.f_lineno}): {code.co_name}")
        f = f.f_back
    return out


def _module_of(frames: list[Range]) -> str | None:
    for f in reversed(frames):
        if f.path is not None:
            return f.path
    return None


def _module_path(outer: Range | None, module: Any) -> str:
    """`Model` for the outermost module, `Model.layer1.0` for what it holds: the path of
    the module's attribute in the module whose call is around it (its class name when it
    is not one of that module's children)."""
    if outer is None:
        return type(module).__name__
    for name, child in outer.obj._modules.items():
        if child is module:
            return f"{outer.path}.{name}"
    return f"{outer.path}.{type(module).__name__}"


def _device_name(backend_name: str, index: int) -> str:
    from ember.core import plugins

    try:
        return plugins.get_backend(backend_name).device_info(index).name
    except Exception:
        return f"{backend_name}:{index}"
