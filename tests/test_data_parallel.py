"""nn.DataParallel in one process: outputs and gradients equal single-device ones, on two
CPU slots, on the CPU with the OpenCL device, and on the CPU with a plugin's device."""

import pytest

import ember
from ember import nn

torch = pytest.importorskip("torch")

HAS_OPENCL = any(d.type == "opencl" for d in ember.devices())
# the example plugin's device (examples/ember-plugin-example, installed by `make`)
HAS_PLUGIN = any(d.type == "countdev" for d in ember.devices())
DEVICE_SETS = [["cpu", "cpu"],
               pytest.param(["cpu", "opencl:0"], marks=pytest.mark.skipif(
                   not HAS_OPENCL, reason="no OpenCL device")),
               pytest.param(["cpu", "countdev:0"], marks=pytest.mark.skipif(
                   not HAS_PLUGIN, reason="the example plugin is not installed"))]


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))


def _cnn():
    ember.manual_seed(0)
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 5))


def _grads(model):
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("devices", DEVICE_SETS)
@pytest.mark.parametrize("make,shape", [(_mlp, (29, 6)), (_cnn, (11, 2, 8, 8))])
@pytest.mark.parametrize("balance", [None, [1, 3]])
def test_outputs_and_gradients_equal_single_device(devices, make, shape, balance):
    x = ember.randn(*shape)
    model = make()
    ref = model(x)
    (ref * ref).sum().backward()
    ref_grads = _grads(model)
    model.zero_grad()

    dp = nn.DataParallel(model, devices, balance=balance)
    out = dp(x)
    assert out.device == ember.device("cpu") and out.shape == ref.shape
    (out * out).sum().backward()
    assert ember.allclose(out, ref, atol=1e-5)
    for g, r in zip(_grads(model), ref_grads):
        assert ember.allclose(g, r, atol=1e-4, rtol=1e-4)
    plan = dp.plan(x)
    assert sum(plan.rows) == shape[0] and len(plan.rows) == 2
    if balance is not None:
        assert plan.rows == [shape[0] // 4 + (shape[0] % 4 > 2), shape[0] - plan.rows[0]]


@pytest.mark.parametrize("devices", DEVICE_SETS)
def test_training_steps_match_single_device(devices):
    x, y = ember.randn(40, 6), ember.randint(0, 3, (40,))
    single, parallel = _mlp(), _mlp()
    dp = nn.DataParallel(parallel, devices)
    for model, net in ((single, single), (parallel, dp)):
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
    for p, q in zip(single.parameters(), parallel.parameters()):
        assert ember.allclose(p, q, atol=1e-5)


@pytest.mark.skipif(not HAS_OPENCL, reason="no OpenCL device")
def test_outputs_gather_on_the_output_device_and_structures_are_walked():
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 2), nn.Linear(4, 3)

        def forward(self, x, *, scale):
            return {"a": self.a(x) * scale, "pair": (self.b(x), x.sum(1, keepdim=True))}

    ember.manual_seed(1)
    model, x = TwoHeads(), ember.randn(9, 4)
    ref = model(x, scale=2.0)
    out = nn.DataParallel(model, ["cpu", "opencl:0"], output_device="opencl:0",
                          balance=[1, 1])(x, scale=2.0)
    assert out["a"].device == ember.device("opencl:0")
    assert ember.allclose(out["a"].cpu(), ref["a"], atol=1e-5)
    assert ember.allclose(out["pair"][0].cpu(), ref["pair"][0], atol=1e-5)
    assert out["pair"][1].shape == (9, 1)


def test_speed_is_measured_once_per_input_shape_and_the_plan_prints():
    dp = nn.DataParallel(_mlp(), ["cpu", "cpu"])
    x = ember.randn(10, 6)
    first = dp.plan(x)
    assert all(s > 0 for s in first.seconds_per_sample)
    assert dp.plan(x).seconds_per_sample == first.seconds_per_sample  # cached
    dp(ember.randn(4, 6))  # another batch size, same sample shape: no new measurement
    assert len(dp._seconds_per_sample) == 1
    text = repr(first)
    assert "DataParallel plan: 10 rows along dim 0" in text and text.count("cpu") == 2
    assert sum(dp.plan().rows) == 4  # without inputs: the last forward's plan
    with pytest.raises(RuntimeError, match="no forward has run yet"):
        nn.DataParallel(_mlp(), ["cpu", "cpu"]).plan()


def test_measuring_keeps_each_submodules_mode():
    model = _mlp()
    model[1].eval()  # a mixed state: the measurement must give it back as it was
    dp = nn.DataParallel(model, ["cpu", "cpu"])
    dp(ember.randn(6, 6))
    assert model.training and model[0].training and not model[1].training


def test_state_dict_and_module_as_torchs():
    model = _mlp()
    dp = nn.DataParallel(model, ["cpu"])
    t_model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(),
                                  torch.nn.Linear(16, 3))
    assert list(dp.state_dict()) == list(torch.nn.DataParallel(t_model).state_dict())
    assert dp.module is model
    x = ember.randn(3, 6)
    assert ember.equal(dp(x), model(x))  # one device: the module itself runs


def test_functional_form():
    model, x = _mlp(), ember.randn(7, 6)
    out = nn.parallel.data_parallel(model, x, ["cpu", "cpu"])
    assert ember.allclose(out, model(x), atol=1e-6)


def test_bad_arguments_are_named():
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on "
                       r"device opencl:0 \(device_ids\[0\]\) but found one of them on device: "
                       r"cpu"):
        nn.DataParallel(_mlp(), ["opencl:0", "cpu"])
    with pytest.raises(ValueError, match="balance must give one non-negative share per device"):
        nn.DataParallel(_mlp(), ["cpu", "cpu"], balance=[1])
    with pytest.raises(ValueError, match="DataParallel: no tensor among the inputs"):
        nn.DataParallel(_mlp(), ["cpu", "cpu"])(x=3)


def test_a_batch_smaller_than_the_devices_runs_where_it_has_rows():
    model, x = _mlp(), ember.randn(1, 6)
    dp = nn.DataParallel(model, ["cpu", "cpu"], balance=[1, 1])
    assert dp.plan(x).rows == [1, 0]
    assert ember.allclose(dp(x), model(x))
