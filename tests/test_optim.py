"""ember.optim: every optimizer's trajectory against PyTorch's (float64, 1e-10 relative),
LAMB against a NumPy transcription of the paper's Algorithm 2, state_dict round trips,
parameter groups, zero_grad, closures, hooks and argument validation."""

from __future__ import annotations

import copy
import pickle
import re
import warnings

import numpy as np
import pytest

import ember
from ember import optim

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,), (2, 2, 2)]
STEPS = 6
RTOL = 1e-10


def _values(rng: np.random.Generator) -> tuple[list, list]:
    init = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]
    return init, grads


@pytest.fixture(scope="module")
def data():
    return _values(np.random.default_rng(1234))


def _ember_params(init):
    return [ember.tensor(a, dtype=ember.float64, requires_grad=True) for a in init]


def _torch_params(init):
    return [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in init]


def _set_grads(params, grads, make):
    for p, g in zip(params, grads):
        p.grad = None if g is None else make(g)


def _np(t) -> np.ndarray:
    return t.detach().numpy()


def _assert_close(actual, expected, rtol=RTOL):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-13)


# -- trajectories against PyTorch -------------------------------------------------------

CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "weight_decay": 0.05}),
    ("SGD", {"lr": 0.1, "maximize": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1,
             "maximize": True}),
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("Adam", {"lr": 0.05, "maximize": True}),
    ("Adam", {"lr": 0.05, "betas": (0.5, 0.9), "eps": 1e-3, "amsgrad": True,
              "weight_decay": 0.1, "maximize": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.3, "amsgrad": True}),
    ("AdamW", {"lr": 0.05, "maximize": True, "betas": (0.8, 0.99)}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.2}),
    ("Adagrad", {"lr": 0.1, "weight_decay": 0.1, "initial_accumulator_value": 0.5}),
    ("Adagrad", {"lr": 0.1, "eps": 1e-2, "maximize": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "eps": 1e-4}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.7}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "maximize": True, "momentum": 0.3}),
]


def _case_id(case):
    name, kwargs = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kwargs.items())


@pytest.mark.parametrize("foreach", [None, False], ids=["foreach", "per-tensor"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_trajectory_matches_torch(case, foreach, data):
    name, kwargs = case
    init, grads = data
    ep, tp = _ember_params(init), _torch_params(init)
    eopt = getattr(optim, name)(ep, foreach=foreach, **kwargs)
    topt = getattr(torch.optim, name)(tp, **kwargs)
    for step_grads in grads:
        _set_grads(ep, step_grads, ember.tensor)
        _set_grads(tp, step_grads, torch.tensor)
        eopt.step()
        topt.step()
        for e, t in zip(ep, tp):
            _assert_close(_np(e), _np(t))
    # the state holds the same entries as PyTorch's, with the same values
    esd, tsd = eopt.state_dict(), topt.state_dict()
    assert esd["state"].keys() == tsd["state"].keys()
    for i in tsd["state"]:
        assert esd["state"][i].keys() == tsd["state"][i].keys()
        for key, tval in tsd["state"][i].items():
            if key == "step":
                assert esd["state"][i][key] == float(tval)
            else:
                _assert_close(_np(esd["state"][i][key]), _np(tval))


@pytest.mark.parametrize("foreach", [None, False], ids=["foreach", "per-tensor"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_zero_dim_parameters_match_torch(case, foreach):
    """A 0-d parameter (a GP's constant mean, a temperature): NumPy gives 0-d results as
    scalars, and the foreach path must still update it in place."""
    name, kwargs = case
    rng = np.random.default_rng(5)
    init = [rng.standard_normal(()), rng.standard_normal((3,))]
    ep, tp = _ember_params(init), _torch_params(init)
    eopt = getattr(optim, name)(ep, foreach=foreach, **kwargs)
    topt = getattr(torch.optim, name)(tp, **kwargs)
    for _ in range(3):
        step_grads = [rng.standard_normal(()), rng.standard_normal((3,))]
        _set_grads(ep, step_grads, ember.tensor)
        _set_grads(tp, step_grads, torch.tensor)
        eopt.step()
        topt.step()
    for e, t in zip(ep, tp):
        assert e.shape == t.shape
        _assert_close(_np(e), _np(t))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}), ("Adam", {"lr": 0.01}),
])
def test_large_parameters_match_torch(name, kwargs, dtype):
    # large tensors take the CPU's BLAS path for in-place adds (axpy): same trajectory
    rng = np.random.default_rng(7)
    shape = (300, 400)
    init = rng.standard_normal(shape)
    ep = [ember.tensor(init, dtype=getattr(ember, dtype), requires_grad=True)]
    tp = [torch.tensor(init, dtype=getattr(torch, dtype), requires_grad=True)]
    eopt, topt = getattr(optim, name)(ep, **kwargs), getattr(torch.optim, name)(tp, **kwargs)
    for _ in range(4):
        g = rng.standard_normal(shape)
        _set_grads(ep, [g], lambda a: ember.tensor(a, dtype=getattr(ember, dtype)))
        _set_grads(tp, [g], lambda a: torch.tensor(a, dtype=getattr(torch, dtype)))
        eopt.step()
        topt.step()
    if dtype == "float32":
        np.testing.assert_allclose(_np(ep[0]), _np(tp[0]), rtol=1e-5, atol=1e-6)
    else:
        _assert_close(_np(ep[0]), _np(tp[0]))


@pytest.mark.parametrize("foreach", [None, False], ids=["foreach", "per-tensor"])
@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}), ("RMSprop", {"lr": 0.01, "momentum": 0.5}),
])
def test_params_without_grad_are_skipped(name, kwargs, foreach, data):
    """Some tensors miss steps, so the tensors of a group are at different step counts."""
    init, grads = data
    ep, tp = _ember_params(init), _torch_params(init)
    eopt = getattr(optim, name)(ep, foreach=foreach, **kwargs)
    topt = getattr(torch.optim, name)(tp, **kwargs)
    for k, step_grads in enumerate(grads):
        # the middle parameter gets a gradient on odd steps only
        masked = [g if (i != 1 or k % 2) else None for i, g in enumerate(step_grads)]
        _set_grads(ep, masked, ember.tensor)
        _set_grads(tp, masked, torch.tensor)
        eopt.step()
        topt.step()
        for e, t in zip(ep, tp):
            _assert_close(_np(e), _np(t))
    assert eopt.state_dict()["state"].keys() == topt.state_dict()["state"].keys()


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}), ("Adam", {"lr": 0.05}),
    ("Adagrad", {"lr": 0.1}), ("RMSprop", {"lr": 0.01, "centered": True}),
])
def test_mixed_dtypes_in_one_group_match_torch(name, kwargs, data):
    """The foreach path splits a group into runs of one device and dtype."""
    init, grads = data
    dtypes = [(ember.float64, torch.float64), (ember.float32, torch.float32),
              (ember.float64, torch.float64)]
    ep = [ember.tensor(a, dtype=d[0], requires_grad=True) for a, d in zip(init, dtypes)]
    tp = [torch.tensor(a, dtype=d[1], requires_grad=True) for a, d in zip(init, dtypes)]
    eopt, topt = getattr(optim, name)(ep, **kwargs), getattr(torch.optim, name)(tp, **kwargs)
    for step_grads in grads:
        for p, q, g, d in zip(ep, tp, step_grads, dtypes):
            p.grad, q.grad = ember.tensor(g, dtype=d[0]), torch.tensor(g, dtype=d[1])
        eopt.step()
        topt.step()
    for e, t, d in zip(ep, tp, dtypes):
        assert e.dtype == d[0]
        _assert_close(_np(e), _np(t), rtol=RTOL if d[0] == ember.float64 else 1e-5)


def test_quadratic_loss_with_closure_matches_torch():
    """A least-squares loss computed with ember ops and with torch ops, minimized with
    a closure: the losses returned by step() and the iterates agree."""
    rng = np.random.default_rng(7)
    a, b, x0 = rng.standard_normal((6, 4)), rng.standard_normal(6), rng.standard_normal(4)
    ea, eb = ember.tensor(a), ember.tensor(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    ex = ember.tensor(x0, requires_grad=True)
    tx = torch.tensor(x0, requires_grad=True)
    eopt = optim.Adam([ex], lr=0.1, amsgrad=True)
    topt = torch.optim.Adam([tx], lr=0.1, amsgrad=True)

    def eclosure():
        eopt.zero_grad()
        loss = ((ea @ ex - eb) ** 2).sum()
        loss.backward()
        return loss

    def tclosure():
        topt.zero_grad()
        loss = ((ta @ tx - tb) ** 2).sum()
        loss.backward()
        return loss

    losses = []
    for _ in range(8):
        eloss, tloss = eopt.step(eclosure), topt.step(tclosure)
        assert isinstance(eloss, ember.Tensor)
        _assert_close(eloss.item(), tloss.item())
        _assert_close(_np(ex), _np(tx))
        losses.append(eloss.item())
    assert losses[-1] < losses[0]


def test_closure_runs_with_grad_enabled_and_update_without():
    p = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    opt = optim.SGD([p], lr=0.5)
    seen = []

    def closure():
        seen.append(ember.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert loss.item() == 5.0
    np.testing.assert_array_equal(_np(p), [0.0, 0.0])  # p - 0.5 * 2p
    assert p.grad_fn is None and p.is_leaf and p.requires_grad


def test_step_without_closure_returns_none():
    p = ember.ones(2, requires_grad=True)
    p.grad = ember.ones(2)
    assert optim.SGD([p], lr=0.1).step() is None


# -- parameter groups -------------------------------------------------------------------

def test_param_groups_with_their_own_options_match_torch(data):
    init, grads = data
    ep, tp = _ember_params(init), _torch_params(init)

    def groups(ps):
        return [{"params": [ps[0]], "lr": 0.2, "momentum": 0.5},
                {"params": [ps[1], ps[2]], "weight_decay": 0.1}]

    eopt = optim.SGD(groups(ep), lr=0.01, momentum=0.9, nesterov=False)
    topt = torch.optim.SGD(groups(tp), lr=0.01, momentum=0.9, nesterov=False)
    assert [g["lr"] for g in eopt.param_groups] == [0.2, 0.01]
    assert [g["momentum"] for g in eopt.param_groups] == [0.5, 0.9]
    assert [g["weight_decay"] for g in eopt.param_groups] == [0, 0.1]
    for group in eopt.param_groups:  # every default is filled in
        assert set(eopt.defaults) <= set(group)
    for step_grads in grads:
        _set_grads(ep, step_grads, ember.tensor)
        _set_grads(tp, step_grads, torch.tensor)
        eopt.step()
        topt.step()
    for e, t in zip(ep, tp):
        _assert_close(_np(e), _np(t))
    assert eopt.state_dict()["param_groups"][1]["params"] == [1, 2]


def test_changing_group_lr_between_steps(data):
    init, grads = data
    ep, tp = _ember_params(init), _torch_params(init)
    eopt, topt = optim.Adam(ep, lr=0.1), torch.optim.Adam(tp, lr=0.1)
    for k, step_grads in enumerate(grads):
        for opt in (eopt, topt):
            opt.param_groups[0]["lr"] = 0.1 / (k + 1)
        _set_grads(ep, step_grads, ember.tensor)
        _set_grads(tp, step_grads, torch.tensor)
        eopt.step()
        topt.step()
    for e, t in zip(ep, tp):
        _assert_close(_np(e), _np(t))


def test_add_param_group_later():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.5})
    assert opt.param_groups[1]["params"] == [b] or opt.param_groups[1]["params"][0] is b
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0.9
    b.grad = ember.ones(3)
    opt.step()
    np.testing.assert_allclose(_np(b), [0.5, 0.5, 0.5])


def test_adagrad_state_is_created_eagerly_and_for_late_groups():
    a = ember.ones(2, dtype=ember.float64, requires_grad=True)
    opt = optim.Adagrad([a], lr=0.1, initial_accumulator_value=0.25)
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 0
    np.testing.assert_array_equal(_np(sd["state"][0]["sum"]), [0.25, 0.25])
    b = ember.ones(3, dtype=ember.float64, requires_grad=True)
    opt.add_param_group({"params": [b]})
    b.grad = ember.ones(3, dtype=ember.float64)
    opt.step()
    # sum = 0.25 + 1; b = 1 - 0.1 * 1 / (sqrt(1.25) + 1e-10)
    np.testing.assert_allclose(_np(b), 1 - 0.1 / (np.sqrt(1.25) + 1e-10), rtol=1e-12)


def test_named_parameters():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    opt = optim.SGD([("w", a), ("b", b)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]
    with pytest.raises(ValueError, match="all optimizer param groups should be with/without"):
        opt.add_param_group({"params": [ember.ones(2, requires_grad=True)]})
    with pytest.raises(ValueError, match="Some param names are missing"):
        optim.SGD([("w", ember.ones(1, requires_grad=True)), ember.ones(1, requires_grad=True)])


def test_param_group_errors_like_torch():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        optim.SGD([{"params": [a]}, {"params": [b, a]}], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([a, a], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the "
                                        "params is int"):
        optim.SGD([a, 3], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {a, b}}], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([a * 2], lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.Adam([])
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an "
                                        "iterable of Tensors or dicts, but got "):
        optim.Adam(a)
    opt = optim.SGD([a], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([b])


def test_required_option():
    class Plain(optim.Optimizer):
        def __init__(self, params, lr=optim.required):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            return None

    a = ember.ones(1, requires_grad=True)
    with pytest.raises(ValueError, match="parameter group didn't specify a value of required "
                                         "optimization parameter lr"):
        Plain([a])
    assert Plain([{"params": [a], "lr": 0.3}]).param_groups[0]["lr"] == 0.3


def _torch_error(cls_name, kwargs):
    with pytest.raises(ValueError) as info:
        getattr(torch.optim, cls_name)([torch.ones(1, requires_grad=True)], **kwargs)
    return str(info.value)


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {"lr": -1}), ("SGD", {"lr": 0.1, "momentum": -0.5}),
    ("SGD", {"lr": 0.1, "weight_decay": -1e-3}), ("SGD", {"lr": 0.1, "nesterov": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True}),
    ("Adam", {"lr": -0.5}), ("Adam", {"eps": -1.0}), ("Adam", {"betas": (1.0, 0.999)}),
    ("Adam", {"betas": (0.9, -0.1)}), ("Adam", {"weight_decay": -1.0}),
    ("AdamW", {"lr": -1e-3}), ("AdamW", {"betas": (0.9, 1.5)}),
    ("Adam", {"betas": (0, 0.99)}), ("AdamW", {"betas": (0.5, 0)}),  # ints: not floats
    ("Adagrad", {"lr": -1.0}), ("Adagrad", {"lr_decay": -1.0}),
    ("Adagrad", {"weight_decay": -0.1}), ("Adagrad", {"initial_accumulator_value": -1.0}),
    ("Adagrad", {"eps": -1.0}),
    ("RMSprop", {"lr": -1.0}), ("RMSprop", {"eps": -1.0}), ("RMSprop", {"momentum": -1.0}),
    ("RMSprop", {"weight_decay": -1.0}), ("RMSprop", {"alpha": -1.0}),
])
def test_invalid_arguments_raise_torch_messages(name, kwargs):
    expected = _torch_error(name, kwargs)
    with pytest.raises(ValueError) as info:
        getattr(optim, name)([ember.ones(1, requires_grad=True)], **kwargs)
    assert str(info.value) == expected


def test_invalid_learning_rate_message():
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -1$"):
        optim.SGD([ember.ones(1, requires_grad=True)], lr=-1)


@pytest.mark.parametrize("kwargs,match", [
    ({"lr": -1.0}, "Invalid learning rate: -1.0"),
    ({"betas": (0.9, 1.0)}, "Invalid beta parameter at index 1: 1.0"),
    ({"min_weight_norm": -1.0}, "Invalid min_weight_norm value: -1.0"),
    ({"max_weight_norm": 0.0}, "Invalid max_weight_norm value: 0.0"),
    ({"min_weight_norm": 2.0, "max_weight_norm": 1.0}, "must not exceed"),
])
def test_lamb_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        optim.LAMB([ember.ones(1, requires_grad=True)], **kwargs)


def test_repr_lists_groups():
    opt = optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1, momentum=0.9)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n")
    assert "    lr: 0.1\n" in text and "    momentum: 0.9\n" in text
    assert "params" not in text and text.endswith(")")


# -- zero_grad --------------------------------------------------------------------------

def test_zero_grad_set_to_none():
    a = ember.ones(3, requires_grad=True)
    (a * 2).sum().backward()
    opt = optim.SGD([a], lr=0.1)
    opt.zero_grad()
    assert a.grad is None
    opt.zero_grad()  # no grad at all: nothing to do
    assert a.grad is None


def test_zero_grad_in_place_keeps_the_tensor():
    a = ember.ones(3, requires_grad=True)
    (a * 2).sum().backward()
    grad = a.grad
    opt = optim.SGD([a], lr=0.1)
    opt.zero_grad(set_to_none=False)
    assert a.grad is grad
    np.testing.assert_array_equal(_np(a.grad), [0.0, 0.0, 0.0])
    (a * 3).sum().backward()  # accumulates into the zeroed grad
    np.testing.assert_array_equal(_np(a.grad), [3.0, 3.0, 3.0])


def test_zero_grad_in_place_detaches_a_grad_with_history():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    (a ** 3).sum().backward(create_graph=True)
    assert a.grad.requires_grad
    optim.SGD([a], lr=0.1).zero_grad(set_to_none=False)
    assert a.grad.grad_fn is None and not a.grad.requires_grad
    np.testing.assert_array_equal(_np(a.grad), [0.0, 0.0])


def test_zero_grad_both_ways_lead_to_the_same_sgd_update():
    # plain SGD: a zero grad and no grad both leave the parameter where it is
    for set_to_none in (True, False):
        a = ember.ones(2, requires_grad=True)
        opt = optim.SGD([a], lr=0.1)
        (a * 1).sum().backward()
        opt.step()
        opt.zero_grad(set_to_none=set_to_none)
        opt.step()
        np.testing.assert_allclose(_np(a), [0.9, 0.9], rtol=1e-6)


# -- gradient accumulation --------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                         ("Adam", {"lr": 0.01})])
def test_gradient_accumulation_equals_one_big_batch(name, kwargs):
    rng = np.random.default_rng(3)
    w0, b0 = rng.standard_normal((3, 2)), rng.standard_normal(2)
    x, y = rng.standard_normal((16, 3)), rng.standard_normal((16, 2))

    def make():
        w = ember.tensor(w0, requires_grad=True)
        b = ember.tensor(b0, requires_grad=True)
        return w, b, getattr(optim, name)([w, b], **kwargs)

    def loss_of(w, b, xs, ys):
        return ((ember.tensor(xs) @ w + b - ember.tensor(ys)) ** 2).mean()

    w1, b1, opt1 = make()
    w2, b2, opt2 = make()
    for _ in range(3):
        opt1.zero_grad()
        for k in range(4):  # 4 micro-batches of 4, each loss scaled by 1/4
            (loss_of(w1, b1, x[4 * k:4 * k + 4], y[4 * k:4 * k + 4]) / 4).backward()
        opt1.step()
        opt2.zero_grad()
        loss_of(w2, b2, x, y).backward()
        opt2.step()
    np.testing.assert_allclose(_np(w1), _np(w2), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(b1), _np(b2), rtol=1e-12, atol=1e-14)
    assert not np.allclose(_np(w1), w0)


# -- state_dict -------------------------------------------------------------------------

ROUND_TRIP = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.05}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
    ("LAMB", {"lr": 0.01, "max_weight_norm": 5.0}),
]


@pytest.mark.parametrize("foreach", [None, False], ids=["foreach", "per-tensor"])
@pytest.mark.parametrize("name,kwargs", ROUND_TRIP)
def test_state_dict_round_trip_resumes_the_same_trajectory(name, kwargs, foreach, data):
    init, grads = data
    kwargs = {**kwargs, "foreach": foreach}

    def groups(ps):
        return [{"params": [ps[0]], "lr": kwargs["lr"] / 2}, {"params": ps[1:]}]

    full = _ember_params(init)
    opt = getattr(optim, name)(groups(full), **kwargs)
    for step_grads in grads:
        _set_grads(full, step_grads, ember.tensor)
        opt.step()

    first = _ember_params(init)
    opt1 = getattr(optim, name)(groups(first), **kwargs)
    for step_grads in grads[:3]:
        _set_grads(first, step_grads, ember.tensor)
        opt1.step()
    saved = copy.deepcopy(opt1.state_dict())
    assert sorted(saved["state"]) == [0, 1, 2]
    assert [g["params"] for g in saved["param_groups"]] == [[0], [1, 2]]

    resumed = [ember.tensor(_np(p).copy(), requires_grad=True) for p in first]
    opt2 = getattr(optim, name)(groups(resumed), lr=123.0,
                                **{k: v for k, v in kwargs.items() if k != "lr"})
    opt2.load_state_dict(saved)
    assert [g["lr"] for g in opt2.param_groups] == [kwargs["lr"] / 2, kwargs["lr"]]
    assert opt2.param_groups[0]["params"][0] is resumed[0]
    for step_grads in grads[3:]:
        _set_grads(resumed, step_grads, ember.tensor)
        opt2.step()
    for a, b in zip(full, resumed):
        np.testing.assert_array_equal(_np(a), _np(b))


def test_load_state_dict_copies_state_tensors():
    a = ember.ones(2, dtype=ember.float64, requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    a.grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    sd = opt.state_dict()
    b = ember.ones(2, dtype=ember.float32, requires_grad=True)
    opt2 = optim.SGD([b], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    buf = opt2.state[b]["momentum_buffer"]
    assert buf is not sd["state"][0]["momentum_buffer"]
    assert buf.dtype == ember.float32  # cast to the parameter's dtype
    sd["state"][0]["momentum_buffer"].fill_(100.0)
    np.testing.assert_array_equal(_np(buf), [1.0, 1.0])
    # the loaded groups are copies too
    sd["param_groups"][0]["lr"] = 5.0
    assert opt2.param_groups[0]["lr"] == 0.1


def test_load_state_dict_mismatches_raise_like_torch():
    a, b = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    sd = optim.Adam([a, b]).state_dict()
    with pytest.raises(ValueError, match="loaded state dict has a different number of "
                                         "parameter groups"):
        optim.Adam([{"params": [a]}, {"params": [b]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that "
                                         "doesn't match the size of optimizer's group"):
        optim.Adam([a]).load_state_dict(sd)


def test_load_torch_state_dict_continues_torch_trajectory(data):
    """A PyTorch Adam state dict (tensors converted, step kept as a tensor) loads into
    ember's Adam, and both continue identically."""
    init, grads = data
    tp = _torch_params(init)
    topt = torch.optim.Adam(tp, lr=0.05, amsgrad=True)
    for step_grads in grads[:3]:
        _set_grads(tp, step_grads, torch.tensor)
        topt.step()
    tsd = topt.state_dict()
    esd = {"state": {i: {k: ember.tensor(v.detach().numpy().copy()) for k, v in s.items()}
                     for i, s in tsd["state"].items()},
           "param_groups": copy.deepcopy(tsd["param_groups"])}
    ep = [ember.tensor(_np(p).copy(), requires_grad=True) for p in tp]
    eopt = optim.Adam(ep, lr=0.05, amsgrad=True)
    eopt.load_state_dict(esd)
    assert eopt.state[ep[0]]["step"] == 3
    for step_grads in grads[3:]:
        _set_grads(ep, step_grads, ember.tensor)
        _set_grads(tp, step_grads, torch.tensor)
        eopt.step()
        topt.step()
    for e, t in zip(ep, tp):
        _assert_close(_np(e), _np(t))


def test_deepcopy_of_optimizer_state():
    a = ember.ones(2, requires_grad=True)
    opt = optim.Adam([a], lr=0.1)
    a.grad = ember.ones(2)
    opt.step()
    clone = copy.deepcopy(opt.state_dict())
    a.grad = ember.ones(2)
    opt.step()
    assert clone["state"][0]["step"] == 1
    assert opt.state_dict()["state"][0]["step"] == 2


def test_pickled_optimizer_keeps_params_and_state_together():
    a = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    opt = optim.Adam([a], lr=0.1)
    a.grad = ember.tensor([0.5, 0.5], dtype=ember.float64)
    opt.step()
    clone = pickle.loads(pickle.dumps(opt))
    b = clone.param_groups[0]["params"][0]
    assert b is not a and clone.state[b]["step"] == 1
    for p in (a, b):
        p.grad = ember.tensor([0.25, -1.0], dtype=ember.float64)
    opt.step()
    clone.step()
    np.testing.assert_array_equal(_np(a), _np(b))


# -- step hooks -------------------------------------------------------------------------

def test_step_hooks_run_and_can_be_removed():
    a = ember.ones(2, requires_grad=True)
    a.grad = ember.ones(2)
    opt = optim.SGD([a], lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o)))
    post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o)))
    opt.step()
    assert calls == [("pre", opt), ("post", opt)]
    pre.remove()
    post.remove()
    opt.step()
    assert len(calls) == 2
    with optim.register_optimizer_step_post_hook(lambda o, a_, k: calls.append("global")):
        opt.step()
    opt.step()
    assert calls[2:] == ["global"]


@pytest.mark.parametrize("lib", ["ember", "torch"])
def test_wrapper_optimizer_without_init_steps_with_pytorchs_hook_attributes(lib):
    """timm's Lookahead skips Optimizer.__init__ and sets the two hook dicts PyTorch's step
    wrapper reads, by PyTorch's names: ember's wrapper reads the same names."""
    from collections import OrderedDict, defaultdict
    lib = ember if lib == "ember" else torch

    class Wrapper(lib.optim.Optimizer):
        def __init__(self, base):
            self.base = base
            self.param_groups = base.param_groups
            self.defaults = base.defaults
            self.state = defaultdict(dict)
            self._optimizer_step_pre_hooks = OrderedDict()
            self._optimizer_step_post_hooks = OrderedDict()

        def step(self, closure=None):
            return self.base.step(closure)

    a = lib.ones(2, requires_grad=True)
    opt = Wrapper(lib.optim.SGD([a], lr=0.5))
    calls = []
    opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.zero_grad()  # (where PyTorch wraps a class's step that skipped __init__)
    a.grad = lib.ones(2)
    opt.step()
    assert a.tolist() == [0.5, 0.5] and calls == ["pre"]
    assert list(opt._optimizer_step_pre_hooks) and not opt._optimizer_step_post_hooks
    del opt._optimizer_step_post_hooks
    with pytest.raises(AttributeError, match="_optimizer_step_post_hooks"):
        opt.step()


# -- LAMB against the paper --------------------------------------------------------------

def lamb_reference(init, grads, lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
                   min_norm=None, max_norm=None, maximize=False):
    """Algorithm 2 of You et al. (2020), "Large Batch Optimization for Deep Learning",
    in NumPy, one layer per tensor; phi(z) = clip(z, gamma_l, gamma_u)."""
    b1, b2 = betas
    xs = [x.copy() for x in init]
    ms = [np.zeros_like(x) for x in xs]
    vs = [np.zeros_like(x) for x in xs]
    trajectory = []
    for t, step_grads in enumerate(grads, start=1):
        for i, g in enumerate(step_grads):
            if g is None:
                continue
            g = -g if maximize else g
            ms[i] = b1 * ms[i] + (1 - b1) * g
            vs[i] = b2 * vs[i] + (1 - b2) * g * g
            m_hat = ms[i] / (1 - b1 ** t)
            v_hat = vs[i] / (1 - b2 ** t)
            r = m_hat / (np.sqrt(v_hat) + eps)
            u = r + weight_decay * xs[i]
            w_norm, u_norm = np.linalg.norm(xs[i]), np.linalg.norm(u)
            phi = w_norm
            if min_norm is not None or max_norm is not None:
                phi = np.clip(w_norm, min_norm, max_norm)
            ratio = phi / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            xs[i] = xs[i] - lr * ratio * u
        trajectory.append([x.copy() for x in xs])
    return trajectory


@pytest.mark.parametrize("kwargs", [
    {"lr": 0.01},
    {"lr": 0.05, "weight_decay": 0.0},
    {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-4, "weight_decay": 0.1},
    {"lr": 0.05, "max_weight_norm": 1.5},
    {"lr": 0.05, "min_weight_norm": 3.0, "max_weight_norm": 10.0},
    {"lr": 0.02, "maximize": True},
], ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
@pytest.mark.parametrize("foreach", [None, False], ids=["foreach", "per-tensor"])
def test_lamb_matches_paper_algorithm(kwargs, foreach, data):
    init, grads = data
    ep = _ember_params(init)
    opt = optim.LAMB(ep, foreach=foreach, **kwargs)
    ref_kwargs = dict(kwargs)
    ref_kwargs["min_norm"] = ref_kwargs.pop("min_weight_norm", None)
    ref_kwargs["max_norm"] = ref_kwargs.pop("max_weight_norm", None)
    expected = lamb_reference(init, grads, **ref_kwargs)
    for step_grads, want in zip(grads, expected):
        _set_grads(ep, step_grads, ember.tensor)
        opt.step()
        for p, w in zip(ep, want):
            _assert_close(_np(p), w)


@pytest.mark.parametrize("foreach", [None, False], ids=["foreach", "per-tensor"])
def test_lamb_trust_ratio_is_one_when_a_norm_is_zero(foreach):
    # a zero weight tensor (||w|| = 0) moves by the plain Adam-style step: lr * m/(sqrt v + eps)
    w = ember.zeros(4, dtype=ember.float64, requires_grad=True)
    # a zero update (zero grad, no decay) keeps its weights
    v = ember.tensor([3.0, 4.0], dtype=ember.float64, requires_grad=True)
    opt = optim.LAMB([w, v], lr=0.1, weight_decay=0.0, eps=1e-6, foreach=foreach)
    w.grad = ember.tensor([1.0, -2.0, 0.5, 0.0], dtype=ember.float64)
    v.grad = ember.zeros(2, dtype=ember.float64)
    opt.step()
    g = np.array([1.0, -2.0, 0.5, 0.0])
    np.testing.assert_allclose(_np(w), -0.1 * g / (np.abs(g) + 1e-6), rtol=1e-12)
    np.testing.assert_array_equal(_np(v), [3.0, 4.0])
    ref = lamb_reference([np.zeros(4), np.array([3.0, 4.0])], [[g, np.zeros(2)]], lr=0.1,
                         weight_decay=0.0)
    np.testing.assert_allclose(_np(w), ref[0][0], rtol=1e-12)


def test_lamb_layerwise_step_length_is_lr_times_weight_norm():
    # the defining property: each tensor moves by exactly lr * phi(||w||) per step
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((4, 5))
    p = ember.tensor(x0, requires_grad=True)
    opt = optim.LAMB([p], lr=0.01, weight_decay=0.05)
    p.grad = ember.tensor(rng.standard_normal((4, 5)) * 1e3)  # the grad's scale is irrelevant
    opt.step()
    np.testing.assert_allclose(np.linalg.norm(_np(p) - x0), 0.01 * np.linalg.norm(x0),
                               rtol=1e-12)


# -- other devices --------------------------------------------------------------------------

def _countdev_available() -> bool:
    try:
        ember.ones(1, device="countdev")
    except Exception:
        return False
    return True


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "amsgrad": True}), ("AdamW", {"lr": 0.05}),
    ("Adagrad", {"lr": 0.1}), ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
    ("LAMB", {"lr": 0.01}),
])
@pytest.mark.parametrize("foreach", [None, False], ids=["foreach", "per-tensor"])
def test_updates_run_on_a_third_party_backend(name, kwargs, foreach, data):
    """The same update on the example plugin's device, with no CPU fallback allowed."""
    if not _countdev_available():
        pytest.skip("the countdev example plugin is not installed")
    init, grads = data
    cpu = _ember_params(init)
    dev = [ember.tensor(a, dtype=ember.float64, device="countdev", requires_grad=True)
           for a in init]
    copt = getattr(optim, name)(cpu, **kwargs)
    dopt = getattr(optim, name)(dev, foreach=foreach, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a FallbackWarning would fail the test
        for step_grads in grads[:3]:
            _set_grads(cpu, step_grads, ember.tensor)
            _set_grads(dev, step_grads, lambda g: ember.tensor(g, device="countdev"))
            copt.step()
            dopt.step()
    for c, d in zip(cpu, dev):
        assert d.device.type == "countdev"
        _assert_close(d.detach().cpu().numpy(), _np(c))
    for key, value in dopt.state[dev[0]].items():
        # (the step count stays on the CPU, as PyTorch's outside capturable/fused groups)
        if isinstance(value, ember.Tensor) and key != "step":
            assert value.device.type == "countdev"


@pytest.mark.parametrize("kwargs", [
    {"lr": 0.1, "momentum": 0.9}, {"lr": 0.1, "momentum": 0.9, "nesterov": True,
                                   "weight_decay": 0.1},
    {"lr": 0.1, "momentum": 0.5, "dampening": 0.3, "maximize": True}, {"lr": 0.1},
], ids=["momentum", "nesterov+wd", "dampening+maximize", "plain"])
def test_sgd_without_a_fused_kernel_matches_torch(kwargs, data, monkeypatch):
    # a backend without `_fused_sgd_` runs the step as `_foreach_*` ops: same trajectory
    backend = ember.zeros(1)._backend
    monkeypatch.delitem(backend.kernels, "_fused_sgd_")
    init, grads = data
    ep, tp = _ember_params(init), _torch_params(init)
    eopt, topt = optim.SGD(ep, **kwargs), torch.optim.SGD(tp, **kwargs)
    for step_grads in grads:
        _set_grads(ep, step_grads, ember.tensor)
        _set_grads(tp, step_grads, torch.tensor)
        eopt.step()
        topt.step()
    for e, t in zip(ep, tp):
        _assert_close(_np(e), _np(t))


def test_list_op_errors_name_the_op():
    a, b = [ember.ones(3)], [ember.ones(3), ember.ones(3)]
    # (PyTorch's words; the op in a note)
    with pytest.raises(RuntimeError, match=r"^Tensor lists must have the same number of "
                                           r"tensors, got 1 and 2") as info:
        ember._foreach_add_(a, b)
    assert info.value.__notes__ == ["_foreach_add_"]
    with pytest.raises(RuntimeError, match=r"^Tensor lists must have the same number of "
                                           r"tensors, got 1 and 2") as info:
        ember._fused_sgd_(a, b, [None], lr=0.1)
    assert info.value.__notes__ == ["_fused_sgd_"]
    p = [ember.ones(3, requires_grad=True)]
    with pytest.raises(RuntimeError, match=r"^_fused_sgd_: list ops do not record autograd; "
                                           r"run them under ember.no_grad\(\)"):
        ember._fused_sgd_(p, [ember.ones(3)], [None], lr=0.1)


@pytest.mark.parametrize("name,late", [
    ("SGD", {"nesterov": False, "maximize": False, "foreach": None}),
    ("Adam", {"amsgrad": False, "maximize": False, "foreach": None,
              "decoupled_weight_decay": False}),
    ("AdamW", {"amsgrad": False, "maximize": False, "foreach": None}),
    ("Adagrad", {"foreach": None, "maximize": False}),
    ("RMSprop", {"momentum": 0, "centered": False, "foreach": None, "maximize": False}),
    ("LAMB", {"min_weight_norm": None, "max_weight_norm": None, "maximize": False,
              "foreach": None}),
])
def test_unpickled_old_state_gets_new_option_defaults(name, late):
    # a group pickled before an option existed gets its default (as PyTorch's __setstate__)
    opt = getattr(optim, name)([ember.ones(2, requires_grad=True)], lr=0.1)
    state = opt.__getstate__()
    for group in state["param_groups"]:
        for key in late:
            del group[key]
    fresh = object.__new__(type(opt))
    fresh.__setstate__(state)
    for key, value in late.items():
        assert fresh.param_groups[0][key] == value
    if name == "AdamW":
        assert fresh.param_groups[0]["decoupled_weight_decay"] is True


@pytest.mark.parametrize("name, kwargs", [
    ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9, "fused": True}),
    ("Adam", {}), ("Adam", {"fused": True}), ("AdamW", {"fused": False}),
    ("AdamW", {"fused": True, "capturable": False})])
def test_implementation_flags_as_torch(name, kwargs):
    """fused/differentiable/capturable: accepted, shown in repr and param_groups as PyTorch
    shows them, and fused gives the same update as the default implementation."""
    torch = pytest.importorskip("torch")
    data = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    e_p = ember.tensor(data, requires_grad=True)
    t_p = torch.tensor(data, requires_grad=True)
    e_opt = getattr(ember.optim, name)([e_p], **kwargs)
    t_opt = getattr(torch.optim, name)([t_p], **kwargs)
    assert repr(e_opt) == repr(t_opt)
    for _ in range(3):
        for p, opt in ((e_p, e_opt), (t_p, t_opt)):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
    # (ember's steps round as PyTorch's default loop, bit for bit; PyTorch's fused CPU SGD
    # kernel multiplies and adds unfused, ~1e-6 away after three steps)
    np.testing.assert_allclose(e_p.detach().numpy(), t_p.detach().numpy(), rtol=2e-6)


@pytest.mark.parametrize("kwargs", [{"fused": True, "foreach": True},
                                    {"fused": True, "differentiable": True}])
def test_implementation_flag_conflicts_raise_as_torch(kwargs):
    torch = pytest.importorskip("torch")
    for name in ("SGD", "Adam", "AdamW"):
        with pytest.raises(RuntimeError) as theirs:
            getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], lr=0.1, **kwargs)
        with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
            getattr(ember.optim, name)([ember.zeros(1, requires_grad=True)], lr=0.1, **kwargs)


# -- differentiable, capturable, fused: PyTorch's implementation switches ---------------

DIFFERENTIABLE = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.1, "foreach": True}),  # (PyTorch's SGD takes both)
    ("Adam", {"lr": 0.1, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.1, "maximize": True}),
    ("AdamW", {"lr": 0.1}),
    ("RMSprop", {"lr": 0.1, "momentum": 0.5, "centered": True, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}),
    ("Adadelta", {"lr": 0.5, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.1, "t0": 0}),
    ("Rprop", {"lr": 0.1}),
    ("Adamax", {"lr": 0.1, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.1, "decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.1, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.1, "decoupled_weight_decay": True, "weight_decay": 0.1}),
]


def _meta_step(lib, name, kwargs, w, s, c):
    """One differentiable step of a clone of `w` whose gradient `s * c` depends on `s`
    ("learning to learn"), then the gradient of the updated weights' sum: through the
    update, to both."""
    w0 = lib.tensor(w, requires_grad=True)
    s0 = lib.tensor(s, requires_grad=True)
    p = w0.clone()
    opt = getattr(lib.optim, name)([p], differentiable=True, **kwargs)
    p.grad = s0 * lib.tensor(c)
    opt.step()
    assert p.grad_fn is not None
    (p * lib.tensor(c)).sum().backward()
    flags = {k: v.requires_grad for k, v in opt.state[p].items()}
    return [t.detach().numpy() for t in (p, w0.grad, s0.grad)], flags


@pytest.mark.parametrize("name, kwargs", DIFFERENTIABLE)
def test_differentiable_update_carries_torchs_meta_gradient(name, kwargs):
    rng = np.random.default_rng(7)
    w, s, c = (rng.standard_normal(5) for _ in range(3))
    ours, our_flags = _meta_step(ember, name, kwargs, w, s, c)
    theirs, their_flags = _meta_step(torch, name, kwargs, w, s, c)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    assert our_flags == their_flags  # (which state entries carry history)


def test_differentiable_refusals_as_torch():
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
            lib.optim.SGD([lib.ones(2, requires_grad=True).clone()], lr=0.1)
        leaf = lib.ones(2, requires_grad=True)
        leaf.grad = lib.ones(2)
        with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being "
                                               "used in an in-place operation."):
            lib.optim.SGD([leaf], lr=0.1, differentiable=True).step()
        for name in ("Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "ASGD", "Rprop",
                     "Adamax", "NAdam"):
            p = lib.ones(2, requires_grad=True).clone()
            p.grad = lib.ones(2)
            opt = getattr(lib.optim, name)([p], differentiable=True, foreach=True)
            with pytest.raises(AssertionError, match="^_foreach ops don't support autograd$"):
                opt.step()


CAPTURABLE = ["Adam", "AdamW", "RMSprop", "Adamax", "NAdam", "RAdam", "ASGD", "Adadelta",
              "Rprop"]


@pytest.mark.parametrize("name", CAPTURABLE)
def test_capturable_on_the_cpu_refused_as_torch(name):
    errors = []
    for lib in (torch, ember):
        p = lib.ones(2, requires_grad=True)
        p.grad = lib.ones(2)
        opt = getattr(lib.optim, name)([p], capturable=True)
        with pytest.raises(AssertionError) as info:
            opt.step()
        errors.append(str(info.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("name, kwargs", [
    ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1}), ("AdamW", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "maximize": True, "foreach": False}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
    ("Adadelta", {"lr": 0.5, "weight_decay": 0.1}), ("Rprop", {"lr": 0.01}),
])
def test_capturable_step_stays_on_the_device_unread(name, kwargs, data, monkeypatch):
    """On a device (the example plugin's), a capturable group keeps `step` there and the
    update never reads it back into Python. The values are PyTorch's capturable update's,
    which its differentiable one computes on the CPU (the bias corrections from the
    float32 step tensor), and the default update's up to that float32 rounding."""
    if not _countdev_available():
        pytest.skip("the countdev example plugin is not installed")
    init, grads = data
    cpu = _ember_params(init)
    dev = [ember.tensor(a, dtype=ember.float64, device="countdev", requires_grad=True)
           for a in init]
    tps = [torch.tensor(a, dtype=torch.float64) for a in init]
    copt = getattr(optim, name)(cpu, **kwargs)
    dopt = getattr(optim, name)(dev, capturable=True, **kwargs)
    topt = getattr(torch.optim, name)(tps, differentiable=True,
                                      **{k: v for k, v in kwargs.items() if k != "foreach"})
    for step_grads in grads[:3]:
        _set_grads(cpu, step_grads, ember.tensor)
        _set_grads(dev, step_grads, lambda g: ember.tensor(g, device="countdev"))
        _set_grads(tps, step_grads, torch.tensor)
        copt.step()
        topt.step()
        with monkeypatch.context() as patch:
            for reader in ("item", "tolist", "numpy", "__float__"):
                patch.setattr(ember.Tensor, reader, _refused_read)
            dopt.step()
    for c, d, t in zip(cpu, dev, tps):
        _assert_close(d.detach().cpu().numpy(), t.numpy(), rtol=1e-12)
        np.testing.assert_allclose(d.detach().cpu().numpy(), _np(c), rtol=1e-5, atol=1e-6)
    step = dopt.state[dev[0]]["step"]
    assert step.device.type == "countdev" and step.dtype == ember.float32
    assert step.cpu().item() == 3


def _refused_read(*args, **kwargs):
    raise AssertionError("a capturable step read a tensor into Python")


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
@pytest.mark.parametrize("dtype", ["int64", "complex64"])
def test_fused_refuses_what_torch_refuses(name, dtype):
    errors = []
    for lib in (torch, ember):
        p = lib.ones(2, dtype=getattr(lib, dtype))
        p.grad = lib.ones(2, dtype=getattr(lib, dtype))
        with pytest.raises(RuntimeError) as info:
            getattr(lib.optim, name)([p], lr=0.1, fused=True).step()
        errors.append(str(info.value).replace("torch.", "ember."))
    assert errors[0] == errors[1]
    assert errors[0].startswith("`fused=True` requires all the params to be floating point")


def test_fused_adagrad_refuses_sparse_gradients_as_torch():
    errors = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        table = lib.nn.Embedding(4, 3, sparse=True)
        opt = lib.optim.Adagrad(table.parameters(), fused=True)
        table(lib.tensor([1, 2])).sum().backward()
        with pytest.raises(RuntimeError) as info:
            opt.step()
        errors.append(str(info.value))
    assert errors[0] == errors[1] == "`fused` does not support sparse grad or complex param"


def test_out_of_place_list_sub_and_lerp_match_torch():
    rng = np.random.default_rng(4)
    xs, ys = ([rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(2))
    for name, args in (("_foreach_sub", ()), ("_foreach_lerp", (0.3,))):
        e = getattr(ember, name)([ember.tensor(x) for x in xs], [ember.tensor(y) for y in ys],
                                 *args)
        t = getattr(torch, name)([torch.tensor(x) for x in xs], [torch.tensor(y) for y in ys],
                                 *args)
        assert len(e) == len(t) == len(SHAPES) and type(e) is type(t) is tuple
        for a, b in zip(e, t):  # (PyTorch's CPU lerp is a fused multiply-add: an ulp)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-7, atol=1e-7)


# -- swa_utils: AveragedModel, update_bn, SWALR ----------------------------------------

def _bn_net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(6), lib.nn.ReLU(),
                             lib.nn.Linear(6, 2))


@pytest.mark.parametrize("how", ["swa", "ema_multi", "ema_avg", "swa_multi", "use_buffers"])
def test_averaged_model_matches_torch(how):
    """Three snapshots of a model folded into the average, then update_bn: every
    parameter and buffer as PyTorch's (float32, the same arithmetic)."""
    rng = np.random.default_rng(5)
    snapshots = [[rng.standard_normal(tuple(p.shape)).astype(np.float32)
                  for p in _bn_net(torch).parameters()] for _ in range(3)]
    batches = [rng.standard_normal((8, 4)).astype(np.float32) * 2 + 1 for _ in range(3)]
    results = []
    for lib in (torch, ember):
        swa = lib.optim.swa_utils
        kwargs = {"swa": {}, "ema_multi": {"multi_avg_fn": swa.get_ema_multi_avg_fn(0.9)},
                  "ema_avg": {"avg_fn": swa.get_ema_avg_fn(0.8)},
                  "swa_multi": {"multi_avg_fn": swa.get_swa_multi_avg_fn()},
                  "use_buffers": {"use_buffers": True}}[how]
        model = _bn_net(lib)
        averaged = swa.AveragedModel(model, **kwargs)
        for snapshot, batch in zip(snapshots, batches):
            with lib.no_grad():
                for p, v in zip(model.parameters(), snapshot):
                    p.copy_(lib.tensor(v))
            model(lib.tensor(batch))  # training mode: moves the BatchNorm statistics
            averaged.update_parameters(model)
        before = {k: v.clone() for k, v in averaged.state_dict().items()}
        loader = lib.utils.data.DataLoader(
            lib.utils.data.TensorDataset(lib.tensor(np.concatenate(batches))), batch_size=8)
        averaged.eval()
        swa.update_bn(loader, averaged)
        assert not averaged.training and averaged.module[1].momentum == 0.1
        results.append(({k: v.numpy() for k, v in before.items()},
                         {k: v.numpy() for k, v in averaged.state_dict().items()},
                         repr(averaged)))
    (t_before, t_after, t_repr), (e_before, e_after, e_repr) = results
    assert e_repr == t_repr and list(e_after) == list(t_after)
    assert int(e_after["n_averaged"]) == 3
    for e, t in ((e_before, t_before), (e_after, t_after)):
        for key in t:
            np.testing.assert_allclose(e[key], t[key], rtol=1e-6, atol=1e-7, err_msg=key)


def test_averaged_model_and_update_bn_edge_cases():
    model = ember.nn.Linear(3, 2)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        ember.optim.swa_utils.AveragedModel(model, avg_fn=lambda a, b, n: a,
                                            multi_avg_fn=lambda a, b, n: None)
    averaged = ember.optim.swa_utils.AveragedModel(model)
    assert averaged.n_averaged.dtype == ember.int64 and averaged.module is not model
    x = ember.ones(1, 3)
    assert averaged(x).tolist() == model(x).tolist()
    ember.optim.swa_utils.update_bn([x], model)  # no BatchNorm: nothing to do, no pass


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam",
                                  "Adamax", "Adadelta", "Rprop", "ASGD"])
def test_state_dict_step_is_a_tensor_as_torch(name):
    """A saved step count is PyTorch's 0-d float tensor: `f"{step}"` prints 3.0, and a
    checkpoint written by either loads into the other."""
    steps = []
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(2))
        opt = getattr(lib.optim, name)([p], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        step = opt.state_dict()["state"][0]["step"]
        steps.append((repr(step).replace("ember", "torch"), f"{step}", str(step.dtype)[6:]))
        fresh = getattr(lib.optim, name)([lib.nn.Parameter(lib.ones(2))], lr=0.1)
        fresh.load_state_dict(opt.state_dict())
        assert float(fresh.state_dict()["state"][0]["step"]) == 3.0
    assert steps[1] == steps[0] == ("tensor(3.)", "3.0", "float32")


def test_out_of_place_list_ops_return_tuples_as_torch():
    xs = [ember.ones(2), ember.ones(3)]
    for name, args in (("_foreach_add", (xs,)), ("_foreach_mul", (2.0,)), ("_foreach_div", (xs,)),
                       ("_foreach_sqrt", ()), ("_foreach_neg", ()), ("_foreach_norm", ())):
        e = getattr(ember, name)(xs, *args)
        t = getattr(torch, name)([torch.ones(2), torch.ones(3)],
                                 *([[torch.ones(2), torch.ones(3)]] if args and
                                   isinstance(args[0], list) else args))
        assert type(e) is type(t) is tuple, name
        assert [x.tolist() for x in e] == [x.tolist() for x in t], name


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam",
                                  "RMSprop", "Rprop", "Adagrad", "Adadelta", "ASGD"])
def test_param_group_keys_in_pytorchs_order(name):
    """`print(optimizer.param_groups)` and `print(optimizer.state_dict())` list a group's
    options in the order PyTorch's constructor writes them."""
    e_opt = getattr(optim, name)([ember.ones(2, requires_grad=True)], lr=0.01)
    t_opt = getattr(torch.optim, name)([torch.ones(2, requires_grad=True)], lr=0.01)
    assert list(e_opt.param_groups[0]) == list(t_opt.param_groups[0])
    assert list(e_opt.defaults) == list(t_opt.defaults)
    assert list(e_opt.state_dict()["param_groups"][0]) == \
        list(t_opt.state_dict()["param_groups"][0])


# -- the state as PyTorch holds it ------------------------------------------------------

def _state_form(lib, name, kwargs):
    """Each state entry's (type, dtype, device, shape), printed the way torch prints,
    after two steps over a float32 parameter."""
    if name == "SparseAdam":
        emb = lib.nn.Embedding(4, 3, sparse=True)
        opt = lib.optim.SparseAdam(emb.parameters())
        for _ in range(2):
            opt.zero_grad()
            emb(lib.tensor([1, 2])).sum().backward()
            opt.step()
    else:
        w = lib.nn.Parameter(lib.linspace(-1, 1, 6).reshape(2, 3))
        opt = getattr(lib.optim, name)([w], **kwargs)
        for _ in range(2):
            opt.zero_grad()
            (w ** 2).sum().backward()
            opt.step()
    assert type(opt.state).__name__ == "defaultdict" and opt.state.default_factory is dict
    state = next(iter(opt.state.values()))
    return [(k, type(v).__name__, str(getattr(v, "dtype", "")).split(".")[-1],
             str(getattr(v, "device", "")), tuple(getattr(v, "shape", ())),
             repr(v).replace("ember", "torch") if getattr(v, "ndim", 1) == 0 else "")
            for k, v in state.items()]


@pytest.mark.parametrize("name,kwargs", [
    ("Adam", {"amsgrad": True}), ("AdamW", {}), ("Adamax", {}), ("NAdam", {}),
    ("RAdam", {}), ("Adagrad", {}), ("Adadelta", {}), ("RMSprop", {"momentum": 0.9}),
    ("ASGD", {}), ("Rprop", {}), ("SparseAdam", {}), ("SGD", {"momentum": 0.9})])
def test_state_entries_are_torchs(name, kwargs):
    """`optimizer.state[p]` holds torch's entries: `step` a 0-d float32 tensor (an int in
    SparseAdam), NAdam's `mu_product` and ASGD's `eta`/`mu` 0-d tensors, same order."""
    assert _state_form(ember, name, kwargs) == _state_form(torch, name, kwargs)


def test_scalar_state_is_float64_under_a_float64_default_dtype():
    for lib in (torch, ember):
        old = lib.get_default_dtype()
        try:
            lib.set_default_dtype(lib.float64)
            p = lib.nn.Parameter(lib.ones(2))
            opt = lib.optim.NAdam([p])
            p.grad = lib.ones(2)
            opt.step()
            assert opt.state[p]["step"].dtype == lib.float64
            assert opt.state[p]["mu_product"].dtype == lib.float64
            fused = lib.optim.Adam([p], fused=True)  # (a fused group's step: float32)
            fused.step()
            assert fused.state[p]["step"].dtype == lib.float32
        finally:
            lib.set_default_dtype(old)


def test_printed_state_dict_and_optimizer_are_torchs():
    outs = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        model = lib.nn.Linear(2, 1)
        opt = lib.optim.AdamW(model.parameters(), lr=0.01)
        model(lib.ones(1, 2)).sum().backward()
        opt.step()
        sd = opt.state_dict()
        outs.append((str(sd["state"][1]), str(sd["param_groups"]), str(opt),
                     f"{sd['state'][0]['step']}"))
    assert outs[1] == outs[0]


def test_old_checkpoint_numbers_become_tensors_and_training_continues():
    """A checkpoint whose `step` (and NAdam's `mu_product`) are numbers (saved before
    torch 1.12, or by an older ember) loads as tensors, as torch's __setstate__ does."""
    results = []
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.tensor([1.0, -2.0]))
        opt = lib.optim.NAdam([p], lr=0.1)
        p.grad = lib.tensor([0.5, 0.25])
        opt.step()
        sd = opt.state_dict()
        sd["state"][0]["step"] = 1
        sd["state"][0]["mu_product"] = float(sd["state"][0]["mu_product"])
        fresh = lib.optim.NAdam([p], lr=0.1)
        fresh.load_state_dict(sd)
        st = fresh.state[p]
        p.grad = lib.tensor([0.5, 0.25])
        fresh.step()
        results.append((repr(st["step"]).replace("ember", "torch"),
                        str(st["mu_product"].dtype)[-7:], p.tolist()))
    assert results[1] == results[0]


def test_load_state_dict_casts_as_torch():
    """State tensors are moved to the parameter's dtype (a tensor already right is kept);
    `step` is kept as saved, and becomes float32 in a capturable group."""
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
        opt = lib.optim.Adam([p])
        sd = {"state": {0: {"step": lib.tensor(3.0, dtype=lib.float64),
                            "exp_avg": lib.zeros(2), "exp_avg_sq": lib.zeros(2,
                                                                            dtype=lib.float64)}},
              "param_groups": opt.state_dict()["param_groups"]}
        opt.load_state_dict(sd)
        st = opt.state[p]
        assert st["step"].dtype == lib.float64 and st["exp_avg"].dtype == lib.float64
        assert st["exp_avg_sq"] is sd["state"][0]["exp_avg_sq"]
        sd["param_groups"][0]["capturable"] = True
        opt.load_state_dict(sd)
        assert opt.state[p]["step"].dtype == lib.float32


def _hook_log(lib) -> list:
    log = []
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([p], lr=0.1)
    opt.register_state_dict_pre_hook(lambda o: log.append("pre"))
    opt.register_state_dict_pre_hook(lambda o: log.append("pre-first"), prepend=True)

    def post(o, sd):
        log.append("post")
        sd["extra"] = 1

    opt.register_state_dict_post_hook(post)
    sd = opt.state_dict()
    log.append(sorted(sd))

    def load_pre(o, sd):
        log.append(("load_pre", sorted(sd)))
        sd = dict(sd)
        sd["param_groups"] = [dict(sd["param_groups"][0], lr=0.5)]
        return sd

    handle = opt.register_load_state_dict_pre_hook(load_pre)
    opt.register_load_state_dict_post_hook(lambda o: log.append(o.param_groups[0]["lr"]))
    opt.load_state_dict(sd)
    handle.remove()
    opt.load_state_dict(sd)
    return log


def test_state_dict_and_load_state_dict_hooks_as_torch():
    log = _hook_log(torch)
    assert _hook_log(ember) == log == [
        "pre-first", "pre", "post", ["extra", "param_groups", "state"],
        ("load_pre", ["extra", "param_groups", "state"]), 0.5, 0.1]


def test_mismatched_groups_error_as_torch():
    for lib in (torch, ember):
        a, b = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
        sd = lib.optim.SGD([a, b], lr=0.1).state_dict()
        with pytest.raises(ValueError, match="that doesn't match the size of optimizer's group"):
            lib.optim.SGD([a], lr=0.1).load_state_dict(sd)
        with pytest.raises(ValueError, match="different number of parameter groups"):
            lib.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
