"""The meta device: tensors with shapes and dtypes but no data, checked against PyTorch
(printed forms, result shapes and dtypes of ops and gradients, errors), and the patterns
PyTorch programs use it for: a stateless model copy under vmap + functional_call (the
torch.func model-ensembling tutorial), `with device("meta")` then `to_empty`."""

from __future__ import annotations

import copy
import subprocess
import sys

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _both(fn):
    """`fn(lib)` run on ember and on torch."""
    return fn(ember), fn(torch)


def _same_repr(got, want) -> None:
    assert repr(got) == repr(want).replace("torch.", "ember.")


# -- the device, factories, printed forms -----------------------------------------------
def test_device_and_factories_match_torch():
    assert repr(ember.device("meta")) == repr(torch.device("meta"))
    assert str(ember.device("meta")) == "meta"
    for make in (lambda t: t.empty(3, 4, device="meta"),
                 lambda t: t.zeros(2, 3, dtype=t.float64, device="meta"),
                 lambda t: t.ones(5, dtype=t.int32, device="meta"),
                 lambda t: t.full((2, 2), 7.0, device="meta"),
                 lambda t: t.full((2,), True, device="meta"),
                 lambda t: t.randn(2, 3, device="meta"),
                 lambda t: t.rand(4, device="meta", dtype=t.float16),
                 lambda t: t.randint(10, (3, 2), device="meta"),
                 lambda t: t.randperm(6, device="meta"),
                 lambda t: t.arange(5, device="meta"),
                 lambda t: t.arange(0, 1, 0.25, device="meta"),
                 lambda t: t.tensor([[1, 2], [3, 4]], device="meta"),
                 lambda t: t.tensor(2.5, device="meta"),
                 lambda t: t.zeros(0, device="meta"),
                 lambda t: t.empty(2, device="meta:0"),
                 lambda t: t.zeros(2, device="meta", requires_grad=True),
                 lambda t: t.empty_like(t.ones(2, 3, dtype=t.bool, device="meta")),
                 lambda t: t.ones(2, 3).to("meta"),
                 lambda t: t.ones(2, 3).to("meta", t.bfloat16),
                 lambda t: t.ones(2, 3, device="meta").new_zeros(4)):
        got, want = _both(make)
        assert got.is_meta and want.is_meta
        assert got.device == ember.device("meta") and got.device.type == "meta"
        assert got.device.index is None
        assert tuple(got.shape) == tuple(want.shape)
        _same_repr(got, want)
        assert str(got) == str(want).replace("torch.", "ember.")
    assert not ember.ones(1).is_meta


def test_printed_forms_of_results_and_parameters():
    got, want = _both(lambda t: (t.zeros(2, device="meta", requires_grad=True) * 2).sum())
    _same_repr(got, want)
    got, want = _both(lambda t: t.nn.Parameter(t.empty(3, device="meta")))
    assert repr(got) == repr(want)
    ember.set_default_dtype(ember.float64)
    try:  # the dtype suffix follows the default dtype, as in PyTorch
        assert repr(ember.empty(2, device="meta")) == "tensor(..., device='meta', size=(2,))"
        assert repr(ember.empty(2, device="meta", dtype=ember.float32)) == \
            "tensor(..., device='meta', size=(2,), dtype=ember.float32)"
    finally:
        ember.set_default_dtype(ember.float32)


# -- no data: PyTorch's errors -----------------------------------------------------------
def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("read", [
    lambda x: x.numpy(), lambda x: x.item(), lambda x: x.tolist(), lambda x: x.cpu(),
    lambda x: x.to("cpu"), lambda x: x[0].item(), lambda x: bool(x[0]),
    lambda x: float(x[0, 0]), lambda x: int(x[0, 0]), lambda x: x.detach().numpy(),
    lambda x: x.nonzero(),
], ids=["numpy", "item-many", "tolist", "cpu", "to-cpu", "item", "bool", "float", "int",
        "detach-numpy", "nonzero"])
def test_reading_values_raises_as_torch(read):
    got = _error(lambda: read(ember.ones(3, 4, device="meta")))
    want = _error(lambda: read(torch.ones(3, 4, device="meta")))
    assert got[0] is want[0]
    if "nonzero" not in want[1]:  # (torch's names its fake-tensor switch)
        assert got[1] == want[1]


def test_exact_no_data_messages():
    x = ember.ones(3, 4, device="meta")
    with pytest.raises(NotImplementedError, match=r"^Cannot copy out of meta tensor; no data!$"):
        x.cpu()
    with pytest.raises(RuntimeError, match=r"^Tensor.item\(\) cannot be called on meta tensors$"):
        x[0, 0].item()
    with pytest.raises(NotImplementedError, match="nonzero: the result's shape depends"):
        x.nonzero()
    with pytest.raises(RuntimeError, match=r"^Tensor on device cpu is not on the expected "
                                           r"device meta!\n"):
        x + ember.ones(3, 4)


def test_module_to_from_meta_names_to_empty():
    got = _error(lambda: ember.nn.Linear(2, 3).to("meta").to("cpu"))
    want = _error(lambda: torch.nn.Linear(2, 3).to("meta").to("cpu"))
    assert got[0] is want[0] is NotImplementedError
    assert got[1] == want[1].replace("torch.", "ember.")


def test_skip_init_builds_on_meta_then_gives_memory_as_torch():
    seen = []
    for lib in (torch, ember):
        lin = lib.nn.utils.skip_init(lib.nn.Linear, 5, 2, bias=False)
        ln = lib.nn.utils.skip_init(lib.nn.LayerNorm, 4, device="cpu")
        errors = []
        for cls in (lib.nn.ReLU, int):
            with pytest.raises(RuntimeError) as info:
                lib.nn.utils.skip_init(cls)
            errors.append(str(info.value).split("'")[0])
        seen.append((type(lin).__name__, tuple(lin.weight.shape), lin.bias,
                     str(lin.weight.device), lin.weight.requires_grad,
                     tuple(ln.weight.shape), str(ln.bias.device), errors))
    assert seen[1] == seen[0]


# -- ops: PyTorch's result shapes and dtypes ------------------------------------------------
OPS = {
    "add-promote": lambda t, x, i: x + i[..., None],
    "mul-scalar": lambda t, x, i: x * 2.5,
    "int-div": lambda t, x, i: i / 2,
    "compare": lambda t, x, i: x > 0,
    "where": lambda t, x, i: t.where(x > 0, x, t.zeros((), device="meta")),
    "matmul": lambda t, x, i: x @ x.transpose(-1, -2),
    "bmm-broadcast": lambda t, x, i: t.matmul(x, t.ones(4, 5, device="meta")),
    "linear": lambda t, x, i: t.nn.functional.linear(x, t.ones(7, 4, device="meta"),
                                                     t.ones(7, device="meta")),
    "conv2d": lambda t, x, i: t.nn.functional.conv2d(
        t.ones(2, 3, 9, 9, device="meta"), t.ones(8, 3, 3, 3, device="meta"), stride=2,
        padding=1),
    "max_pool2d": lambda t, x, i: t.nn.functional.max_pool2d(t.ones(2, 3, 9, 9,
                                                                     device="meta"), 2),
    "reshape": lambda t, x, i: x.reshape(6, -1),
    "view": lambda t, x, i: x.view(2, 12),
    "permute": lambda t, x, i: x.permute(2, 0, 1),
    "index": lambda t, x, i: x[1:, None, ::2],
    "expand": lambda t, x, i: x[:, :1].expand(2, 5, 4),
    "sum": lambda t, x, i: x.sum(),
    "sum-int": lambda t, x, i: i.sum(1),
    "mean-keepdim": lambda t, x, i: x.mean(-1, keepdim=True),
    "argmax": lambda t, x, i: x.argmax(1),
    "max-dim": lambda t, x, i: x.max(0).values,
    "cat": lambda t, x, i: t.cat([x, x], 1),
    "stack": lambda t, x, i: t.stack([x, x]),
    "softmax": lambda t, x, i: x.softmax(-1),
    "log_softmax": lambda t, x, i: t.nn.functional.log_softmax(x, 1),
    "cross_entropy": lambda t, x, i: t.nn.functional.cross_entropy(
        x.reshape(6, 4), t.zeros(6, dtype=t.int64, device="meta")),
    "mse": lambda t, x, i: t.nn.functional.mse_loss(x, x),
    "layer_norm": lambda t, x, i: t.nn.functional.layer_norm(x, (4,)),
    "embedding": lambda t, x, i: t.nn.functional.embedding(i, t.ones(10, 3, device="meta")),
    "cast": lambda t, x, i: x.half(),
    "float-of-int": lambda t, x, i: i.float(),
}


@pytest.mark.parametrize("name", list(OPS))
def test_ops_give_torch_shapes_and_dtypes(name):
    def run(t):
        x = t.ones(2, 3, 4, device="meta")
        i = t.zeros(2, 3, dtype=t.int64, device="meta")
        return OPS[name](t, x, i)
    got, want = _both(run)
    assert got.is_meta
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).replace("ember.", "") == str(want.dtype).replace("torch.", "")


def test_autograd_gives_meta_gradients_of_the_parameters_shapes():
    def run(t):
        t.manual_seed(0)
        model = t.nn.Sequential(t.nn.Conv2d(3, 4, 3), t.nn.ReLU(), t.nn.Flatten(),
                                t.nn.Linear(4 * 6 * 6, 5)).to("meta")
        out = model(t.randn(2, 3, 8, 8, device="meta"))
        loss = t.nn.functional.cross_entropy(out, t.zeros(2, dtype=t.int64, device="meta"))
        loss.backward()
        return loss, [p.grad for p in model.parameters()]
    (loss, grads), (want_loss, want_grads) = _both(run)
    _same_repr(loss, want_loss)
    assert [tuple(g.shape) for g in grads] == [tuple(g.shape) for g in want_grads]
    assert all(g.is_meta for g in grads)


def test_in_place_writes_and_optimizer_steps_keep_meta():
    w = ember.nn.Parameter(ember.empty(6, 5, device="meta"))
    ember.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    ember.nn.init.normal_(w)
    with ember.no_grad():
        w[0] = 1.0
        w.add_(1).mul_(2)
    assert w.is_meta and tuple(w.shape) == (6, 5)
    for opt in (ember.optim.SGD([w], lr=0.1, momentum=0.9), ember.optim.Adam([w], lr=0.1)):
        (w * w).sum().backward()
        opt.step()
        opt.zero_grad()
    assert w.is_meta and w.grad is None


def test_large_meta_tensors_cost_no_memory():
    x = ember.zeros(1 << 20, 1 << 20, device="meta")  # 4 TiB as data
    y = x.t()[::2].to(ember.float16)
    assert tuple(y.shape) == (1 << 19, 1 << 20) and y.dtype is ember.float16
    assert x.nbytes == 4 << 40


# -- default device context, to_empty ---------------------------------------------------
def test_device_context_makes_meta_the_default_and_restores():
    with ember.device("meta") as dev:
        assert dev == ember.device("meta")
        model = ember.nn.Linear(1000, 1000)
        assert ember.ones(2).is_meta and ember.get_default_device() == ember.device("meta")
        with ember.device("cpu"):
            assert not ember.ones(2).is_meta
        assert ember.ones(2).is_meta
    assert not ember.ones(2).is_meta and model.weight.is_meta
    with pytest.raises(ValueError), ember.device("meta"):
        raise ValueError
    assert ember.get_default_device() == ember.device("cpu")


def test_to_empty_from_meta_then_reinitialise_matches_torch():
    def run(t):
        with t.device("meta"):
            model = t.nn.Sequential(t.nn.Linear(3, 4), t.nn.BatchNorm1d(4), t.nn.Linear(4, 2))
        assert model[0].weight.is_meta and model[1].running_mean.is_meta
        model.to_empty(device="cpu")
        t.manual_seed(0)
        for m in model:
            m.reset_parameters()
        model.eval()
        return model(t.arange(6.0).reshape(2, 3))
    got, want = _both(run)
    assert got.device == ember.device("cpu")
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    # to_empty keeps the Parameter objects (an optimizer may hold them)
    model = ember.nn.Linear(2, 2).to("meta")
    weight = model.weight
    assert model.to_empty(device="cpu") is model and model.weight is weight
    assert weight.device == ember.device("cpu") and weight.requires_grad


# -- the torch.func model-ensembling tutorial's pattern -------------------------------------
def _ensemble(t, states, minibatches, minibatch):
    from_func = t.func

    class SimpleMLP(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = t.nn.Linear(12, 8)
            self.fc2 = t.nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(t.nn.functional.relu(self.fc1(x.flatten(1))))

    models = []
    for state in states:
        m = SimpleMLP()
        m.load_state_dict({k: t.tensor(v) for k, v in state.items()})
        models.append(m)
    params, buffers = from_func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def fmodel(params, buffers, x):
        return from_func.functional_call(base, (params, buffers), (x,))

    one = from_func.vmap(fmodel)(params, buffers, t.tensor(minibatches))
    same = from_func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, t.tensor(minibatch))
    loop = t.stack([m(t.tensor(mb)) for m, mb in zip(models, minibatches)])
    return one.detach().numpy(), same.detach().numpy(), loop.detach().numpy(), base


def test_model_ensembling_with_a_meta_base_model_gives_torch_values():
    rng = np.random.default_rng(0)
    states = [{"fc1.weight": rng.standard_normal((8, 12), dtype=np.float32),
               "fc1.bias": rng.standard_normal(8, dtype=np.float32),
               "fc2.weight": rng.standard_normal((3, 8), dtype=np.float32),
               "fc2.bias": rng.standard_normal(3, dtype=np.float32)} for _ in range(4)]
    minibatches = rng.standard_normal((4, 5, 3, 4), dtype=np.float32)
    minibatch = minibatches[0]
    *got, base = _ensemble(ember, states, minibatches, minibatch)
    *want, _ = _ensemble(torch, states, minibatches, minibatch)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0], got[2], rtol=1e-5, atol=1e-5)
    assert all(p.is_meta for p in base.parameters())


# -- meta is no hardware device ------------------------------------------------------------
def test_meta_is_never_listed_nor_chosen():
    from ember.core import plugins, scheduler

    ember.empty(1, device="meta")  # created
    assert "meta" not in plugins.registry.backends
    assert "meta" not in plugins.registry.summary()
    assert scheduler.default_device(1 << 30).type != "meta"


def test_import_ember_does_not_load_the_meta_backend():
    code = ("import sys, ember; assert 'ember.backends.meta' not in sys.modules; "
            "ember.ones(2).sum(); assert 'ember.backends.meta' not in sys.modules; "
            "ember.empty(2, device='meta'); assert 'ember.backends.meta' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_products_of_big_meta_tensors_are_free():
    def run(t):
        x = t.ones(1 << 16, 1 << 14, device="meta", requires_grad=True)
        w = t.ones(1 << 15, 1 << 14, device="meta", requires_grad=True)
        y = t.nn.functional.linear(x, w, t.ones(1 << 15, device="meta"))
        z = t.matmul(x[:8], w.T)
        y.backward(t.ones_like(y))  # (8 GiB as data; a reduction of it would take time)
        z.sum().backward()
        v = t.matmul(t.ones(3, device="meta"), t.ones(5, 3, 4, device="meta"))
        return y, z, x.grad, w.grad, v
    for got, want in zip(*_both(run)):
        _same_repr(got, want)


def test_load_state_dict_into_a_meta_model():
    def run(t):
        with t.device("meta"):
            model = t.nn.Sequential(t.nn.Linear(3, 4), t.nn.BatchNorm1d(4))
        state = {k: t.full(v.shape, 0.5, dtype=v.dtype) for k, v in model.state_dict().items()}
        with pytest.warns(UserWarning) as caught:
            model.load_state_dict(state)  # a copy into no data: a no-op, and a warning
        assert all(p.is_meta for p in model.parameters())
        model.load_state_dict(state, assign=True)
        assert not any(p.is_meta for p in model.parameters())
        return [str(w.message) for w in caught], model[0].weight
    (got, weight), (want, _) = _both(run)
    assert got == want
    assert isinstance(weight, ember.nn.Parameter) and weight.tolist() == [[0.5] * 3] * 4
