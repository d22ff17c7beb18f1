"""PyTorch's symbolic-size utilities (`torch.sym_int`, `torch.sym_max` ... and the
`torch.SymInt`/`SymFloat`/`SymBool` classes).

PyTorch traces shapes as symbols (a `SymInt` wraps a node of its symbolic shape
engine) and model code calls these functions where a size may be one. ember has no
symbolic shapes: its sizes are always plain numbers, so the functions run their
concrete branch, PyTorch's `torch/__init__.py` word for word (types, promotion and
errors included), and the classes exist for `isinstance` checks, which no ember value
passes.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ember.core.dtype import printed_in_api
from ember.core.torch_function import overridable

__all__ = ["SymBool", "SymFloat", "SymInt", "sym_float", "sym_int", "sym_ite", "sym_max",
           "sym_min", "sym_not", "sym_sqrt", "sym_sum"]


def _symbolic_class(name: str, kind: str) -> type:
    """One of PyTorch's symbolic number classes: a value of its shape engine wrapping a
    `node` (a plain class, as PyTorch's: no base but object)."""
    def __init__(self: Any, node: Any) -> None:
        self.node = node

    doc = (f"Like {kind} (including magic methods), but redirects all operations on the\n"
           "    wrapped node. This is used in particular to symbolically record operations\n"
           "    in the symbolic shape workflow.")
    return printed_in_api()(type(name, (), {"__init__": __init__, "__doc__": doc,
                                            "__qualname__": name}))


SymInt = _symbolic_class("SymInt", "an int")
SymFloat = _symbolic_class("SymFloat", "a float")
SymBool = _symbolic_class("SymBool", "a bool")


# the numbers sym_max and sym_min take (PyTorch's `__all_and_float_types`, NumPy's first)
_ALL_TYPES = (np.integer, np.floating, builtins.int, builtins.float)
_FLOAT_TYPES = (np.floating, builtins.float)


@overridable
def sym_not(a: Any) -> Any:
    r"""SymInt-aware utility for logical negation.

    Args:
        a (SymBool or bool): Object to negate
    """
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


@overridable
def sym_float(a: Any) -> Any:
    r"""SymInt-aware utility for float casting.

    Args:
        a (SymInt, SymFloat, or object): Object to cast
    """
    if isinstance(a, SymFloat):
        return a
    if hasattr(a, "__sym_float__"):
        return a.__sym_float__()
    return builtins.float(a)


@overridable
def sym_int(a: Any) -> Any:
    r"""SymInt-aware utility for int casting.

    Args:
        a (SymInt, SymFloat, or object): Object to cast
    """
    if isinstance(a, SymInt):
        return a
    if isinstance(a, SymFloat):
        return math.trunc(a)
    return builtins.int(a)


def _check_number(value: Any) -> None:
    if not isinstance(value, _ALL_TYPES):
        raise AssertionError(f"expected {_ALL_TYPES}, got {type(value)}")


def _extreme(pick: Any, a: Any, b: Any) -> Any:
    """`pick(a, b)` of two numbers, a float when either is one."""
    _check_number(a)
    _check_number(b)
    if isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES):
        return builtins.float(pick(a, b))
    return pick(a, b)


@overridable
def sym_max(a: Any, b: Any) -> Any:
    """
    SymInt-aware utility for max which avoids branching on a < b.
    Unlike builtins.max(), this only works for int/float, and it always
    promotes to float if any argument is float (unlike builtins.max, which
    will faithfully preserve the type of the input argument).
    """
    if isinstance(a, (SymInt, SymFloat)):
        return a.__sym_max__(b)
    if isinstance(b, (SymInt, SymFloat)):
        return b.__sym_max__(a)
    return _extreme(builtins.max, a, b)


@overridable
def sym_min(a: Any, b: Any) -> Any:
    """SymInt-aware utility for min()."""
    if isinstance(a, (SymInt, SymFloat)):
        return a.__sym_min__(b)
    if isinstance(b, (SymInt, SymFloat)):
        return b.__sym_min__(a)
    return _extreme(builtins.min, a, b)


@overridable
def sym_ite(b: Any, t: Any, f: Any) -> Any:
    """SymInt-aware utility for ternary operator (``t if b else f``.)"""
    if not isinstance(b, (SymBool, builtins.bool)):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    if isinstance(b, SymBool):
        return b.__sym_ite__(t, f)
    return t if b else f


def sym_sum(*args: Any) -> Any:
    """
    N-ary add which is faster to compute for long lists than iterated binary
    addition.  Only does something special for integers.

    Accepts both ``sym_sum([a, b, c])`` and ``sym_sum(a, b, c)``.
    """
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


@overridable
def sym_sqrt(a: Any) -> Any:
    """SymInt-aware `math.sqrt`."""
    if hasattr(a, "__sym_sqrt__"):
        return a.__sym_sqrt__()
    return math.sqrt(a)
