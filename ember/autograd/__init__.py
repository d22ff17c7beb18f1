"""Automatic differentiation: `backward`, `grad`, grad modes, and custom `Function`s."""

from ember.core.autograd import (  # noqa: F401
    Function,
    FunctionCtx,
    Node,
    backward,
    enable_grad,
    grad,
    inference_mode,
    no_grad,
    set_grad_enabled,
)
