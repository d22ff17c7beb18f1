"""The Chrome Trace Event format of a profile (`export_chrome_trace`), and
`tensorboard_trace_handler`, which writes one trace file per cycle as PyTorch's does.

The file is `{"traceEvents": [...], ...}` as Kineto writes it (chrome://tracing,
Perfetto and TensorBoard's profiler plugin read it):

- every host range is a complete event (`"ph": "X"`) on the process (`pid`: the OS
  process id) and thread (`tid`: the OS thread id) that ran it, with `ts` and `dur` in
  microseconds, `cat` saying what it is (`cpu_op` for ops and backward nodes,
  `user_annotation` for `record_function` and steps, `python_function` for module
  calls), and `args` holding the input shapes and dtypes (`Input Dims`, `Input type`),
  the device, `flops`, the call stack, the module path, when recorded. Ranges nest: a
  child lies inside its parent on the same thread;
- every device kernel is a complete event (`cat`: `kernel`) on a process of its own for
  its device (named by a `process_name` metadata event), linked to the op that launched
  it by a flow (`ac2g`, as Kineto draws CUDA launches) and by `External id`;
- with `profile_memory`, every allocation and release is an instant event `[memory]`
  with `Bytes`, `Total Allocated`, `Device Type` and `Device Id` (Kineto's fields).

`ts` counts from the start of the profile; `baseTimeNanoseconds` is the Unix time of
that start, so `ts * 1000 + baseTimeNanoseconds` is each event's wall-clock time.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any

# c10::DeviceType's numbers, which Kineto writes in memory events
_DEVICE_TYPE_IDS = {"cpu": 0, "cuda": 1, "opencl": 4}
_PRIVATE_USE_ID = 20


def _us(ns: int) -> float:
    return ns / 1000.0


def _times(e: Any) -> tuple[float, float]:
    ns = getattr(e, "_ns", None)
    if ns is not None:  # exact: integer nanoseconds, so children stay inside parents
        return _us(ns[0]), _us(ns[1] - ns[0])
    return e.time_range.start, e.time_range.elapsed_us()


def _op_args(e: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"External id": e.id}
    if e.input_shapes is not None:
        args["Input Dims"] = e.input_shapes
        args["Input type"] = e.input_dtypes
    if e.device is not None:
        args["Device"] = e.device
    if e.flops:
        args["flops"] = e.flops
    if e.module_hierarchy is not None:
        args["Module Hierarchy"] = e.module_hierarchy
    if e.stack:
        args["Call stack"] = ";".join(e.stack)
    return args


def _device_lanes(events: list[Any]) -> dict[int, int]:
    """A track (tid) for each device event: 0, unless the device reports it overlapping an
    earlier one without nesting in it (PoCL's CPU device may start a kernel of an in-order
    queue before the previous one ends); it then goes on the first track where it does not
    overlap, so every track of the trace nests as the format requires."""
    ends: dict[str, list[float]] = {}  # per device: when the last event of each lane ends
    lanes: dict[int, int] = {}
    device_events = [e for e in events if e.device_type.value != "cpu"]
    for e in sorted(device_events, key=lambda e: _times(e)[0]):
        ts, dur = _times(e)
        tracks = ends.setdefault(e.device or f"{e.device_type.value}:{e.device_index}", [])
        lane = next((i for i, end in enumerate(tracks) if end <= ts + 1e-6), len(tracks))
        if lane == len(tracks):
            tracks.append(0.0)
        tracks[lane] = ts + dur
        lanes[id(e)] = lane
    return lanes


def build(events: Iterable[Any], *, memory: Iterable[Any] = (), base_ns: int | None = None,
          devices: dict[str, str] | None = None, metadata: dict[str, Any] | None = None,
          pid: int | None = None) -> dict[str, Any]:
    """The trace of `events` (FunctionEvents), as a JSON-ready dict."""
    pid = os.getpid() if pid is None else pid
    trace: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
    ]
    threads: set[int] = set()
    device_pids: dict[str, int] = {}
    threads_of_devices: set[tuple[int, int]] = set()
    devices = dict(devices or {})
    flows = 0
    events = list(events)
    lanes = _device_lanes(events)
    for e in events:
        ts, dur = _times(e)
        if e.device_type.value == "cpu":
            if e.thread not in threads:
                threads.add(e.thread)
                trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": e.thread,
                              "args": {"name": f"thread {e.thread} (python)"}})
            trace.append({"ph": "X", "cat": e.category, "name": e.trace_name, "pid": pid,
                          "tid": e.thread, "ts": ts, "dur": dur, "args": _op_args(e)})
            continue
        label = e.device or f"{e.device_type.value}:{e.device_index}"
        dpid = device_pids.get(label)
        if dpid is None:
            dpid = device_pids[label] = len(device_pids)
            name = devices.get(label)
            trace.append({"ph": "M", "name": "process_name", "pid": dpid, "tid": 0,
                          "args": {"name": f"{label} ({name})" if name else label}})
        lane = lanes[id(e)]
        if (dpid, lane) not in threads_of_devices:
            threads_of_devices.add((dpid, lane))
            trace.append({"ph": "M", "name": "thread_name", "pid": dpid, "tid": lane,
                          "args": {"name": f"queue 0 (lane {lane})" if lane else "queue 0"}})
        args: dict[str, Any] = {"device": e.device_index}
        launcher = getattr(e, "linked", None)
        if launcher is not None:
            flows += 1
            args["External id"] = launcher.id
            args["correlation"] = flows
            launch_ts, _ = _times(launcher)
            trace.append({"ph": "s", "id": flows, "pid": pid, "tid": launcher.thread,
                          "ts": launch_ts, "cat": "ac2g", "name": "ac2g"})
            trace.append({"ph": "f", "id": flows, "pid": dpid, "tid": lane, "ts": ts,
                          "cat": "ac2g", "name": "ac2g", "bp": "e"})
        trace.append({"ph": "X", "cat": "kernel", "name": e.trace_name, "pid": dpid,
                      "tid": lane, "ts": ts, "dur": dur, "args": args})
    for m in memory:
        kind = m.device.split(":")[0]
        index = int(m.device.split(":")[1]) if ":" in m.device else -1
        trace.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                      "pid": pid, "tid": m.tid, "ts": _us(m.ns),
                      "args": {"Total Reserved": 0, "Total Allocated": m.total,
                               "Bytes": m.bytes, "Device Type":
                               _DEVICE_TYPE_IDS.get(kind, _PRIVATE_USE_ID),
                               "Device Id": index}})
    out: dict[str, Any] = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": label, "name": name} for label, name in devices.items()],
    }
    out.update(metadata or {})
    out.update({"displayTimeUnit": "ms", "baseTimeNanoseconds":
                time.time_ns() if base_ns is None else base_ns, "traceEvents": trace})
    return out


def write(path: str | os.PathLike, trace: dict[str, Any]) -> None:
    """Write a trace as JSON (gzip-compressed when `path` ends with `.gz`)."""
    path = os.fspath(path)
    trace = dict(trace, traceName=path)
    data = json.dumps(trace).encode()
    if path.endswith(".gz"):
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[Any], None]:
    """An `on_trace_ready` handler that writes each cycle's trace into `dir_name` as
    `<worker_name>.<time in ns>.pt.trace.json` (`.gz` with `use_gzip`), the layout
    TensorBoard's profiler plugin reads (`tensorboard --logdir dir_name`).

    Args:
        dir_name (str): the directory (created if missing).
        worker_name (str, optional): unique per worker in distributed runs; by default
            `<hostname>_<pid>`.
        use_gzip (bool): compress the files.
    """
    def handler_fn(prof: Any) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as err:
                raise RuntimeError("Can't create directory: " + dir_name) from err
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        # nanoseconds, so that two cycles never write the same name
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn
