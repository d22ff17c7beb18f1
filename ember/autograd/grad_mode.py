"""`torch.autograd.grad_mode`: the grad-mode context managers (defined in
ember.core.grad_mode; this is the module they name as theirs, as PyTorch's do)."""

from ember.core.grad_mode import (
    enable_grad,
    enforce_grad_layout_policy,
    inference_mode,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "enforce_grad_layout_policy", "set_multithreading_enabled"]
