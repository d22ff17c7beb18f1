"""PyTorch behaviours the set-AE programs (the channels-last memory format tutorial and
timm's channels_last recipe) needed, checked against torch itself: the strides that
stack, cat, gather, masked_scatter, addcmul/addcdiv/lerp, clone and convolution give."""

from __future__ import annotations

import functools

import numpy as np
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
    **{f"stack dim {d}": functools.partial(_stack, dim=d) for d in range(5)},
    # unsqueeze's new last dim has stride 1 (a view's reshape: the last dim's stride)
    "unsqueeze(-1) cl": lambda t: _nhwc(t, 2, 4, 3, 3).unsqueeze(-1),
    "unsqueeze(2) transposed": lambda t: _nchw(t, 3, 4).t().unsqueeze(2),
    "view (4, 3, 1) transposed": lambda t: _nchw(t, 3, 4).t().view(4, 3, 1),
    "unsqueeze(-1) transposed times row": lambda t: _nchw(t, 3, 4).t().unsqueeze(-1) *
    t.ones(1, 1, 5),
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
    # batch norm writes the format the input suggests, with its exact strides
    "batch_norm eval cl (N, C, 1, 1) slice": lambda t: t.nn.functional.batch_norm(
        _nhwc(t, 2, 4, 3, 3)[:, :, :1, :1], t.zeros(4), t.ones(4)),
    # tril/triu are row-major whatever their input's layout
    "tril cl": lambda t: _nhwc(t, 2, 4, 3, 3).tril(),
    "triu transposed": lambda t: _nchw(t, 3, 4).t().triu(1),
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


# -- out= of ops with a named result: a tuple of tensors --------------------------------

def _x(mod):
    return mod.tensor([[3., 1., 2., 5.], [0., 4., 4., 1.], [2., 2., 7., 1.]])


def _spd(mod):
    return mod.tensor([[4., 1., 0.], [1., 3., 1.], [0., 1., 2.]])


def _outs(mod, *dtypes):
    return tuple(mod.empty(0, dtype=getattr(mod, d)) for d in dtypes)


TUPLE_OUT_CASES = {
    "max dim": lambda t: t.max(_x(t), 1, out=_outs(t, "float32", "int64")),
    "min keepdim": lambda t: t.min(_x(t), 0, True, out=_outs(t, "float32", "int64")),
    "median": lambda t: t.median(_x(t), 1, out=_outs(t, "float32", "int64")),
    "nanmedian": lambda t: t.nanmedian(_x(t), 1, out=_outs(t, "float32", "int64")),
    "mode": lambda t: t.mode(_x(t), 1, out=_outs(t, "float32", "int64")),
    "cummax": lambda t: t.cummax(_x(t), 1, out=_outs(t, "float32", "int64")),
    "cummin": lambda t: t.cummin(_x(t), 0, out=_outs(t, "float32", "int64")),
    "aminmax": lambda t: t.aminmax(_x(t), dim=1, out=_outs(t, "float32", "float32")),
    "frexp": lambda t: t.frexp(_x(t), out=_outs(t, "float32", "int32")),
    "sort": lambda t: t.sort(_x(t), 1, out=_outs(t, "float32", "int64")),
    "topk": lambda t: t.topk(_x(t), 2, out=_outs(t, "float32", "int64")),
    "kthvalue": lambda t: t.kthvalue(_x(t), 2, 1, out=_outs(t, "float32", "int64")),
    "linalg.eigh": lambda t: t.linalg.eigh(_spd(t), out=_outs(t, "float32", "float32")),
    "linalg.qr": lambda t: t.linalg.qr(_spd(t), out=_outs(t, "float32", "float32")),
    "linalg.slogdet": lambda t: t.linalg.slogdet(_spd(t), out=_outs(t, "float32", "float32")),
    "slogdet": lambda t: t.slogdet(_spd(t), out=_outs(t, "float32", "float32")),
    "linalg.lu_factor": lambda t: t.linalg.lu_factor(_spd(t), out=_outs(t, "float32", "int32")),
    "linalg.eigvalsh": lambda t: (t.linalg.eigvalsh(_spd(t), out=_outs(t, "float32")[0]),),
    # PyTorch wants each out tensor of its result's dtype, in each kernel's words
    "max int32 indices": lambda t: t.max(_x(t), 1, out=_outs(t, "float32", "int32")),
    "sort float64 values": lambda t: t.sort(_x(t), out=_outs(t, "float64", "int64")),
    "aminmax int": lambda t: t.aminmax(_x(t), dim=1, out=_outs(t, "float32", "int32")),
    "kthvalue int32": lambda t: t.kthvalue(_x(t), 1, out=_outs(t, "float32", "int32")),
    "kthvalue float64": lambda t: t.kthvalue(_x(t), 1, out=_outs(t, "float64", "int64")),
    "cummax int32": lambda t: t.cummax(_x(t), 1, out=_outs(t, "float32", "int32")),
    "mode float64": lambda t: t.mode(_x(t), 1, out=_outs(t, "float64", "int64")),
    "median int32": lambda t: t.median(_x(t), 1, out=_outs(t, "float64", "int32")),
    "median float64": lambda t: t.median(_x(t), 1, out=_outs(t, "float64", "int64")),
    "frexp int64": lambda t: t.frexp(_x(t), out=_outs(t, "float32", "int64")),
    "frexp float64": lambda t: t.frexp(_x(t), out=_outs(t, "float64", "int32")),
    # the argument parser's words for an out= that is no tuple of as many tensors
    "topk out=Tensor": lambda t: t.topk(_x(t), 1, out=t.empty(0)),
    "cummax one out": lambda t: t.cummax(_x(t), 1, out=_outs(t, "float32")),
    "eigh three outs": lambda t: t.linalg.eigh(_spd(t), out=_outs(t, *["float32"] * 3)),
    "kthvalue int element": lambda t: t.kthvalue(_x(t), 1, out=(t.empty(0), 1)),
    "lu_factor_ex int element": lambda t: t.linalg.lu_factor_ex(_spd(t), out=(t.empty(0), 1)),
}


def _tuple_outcome(fn, mod):
    try:
        got = fn(mod)
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err).replace("ember.", "torch.")
    return type(got).__name__, [
        (str(t.dtype).split(".")[-1], t.flatten().tolist()) for t in got]


@pytest.mark.parametrize("name", TUPLE_OUT_CASES)
def test_tuple_out_as_torch(name: str) -> None:
    want = _tuple_outcome(TUPLE_OUT_CASES[name], torch)
    got = _tuple_outcome(TUPLE_OUT_CASES[name], ember)
    if want[0] in ("qr_out", "linalg_qr_out", "linalg_eigh_out"):  # (LAPACK rounding)
        assert got[0] == want[0]
        for (gd, gv), (wd, wv) in zip(got[1], want[1]):
            assert gd == wd and gv == pytest.approx(wv, abs=1e-5)
        return
    assert got == want


def test_tuple_out_writes_the_given_tensors() -> None:
    values, indices = ember.empty(0), ember.empty(0, dtype=ember.int64)
    got = ember.max(_x(ember), 1, out=(values, indices))
    assert got.values is values and got[1] is indices
    assert repr(got).startswith("ember.return_types.max_out(\nvalues=tensor([5., 4., 7.])")
    a, b = ember.empty(0), ember.empty(0)
    got = ember.linalg.eigh(_spd(ember), out=(a, b))  # (it used to ignore out=)
    assert got.eigenvalues is a and a.shape == (3,) and b.shape == (3, 3)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.cummax(_x(ember).requires_grad_(), 1, out=(ember.empty(0), ember.empty(0)))


# -- _foreach_norm's dtype= and linalg.vector_norm's dtype checks ------------------------

def _norm_outcome(fn, mod):
    try:
        got = fn(mod)
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err)
    return [(str(t.dtype).split(".")[-1], round(t.item(), 4)) for t in got]


def _vector_norm_as(t, a, d):
    return (t.linalg.vector_norm(t.ones(2, dtype=getattr(t, a)), dtype=getattr(t, d)),)


NORM_CASES = {
    "foreach dtype": lambda t: t._foreach_norm([t.ones(3), t.full((2,), 3.)], 2,
                                               dtype=t.float64),
    "foreach positional dtype": lambda t: t._foreach_norm([t.ones(3)], 1, t.float64),
    "foreach complex": lambda t: t._foreach_norm([t.tensor([3 + 4j, 1j])]),
    "foreach complex dtype": lambda t: t._foreach_norm([t.ones(2, dtype=t.complex64)],
                                                       dtype=t.complex128),
    **{f"vector_norm {a} as {d}": functools.partial(_vector_norm_as, a=a, d=d)
       for a, d in [("float32", "float16"), ("float16", "bfloat16"), ("float32", "complex64"),
                    ("complex64", "float32"), ("float32", "int64"), ("int64", "float32"),
                    ("float16", "float32")]},
}


@pytest.mark.parametrize("name", NORM_CASES)
def test_norm_dtype_as_torch(name: str) -> None:
    assert _norm_outcome(NORM_CASES[name], ember) == _norm_outcome(NORM_CASES[name], torch)


# -- half precision: the bias added to the float32 sums, rounded once --------------------

def _half_case(op, dtype):
    def run(mod):
        rng = np.random.default_rng(0)
        a, b, c, v = (mod.tensor(rng.standard_normal(shape).astype(np.float32)).to(
            getattr(mod, dtype)).requires_grad_() for shape in (
            (4, 16, 32), (4, 32, 8), (16, 8), (32,)))
        f = mod.nn.functional
        out = {"conv2d": lambda: f.conv2d(a[:2].reshape(2, 8, 8, 8),
                                          b.reshape(8, 8, 4, 4)[:, :, :3, :3], c[0], padding=1),
               "conv1d": lambda: f.conv1d(a[:1].transpose(1, 2), b[0].t().reshape(8, 32, 1), c[0]),
               "addmv": lambda: mod.addmv(c[:, 0], a[0], v),
               "baddbmm": lambda: mod.baddbmm(c, a, b, beta=0.5, alpha=2),
               "addbmm": lambda: mod.addbmm(c, a, b)}[op]()
        out.backward(mod.ones_like(out))
        return [type(out.grad_fn).__name__] + [
            None if t is None else np.asarray(t.float().tolist())
            for t in (out, a.grad, b.grad, c.grad)]
    return run


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["conv2d", "conv1d", "addmv", "baddbmm", "addbmm"])
def test_half_bias_rounded_once(op: str, dtype: str) -> None:
    want, got = _half_case(op, dtype)(torch), _half_case(op, dtype)(ember)
    assert got[0] == want[0]
    # the values and, but for the convolutions' (whose weight gradients ember rounds its
    # own way), the gradients; float16 accumulation order may move an element by an ulp
    compared = zip(want[1:], got[1:]) if not op.startswith("conv") else [(want[1], got[1])]
    for w, g in compared:
        assert (w is None) == (g is None)
        if w is not None:
            assert (w != g).sum() <= (2 if dtype == "float16" else 0)


def _resized(mod, dtype, mode, channels_last, **kwargs):
    x = mod.tensor(np.random.default_rng(0).standard_normal((2, 8, 6, 6)).astype(np.float32))
    x = x.to(getattr(mod, dtype))
    if channels_last:
        x = x.to(memory_format=mod.channels_last)
    y = mod.nn.functional.interpolate(x, size=(11, 13), mode=mode, **kwargs)
    return y.stride(), str(y.dtype).split(".")[-1], np.asarray(y.float().tolist())


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_half_interpolate_in_float32(mode: str, dtype: str, channels_last: bool) -> None:
    """PyTorch's CPU resampling of half floats: float32 sums rounded once (bicubic's tap
    weights in the input's dtype); rounding each step differed in half the elements."""
    want = _resized(torch, dtype, mode, channels_last)
    got = _resized(ember, dtype, mode, channels_last)
    assert got[:2] == want[:2]
    # (the source coordinates are computed in double, PyTorch's in float: a few
    # elements land an ulp apart)
    assert (got[2] != want[2]).sum() <= (2 if mode == "bicubic" else want[2].size // 50)
