"""Known differences from PyTorch 2.13 (its CPU build is the oracle), closed: no-op shape
calls return new views ..."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(fn):
    """("ok", result) or (error type name, message) of `fn()`."""
    try:
        return "ok", fn()
    except Exception as err:  # noqa: BLE001 - the error is what is compared
        return type(err).__name__, str(err)


# == 1. no-op shape calls: a new view, or the tensor itself, as PyTorch ================

def _identity(lib, call, grad=True):
    """What `call(x)` is to `x`: itself, a view of it (its `_base`), a copy; its node."""
    x = lib.randn(2, 3, requires_grad=grad)
    y = call(x)
    y = y[0] if isinstance(y, (tuple, list)) else y
    node = type(y.grad_fn).__name__ if y.grad_fn is not None else None
    return y is x, y._base is x, node, y.data_ptr() == x.data_ptr(), tuple(y.shape)


NO_OP_CALLS = [  # (x: a (2, 3) tensor; m: the module, ember or torch)
    "x.reshape(x.shape)", "x.reshape(-1, 3)", "m.reshape(x, x.shape)", "x.view(x.shape)",
    "x.view_as(x)", "x.reshape_as(x)", "x.expand(x.shape)", "x.expand(-1, -1)",
    "x.expand_as(x)", "x.broadcast_to(x.shape)", "x.unflatten(1, (3,))", "x.flatten()",
    "x.flatten(1)", "x.flatten(0, 0)", "x.flatten(-1, 1)", "x.squeeze()", "x.squeeze(0)",
    "x.squeeze((0, 1))", "x.permute(0, 1)", "x.transpose(0, 0)", "x.movedim(0, 0)",
    "x.contiguous()", "x.to(x.dtype)", "x.to('cpu')", "x.to(x.dtype, copy=True)",
    "x.type_as(x)", "x.float()", "x.double()", "x.type(x.dtype)", "x.cpu()",
    "x.narrow(0, 0, 2)", "x.narrow(1, 1, 2)", "x[:]", "x[...]", "x.repeat(1, 1)",
    "x.tile((1, 1))", "x.conj_physical()", "x.conj()", "x.tensor_split(1)", "x.hsplit(1)",
    "x.chunk(1)", "x.rot90(0)", "x.rot90(4)", "x.rot90(1)", "m.atleast_2d(x)",
    "m.atleast_2d(x[0])", "m.atleast_3d(x)", "m.atleast_3d(x[0])",
    "m.broadcast_tensors(x, x[0])", "m.alias_copy(x)", "m.view_copy(x, (6,))",
    "m.expand_copy(x, (2, 3))", "m.squeeze_copy(x, 0)", "m.transpose_copy(x, 0, 1)",
    "x.narrow_copy(1, 0, 3)", "m.unbind_copy(x)",
]


@pytest.mark.parametrize("grad", [True, False])
@pytest.mark.parametrize("call", NO_OP_CALLS)
def test_no_op_shape_call_is_a_view_or_self_as_in_pytorch(call, grad):
    mine = _identity(ember, lambda x: eval(call, {"x": x, "m": ember}), grad=grad)
    assert mine == _identity(torch, lambda x: eval(call, {"x": x, "m": torch}), grad=grad)


def test_no_op_views_share_storage_and_writes():
    for lib in (ember, torch):
        x = lib.zeros(2, 3)
        x.reshape(2, 3).add_(1)
        x.view(2, 3)[0, 0] = 5
        x.expand(2, 3).mul_(2)
        y = x.repeat(1, 1)
        y.add_(100)  # a copy: x keeps its values
        assert x.tolist() == [[10.0, 2.0, 2.0], [2.0, 2.0, 2.0]]


def test_expand_with_repeats_still_refuses_writes():
    mine = _outcome(lambda: ember.zeros(1, 3).expand(2, 3).add_(1))
    theirs = _outcome(lambda: torch.zeros(1, 3).expand(2, 3).add_(1))
    assert mine[0] == theirs[0] == "RuntimeError"
    assert mine[1] == theirs[1]


def test_no_op_view_gradient_flows():
    x = ember.randn(2, 3, requires_grad=True)
    (x.reshape(2, 3) * 2 + x.expand(2, 3)).sum().backward()
    assert x.grad.tolist() == [[3.0] * 3] * 2


# == 2. double backward =================================================================

SECOND_ORDER = [  # (expression of x (float64) and m (the module), x's shape)
    ("m.nn.functional.cross_entropy(x, m.tensor([0, 2]))", (2, 3)),
    ("m.nn.functional.cross_entropy(x, m.tensor([0, 2]), reduction='sum')", (2, 3)),
    ("m.nn.functional.cross_entropy(x, m.tensor([0, -100]), reduction='none')", (2, 3)),
    ("m.nn.functional.cross_entropy(x, m.tensor([1, 2]), label_smoothing=0.1)", (2, 3)),
    ("m.nn.functional.max_pool2d(x, 2)", (1, 2, 4, 4)),
    ("m.nn.functional.avg_pool2d(x, 3, 2, 1)", (1, 2, 5, 5)),
    ("m.nn.functional.adaptive_max_pool2d(x, 3)", (1, 2, 5, 5)),
    ("m.nn.functional.pad(x, (2, 1, 1, 2), mode='reflect')", (1, 2, 4, 4)),
    ("m.nn.functional.pad(x, (2, 1), mode='circular') ** 2", (1, 2, 5)),
    ("m.nn.functional.conv2d(x, x[:, :2].flip(-1) * 0.5, padding=1) ** 2", (2, 2, 3, 3)),
    ("m.nn.functional.interpolate(x, scale_factor=2, mode='bilinear') ** 2", (1, 1, 3, 3)),
]


def _second_derivative(lib, expr, shape):
    gen = __import__("numpy").random.default_rng(0)
    x = lib.tensor(gen.standard_normal(shape), requires_grad=True)
    y = eval(expr, {"x": x, "m": lib})
    g, = lib.autograd.grad((y * y.detach().cos()).sum(), x, create_graph=True)
    h, = lib.autograd.grad((g * g.detach().sin()).sum(), x)
    return g.detach().numpy(), h.numpy()


@pytest.mark.parametrize("expr, shape", SECOND_ORDER)
def test_second_derivative_matches_pytorch(expr, shape):
    import numpy as np
    mine, theirs = _second_derivative(ember, expr, shape), _second_derivative(torch, expr, shape)
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_cross_entropy_gradgradcheck():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    target = ember.tensor([0, 3, 1])
    assert ember.autograd.gradgradcheck(
        lambda x: ember.nn.functional.cross_entropy(x, target), (x,))


TIED_GRADIENTS = [  # PyTorch's gradient of these requires grad under create_graph
    ("m.nn.functional.max_pool2d(x, 2)", (1, 2, 4, 4)),
    ("m.nn.functional.max_pool3d(x, 2)", (1, 1, 2, 2, 2)),
    ("m.nn.functional.avg_pool2d(x, 2)", (1, 2, 4, 4)),
    ("m.nn.functional.adaptive_avg_pool2d(x, 3)", (1, 2, 5, 5)),
    ("m.nn.functional.adaptive_avg_pool3d(x, 2)", (1, 1, 3, 3, 3)),
    ("m.nn.functional.adaptive_max_pool2d(x, 3)", (1, 2, 5, 5)),
    ("m.nn.functional.interpolate(x, size=(2, 2), mode='area')", (1, 1, 5, 5)),
    ("m.nn.functional.pad(x, (2, 1), mode='reflect')", (1, 2, 5)),
    ("m.nn.functional.pad(x, (1, 1, 1, 2), mode='replicate')", (1, 2, 4, 4)),
    ("m.nn.functional.pad(x, (2, 1), mode='circular')", (1, 2, 5)),
    ("m.nn.functional.conv2d(x, m.ones(3, 2, 2, 2, dtype=x.dtype))", (1, 2, 4, 4)),
    ("m.nn.functional.grid_sample(x, m.zeros(1, 2, 2, 2, dtype=x.dtype) + 0.3, "
     "align_corners=False)", (1, 1, 4, 4)),
    ("m.nn.functional.relu(x)", (2, 3)), ("x * 2", (2, 3)),
]


def _tied_gradient(lib, expr, shape):
    x = lib.ones(shape, dtype=lib.float64).cumsum(-1).sin().requires_grad_()
    y = eval(expr, {"x": x, "m": lib})
    g, = lib.autograd.grad(y, x, lib.ones_like(y), create_graph=True)
    if not g.requires_grad:
        return False, type(g.grad_fn).__name__
    h, = lib.autograd.grad(g.sum(), x, allow_unused=True)
    return True, None if h is None else h.tolist()


@pytest.mark.parametrize("expr, shape", TIED_GRADIENTS)
def test_gradient_under_create_graph_requires_grad_as_in_pytorch(expr, shape):
    assert _tied_gradient(ember, expr, shape) == _tied_gradient(torch, expr, shape)


def test_reflection_pad_node_names():
    for lib in (ember, torch):
        names = [type(lib.nn.functional.pad(lib.ones((1,) * 2 + (3,) * n, requires_grad=True),
                                            (1,) * 2 * n, mode=mode).grad_fn).__name__
                 for mode in ("reflect", "replicate") for n in (1, 2, 3)]
        assert names == [f"{k}Pad{n}DBackward0" for k in ("Reflection", "Replication")
                         for n in (1, 2, 3)]


# == 4. singular matrices: LinAlgError (or RuntimeError) with PyTorch's message =========

SINGULAR_CALLS = [
    "m.linalg.inv(S)", "m.inverse(S)", "S.inverse()", "m.linalg.inv(B)",
    "m.linalg.solve(S, m.ones(2, dtype=S.dtype))", "m.linalg.solve(B, m.ones(2, 2, dtype=S.dtype))",
    "m.linalg.solve_ex(B, m.ones(2, 2, dtype=S.dtype), check_errors=True)",
    "m.linalg.inv_ex(B, check_errors=True)", "m.linalg.cholesky(N)", "m.linalg.cholesky(BN)",
    "m.cholesky(N)", "m.cholesky(BN)", "m.linalg.cholesky_ex(BN, check_errors=True)",
    "m.linalg.lu_factor(S)", "m.linalg.lu_factor(B)", "m.linalg.lu_factor_ex(B, check_errors=True)",
    "m.lu(B)", "m.linalg.tensorinv(m.zeros(2, 2, 2, 2, dtype=S.dtype))",
    "m.linalg.matrix_power(B, -1)", "m.linalg.inv(F)",
    "m.linalg.solve(F, m.ones(2, dtype=F.dtype))",
]


def _matrices(m, dtype):
    d = getattr(m, dtype)
    S = m.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=d)
    N = m.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=d)
    return {"m": m, "S": S, "N": N, "B": m.stack([m.eye(2, dtype=d), S]),
            "BN": m.stack([m.eye(2, dtype=d), N]),
            # exactly singular when getrf divides (PyTorch's MKL), not with a fused
            # multiply-add or a reciprocal
            "F": m.tensor([[0.1, 0.2], [0.3, 0.6]], dtype=d)}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("call", SINGULAR_CALLS)
def test_singular_matrix_errors_match_pytorch(call, dtype):
    mine = _outcome(lambda: eval(call, _matrices(ember, dtype)))
    theirs = _outcome(lambda: eval(call, _matrices(torch, dtype)))
    if theirs[0] == "ok":
        assert mine[0] == "ok"
        return
    assert mine == theirs
    if theirs[0] == "_LinAlgError":
        with pytest.raises(ember.linalg.LinAlgError):
            eval(call, _matrices(ember, dtype))


# == 5. NumPy interchange ===============================================================

_ARRAYS = {
    "negative stride": lambda: __import__("numpy").arange(6.0).reshape(2, 3)[:, ::-1],
    "one element, negative stride": lambda: __import__("numpy").arange(1.0)[::-1],
    "empty, negative stride": lambda: __import__("numpy").arange(0.0)[::-1],
    "big-endian": lambda: __import__("numpy").ones(2, dtype=">f4"),
    "object": lambda: __import__("numpy").array([1, "a"], dtype=object),
    "str": lambda: __import__("numpy").array(["a"]),
}


@pytest.mark.parametrize("maker", ["from_numpy", "as_tensor", "tensor", "asarray"])
@pytest.mark.parametrize("kind", sorted(_ARRAYS))
def test_numpy_arrays_refused_as_pytorch(kind, maker):
    mine = _outcome(lambda: getattr(ember, maker)(_ARRAYS[kind]()).tolist())
    theirs = _outcome(lambda: getattr(torch, maker)(_ARRAYS[kind]()).tolist())
    assert mine == theirs


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("call", ["np.array(t)", "np.asarray(t)", "np.array(t, dtype=np.float32)",
                                  "t.__array__()", "np.add(np.ones(2), t)", "t.numpy()",
                                  "np.array([t, t])"])
def test_numpy_of_a_tensor_that_requires_grad_raises(call):
    import numpy as np

    def run(m):
        return _outcome(lambda: eval(call, {"np": np, "t": m.ones(2, requires_grad=True)}))
    assert run(ember) == run(torch) == (
        "RuntimeError", "Can't call numpy() on Tensor that requires grad. Use "
                        "tensor.detach().numpy() instead.")


# == 3. gradcheck's fast mode ===========================================================

def _gradcheck_run(lib, case, fast):
    """(result or error, number of calls of the function) of a gradcheck in `lib`."""
    calls = [0]
    gen = __import__("numpy").random.default_rng(3)
    x = lib.tensor(gen.standard_normal(3), requires_grad=True)
    y = lib.tensor(gen.standard_normal((2, 3)), requires_grad=True)

    class Wrong(lib.autograd.Function):  # d(t*t)/dt given as 3t
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            t, = ctx.saved_tensors
            return g * 3 * t

    fn, inputs = {"sin": (lambda t: (t * t).sin(), (x,)),
                  "two outputs": (lambda a, b: (a * b, b.sum()), (x, y)),
                  "wrong": (Wrong.apply, (x,))}[case]

    def counted(*args):
        calls[0] += 1
        return fn(*args)
    outcome = _outcome(lambda: lib.autograd.gradcheck(counted, inputs, fast_mode=fast))
    return outcome[0], str(outcome[1]).replace("ember.", "torch."), calls[0]


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("case", ["sin", "two outputs", "wrong"])
def test_gradcheck_modes_match_pytorch(case, fast):
    assert _gradcheck_run(ember, case, fast) == _gradcheck_run(torch, case, fast)


def test_gradgradcheck_fast_mode():
    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: (t * t).sin(), (x,), fast_mode=True)


# == 6. which index kthvalue, median and mode return among ties (and NaN) ===============

def _order_statistics(lib):
    """Indices (and mode's values) of many small rows full of ties and NaN."""
    import random
    rng = random.Random(5)
    out = []
    for trial in range(60):
        n = rng.randint(1, 40)
        pool = [0.0, 1.0, 2.0, 3.0, float("nan")] if trial % 3 == 0 else [0.0, 1.0, 2.0]
        t = lib.tensor([rng.choice(pool) for _ in range(n)])
        k = rng.randint(1, n)
        mode = lib.mode(t)
        out.append((lib.kthvalue(t, k).indices.item(), mode.indices.item(),
                    str(mode.values.item()), lib.median(t, 0).indices.item(),
                    lib.nanmedian(t, 0).indices.item(),
                    lib.mode(t.nan_to_num(7).long()).indices.item()))
    m = lib.tensor([[rng.choice([0.0, 1.0, 2.0]) for _ in range(9)] for _ in range(6)])
    out.append((lib.kthvalue(m, 4, 0).indices.tolist(), lib.mode(m, 0).indices.tolist(),
                lib.kthvalue(m, 3, 1, keepdim=True).indices.tolist(),
                lib.mode(m, 1, True).indices.tolist()))
    return out


def test_order_statistics_pick_pytorchs_index_among_ties():
    assert _order_statistics(ember) == _order_statistics(torch)


# == 7. removed and private functions ===================================================

@pytest.mark.parametrize("call", ["m.symeig(x)", "m.solve(x, x)", "m.eig(x)", "m.matrix_rank(x)",
                                  "m.lstsq(x, x)", "x.symeig()", "x.solve(x)", "x.eig()",
                                  "x.lstsq(x)", "x.matrix_rank()"])
def test_functions_pytorch_2_removed(call):
    def run(m):
        return _outcome(lambda: eval(call, {"m": m, "x": m.eye(2)}))
    mine, theirs = run(ember), run(torch)
    assert mine[0] == theirs[0]
    if theirs[0] == "RuntimeError":
        assert mine == theirs


def test_standard_gamma_and_sample_dirichlet_draw_pytorchs_numbers():
    def draws(m):
        m.manual_seed(0)
        gamma = m._standard_gamma(m.tensor([1.0, 2.0, 0.5]))
        dirichlet = m._sample_dirichlet(m.tensor([[1.0, 2.0, 3.0]], dtype=m.float64))
        return gamma.dtype == m.float32, gamma.tolist(), dirichlet.tolist()
    assert draws(ember) == draws(torch)


def test_config_describes_the_build():
    assert ember.__config__.show().startswith("ember built with:")
    assert "get_num_threads() : " in ember.__config__.parallel_info()


# == 8. register_multi_grad_hook's "all" mode fires with the last gradient ==============

def _hook_order(lib):
    from importlib import import_module
    register = import_module(f"{lib.__name__}.autograd.graph").register_multi_grad_hook
    log = []
    a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
    c = a * 2
    e = ((c * 3 + b) ** 2).sum() + (c * 5).sum()
    register((a, b), lambda grads: log.append(("all", [g is not None for g in grads])))
    register((c, b), lambda grads: log.append(("cb", [g is not None for g in grads])))
    for name, t in (("a", a), ("b", b), ("c", c)):
        t.register_hook(lambda g, name=name: log.append(name))
    e.backward(retain_graph=True)
    (b * 2).sum().backward()  # a is not in this graph
    x, y = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
    p = x * 2
    register((p, y), lambda grads: log.append(("py", [g is not None for g in grads])))
    lib.autograd.grad((p + y).sum(), [x])  # y's gradient is not computed
    return log


def test_multi_grad_hook_all_mode_fires_with_the_last_gradient():
    assert _hook_order(ember) == _hook_order(torch)
