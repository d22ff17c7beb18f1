"""Recurrent layers of `ember.nn` (RNN, LSTM, GRU and their cells) against PyTorch.

Each module is built in both libraries, torch's weights go into ember's through
`load_state_dict` (so the state_dict keys must match torch's exactly), and the outputs, the
final states, and the gradients of the input, the initial states and every parameter are
compared in float64 -- for every combination of direction, depth, batch layout and initial
state. Double backward (which ember computes by recomputing the layer op by op) is compared
too, as are errors, reprs and the initialisation.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.core.ops import nn as _nnops
from ember.nn.utils import rnn as ember_rnn

T_LEN, BATCH, IN, HID = 4, 3, 3, 5


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def to_ember(t, requires_grad: bool = False) -> ember.Tensor:
    return ember.tensor(t.detach().numpy(), requires_grad=requires_grad)


def make_pair(torch, name: str, *args, dtype: str = "float64", **kwargs):
    """The same module in torch and ember, with torch's weights loaded into ember's."""
    tm = getattr(torch.nn, name)(*args, **kwargs)
    em = getattr(nn, name)(*args, **kwargs)
    if dtype == "float64":
        tm.double()
        em.double()
    state = tm.state_dict()
    assert list(em.state_dict()) == list(state)
    for key, value in em.state_dict().items():
        assert tuple(value.shape) == tuple(state[key].shape), key
    result = em.load_state_dict({k: to_ember(v) for k, v in state.items()})
    assert not result.missing_keys and not result.unexpected_keys
    return tm, em


def flat(out) -> list:
    """(output, h_n) / (output, (h_n, c_n)) / h / (h, c) as a flat list of tensors."""
    if not isinstance(out, tuple):
        return [out]
    items = []
    for o in out:
        items.extend(flat(o))
    return items


def assert_close(e, t, rtol=1e-9, atol=1e-10, what=""):
    assert e is not None and t is not None, what
    assert tuple(e.shape) == tuple(t.shape), (what, tuple(e.shape), tuple(t.shape))
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol,
                               err_msg=what)


def run_and_compare(torch, tm, em, x, hx=None, use=None, rtol=1e-9, atol=1e-10):
    """Forward both modules, backward a fixed random weighting of the outputs (`use`:
    which of the flat outputs enter the loss), compare outputs and all gradients."""
    rng = np.random.default_rng(1)
    xt = x.clone().requires_grad_()
    xe = to_ember(x, True)
    args_t, args_e = [xt], [xe]
    states_t, states_e = [], []
    if hx is not None:
        if isinstance(hx, tuple):
            states_t = [h.clone().requires_grad_() for h in hx]
            states_e = [to_ember(h, True) for h in hx]
            args_t.append(tuple(states_t))
            args_e.append(tuple(states_e))
        else:
            states_t, states_e = [hx.clone().requires_grad_()], [to_ember(hx, True)]
            args_t.append(states_t[0])
            args_e.append(states_e[0])
    out_t, out_e = flat(tm(*args_t)), flat(em(*args_e))
    assert len(out_t) == len(out_e)
    for i, (e, t) in enumerate(zip(out_e, out_t)):
        assert_close(e, t, rtol, atol, f"output {i}")
    use = range(len(out_t)) if use is None else use
    loss_t, loss_e = 0, 0
    for i in use:
        w = rng.standard_normal(tuple(out_t[i].shape))
        loss_t = loss_t + (out_t[i] * torch.from_numpy(w).to(out_t[i].dtype)).sum()
        loss_e = loss_e + (out_e[i] * ember.tensor(w, dtype=out_e[i].dtype)).sum()
    loss_t.backward()
    loss_e.backward()
    assert_close(xe.grad, xt.grad, rtol, atol, "input grad")
    for i, (e, t) in enumerate(zip(states_e, states_t)):
        assert_close(e.grad, t.grad, rtol, atol, f"initial state {i} grad")
    params_e = dict(em.named_parameters())
    for name, p in tm.named_parameters():
        assert_close(params_e[name].grad, p.grad, rtol, atol, f"grad of {name}")
    return out_e


RECURRENT = [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"})]


@pytest.mark.parametrize("bidirectional,num_layers,batch_first,with_hx",
                         list(itertools.product([False, True], [1, 2], [False, True],
                                                [False, True])))
@pytest.mark.parametrize("name,extra", RECURRENT, ids=["LSTM", "GRU", "RNN_tanh", "RNN_relu"])
def test_matches_torch(torch, name, extra, bidirectional, num_layers, batch_first, with_hx):
    torch.manual_seed(0)
    tm, em = make_pair(torch, name, IN, HID, num_layers=num_layers,
                       bidirectional=bidirectional, batch_first=batch_first, **extra)
    assert repr(em) == repr(tm)
    shape = (BATCH, T_LEN, IN) if batch_first else (T_LEN, BATCH, IN)
    x = torch.randn(shape, dtype=torch.float64)
    hx = None
    if with_hx:
        n = num_layers * (2 if bidirectional else 1)
        hx = torch.randn(n, BATCH, HID, dtype=torch.float64)
        if name == "LSTM":
            hx = (hx, torch.randn(n, BATCH, HID, dtype=torch.float64))
    out = run_and_compare(torch, tm, em, x, hx)
    d = 2 if bidirectional else 1
    assert tuple(out[0].shape) == (shape[0], shape[1], d * HID)
    assert tuple(out[1].shape) == (num_layers * d, BATCH, HID)


@pytest.mark.parametrize("with_hx", [False, True])
@pytest.mark.parametrize("name,extra", RECURRENT, ids=["LSTM", "GRU", "RNN_tanh", "RNN_relu"])
def test_unbatched_input(torch, name, extra, with_hx):
    torch.manual_seed(1)
    tm, em = make_pair(torch, name, IN, HID, num_layers=2, bidirectional=True, **extra)
    x = torch.randn(T_LEN, IN, dtype=torch.float64)
    hx = None
    if with_hx:
        hx = torch.randn(4, HID, dtype=torch.float64)
        if name == "LSTM":
            hx = (hx, torch.randn(4, HID, dtype=torch.float64))
    out = run_and_compare(torch, tm, em, x, hx)
    assert tuple(out[0].shape) == (T_LEN, 2 * HID)
    assert tuple(out[1].shape) == (4, HID)


@pytest.mark.parametrize("enforce_sorted,with_hx", [(True, False), (False, True),
                                                    (False, False)])
@pytest.mark.parametrize("name,extra", RECURRENT + [("LSTM", {"proj_size": 2})],
                         ids=["LSTM", "GRU", "RNN_tanh", "RNN_relu", "LSTM_proj"])
def test_packed_sequence(torch, name, extra, enforce_sorted, with_hx):
    """PackedSequence input: each sequence stops at its own length (its h_n is its last
    step's state), outputs are packed, and the batch order of hx / h_n is the caller's."""
    torch_rnn = torch.nn.utils.rnn
    torch.manual_seed(12)
    tm, em = make_pair(torch, name, IN, HID, num_layers=2, bidirectional=True, **extra)
    lengths = [5, 5, 3, 1] if enforce_sorted else [2, 5, 1, 4]
    x = torch.randn(5, 4, IN, dtype=torch.float64)
    xt, xe = x.clone().requires_grad_(), to_ember(x, True)
    packed_t = torch_rnn.pack_padded_sequence(xt, lengths, enforce_sorted=enforce_sorted)
    packed_e = ember_rnn.pack_padded_sequence(xe, lengths, enforce_sorted=enforce_sorted)
    args_t, args_e, states_t, states_e = [packed_t], [packed_e], [], []
    if with_hx:
        out_size = extra.get("proj_size", HID)
        states_t = [torch.randn(4, 4, out_size, dtype=torch.float64).requires_grad_()]
        if name == "LSTM":
            states_t.append(torch.randn(4, 4, HID, dtype=torch.float64).requires_grad_())
        states_e = [to_ember(s, True) for s in states_t]
        args_t.append(tuple(states_t) if name == "LSTM" else states_t[0])
        args_e.append(tuple(states_e) if name == "LSTM" else states_e[0])
    (out_t, hid_t), (out_e, hid_e) = tm(*args_t), em(*args_e)
    assert isinstance(out_e, ember_rnn.PackedSequence)
    assert_close(out_e.data, out_t.data, what="packed output")
    assert out_e.batch_sizes.tolist() == out_t.batch_sizes.tolist()
    padded_t, lens_t = torch_rnn.pad_packed_sequence(out_t)
    padded_e, lens_e = ember_rnn.pad_packed_sequence(out_e)
    assert_close(padded_e, padded_t, what="padded output")
    assert lens_e.tolist() == lens_t.tolist() == lengths
    finals_t, finals_e = flat(hid_t), flat(hid_e)
    for i, (e, t) in enumerate(zip(finals_e, finals_t)):
        assert_close(e, t, what=f"final state {i}")
    rng = np.random.default_rng(0)
    loss_t, loss_e = 0, 0
    for t_, e_ in [(padded_t, padded_e)] + list(zip(finals_t, finals_e)):
        w = rng.standard_normal(tuple(t_.shape))
        loss_t = loss_t + (t_ * torch.from_numpy(w)).sum()
        loss_e = loss_e + (e_ * ember.tensor(w)).sum()
    loss_t.backward()
    loss_e.backward()
    assert_close(xe.grad, xt.grad, what="input grad")
    for i, (e, t) in enumerate(zip(states_e, states_t)):
        assert_close(e.grad, t.grad, what=f"initial state {i} grad")
    params_e = dict(em.named_parameters())
    for pname, p in tm.named_parameters():
        assert_close(params_e[pname].grad, p.grad, what=f"grad of {pname}")


def test_packed_sequence_double_backward(torch):
    torch_rnn = torch.nn.utils.rnn
    torch.manual_seed(13)
    tm, em = make_pair(torch, "GRU", IN, HID, bidirectional=True)
    x = torch.randn(4, 3, IN, dtype=torch.float64)
    xt, xe = x.clone().requires_grad_(), to_ember(x, True)
    out_t = tm(torch_rnn.pack_padded_sequence(xt, [4, 2, 1]))[0].data
    out_e = em(ember_rnn.pack_padded_sequence(xe, [4, 2, 1]))[0].data
    (gt,) = torch.autograd.grad(out_t.sin().sum(), xt, create_graph=True)
    (ge,) = ember.autograd.grad(out_e.sin().sum(), xe, create_graph=True)
    assert_close(ge, gt, what="first derivative")
    gt.pow(2).sum().backward()
    ge.pow(2).sum().backward()
    assert_close(xe.grad, xt.grad, what="second derivative")


@pytest.mark.parametrize("batch_first", [False, True])
def test_lstm_proj_size(torch, batch_first):
    torch.manual_seed(2)
    tm, em = make_pair(torch, "LSTM", IN, HID, num_layers=2, bidirectional=True, proj_size=2,
                       batch_first=batch_first)
    assert repr(em) == repr(tm)
    assert tuple(em.weight_hr_l1_reverse.shape) == (2, HID)
    shape = (BATCH, T_LEN, IN) if batch_first else (T_LEN, BATCH, IN)
    hx = (torch.randn(4, BATCH, 2, dtype=torch.float64),
          torch.randn(4, BATCH, HID, dtype=torch.float64))
    out = run_and_compare(torch, tm, em, torch.randn(shape, dtype=torch.float64), hx)
    assert tuple(out[1].shape) == (4, BATCH, 2)
    assert tuple(out[2].shape) == (4, BATCH, HID)
    # without initial state too
    run_and_compare(torch, tm, em, torch.randn(shape, dtype=torch.float64))


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_without_bias(torch, name):
    torch.manual_seed(3)
    tm, em = make_pair(torch, name, IN, HID, num_layers=2, bias=False, bidirectional=True)
    assert repr(em) == repr(tm)
    assert not any("bias" in k for k in em.state_dict())
    run_and_compare(torch, tm, em, torch.randn(T_LEN, BATCH, IN, dtype=torch.float64))


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_float32(torch, name):
    torch.manual_seed(4)
    tm, em = make_pair(torch, name, 6, 16, num_layers=2, bidirectional=True, dtype="float32")
    x = torch.randn(7, 4, 6)
    out = run_and_compare(torch, tm, em, x, rtol=1e-4, atol=1e-5)
    assert out[0].dtype == ember.float32


@pytest.mark.parametrize("use", [[0], [1], [2], [1, 2]],
                         ids=["output_only", "h_n_only", "c_n_only", "states_only"])
def test_gradient_through_some_outputs(torch, use):
    """Backward from only some outputs (the others get no gradient)."""
    torch.manual_seed(5)
    tm, em = make_pair(torch, "LSTM", IN, HID, num_layers=2, bidirectional=True)
    run_and_compare(torch, tm, em, torch.randn(T_LEN, BATCH, IN, dtype=torch.float64),
                    use=use)


@pytest.mark.parametrize("name", ["GRU", "RNN"])
def test_gradient_through_h_n_only(torch, name):
    torch.manual_seed(6)
    tm, em = make_pair(torch, name, IN, HID, bidirectional=True)
    run_and_compare(torch, tm, em, torch.randn(T_LEN, BATCH, IN, dtype=torch.float64),
                    use=[1])


def test_frozen_weights_and_constant_input(torch):
    """Gradients only for what requires them: input only, then weights only."""
    torch.manual_seed(7)
    tm, em = make_pair(torch, "LSTM", IN, HID, num_layers=2)
    x = torch.randn(T_LEN, BATCH, IN, dtype=torch.float64)
    for m in (tm, em):
        m.requires_grad_(False)
    xt, xe = x.clone().requires_grad_(), to_ember(x, True)
    tm(xt)[0].pow(2).sum().backward()
    em(xe)[0].pow(2).sum().backward()
    assert_close(xe.grad, xt.grad, what="input grad with frozen weights")
    assert all(p.grad is None for p in em.parameters())
    for m in (tm, em):
        m.requires_grad_(True)
    tm(x)[0].pow(2).sum().backward()
    out = em(to_ember(x))[0]
    assert out.requires_grad
    out.pow(2).sum().backward()
    params_e = dict(em.named_parameters())
    for name, p in tm.named_parameters():
        assert_close(params_e[name].grad, p.grad, what=name)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_no_grad_forward_is_the_same(torch, name):
    em = getattr(nn, name)(IN, HID, num_layers=2, bidirectional=True)
    x = ember.randn(T_LEN, BATCH, IN)
    with_graph = flat(em(x))
    with ember.no_grad():
        without = flat(em(x))
    for a, b in zip(with_graph, without):
        assert a.requires_grad and not b.requires_grad
        np.testing.assert_array_equal(a.detach().numpy(), b.numpy())


@pytest.mark.parametrize("name,extra", RECURRENT, ids=["LSTM", "GRU", "RNN_tanh", "RNN_relu"])
def test_double_backward(torch, name, extra):
    """create_graph=True through the layer: the gradient of a gradient norm."""
    torch.manual_seed(8)
    tm, em = make_pair(torch, name, IN, HID, bidirectional=True, **extra)
    x = torch.randn(T_LEN, BATCH, IN, dtype=torch.float64)
    xt, xe = x.clone().requires_grad_(), to_ember(x, True)
    out_t, out_e = tm(xt)[0], em(xe)[0]
    (gt,) = torch.autograd.grad(out_t.tanh().sum(), xt, create_graph=True)
    (ge,) = ember.autograd.grad(out_e.tanh().sum(), xe, create_graph=True)
    assert_close(ge, gt, what="first derivative")
    assert ge.requires_grad
    gt.pow(2).sum().backward()
    ge.pow(2).sum().backward()
    assert_close(xe.grad, xt.grad, what="second derivative, input")
    params_e = dict(em.named_parameters())
    for pname, p in tm.named_parameters():
        assert_close(params_e[pname].grad, p.grad, what=f"second derivative, {pname}")


def test_dropout_between_layers(torch):
    """Dropout acts between layers only in training: p=1 zeroes the second layer's input
    (deterministic, so comparable with torch); eval mode ignores it."""
    torch.manual_seed(9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tm, em = make_pair(torch, "LSTM", IN, HID, num_layers=2, dropout=1.0)
    assert repr(em) == repr(tm) == "LSTM(3, 5, num_layers=2, dropout=1.0)"
    x = torch.randn(T_LEN, BATCH, IN, dtype=torch.float64)
    run_and_compare(torch, tm, em, x)
    tm.eval()
    em.eval()
    run_and_compare(torch, tm, em, x)
    em.train()
    em.dropout = 0.5
    xe = to_ember(x)
    ember.manual_seed(0)
    a = em(xe)[0]
    ember.manual_seed(0)
    b = em(xe)[0]
    em.eval()
    c = em(xe)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


def test_dropout_with_one_layer_warns():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(2, 3, dropout=0.2)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_init_is_uniform_in_bound(name):
    ember.manual_seed(0)
    m = getattr(nn, name)(20, 64, num_layers=2, bidirectional=True)
    bound = 1 / math.sqrt(64)
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    # U(-b, b): mean 0, std b/sqrt(3)
    assert abs(values.mean()) < 0.02 * bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.02 * bound


def test_parameter_layout_matches_torch(torch):
    tm = torch.nn.LSTM(IN, HID, num_layers=2, bidirectional=True, proj_size=2)
    em = nn.LSTM(IN, HID, num_layers=2, bidirectional=True, proj_size=2)
    assert em._flat_weights_names == tm._flat_weights_names
    assert [[tuple(p.shape) for p in layer] for layer in em.all_weights] == \
        [[tuple(p.shape) for p in layer] for layer in tm.all_weights]
    assert [id(w) for w in em._flat_weights] == \
        [id(getattr(em, n)) for n in em._flat_weights_names]
    em.flatten_parameters()  # a no-op kept for compatibility


@pytest.mark.parametrize("kwargs", [
    {}, {"num_layers": 3}, {"bias": False}, {"batch_first": True}, {"dropout": 0.25,
                                                                    "num_layers": 2},
    {"bidirectional": True}, {"proj_size": 2}])
def test_repr(torch, kwargs):
    for name in ("LSTM", "GRU", "RNN"):
        if "proj_size" in kwargs and name != "LSTM":
            continue
        assert repr(getattr(nn, name)(4, 6, **kwargs)) == \
            repr(getattr(torch.nn, name)(4, 6, **kwargs))
    assert repr(nn.RNN(4, 6, 2, "relu")) == repr(torch.nn.RNN(4, 6, 2, "relu"))


def test_lstm_with_fused_cell_kernels(torch, monkeypatch):
    """When core provides the fused LSTM cell ops, the layer uses them; checked here with a
    reference implementation of their contract."""
    calls = {"fwd": 0, "bwd": 0}

    def fused_cell(input_gates, hidden_gates, cx):
        calls["fwd"] += 1
        i, f, g, o = (input_gates + hidden_gates).chunk(4, 1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        cy = f * cx + i * g
        return o * cy.tanh(), cy, ember.cat([i, f, g, o], 1)

    def fused_cell_backward(grad_hy, grad_cy, cx, cy, workspace):
        calls["bwd"] += 1
        i, f, g, o = workspace.chunk(4, 1)
        tcy = cy.tanh()
        gc = grad_hy * o * (1 - tcy * tcy)
        if grad_cy is not None:
            gc = gc + grad_cy
        grad_gates = ember.cat([gc * g * i * (1 - i), gc * cx * f * (1 - f),
                                gc * i * (1 - g * g), grad_hy * tcy * o * (1 - o)], 1)
        return grad_gates, gc * f

    monkeypatch.setattr(_nnops, "_fused_lstm_cell", fused_cell)
    monkeypatch.setattr(_nnops, "_fused_lstm_cell_backward", fused_cell_backward)
    torch.manual_seed(10)
    tm, em = make_pair(torch, "LSTM", IN, HID, num_layers=2, bidirectional=True, proj_size=2)
    hx = (torch.randn(4, BATCH, 2, dtype=torch.float64),
          torch.randn(4, BATCH, HID, dtype=torch.float64))
    run_and_compare(torch, tm, em, torch.randn(T_LEN, BATCH, IN, dtype=torch.float64), hx)
    assert calls == {"fwd": 4 * T_LEN, "bwd": 4 * T_LEN}


def test_padded_lstm_runs_as_one_layer_kernel(torch, monkeypatch):
    """On the CPU a padded LSTM layer direction is one `lstm_layer` kernel call forward and
    one backward (not a kernel per step); packed input and projections run per step."""
    backend = ember.zeros(1)._backend
    calls = {"fwd": 0, "bwd": 0}
    fwd, bwd = backend.kernels["lstm_layer"], backend.kernels["lstm_layer_backward"]

    def count(key, fn):
        def wrapper(*args):
            calls[key] += 1
            return fn(*args)
        return wrapper

    monkeypatch.setitem(backend.kernels, "lstm_layer", count("fwd", fwd))
    monkeypatch.setitem(backend.kernels, "lstm_layer_backward", count("bwd", bwd))
    torch.manual_seed(3)
    tm, em = make_pair(torch, "LSTM", IN, HID, num_layers=2, bidirectional=True)
    run_and_compare(torch, tm, em, torch.randn(T_LEN, BATCH, IN, dtype=torch.float64))
    assert calls == {"fwd": 4, "bwd": 4}
    tm, em = make_pair(torch, "LSTM", IN, HID, proj_size=2)
    run_and_compare(torch, tm, em, torch.randn(T_LEN, BATCH, IN, dtype=torch.float64))
    assert calls == {"fwd": 4, "bwd": 4}  # unchanged: projections run per step


@pytest.mark.parametrize("bidirectional,with_hx", [(False, True), (True, False)])
def test_lstm_per_step_path_without_layer_kernel(torch, monkeypatch, bidirectional, with_hx):
    """Backends without `lstm_layer` run the per-step path; it gives the same results."""
    monkeypatch.setattr(_nnops, "_fused_lstm_layer", lambda *args: None)
    torch.manual_seed(4)
    tm, em = make_pair(torch, "LSTM", IN, HID, num_layers=2, bidirectional=bidirectional)
    n = 4 if bidirectional else 2
    hx = (torch.randn(n, BATCH, HID, dtype=torch.float64),
          torch.randn(n, BATCH, HID, dtype=torch.float64)) if with_hx else None
    run_and_compare(torch, tm, em, torch.randn(T_LEN, BATCH, IN, dtype=torch.float64), hx)


@pytest.mark.parametrize("use", [[2], [1, 2], [0]], ids=["c_n", "h_n+c_n", "output"])
def test_lstm_layer_kernel_partial_gradients(torch, use):
    # the kernel's backward with grad_out and/or grad_hn absent
    torch.manual_seed(5)
    tm, em = make_pair(torch, "LSTM", IN, HID, bidirectional=True, batch_first=True)
    hx = (torch.randn(2, BATCH, HID, dtype=torch.float64),
          torch.randn(2, BATCH, HID, dtype=torch.float64))
    run_and_compare(torch, tm, em, torch.randn(BATCH, T_LEN, IN, dtype=torch.float64), hx,
                    use=use)


@pytest.mark.parametrize("name,extra", RECURRENT, ids=["LSTM", "GRU", "RNN_tanh", "RNN_relu"])
def test_empty_batch(torch, name, extra):
    torch.manual_seed(6)
    tm, em = make_pair(torch, name, IN, HID, bidirectional=True, **extra)
    run_and_compare(torch, tm, em, torch.randn(T_LEN, 0, IN, dtype=torch.float64))


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("make,exc,match", [
    (lambda: nn.LSTM(3, 4, dropout=1.5), ValueError, r"dropout should be a number in range"),
    (lambda: nn.LSTM(3, 4, dropout=True), ValueError, r"dropout should be a number in range"),
    (lambda: nn.LSTM(3, 4, proj_size=4), ValueError,
     "proj_size has to be smaller than hidden_size"),
    (lambda: nn.LSTM(3, 4, proj_size=-1), ValueError, "proj_size should be a positive"),
    (lambda: nn.GRU(3, 4, proj_size=2), ValueError,
     "proj_size argument is only supported for LSTM, not RNN or GRU"),
    (lambda: nn.RNN(3, 4, nonlinearity="sigmoid"), ValueError,
     "Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'."),
    (lambda: nn.LSTM(3, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda: nn.LSTM(0, 3), ValueError, "input_size must be greater than zero"),
    (lambda: nn.LSTM(3, 4, num_layers=0), ValueError, "num_layers must be greater than zero"),
    (lambda: nn.LSTM(3, 4.0), TypeError, "hidden_size should be of type int, got: float"),
    (lambda: nn.LSTM(3, 4, bias=1), TypeError, "bias should be of type bool, got: int"),
    (lambda: nn.LSTM(3, 4, batch_first=None), TypeError,
     "batch_first should be of type bool, got: NoneType"),
])
def test_constructor_errors(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


def test_forward_errors():
    lstm = nn.LSTM(3, 5)
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D instead"):
        lstm(ember.randn(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"RNN: Expected input to be 2D or 3D, got 1D tensor"):
        nn.RNN(3, 5)(ember.randn(3))
    with pytest.raises(RuntimeError,
                       match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 4"):
        lstm(ember.randn(2, 2, 4))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 5\), got "
                                           r"\[1, 3, 5\]"):
        lstm(ember.randn(4, 2, 3), (ember.zeros(1, 3, 5), ember.zeros(1, 2, 5)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 2, 5\), got "
                                           r"\[1, 2, 4\]"):
        lstm(ember.randn(4, 2, 3), (ember.zeros(1, 2, 5), ember.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx and cx should also be 3-D "
                                           r"but got \(2-D, 3-D\) tensors"):
        lstm(ember.randn(4, 2, 3), (ember.zeros(2, 5), ember.zeros(1, 2, 5)))
    gru = nn.GRU(3, 5)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 5\), got \[2, 2, 5\]"):
        gru(ember.randn(4, 2, 3), ember.zeros(2, 2, 5))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but "
                                           "got 3-D tensor"):
        gru(ember.randn(4, 3), ember.zeros(1, 1, 5))
    with pytest.raises(ValueError, match=r"RNN input dtype \(ember.float64\) does not match "
                                         r"weight dtype \(ember.float32\)"):
        gru(ember.randn(4, 2, 3, dtype=ember.float64))


# -- cells ----------------------------------------------------------------------------------


CELLS = [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {}),
         ("RNNCell", {"nonlinearity": "relu"})]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_hx", [True, False])
@pytest.mark.parametrize("name,extra", CELLS, ids=["LSTMCell", "GRUCell", "RNNCell_tanh",
                                                   "RNNCell_relu"])
def test_cells_match_torch(torch, name, extra, with_hx, batched, bias):
    torch.manual_seed(11)
    tm, em = make_pair(torch, name, IN, HID, bias=bias, **extra)
    assert repr(em) == repr(tm)
    shape = (BATCH, IN) if batched else (IN,)
    hshape = (BATCH, HID) if batched else (HID,)
    hx = None
    if with_hx:
        hx = torch.randn(hshape, dtype=torch.float64)
        if name == "LSTMCell":
            hx = (hx, torch.randn(hshape, dtype=torch.float64))
    out = run_and_compare(torch, tm, em, torch.randn(shape, dtype=torch.float64), hx)
    assert all(tuple(o.shape) == hshape for o in out)


def test_cell_errors():
    with pytest.raises(ValueError, match="LSTMCell: Expected input to be 1D or 2D, got 3D "
                                         "instead"):
        nn.LSTMCell(3, 4)(ember.randn(1, 2, 3))
    with pytest.raises(ValueError, match=r"LSTMCell: Expected hx\[1\] to be 1D or 2D, got 3D "
                                         "instead"):
        nn.LSTMCell(3, 4)(ember.randn(2, 3), (ember.zeros(2, 4), ember.zeros(1, 2, 4)))
    with pytest.raises(ValueError, match="GRUCell: Expected hidden to be 1D or 2D, got 3D "
                                         "instead"):
        nn.GRUCell(3, 4)(ember.randn(2, 3), ember.zeros(1, 2, 4))
    cell = nn.RNNCell(3, 4)
    cell.nonlinearity = "gelu"
    with pytest.raises(RuntimeError, match="Unknown nonlinearity: gelu"):
        cell(ember.randn(2, 3))


def test_lstm_layer_kernel_leaves_its_inputs_alone():
    # batch 1 makes the transposed output gradient a free view: the kernel must still copy
    from ember.backends.cpu import lstm

    rng = np.random.default_rng(8)
    steps, batch, inputs, hidden = 4, 1, 3, 5
    x = rng.standard_normal((steps * batch, inputs))
    w_ih, w_hh = rng.standard_normal((4 * hidden, inputs)), rng.standard_normal((4 * hidden,
                                                                                 hidden))
    bias, h0, c0 = rng.standard_normal(4 * hidden), rng.standard_normal((batch, hidden)), \
        rng.standard_normal((batch, hidden))
    originals = [a.copy() for a in (x, w_ih, w_hh, bias, h0, c0)]
    out, hn, cn, saved = lstm.lstm_layer(x, w_ih, w_hh, bias, h0, c0)
    g_out, g_hn, g_cn = (rng.standard_normal(a.shape) for a in (out, hn, cn))
    kept = [a.copy() for a in (g_out, g_hn, g_cn)]
    lstm.lstm_layer_backward(saved, g_out, g_hn, g_cn)
    for before, after in zip(originals + kept, (x, w_ih, w_hh, bias, h0, c0, g_out, g_hn,
                                                 g_cn)):
        np.testing.assert_array_equal(before, after)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_retain_graph_runs_backward_twice_as_torch(torch, name, dtype):
    """`backward(retain_graph=True)` through a recurrent layer leaves its saved state for a
    second pass (the compiled float32 layers write gate gradients over a copy then); a pass
    without it frees the graph, and a third raises PyTorch's error."""
    x = np.linspace(-1, 1, 2 * 5 * 3).reshape(2, 5, 3).astype(dtype)
    grads = []
    for fw in (torch, ember):
        fw.manual_seed(0)
        layer = getattr(fw.nn, name)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
        layer = layer.double() if dtype == "float64" else layer
        out = layer(fw.tensor(x))[0].sum()
        out.backward(retain_graph=True)
        first = layer.weight_hh_l0.grad.clone()
        out.backward()
        grads.append((first.numpy(), layer.weight_hh_l0.grad.numpy()))
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            out.backward()
    (t1, t2), (e1, e2) = grads
    np.testing.assert_allclose(e1, t1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(e2, 2 * e1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(e2, t2, rtol=1e-4, atol=1e-5)


def test_output_and_state_nodes_are_named_as_torchs(torch):
    # the LSTM tutorials print `out` and `hidden`: grad_fn=<MkldnnRnnLayerBackward0> (the
    # CPU's oneDNN LSTM), <StackBackward0> for the states, <CatBackward0> bidirectional
    def names(lib):
        nn, x = lib.nn, lib.ones(5, 2, 3)
        out = []
        for m, inp in [(nn.LSTM(3, 4), x), (nn.LSTM(3, 4, num_layers=2, bidirectional=True), x),
                       (nn.LSTM(3, 4, batch_first=True), x), (nn.GRU(3, 4), x),
                       (nn.RNN(3, 4), x), (nn.LSTM(3, 4, proj_size=2), x),
                       (nn.LSTM(3, 4).double(), x.double()), (nn.LSTM(3, 4), x[:, 0])]:
            o, h = m(inp)
            out.append([t.grad_fn.name() for t in (o, *(h if isinstance(h, tuple) else (h,)))])
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "LSTM with projections is not supported
        assert names(ember) == names(torch)  # with oneDNN"


def test_unsorted_packing_orders_equal_lengths_as_torch(torch):
    """pack_padded_sequence(enforce_sorted=False) sorts the lengths with PyTorch's CPU
    sort: sequences of equal length land in PyTorch's rows, so a 2-layer LSTM's dropout
    masks (drawn over the packed rows) fall on the same sequences and the outputs agree."""
    lengths = [10, 6, 9, 5, 5, 13, 7, 13, 3, 13, 13, 4, 8, 13, 6, 9, 13, 5, 11, 13, 7, 13]
    x = np.random.RandomState(0).randn(13, len(lengths), 4).astype(np.float32)
    results = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(4, 5, num_layers=2, dropout=0.5, bidirectional=True)
        packed = lib.nn.utils.rnn.pack_padded_sequence(lib.tensor(x), lib.tensor(lengths),
                                                       enforce_sorted=False)
        lib.manual_seed(1)
        out, (h, _) = lstm(packed)
        results.append((packed.sorted_indices.tolist(), out.data.detach().numpy(),
                        h.detach().numpy()))
    assert results[1][0] == results[0][0]
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(results[1][2], results[0][2], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_parametrized_weights_are_used(torch, name):
    # a parametrization on a recurrent weight (orthogonal RNNs, weight_norm'd LSTMs) is the
    # weight the layer runs with, and its gradient reaches the original parameter
    class Scale(torch.nn.Module):
        def forward(self, w):
            return 0.5 * w

    class EmberScale(nn.Module):
        def forward(self, w):
            return 0.5 * w

    tm, em = make_pair(torch, name, IN, HID, num_layers=2)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight_hh_l1", Scale())
    nn.utils.parametrize.register_parametrization(em, "weight_hh_l1", EmberScale())
    x = torch.randn(T_LEN, BATCH, IN, dtype=torch.float64)
    out_t, out_e = tm(x)[0], em(to_ember(x))[0]
    assert_close(out_e, out_t, what="output")
    out_t.sum().backward()
    out_e.sum().backward()
    assert_close(em.parametrizations.weight_hh_l1.original.grad,
                 tm.parametrizations.weight_hh_l1.original.grad, what="original's gradient")
    plain = getattr(torch.nn, name)(IN, HID, num_layers=2).double()
    plain.load_state_dict({k.replace("parametrizations.", "").replace(".original", ""): v
                           for k, v in tm.state_dict().items()})
    assert not torch.allclose(plain(x)[0], out_t)  # the scaling changed the result
