"""Op-entry hooks: what runs when a declared op is called while a feature watches or
changes op calls — autocast (ember.amp) and the profiler (ember.profiler).

Core does not know those features; it only offers this interface. Every declared op's
public function, method, in-place method and operator checks `active` on entry: while no
hook is installed it is None, and that one global check is all an op pays.

A hook is `hook(op, name, call, args, kwargs)`: `op` is the declaration
(`ember.core.opdef.Op`), `name` what was called (`"add"`, `"add_"`, `"__add__"` runs
`add`), and `call(args, kwargs)` runs the op — through the next hook, if any. A hook may
change the arguments (autocast casts them), time the call (the profiler), or run code
around it. Hooks run outermost first, by their `order` (the profiler's 0 sits outside
autocast's 10, so a profile shows the casts autocast adds).

The autograd engine offers the same for the nodes it runs backward (`backward_active`,
`install_backward`): a hook `hook(node, run)` returns `run()`, possibly timing it (the
profiler names each node's range after it, as PyTorch's `MulBackward0`). Gradient
formulas are ops, so their op events nest inside the node's range.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Hook = Callable[[Any, str, Callable[[tuple, dict], Any], tuple, dict], Any]

active: Callable[[Any, str, Callable[..., Any], tuple, dict], Any] | None = None
"""The installed hooks, composed: `active(op, name, fn, args, kwargs)`; None if none."""

_hooks: list[tuple[int, Hook]] = []

OVERRIDDEN_NOT = object()
"""What an override check returns for a call that it leaves to the op."""

_override_check: Callable[[Any, str, Callable[..., Any], tuple, dict], Any] | None = None


def set_override_check(check: Callable[[Any, str, Callable[..., Any], tuple, dict], Any]
                       | None) -> None:
    """Ask `check(op, name, fn, args, kwargs)` first at every op entry, before the hooks
    (`__torch_function__`, ember.core.torch_function): its result is the call's unless it
    is `OVERRIDDEN_NOT`. `fn` is the function the entry would run (a method's or the
    function's). None removes it."""
    global _override_check
    _override_check = check
    _compose()


def install(hook: Hook, order: int) -> None:
    """Run `hook` at the entry of every declared op (until `remove(hook)`)."""
    _hooks.append((order, hook))
    _hooks.sort(key=lambda h: h[0])
    _compose()


def remove(hook: Hook) -> None:
    """Stop running `hook` (installed with `install`)."""
    for i, (_, h) in enumerate(_hooks):
        if h is hook:
            del _hooks[i]
            break
    _compose()


def _compose() -> None:
    global active
    hooks = tuple(h for _, h in _hooks)
    check = _override_check
    if not hooks and check is None:
        active = None
        return

    def run(op: Any, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        if check is not None:
            result = check(op, name, fn, args, kwargs)
            if result is not OVERRIDDEN_NOT:
                return result

        def step(i: int, args: tuple, kwargs: dict) -> Any:
            if i == len(hooks):
                return fn(*args, **kwargs)
            return hooks[i](op, name, lambda a, k: step(i + 1, a, k), args, kwargs)
        return step(0, args, kwargs)
    active = run


BackwardHook = Callable[[Any, Callable[[], Any]], Any]

backward_active: BackwardHook | None = None
"""The installed backward-node hooks, composed: `backward_active(node, run)`; None if none."""

_backward_hooks: list[BackwardHook] = []


def install_backward(hook: BackwardHook) -> None:
    """Run `hook(node, run)` around every node the autograd engine runs (until
    `remove_backward(hook)`); hooks installed earlier run outermost."""
    _backward_hooks.append(hook)
    _compose_backward()


def remove_backward(hook: BackwardHook) -> None:
    """Stop running `hook` (installed with `install_backward`)."""
    for i, h in enumerate(_backward_hooks):
        if h is hook:
            del _backward_hooks[i]
            break
    _compose_backward()


def _compose_backward() -> None:
    global backward_active
    hooks = tuple(_backward_hooks)
    if not hooks:
        backward_active = None
        return

    def run(node: Any, fn: Callable[[], Any]) -> Any:
        def step(i: int) -> Any:
            if i == len(hooks):
                return fn()
            return hooks[i](node, lambda: step(i + 1))
        return step(0)
    backward_active = run
