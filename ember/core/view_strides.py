"""PyTorch's strides of a view where they are its own choice: those of size-1 dims (and
of empty tensors), which address no memory, so a NumPy-like backend's array does not
keep PyTorch's values for them (`torch.zeros(2, 3).t().unsqueeze(2).stride()` is
`(1, 3, 1)`; NumPy's reshape gives the last dim 3).

A view op leaves a recipe on its result, without computing anything (the view fast
paths stay as they were): `out._strides_of = (input, input's data, out's data, rule,
argument)`, at most `DEPTH` views deep (`_strides_depth`), so a chain of views never
keeps more than that many inputs alive. `Tensor.stride()` replays the recipes from the
first tensor without one, by PyTorch's rules for each view op, when the view has a
size-1 or a size-0 dim and no recipe along the chain went stale (its input or output
given other data since, by an in-place metadata op); `storage_offset()` of an empty view
likewise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DEPTH = 16  # the longest chain of views whose strides are replayed


def _contiguous(shape: tuple) -> tuple:
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


def _reshape(shape: tuple, strides: tuple, out: tuple, _: Any) -> tuple | None:
    """ATen's computeStride: the strides of viewing (shape, strides) as `out`."""
    if not shape:
        return (1,) * len(out)
    if 0 in shape:
        return strides if shape == out else _contiguous(out)
    new = [0] * len(out)
    view_d = len(out) - 1
    base = strides[-1] if strides else 1
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or out[view_d] == 1):
                new[view_d] = view_numel * base
                view_numel *= out[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                base, tensor_numel, view_numel = strides[d - 1], 1, 1
    if view_d != -1:
        return None
    return tuple(new)


def _unsqueeze(shape: tuple, strides: tuple, out: tuple, d: int) -> tuple:
    new = 1 if d >= len(shape) else shape[d] * strides[d]
    return strides[:d] + (new,) + strides[d:]


def _keep(shape: tuple, strides: tuple, out: tuple, dims: tuple) -> tuple:
    """squeeze (the dims kept) and permute (the dims in their new order)."""
    return tuple(strides[d] for d in dims)


def _expand(shape: tuple, strides: tuple, out: tuple, _: Any) -> tuple:
    """ATen's inferExpandGeometry: a repeated dim steps 0; a new one, past the next."""
    new = [0] * len(out)
    lead = len(out) - len(shape)
    for i in range(len(out) - 1, -1, -1):
        d = i - lead
        if d >= 0:
            size, stride = shape[d], strides[d]
        else:
            size, stride = 1, out[i + 1] * new[i + 1] if i + 1 < len(out) else 1
        new[i] = stride if size == out[i] else 0
    return tuple(new)


def _index(shape: tuple, strides: tuple, out: tuple, spec: tuple) -> tuple:
    """Basic indexing, as ATen applies it: ints select, slices step, None unsqueezes."""
    new, d = [], 0
    for e in spec:
        if e[0] == "none":
            new.append(shape[d] * strides[d] if d < len(shape) else 1)
        elif e[0] == "slice":
            new.append(strides[d] * e[3])
            d += 1
        else:
            d += 1
    return tuple(new)


def _strided(shape: tuple, strides: tuple, out: tuple, steps_start: tuple) -> tuple | None:
    """strided_view (diagonal, unfold, as_strided): each output dim steps through the
    input's index vector `steps[k]`, so by the input strides summed along it (a 0-d
    input's steps say nothing: the backend's strides stand)."""
    if not shape:
        return None
    return tuple(sum(a * s for a, s in zip(row, strides)) for row in steps_start[0])


RULES: dict[str, Callable[..., tuple | None]] = {
    "reshape": _reshape, "unsqueeze": _unsqueeze, "keep": _keep, "expand": _expand,
    "index": _index, "strided": _strided}


def _replay(t: Any) -> tuple[tuple, int] | None:
    """(PyTorch's strides, storage offset) of view `t` by its recipes; None where they do
    not hold."""
    chain, x, strides = [], t, None
    while True:
        rec = x._strides_of
        if rec is None or rec[2] is not x._data:
            break
        if rec[0] is None:  # strides kept by an in-place op that made `x` this view
            strides = rec[4]
            break
        if rec[1] is not rec[0]._data:
            return None  # (its input has other data now: the recipe went stale)
        chain.append(rec)
        x = rec[0]
    if strides is None:
        if not chain:
            return None
        strides = x.stride()
    offset = x.storage_offset()
    shape = tuple(x._data.shape)
    for rec in reversed(chain):
        out = tuple(rec[2].shape)
        if rec[3] == "index":  # (each int, and each slice's start, moves the offset)
            offset += sum(e[1] * strides[d] for d, e in
                          enumerate(e for e in rec[4] if e[0] != "none"))
        elif rec[3] == "strided":  # (the start index moves it)
            offset += sum(b * s for b, s in zip(rec[4][1], strides))
        strides = RULES[rec[3]](shape, strides, out, rec[4])
        if strides is None or len(strides) != len(out):
            return None
        shape = out
    return strides, offset


def view_strides(t: Any) -> tuple | None:
    """PyTorch's strides of view `t` by its recipes; None where they do not hold."""
    layout = _replay(t)
    return None if layout is None else layout[0]


def view_offset(t: Any) -> int | None:
    """PyTorch's storage offset of view `t` by its recipes (an empty view's, which a
    NumPy-like backend does not keep); None where they do not hold."""
    layout = _replay(t)
    return None if layout is None else layout[1]


def keep_strides(t: Any, view: Any) -> None:
    """Tensor `t` becomes `view` in place (`t.unsqueeze_()`): it keeps PyTorch's strides
    of the view, as they are now."""
    if view._strides_of is not None:
        t._strides_of = (None, None, view._data, None, view.stride())
        t._strides_depth = 1
