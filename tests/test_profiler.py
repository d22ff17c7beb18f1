"""ember.profiler against torch.profiler: the events a forward and backward record (names,
nesting, shapes, FLOPs, memory), schedules and steps, the Chrome trace, the TensorBoard
handler, the summary table, record_function, the global module hooks, OpenCL device
times, and what stopping, stepping and bad schedules do."""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
import time
import warnings

import pytest

import ember
from ember import nn
from ember.core import interpose
from ember.profiler import (
    DeviceType,
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def _by_name(events, name):
    return [e for e in events if e.name == name]


def _ancestors(e):
    out = []
    while e.cpu_parent is not None:
        e = e.cpu_parent
        out.append(e.name)
    return out


@pytest.fixture
def mlp_profile():
    ember.manual_seed(0)
    model = MLP()
    x = ember.randn(3, 4)
    with profile(record_shapes=True, with_flops=True) as prof:
        loss = model(x).sum()
        loss.backward()
    return prof


# -- what a forward and backward record -----------------------------------------------------


def test_forward_events_nest_inside_their_module_ranges(mlp_profile):
    events = mlp_profile.events()
    root = _by_name(events, "nn.Module: MLP")
    assert len(root) == 1 and root[0].cpu_parent is None
    for child in ("fc1", "act", "fc2"):
        (module,) = _by_name(events, f"nn.Module: MLP.{child}")
        assert module.cpu_parent is root[0]
        assert module.is_python_function
    linears = _by_name(events, "ember::linear")
    assert [e.cpu_parent.name for e in linears] == ["nn.Module: MLP.fc1", "nn.Module: MLP.fc2"]
    (relu,) = _by_name(events, "ember::relu")
    assert _ancestors(relu) == ["nn.Module: MLP.act", "nn.Module: MLP"]
    (total,) = _by_name(events, "ember::sum")
    assert total.cpu_parent is None  # called outside the model
    for e in events:  # every child lies inside its parent, on its thread
        if e.cpu_parent is not None:
            p = e.cpu_parent
            assert p.time_range.start <= e.time_range.start <= e.time_range.end \
                <= p.time_range.end
            assert p.thread == e.thread
            assert e in p.cpu_children
        assert e.self_cpu_time_total <= e.cpu_time_total + 1e-9


def test_backward_records_torchs_node_names_with_their_ops_inside(mlp_profile, torch):
    events = mlp_profile.events()
    nodes = {e.name for e in events if e.scope == 1}
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as tp:
        model(torch.randn(3, 4)).sum().backward()
    torch_nodes = {e.name for e in tp.events() if e.name.endswith("Backward0")}
    shared = {"AddmmBackward0", "ReluBackward0", "SumBackward0"}
    assert shared <= torch_nodes and shared <= nodes  # (torch's linear also has a TBackward0)
    # one per parameter, under PyTorch's name of the node
    assert len(_by_name(events, "ember::autograd::AccumulateGrad")) == 4
    (sum_backward,) = _by_name(events, "SumBackward0")
    assert sum_backward.cpu_children  # its formula's ops (expand ...) run inside it
    assert all(c.name.startswith("ember::") for c in sum_backward.cpu_children)
    # backward runs after the forward
    (fwd_sum,) = _by_name(events, "ember::sum")
    assert sum_backward.time_range.start >= fwd_sum.time_range.end


def test_composite_ops_hold_the_ops_they_call():
    a, b = ember.randn(3, 4), ember.randn(4, 5)
    with profile() as prof:
        ember.mm(a, b)
    (mm,) = _by_name(prof.events(), "ember::mm")
    assert [c.name for c in mm.cpu_children] == ["ember::matmul"]
    assert mm.self_cpu_time_total == pytest.approx(
        mm.cpu_time_total - mm.cpu_children[0].cpu_time_total)


def test_matmul_flops_are_2mnk_and_shapes_are_recorded():
    M, K, N = 6, 5, 7
    a, b, c = ember.randn(M, K), ember.randn(K, N), ember.randn(M, N)
    with profile(record_shapes=True, with_flops=True) as prof:
        ember.matmul(a, b)
        a @ b
        c + c
        c.add_(1.0)
        ember.matmul(ember.randn(2, M, K), b)
    events = prof.events()
    products = _by_name(events, "ember::matmul")
    assert [e.flops for e in products] == [2 * M * N * K] * 2 + [2 * 2 * M * N * K]
    assert products[0].input_shapes == [[M, K], [K, N]]
    assert products[0].input_dtypes == ["float32", "float32"]
    (add,) = _by_name(events, "ember::add")
    assert add.input_shapes == [[M, N], [M, N]] and add.flops == M * N
    (add_,) = _by_name(events, "ember::add_")  # the in-place variant has its own name
    assert add_.input_shapes == [[M, N], []] and add_.input_dtypes == ["float32", "Scalar"]
    grouped = prof.key_averages(group_by_input_shape=True)
    rows = {(e.key, str(e.input_shapes)): e for e in grouped}
    assert rows[("ember::matmul", str([[M, K], [K, N]]))].count == 2
    assert rows[("ember::matmul", str([[M, K], [K, N]]))].flops == 2 * 2 * M * N * K
    assert rows[("ember::matmul", str([[2, M, K], [K, N]]))].count == 1
    plain = {e.key: e for e in prof.key_averages()}
    assert plain["ember::matmul"].count == 3 and plain["ember::matmul"].input_shapes == ""


def test_without_the_options_nothing_extra_is_recorded():
    a = ember.randn(3, 3)
    with profile() as prof:
        a @ a
    (e,) = _by_name(prof.events(), "ember::matmul")
    assert e.input_shapes is None and e.flops == 0 and e.stack is None
    assert e.device == "cpu"


def test_an_op_that_raises_is_recorded_and_the_stack_unwinds():
    with profile() as prof:
        with pytest.raises(RuntimeError):
            ember.ones(2, 3) @ ember.ones(2, 3)
        ember.ones(2) + 1
    events = prof.events()
    (bad,) = _by_name(events, "ember::matmul")
    (add,) = _by_name(events, "ember::add")
    assert add.cpu_parent is None and bad.time_range.end <= add.time_range.start


def test_with_stack_records_the_callers_file_and_line():
    a = ember.ones(2)
    with profile(with_stack=True, with_modules=True) as prof:
        a.exp()
        MLP()(ember.ones(1, 4))
    (exp,) = _by_name(prof.events(), "ember::exp")
    assert exp.stack and os.path.basename(__file__) in exp.stack[0]
    assert re.fullmatch(r".*\(\d+\): test_with_stack_records_the_callers_file_and_line",
                        exp.stack[0])
    assert not any("ember/core" in s or "ember/profiler" in s for s in exp.stack)
    (relu,) = _by_name(prof.events(), "ember::relu")
    assert relu.module_hierarchy == "MLP.act"
    by_stack = prof.key_averages(group_by_stack_n=1)
    assert any(e.key == "ember::exp" and len(e.stack) == 1 for e in by_stack)


# -- schedules and steps --------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [
    dict(wait=1, warmup=1, active=2),
    dict(wait=1, warmup=1, active=2, repeat=2),
    dict(wait=0, warmup=0, active=1, repeat=3),
    dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3),
    dict(wait=3, warmup=1, active=1, skip_first=2, skip_first_wait=1),
])
def test_schedule_matches_torchs_action_sequence(torch, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warmup=0 warns, in both
        ours, theirs = schedule(**kwargs), torch.profiler.schedule(**kwargs)
    assert [ours(i).name for i in range(30)] == [theirs(i).name for i in range(30)]
    assert {a.name: a.value for a in ProfilerAction} == \
        {a.name: a.value for a in torch.profiler.ProfilerAction if a.name != "DEVICE_STOPPED"}


@pytest.mark.parametrize("bad", [dict(wait=-1, warmup=1, active=1),
                                 dict(wait=0, warmup=-2, active=1),
                                 dict(wait=0, warmup=0, active=0),
                                 dict(wait=0, warmup=1, active=1, repeat=-1),
                                 dict(wait=0, warmup=1, active=1, skip_first=-3)])
def test_a_schedule_with_negative_counts_raises_like_torchs(torch, bad):
    with pytest.raises(ValueError, match="Invalid profiler schedule arguments"):
        schedule(**bad)
    with pytest.raises(AssertionError) as ours:
        schedule(**bad)
    with pytest.raises(AssertionError) as theirs:
        torch.profiler.schedule(**bad)
    assert str(ours.value) == str(theirs.value)
    assert interpose.active is None


def _run_steps(lib, prof, n):
    for i in range(n):
        with lib.profiler.record_function(f"work{i}"):
            lib.ones(2) + 1
        prof.step()


def test_schedule_records_the_same_steps_as_torch(torch):
    def cycles(lib):
        seen = []

        def ready(p):
            seen.append((p.step_num, sorted(e.name for e in p.events()
                                            if e.name.startswith("work"))))
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                                  schedule=lib.profiler.schedule(wait=1, warmup=1, active=2,
                                                                 repeat=2),
                                  on_trace_ready=ready) as prof:
            _run_steps(lib, prof, 10)
        return seen

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = cycles(torch)
    ours = cycles(ember)
    assert ours == theirs == [(4, ["work2", "work3"]), (8, ["work6", "work7"])]


def test_steps_are_ranges_and_a_cycle_ending_at_stop_is_ready():
    seen = []
    with profile(schedule=schedule(wait=0, warmup=1, active=3),
                 on_trace_ready=lambda p: seen.append(p.step_num)) as prof:
        _run_steps(ember, prof, 3)  # steps 1 and 2 record; stop ends the cycle
    assert seen == [3]
    steps = [e for e in prof.events() if e.name == "ProfilerStep*"]
    assert [e.trace_name for e in steps] == ["ProfilerStep#1", "ProfilerStep#2",
                                             "ProfilerStep#3"]
    (work1,) = _by_name(prof.events(), "work1")
    assert work1.cpu_parent.trace_name == "ProfilerStep#1"


def test_acc_events_keeps_every_cycle():
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2),
                 acc_events=True) as prof:
        _run_steps(ember, prof, 5)
    names = sorted(e.name for e in prof.events() if e.name.startswith("work"))
    assert names == ["work1", "work3"]


def test_stopping_twice_and_stepping_a_stopped_profile_do_not_crash():
    ready = []
    prof = profile(on_trace_ready=lambda p: ready.append(1))
    with pytest.raises(RuntimeError, match="initialized"):
        prof.key_averages()
    prof.start()
    ember.ones(2) + 1
    prof.stop()
    prof.stop()  # nothing more
    prof.step()  # only the step number advances
    assert prof.step_num == 1 and ready == [1]
    assert len(_by_name(prof.events(), "ember::add")) == 1
    with record_function("after"):  # a cheap no-op now
        ember.ones(2) * 2
    assert interpose.active is None and interpose.backward_active is None
    assert not _by_name(prof.events(), "after")


def test_a_schedule_that_raises_changes_nothing():
    def bad(step):
        if step == 2:
            raise ValueError("no step 2")
        return ProfilerAction.RECORD
    with profile(schedule=bad) as prof:
        prof.step()
        with pytest.raises(ValueError):
            prof.step()
        assert prof.step_num == 1 and prof.current_action is ProfilerAction.RECORD


def test_profiles_do_not_overlap():
    second = profile()
    with profile():
        with pytest.raises(RuntimeError, match="already recording"):
            second.start()
    second.stop()  # it never started: nothing to stop
    assert interpose.active is None
    with second:  # and it can start once the other is done
        ember.ones(1) + 1
    assert _by_name(second.events(), "ember::add")


# -- the Chrome trace and TensorBoard -------------------------------------------------------


def _check_nesting(trace_events):
    """Complete events on one thread nest: each lies inside the one it starts in."""
    complete = [e for e in trace_events if e["ph"] == "X"]
    threads = {}
    for e in complete:
        threads.setdefault((e["pid"], e["tid"]), []).append(e)
    for events in threads.values():
        stack = []
        for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + 1e-6:
                stack.pop()
            if stack:
                top = stack[-1]
                assert e["ts"] + e["dur"] <= top["ts"] + top["dur"] + 1e-6, (e, top)
            stack.append(e)


def test_chrome_trace_is_valid_and_nested(mlp_profile, tmp_path):
    path = tmp_path / "trace.json"
    mlp_profile.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert isinstance(trace["traceEvents"], list) and isinstance(trace["baseTimeNanoseconds"],
                                                                 int)
    assert trace["record_shapes"] == 1 and trace["with_flops"] == 1
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    for e in complete:
        assert {"name", "cat", "ts", "dur", "pid", "tid", "args"} <= e.keys()
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
    names = {e["name"] for e in complete}
    assert {"nn.Module: MLP", "nn.Module: MLP.fc1", "ember::linear", "ember::relu",
            "AddmmBackward0", "ember::autograd::AccumulateGrad"} <= names
    _check_nesting(trace["traceEvents"])
    by_name = {}
    for e in complete:
        by_name.setdefault(e["name"], e)  # the first of each name
    linear = by_name["ember::linear"]
    fc = [e for e in complete if e["name"] == "nn.Module: MLP.fc1"][0]
    assert fc["ts"] <= linear["ts"] and linear["ts"] + linear["dur"] <= fc["ts"] + fc["dur"]
    assert linear["cat"] == "cpu_op" and fc["cat"] == "python_function"
    assert linear["args"]["Input Dims"] == [[3, 4], [8, 4], [8]]
    assert linear["args"]["flops"] == 2 * 3 * 4 * 8 + 3 * 8
    assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in trace["traceEvents"])
    # the events' own times, in the same microseconds
    evt = _by_name(mlp_profile.events(), "ember::relu")[0]
    relu = by_name["ember::relu"]
    assert relu["ts"] == pytest.approx(evt.time_range.start, abs=1e-3)
    gz = tmp_path / "trace.json.gz"
    mlp_profile.export_chrome_trace(str(gz))
    assert json.loads(gzip.open(gz).read())["traceEvents"] == trace["traceEvents"]


def test_tensorboard_trace_handler_writes_one_file_per_cycle(tmp_path):
    logdir = tmp_path / "log"
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2),
                 on_trace_ready=tensorboard_trace_handler(str(logdir), worker_name="w1")
                 ) as prof:
        _run_steps(ember, prof, 5)
    files = sorted(os.listdir(logdir))
    assert len(files) == 2 and all(re.fullmatch(r"w1\.\d+\.pt\.trace\.json", f) for f in files)
    for f in files:
        trace = json.loads((logdir / f).read_text())
        assert any(e.get("name", "").startswith("ProfilerStep#") for e in trace["traceEvents"])
    gz = tmp_path / "gz"
    with profile(on_trace_ready=tensorboard_trace_handler(str(gz), use_gzip=True)):
        ember.ones(1) + 1
    (name,) = os.listdir(gz)
    assert re.fullmatch(rf"{re.escape(socket.gethostname())}_{os.getpid()}\.\d+"
                        r"\.pt\.trace\.json\.gz", name)
    json.loads(gzip.open(gz / name).read())


# -- the table ------------------------------------------------------------------------------


def _row(table, name):
    for line in table.splitlines():
        if line.strip().startswith(name + " "):
            return line.split()
    raise AssertionError(f"no row {name!r} in\n{table}")


def test_table_has_torchs_columns_op_names_and_call_counts(torch):
    a = ember.ones(8, 8)
    with profile(profile_memory=True, with_flops=True) as prof:
        for _ in range(3):
            a + a
        a @ a
        a @ a
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20)
    assert _row(table, "ember::add")[-2] == "3"  # # of Calls, then Total FLOPs
    assert _row(table, "ember::matmul")[-2] == "2"
    ta = torch.ones(8, 8)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                profile_memory=True, with_flops=True) as tp:
        ta @ ta
    theirs = tp.key_averages().table(row_limit=5)

    def header(t):
        return [h.strip() for h in re.split(r"\s{2,}", t.splitlines()[1].strip())]
    ours, torchs = header(table), header(theirs)
    assert ours[:-1] == torchs[:-1]  # then "Total <unit>FLOPs", scaled to the smallest row
    assert re.fullmatch(r"Total K?FLOPs", ours[-1]) and re.fullmatch(r"Total K?FLOPs",
                                                                     torchs[-1])
    assert table.splitlines()[-1].startswith("Self CPU time total: ")
    avg = {e.key: e for e in prof.key_averages()}["ember::matmul"]
    assert avg.count == 2 and avg.flops == 2 * 2 * 8 ** 3
    assert 0 < avg.self_cpu_time_total <= avg.cpu_time_total
    assert avg.cpu_time == pytest.approx(avg.cpu_time_total / 2)
    assert prof.key_averages().table(row_limit=1).count("ember::") == 1
    assert "This report only display top-level ops" in prof.events().table(
        top_level_events_only=True)


# -- record_function ------------------------------------------------------------------------


def test_record_function_as_context_manager_and_decorator():
    @record_function("my_fn")
    def f(x, depth):
        return f(x * 2, depth - 1) if depth else x + 1

    with profile() as prof:
        with record_function("outer"):
            f(ember.ones(2), 2)
    events = prof.events()
    (outer,) = _by_name(events, "outer")
    assert outer.is_user_annotation
    fns = _by_name(events, "my_fn")
    assert len(fns) == 3  # re-entrant: each call its own range
    assert [e.cpu_parent.name for e in fns] == ["outer", "my_fn", "my_fn"]
    (add,) = _by_name(events, "ember::add")
    assert _ancestors(add) == ["my_fn", "my_fn", "my_fn", "outer"]


def test_record_function_outside_a_profile_is_a_no_op():
    with record_function("nothing") as rf:
        y = ember.ones(2) + 1
    assert rf._open == [] and y.tolist() == [2.0, 2.0]
    assert interpose.active is None


# -- memory ---------------------------------------------------------------------------------


def test_profile_memory_counts_an_ops_output_and_its_release(tmp_path):
    with profile(profile_memory=True) as prof:
        with record_function("make"):
            t = ember.zeros(1000)  # float32: 4000 bytes
            v = t[10:20]  # a view: no new memory
        with record_function("free"):
            del t, v
    events = prof.events()
    (make,) = _by_name(events, "make")
    (free,) = _by_name(events, "free")
    assert make.cpu_memory_usage == 4000 and make.self_cpu_memory_usage == 0
    (zeros,) = _by_name(events, "ember::zeros")
    assert zeros.cpu_memory_usage == 4000  # (counted once, by the op that made it)
    assert free.cpu_memory_usage == -4000 and free.self_cpu_memory_usage == -4000
    table = prof.key_averages().table()
    assert "CPU Mem" in table and "Self CPU Mem" in table
    path = tmp_path / "m.json"
    prof.export_chrome_trace(str(path))
    memory = [e for e in json.loads(path.read_text())["traceEvents"] if e["name"] == "[memory]"]
    assert [m["args"]["Bytes"] for m in memory] == [4000, -4000]
    assert memory[0]["args"]["Device Type"] == 0 and memory[0]["ph"] == "i"


def test_in_place_ops_and_views_allocate_nothing():
    t = ember.ones(100)
    with profile(profile_memory=True) as prof:
        t.add_(1)
        t.view(10, 10)
        t.detach()
    assert all(e.cpu_memory_usage == 0 for e in prof.events())


# -- global module hooks --------------------------------------------------------------------


def _hooked_calls(lib, modules):
    calls = []

    def pre(module, args):
        calls.append(("pre", type(module).__name__))
        if isinstance(module, modules.Linear) and args[0].shape[-1] == 4:
            return args[0] * 0  # replaces the input (not a tuple: wrapped into one)

    def post(module, args, output):
        calls.append(("post", type(module).__name__))
        if isinstance(module, modules.ReLU):
            return output + 1  # replaces the output

    model = modules.Sequential(modules.Linear(4, 3), modules.ReLU(), modules.Linear(3, 2))
    own = model[1].register_forward_hook(lambda m, a, o: calls.append(("own", "ReLU")))
    h1 = lib.nn.modules.module.register_module_forward_pre_hook(pre)
    h2 = lib.nn.modules.module.register_module_forward_hook(post)
    try:
        lib.manual_seed(0)
        out = model(lib.ones(1, 4))
        h1.remove()
        h2.remove()
        h2.remove()  # a second remove does nothing
        model(lib.ones(1, 4))  # no global hook now
    finally:
        h1.remove()
        h2.remove()
        own.remove()
    expected = model[2](lib.ones(1, 3) * 0 + (model[0].bias.relu() + 1))
    assert float((out - expected).abs().max().detach()) < 1e-6
    return calls


def test_global_module_hooks_match_torchs(torch):
    ours = _hooked_calls(ember, ember.nn)
    theirs = _hooked_calls(torch, torch.nn)
    assert ours == theirs
    assert ours[:4] == [("pre", "Sequential"), ("pre", "Linear"), ("post", "Linear"),
                        ("pre", "ReLU")]
    assert ("own", "ReLU") in ours and ours.index(("post", "ReLU")) < ours.index(("own", "ReLU"))


def test_always_call_global_hook_runs_when_forward_raises():
    from ember.nn import module as module_mod

    seen = []
    handle = module_mod.register_module_forward_hook(
        lambda m, a, o: seen.append(type(m).__name__), always_call=True)
    try:
        with pytest.raises(RuntimeError):
            nn.Linear(3, 2)(ember.ones(1, 4))
    finally:
        handle.remove()
    assert seen == ["Linear"]
    nn.Linear(3, 2)(ember.ones(1, 3))  # the flag goes back down once the hooks are gone
    assert module_mod._global_hooks is False


def test_a_profile_leaves_no_hook_behind():
    from ember.nn import module as module_mod

    with profile():
        MLP()(ember.ones(1, 4))
    MLP()(ember.ones(1, 4))
    assert interpose.active is None and interpose.backward_active is None
    assert not module_mod._global_forward_pre_hooks and not module_mod._global_forward_hooks
    assert module_mod._global_hooks is False


# -- devices --------------------------------------------------------------------------------


def test_activities_have_torchs_names(torch):
    assert {a.name for a in torch.profiler.ProfilerActivity.__members__.values()} <= \
        {a.name for a in ProfilerActivity}
    supported = ember.profiler.supported_activities()
    from ember.core import plugins

    cuda = plugins.safe_unavailable_reason(plugins.get_backend("cuda")) is None
    assert ProfilerActivity.CPU in supported and (ProfilerActivity.CUDA in supported) == cuda


def test_a_device_activity_without_its_device_records_nothing():
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            ember.ones(2) + 1
    assert all(e.device_type is DeviceType.CPU for e in prof.events())
    assert "CUDA" not in prof.key_averages().table()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:  # no CPU: no op events
        ember.ones(2) + 1
    assert len(prof.events()) == 0


class _StretchTimer:
    """A backend whose device timing gives, at every call, the stretch of work queued since
    the last one (as CUDA's does: CuPy has no per-kernel callback)."""

    def __init__(self, name):
        self.name = name
        self.calls = 0

    def start_device_timing(self):
        return True

    def device_activities(self):
        from ember.core.backend import DeviceActivity

        self.calls += 1
        t = time.perf_counter_ns()
        return [DeviceActivity(None, 0, lambda: (t, t + 1000))]

    def stop_device_timing(self):
        pass


@pytest.mark.parametrize("cpu", [True, False])
def test_a_device_stretch_is_kept_only_where_an_op_ran_on_that_device(cpu):
    from ember.profiler import recorder

    # a backend named as the device the ops run on: the ops' stretches are its work
    on_cpu, elsewhere = _StretchTimer("cpu"), _StretchTimer("cuda")
    rec = recorder.Recorder(cpu=cpu, backends=[on_cpu, elsewhere])
    rec.start()
    x = ember.ones(3)
    if cpu:
        r = rec.enter_range("host only")  # a range with no op inside: no device work
        rec.exit_range(r)
    (x * 2).sum()
    rec.stop()
    events = rec.result().events
    assert on_cpu.calls and elsewhere.calls  # both were asked at every drain
    stretches = [e for e in events if e.device is not None and e.device.startswith(("cpu:",
                                                                                    "cuda:"))]
    assert stretches and all(e.device == "cpu:0" for e in stretches)
    if cpu:
        ops = {e.name for e in events if e.name.startswith("ember::")}
        # one per op (ones calls full: each its own stretch), none for the empty range
        assert sorted(k.name for k in stretches) == sorted(ops) and len(ops) == 4


def _opencl_or_skip():
    pytest.importorskip("pyopencl")
    from ember.core import plugins

    reason = plugins.safe_unavailable_reason(plugins.get_backend("opencl"))
    if reason is not None:
        pytest.skip(f"no usable OpenCL device: {reason}")


def test_opencl_kernels_are_timed_on_the_device(tmp_path):
    _opencl_or_skip()
    from ember.backends.opencl import runtime

    x = ember.randn(64, 64, device="opencl")
    (x @ x + 1).sum().item()  # builds the kernels before the profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.OPENCL]) as prof:
        y = x @ x
        z = (y + 1).sum()
        z.item()
    events = prof.events()
    kernels = [e for e in events if e.device_type is DeviceType.OPENCL]
    assert kernels and all(k.device == "opencl:0" and k.cpu_time_total == 0 for k in kernels)
    (matmul,) = _by_name(events, "ember::matmul")
    assert matmul.device == "opencl:0" and matmul.kernels
    own = [k for k in kernels if k.linked is matmul]
    assert matmul.device_time_total == pytest.approx(sum(k.time_range.elapsed_us()
                                                         for k in own))
    assert matmul.self_device_time_total > 0
    for k in own:  # a kernel runs after its launch, and within the profile
        assert k.time_range.start >= matmul.time_range.start - 1e-3
        assert k.time_range.elapsed_us() > 0
    table = prof.key_averages().table(sort_by="self_opencl_time_total")
    assert "Self OPENCL" in table and "OPENCL total" in table
    path = tmp_path / "cl.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    on_device = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert len(on_device) == len(kernels)
    flows = [e for e in trace["traceEvents"] if e.get("cat") == "ac2g"]
    assert len(flows) == 2 * len(kernels)
    _check_nesting(trace["traceEvents"])
    dev = runtime.device(0)
    assert dev.plain_queue is None and dev.queue is not dev.timed_queue  # back to normal
    assert (x + 1).sum().item() == pytest.approx(float((x + 1).cpu().sum()))


def test_opencl_memory_is_device_memory():
    _opencl_or_skip()
    with profile(profile_memory=True) as prof:
        t = ember.zeros(256, device="opencl")
    (zeros,) = _by_name(prof.events(), "ember::zeros")
    assert zeros.device_memory_usage == 1024 and zeros.cpu_memory_usage == 0
    del t


# -- the demo -------------------------------------------------------------------------------


def test_demo_profile_prints_one_training_steps_table():
    pytest.importorskip("sklearn")
    from ember import demo

    table = demo.profile_step(device="cpu", batch_size=8)
    for name in ("training step", "nn.Module: DigitsCNN", "ember::conv2d", "AccumulateGrad",
                 "Self CPU %", "Total "):
        assert name in table
    assert _row(table, "training step")[-2] == "1"


def test_device_kernels_that_overlap_go_on_separate_tracks():
    # PoCL's CPU device may report a kernel of an in-order queue starting before the one
    # before it ends: the trace must still nest on every track
    from types import SimpleNamespace

    from ember.profiler import trace as chrome

    def kernel(name, start_ns, end_ns):
        return SimpleNamespace(device_type=DeviceType.OPENCL, device="opencl:0",
                               device_index=0, trace_name=name, linked=None,
                               _ns=(start_ns, end_ns))

    events = [kernel("pack", 0, 2_500), kernel("micro", 650, 16_600),
              kernel("add", 17_000, 18_000)]
    out = chrome.build(events, pid=1)
    tracks = {e["name"]: e["tid"] for e in out["traceEvents"] if e["ph"] == "X"}
    assert tracks == {"pack": 0, "micro": 1, "add": 0}
    _check_nesting(out["traceEvents"])
