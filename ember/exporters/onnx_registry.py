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

Import (`ember.onnx.load`) goes the other way: its table maps (domain, op type) to
converters keyed by since-version, `fn(ctx, *inputs)` (see `onnx_import_context.
ImportContext`); the one used for a node is the newest at or below the model's opset of
that domain. Its sources are the same three: `@importer` (in `onnx_import_*` modules),
plugins' (the same `ember_onnx_converters` hook, whose keys are then
`(domain, op_type, since_version)` tuples instead of op names), and `register_importer`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.exporters.onnx_context import Converter, mark_dynamic

__all__ = ["converter", "register_converter", "unregister_converter", "converters",
           "importer", "register_importer", "unregister_importer", "importers",
           "find_importer", "versions_of", "ImportKey"]

ImportKey = tuple[str, str, int]
"""(domain, op type, since-version) of an import converter; domain "" is ONNX's own
(an alias "ai.onnx" is read as "")."""

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

    table.update((k, fn) for k, fn in registry.onnx_converters().items() if isinstance(k, str))
    table.update(_EXPORT_USER)
    return table


# -- import: (domain, op type, since-version) -> converter -----------------------------------

_IMPORT_BUILTIN: dict[ImportKey, Callable[..., Any]] = {}
_IMPORT_USER: dict[ImportKey, Callable[..., Any]] = {}


def _key(domain: str, op_type: str, since_version: int) -> ImportKey:
    if not isinstance(since_version, int) or since_version < 1:
        raise ValueError(f"since_version must be an opset number >= 1, got {since_version!r}")
    return ("" if domain == "ai.onnx" else domain, op_type, since_version)


def importer(*op_types: str, since: int = 1, domain: str = ""
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a built-in import converter for the ONNX ops `op_types` of `domain`, valid
    from opset `since` until a newer one replaces it (decorator)."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        for op_type in op_types:
            _IMPORT_BUILTIN[_key(domain, op_type, since)] = fn
        return fn
    return wrap


def register_importer(op_type: str, fn: Callable[..., Any], *, since_version: int = 1,
                      domain: str = "") -> None:
    """Add (or override) the import converter of the ONNX op `op_type` of `domain` from
    opset `since_version` on, for this process. `fn(ctx, *inputs)` gets the node's
    inputs as ember tensors (None for an omitted optional input) and returns its
    output(s); `ctx.attr(name, default)` reads the node's attributes."""
    _IMPORT_USER[_key(domain, op_type, since_version)] = fn


def unregister_importer(op_type: str, *, since_version: int = 1, domain: str = "") -> None:
    """Remove an import converter added with `register_importer`."""
    _IMPORT_USER.pop(_key(domain, op_type, since_version), None)


def importers() -> dict[ImportKey, Callable[..., Any]]:
    """Every import converter in force, keyed by (domain, op type, since-version):
    built-in, then plugins' (tuple keys of `ember_onnx_converters`), then those added
    with `register_importer`; a later source overrides an earlier one."""
    table = dict(_IMPORT_BUILTIN)
    from ember.core.plugins import registry

    for k, fn in registry.onnx_converters().items():
        if isinstance(k, tuple):
            table[_key(*k)] = fn
    table.update(_IMPORT_USER)
    return table


def find_importer(table: dict[ImportKey, Callable[..., Any]], domain: str, op_type: str,
                  opset: int) -> tuple[int, Callable[..., Any]] | None:
    """The newest converter of (`domain`, `op_type`) at or below `opset`, with its
    since-version, or None."""
    domain = "" if domain == "ai.onnx" else domain
    best = None
    for (d, op, since), fn in table.items():
        if d == domain and op == op_type and since <= opset and (best is None
                                                                 or since > best[0]):
            best = (since, fn)
    return best


def versions_of(table: dict[ImportKey, Callable[..., Any]], domain: str, op_type: str
                ) -> list[int]:
    """The since-versions the table has for (`domain`, `op_type`), oldest first."""
    domain = "" if domain == "ai.onnx" else domain
    return sorted(s for d, op, s in table if d == domain and op == op_type)
