"""ember.optim's Adadelta, LBFGS, Adamax, NAdam, RAdam, ASGD and Rprop against
torch.optim (float64 trajectories, state_dict keys, argument validation)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import optim

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,), (2, 2, 2)]
STEPS = 10
RTOL = 1e-10


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4321)
    init = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    return init, grads


def _np(t) -> np.ndarray:
    return t.detach().numpy()


def _assert_close(actual, expected, rtol=RTOL):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-13)


CASES = [
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4}),
    ("Adadelta", {"weight_decay": 0.1}),
    ("Adadelta", {"weight_decay": 0.1, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3}),
    ("Adamax", {"lr": 0.05, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.05, "momentum_decay": 0.1, "betas": (0.8, 0.95)}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.05, "betas": (0.9, 0.99)}),  # rectified from step 6 on
    ("RAdam", {"lr": 0.05, "betas": (0.8, 0.6), "weight_decay": 0.1, "maximize": True}),
    ("RAdam", {"lr": 0.05, "betas": (0.9, 0.95), "weight_decay": 0.1,
               "decoupled_weight_decay": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.1, "alpha": 0.5, "t0": 3}),  # averaging from step 4
    ("ASGD", {"lr": 0.05, "t0": 2, "weight_decay": 0.1, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.1)}),
    ("Rprop", {"lr": 0.05, "maximize": True}),
]


def _case_id(case):
    name, kwargs = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kwargs.items())


@pytest.mark.parametrize("foreach", [None, False], ids=["foreach", "per-tensor"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_trajectory_matches_torch(case, foreach, data):
    name, kwargs = case
    init, grads = data
    ep = [ember.tensor(a, dtype=ember.float64, requires_grad=True) for a in init]
    tp = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in init]
    # a second group with its own lr checks per-group options
    eopt = getattr(optim, name)([{"params": ep[:2]}, {"params": ep[2:], "lr": 0.03}],
                                foreach=foreach, **kwargs)
    topt = getattr(torch.optim, name)([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.03}],
                                      **kwargs)
    for step_grads in grads:
        for e, t, g in zip(ep, tp, step_grads):
            e.grad, t.grad = ember.tensor(g), torch.tensor(g)
        eopt.step()
        topt.step()
        for e, t in zip(ep, tp):
            _assert_close(_np(e), _np(t))
    esd, tsd = eopt.state_dict(), topt.state_dict()
    assert esd["state"].keys() == tsd["state"].keys()
    for i in tsd["state"]:
        assert esd["state"][i].keys() == tsd["state"][i].keys()
        for key, tval in tsd["state"][i].items():
            if key == "step":
                assert float(esd["state"][i][key]) == float(tval)
            elif isinstance(tval, torch.Tensor) and tval.dim() == 0:  # NAdam's mu_product
                assert float(esd["state"][i][key]) == float(tval)
            elif isinstance(tval, torch.Tensor):
                _assert_close(_np(esd["state"][i][key]), _np(tval))
            else:
                assert esd["state"][i][key] == tval
    # the groups hold the same options (ember leaves out capturable/differentiable/fused)
    for eg, tg in zip(esd["param_groups"], tsd["param_groups"]):
        for key, value in eg.items():
            if key != "foreach":  # set differently on the two sides by the test
                assert tg[key] == value, key


BAD_ARGS = [
    ("Adadelta", {"lr": -1.0}),
    ("Adadelta", {"rho": 1.5}),
    ("Adadelta", {"rho": -0.1}),
    ("Adadelta", {"eps": -1.0}),
    ("Adadelta", {"weight_decay": -1.0}),
    ("Adamax", {"lr": -1.0}),
    ("Adamax", {"betas": (1.0, 0.9)}),
    ("Adamax", {"betas": (0.9, -0.1)}),
    ("Adamax", {"eps": -1.0}),
    ("NAdam", {"momentum_decay": -1.0}),
    ("NAdam", {"weight_decay": -1.0}),
    ("RAdam", {"betas": (0.9, 1.0)}),
    ("RAdam", {"lr": -0.1}),
    ("ASGD", {"lr": -0.1}),
    ("ASGD", {"weight_decay": -0.1}),
    ("Rprop", {"lr": -0.1}),
    ("Rprop", {"etas": (1.1, 1.2)}),
    ("Rprop", {"etas": (0.5, 0.9)}),
]


@pytest.mark.parametrize("case", BAD_ARGS, ids=[_case_id(c) for c in BAD_ARGS])
def test_invalid_hyperparameters_raise_like_torch(case):
    name, kwargs = case
    with pytest.raises(ValueError) as texc:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as eexc:
        getattr(optim, name)([ember.zeros(2, requires_grad=True)], **kwargs)
    assert str(eexc.value) == str(texc.value)


def test_defaults_match_torch():
    import inspect
    for name in [c[0] for c in CASES]:
        esig = inspect.signature(getattr(optim, name).__init__).parameters
        tsig = inspect.signature(getattr(torch.optim, name).__init__).parameters
        for pname, par in esig.items():
            assert pname in tsig, (name, pname)
            assert par.kind == tsig[pname].kind, (name, pname)
            if par.default is not inspect.Parameter.empty:
                assert par.default == tsig[pname].default, (name, pname)
        # positional argument order is the same
        epos = [p for p, v in esig.items() if v.kind == v.POSITIONAL_OR_KEYWORD]
        tpos = [p for p, v in tsig.items() if v.kind == v.POSITIONAL_OR_KEYWORD]
        assert epos == tpos[:len(epos)], name


# -- LBFGS: a closure over a real model, both line-search options ------------------------

def _lbfgs_problem(lib, dtype):
    """A small least-squares + tanh regression problem written with `lib`'s ops."""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((20, 5)), rng.standard_normal(20)
    w0, c0 = rng.standard_normal(5) * 0.1, np.array([0.3])
    tensor = lib.tensor
    A, B = tensor(a, dtype=dtype), tensor(b, dtype=dtype)
    w = tensor(w0, dtype=dtype, requires_grad=True)
    c = tensor(c0, dtype=dtype, requires_grad=True)

    def loss_fn():
        pred = (A @ w).tanh() * 2 + c
        return ((pred - B) ** 2).mean() + 0.01 * (w * w).sum()
    return [w, c], loss_fn


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kwargs", [
    {},
    {"line_search_fn": "strong_wolfe"},
    {"lr": 0.5, "max_iter": 4, "history_size": 3},
    {"lr": 0.8, "max_iter": 7, "history_size": 2, "line_search_fn": "strong_wolfe"},
], ids=["default", "strong_wolfe", "small-history", "small-history-strong_wolfe"])
def test_lbfgs_trajectory_matches_torch(kwargs, dtype):
    ep, eloss = _lbfgs_problem(ember, getattr(ember, dtype))
    tp, tloss = _lbfgs_problem(torch, getattr(torch, dtype))
    eopt, topt = optim.LBFGS(ep, **kwargs), torch.optim.LBFGS(tp, **kwargs)

    def closure(opt, loss_fn):
        def run():
            opt.zero_grad()
            loss = loss_fn()
            loss.backward()
            return loss
        return run

    # float32: the two libraries' float32 forward passes round differently and L-BFGS's
    # curvature pairs amplify that, so only float64 can check the algorithm tightly
    rtol, atol = (1e-9, 1e-12) if dtype == "float64" else (1e-3, 1e-4)
    for _ in range(5):
        el = eopt.step(closure(eopt, eloss))
        tl = topt.step(closure(topt, tloss))
        np.testing.assert_allclose(float(el), float(tl), rtol=rtol)
        for e, t in zip(ep, tp):
            assert str(e.dtype).split(".")[-1] == dtype
            np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)
    es, ts = eopt.state_dict()["state"][0], topt.state_dict()["state"][0]
    assert es.keys() == ts.keys()
    if dtype == "float32":  # the stopping tests may end an iteration earlier or later
        return
    assert es["func_evals"] == ts["func_evals"] and es["n_iter"] == ts["n_iter"]
    assert len(es["old_dirs"]) == len(ts["old_dirs"])
    np.testing.assert_allclose(_np(es["d"]), _np(ts["d"]), rtol=rtol * 10, atol=atol)


def test_lbfgs_rejects_groups_and_unknown_line_search_like_torch():
    msg = "LBFGS doesn't support per-parameter options (parameter groups)"
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        optim.LBFGS([{"params": [ember.zeros(1, requires_grad=True)]},
                     {"params": [ember.zeros(1, requires_grad=True)]}])
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.LBFGS([ember.zeros(1, requires_grad=True)], lr=-1)
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.LBFGS([w], line_search_fn="armijo")

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
    assert optim.LBFGS([w], max_iter=8).defaults["max_eval"] == 10


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_state_dict_round_trip_resumes_the_same_trajectory(name, data):
    init, grads = data
    kwargs = {"lr": 0.05, "t0": 2} if name == "ASGD" else {}
    a = [ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in init]
    b = [ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in init]
    opt_a = getattr(optim, name)(a, **kwargs)
    opt_b = getattr(optim, name)(b, **kwargs)
    for k, step_grads in enumerate(grads):
        for pa, pb, g in zip(a, b, step_grads):
            pa.grad, pb.grad = ember.tensor(g), ember.tensor(g)
        opt_a.step()
        opt_b.step()
        if k == 3:  # resume b from a copy of its state in a new optimizer
            sd = opt_b.state_dict()
            opt_b = getattr(optim, name)(b, **kwargs)
            opt_b.load_state_dict(sd)
    for pa, pb in zip(a, b):
        if name == "NAdam":
            # as in PyTorch: its float32 `mu_product` is loaded as the parameters' float64
            # (every state tensor but `step` takes their dtype), so the resumed run
            # differs in the last bits (PyTorch's by 9.5e-13 on these values)
            np.testing.assert_allclose(_np(pa), _np(pb), rtol=1e-10, atol=1e-11)
        else:
            np.testing.assert_array_equal(_np(pa), _np(pb))
