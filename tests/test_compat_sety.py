"""PyTorch behaviours the set-Y programs (torch.utils.data, torch.autograd.functional and
torch.func, LR schedulers and optimizer state, parametrizations and module utilities)
needed, checked against torch itself."""

from __future__ import annotations

import warnings

import pytest

import ember
from ember.core import dtype as dt

torch = pytest.importorskip("torch")


def _outcome(fn, mod) -> tuple[str, object]:
    """What `fn(mod)` gives: its value (nested lists for tensors), or its error's type and
    text."""
    try:
        out = fn(mod)
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err)
    if isinstance(out, (torch.Tensor, ember.Tensor)):
        return "ok", out.tolist()
    if isinstance(out, tuple):
        return "ok", [o.tolist() if isinstance(o, (torch.Tensor, ember.Tensor)) else o
                      for o in out]
    return "ok", out


def _same(fn) -> None:
    """`fn` does under ember what it does under torch, as a program run through the alias
    sees it (ember's printed names are "torch...")."""
    saved, dt.API_NAME = dt.API_NAME, "torch"
    try:
        assert _outcome(fn, ember) == _outcome(fn, torch)
    finally:
        dt.API_NAME = saved


# -- torch.autograd ------------------------------------------------------------------

def _grad_of_unreached_after_backward(mod):
    a = mod.tensor([1.0, 2.0], requires_grad=True)
    c = mod.tensor([5.0], requires_grad=True)
    loss = (a * a).sum()
    loss.backward()  # frees the graph; grad() of a tensor it never reaches runs none of it
    return mod.autograd.grad(loss, c)


def _grad_skips_other_branches(mod):
    a = mod.tensor([1.0, 2.0], requires_grad=True)
    b = mod.tensor([3.0, 4.0], requires_grad=True)
    seen = []
    left, right = a * 2, b * 3
    right.register_hook(lambda g: seen.append("right"))
    left.register_hook(lambda g: seen.append("left"))
    ga, = mod.autograd.grad((left + right).sum(), a)
    return ga.tolist(), seen


def test_grad_runs_only_the_nodes_leading_to_its_inputs() -> None:
    _same(_grad_of_unreached_after_backward)
    _same(_grad_skips_other_branches)


def test_grad_materialize_grads_refuses_allow_unused_false() -> None:
    def fn(mod):
        x = mod.ones(3, requires_grad=True)
        return mod.autograd.grad((x * 2).sum(), [x, mod.ones(2, requires_grad=True)],
                                 allow_unused=False, materialize_grads=True)
    _same(fn)
    x = ember.ones(3, requires_grad=True)
    unused = ember.ones(2, requires_grad=True)
    _, g = ember.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    assert g.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("kwargs", [dict(vectorize=True),
                                    dict(vectorize=True, strategy="forward-mode"),
                                    dict(strategy="forward-mode")])
def test_jacobian_strict_refused_where_pytorch_refuses(kwargs) -> None:
    def fn(mod):
        return mod.autograd.functional.jacobian(lambda a: a * 2, mod.ones(3), strict=True,
                                                **kwargs)
    _same(fn)


def test_gradgradcheck_draws_grad_outputs_from_the_global_generator() -> None:
    def after(mod):
        mod.manual_seed(0)
        x = mod.randn(4, 3, dtype=mod.double, requires_grad=True)
        assert mod.autograd.gradgradcheck(lambda t: (t ** 3).sin(), (x,))
        return mod.rand(3)
    _same(after)


def test_gradcheck_mismatch_prints_jacobians_in_the_input_dtype() -> None:
    def fn(mod):
        x = mod.ones(2, requires_grad=True)  # float32: a mismatch from rounding
        return mod.autograd.gradcheck(mod.sin, (x,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(fn)


# -- nn.Module utilities ---------------------------------------------------------------

@pytest.mark.parametrize("target, strict", [("3.0", False), ("3.0", True), ("3.7", False),
                                            ("3.7", True), ("1.x", False), ("", False),
                                            ("5.0", False), ("0.weight", False)])
def test_set_submodule(target: str, strict: bool) -> None:
    def fn(mod):
        net = mod.nn.Sequential(mod.nn.Linear(4, 4), mod.nn.ReLU(), mod.nn.Identity(),
                                mod.nn.Sequential(mod.nn.Linear(4, 2)))
        net.set_submodule(target, mod.nn.Linear(4, 3), strict=strict)
        return repr(net)
    _same(fn)


def test_set_submodule_refuses_a_non_module() -> None:
    _same(lambda mod: mod.nn.Sequential(mod.nn.ReLU()).set_submodule("0", 3))


def test_module_to_complex_casts_floating_tensors_with_pytorch_warning() -> None:
    def fn(mod):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bn = mod.nn.BatchNorm1d(2).to(mod.complex64)
        return ([str(t.dtype) for t in (bn.weight, bn.running_mean, bn.num_batches_tracked)],
                [str(w.message) for w in caught])
    _same(fn)
    _same(lambda mod: mod.nn.Linear(2, 2).to(mod.int64))


@pytest.mark.parametrize("assign", ["register_parameter", "setattr"])
def test_parameter_assignment_errors_name_the_api(assign: str) -> None:
    def fn(mod):
        m = mod.nn.Linear(2, 2)
        if assign == "setattr":
            m.weight = mod.ones(2, 2)
        else:
            m.register_parameter("w", mod.ones(2))
    _same(fn)


def test_full_backward_hook_warning_when_no_input_requires_grad() -> None:
    def fn(mod):
        m = mod.nn.Linear(2, 2)
        m.register_full_backward_hook(lambda *a: None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m(mod.ones(1, 2)).sum().backward()
        return [str(w.message) for w in caught]
    _same(fn)


# -- parametrizations ------------------------------------------------------------------

@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_makes_complex_weights_unitary(orthogonal_map: str) -> None:
    def fn(mod):
        mod.manual_seed(0)
        layer = mod.nn.utils.parametrizations.orthogonal(
            mod.nn.Linear(3, 3, dtype=mod.cfloat), orthogonal_map=orthogonal_map)
        w = layer.weight
        return str(w.dtype), mod.allclose(w.mH @ w, mod.eye(3, dtype=mod.cfloat), atol=1e-5)
    _same(fn)


def test_geqrf_of_complex_matrices() -> None:
    x = torch.randn(2, 4, 3, dtype=torch.cdouble)
    a, tau = torch.geqrf(x)
    ea, etau = ember.geqrf(ember.tensor(x.numpy()))
    assert torch.allclose(torch.from_numpy(ea.numpy()), a)
    assert torch.allclose(torch.from_numpy(etau.numpy()), tau)
    q = ember.linalg.householder_product(ea, etau)
    assert ember.allclose(q @ ea.triu()[..., :3, :], ember.tensor(x.numpy()))


# -- torch.utils.data and the draws beneath it ---------------------------------------

_INF, _NAN = float("inf"), float("nan")


@pytest.mark.parametrize("weights", [[_INF, 1.0], [_NAN, 1.0], [-1.0, 1.0], [1.0, -1.0, _INF],
                                     [1.0, _INF, -1.0], [[1.0, _INF], [-1.0, 1.0]], [0.0, 0.0],
                                     []])
@pytest.mark.parametrize("num_samples, replacement", [(1, True), (3, True), (1, False)])
def test_multinomial_bad_weights_messages(weights, num_samples: int, replacement: bool) -> None:
    _same(lambda mod: mod.multinomial(mod.tensor(weights), num_samples, replacement))


@pytest.mark.parametrize("args", [([1.0, 0.0, 0.0], 2, False), ([1.0, 1.0], 3, False), ([], 1),
                                  ([1.0, _INF], 1), ([1.0, -1.0], 3), ([0.0, 0.0], 2)])
def test_weighted_random_sampler_draws_as_multinomial(args) -> None:
    def fn(mod):
        g = mod.Generator().manual_seed(0)
        return list(mod.utils.data.WeightedRandomSampler(*args, generator=g))
    _same(fn)


def test_dataloader_pin_memory_device_is_deprecated() -> None:
    def fn(mod):
        loader = mod.utils.data.DataLoader(range(2), pin_memory=True, pin_memory_device="cuda")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            list(loader)
        return loader.pin_memory_device, [str(w.message) for w in caught]
    _same(fn)
    assert ember.utils.data.DataLoader(range(2)).pin_memory_device == ""


# -- torch.func ----------------------------------------------------------------------

def _setup_context_exp(mod):
    class MyExp(mod.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, scale=2.0):
            return x.exp() * scale

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)
            ctx.n_inputs = len(inputs)  # the defaults are bound: (x, scale)

        @staticmethod
        def backward(ctx, g):
            out, = ctx.saved_tensors
            return g * out, None
    return MyExp


def test_function_with_setup_context() -> None:
    def plain(mod):
        x = mod.zeros(2, requires_grad=True)
        y = _setup_context_exp(mod).apply(x)
        y.sum().backward()
        return y.tolist(), x.grad.tolist(), type(y.grad_fn).__name__

    def transformed(mod):
        fn = _setup_context_exp(mod).apply
        x = mod.zeros(2, 3)
        return (mod.func.vmap(fn)(x).tolist(),
                mod.func.vmap(mod.func.grad(lambda t: fn(t).sum()))(x).tolist())
    _same(plain)
    _same(transformed)


def test_vmap_out_dims_none_passes_non_tensors_through() -> None:
    _same(lambda mod: mod.func.vmap(lambda t: (t * 2, 5), out_dims=(0, None))(mod.ones(2, 3)))
    _same(lambda mod: mod.func.vmap(lambda t: (t, 5), out_dims=0)(mod.ones(2, 3)))
    _same(lambda mod: mod.func.vmap(lambda t: {"a": t, "b": "x"},
                                    out_dims={"a": 1, "b": None})(mod.ones(2, 3))["b"])


# -- autograd graph hooks and .grad assignment ------------------------------------------

def test_node_prehook_and_hook_with_grad_skipping_unneeded_nodes() -> None:
    def fn(mod):
        a = mod.ones(2, requires_grad=True)
        w = mod.ones(2, requires_grad=True)
        b = a * 2
        c = (b * w).exp()
        log = []
        c.grad_fn.register_prehook(lambda go: log.append("pre exp"))
        handle = c.grad_fn.register_prehook(lambda go: (go[0] * 10,))
        b.grad_fn.register_hook(lambda gi, go: log.append("post mul"))  # not run: not needed
        c.register_hook(lambda g: log.append(
            (mod._C._will_engine_execute_node(b.grad_fn),
             mod._C._will_engine_execute_node(c.grad_fn))))
        gw, = mod.autograd.grad(c.sum(), w, retain_graph=True)
        handle.remove()
        ga, = mod.autograd.grad(c.sum(), a)
        return log, [round(v, 3) for v in gw.tolist() + ga.tolist()]
    _same(fn)


def test_node_hook_may_replace_grad_inputs() -> None:
    def fn(mod):
        a = mod.ones(2, requires_grad=True)
        y = a * 3
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7, gi[1]))
        y.sum().backward()
        return a.grad
    _same(fn)


@pytest.mark.parametrize("grad", ["float64", "int64", "shape", "ok"])
def test_grad_assignment_checks_dtype_then_size(grad: str) -> None:
    def fn(mod):
        a = mod.ones(2, requires_grad=True)
        value = {"float64": mod.ones(3, dtype=mod.float64), "int64": mod.ones(2, dtype=mod.long),
                 "shape": mod.ones(1, 2), "ok": mod.full((2,), 5.0)}[grad]
        a.grad = value
        return a.grad
    _same(fn)

    def relaxed(mod):
        a = mod.ones(2, requires_grad=True)
        a.grad_dtype = None
        a.grad = mod.ones(2, dtype=mod.float64)
        return str(a.grad.dtype)
    _same(relaxed)


def test_grad_dtype_setter_error_names_the_api() -> None:
    def fn(mod):
        mod.ones(2, requires_grad=True).grad_dtype = 3
    _same(fn)


# -- the deprecated Module.register_backward_hook ------------------------------------------

def test_register_backward_hook_runs_on_the_output_node() -> None:
    def fn(mod):
        mod.manual_seed(0)
        conv = mod.nn.Conv2d(1, 2, 3)
        seen = []

        def hook(module, grad_input, grad_output):  # Grad-CAM's use
            seen.append((type(module).__name__,
                         [None if g is None else list(g.shape) for g in grad_input],
                         [list(g.shape) for g in grad_output]))
        handle = conv.register_backward_hook(hook)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            conv(mod.randn(1, 1, 4, 4, requires_grad=True)).sum().backward()
        handle.remove()
        conv(mod.randn(1, 1, 4, 4, requires_grad=True)).sum().backward()
        return seen, [str(w.message) for w in caught]
    _same(fn)


def test_register_backward_hook_may_replace_grad_input() -> None:
    def fn(mod):
        relu = mod.nn.ReLU()
        relu.register_backward_hook(lambda m, gi, go: (gi[0] * 0 + 2,))
        x = mod.ones(3, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            relu(x * 1).sum().backward()
        return x.grad
    _same(fn)


@pytest.mark.parametrize("first", ["full", "old"])
def test_backward_hooks_of_both_kinds_refused(first: str) -> None:
    def fn(mod):
        lin = mod.nn.Linear(2, 2)
        hooks = [lin.register_full_backward_hook, lin.register_backward_hook]
        if first == "old":
            hooks.reverse()
        for register in hooks:
            register(lambda *a: None)
    _same(fn)


# -- gradcheck's outputs ---------------------------------------------------------------

def _double(mod):
    mod.manual_seed(0)
    return mod.randn(3, dtype=mod.float64, requires_grad=True)


def test_gradcheck_checks_only_outputs_that_require_grad() -> None:
    _same(lambda mod: mod.autograd.gradcheck(lambda t: (t * 2, t.detach()), (_double(mod),)))
    _same(lambda mod: mod.autograd.gradcheck(lambda t: t.argmax(), (_double(mod),)))
    _same(lambda mod: mod.autograd.gradcheck(lambda t: t.detach() * 2, (_double(mod),)))
    _same(lambda mod: mod.autograd.gradcheck(lambda t: t.argmax(), (_double(mod),),
                                             fast_mode=True))


def test_gradcheck_forward_mode_failure_names_the_mode() -> None:
    def fn(mod):
        class BadJvp(mod.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def jvp(ctx, t):
                return t * 3
        return mod.autograd.gradcheck(BadJvp.apply, (_double(mod),), check_forward_ad=True)
    _same(fn)
    _same(lambda mod: mod.autograd.gradcheck(mod.sin, (_double(mod),), check_forward_ad=True,
                                             check_backward_ad=False))


# -- SWALR -----------------------------------------------------------------------------

def test_swalr_state_dict_keeps_the_strategy_name_not_the_function() -> None:
    def fn(mod):
        opt = mod.optim.SGD([mod.nn.Parameter(mod.zeros(2))], lr=0.1)
        sched = mod.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=3,
                                          anneal_strategy="linear")
        state = sched.state_dict()
        fresh = mod.optim.swa_utils.SWALR(opt, swa_lr=0.05)
        fresh.load_state_dict(state)
        lrs = []
        for _ in range(3):
            opt.step()
            fresh.step()
            lrs.append(round(fresh.get_last_lr()[0], 6))
        return sorted(state), state["_anneal_strategy"], lrs
    _same(fn)
    _same(lambda mod: mod.optim.swa_utils.SWALR(
        mod.optim.SGD([mod.nn.Parameter(mod.zeros(2))], lr=0.1), 0.05, anneal_strategy="x"))
