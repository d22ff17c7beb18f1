"""PyTorch-compatibility gaps, round 36: checked against PyTorch itself."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _grad_fn_names(pieces):
    return [p.grad_fn.name() for p in pieces]


@pytest.mark.parametrize("n", [0, 5, 6])
def test_split_family_grad_fn_names_as_torch(n):
    """chunk of an empty dim is split_with_sizes in PyTorch (its `chunks` empty pieces);
    else split; tensor_split, unbind and the lists' splits as PyTorch names them."""
    calls = [lambda lib, x: lib.chunk(x, 3), lambda lib, x: x.chunk(chunks=2, dim=0),
             lambda lib, x: x.chunk(3, -1), lambda lib, x: lib.split(x, 2),
             lambda lib, x: x.split([n - 1 if n else 0, 1 if n else 0]),
             lambda lib, x: lib.tensor_split(x, 3), lambda lib, x: x.tensor_split([1, 2]),
             lambda lib, x: x.unbind(1), lambda lib, x: lib.hsplit(x, 2)]
    for call in calls:
        ours = call(ember, ember.zeros(n, 2, requires_grad=True))
        theirs = call(torch, torch.zeros(n, 2, requires_grad=True))
        assert _grad_fn_names(ours) == _grad_fn_names(theirs)


@pytest.mark.parametrize("call", [
    lambda lib, x, t: lib.max(x, 1, out=t), lambda lib, x, t: lib.min(x, 1, out=t),
    lambda lib, x, t: lib.max(x, dim=1, out=t), lambda lib, x, t: lib.max(x, 1, out=5),
    lambda lib, x, t: lib.sort(x, out=t), lambda lib, x, t: lib.sort(x, stable=True, out=t),
    lambda lib, x, t: lib.topk(x, 2, out=t), lambda lib, x, t: lib.cummax(x, 1, out=t)])
def test_tensor_out_for_a_tuple_out_refused_as_torch(call):
    """A lone tensor as `out=` of an op whose result is a tuple: PyTorch's parser finds no
    overload for max/min/sort ("invalid combination", out= listed first), and names the
    argument for single-overload ops (topk, cummax)."""
    with pytest.raises(TypeError) as theirs:
        call(torch, torch.randn(3, 4), torch.empty(3))
    with pytest.raises(TypeError) as ours:
        call(ember, ember.randn(3, 4), ember.empty(3))
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0]
