"""The rest of nn, the torch.* nn functions, and the optimizers and LR schedulers of
issue 16's `nnmisc` family, checked against PyTorch: values, gradients, errors."""

from __future__ import annotations

import numpy as np
import pytest

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
