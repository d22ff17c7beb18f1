"""PyTorch's error messages with ember's context beside them, and its warn-once warnings.

Programs print caught errors (`except RuntimeError as e: print(e)`), so an error's
message is PyTorch's word for word; what ember knows besides (the op, the full shapes)
goes into a PEP 678 note: tracebacks print it under the message, `str(err)` leaves it
out, and `pytest.raises(match=...)` searches both.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Iterable
from typing import TypeVar

E = TypeVar("E", bound=BaseException)


def with_context(err: E, context: str) -> E:
    """`err` with `context` added as a note; returns `err` to raise."""
    err.add_note(context)
    return err


def invalid_combination(op: str, got: str, signatures: Iterable[str],
                        notes: str = "") -> TypeError:
    """PyTorch's argument parser refusing a call that matches none of `op`'s overloads:
    `got` the arguments' types as it lists them (`Tensor, dim=float`), `signatures` each
    overload's parenthesised parameters, `notes` what it adds below them."""
    listed = "".join(f" * {signature}\n" for signature in signatures)
    return TypeError(f"{op}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{listed}{notes}")


_LEGACY_NEW_OVERLOADS = ("(torch.Storage storage)", "(Tensor other)",
                         "(tuple of ints size, *, torch.device device = None)",
                         "(object data, *, torch.device device = None)")


def legacy_new_keywords(args: tuple, kwargs: dict) -> TypeError:
    """PyTorch's refusal of a legacy constructor (`torch.Tensor(...)`,
    `torch.FloatTensor(...)`, `x.new(...)`) given a keyword other than `device`."""
    def name(a: object) -> str:  # (the parser's word for a tensor)
        return "Tensor" if hasattr(a, "_requires_grad") else type_name(a)

    keywords = [f"{k}={name(kwargs[k])}" for k in kwargs]
    got = ", ".join([name(a) for a in args] + keywords)
    first = ("(*, torch.device device = None)\n      didn't match because some of the keywords "
             f"were incorrect: {', '.join(k for k in kwargs if k != 'device')}")
    return invalid_combination("new", got, (first,) + _LEGACY_NEW_OVERLOADS)


class ArgumentTypeError(TypeError):
    """PyTorch's argument parser refusing one argument's type: `sum(): argument 'keepdim'
    (position 3) must be bool, not int`. Raised with the position the method form counts
    (`x.sum(0, 1)`: `self` not counted); the op's entry (ember.core.declare) renumbers it
    as called: one more for the function form (the tensor is position 1), none for an
    argument given by keyword."""

    def __init__(self, op: str, name: str, position: int, expected: str, value: object,
                 function_form: Callable[[tuple, dict], TypeError | None] | None = None,
                 method_form: Callable[[tuple, dict], TypeError | None] | None = None):
        self.op, self.name, self.position, self.expected = op, name, position, expected
        self.got = type_name(value)
        # the function form's (the method form's) own error, where its overloads make
        # PyTorch's parser list them (`torch.mean(x, 0, 1)`: "invalid combination"),
        # given (args, kwargs); None: the plain message
        self.function_form, self.method_form = function_form, method_form
        super().__init__(self.text(position))

    def text(self, position: int | None) -> str:
        """The message with `position` (None: given by keyword, no position)."""
        where = "" if position is None else f" (position {position})"
        return f"{self.op}(): argument '{self.name}'{where} must be {self.expected}, " \
            f"not {self.got}"

    def as_called(self, op: str, entry: str, args: tuple, kwargs: dict,
                  function: bool) -> TypeError:
        """The TypeError for a call of op `op` entered as `entry` (`add_`, `subtract`)
        given `args` and `kwargs`, of the function form or not. Raised by another op, one
        that `op` called (`norm` calling `linalg_vector_norm`), it is numbered as that
        op's function form called positionally."""
        if op != self.op:
            return TypeError(self.text(self.position + 1))
        self.op = entry
        form = self.function_form if function else self.method_form
        own = form(args, kwargs) if form is not None else None
        if own is not None:
            return own
        if self.name in kwargs:
            return TypeError(self.text(None))
        return TypeError(self.text(self.position + 1 if function else self.position))


def as_overload_check(checked: Callable, fn: Callable) -> Callable:
    """`checked`, a wrapper that refuses the calls PyTorch's overloads of `fn` refuse
    (with :func:`invalid_combination`) and calls `fn` otherwise, given `fn`'s name,
    documentation and signature but no `__wrapped__`: `checked` is what the op binds
    (inspect.unwrap stops there)."""
    functools.update_wrapper(checked, fn, updated=())
    del checked.__wrapped__
    checked.__signature__ = inspect.signature(fn)
    return checked


_warned: set[str] = set()  # the messages warn_once has given
_warn_always = False  # torch.set_warn_always: every warn-once warning warns every time


def set_warn_always(b: bool, /) -> None:
    r"""When this flag is False (default) then some PyTorch warnings may only
    appear once per process. This helps avoid excessive warning information.
    Setting it to True causes these warnings to always appear, which may be
    helpful when debugging.

    Args:
        b (:class:`bool`): If True, force warnings to always be emitted
                           If False, set to the default behaviour
    """
    global _warn_always
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always = b


def is_warn_always_enabled() -> bool:
    r"""Returns True if the global warn_always flag is turned on. Refer to
    :func:`torch.set_warn_always` documentation for more details."""
    return _warn_always


def warn_once(message: str, category: type[Warning] = UserWarning, stacklevel: int = 2) -> None:
    """`warnings.warn(message, category, stacklevel)` the first time this process gives
    `message` (PyTorch's TORCH_WARN_ONCE); `stacklevel` counts from the caller, as it
    would for its own `warnings.warn`."""
    if message not in _warned or _warn_always:
        _warned.add(message)
        warnings.warn(message, category, stacklevel=stacklevel + 1)


def type_name(obj: object) -> str:
    """`type(obj)`'s name as PyTorch's argument errors print it: bare for builtins
    (`str`), qualified otherwise (`numpy.dtypes.Float32DType`)."""
    cls = type(obj)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"
