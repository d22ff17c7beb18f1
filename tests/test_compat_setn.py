"""What the programs of set N (NeRF, SIREN, PixelCNN, MAE, CLIP, MoCo/BYOL, DINO, a diffusion
UNet) needed of ember, checked against PyTorch: values, gradients, node names, errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pair(a, requires_grad=False):
    """The same values as an ember tensor and a torch tensor."""
    a = np.asarray(a, dtype=np.float32)
    return (ember.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


@pytest.mark.parametrize("act", ["relu", "leaky_relu", "hardtanh", "relu6"])
def test_a_piecewise_linear_gradient_stays_connected_to_the_input(act):
    """SIREN's Laplacian of a ReLU net: the gradient taken with create_graph=True reads the
    input (its own gradient zeros), so a second grad gives zeros, not an unused-tensor error."""
    x = [[0.5, -1.0, 2.0], [1.5, -0.2, 7.0]]
    got = []
    for lib, fn, t in ((ember, getattr(F, act), _pair(x, True)[0]),
                       (torch, getattr(TF, act), _pair(x, True)[1])):
        g, = lib.autograd.grad(fn(t * 2.0).sum(), t, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), t)
        got.append((g.detach().numpy(), g.grad_fn.name(), gg.numpy()))
    np.testing.assert_allclose(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][2], got[1][2])
    if act != "relu":  # (relu's first gradient is then multiplied by 2: MulBackward0)
        assert got[0][1] == got[1][1]


def test_relu_double_backward_names_and_passes_the_output_gradient():
    (e, t) = _pair([3.0, -1.0, 0.0], True)
    ge, = ember.autograd.grad(ember.relu(e), e, ember.ones(3), create_graph=True)
    gt, = torch.autograd.grad(torch.relu(t), t, torch.ones(3), create_graph=True)
    assert ge.grad_fn.name() == gt.grad_fn.name() == "ThresholdBackwardBackward0"
    np.testing.assert_array_equal(ge.detach().numpy(), gt.detach().numpy())


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("kw", [{"size": (5, 7)}, {"size": (6, 17)}, {"scale_factor": 0.37},
                                {"size": (20, 9)}, {"size": (4, 4), "align_corners": True},
                                {"scale_factor": (0.5, 0.25), "recompute_scale_factor": True}])
def test_interpolate_antialias_matches_pytorch(mode, kw):
    """interpolate(antialias=True) (torchvision's Resize on tensors): PIL-style filters
    stretched by the downscaling factor, normalised per output; a kept size is untouched."""
    a = np.random.default_rng(0).standard_normal((2, 3, 13, 17))
    got = F.interpolate(ember.tensor(a), mode=mode, antialias=True, **kw)
    want = TF.interpolate(torch.tensor(a), mode=mode, antialias=True, **kw)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_interpolate_antialias_gradient_and_refusals():
    a = np.random.default_rng(1).standard_normal((1, 2, 9, 9))
    (e, t) = _pair(a, True)
    F.interpolate(e, size=(4, 3), mode="bilinear", antialias=True).pow(2).sum().backward()
    TF.interpolate(t, size=(4, 3), mode="bilinear", antialias=True).pow(2).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    for lib, f in ((ember, F), (torch, TF)):
        for x, mode in ((lib.zeros(1, 1, 4), "linear"), (lib.zeros(1, 1, 4, 4), "nearest")):
            with pytest.raises(ValueError, match="^Anti-alias option is restricted to bilinear, "
                               "bicubic, and lanczos modes and requires a 4-D tensor as input$"):
                f.interpolate(x, size=2, mode=mode, antialias=True)


@pytest.mark.parametrize("op, shape, factor", [
    ("pixel_unshuffle", (1, 1, 4, 3), 2), ("pixel_unshuffle", (1, 1, 3, 4), 2),
    ("pixel_unshuffle", (4, 4), 2), ("pixel_unshuffle", (1, 4, 4), 0),
    ("pixel_unshuffle", (1, 4, 4), -1), ("pixel_shuffle", (1, 3, 4, 4), 2),
    ("pixel_shuffle", (4, 4), 2), ("pixel_shuffle", (1, 4, 4), 0),
    ("pixel_shuffle", (1, 4, 4, 4), 2.0)])
def test_pixel_shuffle_refusals_are_pytorchs(op, shape, factor):
    with pytest.raises((RuntimeError, TypeError)) as want:
        getattr(TF, op)(torch.zeros(shape), factor)
    with pytest.raises(want.type, match=f"^{re.escape(str(want.value))}$"):
        getattr(F, op)(ember.zeros(shape), factor)


def _net(lib):
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(2, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1))
    return net, lib.tensor([[0.5, -1.0], [1.0, 2.0], [0.1, 0.3]])


def test_func_transforms_keep_the_graph_to_closed_over_parameters():
    """torch.func's results stay differentiable with respect to tensors the function closes
    over (a net's parameters): a PINN's loss on `vmap(jacrev(u))(x)` trains `u`. PyTorch's
    gradient is taken here by autograd.grad(create_graph=True), the same derivative, as
    importing torch.func costs seconds; the flags are PyTorch's (True but under no_grad or
    for a frozen net)."""
    from ember import func as fn
    net, x = _net(ember)
    scalar = lambda xi: net(xi).sum()  # noqa: E731
    got = {"grad": fn.grad(scalar)(x), "grad_and_value": fn.grad_and_value(scalar)(x)[1],
           "jacrev": fn.jacrev(net)(x[0]), "jacfwd": fn.jacfwd(net)(x[0]),
           "hessian": fn.hessian(lambda xi: net(xi).squeeze())(x[0]),
           "vjp": fn.vjp(net, x)[1](ember.ones(3, 1))[0],
           "jvp": fn.jvp(net, (x,), (ember.ones(3, 2),))[1]}
    assert all(v.requires_grad for v in got.values()), got
    assert got["jacrev"].grad_fn.name() == "ViewBackward0"
    u_x = fn.vmap(fn.jacrev(lambda xi: net(xi).squeeze()))(x)
    ((u_x - 1.0) ** 2).mean().backward()
    with ember.no_grad():
        assert not fn.jacrev(net)(x[0]).requires_grad
    net.requires_grad_(False)
    assert not fn.grad(scalar)(x).requires_grad

    tnet, tx = _net(torch)
    tx.requires_grad_(True)
    t_u_x, = torch.autograd.grad(tnet(tx).sum(), tx, create_graph=True)
    ((t_u_x - 1.0) ** 2).mean().backward()
    np.testing.assert_allclose(u_x.detach().numpy(), t_u_x.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(net[0].weight.grad.numpy(), tnet[0].weight.grad.numpy(),
                               rtol=1e-5, atol=1e-7)


def test_integer_pow_by_a_negative_number_is_refused_in_pytorchs_words():
    with pytest.raises(RuntimeError) as want:
        torch.tensor([2]) ** -1
    with pytest.raises(RuntimeError, match=f"^{re.escape(str(want.value))}$"):
        ember.tensor([2]) ** -1


def test_cross_without_dim_warns_at_the_callers_line():
    with pytest.warns(UserWarning, match="Using torch.cross without specifying") as rec:
        ember.cross(ember.ones(3, 3), ember.ones(3, 3))
    assert rec[0].filename == __file__


@pytest.mark.parametrize("name, args", [("threshold", (0.2, -3.0)), ("softshrink", (0.5,)),
                                        ("hardshrink", (0.5,))])
def test_threshold_and_shrink_are_one_node_as_pytorchs(name, args):
    """Values (NaN kept where PyTorch keeps it), gradients, node names, and a second
    gradient connected to the input."""
    x = [float("nan"), -1.0, -0.5, 0.2, 0.5, 2.0]
    got = []
    for lib, f, t in ((ember, F, _pair(x, True)[0]), (torch, TF, _pair(x, True)[1])):
        y = getattr(f, name)(t, *args)
        g, = lib.autograd.grad(y.sum(), t, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), t)
        got.append((y.detach().numpy(), y.grad_fn.name(), g.detach().numpy(), g.grad_fn.name(),
                    gg.numpy()))
    for e, t in zip(*got):
        if isinstance(e, str):
            assert e == t
        else:
            np.testing.assert_array_equal(e, t)


def test_threshold_in_place_names_its_node_as_pytorch():
    for lib, f in ((ember, F), (torch, TF)):
        y = lib.ones(3, requires_grad=True) * 1
        f.threshold(y, 0.5, 0.0, inplace=True)
        assert y.grad_fn.name() == "ThresholdBackward1"


def test_a_grad_fn_is_an_instance_of_a_class_named_as_pytorchs():
    """`type(y.grad_fn)` prints as PyTorch's C++ node classes; the node stays itself."""
    got = []
    for lib in (ember, torch):
        x = lib.ones(2, 3, requires_grad=True)
        y = lib.nn.functional.linear(x * 2, lib.ones(4, 3))
        node = y.grad_fn
        got.append([repr(type(node)), type(node).__name__, node.__class__.__name__,
                    repr(type(node.next_functions[0][0].next_functions[0][0])),
                    [type(n).__name__ for n, _ in node.next_functions if n is not None]])
        assert y.grad_fn is node and isinstance(node, lib.autograd.graph.Node)
    assert got[0] == got[1]


def _grad_mode_story(lib):
    seen = []

    @lib.no_grad()
    def samples():
        for _ in range(2):
            yield (lib.ones(1, requires_grad=True) * 2).requires_grad, lib.is_grad_enabled()

    seen.append([list(s) for s in samples()])

    @lib.no_grad
    def recursive(n):
        return recursive(n - 1) if n else lib.is_grad_enabled()

    seen.append((recursive(2), lib.is_grad_enabled()))

    @lib.set_grad_enabled(False)
    def disabled():
        return lib.is_grad_enabled()

    seen.append((lib.is_grad_enabled(), disabled(), lib.is_grad_enabled()))

    @lib.inference_mode()
    def inferred():
        yield (lib.ones(1) * 2).is_inference()

    seen.append((list(inferred()), lib.is_inference_mode_enabled()))
    return seen


def test_grad_mode_decorators_hold_in_generators_and_recursion():
    """`@no_grad()` on a generator holds at every resumption (a sampling loop that
    yields); a recursive decorated call restores the caller's mode."""
    assert _grad_mode_story(ember) == _grad_mode_story(torch)


def test_complex_cast_methods_and_scalar_tensor():
    for lib in (ember, torch):
        x = lib.tensor([1.5, -2.0], requires_grad=True)
        assert (x.cfloat().dtype, x.cdouble().dtype) == (lib.complex64, lib.complex128)
        assert x.cfloat().grad_fn.name() == "ToCopyBackward0"
    for value in (3, 2.5, True):
        got, want = ember.scalar_tensor(value), torch.scalar_tensor(value)
        assert (got.item(), str(got.dtype), got.shape) == \
            (want.item(), str(want.dtype).replace("torch", "ember"), want.shape)
    assert ember.scalar_tensor(1.5, requires_grad=True).requires_grad
