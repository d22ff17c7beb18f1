"""PyTorch behaviours the set-AE programs (the channels-last memory format tutorial and
timm's channels_last recipe) needed, checked against torch itself: the strides that
stack, cat, gather, masked_scatter, addcmul/addcdiv/lerp, clone and convolution give."""

from __future__ import annotations

import functools

import pytest

import ember

torch = pytest.importorskip("torch")


def _nhwc(mod, *shape):
    mod.manual_seed(0)
    return mod.randn(*shape).to(memory_format=mod.channels_last)


def _nchw(mod, *shape):
    mod.manual_seed(1)
    return mod.randn(*shape)


def _stack(mod, dim):
    return mod.stack([_nhwc(mod, 2, 4, 3, 3)] * 2, dim)


# each case: a tensor whose strides (and values) must be PyTorch's
STRIDE_CASES = {
    # ATen's stack is cat along dim, then a view: channels_last inputs stay channels_last
    **{f"stack dim {d}": functools.partial(_stack, dim=d) for d in range(4)},
    "stack cl3d": lambda t: t.stack([_nhwc(t, 2, 4, 3, 3).unsqueeze(2).to(
        memory_format=t.channels_last_3d)] * 2, 1),
    # cat keeps a channels-last format only when every input suggests it (c10's rule)
    "cat cl": lambda t: t.cat([_nhwc(t, 2, 4, 3, 3)] * 2, 1),
    "cat cl, nchw": lambda t: t.cat([_nhwc(t, 2, 4, 3, 3), _nchw(t, 2, 4, 3, 3)], 0),
    "cat cl 1x1": lambda t: t.cat([_nhwc(t, 2, 4, 1, 1)] * 2, 1),
    "cat 5-d not cl3d": lambda t: t.cat([_nhwc(t, 2, 4, 3, 3)[..., None]] * 2, 4),
    "cat N111": lambda t: t.cat([_nchw(t, 2, 1, 1, 1)] * 2, 0),
    # gather's result is row-major, whatever the index's layout
    "gather cl index": lambda t: _nhwc(t, 2, 4, 3, 3).gather(
        1, t.zeros(2, 4, 3, 3, dtype=t.long).to(memory_format=t.channels_last)),
    # masked_scatter clones its input row-major first
    "masked_scatter cl": lambda t: _nhwc(t, 2, 4, 3, 3).masked_scatter(
        _nchw(t, 2, 4, 3, 3) > 0, _nchw(t, 72)),
    # addcmul/addcdiv/lerp are laid out in their first operand's order
    "addcmul cl first": lambda t: t.addcmul(_nhwc(t, 2, 4, 3, 3), _nhwc(t, 2, 4, 3, 3),
                                            _nchw(t, 2, 4, 3, 3)),
    "addcmul nchw first": lambda t: t.addcmul(_nchw(t, 2, 4, 3, 3), _nhwc(t, 2, 4, 3, 3),
                                              _nhwc(t, 2, 4, 3, 3)),
    "addcdiv cl first": lambda t: t.addcdiv(_nhwc(t, 2, 4, 3, 3), _nchw(t, 2, 4, 3, 3),
                                            _nchw(t, 2, 4, 3, 3).abs() + 1),
    "lerp nchw first": lambda t: t.lerp(_nchw(t, 2, 4, 3, 3), _nhwc(t, 2, 4, 3, 3),
                                        _nhwc(t, 2, 4, 3, 3)),
    # a row-major (C, K, 1, 1) weight made channels_last keeps strides that suggest
    # channels_last: a convolution with it is channels-last; clone keeps its strides
    "conv cl 1x1 weight": lambda t: t.nn.functional.conv2d(
        _nchw(t, 2, 4, 3, 3), _nhwc(t, 5, 4, 1, 1)),
    "clone cl (N, C, 1, 1)": lambda t: _nhwc(t, 5, 4, 1, 1).clone(),
}


@pytest.mark.parametrize("name", STRIDE_CASES)
def test_strides_as_torch(name: str) -> None:
    want, got = STRIDE_CASES[name](torch), STRIDE_CASES[name](ember)
    assert got.stride() == want.stride()
    assert got.flatten().tolist() == pytest.approx(want.flatten().tolist(), rel=1e-6, abs=1e-6)


def test_stack_keeps_one_node_and_grads() -> None:
    for mod in (torch, ember):
        a = _nhwc(mod, 2, 4, 3, 3).requires_grad_()
        out = mod.stack([a, a * 2], 1)
        assert type(out.grad_fn).__name__ == "StackBackward0"
        out.pow(2).sum().backward()
        assert a.grad.stride() == (36, 1, 12, 4)
    x = _nhwc(torch, 2, 4, 3, 3).requires_grad_()
    torch.stack([x, x * 2], 1).pow(2).sum().backward()
    y = _nhwc(ember, 2, 4, 3, 3).requires_grad_()
    ember.stack([y, y * 2], 1).pow(2).sum().backward()
    assert y.grad.flatten().tolist() == pytest.approx(x.grad.flatten().tolist(), rel=1e-6)
