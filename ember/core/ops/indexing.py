"""Indexing ops: `x[key]` and `x[key] = v`, gather/scatter, index_select, masks,
nonzero, and the views that pick part of a tensor (`narrow`, `select`, `split` ...).

Kernels (signatures of their rules):

    getitem        kernel(input, *index_tensors, index=spec, shape=) -> y. `spec` is a
                   tuple of ("int", i) | ("slice", start, stop, step) | ("none",) |
                   ("tensor", k) entries covering every dimension (no Ellipsis left; k
                   numbers the int64 index tensors). Basic indexing (no "tensor") returns
                   a view. PyTorch's rule, not NumPy's: "int" entries select first; the
                   tensor indices then broadcast together and their dimensions go where
                   the first stood if they are adjacent among the non-int entries, else
                   in front. Negative tensor indices count from the end.
    setitem        kernel(input, value, *index_tensors, index=spec, accumulate=) -> None:
                   writes `value` (broadcastable, same dtype) into input in place.
    assign         kernel(dst, src) -> None: copies src (broadcastable, same dtype) in.
    gather         kernel(input, index, dim=) -> y.
    scatter        kernel(input, index, src, dim=) -> y, a new buffer (also scatter_add).
    index_select   kernel(input, index, dim=) -> y.
    nonzero        kernel(input) -> int64 (n, ndim).
    scatter_reduce kernel(input, index, src, dim=, reduce=) -> y, a new buffer: each src
                   value reduced into the position of input it scatters to, with "prod",
                   "amax" or "amin" (NaN propagates); "sum" and "mean" never reach it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember.core import costs
from ember.core import dtype as dt
from ember.core import forward_ad as fw
from ember.core.apply import apply, apply_labelled, record_grad
from ember.core.creation import arange, full, zeros
from ember.core.declare import composite, primitive
from ember.core.determinism import alert_not_deterministic
from ember.core.dispatch import (
    kernel_refuses,
    refuse_unsigned,
    run,
    run_inplace,
    run_view,
    user_stacklevel,
)
from ember.core.errors import warn_once, with_context
from ember.core.grad_mode import no_grad, state
from ember.core.graph import record, relabel
from ember.core.host import python_scalar
from ember.core.indexing import (
    ParsedIndex,
    check_in_range,
    first_outside,
    full_slice,
    parse,
    parse_basic,
    unsqueeze_bools,
    view_label,
    write_label,
)
from ember.core.inplace import MULTI_OUTPUT_ERROR, apply_inplace, as_view, multi_output_views
from ember.core.memory_format import like_layout, row_major
from ember.core.opdef import OPS, Grad, OutMeta, metadata_rule
from ember.core.opdef import Precision as P
from ember.core.ops.elementwise import to_dtype, where
from ember.core.ops.shape import (
    broadcast_tensors,
    cat,
    empty_of,
    expanded_shape,
    in_layout,
    reshape,
)
from ember.core.shapes import broadcast_shapes, fmt_shape, normalize_dim
from ember.core.storage import cpp_type_name
from ember.core.tensor import Tensor
from ember.core.view_strides import DEPTH, keep_strides

SCALAR_TYPE_NAMES = dt.SCALAR_TYPE_NAMES  # the callers of this module import it from here


# -- rules ----------------------------------------------------------------------------


def _getitem_rule(input, *index_tensors, index, shape):
    # the index was parsed and checked in ember.core.indexing, which computed `shape`
    return OutMeta(shape, input.dtype, None)


def _setitem_rule(input, value, *index_tensors, index, accumulate=False):
    return None


def _assign_rule(dst, src):
    return None


# PyTorch's own words for an index tensor of a dtype its kernel does not take
_INDEX_DTYPE_ERRORS = {
    "gather": "gather(): Expected dtype int32/int64 for index",
    "scatter": "scatter(): Expected dtype int32/int64 for index",
    "index_select": "index_select(): Expected dtype int32 or int64 for index",
}


def long_index(op: str, index: Tensor) -> Tensor:
    """`index` for the kernels, which take int64: an int32 index (which PyTorch's gather,
    scatter and index_select take too) is widened, any other dtype refused with PyTorch's
    message for `op` ("gather", "scatter", "index_select" or "index_add")."""
    d = index._dtype
    if d is dt.int64:
        return index
    if d is dt.int32:
        return to_dtype(index, dt.int64)
    if op == "index_add":
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{SCALAR_TYPE_NAMES[d.name]}")
    raise RuntimeError(_INDEX_DTYPE_ERRORS[op])


def _check_index_tensor(op: str, index) -> None:
    if index.dtype is not dt.int64:
        raise RuntimeError(f"{op}: expected an int64 index tensor, got {index.dtype}")


def _check_gather_shape(input_shape: tuple, index_shape: tuple, dim: int) -> None:
    """PyTorch's gather_shape_check, before any index is read: a 0-d tensor counts as one
    element along one dimension."""
    inp, idx = input_shape or (1,), index_shape or (1,)
    if len(idx) != len(inp):
        raise with_context(RuntimeError("Index tensor must have the same number of dimensions "
                                        "as input tensor"),
                           f"gather: input {fmt_shape(input_shape)}, index "
                           f"{fmt_shape(index_shape)}")
    for d in range(len(inp)):
        if d != dim and idx[d] > inp[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{fmt_shape(index_shape)} to be no larger than self "
                               f"{fmt_shape(input_shape)} apart from dimension {dim}")


@metadata_rule
def _gather_rule(input, index, *, dim):
    _check_index_tensor("gather", index)
    if _numel(index.shape):  # PyTorch checks no shape for an empty index
        _check_gather_shape(tuple(input.shape), tuple(index.shape), dim)
    return OutMeta(index.shape, input.dtype, None)


def _numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _check_scatter_shape(op: str, input_shape: tuple, index_shape: tuple,
                         src_shape: tuple | None, dim: int) -> None:
    """PyTorch's scatter_shape_check, before any index is read (`src_shape` None: a
    scalar value): a 0-d tensor counts as one element along one dimension."""
    inp, idx = input_shape or (1,), index_shape or (1,)
    src = None if src_shape is None else src_shape or (1,)
    for other, name in ((inp, "self"), (src, "src")):
        if other is not None and len(idx) != len(other):
            raise with_context(RuntimeError(f"Index tensor must have the same number of "
                                            f"dimensions as {name} tensor"),
                               f"{op}: self {fmt_shape(input_shape)}, index "
                               f"{fmt_shape(index_shape)}, src {src_shape}")
    for d in range(len(inp)):
        if (src is not None and idx[d] > src[d]) or (d != dim and idx[d] > inp[d]):
            tail = ("" if src is None else
                    f" and to be no larger size than src {fmt_shape(src_shape)}")
            raise with_context(RuntimeError(
                f"Expected index {fmt_shape(index_shape)} to be no larger than self "
                f"{fmt_shape(input_shape)} apart from dimension {dim}{tail}"),
                f"{op}, along dimension {d}")


def _scatter_rule(op: str):
    @metadata_rule
    def rule(input, index, src, *, dim):
        _check_index_tensor(op, index)
        if not _numel(index.shape):  # PyTorch checks no shape for an empty index
            return OutMeta(input.shape, input.dtype, None)
        _check_scatter_shape(op, tuple(input.shape), tuple(index.shape), tuple(src.shape), dim)
        if src.dtype is not input.dtype:
            raise _scatter_dtype_error()
        return OutMeta(input.shape, input.dtype, None)
    return rule


def _scatter_dtype_error() -> RuntimeError:
    # PyTorch's text for scatter, scatter_add and scatter_reduce alike
    return RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")


def _same_scalar_type(op: str, input: Tensor, source: Tensor) -> None:
    """index_add's and index_reduce's check that `source` has `input`'s dtype."""
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): self ({SCALAR_TYPE_NAMES[input.dtype.name]}) and source "
                           f"({SCALAR_TYPE_NAMES[source.dtype.name]}) must have the same "
                           f"scalar type")


@metadata_rule
def _index_select_rule(input, index, *, dim):
    _check_index_tensor("index_select", index)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    shape = list(input.shape)
    shape[dim] = index.numel()
    return OutMeta(tuple(shape), input.dtype, None)


def _nonzero_rule(input):
    return None  # the data decides the shape; the result is int64


# -- getitem and setitem --------------------------------------------------------------


def _parsed(index: tuple, index_tensors: list, shape: tuple, basic: bool) -> ParsedIndex:
    return ParsedIndex(index, tuple(index_tensors), shape, basic)


def _getitem_grad(grad, input_shape, index, index_tensors, shape):
    parsed = _parsed(index, index_tensors, shape, not index_tensors)
    return index_put_into_zeros(grad, input_shape, parsed)


def _index(input: Tensor, parsed: ParsedIndex, key: Any, label: str | None = None) -> Tensor:
    if label is None:
        label = view_label(key, tuple(input.shape)) if parsed.basic else "IndexBackward0"
    if not parsed.basic:
        return apply_labelled(OPS["getitem"], label, input, *parsed.tensors,
                              index=parsed.spec, shape=parsed.shape)
    # a view by ints, slices, None and ...: parse_basic has checked the key
    out = as_view(run_view("getitem", input, index=parsed.spec, shape=parsed.shape), input,
                  lambda b: getitem(b, key))
    if input._strides_depth >= DEPTH:  # (no deeper chain: its strides, settled)
        keep_strides(input, input)
    out._strides_of = (input, input._data, out._data, "index", parsed.spec)
    out._strides_depth = input._strides_depth + 1
    if state.enabled and input._requires_grad or fw.active:
        record_grad(OPS["getitem"], (input,), {"index": parsed.spec, "shape": parsed.shape},
                    out, label)
    return out


@primitive(complex=True, variants="", rule=_getitem_rule, view=True, cost=costs.movement,
           operators="__getitem__", grad=Grad("IndexBackward0", input=_getitem_grad))
def getitem(input: Tensor, key: Any) -> Tensor:
    """`input[key]`: basic indexing (ints, slices, None, ...) returns a view; tensor and
    mask indices copy. PyTorch's rules (see ember.core.indexing)."""
    parsed = parse_basic(input._data.shape, key)
    if parsed is None:
        x, key = unsqueeze_bools(input, key)  # bool scalars: advanced indices of unit dims
        parsed = parse(x, key)
        if x is not input:
            return _index(x, parsed, key)
    return _index(input, parsed, key)


def index_put_into_zeros(g: Tensor, shape: tuple, parsed: ParsedIndex) -> Tensor:
    """Zeros of `shape` with `g` written (accumulated, for tensor indices) at `parsed`:
    the gradient of indexing, itself differentiable."""
    out = zeros(shape, dtype=g.dtype, device=g.device)
    run_inplace("setitem", out, g, *parsed.tensors, index=parsed.spec,
                accumulate=not parsed.basic)
    if state.enabled and g._requires_grad or fw.active:
        record("IndexPutBackward0", _bw_index_put_zeros, (g,), out, parsed=parsed)
    return out


def _bw_index_put_zeros(node, gg):
    return _getitem_parsed(gg, node.attrs["parsed"])


def _getitem_parsed(x: Tensor, parsed: ParsedIndex) -> Tensor:
    return apply_labelled(OPS["getitem"], "IndexBackward0", x, *parsed.tensors,
                          index=parsed.spec, shape=parsed.shape)


def _index_put_dtype_error(input: Tensor, value: Tensor) -> RuntimeError:
    return RuntimeError(f"Index put requires the source and destination dtypes match, got "
                        f"{SCALAR_TYPE_NAMES[input.dtype.name]} for the destination and "
                        f"{SCALAR_TYPE_NAMES[value.dtype.name]} for the source.")


def _assignable_number(value: Any) -> bool:
    """Whether `input[key] = value` takes `value` as a number: as PyTorch, a Python bool,
    int, float or complex (so `np.float64`, a float subclass) or a NumPy integer; not
    `np.float32`, `np.bool_`, a 0-d array, a `Fraction` or a `Decimal`."""
    return isinstance(value, (int, float, complex, np.integer))


def _c_type_name(value: Any) -> str:
    """The type's name as CPython's `tp_name` spells it, which PyTorch's messages print: a
    class written in Python by its bare name (`Fraction`), a C type with its module
    (`numpy.float32`, `decimal.Decimal`), a builtin alone (`list`)."""
    kind = type(value)
    if kind.__module__ == "builtins" or kind.__flags__ & _HEAP_TYPE:
        return kind.__name__
    return f"{kind.__module__}.{kind.__name__}"


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a `class` statement


def _write_value(input: Tensor, value: Any, parsed: ParsedIndex, *,
                 accumulate: bool = False) -> Tensor:
    """The value `input[key] = value` (or `index_put`) writes at `parsed`, checked and cast
    to `input`'s dtype as PyTorch does it:

    - a Python number is converted (a value outside the dtype's range raises); a NumPy
      float or bool scalar is refused, as PyTorch refuses it;
    - through basic indices only (ints, slices, None, ...) a tensor is copied as `copy_`
      copies: any dtype, cast (a float into an integer tensor truncates);
    - through tensor indices its dtype must be `input`'s ("Index put requires the source
      and destination dtypes match"), except for one element written through a single
      bool mask, which PyTorch hands to `masked_fill_` as a number. (PyTorch does that for
      a value on the CPU only; ember on every device, so a program's dtypes work the same
      on all of them.)

    Leading dimensions of size 1 are dropped first, as PyTorch drops them."""
    if not isinstance(value, Tensor):
        if not _assignable_number(value):
            raise TypeError(f"can't assign a {_c_type_name(value)} to a {input.type()}")
        value = full((), python_scalar(value), dtype=input._dtype, device=input.device)
    if value.device != input.device:
        if not (value.ndim == 0 and value.device.type == "cpu"):  # (goes anywhere)
            raise RuntimeError(f"setitem: expected value on device {input.device}, got "
                               f"{value.device}")
        value = value.to(input.device)
    lead = 0
    while lead < value.ndim and value.shape[lead] == 1:
        lead += 1
    if lead:
        value = reshape(value, tuple(value.shape[lead:]))
    if parsed.mask is not None and value.numel() == 1 and not accumulate:
        if parsed.mask.dtype is not dt.bool_:
            raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with "
                               "dtype unsigned char")
        if value._dtype is not input._dtype:  # the number masked_fill_ would be given
            dt.fit_scalar(python_scalar(value.item()), input._dtype)
        if input._dtype in dt.LIMITED_DTYPES:  # (checked here: no call on the hot path)
            refuse_unsigned("masked_fill", input)
        return to_dtype(reshape(value, ()), input._dtype)
    if parsed.basic:  # PyTorch copies into the view: expand's words
        expanded_shape(value, parsed.shape, "setitem")
    else:
        try:
            target = broadcast_shapes("setitem", tuple(value.shape), parsed.shape)
        except RuntimeError:
            target = None
        if target != parsed.shape:
            raise with_context(RuntimeError(
                f"shape mismatch: value tensor of shape {fmt_shape(tuple(value.shape))} "
                f"cannot be broadcast to indexing result of shape {fmt_shape(parsed.shape)}"),
                "setitem (advanced indexing)")
    if not parsed.basic:
        if value._dtype is not input._dtype:
            raise _index_put_dtype_error(input, value)
        if input._dtype in dt.LIMITED_DTYPES:  # (accumulate too: PyTorch's one kernel)
            refuse_unsigned("index_put", input)
    return to_dtype(value, input._dtype)


@primitive(complex=True, variants="", rule=_setitem_rule, mutates=True, cost=costs.movement,
           operators="__setitem__")
def setitem(input: Tensor, key: Any, value: Any) -> None:
    """`input[key] = value`, in place (differentiable through `value` and `input`).
    Bool scalars in `key` index a new dimension of size 1, as in PyTorch; a key that is
    just `False` writes nothing, and just `True` writes as `input[None]` does."""
    if key is False:  # PyTorch's shortcut: nothing written, nothing checked
        return
    if key is True:
        key = None
    written = key
    x, key = unsqueeze_bools(input, key)  # x: input, or a view of it with unit dimensions
    parsed = parse(x, key)
    raw, value = value, _write_value(x, value, parsed)
    if not (state.enabled and (input._requires_grad or value._requires_grad
                               or input._view_mode is not None) or fw.active):
        run_inplace("setitem", x, value, *parsed.tensors, index=parsed.spec,
                    accumulate=False)
        input._vc[0] += 1
        return
    if input._view_mode == "multi" and parsed.basic and input._requires_grad and state.enabled:
        _refuse_piece_view_write(x, key)
    label = write_label(written, tuple(input.shape), raw)
    if label == "CopySlices" and state.enabled and input._requires_grad and input._node is None:
        # PyTorch writes through a view its indexing makes: that view's words
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if x is input:
        apply_inplace(input, lambda old: _index_put(old, parsed, value, label), value,
                      op="setitem")
    else:  # written through the unit dimensions, then shaped back
        apply_inplace(input, lambda old: relabel(reshape(_index_put(
            reshape(old, tuple(x.shape)), parsed, value), tuple(input.shape)), label,
            (old, value)), value, op="setitem")


def _refuse_piece_view_write(x: Tensor, key: Any) -> None:
    """`pieces[0][key] = v` for a piece of `split` & co that requires grad: PyTorch writes
    through the view its indexing makes (`Output 0 of Select ...`), or into the piece
    itself where the key makes none (a lone full slice, `...`: apply_inplace names the
    piece)."""
    label = view_label(key, tuple(x.shape))
    if label == "AliasBackward0" or (isinstance(key, slice) and x.ndim and
                                     full_slice(key, x.shape[0])):
        return
    raise with_context(RuntimeError(MULTI_OUTPUT_ERROR.format(0, label[:label.rfind(
        "Backward")])), f"a view of shape {tuple(x.shape)} indexed by {key!r}")


def _index_put(x: Tensor, parsed: ParsedIndex, value: Tensor,
               label: str = "IndexPutBackward0") -> Tensor:
    """Out of place: a copy of `x` with `value` written at `parsed` (its grad_fn named
    `label`)."""
    out = run("clone", x)
    if not row_major(x):  # (PyTorch's clone keeps a permuted x's strides)
        out = in_layout(out, like_layout(x, empty_of(out)))
    run_inplace("setitem", out, value, *parsed.tensors, index=parsed.spec, accumulate=False)
    if state.enabled and (x._requires_grad or value._requires_grad) or fw.active:
        record(label, _bw_index_put, (x, value), out, parsed=parsed,
               vshape=tuple(value.shape))
    return out


def _bw_index_put(node, g):
    parsed = node.attrs["parsed"]
    gx = gv = None
    if node.needs[0]:
        gx = _index_put(g, parsed, zeros((), dtype=g.dtype, device=g.device))
    if node.needs[1]:
        gv = _getitem_parsed(g, parsed).sum_to_size(node.attrs["vshape"])
    return gx, gv


@primitive(complex=True, variants="", rule=_assign_rule, mutates=True, cost=costs.movement)
def assign(dst: Tensor, src: Tensor) -> None:
    """Copies `src` (broadcastable, same dtype and device) into `dst`'s storage."""
    run_inplace("assign", dst, src)
    dst._vc[0] += 1


# -- gather and scatter ---------------------------------------------------------------


# The gradients below reuse indices their forward op checked, and max/min(dim) gather at
# the indices argmax/argmin found: they run the primitives without `check_in_range` again
# (its min/max of the index cost two reductions and, off the CPU, two transfers).


def gather_in_bounds(input: Tensor, d: int, index: Tensor) -> Tensor:
    """`gather` along normalized dim `d` at indices known to be in bounds."""
    return apply(OPS["gather"], input, index, dim=d)


def _gather_grad(grad, index, dim, input_shape):
    z = zeros(input_shape, dtype=grad.dtype, device=grad.device)
    # one pick per row: no repeats to add up
    op = OPS["scatter"] if index.shape[dim] == 1 else OPS["scatter_add"]
    return apply(op, z, index, grad, dim=dim)


@primitive(complex=True, rule=_gather_rule, cost=costs.movement, grad=Grad(input=_gather_grad))
def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Values of `input` along `dim` at `index` (`out[i][j] = input[index[i][j]][j]` for
    dim 0)."""
    refuse_unsigned("scatter_gather_tensor_cpu", input)
    index = long_index("gather", index)
    d = normalize_dim("gather", dim, input.ndim)
    if not input.ndim:  # PyTorch reads a 0-d input as one element along dim 0
        return reshape(gather(reshape(input, (1,)), 0, reshape(index, (-1,))),
                       tuple(index.shape))
    if not index.numel():  # nothing read (and no shape checked), still in the graph
        return reshape(reshape(input, (-1,))[:0], tuple(index.shape))
    _check_gather_shape(tuple(input.shape), tuple(index.shape), d)
    check_in_range("gather", index, input.shape[d], d)
    if not index.ndim:  # a 0-d index into a 1-d input: one element, as PyTorch reads it
        return reshape(apply(OPS["gather"], input, reshape(index, (1,)), dim=d), ())
    return apply(OPS["gather"], input, index, dim=d)


@composite(complex=True, cost=costs.movement)
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """The values of `input` at `indices` along `dim` (NumPy's take_along_axis): the two
    broadcast against each other outside `dim`; with `dim=None`, over the flattened
    input."""
    if indices.dtype is not dt.int64:
        raise RuntimeError(f"{dt.API_NAME}.take_along_dim(): dtype of indices should be Long "
                           f"but got {SCALAR_TYPE_NAMES[indices.dtype.name]}")
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    d = normalize_dim("take_along_dim", dim, input.ndim)
    _require_dims("take_along_dim", input, dim)
    if indices.ndim != input.ndim:
        raise RuntimeError(f"take_along_dim: input and indices should have the same number "
                           f"of dimensions, but got {input.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    outside = [broadcast_shapes("take_along_dim", (a,), (b,))[0] if i != d else None
               for i, (a, b) in enumerate(zip(input.shape, indices.shape))]
    input = input.expand(tuple(s if s is not None else input.shape[d] for s in outside))
    # PyTorch reads the indices modulo the size here (gather alone refuses one outside)
    if indices.numel():  # (a zero size with indices: PyTorch's ZeroDivisionError too)
        indices = indices.remainder(input.shape[d])
    indices = indices.expand(tuple(s if s is not None else indices.shape[d]
                                   for s in outside))
    return gather(input, d, indices)


def _pad_to(g: Tensor, shape: tuple) -> Tensor:
    """Zero-pad `g` up to `shape` (src may be larger than index in scatter)."""
    if tuple(g.shape) == shape:
        return g
    out = zeros(shape, dtype=g.dtype, device=g.device)
    key = tuple(slice(0, s) for s in g.shape)
    return _index_put(out, parse(out, key), g)


def _warn_scatter_reduce_once() -> None:
    """PyTorch warns once per process that `scatter(..., reduce=)` of a tensor is deprecated."""
    warn_once(f"The reduce argument of {dt.API_NAME}.scatter with Tensor src is deprecated "
              "and will be removed in a future PyTorch release. Use "
              f"{dt.API_NAME}.scatter_reduce instead for more reduction options.",
              UserWarning, stacklevel=user_stacklevel())


@primitive(complex=True, variants="function method inplace", rule=_scatter_rule("scatter"),
           cost=costs.movement, grad=Grad(
               input=lambda grad, index, dim: grad.scatter(dim, index, 0.0),
               src=lambda grad, index, dim, src_shape: _pad_to(
                   gather_in_bounds(grad, dim, index), src_shape)),
           node_label=lambda input, dim, index, src=None, **kwargs:
           None if isinstance(src, Tensor) else "ScatterBackward1")  # (scatter.value)
def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """A copy of `input` with `src` (or `value`) written along `dim` at `index`;
    `reduce="add"` or `"multiply"` combines them with what is there instead."""
    refuse_unsigned("scatter_gather_tensor_cpu", input)
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if isinstance(src, Tensor):
            _warn_scatter_reduce_once()
        else:
            src = full(tuple(index.shape), src if src is not None else value,
                       dtype=input.dtype, device=input.device)
        if reduce == "add":
            return scatter_add(input, dim, index, src)
        return scatter_reduce(input, dim, index, src, "prod")
    index = long_index("scatter", index)
    d = normalize_dim("scatter", dim, input.ndim)
    if src is None:
        src = value
    if isinstance(src, Tensor) and src.dtype is not input.dtype:
        raise _scatter_dtype_error()
    if not index.numel():  # nothing written (and no shape checked)
        return input.clone()
    _check_scatter_shape("scatter", tuple(input.shape), tuple(index.shape),
                         tuple(src.shape) if isinstance(src, Tensor) else None, d)
    # the indices first, then the value, as PyTorch checks them (a 0-d input: one element)
    check_in_range("scatter", index, input.shape[d] if input.ndim else 1, d)
    if not isinstance(src, Tensor):
        src = full(tuple(index.shape), src, dtype=input.dtype, device=input.device)
    if input.ndim and not index.ndim:  # a 0-d index into a 1-d input: one element
        index, src = reshape(index, (1,)), reshape(src, (-1,))[:1]
    if not input.ndim:  # PyTorch reads a 0-d input as one element along dim 0
        return reshape(scatter(reshape(input, (1,)), 0, reshape(index, (-1,)),
                               reshape(src, (-1,))), ())
    return apply(OPS["scatter"], input, index, to_dtype(src, input._dtype), dim=d)


@primitive(complex=True, variants="function method inplace", rule=_scatter_rule("scatter_add"),
           cost=costs.movement, precision=P.PROMOTE, grad=Grad(
               input=lambda grad: grad,
               src=lambda grad, index, dim, src_shape: _pad_to(
                   gather_in_bounds(grad, dim, index), src_shape)))
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of `input` with `src` added along `dim` at `index` (repeats accumulate)."""
    index = long_index("scatter", index)
    d = normalize_dim("scatter_add", dim, input.ndim)
    if src.dtype is not input.dtype:
        raise _scatter_dtype_error()
    if not index.numel():  # nothing added (and no shape checked)
        return input.clone()
    if not input.ndim:  # PyTorch reads a 0-d input as one element along dim 0
        return reshape(scatter_add(reshape(input, (1,)), 0, reshape(index, (-1,)),
                                   reshape(src, (-1,))), ())
    _check_scatter_shape("scatter_add", tuple(input.shape), tuple(index.shape),
                         tuple(src.shape), d)
    check_in_range("scatter_add", index, input.shape[d], d)
    if not index.ndim:  # a 0-d index into a 1-d input: one element, as PyTorch reads it
        index, src = reshape(index, (1,)), reshape(src, (-1,))[:1]
    return apply(OPS["scatter_add"], input, index, to_dtype(src, input._dtype), dim=d)


def _index_select_grad(grad, index, dim, input_shape):
    key = (slice(None),) * dim + (reshape(index, (-1,)),)
    z = zeros(input_shape, dtype=grad.dtype, device=grad.device)
    return index_put_into_zeros(grad, input_shape, parse(z, key))


@primitive(complex=True,
           rule=_index_select_rule, cost=costs.movement, grad=Grad(input=_index_select_grad))
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Entries of `input` along `dim` at the 1-D `index`."""
    refuse_unsigned("index_select", input)
    index = long_index("index_select", index)
    d = normalize_dim("index_select", dim, input.ndim)
    if not input.ndim:  # PyTorch reads a 0-d input as one element along dim 0
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                               f"{index.numel()} value(s)")
        return reshape(index_select(reshape(input, (1,)), 0, reshape(index, (1,))), ())
    if input.ndim > 1 and not input.shape[d] and index.numel():
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if d == 1:  # PyTorch's kernel for dim 1 names the first bad index, in a RuntimeError
        bad = first_outside(index, 0, input.shape[d])
        if bad is not None:
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim="
                               f"{input.shape[d]}")
    check_in_range("index_select", index, input.shape[d], d, select=True)
    return apply(OPS["index_select"], input, index, dim=d)


def _index_fill_label(input: Tensor, dim: int, index: Tensor, value: Any) -> str:
    """PyTorch's node for index_fill: overload 0 fills a number, overload 1 a tensor."""
    return "IndexFillBackward1" if isinstance(value, Tensor) else "IndexFillBackward0"


@composite(complex=True, variants="function method inplace", cost=costs.movement,
           node_label=_index_fill_label)
def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of `input` with `value` at positions `index` along `dim`."""
    d = normalize_dim("index_fill", dim, input.ndim)
    if index.dtype is not dt.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if not input.ndim:  # PyTorch reads a 0-d input as one element along dim 0
        return reshape(index_fill(reshape(input, (1,)), 0, index, value), ())
    if isinstance(value, Tensor):  # written as the number it holds: any dtype
        if value.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        if value.dtype is not input.dtype:
            dt.fit_scalar(python_scalar(value.item()), input.dtype)
            value = to_dtype(value, input.dtype)
    else:  # the value is checked before the indices, as PyTorch checks them
        value = dt.fit_scalar(python_scalar(value), input.dtype)
    size = input.shape[d]
    bad = first_outside(index, -size, size)  # (named with its dimension, unlike x[key]'s)
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    key = (slice(None),) * d + (reshape(index, (-1,)),)
    out = input.clone()
    setitem(out, key, value)
    return out


def _check_vector_index(op: str, index: Tensor) -> None:
    """PyTorch's first check of index_add's and index_reduce's index: at most one dim."""
    if index.ndim > 1:
        raise IndexError(f"{op}_(): Index is supposed to be a vector, but got dim: "
                         f"{index.ndim} with type: {SCALAR_TYPE_NAMES[index.dtype.name]} and "
                         f"size: {list(index.shape)}")


def _check_index_add_shapes(input: Tensor, d: int, index: Tensor, source: Tensor) -> None:
    """PyTorch's checks of index_add's source, in its order: one slice per index, then
    `input`'s shape apart from `d`."""
    if source.ndim > d and index.numel() != source.shape[d]:
        raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal "
                           f"to source.size(dim): ({source.shape[d]}), for dim: {d}")
    if source.ndim != input.ndim or any(a != b for i, (a, b) in
                                        enumerate(zip(input.shape, source.shape)) if i != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input.shape)} "
                           f"source.shape = {list(source.shape)}")


@composite(complex=True, variants="function method inplace", cost=costs.movement,
           node_label="IndexAddBackward0")
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *,
              alpha: Any = 1) -> Tensor:
    """A copy of `input` with `alpha * source` added at `index` along `dim` (repeats
    accumulate)."""
    long = isinstance(index, Tensor) and index.dtype is dt.int64
    _check_vector_index("index_add", index)
    index = long_index("index_add", index)
    d = normalize_dim("index_add", dim, input.ndim)
    if not input.ndim:  # PyTorch reads a 0-d input as one element along dim 0
        if source.ndim:
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding "
                               f"the specified dimension. Got self.shape = [] source.shape = "
                               f"{list(source.shape)}")
        return reshape(index_add(reshape(input, (1,)), 0, reshape(index, (-1,)),
                                 reshape(source, (1,)).expand(index.numel()), alpha=alpha), ())
    _check_index_add_shapes(input, d, index, source)
    _same_scalar_type("index_add_", input, source)
    if input.ndim > 1 and not input.numel():  # PyTorch's kernel returns at once
        return input.clone()
    # PyTorch's CPU kernel adds along the first or last dim of a tensor of more dims
    # through scatter_add (for int64 indices and alpha 1), whose error names the first bad
    # index (RuntimeError); otherwise it adds slice by slice and says "index out of range
    # in self" (IndexError)
    scatters = long and alpha == 1 and d in (0, input.ndim - 1) and input.ndim > 1
    check_in_range("index_add_", index, input.shape[d], d, select=not scatters)
    src = source * alpha if alpha != 1 else source
    shape = [1] * input.ndim
    shape[d] = index.numel()
    full_index = reshape(index, tuple(shape)).expand(tuple(src.shape))
    return scatter_add(input, d, full_index, to_dtype(src, input.dtype))


# -- masks ----------------------------------------------------------------------------


def _masked_fill_label(input: Any, mask: Any, value: Any) -> str:
    return "MaskedFillBackward1" if isinstance(value, Tensor) else "MaskedFillBackward0"


@composite(complex=True, node_label=_masked_fill_label,
           variants="function method inplace", cost=costs.pointwise(1))
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """A copy of `input` with `value` where `mask` is true."""
    refuse_unsigned("masked_fill", input)
    if mask.dtype is not dt.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{cpp_type_name(mask.dtype)}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        value = to_dtype(value, input._dtype)
    elif input._dtype.is_complex:
        value = complex(python_scalar(value))
    elif not input._dtype.is_floating_point:
        value = dt.fit_scalar(python_scalar(value), input._dtype)
        value = int(value) if input._dtype is not dt.bool_ else bool(value)
    else:
        value = float(dt.fit_scalar(python_scalar(value), input._dtype))
    if not (row_major(mask) and row_major(input)):
        # PyTorch fills a row-major clone of the input: a full, row-major mask leads
        # where's iteration to that layout (the mask is no part of the graph)
        mask = mask.expand(broadcast_shapes("masked_fill", tuple(mask.shape),
                                            tuple(input.shape))).contiguous()
    out = where(mask, value, input)
    return out if out._dtype is input._dtype else to_dtype(out, input._dtype)


@composite(complex=True, node_label="MaskedSelectBackward0",
           cost=costs.movement)
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of `input` where `mask` (broadcast) is true, as a 1-D tensor."""
    if mask.dtype is not dt.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    broadcast_shapes("masked_select", tuple(mask.shape), tuple(input.shape))  # (its order)
    input, mask = broadcast_tensors(input, mask)
    if not input.ndim:  # a 1-D result even for 0-d operands, as PyTorch's
        input, mask = reshape(input, (1,)), reshape(mask, (1,))
    return getitem(input, mask)


@primitive(complex=True, rule=_nonzero_rule, cost=costs.movement)
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of the non-zero elements, one row per element (or one tensor per dim)."""
    refuse_unsigned("nonzero_count_cpu", input)
    out = run("nonzero", input)
    if as_tuple:
        if input.ndim == 0:  # PyTorch treats a 0-d tensor as 1-d here
            return (reshape(run("nonzero", reshape(input, (1,))), (-1,)),)
        return tuple(out[:, i] for i in range(input.ndim))
    return out


@composite(variants="method")
def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Fills the main diagonal with `fill_value`, in place. A tall matrix's diagonal
    restarts after one skipped row with `wrap=True` (NumPy's and PyTorch's rule)."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")  # (PyTorch's words)
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.ndim == 2 and wrap and self.shape[0] > self.shape[1] + 1:
        step = self.shape[1] + 1  # the diagonal's stride in the flattened matrix
        flat = arange(0, self.numel(), step, device=self.device)
        rows, cols = flat // self.shape[1], flat % self.shape[1]
        setitem(self, (rows, cols), fill_value)
        return self
    n = min(self.shape)
    idx = arange(n, device=self.device)
    setitem(self, tuple(idx for _ in range(self.ndim)), fill_value)
    return self


# -- views of parts -------------------------------------------------------------------


def _require_dims(op: str, input: Tensor, dim: int) -> None:
    """PyTorch's IndexError for an op that needs a dimension, given a 0-d tensor."""
    if not input.ndim:
        raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions")


@composite(complex=True, cost=costs.view)
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A view of `length` elements of `dim` from `start`."""
    if not input.ndim:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:  # (PyTorch checks it before the dim and the start)
        raise RuntimeError("narrow(): length must be non-negative.")
    d = normalize_dim("narrow", dim, input.ndim)
    size = input.shape[d]
    if not -size <= start <= size:
        raise with_context(IndexError(f"start out of range (expected to be in range of "
                                      f"[{-size}, {size}], but got {start})"),
                           f"narrow: dim {d} of shape {tuple(input.shape)}")
    if start < 0:
        start += size
    if start + length > size:
        raise with_context(RuntimeError(f"start ({start}) + length ({length}) exceeds "
                                        f"dimension size ({size})."),
                           f"narrow: dim {d} of shape {tuple(input.shape)}")
    key = (slice(None),) * d + (slice(start, start + length),)
    return _index(input, parse_basic(input._data.shape, key), key, "SliceBackward0")


@composite(complex=True, cost=costs.view)
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """A view of index `index` of dimension `dim` (which it removes)."""
    if not input.ndim:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim("select", dim, input.ndim)
    i, n = int(index), input._data.shape[d]
    if not -n <= i < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    key = (slice(None),) * d + (i,)
    return _index(input, parse_basic(input._data.shape, key), key)


@composite(complex=True, node_label="UnbindBackward0",
           cost=costs.view)
def unbind(input: Tensor, dim: int = 0) -> tuple:
    """Every slice along `dim`, as views."""
    _require_dims("unbind", input, dim)
    d = normalize_dim("unbind", dim, input.ndim)
    return multi_output_views(tuple(select(input, d, i) for i in range(input.shape[d])))


def _split_method(self: Tensor, split_size: Any, dim: int = 0) -> tuple:
    # PyTorch names the argument of Tensor.split `split_size` (torch.split's is
    # `split_size_or_sections`): `x.split(split_size=[a, b], dim=-1)`
    return multi_output_views(_split(self, split_size, dim))


_split_method.__qualname__ = "Tensor.split"  # (named so in argument errors, as PyTorch's)


def _split_label(input: Any, *args: Any, **kwargs: Any) -> str:
    # (the size is `split_size=` to the method, `split_size_or_sections=` to the function)
    sizes = args[0] if args else kwargs.get("split_size", kwargs.get("split_size_or_sections"))
    return "SplitBackward0" if isinstance(sizes, int) else "SplitWithSizesBackward0"


@composite(complex=True, node_label=_split_label,
           cost=costs.view, method=_split_method)
def split(input: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """Splits into chunks of a given size, or of the given list of sizes (views)."""
    return multi_output_views(_split(input, split_size_or_sections, dim))


def _split(input: Tensor, split_size_or_sections: Any, dim: int) -> tuple:
    if not input.ndim:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = normalize_dim("split", dim, input.ndim)
    size = input.shape[d]
    if isinstance(split_size_or_sections, Tensor) and split_size_or_sections.ndim == 0:
        split_size_or_sections = int(split_size_or_sections)  # (PyTorch's `split(t.size(0))`)
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0:
            raise with_context(RuntimeError(f"split expects split_size be non-negative, but "
                                            f"got split_size={step}"),
                               f"split: tensor of shape {tuple(input.shape)}")
        if step == 0 and size:
            raise with_context(RuntimeError(f"split_size can only be 0 if dimension size is "
                                            f"0, but got dimension size of {size}"),
                               f"split: dim {d} of shape {tuple(input.shape)}")
        sizes = [min(step, size - s) for s in range(0, size, step)] if size else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != size:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(input, d, start, s))
        start += s
    return tuple(out)


def _chunk_label(input: Any, chunks: Any = 1, dim: int = 0) -> str:
    # (PyTorch's chunk of an empty dim calls split_with_sizes: `chunks` empty pieces)
    empty = isinstance(input, Tensor) and input.ndim and \
        input.shape[normalize_dim("chunk", dim, input.ndim)] == 0
    return "SplitWithSizesBackward0" if empty else "SplitBackward0"


@composite(complex=True, node_label=_chunk_label,
           cost=costs.view)
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Splits into `chunks` nearly equal pieces (views)."""
    if chunks <= 0:
        raise with_context(RuntimeError(f"chunk expects `chunks` to be greater than 0, got: "
                                        f"{chunks}"), f"chunk: tensor of shape "
                                                      f"{tuple(input.shape)}")
    if not input.ndim:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = normalize_dim("chunk", dim, input.ndim)
    if not input._data.shape[d]:  # (PyTorch: `chunks` empty pieces)
        return split(input, [0] * chunks, d)
    step = -(-input.shape[d] // chunks)
    return split(input, step, d)


@composite(complex=True, cost=costs.view)
def tensor_split(input: Tensor, indices_or_sections: Any = None, dim: int = 0, *,
                 sections: int | None = None, indices: Any = None,
                 tensor_indices_or_sections: Tensor | None = None) -> tuple:
    """Splits into that many pieces whose sizes differ by at most one, or at the given
    indices along `dim` (views, as NumPy's array_split). The split is given by position,
    or by the keyword of PyTorch's overload that takes it: `sections=`, `indices=`
    (torchvision's `tensor_split(img, indices=(-1,), dim=-3)`) or
    `tensor_indices_or_sections=`."""
    given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections)
             if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() received an invalid combination of arguments")
    indices_or_sections = given[0]
    d = normalize_dim("tensor_split", dim, input.ndim)
    n = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {indices_or_sections.ndim} dims")
        if indices_or_sections.dtype is not dt.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have "
                               f"dtype of long, but got "
                               f"{SCALAR_TYPE_NAMES[indices_or_sections.dtype.name]}")
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        if indices_or_sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got "
                               f"{indices_or_sections}")
        q, r = divmod(n, indices_or_sections)
        return _split(input, [q + 1 if i < r else q for i in range(indices_or_sections)], d)
    bounds = [min(max(int(i) + n if int(i) < 0 else int(i), 0), n)
              for i in indices_or_sections]
    out, start = [], 0
    for stop in bounds + [n]:  # (an index below the one before: an empty piece there, and
        out.append(narrow(input, d, start, max(stop - start, 0)))  # the next from it)
        start = stop
    return tuple(out)



# -- index writes and reads of the REDUCE family: take, put, index_copy, index_put,
# scatter_reduce, index_reduce, masked_scatter, argwhere, nonzero_static ---------------


def _flat_index(op: str, index: Tensor, n: int) -> Tensor:
    """`index` into a flattened tensor of `n` elements, negative ones counted from the
    end; PyTorch's IndexError for one outside [-n, n)."""
    if index.dtype is not dt.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got "
                           f"{SCALAR_TYPE_NAMES[index.dtype.name]}")
    flat = reshape(index, (-1,))
    if not n and flat.numel():
        raise IndexError("take(): tried to take from an empty tensor" if op == "take" else
                         "put_(): Tried to put elements into an empty tensor")
    bad = first_outside(flat, -n, n)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    return where(flat < 0, flat + n, flat)


@composite(complex=True, variants="function method", cost=costs.movement,
           node_label="TakeBackward0")
def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of `input`, read as 1-d, at `index` (any shape, which the result
    has; negative indices count from the end)."""
    flat = _flat_index("take", index, input.numel())
    return reshape(gather_in_bounds(reshape(input, (-1,)), 0, flat), tuple(index.shape))


@composite(complex=True, variants="function method inplace", cost=costs.movement)
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy with the elements of `source` written (added, with `accumulate`) at
    `index` of the tensor read as 1-d."""
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, "
                         f"index.numel() = {index.numel()}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {SCALAR_TYPE_NAMES[input.dtype.name]} and "
                           f"source.dtype = "
                           f"{SCALAR_TYPE_NAMES[source.dtype.name]}")
    if not accumulate:  # (PyTorch's put_ writes repeated indices in no fixed order)
        alert_not_deterministic("put_")
    flat = _flat_index("put_", index, input.numel())
    out = index_put(reshape(input, (-1,)), (flat,), reshape(source, (-1,)), accumulate)
    return reshape(out, tuple(input.shape))


def _index_key(input: Tensor, d: int, index: Tensor) -> tuple:
    return (slice(None),) * d + (reshape(index, (-1,)),)


def _outside(t: Tensor, d: int) -> tuple:
    """`t`'s shape without dim `d` (a 0-d tensor's: empty)."""
    return tuple(s for i, s in enumerate(t.shape) if i != d)


def _along(index: Tensor, d: int, shape: tuple) -> Tensor:
    """A 1-d `index` along dim `d`, expanded to `shape` (what scatter takes)."""
    view = [1] * len(shape)
    view[d] = index.numel()
    return reshape(index, tuple(view)).expand(shape)


@composite(complex=True, variants="function method inplace", cost=costs.movement,
           node_label="IndexCopyBackward0")
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` with the slices of `source` along `dim` written at positions
    `index` there."""
    d = normalize_dim("index_copy", dim, input.ndim)
    if index.dtype is not dt.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{SCALAR_TYPE_NAMES[index.dtype.name]}")
    if index.ndim > 1:
        raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got "
                         f"{index.ndim})")
    src_size = source.shape[d] if source.ndim else 1
    if index.numel() != src_size:
        raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal "
                         f"to source.size(dim) ({src_size})")
    if _outside(input, d) != _outside(source, d):
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                           f"shapes (destination {fmt_shape(_outside(input, d))}, source "
                           f"{fmt_shape(_outside(source, d))} outside dimension {d}).")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {SCALAR_TYPE_NAMES[input.dtype.name]} and (source) "
                           f"{SCALAR_TYPE_NAMES[source.dtype.name]}")
    size = input.shape[d] if input.ndim else 1
    bad = first_outside(index, 0, size)
    if bad is not None:
        raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {d} "
                         f"with size {size}")
    if not input.ndim:
        return source.reshape(()).clone() if index.numel() else input.clone()
    return apply(OPS["scatter"], input, _along(index, d, tuple(source.shape)), source, dim=d)




@composite(complex=True, variants="function method inplace", cost=costs.movement,
           node_label="IndexPutBackward0")
def index_put(input: Tensor, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of `input` with `values` written (added, with `accumulate`; repeats add up)
    at `input[indices]`, a tuple of index tensors (int64, or bool masks)."""
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' must be Tensor, not "
                        f"{type(values).__name__}")
    parsed = parse(input, tuple(indices))
    if parsed.basic and values.dtype is not input.dtype:
        raise _index_put_dtype_error(input, values)
    values = _write_value(input, values, parsed, accumulate=accumulate)
    if not accumulate:
        return _index_put(input, parsed, values)
    added = index_put_into_zeros(values.expand(parsed.shape), tuple(input.shape), parsed)
    return input + added


_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")
# the names scatter_reduce's kernel still takes from before amax/amin (its backward does not)
_SCATTER_LEGACY = {"max": "amax", "min": "amin"}
_check_scatter_reduce = _scatter_rule("scatter_reduce")


def _scatter_reduce_rule(input, index, src, *, dim, reduce):
    return _check_scatter_reduce(input, index, src, dim=dim)


def _reduce_identity(reduce: str, d: dt.dtype) -> Any:
    """What a position reduces from when its own value is left out (`include_self`)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if d.is_floating_point:
        return float("-inf") if reduce == "amax" else float("inf")
    if d is dt.bool_:
        return reduce == "amin"
    bits = d.itemsize * 8
    lo, hi = (0, 2 ** bits - 1) if d is dt.uint8 else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
    return lo if reduce == "amax" else hi


def _scatter_counts(input: Tensor, d: int, index: Tensor, include_self: bool) -> Tensor:
    """How many values each position of a scatter-mean averages (at least 1)."""
    start = full(tuple(input.shape), 1 if include_self else 0, dtype=input.dtype,
                 device=input.device)
    ones = full(tuple(index.shape), 1, dtype=input.dtype, device=input.device)
    n = apply(OPS["scatter_add"], start, index, ones, dim=d)
    return where(n == 0, 1, n)


def _scatter_reduced(input: Tensor, d: int, index: Tensor, src: Tensor, reduce: str,
                     include_self: bool) -> Tensor:
    base = input if include_self else apply(
        OPS["scatter"], input, index, full(tuple(index.shape), _reduce_identity(
            reduce, input.dtype), dtype=input.dtype, device=input.device), dim=d)
    if reduce in ("sum", "mean"):
        total = apply(OPS["scatter_add"], base, index, src, dim=d)
        if reduce == "sum":
            return total
        n = _scatter_counts(input, d, index, include_self)
        return total / n if input.dtype.is_floating_point or input.dtype.is_complex else \
            total.div(n, rounding_mode="floor")
    return run("scatter_reduce", base, index, src, dim=d, reduce=reduce)


def _crop(t: Tensor, shape: tuple) -> Tensor:
    return t if tuple(t.shape) == shape else t[tuple(slice(0, s) for s in shape)]


def _scatter_reduce_grad(grad, input, index, src, result, dim, reduce, include_self,
                         needs):
    """PyTorch's scatter_reduce_backward (derivatives.yaml), for every reduction."""
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError(f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', "
                           f"'amin' but got {reduce}.")
    src_in = _crop(src, tuple(index.shape))
    if reduce == "sum":
        grad_self, grad_src = grad, gather_in_bounds(grad, dim, index)
    elif reduce == "mean":
        share = grad / _scatter_counts(grad, dim, index, include_self)
        grad_self, grad_src = share, gather_in_bounds(share, dim, index)
    elif reduce in ("amax", "amin"):
        value = gather_in_bounds(result, dim, index)
        # (the input's own ties share even when it is left out: PyTorch's formula, whose
        # share for it is then dropped below)
        self_hit = to_dtype(input == result, grad.dtype)
        src_hit = to_dtype(src_in == value, grad.dtype)
        share = grad / self_hit.scatter_add(dim, index, src_hit)
        grad_self, grad_src = self_hit * share, src_hit * gather_in_bounds(share, dim, index)
    else:  # prod: the product of the others, exactly where one factor is zero
        masked_self = input.masked_fill(input == 0, 1)
        grad_self = grad * scatter_reduce(masked_self, dim, index, src, "prod",
                                          include_self=include_self) / masked_self
        src_zero = src_in == 0
        zeros_there = gather_in_bounds(zeros(tuple(input.shape), dtype=grad.dtype,
                                             device=grad.device).scatter_add(
            dim, index, to_dtype(src_zero, grad.dtype)), dim, index)
        single_zero = src_zero.logical_and(zeros_there == 1)
        others = scatter_reduce(input, dim, index, src_in.masked_fill(single_zero, 1), "prod",
                                include_self=include_self)
        grad_src = where(single_zero, gather_in_bounds(grad * others, dim, index),
                         gather_in_bounds(grad * result, dim, index) /
                         src_in.masked_fill(src_zero, 1))
    if not include_self:
        grad_self = grad_self.scatter(dim, index, 0.0)
    return (grad_self if needs[0] else None, None,
            _pad_to(grad_src, tuple(src.shape)) if needs[2] else None)


@primitive(complex=True, variants="function method inplace", rule=_scatter_reduce_rule,
           cost=costs.movement, grad=Grad("ScatterReduceBackward0", each=_scatter_reduce_grad))
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of `input` where the values of `src` are reduced into the positions
    `index` gives along `dim`: "sum", "prod", "mean", "amax" or "amin", with the
    position's own value unless `include_self=False` (untouched positions keep it).
    The kernel does "prod", "amax" and "amin"; sum and mean are `scatter_add`s."""
    if _SCATTER_LEGACY.get(reduce, reduce) not in _SCATTER_REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    index = long_index("scatter", index)
    if reduce == "mean" and input.dtype is dt.bool_:
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented "
                                  "for 'Bool'")
    if input.dtype.is_complex:  # (PyTorch: sum, prod and mean of complex; no autograd)
        if reduce in ("amax", "amin"):
            raise NotImplementedError(
                f'"scatter_gather_tensor_{input.device.type}_reduce_{reduce}" not '
                f"implemented for '{SCALAR_TYPE_NAMES[input.dtype.name]}'")
        if state.enabled and (input.requires_grad or src.requires_grad):
            raise RuntimeError("scatter_reduce does not support automatic differentiation "
                               "for outputs with complex dtype.")
    d = normalize_dim("scatter_reduce", dim, input.ndim)
    _check_scatter_reduce(input, index, src, dim=d)
    if not index.numel():  # nothing reduced (and no shape checked)
        return input.clone()
    # PyTorch's scatter family: a RuntimeError, and no index counts from the end
    check_in_range("scatter_reduce", index, input.shape[d] if input.ndim else 1, d)
    if input.ndim and not index.ndim:  # a 0-d index into a 1-d input: one element
        index, src = reshape(index, (1,)), reshape(src, (-1,))[:1]
    with no_grad():
        out = _scatter_reduced(input, d, index, src, _SCATTER_LEGACY.get(reduce, reduce),
                               include_self)
    record_grad(OPS["scatter_reduce"], (input, index, src),
                {"dim": d, "reduce": reduce, "include_self": include_self}, out)
    return out


_INDEX_REDUCE_WARNED: list[bool] = []


@composite(complex=True, variants="function method inplace", cost=costs.movement,
           node_label="IndexReduceBackward0")
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of `input` where the slices of `source` along `dim` are reduced into the
    positions `index` gives there: "prod", "mean", "amax" or "amin" (see
    `scatter_reduce`)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if not _INDEX_REDUCE_WARNED:  # (PyTorch's TORCH_WARN_ONCE)
        _INDEX_REDUCE_WARNED.append(True)
        warnings.warn("index_reduce() is in beta and the API may change at any time.",
                      UserWarning, stacklevel=user_stacklevel())
    d = normalize_dim("index_reduce", dim, input.ndim)
    _check_vector_index("index_reduce", index)
    if index.numel() != (source.shape[d] if source.ndim else 1):
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be "
                           f"equal to source.size(dim): ({source.shape[d] if source.ndim else 1}"
                           f"), for dim: {d}")
    if _outside(input, d) != _outside(source, d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input.shape)} "
                           f"source.shape = {list(source.shape)}")
    _same_scalar_type("index_reduce_", input, source)
    if input.dtype.is_complex:  # PyTorch's kernels have no complex case
        kernel = "index_func_" if include_self else "index_reduce_func_exclude_input_init"
        raise kernel_refuses(kernel, input.dtype)
    check_in_range("index_reduce_", index, input.shape[d] if input.ndim else 1, d,
                   select=True)
    return scatter_reduce(input, d, _along(index, d, tuple(source.shape)), source, reduce,
                          include_self=include_self)


@composite(complex=True, variants="function method inplace", cost=costs.movement,
           node_label="MaskedScatterBackward0")
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` with the leading elements of `source`, in order, written where
    `mask` (broadcast to `input`) is true."""
    if mask.dtype is dt.uint8:  # (PyTorch warns of the deprecation, then refuses it)
        warnings.warn(f"masked_scatter_ received a mask with dtype {dt.API_NAME}.uint8, this "
                      f"behavior is now deprecated,please use a mask with dtype "
                      f"{dt.API_NAME}.bool instead.", UserWarning, stacklevel=user_stacklevel())
    if mask.dtype is not dt.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {SCALAR_TYPE_NAMES[mask.dtype.name]}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{SCALAR_TYPE_NAMES[input.dtype.name]} and "
                           f"{SCALAR_TYPE_NAMES[source.dtype.name]}")  # (PyTorch's spacing)
    mask = mask.expand(tuple(broadcast_shapes("masked_scatter", tuple(mask.shape),
                                              tuple(input.shape))))
    if tuple(mask.shape) != tuple(input.shape):
        input = input.expand(tuple(mask.shape))
    parsed = parse(input, mask)
    k = parsed.shape[0]
    if k > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    # (row-major, as ATen's `self.clone(at::MemoryFormat::Contiguous).masked_scatter_`)
    return _index_put(input.contiguous(), parsed, reshape(source, (-1,))[:k])


@composite(complex=True, variants="function method", cost=costs.movement)
def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements, one row each (`nonzero(input)`)."""
    return nonzero(input)


@composite(variants="function method", cost=costs.movement)
def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """`nonzero`, with exactly `size` rows: cut short, or padded with `fill_value`."""
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = nonzero(input)
    if found.shape[0] >= size:
        return found[:size]
    pad = full((size - found.shape[0], found.shape[1]), fill_value, dtype=dt.int64,
               device=input.device)
    return cat([found, pad])
