"""Sparse gradients against PyTorch: `Embedding`/`EmbeddingBag(sparse=True)` make the
weight's gradient an uncoalesced sparse tensor of the lookups, the engine accumulates it,
and `SparseAdam`, `SGD` and `Adagrad` step on it; the other optimizers and
`clip_grad_norm_` refuse it with PyTorch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ember  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet_torch():
    with warnings.catch_warnings():  # torch's invariant-checks notice
        warnings.simplefilter("ignore", UserWarning)
        yield


def pair(lib, rows=7, dim=3, seed=0, **kwargs):
    """An Embedding of each library with the same weight."""
    w = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return lib.nn.Embedding.from_pretrained(lib.tensor(w), freeze=False, **kwargs)


def same_sparse(e, t):
    """The same sparse tensor entry for entry (uncoalesced order included)."""
    assert e.is_sparse and t.is_sparse
    assert tuple(e.shape) == tuple(t.shape)
    assert e._nnz() == t._nnz()
    assert e.is_coalesced() == t.is_coalesced()
    np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
    np.testing.assert_allclose(e._values().numpy(), t._values().numpy(), rtol=1e-6)


def grads(idx, loss=lambda out: out.pow(2).sum(), **kwargs):
    """weight.grad of one backward through each library's sparse Embedding."""
    out = []
    for lib in (ember, torch):
        emb = pair(lib, sparse=True, **kwargs)
        loss(emb(lib.tensor(idx, dtype=lib.long))).backward()
        out.append(emb.weight.grad)
    return out


# -- the gradient ------------------------------------------------------------------------


def test_embedding_grad_is_torchs_uncoalesced_sparse_tensor():
    e, t = grads([[3, 1, 3], [0, 6, 1]])
    same_sparse(e, t)
    assert not e.is_coalesced()
    same_sparse(e.coalesce(), t.coalesce())
    np.testing.assert_allclose(e.to_dense().numpy(), t.to_dense().numpy(), rtol=1e-6)
    assert e.grad_fn is None and not e.requires_grad
    assert repr(e) == repr(t).replace("torch.", "ember.")


def test_padding_idx_rows_are_dropped_and_all_padding_gives_no_entries():
    same_sparse(*grads([2, 4, 2, 5], padding_idx=2))
    e, t = grads([2, 2], padding_idx=2)
    same_sparse(e, t)
    assert e._indices().shape == (1, 0) and e._values().shape == (0, 3)
    same_sparse(*grads([]))


def test_functional_embedding_and_grad_fn_name():
    w = ember.randn(5, 2, requires_grad=True)
    out = ember.nn.functional.embedding(ember.tensor([4, 0, 4]), w, sparse=True)
    assert out.grad_fn.name() == "EmbeddingBackward0"
    (g,) = ember.autograd.grad(out.sum(), w)
    assert g.is_sparse and g._indices().tolist() == [[4, 0, 4]]


def test_max_norm_renormalises_and_grad_stays_sparse():
    e, t = grads([1, 1, 3], max_norm=0.5)
    same_sparse(e, t)


def test_scale_grad_by_freq_is_refused_at_backward_as_torch():
    emb = ember.nn.Embedding(5, 2, sparse=True, scale_grad_by_freq=True)
    out = emb(ember.tensor([1, 1]))
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse "
                                           "gradients"):
        out.sum().backward()


def test_two_backwards_merge_as_torch():
    es = []
    for lib in (ember, torch):
        emb = pair(lib, sparse=True)
        emb(lib.tensor([4, 0, 2, 2])).sum().backward()
        emb(lib.tensor([3, 3, 1])).pow(2).sum().backward()
        es.append(emb.weight.grad)
    same_sparse(*es)


def test_sparse_and_dense_uses_of_one_weight_give_a_dense_grad():
    for order in (0, 1):
        res = []
        for lib in (ember, torch):
            emb = pair(lib, sparse=True)
            parts = [emb(lib.tensor([1, 1])).sum(), emb.weight.pow(2).sum()]
            (parts[order] + parts[1 - order]).backward()  # summed in the engine
            g1 = emb.weight.grad.clone()
            emb.weight.grad = None
            for first in (order == 0, order == 1):  # accumulated into .grad
                (emb(lib.tensor([1, 1])).sum() if first else emb.weight.sum()).backward()
            res.append((g1, emb.weight.grad))
        for e, t in zip(*res):
            assert not e.is_sparse
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_zero_grad_to_none_and_to_an_empty_sparse_tensor():
    for lib in (ember, torch):
        emb = pair(lib, sparse=True)
        emb(lib.tensor([1, 2])).sum().backward()
        emb.zero_grad(set_to_none=False)
        g = emb.weight.grad
        assert g.is_sparse and g._nnz() == 0 and g._indices().shape == (1, 0)
        emb(lib.tensor([3])).sum().backward()
        assert g._indices().tolist() == [[3]]  # the same tensor, refilled
        emb.zero_grad()
        assert emb.weight.grad is None


def test_from_pretrained_sparse_and_repr():
    emb = ember.nn.Embedding.from_pretrained(ember.ones(4, 2), freeze=False, sparse=True)
    assert repr(emb) == "Embedding(4, 2, sparse=True)"
    emb(ember.tensor([2])).sum().backward()
    assert emb.weight.grad.is_sparse


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_sparse_grads(mode):
    res = []
    for lib in (ember, torch):
        w = lib.tensor(np.arange(12, dtype=np.float32).reshape(6, 2))
        bag = lib.nn.EmbeddingBag.from_pretrained(w, freeze=False, mode=mode, sparse=True,
                                                  padding_idx=2)
        out = bag(lib.tensor([1, 2, 2, 4, 5]), lib.tensor([0, 1, 3]))
        (out * lib.tensor([[1.0, 2.0]])).sum().backward()
        res.append((out, bag.weight.grad))
    np.testing.assert_allclose(res[0][0].detach().numpy(), res[1][0].detach().numpy(),
                               rtol=1e-6)
    same_sparse(res[0][1], res[1][1])
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        ember.nn.EmbeddingBag(4, 2, mode="max", sparse=True)(ember.tensor([[1, 2]]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 5), max_size=12), st.one_of(st.none(), st.integers(0, 5)))
def test_random_lookups_coalesce_as_torch(idx, padding_idx):
    e, t = grads(idx, loss=lambda out: (out * out.new_tensor([1.0, -2.0, 0.5])).sum(),
                 rows=6, padding_idx=padding_idx)
    same_sparse(e, t)
    same_sparse(e.coalesce(), t.coalesce())


# -- optimizers --------------------------------------------------------------------------


def train(lib, make_opt, steps=3, batches=([1, 1, 2, 5], [0, 5, 5], [3])):
    emb = pair(lib, rows=6, sparse=True)
    opt = make_opt(lib.optim, list(emb.parameters()))
    for i in range(steps):
        opt.zero_grad()
        emb(lib.tensor(batches[i % len(batches)])).pow(2).sum().backward()
        opt.step()
    return emb.weight.detach().numpy(), opt


@pytest.mark.parametrize("make_opt", [
    lambda o, p: o.SparseAdam(p, lr=0.1),
    lambda o, p: o.SparseAdam(p, lr=0.05, betas=(0.8, 0.9), maximize=True),
    lambda o, p: o.SGD(p, lr=0.1),
    lambda o, p: o.SGD(p, lr=0.1, momentum=0.9),
    lambda o, p: o.SGD(p, lr=0.1, momentum=0.9, nesterov=True, maximize=True),
    lambda o, p: o.SGD(p, lr=0.1, momentum=0.5, foreach=True),
    lambda o, p: o.Adagrad(p, lr=0.1),
    lambda o, p: o.Adagrad(p, lr=0.1, lr_decay=0.01, foreach=True),
], ids=["sparseadam", "sparseadam-max", "sgd", "sgd-momentum", "sgd-nesterov",
        "sgd-foreach", "adagrad", "adagrad-decay"])
def test_optimizer_steps_on_sparse_grads_as_torch(make_opt):
    (we, oe), (wt, ot) = (train(lib, make_opt) for lib in (ember, torch))
    np.testing.assert_allclose(we, wt, rtol=1e-5, atol=1e-6)
    for se, st_ in zip(oe.state.values(), ot.state.values()):
        assert list(se) == list(st_)
        for k in se:
            if hasattr(st_[k], "is_sparse") and hasattr(se[k], "is_sparse"):
                assert se[k].is_sparse == st_[k].is_sparse


@pytest.mark.parametrize("name,message", [
    ("Adam", "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("AdamW", "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("RMSprop", "RMSprop does not support sparse gradients"),
    ("Adadelta", "Adadelta does not support sparse gradients"),
    ("Adamax", "Adamax does not support sparse gradients"),
    ("NAdam", "NAdam does not support sparse gradients"),
    ("RAdam", "RAdam does not support sparse gradients"),
    ("ASGD", "ASGD does not support sparse gradients"),
    ("Rprop", "Rprop does not support sparse gradients"),
])
def test_dense_optimizers_refuse_sparse_grads(name, message):
    for lib in (ember, torch):
        with pytest.raises(RuntimeError) as info:
            train(lib, lambda o, p: getattr(o, name)(p), steps=1)
        assert str(info.value) == message


def test_optimizer_option_errors_on_sparse_grads():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
            train(lib, lambda o, p: o.SGD(p, lr=0.1, weight_decay=0.1), steps=1)
        with pytest.raises(RuntimeError, match="weight_decay option is not compatible with "
                                               "sparse gradients"):
            train(lib, lambda o, p: o.Adagrad(p, weight_decay=0.1), steps=1)


def test_sparse_adam_checks():
    w = ember.ones(3, 2, requires_grad=True)
    opt = ember.optim.SparseAdam([w])
    w.sum().backward()
    with pytest.raises(RuntimeError, match="^SparseAdam does not support dense gradients, "
                                           "please consider Adam instead$"):
        opt.step()
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        ember.optim.SparseAdam([])
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an "
                                        "iterable of Tensors or dicts"):
        ember.optim.SparseAdam(w)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        ember.optim.SparseAdam([w], lr=-1)
    with pytest.raises(ValueError, match=r"Complex params at indices \[\[0, 0\]\]"):
        ember.optim.SparseAdam([ember.zeros(2, dtype=ember.complex64, requires_grad=True)])


def test_sparse_adam_skips_an_empty_grad():
    emb = ember.nn.Embedding(4, 2, sparse=True, padding_idx=0)
    opt = ember.optim.SparseAdam(emb.parameters())
    before = emb.weight.detach().clone()
    emb(ember.tensor([0, 0])).sum().backward()  # only padding: no entries
    opt.step()
    assert bool((emb.weight == before).all())


def test_clip_grad_norm_refuses_a_sparse_grad_as_torch():
    for lib in (ember, torch):
        emb = pair(lib, sparse=True)
        emb(lib.tensor([1, 2])).sum().backward()
        with pytest.raises(NotImplementedError, match="Could not run 'aten::linalg_vector_norm' "
                                                      "with arguments from the 'SparseCPU'"):
            lib.nn.utils.clip_grad_norm_(emb.parameters(), 1.0)


# -- sparse arithmetic the optimizers use ---------------------------------------------------


def test_sparse_add_merges_entry_lists_as_torch():
    cases = [([[0, 2]], [[2, 1]]), ([[0, 2, 2, 4]], [[3, 3]]), ([[2, 2]], [[2]]),
             ([[1]], [[]])]
    for ia, ib in cases:
        res = []
        for lib in (ember, torch):
            a = lib.sparse_coo_tensor(ia, lib.ones(len(ia[0]), 2), (5, 2))
            b = lib.sparse_coo_tensor(ib, lib.full((len(ib[0]), 2), 2.0), (5, 2))
            d = lib.zeros(5, 2)
            d.add_(a, alpha=-0.5)
            res.append((a + b, a.clone().add_(b, alpha=3), d))
        for e, t in zip(res[0][:2], res[1][:2]):
            same_sparse(e, t)
        np.testing.assert_array_equal(res[0][2].numpy(), res[1][2].numpy())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 4), max_size=6), st.lists(st.integers(0, 4), max_size=6),
       st.booleans())
def test_random_sparse_adds_merge_as_torch(ia, ib, coalesce):
    res = []
    for lib in (ember, torch):
        a = lib.sparse_coo_tensor([ia], lib.arange(len(ia) * 2.0).reshape(-1, 2), (5, 2))
        b = lib.sparse_coo_tensor([ib], -lib.arange(len(ib) * 2.0).reshape(-1, 2) / 3, (5, 2))
        if coalesce:
            a, b = a.coalesce(), b.coalesce()
        res.append(a + b)
    same_sparse(*res)


def test_grad_scaler_unscales_sparse_grads_as_torch():
    res = []
    for lib in (ember, torch):
        emb = pair(lib, sparse=True)
        opt = lib.optim.SGD(emb.parameters(), lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        scaler.scale(emb(lib.tensor([1, 2, 1])).pow(2).sum()).backward()
        scaler.unscale_(opt)
        g = emb.weight.grad
        scaler.step(opt)
        res.append((g, emb.weight.detach().numpy()))
    same_sparse(res[0][0], res[1][0])
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-6)
