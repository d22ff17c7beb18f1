"""torch.func's function transforms (`ember.func` exports them): `grad`,
`grad_and_value`, `vjp`, `jvp`, `jacrev`, `jacfwd`, `hessian`, `vmap` and
`stack_module_state`.

ember has no batching rules and no forward-mode AD, so the transforms are built from what
it has, and compose as PyTorch's do:

- `grad`, `vjp` and `jacrev` are reverse-mode autograd on the function's inputs. Inside
  another transform (an input that already requires grad) they keep the graph, so
  `grad(grad(f))`, `jacfwd(jacrev(f))` and `vmap(grad(f))` work; so they do when the
  function reads a tensor that requires grad (a module's parameters), so a loss on
  `vmap(jacrev(net))(x)` trains `net`.
- `jvp` and `jacfwd` use the double-backward trick (the gradient of a vector-Jacobian
  product with respect to the vector is the Jacobian-vector product), as
  ember.autograd.functional does.
- `vmap` maps the function over the batch dimension one sample at a time and stacks
  the results: the values are the batched function's, the speed is a Python loop's. Its
  `randomness` is PyTorch's: "error" (the default) refuses random ops inside, "different"
  lets each sample draw its own numbers, "same" gives every sample the same numbers.

Arguments and results may be nested tuples, lists and dicts of tensors ("pytrees"), as
in PyTorch (`vmap(grad(loss), in_dims=(None, 0, 0))(params_dict, x, y)`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import weakref
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from ember.core import tracing
from ember.core.creation import default_generator, vmap_randomness
from ember.core.engine import grad as _autograd_grad
from ember.core.forward_ad import check_dual
from ember.core.function import func_transforms
from ember.core.grad_mode import enable_grad, is_grad_enabled
from ember.core.graph import AccumulateGrad, edge_of
from ember.core.ops.shape import stack
from ember.core.tensor import Tensor
from ember.utils._pytree import tree_leaves as _leaves
from ember.utils._pytree import tree_map as _map
from ember.utils._pytree import tree_structure, tree_unflatten, treespec_pprint

__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "stack_module_state",
           "vjp", "vmap"]


# -- pytrees (torch.func's: ember.utils._pytree) ---------------------------------------------

def _unflatten(tree: Any, leaves: list) -> Any:
    """A pytree of `tree`'s structure holding `leaves`."""
    return tree_unflatten(leaves, tree_structure(tree))


# -- differentiation -----------------------------------------------------------------------

def _inside_transform(leaves: list) -> bool:
    """Whether an outer transform differentiates through this call (an input already
    requires grad): then results keep their graph."""
    return is_grad_enabled() and any(isinstance(x, Tensor) and x.requires_grad for x in leaves)


def _reaches_outside(outputs: list, inputs: list) -> bool:
    """Whether the graph of `outputs` reaches a tensor that requires grad besides the
    transform's own `inputs`: a parameter the function closes over (`jacrev(net)(x)`).
    PyTorch's transforms keep such a graph (so a PINN's loss on `vmap(jacrev(u))(x)`
    trains `u`'s parameters); walked only until the first such leaf."""
    own = {id(x) for x in inputs}
    todo = [e[0] for e in (edge_of(t) for t in outputs if isinstance(t, Tensor)) if e]
    seen: set[int] = set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if id(node.variable) not in own:
                return True
            continue
        todo.extend(e[0] for e in node.next_edges if e is not None)
    return False


def _watch(x: Any, keep: bool) -> Any:
    """A tensor autograd follows from here: a view of `x` inside another transform (so the
    outer one still reaches `x`), else a detached copy."""
    if not isinstance(x, Tensor):
        return x
    return x.view_as(x) if keep and x.requires_grad else x.detach().requires_grad_(True)


def _argnums(argnums: int | tuple[int, ...], count: int) -> tuple[int, ...]:
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(n)}")
        if not -count <= n < count:
            raise RuntimeError(f"Got argnum={n}, but only {count} positional inputs")
    return tuple(n % count for n in nums)


def _split_aux(output: Any, has_aux: bool, call: str) -> tuple[Any, Any]:
    """(output, aux) of a `has_aux` function (`call` names the transform's call)."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{call}: output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    for leaf in _leaves(output[1]):  # PyTorch unwraps aux as tensors
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    return output


def _only_tensors(output: Any, call: str) -> list:
    """The leaves of a transformed function's output, all tensors as PyTorch requires
    (`call` names the transform's call in the message)."""
    leaves = _leaves(output)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{call}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(leaf)}")
    return leaves


@contextlib.contextmanager
def _transforming(name: str) -> Iterator[None]:
    """While a transform's function runs (custom Functions check it)."""
    func_transforms.append(name)
    try:
        yield
    finally:
        func_transforms.pop()


def _plain(tree: Any, keep: bool) -> Any:
    """`tree` as the caller sees it: detached from the transform's graph unless an outer
    transform differentiates through it."""
    return tree if keep else _map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable:
    """Returns a function computing `(grad, value)` of `func`, whose output must be a
    0-d tensor; with `has_aux` (`func` returns `(output, aux)`), `(grad, (value,
    aux))`."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args))
        outer, keep = is_grad_enabled(), _inside_transform(_leaves(args))
        with enable_grad():
            args = list(args)
            diff = {n: _map(lambda x: _watch(x, keep), args[n]) for n in nums}
            for n, a in diff.items():
                args[n] = a
            with _transforming("grad"):
                output = func(*args, **kwargs)
            output, aux = _split_aux(output, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, Tensor):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   "scalar Tensor, got tensor with "
                                   f"{output.dim()} dims. Maybe you wanted to use the vjp or "
                                   "jacrev APIs instead?")
            inputs = [leaf for n in nums for leaf in _leaves(diff[n])]
            keep = keep or (outer and _reaches_outside([output], inputs))
            grads = _autograd_grad([output], inputs, create_graph=keep, allow_unused=True)
        grads = [g if g is not None else x.new_zeros(x.shape) for g, x in zip(grads, inputs)]
        if not keep:
            grads = [g.detach() for g in grads]
            output = output.detach()
        per_arg = _unflatten([diff[n] for n in nums], grads)
        result = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        return (result, (output, _plain(aux, keep))) if has_aux else (result, output)
    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """Returns a function computing the gradient of `func` (a 0-d tensor output)
    with respect to the arguments `argnums` (the same structure as they are)."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result, value = both(*args, **kwargs)
        return (result, value[1]) if has_aux else result
    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """`(output, vjp_fn)`: `vjp_fn(cotangents)` gives the vector-Jacobian products with
    respect to every primal (a tuple, one per primal)."""
    outer, keep = is_grad_enabled(), _inside_transform(_leaves(primals))
    with enable_grad():
        watched = tuple(_map(lambda x: _watch(x, keep), p) for p in primals)
        with _transforming("vjp"):
            output = func(*watched)
        output, aux = _split_aux(output, has_aux, "vjp(f, primals)")
    _only_tensors(output, "vjp(f, *primals)")
    inputs = _leaves(watched)
    keep = keep or (outer and _reaches_outside(_leaves(output), inputs))

    def vjp_fn(cotangents: Any, retain_graph: bool = True,
               create_graph: bool | None = None) -> tuple:
        if tree_structure(cotangents) != tree_structure(output):
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure "
                f"of outputs to the function. cotangents: "
                f"{treespec_pprint(tree_structure(cotangents))}, primal output: "
                f"{treespec_pprint(tree_structure(output))}")
        outs = _leaves(output)
        with enable_grad():
            grads = _autograd_grad(outs, inputs, _leaves(cotangents),
                                   retain_graph=retain_graph,
                                   create_graph=keep if create_graph is None else create_graph,
                                   allow_unused=True)
        grads = [g if g is not None else x.new_zeros(x.shape) for g, x in zip(grads, inputs)]
        if not keep:
            grads = [g.detach() for g in grads]
        return _unflatten(watched, grads)

    shown = _plain(output, keep)
    return (shown, vjp_fn, _plain(aux, keep)) if has_aux else (shown, vjp_fn)


def jvp(func: Callable, primals: tuple, tangents: tuple, *, has_aux: bool = False) -> tuple:
    """`(output, jvp_out)`: the Jacobian of `func` at `primals` times `tangents`."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if tree_structure(primals) != tree_structure(tangents):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            "structure. For example, if primals is a tuple of 3 tensors, tangents also must "
            f"be. Got primals with structure {tree_structure(primals)} and tangents with "
            f"structure {tree_structure(tangents)}")
    for p, t in zip(_leaves(primals), _leaves(tangents)):
        check_dual(p, t)  # (PyTorch makes them dual tensors: make_dual's refusals)
    outer, keep = is_grad_enabled(), _inside_transform(_leaves(primals) + _leaves(tangents))
    with enable_grad():
        watched = tuple(_map(lambda x: _watch(x, True), p) for p in primals)
        with _transforming("jvp"):
            output = func(*watched)
        output, aux = _split_aux(output, has_aux, "jvp(f, primals, tangents)")
        outs = _only_tensors(output, "jvp(f, primals, tangents)")
        keep = keep or (outer and _reaches_outside(outs, _leaves(watched)))
        # the backward pass is linear in these: their values never reach the result
        dummies = [o.new_zeros(o.shape).requires_grad_(True) for o in outs]
        grads = _autograd_grad(outs, _leaves(watched), dummies, create_graph=True,
                               allow_unused=True)
        pairs = [(g, t) for g, t in zip(grads, _leaves(tangents)) if g is not None]
        if pairs:
            res = _autograd_grad([g for g, _ in pairs], dummies, [t for _, t in pairs],
                                 create_graph=keep, allow_unused=True)
        else:
            res = [None] * len(dummies)
    res = [r if r is not None else o.new_zeros(o.shape) for r, o in zip(res, outs)]
    if not keep:
        res = [r.detach() for r in res]
        outs = [o.detach() for o in outs]
    out_tree = _unflatten(output, outs)
    tangent_out = _unflatten(output, res)
    return (out_tree, tangent_out, _plain(aux, keep)) if has_aux else (out_tree, tangent_out)


def _jacobian(func: Callable, argnums: int | tuple[int, ...], has_aux: bool,
              forward: bool) -> Callable:
    def wrapper(*args: Any) -> Any:
        nums = _argnums(argnums, len(args))
        outer, keep = is_grad_enabled(), _inside_transform(_leaves(args))
        with enable_grad():
            args = list(args)
            diff = {n: _map(lambda x: _watch(x, True), args[n]) for n in nums}
            for n, a in diff.items():
                args[n] = a
            with _transforming("jacfwd" if forward else "jacrev"):
                output = func(*args)
            output, aux = _split_aux(output, has_aux,
                                     f"{'jacfwd' if forward else 'jacrev'}(f, ...)(*args)")
            # (PyTorch's jacfwd and jacrev are built on jvp and vjp: their messages)
            _only_tensors(output, "jvp(f, primals, tangents)" if forward else
                          "vjp(f, *primals)")
            inputs = [leaf for n in nums for leaf in _leaves(diff[n])]
            keep = keep or (outer and _reaches_outside(_leaves(output), inputs))
            per_output = [_rows(out, inputs, keep) for out in _leaves(output)]
        # result[output leaf][input leaf], arranged as the output's and the inputs' trees
        tree = []
        for jac in per_output:
            per_arg = _unflatten([diff[n] for n in nums], jac)
            tree.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        result = _unflatten(output, tree)
        return (result, _plain(aux, keep)) if has_aux else result
    return wrapper


def _rows(out: Tensor, inputs: list, keep: bool) -> list:
    """d out / d input for every input, each of shape out.shape + input.shape."""
    flat = out.reshape(-1)
    rows: list[list] = [[] for _ in inputs]
    # an output that does not depend on any input (the gradient of a function linear in
    # its input, inside `hessian`) has a zero Jacobian, as PyTorch's
    for j in range(flat.numel() if out.requires_grad else 0):
        grads = _autograd_grad([flat[j]], inputs, retain_graph=True, create_graph=keep,
                               allow_unused=True)
        for row, g, x in zip(rows, grads, inputs):
            row.append(g if g is not None else x.new_zeros(x.shape))
    result = []
    for row, x in zip(rows, inputs):
        jac = stack(row) if row else x.new_zeros((flat.numel(),) + tuple(x.shape))
        jac = jac.view(tuple(out.shape) + tuple(x.shape))  # (a view node, as PyTorch's)
        result.append(jac if keep else jac.detach())
    return result


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """Returns a function computing the Jacobian of `func` with respect to `argnums` by
    reverse mode: for each output, a tensor of shape `output.shape + input.shape`."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, forward=False)


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """Returns a function computing the Jacobian of `func` with respect to `argnums`
    (the same values as `jacrev`; ember computes both row by row). Random ops inside
    follow `randomness`, as in PyTorch's, whose jacfwd vmaps over the tangents."""
    def randomized(*args: Any, **kwargs: Any) -> Any:
        vmap_randomness.append(randomness)
        try:
            return func(*args, **kwargs)
        finally:
            vmap_randomness.pop()
    return _jacobian(randomized, argnums, has_aux, forward=True)


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """Returns a function computing the Hessian of `func`: `jacfwd(jacrev(func))`."""
    return jacfwd(jacrev(func, argnums), argnums)


# -- vmap -------------------------------------------------------------------------------------

def _batch_size(args: Any, dims: Any, call: str) -> int:
    """The mapped size, the same for every mapped input (`call` starts the messages)."""
    sizes = []

    def visit(arg: Any, dim: Any) -> None:
        if dim is None:
            return
        if isinstance(dim, int):
            for leaf in _leaves(arg):
                if not isinstance(leaf, Tensor):
                    raise ValueError(f"{call}: Got in_dim={dim} for an input but the input is "
                                     f"of type {type(leaf)}. We cannot vmap over non-Tensor "
                                     "arguments, please use None as the respective in_dim")
                if not -leaf.dim() <= dim < leaf.dim():
                    raise ValueError(f"{call}: Got in_dim={dim} for some input, but that input "
                                     f"is a Tensor of dimensionality {leaf.dim()} so expected "
                                     f"in_dim to satisfy -{leaf.dim()} <= in_dim < "
                                     f"{leaf.dim()}.")
                sizes.append(leaf.shape[dim])
            return
        if isinstance(dim, (tuple, list)):
            for a, d in zip(arg, dim):
                visit(a, d)
        elif isinstance(dim, dict):
            for k, d in dim.items():
                visit(arg[k], d)
    visit(args, dims)
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) != 1:
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _slice(args: Any, dims: Any, i: int) -> Any:
    """Sample `i` of the mapped inputs."""
    if dims is None:
        return args
    if isinstance(dims, int):
        return _map(lambda t: t.select(dims, i), args)
    if isinstance(dims, dict):
        return {k: _slice(v, dims.get(k), i) for k, v in args.items()}
    return _map_pairs(args, dims, i)


def _map_pairs(args: Any, dims: Any, i: int) -> Any:
    items = [_slice(a, d, i) for a, d in zip(args, dims)]
    if isinstance(args, tuple) and hasattr(args, "_fields"):  # a namedtuple
        return type(args)(*items)
    return type(args)(items)


def _spec(count: int) -> str:
    """PyTorch's pytree spec of a flat tuple of `count` leaves, as its messages print it."""
    return "TreeSpec(tuple, None, [" + ",\n  ".join(["*"] * count) + "])"


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """Returns `func` mapped over a batch dimension of its inputs (`in_dims`: an int for
    every input, or one entry per input, None for an input that is not mapped, nested as
    the inputs are), its outputs stacked along `out_dims`."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', "
                           f"or 'same'. Got {randomness}")
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    def wrapped(*args: Any, **kwargs: Any) -> Any:  # (PyTorch's name)
        name = getattr(func, "__name__", repr(func))
        call = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
        if not args:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                             "inputs, or you are trying to vmap over a function with no "
                             "inputs. The latter is unsupported.")
        if isinstance(in_dims, int):
            dims: Any = (in_dims,) * len(args)
        elif isinstance(in_dims, tuple):
            if len(in_dims) != len(args):
                raise ValueError(f"{call}: in_dims is not compatible with the structure of "
                                 f"`inputs`. in_dims has structure {_spec(len(in_dims))} but "
                                 f"inputs has structure {_spec(len(args))}.")
            dims = in_dims
        else:
            raise ValueError(f"{call}: expected `in_dims` to be int or a (potentially nested) "
                             f"tuple matching the structure of inputs, got: {type(in_dims)}.")
        size = _batch_size(args, dims, call)
        rule = getattr(func, "_vmap_rule", None)  # a custom op's (register_vmap)
        if rule is not None:
            return _vmap_by_rule(rule, VmapInfo(size, randomness), dims, args, kwargs,
                                 out_dims)
        if size == 0:  # the function sees one sample of zeros; its outputs are emptied
            return _empty_batch(func, randomness, args, dims, kwargs, out_dims, name)
        outputs = _map_samples(func, randomness, size, lambda i: _slice(args, dims, i), kwargs,
                               args)
        leaves = [_leaves(o) for o in outputs]
        out_leaves = _out_dims_per_leaf(out_dims, outputs[0], name)
        for leaf, d in zip(leaves[0], out_leaves):
            if d is not None and not isinstance(leaf, Tensor):  # (None: returned as it is)
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got "
                                 f"type {type(leaf)}. Did you mean to set out_dims= to None "
                                 "for output?")
        stacked = [stack([ls[k] for ls in leaves], dim=d) if d is not None else leaves[0][k]
                   for k, d in enumerate(out_leaves)]
        return _unflatten(outputs[0], stacked)
    return wrapped


def _empty_batch(func: Callable, randomness: str, args: Any, dims: Any, kwargs: dict,
                 out_dims: Any, name: str) -> Any:
    """vmap over a mapped size of 0: outputs of the shapes and dtypes `func` gives a
    sample, with a mapped dimension of size 0 (PyTorch's batched tensors of size 0)."""
    sample = _zero_sample(args, dims)
    out = _map_samples(func, randomness, 1, lambda i: sample, kwargs, args)[0]
    per_leaf = _out_dims_per_leaf(out_dims, out, name)
    leaves = [leaf if d is None else leaf.unsqueeze(d).narrow(d, 0, 0)
              for leaf, d in zip(_leaves(out), per_leaf)]
    return _unflatten(out, leaves)


def _zero_sample(args: Any, dims: Any) -> Any:
    """A sample of zeros for every mapped input (its mapped dimension removed)."""
    if dims is None:
        return args
    if isinstance(dims, int):
        return _map(lambda t: t.select(dims, 0) if t.shape[dims] else
                    t.new_zeros(t.shape[:dims % t.dim()] + t.shape[dims % t.dim() + 1:]), args)
    if isinstance(dims, dict):
        return {k: _zero_sample(v, dims.get(k)) for k, v in args.items()}
    items = [_zero_sample(a, d) for a, d in zip(args, dims)]
    if isinstance(args, tuple) and hasattr(args, "_fields"):
        return type(args)(*items)
    return type(args)(items)


def _out_dims_per_leaf(out_dims: Any, output: Any, name: str) -> list:
    """`out_dims` for each leaf of the (first sample's) output: an int or None for all,
    or a pytree of them matching the output's (PyTorch's refusal otherwise)."""
    if isinstance(out_dims, int) or out_dims is None:
        return [out_dims] * len(_leaves(output))
    flat = _leaves(out_dims)
    if isinstance(output, Tensor):
        fits = isinstance(out_dims, tuple) and len(out_dims) == 1
    else:
        fits = tree_structure(out_dims) == tree_structure(output)
    if not fits:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         "compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_structure(out_dims)} but outputs has structure "
                         f"{tree_structure(output)}.")
    return flat


def _map_samples(func: Callable, randomness: str, size: int, sample: Callable[[int], Any],
                 kwargs: dict, args: Any) -> list:
    """`func` of each sample in turn. Random ops inside draw as PyTorch's `randomness`
    says: "error" refuses them, "same" gives every sample the first sample's numbers (the
    default generator rewound before each), "different" draws on. A sample's values may
    not be read into Python (`_PerSampleValues`); `args`' own tensors (those not mapped)
    may."""
    unmapped = {id(t) for t in _leaves(args)}
    vmap_randomness.append(randomness)
    start = default_generator.get_state() if randomness == "same" else None
    try:
        outputs = []
        for i in range(size):
            if start is not None:
                default_generator.set_state(start)
            args = sample(i)
            with _PerSampleValues.watching(args, unmapped):
                outputs.append(func(*args, **kwargs))
        return outputs
    finally:
        vmap_randomness.pop()


# PyTorch's refusals to read a batched tensor's value into Python under vmap, by how it is
# read (ember.core.tracing.note_python_value's names)
_ITEM_MESSAGE = ("vmap: It looks like you're calling .item() on a Tensor. We don't support "
                 "vmap over calling .item() on a Tensor, please try to rewrite what you're "
                 "doing with other operations. If error is occurring somewhere inside PyTorch "
                 "internals, please file a bug report.")
_VALUE_READ_MESSAGES = {
    "item": _ITEM_MESSAGE,
    "bool": "vmap: It looks like you're attempting to use a Tensor in some data-dependent "
            "control flow. We don't support that yet, please file an issue at "
            "https://github.com/pytorch/pytorch/issues .",
    "tolist": "Cannot access data pointer of Tensor that doesn't have storage",
}


class _PerSampleValues:
    """Which tensors hold one sample's values while vmap runs the function on it: the
    sample's slices of the mapped inputs and every tensor an op makes from one. Reading
    one of them into Python (`.item()`, `if t:`, `.tolist()`) raises PyTorch's error,
    since PyTorch's batched tensor has no value per sample there; other tensors (a
    constant, an unmapped input) read as usual. It listens as ember.core.tracing's
    recorder (every primitive and view reports to it); ember's own checks pause it. It
    keeps the eager computation (fused kernels, random streams): `replays` is False."""

    replays = False

    def __init__(self, samples: list) -> None:
        # by id, held weakly: a tensor's entry goes with it (before its id can be reused)
        self.tensors: weakref.WeakValueDictionary = weakref.WeakValueDictionary(
            (id(t), t) for t in samples)

    @classmethod
    @contextlib.contextmanager
    def watching(cls, args: Any, unmapped: set) -> Iterator[None]:
        """Watch while the function runs on sample `args` (the ids in `unmapped`: tensors
        passed as they are, not per sample)."""
        if tracing.active is not None:  # inside a trace, or an outer vmap that watches
            yield
            return
        recorder = cls([t for t in _leaves(args) if isinstance(t, Tensor) and
                        id(t) not in unmapped])
        tracing.python_value_hooks.append(recorder.read)
        tracing.active = recorder
        try:
            yield
        finally:
            tracing.active = None
            tracing.python_value_hooks.remove(recorder.read)

    def primitive(self, op: str, args: tuple, attrs: dict, out: Any) -> None:
        tensors = self.tensors
        if any(id(a) in tensors for a in _leaves((args, attrs))):
            for t in _leaves(out):
                if isinstance(t, Tensor):
                    tensors[id(t)] = t

    def batched(self, t: Any) -> bool:
        """Whether `t` is (computed from) a sample of the mapped inputs."""
        return id(t) in self.tensors

    def read(self, x: Any, how: str) -> None:
        if id(x) in self.tensors and not _read_by_ember():
            raise RuntimeError(_VALUE_READ_MESSAGES.get(how, _ITEM_MESSAGE))

    def enter(self, name: str, fn: Callable, args: tuple, kwargs: dict) -> None:
        return None  # (a composite's scope: its primitives report one by one)

    def exit(self, node: Any, out: Any) -> None:
        return None

    def abandon(self, node: Any) -> None:
        return None


_EMBER_ROOT = os.path.dirname(os.path.abspath(__file__)) + os.sep
_TENSOR_FILE = os.path.join(_EMBER_ROOT, "core", "tensor.py")


def _read_by_ember() -> bool:
    """Whether the value read is ember's own (an op's check of a LAPACK info, say), not
    the function's: PyTorch's kernels look at batched values without Python seeing them,
    and only the function's own `.item()` or `if t:` is refused. The reader is the first
    frame outside the recorder and the Tensor methods (`float(t)` reads through `item`)."""
    frame = sys._getframe(3)  # read <- note_python_value <- the Tensor method
    while frame is not None and frame.f_code.co_filename == _TENSOR_FILE:
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(_EMBER_ROOT)


class VmapInfo(NamedTuple):
    """What a batching rule learns of the `vmap` calling it (PyTorch's ``VmapInfo``)."""

    batch_size: int
    randomness: str


def _vmap_by_rule(rule: Callable, info: VmapInfo, in_dims: tuple, args: tuple,
                  kwargs: dict, out_dims: Any) -> Any:
    """`vmap` of a custom op with a batching rule: the rule runs once on the whole
    batch, ``rule(info, in_dims, *args, **kwargs) -> (output, its out_dims)``; each
    output is then moved to the batch dimension `out_dims` asks for (an output the rule
    left unbatched, out_dim None, is the same for every sample)."""
    result = rule(info, tuple(in_dims), *args, **kwargs)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError("Expected the vmap staticmethod to have two returns, an output "
                           "and out_dims with pytree structure compatible with the output. "
                           f"Got a {type(result)} instead")
    output, rule_dims = result
    leaves = _leaves(output)
    have = _per_leaf(rule_dims, len(leaves))
    want = _per_leaf(out_dims, len(leaves))
    if have is None or want is None:
        raise RuntimeError(f"The autograd.Function's vmap staticmethod returned an "
                           f"incompatible (output, out_dims) tuple. Expected out_dims="
                           f"{rule_dims} to be compatible with the structure of `output`.")
    moved = []
    for leaf, src, dst in zip(leaves, have, want):
        if src is None:
            leaf = leaf.unsqueeze(0).expand(info.batch_size, *leaf.shape)
            src = 0
        moved.append(leaf.movedim(src, dst if dst is not None else 0))
    return _unflatten(output, moved)


def _per_leaf(dims: Any, count: int) -> list | None:
    """`dims` (an int or None for every leaf, or a tuple of them) as one per leaf; None
    when the structure does not fit."""
    if dims is None or isinstance(dims, int):
        return [dims] * count
    if isinstance(dims, (tuple, list)) and len(dims) == count \
            and all(d is None or isinstance(d, int) for d in dims):
        return list(dims)
    return None


def stack_module_state(models: list) -> tuple[dict, dict]:
    """Stacks the parameters and buffers of `models` (same structure) along a new first
    dimension: `(params, buffers)`, for `vmap` over `functional_call`. The stacked
    parameters are new leaves that require grad."""
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = {name: stack([dict(m.named_parameters())[name].detach() for m in models])
              .requires_grad_(True) for name, _ in models[0].named_parameters()}
    buffers = {name: stack([dict(m.named_buffers())[name] for m in models])
               for name, _ in models[0].named_buffers()}
    return params, buffers
