"""`profile`: the profiler as a context manager, with PyTorch's schedule and steps
(`torch.profiler.profile`)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ember.core.errors import warn_once
from ember.profiler import recorder, trace
from ember.profiler.activity import DEVICE_ACTIVITIES, ProfilerActivity, activity_of
from ember.profiler.events import EventList
from ember.profiler.record_function import record_function
from ember.profiler.schedule import ProfilerAction, default_schedule

PROFILER_STEP_NAME = "ProfilerStep"

_NOT_STARTED = "Profiler must be initialized before {}"
def _warn_once(message: str) -> None:
    warn_once(message, UserWarning, stacklevel=4)


class profile:  # noqa: N801 - PyTorch's name
    """Record the ops, module calls, backward nodes, `record_function` ranges and device
    kernels a block of code runs, with their times, shapes, FLOPs and memory.

    Args:
        activities (iterable of ProfilerActivity, optional): what to record: ``CPU`` (the
            ops and ranges on the host) and device kinds (``CUDA``, ``OPENCL``,
            ``PrivateUse1`` for a plugin's devices), whose kernels are timed on the
            device. Default: all of them; a device kind not in use records nothing.
        schedule (Callable[[int], ProfilerAction], optional): what to do at each step
            (see :func:`schedule`); by default, record from start to stop.
        on_trace_ready (Callable[[profile], None], optional): called at the end of each
            cycle of the schedule (and at stop when recording), e.g.
            :func:`tensorboard_trace_handler`.
        record_shapes (bool): record each op's input shapes and dtypes.
        profile_memory (bool): record the memory ops allocate and free.
        with_stack (bool): record each op's Python call stack.
        with_flops (bool): record each op's FLOPs, from its declared cost.
        with_modules (bool): record the module path around each op.
        acc_events (bool): keep the events of every cycle, not just the last.
        experimental_config, execution_trace_observer: PyTorch's; accepted and ignored.
        use_cuda (bool, deprecated): add or remove ``ProfilerActivity.CUDA``.

    Ops are named ``ember::<op>`` (``ember::add_`` for the in-place variant), module
    calls ``nn.Module: <path>``, backward nodes by PyTorch's names (``MulBackward0``).

    Example::

        with ember.profiler.profile(record_shapes=True, with_flops=True) as prof:
            loss = model(x).sum()
            loss.backward()
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
        prof.export_chrome_trace("trace.json")

    With a schedule, call ``prof.step()`` at the end of every step::

        with ember.profiler.profile(
                schedule=ember.profiler.schedule(wait=1, warmup=1, active=2),
                on_trace_ready=ember.profiler.tensorboard_trace_handler("./log")) as prof:
            for batch in loader:
                train_step(batch)
                prof.step()
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], Any] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: bool | None = None) -> None:
        if activities is not None:
            self.activities = set()
            for a in activities:
                if not isinstance(a, ProfilerActivity):
                    raise TypeError(f"Expected ProfilerActivity, got {type(a)}")
                if a in self.activities:
                    raise ValueError(f"Activity {a} specified more than once")
                self.activities.add(a)
            self._explicit = set(self.activities)
        else:
            self.activities = {ProfilerActivity.CPU} | set(DEVICE_ACTIVITIES)
            self._explicit = set()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                self.activities.add(ProfilerActivity.CUDA)
                self._explicit.add(ProfilerActivity.CUDA)
            else:
                self.activities.discard(ProfilerActivity.CUDA)
        if not self.activities:
            raise ValueError("No valid profiler activities found")
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.schedule = schedule or default_schedule
        self.record_steps = schedule is not None  # ProfilerStep#N ranges
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn: record_function | None = None
        self.profiler: recorder.Recorder | None = None  # this cycle's recording
        self.use_device: str | None = None
        self._result: recorder.Result | None = None
        self._running = False
        self._trace_metadata: dict[str, Any] = {}
        self.preset_metadata: dict[str, Any] = {}
        A = ProfilerAction
        self.action_map: dict[tuple[ProfilerAction, ProfilerAction | None], list] = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [lambda: warnings.warn(
                "Incorrect schedule: WARMUP followed by NONE", stacklevel=4),
                self.start_trace, self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [lambda: warnings.warn(
                "Incorrect schedule: RECORD followed by NONE", stacklevel=4), self.stop_trace],
            (A.RECORD, A.WARMUP): [lambda: warnings.warn(
                "Incorrect schedule: RECORD followed by WARMUP", stacklevel=4),
                self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace, self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready,
                                                     self.prepare_trace, self.start_trace],
            # at stop()
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    # -- the context manager and steps ---------------------------------------------------
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        """Start the schedule at the current step (recording if it says so)."""
        if self._running:
            return
        self._transit(ProfilerAction.NONE, self.current_action)  # may raise: not running
        self._running = True
        if self.record_steps:
            self.step_rec_fn = record_function(f"{PROFILER_STEP_NAME}#{self.step_num}")
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        """Stop: a cycle being recorded ends (and `on_trace_ready` runs). Stopping a
        stopped profile does nothing."""
        if not self._running:
            return
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._running = False
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Signal that the next step starts: the schedule says what this one does.
        On a stopped profile only the step number advances."""
        action = self.schedule(self.step_num + 1)  # may raise: then nothing has changed
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = action
        if not self._running:
            return
        self._transit(prev, action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"{PROFILER_STEP_NAME}#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _transit(self, prev: ProfilerAction, current: ProfilerAction | None) -> None:
        for action in self.action_map.get((prev, current), []):
            action()

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    # -- one cycle -------------------------------------------------------------------------
    def prepare_trace(self) -> None:
        """Get a new recording ready (it records from `start_trace`)."""
        if self.profiler is not None and self.acc_events:
            return
        self.profiler = recorder.Recorder(
            cpu=ProfilerActivity.CPU in self.activities, record_shapes=self.record_shapes,
            profile_memory=self.profile_memory, with_stack=self.with_stack,
            with_flops=self.with_flops, with_modules=self.with_modules,
            backends=self._device_backends())

    def start_trace(self) -> None:
        """Start recording."""
        if self.profiler is None:
            self.prepare_trace()
        self.profiler.start()
        timed = {activity_of(b.name) for b in self.profiler.timed}
        for activity in sorted((self._explicit & DEVICE_ACTIVITIES) - timed, key=str):
            if activity is not ProfilerActivity.OPENCL:  # (OpenCL times lazily: see Recorder)
                _warn_once(f"{activity.name} is not available, disabling {activity.name} "
                           "profiling")
        for key, value in (("profile_memory", self.profile_memory),
                           ("with_stack", self.with_stack),
                           ("record_shapes", self.record_shapes),
                           ("with_modules", self.with_modules),
                           ("with_flops", self.with_flops)):
            if value:
                self._trace_metadata[key] = 1
        self._trace_metadata.update(self.preset_metadata)

    def stop_trace(self) -> None:
        """Stop recording, and make its events the profile's results."""
        if self.profiler is None:
            raise RuntimeError(_NOT_STARTED.format("stopping trace"))
        rec = self.profiler
        if not rec.recording:
            return
        rec.stop()
        result = rec.result(use_device=self._use_device_hint())
        if self.acc_events and self._result is not None:
            events = EventList(list(self._result.events) + list(result.events),
                               use_device=result.events._use_device or
                               self._result.events._use_device,
                               profile_memory=self.profile_memory, with_flops=self.with_flops)
            events._tree_built = True
            result = recorder.Result(events, self._result.memory + result.memory,
                                     self._result.base_ns,
                                     {**self._result.devices, **result.devices})
        self._result = result
        self.use_device = result.events._use_device

    def _device_backends(self) -> list:
        """The loaded backends whose devices an activity asks to time."""
        wanted = self.activities & DEVICE_ACTIVITIES
        if not wanted:
            return []
        from ember.core import plugins

        plugins.registry.ensure_loaded()
        found = [b for b in plugins.registry.backends.values()
                 if b.name != "cpu" and activity_of(b.name) in wanted]
        return found

    def _use_device_hint(self) -> str | None:
        return "cuda" if ProfilerActivity.CUDA in self._explicit else None

    # -- results ---------------------------------------------------------------------------
    def _results(self, what: str) -> recorder.Result:
        if self._result is None:
            if self.profiler is None:
                raise RuntimeError(_NOT_STARTED.format(what))
            raise RuntimeError(f"ember.profiler: no results yet ({what}): a profile's "
                               "results are ready once it stops, or at the end of a cycle "
                               "of its schedule")
        return self._result

    def events(self) -> EventList:
        """Every recorded event (FunctionEvents: ops, ranges, module calls, backward
        nodes, device kernels), in order of start."""
        return self._results("accessing events").events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events averaged per name (and per input shapes with
        `group_by_input_shape`, per the first `group_by_stack_n` stack entries): an
        EventList of FunctionEventAvg, whose `table()` prints PyTorch's summary."""
        return self._results("getting key averages").events.key_averages(
            group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path: str) -> None:
        """Write the last cycle's events as a Chrome trace (`.gz`: compressed)."""
        result = self._results("exporting chrome trace")
        metadata = {**self._trace_metadata}
        trace.write(path, trace.build(result.events, memory=result.memory,
                                      base_ns=result.base_ns, devices=result.devices,
                                      metadata=metadata))

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write the stacks of the events (`with_stack=True`) with their `metric`, the
        input of flame graph tools."""
        self._results("exporting stacks").events.export_stacks(path, metric)

    def add_metadata(self, key: str, value: str) -> None:
        """Add a string to the trace's top-level metadata."""
        self._trace_metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        """Add a JSON value (given as text) to the trace's top-level metadata."""
        self._trace_metadata[key] = json.loads(value)

    def preset_metadata_json(self, key: str, value: str) -> None:
        """Metadata added when recording starts."""
        self.preset_metadata[key] = json.loads(value)
