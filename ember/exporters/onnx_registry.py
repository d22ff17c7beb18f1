"""The ONNX converter registry: which function converts what.

Converters import this module to enter their table; drivers read it. It imports neither
(only `onnx_context`: what a converter is, and `mark_dynamic`), so the imports point one
way: context <- registry <- converters <- driver.

Export (`ember.onnx.export`): the table maps an ember op name (a primitive, a composite
such as `conv2d`, or an `ember.nn` module class name such as `LSTM`) to a converter
`fn(ctx, node)` (see `onnx_context.ExportContext`). It has three sources, each
overriding the one before:

1. built-in converters, entered with `@converter` by `onnx_converters` and `onnx_modules`
   when they are imported (the driver imports them);
2. plugins' converters, from their `ember_onnx_converters` hook, asked on every lookup
   (a plugin loaded late still counts);
3. converters added in-process with `register_converter`.

Import (`ember.onnx.load`, not written yet) goes the other way, through converters keyed
by (domain, op type, since-version); its table belongs here too, beside the export one,
so that both directions keep their registries in one module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ember.exporters.onnx_context import Converter, mark_dynamic

__all__ = ["converter", "register_converter", "unregister_converter", "converters"]

# -- export: ember op name -> converter ----------------------------------------------------

_EXPORT_BUILTIN: dict[str, Converter] = {}
_EXPORT_USER: dict[str, Converter] = {}


def _enter(table: dict[str, Converter], ops: Iterable[str], fn: Converter,
           dynamic: bool) -> None:
    if dynamic:
        mark_dynamic(fn)
    for op in ops:
        table[op] = fn


def converter(*names: str, dynamic: bool = False) -> Callable[[Converter], Converter]:
    """Register a built-in converter for the ops `names` (decorator).

    `dynamic=True` says the converter handles `SymDim`s in its node's arguments (sizes
    that follow a dynamic axis); other converters refuse such nodes with a clear error.
    """
    def wrap(fn: Converter) -> Converter:
        _enter(_EXPORT_BUILTIN, names, fn, dynamic)
        return fn
    return wrap


def register_converter(op: str, fn: Converter, *, dynamic: bool = False) -> None:
    """Add (or override) the ONNX converter of `op` (a primitive, composite or module
    class name) for this process. `fn(ctx, node)` emits ONNX nodes with `ctx.op(...)` and
    returns the ONNX names of the node's outputs (or `NotImplemented` to decline)."""
    _enter(_EXPORT_USER, (op,), fn, dynamic)


def unregister_converter(op: str) -> None:
    """Remove a converter added with `register_converter`."""
    _EXPORT_USER.pop(op, None)


def converters() -> dict[str, Converter]:
    """Every converter in force: built-in, then plugins' (`ember_onnx_converters`), then
    those added with `register_converter`; a later source overrides an earlier one."""
    table = dict(_EXPORT_BUILTIN)
    from ember.core.plugins import registry

    table.update(registry.onnx_converters())
    table.update(_EXPORT_USER)
    return table
