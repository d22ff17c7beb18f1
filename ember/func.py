"""`ember.func` (PyTorch's torch.func): `functional_call`, `grad`, `grad_and_value`,
`vjp`, `jvp`, `jacrev`, `jacfwd`, `hessian` and `vmap`, enough for the per-sample-gradient,
MAML and Jacobian/Hessian recipes.

`grad` is reverse-mode autograd on fresh leaves: the differentiated arguments (tensors, or
dicts/lists/tuples of them) are detached copies that require grad (or, where an argument
already requires grad, a view of it, so an outer `grad` or `backward` differentiates
through). `vmap` maps by looping: it calls the function once per index of the mapped
dimension and stacks the results, which gives the batched function's values for every
function without side effects (PyTorch's vmap batches the ops instead; randomness inside
the function is drawn per call here, where PyTorch's default refuses it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ember
from ember.autograd import functional as _functional
from ember.core.tensor import Tensor
from ember.nn.utils.stateless import functional_call

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "vjp", "vmap"]


# -- pytrees: tensors in nested tuples, lists and dicts ---------------------------------------


def _flatten(tree: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """The leaves of `tree` in order, and a function rebuilding it from new leaves."""
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(t) for t in tree]
        counts = [len(leaves) for leaves, _ in parts]

        def unflatten_seq(leaves: list[Any]) -> Any:
            out, i = [], 0
            for (_, rebuild), n in zip(parts, counts):
                out.append(rebuild(leaves[i:i + n]))
                i += n
            return type(tree)(out) if isinstance(tree, list) or not hasattr(tree, "_fields") \
                else type(tree)(*out)
        return [x for leaves, _ in parts for x in leaves], unflatten_seq
    if isinstance(tree, dict):
        keys = list(tree)
        seq_leaves, rebuild_seq = _flatten([tree[k] for k in keys])
        return seq_leaves, lambda leaves: type(tree)(zip(keys, rebuild_seq(leaves)))
    return [tree], lambda leaves: leaves[0]


# -- grad ------------------------------------------------------------------------------------


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable:
    """Returns a function to compute a tuple of the gradient and primal, or forward,
    computation.

    Args:
        func (Callable): a function of one or more arguments returning a single-element
            tensor (with ``has_aux``: a tuple of it and an auxiliary object).
        argnums (int or Tuple[int]): the arguments to differentiate with respect to.
            Default: 0.
        has_aux (bool): ``func`` returns ``(output, aux)``. Default: False.

    Returns:
        A function returning ``(gradients, output)`` (``(gradients, (output, aux))``
        with ``has_aux``); the gradients have the structure of the differentiated
        arguments (a tuple of them when ``argnums`` is a tuple).
    """
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = argnums if isinstance(argnums, tuple) else (argnums,)
        for n in nums:
            if not isinstance(n, int) or not -len(args) <= n < len(args):
                raise RuntimeError(f"Got argnums={argnums} but only {len(args)} positional "
                                   "inputs")
        args = list(args)
        leaves_by_arg, rebuilds = [], []
        with ember.enable_grad():
            for n in nums:
                leaves, rebuild = _flatten(args[n])
                fresh = []
                for x in leaves:
                    if not isinstance(x, Tensor):
                        raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
                    # an input an outer transform differentiates stays connected to it
                    fresh.append(x.view_as(x) if x.requires_grad else
                                 x.detach().requires_grad_(True))
                leaves_by_arg.append(fresh)
                rebuilds.append(rebuild)
                args[n] = rebuild(fresh)
            result = func(*args, **kwargs)
            output, aux = result if has_aux else (result, None)
            if has_aux and not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError("grad_and_value(f)(*args): output of function f should be "
                                   "a tuple: (output, aux) if has_aux is True")
            if not isinstance(output, Tensor):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.dim()} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            flat = [x for leaves in leaves_by_arg for x in leaves]
            outer = any(x.requires_grad and not x.is_leaf for x in flat)
            grads = ember.autograd.grad(output, flat, create_graph=outer, allow_unused=True) \
                if output.requires_grad else [None] * len(flat)
        grads = [ember.zeros_like(x) if g is None else g for x, g in zip(flat, grads)]
        per_arg, i = [], 0
        for leaves, rebuild in zip(leaves_by_arg, rebuilds):
            per_arg.append(rebuild(grads[i:i + len(leaves)]))
            i += len(leaves)
        gradients = tuple(per_arg) if isinstance(argnums, tuple) else per_arg[0]
        value = output if outer else output.detach()
        if not has_aux:
            return gradients, value
        aux_leaves, rebuild_aux = _flatten(aux)
        for x in aux_leaves:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
        aux = rebuild_aux([x if outer else x.detach() for x in aux_leaves])
        return gradients, (value, aux)
    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``grad`` operator helps computing gradients of ``func`` with respect to the
    input(s) specified by ``argnums``. It can be composed (``grad(grad(f))``) and used
    inside :func:`vmap` for per-sample gradients.

    Args:
        func (Callable): a function returning a single-element tensor (with ``has_aux``:
            a tuple of it and an auxiliary object).
        argnums (int or Tuple[int]): the arguments to differentiate with respect to.
        has_aux (bool): ``func`` returns ``(output, aux)``; then ``(gradients, aux)`` is
            returned.

    Returns:
        Function to compute gradients with respect to its inputs.
    """
    value_fn = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if has_aux:
            gradients, (_, aux) = value_fn(*args, **kwargs)
            return gradients, aux
        return value_fn(*args, **kwargs)[0]
    return wrapper


# -- vmap ------------------------------------------------------------------------------------


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """vmap is the vectorizing map; ``vmap(func)`` returns a new function that maps
    ``func`` over some dimension of the inputs.

    Args:
        func (function): a function of tensors (or nested tuples/lists/dicts of them).
        in_dims (int or nested structure): the mapped dimension of every input (None: not
            mapped), one entry per positional argument, or one int for all. Default: 0.
        out_dims (int or Tuple[int]): where the mapped dimension appears in the outputs.
            Default: 0.
        randomness (str): "error", "different" or "same" (ember draws per call).
        chunk_size (int): accepted for compatibility (ember computes one index at a time).

    Returns:
        Returns a new "batched" function.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if isinstance(in_dims, (tuple, list)) and len(in_dims) != len(args):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                             f"compatible with the structure of `inputs`. in_dims has structure "
                             f"{len(in_dims)} but inputs has structure {len(args)}.")
        mapped: list[tuple[list[Any], Callable, list[Any]]] = []
        sizes = []
        for arg, dim in zip(args, dims):
            leaves, rebuild = _flatten(arg)
            leaf_dims = _flatten(dim)[0] if isinstance(dim, (tuple, list, dict)) else \
                [dim] * len(leaves)
            for x, d in zip(leaves, leaf_dims):
                if d is None:
                    continue
                if not isinstance(x, Tensor):
                    raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                                     f"in_dim={d} for an input but the input is of type "
                                     f"{type(x)}. We cannot vmap over non-Tensor arguments, "
                                     "please use None as the respective in_dim")
                if not -x.dim() <= d < x.dim():
                    raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                                     f"in_dim={d} for some input, but that input is a Tensor "
                                     f"of dimensionality {x.dim()} so expected in_dim to "
                                     f"satisfy -{x.dim()} <= in_dim < {x.dim()}.")
                sizes.append(x.shape[d])
            mapped.append((leaves, rebuild, leaf_dims))
        if not sizes:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one "
                             "input must be a Tensor mapped over a dimension (in_dim not None)")
        if len(set(sizes)) > 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        results = []
        for i in range(sizes[0]):
            call_args = [rebuild([x if d is None else x.select(d, i)
                                  for x, d in zip(leaves, leaf_dims)])
                         for leaves, rebuild, leaf_dims in mapped]
            results.append(func(*call_args, **kwargs))
        out_leaves, rebuild_out = _flatten(results[0])
        per_index = [_flatten(r)[0] for r in results]
        odims = _flatten(out_dims)[0] if isinstance(out_dims, (tuple, list, dict)) else \
            [out_dims] * len(out_leaves)
        if len(odims) != len(out_leaves):
            raise ValueError(f"vmap({name}, ...): out_dims is not compatible with the structure "
                             f"of `outputs`. out_dims has structure {len(odims)} but outputs "
                             f"has structure {len(out_leaves)}.")
        stacked = []
        for k, d in enumerate(odims):
            column = [leaves[k] for leaves in per_index]
            if not isinstance(column[0], Tensor):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got "
                                 f"type {type(column[0])}. Did you mean to set out_dims= to "
                                 "None for output?")
            stacked.append(column[0] if d is None else ember.stack(column, dim=d))
        return rebuild_out(stacked)
    return wrapped


# -- vjp, jvp, Jacobians ---------------------------------------------------------------------


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """Standing for the vector-Jacobian product, returns a tuple containing the results
    of ``func`` applied to ``primals`` and a function that, when given ``cotangents``,
    computes the reverse-mode Jacobian of ``func`` with respect to ``primals`` times
    ``cotangents`` (a tuple, one gradient per primal)."""
    with ember.enable_grad():
        leaves = tuple(p.view_as(p) if p.requires_grad else p.detach().requires_grad_(True)
                       for p in primals)
        result = func(*leaves)
    output, aux = result if has_aux else (result, None)
    outer = any(p.requires_grad for p in primals)

    def vjp_fn(cotangents: Any) -> tuple:
        outs = output if isinstance(output, tuple) else (output,)
        cots = cotangents if isinstance(cotangents, tuple) else (cotangents,)
        with ember.enable_grad():
            grads = _functional._grads(outs, leaves, cots, outer)
        return tuple(g if outer else g.detach() for g in grads)

    detached = output if outer else _functional._fix(output, False)
    return (detached, vjp_fn, aux) if has_aux else (detached, vjp_fn)


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """Standing for the Jacobian-vector product, returns a tuple containing the output
    of ``func(*primals)`` and the "Jacobian of ``func`` evaluated at ``primals``" times
    ``tangents``."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if has_aux:
        raise NotImplementedError("jvp(has_aux=True) is not supported by ember")
    outer = any(p.requires_grad for p in primals)
    return _functional.jvp(func, primals, tangents, create_graph=outer)


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable:
    """Computes the Jacobian of ``func`` with respect to the arg(s) at index ``argnum``
    using reverse mode autodiff (one row per output element). Composes with itself and
    ``jacfwd`` (``hessian``)."""
    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        nums = argnums if isinstance(argnums, tuple) else (argnums,)
        aux: list[Any] = []

        def selected(*sel: Tensor) -> Any:
            full = list(args)
            for n, x in zip(nums, sel):
                full[n] = x
            out = func(*full)
            if has_aux:
                out, extra = out
                aux.append(extra)
            return out

        chosen = tuple(args[n] for n in nums)
        outer = any(x.requires_grad for x in chosen)
        jac = _functional.jacobian(selected, chosen, create_graph=outer)
        if isinstance(jac[0], tuple):  # several outputs: per output, per input
            jac = tuple(j if isinstance(argnums, tuple) else j[0] for j in jac)
        elif not isinstance(argnums, tuple):
            jac = jac[0]
        if has_aux:
            extra = aux[0]
            return jac, (extra if outer else _functional._fix(extra, False))
        return jac
    return wrapper


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """Computes the Jacobian of ``func`` with respect to the arg(s) at index ``argnum``
    (ember computes it in reverse mode: the same values as PyTorch's forward mode)."""
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """Computes the Hessian of ``func`` with respect to the arg(s) at index ``argnum``
    (``jacfwd(jacrev(func, argnums), argnums)``)."""
    return jacfwd(jacrev(func, argnums), argnums)
