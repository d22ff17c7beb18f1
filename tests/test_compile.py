"""`ember.compile`: a replayed step equals the eager step, values and gradients, on every
model of the benchmarks; what cannot be replayed runs eagerly and says why."""
from __future__ import annotations

import copy

import pytest

import ember
from ember import nn


def _models() -> dict:
    ember.manual_seed(0)

    class LSTMNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(6, 12, batch_first=True)
            self.fc = nn.Linear(12, 10)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.fc(out[:, -1])

    return {
        # (sizes from 1024 elements on: the plan fuses their ReLUs, fusion.MIN_ELEMENTS)
        "mlp": (nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(),
                              nn.Linear(16, 10)), (64, 20)),
        "cnn": (nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(4 * 3 * 3, 10)), (16, 1, 8, 8)),
        "lstm": (LSTMNet(), (3, 5, 6)),
        "tiny": (nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(),
                               nn.Linear(8, 10)), (4, 8)),
    }


def _step(model, optimizer):
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    return step


def _pair(model, make_optimizer):
    """(compiled step, eager step, model, eager model) from two copies of `model`."""
    twin = copy.deepcopy(model)
    compiled = ember.compile(_step(model, make_optimizer(model)))
    eager = _step(twin, make_optimizer(twin))
    return compiled, eager, model, twin


def _assert_same(model, twin, a, b) -> None:
    assert ember.equal(a, b), (a, b)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert ember.allclose(p, q, rtol=1e-6, atol=1e-7), name
        assert ember.allclose(p.grad, q.grad, rtol=1e-6, atol=1e-7), name


def _sgd(m):
    return ember.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)


@pytest.mark.parametrize("name", ["mlp", "cnn", "lstm", "tiny"])
def test_a_compiled_training_step_equals_eager_values_and_gradients(name: str) -> None:
    model, shape = _models()[name]
    compiled, eager, model, twin = _pair(model, _sgd)
    x, y = ember.randn(*shape), ember.randint(0, 10, (shape[0],))
    losses = []
    for _ in range(6):
        a, b = compiled(x, y), eager(x, y)
        losses.append(a)
        _assert_same(model, twin, a, b)
    assert "replayed" in compiled.explain(), compiled.explain()
    # each call returned its own loss; the earlier ones keep their values
    assert len({float(v) for v in losses}) == len(losses)


def test_adam_and_new_inputs_every_call() -> None:
    """Adam reads its step counts (0-d tensors, as PyTorch's) into Python for its bias
    corrections: the step stays eager (and correct), and explain() says why."""
    model, shape = _models()["mlp"]
    compiled, eager, model, twin = _pair(model, lambda m: ember.optim.Adam(m.parameters(),
                                                                          lr=1e-2))
    for _ in range(6):
        x, y = ember.randn(*shape), ember.randint(0, 10, (shape[0],))
        _assert_same(model, twin, compiled(x, y), eager(x, y))
    assert "eager: it reads a tensor's value into Python (item)" in compiled.explain()


def test_a_shape_change_re_traces_and_control_flow_follows_it() -> None:
    """A branch on the batch size: each shape is its own recording, and each replays the
    branch its shape took."""
    model, shape = _models()["mlp"]
    twin = copy.deepcopy(model)
    opt, topt = _sgd(model), _sgd(twin)

    def make(m, o):
        def step(x, y):
            o.zero_grad()
            out = m(x)
            if x.shape[0] > 4:  # big batches: label smoothing; small: plain
                loss = nn.functional.cross_entropy(out, y, label_smoothing=0.1)
            else:
                loss = nn.functional.cross_entropy(out, y)
            loss.backward()
            o.step()
            return loss
        return step

    compiled, eager = ember.compile(make(model, opt)), make(twin, topt)
    for batch in (8, 2, 8, 2, 8, 2, 8, 2, 8, 2):
        x, y = ember.randn(batch, 20), ember.randint(0, 10, (batch,))
        _assert_same(model, twin, compiled(x, y), eager(x, y))
    assert compiled.explain().count("replayed") == 2


def test_dropout_draws_the_same_numbers_as_eager() -> None:
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 10), nn.Dropout(0.5), nn.Linear(10, 3))
    compiled, eager, model, twin = _pair(model, _sgd)
    x, y = ember.randn(6, 10), ember.randint(0, 3, (6,))
    for _ in range(5):
        ember.manual_seed(7)
        a = compiled(x, y)
        ember.manual_seed(7)
        _assert_same(model, twin, a, eager(x, y))


def test_mode_and_learning_rate_changes_are_guarded() -> None:
    model, shape = _models()["mlp"]
    model.append(nn.Dropout(0.3))
    twin = copy.deepcopy(model)
    opt, topt = _sgd(model), _sgd(twin)
    compiled, eager = ember.compile(_step(model, opt)), _step(twin, topt)
    x, y = ember.randn(*shape), ember.randint(0, 10, (shape[0],))
    for i in range(12):
        for m in (model, twin):
            m.train(i % 4 < 2)
        for o in (opt, topt):
            o.param_groups[0]["lr"] = 0.05 if i < 6 else 0.01
        ember.manual_seed(i)
        a = compiled(x, y)
        ember.manual_seed(i)
        _assert_same(model, twin, a, eager(x, y))


def test_what_cannot_be_replayed_runs_eagerly_and_says_why() -> None:
    model, shape = _models()["tiny"]
    opt = _sgd(model)
    seen = []

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        seen.append(loss.item())  # a value read into Python every call
        loss.backward()
        opt.step()
        return loss

    compiled = ember.compile(step)
    x, y = ember.randn(*shape), ember.randint(0, 10, (shape[0],))
    for _ in range(5):
        compiled(x, y)
    assert len(seen) == 5  # every call ran the Python
    assert "eager: it reads a tensor's value into Python (item)" in compiled.explain()
    strict = ember.compile(step, fullgraph=True)
    strict(x, y)
    with pytest.raises(RuntimeError, match=r"fullgraph=True.*reads a tensor's value"):
        strict(x, y)


def test_a_compiled_module_forward_keeps_autograd_working() -> None:
    """A forward whose output autograd will go back through stays eager: correct."""
    model, shape = _models()["mlp"]
    twin = copy.deepcopy(model)
    compiled = ember.compile(model)
    x = ember.randn(*shape)
    for _ in range(4):
        out = compiled(x)
        out.sum().backward()
        twin(x).sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert ember.allclose(p.grad, q.grad)
    assert "requires grad" in compiled.forward.explain()


def test_inference_under_no_grad_replays() -> None:
    model, shape = _models()["cnn"]
    model.eval()
    compiled = ember.compile(lambda x: model(x).softmax(1))
    x = ember.randn(*shape)
    with ember.no_grad():
        for _ in range(5):
            out = compiled(x)
        assert ember.allclose(out, model(x).softmax(1))
        assert "replayed" in compiled.explain()


def test_the_profiler_shows_the_replayed_kernels() -> None:
    model, shape = _models()["tiny"]
    compiled = ember.compile(_step(model, _sgd(model)))
    x, y = ember.randn(*shape), ember.randint(0, 10, (shape[0],))
    for _ in range(4):
        compiled(x, y)
    with ember.profiler.profile() as prof:
        compiled(x, y)
    names = {e.key for e in prof.key_averages()}
    assert any(n.startswith("ember.compile: step") for n in names), names
    assert {"compiled::linear", "compiled::tanh"} & names or \
        any(n.startswith("compiled::") for n in names), names


def test_opencl_steps_replay_too() -> None:
    pytest.importorskip("pyopencl")
    try:
        ember.zeros(1, device="opencl")
    except RuntimeError as err:
        pytest.skip(f"no OpenCL device: {err}")
    model, shape = _models()["mlp"]
    model.to("opencl")
    compiled, eager, model, twin = _pair(model, _sgd)
    x = ember.randn(*shape, device="opencl")
    y = ember.randint(0, 10, (shape[0],), device="opencl")
    for _ in range(5):
        a, b = compiled(x, y), eager(x, y)
        assert ember.allclose(a.cpu(), b.cpu(), rtol=1e-5)
    for p, q in zip(model.parameters(), twin.parameters()):
        assert ember.allclose(p.cpu(), q.cpu(), rtol=1e-4, atol=1e-6)
    assert "replayed" in compiled.explain()


def test_plain_numbers_in_the_result_come_back_as_they_were() -> None:
    """A returned int is a value, not a placeholder for one of the replay's tensors."""
    model, shape = _models()["tiny"]
    opt = _sgd(model)

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss, 3, {"n": 0}

    compiled = ember.compile(step)
    x, y = ember.randn(*shape), ember.randint(0, 10, (shape[0],))
    for _ in range(5):
        loss, three, extra = compiled(x, y)
    assert "replayed" in compiled.explain()
    assert three == 3 and extra == {"n": 0} and isinstance(loss, ember.Tensor)


# -- the static plan: fused chains, elided copies, reused buffers -------------------------


def _fusion_on() -> bool:
    from ember.backends.cpu import compiled as cpu_compiled

    return cpu_compiled.kernels() is not None


def _chain_params():
    ember.manual_seed(3)
    return [ember.randn(32, 48).requires_grad_(), ember.randn(48).requires_grad_()]


def _chain_step(params):
    """Elementwise chains forward and backward (a bias over rows, tanh, sigmoid), and a
    hand-written SGD update (`p.sub_(lr * g)`: mul, sub and a copy into the parameter)."""
    w, b = params

    def step(x):
        h = x @ w + b
        a = (h * 0.5).tanh() * 2.0 - h.sigmoid()
        loss = (a * a).mean()
        loss.backward()
        with ember.no_grad():
            for p in (w, b):
                p.sub_(p.grad * 0.1)
                p.grad = None
        return loss, a
    return step


def _run_chain(compiled_params, eager_params, batches, keep=None):
    compiled = ember.compile(_chain_step(compiled_params))
    eager = _chain_step(eager_params)
    for batch in batches:
        x = ember.randn(batch, 32)
        (loss, a), (eloss, ea) = compiled(x), eager(x)
        assert ember.allclose(loss, eloss, rtol=1e-5, atol=1e-6), (loss, eloss)
        assert ember.allclose(a, ea, rtol=1e-5, atol=1e-5)
        for p, q in zip(compiled_params, eager_params):
            assert ember.allclose(p, q, rtol=1e-5, atol=1e-5)
        if keep is not None:
            keep.append((a, a.detach().numpy().copy(), loss, float(loss)))
    return compiled


def test_fused_chains_equal_the_unfused_ops_and_eager(monkeypatch) -> None:
    params, twin, unfused = _chain_params(), _chain_params(), _chain_params()
    compiled = _run_chain(params, twin, [64] * 6)
    explain = compiled.explain()
    assert "replayed" in explain, explain
    if _fusion_on():
        chains = int(explain.split(" fused chains")[0].rsplit(" ", 1)[-1])
        assert chains >= 3, explain
    # the same step with the CPU's compiled kernels off (EMBER_NUMBA=0): the plan runs
    # the ops one by one, and gives the same parameters
    from ember.backends.cpu import compiled as cpu_compiled

    monkeypatch.setattr(cpu_compiled, "_module", None)
    monkeypatch.setattr(cpu_compiled, "unavailable", "turned off by EMBER_NUMBA=0")
    eager_twin = _chain_params()
    off = _run_chain(unfused, eager_twin, [64] * 6)
    assert " 0 fused chains" in off.explain(), off.explain()
    for p, q in zip(params, unfused):
        assert ember.allclose(p, q, rtol=1e-5, atol=1e-5)


def test_reused_buffers_never_overwrite_returned_tensors_or_gradients() -> None:
    """Each call returns an intermediate (`a`) and the loss: later calls, whose results
    go into buffers the plan reuses, leave the earlier ones as they were."""
    kept: list = []
    compiled = _run_chain(_chain_params(), _chain_params(), [64] * 8, keep=kept)
    assert "replayed" in compiled.explain()
    for a, values, loss, number in kept:
        assert (a.detach().numpy() == values).all()
        assert float(loss) == number
    assert len({id(a.detach().numpy()) for a, *_ in kept}) == len(kept)


def test_a_shape_change_re_traces_the_plan_too() -> None:
    """Batch 64 fuses its chains, batch 8 (below the fused kernels' size) does not: each
    shape has its own plan, both equal eager."""
    compiled = _run_chain(_chain_params(), _chain_params(), [64, 8, 64, 8, 64, 8, 64, 8])
    assert compiled.explain().count("replayed") == 2, compiled.explain()


def test_gradient_copies_are_elided_and_the_grads_stay_right() -> None:
    model, shape = _models()["mlp"]
    compiled, eager, model, twin = _pair(model, _sgd)
    x, y = ember.randn(*shape), ember.randint(0, 10, (shape[0],))
    for _ in range(5):
        _assert_same(model, twin, compiled(x, y), eager(x, y))
    explain = compiled.explain()
    assert " 6 copies elided" in explain, explain
    grads = [p.grad for p in model.parameters()]
    assert len({id(g.numpy()) for g in grads}) == len(grads)  # one buffer each


def test_the_profiler_names_fused_chains() -> None:
    if not _fusion_on():
        pytest.skip("numba is off or missing: no fused kernels")
    compiled = ember.compile(_chain_step(_chain_params()))
    x = ember.randn(64, 32)
    for _ in range(4):
        compiled(x)
    with ember.profiler.profile() as prof:
        compiled(x)
    names = {e.key for e in prof.key_averages()}
    assert any(n.startswith("compiled::fused[") and "tanh" in n for n in names), names


def test_a_dtype_or_device_change_re_traces() -> None:
    """float32 and float64 inputs are two guard keys, each with its own plan (its own
    fused kernel); a device change is a third."""
    def fn(x, b):
        return ((x * 2.0 + b).relu() - 0.5).sigmoid()

    compiled = ember.compile(fn)
    with ember.no_grad():
        for dtype in (ember.float32, ember.float64) * 4:
            x, b = ember.randn(64, 48, dtype=dtype), ember.randn(48, dtype=dtype)
            out = compiled(x, b)
            assert out.dtype == dtype
            assert ember.allclose(out, fn(x, b), rtol=1e-6, atol=1e-7)
    assert compiled.explain().count("replayed") == 2, compiled.explain()
    try:
        ember.zeros(1, device="opencl")
    except Exception:  # noqa: BLE001 - no OpenCL here: the CPU keys are checked above
        return
    with ember.no_grad():
        for _ in range(4):
            x, b = ember.randn(64, 48, device="opencl"), ember.randn(48, device="opencl")
            assert ember.allclose(compiled(x, b).cpu(), fn(x, b).cpu(), rtol=1e-5, atol=1e-6)
    assert compiled.explain().count("replayed") == 3, compiled.explain()


def test_a_view_read_late_keeps_its_buffer_alive() -> None:
    """`v` views `h`'s memory and is read after the chains that could take a dead buffer
    of `h`'s shape: the plan keeps that memory alive until `v`'s last read."""
    w = ember.randn(32, 64)

    def fn(x):
        h = (x @ w).relu()
        v = h.reshape(-1)
        k = (h * 3.0).tanh()
        m = (k + 1.0) * 0.5 - (k * k).sigmoid()
        return m.sum(1), v[::7] * 2.0

    compiled = ember.compile(fn)
    with ember.no_grad():
        for _ in range(6):
            x = ember.randn(48, 32)
            (a, b), (c, d) = compiled(x), fn(x)
            assert ember.allclose(a, c, rtol=1e-5, atol=1e-5)
            assert ember.equal(b, d)
    assert "replayed" in compiled.explain(), compiled.explain()


def test_ember_compile_plan_0_replays_the_tape_as_recorded(monkeypatch) -> None:
    monkeypatch.setenv("EMBER_COMPILE_PLAN", "0")
    compiled = _run_chain(_chain_params(), _chain_params(), [64] * 5)
    assert "0 fused chains (0 ops), 0 copies elided, 0 results" in compiled.explain()


def test_gradients_accumulated_in_place_over_two_backwards() -> None:
    """zero_grad(set_to_none=False) and two backwards a step: the gradients are tensors
    that live across calls, accumulated in place; the plan's fused kernels and reused
    buffers leave them as eager does."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 10))
    twin = copy.deepcopy(model)

    def make(m):
        opt = _sgd(m)

        def step(x, y):
            opt.zero_grad(set_to_none=False)
            for half, target in ((x[:32], y[:32]), (x[32:], y[32:])):
                loss = nn.functional.cross_entropy(m(half), target)
                loss.backward()
            opt.step()
            return loss
        return step

    compiled, eager = ember.compile(make(model)), make(twin)
    x, y = ember.randn(64, 20), ember.randint(0, 10, (64,))
    for _ in range(6):
        _assert_same(model, twin, compiled(x, y), eager(x, y))
    assert "replayed" in compiled.explain(), compiled.explain()


@pytest.mark.parametrize("size", [8, 16], ids=["numpy_relu", "fused_relu"])
def test_max_pool_runs_before_relu_with_eagers_values_and_gradients(size: int) -> None:
    """The plan pools before ReLU (they commute): values and gradients equal eager's bit
    for bit, through ties, windows of no positive value, NaN and infinities."""
    import numpy as np
    rng = np.random.default_rng(3)
    x = np.round(rng.standard_normal((4, 4, size, size)) * 2) / 2  # ties
    x[0, 0, :2, :2] = -1.0  # a window with no positive value
    x[0, 1, :2, :2] = [[np.nan, 5.0], [-1.0, np.nan]]
    x[1, 0, 2:4, 2:4] = [[np.inf, 1.0], [np.inf, -np.inf]]
    x[1, 1, 4:6, :2] = [[0.0, -0.0], [0.0, -2.0]]
    scale = ember.nn.Parameter(ember.ones(4, 4, size, size))
    weights = ember.tensor(rng.standard_normal((4, 4, size // 4, size // 4)),
                           dtype=ember.float32)
    pool = nn.MaxPool2d(2)

    def step(inputs):
        scale.grad = None
        y = pool(nn.functional.relu(pool(nn.functional.relu(inputs * scale))))
        loss = (y * weights).sum()
        loss.backward()
        return y, scale.grad

    inputs = ember.tensor(x, dtype=ember.float32)
    want = [t.detach().numpy().copy() for t in step(inputs)]
    compiled = ember.compile(step)
    for _ in range(3):
        got = [t.detach().numpy() for t in compiled(inputs)]
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    assert "2 ReLU-max-pool pairs pooled first" in compiled.explain(), compiled.explain()
