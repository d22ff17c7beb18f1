"""PyTorch API names that real programs touch and ember lacked (the surface brief):
device-probe modules, global switches, autograd graph utilities and small tensor
functions, each checked against PyTorch's own answer."""

from __future__ import annotations

import re
import warnings

import pytest

import ember
from ember.amp import autocast_mode
from ember.core import anomaly_mode, determinism, errors
from ember.core import dtype as dt


@pytest.fixture
def as_torch():
    """Print the API's name as PyTorch's, so messages compare word for word."""
    dt.set_api_name("torch")
    yield
    dt.set_api_name("ember")


def _same_error(torch_call, ember_call):
    """Both calls raise the same exception type with the same message."""
    with pytest.raises(Exception) as theirs:
        torch_call()
    with pytest.raises(type(theirs.value)) as ours:
        ember_call()
    assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------- device-probe modules

_PROBES = {
    "xpu": ["is_available()", "device_count()", "is_initialized()", "_is_compiled()",
            "manual_seed(0)", "manual_seed_all(0)", "seed()", "seed_all()", "empty_cache()",
            "memory_allocated()", "max_memory_allocated()", "memory_reserved()",
            "max_memory_reserved()", "is_bf16_supported()", "get_rng_state_all()",
            "synchronize()", "current_device()", "get_device_name()", "set_device(0)",
            "get_device_properties()", "initial_seed()", "get_rng_state()",
            "mem_get_info()", "init()", "device(1).idx", "Stream()", "Event()",
            "manual_seed('a')"],
    "mps": ["is_available()", "device_count()", "manual_seed(0)", "synchronize()",
            "empty_cache()", "seed()", "get_rng_state()", "current_allocated_memory()",
            "driver_allocated_memory()", "recommended_max_memory()",
            "set_per_process_memory_fraction(0.5)"],
    "mtia": ["is_available()", "device_count()", "is_initialized()", "manual_seed(0)",
             "manual_seed_all(0)", "seed()", "memory_allocated()", "max_memory_allocated()",
             "reset_peak_memory_stats()", "is_bf16_supported()", "synchronize()",
             "empty_cache()", "current_device()", "set_device(0)", "current_stream()",
             "get_device_capability()", "device(0).idx"],
}


def _outcome(module, call):
    try:
        return ("value", eval(f"m.{call}", {"m": module}))  # noqa: S307 - fixed probes
    except Exception as err:  # noqa: BLE001 - the outcome is what is compared
        return (type(err).__name__, str(err).split(". Ensure")[0])


@pytest.mark.parametrize("name", sorted(_PROBES))
def test_absent_device_modules_answer_as_torch_cpu_build(name, as_torch):
    torch = pytest.importorskip("torch")
    theirs, ours = getattr(torch, name), getattr(ember, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in _PROBES[name]:
            assert _outcome(ours, call) == _outcome(theirs, call), call


def test_device_context_managers_refuse_on_entry(as_torch):
    torch = pytest.importorskip("torch")
    for name in ("xpu", "mtia"):
        _same_error(lambda n=name: getattr(torch, n).device(0).__enter__(),
                    lambda n=name: getattr(ember, n).device(0).__enter__())
    with ember.xpu.stream(None), torch.xpu.stream(None):
        pass


def test_get_device_module_matches_torch(as_torch):
    torch = pytest.importorskip("torch")
    for arg in ("cpu", "cuda", "xpu", "mps:0", "mtia"):
        assert ember.get_device_module(arg).__name__ == "ember." + arg.split(":")[0]
        assert torch.get_device_module(arg).__name__ == "torch." + arg.split(":")[0]
    assert ember.get_device_module(ember.device("cpu")) is ember.cpu
    _same_error(lambda: torch.get_device_module(3), lambda: ember.get_device_module(3))
    _same_error(lambda: torch.get_device_module("meta"), lambda: ember.get_device_module("meta"))


def test_tensor_device_predicates_and_build_flags():
    torch = pytest.importorskip("torch")
    a, b = torch.zeros(2), ember.zeros(2)
    for name in ("is_xpu", "is_mtia", "is_ipu", "is_vulkan", "is_mkldnn", "is_nested",
                 "is_maia", "is_mps"):
        assert getattr(b, name) is getattr(a, name) is False, name
    assert ember.is_vulkan_available() is torch.is_vulkan_available() is False
    assert ember.has_lapack is ember.has_spectral is True
    with pytest.warns(UserWarning, match=re.escape("'has_mps' is deprecated, please use "
                                                   "'ember.backends.mps.is_built()'")):
        assert ember.has_mps is False


# ---------------------------------------------------------------- global switches

def test_warn_always_makes_warn_once_repeat(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(errors, "_warned", set())
    assert ember.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    _same_error(lambda: torch.set_warn_always(1), lambda: ember.set_warn_always(1))
    ember.set_warn_always(True)
    try:
        assert ember.is_warn_always_enabled() is True
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                errors.warn_once("surface: repeated")
        assert len(caught) == 2
    finally:
        ember.set_warn_always(False)


def test_deterministic_debug_mode_is_the_deterministic_flag(monkeypatch):
    torch = pytest.importorskip("torch")
    for name in ("_enabled", "_warn_only"):
        monkeypatch.setattr(determinism, name, getattr(determinism, name))
    for mode, expected in (("warn", 1), (2, 2), ("default", 0), (1, 1), ("error", 2)):
        ember.set_deterministic_debug_mode(mode)
        assert ember.get_deterministic_debug_mode() == expected
    assert ember.are_deterministic_algorithms_enabled() is True
    assert ember.is_deterministic_algorithms_warn_only_enabled() is False
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert ember.get_deterministic_debug_mode() == 1
    ember.use_deterministic_algorithms(False)
    assert ember.get_deterministic_debug_mode() == 0
    for bad in ("foo", 3, 1.0):
        _same_error(lambda b=bad: torch.set_deterministic_debug_mode(b),
                    lambda b=bad: ember.set_deterministic_debug_mode(b))


def test_set_anomaly_enabled(monkeypatch):
    torch = pytest.importorskip("torch")
    for name in ("_enabled", "_check_nan"):
        monkeypatch.setattr(anomaly_mode, name, getattr(anomaly_mode, name))
    ember.set_anomaly_enabled(True, False)
    assert ember.is_anomaly_enabled() is True and ember.is_anomaly_check_nan_enabled() is False
    ember.set_anomaly_enabled(False)
    assert ember.is_anomaly_enabled() is False and ember.is_anomaly_check_nan_enabled() is True
    _same_error(lambda: torch.set_anomaly_enabled(1), lambda: ember.set_anomaly_enabled(1))


def test_deprecated_autocast_setters(monkeypatch, as_torch):
    torch = pytest.importorskip("torch")
    for name in ("_enabled", "_dtype"):
        monkeypatch.setattr(autocast_mode, name, dict(getattr(autocast_mode, name)))
    message = ("torch.set_autocast_cpu_dtype(dtype) is deprecated. Please use "
               "torch.set_autocast_dtype('cpu', dtype) instead.")
    with pytest.warns(DeprecationWarning, match=re.escape(message)):
        ember.set_autocast_cpu_dtype(ember.float16)
    assert ember.get_autocast_dtype("cpu") is ember.float16
    with pytest.warns(DeprecationWarning, match="set_autocast_gpu_dtype"):
        ember.set_autocast_gpu_dtype(ember.bfloat16)
    assert ember.get_autocast_dtype("cuda") is ember.bfloat16
    with pytest.warns(DeprecationWarning, match="set_autocast_cpu_enabled"):
        ember.set_autocast_cpu_enabled(True)
    assert ember.is_autocast_enabled("cpu") is True
    with pytest.warns(DeprecationWarning):
        ember.set_autocast_cpu_enabled(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_error(lambda: torch.set_autocast_cpu_enabled(1),
                    lambda: ember.set_autocast_cpu_enabled(1))
        _same_error(lambda: torch.set_autocast_gpu_dtype("x"),
                    lambda: ember.set_autocast_gpu_dtype("x"))


# ---------------------------------------------------------------- autograd.graph

def _multi_hook_trace(lib):
    a = lib.ones(2, 3, requires_grad=True)
    b = lib.full((2, 3), 2.0, requires_grad=True)
    c, d = a * b, a * b
    seen = []
    handle = lib.autograd.graph.register_multi_grad_hook(
        (a, b, c, d), lambda grads: seen.append([g is not None for g in grads]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    handle.remove()
    c.sum().backward(retain_graph=True)
    first = []
    lib.autograd.graph.register_multi_grad_hook(
        (a, b), lambda g: first.append(g.tolist()), mode="any")
    (a.sum() + 2 * b.sum()).backward()
    (3 * a.sum()).backward()
    return seen, first


def test_register_multi_grad_hook_matches_torch():
    torch = pytest.importorskip("torch")
    assert _multi_hook_trace(ember) == _multi_hook_trace(torch)
    _same_error(lambda: torch.autograd.graph.register_multi_grad_hook([], print, mode="x"),
                lambda: ember.autograd.graph.register_multi_grad_hook([], print, mode="x"))


def test_gradient_edges_in_autograd_grad():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, ember):
        graph = lib.autograd.graph
        x = lib.arange(3.0, requires_grad=True)
        y = x * x
        edge = graph.get_gradient_edge(y)
        assert type(edge).__name__ == "GradientEdge" and edge.output_nr == 0
        assert edge.node is y.grad_fn and edge.ownership_token is None
        assert graph.get_gradient_edge(x).node.name().endswith("AccumulateGrad")
        (gy,) = lib.autograd.grad((y * 3).sum(), edge, retain_graph=True)
        (gx,) = lib.autograd.grad(edge, graph.get_gradient_edge(x), lib.ones(3))
        results.append((gy.tolist(), gx.tolist()))
    assert results[0] == results[1]
    _same_error(lambda: torch.autograd.graph.get_gradient_edge(torch.ones(1)),
                lambda: ember.autograd.graph.get_gradient_edge(ember.ones(1)))


def test_increment_version_and_allow_mutation_on_saved_tensors():
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True)
        y = x.exp()
        before = y._version
        lib.autograd.graph.increment_version([y])
        assert y._version == before + 1
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            a = lib.ones(2, 3, requires_grad=True)
            b = a.clone()
            out = (b ** 2).sum()
            b.sin_()
            out.backward()
            assert a.grad.tolist() == [[2.0] * 3] * 2
            with pytest.raises(RuntimeError, match="cannot be nested"):
                with lib.autograd.graph.allow_mutation_on_saved_tensors():
                    pass
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            out = (lib.ones(2, requires_grad=True).clone() ** 2).sum()
        with pytest.raises(AssertionError, match="Trying to backward outside"):
            out.backward()


def test_swap_tensors_matches_torch():
    torch = pytest.importorskip("torch")
    outcomes = []
    for lib in (torch, ember):
        a, b = lib.ones(2, requires_grad=True), lib.zeros(3, dtype=lib.int64)
        a.tag = "a"
        identity = id(a)
        lib.utils.swap_tensors(a, b)
        p, t = lib.nn.Parameter(lib.ones(2)), lib.zeros(2)
        lib.utils.swap_tensors(p, t)
        x, y = lib.ones(2, requires_grad=True), lib.full((2,), 3.0, requires_grad=True)
        lib.utils.swap_tensors(x, y)
        (x * 2).sum().backward()
        outcomes.append((a.tolist(), b.tolist(), b.requires_grad, id(a) == identity, b.tag,
                         type(p).__name__, type(t).__name__, x.grad.tolist(), y.grad))
    assert outcomes[0] == outcomes[1]
    import weakref

    w = ember.ones(2)
    ref = weakref.ref(w)
    with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref"):
        ember.utils.swap_tensors(w, ember.ones(2))
    del ref
