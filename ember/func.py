"""`ember.func` (PyTorch's torch.func): the function transforms of ember.transforms
(`grad`, `grad_and_value`, `vjp`, `jvp`, `jacrev`, `jacfwd`, `hessian`, `vmap`,
`stack_module_state`), `functional_call` (ember.nn.utils.stateless), `rearrange`
(ember.einops) and `functionalize`, so programs that write `from torch.func import
functional_call, grad, vmap` run unchanged."""

import functools

from ember.einops import rearrange
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

__all__ = ["functional_call", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd",
           "jacrev", "jvp", "linearize", "rearrange", "replace_all_batch_norm_modules_",
           "stack_module_state", "vjp", "vmap"]


def replace_all_batch_norm_modules_(root):  # noqa: ANN001, ANN201 - torch.func's
    """Stop every batch norm in `root` (and `root` itself) tracking running statistics,
    in place, so that `vmap` over the model normalises each sample's batch by itself:
    their running_mean, running_var and num_batches_tracked become None. Returns root."""
    from ember.nn.modules.normalization import _BatchNorm

    for module in (root, *root.modules()):
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def functionalize(func, *, remove="mutations"):  # noqa: ANN001, ANN201 - torch.func's
    """`func` with its mutations (and, with `remove="mutations_and_views"`, its views)
    removed from what a tracer records. ember runs programs eagerly and records no
    functional graph, so the function returned computes exactly what `func` does (inputs
    `func` mutates are mutated the same way), which is what PyTorch guarantees of it."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                           f"for remove={remove}. Valid options are:\n     remove='mutations'"
                           ": all inplace and out= operators will be removed from the program"
                           ", and replaced with their out-of-place equivalents.\n     remove="
                           "'mutations_and_views': In addition to the above, all aliasing "
                           "operators {view} will be replaced with their non-aliasing "
                           "counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        return func(*args, **kwargs)
    return wrapped


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
