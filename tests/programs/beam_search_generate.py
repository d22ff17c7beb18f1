"""Seq2seq decoding as fairseq's SequenceGenerator and HuggingFace's `generate` write it: a
tiny GRU encoder-decoder with dot attention trained on a seeded copy-reverse task, then beam
search with beams flattened into the batch (repeat_interleave, index_select of the hidden
state by beam origin), log_softmax + running scores, topk over beam * vocab, // and % to
split beam and token, eos handling with masked_fill, a length penalty, torch.gather of the
finished hypotheses and n-best lists with their scores; then greedy, top-k and nucleus
(top-p) sampling with torch.multinomial under a seeded torch.Generator."""
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, BOS, EOS = 0, 1, 2
VOCAB, HID, SRC_LEN = 10, 32, 5


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HID, padding_idx=PAD)
        self.rnn = nn.GRU(HID, HID, batch_first=True)

    def forward(self, src):
        out, h = self.rnn(self.embed(src))
        return out, h


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HID, padding_idx=PAD)
        self.rnn = nn.GRU(HID, HID, batch_first=True)
        self.attn_proj = nn.Linear(2 * HID, HID)
        self.out = nn.Linear(HID, VOCAB)

    def forward(self, tokens, h, enc_out):
        x, h = self.rnn(self.embed(tokens), h)                  # (B, T, H)
        scores = torch.bmm(x, enc_out.transpose(1, 2))          # (B, T, S)
        attn = F.softmax(scores, dim=-1)
        ctx = torch.bmm(attn, enc_out)
        x = torch.tanh(self.attn_proj(torch.cat([x, ctx], dim=-1)))
        return self.out(x), h, attn


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = Decoder()

    def forward(self, src, tgt_in):
        enc_out, h = self.encoder(src)
        logits, _, _ = self.decoder(tgt_in, h, enc_out)
        return logits


def make_batch(n, gen):
    src = torch.randint(3, VOCAB, (n, SRC_LEN), generator=gen)
    tgt = src.flip(1)
    tgt_in = torch.cat([torch.full((n, 1), BOS, dtype=torch.long), tgt], dim=1)
    tgt_out = torch.cat([tgt, torch.full((n, 1), EOS, dtype=torch.long)], dim=1)
    return src, tgt_in, tgt_out


@torch.no_grad()
def beam_search(model, src, beam_size=3, max_len=8, len_penalty=1.0):
    bsz = src.size(0)
    enc_out, h = model.encoder(src)
    # flatten beams into the batch, as fairseq's reorder_encoder_out
    new_order = torch.arange(bsz).view(-1, 1).repeat(1, beam_size).view(-1)
    enc_out = enc_out.index_select(0, new_order)
    h = h.index_select(1, new_order)
    tokens = torch.full((bsz * beam_size, max_len + 1), PAD, dtype=torch.long)
    tokens[:, 0] = BOS
    scores = torch.zeros(bsz, beam_size)
    scores[:, 1:] = float("-inf")      # only the first beam is live at step 0
    finished = [[] for _ in range(bsz)]
    done = torch.zeros(bsz, dtype=torch.bool)
    bbsz_offsets = (torch.arange(0, bsz) * beam_size).unsqueeze(1)
    for step in range(max_len):
        logits, h, _ = model.decoder(tokens[:, step:step + 1], h, enc_out)
        lprobs = F.log_softmax(logits[:, -1, :], dim=-1)       # (bsz*beam, V)
        lprobs[:, PAD] = float("-inf")
        if step == max_len - 1:
            lprobs[:, :EOS] = float("-inf")
            lprobs[:, EOS + 1:] = float("-inf")
        cand = scores.view(-1, 1) + lprobs
        cand = cand.view(bsz, -1)
        top_scores, top_idx = torch.topk(cand, k=2 * beam_size, dim=1)
        beam_idx = torch.div(top_idx, VOCAB, rounding_mode="floor")
        tok_idx = top_idx.fmod(VOCAB)
        if step == 0:
            print("step0 top_idx", top_idx[0].tolist(), "beams", beam_idx[0].tolist())
        eos_mask = tok_idx.eq(EOS) & top_scores.ne(float("-inf"))
        # finalize hypotheses ending in eos (fairseq's finalize_hypos)
        for b in range(bsz):
            if done[b]:
                continue
            for j in range(beam_size):
                if eos_mask[b, j]:
                    src_row = bbsz_offsets[b, 0] + beam_idx[b, j]
                    hyp = tokens[src_row, 1:step + 1].clone()
                    norm = top_scores[b, j] / (step + 1) ** len_penalty
                    finished[b].append((norm.item(), hyp.tolist()))
            if len(finished[b]) >= beam_size:
                done[b] = True
        # continue with the best non-eos candidates: masked_fill eos out, re-sort
        active = top_scores.masked_fill(eos_mask, float("-inf"))
        active_scores, active_pos = active.topk(beam_size, dim=1)
        sel_beam = torch.gather(beam_idx, 1, active_pos)
        sel_tok = torch.gather(tok_idx, 1, active_pos)
        src_rows = (sel_beam + bbsz_offsets).view(-1)
        tokens = tokens.index_select(0, src_rows)
        tokens[:, step + 1] = sel_tok.view(-1)
        h = h.index_select(1, src_rows)
        scores = active_scores
        if done.all():
            break
    nbest = []
    for b in range(bsz):
        hyps = sorted(finished[b], key=lambda x: -x[0])[:beam_size]
        nbest.append(hyps)
    return nbest


@torch.no_grad()
def sample(model, src, max_len=6, top_k=0, top_p=1.0, temperature=1.0, generator=None):
    enc_out, h = model.encoder(src)
    cur = torch.full((src.size(0), 1), BOS, dtype=torch.long)
    out = []
    for _ in range(max_len):
        logits, h, _ = model.decoder(cur, h, enc_out)
        logits = logits[:, -1, :] / temperature
        if top_k > 0:
            kth = torch.topk(logits, top_k)[0][..., -1, None]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if top_p < 1.0:
            sorted_logits, sorted_idx = torch.sort(logits, descending=True)
            cum = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
            remove = cum > top_p
            remove[..., 1:] = remove[..., :-1].clone()
            remove[..., 0] = False
            remove = remove.scatter(1, sorted_idx, remove)
            logits = logits.masked_fill(remove, float("-inf"))
        probs = F.softmax(logits, dim=-1)
        cur = torch.multinomial(probs, num_samples=1, generator=generator)
        out.append(cur)
    return torch.cat(out, dim=1)


def main():
    torch.manual_seed(0)
    model = Seq2Seq()
    print(model)
    print("parameters", sum(p.numel() for p in model.parameters()))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    crit = nn.CrossEntropyLoss(ignore_index=PAD)
    gen = torch.Generator().manual_seed(1)
    for step in range(60):
        src, tgt_in, tgt_out = make_batch(32, gen)
        logits = model(src, tgt_in)
        loss = crit(logits.reshape(-1, VOCAB), tgt_out.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 10 == 0 or step == 59:
            print(f"step {step:3d} loss {loss.item():.4f}")
    model.eval()

    # flattening helpers on fixed tensors
    x = torch.arange(6).view(2, 3)
    print("repeat_interleave", x.repeat_interleave(2, dim=0).tolist())
    print("repeat_interleave tensor", torch.repeat_interleave(torch.tensor([1, 2]),
                                                              torch.tensor([2, 3])).tolist())
    ties = torch.tensor([[0.5, 0.1, 0.5, 0.5, 0.2, 0.1]])
    print("topk ties", torch.topk(ties, 4).indices.tolist(),
          torch.topk(ties, 3, largest=False).indices.tolist())
    print("topk unsorted", sorted(torch.topk(ties, 3, sorted=False).indices.tolist()[0]))
    print("floor div", torch.div(torch.tensor([7, -7]), 3, rounding_mode="floor").tolist(),
          torch.tensor([7, -7]) // 3, torch.tensor([7, -7]).fmod(3), torch.tensor([7, -7]) % 3)
    print("masked_fill", ties.masked_fill(ties.eq(0.5), float("-inf")))

    src = torch.tensor([[3, 4, 5, 6, 7], [9, 8, 7, 6, 5]])
    nbest = beam_search(model, src, beam_size=3)
    for b, hyps in enumerate(nbest):
        print(f"source {src[b].tolist()}")
        for rank, (score, hyp) in enumerate(hyps):
            print(f"  hyp {rank} score {score:.4f} tokens {hyp}")

    g = torch.Generator().manual_seed(1234)
    print("greedy-ish top_k=1", sample(model, src, top_k=1, generator=g).tolist())
    g = torch.Generator().manual_seed(1234)
    print("top_k=3", sample(model, src, top_k=3, generator=g).tolist())
    g = torch.Generator().manual_seed(1234)
    print("top_p=0.9", sample(model, src, top_p=0.9, temperature=0.8, generator=g).tolist())
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]])
    g = torch.Generator().manual_seed(7)
    print("multinomial", torch.multinomial(probs, 2, generator=g).tolist(),
          torch.multinomial(probs, 6, replacement=True, generator=g).tolist())
    try:
        torch.multinomial(probs, 5)
    except RuntimeError as err:
        print("RuntimeError:", err)
    try:
        torch.multinomial(torch.tensor([0.5, -0.1]), 1)
    except RuntimeError as err:
        print("RuntimeError:", err)


if __name__ == "__main__":
    main()
