"""Set AI (session 38): the ember behaviours tests/programs/func_transforms_research.py and
module_init_api.py needed, each checked against PyTorch."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402


def _error(fn) -> tuple[str, str] | None:
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - the type is what is compared
        return type(err).__name__, str(err)
    return None


# -- torch.func ------------------------------------------------------------------------------

def test_hessian_of_a_function_linear_in_the_argument_is_zero() -> None:
    """`hessian(f, argnums=1)` where f is linear in that argument: zeros, as PyTorch's."""
    def hess(lib):
        a, c = lib.tensor([0.1, 0.7, -1.2]), lib.tensor([1.0, 2.0, 3.0])
        return lib.func.hessian(lambda x, y: (x * x * y).sum(), argnums=1)(a, c)
    t, e = hess(torch), hess(ember)
    assert tuple(e.shape) == tuple(t.shape) and e.numpy().tolist() == t.numpy().tolist()


@pytest.mark.parametrize("which", ["jacrev", "jacfwd", "vjp", "jvp", "jacrev_str"])
def test_transforms_refuse_non_tensor_outputs_as_torch(which: str) -> None:
    def call(lib):
        t = lib.ones(3)
        return {"jacrev": lambda: lib.func.jacrev(lambda v: 3.0)(t),
                "jacfwd": lambda: lib.func.jacfwd(lambda v: 3.0)(t),
                "vjp": lambda: lib.func.vjp(lambda v: 3.0, t),
                "jvp": lambda: lib.func.jvp(lambda v: 3.0, (t,), (t,)),
                "jacrev_str": lambda: lib.func.jacrev(lambda v: (v, "a"))(t)}[which]
    assert _error(call(ember)) == _error(call(torch))


def _old_style(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

        @staticmethod
        def jvp(ctx, tx):
            x, = ctx.saved_tensors
            return 2 * x * tx
    return Square


@pytest.mark.parametrize("which", ["grad", "vjp", "jvp", "jacrev", "jacfwd", "vmap"])
def test_transforms_refuse_a_function_without_setup_context(which: str) -> None:
    def call(lib):
        sq, t = _old_style(lib).apply, lib.tensor([1.0, 2.0])
        f = lib.func
        return {"grad": lambda: f.grad(lambda v: sq(v).sum())(t),
                "vjp": lambda: f.vjp(sq, t), "jvp": lambda: f.jvp(sq, (t,), (t,)),
                "jacrev": lambda: f.jacrev(sq)(t), "jacfwd": lambda: f.jacfwd(sq)(t),
                "vmap": lambda: f.vmap(sq)(t)}[which]
    e = _error(call(ember))
    assert e is not None and e == _error(call(torch))


def test_ember_own_functions_run_under_transforms() -> None:
    """ember's internal Functions (an LSTM layer) are not refused as a user's would be."""
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(2, 3, batch_first=True)
    g = ember.func.grad(lambda x: lstm(x)[0].sum())(ember.ones(1, 4, 2))
    assert tuple(g.shape) == (1, 4, 2)


def test_save_for_forward_is_what_jvp_reads() -> None:
    """ctx.save_for_forward: the custom Function's jvp reads it as saved_tensors; backward
    still reads what save_for_backward saved; the primal unpack_dual gives has no tangent."""
    outs = []
    for lib in (torch, ember):
        fw = lib.autograd.forward_ad
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with fw.dual_level():
            out = _old_style(lib).apply(fw.make_dual(x, lib.tensor([1.0, 0.5, -1.0]))).sin()
            primal, tangent = fw.unpack_dual(out)
            shown = repr(primal.detach())  # (PyTorch's primal view's node is `Identity`)
        primal.sum().backward()
        outs.append((shown, tangent.tolist(), x.grad.tolist()))
    (t_shown, t_tangent, t_grad), (e_shown, e_tangent, e_grad) = outs
    assert e_shown == t_shown  # (the values: within a rounding of cos's)
    assert e_tangent == pytest.approx(t_tangent, rel=1e-6)
    assert e_grad == pytest.approx(t_grad, rel=1e-6)
    refusals = [_error(lambda lib=lib: lib.autograd.function.FunctionCtx().save_for_forward(1))
                for lib in (torch, ember)]
    assert refusals[1] == refusals[0] is not None


def test_grad_output_shape_mismatch_message() -> None:
    def call(lib):
        x = lib.ones(3, requires_grad=True)
        return lambda: lib.autograd.grad(x * 2, x, lib.ones(4))
    t, e = _error(call(torch)), _error(call(ember))
    assert e == (t[0], t[1].replace("torch.Size", "ember.Size"))


# -- nn.Module ------------------------------------------------------------------------------

def _as_ember(text: str) -> str:
    return text.replace("torch", "ember")


def test_private_state_dict_hook_may_return_a_new_dict() -> None:
    """`_register_state_dict_hook` (libraries' form): edits in place, or returns a new
    state_dict, respected for the module state_dict is called on; refused for a hook that
    was registered through the public API."""
    results = []
    for lib in (torch, ember):
        outer = lib.nn.Sequential(lib.nn.Linear(1, 1))
        outer[0]._register_state_dict_hook(
            lambda m, sd, prefix, meta: sd.__setitem__(prefix + "note", 1))
        h = outer._register_state_dict_hook(lambda m, sd, prefix, meta: {"only": 2})
        first = dict(outer.state_dict())
        h.remove()
        second = sorted(outer.state_dict())

        def hook(m, sd, prefix, meta):
            return None
        outer.register_state_dict_post_hook(hook)
        results.append((first, second,
                        _error(lambda m=outer, h=hook: m._register_state_dict_hook(h))))
    assert results[1] == results[0]


def test_module_registration_messages_name_the_api() -> None:
    def call(lib, which):
        m = lib.nn.Linear(1, 1)
        m.register_buffer("nb", None)
        return {"buffer": lambda: m.register_buffer("q", 3),
                "assign buffer": lambda: setattr(m, "nb", 3),
                "assign module": lambda: setattr(lib.nn.Sequential(m), "0", lib.ones(1)),
                "extra state": lambda: lib.nn.Module().get_extra_state(),
                "set extra state": lambda: lib.nn.Module().set_extra_state(1)}[which]
    for which in ("buffer", "assign buffer", "assign module", "extra state", "set extra state"):
        t = _error(call(torch, which))
        assert _error(call(ember, which)) == (t[0], t[1].replace("torch.", "ember.").replace(
            "(torch ", "(ember ").replace("pytorch/pytorch", "pytorch/pytorch")), which


def test_dir_of_a_module_lists_t_destination() -> None:
    def public(lib):
        return [k for k in dir(lib.nn.Linear(1, 1)) if not k.startswith("_")]
    assert public(ember) == public(torch)


def test_state_dict_positional_and_backward_hook_warnings_as_torch() -> None:
    import warnings
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.Linear(1, 1).state_dict(None, "p.")
            lin = lib.nn.Linear(2, 2)
            lin.register_full_backward_hook(lambda m, gi, go: None)
            lin(lib.ones(1, 2)).sum().backward()
        messages = [str(w.message) for w in caught]
        assert messages[0].endswith("torch.nn.Module.state_dict for details.")
        assert messages[1].startswith("Full backward hook is firing")
        assert caught[1].filename == __file__  # (at the backward() call, not inside ember)


@pytest.mark.parametrize("args", [("cpu", "cpu"), ("cpu", "float32", "x"), ("f32", "f32"),
                                  ("cpu", "float64", False, False, False), ("tensor", "f64")])
def test_to_refuses_invalid_positional_combinations(args: tuple) -> None:
    def call(lib, module):
        def arg(a):
            return {"float32": lib.float32, "f32": lib.float32, "float64": lib.float64,
                    "f64": lib.float64, "tensor": lib.ones(1)}.get(a, a)
        target = lib.nn.Linear(1, 1) if module else lib.ones(1)
        return lambda: target.to(*map(arg, args))
    for module in (False, True):
        t = _error(call(torch, module))
        assert t is not None and _error(call(ember, module)) == (t[0], _as_ember(t[1]))


def test_to_keeps_every_valid_positional_form() -> None:
    x = ember.ones(1)
    assert x.to("cpu", ember.float64, True, True).dtype is ember.float64
    assert x.to(ember.float64, True).dtype is ember.float64
    assert x.to(x, True).dtype is ember.float32
    assert x.to(None, ember.float16).dtype is ember.float16
    assert x.to(ember.device("cpu"), None).dtype is ember.float32
    assert x.to(float, True).dtype is ember.float64


@pytest.mark.parametrize("device", ["xpu", "ipu", "mtia"])
def test_module_moves_to_absent_devices_refused_as_torch(device: str) -> None:
    t = _error(lambda: getattr(torch.nn.Linear(1, 1), device)())
    assert _error(lambda: getattr(ember.nn.Linear(1, 1), device)()) == t


def test_vmap_lets_ops_check_their_own_values() -> None:
    """vmap over linalg.solve (its singularity check reads the LAPACK info inside ember)
    works, as PyTorch's; the function's own reads (`float(t)`, `if t:`) are refused."""
    def run(lib):
        A = lib.eye(2).expand(3, 2, 2) * lib.tensor([1.0, 2.0, 4.0]).view(3, 1, 1)
        return lib.func.vmap(lib.linalg.solve)(A, lib.ones(3, 2))
    assert run(ember).tolist() == run(torch).tolist()
    for fn in (lambda v: float(v.sum()), lambda v: v if v.sum() > 0 else -v):
        t = _error(lambda fn=fn: torch.func.vmap(fn)(torch.ones(2, 3)))
        assert _error(lambda fn=fn: ember.func.vmap(fn)(ember.ones(2, 3))) == t


_PROBES = {
    "vmap out_dims structure": lambda lib: lib.func.vmap(lambda v: v, out_dims=(0, 1))(
        lib.ones(2, 3)),
    "vmap chunk_size 0": lambda lib: lib.func.vmap(lib.sin, chunk_size=0),
    "jacrev chunk_size 0": lambda lib: lib.func.jacrev(lib.sin, chunk_size=0),
    "argnums list": lambda lib: lib.func.grad(lambda a, b: (a * b).sum(), argnums=[0, 1])(
        lib.ones(2), lib.ones(2)),
    "argnums float": lambda lib: lib.func.grad(lambda a: a.sum(), argnums=1.0)(lib.ones(2)),
    "argnums repeated": lambda lib: lib.func.grad(lambda a, b: (a * b).sum(), argnums=(0, 0))(
        lib.ones(2), lib.ones(2)),
    "jvp primals list": lambda lib: lib.func.jvp(lib.sin, [lib.ones(2)], (lib.ones(2),)),
    "jvp structure": lambda lib: lib.func.jvp(lib.sin, (lib.ones(2),), (lib.ones(2),) * 2),
    "jvp tangent shape": lambda lib: lib.func.jvp(lib.sin, (lib.ones(2),), (lib.ones(3),)),
    "jvp int tangent": lambda lib: lib.func.jvp(lib.sin, (lib.ones(2),),
                                                (lib.ones(2, dtype=lib.long),)),
    "jacfwd random op": lambda lib: lib.func.jacfwd(lambda v: v * lib.rand(3))(lib.ones(3)),
    "stack_module_state modes": lambda lib: lib.func.stack_module_state(
        [lib.nn.Linear(1, 1), lib.nn.Linear(1, 1).eval()]),
    "stack_module_state classes": lambda lib: lib.func.stack_module_state(
        [lib.nn.Linear(1, 1), lib.nn.Bilinear(1, 1, 1)]),
}


@pytest.mark.parametrize("name", sorted(_PROBES))
def test_transform_argument_refusals_as_torch(name: str) -> None:
    t = _error(lambda: _PROBES[name](torch))
    assert t is not None
    assert _error(lambda: _PROBES[name](ember)) == (t[0], t[1].replace("torch.", "ember."))


def test_vmap_over_an_empty_batch_and_jacfwd_randomness() -> None:
    def run(lib):
        vmap = lib.func.vmap
        a, b = vmap(lambda v: (v.sum(), v * 2), out_dims=(0, 1))(lib.ones(0, 3))
        c = vmap(lambda v, w: v @ w, in_dims=(1, None))(lib.ones(3, 0), lib.ones(3, 2))
        d = vmap(lib.argmax)(lib.ones(0, 3, dtype=lib.long))
        e = lib.func.jacfwd(lambda v: v * lib.rand(()), randomness="same")(lib.ones(2))
        return [(tuple(t.shape), str(t.dtype).split(".")[-1]) for t in (a, b, c, d, e)]
    assert run(ember) == run(torch)


def _global_hooks_run(lib) -> list:
    from importlib import import_module
    mm = import_module(lib.__name__ + ".nn.modules.module")
    seen: list = []
    handles = [
        mm.register_module_full_backward_pre_hook(
            lambda m, go: seen.append(("bpre", type(m).__name__))),
        mm.register_module_full_backward_hook(
            lambda m, gi, go: seen.append(("bh", type(m).__name__, tuple(gi[0].shape)))),
        mm.register_module_buffer_registration_hook(
            lambda m, n, b: seen.append(("buf", n))),
        mm.register_module_parameter_registration_hook(
            lambda m, n, p: seen.append(("param", n))),
        mm.register_module_module_registration_hook(
            lambda m, n, s: (seen.append(("mod", n)), lib.nn.Tanh())[1] if n == "act" else None),
    ]
    try:
        net = lib.nn.Sequential(lib.nn.Linear(2, 2))
        net.act = lib.nn.ReLU()
        net.register_buffer("stat", lib.zeros(1))
        net(lib.ones(1, 2, requires_grad=True)).sum().backward()
        seen.append(type(net.act).__name__)
    finally:
        for h in handles:
            h.remove()
    net(lib.ones(1, 2, requires_grad=True)).sum().backward()  # (removed: nothing more)
    return seen


def test_global_backward_and_registration_hooks() -> None:
    assert _global_hooks_run(ember) == _global_hooks_run(torch)


def test_backward_hook_changing_a_size_and_parameter_deepcopy() -> None:
    import copy
    outs = []
    for lib in (torch, ember):
        lin = lib.nn.Linear(2, 2)
        lin.register_full_backward_hook(lambda m, gi, go, lib=lib: (lib.ones(3),))
        err = _error(lambda lin=lin, lib=lib:
                     lin(lib.ones(1, 2, requires_grad=True)).sum().backward())
        lin = lib.nn.Linear(1, 1)
        lin(lib.ones(1, 1)).sum().backward()
        outs.append((err, copy.deepcopy(lin).weight.grad, copy.deepcopy(lin.weight.grad) is None))
    assert outs[1] == outs[0]


def test_vmap_refuses_training_batch_norm_with_unbatched_running_stats() -> None:
    """PyTorch's refusal for vmap over a training BatchNorm whose running statistics are
    shared; with track_running_stats=False, in eval mode, or with stacked (batched) buffers
    of an ensemble it runs; vmap of nothing to map: PyTorch's messages."""
    import copy

    def run(lib):
        nn, f = lib.nn, lib.func
        x = lib.ones(2, 4, 3)
        models = [nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)) for _ in range(2)]
        p, b = f.stack_module_state(models)
        base = copy.deepcopy(models[0]).to("meta")
        return [_error(lambda: f.vmap(nn.BatchNorm1d(3))(x)),
                _error(lambda: f.vmap(nn.BatchNorm1d(3, track_running_stats=False))(x)),
                _error(lambda: f.vmap(nn.BatchNorm1d(3).eval())(x)),
                _error(lambda: f.vmap(lambda p, b, d: f.functional_call(base, (p, b), (d,)))(
                    p, b, x)),
                _error(lambda: f.vmap(lambda v: v, in_dims=(None,))(x)),
                _error(lambda: f.vmap(lambda: x)())]
    assert run(ember) == run(torch)
