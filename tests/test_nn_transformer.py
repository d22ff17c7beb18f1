"""Attention layers of `ember.nn` (MultiheadAttention, TransformerEncoderLayer,
TransformerEncoder) against PyTorch: torch's weights are loaded into ember's through
`load_state_dict` (state_dict keys must match exactly), and outputs, attention weights and
the gradients of the inputs and every parameter are compared in float64 (dropout off: p=0
or eval mode), with every kind of mask PyTorch accepts.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import nn

L, S, N, E, HEADS = 4, 5, 3, 8, 2


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def to_ember(t, requires_grad: bool = False) -> ember.Tensor:
    return ember.tensor(t.detach().numpy(), requires_grad=requires_grad)


def load_pair(tm, em):
    tm.double()
    em.double()
    assert list(em.state_dict()) == list(tm.state_dict())
    result = em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    assert repr(em) == repr(tm)
    return tm, em


def assert_close(e, t, what="", rtol=1e-9, atol=1e-10):
    assert tuple(e.shape) == tuple(t.shape), (what, tuple(e.shape), tuple(t.shape))
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol,
                               err_msg=what)


def compare_grads(tm, em, inputs_t, inputs_e):
    for i, (a, b) in enumerate(zip(inputs_t, inputs_e)):
        if a.grad is not None:
            assert_close(b.grad, a.grad, f"grad of input {i}")
    params_e = dict(em.named_parameters())
    for name, p in tm.named_parameters():
        if p.grad is None:
            assert params_e[name].grad is None, name
        else:
            assert_close(params_e[name].grad, p.grad, f"grad of {name}")


def masks(torch, kind, batched=True):
    """(key_padding_mask, attn_mask) of a kind, in torch."""
    g = torch.Generator().manual_seed(0)
    kpm_bool = torch.tensor([[False] * (S - 1) + [True], [False] * S,
                             [False] * (S - 2) + [True] * 2])
    if not batched:
        kpm_bool = kpm_bool[0]
    attn_bool = torch.tensor(np.triu(np.ones((L, S), bool), 2))
    return {
        "none": (None, None),
        "kpm_bool": (kpm_bool, None),
        "kpm_float": (torch.randn(kpm_bool.shape, generator=g, dtype=torch.float64), None),
        "attn_bool": (None, attn_bool),
        "attn_float": (None, torch.randn(L, S, generator=g, dtype=torch.float64)),
        "attn_3d": (None, torch.randn((N if batched else 1) * HEADS, L, S, generator=g,
                                      dtype=torch.float64)),
        "both_bool": (kpm_bool, attn_bool),
        "both_float": (torch.randn(kpm_bool.shape, generator=g, dtype=torch.float64),
                       torch.randn(L, S, generator=g, dtype=torch.float64)),
    }[kind]


def run_mha(torch, kwargs, *, kind="none", need_weights=True, average=True, batched=True,
            self_attention=False, kdim=None, vdim=None, is_causal=False, attn_mask=None):
    torch.manual_seed(0)
    tm, em = load_pair(torch.nn.MultiheadAttention(E, HEADS, kdim=kdim, vdim=vdim, **kwargs),
                       nn.MultiheadAttention(E, HEADS, kdim=kdim, vdim=vdim, **kwargs))
    batch_first = kwargs.get("batch_first", False)

    def shape(length, dim):
        if not batched:
            return (length, dim)
        return (N, length, dim) if batch_first else (length, N, dim)

    if self_attention:
        x = torch.randn(shape(L, E), dtype=torch.float64).requires_grad_()
        xe = to_ember(x, True)
        inputs_t, inputs_e = [x, x, x], [xe, xe, xe]
    else:
        arrays = [torch.randn(shape(L, E), dtype=torch.float64),
                  torch.randn(shape(S, kdim or E), dtype=torch.float64),
                  torch.randn(shape(S, vdim or E), dtype=torch.float64)]
        inputs_t = [a.clone().requires_grad_() for a in arrays]
        inputs_e = [to_ember(a, True) for a in arrays]
    kpm, mask = masks(torch, kind, batched)
    if attn_mask is not None:
        mask = attn_mask
    kw_t = dict(key_padding_mask=kpm, attn_mask=mask, need_weights=need_weights,
                average_attn_weights=average, is_causal=is_causal)
    kw_e = dict(kw_t, key_padding_mask=None if kpm is None else to_ember(kpm),
                attn_mask=None if mask is None else to_ember(mask))
    out_t, w_t = tm(*inputs_t, **kw_t)
    out_e, w_e = em(*inputs_e, **kw_e)
    assert_close(out_e, out_t, "attn_output")
    if need_weights:
        assert_close(w_e, w_t, "attn_weights")
    else:
        assert w_t is None and w_e is None
    g = torch.randn(out_t.shape, dtype=torch.float64)
    loss_t, loss_e = (out_t * g).sum(), (out_e * to_ember(g)).sum()
    if need_weights:
        gw = torch.randn(w_t.shape, dtype=torch.float64)
        loss_t = loss_t + (w_t * gw).sum()
        loss_e = loss_e + (w_e * to_ember(gw)).sum()
    loss_t.backward()
    loss_e.backward()
    compare_grads(tm, em, inputs_t, inputs_e)
    return out_e, w_e


@pytest.mark.parametrize("kind", ["none", "kpm_bool", "kpm_float", "attn_bool", "attn_float",
                                  "attn_3d", "both_bool", "both_float"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_masks(torch, kind, batch_first):
    out, w = run_mha(torch, {"batch_first": batch_first}, kind=kind)
    assert tuple(out.shape) == ((N, L, E) if batch_first else (L, N, E))
    assert tuple(w.shape) == (N, L, S)


@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("batched", [True, False])
def test_mha_weights_options(torch, need_weights, average, batched):
    out, w = run_mha(torch, {}, kind="kpm_bool", need_weights=need_weights, average=average,
                     batched=batched)
    assert tuple(out.shape) == ((L, N, E) if batched else (L, E))
    if need_weights:
        expected = (L, S) if average else (HEADS, L, S)
        assert tuple(w.shape) == ((N,) + expected if batched else expected)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_self_attention_and_causal(torch, batch_first, need_weights):
    causal = torch.triu(torch.full((L, L), float("-inf"), dtype=torch.float64), 1)
    # is_causal with its mask; without key padding and weights, torch uses the hint alone
    run_mha(torch, {"batch_first": batch_first}, self_attention=True, attn_mask=causal,
            is_causal=True, need_weights=need_weights)
    run_mha(torch, {"batch_first": batch_first}, self_attention=True)


def test_mha_is_causal_hint_wins_without_weights(torch):
    """need_weights=False and no key padding: the causal hint replaces the given mask."""
    not_causal = torch.zeros(L, L, dtype=torch.float64)
    run_mha(torch, {}, self_attention=True, attn_mask=not_causal, is_causal=True,
            need_weights=False)


@pytest.mark.parametrize("kdim,vdim", [(6, 7), (6, None), (None, 7)])
def test_mha_kdim_vdim(torch, kdim, vdim):
    m = nn.MultiheadAttention(E, HEADS, kdim=kdim, vdim=vdim)
    assert m.in_proj_weight is None
    assert tuple(m.k_proj_weight.shape) == (E, kdim or E)
    assert tuple(m.v_proj_weight.shape) == (E, vdim or E)
    run_mha(torch, {}, kdim=kdim, vdim=vdim, kind="both_bool")
    run_mha(torch, {"batch_first": True}, kdim=kdim, vdim=vdim, need_weights=False)


@pytest.mark.parametrize("kwargs", [{"bias": False}, {"add_bias_kv": True},
                                    {"add_zero_attn": True},
                                    {"add_bias_kv": True, "add_zero_attn": True}])
def test_mha_options(torch, kwargs):
    run_mha(torch, kwargs, kind="both_bool")
    run_mha(torch, kwargs, kind="none", need_weights=False)


def test_mha_fully_masked_sequence(torch):
    """A batch entry whose every key is padded: NaN with need_weights (as torch's explicit
    path), zeros without (as torch's attention kernel) -- and then finite gradients."""
    torch.manual_seed(0)
    tm, em = load_pair(torch.nn.MultiheadAttention(E, HEADS), nn.MultiheadAttention(E, HEADS))
    with torch.no_grad():
        tm.out_proj.bias.normal_()
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    x = torch.randn(L, N, E, dtype=torch.float64)
    kpm = torch.zeros(N, L, dtype=torch.bool)
    kpm[1] = True
    out_t, _ = tm(x, x, x, key_padding_mask=kpm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy: -inf - -inf
        out_e, _ = em(to_ember(x), to_ember(x), to_ember(x), key_padding_mask=to_ember(kpm))
    assert np.isnan(out_t[:, 1].detach().numpy()).all()
    assert np.isnan(out_e.detach().numpy()[:, 1]).all()
    xt, xe = x.clone().requires_grad_(), to_ember(x, True)
    out_t, _ = tm(xt, xt, xt, key_padding_mask=kpm, need_weights=False)
    out_e, _ = em(xe, xe, xe, key_padding_mask=to_ember(kpm), need_weights=False)
    assert_close(out_e, out_t, "output with a fully padded entry")
    out_t.pow(2).sum().backward()
    out_e.pow(2).sum().backward()
    compare_grads(tm, em, [xt], [xe])
    assert np.isfinite(xe.grad.numpy()).all()


def test_mha_parameters_and_init():
    ember.manual_seed(0)
    m = nn.MultiheadAttention(64, 4, add_bias_kv=True)
    assert [k for k, _ in m.named_parameters()] == [
        "in_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
        "out_proj.bias"]
    assert isinstance(m.out_proj, nn.Linear)
    assert type(m.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    w = m.in_proj_weight.detach().numpy()
    bound = np.sqrt(6 / (64 + 3 * 64))  # xavier_uniform_ of (3E, E)
    assert w.min() >= -bound and w.max() <= bound and w.std() > 0.9 * bound / np.sqrt(3)
    assert not m.in_proj_bias.detach().numpy().any()
    assert not m.out_proj.bias.detach().numpy().any()
    assert m.head_dim == 16 and m._qkv_same_embed_dim


def test_mha_dropout_in_training():
    """Dropout on the attention weights: only in training; the returned weights are the
    dropped-out ones (as torch returns them)."""
    m = nn.MultiheadAttention(E, HEADS, dropout=0.5)
    x = ember.randn(L, N, E)
    ember.manual_seed(0)
    _, w_train = m(x, x, x, average_attn_weights=False)
    assert (w_train.detach().numpy() == 0).any()
    m.eval()
    _, w_eval = m(x, x, x, average_attn_weights=False)
    np.testing.assert_allclose(w_eval.detach().numpy().sum(-1), 1.0, rtol=1e-6)


def test_mha_errors():
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0, got "
                                         "embed_dim=0 and num_heads=2 instead"):
        nn.MultiheadAttention(0, 2)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    m = nn.MultiheadAttention(E, HEADS)
    q = ember.randn(L, N, E)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(q, q, q, is_causal=True)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is "
                                           r"ember.Size\(\[4, 5\]\), but should be \(4, 4\)\."):
        m(q, q, q, attn_mask=ember.zeros(L, S))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are "
                                             "supported"):
        m(q, q, q, attn_mask=ember.zeros(L, L, dtype=ember.int64))
    with pytest.raises(AssertionError, match="For batched \\(3-D\\) `query`, expected `key` and "
                                             "`value` to be 3-D but found 2-D and 3-D"):
        m(q, ember.randn(S, E), ember.randn(S, N, E))
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8, but got 6"):
        x = ember.randn(L, N, 6)
        m(x, x, x)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask "
                                         "is deprecated"):
        m(q, q, q, key_padding_mask=ember.zeros(N, L, dtype=ember.bool),
          attn_mask=ember.zeros(L, L))


# -- TransformerEncoderLayer / TransformerEncoder -------------------------------------------


def run_encoder(torch, make, *, batch_first, kind, batched=True, train=False):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's nested-tensor notice
        tm = make(torch.nn)
    tm, em = load_pair(tm, make(nn))
    tm.train(train)
    em.train(train)
    shape = ((N, S, E) if batch_first else (S, N, E)) if batched else (S, E)
    x = torch.randn(shape, dtype=torch.float64)
    xt, xe = x.clone().requires_grad_(), to_ember(x, True)
    kpm = torch.tensor([[False] * S, [False] * (S - 1) + [True], [False] * 2 + [True] * 3])
    if not batched:
        kpm = kpm[1]
    causal = torch.nn.Transformer.generate_square_subsequent_mask(S, dtype=torch.float64)
    kw_t = {"none": {}, "kpm": {"src_key_padding_mask": kpm}, "causal": {"is_causal": True},
            "both": {"src_key_padding_mask": kpm}}[kind]
    mask_name = "mask" if isinstance(tm, torch.nn.TransformerEncoder) else "src_mask"
    if kind in ("causal", "both"):
        kw_t[mask_name] = causal
    kw_e = {k: to_ember(v) if isinstance(v, torch.Tensor) else v for k, v in kw_t.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mismatched mask dtypes are deprecated (both warn)
        out_t, out_e = tm(xt, **kw_t), em(xe, **kw_e)
    assert_close(out_e, out_t, "output")
    g = torch.randn(out_t.shape, dtype=torch.float64)
    (out_t * g).sum().backward()
    (out_e * to_ember(g)).sum().backward()
    compare_grads(tm, em, [xt], [xe])
    return out_e


@pytest.mark.parametrize("kind", ["none", "kpm", "causal", "both"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer(torch, norm_first, activation, kind):
    def make(m):
        return m.TransformerEncoderLayer(E, HEADS, dim_feedforward=16, activation=activation,
                                         norm_first=norm_first)
    out = run_encoder(torch, make, batch_first=False, kind=kind)
    assert tuple(out.shape) == (S, N, E)


@pytest.mark.parametrize("batched", [True, False])
def test_encoder_layer_batch_first_and_unbatched(torch, batched):
    def make(m):
        return m.TransformerEncoderLayer(E, HEADS, dim_feedforward=16, batch_first=True,
                                         norm_first=True, activation="gelu")
    run_encoder(torch, make, batch_first=True, kind="both", batched=batched)


def test_encoder_layer_callable_activation_and_no_bias(torch):
    def make(m):
        act = m.GELU(approximate="tanh")
        return m.TransformerEncoderLayer(E, HEADS, dim_feedforward=16, activation=act,
                                         bias=False, layer_norm_eps=1e-6)
    out = run_encoder(torch, make, batch_first=False, kind="kpm")
    layer = nn.TransformerEncoderLayer(E, HEADS, activation=nn.GELU())
    assert layer.activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(E, HEADS, activation=nn.functional.silu) \
        .activation_relu_or_gelu == 0
    assert out.requires_grad


def test_encoder_layer_dropout_zero_in_training(torch):
    def make(m):
        return m.TransformerEncoderLayer(E, HEADS, dim_feedforward=16, dropout=0.0)
    run_encoder(torch, make, batch_first=False, kind="kpm", train=True)


def test_encoder_layer_bad_activation():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(E, HEADS, activation="tanh")


@pytest.mark.parametrize("kind", ["none", "kpm", "causal", "both"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder(torch, batch_first, kind):
    def make(m):
        layer = m.TransformerEncoderLayer(E, HEADS, dim_feedforward=16,
                                          batch_first=batch_first)
        kwargs = {"enable_nested_tensor": False} if m is not nn else {}
        return m.TransformerEncoder(layer, 2, norm=m.LayerNorm(E), **kwargs)
    run_encoder(torch, make, batch_first=batch_first, kind=kind)


def test_encoder_copies_the_layer():
    layer = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=16)
    enc = nn.TransformerEncoder(layer, 3)
    assert len(enc.layers) == 3 and enc.norm is None
    ids = {id(m.linear1.weight) for m in enc.layers} | {id(layer.linear1.weight)}
    assert len(ids) == 4
    for m in enc.layers:
        np.testing.assert_array_equal(m.linear1.weight.detach().numpy(),
                                      layer.linear1.weight.detach().numpy())
    assert list(enc.state_dict())[0] == "layers.0.self_attn.in_proj_weight"


def test_encoder_detects_a_causal_mask(monkeypatch):
    """With is_causal=None the encoder checks whether `mask` is the causal mask and tells
    its layers."""
    layer = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=16)
    enc = nn.TransformerEncoder(layer, 1)
    seen = []
    original = type(enc.layers[0]).forward

    def spy(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        seen.append(is_causal)
        return original(self, src, src_mask, src_key_padding_mask, is_causal)

    monkeypatch.setattr(type(enc.layers[0]), "forward", spy)
    x = ember.randn(S, N, E)
    causal = ember.triu(ember.full((S, S), float("-inf")), diagonal=1)
    enc(x, mask=causal)
    enc(x, mask=ember.zeros(S, S))
    enc(x, mask=ember.zeros(S, S), is_causal=True)
    assert seen == [True, False, True]


def test_static_keys_and_values_match_torch(torch):
    from ember.nn.modules.transformer import multi_head_attention_forward

    torch.manual_seed(11)
    tm = torch.nn.MultiheadAttention(8, 2, dtype=torch.float64)
    q = torch.randn(3, 2, 8, dtype=torch.float64)
    static = [torch.randn(4, 5, 4, dtype=torch.float64) for _ in range(2)]  # (B*heads, S, hd)
    args = dict(embed_dim_to_check=8, num_heads=2, bias_k=None, bias_v=None,
                add_zero_attn=False, dropout_p=0.0, training=False)
    want, _ = torch.nn.functional.multi_head_attention_forward(
        q, q, q, in_proj_weight=tm.in_proj_weight, in_proj_bias=tm.in_proj_bias,
        out_proj_weight=tm.out_proj.weight, out_proj_bias=tm.out_proj.bias,
        static_k=static[0], static_v=static[1], **args)
    p = {n: to_ember(t.detach()) for n, t in (("w", tm.in_proj_weight), ("b", tm.in_proj_bias),
                                               ("ow", tm.out_proj.weight),
                                               ("ob", tm.out_proj.bias))}
    eq = to_ember(q)
    got, _ = multi_head_attention_forward(
        eq, eq, eq, in_proj_weight=p["w"], in_proj_bias=p["b"], out_proj_weight=p["ow"],
        out_proj_bias=p["ob"], static_k=to_ember(static[0]), static_v=to_ember(static[1]),
        **args)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(AssertionError, match="expecting static_v.size\\(2\\) of 4, but got 3"):
        multi_head_attention_forward(
            eq, eq, eq, in_proj_weight=p["w"], in_proj_bias=p["b"], out_proj_weight=p["ow"],
            out_proj_bias=p["ob"], static_k=to_ember(static[0]),
            static_v=ember.zeros(4, 5, 3, dtype=ember.float64), **args)
