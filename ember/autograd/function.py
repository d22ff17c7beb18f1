"""PyTorch's module path of custom autograd functions
(`from torch.autograd.function import Function, once_differentiable`)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from ember.core.dtype import place_in
from ember.core.function import Function, FunctionCtx  # noqa: F401
from ember.core.grad_mode import no_grad


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a custom Function's `backward` that is not itself differentiable: it runs
    under `no_grad`, so its results carry no graph (a second differentiation through it
    sees constants, where PyTorch raises)."""
    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            return fn(ctx, *args)
    return wrapper


place_in(sys.modules[__name__], Function)  # (PyTorch's module for it)
