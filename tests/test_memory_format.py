"""Memory formats (`channels_last`, `channels_last_3d`): the strides of tensors laid out in
them and of what ops make of them, against PyTorch's (ember.core.memory_format)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.core.memory_format import is_contiguous_in, suggest_memory_format

torch = pytest.importorskip("torch")


def _pair(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.tensor(x), torch.tensor(x)


def _cl(x, lib):
    return x.to(memory_format=lib.channels_last)


# (name, f(x, lib) -> tensor) on a (2, 3, 4, 5) channels-last input
CASES = [
    ("to", lambda x, lib: x),
    ("clone", lambda x, lib: x.clone()),
    ("clone contiguous", lambda x, lib: x.clone(memory_format=lib.contiguous_format)),
    ("contiguous", lambda x, lib: x.contiguous()),
    ("back to contiguous", lambda x, lib: x.to(memory_format=lib.contiguous_format)),
    ("empty_like", lambda x, lib: lib.empty_like(x)),
    ("zeros_like", lambda x, lib: lib.zeros_like(x)),
    ("ones_like contiguous", lambda x, lib: lib.ones_like(x, memory_format=lib.contiguous_format)),
    ("full_like", lambda x, lib: lib.full_like(x, 2.5)),
    ("rand_like", lambda x, lib: lib.rand_like(x)),
    ("add scalar", lambda x, lib: x + 1),
    ("relu", lambda x, lib: lib.relu(x)),
    ("exp", lambda x, lib: x.exp()),
    ("to float64", lambda x, lib: x.to(lib.float64)),
    ("double", lambda x, lib: x.double()),
    ("slice", lambda x, lib: x[:, :2]),
    ("slice clone", lambda x, lib: x[:, :, :, :2].clone()),
    ("transpose clone", lambda x, lib: x.transpose(2, 3).clone()),
    ("cat", lambda x, lib: lib.cat([x, x], 1)),
    ("conv2d", lambda x, lib: lib.nn.functional.conv2d(x, lib.ones(4, 3, 3, 3))),
    ("conv2d 1x1", lambda x, lib: lib.nn.functional.conv2d(x, lib.ones(4, 3, 1, 1))),
    ("max_pool2d", lambda x, lib: lib.nn.functional.max_pool2d(x, 2)),
    ("max_pool2d indices",
     lambda x, lib: lib.nn.functional.max_pool2d(x, 2, return_indices=True)[1]),
    ("avg_pool2d", lambda x, lib: lib.nn.functional.avg_pool2d(x, 2)),
    ("adaptive_avg_pool2d", lambda x, lib: lib.nn.functional.adaptive_avg_pool2d(x, 1)),
    ("adaptive_max_pool2d", lambda x, lib: lib.nn.functional.adaptive_max_pool2d(x, 2)),
    ("interpolate nearest", lambda x, lib: lib.nn.functional.interpolate(x, scale_factor=2)),
    ("interpolate bilinear", lambda x, lib: lib.nn.functional.interpolate(
        x, scale_factor=2, mode="bilinear", align_corners=False)),
    ("batch_norm", lambda x, lib: lib.nn.functional.batch_norm(
        x, lib.zeros(3), lib.ones(3), training=True)),
    ("flatten", lambda x, lib: lib.flatten(x, 1)),
]


@pytest.mark.parametrize("name,op", CASES, ids=[c[0] for c in CASES])
def test_strides_of_ops_on_channels_last(name, op):
    e, t = _pair((2, 3, 4, 5))
    got, want = op(_cl(e, ember), ember), op(_cl(t, torch), torch)
    assert got.stride() == want.stride(), name
    assert got.is_contiguous() == want.is_contiguous()
    np.testing.assert_allclose(got.detach().numpy() if got.dtype.is_floating_point else
                               got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6) \
        if not name.startswith(("empty", "rand")) else None


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 1, 4, 4), (2, 3, 1, 1), (1, 1, 1, 1)])
def test_to_channels_last_strides(shape):
    e, t = _pair(shape)
    got, want = _cl(e, ember), _cl(t, torch)
    assert got.stride() == want.stride()
    for fmt in ("contiguous_format", "channels_last"):
        assert got.is_contiguous(memory_format=getattr(ember, fmt)) == \
            want.is_contiguous(memory_format=getattr(torch, fmt))
    assert got.contiguous(memory_format=ember.channels_last).stride() == \
        want.contiguous(memory_format=torch.channels_last).stride()
    assert ember.empty(shape, memory_format=ember.channels_last).stride() == \
        torch.empty(shape, memory_format=torch.channels_last).stride()


def test_empty_tensor_strides_as_torch():
    for shape in [(2, 3, 0, 5), (0,), (0, 4), (3, 0), (2, 0, 1)]:
        assert ember.empty(shape).stride() == torch.empty(shape).stride(), shape
        assert ember.empty(shape).stride(-1) == torch.empty(shape).stride(-1)


def test_channels_last_3d():
    e, t = _pair((2, 3, 4, 5, 6))
    fmt_e, fmt_t = ember.channels_last_3d, torch.channels_last_3d
    assert e.to(memory_format=fmt_e).stride() == t.to(memory_format=fmt_t).stride()
    assert ember.empty(2, 3, 4, 5, 6, memory_format=fmt_e).stride() == \
        torch.empty(2, 3, 4, 5, 6, memory_format=fmt_t).stride()
    got = ember.nn.functional.max_pool3d(e.to(memory_format=fmt_e), 2)
    assert got.stride() == torch.nn.functional.max_pool3d(t.to(memory_format=fmt_t), 2).stride()


def test_rank_and_type_errors_as_torch():
    e, t = _pair((2, 3, 4))
    calls = [lambda x, lib: x.to(memory_format=lib.channels_last),
             lambda x, lib: x.contiguous(memory_format=lib.channels_last),
             lambda x, lib: x.clone(memory_format=lib.channels_last),
             lambda x, lib: lib.empty(2, 3, 4, memory_format=lib.channels_last),
             lambda x, lib: lib.empty_like(x, memory_format=lib.channels_last)]
    for call in calls:
        with pytest.raises(RuntimeError) as want:
            call(t, torch)
        with pytest.raises(RuntimeError, match=str(want.value)):
            call(e, ember)
    assert e.is_contiguous(memory_format=ember.channels_last) is False
    nd_e, nd_t = _pair((2, 3, 4, 5))
    with pytest.raises(RuntimeError) as want:
        nd_t.transpose(1, 2).contiguous(memory_format=torch.preserve_format)
    with pytest.raises(RuntimeError, match=str(want.value)):
        nd_e.transpose(1, 2).contiguous(memory_format=ember.preserve_format)
    with pytest.raises(TypeError, match="argument 'memory_format' must be torch.memory_format"):
        e.clone(memory_format="channels_last")


def test_channels_last_model_trains_as_torch():
    """A CNN moved to channels_last (the PyTorch tutorial's recipe): its weights, each
    layer's output and the gradients have PyTorch's strides, and the values are the same."""
    def build(lib):
        nn = lib.nn
        lib.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(8, 4, 3), nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Linear(4, 2))
    tm = build(torch).to(memory_format=torch.channels_last)
    em = build(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    em = em.to(memory_format=ember.channels_last)
    assert em[0].weight.stride() == tm[0].weight.stride()
    xe, xt = _pair((2, 3, 8, 8), seed=1)
    he, ht = _cl(xe, ember), _cl(xt, torch)
    for le, lt in zip(em, tm):
        he, ht = le(he), lt(ht)
        assert he.stride() == ht.stride(), type(lt).__name__
    np.testing.assert_allclose(he.detach().numpy(), ht.detach().numpy(), rtol=1e-4, atol=1e-5)
    he.sum().backward()
    ht.sum().backward()
    for (name, pe), pt in zip(em.named_parameters(), tm.parameters()):
        assert pe.grad.stride() == pt.grad.stride(), name
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-4, atol=1e-5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=4, max_size=4), st.permutations(range(4)),
       st.integers(1, 2))
def test_format_rules_match_torch(shape, order, step):
    """suggest_memory_format and is_contiguous(memory_format=) on permuted and sliced
    tensors of any sizes (0 and 1 included) give PyTorch's answers."""
    base = torch.empty(shape).permute(*order)[..., ::step]
    strides, size = base.stride(), tuple(base.shape)
    want = torch.channels_last if base.is_contiguous(memory_format=torch.channels_last) else None
    assert is_contiguous_in(size, strides, ember.channels_last) == (want is not None)
    suggested = suggest_memory_format(size, strides)
    # PyTorch's own suggestion, observed through a pooling op's output layout
    if 0 not in size and size[2] >= 1 and size[3] >= 1:
        out = torch.nn.functional.max_pool2d(base, 1)
        in_cl = out.is_contiguous(memory_format=torch.channels_last)
        if in_cl != out.is_contiguous():  # (both: a layout that cannot tell them apart)
            assert (suggested is ember.channels_last) == in_cl, (size, strides)


# -- results of copies and elementwise ops on views with gaps or broadcast dims ----------

def _view_chain(lib, rng, shape):
    """A view of an arange of `shape` made by a few random transposes, slices with steps,
    narrows and expands (the same draws for both libraries)."""
    x = lib.arange(int(np.prod(shape)), dtype=lib.float32).reshape(shape) - 3
    for kind in rng.integers(0, 4, 3):
        nd = x.dim()
        d = int(rng.integers(nd))
        if kind == 0 and nd >= 2:
            x = x.transpose(d, (d + 1) % nd)
        elif kind == 1 and x.shape[d] > 2:
            x = x[(slice(None),) * d + (slice(None, None, 2),)]
        elif kind == 2 and x.shape[d] > 1:
            x = x.narrow(d, 1, x.shape[d] - 1)
        else:
            x = x.unsqueeze(d).expand(*x.shape[:d], 3, *x.shape[d:])
    return x


@pytest.mark.parametrize("seed", range(40))
def test_copies_and_elementwise_results_laid_out_as_torch(seed):
    """PyTorch's layouts: a copy (`to`, `clone`, `*_like`) keeps dense strides and lays a
    view with gaps or broadcast dims out densely in its memory order (infer_dense_strides);
    an elementwise result follows TensorIterator's order, where a broadcast dim says
    nothing (NumPy would put it outermost). Strides of size-1 dims aside."""
    checked, unit_dims = [], 0
    for lib_seed in range(5):
        shape = tuple(int(n) for n in np.random.default_rng(seed * 5 + lib_seed)
                      .integers(1, 5, 1 + (seed + lib_seed) % 3))
        views = [_view_chain(lib, np.random.default_rng(seed * 5 + lib_seed), shape)
                 for lib in (ember, torch)]
        if views[0].stride() != views[1].stride():
            continue  # (an empty view's strides, which ember's views do not always copy)
        if 1 in views[1].shape:  # (a size-1 dim's stride, which ember's copies do not yet
            unit_dims += 1       # order by as PyTorch's infer_dense_strides does)
            continue
        checked.append(views[1].stride())
        ops = {"double": lambda x: x.double(), "clone": lambda x: x.clone(),
               "exp": lambda x: x.exp(), "neg": lambda x: -x, "relu": lambda x: x.relu(),
               "gt": lambda x: x > 0, "flip": lambda x: x.flip(0), "mul": lambda x: x * x}
        for name, op in ops.items():
            ours, theirs = op(views[0]), op(views[1])
            assert tuple(ours.shape) == tuple(theirs.shape)
            assert ours.is_contiguous() == theirs.is_contiguous(), (name, views[1].stride())
            assert [s for n, s in zip(ours.shape, ours.stride()) if n > 1] == \
                [s for n, s in zip(theirs.shape, theirs.stride()) if n > 1], \
                (name, tuple(theirs.shape), views[1].stride(), theirs.stride(), ours.stride())
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
        assert [s for n, s in zip(views[1].shape, ember.empty_like(views[0]).stride())
                if n > 1] == [s for n, s in zip(views[1].shape,
                                                 torch.empty_like(views[1]).stride()) if n > 1]
    assert checked or unit_dims
