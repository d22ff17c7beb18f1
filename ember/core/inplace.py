"""In-place writes: how `x.add_(y)`, `x.copy_(y)` and `x[i] = v` change a tensor and, when
autograd records, its place in the graph — through views too.

A view shares its base's storage and version counter, and remembers a function that
recreates it from the base (`as_view`). An in-place op computes its result out of place,
then writes it into the tensor's storage (`write`). When autograd records, the old value
is kept as a clone where the computation saved it for backward (so those nodes stay
valid; PyTorch's `original_self`), and the tensor — or, for a view, its
base, through a `CopySlices` node as in PyTorch — takes the result's place in the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core import forward_ad as fw
from ember.core import graph
from ember.core.backend import OVERLAP
from ember.core.dispatch import check_out, device_mismatch, write_into
from ember.core.errors import with_context
from ember.core.grad_mode import check_writable, no_grad, state
from ember.core.graph import FnNode, default_label, edge_of, replayed_view_node
from ember.core.tensor import Tensor
from ember.core.view_strides import keep_strides


def as_view(out: Tensor, x: Tensor, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """Mark `out` as a view of `x`: it shares `x`'s storage and version counter, and
    `fn(x)` recreates it (so in-place writes through it reach the base's graph)."""
    out._vc = x._vc
    out._view_vc = x._vc[0]
    if x._conj_view:  # (PyTorch's views keep the conjugate bit)
        out._conj_view = True
    if x._view_mode is not None:  # a view of such a view is one too (PyTorch's CreationMeta)
        out._view_mode = x._view_mode  # (not `_multi_output`: its own node's output it is)
    elif not state.enabled and x._requires_grad:  # (a detached alias is no differentiable view)
        out._view_mode = "inference" if state.inference else "no_grad"
    if x._base is None:
        out._base, out._view_fn = x, fn
    else:
        parent = x._view_fn
        out._base = x._base
        out._view_fn = (lambda b: fn(parent(b))) if parent is not None else None
    return out


def multi_output_views(views: tuple) -> tuple:
    """Mark `views`, the outputs of an op that returns several views of its input (split,
    chunk, unbind), as such when autograd records them: PyTorch refuses to write into them
    in place (one graph node cannot be rebased for one of its outputs)."""
    for i, view in enumerate(views):
        if view._requires_grad and state.enabled:
            view._view_mode, view._multi_output = "multi", i
    return views


PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the "
                   "written-to tensor refer to a single memory location. Please clone() the "
                   "tensor before performing the operation.")
# the writes PyTorch makes without its overlap checks (a fill of an expanded tensor)
_UNCHECKED_WRITES = frozenset({"fill_", "zero_"})


def _dense(shape: tuple, strides: tuple) -> bool:
    """ATen's is_non_overlapping_and_dense: the dims, ordered by stride, tile memory."""
    step = 1
    for n, st in sorted(((n, st) for n, st in zip(shape, strides) if n != 1),
                        key=lambda p: p[1]):
        if st != step:
            return False
        step *= n
    return True


def check_overlap(op: str, x: Tensor, others: tuple) -> None:
    """PyTorch's memory-overlap checks of a write into `x` (an in-place op, `out=`):
    `x` may not have elements that share memory (a dim of more than one element with
    stride 0), and no tensor it reads may overlap it only in part (all of it, with the
    same strides, is fine). Where the layouts are not dense PyTorch cannot tell, and
    neither checks."""
    if op in _UNCHECKED_WRITES:
        return
    shape = x._data.shape
    raw = x._backend.strides(x._data)
    if 0 in raw and any(n > 1 and st == 0 for n, st in zip(shape, raw)):
        raise RuntimeError(OVERLAP)
    for o in others:
        if isinstance(o, Tensor) and o is not x and o._vc is x._vc and o.numel() and \
                x.numel() and _partial_overlap(x, o):
            raise RuntimeError(PARTIAL_OVERLAP)


def _partial_overlap(a: Tensor, b: Tensor) -> bool:
    sa, sb = a.stride(), b.stride()
    if not (_dense(tuple(a.shape), sa) and _dense(tuple(b.shape), sb)):
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1, b1 = a0 + a.numel() * a.element_size(), b0 + b.numel() * b.element_size()
    if (a0, a1) == (b0, b1):
        return sa != sb
    return a0 < b1 and b0 < a1


def write(x: Tensor, result: Tensor, op: str) -> None:
    """Copy `result` into `x`'s storage (checks first, so a failure changes nothing)."""
    check_out(op, x, result._data.shape, result._dtype)
    if result._device is not x._device:
        raise device_mismatch(op, x, result)
    write_into(x, result, overlapping=op in _UNCHECKED_WRITES)


def recording(*tensors: Any) -> bool:
    """Whether autograd records an op on these operands."""
    return state.enabled and any(isinstance(t, Tensor) and t._requires_grad for t in tensors)


def tracked(*tensors: Any) -> bool:
    """Whether an in-place op must go through `apply_inplace` (not one kernel writing into
    the tensor): autograd records it, or a dual level gives the result its tangent."""
    return fw.active or recording(*tensors) or (
        tensors[0]._view_mode is not None and state.enabled)  # (refused: see apply_inplace)


def _check_allowed(x: Tensor) -> None:
    if x._requires_grad and x._node is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = x._base
    if base is not None and x._view_fn is not None and base._requires_grad and \
            base._node is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


_VIEW_MODE_ERROR = (
    "A view was created in {} mode and is being modified inplace {}. Given that this use "
    "case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving "
    "both the view and the inplace either both inside the {} block (if you don't want the "
    "inplace to be tracked) or both outside (if you want the inplace to be tracked).")


MULTI_OUTPUT_ERROR = (
    "Output {} of {} is a view and is being modified inplace. This view is the output of a "
    "function that returns multiple views. Such functions do not allow the output views to be "
    "modified inplace. You should replace the inplace operation by an out-of-place one.")


def _check_view_mode(x: Tensor) -> None:
    """PyTorch refuses to record an in-place write through a view made with grad mode off
    (of a base that requires grad): which graph the write belongs to is ambiguous; and one
    through a view that an op returned several of (or a view of one), while it is
    differentiable."""
    if x._view_mode == "multi":
        if x._requires_grad:
            index = x._multi_output if x._multi_output is not None else x._output_nr
            op = getattr(x._node, "label", "")
            op = op[:op.rfind("Backward")] if "Backward" in op else op
            raise with_context(RuntimeError(MULTI_OUTPUT_ERROR.format(index, op)),
                               f"a view of shape {tuple(x.shape)}")
        return
    if x._base.requires_grad:
        words = (("no_grad", "with grad mode enabled", "no_grad") if x._view_mode == "no_grad"
                 else ("inference", "in normal mode", "inference_mode"))
        raise with_context(RuntimeError(_VIEW_MODE_ERROR.format(*words)),
                           f"a view of shape {tuple(x.shape)}")


def apply_inplace(x: Tensor, compute: Callable[[Tensor], Tensor], *others: Any,
                  op: str = "inplace") -> Tensor:
    """Run `compute(x)` out of place and write the result into `x`; `others` are the
    op's other operands (autograd records when any of them, or `x`, requires grad)."""
    check_writable(x)
    check_overlap(op, x, others)
    if x._view_mode is not None and state.enabled:
        _check_view_mode(x)
    if not recording(x, *others):
        result = compute(x)
        write(x, result, op)
        if fw.active:
            _write_tangent(x, result)
        return x
    _check_allowed(x)
    outer, graph.saves_seen = graph.saves_seen, []
    try:
        result = compute(x)
    finally:
        saved, graph.saves_seen = graph.saves_seen, outer
        if outer is not None:
            outer.extend(saved)
    for s in saved:  # what saved x (or a view of it) keeps x's old value instead
        if s.tensor._vc is x._vc:
            s.tensor = s.tensor.clone()
            s.version = s.tensor._vc[0]
    write(x, result, op)
    if fw.active:
        _write_tangent(x, result)
    if x._requires_grad and not result._requires_grad:
        # the new value ignores the old (fill_, zero_, copy_ of a constant): x stays in the
        # graph, its old value getting a zero gradient, as in PyTorch
        result = result.detach()
        result._node = FnNode(default_label(op), _bw_zero, (edge_of(x),))
        result._output_nr, result._requires_grad = 0, True
    if x._view_fn is None:
        x._node, x._output_nr = result._node, result._output_nr
        x._requires_grad = result._requires_grad
    else:
        _rebase_view(x, result)
    return x


def _write_tangent(x: Tensor, result: Tensor) -> None:
    """Under a dual level: `x`, written in place with `result`, takes `result`'s tangent;
    written through a view, the base's tangent is written at the view's place, as in
    PyTorch (a base without one gets zeros elsewhere; but the base of a dual tensor
    made by `make_dual` stays without one, as there)."""
    tangent = fw.tangent_of(result)
    if tangent is None:
        if fw.tangent_of(x) is None:
            return
        tangent = result.new_zeros(result.shape)  # the new value ignores the old one
    base, fn = x._base, x._view_fn
    base_tangent = None if base is None else fw.tangent_of(base)
    if fn is None or base_tangent is None and fw.tangent_of(x) is not None:
        # not a view, or a dual made of a plain tensor (make_dual): its own tangent only
        fw.set_tangent(x, tangent)
        return
    with fw.suspended(), no_grad():
        if base_tangent is None:
            base_tangent = base.new_zeros(base.shape)
            fw.set_tangent(base, base_tangent)
        fn(base_tangent).copy_(tangent)
        fw.set_tangent(x, fn(base_tangent))


def _rebase_view(x: Tensor, result: Tensor) -> None:
    """After an in-place write through view `x`, route the base's gradient through it."""
    base, fn = x._base, x._view_fn
    edges = (edge_of(base), edge_of(result) if result._requires_grad else None)
    node = FnNode("CopySlices", _bw_copy_slices, edges, view_fn=fn,
                  meta=(tuple(base.shape), base._dtype, base._device))
    base._node, base._output_nr, base._requires_grad = node, 0, True
    fresh = fn(base)
    x._node, x._output_nr = replayed_view_node(fresh, base), fresh._output_nr
    x._requires_grad = True
    x._view_vc = x._vc[0]


def _bw_zero(node: FnNode, g: Tensor) -> Tensor:
    return g.new_zeros(g.shape)


def _bw_copy_slices(node: FnNode, g: Tensor) -> tuple:
    fn = node.attrs["view_fn"]
    gb = None
    if node.needs[0]:
        mask = g.new_zeros(g.shape)
        with no_grad():
            fn(mask).fill_(1.0)
        gb = g * (1.0 - mask)
    return gb, (fn(g) if node.needs[1] else None)


# how many node names PyTorch's out-of-place forms of a view op take (squeeze's three
# overloads: SqueezeBackward0, 1, 2); its in-place forms are numbered on from there
# (`x.squeeze_(d)`: SqueezeBackward4, `x.t_()`: TBackward1)
_OUT_OF_PLACE_NODES = {"SqueezeBackward": 3}


def _inplace_label(label: str) -> str:
    """The node name of an in-place view op (`x.unsqueeze_(0)`: UnsqueezeBackward1) from
    its out-of-place form's (UnsqueezeBackward0)."""
    stem = label.rstrip("0123456789")
    if stem == label or not stem.endswith("Backward"):
        return label
    return f"{stem}{int(label[len(stem):]) + _OUT_OF_PLACE_NODES.get(stem, 1)}"


def metadata_inplace(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """`x.squeeze_()` and friends: `x` itself becomes the reshaped view. Its version
    advances, as for any in-place op: a node that saved `x` before must not read the
    reshaped tensor."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        check_writable(self)
        if recording(self):
            _check_allowed(self)
        result = fn(self, *args, **kwargs)
        keep_strides(self, result)
        self._data = result._data
        if result._node is not None:
            if result._node is not self._node and hasattr(result._node, "label"):
                result._node.label = _inplace_label(result._node.label)
            self._node, self._output_nr = result._node, result._output_nr
        if self._base is not None:  # still a view of its base, now through `fn` too
            self._view_fn = result._view_fn
        self._vc[0] += 1
        self._view_vc = self._vc[0]
        return self
    method.__name__ = fn.__name__ + "_"
    return method
