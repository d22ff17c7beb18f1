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
           "linearize", "stack_module_state", "vjp", "vmap"]


def linearize(func, *primals):  # noqa: ANN001, ANN201 - torch.func's signature
    """`(func(*primals), jvp_fn)`: `jvp_fn(*tangents)` is the Jacobian-vector product of
    `func` at `primals` (forward-mode AD, as `jvp(func, primals, tangents)[1]`)."""
    output = func(*primals)

    def jvp_fn(*tangents):  # noqa: ANN002, ANN202
        if len(tangents) != len(primals):
            raise RuntimeError(f"linearize: expected {len(primals)} tangents, got "
                               f"{len(tangents)}")
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn
