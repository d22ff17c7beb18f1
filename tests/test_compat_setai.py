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
