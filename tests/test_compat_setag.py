"""What the programs of set AG (printed forms; dtype semantics) needed of ember, checked
against PyTorch: grad_fn names of indexed writes, their errors, printing edge values."""

from __future__ import annotations

import warnings

import pytest

import ember

torch = pytest.importorskip("torch")

_WRITE_KEYS = [0, (0, 1), slice(1, 2), (slice(None), 1), (slice(None), [0]), (0, [1]), ([0], 1),
               ([0, 1],), (Ellipsis, 1), None, (None, 0), slice(None), Ellipsis,
               (slice(None), slice(None)), (slice(None), slice(0, 2)), True, (True, 0)]


@pytest.mark.parametrize("key", _WRITE_KEYS, ids=repr)
def test_indexed_write_names_pytorchs_node(key):
    """`y[key] = v` on a tensor in the graph: CopySlices when the indexing makes a view to
    write into, IndexPutBackward0 for tensor indices alone, FillBackward3 / CopyBackwards
    when the whole tensor is written; the gradient is the same whatever the name."""
    names, grads = [], []
    for lib in (torch, ember):
        w = lib.arange(12.0).reshape(3, 4).requires_grad_()
        row = []
        for value in (0.5, lib.tensor(0.5, requires_grad=True), lib.ones(4)):
            y = w * 1
            try:
                y[key] = value
            except RuntimeError as e:  # a shape the value cannot take: the same refusal
                row.append(str(e).replace("ember.", "torch."))
                continue
            row.append(type(y.grad_fn).__name__)
            (y * lib.arange(12.0).reshape(3, 4)).sum().backward()
        names.append(row)
        grads.append(w.grad.tolist())
    assert names[1] == names[0]
    assert grads[1] == grads[0]


def test_indexed_write_into_a_leaf_names_the_view():
    """A key that makes a view refuses a leaf that requires grad in the view's words."""
    for key, words in [(0, "a view of a leaf Variable"), (slice(0, 1), "a view of a leaf"),
                       ([0], "^a leaf Variable"), ((0, 0), "a view of a leaf")]:
        for lib in (torch, ember):
            w = lib.zeros(3, 2, requires_grad=True)
            with pytest.raises(RuntimeError, match=words):
                w[key] = 1.0
    w = ember.zeros(2, requires_grad=True)
    with ember.no_grad():
        w[0] = 1.0
    assert w.tolist() == [1.0, 0.0]


def test_index_fill_node_names():
    """index_fill records IndexFillBackward0 for a number, IndexFillBackward1 for a 0-d
    tensor, in place or not."""
    got = []
    for lib in (torch, ember):
        w = lib.randn(3, 2, requires_grad=True)
        idx = lib.tensor([0])
        y = w.clone()
        row = [type(y.index_fill(0, idx, 1.0).grad_fn).__name__,
               type(lib.index_fill(y, 1, idx, lib.tensor(2.0)).grad_fn).__name__,
               type(y.index_fill_(0, idx, lib.tensor(2.0)).grad_fn).__name__]
        got.append(row)
    assert got[1] == got[0] == ["IndexFillBackward0", "IndexFillBackward1",
                                "IndexFillBackward1"]


def test_printing_a_subnormal_warns_nothing():
    """A float64 subnormal beside 1.0: the ratio of magnitudes overflows to inf (scientific
    notation), with no numpy overflow warning."""
    values = [5e-324, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = str(ember.tensor(values, dtype=ember.float64))
    assert got.replace("ember.", "torch.") == str(torch.tensor(values, dtype=torch.float64))
