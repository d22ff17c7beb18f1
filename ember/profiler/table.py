"""The summary table of profiled events, in PyTorch's format (`EventList.table()`).

The columns, their order, widths and number formats are those of
`torch.autograd.profiler_util._build_table`, so a table from ember reads (and diffs)
like one from PyTorch: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg,
the device's columns when device time was recorded, the memory columns with
`profile_memory`, # of Calls, Input Shapes when grouped by shape, Source Location with
stacks, and Total FLOPs with `with_flops`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

_US_IN_SECOND = 1000.0 * 1000.0
_US_IN_MS = 1000.0
_COLUMN = 12
_SPACING = 2


def format_time(time_us: float) -> str:
    """`12.345us`, `1.234ms` or `1.234s`."""
    if time_us >= _US_IN_SECOND:
        return f"{time_us / _US_IN_SECOND:.3f}s"
    if time_us >= _US_IN_MS:
        return f"{time_us / _US_IN_MS:.3f}ms"
    return f"{time_us:.3f}us"


def format_time_share(time_us: float, total_us: float) -> str:
    """A percentage of `total_us`, or NaN when the total is 0."""
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def format_memory(nbytes: float) -> str:
    """Bytes as `B`, `KB`, `MB` or `GB` (powers of 1024, as PyTorch prints them)."""
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return f"{int(nbytes)} B"


def _in_unit(time_us: float, default: str, unit: str | None) -> str:
    if unit == "s":
        return f"{time_us / _US_IN_SECOND:.3f}s"
    if unit == "ms":
        return f"{time_us / _US_IN_MS:.3f}ms"
    if unit == "us":
        return f"{time_us:.3f}us"
    return default


def _flops_scale(flops: float) -> tuple[float, str]:
    headers = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    log = max(0.0, min(math.log10(flops) / 3, float(len(headers) - 1)))
    return 10 ** (math.floor(log) * -3.0), headers[int(log)]


def _sort_attr(sort_by: str) -> str:
    # PyTorch's keys name the device (`cuda_time_total`); every device's is `device_`
    for device in ("cuda", "xpu", "privateuse1", "opencl"):
        sort_by = sort_by.replace(device, "device")
    return sort_by


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def build_table(events: Sequence[Any], sort_by: str | None = None, header: str | None = None,
                row_limit: int = 100, max_src_column_width: int = 75,
                max_name_column_width: int = 55, max_shapes_column_width: int = 80,
                with_flops: bool = False, profile_memory: bool = False,
                top_level_events_only: bool = False, time_unit: str | None = None) -> str:
    """The table of `events` (FunctionEvents or FunctionEventAvgs), as PyTorch prints it."""
    if len(events) == 0:
        return ""
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    use_device = events[0].use_device
    has_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    if sort_by is not None:
        attr = _sort_attr(sort_by)
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)

    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack]
    src_width = None
    if stacks:
        src_width = max(len(entry) for stack in stacks for entry in stack) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    device_name = use_device.upper() if use_device is not None else "None"
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {device_name}", f"Self {device_name} %", f"{device_name} total",
                    f"{device_name} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if use_device and has_device_mem:
            headers += [f"{device_name} Mem", f"Self {device_name} Mem"]
    headers.append("# of Calls")

    widths: list[tuple[int, str]] = [(name_width, ">")] + [(_COLUMN, ">")] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append((shapes_width, ">"))
    if stacks:
        headers.append("Source Location")
        widths.append((src_width, "<"))
    flops_scale = 1.0
    if with_flops:
        positive = [e.flops for e in events if e.flops and e.flops > 0]
        if positive:
            flops_scale, flops_header = _flops_scale(min(positive))
            headers.append(f"Total {flops_header}")
            widths.append((_COLUMN, ">"))
        else:
            with_flops = False  # no event has FLOPs: no column
    row_format = "".join("{: " + align + str(w) + "}" + " " * _SPACING for w, align in widths)
    header_sep = "".join("-" * w + " " * _SPACING for w, _ in widths)
    line_length = sum(w + _SPACING for w, _ in widths) - _SPACING

    self_cpu_total = sum(e.self_cpu_time_total for e in events)
    self_device_total = sum(e.self_device_time_total for e in events
                            if e.device_type.value != "cpu" and not e.is_user_annotation)
    lines: list[str] = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [header_sep, row_format.format(*headers), header_sep]

    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        e.self_cpu_percent = format_time_share(e.self_cpu_time_total, self_cpu_total)
        e.total_cpu_percent = format_time_share(e.cpu_time_total, self_cpu_total)
        row = [name, e.self_cpu_percent,
               _in_unit(e.self_cpu_time_total, e.self_cpu_time_total_str, time_unit),
               e.total_cpu_percent,
               _in_unit(e.cpu_time_total, e.cpu_time_total_str, time_unit),
               _in_unit(e.cpu_time, e.cpu_time_str, time_unit)]
        if has_device_time:
            e.total_device_percent = format_time_share(e.self_device_time_total,
                                                       self_device_total)
            row += [_in_unit(e.self_device_time_total, e.self_device_time_total_str, time_unit),
                    e.total_device_percent,
                    _in_unit(e.device_time_total, e.device_time_total_str, time_unit),
                    _in_unit(e.device_time, e.device_time_str, time_unit)]
        if profile_memory:
            row += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
            if use_device and has_device_mem:
                row += [format_memory(e.device_memory_usage),
                        format_memory(e.self_device_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        if stacks:
            row.append(_trim_path(e.stack[0], src_width) if e.stack else "")
        if with_flops:
            row.append("--" if not e.flops or e.flops <= 0 else f"{e.flops * flops_scale:8.3f}")
        lines.append(row_format.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for entry in (e.stack or [])[1:]:
                lines.append(row_format.format(*(blank + [_trim_path(entry, src_width)])))
            lines.append(row_format.format(*(blank + [""])))
    lines.append(header_sep)
    lines.append("Self CPU time total: "
                 + _in_unit(self_cpu_total, format_time(self_cpu_total), time_unit))
    if has_device_time:
        lines.append(f"Self {device_name} time total: "
                     + _in_unit(self_device_total, format_time(self_device_total), time_unit))
    return "".join(line + "\n" for line in lines)
