"""The scheduler: device traits and their cache, the cost model, the decision rules (with
given traits), `ember.plan`, `device="auto"`, and `ember devices --calibrate/--explain`.

Real calibration runs at most once a session (`calibrated`); the decision rules use given
traits. The measured-accuracy checks (estimate within 2x of measured steps; the grid) are
in `test_plan_matches_measurements_long`, which runs only with EMBER_LONG_TESTS=1, and in
benchmarks/bench_scheduler.py.
"""

import json
import math
import os
import sys
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.core import calibration, costmodel, scheduler, traits
from ember.core.costmodel import OpWork
from ember.core.device import device as Device

ALL_DEVICES = [str(d) for d in ember.devices()]


@pytest.fixture(autouse=True)
def _fresh_choice():
    """Each test starts with no recorded choice and no remembered traits."""
    scheduler.forget()
    calibration.forget()
    yield
    scheduler.forget()
    calibration.forget()
    ember.set_default_device(None)


@pytest.fixture(scope="session")
def calibrated():
    """Every device here measured once for the session (a few seconds)."""
    devices = [Device(d) for d in ALL_DEVICES]
    return {t.device: t for t in calibration.measure_and_save(devices, progress=False)}


def given(device, launch=10e-6, matmul=100.0, bw=20.0, h2d=math.inf, memory=1 << 34,
          vector=None):
    """Given traits (GFLOP/s, GB/s), remembered for `device` in this process."""
    t = traits.DeviceTraits(str(device), "given", launch, 0.0, {64: matmul, 1024: matmul},
                            vector or matmul / 10, {1 << 10: bw, 1 << 30: bw}, h2d, h2d,
                            memory, measured=True)
    calibration.remember(t)
    return t


CPU, GPU = Device("cpu"), Device("fastgpu", 0)


def small_work(n_ops=40):
    return [OpWork("add", "f32[64]", 64.0, 768.0) for _ in range(n_ops)]


def large_work():
    n = 4096
    return [OpWork("matmul", f"f32[{n},{n}]x2", 2.0 * n ** 3, 3 * 4.0 * n * n)] * 3


def decide(works, memory=1 << 20, input_bytes=0):
    opts = scheduler.options(works, memory, input_bytes, [CPU, GPU])
    return scheduler.decide(opts, memory)


# -- the decision rules, with given traits ---------------------------------------------

def test_small_work_stays_on_the_cpu():
    given(CPU, launch=5e-6, matmul=100)
    given(GPU, launch=20e-6, matmul=50_000, bw=2000, h2d=20)
    d = decide(small_work())
    assert d.device == CPU
    assert any("small work stays on the CPU" in r and "fastgpu:0" in r for r in d.reasons)
    gpu = next(o for o in d.options if o.device == GPU)
    assert gpu.estimate.launch_s == pytest.approx(40 * 20e-6)


def test_large_work_goes_to_the_fastest_device():
    given(CPU, launch=5e-6, matmul=100)
    given(GPU, launch=20e-6, matmul=50_000, bw=2000, h2d=20)
    d = decide(large_work())
    assert d.device == GPU and d.order == [GPU, CPU]
    cpu = next(o for o in d.options if o.device == CPU)
    assert cpu.estimate.compute_s == pytest.approx(3 * 2 * 4096 ** 3 / 100e9)
    assert any("estimated" in r and "faster than the CPU" in r for r in d.reasons)


def test_fast_gpu_with_little_memory_is_passed_over():
    given(CPU, launch=5e-6, matmul=100)
    given(GPU, launch=20e-6, matmul=50_000, bw=2000, h2d=20, memory=1 << 30)
    d = decide(large_work(), memory=4 << 30)
    assert d.device == CPU
    assert any("fastgpu:0 cannot hold the work: it needs 4.0 GiB, 1.0 GiB free" in r
               for r in d.reasons)
    assert not next(o for o in d.options if o.device == GPU).fits


def test_transfers_can_outweigh_faster_compute():
    given(CPU, launch=5e-6, matmul=100, bw=20)
    given(GPU, launch=5e-6, matmul=50_000, bw=2000, h2d=1.0)  # a slow link
    works = [OpWork("matmul", "m", 2e9, 1e6)]  # 20 ms on the CPU
    assert decide(works, input_bytes=0).device == GPU
    d = decide(works, input_bytes=100_000_000)  # 100 ms to move the inputs each step
    assert d.device == CPU
    gpu = next(o for o in d.options if o.device == GPU)
    assert gpu.estimate.transfer_s == pytest.approx(0.1)
    assert next(o for o in d.options if o.device == CPU).estimate.transfer_s == 0


def test_a_device_must_beat_the_cpu_by_the_margin():
    given(CPU, launch=10e-6, matmul=100)
    given(GPU, launch=10e-6, matmul=105)  # 5% faster at matmuls: not worth moving
    d = decide(large_work())
    assert d.device == CPU
    assert any(f"less than {scheduler.MARGIN}x" in r for r in d.reasons)


def test_cost_model_formula():
    t = given(CPU, launch=1e-5, matmul=100, bw=10, vector=2)
    mm = costmodel.estimate_op(OpWork("matmul", "", 1e9, 1e6), t)  # compute-bound
    assert (mm.compute_s, mm.memory_s, mm.launch_s) == pytest.approx((1e-2, 0, 1e-5))
    add = costmodel.estimate_op(OpWork("add", "", 1e6, 12e6), t)  # memory-bound
    assert (add.compute_s, add.memory_s) == pytest.approx((0, 12e6 / 10e9))
    exp = costmodel.estimate_op(OpWork("exp", "", 8e9, 8e9), t)  # 1 FLOP a byte: elementwise
    assert exp.compute_s == pytest.approx(8e9 / 2e9)
    linear = costmodel.estimate_op(OpWork("linear", "", 2e9, 1e6), t)  # BLAS by intensity
    assert linear.compute_s == pytest.approx(2e9 / 100e9)


def test_a_list_op_launches_a_kernel_per_tensor():
    """SGD's list ops loop over the parameters in every backend: 6 tensors, 6 launches
    (on a device with a 50 µs launch, launches are most of a small optimizer step)."""
    t = given(GPU, launch=50e-6, matmul=1000)
    one = costmodel.estimate_op(OpWork("_foreach_add_", "6 tensors", 600.0, 7200.0), t)
    six = costmodel.estimate_op(OpWork("_foreach_add_", "6 tensors", 600.0, 7200.0,
                                       launches=6), t)
    assert one.launch_s == pytest.approx(50e-6) and six.launch_s == pytest.approx(300e-6)
    assert six.memory_s == one.memory_s


def test_measured_kernel_times_replace_the_formula_and_carry_over():
    """On the device a step was recorded on, each op's measured kernel time is its
    estimate (plus the traits' launch); on another device running the same op, the
    measured time scaled by the formula's ratio between the devices (what the formula
    misses on both is kept)."""
    cpu = given(CPU, launch=2e-6, matmul=50)
    gpu = given(GPU, launch=20e-6, matmul=500)
    lstm = OpWork("_fused_lstm_layer", "f32[1600, 32]", 2.7e8, 1.4e6)
    add = OpWork("add", "f32[64]", 64.0, 768.0)
    works, seconds = [lstm, add], [40e-3, None]  # the formula says 5.4 ms for the layer
    e = costmodel.estimate(works, cpu, seconds=seconds)
    formula_add = costmodel.estimate_op(add, cpu)
    assert e.measured_ops == 1 and e.measured_s == pytest.approx(40e-3)
    assert e.total_s == pytest.approx(40e-3 + 2e-6 + formula_add.total_s)
    carried = costmodel.carried_over(works, seconds, cpu, [add, lstm], gpu)
    assert carried[0] is None and carried[1] == pytest.approx(40e-3 / 10)  # 10x the rate
    # a backend with other kernels: halfway (geometrically) to the formula's own time
    other = costmodel.carried_over(works, seconds, cpu, [lstm], gpu, same_kernels=False)
    own = costmodel.kernel_s(lstm, gpu)
    assert own < other[0] < 40e-3 / 10
    assert other[0] == pytest.approx(math.sqrt(own * 40e-3 / 10))
    # the host's overhead is the step less its ops' time, measured where it was
    from ember.scheduling.plan import host_overhead
    from ember.scheduling.workload import Workload
    w = Workload(works, 0, 0, 0, True, "cpu", measured_s=50e-3, seconds=seconds)
    assert host_overhead(w) == pytest.approx(50e-3 - e.total_s)


def test_a_fused_backward_without_a_cost_counts_twice_its_forward(calibrated):
    """The CPU's whole-layer LSTM backward declares no cost: it is charged twice the
    forward layer's FLOPs and bytes, not nothing."""
    lstm = nn.LSTM(4, 8, batch_first=True)
    w = ember.plan(lstm, ember.randn(2, 6, 4), devices=["cpu"]).workload
    forward = next(x for x in w.works if x.op == "_fused_lstm_layer")
    backward = next(x for x in w.works if x.op == "_fused_lstm_layer_backward")
    assert forward.flops > 0
    assert (backward.flops, backward.bytes) == (2 * forward.flops, 2 * forward.bytes)


def test_calibration_interleaves_its_sizes_and_keeps_matmul_rates_rising(calibrated):
    """A burst of other work must not land on every round of one size: each size's best
    is over rounds interleaved with the others'; a larger matmul is never taken as
    slower a FLOP than a smaller one."""
    calls = []
    best = calibration._best_times({"a": lambda: calls.append("a"),
                                    "b": lambda: calls.append("b")}, lambda: None, 0.0)
    assert set(best) == {"a", "b"} and all(0 < s < 1e-3 for s in best.values())
    timed = calls[4:]  # after each one's two warm-up calls
    assert timed[0] == "a" and "b" in timed and timed[-1] == "b" and "a" in timed[-2::-1]
    for t in calibrated.values():
        rates = [t.matmul_gflops[n] for n in sorted(t.matmul_gflops)]
        assert rates == sorted(rates)


def test_history_replaces_the_formula_once_measured_enough():
    t = given(CPU, launch=1e-5, matmul=100)
    h = costmodel.History()
    w = OpWork("matmul", "f32[8,8],f32[8,8]", 1024.0, 768.0)
    for seconds in (3e-3, 1e-3):
        h.record(w.op, w.signature, "cpu", seconds)
    assert costmodel.estimate_op(w, t, h).measured_ops == 0  # two samples: not yet
    h.record(w.op, w.signature, "cpu", 2e-3)
    e = costmodel.estimate_op(w, t, h)
    assert (e.measured_ops, e.measured_s, e.total_s) == (1, 2e-3, 2e-3)
    h.save()
    assert costmodel.History.load().lookup(w.op, w.signature, "cpu") == 2e-3
    costmodel.History.path().write_text("{not json")
    assert len(costmodel.History.load()) == 0  # a corrupt history is dropped


def test_out_of_memory_falls_back_with_a_warning_naming_both():
    tried = []

    def place(device):
        tried.append(str(device))
        if device == GPU:
            raise MemoryError("out of memory allocating 4.0 GiB")
        return device

    scheduler.record(GPU, [GPU, CPU])
    with pytest.warns(ResourceWarning, match=r"out of memory on fastgpu:0 .*falls back to cpu"):
        assert scheduler.with_fallback(place) == CPU
    assert tried == ["fastgpu:0", "cpu"]
    assert scheduler.chosen() == CPU  # the program now agrees with the fallback

    def fails(device):
        raise ValueError("not a memory problem")
    with pytest.raises(ValueError, match="not a memory problem"):
        scheduler.with_fallback(fails)


def test_is_out_of_memory_recognises_device_errors():
    class OutOfMemoryError(Exception):
        pass
    assert scheduler.is_out_of_memory(MemoryError())
    assert scheduler.is_out_of_memory(ember.OutOfMemoryError("cuda:0: 4.0 GiB asked, 1.0 "
                                                             "GiB free"))
    assert scheduler.is_out_of_memory(OutOfMemoryError("Out of memory allocating 1 bytes"))
    assert scheduler.is_out_of_memory(RuntimeError("clEnqueue: MEM_OBJECT_ALLOCATION_FAILURE"))
    assert not scheduler.is_out_of_memory(RuntimeError("shape mismatch"))


# -- the trait cache --------------------------------------------------------------------

def test_traits_round_trip_and_reject_nonsense():
    t = given(GPU, launch=2e-5, h2d=12.5)
    assert traits.DeviceTraits.from_json(json.loads(json.dumps(t.to_json()))) == t
    cpu = given(CPU)
    assert math.isinf(traits.DeviceTraits.from_json(cpu.to_json()).h2d_gbs)
    for bad in ({**t.to_json(), "launch_s": -1.0}, {**t.to_json(), "format": 99},
                {k: v for k, v in t.to_json().items() if k != "matmul_gflops"},
                {**t.to_json(), "elementwise_gbs": {}}):
        with pytest.raises(ValueError):
            traits.DeviceTraits.from_json(bad)


def test_matmul_rate_interpolates_between_measured_sizes():
    t = traits.DeviceTraits("cpu", "k", 1e-6, 0.0, {64: 10.0, 1024: 100.0}, 1.0, {1: 1.0},
                            math.inf, math.inf, None)
    assert t.matmul_rate(2.0 * 64 ** 3) == pytest.approx(10e9)
    assert t.matmul_rate(2.0 * 1024 ** 3) == pytest.approx(100e9)
    assert t.matmul_rate(1.0) == pytest.approx(10e9)  # flat beyond the ends
    mid = t.matmul_rate(2.0 * 256 ** 3)
    assert 10e9 < mid < 100e9


def test_calibration_measures_every_device_and_caches_it(calibrated):
    assert set(calibrated) == set(ALL_DEVICES)
    for name, t in calibrated.items():
        assert t.measured and t.key == traits.device_key(Device(name))
        assert 0 < t.launch_s < 0.1 and all(g > 0 for g in t.matmul_gflops.values())
        assert sorted(t.matmul_gflops) == list(traits_sizes())
        on_disk = json.loads(traits.cache_file(Device(name)).read_text())
        assert on_disk["key"] == t.key and on_disk["format"] == traits.FORMAT
    assert math.isinf(calibrated["cpu"].h2d_gbs)
    if "opencl:0" in calibrated:
        assert 0 < calibrated["opencl:0"].h2d_gbs < math.inf
    calibration.forget()
    assert calibration.traits_of("cpu", calibrate=False).launch_s == calibrated["cpu"].launch_s


def traits_sizes():
    from ember.core import calibration
    return calibration.MATMUL_SIZES


def test_a_corrupt_cache_is_measured_again(calibrated):
    path = traits.cache_file(CPU)
    good = path.read_text()
    try:
        path.write_text('{"format": 1, "device": "cpu", "launch_s": "fast"')
        with pytest.warns(UserWarning, match=r"trait cache .* is corrupt .*measuring cpu again"):
            t = calibration.traits_of("cpu", progress=False)
        assert t.measured and json.loads(path.read_text())["key"] == t.key  # rewritten
        # another device or driver under the same name: not trusted either
        path.write_text(json.dumps({**json.loads(good), "key": "cpu: another CPU"}))
        assert traits.load(CPU) is None
    finally:
        path.write_text(good)


def test_unwritable_cache_uses_defaults_and_says_so_once(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("EMBER_CACHE_DIR", str(blocker / "cache"))  # cannot be created
    with pytest.warns(UserWarning, match="cannot write the device-trait cache") as caught:
        t = calibration.traits_of("cpu")
    assert not t.measured and len(caught) == 1
    calibration._memo.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: not again
        assert not calibration.traits_of("cpu").measured


# -- ember.plan on the devices here ----------------------------------------------------

def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))


def test_plan_estimates_every_device_and_explains(calibrated):
    model = _mlp()
    x = ember.randn(16, 32)
    before = [p.detach().clone() for p in model.parameters()]
    plan = ember.plan(model, x, devices=ALL_DEVICES, probe=False)
    assert isinstance(plan, ember.Plan)
    assert {str(o.device) for o in plan.candidates} == set(ALL_DEVICES)
    totals = [o.estimate.total_s for o in plan.candidates]
    assert totals == sorted(totals) and all(s > 0 for s in totals)
    w = plan.workload
    # forward: 2 linear + relu (+ the sum standing for the loss); backward: fused linear
    # backward x2, relu backward, and the loss's gradient; optimizer: SGD's step as the
    # CPU runs it, one fused kernel over the 4 parameters (a launch per tensor)
    assert [x.op for x in w.works if x.phase == "forward"] == ["linear", "relu", "linear",
                                                                "sum"]
    assert w.count("backward") >= 3
    assert [(x.op, x.launches) for x in w.works if x.phase == "optimizer"] == \
        [("_fused_sgd_", 4)]
    flops = 2 * 16 * (32 * 64 + 64 * 10)
    assert flops < w.flops < 5 * flops
    params = sum(p.numel() * 4 for p in model.parameters())
    assert plan.memory_needed >= 3 * params + x.numel() * 4
    # the host's own work, measured once, is the same on every device
    assert w.measured_s > 0 and len({o.estimate.host_s for o in plan.candidates}) == 1
    from ember.core import plugins
    for o in plan.candidates:
        assert o.estimate.ops == len(w.works_for(plugins.get_backend(o.device.type).kernels))
        assert (o.estimate.transfer_s > 0) == (o.device.type != "cpu")
    # the model was not changed: weights as before, no gradients left behind, no hooks
    from ember.core import interpose
    assert interpose.active is None and interpose.backward_active is None
    assert all(np.array_equal(a.numpy(), b.detach().numpy()) for a, b in zip(before,
                                                                     model.parameters()))
    assert all(p.grad is None for p in model.parameters())
    text = str(plan)
    assert text.startswith(f"Plan: run on {plan.device}")
    for word in ("estimate", "compute", "memory", "launches", "transfers", "free memory",
                 "chosen", "memory needed"):
        assert word in text
    assert plan.reasons and all(r in text for r in plan.reasons)
    with pytest.raises(KeyError, match="cuda:3 was not a candidate"):
        plan.estimate("cuda:3")


def test_plan_for_inference_records_no_backward(calibrated):
    plan = ember.plan(_mlp(), ember.randn(4, 32), training=False, devices=["cpu"])
    assert plan.workload.count("backward") == plan.workload.count("optimizer") == 0
    assert plan.device == CPU


def test_the_choice_is_recorded_and_auto_agrees(calibrated):
    given(CPU, launch=5e-6, matmul=0.1, bw=0.1)  # a very slow CPU, so the other one wins
    given(Device("countdev", 0), launch=1e-6, matmul=100_000, bw=1000, h2d=1000)
    plan = ember.plan(_mlp(), ember.randn(256, 32), devices=["cpu", "countdev:0"],
                      probe=False)
    assert plan.device == Device("countdev", 0) and scheduler.chosen() == plan.device
    assert ember.zeros(3, device="auto").device == plan.device
    model = _mlp().to("auto")
    assert all(p.device == plan.device for p in model.parameters())
    ember.set_default_device("auto")
    assert ember.randn(2, 2).device == plan.device
    assert ember.get_default_device() == plan.device


def test_auto_without_a_plan(calibrated):
    # here "auto" may choose only the CPU (PoCL is a CPU device; countdev no accelerator)
    only_cpu = scheduler.candidate_devices() == [CPU]
    t = ember.ones(1000, 1000, device="auto")
    assert t.device == scheduler.chosen()
    if only_cpu:
        assert t.device == CPU
    m = _mlp().to("auto")
    assert next(m.parameters()).device == t.device  # the program agrees with the choice


def test_model_to_auto_falls_back_when_the_device_runs_out_of_memory(calibrated):
    """A real backend whose memory is too small for the model: moving it there fails, and
    ember moves it to the next device instead, saying so."""
    from ember.backends.cpu import CPUBackend
    from ember.core import plugins

    class TinyMemory(CPUBackend):
        name = "tinymem"
        is_accelerator = True

        def from_numpy(self, array, device):
            if array.nbytes > 1024:
                raise MemoryError(f"tinymem: out of memory allocating {array.nbytes} bytes")
            return np.array(array, copy=True)

    backend = TinyMemory()
    backend.kernels = dict(plugins.get_backend("cpu").kernels)
    plugins.registry.backends["tinymem"] = backend
    try:
        given(CPU, launch=5e-6, matmul=100)
        given(Device("tinymem", 0), launch=1e-6, matmul=100_000, bw=1000, h2d=1000)
        model = _mlp()
        with pytest.warns(ResourceWarning, match=r"out of memory on tinymem:0 .*falls back "
                                                 r"to cpu"):
            model.to("auto")
        assert all(p.device == CPU for p in model.parameters())
        assert scheduler.chosen() == CPU
        assert ember.zeros(2, device="auto").device == CPU
    finally:
        del plugins.registry.backends["tinymem"]


def test_plan_estimate_is_in_the_right_range_on_the_cpu(calibrated):
    """A coarse check that runs everywhere: the estimate of a real step is within 20x of
    its measured time on the CPU (the machine may be loaded; the 2x check is the long
    test's). It catches unit slips and missing phases."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    import bench_scheduler as bench

    model = _mlp()
    estimate = ember.plan(model, ember.randn(64, 32), devices=["cpu"]).estimate("cpu").total_s
    measured = bench.measure_step(model, (64, 32), 10, "cpu", repeat=3, budget_s=0.2)
    assert measured / 20 < estimate < measured * 20


@pytest.mark.long
def test_plan_matches_measurements_long(calibrated):
    """The issue's measured goals, on every device here: the estimate within 2x of the
    measured step for the MLP, CNN, LSTM and tiny MLP; and on the 12-cell grid, "auto"
    picks the measured fastest in >= 90% of the cells, never > 1.2x slower."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    import bench_scheduler as bench

    off = [(name, d, est, meas) for name, d, est, meas in bench.accuracy(ALL_DEVICES)
           if not meas / 2 <= est <= meas * 2]
    rows = bench.grid(ALL_DEVICES)  # both parts measured, whichever misses its goal
    share, worst = bench.grid_score(rows)
    assert not off, f"estimates off by more than 2x: {off}; grid: {share:.0%}, {worst:.2f}x"
    assert len(rows) >= 12 and share >= 0.9 and worst <= 1.2, (share, worst, rows)


# -- the command line -------------------------------------------------------------------

def test_cli_explain_prints_the_plan(calibrated, tmp_path, capsys):
    from ember import cli

    spec = tmp_path / "models.py"
    spec.write_text("import ember.nn as nn\n\ndef mlp():\n"
                    "    return nn.Sequential(nn.Linear(20, 30), nn.ReLU(), nn.Linear(30, 5))\n")
    assert cli.main(["devices", "--explain", f"{spec}:mlp", "--input-shape", "8,20"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Plan: run on ") and "training step" in out
    assert cli.main(["devices", "--explain", f"{spec}:mlp", "--input-shape", "8,20",
                     "--inference"]) == 0
    assert "forward pass" in capsys.readouterr().out
    assert cli.main(["devices", "--explain", f"{spec}:mlp"]) == 2
    assert "needs --input-shape" in capsys.readouterr().err
    assert cli.main(["devices", "--explain", f"{spec}:mlp", "--input-shape", "8,x"]) == 2
    assert "'x' is not an integer" in capsys.readouterr().err
    assert cli.main(["devices", "--explain", f"{spec}:mlp", "--input-shape", "8,21"]) == 1
    err = capsys.readouterr().err
    assert "running Sequential on an input of shape [8, 21] failed" in err


def test_cli_devices_shows_traits(calibrated, capsys):
    from ember import cli

    assert cli.main(["devices"]) == 0
    out = capsys.readouterr().out
    assert out.count("traits: op latency") == len(ALL_DEVICES)
    assert "matmul GFLOP/s" in out and "elementwise GB/s" in out
    assert cli.main(["devices", "--explain"]) == 0
    assert "device='auto'" in capsys.readouterr().out


def test_each_device_is_estimated_with_the_fused_kernels_it_has(calibrated):
    """The CPU runs a whole LSTM layer in one kernel; OpenCL runs it step by step: the
    plan records the step both ways and estimates each device with its own ops."""
    if "opencl:0" not in ALL_DEVICES:
        pytest.skip("OpenCL is not available here")
    from ember.core import plugins

    class Tail(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 8, batch_first=True)

        def forward(self, x):
            return self.lstm(x)[0]

    cpu_kernels = plugins.get_backend("cpu").kernels
    assert "lstm_layer" in cpu_kernels
    assert "lstm_layer" not in plugins.get_backend("opencl").kernels
    before = dict(cpu_kernels)
    plan = ember.plan(Tail(), ember.randn(2, 6, 4), devices=["cpu", "opencl:0"],
                      probe=False)
    assert plugins.get_backend("cpu").kernels == before  # every kernel offered again
    cpu_ops = [w.op for w in plan.workload.works_for(cpu_kernels)]
    cl_ops = [w.op for w in plan.workload.works_for(plugins.get_backend("opencl").kernels)]
    assert "_fused_lstm_layer" in cpu_ops and "_fused_lstm_layer" not in cl_ops
    assert cl_ops.count("_fused_lstm_cell") == 6  # one a time step
    assert plan.estimate("opencl:0").ops == len(cl_ops) > plan.estimate("cpu").ops


def test_a_short_step_is_recorded_on_each_device(calibrated):
    """Where a step is estimated short on another device, the plan runs it there on a
    copy of the model: that device's estimate comes from its own op and host times (its
    dispatch path, its allocator), not the first device's carried over."""
    import ember_plugin_example

    model = _mlp()
    x = ember.randn(16, 32)
    before = [p.detach().clone() for p in model.parameters()]
    calls = sum(ember_plugin_example.calls.values())
    plan = ember.plan(model, x, devices=["cpu", "countdev:0"])
    by_device = {o.device: o for o in plan.candidates}
    # both are estimated as the step timed on them: measurement against measurement
    assert by_device[Device("countdev", 0)].probed and by_device[CPU].probed
    assert by_device[CPU].estimate.measured_s == plan.workload.measured_s
    assert sum(ember_plugin_example.calls.values()) > calls  # countdev ran the step
    assert "step recorded there" in str(plan)
    assert all(p.device == CPU and p.grad is None for p in model.parameters())
    assert all(np.array_equal(a.numpy(), b.detach().numpy())
               for a, b in zip(before, model.parameters()))
    assert not any(o.probed for o in ember.plan(model, x, devices=["cpu", "countdev:0"],
                                                probe=False).candidates)
    # what cannot be copied to the device (a plain function) keeps the carried estimate
    plain = ember.plan(lambda t: model(t), x, devices=["cpu", "countdev:0"])
    assert [str(o.device) for o in plain.candidates if o.probed] == ["cpu"]


def test_profiler_times_refine_the_plan(calibrated):
    """ember.scheduling.learn feeds the profiler's op times into the history; the plan
    then uses them for the ops measured (three samples or more)."""
    model = _mlp()
    x = ember.randn(16, 32)
    with ember.profiler.profile(record_shapes=True) as prof:
        for _ in range(3):
            model(x).sum().backward()
    history = ember.scheduling.learn(prof, costmodel.History(), save=False)
    key = "cpu|linear|float32[16, 32],float32[64, 32],float32[64]"
    assert len(history.samples[key]) == 3 and all(t > 0 for t in history.samples[key])
    assert not any("|sequential|" in k.lower() for k in history.samples)  # modules: no
    plan = ember.plan(model, x, devices=["cpu"], history=history)
    e = plan.estimate("cpu")
    assert e.measured_ops >= 4 and e.measured_s > 0  # both linears, relu, sum at least
    assert "measured" in str(plan)
    ember.scheduling.learn(prof)  # the saved history, by default
    try:
        assert costmodel.History.load().lookup("linear", key.split("|")[2], "cpu") > 0
    finally:
        costmodel.History.path().unlink()  # later plans of this session start unrefined


def test_cli_calibrate_needs_a_writable_cache(tmp_path, monkeypatch, capsys):
    from ember import cli

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("EMBER_CACHE_DIR", str(blocker / "cache"))
    assert cli.main(["devices", "--calibrate"]) == 1
    err = capsys.readouterr().err
    assert "cannot write the trait cache folder" in err and "EMBER_CACHE_DIR" in err


def test_withholding_fused_kernels_is_per_thread() -> None:
    """Recording another backend's ops declines fused kernels in the recording thread only;
    the backend's table is not touched, so other threads keep their fused kernels."""
    import threading

    from ember.core import dispatch

    x = ember.randn(4, 5)
    backend = x._backend
    assert "_foreach_neg" in backend.kernels
    table = dict(backend.kernels)
    seen = {}

    def other_thread() -> None:
        seen["other"] = dispatch.run_fused("_foreach_neg", [x]) is not None

    with dispatch.withholding_fused(frozenset({"_foreach_neg"})):
        seen["here"] = dispatch.run_fused("_foreach_neg", [x]) is not None
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
    assert seen == {"here": False, "other": True}
    assert backend.kernels == table
    assert dispatch.run_fused("_foreach_neg", [x]) is not None
