"""Reformer-lite LSH attention (Kitaev et al.; in the style of lucidrains' reformer-pytorch):
shared-QK attention, random rotations hashing into buckets with argmax(cat([rot, -rot])),
several hash rounds offset by bucket counts, a stable sort of (bucket, position) keys,
gather of sorted queries/values, chunked attention with look-one-back through torch.cat of
rolled chunks, self-attention masked with -1e5, undoing the sort with scatter of the inverse
permutation, combining hash rounds with logsumexp weights, and a tiny LM trained with Adam."""
import torch
import torch.nn as nn
import torch.nn.functional as F

TOKEN_SELF_ATTN_VALUE = -5e4


def sort_key_val(t1, t2, dim=-1):
    values, indices = t1.sort(dim=dim, stable=True)
    t2 = t2.expand_as(t1)
    return values, t2.gather(dim, indices)


def batched_index_select(values, indices):
    last_dim = values.shape[-1]
    return values.gather(1, indices[:, :, None].expand(-1, -1, last_dim))


def look_one_back(x):
    x_extra = torch.cat([x[:, -1:, ...], x[:, :-1, ...]], dim=1)
    return torch.cat([x, x_extra], dim=2)


class LSHAttention(nn.Module):
    def __init__(self, bucket_size=8, n_hashes=2, causal=False):
        super().__init__()
        self.bucket_size = bucket_size
        self.n_hashes = n_hashes
        self.causal = causal

    def hash_vectors(self, n_buckets, vecs):
        batch_size = vecs.shape[0]
        device = vecs.device
        assert n_buckets % 2 == 0
        rot_size = n_buckets
        rotations_shape = (1, vecs.shape[-1], self.n_hashes, rot_size // 2)
        random_rotations = torch.randn(rotations_shape, dtype=vecs.dtype, device=device)
        random_rotations = random_rotations.expand(batch_size, -1, -1, -1)
        rotated_vecs = torch.einsum('btf,bfhi->bhti', vecs, random_rotations)
        rotated_vecs = torch.cat([rotated_vecs, -rotated_vecs], dim=-1)
        buckets = torch.argmax(rotated_vecs, dim=-1)
        offsets = torch.arange(self.n_hashes, device=device)
        offsets = torch.reshape(offsets * n_buckets, (1, -1, 1))
        buckets = torch.reshape(buckets + offsets, (batch_size, -1,))
        return buckets

    def forward(self, qk, v):
        batch_size, seqlen, dim, device = *qk.shape, qk.device
        assert seqlen % (self.bucket_size * 2) == 0
        n_buckets = seqlen // self.bucket_size
        buckets = self.hash_vectors(n_buckets, qk)
        assert int(buckets.shape[1]) == self.n_hashes * seqlen

        total_hashes = self.n_hashes
        ticker = torch.arange(total_hashes * seqlen, device=device).unsqueeze(0).expand_as(buckets)
        buckets_and_t = seqlen * buckets + (ticker % seqlen)
        buckets_and_t = buckets_and_t.detach()

        sbuckets_and_t, sticker = sort_key_val(buckets_and_t, ticker, dim=-1)
        _, undo_sort = sticker.sort(dim=-1)
        del ticker

        sbuckets_and_t = sbuckets_and_t.detach()
        sticker = sticker.detach()
        undo_sort = undo_sort.detach()

        st = (sticker % seqlen)
        sqk = batched_index_select(qk, st)
        sv = batched_index_select(v, st)

        chunk_size = total_hashes * n_buckets
        bq_t = bkv_t = torch.reshape(st, (batch_size, chunk_size, -1))
        bqk = torch.reshape(sqk, (batch_size, chunk_size, -1, dim))
        bv = torch.reshape(sv, (batch_size, chunk_size, -1, dim))

        bq = bqk
        bk = F.normalize(bqk, p=2, dim=-1).type_as(bq)

        bk = look_one_back(bk)
        bv = look_one_back(bv)
        bkv_t = look_one_back(bkv_t)

        dots = torch.einsum('bhie,bhje->bhij', bq, bk) * (dim ** -0.5)
        masked_value = -torch.finfo(dots.dtype).max

        if self.causal:
            mask = bq_t[:, :, :, None] < bkv_t[:, :, None, :]
            dots.masked_fill_(mask, masked_value)
            del mask

        self_mask = bq_t[:, :, :, None] == bkv_t[:, :, None, :]
        dots.masked_fill_(self_mask, TOKEN_SELF_ATTN_VALUE)
        del self_mask

        dots_logsumexp = torch.logsumexp(dots, dim=-1, keepdim=True)
        dots = torch.exp(dots - dots_logsumexp).type_as(dots)

        bo = torch.einsum('buij,buje->buie', dots, bv)
        so = torch.reshape(bo, (batch_size, -1, dim))
        slogits = torch.reshape(dots_logsumexp, (batch_size, -1,))

        o = batched_index_select(so, undo_sort)
        logits = slogits.gather(1, undo_sort)

        o = torch.reshape(o, (batch_size, total_hashes, seqlen, dim))
        logits = torch.reshape(logits, (batch_size, total_hashes, seqlen, 1))

        probs = torch.exp(logits - torch.logsumexp(logits, dim=1, keepdim=True))
        out = torch.sum(o * probs, dim=1)
        return out, buckets


class LSHSelfAttention(nn.Module):
    def __init__(self, dim, heads=2, bucket_size=8, n_hashes=2, causal=True):
        super().__init__()
        self.heads = heads
        self.toqk = nn.Linear(dim, dim, bias=False)
        self.tov = nn.Linear(dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)
        self.lsh_attn = LSHAttention(bucket_size=bucket_size, n_hashes=n_hashes, causal=causal)

    def forward(self, x):
        b, t, e, h = *x.shape, self.heads
        qk = self.toqk(x)
        v = self.tov(x)

        def merge_heads(v):
            return v.view(b, t, h, -1).transpose(1, 2).reshape(b * h, t, -1)

        def split_heads(v):
            return v.view(b, h, t, -1).transpose(1, 2).contiguous()

        qk, v = map(merge_heads, (qk, v))
        out, _ = self.lsh_attn(qk, v)
        out = split_heads(out).view(b, t, e)
        return self.to_out(out)


class ReformerLM(nn.Module):
    def __init__(self, num_tokens, dim, depth, max_seq_len):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        self.blocks = nn.ModuleList([
            nn.ModuleDict({'norm1': nn.LayerNorm(dim), 'attn': LSHSelfAttention(dim),
                           'norm2': nn.LayerNorm(dim),
                           'ff': nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(),
                                               nn.Linear(dim * 2, dim))})
            for _ in range(depth)])
        self.out = nn.Linear(dim, num_tokens)

    def forward(self, x):
        t = torch.arange(x.shape[1], device=x.device)
        x = self.token_emb(x) + self.pos_emb(t)
        for blk in self.blocks:
            x = x + blk['attn'](blk['norm1'](x))
            x = x + blk['ff'](blk['norm2'](x))
        return self.out(x)


def main():
    torch.manual_seed(0)
    torch.set_printoptions(precision=4, sci_mode=False)

    keys = torch.tensor([[3, 1, 3, 0, 1, 3, 0, 2]])
    ticker = torch.arange(8)[None]
    sk, st = sort_key_val(keys, ticker)
    print("stable sort", sk.tolist(), st.tolist())
    _, undo = st.sort(dim=-1)
    print("undo sort", undo.tolist(), "restores:", torch.equal(sk.gather(1, undo), keys))
    inv = torch.empty_like(st).scatter_(1, st, torch.arange(8).expand_as(st))
    print("scatter inverse == argsort inverse:", torch.equal(inv, undo))
    print("argsort stable", torch.argsort(keys, dim=-1, stable=True).tolist())

    x = torch.arange(2 * 4 * 3, dtype=torch.float32).view(1, 4, 2, 3)
    print("look_one_back", tuple(look_one_back(x).shape))
    print(look_one_back(x)[0, 0])

    attn = LSHAttention(bucket_size=4, n_hashes=2, causal=False)
    qk = torch.randn(2, 16, 8)
    v = torch.randn(2, 16, 8)
    out, buckets = attn(qk, v)
    print("buckets", tuple(buckets.shape), buckets.dtype)
    print(buckets[0, :16])
    print("bucket range", buckets.min().item(), buckets.max().item())
    print("lsh out", tuple(out.shape), out[0, :2])

    # with one big bucket LSH attention is full attention minus self (masked to -5e4)
    full = LSHAttention(bucket_size=8, n_hashes=1)
    qk1 = torch.randn(1, 16, 4)
    v1 = torch.randn(1, 16, 4)
    o1, b1 = full(qk1, v1)
    print("n_buckets", 16 // 8, "bucket counts", torch.bincount(b1[0], minlength=2).tolist())

    seq_len, num_tokens = 32, 12
    model = ReformerLM(num_tokens, dim=32, depth=2, max_seq_len=seq_len)
    print(model)
    print("parameters", sum(p.numel() for p in model.parameters()))
    base = torch.randint(0, num_tokens, (8, 4))
    data = base.repeat(1, 9)[:, : seq_len + 1]
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(25):
        logits = model(data[:, :-1])
        loss = F.cross_entropy(logits.transpose(1, 2), data[:, 1:])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 5 == 0 or step == 24:
            print(f"step {step:2d} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
