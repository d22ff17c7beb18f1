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


# ---------------------------------------------------------------- small tensor functions

def test_scalar_tensor_matches_torch():
    torch = pytest.importorskip("torch")
    for args, kwargs in (((3,), {}), ((3.5,), {"dtype": "int64"}), ((True,), {}),
                         ((2 + 1j,), {"dtype": "complex64"}), ((2 + 0j,), {}),
                         ((1,), {"requires_grad": True})):
        t = torch.scalar_tensor(*args, **{k: getattr(torch, v) if k == "dtype" else v
                                          for k, v in kwargs.items()})
        e = ember.scalar_tensor(*args, **{k: getattr(ember, v) if k == "dtype" else v
                                          for k, v in kwargs.items()})
        assert (e.item(), str(e.dtype)[6:], e.shape, e.requires_grad) == \
            (t.item(), str(t.dtype)[6:], t.shape, t.requires_grad)
    for bad in (2 + 1j, "a", None, 300):
        kw = {"dtype": "uint8"} if bad == 300 else {}
        _same_error(lambda b=bad, k=kw: torch.scalar_tensor(b, **{n: getattr(torch, v)
                                                                  for n, v in k.items()}),
                    lambda b=bad, k=kw: ember.scalar_tensor(b, **{n: getattr(ember, v)
                                                                  for n, v in k.items()}))


def test_fill_and_top_level_in_place_functions():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, ember):
        x = lib.arange(3.0, requires_grad=True)
        v = lib.tensor(2.0, requires_grad=True)
        y = lib.fill(x, v)
        z = lib.fill(x, 7)
        (y * lib.arange(3.0)).sum().backward()
        ints = lib.fill(lib.arange(3), 2.7)
        d = lib.ones(2, requires_grad=True) * 2
        lib.detach_(d)
        r = lib.resize_as_(lib.ones(2), lib.ones(2, 3))
        c = lib.tensor([1 + 2j])
        lib.conj_physical_(c)
        results.append((y.tolist(), y.grad_fn.name(), z.grad_fn.name(), x.grad.tolist(),
                        v.grad.item(), ints.tolist(), d.requires_grad, d.grad_fn, r.shape,
                        c.tolist(), lib.ones(2).cfloat().dtype.is_complex,
                        str(lib.ones(2).cdouble().dtype)[6:]))
    assert results[0] == results[1]
    _same_error(lambda: torch.fill(torch.ones(2), torch.ones(2)),
                lambda: ember.fill(ember.ones(2), ember.ones(2)))


def test_cond_and_while_loop_run_eagerly_with_torchs_checks(as_torch):
    # (the values are PyTorch's: its cond on a tensor predicate and its while_loop
    # compile the branches with dynamo, seconds per call, so they are not rerun here)
    torch = pytest.importorskip("torch")
    x = ember.arange(4.0)
    assert ember.cond(x.sum() > 3, lambda x: x + 1, lambda x: x - 1, (x,)).tolist() == \
        [1.0, 2.0, 3.0, 4.0]
    for lib in (torch, ember):  # a Python predicate: no checks, the branch runs
        y = lib.arange(4.0)
        assert lib.cond(False, lambda y, k: y * k, lambda y, k: y - k, (y, 2)).tolist() == \
            [-2.0, -1.0, 0.0, 1.0]
    assert ember.cond(ember.tensor(True), lambda: 1, lambda: 0) == 1
    i, s = ember.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i),
                            (ember.tensor(0), ember.tensor(0.0)))
    assert (i.item(), s.item(), i.dtype, s.dtype) == (5, 10.0, ember.int64, ember.float32)
    assert ember.while_loop(lambda i: i < 3, lambda i: i + 1, (ember.tensor(0),)).item() == 3
    assert ember.while_loop(lambda i: i < 3, lambda i: (i + 1,), (0,)) == (3,)
    for call in (lambda lib: lib.cond(lib.tensor([True, False]), abs, abs, ()),
                 lambda lib: lib.cond(lib.tensor(True), 3, abs, ()),
                 lambda lib: lib.cond(lib.tensor(True), abs, abs, (1,)),
                 lambda lib: lib.while_loop(3, abs, (lib.tensor(0),))):
        _same_error(lambda c=call: c(torch), lambda c=call: c(ember))
    with pytest.raises(RuntimeError, match="dtype: torch.float32 vs torch.int64"):
        ember.while_loop(lambda i: i < 3, lambda i: (i + 1.0,), (ember.tensor(0),))


def test_sparse_spdiags_and_sampled_addmm_match_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, ember):
        d = lib.arange(1.0, 10.0).reshape(3, 3)
        coo = lib.sparse.spdiags(d, lib.tensor([0, -1, 1]), (3, 3))
        csr = lib.sparse.spdiags(d, lib.tensor([0, 2, -2]), (3, 5), layout=lib.sparse_csr)
        tall = lib.sparse.spdiags(d, lib.tensor([0, -1, 1]), (4, 3), layout=lib.sparse_csc)
        a = lib.tensor([[1.0, 0, 2], [0, 0, 3], [4, 0, 0]]).to_sparse_csr()
        m1, m2 = lib.arange(6.0).reshape(3, 2), lib.arange(6.0).reshape(2, 3)
        s = lib.sparse.sampled_addmm(a, m1, m2, beta=0.5, alpha=2)
        results.append((coo._indices().tolist(), coo._values().tolist(), coo.is_coalesced(),
                        csr.crow_indices().tolist(), csr.to_dense().tolist(),
                        tall.to_dense().tolist(), str(s.layout)[6:],
                        s.col_indices().tolist(), s.values().tolist()))
    assert results[0] == results[1]
    d = (torch.ones(3, 3), ember.ones(3, 3))
    for offsets, shape, layout in (([0, 0, 1], (3, 3), None), ([0, -1], (3, 3), None),
                                   ([[0, -1, 1]], (3, 3), None), ([0.0, 1, 2], (3, 3), None),
                                   ([0, 1, 2], (3,), None), ([0, 1, 2], (3, 3), "strided")):
        _same_error(
            lambda o=offsets, s=shape, lay=layout: torch.sparse.spdiags(
                d[0], torch.tensor(o), s, **({"layout": torch.strided} if lay else {})),
            lambda o=offsets, s=shape, lay=layout: ember.sparse.spdiags(
                d[1], ember.tensor(o), s, **({"layout": ember.strided} if lay else {})))
    for lib_args in ((lambda lib: (lib.eye(3).to_sparse_csr(), lib.ones(3, 2), lib.ones(3, 2))),
                     (lambda lib: (lib.eye(3).to_sparse_csr(), lib.ones(3, 2).double(),
                                   lib.ones(2, 3)))):
        _same_error(lambda f=lib_args: torch.sparse.sampled_addmm(*f(torch)),
                    lambda f=lib_args: ember.sparse.sampled_addmm(*f(ember)))


# ---------------------------------------------------------------- torch.special

_POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")
_XS = [-3.0, -2.0, -1.0, -0.999, -0.5, 0.0, 0.25, 0.5, 0.7071, 0.9, 1.0, 1.3, 2.5,
       float("nan"), float("inf")]
_NS = [-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 2.7, float("nan")]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_orthogonal_polynomials_match_torch(dtype):
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    tol = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12)}[dtype]
    grids = [(lib.tensor(_XS, dtype=getattr(lib, dtype)).reshape(-1, 1),
              lib.tensor(_NS, dtype=getattr(lib, dtype)).reshape(1, -1))
             for lib in (torch, ember)]
    for name in _POLYNOMIALS:
        theirs = getattr(torch.special, name)(*grids[0])
        ours = getattr(ember.special, name)(*grids[1])
        assert str(ours.dtype)[6:] == str(theirs.dtype)[6:]
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol[0], atol=tol[1],
                                   equal_nan=True, err_msg=name)
        # a number for either operand, integer tensors, out=
        assert getattr(ember.special, name)(0.5, ember.tensor([1, 2, 3])).tolist() == \
            pytest.approx(getattr(torch.special, name)(0.5, torch.tensor([1, 2, 3])).tolist())
        out = ember.empty(2)
        getattr(ember.special, name)(ember.tensor([1, 2]), 3, out=out)
        assert out.tolist() == pytest.approx(
            getattr(torch.special, name)(torch.tensor([1, 2]), 3).tolist())


def test_special_functions_errors_and_airy_ai(as_torch):
    torch = pytest.importorskip("torch")
    f_t, f_e = torch.special.chebyshev_polynomial_t, ember.special.chebyshev_polynomial_t
    _same_error(lambda: f_t(0.5, 3), lambda: f_e(0.5, 3))
    _same_error(lambda: f_t(torch.ones(1, dtype=torch.float16), 3),
                lambda: f_e(ember.ones(1, dtype=ember.float16), 3))
    x = [float("nan"), float("inf"), -float("inf"), 0.0, 1.0, -1.0, -10.0, 10.0, 3.5]
    ours = ember.special.airy_ai(ember.tensor(x, dtype=ember.float64)).tolist()
    theirs = torch.special.airy_ai(torch.tensor(x, dtype=torch.float64)).tolist()
    assert ours == pytest.approx(theirs, rel=1e-12, nan_ok=True)
    assert ember.special.airy_ai(ember.tensor([1, 2])).dtype is ember.float32


# ---------------------------------------------------------------- torch.masked

def _masked_results(lib):
    x = lib.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    m = lib.tensor([[True, False, True], [False, False, False]])
    M = lib.masked
    ints = lib.tensor([[1, 2], [3, 4]])
    return [M.sum(x, 1, mask=m), M.sum(x, mask=m), M.sum(x, 1), M.sum(x, (0, 1), mask=m),
            M.sum(x, 1, keepdim=True, mask=m), M.sum(x, 1, dtype=lib.float64, mask=m),
            M.sum(x, 1, mask=lib.tensor([True, False, True])),
            M.sum(ints, 1, mask=lib.tensor([[True, False], [True, True]])),
            M.mean(x, 1, mask=m), M.amax(x, 1, mask=m), M.amin(x, 1, mask=m),
            M.amax(ints, 1, mask=lib.tensor([[False, False], [True, True]])),
            M.prod(x, 1, mask=m), M.argmax(x, 1, mask=m), M.var(x, 1, mask=m),
            M.std(x, 1, mask=m), M.logsumexp(x, 1, mask=m), M.softmax(x, 1, mask=m),
            M.log_softmax(x, 1, mask=m), M.softmin(x, 1, mask=m),
            M.norm(x, 2, 1, mask=m), M.norm(x, 1.0, 1, mask=m),
            M.norm(x, float("inf"), 1, mask=m), M.normalize(x, 2.0, 1, mask=m),
            M.cumsum(x, 1, mask=m)]


def test_masked_reductions_match_torch():
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    for ours, theirs in zip(_masked_results(ember), _masked_results(torch)):
        assert str(ours.dtype)[6:] == str(theirs.dtype)[6:] and ours.shape == theirs.shape
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="mean\\(\\): Could not infer output dtype"):
        ember.masked.mean(ember.tensor([[1, 2]]), 1, mask=ember.tensor([[True, False]]))


def _masked_tensor_text(lib):
    x = lib.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    m = lib.tensor([[True, False, True], [False, False, False]])
    mt = lib.masked.masked_tensor(x, m)
    shown = [mt, mt.sum(), mt.sum(1), mt.amax(1), mt.mean(0), mt + 1, mt * mt,
             lib.masked.masked_tensor(lib.tensor([1, 2, 3]), lib.tensor([True, False, True])),
             lib.masked.masked_tensor(lib.tensor(2.5), lib.tensor(True)),
             lib.masked.as_masked_tensor(lib.tensor([1.5, 1e5]), lib.tensor([True, False]))]
    return [repr(s) for s in shown] + [mt.to_tensor(0).tolist(), tuple(mt.shape)]


def test_masked_tensor_prints_and_reduces_as_torch():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _masked_tensor_text(ember) == _masked_tensor_text(torch)
        x = (torch.ones(2, 3), ember.ones(2, 3))
        for bad in ((lambda lib: lib.ones(3, dtype=lib.bool)), (lambda lib: lib.ones(2, 3)),
                    (lambda lib: lib.ones(3, 2, dtype=lib.bool))):
            _same_error(lambda b=bad: torch.masked.masked_tensor(x[0], b(torch)),
                        lambda b=bad: ember.masked.masked_tensor(x[1], b(ember)))
    with pytest.warns(UserWarning, match="MaskedTensors is in prototype stage"):
        ember.masked.masked_tensor(ember.ones(1), ember.ones(1, dtype=ember.bool))


# ---------------------------------------------------------------- torch.nested

def _nested_results(lib):
    a, b = lib.arange(6.0).reshape(2, 3), lib.arange(3.0).reshape(1, 3)
    nt = lib.nested.nested_tensor([a, b])
    grad = lib.nested.nested_tensor([a, b], requires_grad=True)
    ints = lib.nested.nested_tensor([lib.tensor([1, 2]), lib.tensor([3])])
    lists = lib.nested.nested_tensor([[1, 2], [3]], dtype=lib.float32)
    return [repr(nt), repr(grad), repr(ints), repr(lists), repr(lib.nested.nested_tensor([])),
            repr(lib.nested.as_nested_tensor([a, b])), nt.is_nested, nt.dim(), nt.size(0),
            nt.size(2), nt.numel(), [t.tolist() for t in nt.unbind()], nt[1].tolist(),
            lib.nested.to_padded_tensor(nt, 0.0).tolist(),
            nt.to_padded_tensor(-1.0, (2, 4, 5)).tolist(), lib.zeros(1).is_nested]


def test_nested_tensors_match_torch():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _nested_results(ember) == _nested_results(torch)
        nts = [lib.nested.nested_tensor([lib.ones(2, 3), lib.ones(1, 3)]) for lib in
               (torch, ember)]
    for call in (lambda nt: nt.size(1), lambda nt: nt.size(), lambda nt: nt.unbind(1)):
        _same_error(lambda c=call: c(nts[0]), lambda c=call: c(nts[1]))
    _same_error(lambda: torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(3)]),
                lambda: ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(3)]))


def test_cpu_library_probes_answer_and_keep_their_flags():
    """torch.backends.mkldnn/mkl/openmp/nnpack/opt_einsum: ember uses none of these
    libraries, so each says so; the flags scripts set are read back (and restored by the
    `flags` contexts, as PyTorch's)."""
    backends = ember.backends
    assert not any([backends.mkldnn.is_available(), backends.mkl.is_available(),
                    backends.openmp.is_available(), backends.nnpack.is_available(),
                    backends.opt_einsum.is_available()])
    assert backends.opt_einsum.get_opt_einsum() is None
    assert backends.mkldnn.enabled is True
    with backends.mkldnn.flags(enabled=False):
        assert backends.mkldnn.enabled is False
    assert backends.mkldnn.enabled is True
    with backends.mkl.verbose(backends.mkl.VERBOSE_ON), \
            backends.mkldnn.verbose(backends.mkldnn.VERBOSE_ON):
        pass
    assert backends.nnpack.set_flags(True) == (False,)
    with backends.nnpack.flags(enabled=False):
        assert backends.nnpack.set_flags(False) == (False,)
    assert backends.nnpack.set_flags(False) == (True,)
