"""The profiler's results: `FunctionEvent` (one recorded range or kernel),
`FunctionEventAvg` (events averaged over a key) and `EventList`, with the names,
attributes and semantics of `torch.autograd.profiler_util`.

Times are microseconds (floats) from the start of the profile. A host event's self time
is its time minus its direct children's; its device time is the time of the kernels it
launched itself plus its children's device time. Memory works the same way: an event's
`cpu_memory_usage` counts the bytes allocated (and, negatively, freed) while it ran,
children included, and `self_cpu_memory_usage` what it did itself.
"""

from __future__ import annotations

from collections import defaultdict, namedtuple
from typing import Any

from ember.profiler import table as _table
from ember.profiler.activity import DeviceType


class Interval:
    """A time range in microseconds."""

    __slots__ = ("start", "end")

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """The length of the interval."""
        return self.end - self.start


Kernel = namedtuple("Kernel", ["name", "device", "duration"])
"""A device kernel an event launched: its name, device index and duration (us)."""


def _time_str(name: str) -> property:
    return property(lambda self: _table.format_time(getattr(self, name)))


class FormattedTimesMixin:
    """`cpu_time` and `device_time` (averages per call) and the `*_str` forms of the
    times, for FunctionEvent and FunctionEventAvg."""

    cpu_time_str = _time_str("cpu_time")
    device_time_str = _time_str("device_time")
    cpu_time_total_str = _time_str("cpu_time_total")
    device_time_total_str = _time_str("device_time_total")
    self_cpu_time_total_str = _time_str("self_cpu_time_total")
    self_device_time_total_str = _time_str("self_device_time_total")

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self) -> float:
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count

    cuda_time = device_time  # PyTorch's older name


class FunctionEvent(FormattedTimesMixin):
    """One recorded event: an op, a `record_function` range, a module call, a backward
    node, or a kernel on a device.

    Attributes:
        id (int): unique within the profile.
        name (str): `ember::<op>` for ops, the range's name, `nn.Module: <path>` for
            module calls, the node's name (`MulBackward0`) for backward nodes, the
            kernel's name for device events.
        trace_name (str): the name in the Chrome trace (`ProfilerStep#3` where `name` is
            `ProfilerStep*`, so that steps average together).
        time_range (Interval): start and end, us from the start of the profile.
        thread (int): the OS thread id (device events: the queue, 0).
        kernels (list[Kernel]): device kernels the event launched itself.
        cpu_children, cpu_parent: the events directly inside it, and the one around it.
        input_shapes (list): each input's shape (`[]` for a non-tensor; a list of shapes
            for a list of tensors), with `record_shapes`.
        input_dtypes (list[str]): each input's dtype name (`""` for a non-tensor).
        stack (list[str]): `file(line): function` of the Python caller, innermost
            first, with `with_stack`.
        scope (int): 0 for forward, 1 for a backward node (PyTorch's RecordScope).
        device (str | None): the device an op ran on (`"cpu"`, `"opencl:0"`).
        module_hierarchy (str | None): the module path around an op, with `with_modules`.
        cpu_memory_usage, device_memory_usage (int): bytes allocated (minus freed)
            during the event, children included, with `profile_memory`.
        flops (int): the op's FLOPs from its declared cost, with `with_flops`.
        device_type (DeviceType): CPU for host events, the device's for kernels.
        device_index (int): the device's index (kernels).
        is_user_annotation (bool): a `record_function` range.
        is_python_function (bool): a module call.
    """

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float, *,
                 trace_name: str | None = None, input_shapes: list | None = None,
                 input_dtypes: list | None = None, stack: list | None = None,
                 scope: int = 0, use_device: str | None = None, cpu_memory_usage: int = 0,
                 device_memory_usage: int = 0, sequence_nr: int = -1,
                 device_type: DeviceType = DeviceType.CPU, device_index: int = 0,
                 flops: int | None = None, is_user_annotation: bool = False,
                 is_python_function: bool = False, device: str | None = None,
                 module_hierarchy: str | None = None, category: str = "cpu_op") -> None:
        self.id = id
        self.node_id = -1
        self.name = name
        self.overload_name = ""
        self.trace_name = trace_name if trace_name is not None else name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread: int | None = None
        self.kernels: list[Kernel] = []
        self.count = 1
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.input_shapes = input_shapes
        self.input_dtypes = input_dtypes
        self.concrete_inputs = None
        self.kwinputs = None
        self.stack = stack
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.is_async = False
        self.is_remote = False
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.device_index = device_index
        self.device_resource_id = thread
        self.is_legacy = False
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.is_python_function = is_python_function
        self.device = device
        self.module_hierarchy = module_hierarchy
        self.category = category  # the Chrome trace's "cat"
        self.linked: FunctionEvent | None = None  # a kernel's launching event
        self.self_cpu_percent: Any = -1
        self.total_cpu_percent: Any = -1
        self.total_device_percent: Any = -1

    def append_kernel(self, name: str, device: int, duration: float) -> None:
        self.kernels.append(Kernel(name, device, duration))

    def append_cpu_child(self, child: FunctionEvent) -> None:
        """Add a direct child (only direct ones: self times subtract the children)."""
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent: FunctionEvent) -> None:
        self.cpu_parent = parent

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us() if self.device_type is DeviceType.CPU else 0

    @property
    def self_cpu_time_total(self) -> float:
        if self.device_type is not DeviceType.CPU:
            return 0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self) -> float:
        if self.device_type is DeviceType.CPU:
            return sum(k.duration for k in self.kernels) + \
                sum(c.device_time_total for c in self.cpu_children)
        return self.time_range.elapsed_us()

    @property
    def self_device_time_total(self) -> float:
        if self.device_type is DeviceType.CPU:
            return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)
        return self.device_time_total

    cuda_time_total = device_time_total  # PyTorch's older names
    self_cuda_time_total = self_device_time_total

    @property
    def self_cpu_memory_usage(self) -> int:
        if self.device_type is not DeviceType.CPU:
            return 0
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self) -> int:
        if self.device_type is not DeviceType.CPU:
            return 0
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start:.3f} "
                f"end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"{self.use_device}_time={self.device_time_str} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"{self.use_device}_memory_usage={self.device_memory_usage} "
                f"flops={self.flops}>")


class FunctionEventAvg(FormattedTimesMixin):
    """The events of one key (name, and input shapes or stack when grouped by them),
    summed: `count` calls, total and self times, memory and FLOPs."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device: str | None = None
        self.cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes: Any = None
        self.overload_name: str | None = None
        self.stack: list | None = None
        self.scope: int | None = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children: list | None = None
        self.cpu_parent: FunctionEvent | None = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.is_user_annotation = False
        self.flops = 0

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        if self.key is None:  # the first event: its descriptive fields
            self.key = other.key
            self.node_id = other.node_id
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if other.key != self.key:
            raise ValueError(f"FunctionEventAvg.add: key {other.key!r} is not {self.key!r}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        self.flops += other.flops or 0
        return self

    def __iadd__(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        return self.add(other)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} count={self.count} "
                f"self_{self.use_device}_time={self.self_device_time_total_str} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"flops={self.flops}>")


class EventList(list):
    """A list of FunctionEvents (or FunctionEventAvgs) with PyTorch's helpers: `table`,
    `key_averages`, `total_average`, `export_chrome_trace`, `export_stacks`."""

    def __init__(self, *args: Any, use_device: str | None = None, profile_memory: bool = False,
                 with_flops: bool = False) -> None:
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._tree_built = False

    def __str__(self) -> str:
        return self.table()

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The events as PyTorch's summary table.

        Args:
            sort_by (str, optional): the attribute to sort rows by, largest first:
                ``cpu_time``, ``cuda_time`` (or ``device_time``, ``opencl_time``),
                ``cpu_time_total``, ``self_cpu_time_total``, ``device_time_total``,
                ``cpu_memory_usage``, ``self_cpu_memory_usage``, ``count``, ``flops`` ...
                By default rows keep their order.
            row_limit (int): at most this many rows (-1: all).
            top_level_events_only (bool): only the events with no parent.
            time_unit (str, optional): ``s``, ``ms`` or ``us`` for every time.
        """
        return _table.build_table(
            self, sort_by=sort_by, row_limit=row_limit,
            max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            profile_memory=self._profile_memory, with_flops=self._with_flops,
            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (chrome://tracing, Perfetto)."""
        from ember.profiler import trace

        trace.write(path, trace.build(self))

    def supported_export_stacks_metrics(self) -> list[str]:
        return ["self_cpu_time_total", "self_cuda_time_total", "self_device_time_total",
                "self_opencl_time_total", "self_privateuse1_time_total"]

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write `root;...;caller value` lines (a flame graph's input) for events with a
        stack (`with_stack=True`), `value` being `metric` in us."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        attr = _table._sort_attr(metric)
        translate = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for e in self:
                if e.stack:
                    value = int(getattr(e, attr))
                    if value > 0:
                        frames = ";".join(entry.translate(translate)
                                          for entry in reversed(e.stack))
                        f.write(f"{frames} {value}\n")

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events averaged per key: their name (and input shapes, and the first
        `group_by_stack_n` stack entries, when asked). Returns FunctionEventAvgs."""
        stats: dict[tuple, FunctionEventAvg] = defaultdict(FunctionEventAvg)
        for e in self:
            key = [e.key, str(e.node_id), str(e.device_type), str(e.is_user_annotation)]
            if group_by_input_shapes:
                key.append(str(e.input_shapes))
            if group_by_stack_n > 0:
                key += (e.stack or [])[:group_by_stack_n]
            stats[tuple(key)].add(e)
        out = EventList(stats.values(), use_device=self._use_device,
                        profile_memory=self._profile_memory, with_flops=self._with_flops)
        for avg in out:
            avg.stack = (avg.stack or [])[:group_by_stack_n]
            if not group_by_input_shapes:
                avg.input_shapes = ""
            if not group_by_overload_name:
                avg.overload_name = ""
        return out

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one FunctionEventAvg keyed "Total"."""
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
            total.key = None
        total.key = "Total"
        return total

    # -- building the tree (the recorder knows each event's parent) ----------------------
    def _build_tree(self) -> None:
        """Drop a child that only repeats its parent (an op whose one child has its own
        name, as PyTorch does), once the parents are linked."""
        while True:  # (a kernel's `linked` may name a dropped event: see its cpu_parent)
            gone = set()
            for e in self:
                p = e.cpu_parent
                if p is not None and p.name == e.name and len(p.cpu_children) == 1 \
                        and e.device_type is DeviceType.CPU:
                    p.cpu_children = e.cpu_children
                    p.kernels = p.kernels + e.kernels
                    for child in e.cpu_children:
                        child.cpu_parent = p
                    gone.add(id(e))
            if not gone:
                break
            keep = [e for e in self if id(e) not in gone]
            self.clear()
            self.extend(keep)
        self._tree_built = True
