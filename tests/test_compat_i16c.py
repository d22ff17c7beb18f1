"""`nn.Transformer`, `nn.TransformerDecoderLayer` and `nn.TransformerDecoder` against
PyTorch: torch's state_dict (converted to ember tensors) loads into ember's module with the
same keys, and outputs and the gradients of the inputs and every parameter match, with
every kind of mask, batch_first, norm_first, no bias and unbatched inputs.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import ember
from ember import nn

S, T, N, E, HEADS, FF = 5, 4, 3, 8, 2, 16


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def to_ember(t, requires_grad: bool = False) -> ember.Tensor:
    return ember.tensor(t.detach().numpy(), requires_grad=requires_grad)


def load_pair(tm, em, dtype: str = "double"):
    getattr(tm, dtype)()
    getattr(em, dtype)()
    assert list(em.state_dict()) == list(tm.state_dict())
    result = em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    assert repr(em) == repr(tm)
    return tm, em


def assert_close(e, t, what="", tol=1e-9):
    assert tuple(e.shape) == tuple(t.shape), (what, tuple(e.shape), tuple(t.shape))
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol,
                               err_msg=what)


def shape(length: int, batch_first: bool, batched: bool) -> tuple[int, ...]:
    if not batched:
        return (length, E)
    return (N, length, E) if batch_first else (length, N, E)


def mask_kwargs(torch, kind: str, batched: bool, *, full: bool) -> dict:
    """Decoder (or, with `full`, Transformer) mask arguments of a kind, in torch float64."""
    g = torch.Generator().manual_seed(1)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    tgt_kpm = torch.tensor([[False] * T, [False] * (T - 1) + [True], [False, True, True, True]])
    mem_kpm = torch.tensor([[False] * (S - 1) + [True], [False] * S, [False] * 2 + [True] * 3])
    if not batched:
        tgt_kpm, mem_kpm = tgt_kpm[1], mem_kpm[2]
    kw = {
        "none": {},
        "causal": {"tgt_mask": causal},
        "causal_hint": {"tgt_mask": causal, "tgt_is_causal": True},
        "kpm_bool": {"tgt_key_padding_mask": tgt_kpm, "memory_key_padding_mask": mem_kpm},
        "memory_float": {"memory_mask": torch.randn(T, S, generator=g, dtype=torch.float64)},
        "memory_bool": {"memory_mask": torch.tensor(np.triu(np.ones((T, S), bool), 2))},
        "all": {"tgt_mask": causal, "memory_mask": torch.zeros(T, S, dtype=torch.float64),
                "tgt_key_padding_mask": tgt_kpm.double() * -1e9,
                "memory_key_padding_mask": mem_kpm.double() * -1e9},
    }[kind]
    if full and kind in ("kpm_bool", "all"):
        src_kpm = mem_kpm if kind == "kpm_bool" else mem_kpm.double() * -1e9
        kw["src_key_padding_mask"] = src_kpm
        kw["src_mask"] = torch.zeros(S, S, dtype=torch.float64)
    return kw


def run_pair(torch, make, *, batch_first=False, batched=True, kind="none", train=False,
             full=False):
    """Run torch's and ember's module made by `make(nn)` on the same inputs and weights;
    compare outputs and gradients of the inputs and of every parameter."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's nested-tensor notice
        tm = make(torch.nn)
    tm, em = load_pair(tm, make(nn))
    tm.train(train)
    em.train(train)
    a = torch.randn(shape(S, batch_first, batched), dtype=torch.float64)  # src / memory
    b = torch.randn(shape(T, batch_first, batched), dtype=torch.float64)  # tgt
    at, bt = a.clone().requires_grad_(), b.clone().requires_grad_()
    ae, be = to_ember(a, True), to_ember(b, True)
    kw_t = mask_kwargs(torch, kind, batched, full=full)
    kw_e = {k: to_ember(v) if isinstance(v, torch.Tensor) else v for k, v in kw_t.items()}
    args_t, args_e = ((at, bt), (ae, be)) if full else ((bt, at), (be, ae))
    out_t, out_e = tm(*args_t, **kw_t), em(*args_e, **kw_e)
    assert_close(out_e, out_t, "output")
    g = torch.randn(out_t.shape, dtype=torch.float64)
    (out_t * g).sum().backward()
    (out_e * to_ember(g)).sum().backward()
    for name, x_t, x_e in (("src/memory", at, ae), ("tgt", bt, be)):
        assert_close(x_e.grad, x_t.grad, f"grad of {name}")
    params_e = dict(em.named_parameters())
    assert list(params_e) == [name for name, _ in tm.named_parameters()]
    for name, p in tm.named_parameters():
        assert_close(params_e[name].grad, p.grad, f"grad of {name}")
    return tm, em


KINDS = ["none", "causal", "causal_hint", "kpm_bool", "memory_float", "memory_bool", "all"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_masks(torch, kind, norm_first):
    run_pair(torch, lambda m: m.TransformerDecoderLayer(E, HEADS, FF, norm_first=norm_first),
             kind=kind)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("batched", [True, False])
def test_decoder_layer_layouts_gelu_no_bias(torch, batch_first, batched):
    run_pair(torch, lambda m: m.TransformerDecoderLayer(
        E, HEADS, FF, activation="gelu", batch_first=batch_first, bias=False),
        batch_first=batch_first, batched=batched, kind="kpm_bool")


def test_decoder_layer_callable_activation_and_dropout_zero_training(torch):
    run_pair(torch, lambda m: m.TransformerDecoderLayer(
        E, HEADS, FF, dropout=0.0, activation=m.functional.tanh), train=True, kind="causal")


@pytest.mark.parametrize("kind", ["none", "causal", "all"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_stack(torch, kind, batch_first):
    def make(m):
        layer = m.TransformerDecoderLayer(E, HEADS, FF, batch_first=batch_first)
        return m.TransformerDecoder(layer, 2, norm=m.LayerNorm(E))
    run_pair(torch, make, batch_first=batch_first, kind=kind)


def test_decoder_copies_the_layer():
    layer = nn.TransformerDecoderLayer(E, HEADS, FF)
    dec = nn.TransformerDecoder(layer, 3)
    assert dec.num_layers == 3 and dec.norm is None and len(dec.layers) == 3
    assert all(mod is not layer for mod in dec.layers)
    assert dec.layers[0].linear1.weight is not dec.layers[1].linear1.weight
    assert ember.equal(dec.layers[0].linear1.weight, layer.linear1.weight)


def test_decoder_detects_a_causal_mask(monkeypatch):
    seen = []
    original = nn.TransformerDecoderLayer.forward

    def spy(self, *args, **kwargs):
        seen.append(kwargs["tgt_is_causal"])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(nn.TransformerDecoderLayer, "forward", spy)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, HEADS, FF), 2).eval()
    tgt, mem = ember.randn(T, N, E), ember.randn(S, N, E)
    dec(tgt, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(T))
    dec(tgt, mem, tgt_mask=ember.zeros(T, T))
    dec(tgt, mem, tgt_mask=ember.zeros(T, T), tgt_is_causal=True)
    assert seen == [True, True, False, False, True, True]


@pytest.mark.parametrize("kind", ["none", "kpm_bool", "all"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer(torch, kind, batch_first, norm_first):
    run_pair(torch, lambda m: m.Transformer(
        E, HEADS, 2, 2, FF, batch_first=batch_first, norm_first=norm_first),
        batch_first=batch_first, kind=kind, full=True)


def test_transformer_unbatched_gelu_no_bias_causal_flags(torch):
    def make(m):
        return m.Transformer(E, HEADS, 1, 2, FF, activation="gelu", bias=False)
    tm, em = run_pair(torch, make, batched=False, kind="causal", full=True)
    src = torch.randn(S, E, dtype=torch.float64)
    tgt = torch.randn(T, E, dtype=torch.float64)
    causal_s = torch.nn.Transformer.generate_square_subsequent_mask(S, dtype=torch.float64)
    causal_t = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    kw = {"src_mask": causal_s, "tgt_mask": causal_t, "src_is_causal": True,
          "tgt_is_causal": True}
    out_t = tm(src, tgt, **kw)
    out_e = em(to_ember(src), to_ember(tgt), **{
        k: to_ember(v) if isinstance(v, torch.Tensor) else v for k, v in kw.items()})
    assert_close(out_e, out_t, "output with causal hints")


def test_transformer_float32_eval_within_1e5(torch):
    torch.manual_seed(0)
    tm = torch.nn.Transformer(32, 4, 2, 2, 64).eval()
    em = nn.Transformer(32, 4, 2, 2, 64).eval()
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    src, tgt = torch.randn(7, 2, 32), torch.randn(6, 2, 32)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(6)
    with torch.no_grad():
        out_t = tm(src, tgt, tgt_mask=mask)
    out_e = em(to_ember(src), to_ember(tgt), tgt_mask=to_ember(mask))
    assert out_e.dtype is ember.float32
    assert_close(out_e, out_t, "float32 output", tol=1e-5)


def test_transformer_defaults_match_torch(torch):
    for name in ("Transformer", "TransformerDecoderLayer", "TransformerDecoder"):
        ours, theirs = getattr(nn, name), getattr(torch.nn, name)
        for fn in ("__init__", "forward"):
            p_e = inspect.signature(getattr(ours, fn)).parameters
            p_t = inspect.signature(getattr(theirs, fn)).parameters
            assert list(p_e) == list(p_t), (name, fn)
            for k in p_t:
                d_t, d_e = p_t[k].default, p_e[k].default
                if k == "activation":
                    assert d_e is nn.functional.relu and d_t is torch.nn.functional.relu
                else:
                    assert d_e == d_t, (name, fn, k)
    model = nn.Transformer()
    assert (model.d_model, model.nhead, model.batch_first) == (512, 8, False)
    assert len(model.encoder.layers) == 6 and len(model.decoder.layers) == 6
    layer = model.decoder.layers[0]
    assert layer.linear1.out_features == 2048 and layer.dropout.p == 0.1
    assert layer.norm1.eps == 1e-5 and layer.activation is nn.functional.relu
    torch.manual_seed(0)
    assert list(model.state_dict()) == list(torch.nn.Transformer().state_dict())


def test_transformer_init_is_xavier_uniform():
    ember.manual_seed(0)
    model = nn.Transformer(64, 4, 1, 1, 256)
    w = model.encoder.layers[0].linear1.weight  # (256, 64): bound sqrt(6 / 320)
    bound = (6 / (64 + 256)) ** 0.5
    assert float(w.abs().max()) <= bound
    assert float(w.abs().max()) > 0.9 * bound  # the Linear default bound would be 1/8
    assert float(model.encoder.norm.weight.min()) == 1.0  # vectors keep their init


def test_transformer_custom_encoder_decoder():
    class Doubler(nn.Module):  # any module taking the encoder's arguments will do
        def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
            return src * 2

    enc = Doubler()
    dec_layer = nn.TransformerDecoderLayer(E, HEADS, FF)
    dec = nn.TransformerDecoder(dec_layer, 1)
    model = nn.Transformer(E, HEADS, custom_encoder=enc, custom_decoder=dec).eval()
    assert model.encoder is enc and model.decoder is dec
    src, tgt = ember.randn(S, N, E), ember.randn(T, N, E)
    out = model(src, tgt)
    expected = dec(tgt, src * 2)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-6,
                               atol=1e-6)


def test_generate_square_subsequent_mask(torch):
    m = nn.Transformer.generate_square_subsequent_mask(4)
    assert m.dtype is ember.float32
    np.testing.assert_array_equal(
        m.numpy(), torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    m64 = nn.Transformer().generate_square_subsequent_mask(3, dtype=ember.float64)
    assert m64.dtype is ember.float64 and m64.shape == (3, 3)


def test_transformer_errors():
    model = nn.Transformer(E, HEADS, 1, 1, FF)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(ember.randn(S, 2, E), ember.randn(T, 3, E))
    with pytest.raises(RuntimeError,
                       match="the feature number of src and tgt must be equal to d_model"):
        model(ember.randn(S, N, E), ember.randn(T, N, E + 1))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(E, HEADS, activation="tanh")
