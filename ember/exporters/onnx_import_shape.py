"""ONNX import converters: shapes and data movement (Shape, Reshape, Concat, Slice, Gather,
Pad ...), constants, and control flow (If, Loop).

Shape values (the output of `Shape`, `Size`) are int64 tensors kept on the CPU
(`ImportContext.host`): the ops that consume them (`Reshape`, `Expand`, `Slice` ...) read
them as Python ints, so a shape subgraph costs no device round trip.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
from ember.exporters.onnx_import_context import ImportContext, ember_dtype
from ember.exporters.onnx_import_strings import host_strings, is_strings
from ember.exporters.onnx_registry import importer

F = ember.nn.functional

# -- constants -------------------------------------------------------------------------------


@importer("Constant", since=1)
def _constant(ctx: ImportContext) -> Any:
    for key in ("value_string", "value_strings"):  # host values (`onnx_import_strings`)
        if key in ctx.attrs:
            return host_strings(ctx.attrs[key])
    if is_strings(ctx.attrs.get("value")):
        return host_strings(ctx.attrs["value"])
    for key, dtype in (("value", None), ("value_float", ember.float32),
                       ("value_floats", ember.float32), ("value_int", ember.int64),
                       ("value_ints", ember.int64)):
        if key in ctx.attrs:
            v = ctx.attrs[key]
            if dtype is None:
                return ctx.tensor(v)
            return ctx.tensor(np.asarray(v, dtype=np.dtype(dtype.name)))
    raise ctx.fail(f"holds {', '.join(ctx.attrs) or 'no value'}, which ember cannot import "
                   "(sparse tensors are not supported)", NotImplementedError)


@importer("ConstantOfShape", since=9)
def _constant_of_shape(ctx: ImportContext, shape: Any) -> Any:
    value = ctx.attr("value")
    arr = np.asarray(value if value is not None else np.zeros(1, np.float32)).reshape(-1)
    return ctx.tensor(np.full(ctx.ints(shape), arr[0], dtype=arr.dtype))


@importer("Shape", since=1)
def _shape(ctx: ImportContext, x: Any) -> Any:
    dims = list(x.shape)
    start, end = ctx.attr("start", 0), ctx.attr("end", None)
    return ctx.host(dims[slice(start, end)])


@importer("Size", since=1)
def _size(ctx: ImportContext, x: Any) -> Any:
    return ctx.host([x.numel()]).reshape(())


@importer("Range", since=11)
def _range(ctx: ImportContext, start: Any, limit: Any, delta: Any) -> Any:
    s, lim, d = ctx.scalar(start), ctx.scalar(limit), ctx.scalar(delta)
    n = max(int(np.ceil((lim - s) / d)), 0)
    values = ember.arange(n, dtype=ember.float64 if start.dtype.is_floating_point
                          else ember.int64, device=start.device)
    return (values * d + s).to(start.dtype)


# -- reshaping -------------------------------------------------------------------------------


@importer("Reshape", since=5)
def _reshape(ctx: ImportContext, x: Any, shape: Any) -> Any:
    dims = ctx.ints(shape)
    if not ctx.attr("allowzero", 0):
        dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    return x.reshape(dims)


@importer("Flatten", since=1)
def _flatten(ctx: ImportContext, x: Any) -> Any:
    axis = ctx.attr("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    lead = int(np.prod(x.shape[:axis], dtype=np.int64))
    return x.reshape(lead, -1) if lead else x.reshape(0, int(np.prod(x.shape[axis:])))


def _squeeze_axes(ctx: ImportContext, x: Any, axes: Any, from_input: bool) -> list[int]:
    values = ctx.ints(axes) if from_input else ctx.attr("axes")
    if values is None:
        return [i for i, s in enumerate(x.shape) if s == 1]
    return sorted(a % x.ndim for a in values)


@importer("Squeeze", since=1)
def _squeeze_attr(ctx: ImportContext, x: Any) -> Any:
    return _squeeze(x, _squeeze_axes(ctx, x, None, False))


@importer("Squeeze", since=13)
def _squeeze_input(ctx: ImportContext, x: Any, axes: Any = None) -> Any:
    return _squeeze(x, _squeeze_axes(ctx, x, axes, True))


def _squeeze(x: Any, axes: list[int]) -> Any:
    return x.reshape([s for i, s in enumerate(x.shape) if i not in axes])


def _unsqueeze(x: Any, axes: list[int]) -> Any:
    rank = x.ndim + len(axes)
    axes = sorted(a % rank for a in axes)
    dims = list(x.shape)
    for a in axes:
        dims.insert(a, 1)
    return x.reshape(dims)


@importer("Unsqueeze", since=1)
def _unsqueeze_attr(ctx: ImportContext, x: Any) -> Any:
    return _unsqueeze(x, ctx.attr("axes"))


@importer("Unsqueeze", since=13)
def _unsqueeze_input(ctx: ImportContext, x: Any, axes: Any) -> Any:
    return _unsqueeze(x, ctx.ints(axes))


@importer("Transpose", since=1)
def _transpose(ctx: ImportContext, x: Any) -> Any:
    perm = ctx.attr("perm") or list(range(x.ndim))[::-1]
    return x.permute(*perm) if x.ndim else x


@importer("Concat", since=4)
def _concat(ctx: ImportContext, *xs: Any) -> Any:
    xs = [x for x in xs if x is not None]
    axis = ctx.attr("axis") % xs[0].ndim
    return ember.cat(xs, axis)


@importer("Split", since=1)
def _split(ctx: ImportContext, x: Any, split: Any = None) -> Any:
    axis = ctx.attr("axis", 0) % x.ndim
    sizes = ctx.ints(split) if split is not None else ctx.attr("split")
    if not sizes:
        n = ctx.attr("num_outputs", ctx.n_outputs)
        step = -(-x.shape[axis] // n)
        sizes = [min(step, x.shape[axis] - i * step) for i in range(n)]
    return tuple(ember.split(x, sizes, axis))


importer("Split", since=13)(_split)


@importer("Expand", since=8)
def _expand(ctx: ImportContext, x: Any, shape: Any) -> Any:
    target = ctx.ints(shape)
    out = list(np.broadcast_shapes(tuple(x.shape), tuple(target)))
    return ember.broadcast_to(x, out)


@importer("Tile", since=6)
def _tile(ctx: ImportContext, x: Any, repeats: Any) -> Any:
    return x.repeat(*ctx.ints(repeats)) if x.ndim else x


# -- slicing and gathering --------------------------------------------------------------------

def _slice_dim(x: Any, axis: int, start: int, end: int, step: int) -> Any:
    n = x.shape[axis]
    idx = range(n)[slice(start, end, step)]
    if step == 1:
        return x.narrow(axis, idx.start, len(idx)) if len(idx) else \
            x.narrow(axis, 0, 0)
    index = ember.tensor(list(idx), dtype=ember.int64, device=x.device)
    return ember.index_select(x, axis, index)


def _slice(x: Any, starts: list[int], ends: list[int], axes: list[int] | None,
           steps: list[int] | None) -> Any:
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps or [1] * len(starts)
    for s, e, a, st in zip(starts, ends, axes, steps):
        x = _slice_dim(x, a % x.ndim, s, e, st)
    return x


@importer("Slice", since=1)
def _slice_attr(ctx: ImportContext, x: Any) -> Any:
    return _slice(x, ctx.attr("starts"), ctx.attr("ends"), ctx.attr("axes"), None)


@importer("Slice", since=10)
def _slice_input(ctx: ImportContext, x: Any, starts: Any, ends: Any, axes: Any = None,
                 steps: Any = None) -> Any:
    return _slice(x, ctx.ints(starts), ctx.ints(ends), ctx.ints(axes), ctx.ints(steps))


def _positive(idx: Any, n: int) -> Any:
    return ember.where(idx < 0, idx + n, idx)


@importer("Gather", since=1)
def _gather(ctx: ImportContext, x: Any, idx: Any) -> Any:
    axis = ctx.attr("axis", 0) % x.ndim
    idx = _positive(idx.to(ember.int64), x.shape[axis]).to(x.device)
    flat = ember.index_select(x, axis, idx.reshape(-1))
    return flat.reshape(list(x.shape[:axis]) + list(idx.shape) + list(x.shape[axis + 1:]))


@importer("GatherElements", since=11)
def _gather_elements(ctx: ImportContext, x: Any, idx: Any) -> Any:
    axis = ctx.attr("axis", 0) % x.ndim
    return ember.gather(x, axis, _positive(idx.to(ember.int64), x.shape[axis]))


@importer("GatherND", since=11)
def _gather_nd(ctx: ImportContext, x: Any, idx: Any) -> Any:
    b = ctx.attr("batch_dims", 0)
    k = idx.shape[-1]
    idx = idx.to(ember.int64)
    if b == 0:
        parts = tuple(_positive(idx[..., i], x.shape[i]) for i in range(k))
        return x[parts]
    # batch dims: flatten them into one leading index
    batch = list(x.shape[:b])
    nb = int(np.prod(batch))
    xf = x.reshape([nb] + list(x.shape[b:]))
    idf = idx.reshape([nb] + list(idx.shape[b:]))
    lead = ember.arange(nb, device=x.device).reshape([nb] + [1] * (idf.ndim - 2))
    lead = ember.broadcast_to(lead, list(idf.shape[:-1]))
    parts = (lead,) + tuple(_positive(idf[..., i], xf.shape[i + 1]) for i in range(k))
    out = xf[parts]
    return out.reshape(batch + list(out.shape[1:]))


@importer("ScatterElements", since=11)
def _scatter_elements(ctx: ImportContext, x: Any, idx: Any, updates: Any) -> Any:
    axis = ctx.attr("axis", 0) % x.ndim
    idx = _positive(idx.to(ember.int64), x.shape[axis])
    reduction = ctx.attr("reduction", "none")
    if reduction == "none":
        return ember.scatter(x, axis, idx, updates)
    if reduction == "add":
        return ember.scatter_add(x, axis, idx, updates)
    # every update's flat position in x: its own index, with `axis` taken from idx
    grid = np.indices(tuple(idx.shape)).reshape(idx.ndim, -1)
    grid[axis] = np.asarray(idx.tolist(), np.int64).reshape(-1)
    targets = np.ravel_multi_index(tuple(grid), tuple(x.shape)).tolist()
    flat = _scatter_rows(ctx, x.reshape(-1, 1), targets, updates.reshape(-1, 1), reduction)
    return flat.reshape(x.shape)


importer("Scatter", since=9)(_scatter_elements)

_REDUCE = {"none": lambda cur, new: new, "add": ember.add, "mul": ember.mul,
           "max": ember.maximum, "min": ember.minimum}


def _scatter_rows(ctx: ImportContext, rows: Any, targets: list[int], updates: Any,
                  reduction: str) -> Any:
    """`rows[targets[r]] = reduce(rows[targets[r]], updates[r])` for every r, in order.
    Updates that hit the same row go in successive rounds (each round a gather, the
    reduction and a scatter), so repeats combine as the reduction says."""
    if reduction not in _REDUCE:
        raise ctx.fail(f"reduction {reduction!r} is not supported ({', '.join(_REDUCE)} "
                       "are)", NotImplementedError)
    reduce = _REDUCE[reduction]
    pending = list(range(len(targets)))
    width = rows.shape[1]
    while pending:
        seen: set[int] = set()
        now, later = [], []
        for r in pending:
            (later if targets[r] in seen else now).append(r)
            seen.add(targets[r])
        where = ember.tensor([targets[r] for r in now], dtype=ember.int64, device=rows.device)
        src = ember.index_select(updates, 0, ember.tensor(now, dtype=ember.int64,
                                                          device=rows.device))
        merged = reduce(ember.index_select(rows, 0, where), src.to(rows.dtype))
        rows = ember.scatter(rows, 0, where.reshape(-1, 1).expand(-1, width), merged)
        pending = later
    return rows


@importer("ScatterND", since=11)
def _scatter_nd(ctx: ImportContext, x: Any, idx: Any, updates: Any) -> Any:
    k = idx.shape[-1]
    lead = [int(v) for v in x.shape[:k]]
    where = np.asarray(idx.tolist(), np.int64).reshape(-1, k)
    where = np.where(where < 0, where + np.asarray(lead), where)
    targets = np.ravel_multi_index(tuple(where.T), tuple(lead)).tolist() if k else \
        [0] * where.shape[0]
    rows = x.reshape([int(np.prod(lead, dtype=np.int64))] + list(x.shape[k:])).reshape(
        int(np.prod(lead, dtype=np.int64)), -1)
    upd = updates.reshape(len(targets), -1)
    out = _scatter_rows(ctx, rows, targets, upd, ctx.attr("reduction", "none"))
    return out.reshape(x.shape)


@importer("NonZero", since=9)
def _nonzero(ctx: ImportContext, x: Any) -> Any:
    if x.ndim == 0:
        x = x.reshape(1)
        return ember.nonzero(x).t()[:0] if not bool(x.reshape(-1)[0].item()) else \
            ember.zeros(0, 1, dtype=ember.int64)
    return ember.nonzero(x).t().contiguous()


@importer("Trilu", since=14)
def _trilu(ctx: ImportContext, x: Any, k: Any = None) -> Any:
    diagonal = int(ctx.scalar(k, 0))
    return ember.triu(x, diagonal) if ctx.attr("upper", 1) else ember.tril(x, diagonal)


@importer("EyeLike", since=9)
def _eye_like(ctx: ImportContext, x: Any) -> Any:
    dtype = ember_dtype(ctx.attr("dtype"), "EyeLike's dtype") if "dtype" in ctx.attrs \
        else x.dtype
    n, m = x.shape
    k = ctx.attr("k", 0)
    rows = ember.arange(n, device=x.device).reshape(n, 1)
    cols = ember.arange(m, device=x.device).reshape(1, m)
    return (cols - rows == k).to(dtype)


@importer("OneHot", since=9)
def _one_hot(ctx: ImportContext, indices: Any, depth: Any, values: Any) -> Any:
    d = int(ctx.scalar(depth))
    axis = ctx.attr("axis", -1)
    idx = indices.to(ember.int64)
    idx = ember.where(idx < 0, idx + d, idx)
    hot = idx.unsqueeze(-1) == ember.arange(d, device=idx.device)
    off, on = values[0], values[1]
    out = ember.where(hot, on, off)
    rank = out.ndim
    return out.movedim(-1, axis % rank)


@importer("Pad", since=2)
def _pad_attr(ctx: ImportContext, x: Any) -> Any:
    return _pad(ctx, x, ctx.attr("pads"), ctx.attr("value", 0.0), None)


@importer("Pad", since=11)
def _pad_input(ctx: ImportContext, x: Any, pads: Any, value: Any = None,
               axes: Any = None) -> Any:
    return _pad(ctx, x, ctx.ints(pads), ctx.scalar(value, 0), ctx.ints(axes))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
              "wrap": "circular"}


def _pad(ctx: ImportContext, x: Any, pads: list[int], value: Any, axes: list[int] | None
         ) -> Any:
    axes = [a % x.ndim for a in axes] if axes is not None else list(range(x.ndim))
    n = len(axes)
    begin, end = dict(zip(axes, pads[:n])), dict(zip(axes, pads[n:]))
    mode = ctx.attr("mode", "constant")
    # negative pads crop
    for a in axes:
        if begin[a] < 0:
            x = x.narrow(a, -begin[a], x.shape[a] + begin[a])
            begin[a] = 0
        if end[a] < 0:
            x = x.narrow(a, 0, x.shape[a] + end[a])
            end[a] = 0
    last = max((a for a in axes if begin[a] or end[a]), default=None)
    if last is None:
        return x
    first = min(a for a in axes if begin[a] or end[a])
    flat = []
    for a in range(x.ndim - 1, first - 1, -1):
        flat += [begin.get(a, 0), end.get(a, 0)]
    if mode == "constant":
        return F.pad(x, flat, value=value)
    # ember (like PyTorch) pads only the trailing dims of (N, C, ...) this way: move the
    # padded dims to the end, two at a time at most per call
    return _pad_nonconstant(x, begin, end, _PAD_MODES[mode])


def _pad_nonconstant(x: Any, begin: dict, end: dict, mode: str) -> Any:
    for a in range(x.ndim):
        b, e = begin.get(a, 0), end.get(a, 0)
        if not (b or e):
            continue
        moved = x.movedim(a, -1)
        shape = list(moved.shape)
        y = F.pad(moved.reshape(1, -1, shape[-1]), [b, e], mode=mode)
        x = y.reshape(shape[:-1] + [shape[-1] + b + e]).movedim(-1, a)
    return x


# -- control flow ----------------------------------------------------------------------------


@importer("If", since=1)
def _if(ctx: ImportContext, cond: Any) -> Any:
    branch = ctx.attr("then_branch") if bool(cond.reshape(-1)[0].item()) else \
        ctx.attr("else_branch")
    return tuple(ctx.run_graph(branch, []))


@importer("Loop", since=1)
def _loop(ctx: ImportContext, trip: Any = None, cond: Any = None, *carried: Any) -> Any:
    body = ctx.attr("body")
    n = int(ctx.scalar(trip)) if trip is not None else None
    keep = bool(cond.reshape(-1)[0].item()) if cond is not None else True
    state = list(carried)
    n_carried = len(state)
    scans: list[list[Any]] = []
    i = 0
    while keep and (n is None or i < n):
        outs = ctx.run_graph(body, [ctx.host([i]).reshape(()),
                                    ember.tensor(keep)] + state)
        keep = bool(outs[0].reshape(-1)[0].item())
        state = list(outs[1:1 + n_carried])
        extra = outs[1 + n_carried:]
        if not scans:
            scans = [[] for _ in extra]
        for acc, v in zip(scans, extra):
            acc.append(v)
        i += 1
    n_scan = len(ctx.node.output) - n_carried
    stacked = [ember.stack(acc, 0) if acc else ember.zeros(0) for acc in scans]
    stacked += [ember.zeros(0)] * (n_scan - len(stacked))
    return tuple(state + stacked)


@importer("Compress", since=9)
def _compress(ctx: ImportContext, x: Any, cond: Any) -> Any:
    keep = [i for i, c in enumerate(cond.reshape(-1).tolist()) if c]
    axis = ctx.attr("axis")
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis %= x.ndim
    keep = [i for i in keep if i < x.shape[axis]]
    return ember.index_select(x, axis, ember.tensor(keep, dtype=ember.int64, device=x.device))


@importer("ReverseSequence", since=10)
def _reverse_sequence(ctx: ImportContext, x: Any, lens: Any) -> Any:
    batch_axis, time_axis = ctx.attr("batch_axis", 1), ctx.attr("time_axis", 0)
    rows = []
    for b, n in enumerate(ctx.ints(lens)):
        row = x.narrow(batch_axis, b, 1)
        head = ember.flip(row.narrow(time_axis, 0, n), [time_axis])
        rows.append(ember.cat([head, row.narrow(time_axis, n, row.shape[time_axis] - n)],
                              time_axis))
    return ember.cat(rows, batch_axis)


@importer("TensorScatter", since=24)
def _tensor_scatter(ctx: ImportContext, cache: Any, update: Any, write: Any = None) -> Any:
    axis = ctx.attr("axis", -2) % cache.ndim
    circular = ctx.attr("mode", "linear") == "circular"
    size, length = cache.shape[axis], update.shape[axis]
    starts = ctx.ints(write) if write is not None else [0] * cache.shape[0]
    rows = []
    for b, start in enumerate(starts):
        row, upd = cache[b], update[b]
        positions = [(start + i) % size if circular else start + i for i in range(length)]
        index = ember.tensor(positions, dtype=ember.int64, device=cache.device)
        shape = [1] * (row.ndim)
        shape[axis - 1] = length
        index = ember.broadcast_to(index.reshape(shape), list(upd.shape))
        rows.append(ember.scatter(row, axis - 1, index, upd))
    return ember.stack(rows, 0)


@importer("Scan", since=9)
def _scan(ctx: ImportContext, *args: Any) -> Any:
    body = ctx.attr("body")
    n_scan = ctx.attr("num_scan_inputs")
    n_state = len(args) - n_scan
    states, scans = list(args[:n_state]), list(args[n_state:])
    in_axes = ctx.attr("scan_input_axes") or [0] * n_scan
    in_dirs = ctx.attr("scan_input_directions") or [0] * n_scan
    in_axes = [a % s.ndim for a, s in zip(in_axes, scans)]
    steps = scans[0].shape[in_axes[0]]
    collected: list[list[Any]] = []
    for t in range(steps):
        slices = [s.select(a, steps - 1 - t if d else t)
                  for s, a, d in zip(scans, in_axes, in_dirs)]
        outs = ctx.run_graph(body, states + slices)
        states = list(outs[:n_state])
        if not collected:
            collected = [[] for _ in outs[n_state:]]
        for acc, v in zip(collected, outs[n_state:]):
            acc.append(v)
    n_out = len(body.outputs) - n_state
    out_axes = ctx.attr("scan_output_axes") or [0] * n_out
    out_dirs = ctx.attr("scan_output_directions") or [0] * n_out
    stacked = []
    for acc, a, d in zip(collected, out_axes, out_dirs):
        if d:
            acc = acc[::-1]
        stacked.append(ember.stack(acc, a % (acc[0].ndim + 1)))
    return tuple(states + stacked)


@importer("Scan", since=8)
def _scan_8(ctx: ImportContext, lens: Any, *args: Any) -> Any:
    """Opset 8's Scan: a batch axis first on every input, each batch item scanned alone."""
    if lens is not None:
        raise ctx.fail("sequence_lens is not supported", NotImplementedError)
    if "directions" in ctx.attrs:
        ctx.attrs = dict(ctx.attrs, scan_input_directions=ctx.attr("directions"))
    per_item = [_scan(ctx, *[a[b] for a in args]) for b in range(args[0].shape[0])]
    return tuple(ember.stack(list(vals), 0) for vals in zip(*per_item))


@importer("Unique", since=11)
def _unique(ctx: ImportContext, x: Any) -> Any:
    """The unique slices are found on the host; the values are gathered from `x` with
    `index_select`, so they keep its device and autograd."""
    axis = ctx.attr("axis")
    flat = x.reshape(-1) if axis is None else x
    axis = 0 if axis is None else axis % x.ndim
    values = np.asarray(flat.to(ember.float64).tolist() if flat.dtype == ember.bfloat16
                        else flat.tolist())
    moved = np.moveaxis(values, axis, 0).reshape(values.shape[axis], -1)
    keys = [tuple(row) for row in moved.tolist()]
    first: dict[tuple, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    order = sorted(first, key=lambda k: k) if ctx.attr("sorted", 1) else list(first)
    position = {k: j for j, k in enumerate(order)}
    indices = [first[k] for k in order]
    inverse = [position[k] for k in keys]
    counts = [0] * len(order)
    for k in keys:
        counts[position[k]] += 1
    y = ember.index_select(flat, axis, ember.tensor(indices, dtype=ember.int64,
                                                    device=x.device))
    return y, ctx.host(indices), ctx.host(inverse), ctx.host(counts)


@importer("NonMaxSuppression", since=10)
def _nms(ctx: ImportContext, boxes: Any, scores: Any, max_out: Any = None,
         iou_threshold: Any = None, score_threshold: Any = None) -> Any:
    """Greedy non-maximum suppression per (batch, class), on the host (its output is
    indices, data-dependent in length)."""
    limit = int(ctx.scalar(max_out, 0))
    iou_max = float(ctx.scalar(iou_threshold, 0.0))
    floor = ctx.scalar(score_threshold, None)
    b = np.asarray(boxes.tolist(), np.float64).reshape(boxes.shape)
    s = np.asarray(scores.tolist(), np.float64).reshape(scores.shape)
    if ctx.attr("center_point_box", 0):
        cx, cy, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        b = np.stack([cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2], -1)
    y1, y2 = np.minimum(b[..., 0], b[..., 2]), np.maximum(b[..., 0], b[..., 2])
    x1, x2 = np.minimum(b[..., 1], b[..., 3]), np.maximum(b[..., 1], b[..., 3])
    area = (y2 - y1) * (x2 - x1)
    picked: list[list[int]] = []
    for n in range(s.shape[0]):
        for c in range(s.shape[1]):
            order = sorted(range(s.shape[2]), key=lambda i: -s[n, c, i])
            kept: list[int] = []
            for i in order:
                if len(kept) >= limit or (floor is not None and s[n, c, i] <= floor):
                    break
                ok = True
                for j in kept:
                    ih = max(0.0, min(y2[n, i], y2[n, j]) - max(y1[n, i], y1[n, j]))
                    iw = max(0.0, min(x2[n, i], x2[n, j]) - max(x1[n, i], x1[n, j]))
                    inter = ih * iw
                    union = area[n, i] + area[n, j] - inter
                    if union > 0 and inter / union > iou_max:
                        ok = False
                        break
                if ok:
                    kept.append(i)
            picked += [[n, c, i] for i in kept]
    out = ember.tensor(picked, dtype=ember.int64) if picked else \
        ember.zeros(0, 3, dtype=ember.int64)
    return out.to(boxes.device) if str(boxes.device) != "cpu" else out
