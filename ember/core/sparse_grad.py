"""Sparse gradients: the gradient of `embedding(..., sparse=True)` as a sparse COO tensor,
and how the engine accumulates a sparse gradient into a leaf's `.grad`.

PyTorch's `nn.Embedding(sparse=True)` gives its weight a gradient that names only the
looked-up rows: an uncoalesced sparse tensor whose indices are the lookups in order and
whose values are the output gradient's rows. The engine adds such gradients as
PyTorch's does: two sparse ones merge (`sparse_ops.merge`: concatenated when their
indices do not interleave), a sparse one into a dense `.grad` is an in-place index add,
and a dense one into a sparse `.grad` makes `.grad` dense. Only sparse gradients come
here (the engine tests `is_sparse` first), so the dense path is unchanged.
"""

from __future__ import annotations

from ember.core import dtype as dt
from ember.core.creation import zeros
from ember.core.grad_mode import no_grad
from ember.core.sparse_coo import SparseTensor, labelled, make
from ember.core.tensor import Tensor


def embedding_backward(grad: Tensor, indices: Tensor, num_weights: int, padding_idx: int,
                       scale_grad_by_freq: bool) -> SparseTensor:
    """ATen's embedding_sparse_backward: a sparse `(num_weights, dim)` tensor with one
    entry per lookup (in lookup order, `padding_idx`'s dropped), valued the output
    gradient's row; duplicates are kept, not summed."""
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with "
                           "sparse gradients")
    dim = grad.shape[-1]
    flat = indices.reshape(-1)
    values = grad.reshape(-1, dim)
    if padding_idx >= 0:
        keep = flat != padding_idx
        flat, values = flat[keep], values[keep]
    if not flat.numel():  # every lookup was padding (or there were none)
        return make(zeros((1, 0), dtype=dt.int64, device=grad.device),
                    values.new_zeros((0, dim)), (num_weights, dim), True)
    # (one entry is coalesced, as PyTorch's flag says; under create_graph the values'
    # node is PyTorch's name for the op that built the sparse tensor)
    return make(flat.reshape(1, -1).long(),
                labelled(values, "SparseCooTensorWithDimsAndTensorsBackward0"),
                (num_weights, dim), flat.numel() == 1)


def accumulate(t: Tensor, g: Tensor, create_graph: bool) -> None:
    """Adds the gradient `g` into the leaf `t`'s `.grad` when either is sparse (PyTorch's
    AccumulateGrad): the first sparse gradient is kept as a copy, since the engine's may
    share its values with the graph's; later ones merge into it in place."""
    if tuple(g.shape) != tuple(t.shape):
        raise RuntimeError(f"Function AccumulateGrad returned an invalid gradient - got "
                           f"{list(g.shape)} but expected shape compatible with "
                           f"{list(t.shape)}")
    old = t._grad
    if not create_graph:
        g = g.detach()
    if old is None:
        t._grad = g if create_graph else g.clone()
    elif create_graph:  # a new tensor, recorded in the graph
        t._grad = old + g if not old.is_sparse or g.is_sparse else g + old
    elif old.is_sparse and not g.is_sparse:  # `.grad` becomes dense
        with no_grad():
            t._grad = g + old
    else:  # sparse into sparse (a merge), or sparse into dense (an index add)
        with no_grad():
            old.add_(g)



def sparse_rows(grad: SparseTensor) -> tuple[tuple[Tensor, ...], Tensor]:
    """The coalesced entries of a sparse gradient as `(where, values)`: `where` indexes a
    dense tensor of its shape (`dense[where]` are the entries' places), each place once;
    the form of an optimizer's non-linear update of the rows a batch touched."""
    grad = grad.coalesce()
    ind = grad._indices()
    return tuple(ind[d] for d in range(grad.sparse_dim())), grad._values()
