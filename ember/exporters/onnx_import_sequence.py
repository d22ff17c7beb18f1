"""ONNX import converters: sequences (`seq(tensor)` values, held as Python lists of
tensors) and optionals (the value, or None when empty)."""

from __future__ import annotations

from typing import Any

import ember
from ember.exporters.onnx_import_context import ImportContext
from ember.exporters.onnx_registry import importer


def _position(ctx: ImportContext, seq: list, pos: Any, insert: bool = False) -> int:
    n = len(seq)
    if pos is None:
        return n if insert else n - 1
    i = int(ctx.scalar(pos))
    if not -n <= i < n + (1 if insert else 0):  # insertion may also append (i == n)
        raise ctx.fail(f"position {i} is out of range for a sequence of {n}", IndexError)
    return i + n if i < 0 else i


@importer("SequenceConstruct", since=11)
def _construct(ctx: ImportContext, *xs: Any) -> Any:
    return list(xs)


@importer("SequenceEmpty", since=11)
def _empty(ctx: ImportContext) -> Any:
    return []


@importer("SequenceInsert", since=11)
def _insert(ctx: ImportContext, seq: list, x: Any, pos: Any = None) -> Any:
    out = list(seq)
    out.insert(_position(ctx, seq, pos, insert=True), x)
    return out


@importer("SequenceAt", since=11)
def _at(ctx: ImportContext, seq: list, pos: Any) -> Any:
    return seq[_position(ctx, seq, pos)]


@importer("SequenceErase", since=11)
def _erase(ctx: ImportContext, seq: list, pos: Any = None) -> Any:
    out = list(seq)
    del out[_position(ctx, seq, pos)]
    return out


@importer("SequenceLength", since=11)
def _length(ctx: ImportContext, seq: list) -> Any:
    return ctx.host([len(seq)]).reshape(())


@importer("ConcatFromSequence", since=11)
def _concat_from(ctx: ImportContext, seq: list) -> Any:
    axis = ctx.attr("axis")
    if ctx.attr("new_axis", 0):
        return ember.stack(seq, axis % (seq[0].ndim + 1))
    return ember.cat(seq, axis % seq[0].ndim)


@importer("SplitToSequence", since=11)
def _split_to(ctx: ImportContext, x: Any, split: Any = None) -> Any:
    axis = ctx.attr("axis", 0) % x.ndim
    if split is None:
        parts = ember.split(x, 1, axis)
        if not ctx.attr("keepdims", 1):
            parts = [p.squeeze(axis) for p in parts]
        return list(parts)
    sizes = ctx.ints(split)
    if split.ndim == 0:
        sizes = sizes[0]
    return list(ember.split(x, sizes, axis))


@importer("SequenceMap", since=17)
def _map(ctx: ImportContext, seq: list, *others: Any) -> Any:
    body = ctx.attr("body")
    n_out = ctx.n_outputs
    outs: list[list] = [[] for _ in range(n_out)]
    for i in range(len(seq)):
        extra = [o[i] if isinstance(o, list) else o for o in others]
        for acc, v in zip(outs, ctx.run_graph(body, [seq[i]] + extra)):
            acc.append(v)
    return tuple(outs)


@importer("Optional", since=15)
def _optional(ctx: ImportContext, x: Any = None) -> Any:
    return x


@importer("OptionalHasElement", since=15)
def _has(ctx: ImportContext, x: Any = None) -> Any:
    return ember.tensor(x is not None)


@importer("OptionalGetElement", since=15)
def _get(ctx: ImportContext, x: Any) -> Any:
    if x is None:
        raise ctx.fail("the optional is empty", ValueError)
    return x
