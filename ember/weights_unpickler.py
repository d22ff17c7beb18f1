"""The restricted unpickler behind `ember.load(..., weights_only=True)`.

A pickle can name any importable callable and call it; that is how a checkpoint runs
code. This unpickler resolves every global a pickle names through an allowlist instead
of importing it: containers (`OrderedDict`, `Counter`, `set`), numbers, strings, bytes,
the tensor-rebuild functions of the format being read (supplied by the caller), and the
globals a user allowed with `add_safe_globals` / `safe_globals`, as in PyTorch. Anything
else raises `pickle.UnpicklingError` naming the global before anything is called.
Python's own unpickler does the rest: `find_class` is the one place where a pickle
reaches a global (GLOBAL, STACK_GLOBAL, INST, OBJ and the copyreg extension codes all
go through it), so restricting it restricts everything a pickle can call.
"""

from __future__ import annotations

import _compat_pickle
import collections
import io
import pickle
import re
from collections.abc import Callable
from typing import Any

# Modules whose globals are refused with their own message, as PyTorch does.
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, the default value of the `weights_only` argument of `torch.load` "
    "changed from `False` to `True`, and `ember.load` follows it. Re-running `ember.load` "
    "with `weights_only` set to `False` will likely succeed, but it can result in arbitrary "
    "code execution. Do it only if you got the file from a trusted source.")
DOCS_MESSAGE = ("\n\nCheck the documentation of ember.load to learn more about types "
                "accepted by default with weights_only.")

_user_globals: dict[str, Any] = {}


def _name_of(entry: Any) -> tuple[str, Any]:
    if isinstance(entry, tuple):  # (object, "module.qualname"), as PyTorch accepts
        obj, name = entry
        return name, obj
    module = getattr(entry, "__module__", None)
    qualname = getattr(entry, "__qualname__", None) or getattr(entry, "__name__", None)
    if module is None or qualname is None:
        raise TypeError(f"add_safe_globals: cannot name {entry!r}; pass "
                        "(obj, 'module.name') instead")
    return f"{module}.{qualname}", entry


def add_safe_globals(safe_globals: list[Callable | tuple[Callable, str]]) -> None:
    """Marks the given globals (classes, functions, or `(obj, "module.name")` pairs) as
    safe for `ember.load(..., weights_only=True)`: a checkpoint may then name and call
    them. Allow only what you trust: an allowed class's `__setstate__` runs on load."""
    for entry in safe_globals:
        name, obj = _name_of(entry)
        _user_globals[name] = obj


def get_safe_globals() -> list[Callable | tuple[Callable, str]]:
    """The globals allowed by `add_safe_globals` (and active `safe_globals` blocks)."""
    return list(_user_globals.values())


def clear_safe_globals() -> None:
    """Forgets every global allowed by `add_safe_globals`."""
    _user_globals.clear()


class safe_globals:  # noqa: N801 - PyTorch's spelling
    """Context manager that allows the given globals for `weights_only=True` loads inside
    its block only.

    >>> with ember.serialization.safe_globals([MyConfig]):
    ...     ember.load("ck.pt")
    """

    def __init__(self, safe_globals: list[Callable | tuple[Callable, str]]) -> None:
        self.safe_globals = safe_globals
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> None:
        self._saved = dict(_user_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: Any) -> None:
        _user_globals.clear()
        _user_globals.update(self._saved)


# -- the builtins a weights-only pickle may use ----------------------------------------


def _encode(text: str, encoding: str = "latin1") -> bytes:
    # protocol 2 pickles bytes as _codecs.encode(str, "latin1"): allow exactly that
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode is allowed only to rebuild bytes "
                                     "(a str and 'latin1')")
    return text.encode("latin1")


def _bytearray(*args: Any) -> bytearray:
    # bytearray(n) would allocate n bytes on the file's say-so
    if args and not isinstance(args[0], (bytes, bytearray, list)):
        raise pickle.UnpicklingError("builtins.bytearray is allowed only on bytes or a list")
    return bytearray(*args)


BUILTIN_GLOBALS: dict[str, Any] = {
    "collections.OrderedDict": collections.OrderedDict,
    "collections.Counter": collections.Counter,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.complex": complex,
    "builtins.bytearray": _bytearray,
    "_codecs.encode": _encode,
}


class UnsafeGlobalError(pickle.UnpicklingError):
    """A pickle names a global that weights-only loading does not allow."""


def unsupported_global_message(full_path: str) -> str:
    module = full_path.rsplit(".", 1)[0]
    if module in _BLOCKED_MODULES:
        return f"Trying to load unsupported GLOBAL {full_path} whose module {module} is blocked."
    shown = full_path[len("builtins."):] if full_path.startswith("builtins.") else full_path
    return (f"Unsupported global: GLOBAL {shown} was not an allowed global by default. "
            f"Please use `ember.serialization.add_safe_globals([{shown}])` or the "
            f"`ember.serialization.safe_globals([{shown}])` context manager to allowlist "
            "this global if you trust this class/function.")


def weights_only_message(message: str) -> str:
    """PyTorch's wording around a weights-only failure: how to load the file anyway."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default", message):
        return ("Weights only load failed. This file can still be loaded, to do so you have "
                "two options, do those steps only if you trust the source of the checkpoint. "
                f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with "
                "`weights_only=True` please check the recommended steps in the following "
                "error message.\n\tWeightsUnpickler error: " + message + DOCS_MESSAGE)
    return f"Weights only load failed. {UNSAFE_MESSAGE}\n\n\n{message}{DOCS_MESSAGE}"


class WeightsUnpickler(pickle.Unpickler):
    """A `pickle.Unpickler` that resolves globals only through `allowed` (full dotted name
    -> object) plus the built-in and user allowlists, and hands persistent ids to
    `persistent`. `trusted=True` (`weights_only=False`) imports any other global, as
    plain pickle does."""

    def __init__(self, file: io.BufferedIOBase, allowed: dict[str, Any],
                 persistent: Callable[[Any], Any] | None = None,
                 trusted: bool = False) -> None:
        super().__init__(file, encoding="ASCII")
        self._allowed = allowed
        self._persistent = persistent
        self._trusted = trusted

    def find_class(self, module: str, name: str) -> Any:
        # protocol 2 pickles name Python 2 modules (`__builtin__`): map them as pickle does
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full_path = f"{module}.{name}"
        if module not in _BLOCKED_MODULES:
            for table in (self._allowed, BUILTIN_GLOBALS, _user_globals):
                if full_path in table:
                    return table[full_path]
        if self._trusted:
            if module == "torch" or module.startswith("torch."):
                # a class PyTorch defines there (a whole module pickled by PyTorch, or by a
                # program ember ran as torch): ember's at the same path
                try:
                    return super().find_class("ember" + module[len("torch"):], name)
                except (ImportError, AttributeError):
                    pass
            return super().find_class(module, name)
        raise UnsafeGlobalError(unsupported_global_message(full_path))

    def persistent_load(self, pid: Any) -> Any:
        if self._persistent is None:
            raise pickle.UnpicklingError("unsupported persistent id encountered")
        return self._persistent(pid)

