"""`ember.nn.attention.flex_attention` (torch.nn.attention.flex_attention) against torch:
signatures, the int32 block tables of create_block_mask, BlockMask's printed forms and
methods, flex_attention's values (dtypes, score_mods, masks, GQA, logsumexp, fully masked
rows), gradients of tensors a score_mod captures, and errors word for word."""
from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest

import ember
from ember.nn.attention import flex_attention as efa

torch = pytest.importorskip("torch")
tfa = pytest.importorskip("torch.nn.attention.flex_attention")


@pytest.fixture(autouse=True)
def _torch_eager_debug_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's reference path without its compile step (same math, much faster); the
    tests that take gradients switch it back."""
    monkeypatch.setattr(tfa, "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG", True)
    monkeypatch.setattr(efa, "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG", True)


def _np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().float().numpy() if x.dtype is torch.bfloat16 else x.detach().numpy()
    return x.detach().float().numpy() if x.dtype is ember.bfloat16 else x.detach().numpy()


def _pair(*shapes: tuple[int, ...], dtype: str = "float32", seed: int = 0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return ([ember.tensor(a).to(getattr(ember, dtype)) for a in arrays],
            [torch.tensor(a).to(getattr(torch, dtype)) for a in arrays])


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _window(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx).abs() <= 5


def _late(b, h, q_idx, kv_idx):  # rows before 8 see nothing
    return (q_idx >= 8) & (kv_idx <= q_idx)


def _alibi(lib):
    slopes = lib.tensor([0.5, 0.25, 0.125, 0.0625])

    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)
    return alibi


def _softcap(lib):
    def softcap(score, b, h, q_idx, kv_idx):
        return 2.0 * lib.tanh(score / 2.0)
    return softcap


def test_signatures_and_names_are_torchs() -> None:
    for name in ("flex_attention", "create_block_mask", "create_mask", "and_masks",
                 "or_masks", "noop_mask"):
        ours, theirs = inspect.signature(getattr(efa, name)), \
            inspect.signature(getattr(tfa, name))
        assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in theirs.parameters.values()]
    for method in ("from_kv_blocks", "to_string", "to", "__getitem__", "_adjust"):
        ours = inspect.signature(getattr(efa.BlockMask, method)).parameters
        theirs = inspect.signature(getattr(tfa.BlockMask, method)).parameters
        assert [(p.name, p.default) for p in ours.values()] == \
            [(p.name, p.default) for p in theirs.values()]
    assert sorted(efa.__all__) == sorted(tfa.__all__)
    assert efa.AuxRequest._fields == tfa.AuxRequest._fields
    assert efa.AuxOutput._fields == tfa.AuxOutput._fields


TABLES = ["kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
          "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"]


def _assert_same_block_mask(ours, theirs) -> None:
    for name in TABLES:
        a, b = getattr(ours, name), getattr(theirs, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1] == "int32"
            np.testing.assert_array_equal(_np(a), _np(b), err_msg=name)
    assert ours.shape == theirs.shape and tuple(ours.BLOCK_SIZE) == tuple(theirs.BLOCK_SIZE)
    assert ours.sparsity() == theirs.sparsity()
    assert str(ours) == str(theirs)
    assert repr(ours).replace("ember.", "torch.") == repr(theirs)
    np.testing.assert_array_equal(_np(ours.to_dense()), _np(theirs.to_dense()))


@pytest.mark.parametrize("mask_mod, B, H, q_len, kv_len, block, full", [
    (_causal, None, None, 64, 64, 16, True),
    (_window, 2, 3, 50, 37, (8, 16), True),
    (_late, 1, 2, 40, 40, 8, False),
])
def test_block_tables_are_torchs(mask_mod, B, H, q_len, kv_len, block, full) -> None:
    ours = efa.create_block_mask(mask_mod, B, H, q_len, kv_len, device="cpu",
                                 BLOCK_SIZE=block, separate_full_blocks=full)
    theirs = tfa.create_block_mask(mask_mod, B, H, q_len, kv_len, device="cpu",
                                   BLOCK_SIZE=block, separate_full_blocks=full)
    _assert_same_block_mask(ours, theirs)
    assert ours.to_string(grid_size=3, limit=2) == theirs.to_string(grid_size=3, limit=2)
    assert ours.to_string(grid_size=-1) == theirs.to_string(grid_size=-1)
    for index in (0, -1, (0, slice(None), slice(1, 3))):
        _assert_same_block_mask(ours[index], theirs[index])
    _assert_same_block_mask(ours._adjust(q_len // 2, kv_len // 2),
                            theirs._adjust(q_len // 2, kv_len // 2))
    _assert_same_block_mask(ours.to("cpu"), theirs.to("cpu"))


def test_the_default_device_masks_and_combinators() -> None:
    ours = efa.create_block_mask(_causal, None, None, 8, 8)  # (no accelerator here: cpu)
    assert ours.kv_num_blocks.device == ember.device(
        str(ember.accelerator.current_accelerator() or "cpu"))
    mods = (efa.and_masks(_causal, _window), efa.or_masks(_late, _window), efa.noop_mask)
    tmods = (tfa.and_masks(_causal, _window), tfa.or_masks(_late, _window), tfa.noop_mask)
    for mine, theirs in zip(mods, tmods, strict=True):
        a = efa.create_mask(mine, 2, 1, 12, 9, device="cpu")
        b = tfa.create_mask(theirs, 2, 1, 12, 9, device="cpu")
        assert a.dtype is ember.bool and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_array_equal(_np(a), _np(b))
    score = efa.create_mask(lambda s, b, h, q, k: ember.where(q >= k, s, -math.inf),
                            1, 1, 5, 5, device="cpu")
    np.testing.assert_array_equal(_np(score), np.tril(np.ones((5, 5), bool))[None, None])
    assert efa.and_masks(_causal).__name__ == "and_mask"
    with pytest.raises(RuntimeError, match="All inputs should be callable mask_mods"):
        efa.or_masks(_causal, 3)


def test_from_kv_blocks_and_sliced_mask_mod() -> None:
    num, idx = [[[1, 2, 1]]], [[[[2, 0, 1], [0, 1, 2], [1, 2, 0]]]]
    ours = efa.BlockMask.from_kv_blocks(ember.tensor(num, dtype=ember.int32),
                                        ember.tensor(idx, dtype=ember.int32), BLOCK_SIZE=4)
    theirs = tfa.BlockMask.from_kv_blocks(torch.tensor(num, dtype=torch.int32),
                                          torch.tensor(idx, dtype=torch.int32), BLOCK_SIZE=4)
    _assert_same_block_mask(ours, theirs)
    assert ours.mask_mod is efa.noop_mask and ours.seq_lengths == (12, 12)
    with pytest.raises(RuntimeError, match="Cannot use mask_mod from a sliced BlockMask"):
        ours[0].mask_mod(None, None, None, None)
    q = ember.zeros(1, 1, 12, 4)
    with pytest.raises(RuntimeError, match="^Cannot use mask_mod from a sliced BlockMask$"):
        efa.flex_attention(q, q, q, block_mask=ours[0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_values_match_torch_in_each_dtype(dtype: str) -> None:
    (q, k, v), (tq, tk, tv) = _pair((2, 4, 24, 8), (2, 4, 24, 8), (2, 4, 24, 6), dtype=dtype)
    bm = efa.create_block_mask(_late, 2, 1, 24, 24, device="cpu", BLOCK_SIZE=8)
    tbm = tfa.create_block_mask(_late, 2, 1, 24, 24, device="cpu", BLOCK_SIZE=8)
    out, aux = efa.flex_attention(q, k, v, _alibi(ember), bm,
                                  return_aux=efa.AuxRequest(lse=True))
    tout, taux = tfa.flex_attention(tq, tk, tv, _alibi(torch), tbm,
                                    return_aux=tfa.AuxRequest(lse=True))
    assert str(out.dtype)[6:] == str(tout.dtype)[6:] == dtype
    assert str(aux.lse.dtype)[6:] == str(taux.lse.dtype)[6:]
    assert aux.max_scores is None and taux.max_scores is None
    tol = {"float32": 1e-6, "float64": 1e-12}.get(dtype, 1e-2)
    np.testing.assert_allclose(_np(out), _np(tout), rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(aux.lse), _np(taux.lse), rtol=1e-5, atol=1e-5)
    assert (_np(out)[:, :, :8] == 0).all() and np.isneginf(_np(aux.lse)[:, :, :8]).all()


def test_score_mods_gqa_scale_and_broadcast_batches() -> None:
    (q, k, v), (tq, tk, tv) = _pair((2, 4, 16, 8), (1, 2, 16, 8), (1, 2, 16, 4))
    bm = efa.create_block_mask(_window, 2, None, 16, 16, device="cpu", BLOCK_SIZE=4)
    tbm = tfa.create_block_mask(_window, 2, None, 16, 16, device="cpu", BLOCK_SIZE=4)
    out, lse = efa.flex_attention(q, k, v, _softcap(ember), bm, scale=0.3, enable_gqa=True,
                                  return_lse=True)
    tout, tlse = tfa.flex_attention(tq, tk, tv, _softcap(torch), tbm, scale=0.3,
                                    enable_gqa=True, return_lse=True)
    np.testing.assert_allclose(_np(out), _np(tout), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(lse), _np(tlse), rtol=1e-6, atol=1e-6)
    # no mask, no score_mod: scaled_dot_product_attention
    np.testing.assert_allclose(
        _np(efa.flex_attention(q[:1], q[:1], q[:1])),
        _np(ember.nn.functional.scaled_dot_product_attention(q[:1], q[:1], q[:1])),
        rtol=1e-6, atol=1e-6)


def test_gradients_of_captured_tensors_match_torch() -> None:
    # (torch's flex computes them through its compiled path, seconds to start: its
    # reference here is attention with the same bias as an additive mask; the program
    # flex_attention_gym.py trains such a table under torch's flex itself)
    (q, k, v, w), (tq, tk, tv, tw) = _pair((1, 2, 12, 4), (1, 2, 12, 4), (1, 2, 12, 4),
                                           (2, 23))
    w.requires_grad_(True)
    tw.requires_grad_(True)

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + w[h, q_idx - kv_idx + 11]

    bm = efa.create_block_mask(_causal, None, None, 12, 12, device="cpu", BLOCK_SIZE=4)
    out = efa.flex_attention(q, k, v, score_mod, bm)
    pos = torch.arange(12)
    bias = tw[:, pos[:, None] - pos + 11].masked_fill(pos > pos[:, None], -math.inf)
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, bias)
    (out * v).sum().backward()
    (tout * tv).sum().backward()
    np.testing.assert_allclose(_np(out), _np(tout), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(w.grad), _np(tw.grad), rtol=1e-5, atol=1e-6)


def test_query_key_value_gradients_of_the_reference_path() -> None:
    # PyTorch refuses them on the CPU (below); ember's path is differentiable and its
    # gradients are those of attention with the equivalent additive mask
    (q, k, v), (tq, tk, tv) = _pair((1, 4, 10, 4), (1, 4, 10, 4), (1, 4, 10, 3))
    for t in (q, k, v, tq, tk, tv):
        t.requires_grad_(True)
    out, _, _ = efa._math_attention(q, k, v, _alibi(ember), _causal, 0.5)
    pos = torch.arange(10)
    bias = torch.tensor([0.5, 0.25, 0.125, 0.0625])[:, None, None] * (pos - pos[:, None])
    bias = bias.masked_fill(pos > pos[:, None], -math.inf)
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, bias, scale=0.5)
    out.pow(2).sum().backward()
    tout.pow(2).sum().backward()
    for a, b in ((out, tout), (q.grad, tq.grad), (k.grad, tk.grad), (v.grad, tv.grad)):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)


def _errors(call) -> tuple[type, str]:
    outcomes = []
    for lib, fa in ((ember, efa), (torch, tfa)):
        with pytest.raises(Exception) as info:
            call(lib, fa)
        outcomes.append((info.type.__name__, str(info.value)))
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


@pytest.mark.parametrize("call", [
    lambda lib, fa: fa.flex_attention(lib.ones(1, 4, 8, 4), lib.ones(1, 2, 8, 4),
                                      lib.ones(1, 2, 8, 4)),
    lambda lib, fa: fa.flex_attention(lib.ones(1, 3, 8, 4), lib.ones(1, 2, 8, 4),
                                      lib.ones(1, 2, 8, 4), enable_gqa=True),
    lambda lib, fa: fa.flex_attention(lib.ones(1, 2, 8, 4), lib.ones(1, 2, 8, 3),
                                      lib.ones(1, 2, 8, 4)),
    lambda lib, fa: fa.flex_attention(lib.ones(2, 8, 4), lib.ones(2, 8, 4), lib.ones(2, 8, 4)),
    lambda lib, fa: fa.flex_attention(lib.ones(2, 1, 8, 4), lib.ones(1, 1, 8, 4),
                                      lib.ones(1, 1, 8, 4)),
    lambda lib, fa: fa.flex_attention(lib.ones(1, 1, 8, 4, requires_grad=True),
                                      lib.ones(1, 1, 8, 4), lib.ones(1, 1, 8, 4)),
    lambda lib, fa: fa.flex_attention(
        lib.ones(1, 1, 8, 4), lib.ones(1, 1, 8, 4), lib.ones(1, 1, 8, 4),
        block_mask=fa.create_block_mask(_causal, 1, 1, 16, 16, device="cpu")),
    lambda lib, fa: fa.flex_attention(
        lib.ones(1, 1, 8, 4), lib.ones(1, 1, 8, 4), lib.ones(1, 1, 8, 4),
        block_mask=fa.create_block_mask(_causal, 1, 1, 4, 4, device="cpu", BLOCK_SIZE=2)),
    lambda lib, fa: fa.flex_attention(lib.ones(1, 1, 8, 4), lib.ones(1, 1, 8, 4),
                                      lib.ones(1, 1, 8, 4), return_lse=True,
                                      return_aux=fa.AuxRequest(lse=True)),
    lambda lib, fa: fa.flex_attention(lib.ones(1, 1, 8, 4), lib.ones(1, 1, 8, 4),
                                      lib.ones(1, 1, 8, 4),
                                      return_aux=fa.AuxRequest(max_scores=True)),
    lambda lib, fa: fa.flex_attention(lib.ones(1, 1, 8, 4), lib.ones(1, 1, 8, 4),
                                      lib.ones(1, 1, 8, 4), kernel_options={"BACKEND": "X"}),
    lambda lib, fa: fa.create_block_mask(lambda s, b, h, q, k: s, 1, 1, 4, 4, device="cpu"),
    lambda lib, fa: fa.create_block_mask(lambda b, h: b, 1, 1, 4, 4, device="cpu"),
])
def test_errors_are_torchs(call) -> None:
    _errors(call)


def test_warnings_are_torchs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(efa, "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG", False)
    monkeypatch.setattr(efa, "_WARNINGS_SHOWN", set())
    q = ember.ones(1, 1, 4, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        efa.flex_attention(q, q, q, return_lse=True)
        efa.flex_attention(q, q, q, return_lse=True)
    assert [w.category for w in caught] == [FutureWarning, UserWarning]
    assert str(caught[1].message).startswith(
        "flex_attention called without torch.compile() - this will use an unfused "
        "implementation that materializes the full scores matrix")
    with pytest.warns(DeprecationWarning, match="_compile flag on create_block_mask"):
        efa.create_block_mask(_causal, 1, 1, 4, 4, device="cpu", _compile=True)


def test_attention_gym_helpers_vmap_for_bhqkv_and_block_mask_from_a_mask() -> None:
    # attention-gym's create_score_mod: scores of the mods mapped over b, h, q, kv
    from torch._dynamo._trace_wrapped_higher_order_op import (
        TransformGetItemToIndex as TorchTransform,
    )

    from ember._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

    (scores,), (tscores,) = _pair((2, 4, 6, 5))
    results = []
    for lib, fa, mode, s in ((ember, efa, TransformGetItemToIndex, scores),
                             (torch, tfa, TorchTransform, tscores)):
        b, h, m, n = (lib.arange(size) for size in (2, 4, 6, 5))
        with mode():
            score = fa._vmap_for_bhqkv(_alibi(lib), prefix=(0,))(s, b, h, m, n)
            mask = fa._vmap_for_bhqkv(_window, prefix=())(b, h, m, n)
            grouped = fa._vmap_for_bhqkv(lambda b, h, q, k: h * 10 + q - k, prefix=(),
                                         group_dim=True)(b, h.view(2, 2), m, n)
        results.append([_np(score), _np(mask), _np(grouped)])
        blocks = fa._convert_mask_to_block_mask(mask, 2, 2, separate_full_blocks=True)
        results[-1].append(fa._create_sparse_block_from_block_mask(blocks, _window, (6, 5),
                                                                   2, 2))
    for ours, theirs in zip(results[0][:3], results[1][:3], strict=True):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    _assert_same_block_mask(results[0][3], results[1][3])
