"""`ember.func` (PyTorch's torch.func): the function transforms of ember.transforms
(`grad`, `grad_and_value`, `vjp`, `jvp`, `jacrev`, `jacfwd`, `hessian`, `vmap`,
`stack_module_state`) and `functional_call` (ember.nn.utils.stateless), so programs that
write `from torch.func import functional_call, grad, vmap` run unchanged."""

from ember.nn.utils.stateless import functional_call
from ember.transforms import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    stack_module_state,
    vjp,
    vmap,
)

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "stack_module_state", "vjp", "vmap"]
