"""The rest of nn, the torch.* nn functions, and the optimizers and LR schedulers of
issue 16's `nnmisc` family, checked against PyTorch: values, gradients, errors."""

from __future__ import annotations

import numpy as np
import pytest
from distributed_util import needs_mpi, run_ranks

import ember
import ember.nn.functional as F  # noqa: F401
from ember import nn, optim  # noqa: F401
from ember.optim import lr_scheduler as sched

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _t(a, requires_grad=False):
    """The same values as an ember tensor and a torch tensor."""
    a = np.asarray(a)
    return (ember.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _close(e, t, atol=1e-5, rtol=1e-4):
    t = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    e = e.detach().numpy() if isinstance(e, ember.Tensor) else np.asarray(e)
    assert e.shape == t.shape, (e.shape, t.shape)
    np.testing.assert_allclose(e, t, atol=atol, rtol=rtol)


# -- LR schedulers ---------------------------------------------------------------------


def _two_groups(opt_name="SGD", **kw):
    kw = {"lr": 0.1, **({"momentum": 0.9} if opt_name == "SGD" else {}), **kw}
    ep = [ember.ones(2, requires_grad=True), ember.ones(3, requires_grad=True)]
    tp = [torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)]
    eo = getattr(optim, opt_name)([{"params": [ep[0]]}, {"params": [ep[1]], "lr": 0.04}], **kw)
    to = getattr(torch.optim, opt_name)([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.04}],
                                        **kw)
    return eo, to


class _Scale:
    def __init__(self):
        self.k = 0.5

    def __call__(self, x):
        return self.k ** x


@pytest.mark.parametrize("opt_name,make", [
    ("SGD", lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("SGD", lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3,
                                    step_size_down=5, mode="triangular2")),
    ("Adam", lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                     mode="exp_range", gamma=0.97)),
    ("SGD", lambda m, o: m.CyclicLR(o, 0.01, 0.1, 3, scale_fn=lambda x: 0.9 ** x,
                                    scale_mode="iterations", cycle_momentum=False)),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5)),
    ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)),
])
def test_scheduler_curves_match_torch(opt_name, make):
    eo, to = _two_groups(opt_name)
    es, ts = make(sched, eo), make(torch.optim.lr_scheduler, to)
    key = "betas" if opt_name == "Adam" else "momentum"
    for _ in range(30):
        eo.step()
        to.step()
        es.step()
        ts.step()
        np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
        for eg, tg in zip(eo.param_groups, to.param_groups):
            np.testing.assert_allclose(np.ravel(eg[key]), np.ravel(tg[key]), rtol=1e-12)


def test_warm_restarts_fractional_epochs_and_jumps():
    eo, to = _two_groups()
    es = sched.CosineAnnealingWarmRestarts(eo, T_0=4, T_mult=2)
    ts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(to, T_0=4, T_mult=2)
    for epoch in [0.25, 0.5, 3.9, 4.0, 7.5, 13, 27.3]:
        es.step(epoch)
        ts.step(epoch)
        np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
        assert es.T_i == ts.T_i and es.last_epoch == ts.last_epoch
    es.step()
    ts.step()
    np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
    with pytest.raises(ValueError, match="non-negative epoch"):
        es.step(-1)


def test_scheduler_argument_errors():
    eo, _ = _two_groups()
    with pytest.raises(ValueError, match="positive integer T_0"):
        sched.CosineAnnealingWarmRestarts(eo, T_0=0)
    with pytest.raises(ValueError, match="T_mult >= 1"):
        sched.CosineAnnealingWarmRestarts(eo, T_0=2, T_mult=0)
    with pytest.raises(ValueError, match="mode is invalid"):
        sched.CyclicLR(eo, 0.1, 1.0, mode="square")
    ao = optim.Adagrad([ember.ones(2, requires_grad=True)])
    with pytest.raises(ValueError, match="momentum or beta1"):
        sched.CyclicLR(ao, 0.1, 1.0)
    with pytest.raises(TypeError, match="not an Optimizer"):
        sched.CyclicLR(object(), 0.1, 1.0)


def test_cyclic_state_dict_keeps_a_callable_objects_state():
    eo, _ = _two_groups()
    fn = _Scale()
    es = sched.CyclicLR(eo, 0.01, 0.1, 3, scale_fn=fn)
    fn.k = 0.25
    state = es.state_dict()
    assert state["_scale_fn_custom"] == {"k": 0.25}
    fn2 = _Scale()
    es2 = sched.CyclicLR(_two_groups()[0], 0.01, 0.1, 3, scale_fn=fn2)
    es2.load_state_dict(state)
    assert fn2.k == 0.25
    lam = sched.CyclicLR(_two_groups()[0], 0.01, 0.1, 3, scale_fn=lambda x: 1.0)
    assert lam.state_dict()["_scale_fn_custom"] is None


# -- optimizers ------------------------------------------------------------------------


def _run_optimizer(name, shapes, steps=6, atol=1e-5, **kw):
    """Minimise sum((p - 1)^2 * w) with ember's and torch's optimizer from the same start;
    the parameters after every step agree."""
    rng = np.random.default_rng(0)
    starts = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    weights = [rng.uniform(0.5, 2.0, s).astype(np.float32) for s in shapes]
    ep = [ember.tensor(a, requires_grad=True) for a in starts]
    tp = [torch.tensor(a, requires_grad=True) for a in starts]
    eo, to = getattr(optim, name)(ep, **kw), getattr(torch.optim, name)(tp, **kw)
    for _ in range(steps):
        for params, opt, lib in ((ep, eo, ember), (tp, to, torch)):
            opt.zero_grad()
            sum(((p - 1) ** 2 * lib.tensor(w)).sum() for p, w in zip(params, weights)).backward()
            opt.step()
        for e, t in zip(ep, tp):
            _close(e, t, atol=atol)
    return eo, to


@pytest.mark.parametrize("kw", [{}, {"lr": 0.05, "weight_decay": 0.1, "beta2_decay": -0.5},
                                {"eps": (1e-6, 1e-2), "d": 2.0, "maximize": False}])
def test_adafactor_matches_torch(kw):
    eo, to = _run_optimizer("Adafactor", [(4, 5), (3,), (2, 3, 4), ()], **kw)
    e_state, t_state = eo.state_dict()["state"], to.state_dict()["state"]
    assert sorted(e_state[0]) == sorted(t_state[0]) == ["col_var", "row_var", "step"]
    assert sorted(e_state[1]) == ["step", "variance"]
    assert float(e_state[0]["step"]) == float(t_state[0]["step"]) == 6.0


@pytest.mark.parametrize("kw", [{}, {"lr": 0.02, "nesterov": False, "momentum": 0.9},
                                {"adjust_lr_fn": "match_rms_adamw", "weight_decay": 0.0}])
def test_muon_matches_torch(kw):
    # the Newton-Schulz iteration runs in bfloat16 in both: compare to bfloat16's precision
    _run_optimizer("Muon", [(4, 6), (7, 3)], steps=3, atol=6e-3, **kw)


def test_optimizer_argument_errors():
    p = [ember.ones(2, 2, requires_grad=True)]
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        optim.Muon([ember.ones(3, requires_grad=True)])
    with pytest.raises(ValueError, match="Adjust learning rate function"):
        optim.Muon(p, adjust_lr_fn="bogus")
    with pytest.raises(ValueError, match="beta2_decay should be <= 0"):
        optim.Adafactor(p, beta2_decay=0.5)
    with pytest.raises(ValueError, match="Clipping threshold d"):
        optim.Adafactor(p, d=0.5)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SparseAdam(p, lr=0.0)


def test_sparse_adam_refuses_dense_gradients_like_torch():
    e = optim.SparseAdam([ember.ones(3, requires_grad=True)], lr=0.1)
    t = torch.optim.SparseAdam([torch.ones(3, requires_grad=True)], lr=0.1)
    assert e.defaults == t.defaults
    e.step()  # no gradients yet: nothing to do
    for opt in (e, t):
        (opt.param_groups[0]["params"][0] * 2).sum().backward()
        with pytest.raises(RuntimeError, match="does not support dense gradients"):
            opt.step()


# -- nn.functional and nn modules -------------------------------------------------------


def _both(fn_e, fn_t, *arrays, grad=True, atol=1e-6):
    """Run `fn_e` on ember tensors and `fn_t` on torch tensors of the same values; values
    and (for float inputs) the gradients of the output's sum agree."""
    es = [ember.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    oe, ot = fn_e(*es), fn_t(*ts)
    _close(oe, ot, atol=atol)
    assert str(oe.dtype).split(".")[-1] == str(ot.dtype).split(".")[-1]
    if grad:
        oe.sum().backward()
        ot.sum().backward()
        for e, t in zip(es, ts):
            if t.grad is not None:
                _close(e.grad, t.grad, atol=atol)
    return oe


RNG = np.random.default_rng(7)
W = RNG.standard_normal((6, 3))
IDX = np.array([1, 2, 4, 4, 3, 0, 5, 2])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2, -2])
def test_embedding_bag_matches_torch(mode, padding_idx):
    kw = {"mode": mode, "padding_idx": padding_idx}
    _both(lambda w: F.embedding_bag(ember.tensor(IDX), w, ember.tensor([0, 3, 3, 6]), **kw),
          lambda w: TF.embedding_bag(torch.tensor(IDX), w, torch.tensor([0, 3, 3, 6]), **kw), W)
    _both(lambda w: F.embedding_bag(ember.tensor(IDX.reshape(2, 4)), w, **kw),
          lambda w: TF.embedding_bag(torch.tensor(IDX.reshape(2, 4)), w, **kw), W)
    _both(lambda w: F.embedding_bag(ember.tensor(IDX), w, ember.tensor([0, 2, 8]),
                                    include_last_offset=True, **kw),
          lambda w: TF.embedding_bag(torch.tensor(IDX), w, torch.tensor([0, 2, 8]),
                                     include_last_offset=True, **kw), W)


def test_embedding_bag_weights_module_and_errors():
    psw = RNG.random(8)
    _both(lambda w, p: F.embedding_bag(ember.tensor(IDX), w, ember.tensor([0, 5]), mode="sum",
                                       per_sample_weights=p),
          lambda w, p: TF.embedding_bag(torch.tensor(IDX), w, torch.tensor([0, 5]), mode="sum",
                                        per_sample_weights=p), W, psw)
    ember.manual_seed(0)
    bag = nn.EmbeddingBag(6, 3, mode="max", padding_idx=1)
    assert repr(bag) == repr(torch.nn.EmbeddingBag(6, 3, mode="max", padding_idx=1))
    assert float(bag.weight[1].abs().sum()) == 0.0
    pre = nn.EmbeddingBag.from_pretrained(ember.tensor(W), mode="sum")
    assert not pre.weight.requires_grad
    _close(pre(ember.tensor(IDX.reshape(2, 4))),
           torch.nn.EmbeddingBag.from_pretrained(torch.tensor(W), mode="sum")(
               torch.tensor(IDX.reshape(2, 4))))
    w = ember.tensor(W)
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(ember.tensor(IDX), w, ember.tensor([0]), mode="min")
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(ember.tensor(IDX), w, ember.tensor([1, 3]))
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(ember.tensor(IDX.reshape(2, 4)), w, ember.tensor([0, 1]))
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(ember.tensor(IDX), w, ember.tensor([0]),
                        per_sample_weights=ember.ones(8, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="embedding_bag: Expected idx >= 0 && idx < "
                                           "num_embeddings but found idx to be 9"):
        F.embedding_bag(ember.tensor([1, 9]), w, ember.tensor([0]))  # (float64: no fast path)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following"):
        F.embedding_bag(ember.tensor([1.0, 2.0]), w, ember.tensor([0]))
    empty = F.embedding_bag(ember.tensor([], dtype=ember.int64), w, ember.tensor([0, 0]),
                            mode="max")
    assert empty.shape == (2, 3) and float(empty.abs().sum()) == 0.0


@pytest.mark.parametrize("call", [
    "F.embedding_bag(L.tensor([1, 2, 4, 5, 4, 13]), w, L.tensor([0, 2]))",
    "F.embedding_bag(L.tensor([-1, 2]), w, L.tensor([0, 1]), mode='sum')",
    "F.embedding_bag(L.tensor([[1, 2], [7, 0]]), w)",
    "F.embedding_bag(L.tensor([1, 2, 13]), w, L.tensor([0, 1]), mode='max')",
    "F.embedding_bag(L.tensor([1, 2, 13]), w.double(), L.tensor([0, 1]))",
    "F.embedding_bag(L.tensor([1, 13]), w, L.tensor([0, 1]), padding_idx=0)",
    "F.embedding_bag(L.tensor([1, 2]), w.double(), L.tensor([0, 1]), mode='sum', "
    "per_sample_weights=L.ones(2))",
])
def test_embedding_bag_bad_input_errors_as_torch(call):
    """A DLRM's out-of-range sparse feature: PyTorch's RuntimeError (its fast float path
    names the index's place in the flat input, as its single-threaded kernel does)."""
    errors, threads = [], torch.get_num_threads()
    torch.set_num_threads(1)  # (threads each number the places of their own bags)
    try:
        for lib in (torch, ember):
            w = lib.ones(6, 3)
            with pytest.raises(RuntimeError) as err:
                eval(call, {"L": lib, "F": lib.nn.functional, "w": w})
            errors.append(str(err.value).replace("ember.", "torch."))
    finally:
        torch.set_num_threads(threads)
    assert errors[1] == errors[0]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_values_and_gradients_match_torch(reduction):
    T, N, C = 12, 3, 5
    lp = np.log(RNG.dirichlet(np.ones(C), (T, N)))
    targets, lens = np.array([[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 4, 4]]), ([12, 9, 5], [3, 2, 4])
    for zero_infinity in (True, False):
        kw = {"reduction": reduction, "zero_infinity": zero_infinity}
        fe = lambda x, kw=kw: F.ctc_loss(x, ember.tensor(targets), ember.tensor(lens[0]),  # noqa: E731
                                  ember.tensor(lens[1]), **kw)
        ft = lambda x, kw=kw: TF.ctc_loss(x, torch.tensor(targets), torch.tensor(lens[0]),  # noqa: E731
                                   torch.tensor(lens[1]), **kw)
        if zero_infinity:  # the third target cannot fit in 5 frames: an infinite loss
            _both(fe, ft, lp)
        else:
            _close(fe(ember.tensor(lp)), ft(torch.tensor(lp)))


def test_ctc_loss_concatenated_unbatched_module_and_errors():
    lp = np.log(RNG.dirichlet(np.ones(4), (7, 2))).astype(np.float32)
    flat, il, tl = np.array([1, 2, 3, 3, 1], dtype=np.int32), [7, 6], [2, 3]
    loss = nn.CTCLoss(blank=0, reduction="sum")
    _both(lambda x: loss(x, ember.tensor(flat), il, tl),
          lambda x: torch.nn.CTCLoss(reduction="sum")(x, torch.tensor(flat), torch.tensor(il),
                                                       torch.tensor(tl)), lp, atol=1e-5)
    _both(lambda x: F.ctc_loss(x[:, 0], ember.tensor([1, 2]), 7, 2),
          lambda x: TF.ctc_loss(x[:, 0], torch.tensor([1, 2]), torch.tensor(7), torch.tensor(2)),
          lp, atol=1e-5)
    empty = F.ctc_loss(ember.tensor(lp), ember.tensor([2]), [7, 0], [0, 1], reduction="none")
    _close(empty, TF.ctc_loss(torch.tensor(lp), torch.tensor([2]), torch.tensor([7, 0]),
                              torch.tensor([0, 1]), reduction="none").abs())
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(ember.tensor(lp), ember.tensor(flat), il, tl, blank=4)
    with pytest.raises(RuntimeError, match="input_lengths to have value at most 7"):
        F.ctc_loss(ember.tensor(lp), ember.tensor(flat), [8, 6], tl)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(ember.tensor(lp), ember.tensor(flat), [7], tl)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.ctc_loss(ember.tensor(lp), ember.tensor(flat), il, tl, reduction="max")


@pytest.mark.parametrize("lengths, target_slice, blank", [
    (([13, 10, 8], [4, 3, 2]), None, 0), (([12, 10, 8], [5, 3, 2]), None, 0),
    (([12, 10, 8], [4, 3, 2]), 7, 0), (([12, 10, 8], [4, 3, 2]), None, 6),
    (([12, 10], [4, 3, 2]), None, 0), (([12, 10, 8], [4, 3]), None, 0),
    (([12, -1, 13], [4, 3, 2]), None, 0), (([12, 10, 8], [4, -2, 2]), None, 0),
    (([13, 10, 8], [4, -2, 2]), None, 0)])
def test_ctc_loss_bad_lengths_error_as_torch(lengths, target_slice, blank):
    """A speech model's wrong lengths: PyTorch's RuntimeErrors, word for word and in its
    order of checks (negative lengths too, rather than an infinite loss)."""
    lp = np.log(RNG.dirichlet(np.ones(6), (12, 3))).astype(np.float32)
    targets = RNG.integers(1, 6, (3, 4))
    if target_slice is not None:
        targets = targets.reshape(-1)[:target_slice]
    errors = []
    for lib in (torch, ember):
        with pytest.raises(RuntimeError) as err:
            lib.nn.functional.ctc_loss(lib.tensor(lp), lib.tensor(targets), *lengths,
                                       blank=blank)
        errors.append(str(err.value))
    assert errors[1] == errors[0]


def test_margin_losses_match_torch():
    x = RNG.standard_normal((4, 5))
    t = np.array([1, 0, 4, 2])
    w = RNG.random(5)
    for kw in ({}, {"p": 2, "margin": 0.5}, {"reduction": "none"}):
        _both(lambda x, kw=kw: F.multi_margin_loss(x, ember.tensor(t), weight=ember.tensor(w),
                                                  **kw),
              lambda x, kw=kw: TF.multi_margin_loss(x, torch.tensor(t), weight=torch.tensor(w),
                                                    **kw),
              x)
    _both(lambda x: nn.MultiMarginLoss()(x[0], ember.tensor(3)),
          lambda x: torch.nn.MultiMarginLoss()(x[0], torch.tensor(3)), x)
    y = np.array([[3, 0, -1, 1, 2], [1, 2, 3, -1, 0], [0, 1, 2, 3, 4], [-1, 1, 2, 3, 4]])
    for red in ("mean", "sum", "none"):
        _both(lambda x, red=red: nn.MultiLabelMarginLoss(reduction=red)(x, ember.tensor(y)),
              lambda x, red=red: torch.nn.MultiLabelMarginLoss(reduction=red)(
                  x, torch.tensor(y)), x)
    _both(lambda x: F.multilabel_margin_loss(x[1], ember.tensor(y[1])),
          lambda x: TF.multilabel_margin_loss(x[1], torch.tensor(y[1])), x)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(ember.tensor(x), ember.tensor(t), p=3)
    with pytest.raises(IndexError, match="out of bounds"):
        F.multi_margin_loss(ember.tensor(x), ember.tensor([1, 0, 5, 2]))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(ember.tensor(x), ember.tensor(y[:2]))
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):  # (PyTorch's)
        nll2d = nn.NLLLoss2d()
    _both(lambda x: nll2d(x.reshape(1, 4, 5, 1).log_softmax(1), ember.tensor([[[1]] * 5])),
          lambda x: torch.nn.NLLLoss()(x.reshape(1, 4, 5, 1).log_softmax(1),
                                       torch.tensor([[[1]] * 5])), x)


def test_triplet_with_distance_and_linear_cross_entropy_match_torch():
    a, p, n = RNG.standard_normal((3, 4, 5))
    cos = lambda lib: lambda u, v: 1 - lib.nn.functional.cosine_similarity(u, v)  # noqa: E731
    assert repr(nn.TripletMarginWithDistanceLoss()) == \
        repr(torch.nn.TripletMarginWithDistanceLoss())
    _both(lambda a, p, n: nn.TripletMarginWithDistanceLoss(swap=True)(a, p, n),
          lambda a, p, n: torch.nn.TripletMarginWithDistanceLoss(swap=True)(a, p, n), a, p, n)
    _both(lambda a, p, n: F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=cos(ember), margin=0.5, reduction="none"),
        lambda a, p, n: TF.triplet_margin_with_distance_loss(
        a, p, n, distance_function=cos(torch), margin=0.5, reduction="none"), a, p, n)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_with_distance_loss(ember.tensor(a), ember.tensor(p), ember.tensor(n),
                                            margin=0)
    inp, lw = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))
    t = np.array([1, 0, 4, 2])
    _both(lambda i, w: F.linear_cross_entropy(i, w, ember.tensor(t), label_smoothing=0.1),
          lambda i, w: TF.linear_cross_entropy(i, w, torch.tensor(t), label_smoothing=0.1),
          inp, lw)
    lw3, lb = RNG.standard_normal((5, 2, 3)), RNG.standard_normal((5, 2))
    t2 = np.array([[1, 0], [4, 2], [0, 0], [3, 3]])
    _both(lambda i, w, b: F.linear_cross_entropy(i, w, ember.tensor(t2), linear_bias=b,
                                                 reduction="none"),
          lambda i, w, b: TF.linear_cross_entropy(i, w, torch.tensor(t2), linear_bias=b,
                                                  reduction="none"), inp, lw3, lb)
    with pytest.raises(RuntimeError, match="requires batched input"):
        F.linear_cross_entropy(ember.tensor(inp[0]), ember.tensor(lw3), ember.tensor(t2[0]))
    ember.manual_seed(1)
    mod = nn.LinearCrossEntropyLoss(3, 5, bias=True)
    tmod = torch.nn.LinearCrossEntropyLoss(3, 5, bias=True)
    assert repr(mod) == repr(tmod)
    with torch.no_grad():
        tmod.linear.weight.copy_(torch.tensor(mod.linear.weight.detach().numpy()))
        tmod.linear.bias.copy_(torch.tensor(mod.linear.bias.detach().numpy()))
    inp32 = inp.astype(np.float32)
    _close(mod(ember.tensor(inp32), ember.tensor(t)), tmod(torch.tensor(inp32), torch.tensor(t)))


def test_normalisation_and_shuffle_match_torch():
    x = RNG.standard_normal((2, 6, 3, 4))
    _both(lambda x: nn.LocalResponseNorm(3)(x), lambda x: torch.nn.LocalResponseNorm(3)(x), x)
    _both(lambda x: F.local_response_norm(x[:, :, 0], 2, alpha=0.1, beta=0.5, k=2.0),
          lambda x: TF.local_response_norm(x[:, :, 0], 2, alpha=0.1, beta=0.5, k=2.0), x)
    for size in (1, 2, 3, 5, 8):
        _both(lambda x, size=size: nn.CrossMapLRN2d(size, alpha=0.5)(x),
              lambda x, size=size: torch.nn.CrossMapLRN2d(size, alpha=0.5)(x), x, grad=False)
    _both(lambda x: nn.CrossMapLRN2d(3, alpha=0.5)(x) * 0.5,
          lambda x: torch.nn.CrossMapLRN2d(3, alpha=0.5)(x) * 0.5, x, atol=1e-5)
    assert repr(nn.LocalResponseNorm(3)) == repr(torch.nn.LocalResponseNorm(3))
    weights = ember.arange(72.0, dtype=ember.float64).reshape(2, 6, 3, 2)
    tweights = torch.arange(72.0, dtype=torch.float64).reshape(2, 6, 3, 2)
    _both(lambda x: nn.ChannelShuffle(3)(x[..., :2]) * weights,
          lambda x: torch.nn.ChannelShuffle(3)(x[..., :2]) * tweights, x)
    _both(lambda x: F.native_channel_shuffle(x, 2), lambda x: TF.native_channel_shuffle(x, 2), x,
          grad=False)
    assert repr(nn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))
    _both(lambda x: nn.Softmax2d()(x) * weights[..., :1].expand(2, 6, 3, 4),
          lambda x: torch.nn.Softmax2d()(x) * tweights[..., :1].expand(2, 6, 3, 4), x)
    with pytest.raises(RuntimeError, match="divisible by groups"):
        F.channel_shuffle(ember.tensor(x), 4)
    with pytest.raises(RuntimeError, match="expects input with > 2 dims"):
        F.channel_shuffle(ember.tensor(x[0, 0]), 1)
    with pytest.raises(ValueError, match="Expected 3D or higher"):
        F.local_response_norm(ember.tensor(x[0, 0]), 2)
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D"):
        nn.CrossMapLRN2d(3)(ember.tensor(x[0]))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D"):
        nn.Softmax2d()(ember.tensor(x[0, 0]))
    assert F.local_response_norm(ember.zeros(0, 3, 2), 2).shape == (0, 3, 2)


def test_pdist_and_gumbel_softmax():
    x = RNG.standard_normal((5, 3))
    for p in (2, 1, 1.5, float("inf")):
        _both(lambda x, p=p: F.pdist(x, p), lambda x, p=p: TF.pdist(x, p), x)
    assert F.pdist(ember.ones(1, 3)).shape == (0,)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors"):
        F.pdist(ember.ones(3))
    with pytest.raises(RuntimeError, match="non-negative p"):
        F.pdist(ember.ones(3, 2), -1)
    logits = ember.tensor(RNG.standard_normal((200, 4)), requires_grad=True)
    ember.manual_seed(0)
    soft = F.gumbel_softmax(logits, tau=0.5)
    _close(soft.sum(-1), np.ones(200))
    hard = F.gumbel_softmax(logits, hard=True, dim=-1)
    assert set(np.unique(hard.detach().numpy())) == {0.0, 1.0}
    _close(hard.sum(-1), np.ones(200))
    (hard * ember.arange(4.0, dtype=ember.float64)).sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0  # straight-through
    # samples follow softmax(logits): the argmax frequencies of a fixed row
    row = ember.tensor([[1.0, 0.0, -1.0]]).expand(4000, 3)
    freq = np.bincount(F.gumbel_softmax(row, hard=True).argmax(-1).numpy(), minlength=3) / 4000
    np.testing.assert_allclose(freq, torch.softmax(torch.tensor([1.0, 0.0, -1.0]), 0),
                               atol=0.03)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(logits, eps=1e-3)


def test_rrelu_and_feature_alpha_dropout():
    x = RNG.standard_normal((4, 6, 5))
    _both(lambda x: F.rrelu(x), lambda x: TF.rrelu(x), x)  # eval: the mean slope
    _both(lambda x: nn.RReLU(0.1, 0.3).eval()(x), lambda x: torch.nn.RReLU(0.1, 0.3).eval()(x),
          x)
    assert repr(nn.RReLU(0.1, 0.3, inplace=True)) == repr(torch.nn.RReLU(0.1, 0.3, True))
    e = ember.tensor(x, requires_grad=True)
    out = F.rrelu(e, 0.1, 0.3, training=True)
    slope = (out / e).detach().numpy()
    assert np.all(slope[x >= 0] == 1.0)
    assert np.all((slope[x < 0] >= 0.1) & (slope[x < 0] <= 0.3)) and np.std(slope[x < 0]) > 0.01
    out.sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), slope)
    y = ember.tensor(x.copy())
    F.rrelu_(y)
    _close(y, TF.rrelu(torch.tensor(x)))
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal"):
        F.rrelu(e, 0.5, 0.2, training=True)
    # feature alpha dropout: a dropped channel is constant (SELU's saturation, mapped)
    ember.manual_seed(3)
    big = ember.tensor(RNG.standard_normal((64, 32, 8)))
    out = F.feature_alpha_dropout(big, 0.5, training=True).numpy()
    per_channel_std = out.std(-1)
    dropped = per_channel_std < 1e-12
    assert 0.35 < dropped.mean() < 0.65
    alpha, p = 1.7580993408473766, 0.5
    a = 1.0 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    np.testing.assert_allclose(out[dropped.nonzero()][:, 0], -alpha * a + alpha * a * p)
    kept = ~dropped
    np.testing.assert_allclose(out[kept], a * big.numpy()[kept] + alpha * a * p)
    assert F.feature_alpha_dropout(big, 0.5, training=False) is big
    assert nn.FeatureAlphaDropout(0.2).eval()(big) is big
    assert repr(nn.FeatureAlphaDropout(0.2)) == repr(torch.nn.FeatureAlphaDropout(0.2))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.feature_alpha_dropout(big, 1.5)


def test_adaptive_log_softmax_matches_torch():
    ember.manual_seed(0)
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[3, 6], div_value=2.0, head_bias=True)
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[3, 6], div_value=2.0,
                                            head_bias=True)
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    assert repr(m) == repr(t)
    x = RNG.standard_normal((7, 8)).astype(np.float32)
    target = np.array([0, 4, 9, 2, 6, 7, 3])
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    eo, to = m(ex, ember.tensor(target)), t(tx, torch.tensor(target))
    _close(eo.output, to.output)
    _close(eo.loss, to.loss)
    eo.loss.backward()
    to.loss.backward()
    _close(ex.grad, tx.grad)
    _close(m.head.weight.grad, t.head.weight.grad)
    _close(m.log_prob(ember.tensor(x)), t.log_prob(torch.tensor(x)))
    _close(m.predict(ember.tensor(x)), t.predict(torch.tensor(x)))
    single = m(ember.tensor(x[0]), ember.tensor(target[0]))
    assert single.output.shape == ()
    with pytest.raises(RuntimeError, match="Target values should be in \\[0, 9\\]"):
        m(ember.tensor(x), ember.tensor([0, 1, 2, 3, 4, 5, 10]))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[6, 3])


def test_container_rnn_cell_base_and_sync_batch_norm_without_a_group():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = nn.Container(lin=nn.Linear(2, 3))
    assert [n for n, _ in c.named_children()] == ["lin"]
    assert issubclass(nn.LSTMCell, nn.RNNCellBase) and issubclass(nn.GRUCell, nn.RNNCellBase)
    # world size 1 (no group): BatchNorm's semantics on any (N, C, *) input
    ember.manual_seed(0)
    x = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    sbn, tbn = nn.SyncBatchNorm(3, momentum=0.3), torch.nn.BatchNorm1d(3, momentum=0.3)
    assert repr(sbn) == repr(torch.nn.SyncBatchNorm(3, momentum=0.3))
    _both(lambda x: sbn(x) * ember.arange(5.0), lambda x: tbn(x) * torch.arange(5.0), x,
          atol=1e-5)
    _close(sbn.running_var, tbn.running_var)
    sbn.eval()
    tbn.eval()
    _close(sbn(ember.tensor(x)), tbn(torch.tensor(x)), atol=1e-5)
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm1d(4)))
    model[1].running_mean.fill_(2.0)
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is nn.SyncBatchNorm and type(converted[2][0]) is nn.SyncBatchNorm
    assert converted[1].weight is model[1].weight
    assert float(converted[1].running_mean[0]) == 2.0
    with pytest.raises(ValueError, match="expected at least 2D input"):
        sbn(ember.ones(3))


SYNC_BN_SCRIPT = """
import numpy as np
import ember
import ember.distributed as dist
from ember import nn

dist.init_process_group()
rank, size = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(0)
full = rng.standard_normal((4 * size, 3, 5)).astype(np.float64)
mine = full[4 * rank:4 * rank + 4]
weights = rng.standard_normal((4 * size, 3, 5))
ember.manual_seed(0)
sync = nn.SyncBatchNorm(3, momentum=0.2).double()
ref = nn.BatchNorm1d(3, momentum=0.2).double()
x = ember.tensor(mine, requires_grad=True)
xf = ember.tensor(full, requires_grad=True)
out = sync(x)
(out * ember.tensor(weights[4 * rank:4 * rank + 4])).sum().backward()
ref_out = ref(xf)
(ref_out * ember.tensor(weights)).sum().backward()
np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy()[4 * rank:4 * rank + 4],
                           atol=1e-10)
np.testing.assert_allclose(x.grad.numpy(), xf.grad.numpy()[4 * rank:4 * rank + 4], atol=1e-10)
np.testing.assert_allclose(sync.running_var.numpy(), ref.running_var.numpy(), atol=1e-12)
np.testing.assert_allclose(sync.running_mean.numpy(), ref.running_mean.numpy(), atol=1e-12)
# each rank's weight gradient is its share; all-reduced (as DDP does) they are the total
g = sync.weight.grad.clone()
dist.all_reduce(g)
np.testing.assert_allclose(g.numpy(), ref.weight.grad.numpy(), atol=1e-10)
print(f"rank {rank}: sync batchnorm ok")
"""


@needs_mpi
def test_sync_batch_norm_across_ranks_is_batch_norm_of_the_whole_batch():
    code, out = run_ranks(2, SYNC_BN_SCRIPT, timeout=120)
    assert code == 0, out
    assert out.count("sync batchnorm ok") == 2, out


# -- torch.* nn functions (ATen's signatures) -------------------------------------------


def _lib_call(name, *args, **kwargs):
    """`name` called in ember and in torch with the same arguments (numpy arrays become
    tensors of each)."""
    def conv(lib, a):
        if isinstance(a, np.ndarray):
            return lib.tensor(a)
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], np.ndarray):
            return [lib.tensor(x) for x in a]
        return a
    e = getattr(ember, name)(*[conv(ember, a) for a in args],
                             **{k: conv(ember, v) for k, v in kwargs.items()})
    t = getattr(torch, name)(*[conv(torch, a) for a in args],
                             **{k: conv(torch, v) for k, v in kwargs.items()})
    return e, t


def _assert_same(e, t, atol=1e-6):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            _assert_same(a, b, atol)
        return
    _close(e, t, atol=atol)


X4 = RNG.standard_normal((4, 3, 5))
C3 = RNG.standard_normal(3)


@pytest.mark.parametrize("name,args,kwargs", [
    ("batch_norm", (X4, C3, C3 + 2, np.zeros(3), np.ones(3), True, 0.1, 1e-5, False), {}),
    ("batch_norm", (X4, None, None, C3, np.ones(3) * 2, False, 0.1, 1e-5, True), {}),
    ("instance_norm", (X4, C3, C3, None, None, True, 0.1, 1e-5, False), {}),
    ("group_norm", (RNG.standard_normal((2, 6, 4)), 3, RNG.standard_normal(6)), {"eps": 1e-3}),
    ("rms_norm", (X4, [5]), {"weight": RNG.standard_normal(5)}),
    ("native_batch_norm", (X4, C3, None, np.zeros(3), np.ones(3), True, 0.3, 1e-5), {}),
    ("native_batch_norm", (X4, None, None, np.zeros(3), np.ones(3), False, 0.3, 1e-5), {}),
    ("native_group_norm", (RNG.standard_normal((2, 6, 4)), None, None, 2, 6, 4, 3, 1e-5), {}),
    ("native_layer_norm", (X4, [3, 5], None, RNG.standard_normal((3, 5)), 1e-5), {}),
    ("embedding", (W, np.array([[0, 5], [2, 2]])), {"padding_idx": 2}),
    ("celu", (X4,), {"alpha": 0.5}),
    ("selu", (X4,), {}),
    ("threshold", (X4, 0.2, -3.0), {}),
    ("rrelu", (X4, 0.1, 0.4), {}),
    ("binary_cross_entropy_with_logits", (X4, (X4 > 0).astype(np.float64)),
     {"pos_weight": np.full((5,), 2.0), "reduction": 2}),
    ("cosine_embedding_loss", (X4[0], X4[1], np.array([1.0, -1.0, 1.0])), {"margin": 0.1}),
    ("cosine_embedding_loss", (X4[0], X4[1], np.array([1.0, -1.0, 1.0]), 0.0, 1), {}),
    ("hinge_embedding_loss", (X4, np.sign(X4)), {"reduction": 0}),
    ("kl_div", (np.log(np.abs(X4) + 0.1), np.abs(X4[::-1].copy())), {}),
    ("kl_div", (X4, X4[::-1].copy(), 2), {"log_target": True}),
    ("margin_ranking_loss", (X4[0], X4[1], np.sign(X4[2])), {"margin": 0.3}),
    ("poisson_nll_loss", (X4, np.abs(X4), True, True, 1e-8, 1), {}),
    ("triplet_margin_loss", (X4[0], X4[1], X4[2]), {"swap": True}),
    ("triplet_margin_loss", (X4[0], X4[1], X4[2]), {"p": 1.0, "reduction": 2}),
])
def test_torch_functions_match_torch(name, args, kwargs):
    e, t = _lib_call(name, *args, **kwargs)
    _assert_same(e, t)


def test_torch_function_state_updates_gradients_and_errors():
    rm_e, rv_e = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    rm_t, rv_t = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    ember.batch_norm(ember.tensor(X4), None, None, rm_e, rv_e, True, 0.2, 1e-5, False)
    torch.batch_norm(torch.tensor(X4), None, None, rm_t, rv_t, True, 0.2, 1e-5, False)
    _close(rm_e, rm_t)
    _close(rv_e, rv_t)
    _both(lambda x: ember.kl_div(x, x.detach().abs(), 1),
          lambda x: torch.kl_div(x, x.detach().abs(), 1), X4)
    for name in ("hinge_embedding_loss", "kl_div", "margin_ranking_loss"):
        # PyTorch's Python binding defaults these to no reduction
        args = (X4, np.sign(X4)) + ((np.sign(X4[::-1].copy()),) if "ranking" in name else ())
        e, t = _lib_call(name, *args)
        _assert_same(e, t)
    with pytest.raises(TypeError, match="argument 'reduction' must be int"):
        ember.kl_div(ember.tensor(X4), ember.tensor(X4), "mean")
    with pytest.raises(ValueError, match="reduction must be 0"):
        ember.hinge_embedding_loss(ember.tensor(X4), ember.tensor(X4), 1.0, 3)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        ember.feature_dropout(ember.ones(3), 0.5, True)
    with pytest.raises(NotImplementedError, match="generator"):
        ember.rrelu(ember.tensor(X4), generator=object())


def test_torch_dropout_functions():
    x = ember.ones(200, 50)
    assert ember.dropout(x, 0.3, False) is x and ember.alpha_dropout(x, 0.3, False) is x
    out = ember.dropout(x, 0.3, True).numpy()
    assert set(np.unique(out)) == {0.0, np.float32(1 / 0.7)} and abs((out == 0).mean() - 0.3) < 0.03
    out, mask = ember.native_dropout(x, 0.3, True)
    assert mask.dtype is ember.bool
    np.testing.assert_allclose(out.numpy(), mask.numpy() / 0.7, rtol=1e-6)
    out, mask = ember.native_dropout(x, 0.3, False)
    assert bool(mask.all()) and out is not x and bool((out == x).all())
    feat = ember.feature_dropout(ember.ones(40, 30, 4), 0.5, True).numpy()
    assert (feat.std(-1) == 0).all() and set(np.unique(feat)) == {0.0, 2.0}
    y = ember.ones(40, 30, 4)
    assert ember.feature_dropout_(y, 0.5, True) is y and set(np.unique(y.numpy())) == {0.0, 2.0}
    fa = ember.feature_alpha_dropout(ember.ones(40, 30, 4), 0.5, True).numpy()
    assert (fa.std(-1) < 1e-6).all() and len(np.unique(fa.round(6))) == 2
    z = ember.tensor(X4.copy())
    ember.selu_(z)
    _close(z, torch.selu(torch.tensor(X4)))
    ember.threshold_(z, 0.0, 7.0)
    ember.celu_(z)
    _close(z, torch.celu(torch.threshold(torch.selu(torch.tensor(X4)), 0.0, 7.0)))


def _rnn_params(mode, layers, bidirectional, input_size=3, hidden=4, bias=True, proj=0):
    kw = {"num_layers": layers, "bidirectional": bidirectional, "bias": bias}
    if proj:
        kw["proj_size"] = proj
    cls = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNN_TANH": torch.nn.RNN,
           "RNN_RELU": torch.nn.RNN}[mode]
    if mode.startswith("RNN"):
        kw["nonlinearity"] = mode[4:].lower()
    torch.manual_seed(0)
    return [p.detach().double().numpy() for p in cls(input_size, hidden, **kw)._flat_weights]


@pytest.mark.parametrize("mode,layers,bidirectional,bias,proj,batch_first", [
    ("LSTM", 2, True, True, 0, False), ("LSTM", 1, False, False, 2, True),
    ("GRU", 2, False, True, 0, True), ("RNN_TANH", 1, True, True, 0, False),
    ("RNN_RELU", 2, False, False, 0, False),
])
def test_torch_recurrent_functions_match_torch(mode, layers, bidirectional, bias, proj,
                                               batch_first):
    params = _rnn_params(mode, layers, bidirectional, bias=bias, proj=proj)
    directions = 2 if bidirectional else 1
    x = RNG.standard_normal((2, 5, 3) if batch_first else (5, 2, 3))
    h0 = RNG.standard_normal((layers * directions, 2, proj or 4))
    name = mode.lower()
    if mode == "LSTM":
        c0 = RNG.standard_normal((layers * directions, 2, 4))
        hx = [h0, c0]
    else:
        hx = h0
    args = (x, hx, params, bias, layers, 0.0, False, bidirectional, batch_first)
    e, t = _lib_call(name, *args)
    _assert_same(e, t, atol=1e-10)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    ehx = [ember.tensor(h) for h in hx] if mode == "LSTM" else ember.tensor(hx)
    thx = [torch.tensor(h) for h in hx] if mode == "LSTM" else torch.tensor(hx)
    getattr(ember, name)(ex, ehx, [ember.tensor(p) for p in params], *args[3:])[0].sum() \
        .backward()
    getattr(torch, name)(tx, thx, [torch.tensor(p) for p in params], *args[3:])[0].sum() \
        .backward()
    _close(ex.grad, tx.grad, atol=1e-10)


def test_torch_cell_functions_match_torch():
    x, h, c = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 4)), RNG.standard_normal((2, 4))
    for name, gates in (("lstm_cell", 4), ("gru_cell", 3), ("rnn_tanh_cell", 1),
                        ("rnn_relu_cell", 1)):
        w_ih, w_hh = RNG.standard_normal((gates * 4, 3)), RNG.standard_normal((gates * 4, 4))
        b_ih, b_hh = RNG.standard_normal(gates * 4), RNG.standard_normal(gates * 4)
        hx = [h, c] if name == "lstm_cell" else h
        e, t = _lib_call(name, x, hx, w_ih, w_hh, b_ih, b_hh)
        _assert_same(e, t, atol=1e-10)
        e, t = _lib_call(name, x, hx, w_ih, w_hh)
        _assert_same(e, t, atol=1e-10)
    with pytest.raises(RuntimeError, match="expected hx of size"):
        ember.gru(ember.tensor(RNG.standard_normal((5, 2, 3))), ember.zeros(1, 3, 4), [
            ember.tensor(p) for p in _rnn_params("GRU", 1, False)], True, 1, 0.0, False, False,
            False)
    with pytest.raises(RuntimeError, match="inconsistent input_size"):
        ember.gru_cell(ember.tensor(h), ember.tensor(h), ember.ones(12, 3, dtype=ember.float64),
                       ember.ones(12, 4, dtype=ember.float64))


def test_import_ember_does_not_load_nn_for_the_torch_functions():
    import subprocess
    import sys
    code = ("import sys, ember; assert 'ember.nn' not in sys.modules; "
            "ember.selu; assert 'ember.nn' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- random draws -----------------------------------------------------------------------


@pytest.mark.parametrize("lam", [0.7, 6.0, 25.0])
def test_poisson_frequencies_follow_the_pmf(lam):
    ember.manual_seed(1)
    x = ember.poisson(ember.full((20000,), lam, dtype=ember.float64)).numpy()
    assert x.dtype == np.float64
    ks = np.arange(int(lam + 4 * np.sqrt(lam)) + 2)
    pmf = torch.distributions.Poisson(lam).log_prob(torch.tensor(ks, dtype=torch.float64)).exp()
    np.testing.assert_allclose(np.bincount(x.astype(int), minlength=ks.size)[:ks.size] / x.size,
                               pmf.numpy(), atol=0.012)


@pytest.mark.parametrize("n,p", [(9, 0.3), (60, 0.4), (60, 0.85)])
def test_binomial_frequencies_follow_the_pmf(n, p):
    ember.manual_seed(2)
    x = ember.binomial(ember.full((20000,), float(n)), ember.tensor([p])).numpy()
    assert x.shape == (20000,) and x.dtype == np.float32
    ks = np.arange(n + 1)
    pmf = torch.distributions.Binomial(n, torch.tensor(p, dtype=torch.float64)).log_prob(
        torch.tensor(ks, dtype=torch.float64)).exp()
    np.testing.assert_allclose(np.bincount(x.astype(int), minlength=n + 1) / x.size,
                               pmf.numpy(), atol=0.012)


def test_poisson_and_binomial_errors_match_torch():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="invalid Poisson rate"):
            lib.poisson(lib.tensor([1.0, -1.0]))
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            lib.poisson(lib.tensor([1]))
        with pytest.raises(ValueError, match="binomial only supports floating-point dtypes "
                                             "for count, got: Long"):
            lib.binomial(lib.tensor([5]), lib.tensor([0.5]))
    assert ember.poisson(ember.zeros(0)).shape == (0,)


def test_sync_batch_norm_pieces_compose_to_batch_norm():
    """The CUDA-only pieces of PyTorch's SyncBatchNorm (here on every device): per-chunk
    statistics gathered, the elementwise normalisation, and the two backward halves give
    batch norm's output and gradients (PyTorch's, on the whole batch)."""
    x = RNG.standard_normal((6, 3, 4))
    w, b, dy = RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal((6, 3, 4))
    chunks = [ember.tensor(x[:2]), ember.tensor(x[2:])]
    stats = [ember.batch_norm_stats(c, 1e-5) for c in chunks]
    means = ember.stack([s[0] for s in stats])
    invstds = ember.stack([s[1] for s in stats])
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    counts = ember.tensor([2 * 4, 4 * 4], dtype=ember.float64)
    mean, invstd = ember.batch_norm_gather_stats_with_counts(
        chunks[0], means, invstds, rm, rv, 0.1, 1e-5, counts)
    tx = torch.tensor(x, requires_grad=True)
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    tout = TF.batch_norm(tx, trm, trv, tw, tb, True, 0.1, 1e-5)
    (tout * torch.tensor(dy)).sum().backward()
    _close(rm, trm)
    _close(rv, trv)
    out = ember.batch_norm_elemt(ember.tensor(x), ember.tensor(w), ember.tensor(b), mean,
                                 invstd, 1e-5)
    _close(out, tout)
    sum_dy, sum_dy_xmu, gw, gb = ember.batch_norm_backward_reduce(
        ember.tensor(dy), ember.tensor(x), mean, invstd, ember.tensor(w), True, True, True)
    _close(gw, tw.grad)
    _close(gb, tb.grad)
    gx = ember.batch_norm_backward_elemt(ember.tensor(dy), ember.tensor(x), mean, invstd,
                                         ember.tensor(w), sum_dy, sum_dy_xmu,
                                         ember.tensor([6 * 4], dtype=ember.int32))
    _close(gx, tx.grad)
    m1, i1 = ember.batch_norm_gather_stats(chunks[0], means[:1].expand(2, 3),
                                           invstds[:1].expand(2, 3), None, None, 0.1, 1e-5, 8)
    _close(m1, stats[0][0])
    _close(i1, stats[0][1])
    empty = ember.batch_norm_backward_reduce(ember.tensor(dy), ember.tensor(x), mean, invstd,
                                             None, False, False, True)
    assert [t.numel() for t in empty] == [0, 0, 0, 3]
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    _assert_same(ember.batch_norm_update_stats(ember.tensor(x), rm, rv, 0.3),
                 torch.batch_norm_update_stats(torch.tensor(x), trm, trv, 0.3))
    _close(rm, trm)
    _close(rv, trv)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_torch_embedding_bag_returns_torchs_four_tensors(mode, padding_idx):
    for offsets, last in (([0, 3, 3, 6], False), ([0, 3, 3, 8], True)):
        for weight in (W, W.astype(np.float32)):
            e, t = _lib_call("embedding_bag", weight, IDX, np.array(offsets), False, mode,
                             False, None, last, padding_idx)
            for a, b in zip(e, t):
                assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
                _close(a, b)
    e, t = _lib_call("embedding_bag", W, IDX.astype(np.int32), np.array([0, 2], np.int32),
                     False, 1)
    for a, b in zip(e, t):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        _close(a, b)
