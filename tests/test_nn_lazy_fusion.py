"""Lazy modules (`nn.LazyLinear`, `LazyConv*d`, `LazyBatchNorm*d`, ...) and `nn.utils.fusion`
against PyTorch. Lazy modules:
shapes inferred at the first forward, the module becoming its eager class, the same
initial values from the same seed, state dicts both ways, pickling, errors."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest

import ember
from ember import nn

torch = pytest.importorskip("torch")


def _lib_model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.LazyConv2d(4, 3, padding=1), lib.nn.LazyBatchNorm2d(),
                             lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.LazyLinear(5))


def _np(t):
    return t.detach().numpy()


def test_first_forward_infers_shapes_and_becomes_the_eager_class():
    em, tm = _lib_model(ember), _lib_model(torch)
    assert repr(em).replace("ember", "torch") == repr(tm)  # LazyConv2d(0, 4, ...) etc.
    assert repr(em[0].weight) == repr(tm[0].weight) == "<UninitializedParameter>"
    assert em[4].has_uninitialized_params()
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    ey, ty = em(ember.tensor(x)), tm(torch.tensor(x))
    assert repr(em) == repr(tm)
    assert [type(m).__name__ for m in em] == [type(m).__name__ for m in tm]
    assert type(em[0]) is nn.Conv2d and type(em[0].weight) is nn.Parameter
    assert type(em[1].running_mean) is ember.Tensor
    for (name, ep), (_, tp) in zip(em.state_dict().items(), tm.state_dict().items()):
        np.testing.assert_allclose(_np(ep), _np(tp), rtol=1e-6, atol=1e-7, err_msg=name)
    np.testing.assert_allclose(_np(ey), _np(ty), rtol=1e-5, atol=1e-6)
    assert not hasattr(em[0], "_initialize_hook") and not em[0]._forward_pre_hooks


def test_an_optimizer_built_before_the_first_forward_trains_the_materialized_parameters():
    model = _lib_model(ember)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    before = list(model.parameters())
    model(ember.ones(2, 3, 4, 4)).sum().backward()
    opt.step()
    assert all(a is b for a, b in zip(before, model.parameters()))
    assert model[4].weight.shape == (5, 64) and model[4].weight.grad is not None


def test_uninitialized_state_dicts_and_loading_materializes():
    trained = _lib_model(ember)
    trained(ember.ones(1, 3, 5, 5))
    fresh = _lib_model(ember)
    keys = list(fresh.state_dict())
    assert keys == list(trained.state_dict())
    assert type(fresh.state_dict()["0.weight"]).__name__ == "UninitializedParameter"
    result = fresh.load_state_dict(trained.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    assert fresh[4].weight.shape == (5, 100)
    x = ember.randn(2, 3, 5, 5)
    fresh.eval(), trained.eval()
    assert ember.equal(fresh(x), trained(x))


@pytest.mark.parametrize("make, shape", [
    (lambda lib: lib.nn.LazyLinear(3, bias=False), (2, 7)),
    (lambda lib: lib.nn.LazyConv1d(4, 2), (2, 3, 5)),
    (lambda lib: lib.nn.LazyConv1d(4, 2), (3, 5)),  # unbatched
    (lambda lib: lib.nn.LazyConv3d(2, 2, stride=2), (1, 2, 4, 4, 4)),
    (lambda lib: lib.nn.LazyConvTranspose1d(5, 2), (1, 3, 4)),
    (lambda lib: lib.nn.LazyConvTranspose2d(4, 3, stride=2, groups=2), (1, 2, 3, 3)),
    (lambda lib: lib.nn.LazyConvTranspose3d(2, 2), (1, 3, 2, 2, 2)),
    (lambda lib: lib.nn.LazyBatchNorm1d(affine=False), (4, 3)),
    (lambda lib: lib.nn.LazyBatchNorm3d(momentum=None), (2, 3, 2, 2, 2)),
    (lambda lib: lib.nn.LazyInstanceNorm1d(), (2, 3, 4)),
    (lambda lib: lib.nn.LazyInstanceNorm2d(affine=False, track_running_stats=False),
     (2, 3, 4, 4)),
    (lambda lib: lib.nn.LazyInstanceNorm3d(), (1, 2, 3, 3, 3)),
])
def test_each_lazy_layer_matches_torch(make, shape):
    ember.manual_seed(3), torch.manual_seed(3)
    em, tm = make(ember), make(torch)
    assert repr(em).replace("ember", "torch") == repr(tm)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ey, ty = em(ember.tensor(x)), tm(torch.tensor(x))
    assert repr(em) == repr(tm) and type(em).__name__ == type(tm).__name__
    np.testing.assert_allclose(_np(ey), _np(ty), rtol=1e-5, atol=1e-6)
    assert list(em.state_dict()) == list(tm.state_dict())


def test_errors_as_torch():
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        _ = nn.LazyLinear(2).weight.shape
    with pytest.raises(RuntimeError, match=r"Expected 2D \(unbatched\) or 3D \(batched\) "
                       r"input to LazyConv1d, but got input of size: ember.Size\(\[5\]\)"):
        nn.LazyConv1d(4, 2)(ember.ones(5))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv1d(4, 2, groups=2)(ember.ones(1, 3, 5))
    with pytest.raises(RuntimeError, match="Can't share memory on an uninitialized"):
        nn.LazyLinear(2).share_memory()


def test_copies_and_pickles_stay_lazy_until_their_own_forward():
    module = nn.LazyLinear(4)
    clone = copy.deepcopy(module)
    assert repr(clone.weight) == "<UninitializedParameter>"
    buffer = io.BytesIO()
    ember.save(module, buffer)
    buffer.seek(0)
    loaded = ember.load(buffer, weights_only=False)
    assert repr(loaded) == "LazyLinear(in_features=0, out_features=4, bias=True)"
    assert repr(loaded.weight) == "<UninitializedParameter>"
    loaded(ember.ones(1, 2))
    assert repr(loaded) == "Linear(in_features=2, out_features=4, bias=True)"
    assert repr(module.weight) == "<UninitializedParameter>"  # the original is untouched
    assert isinstance(nn.LazyLinear(2), nn.modules.lazy.LazyModuleMixin)
    assert not isinstance(loaded, nn.modules.lazy.LazyModuleMixin)
    buf = nn.UninitializedBuffer()
    assert repr(buf) == "<UninitializedBuffer>" and not buf.requires_grad
    assert nn.UninitializedParameter().requires_grad


# -- nn.utils.fusion (folding an eval-mode batch norm into the layer before it) ---------

def _fusion_pair(lib, transpose, linear):
    lib.manual_seed(5)
    if linear:
        layer, bn = lib.nn.Linear(6, 4), lib.nn.BatchNorm1d(4)
    elif transpose:
        layer, bn = lib.nn.ConvTranspose2d(3, 4, 3, bias=False), lib.nn.BatchNorm2d(4)
    else:
        layer, bn = lib.nn.Conv2d(3, 4, 3), lib.nn.BatchNorm2d(4)
    with lib.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-1, 1)
    return layer.eval(), bn.eval()


@pytest.mark.parametrize("transpose, linear", [(False, False), (True, False), (False, True)])
def test_fused_layers_equal_torch_and_the_unfused_pair(transpose, linear):
    shape = (5, 6) if linear else (2, 3, 5, 5)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    outs = []
    for lib in (ember, torch):
        layer, bn = _fusion_pair(lib, transpose, linear)
        fusion = lib.nn.utils.fusion
        fused = (fusion.fuse_linear_bn_eval(layer, bn) if linear
                 else fusion.fuse_conv_bn_eval(layer, bn, transpose=transpose))
        assert type(fused) is type(layer) and fused is not layer
        assert isinstance(fused.weight, lib.nn.Parameter) and fused.bias.shape == (4,)
        with lib.no_grad():
            y = fused(lib.tensor(x))
            np.testing.assert_allclose(_np(y), _np(bn(layer(lib.tensor(x)))), rtol=1e-5,
                                       atol=1e-5)
        outs.append(_np(y))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)


def test_fusion_refuses_training_mode_and_mismatched_features():
    layer, bn = _fusion_pair(ember, False, True)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fusion.fuse_linear_bn_eval(layer.train(), bn)
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        nn.utils.fusion.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(4).eval())


def test_conversions_before_the_first_forward_keep_the_module_lazy():
    for lib in (ember, torch):
        linear = lib.nn.LazyLinear(3).to("cpu", lib.float64)
        norm = lib.nn.LazyBatchNorm1d().double()
        assert repr(linear.weight) == "<UninitializedParameter>"
        assert repr(norm.running_mean) == "<UninitializedBuffer>"
        assert linear.weight.dtype == norm.running_mean.dtype == lib.float64
        linear(lib.ones(2, 4, dtype=lib.float64))
        norm(lib.ones(2, 4, dtype=lib.float64))
        assert linear.weight.dtype == norm.running_var.dtype == norm.weight.dtype == lib.float64
        assert type(linear.weight) is lib.nn.Parameter and type(norm.running_mean) is lib.Tensor
