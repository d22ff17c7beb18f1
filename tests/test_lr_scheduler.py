"""ember.optim.lr_scheduler: every scheduler's curve against PyTorch's over >= 30 steps
(learning rates and, for OneCycleLR, momentum / beta1), state_dict round trips, the
call-order warning and argument validation."""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest

import ember
from ember import optim
from ember.optim import lr_scheduler as sched_mod

torch = pytest.importorskip("torch")

STEPS = 40


def _optimizers(opt_name="SGD", **kwargs):
    """The same two-group optimizer in ember and in torch (lrs 0.1 and 0.04)."""
    kwargs = {"lr": 0.1, **({"momentum": 0.9} if opt_name == "SGD" else {}), **kwargs}
    eps = [ember.ones(2, requires_grad=True), ember.ones(3, requires_grad=True)]
    tps = [torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)]
    eopt = getattr(optim, opt_name)([{"params": [eps[0]]}, {"params": [eps[1]], "lr": 0.04}],
                                    **kwargs)
    topt = getattr(torch.optim, opt_name)([{"params": [tps[0]]},
                                           {"params": [tps[1]], "lr": 0.04}], **kwargs)
    return eopt, topt


def _lam(e):
    return 0.97 ** e + 0.01 * (e % 3)


def _mult(e):
    return 0.95 if e % 4 else 1.02


# (name, factory taking (module, optimizer), optimizer kind)
SCHEDULERS = [
    ("StepLR", lambda m, o: m.StepLR(o, step_size=7, gamma=0.5)),
    ("MultiStepLR", lambda m, o: m.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.3)),
    ("ExponentialLR", lambda m, o: m.ExponentialLR(o, gamma=0.9)),
    ("CosineAnnealingLR", lambda m, o: m.CosineAnnealingLR(o, T_max=10, eta_min=0.001)),
    ("CosineAnnealingLR-no-min", lambda m, o: m.CosineAnnealingLR(o, T_max=25)),
    ("LambdaLR", lambda m, o: m.LambdaLR(o, lr_lambda=_lam)),
    ("LambdaLR-per-group", lambda m, o: m.LambdaLR(o, lr_lambda=[_lam, lambda e: 1 / (e + 1)])),
    ("MultiplicativeLR", lambda m, o: m.MultiplicativeLR(o, lr_lambda=_mult)),
    ("LinearLR", lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=0.9,
                                         total_iters=10)),
    ("LinearLR-default", lambda m, o: m.LinearLR(o)),
    ("ConstantLR", lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=6)),
    ("PolynomialLR", lambda m, o: m.PolynomialLR(o, total_iters=20, power=2.0)),
    ("OneCycleLR-cos", lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=45)),
    ("OneCycleLR-linear", lambda m, o: m.OneCycleLR(o, max_lr=0.8, epochs=5, steps_per_epoch=9,
                                                    anneal_strategy="linear", pct_start=0.25)),
    ("OneCycleLR-three-phase", lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=42,
                                                         three_phase=True, div_factor=10.0,
                                                         base_momentum=0.8,
                                                         max_momentum=[0.95, 0.9])),
    ("OneCycleLR-no-momentum", lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=50,
                                                         cycle_momentum=False)),
    ("SequentialLR", lambda m, o: m.SequentialLR(
        o, schedulers=[m.LinearLR(o, start_factor=0.1, total_iters=5),
                       m.CosineAnnealingLR(o, T_max=12, eta_min=0.002)], milestones=[5])),
    ("SequentialLR-three", lambda m, o: m.SequentialLR(
        o, schedulers=[m.ConstantLR(o, factor=0.2, total_iters=4), m.ExponentialLR(o, 0.9),
                       m.StepLR(o, step_size=3, gamma=0.7)], milestones=[6, 20])),
    ("ChainedScheduler", lambda m, o: m.ChainedScheduler(
        [m.ExponentialLR(o, gamma=0.95), m.StepLR(o, step_size=5, gamma=0.5)])),
    # the recursive cosine form composes with another scheduler (a closed form would not)
    ("ChainedScheduler-cosine", lambda m, o: m.ChainedScheduler(
        [m.CosineAnnealingLR(o, T_max=8, eta_min=0.01), m.ExponentialLR(o, gamma=0.9)])),
]


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]


def _run(sched, opt, steps):
    """Step `steps` times; record (last_lr, group lrs, momenta) after each."""
    out = []
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups],
                    _momenta(opt)))
    return out


def _assert_same_curve(ember_curve, torch_curve):
    for k, (e, t) in enumerate(zip(ember_curve, torch_curve)):
        for ev, tv in zip(e, t):
            np.testing.assert_allclose(ev, tv, rtol=1e-12, atol=0,
                                       err_msg=f"step {k + 1}")


@pytest.mark.parametrize("name,factory", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_curve_matches_torch(name, factory, opt_name):
    eopt, topt = _optimizers(opt_name)
    esched, tsched = factory(sched_mod, eopt), factory(torch.optim.lr_scheduler, topt)
    assert esched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
    assert _momenta(eopt) == pytest.approx(_momenta(topt), rel=1e-12)
    _assert_same_curve(_run(esched, eopt, STEPS), _run(tsched, topt, STEPS))
    assert getattr(esched, "last_epoch", None) == getattr(tsched, "last_epoch", None)


def test_base_lrs_and_initial_lr():
    eopt, _ = _optimizers()
    sched = sched_mod.StepLR(eopt, step_size=3)
    assert sched.base_lrs == [0.1, 0.04]
    assert [g["initial_lr"] for g in eopt.param_groups] == [0.1, 0.04]
    assert sched.last_epoch == 0
    assert sched.get_last_lr() == [0.1, 0.04]


def test_cosine_curve_is_the_closed_form():
    eopt, _ = _optimizers()
    sched = sched_mod.CosineAnnealingLR(eopt, T_max=10, eta_min=0.01)
    for epoch in range(1, 31):
        eopt.step()
        sched.step()
        want = 0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * epoch / 10)) / 2
        assert sched.get_last_lr()[0] == pytest.approx(want, rel=1e-12, abs=1e-15)


# -- ReduceLROnPlateau ------------------------------------------------------------------

def _metrics():
    rng = np.random.default_rng(11)
    # improving, then a noisy plateau, then a little improvement, then worse again
    base = np.concatenate([np.linspace(1.0, 0.5, 8), np.full(14, 0.5), np.linspace(0.5, 0.45, 6),
                           np.full(12, 0.46)])
    return list(base + 1e-5 * rng.standard_normal(base.size))


PLATEAU = [
    {},
    {"patience": 2},
    {"patience": 0, "factor": 0.5},
    {"patience": 1, "cooldown": 3, "factor": 0.5},
    {"patience": 2, "threshold": 0.01, "threshold_mode": "abs"},
    {"patience": 2, "threshold": 0.05},
    {"patience": 1, "factor": 0.2, "min_lr": [0.01, 0.005]},
    {"patience": 1, "factor": 0.5, "min_lr": 0.02, "eps": 1e-3},
    {"mode": "max", "patience": 2},
    {"mode": "max", "patience": 1, "threshold_mode": "abs", "threshold": 0.001},
]


@pytest.mark.parametrize("kwargs", PLATEAU, ids=lambda kw: "-".join(f"{k}={v}"
                                                                      for k, v in kw.items()))
def test_reduce_on_plateau_matches_torch(kwargs):
    eopt, topt = _optimizers()
    esched = sched_mod.ReduceLROnPlateau(eopt, **kwargs)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
    sign = -1.0 if kwargs.get("mode") == "max" else 1.0
    lrs = set()
    for k, metric in enumerate(_metrics()):
        eopt.step()
        topt.step()
        # the metric may come as a one-element tensor
        esched.step(ember.tensor(sign * metric) if k % 2 else sign * metric)
        tsched.step(sign * metric)
        assert esched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
        assert [g["lr"] for g in eopt.param_groups] == \
            pytest.approx([g["lr"] for g in topt.param_groups], rel=1e-12)
        assert (esched.num_bad_epochs, esched.cooldown_counter, esched.last_epoch) == \
            (tsched.num_bad_epochs, tsched.cooldown_counter, tsched.last_epoch)
        assert esched.best == pytest.approx(tsched.best, rel=1e-12)
        lrs.add(esched.get_last_lr()[0])
    assert len(lrs) > 1 or kwargs == {}  # the sequence does trigger reductions


def test_reduce_on_plateau_errors():
    eopt, _ = _optimizers()
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        sched_mod.ReduceLROnPlateau(eopt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        sched_mod.ReduceLROnPlateau(eopt, mode="avg")
    with pytest.raises(ValueError, match="threshold mode pct is unknown!"):
        sched_mod.ReduceLROnPlateau(eopt, threshold_mode="pct")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        sched_mod.ReduceLROnPlateau(eopt, min_lr=[0.1])


def test_reduce_on_plateau_state_dict_round_trip():
    metrics = _metrics()
    eopt, _ = _optimizers()
    full = sched_mod.ReduceLROnPlateau(eopt, patience=1, cooldown=2, factor=0.5)
    want = []
    for m in metrics:
        full.step(m)
        want.append(full.get_last_lr())

    opt1, _ = _optimizers()
    s1 = sched_mod.ReduceLROnPlateau(opt1, patience=1, cooldown=2, factor=0.5)
    for m in metrics[:15]:
        s1.step(m)
    saved, osaved = copy.deepcopy(s1.state_dict()), copy.deepcopy(opt1.state_dict())
    assert "optimizer" not in saved

    opt2, _ = _optimizers()
    s2 = sched_mod.ReduceLROnPlateau(opt2, mode="max")  # options come from the state
    s2.load_state_dict(saved)
    opt2.load_state_dict(osaved)
    got = [*want[:15]]
    for m in metrics[15:]:
        s2.step(m)
        got.append(s2.get_last_lr())
    assert got == want
    assert s2.mode == "min"


# -- state_dict round trips -------------------------------------------------------------

@pytest.mark.parametrize("name,factory", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_state_dict_round_trip(name, factory):
    eopt, _ = _optimizers()
    sched = factory(sched_mod, eopt)
    want = _run(sched, eopt, STEPS)

    opt1, _ = _optimizers()
    s1 = factory(sched_mod, opt1)
    first = _run(s1, opt1, 12)
    saved = copy.deepcopy(s1.state_dict())
    osaved = copy.deepcopy(opt1.state_dict())
    assert "optimizer" not in saved

    # PyTorch's recipe: build the scheduler first, then load both states
    opt2, _ = _optimizers()
    s2 = factory(sched_mod, opt2)
    s2.load_state_dict(saved)
    opt2.load_state_dict(osaved)
    assert getattr(s2, "last_epoch", None) == getattr(s1, "last_epoch", None)
    rest = _run(s2, opt2, STEPS - 12)
    assert first + rest == want


def test_lambda_state_dict_keeps_callable_objects_only():
    class Warmup:
        def __init__(self, n):
            self.n = n

        def __call__(self, epoch):
            return min(1.0, (epoch + 1) / self.n)

    eopt, _ = _optimizers()
    sched = sched_mod.LambdaLR(eopt, lr_lambda=[Warmup(4), lambda e: 1.0])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"n": 4}, None]
    sd["lr_lambdas"][0]["n"] = 10
    other = sched_mod.LambdaLR(_optimizers()[0], lr_lambda=[Warmup(4), lambda e: 1.0])
    other.load_state_dict(sd)
    assert other.lr_lambdas[0].n == 10
    assert "lr_lambdas" in sd  # loading does not consume the caller's dict


# -- warnings and errors ----------------------------------------------------------------

def test_warns_when_scheduler_steps_before_optimizer():
    eopt, _ = _optimizers()
    sched = sched_mod.StepLR(eopt, step_size=2)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before "
                                         "`optimizer.step\\(\\)`"):
        sched.step()


def test_no_warning_in_the_right_order():
    eopt, _ = _optimizers()
    sched = sched_mod.StepLR(eopt, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            eopt.step()
            sched.step()


def test_calling_get_lr_directly_warns():
    eopt, _ = _optimizers()
    sched = sched_mod.ExponentialLR(eopt, gamma=0.5)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_step_with_epoch_uses_closed_form_like_torch():
    eopt, topt = _optimizers()
    es = sched_mod.StepLR(eopt, step_size=3, gamma=0.5)
    ts = torch.optim.lr_scheduler.StepLR(topt, step_size=3, gamma=0.5)
    eopt.step()
    topt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        es.step(10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts.step(10)
    assert es.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
    assert es.get_last_lr() == pytest.approx([0.1 * 0.125, 0.04 * 0.125], rel=1e-12)


def test_resuming_needs_initial_lr():
    eopt, _ = _optimizers()
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in "
                                       "param_groups\\[0\\]"):
        sched_mod.StepLR(eopt, step_size=2, last_epoch=5)


def test_resuming_with_last_epoch_matches_torch():
    eopt, topt = _optimizers()
    for opt in (eopt, topt):
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]
    es = sched_mod.CosineAnnealingLR(eopt, T_max=10, last_epoch=4)
    ts = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=10, last_epoch=4)
    _assert_same_curve(_run(es, eopt, 10), _run(ts, topt, 10))


@pytest.mark.parametrize("factory,error,match", [
    (lambda o: sched_mod.StepLR(3, step_size=2), TypeError, "int is not an Optimizer"),
    (lambda o: sched_mod.LinearLR(o, start_factor=0.0), ValueError,
     "Starting multiplicative factor expected to be greater than 0"),
    (lambda o: sched_mod.LinearLR(o, end_factor=1.5), ValueError,
     "Ending multiplicative factor expected to be between 0 and 1."),
    (lambda o: sched_mod.ConstantLR(o, factor=2.0), ValueError,
     "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda o: sched_mod.LambdaLR(o, lr_lambda=[_lam]), ValueError,
     "Expected 2 lr_lambdas, but got 1"),
    (lambda o: sched_mod.MultiplicativeLR(o, lr_lambda=3), TypeError,
     "lr_lambda should be a function, but got int"),
    (lambda o: sched_mod.OneCycleLR(o, max_lr=1.0), ValueError,
     "You must define either total_steps OR \\(epochs AND steps_per_epoch\\)"),
    (lambda o: sched_mod.OneCycleLR(o, max_lr=1.0, total_steps=0), ValueError,
     "Expected positive integer total_steps, but got 0"),
    (lambda o: sched_mod.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1.5), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1.5"),
    (lambda o: sched_mod.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="exp"),
     ValueError, "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    (lambda o: sched_mod.OneCycleLR(o, max_lr=[1.0], total_steps=10), ValueError,
     "max_lr must have the same length as optimizer.param_groups"),
    (lambda o: sched_mod.SequentialLR(o, [sched_mod.ExponentialLR(o, 0.9)], milestones=[3]),
     ValueError, "Sequential Schedulers expects number of schedulers provided to be one more"),
    (lambda o: sched_mod.SequentialLR(o, [], milestones=[]), ValueError,
     "expects at least one scheduler"),
    (lambda o: sched_mod.SequentialLR(o, [sched_mod.ReduceLROnPlateau(o)], milestones=[]),
     ValueError, "does not support `ReduceLROnPlateau`"),
    (lambda o: sched_mod.ChainedScheduler([]), ValueError, "expects at least one scheduler"),
])
def test_invalid_arguments(factory, error, match):
    eopt, _ = _optimizers()
    with pytest.raises(error, match=match):
        factory(eopt)


def test_one_cycle_needs_momentum_and_limits_steps():
    a = ember.ones(1, requires_grad=True)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with "
                                         "`cycle_momentum` option enabled"):
        sched_mod.OneCycleLR(optim.Adagrad([a]), max_lr=1.0, total_steps=10)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    sched = sched_mod.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total "
                                         "steps is 3"):
        sched.step()


def test_sequential_requires_same_optimizer():
    o1, _ = _optimizers()
    o2, _ = _optimizers()
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same "
                                         "optimizer"):
        sched_mod.SequentialLR(o1, [sched_mod.ExponentialLR(o1, 0.9),
                                    sched_mod.ExponentialLR(o2, 0.9)], milestones=[3])


def test_scheduler_drives_optimizer_updates():
    """The lr a scheduler sets is the one the next optimizer step uses."""
    p = ember.tensor([1.0], dtype=ember.float64, requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = sched_mod.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        p.grad = ember.tensor([1.0], dtype=ember.float64)
        opt.step()
        sched.step()
    np.testing.assert_allclose(p.detach().numpy(), [1.0 - (1.0 + 0.5 + 0.25)], rtol=1e-15)


@pytest.mark.parametrize("kwargs", [
    {"swa_lr": 0.05}, {"swa_lr": [0.02, 0.01], "anneal_epochs": 3, "anneal_strategy": "linear"},
    {"swa_lr": 0.03, "anneal_epochs": 0}])
def test_swalr_matches_torch(kwargs):
    """SWALR after a CosineAnnealingLR phase, as the swa_utils docs' recipe."""
    eopt, topt = _optimizers()
    curves = []
    for lib, opt in ((ember, eopt), (torch, topt)):
        cosine = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6)
        curve = _run(cosine, opt, 5)
        swa = lib.optim.swa_utils.SWALR(opt, **kwargs)
        curve += [(list(swa.get_last_lr()), [], [])] + _run(swa, opt, 12)
        curves.append(curve)
    _assert_same_curve(*curves)


def test_swalr_errors_as_torch():
    eopt, _ = _optimizers()
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', "
                                         "instead got step"):
        ember.optim.swa_utils.SWALR(eopt, swa_lr=0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        ember.optim.swa_utils.SWALR(eopt, swa_lr=0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length as "
                                         "optimizer.param_groups"):
        ember.optim.swa_utils.SWALR(eopt, swa_lr=[0.1])


@pytest.mark.parametrize("lib", ["ember", "torch"])
def test_custom_scheduler_subclassing_the_old_name(lib):
    """Older repos write their warmup schedulers on `_LRScheduler` (PyTorch's old name of
    LRScheduler), overriding get_lr with self.last_epoch and self.base_lrs."""
    lib = ember if lib == "ember" else torch
    from importlib import import_module
    mod = import_module(f"{lib.__name__}.optim.lr_scheduler")

    class Warmup(mod._LRScheduler):
        def __init__(self, optimizer, warmup, last_epoch=-1):
            self.warmup = warmup
            super().__init__(optimizer, last_epoch)

        def get_lr(self):
            return [base_lr * min(1.0, (self.last_epoch + 1) / self.warmup)
                    for base_lr in self.base_lrs]

    opt = lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.4)
    sched = Warmup(opt, 4)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(5):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.4, 0.4])
    assert isinstance(sched, mod.LRScheduler) and "_LRScheduler" not in mod.__all__
    assert sorted(sched.state_dict()) == ["_get_lr_called_within_step", "_is_initial",
                                          "_last_lr", "_step_count", "base_lrs",
                                          "last_epoch", "warmup"]
