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
