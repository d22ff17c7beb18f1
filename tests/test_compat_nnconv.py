"""PyTorch programs that port unchanged (issue 16), convolutions, pooling, padding and
resampling: 3-d convolutions and pools, transposed convolutions in 1 to 3 dims, adaptive
max pooling, max unpooling, power-average and fractional max pooling, 3-d padding
layers, InstanceNorm3d, the upsampling layers, grid_sample and affine_grid. PyTorch is the
oracle: values, result dtypes, gradients and errors."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _arrays(*shapes, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _leaves(arrays, grad, const=()):
    wants = [grad and a.dtype.kind == "f" and i not in const for i, a in enumerate(arrays)]
    mine = [ember.tensor(a, requires_grad=w) for a, w in zip(arrays, wants)]
    theirs = [torch.tensor(a, requires_grad=w) for a, w in zip(arrays, wants)]
    return mine, theirs


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(fe, ft, *arrays, grad=True, rtol=1e-5, atol=1e-5, const=()):
    """Run `fe` on ember tensors and `ft` on torch tensors made from the same arrays;
    compare every output (values, dtype, shape) and, with `grad`, every input's gradient
    of a weighted sum of the floating outputs (but those of the arrays numbered in
    `const`)."""
    mine, theirs = _leaves(arrays, grad, const)
    got, want = _flat(fe(*mine)), _flat(ft(*theirs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=rtol,
                                   atol=atol)
    if not grad:
        return got
    rng = np.random.default_rng(1)
    loss_e = loss_t = 0
    for g, w in zip(got, want):
        if w.dtype.is_floating_point and w.requires_grad:
            weight = rng.standard_normal(tuple(w.shape)).astype(np.float32)
            loss_e = loss_e + (g * ember.tensor(weight)).sum()
            loss_t = loss_t + (w * torch.tensor(weight)).sum()
    loss_e.backward()
    loss_t.backward()
    for a, b in zip(mine, theirs):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)
    return got


# -- convolutions ---------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, shapes", [
    (dict(), ((2, 3, 4, 5, 6), (4, 3, 2, 3, 2), (4,))),
    (dict(stride=(2, 1, 2), padding=(1, 0, 2), dilation=(1, 2, 1)),
     ((2, 3, 5, 6, 7), (2, 3, 3, 2, 2), (2,))),
    (dict(groups=2, padding="same"), ((1, 4, 4, 4, 5), (6, 2, 2, 3, 2), (6,))),
    (dict(padding="valid", stride=2), ((3, 4, 5, 5), (2, 3, 2, 2, 2), (2,))),  # unbatched
])
def test_conv3d_matches_torch(kwargs, shapes):
    check(lambda x, w, b: F.conv3d(x, w, b, **kwargs),
          lambda x, w, b: TF.conv3d(x, w, b, **kwargs), *_arrays(*shapes), rtol=1e-4)
    check(lambda x, w, b: ember.conv3d(x, w, **kwargs),
          lambda x, w, b: torch.conv3d(x, w, **kwargs), *_arrays(*shapes))


@pytest.mark.parametrize("n, kwargs, shapes", [
    (1, dict(stride=2, padding=1, output_padding=1), ((2, 4, 5), (4, 3, 3), (3,))),
    (1, dict(groups=2, dilation=2), ((4, 6), (4, 2, 2), (4,))),  # unbatched
    (3, dict(), ((1, 2, 2, 3, 2), (2, 3, 2, 2, 2), (3,))),
    (3, dict(stride=(2, 1, 2), padding=(1, 0, 0), output_padding=(1, 0, 1), groups=2),
     ((2, 4, 3, 2, 3), (4, 1, 3, 2, 2), (2,))),
])
def test_conv_transpose_matches_torch(n, kwargs, shapes):
    name = f"conv_transpose{n}d"
    check(lambda x, w, b: getattr(F, name)(x, w, b, **kwargs),
          lambda x, w, b: getattr(TF, name)(x, w, b, **kwargs), *_arrays(*shapes), rtol=1e-4)
    check(lambda x, w, b: getattr(ember, name)(x, w, None, **kwargs),
          lambda x, w, b: getattr(torch, name)(x, w, None, **kwargs), *_arrays(*shapes))


def test_conv_tbc_matches_torch():
    check(lambda x, w, b: ember.conv_tbc(x, w, b, 1), lambda x, w, b: torch.conv_tbc(x, w, b, 1),
          *_arrays((7, 2, 3), (3, 3, 5), (5,)))
    check(lambda x, w, b: F.conv_tbc(x, w, b), lambda x, w, b: TF.conv_tbc(x, w, b),
          *_arrays((4, 1, 2), (2, 2, 3), (3,)))
    x, w, b = (ember.tensor(a) for a in _arrays((4, 1, 2), (2, 3, 3), (3,)))
    with pytest.raises(RuntimeError, match="conv_tbc"):
        ember.conv_tbc(x, w, b)


def _copy_params(mine, theirs):
    with ember.no_grad():
        for name, p in theirs.named_parameters():
            getattr(mine, name).copy_(ember.tensor(p.detach().numpy()))


@pytest.mark.parametrize("make", [
    lambda nn_: nn_.Conv3d(2, 4, 3, stride=(1, 2, 1), padding=1),
    lambda nn_: nn_.Conv3d(2, 4, (2, 3, 2), padding="same", padding_mode="reflect"),
    lambda nn_: nn_.Conv3d(2, 2, 2, padding=1, padding_mode="circular", bias=False,
                           groups=2),
    lambda nn_: nn_.ConvTranspose3d(2, 4, 3, stride=2, padding=1, output_padding=1),
    lambda nn_: nn_.ConvTranspose1d(2, 4, 3, stride=2, groups=2, dilation=2),
])
def test_conv_modules_match_torch(make):
    mine, theirs = make(nn), make(torch.nn)
    assert repr(mine) == repr(theirs)
    assert tuple(mine.weight.shape) == tuple(theirs.weight.shape)
    _copy_params(mine, theirs)
    shape = (2, 2, 5, 4, 5) if "3d" in type(theirs).__name__ else (2, 2, 6)
    check(mine, theirs, *_arrays(shape), rtol=1e-4)


def test_conv_transpose_output_size_matches_torch():
    for n, cls in ((1, "ConvTranspose1d"), (3, "ConvTranspose3d")):
        mine, theirs = getattr(nn, cls)(2, 3, 3, stride=2), getattr(torch.nn, cls)(2, 3, 3,
                                                                                 stride=2)
        _copy_params(mine, theirs)
        x = _arrays((1, 2) + (3,) * n)[0]
        size = (8,) * n
        got = mine(ember.tensor(x), output_size=size)
        want = theirs(torch.tensor(x), output_size=size)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
        with pytest.raises(ValueError, match="requested an output size"):
            mine(ember.tensor(x), output_size=(10,) * n)


def test_conv_errors_name_the_op():
    x = ember.zeros(1, 2, 4, 4, 4)
    with pytest.raises(RuntimeError, match="conv3d.*weight"):
        F.conv3d(x, ember.zeros(3, 2, 2, 2))
    with pytest.raises(RuntimeError, match=r"to have 3 channels, but got 2 channels instead\n"
                                           r"conv3d: "):  # PyTorch's words, then the note
        F.conv3d(x, ember.zeros(3, 3, 2, 2, 2))
    with pytest.raises(RuntimeError, match=r"output padding must be smaller than either stride "
                                           r"or dilation, but got .*\nconv_transpose3d: "):
        F.conv_transpose3d(x, ember.zeros(2, 3, 2, 2, 2), stride=1, output_padding=1)
    with pytest.raises(RuntimeError, match=r"channels instead\nconv_transpose1d: "):
        F.conv_transpose1d(ember.zeros(1, 3, 4), ember.zeros(2, 3, 2))
    with pytest.raises(RuntimeError, match=r"^padding='same' is not supported for strided "
                                           r"convolutions\nconv3d: "):  # PyTorch's, then the note
        F.conv3d(x, ember.zeros(3, 2, 2, 2, 2), stride=2, padding="same")


def test_conv3d_zero_batch_and_nonfinite_inputs():
    check(lambda x, w: F.conv3d(x, w), lambda x, w: TF.conv3d(x, w),
          *_arrays((0, 2, 3, 3, 3), (1, 2, 2, 2, 2)), grad=False)
    x, w = _arrays((1, 1, 3, 3, 3), (1, 1, 2, 2, 2))
    x[0, 0, 0, 0, 0], x[0, 0, 2, 2, 2] = np.inf, np.nan
    check(lambda x, w: F.conv3d(x, w), lambda x, w: TF.conv3d(x, w), x, w, grad=False)


# -- max and average pooling ------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=2),
    dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 0, 1), ceil_mode=True),
    dict(kernel_size=2, stride=1, dilation=(2, 1, 1)),
])
def test_max_pool3d_matches_torch(kwargs):
    (x,) = _arrays((2, 3, 5, 6, 5))
    check(lambda x: F.max_pool3d(x, **kwargs, return_indices=True),
          lambda x: TF.max_pool3d(x, **kwargs, return_indices=True), x)
    check(lambda x: F.max_pool3d(x, **kwargs), lambda x: TF.max_pool3d(x, **kwargs), x[0])
    check(lambda x: ember.max_pool3d(x, **kwargs), lambda x: torch.max_pool3d(x, **kwargs), x)
    check(lambda x: F.max_pool3d_with_indices(x, **kwargs),
          lambda x: TF.max_pool3d_with_indices(x, **kwargs), x)
    check(nn.MaxPool3d(**kwargs, return_indices=True),
          torch.nn.MaxPool3d(**kwargs, return_indices=True), x)


def test_max_pool_with_indices_1d_2d_match_torch():
    (x,) = _arrays((2, 3, 7, 6))
    check(lambda x: F.max_pool2d_with_indices(x, 3, 2, 1),
          lambda x: TF.max_pool2d_with_indices(x, 3, 2, 1), x)
    check(lambda x: F.max_pool1d_with_indices(x[0], 2, ceil_mode=True),
          lambda x: TF.max_pool1d_with_indices(x[0], 2, ceil_mode=True), x)
    check(lambda x: ember.max_pool1d_with_indices(x[0], 3, 2, 1),
          lambda x: torch.max_pool1d_with_indices(x[0], 3, 2, 1), x)


def test_max_pool3d_nan_inf_integers_and_zero_batch():
    (x,) = _arrays((1, 2, 4, 4, 4))
    x[0, 0, 0, 0, 0], x[0, 1, 1, 1, 1], x[0, 1, 3, 3, 3] = np.nan, np.inf, -np.inf
    check(lambda x: F.max_pool3d(x, 2, return_indices=True),
          lambda x: TF.max_pool3d(x, 2, return_indices=True), x, grad=False)
    ints = np.arange(2 * 64).reshape(2, 4, 4, 4).astype(np.int64)[::-1].copy()
    check(lambda x: F.max_pool3d(x, 2, 1), lambda x: TF.max_pool3d(x, 2, 1), ints, grad=False)
    check(lambda x: F.max_pool3d(x, 2), lambda x: TF.max_pool3d(x, 2),
          *_arrays((0, 2, 4, 4, 4)), grad=False)
    with pytest.raises(RuntimeError, match="max_pool3d"):
        F.max_pool3d(ember.zeros(1, 2, 4, 4), 2, padding=2)  # pad > kernel / 2


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 3, 2), stride=1, padding=(1, 1, 0), divisor_override=5),
])
def test_avg_pool3d_matches_torch(kwargs):
    (x,) = _arrays((2, 2, 5, 6, 4))
    check(lambda x: F.avg_pool3d(x, **kwargs), lambda x: TF.avg_pool3d(x, **kwargs), x)
    check(nn.AvgPool3d(**kwargs), torch.nn.AvgPool3d(**kwargs), x[0])
    assert repr(nn.AvgPool3d(**kwargs)) == repr(torch.nn.AvgPool3d(**kwargs))


@pytest.mark.parametrize("size", [2, (3, 2, 4), (None, 3, 1), 1])
def test_adaptive_avg_pool3d_matches_torch(size):
    (x,) = _arrays((2, 3, 5, 6, 4))
    check(lambda x: F.adaptive_avg_pool3d(x, size), lambda x: TF.adaptive_avg_pool3d(x, size), x)
    check(nn.AdaptiveAvgPool3d(size), torch.nn.AdaptiveAvgPool3d(size), x[0])
    check(lambda x: F.interpolate(x, size=(3, 4, 3), mode="area"),
          lambda x: TF.interpolate(x, size=(3, 4, 3), mode="area"), x)


@pytest.mark.parametrize("n, size", [(1, 3), (1, 7), (2, (3, 2)), (2, (None, 4)), (3, 2),
                                     (3, (1, 3, 2))])
def test_adaptive_max_pool_matches_torch(n, size):
    (x,) = _arrays((2, 3) + (7, 5, 6)[:n])
    name = f"adaptive_max_pool{n}d"
    check(lambda x: getattr(F, name)(x, size, True),
          lambda x: getattr(TF, name)(x, size, True), x)
    check(lambda x: getattr(F, name + "_with_indices")(x[0], size),
          lambda x: getattr(TF, name + "_with_indices")(x[0], size), x)
    cls = f"AdaptiveMaxPool{n}d"
    check(getattr(nn, cls)(size), getattr(torch.nn, cls)(size), x)
    assert repr(getattr(nn, cls)(size)) == repr(getattr(torch.nn, cls)(size))
    if n == 1:
        check(lambda x: ember.adaptive_max_pool1d(x, size),
              lambda x: torch.adaptive_max_pool1d(x, size), x)


def test_adaptive_max_pool_nonfinite_integers_and_errors():
    (x,) = _arrays((1, 2, 5, 7))
    x[0, 0, 0, 0], x[0, 1, 2, 3] = np.inf, -np.inf
    check(lambda x: F.adaptive_max_pool2d(x, 3, True),
          lambda x: TF.adaptive_max_pool2d(x, 3, True), x)
    ints = np.arange(70).reshape(1, 2, 5, 7).astype(np.int64)
    got = F.adaptive_max_pool2d(ember.tensor(ints), (2, 3), True)
    want = TF.adaptive_max_pool2d(torch.tensor(ints.astype(np.float64)), (2, 3), True)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy().astype(np.int64))
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
    assert got[0].dtype is ember.int64
    with pytest.raises(RuntimeError, match="adaptive_max_pool2d"):
        F.adaptive_max_pool2d(ember.zeros(1, 0, 4, 4), 2)
    with pytest.raises(RuntimeError, match="adaptive_max_pool3d"):
        F.adaptive_max_pool3d(ember.zeros(2, 4, 4), 2)
    with pytest.raises(RuntimeError, match="adaptive_max_pool1d"):
        F.adaptive_max_pool1d(ember.zeros(1, 2, 4), (2, 2))


# -- unpooling, power-average and fractional pooling -----------------------------------


@pytest.mark.parametrize("n, kwargs", [(1, dict(kernel_size=2)),
                                       (2, dict(kernel_size=3, stride=2, padding=1)),
                                       (3, dict(kernel_size=2, stride=(1, 2, 2)))])
def test_max_unpool_inverts_max_pool_like_torch(n, kwargs):
    (x,) = _arrays((2, 3) + ((6,), (5, 5), (6, 4, 4))[n - 1])
    pool = f"max_pool{n}d"
    unpool = f"max_unpool{n}d"
    values, idx = getattr(TF, pool)(torch.tensor(x), return_indices=True, **kwargs)
    check(lambda v: getattr(F, unpool)(v, ember.tensor(idx.numpy()), **kwargs),
          lambda v: getattr(TF, unpool)(v, idx, **kwargs), values.numpy())
    size = tuple(x.shape[2:])
    check(lambda v: getattr(F, unpool)(v[0], ember.tensor(idx.numpy()[0]), **kwargs,
                                        output_size=size),
          lambda v: getattr(TF, unpool)(v[0], idx[0], **kwargs, output_size=size),
          values.numpy())
    cls = f"MaxUnpool{n}d"
    mine, theirs = getattr(nn, cls)(**kwargs), getattr(torch.nn, cls)(**kwargs)
    assert repr(mine) == repr(theirs)
    check(lambda v: mine(v, ember.tensor(idx.numpy())), lambda v: theirs(v, idx),
          values.numpy())


def test_max_unpool_errors():
    v = ember.ones(1, 1, 2, 2)
    with pytest.raises(RuntimeError, match=r"^Found an invalid max index: 16 \(output "
                                           r"volumes are of size 4x4\)$"):
        F.max_unpool2d(v, ember.tensor([[[[0, 1], [2, 16]]]]), 2)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(v, ember.zeros(1, 1, 2, 2, dtype=ember.int64), 2, output_size=(9, 9))
    with pytest.raises(RuntimeError, match="max_unpool3d.*4D or 5D input"):
        F.max_unpool3d(v[0, 0], ember.zeros(2, 2, dtype=ember.int64), 2)
    with pytest.raises(RuntimeError, match="max_unpool2d.*shape of indices"):
        F.max_unpool2d(v, ember.zeros(1, 1, 2, 1, dtype=ember.int64), 2)


@pytest.mark.parametrize("n, p, kwargs", [
    (1, 2.0, dict(kernel_size=3)), (1, 3.0, dict(kernel_size=2, stride=1, ceil_mode=True)),
    (2, 2.0, dict(kernel_size=(2, 3), stride=2)), (2, 1.5, dict(kernel_size=2)),
    (3, 2.0, dict(kernel_size=2, stride=1)), (2, float("inf"), dict(kernel_size=2)),
])
def test_lp_pool_matches_torch(n, p, kwargs):
    (x,) = _arrays((2, 3) + (6, 7, 5)[:n])
    if 0 < p < float("inf") and p != int(p):
        x = np.abs(x) + 0.1  # fractional powers of negatives are NaN in both
    name = f"lp_pool{n}d"
    check(lambda x: getattr(F, name)(x, p, **kwargs), lambda x: getattr(TF, name)(x, p, **kwargs),
          x, rtol=1e-4)
    cls = f"LPPool{n}d"
    mine, theirs = getattr(nn, cls)(p, **kwargs), getattr(torch.nn, cls)(p, **kwargs)
    assert repr(mine) == repr(theirs)
    check(mine, theirs, x, rtol=1e-4)


@pytest.mark.parametrize("n, kwargs", [
    (2, dict(kernel_size=2, output_size=(4, 3))),
    (2, dict(kernel_size=(3, 2), output_ratio=(0.5, 0.7))),
    (2, dict(kernel_size=2, output_size=1)),
    (3, dict(kernel_size=2, output_size=(3, 2, 4))),
    (3, dict(kernel_size=(1, 2, 3), output_ratio=0.6)),
])
def test_fractional_max_pool_with_samples_matches_torch(n, kwargs):
    (x,) = _arrays((2, 3) + (7, 6, 8)[:n])
    (u,) = _arrays((2, 3, n))
    u = np.abs(u) % 1.0
    name = f"fractional_max_pool{n}d"
    check(lambda x, u: getattr(F, name)(x, **kwargs, return_indices=True, _random_samples=u),
          lambda x, u: getattr(TF, name)(x, **kwargs, return_indices=True, _random_samples=u),
          x, u, const=(1,))
    check(lambda x, u: getattr(F, name)(x[0], **kwargs, _random_samples=u[:1]),
          lambda x, u: getattr(TF, name)(x[0], **kwargs, _random_samples=u[:1]), x, u,
          const=(1,))
    cls = f"FractionalMaxPool{n}d"
    mine = getattr(nn, cls)(**kwargs, _random_samples=ember.tensor(u))
    theirs = getattr(torch.nn, cls)(**kwargs, _random_samples=torch.tensor(u))
    check(mine, theirs, x)


def test_fractional_max_pool_random_windows_are_windows():
    """Without samples: the output has the asked size, each index points at its value,
    and each value is the maximum of a kernel-sized window of its plane."""
    ember.manual_seed(3)
    (x,) = _arrays((2, 3, 9, 8))
    values, idx = F.fractional_max_pool2d(ember.tensor(x), (2, 3), output_size=(5, 4),
                                          return_indices=True)
    assert tuple(values.shape) == (2, 3, 5, 4) and idx.dtype is ember.int64
    flat = x.reshape(2, 3, -1)
    v, i = values.numpy().reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, i, 2), v)
    windows = np.lib.stride_tricks.sliding_window_view(x, (2, 3), axis=(2, 3)).max((-1, -2))
    for b in range(2):
        for c in range(3):
            assert np.isin(v[b, c], windows[b, c]).all()
    rows = i // 8  # the windows' rows grow along the output's rows
    assert (np.diff(rows.reshape(2, 3, 5, 4), axis=2) >= 0).all()
    out = nn.FractionalMaxPool3d(2, output_ratio=0.5)(ember.randn(2, 2, 6, 6, 7))
    assert tuple(out.shape) == (2, 2, 3, 3, 3)


def test_fractional_max_pool_errors():
    x = ember.zeros(1, 2, 5, 5)
    with pytest.raises(ValueError, match="output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match="fractional_max_pool2d.*too large"):
        F.fractional_max_pool2d(x, 3, output_size=4)
    with pytest.raises(RuntimeError, match="fractional_max_pool2d.*_random_samples"):
        F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=ember.rand(1, 3, 2))
    with pytest.raises(RuntimeError, match="fractional_max_pool3d.*4D or 5D"):
        F.fractional_max_pool3d(x[0, 0], 2, output_size=2)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="only one of"):
        nn.FractionalMaxPool3d(2, output_size=2, output_ratio=0.5)


# -- padding, normalisation and upsampling layers --------------------------------------


@pytest.mark.parametrize("cls, args", [
    ("ConstantPad3d", ((1, 0, 2, 1, 0, 1), 1.5)), ("ZeroPad3d", (1,)),
    ("ReflectionPad3d", ((1, 2, 0, 1, 2, 0),)), ("ReplicationPad3d", (2,)),
    ("CircularPad3d", ((1, 1, 2, 0, 0, 1),)),
])
def test_pad3d_layers_match_torch(cls, args):
    mine, theirs = getattr(nn, cls)(*args), getattr(torch.nn, cls)(*args)
    assert repr(mine) == repr(theirs)
    (x,) = _arrays((2, 2, 3, 4, 3))
    check(mine, theirs, x)
    check(mine, theirs, x[0])  # (C, D, H, W)


@pytest.mark.parametrize("kwargs", [dict(), dict(affine=True),
                                    dict(track_running_stats=True, affine=True)])
def test_instance_norm3d_matches_torch(kwargs):
    mine, theirs = nn.InstanceNorm3d(3, **kwargs), torch.nn.InstanceNorm3d(3, **kwargs)
    (x,) = _arrays((2, 3, 3, 4, 2))
    check(mine, theirs, x, rtol=1e-4, atol=1e-4)
    check(mine, theirs, x[0], rtol=1e-4, atol=1e-4)
    if kwargs.get("track_running_stats"):
        np.testing.assert_allclose(mine.running_var.numpy(), theirs.running_var.numpy(),
                                   rtol=1e-5)
        mine.eval()
        theirs.eval()
        check(mine, theirs, x, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="expected 4D or 5D input"):
        mine(ember.zeros(3, 4, 4))


@pytest.mark.parametrize("cls, kwargs", [
    ("UpsamplingNearest2d", dict(scale_factor=2)), ("UpsamplingNearest2d", dict(size=(5, 7))),
    ("UpsamplingBilinear2d", dict(scale_factor=2)), ("UpsamplingBilinear2d", dict(size=(4, 7))),
])
def test_upsampling_layers_match_torch(cls, kwargs):
    mine, theirs = getattr(nn, cls)(**kwargs), getattr(torch.nn, cls)(**kwargs)
    assert repr(mine) == repr(theirs)
    check(mine, theirs, *_arrays((2, 3, 3, 4)))


# -- ONNX export of the 3-d and transposed layers ----------------------------------------


@pytest.mark.parametrize("make, shape, op", [
    (lambda: nn.Conv3d(2, 3, 3, stride=(1, 2, 1), padding=1), (2, 2, 4, 5, 4), "Conv"),
    (lambda: nn.ConvTranspose1d(2, 4, 3, stride=2, groups=2), (2, 2, 5), "ConvTranspose"),
    (lambda: nn.ConvTranspose3d(2, 3, 2, stride=2, output_padding=1), (1, 2, 2, 3, 2),
     "ConvTranspose"),
    (lambda: nn.MaxPool3d(2, padding=1), (2, 2, 4, 5, 4), "MaxPool"),
    (lambda: nn.AvgPool3d(3, 2, padding=1), (2, 2, 5, 5, 4), "AveragePool"),
    (lambda: nn.AdaptiveAvgPool3d((2, 1, 2)), (2, 2, 4, 3, 4), "AveragePool"),
    (lambda: nn.AdaptiveMaxPool2d((3, 2)), (2, 2, 7, 5), None),
])
def test_onnx_export_runs_in_onnxruntime(make, shape, op):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    model = make().eval()
    x = ember.randn(*shape)
    buf = io.BytesIO()
    ember.onnx.export(model, (x,), buf)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    if op is not None:
        assert op in {n.op_type for n in proto.graph.node}
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    with ember.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# -- grid_sample and affine_grid ---------------------------------------------------------


@pytest.mark.parametrize("n, mode", [(2, "bilinear"), (2, "nearest"), (2, "bicubic"),
                                     (3, "bilinear"), (3, "nearest")])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(n, mode, padding_mode, align_corners):
    x, g = _arrays((2, 3) + (5, 4, 6)[:n], (2,) + (3, 4, 2)[:n] + (n,), seed=n)
    g = g * 0.8  # some coordinates fall outside [-1, 1]
    check(lambda x, g: F.grid_sample(x, g, mode, padding_mode, align_corners),
          lambda x, g: TF.grid_sample(x, g, mode, padding_mode, align_corners), x, g,
          rtol=1e-4, atol=1e-5)


def test_grid_sampler_functions_match_torch():
    x, g = _arrays((1, 2, 4, 5), (1, 3, 3, 2))
    for name in ("grid_sampler", "grid_sampler_2d"):
        check(lambda x, g, name=name: getattr(ember, name)(x, g, 0, 2, False),
              lambda x, g, name=name: getattr(torch, name)(x, g, 0, 2, False), x, g)
    x, g = _arrays((1, 2, 3, 4, 5), (1, 2, 3, 2, 3))
    check(lambda x, g: ember.grid_sampler_3d(x, g, 1, 1, True),
          lambda x, g: torch.grid_sampler_3d(x, g, 1, 1, True), x, g)


def test_grid_sample_identity_affine_grid_reproduces_input():
    (x,) = _arrays((2, 3, 4, 5))
    theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * 2)
    for align in (False, True):
        grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=align)
        out = F.grid_sample(ember.tensor(x), grid, align_corners=align)
        np.testing.assert_allclose(out.numpy(), x, rtol=1e-5, atol=1e-6)


def test_grid_sample_and_affine_grid_show_torchs_node_names():
    """A spatial transformer's printed grid and warp say grad_fn=<AffineGridGeneratorBackward0>
    and <GridSampler2DBackward0> (3D for volumes), whichever function made them."""
    names = []
    for lib in (torch, ember):
        x2, g2, x3, g3 = (lib.tensor(a, requires_grad=True) for a in _arrays(
            (1, 2, 4, 5), (1, 3, 3, 2), (1, 2, 3, 4, 5), (1, 2, 3, 2, 3)))
        theta = lib.tensor(np.eye(2, 3, dtype=np.float32)[None], requires_grad=True)
        names.append((lib.nn.functional.affine_grid(theta, (1, 2, 4, 5), False).grad_fn.name(),
                      lib.nn.functional.grid_sample(x2, g2, align_corners=False).grad_fn.name(),
                      lib.nn.functional.grid_sample(x3, g3, align_corners=True).grad_fn.name(),
                      lib.grid_sampler(x2, g2, 2, 0, False).grad_fn.name(),
                      lib.grid_sampler_2d(x2, g2, 1, 1, False).grad_fn.name(),
                      lib.grid_sampler_3d(x3, g3, 0, 2, True).grad_fn.name()))
    assert names[1] == names[0]


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 3), (2, 2, 3, 4, 2)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(size, align_corners):
    n = len(size) - 2
    (theta,) = _arrays((2, n, n + 1))
    check(lambda t: F.affine_grid(t, size, align_corners),
          lambda t: TF.affine_grid(t, size, align_corners), theta)
    check(lambda t: ember.affine_grid_generator(t, size, align_corners),
          lambda t: torch.affine_grid_generator(t, size, align_corners), theta)


def test_grid_sample_and_affine_grid_errors_and_warnings():
    x, g = ember.zeros(1, 2, 3, 3), ember.zeros(1, 2, 2, 2)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, g)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(ember.zeros(1, 2, 3), (1, 1, 2, 2))
    with pytest.raises(ValueError, match="expected mode to be"):
        F.grid_sample(x, g, mode="linear", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(x, g, padding_mode="wrap", align_corners=False)
    with pytest.raises(RuntimeError, match="grid_sampler.*size 2 in last dimension"):
        F.grid_sample(x, ember.zeros(1, 2, 2, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="grid_sampler.*same batch size"):
        F.grid_sample(x, ember.zeros(2, 2, 2, 2), align_corners=False)
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double$"):
        F.grid_sample(x, g.double(), align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
        F.grid_sample(ember.zeros(1, 1, 2, 2, 2), ember.zeros(1, 1, 1, 1, 3), "bicubic",
                      align_corners=False)
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices"):
        F.affine_grid(ember.zeros(1, 3, 4), (1, 1, 2, 2), align_corners=False)
    with pytest.raises(ValueError, match="floating point type"):
        F.affine_grid(ember.zeros(1, 2, 3, dtype=ember.int64), (1, 1, 2, 2),
                      align_corners=False)
    with pytest.raises(ValueError, match="non-zero, positive output size"):
        F.affine_grid(ember.zeros(1, 2, 3), (1, 1, 0, 2), align_corners=False)
    with pytest.raises(NotImplementedError, match="4D and 5D sizes"):
        F.affine_grid(ember.zeros(1, 2, 3), (1, 1, 2), align_corners=False)


class _SpatialTransformer(nn.Module):
    """affine_grid + grid_sample of a learned map: what a spatial transformer runs."""

    def __init__(self, n, mode, padding_mode):
        super().__init__()
        self.n, self.mode, self.padding_mode = n, mode, padding_mode
        self.fc = nn.Linear(2 * 3 * 4 * (3 if n == 3 else 1), n * (n + 1))

    def forward(self, x):
        theta = self.fc(x.flatten(1)).reshape(-1, self.n, self.n + 1)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        return F.grid_sample(x, grid, self.mode, self.padding_mode, align_corners=True)


@pytest.mark.parametrize("n, mode, padding_mode, opset", [
    (2, "bilinear", "zeros", 17), (2, "bicubic", "reflection", 17),
    (2, "nearest", "border", 20), (3, "bilinear", "border", 20), (3, "nearest", "zeros", 17),
])
def test_grid_sample_exports_as_grid_sample(n, mode, padding_mode, opset):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    ember.manual_seed(0)
    model = _SpatialTransformer(n, mode, padding_mode).eval()
    x = ember.randn(*((2, 2) + (3, 4, 3)[:n] if n == 3 else (2, 2, 3, 4)))
    buf = io.BytesIO()
    ember.onnx.export(model, (x,), buf, opset_version=opset)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    ops = {node.op_type for node in proto.graph.node}
    assert ("GridSample" in ops) == (n == 2 or opset >= 20)  # else: the decomposition
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    with ember.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_torch_convolution_matches_torch():
    x, w, b = _arrays((2, 2, 5, 6, 4), (3, 2, 2, 3, 2), (3,))
    args = ((2, 1, 1), (1, 0, 1), (1, 2, 1), False, (0, 0, 0), 1)
    check(lambda x, w, b: ember.convolution(x, w, b, *args),
          lambda x, w, b: torch.convolution(x, w, b, *args), x, w, b, rtol=1e-4)
    x, w = _arrays((2, 4, 5), (4, 3, 3))
    args = ((2,), (1,), (1,), True, (1,), 2)
    check(lambda x, w: ember.convolution(x, w, None, *args),
          lambda x, w: torch.convolution(x, w, None, *args), x, w)
    with pytest.raises(RuntimeError, match="convolution"):
        ember.convolution(ember.tensor(x), ember.zeros(4, 3), None, (1,), (0,), (1,), False,
                          (0,), 1)


_EMPTY = {
    "conv_transpose3d": lambda L, F_: F_.conv_transpose3d(L.zeros(0, 2, 2, 2, 2),
                                                          L.ones(2, 3, 2, 2, 2)),
    "conv3d_groups": lambda L, F_: F_.conv3d(L.zeros(0, 4, 3, 3, 3), L.ones(2, 2, 2, 2, 2),
                                             groups=2),
    "adaptive_max_pool2d": lambda L, F_: F_.adaptive_max_pool2d(L.zeros(0, 2, 4, 4), 3, True),
    "adaptive_max_pool1d_size_0": lambda L, F_: L.adaptive_max_pool1d(L.ones(1, 2, 4), 0),
    "avg_pool3d": lambda L, F_: F_.avg_pool3d(L.zeros(0, 2, 4, 4, 4), 2),
    "grid_sample": lambda L, F_: F_.grid_sample(L.zeros(0, 2, 4, 4), L.zeros(0, 3, 3, 2),
                                                align_corners=False),
    "grid_sample_no_points": lambda L, F_: F_.grid_sample(L.ones(1, 2, 4, 4),
                                                          L.zeros(1, 0, 3, 2),
                                                          align_corners=False),
    "fractional_max_pool2d": lambda L, F_: F_.fractional_max_pool2d(
        L.zeros(0, 2, 5, 5), 2, 3, _random_samples=L.zeros(0, 2, 2)),
    "max_unpool2d": lambda L, F_: F_.max_unpool2d(L.zeros(0, 2, 2, 2),
                                                  L.zeros(0, 2, 2, 2, dtype=L.int64), 2),
    "lp_pool3d": lambda L, F_: F_.lp_pool3d(L.zeros(0, 2, 4, 4, 4), 2, 2),
    "conv_tbc": lambda L, F_: L.conv_tbc(L.zeros(4, 0, 2), L.ones(2, 2, 3), L.ones(3)),
}


@pytest.mark.parametrize("name", sorted(_EMPTY))
def test_zero_size_inputs_match_torch(name):
    got, want = _flat(_EMPTY[name](ember, F)), _flat(_EMPTY[name](torch, TF))
    assert [tuple(g.shape) for g in got] == [tuple(w.shape) for w in want]
    assert [str(g.dtype).split(".")[-1] for g in got] == \
        [str(w.dtype).split(".")[-1] for w in want]
