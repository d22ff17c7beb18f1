"""Grad modes: whether ops record the autograd graph (`no_grad`, `enable_grad`,
`set_grad_enabled`, `inference_mode`), per thread, as in PyTorch."""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any


class _GradState(threading.local):
    enabled = True
    inference = False
    layout_enforced = True  # the gradient layout contract (enforce_grad_layout_policy)


state = _GradState()
"""Read `state.enabled` on hot paths: one attribute lookup, no call."""

inference_entered = 0
"""How many `inference_mode(True)` blocks are open, in all threads: where none is, no
tensor can be made an inference tensor, so the hot paths read this module attribute
(about 12 ns) before the thread-local `state.inference` (about 57 ns)."""
_inference_lock = threading.Lock()


class InferenceVersion(list):
    """The version counter of an inference tensor (one made inside `inference_mode`):
    its type is the mark, shared with the views of the tensor as the counter is, so a
    view of an inference tensor is one and a view of a normal tensor is not, as in
    PyTorch."""

    __slots__ = ()


def new_version() -> list:
    """A new tensor's version counter: an InferenceVersion inside `inference_mode`."""
    return InferenceVersion((0,)) if inference_entered and state.inference else [0]


def check_writable(x: Any) -> None:
    """PyTorch refuses an in-place write to an inference tensor outside inference mode."""
    if type(x._vc) is InferenceVersion and not state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed.You can make a clone to get a normal tensor before doing "
                           "inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                           "more details.")


def is_grad_enabled() -> bool:
    """Whether ops record the autograd graph on this thread."""
    return state.enabled


def is_inference_mode_enabled() -> bool:
    """Whether `inference_mode` is active on this thread."""
    return state.inference


def _wrap_generator(make_mode: Callable[[], Any], func: Callable) -> Callable:
    """A generator function whose body runs in the mode at every resumption (PyTorch's
    `_wrap_generator`: `@no_grad()` on a generator holds while it yields, not only while
    it is created)."""
    @functools.wraps(func)
    def generator_context(*args: Any, **kwargs: Any) -> Any:
        gen = func(*args, **kwargs)
        try:
            with make_mode():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_mode():
                        gen.close()
                    raise
                except BaseException as exc:  # thrown into the generator: passed on
                    with make_mode():
                        response = gen.throw(exc)
                else:
                    with make_mode():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value
    return generator_context


class _GradMode(contextlib.ContextDecorator):
    _target: bool = True

    def clone(self) -> _GradMode:
        """A fresh manager of the same mode: each decorated call enters its own (so a
        recursive decorated function restores the right mode), as PyTorch's."""
        return type(self)()

    def _recreate_cm(self) -> _GradMode:
        return self.clone()

    def __call__(self, func: Callable) -> Callable:
        if inspect.isgeneratorfunction(func):
            return _wrap_generator(self.clone, func)
        return super().__call__(func)

    def __enter__(self) -> None:  # as PyTorch's, `with no_grad() as x` binds None
        self._prev = (state.enabled, state.inference)
        state.enabled = self._target

    def __exit__(self, *exc):
        state.enabled, state.inference = self._prev
        return False


class _NoParamGradMode(_GradMode):
    """A mode that also decorates without parentheses (`@ember.no_grad`), as PyTorch's."""

    def __new__(cls, orig_func: Callable | None = None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamGradMode):  # noqa: N801 - PyTorch's spelling
    """Context manager and decorator (`@no_grad()` or `@no_grad`) that disables gradient
    recording."""

    _target = False


class enable_grad(_NoParamGradMode):  # noqa: N801
    """Context manager and decorator (`@enable_grad()` or `@enable_grad`) that enables
    gradient recording."""

    _target = True


class set_grad_enabled(_GradMode):  # noqa: N801
    """Enable or disable gradient recording, as a function, context manager or decorator."""

    def __init__(self, mode: bool) -> None:
        self._target = bool(mode)
        self._prev = (state.enabled, state.inference)
        state.enabled = self._target  # works as a plain function call too

    def clone(self) -> set_grad_enabled:
        return type(self)(self._target)

    def __call__(self, func: Callable) -> Callable:
        # as a decorator, making it set the mode for nothing: restored until each call
        state.enabled, state.inference = self._prev
        return super().__call__(func)

    def __enter__(self) -> None:
        pass

    def __repr__(self) -> str:  # PyTorch's: torch.typename(self) and the mode
        return f"{type(self).__module__}.{type(self).__qualname__}(mode={self._target})"


class inference_mode(_GradMode):  # noqa: N801
    """Like `no_grad`, and tensors made inside are marked as inference tensors.
    `inference_mode(False)` turns it off again inside, recording gradients (as PyTorch's
    guard, which sets grad mode to `not mode`); `@inference_mode` decorates bare too."""

    def __new__(cls, mode: bool | Callable | None = True):
        if mode is None or isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool | None = True) -> None:
        self._mode = bool(mode)

    def clone(self) -> inference_mode:
        return type(self)(self._mode)

    def __enter__(self) -> None:
        global inference_entered
        self._prev = (state.enabled, state.inference)
        if self._mode:
            with _inference_lock:
                inference_entered += 1
        state.enabled, state.inference = not self._mode, self._mode

    def __exit__(self, *exc: Any) -> bool:
        global inference_entered
        if self._mode:
            with _inference_lock:
                inference_entered -= 1
        return super().__exit__(*exc)


class _SetWhenMade:
    """A context manager, function and decorator whose setting takes effect when the
    object is made, as PyTorch's `set_multithreading_enabled` and the grad layout policy:
    leaving the block (or a decorated call) restores the previous one. Subclasses say
    where the setting lives (`_read`, `_write`), and whether decorating restores it at
    once (`_restored_when_decorating`: the setting then holds only while the function
    runs)."""

    _restored_when_decorating = False

    def __init__(self, mode: bool) -> None:
        self.prev = self._read()
        self._write(bool(mode))
        self.mode = mode

    @staticmethod
    def _read() -> bool:
        raise NotImplementedError

    @staticmethod
    def _write(mode: bool) -> None:
        raise NotImplementedError

    def __call__(self, orig_func: Callable) -> Callable:
        if self._restored_when_decorating:
            self._write(self.prev)

        @functools.wraps(orig_func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return orig_func(*args, **kwargs)
        return wrapper

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        self._write(self.prev)

    def clone(self) -> _SetWhenMade:
        """A copy of this object (made anew: it sets the mode again)."""
        return self.__class__(self.mode)


class enforce_grad_layout_policy(_SetWhenMade):  # noqa: N801 - PyTorch's spelling
    """Context manager and decorator: whether autograd enforces the gradient layout
    contract on this thread (a leaf's first `.grad` laid out with the leaf's strides,
    the default) or, with `enable=False`, keeps a gradient it can take over (one no other
    tensor holds) in the layout it has. As PyTorch's, the setting takes effect when the
    object is made, and leaving the block (or a decorated call) restores the previous
    one."""

    _restored_when_decorating = True

    def __init__(self, enable: bool = True) -> None:
        super().__init__(enable)

    @staticmethod
    def _read() -> bool:
        return state.layout_enforced

    @staticmethod
    def _write(mode: bool) -> None:
        state.layout_enforced = mode


_multithreading = [True]  # (one setting for the process, as PyTorch's engine has)


def is_multithreading_enabled() -> bool:
    """Whether backward may run its devices' work on threads of their own (a setting ember
    keeps for PyTorch's API: its engine runs one device's nodes in one thread)."""
    return _multithreading[0]


class set_multithreading_enabled(_SetWhenMade):  # noqa: N801 - PyTorch's spelling
    """Context manager (or function, or decorator) setting `is_multithreading_enabled`: it
    takes effect when the object is made, and leaving the block restores the previous
    setting, as PyTorch's (decorating leaves it set, as PyTorch's does too)."""

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)

    @staticmethod
    def _read() -> bool:
        return _multithreading[0]

    @staticmethod
    def _write(mode: bool) -> None:
        _multithreading[0] = mode


# PyTorch's grad modes live in torch.autograd.grad_mode, and their reprs name it
for _mode in (no_grad, enable_grad, set_grad_enabled, inference_mode, enforce_grad_layout_policy,
              set_multithreading_enabled):
    _mode.__module__ = "ember.autograd.grad_mode"
