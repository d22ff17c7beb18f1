"""Shape ops: views that share storage (`reshape`/`view`, `permute`/`transpose`,
`expand`, `squeeze` ...), copies (`clone`, `flip`, `tril`/`triu`, `repeat`), and joining
(`cat`, `stack`).

Kernels (signatures of their rules):

    reshape   kernel(input, shape=, copy=) -> y; with copy=False it must return a view or
              raise `ember.core.backend.ViewNotPossible`; with copy=True it may copy.
    permute   kernel(input, dims=) -> a view.      expand  kernel(input, shape=) -> a view.
    flip      kernel(input, dims=) -> a copy.      clone   kernel(input) -> a copy.
    tril/triu kernel(input, diagonal=) -> a copy.  cat     kernel(*tensors, dim=) -> y.
    view_dtype kernel(input, dtype=) -> a view of the same memory as another dtype.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence
from typing import Any

from ember.core import costs, tracing
from ember.core import dtype as dt
from ember.core import forward_ad as fw
from ember.core.apply import apply, apply_labelled, record_grad
from ember.core.backend import ViewNotPossible, logical_to_physical_perm
from ember.core.declare import composite, primitive
from ember.core.dispatch import run, run_inplace, run_view
from ember.core.errors import invalid_combination, with_context
from ember.core.grad_mode import no_grad, state
from ember.core.host import dtype_arg
from ember.core.inplace import as_view, metadata_inplace
from ember.core.memory_format import (
    check_format,
    check_rank,
    contiguous_format,
    empty_in_format,
    in_order,
    is_contiguous_in,
    like_layout,
    memory_format,
    plain,
    preserve_format,
    row_major,
    tensor_format,
)
from ember.core.memory_format import dim_order as _dim_order
from ember.core.opdef import OPS, Grad, OutMeta, metadata_rule
from ember.core.opdef import Precision as P
from ember.core.shapes import (
    broadcast_shapes as broadcast_pair,
)
from ember.core.shapes import (
    fmt_shape,
    infer_reshape,
    normalize_dim,
    normalize_dims,
)
from ember.core.tensor import Size, Tensor
from ember.core.view_strides import DEPTH, keep_strides

# -- rules ----------------------------------------------------------------------------


@metadata_rule
def _reshape_rule(input, *, shape, copy=True):
    return OutMeta(shape, input.dtype, None)


@metadata_rule
def _permute_rule(input, *, dims):
    if sorted(dims) != list(range(input.ndim)):
        raise RuntimeError(f"permute: dims {list(dims)} are not a permutation of the "
                           f"{input.ndim} dimensions of a tensor of shape "
                           f"{fmt_shape(input.shape)}")
    return OutMeta(tuple(input.shape[d] for d in dims), input.dtype, None)


def expanded_shape(input: Tensor, shape: tuple, op: str = "expand") -> tuple:
    """`input`'s shape expanded to `shape` (-1 keeps a size), or PyTorch's error."""
    if len(shape) < input.ndim:
        raise with_context(RuntimeError(
            f"expand({input.type()}{{{fmt_shape(input.shape)}}}, size={fmt_shape(shape)}): "
            f"the number of sizes provided ({len(shape)}) must be greater or equal to the "
            f"number of dimensions in the tensor ({input.ndim})"), op)
    lead = len(shape) - input.ndim
    for i, n in enumerate(shape[:lead]):
        if n < 0:
            raise with_context(RuntimeError(
                f"The expanded size of the tensor ({n}) isn't allowed in a leading, "
                f"non-existing dimension {i}"), f"{op}: target sizes {fmt_shape(shape)}")
    out = list(shape[:lead])
    for i, (s, n) in enumerate(zip(input.shape, shape[lead:])):
        if n == -1:
            n = s
        if s != n and s != 1:
            raise with_context(RuntimeError(
                f"The expanded size of the tensor ({n}) must match the existing size "
                f"({s}) at non-singleton dimension {i + lead}.  Target sizes: "
                f"{fmt_shape(shape)}.  Tensor sizes: {fmt_shape(input.shape)}"), op)
        out.append(n)
    return tuple(out)


@metadata_rule
def _expand_rule(input, *, shape):
    return OutMeta(expanded_shape(input, shape), input.dtype, None)


@metadata_rule
def _flip_rule(input, *, dims):
    return OutMeta(input.shape, input.dtype, None)


@metadata_rule
def _clone_rule(input):
    return OutMeta(input.shape, input.dtype, None)


@metadata_rule
def _triangle_rule(input, *, diagonal=0):
    return OutMeta(input.shape, input.dtype, None)


@metadata_rule
def _cat_rule(*tensors, dim):
    shapes = [tuple(x.shape) for x in tensors]
    ref = shapes[0]
    for i, shape in enumerate(shapes):
        if len(shape) != len(ref):
            raise with_context(RuntimeError(f"Tensors must have same number of dimensions: "
                                            f"got {len(ref)} and {len(shape)}"),
                               f"cat: tensor {i} has shape {fmt_shape(shape)}")
        if shape != ref and any(s != r for d, (s, r) in enumerate(zip(shape, ref)) if d != dim):
            d = next(d for d, (s, r) in enumerate(zip(shape, ref)) if d != dim and s != r)
            raise with_context(RuntimeError(
                f"Sizes of tensors must match except in dimension {dim}. Expected "
                f"size {ref[d]} but got size {shape[d]} for tensor number {i} "
                f"in the list."), f"cat: shapes {fmt_shape(ref)} and {fmt_shape(shape)}")
    common = tensors[0].dtype
    for x in tensors[1:]:
        if x.dtype is not common:
            common = dt.promote_types(common, x.dtype)
    out = list(ref)
    out[dim] = sum(s[dim] for s in shapes)
    return OutMeta(tuple(out), common, common)


def sizes_arg(args: tuple, kwargs: dict | None = None, name: str = "size",
              op: str | None = None) -> tuple[int, ...]:
    """Sizes given as separate ints (`x.view(2, 3)`), as one sequence (`x.view((2, 3))`),
    or by keyword (`x.view(size=(2, 3))`). With `op` (a method's name), an entry that is
    no integer raises the TypeError PyTorch's argument parser gives that method."""
    if kwargs:
        if args or set(kwargs) != {name}:
            raise TypeError(f"expected the sizes as arguments or as {name}=, got {args} and "
                            f"{sorted(kwargs)}")
        args = (kwargs[name],)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        if op is not None:
            _check_int_list(op, name, tuple(args[0]), True)
        args = tuple(args[0])
    elif op is not None:
        _check_int_list(op, name, args, False)
    return tuple(int(a) for a in args)


def _int_like(a: Any) -> bool:
    """An entry PyTorch's parser takes in a list of ints: an integer (no bool), or a 0-d
    tensor of an integer dtype."""
    if isinstance(a, Tensor):
        return a.ndim == 0 and not (a.dtype.is_floating_point or a.dtype.is_complex or
                                    a.dtype is dt.bool_)
    return isinstance(a, numbers.Integral) and not isinstance(a, bool)


# the methods whose sizes PyTorch's parser matches against more than one overload
_SIZE_OVERLOADS = {"view": ("(torch.dtype dtype)", "(tuple of ints size)")}


def _check_int_list(op: str, name: str, items: tuple, sequence: bool) -> None:
    """PyTorch's parser on `op`'s int-list argument `name`, given as one `sequence` or as
    separate `items`: a first entry that is no int matches no overload; a later one fails
    to unpack."""
    for a in items:
        if type(a) is not int:
            break
    else:
        return  # (the common case, at once)

    def type_name(a: Any) -> str:
        return "Tensor" if isinstance(a, Tensor) else type(a).__name__
    if items and not _int_like(items[0]):
        if op in _SIZE_OVERLOADS:
            got = "tuple" if sequence else ", ".join(type_name(a) for a in items)
            raise invalid_combination(op, got, _SIZE_OVERLOADS[op])
        if sequence:
            raise TypeError(f"{op}(): argument '{name}' (position 1) must be tuple of ints, "
                            f"but found element of type {type_name(items[0])} at pos 0")
        if len(items) > 1:
            raise TypeError(f"{op}() takes 1 positional argument but {len(items)} were given")
        raise TypeError(f"{op}(): argument '{name}' (position 1) must be tuple of ints, not "
                        f"{type_name(items[0])}")
    for i, a in enumerate(items):
        if not _int_like(a):
            raise TypeError(f"{op}(): argument '{name}' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type_name(a)}\"")


# -- reshape and view -----------------------------------------------------------------


def _plain_alias(x: Tensor, op: str, again: Any, **attrs: Any) -> Tensor | None:
    """A new view of all of `x` by the view kernel `op` (PyTorch returns one for a view
    that changes nothing), made without the general path when nothing watches it (no
    autograd, dual level or trace: the kernel's rule has nothing to check then); None
    otherwise. `again(base)` recreates it from its base."""
    if state.enabled and x._requires_grad or fw.active or tracing.active is not None or \
            tracing.tape is not None:
        return None
    kernel = x._backend.kernels.get(op)
    if kernel is None:
        return None
    out = Tensor._make(kernel(x._data, **attrs), x._dtype, x._device, x._backend)
    if x._strides_depth >= DEPTH:  # (no deeper chain: its strides, settled)
        keep_strides(x, x)
    out._strides_of = (x, x._data, out._data, op, None)
    out._strides_depth = x._strides_depth + 1
    return as_view(out, x, again)


def _reshape_impl(x: Tensor, shape: tuple, must_view: bool, op: str,
                  label: str | None = None) -> Tensor:
    # (no shortcut for an unchanged shape: PyTorch returns a new view then too)
    shape = infer_reshape(op, tuple(x.shape), x.numel(), shape)
    if shape == x._data.shape:
        out = _plain_alias(x, "reshape", lambda b: reshape(b, shape), shape=shape, copy=False)
        if out is not None:
            return out
    reshape_op = OPS["reshape"]
    try:
        out = run_view("reshape", x, shape=shape, copy=False)
        viewed = True
    except ViewNotPossible:
        if must_view:
            raise with_context(RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least "
                "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                "instead."), f"view: shape {fmt_shape(tuple(x.shape))} -> "
                             f"{fmt_shape(shape)}") from None
        out = run_view("reshape", x, shape=shape, copy=True)
        viewed = False
    if viewed:
        as_view(out, x, lambda b: reshape(b, shape))
        if x._strides_depth >= DEPTH:  # (no deeper chain: its strides, settled)
            keep_strides(x, x)
        out._strides_of = (x, x._data, out._data, "reshape", None)
        out._strides_depth = x._strides_depth + 1
    if state.enabled and x._requires_grad or fw.active:
        record_grad(reshape_op, (x,), {"shape": shape, "copy": not viewed}, out,
                    label or ("ViewBackward0" if viewed else "UnsafeViewBackward0"))
    return out


def named_view(x: Tensor, shape: tuple, label: str) -> Tensor:
    """`x.view(shape)` whose autograd node carries `label`: the name PyTorch's own kernel
    gives the result a layer builds this way (an RNN's output: "StackBackward0")."""
    return _reshape_impl(x, tuple(shape), True, "view", label)


def _reshape_method(self: Tensor, *shape: Any, **kwargs: Any) -> Tensor:
    if not shape and not kwargs:  # (`x.reshape(())` is a shape; `x.reshape()` is none)
        raise TypeError('reshape() missing 1 required positional arguments: "shape"')
    return _reshape_impl(self, sizes_arg(shape, kwargs, "shape", "reshape"), False,
                         "reshape")


@primitive(complex=True, rule=_reshape_rule, view=True, cost=costs.view, method=_reshape_method,
           grad=Grad(input=lambda grad, input_shape: grad.reshape(input_shape)))
def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:
    """The same values in a new shape: a view when the strides allow one, else a copy.
    One dimension may be -1 (inferred)."""
    return _reshape_impl(input, sizes_arg((shape,)), False, "reshape")


@composite(complex=True, variants="method", cost=costs.view)
def view(self: Tensor, *shape: Any, **kwargs: Any) -> Tensor:
    """A view with a new shape; raises when the strides do not allow one.

    `view(dtype)` instead reinterprets the tensor's memory as another dtype (PyTorch's
    bit views: `float_tensor.view(torch.int32)`); with a different element size the
    last dimension grows or shrinks by the ratio of the sizes."""
    if len(shape) == 1 and not kwargs and isinstance(shape[0], (dt.dtype, type)):
        return _view_as_dtype(self, dtype_arg(shape[0], "view"))  # view(float) too
    if len(shape) == 1 and not kwargs and isinstance(shape[0], str):  # view("int32")
        raise TypeError(
            "view() received an invalid combination of arguments - got (str), but expected "
            "one of:\n * (torch.dtype dtype)\n      didn't match because some of the arguments "
            "have invalid types: (!str!)\n * (tuple of ints size)\n      didn't match because "
            "some of the arguments have invalid types: (!str!)\n")
    if not shape and set(kwargs) == {"dtype"}:
        return _view_as_dtype(self, kwargs["dtype"])
    if not shape and not kwargs:
        raise invalid_combination("view", "", ("(torch.dtype dtype)", "(tuple of ints size)"))
    return _reshape_impl(self, sizes_arg(shape, kwargs, op="view"), True, "view")


def _view_dtype_rule(input, *, dtype):
    shape = tuple(input.shape)
    if dtype.itemsize != input.dtype.itemsize:
        shape = shape[:-1] + (shape[-1] * input.dtype.itemsize // dtype.itemsize,)
    return OutMeta(shape, dtype, None)


@primitive(complex=True, variants="", rule=_view_dtype_rule, view=True, cost=costs.view)
def view_dtype(input: Tensor, dtype: dt.dtype) -> Tensor:
    """The tensor's memory read as elements of `dtype` (no copy, no autograd). With a
    different element size the last dimension is scaled by the ratio of the sizes.

    Kernel: `view_dtype(input, *, dtype) -> a view` sharing the input's memory; core has
    checked PyTorch's conditions (the last dimension dense, its size, the storage offset
    and the other strides divisible where elements get larger)."""
    return _view_as_dtype(input, dtype)


def _check_view_dtype(x: Tensor, dtype: dt.dtype) -> None:
    """PyTorch's conditions for viewing `x` as a dtype of a different element size."""
    old, new = x.dtype.itemsize, dtype.itemsize
    if old == new:
        return
    what = (f"to view {dt.SCALAR_TYPE_NAMES[x.dtype.name]} as {dt.SCALAR_TYPE_NAMES[dtype.name]} "
            "(different element sizes)")
    if x.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if x.stride(-1) != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {x.stride(-1)}")
    if new > old:
        ratio = new // old
        if x.shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                               f"{x.shape[-1]}")
        if x.storage_offset() % ratio:
            raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, "
                               f"but got {x.storage_offset()}")
        for d in range(x.ndim - 1):
            if x.stride(d) % ratio:
                raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {what}, "
                                   f"but got {x.stride(d)}")


def _view_as_dtype(x: Tensor, dtype: Any) -> Tensor:
    if not isinstance(dtype, dt.dtype):
        raise TypeError(f"view(): argument 'dtype' must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    if x._conj_view and x.dtype.is_complex:  # (PyTorch: whatever the dtype)
        raise RuntimeError("torch.Tensor.view is not supported for conjugate view tensors "
                           "when converting to a different dtype.")
    _check_view_dtype(x, dtype)
    out = run("view_dtype", x, dtype=dtype)
    # not an autograd view (PyTorch's view.dtype is not differentiable), but the same
    # memory: writes through either one bump the one version counter
    out._vc = x._vc
    return out


@composite(complex=True, variants="method", cost=costs.view)
def view_as(self: Tensor, other: Tensor) -> Tensor:
    """A view of this tensor with `other`'s shape."""
    return view(self, tuple(other.shape))


@composite(complex=True, variants="method", cost=costs.view)
def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor reshaped to `other`'s shape."""
    return reshape(self, tuple(other.shape))


@composite(complex=True, cost=costs.view)
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Flattens dimensions `start_dim` to `end_dim` into one."""
    if input.ndim == 0:
        normalize_dim("flatten", start_dim, 0)
        normalize_dim("flatten", end_dim, 0)
        return reshape(input, (1,))
    s = normalize_dim("flatten", start_dim, input.ndim)
    e = normalize_dim("flatten", end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:  # PyTorch returns the tensor itself when nothing is flattened
        return input
    shape = tuple(input.shape)
    return reshape(input, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


@composite(complex=True, cost=costs.view)
def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Expands dimension `dim` into `sizes`."""
    if not input.ndim:
        raise RuntimeError(f"unflatten: Dimension specified as {dim} but tensor has no "
                           f"dimensions")
    d = normalize_dim("unflatten", dim, input.ndim)
    shape = tuple(input.shape)
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        inner = infer_reshape("unflatten", (shape[d],), shape[d], tuple(sizes))
    except RuntimeError as e:  # PyTorch's handle_unflatten_exception
        if "is invalid for input of size" in str(e):
            raise with_context(RuntimeError(
                f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of "
                f"dim {dim} ({shape[d]}) in the input tensor"),
                f"unflatten: input of shape {shape}") from None
        raise RuntimeError(f"unflatten got an unexpected error:\n{e.args[0]}") from None
    return reshape(input, shape[:d] + inner + shape[d + 1:])


def _alias(x: Tensor) -> Tensor:
    """A new tensor object that views all of `x` (PyTorch returns one for no-op views)."""
    return _reshape_impl(x, tuple(x.shape), True, "view")


@composite(complex=True, variants="function method inplace", cost=costs.view,
           inplace_method=metadata_inplace(lambda self, dim=None: squeeze(self, dim)))
def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Removes dimensions of size 1 (only `dim`, an int or a tuple, when given)."""
    shape = tuple(input.shape)
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        dims = normalize_dims("squeeze", dim, input.ndim) or ()
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
    # always a view (dropping size-1 dimensions never copies), named as PyTorch's overload:
    # squeeze(), squeeze(dim), squeeze(dims)
    label = "SqueezeBackward0" if dim is None else \
        "SqueezeBackward2" if isinstance(dim, (tuple, list)) else "SqueezeBackward1"
    out = _reshape_impl(input, new, True, "squeeze", label)
    if out._strides_of is not None:  # (the dims kept keep their strides)
        kept = tuple(i for i, s in enumerate(shape)
                     if s != 1 or (dim is not None and i not in dims))
        out._strides_of = (input, input._data, out._data, "keep", kept)
    return out


@composite(complex=True, variants="function method inplace", cost=costs.view,
           inplace_method=metadata_inplace(lambda self, dim: unsqueeze(self, dim)))
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Inserts a dimension of size 1 at `dim`."""
    d = normalize_dim("unsqueeze", dim, input.ndim + 1)
    shape = tuple(input.shape)
    out = _reshape_impl(input, shape[:d] + (1,) + shape[d:], False, "unsqueeze",
                        "UnsqueezeBackward0")
    if d == len(shape) and d and out._backend.strides(out._data)[-1] != 1:
        # PyTorch's unsqueeze gives a new last dim stride 1 (a NumPy-like reshape, the last
        # dim's stride): the same buffer seen with a stride of 0 there, which `stride()`
        # reports as 1, so a later elementwise op or stack orders dims as PyTorch's
        kernel = out._backend.kernels.get("strided_view")
        if kernel is not None:
            n = out.ndim
            steps = [tuple(int(i == k) for i in range(n)) for k in range(n - 1)] + [(0,) * n]
            out._data = kernel(out._data, shape=tuple(out.shape), steps=steps, start=(0,) * n)
    if out._strides_of is not None:  # (PyTorch's stride for the new dim, not reshape's)
        out._strides_of = (input, input._data, out._data, "unsqueeze", d)
    return out


# -- permutations ---------------------------------------------------------------------


def _permute_impl(input: Tensor, dims: tuple, label: str) -> Tensor:
    # (`dims` is a checked permutation: the callers build or check it)
    out = as_view(run_view("permute", input, dims=dims), input, lambda b: permute(b, dims))
    if input._strides_depth >= DEPTH:  # (no deeper chain: its strides, settled)
        keep_strides(input, input)
    out._strides_of = (input, input._data, out._data, "keep", dims)
    out._strides_depth = input._strides_depth + 1
    if state.enabled and input._requires_grad or fw.active:
        record_grad(OPS["permute"], (input,), {"dims": dims}, out, label)
    return out


def _inverse(dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(range(len(dims)), key=lambda i: dims[i]))


def _permute_method(self: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    if not dims and not kwargs:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    return permute(self, sizes_arg(dims, kwargs, "dims", "permute"))


@primitive(complex=True, rule=_permute_rule, view=True, cost=costs.view, method=_permute_method,
           grad=Grad(input=lambda grad, dims: grad.permute(_inverse(dims))))
def permute(input: Tensor, dims: Sequence[int]) -> Tensor:
    """A view with the dimensions reordered as `dims`."""
    dims = sizes_arg((dims,))
    if len(dims) != input.ndim:  # (checked first, and named so, by PyTorch's dense permute)
        raise with_context(RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match "
            f"the length of the desired ordering of dimensions i.e. input.dim() = "
            f"{input.ndim} is not equal to len(dims) = {len(dims)}"),
            f"permute: dims {list(dims)} for a tensor of shape {fmt_shape(input.shape)}")
    dims = tuple(normalize_dim("permute", d, input.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise with_context(RuntimeError("permute(): duplicate dims are not allowed."),
                           f"permute: dims {list(dims)} (normalized)")
    return _permute_impl(input, dims, "PermuteBackward0")


@composite(complex=True,
           variants="function method inplace", cost=costs.view, aliases="swapaxes swapdims",
           inplace_method=metadata_inplace(lambda self, d0, d1: transpose(self, d0, d1)))
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view with dimensions `dim0` and `dim1` swapped."""
    n = input.ndim
    a, b = normalize_dim("transpose", dim0, n), normalize_dim("transpose", dim1, n)
    if n == 0:
        return _alias(input)
    order = list(range(n))
    order[a], order[b] = order[b], order[a]
    return _permute_impl(input, tuple(order), "TransposeBackward0")


swapaxes = swapdims = transpose


@composite(complex=True, variants="function method inplace", cost=costs.view,
           inplace_method=metadata_inplace(lambda self: t(self)))
def t(input: Tensor) -> Tensor:
    """Transpose of a tensor with at most 2 dimensions."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return _permute_impl(input, (1, 0), "TBackward0") if input.ndim == 2 else \
        _reshape_impl(input, tuple(input.shape), True, "t", "TBackward0")


@composite(complex=True, cost=costs.view, aliases="moveaxis")
def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Moves the dimensions `source` to the positions `destination`."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} "
                           f"dims)")
    n = input.ndim
    given = (src, dst)
    src = [normalize_dim("movedim", s, n) for s in src]
    dst = [normalize_dim("movedim", d, n) for d in dst]
    for which, dims, asked in (("source", src, given[0]), ("destination", dst, given[1])):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{which}` ({asked})")
    if n == 0:
        return _alias(input)
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, tuple(order))


moveaxis = movedim


# -- broadcasting ---------------------------------------------------------------------


def _expand_method(self: Tensor, *sizes: Any, **kwargs: Any) -> Tensor:
    if not sizes and not kwargs:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    return expand(self, sizes_arg(sizes, kwargs, op="expand"))


def _expand(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    # (an unchanged shape is still a new view, as in PyTorch)
    if shape == input._data.shape:
        out = _plain_alias(input, "expand", lambda b: _expand(b, shape), shape=shape)
        if out is not None:
            return out
    out = run_view("expand", input, shape=expanded_shape(input, shape))
    as_view(out, input, lambda b: _expand(b, shape))
    if input._strides_depth >= DEPTH:  # (no deeper chain: its strides, settled)
        keep_strides(input, input)
    out._strides_of = (input, input._data, out._data, "expand", None)
    out._strides_depth = input._strides_depth + 1
    if state.enabled and input._requires_grad or fw.active:
        record_grad(OPS["expand"], (input,), {"shape": shape}, out)
    return out


@primitive(complex=True, variants="method", rule=_expand_rule, view=True, cost=costs.view,
           method=_expand_method,
           grad=Grad(input=lambda grad, input_shape: grad.sum_to_size(input_shape)))
def expand(input: Tensor, size: Sequence[int]) -> Tensor:
    """A view with size-1 dimensions repeated to `size` (no copy); -1 keeps a size."""
    return _expand(input, sizes_arg((size,)))


@composite(complex=True, variants="method", cost=costs.view)
def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor expanded to `other`'s shape."""
    return expand(self, tuple(other.shape))


def _broadcast_to_method(self: Tensor, *sizes: Any, **kwargs: Any) -> Tensor:
    """`x.broadcast_to(2, 3)` as well as `x.broadcast_to((2, 3))`: PyTorch's method takes
    the sizes unpacked too (its function does not)."""
    if not sizes and not kwargs:
        raise TypeError('broadcast_to() missing 1 required positional arguments: "size"')
    return broadcast_to(self, sizes_arg(sizes, kwargs))


@composite(complex=True, cost=costs.view, method=_broadcast_to_method)
def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """`input` broadcast to `size` (a view)."""
    return expand(input, tuple(size))


@composite(complex=True, variants="function", cost=costs.view)
def broadcast_tensors(*tensors: Tensor) -> tuple:
    """The tensors broadcast to their common shape (views)."""
    shape: tuple = ()
    for x in tensors:
        shape = broadcast_pair("broadcast_tensors", shape, tuple(x.shape))
    # (as PyTorch's expand_outplace: a tensor of the common shape is returned itself)
    return tuple(x if tuple(x.shape) == shape else expand(x, shape) for x in tensors)


def broadcast_shapes(*shapes: Any) -> Size:
    r"""The shape that tensors of `shapes` (sequences of sizes, or ints for 1-D) broadcast
    to, without making any tensor.

    Raises:
        RuntimeError: PyTorch's message, naming the first argument that cannot broadcast.
    """
    sizes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    for shape in sizes:
        if any(d < 0 for d in shape):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
    ndim = max((len(s) for s in sizes), default=0)
    out = [1] * ndim
    for index, shape in enumerate(sizes):
        for i in range(-1, -len(shape) - 1, -1):
            if shape[i] == 1 or shape[i] == out[i]:
                continue
            if out[i] != 1:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {shape[i]} at {i}! "
                    f"Mismatching argument at index {index} had {shape}; but expected shape "
                    f"should be broadcastable to {out}")
            out[i] = shape[i]
    return Size(out)


def _repeat_method(self: Tensor, *repeats: Any, **kwargs: Any) -> Tensor:
    if not repeats and "repeats" not in kwargs:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    return repeat(self, sizes_arg(repeats, kwargs, "repeats", "repeat"))


@composite(complex=True, node_label="RepeatBackward0",
           variants="method", method=_repeat_method, cost=costs.movement)
def repeat(input: Tensor, repeats: Sequence[int]) -> Tensor:
    """Tiles the tensor `repeats[i]` times along each dimension (a copy)."""
    reps = sizes_arg((repeats,))
    if len(reps) < input.ndim:
        raise with_context(RuntimeError("Number of dimensions of repeat dims can not be "
                                        "smaller than number of dimensions of tensor"),
                           f"repeat: {len(reps)} repeats for a tensor of shape "
                           f"{tuple(input.shape)}")
    x = reshape(input, (1,) * (len(reps) - input.ndim) + tuple(input.shape))
    shape = tuple(x.shape)
    sizes = [r * s for r, s in zip(reps, shape)]
    if any(n < 0 for n in sizes):
        raise with_context(RuntimeError(f"Trying to create tensor with negative dimension "
                                        f"{next(n for n in sizes if n < 0)}: {sizes}"),
                           f"repeat: repeats {list(reps)} of shape {tuple(input.shape)}")
    # PyTorch checks the sizes only: a negative repeat of an empty dim makes it empty
    reps = [max(r, 0) if not s else r for r, s in zip(reps, shape)]
    # insert a broadcast axis before each dimension, expand it, and fold it in
    inter = tuple(v for s in shape for v in (1, s))
    target = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    out = expand(reshape(x, inter), target)
    # a copy even when nothing repeats (then `contiguous` would keep the view)
    dense = clone(out) if out._backend.is_contiguous(out._data) else contiguous(out)
    return reshape(dense, tuple(r * s for r, s in zip(reps, shape)))


def _tile_method(self: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    return tile(self, sizes_arg(dims, kwargs, "dims"))  # `x.tile(1, 2)`, as `x.repeat`


@composite(complex=True, cost=costs.movement, method=_tile_method)
def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Like `repeat`, with missing leading repeats taken as 1."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


# -- copies ---------------------------------------------------------------------------


def _flip_method(self: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    return flip(self, sizes_arg(dims, kwargs, "dims"))


@primitive(complex=True, rule=_flip_rule, cost=costs.movement, method=_flip_method,
           grad=Grad(input=lambda grad, dims: grad.flip(dims)))
def flip(input: Tensor, dims: Sequence[int]) -> Tensor:
    """A copy with the order of elements reversed along `dims`."""
    dims = normalize_dims("flip", sizes_arg((dims,)), input.ndim) or ()
    if not input.ndim:  # a 0-d tensor reversed along its one (implicit) dim
        dims = ()
    return in_layout_like(apply(OPS["flip"], input, dims=dims), input)


def _triangle(op: str, input: Tensor, diagonal: int) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    return apply(OPS[op], input, diagonal=diagonal)


@primitive(complex=True,
           variants="function method inplace", rule=_triangle_rule, cost=costs.movement,
           grad=Grad(input=lambda grad, diagonal: grad.tril(diagonal)))
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dimensions (the rest zeroed)."""
    return _triangle("tril", input, diagonal)


@primitive(complex=True,
           variants="function method inplace", rule=_triangle_rule, cost=costs.movement,
           grad=Grad(input=lambda grad, diagonal: grad.triu(diagonal)))
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dimensions (the rest zeroed)."""
    return _triangle("triu", input, diagonal)


@primitive(complex=True, rule=_clone_rule, cost=costs.movement, grad=Grad(input=lambda grad: grad))
def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy with its own storage; differentiable. Laid out as `input` (a permuted or
    channels-last one keeps its strides; `preserve_format`), or in `memory_format`."""
    fmt = check_format("clone", memory_format)
    out = apply(OPS["clone"], input)
    if fmt is preserve_format:
        if plain(input):
            return out
    elif fmt is contiguous_format:
        return out
    else:
        check_rank(fmt, input.ndim)
    return in_layout(out, like_layout(input, empty_of(out), fmt))


def empty_of(x: Tensor) -> Any:
    """`empty(shape)` of `x`'s dtype and device (the layouts of ember.core.memory_format
    are made of it)."""
    def empty(shape: tuple) -> Tensor:
        buf = x._backend.empty(shape, x._dtype, x._device.index or 0)
        return Tensor._make(buf, x._dtype, x._device, x._backend)
    return empty


def in_layout(out: Tensor, laid: Tensor) -> Tensor:
    """`out`, a result that nothing else holds yet, moved into the buffer of `laid` (an
    empty tensor of its shape, in the layout wanted): its values, its autograd node and
    its identity stay, its strides become `laid`'s."""
    if laid.stride() == out.stride() or tracing.tape is not None or \
            tracing.active is not None:  # (a recording keeps the kernel's own buffer)
        return out
    with no_grad():
        run_inplace("assign", laid, out)
    out._data = laid._data
    return out


def in_iter_order(out: Tensor, *operands: Any) -> Tensor:
    """`out`, the elementwise result of `operands` that a composite computed, laid out as
    PyTorch's TensorIterator lays out such a result (in the memory order of the first
    operand that orders each pair of dims; see `logical_to_physical_perm`). `out` itself
    when every operand is row-major, the common case."""
    tensors = [t for t in operands if isinstance(t, Tensor) and t.ndim]
    if out.ndim < 2 or all(row_major(t) for t in tensors):
        return out
    shape = tuple(out.shape)
    strides = []
    for t in tensors:
        lead = len(shape) - t.ndim
        strides.append((0,) * lead + tuple(0 if n == 1 and m != 1 else st for n, m, st in
                                           zip(t.shape, shape[lead:], t.stride())))
    perm, _ = logical_to_physical_perm(shape, strides)
    return in_layout(out, in_order(shape, perm, empty_of(out)))


def in_format_of(out: Tensor, *sources: Tensor) -> Tensor:
    """`out` in the memory format the first channels-last source suggests (PyTorch's rule
    for the outputs of convolution, pooling, batch norm and upsampling); `out` itself when
    every source is row-major, the common case."""
    for source in sources:
        if source is not None:
            fmt = tensor_format(source)
            if fmt is not contiguous_format and out.ndim == source.ndim:
                return in_layout(out, like_layout(out, empty_of(out), fmt))
    return out


def in_memory_format(out: Tensor, fmt: memory_format) -> Tensor:
    """`out`, a result nothing else holds yet, laid out in `fmt` (its autograd node
    kept)."""
    if fmt is contiguous_format and row_major(out):
        return out
    return in_layout(out, empty_in_format(tuple(out.shape), fmt, empty_of(out)))


def in_suggested_format(out: Tensor, source: Tensor) -> Tensor:
    """`out` laid out as PyTorch's kernels that allocate `empty(shape,
    source.suggest_memory_format())` write it (constant and reflection padding, group
    norm): channels-last for a channels-last `source`, else row-major."""
    return in_memory_format(out, tensor_format(source) if out.ndim == source.ndim
                            else contiguous_format)


def in_layout_like(out: Tensor, source: Tensor) -> Tensor:
    """`out`, of `source`'s shape, laid out as `empty_like(source)` (a TensorIterator
    result of one input: a permuted or channels-last source's order is kept)."""
    if row_major(source) and row_major(out):
        return out
    return in_layout(out, like_layout(source, empty_of(out)))


@composite(complex=True, variants="method", cost=costs.movement)
def contiguous(self: Tensor, memory_format: Any = contiguous_format) -> Tensor:
    """This tensor if its elements are dense in row-major order (or in `memory_format`'s
    order), else a copy that is."""
    fmt = check_format("contiguous", memory_format)
    if fmt is contiguous_format or fmt is preserve_format:
        if self._backend.is_contiguous(self._data):
            return self
        if fmt is preserve_format:
            raise RuntimeError("preserve memory format is unsupported by the contiguous "
                               "operator")
        return clone(self, memory_format=contiguous_format)
    check_rank(fmt, self.ndim)
    if is_contiguous_in(tuple(self.shape), self.stride(), fmt):
        return self
    return clone(self, memory_format=fmt)


@composite(complex=True, variants="method", cost=costs.view)
def is_contiguous(self: Tensor, memory_format: Any = None) -> bool:
    """Whether this tensor's elements are dense in row-major order (or in
    `memory_format`'s: `channels_last`, `channels_last_3d`)."""
    fmt = check_format("is_contiguous", memory_format)
    if fmt is contiguous_format or fmt is preserve_format:
        return row_major(self)
    return is_contiguous_in(tuple(self.shape), self.stride(), fmt)


@composite(complex=True, variants="method", cost=costs.view)
def dim_order(self: Tensor, *, ambiguity_check: bool | list = False) -> tuple[int, ...]:
    """The dims from the outermost in memory to the innermost (`(0, 2, 3, 1)` for a
    channels-last tensor). With `ambiguity_check` (True, or a list of memory formats of
    which exactly one must hold) an order that strides leave open raises."""
    if self.is_sparse:
        raise AttributeError(f"Can't get dim order on sparse type: {self.type()} Use "
                             "Tensor.to_dense() to convert to a dense tensor first.")
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    if not isinstance(ambiguity_check, bool) and (
            not isinstance(ambiguity_check, list) or
            not all(isinstance(f, memory_format) for f in formats)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                        "formats.")
    shape, strides = tuple(self.shape), self.stride()
    check = ambiguity_check if isinstance(ambiguity_check, bool) else True
    # several orders fit where a dim has size 1 or two neighbours share a stride
    several = 1 in shape or any(a == b for a, b in zip(strides, strides[1:]))
    if check and several and sum(is_contiguous(self, f) for f in formats) != 1:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to "
                           "exact one of the given memory formats.")
    order, ambiguous = _dim_order(shape, strides, bool(self._backend.is_contiguous(
        self._data)), bool(ambiguity_check))
    if ambiguous:
        raise RuntimeError("The tensor does not have unique dim order.")
    return order


# -- joining --------------------------------------------------------------------------


def _cat_grads(grad, dim, tensors_shape, needs):
    grads, start = [], 0
    for shape, need in zip(tensors_shape, needs):
        grads.append(grad.narrow(dim, start, shape[dim]) if need else None)
        start += shape[dim]
    return tuple(grads)


@primitive(complex=True, variants="function out", rule=_cat_rule, cost=costs.movement,
           cpu_precision=P.PROMOTE, aliases="concat concatenate",
           grad=Grad(each=_cat_grads))
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenates tensors along an existing dimension."""
    tensors = [x for x in tensors]
    if not tensors:
        raise ValueError(f"{dt.API_NAME}.cat(): expected a non-empty list of Tensors")
    if not isinstance(tensors[0], Tensor):
        raise TypeError(f"cat(): expected a sequence of Tensors, got "
                        f"{type(tensors[0]).__name__}")
    for i, x in enumerate(tensors):
        if isinstance(x, Tensor) and x.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    # PyTorch skips legacy empty 1-D tensors of shape (0,); with only those, any dim will do
    kept = [x for x in tensors if not (x.ndim == 1 and x.shape[0] == 0)]
    if not kept:
        return apply(OPS["cat"], *tensors, dim=0)
    if len(kept) < len(tensors):  # the skipped ones still take part in the result's dtype
        every = functools.reduce(dt.promote_types, (x._dtype for x in tensors))
        if every is not functools.reduce(dt.promote_types, (x._dtype for x in kept)):
            kept = [x if x._dtype is every else x.to(every) for x in kept]
    tensors = kept
    d = normalize_dim("cat", dim, tensors[0].ndim)
    return apply(OPS["cat"], *tensors, dim=d)


concat = concatenate = cat


def _stack_grads(grad, dim, needs):
    # PyTorch's StackBackward0: the gradient unbound along the new dimension
    return tuple(grad.select(dim, i) if need else None for i, need in enumerate(needs))


@composite(complex=True, variants="function out", cost=costs.movement, cpu_precision=P.PROMOTE,
           grad=Grad("StackBackward0", each=_stack_grads, operands=("*tensors",)))
def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Joins tensors of one shape along a new dimension."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")  # (PyTorch's words)
    shape = tensors[0]._data.shape
    for i, x in enumerate(tensors):
        if x._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{fmt_shape(shape)} at entry 0 and {fmt_shape(tuple(x.shape))} "
                               f"at entry {i}")
    d = normalize_dim("stack", dim, len(shape) + 1)
    with no_grad():  # one node, PyTorch's StackBackward0, with an edge per input
        if d < len(shape):
            # ATen's stack: cat along `d`, then split `d` by a view, so the result keeps
            # the inputs' memory format (channels_last stays channels_last)
            out = run_view("reshape", apply(OPS["cat"], *tensors, dim=d),
                           shape=shape[:d] + (len(tensors),) + shape[d:], copy=False)
        else:
            out = apply(OPS["cat"], *[unsqueeze(x, d) for x in tensors], dim=d)
    record_grad(OPS["stack"], tensors, {"dim": d}, out)
    return out


@composite(complex=True, variants="function", cost=costs.movement)
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joins tensors column-wise (along dim 1; dim 0 for 1-D tensors)."""
    tensors = list(tensors)
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


@composite(complex=True, variants="function", cost=costs.movement)
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joins tensors row-wise (1-D tensors become rows)."""
    return cat([x if x.ndim > 1 else unsqueeze(x, 0) for x in tensors], 0)


# -- strided views (SHAPE family: diagonal, unfold, as_strided) -----------------------


def _strided_rule(input, *, shape, steps, start):
    if len(start) != input.ndim or any(len(row) != input.ndim for row in steps):
        raise RuntimeError(f"strided_view: steps and start must give one entry per dimension "
                           f"of the input, a tensor of shape {fmt_shape(input.shape)}")
    return OutMeta(tuple(shape), input.dtype, None)


def strided_positions(shape: tuple, steps: tuple, start: tuple,
                      input_shape: tuple) -> Any:
    """The row-major flat position in the input of every element of
    `strided_view(input, shape, steps, start)`: a NumPy int64 array of `shape`."""
    import numpy as np

    contiguous = [math.prod(input_shape[d + 1:]) for d in range(len(input_shape))]
    pos = np.full(shape, sum(b * c for b, c in zip(start, contiguous)), dtype=np.int64)
    for k, row in enumerate(steps):
        along = np.arange(shape[k], dtype=np.int64) * sum(a * c for a, c in zip(row, contiguous))
        pos = pos + along.reshape((-1,) + (1,) * (len(shape) - k - 1))
    return pos


def _strided_grad(grad, shape, steps, start, input_shape):
    # the input's gradient: each output element's gradient added at its input position
    # (windows of `unfold` overlap, so positions repeat)
    pos = strided_positions(tuple(shape), steps, start, tuple(input_shape))
    index = Tensor._from_data(pos.reshape(-1), device=grad.device)
    flat = grad.new_zeros((math.prod(input_shape),))
    return flat.index_add(0, index, grad.reshape(-1)).reshape(input_shape)


@primitive(complex=True, variants="", rule=_strided_rule, view=True, cost=costs.view,
           grad=Grad("AsStridedBackward0", input=_strided_grad))
def strided_view(input: Tensor, shape: Sequence[int], steps: Sequence[Sequence[int]],
                 start: Sequence[int]) -> Tensor:
    """A view of `input` whose element `[j0, j1, ...]` is the input's element at index
    `start + j0 * steps[0] + j1 * steps[1] + ...` (index vectors, one entry per input
    dimension): what `diagonal`, `unfold` and `as_strided` are. Stated in indices rather
    than memory strides, so it means the same on every backend and in an exported graph.

    Kernel: `strided_view(input, *, shape, steps, start) -> a view`; every index it
    reaches is inside the input (the callers check)."""
    return _strided(input, tuple(shape), tuple(tuple(r) for r in steps), tuple(start),
                    "AsStridedBackward0")


def _strided(input: Tensor, shape: tuple, steps: tuple, start: tuple, label: str) -> Tensor:
    out = apply_labelled(OPS["strided_view"], label, input, shape=shape, steps=steps,
                         start=start)
    if input._strides_depth >= DEPTH:  # (no deeper chain: its strides, settled)
        keep_strides(input, input)
    out._strides_of = (input, input._data, out._data, "strided", (steps, start))
    out._strides_depth = input._strides_depth + 1
    return as_view(out, input, lambda b: _strided(b, shape, steps, start, label))


@composite(complex=True, cost=costs.view)
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A view of the diagonal of `input` in the plane of `dim1` and `dim2` (`offset`
    above the main one when positive, below when negative), as a new last dimension."""
    n = input.ndim
    d1, d2 = normalize_dim("diagonal", dim1, n), normalize_dim("diagonal", dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = int(offset)
    shape = tuple(input.shape)
    length = max(min(shape[d1] + min(offset, 0), shape[d2] - max(offset, 0)), 0)
    rest = [d for d in range(n) if d not in (d1, d2)]
    steps = [tuple(int(i == d) for i in range(n)) for d in rest]
    steps.append(tuple(int(i in (d1, d2)) for i in range(n)))
    start = [0] * n
    if length:
        start[d1], start[d2] = max(-offset, 0), max(offset, 0)
    return _strided(input, tuple(shape[d] for d in rest) + (length,), tuple(steps),
                    tuple(start), "DiagonalBackward0")


@composite(complex=True, variants="method", cost=costs.view)
def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """A view of every slice of `size` elements along `dimension`, `step` apart, as a new
    last dimension (the slices overlap when `step < size`)."""
    n = self.ndim
    d = normalize_dim("unfold", dimension, n)
    length = self.shape[d] if n else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size "
                           f"is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if n == 0:  # a 0-d tensor unfolds as one of one element
        return _strided(self, (size,), ((),), (), "UnfoldBackward0")
    shape = list(self.shape)
    shape[d] = (length - size) // step + 1
    steps = [tuple(int(i == k) * (step if k == d else 1) for i in range(n)) for k in range(n)]
    steps.append(tuple(int(i == d) for i in range(n)))
    return _strided(self, tuple(shape) + (size,), tuple(steps), (0,) * n, "UnfoldBackward0")
