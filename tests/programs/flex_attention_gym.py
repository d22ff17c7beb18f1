"""FlexAttention as attention-gym's examples use it, run eagerly on the CPU: block masks
from mask_mods (causal, sliding window, prefix-LM, document masking, combined with
and_masks/or_masks), their printed pictures, sparsity and int32 block tables; score_mods
(ALiBi, tanh soft-capping, a relative-position bias); GQA; logsumexp through return_aux;
each checked against F.scaled_dot_product_attention with the explicit mask or bias; and a
learnable relative-position table, captured by the score_mod, trained for a few steps."""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention.flex_attention import (
    AuxRequest,
    BlockMask,
    and_masks,
    create_block_mask,
    create_mask,
    flex_attention,
    noop_mask,
    or_masks,
)

warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
torch.manual_seed(0)
B, H, S, D = 2, 4, 256, 16
SLIDING_WINDOW = 64
q, k, v = (torch.randn(B, H, S, D) for _ in range(3))


def close(a, b, tol=2e-5):
    return bool(torch.allclose(a, b, atol=tol, rtol=tol))


def show(name, out, ref):
    print(f"{name}: matches sdpa {close(out, ref)} checksum {out.double().abs().sum():.3f}")


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding_window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx <= SLIDING_WINDOW


# -- causal --------------------------------------------------------------------------
causal_bm = create_block_mask(causal, None, None, S, S, device="cpu", BLOCK_SIZE=32)
print(causal_bm)
print(repr(causal_bm))
print("kv_num_blocks", causal_bm.kv_num_blocks.tolist(), causal_bm.kv_num_blocks.dtype)
print("full_kv_num_blocks", causal_bm.full_kv_num_blocks.tolist())
print("kv_indices row 3", causal_bm.kv_indices[0, 0, 3].tolist(), causal_bm.kv_indices.dtype)
print("q_indices row 1", causal_bm.q_indices[0, 0, 1].tolist())
out = flex_attention(q, k, v, block_mask=causal_bm)
show("causal", out, F.scaled_dot_product_attention(q, k, v, is_causal=True))

# -- sliding window + causal (and_masks) ---------------------------------------------
swa_mod = and_masks(causal, sliding_window)
swa_bm = create_block_mask(swa_mod, None, None, S, S, device="cpu", BLOCK_SIZE=32)
print(swa_bm)
print("sparsity", f"{swa_bm.sparsity():.2f}", "mask_mod", swa_bm.mask_mod.__name__)
dense = create_mask(swa_mod, 1, 1, S, S, device="cpu")
print("create_mask", tuple(dense.shape), dense.dtype, int(dense.sum()))
out = flex_attention(q, k, v, block_mask=swa_bm)
show("sliding window", out, F.scaled_dot_product_attention(q, k, v, attn_mask=dense))

# -- prefix-LM (or_masks), a prefix length per sequence ------------------------------
prefix_lengths = torch.tensor([40, 100])


def prefix_mask(b, h, q_idx, kv_idx):
    return kv_idx < prefix_lengths[b]


prefix_mod = or_masks(prefix_mask, causal)
prefix_bm = create_block_mask(prefix_mod, B, None, S, S, device="cpu", BLOCK_SIZE=64)
print(prefix_bm)
print("prefix kv_num_blocks", prefix_bm.kv_num_blocks.tolist())
print("prefix full_kv_indices b1", prefix_bm.full_kv_indices[1, 0].tolist())
mask = create_mask(prefix_mod, B, 1, S, S, device="cpu")
out = flex_attention(q, k, v, block_mask=prefix_bm)
show("prefix lm", out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))

# -- document masking (packed sequences) ---------------------------------------------
lengths = [[70, 90, 96], [30, 130, 60, 36]]
document_id = torch.stack([torch.repeat_interleave(torch.arange(len(n)), torch.tensor(n))
                           for n in lengths])


def document_mask(b, h, q_idx, kv_idx):
    return document_id[b, q_idx] == document_id[b, kv_idx]


doc_mod = and_masks(document_mask, causal)
doc_bm = create_block_mask(doc_mod, B, None, S, S, device="cpu", BLOCK_SIZE=32)
print(doc_bm)
print(doc_bm[1])
print("sliced shape", doc_bm[1].shape, doc_bm[:, :, 2:4].kv_num_blocks.shape)
print("to_dense", doc_bm.to_dense().shape, doc_bm.to_dense().dtype, int(doc_bm.to_dense().sum()))
print(doc_bm.to_string(grid_size=4, limit=1))
mask = create_mask(doc_mod, B, 1, S, S, device="cpu")
out = flex_attention(q, k, v, block_mask=doc_bm)
show("document", out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))

# -- ALiBi ---------------------------------------------------------------------------
alibi_slopes = torch.exp2(-((torch.arange(H) + 1) * 8.0 / H))


def alibi(score, b, h, q_idx, kv_idx):
    return score + alibi_slopes[h] * (kv_idx - q_idx)


out = flex_attention(q, k, v, score_mod=alibi, block_mask=causal_bm)
pos = torch.arange(S)
bias = alibi_slopes[:, None, None] * (pos[None, :] - pos[:, None])[None]
bias = bias.masked_fill(pos[None, :] > pos[:, None], float("-inf"))
show("alibi", out, F.scaled_dot_product_attention(q, k, v, attn_mask=bias))

# -- tanh soft-capping ---------------------------------------------------------------
SOFTCAP = 2.0


def soft_cap(score, b, h, q_idx, kv_idx):
    return SOFTCAP * torch.tanh(score / SOFTCAP)


out = flex_attention(q, k, v, score_mod=soft_cap)
scores = SOFTCAP * torch.tanh(q @ k.transpose(-2, -1) / D ** 0.5 / SOFTCAP)
print(f"softcap: matches manual {close(out, scores.softmax(-1) @ v)}")

# -- GQA -----------------------------------------------------------------------------
qg = torch.randn(B, 8, S, D)
out = flex_attention(qg, k[:, :2], v[:, :2], block_mask=causal_bm, enable_gqa=True)
show("gqa", out, F.scaled_dot_product_attention(qg, k[:, :2], v[:, :2], is_causal=True,
                                                enable_gqa=True))

# -- logsumexp, fully masked rows, scale, dtypes --------------------------------------
late_start = create_block_mask(lambda b, h, q_idx, kv_idx: (q_idx >= 64) & causal(
    b, h, q_idx, kv_idx), None, None, S, S, device="cpu", BLOCK_SIZE=32)
out, aux = flex_attention(q, k, v, block_mask=late_start, scale=0.5,
                          return_aux=AuxRequest(lse=True))
print("aux", type(aux).__name__, aux.max_scores, aux.lse.shape, aux.lse.dtype)
print("masked rows: output zero", bool((out[:, :, :64] == 0).all()), "lse",
      aux.lse[0, 0, :3].tolist())
ref_lse = (q @ k.transpose(-2, -1) * 0.5).masked_fill(pos[None, :] > pos[:, None],
                                                      float("-inf")).logsumexp(-1)
print("lse matches", close(aux.lse[:, :, 64:], ref_lse[:, :, 64:], 1e-4))
for dtype in (torch.float64, torch.bfloat16, torch.float16):
    out = flex_attention(q.to(dtype), k.to(dtype), v.to(dtype), block_mask=causal_bm)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    print(dtype, out.dtype, "close", close(out.float(), ref, 2e-2))
try:
    flex_attention(q[:, :, :128], k, v, block_mask=causal_bm)
except ValueError as err:
    print("ValueError", str(err)[:90])

# -- BlockMask from kv blocks ------------------------------------------------------
kv_num_blocks = torch.tensor([[[1, 2]]], dtype=torch.int32)
kv_indices = torch.tensor([[[[0, 1], [0, 1]]]], dtype=torch.int32)
handmade = BlockMask.from_kv_blocks(kv_num_blocks, kv_indices, BLOCK_SIZE=128,
                                    mask_mod=noop_mask)
print(handmade)
print("handmade", handmade.shape, handmade.seq_lengths, handmade.q_num_blocks.tolist())

# -- a learnable relative-position bias, captured by the score_mod ---------------------
torch.manual_seed(1)
true_table = torch.randn(2 * S - 1) * 0.5
with torch.no_grad():
    target = flex_attention(q, k, v, score_mod=lambda s, b, h, qi, ki: s + true_table[
        qi - ki + S - 1], block_mask=causal_bm)
table = nn.Parameter(torch.zeros(2 * S - 1))


def rel_bias(score, b, h, q_idx, kv_idx):
    return score + table[q_idx - kv_idx + S - 1]


opt = torch.optim.Adam([table], lr=0.1)
for step in range(12):
    out = flex_attention(q, k, v, score_mod=rel_bias, block_mask=causal_bm)
    loss = F.mse_loss(out, target) * 100
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step:2d} loss {loss.item():.5f}")
print("grad nonzero entries", int((table.grad != 0).sum()))
