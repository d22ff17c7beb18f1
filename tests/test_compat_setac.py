"""PyTorch behaviours the set-AC programs (beam search and sampling decoders, detection
losses and metrics) needed, checked against torch itself."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(fn, mod) -> tuple[str, object]:
    """What `fn(mod)` gives: its value (dtype and nested lists), or its error's type and
    text."""
    try:
        out = fn(mod)
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err)
    return "ok", (str(out.dtype).split(".")[-1], out.tolist())


def _same(fn) -> None:
    assert _outcome(fn, ember) == _outcome(fn, torch)


# gather/scatter check the index's shape before its values (a beam search's gather with
# a 1-d index into 2-d scores names the shape, not an index), and read a 0-d tensor as
# one element along one dimension, as PyTorch's gather/scatter_shape_check do
SHAPE_CASES = {
    "gather ndim": lambda t: t.gather(t.zeros(2, 3), 1, t.tensor([3])),
    "gather size": lambda t: t.gather(t.zeros(2, 3), 1, t.tensor([[3], [0], [1]])),
    "gather size dim0": lambda t: t.gather(t.zeros(2, 3), 0, t.tensor([[3, 0, 0, 0]])),
    "gather 0-d index": lambda t: t.gather(t.tensor([1, 2, 3]), 0, t.tensor(1)),
    "gather 0-d both": lambda t: t.tensor(1.).gather(0, t.tensor(0)),
    "gather bad value": lambda t: t.zeros(2, 3).gather(1, t.tensor([[-1]])),
    "scatter ndim": lambda t: t.zeros(2, 3).scatter(1, t.tensor([3]), t.ones(2, 3)),
    "scatter value ndim": lambda t: t.zeros(2, 3).scatter(1, t.tensor([3]), 1.0),
    "scatter size": lambda t: t.zeros(2, 3).scatter(1, t.tensor([[3], [0], [0]]),
                                                    t.ones(3, 3)),
    "scatter_add ndim": lambda t: t.zeros(2, 3).scatter_add(1, t.tensor([3]), t.ones(2, 3)),
    "scatter_reduce ndim": lambda t: t.zeros(2, 3).scatter_reduce(1, t.tensor([3]),
                                                                  t.ones(2, 3), "sum"),
    "scatter 0-d index": lambda t: t.zeros(3).scatter(0, t.tensor(1), t.tensor(5.)),
    "scatter 0-d index value": lambda t: t.zeros(3).scatter(0, t.tensor(1), 5.),
    "scatter_add 0-d index": lambda t: t.zeros(3).scatter_add(0, t.tensor(2),
                                                              t.tensor([5., 6.])),
    "scatter_reduce 0-d index": lambda t: t.zeros(3).scatter_reduce(
        0, t.tensor(1), t.tensor(5.), "amax", include_self=False),
}


@pytest.mark.parametrize("case", SHAPE_CASES)
def test_gather_scatter_shape_checks_as_torch(case: str) -> None:
    _same(SHAPE_CASES[case])


def test_gather_scatter_0d_index_grads_as_torch() -> None:
    grads = []
    for t in (torch, ember):
        x = t.tensor([1., 2., 3.], requires_grad=True)
        (x.gather(0, t.tensor(1)) * 3).backward()
        s = t.tensor(4., requires_grad=True)
        t.zeros(3).scatter(0, t.tensor(1), s * 2).sum().backward()
        grads.append((x.grad.tolist(), s.grad.tolist()))
    assert grads[1] == grads[0]


def test_float32_exp_rounds_as_torch() -> None:
    """A box decoder's exp(log(gt / anchor)) * anchor gives the box back bit for bit under
    PyTorch (its CPU exp is under 1 ulp); NumPy's float32 exp is an ulp off on ~40% of
    inputs, so ember rounds a float64 exp once (nearly always PyTorch's bits)."""
    import numpy as np

    ratio = np.float32(64.0) / np.float32(38.0)
    for t in (torch, ember):
        assert (t.exp(t.log(t.tensor([ratio]))) * 38).item() == 64.0
    values = np.random.default_rng(0).uniform(-10, 10, 1000).astype(np.float32)
    t_exp = torch.exp(torch.from_numpy(values)).numpy()
    e_exp = ember.exp(ember.tensor(values)).numpy()
    assert (t_exp != e_exp).mean() < 0.03
    inplace = ember.tensor(values)
    inplace.exp_()
    assert (inplace.numpy() == e_exp).all()
    strided = ember.tensor(values[:6]).view(2, 3).t()
    assert strided.exp().stride() == torch.from_numpy(values[:6]).view(2, 3).t().exp().stride()


MESHGRID_CASES = {
    "dtype before rank": lambda t: t.meshgrid(t.ones(2, 2), t.arange(2), indexing="ij"),
    "dtype before indexing": lambda t: t.meshgrid(t.ones(2), t.arange(2), indexing="ab"),
    "indexing before rank": lambda t: t.meshgrid(t.ones(2, 2), t.ones(2), indexing="ab"),
    "list before indexing": lambda t: t.meshgrid([], indexing="ab"),
    "later dtype before rank": lambda t: t.meshgrid(t.ones(2), t.ones(2, 2), t.arange(2),
                                                    indexing="ij"),
}


@pytest.mark.parametrize("case", MESHGRID_CASES)
def test_meshgrid_checks_in_torch_order(case: str) -> None:
    """An anchor generator's meshgrid of mixed inputs fails with PyTorch's first error."""
    _same(lambda t: MESHGRID_CASES[case](t)[0])


def test_meshgrid_rank_error_as_torch() -> None:
    """(PyTorch prints the tensor in ATen's format after "got: "; the text before it.)"""
    for t in (torch, ember):
        with pytest.raises(RuntimeError, match=r"^torch.meshgrid: Expected 0D or 1D tensor "
                                               r"in the tensor list but got: "):
            t.meshgrid(t.ones(2, 2), t.ones(2), indexing="ij")


def test_float32_sigmoid_as_torch() -> None:
    """A focal loss's sigmoid: PyTorch's 1 / (1 + exp(-x)) bits, and its 0 where exp(-x)
    overflows (below -88.7), not the denormals of the e / (1 + e) form."""
    import numpy as np

    extreme = [-100.0, -90.0, -88.5, -20.0, 0.0, 100.0]
    assert ember.sigmoid(ember.tensor(extreme)).tolist() == \
        torch.sigmoid(torch.tensor(extreme)).tolist()
    values = np.random.default_rng(1).uniform(-8, 8, 1000).astype(np.float32)
    t_sig = torch.sigmoid(torch.from_numpy(values)).numpy()
    e_sig = ember.sigmoid(ember.tensor(values)).numpy()
    assert (t_sig != e_sig).mean() < 0.06
