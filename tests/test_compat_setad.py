"""PyTorch behaviours the set-AD programs (HuggingFace-style decoder and encoder-decoder
inference) needed, checked against torch itself."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _pair(make, *shapes, dtype="bfloat16"):
    """The same seeded random tensors in torch and in ember."""
    torch.manual_seed(0)
    ts = [make(torch, s).to(getattr(torch, dtype)) for s in shapes]
    return ts, [ember.tensor(t.float().numpy()).to(getattr(ember, dtype)) for t in ts]


def _equal(e, t) -> None:
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert e.float().tolist() == t.float().tolist()


def test_mark_static_address_as_torch() -> None:
    """As torch._dynamo's (not imported here: it takes seconds): an attribute on the tensor,
    a TypeError for anything else."""
    t = ember.zeros(2, 3)
    ember._dynamo.mark_static_address(t)
    assert t._dynamo_static_input_type == "unguarded"
    ember._dynamo.mark_static_address(t, guard=True)
    assert t._dynamo_static_input_type == "guarded"
    with pytest.raises(TypeError, match=r"^mark_static_address expects a tensor but received "
                                        r"<class 'list'>$"):
        ember._dynamo.mark_static_address([1])


def _masks(mod, dtype):
    keep = mod.ones(4, 6, dtype=mod.bool).tril(2)
    keep[1] = False  # a row that attends to nothing
    additive = mod.zeros(4, 6).masked_fill(keep.logical_not(), mod.finfo(mod.float32).min)
    return {"bool": keep, "float32": additive, "own dtype": additive.to(dtype)}


# a decode step's mask (finfo.min, not -inf) and a padding mask of half-float attention round
# as PyTorch's CPU flash kernel does: scores and softmax in float32, exponentials rounded for the
# product with the values; a float32 mask keeps the query's dtype
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("kind", ["bool", "float32", "own dtype"])
@pytest.mark.parametrize("is_causal", [False, True])
def test_half_sdpa_with_mask_rounds_as_torch(dtype: str, kind: str, is_causal: bool) -> None:
    (tq, tk, tv), (eq, ek, ev) = _pair(lambda m, s: m.randn(*s), (2, 4, 4, 8), (2, 2, 6, 8),
                                       (2, 2, 6, 8), dtype=dtype)
    outs = []
    for mod, q, k, v in ((torch, tq, tk, tv), (ember, eq, ek, ev)):
        mask = _masks(mod, getattr(mod, dtype))[kind]
        outs.append(mod.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=is_causal, enable_gqa=True))
    if kind == "bool":  # (an all-False row attends to nothing: zeros, not NaN)
        assert outs[1][:, :, 1].float().abs().sum().item() == 0.0
    _equal(outs[1], outs[0])


def test_half_sdpa_mask_keeps_gradients() -> None:
    (tq,), (eq,) = _pair(lambda m, s: m.randn(*s), (1, 2, 3, 4), dtype="float32")
    grads = []
    for mod, q in ((torch, tq), (ember, eq)):
        q = q.bfloat16().requires_grad_()
        mask = mod.zeros(3, 3, dtype=mod.bfloat16)
        mask[0, 2] = -10.0
        mod.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask).float().sum() \
            .backward()
        grads.append(q.grad)
    assert str(grads[1].dtype).split(".")[-1] == str(grads[0].dtype).split(".")[-1]
    assert ember.allclose(grads[1].float(), ember.tensor(grads[0].float().numpy()), atol=0.05)


# torch normalises half floats in float32 (eps defaulting to float32's machine epsilon),
# scales by the weight there and rounds once; a weight of another dtype keeps the input's
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
@pytest.mark.parametrize("weight", [None, "bfloat16", "float32"])
@pytest.mark.parametrize("eps", [None, 1e-6])
def test_rms_norm_rounds_as_torch(dtype: str, weight: str | None, eps: float | None) -> None:
    (tx, tw), (ex, ew) = _pair(lambda m, s: m.randn(*s) * 3, (4, 3, 16), (16,),
                               dtype="float32")
    outs = []
    for mod, x, w in ((torch, tx, tw), (ember, ex, ew)):
        w = None if weight is None else w.to(getattr(mod, weight))
        outs.append(mod.nn.functional.rms_norm(x.to(getattr(mod, dtype)), (16,), w, eps))
    if dtype in ("bfloat16", "float16"):
        _equal(outs[1], outs[0])
    else:  # (float32 sums in another order: within rounding)
        assert str(outs[1].dtype).split(".")[-1] == str(outs[0].dtype).split(".")[-1]
        assert ember.allclose(outs[1].double(), ember.tensor(outs[0].double().numpy()),
                              rtol=1e-6, atol=1e-6)


def test_rms_norm_half_gradients_as_torch() -> None:
    (tx, tw), (ex, ew) = _pair(lambda m, s: m.randn(*s), (2, 5, 8), (8,))
    grads = []
    for mod, x, w in ((torch, tx, tw), (ember, ex, ew)):
        x, w = x.requires_grad_(), w.requires_grad_()
        mod.nn.RMSNorm(8)(x)  # the module's default eps
        mod.nn.functional.rms_norm(x, (8,), w).float().pow(2).sum().backward()
        grads.append((x.grad, w.grad))
    for e, t in zip(grads[1], grads[0]):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert ember.allclose(e.float(), ember.tensor(t.float().numpy()), rtol=0.02, atol=0.02)


# the backward of half-float attention is PyTorch's CPU flash kernel's: from the rows'
# log-sum-exp, dV with the probabilities rounded, dS rounded before dQ and dK, a GQA
# group's key/value gradients summed in float32; its node is the kernel's
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", ["causal", "bool mask", "float mask", "gqa", "gqa mask"])
def test_half_sdpa_backward_as_torch(dtype: str, case: str) -> None:
    kv_heads = 1 if case.startswith("gqa") else 4
    (tq, tk, tv, tg), (eq, ek, ev, eg) = _pair(
        lambda m, s: m.randn(*s), (2, 4, 5, 8), (2, kv_heads, 6, 8), (2, kv_heads, 6, 8),
        (2, 4, 5, 8), dtype=dtype)
    results = []
    for mod, q, k, v, g in ((torch, tq, tk, tv, tg), (ember, eq, ek, ev, eg)):
        q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
        kwargs = {"enable_gqa": case.startswith("gqa"), "is_causal": case == "causal"}
        if "mask" in case:
            masks = _masks(mod, getattr(mod, dtype))
            # (a float mask over 4 of the 5 query rows, the last row attending to all)
            kwargs["attn_mask"] = masks["bool"] if case == "bool mask" else \
                mod.cat([masks["float32"], mod.zeros(1, 6)])
            if case == "bool mask":
                kwargs["attn_mask"] = mod.cat([masks["bool"], mod.ones(1, 6, dtype=mod.bool)])
        out = mod.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)
        out.backward(g)
        results.append((out, q.grad, k.grad, v.grad, type(out.grad_fn).__name__,
                        len(out.grad_fn.next_functions)))
    _equal(results[1][0], results[0][0])
    for e, t in zip(results[1][1:4], results[0][1:4]):
        if dtype == "bfloat16":
            _equal(e, t)
        else:  # (float16's subnormal gradients may differ in their last bit)
            assert ember.allclose(e.float(), ember.tensor(t.float().numpy()), rtol=1e-3,
                                  atol=2e-7)
    assert results[1][4:] == results[0][4:]


# half-float softmax: forward in float32 rounded once, and a SoftmaxBackward0 node whose
# gradient reads the rounded result and is itself computed in float32, rounded once
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("dim", [-1, 0])
def test_half_softmax_backward_as_torch(dtype: str, dim: int) -> None:
    (tx, tg), (ex, eg) = _pair(lambda m, s: m.randn(*s) * 2, (16, 7), (16, 7), dtype=dtype)
    results = []
    for mod, x, g in ((torch, tx, tg), (ember, ex, eg)):
        x = x.clone().requires_grad_()
        out = mod.nn.functional.softmax(x, dim)
        out.backward(g)
        results.append((out, x.grad, type(out.grad_fn).__name__))
    _equal(results[1][0], results[0][0])
    _equal(results[1][1], results[0][1])
    assert results[1][2] == results[0][2] == "SoftmaxBackward0"


# half-float layer_norm keeps its mean and 1/std in the input's dtype for backward, as
# PyTorch's CPU kernel does: the input gradient computed from those rounded statistics
# (to the last bit), the node NativeLayerNormBackward0 with edges to input, weight and bias
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("affine", [True, False])
def test_half_layer_norm_backward_as_torch(dtype: str, affine: bool) -> None:
    (tx, tw, tb, tg), (ex, ew, eb, eg) = _pair(
        lambda m, s: m.randn(*s) * 2 + 1, (12, 3, 4), (3, 4), (3, 4), (12, 3, 4), dtype=dtype)
    results = []
    for mod, x, w, b, g in ((torch, tx, tw, tb, tg), (ember, ex, ew, eb, eg)):
        x, w, b = (t.clone().requires_grad_() for t in (x, w, b))
        out = mod.nn.functional.layer_norm(x, (3, 4), w if affine else None,
                                           b if affine else None)
        out.backward(g)
        results.append((out, x.grad, w.grad, b.grad, type(out.grad_fn).__name__,
                        [f is None for f, _ in out.grad_fn.next_functions]))
    if dtype == "bfloat16":  # (float16's forward may differ in a last bit)
        _equal(results[1][0], results[0][0])
    # the input gradient: PyTorch's kernel forms it as a * dy * w + b * x + c from two
    # vectorized row sums; ember's formula and sums differ, and agree to the dtype's last
    # bit (they agreed exactly on this seed only while ember's row sums were NumPy's)
    assert str(results[1][1].dtype).split(".")[-1] == str(results[0][1].dtype).split(".")[-1]
    assert ember.allclose(results[1][1].float(), ember.tensor(results[0][1].float().numpy()),
                          rtol=2 ** -9, atol=2 ** -14)
    if affine:  # (PyTorch sums these over the rows in the dtype, per thread)
        for e, t in zip(results[1][2:4], results[0][2:4]):
            assert ember.allclose(e.float(), ember.tensor(t.float().numpy()), rtol=0.02,
                                  atol=0.05)
    assert results[1][4:] == results[0][4:]


def test_half_kernels_under_forward_ad_as_torch() -> None:
    """Forward-mode AD: PyTorch's flash kernel refuses it (its words); layer_norm's tangent
    is computed (within bfloat16 rounding of PyTorch's)."""
    (tx, tt), (ex, et) = _pair(lambda m, s: m.randn(*s), (1, 2, 3, 4), (1, 2, 3, 4))
    outs = []
    for mod, x, t in ((torch, tx, tt), (ember, ex, et)):
        fw = mod.autograd.forward_ad
        with fw.dual_level():
            dual = fw.make_dual(x, t)
            with pytest.raises(NotImplementedError) as err:
                mod.nn.functional.scaled_dot_product_attention(dual, dual, dual)
            tangent = fw.unpack_dual(mod.nn.functional.layer_norm(dual, (4,))).tangent
        outs.append((str(err.value), tangent))
    assert outs[1][0] == outs[0][0]
    assert str(outs[1][1].dtype).split(".")[-1] == "bfloat16"
    assert ember.allclose(outs[1][1].float(), ember.tensor(outs[0][1].float().numpy()),
                          rtol=0.02, atol=0.02)


# PyTorch's fused CPU Adam/AdamW reads half-float parameters and states in float32 and
# writes each back rounded once
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("options", [{}, {"amsgrad": True},
                                     {"maximize": True, "weight_decay": 0.1}])
def test_fused_adam_half_params_as_torch(name: str, options: dict) -> None:
    (tw, tg), (ew, eg) = _pair(lambda m, s: m.randn(*s), (64,), (3, 64))
    finals = []
    for mod, w, grads in ((torch, tw, tg), (ember, ew, eg)):
        param = mod.nn.Parameter(w.clone())
        opt = getattr(mod.optim, name)([param], lr=1e-2, fused=True, **options)
        for g in grads:
            param.grad = g.clone()
            opt.step()
        state = opt.state[param]
        finals.append((param.detach(), state["exp_avg"], state["exp_avg_sq"]))
    for e, t in zip(finals[1], finals[0]):
        _equal(e, t)


# rsqrt of half floats (an RMSNorm written in bfloat16): PyTorch's vectorised loop rounds
# the float32 result once; the last numel % 32 elements of a row-major tensor go through
# its scalar loop, which rounds the square root first (in place too)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(1000,), (7,), (4, 16, 1), (64, 3)])
def test_half_rsqrt_as_torch(dtype: str, shape: tuple) -> None:
    (tx,), (ex,) = _pair(lambda m, s: m.rand(*s) * 1000 + 1e-3, shape, dtype=dtype)
    _equal(ember.rsqrt(ex), torch.rsqrt(tx))
    tx, ex = tx.clone(), ex.clone()
    _equal(ex.rsqrt_(), tx.rsqrt_())


# baddbmm / addmv of half floats (ALiBi attention scores as Bloom and Falcon compute them):
# the product and the scaled sum in float32, rounded once, as addmm already did
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("alpha,beta", [(1, 1), (0.125, 1.0), (0.5, 0.5)])
def test_half_baddbmm_addmv_round_once(dtype: str, alpha: float, beta: float) -> None:
    (ts, ta, tb), (es, ea, eb) = _pair(lambda m, s: m.randn(*s), (2, 4, 5), (2, 4, 16),
                                       (2, 16, 5), dtype=dtype)
    _equal(ember.baddbmm(es, ea, eb, alpha=alpha, beta=beta),
           torch.baddbmm(ts, ta, tb, alpha=alpha, beta=beta))
    _equal(ember.addmv(es[0, :, 0], ea[0], eb[0, :, 0], alpha=alpha, beta=beta),
           torch.addmv(ts[0, :, 0], ta[0], tb[0, :, 0], alpha=alpha, beta=beta))


def _addmm_family(t, dtypes: str):
    names = {"h": t.float16, "b": t.bfloat16, "f": t.float32, "d": t.float64}
    i, a, b = (names[c] for c in dtypes)
    return {
        "baddbmm": lambda: t.baddbmm(t.zeros(2, 3, 3, dtype=i), t.zeros(2, 3, 4, dtype=a),
                                     t.zeros(2, 4, 3, dtype=b)),
        "addmm": lambda: t.addmm(t.zeros(3, 3, dtype=i), t.zeros(3, 4, dtype=a),
                                 t.zeros(4, 3, dtype=b)),
        "addmv": lambda: t.addmv(t.zeros(3, dtype=i), t.zeros(3, 4, dtype=a),
                                 t.zeros(4, dtype=b)),
    }


@pytest.mark.parametrize("dtypes", ["ffd", "fdf", "dff", "bhh", "fhh", "ffh", "fbf"])
def test_addmm_family_mixed_dtypes_error_as_torch(dtypes: str) -> None:
    for name, fn in _addmm_family(torch, dtypes).items():
        with pytest.raises(RuntimeError) as t_err:
            fn()
        with pytest.raises(RuntimeError) as e_err:
            _addmm_family(ember, dtypes)[name]()
        assert str(e_err.value) == str(t_err.value), name


# interpolate of half floats: computed in float32 and rounded once (linear, bilinear,
# bicubic); 1-D linear as ATen computes it: float32 source coordinates and weights,
# fma(t0, w0, t1 * w1). (ember's float32 bilinear/bicubic are not ATen's to the bit, so
# other sizes can still differ in a half float's last bit.)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("mode", ["linear", "bilinear", "bicubic"])
def test_interpolate_rounds_as_torch(dtype: str, mode: str) -> None:
    if dtype == "float32" and mode != "linear":
        pytest.skip("ATen's 2-D kernels sum in an order not modelled")
    shape = (1, 8, 40) if mode == "linear" else (1, 3, 8, 8)
    (tx,), (ex,) = _pair(lambda m, s: m.randn(*s) * 3, shape, dtype=dtype)
    _equal(ember.nn.functional.interpolate(ex, scale_factor=2, mode=mode),
           torch.nn.functional.interpolate(tx, scale_factor=2, mode=mode))
    if mode == "linear" and dtype == "float32":
        _equal(ember.nn.functional.interpolate(ex, scale_factor=2, mode=mode,
                                               align_corners=True),
               torch.nn.functional.interpolate(tx, scale_factor=2, mode=mode,
                                               align_corners=True))
