"""Transformer-XL (Dai et al. 2019), scaled down, as kimiyoung/transformer-xl's
pytorch/mem_transformer.py writes it: PositionalEmbedding with torch.ger of positions and
inverse frequencies, RelPartialLearnableMultiHeadAttn with r_w_bias / r_r_bias, the
_rel_shift zero-pad + view trick, segment-level recurrence (torch.cat([mems, h]).detach()
in _update_mems), dec_attn_mask from torch.triu(..., diagonal=1+mlen) as a byte/bool mask
with masked_fill_(-inf) ... float('-inf'), PositionwiseFF with pre-LayerNorm, and the
output layer as nn.AdaptiveLogSoftmaxWithLoss (cutoffs, log_prob, predict). Trained on a
toy repeating-token stream with Adam and a cosine LR schedule, printing per-segment
losses, mem shapes and a few intermediates."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEmbedding(nn.Module):
    def __init__(self, demb):
        super(PositionalEmbedding, self).__init__()
        self.demb = demb
        inv_freq = 1 / (10000 ** (torch.arange(0.0, demb, 2.0) / demb))
        self.register_buffer('inv_freq', inv_freq)

    def forward(self, pos_seq, bsz=None):
        sinusoid_inp = torch.ger(pos_seq, self.inv_freq)
        pos_emb = torch.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1)
        if bsz is not None:
            return pos_emb[:, None, :].expand(-1, bsz, -1)
        else:
            return pos_emb[:, None, :]


class PositionwiseFF(nn.Module):
    def __init__(self, d_model, d_inner, dropout, pre_lnorm=False):
        super(PositionwiseFF, self).__init__()
        self.CoreNet = nn.Sequential(
            nn.Linear(d_model, d_inner), nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(d_inner, d_model),
            nn.Dropout(dropout),
        )
        self.layer_norm = nn.LayerNorm(d_model)
        self.pre_lnorm = pre_lnorm

    def forward(self, inp):
        if self.pre_lnorm:
            core_out = self.CoreNet(self.layer_norm(inp))
            output = core_out + inp
        else:
            core_out = self.CoreNet(inp)
            output = self.layer_norm(inp + core_out)
        return output


class RelPartialLearnableMultiHeadAttn(nn.Module):
    def __init__(self, n_head, d_model, d_head, dropout, dropatt=0, pre_lnorm=False):
        super().__init__()
        self.n_head, self.d_model, self.d_head = n_head, d_model, d_head
        self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
        self.drop = nn.Dropout(dropout)
        self.dropatt = nn.Dropout(dropatt)
        self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
        self.layer_norm = nn.LayerNorm(d_model)
        self.scale = 1 / (d_head ** 0.5)
        self.pre_lnorm = pre_lnorm
        self.r_net = nn.Linear(self.d_model, self.n_head * self.d_head, bias=False)

    def _rel_shift(self, x, zero_triu=False):
        zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]),
                               device=x.device, dtype=x.dtype)
        x_padded = torch.cat([zero_pad, x], dim=1)
        x_padded = x_padded.view(x.size(1) + 1, x.size(0), *x.size()[2:])
        x = x_padded[1:].view_as(x)
        if zero_triu:
            ones = torch.ones((x.size(0), x.size(1)))
            x = x * torch.tril(ones, x.size(1) - x.size(0))[:, :, None, None]
        return x

    def forward(self, w, r, r_w_bias, r_r_bias, attn_mask=None, mems=None):
        qlen, rlen, bsz = w.size(0), r.size(0), w.size(1)
        if mems is not None:
            cat = torch.cat([mems, w], 0)
            if self.pre_lnorm:
                w_heads = self.qkv_net(self.layer_norm(cat))
            else:
                w_heads = self.qkv_net(cat)
            r_head_k = self.r_net(r)
            w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
            w_head_q = w_head_q[-qlen:]
        else:
            if self.pre_lnorm:
                w_heads = self.qkv_net(self.layer_norm(w))
            else:
                w_heads = self.qkv_net(w)
            r_head_k = self.r_net(r)
            w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
        klen = w_head_k.size(0)

        w_head_q = w_head_q.view(qlen, bsz, self.n_head, self.d_head)  # qlen x bsz x n_head x d_head
        w_head_k = w_head_k.view(klen, bsz, self.n_head, self.d_head)  # qlen x bsz x n_head x d_head
        w_head_v = w_head_v.view(klen, bsz, self.n_head, self.d_head)  # qlen x bsz x n_head x d_head
        r_head_k = r_head_k.view(rlen, self.n_head, self.d_head)  # qlen x n_head x d_head

        #### compute attention score
        rw_head_q = w_head_q + r_w_bias  # qlen x bsz x n_head x d_head
        AC = torch.einsum('ibnd,jbnd->ijbn', (rw_head_q, w_head_k))  # qlen x klen x bsz x n_head
        rr_head_q = w_head_q + r_r_bias
        BD = torch.einsum('ibnd,jnd->ijbn', (rr_head_q, r_head_k))  # qlen x klen x bsz x n_head
        BD = self._rel_shift(BD)

        # [qlen x klen x bsz x n_head]
        attn_score = AC + BD
        attn_score.mul_(self.scale)

        #### compute attention probability
        if attn_mask is not None and attn_mask.any().item():
            if attn_mask.dim() == 2:
                attn_score = attn_score.float().masked_fill(
                    attn_mask[None, :, :, None], -float('inf')).type_as(attn_score)
            elif attn_mask.dim() == 3:
                attn_score = attn_score.float().masked_fill(
                    attn_mask[:, :, :, None], -float('inf')).type_as(attn_score)

        # [qlen x klen x bsz x n_head]
        attn_prob = F.softmax(attn_score, dim=1)
        attn_prob = self.dropatt(attn_prob)

        #### compute attention vector
        attn_vec = torch.einsum('ijbn,jbnd->ibnd', (attn_prob, w_head_v))

        # [qlen x bsz x n_head x d_head]
        attn_vec = attn_vec.contiguous().view(
            attn_vec.size(0), attn_vec.size(1), self.n_head * self.d_head)

        ##### linear projection
        attn_out = self.o_net(attn_vec)
        attn_out = self.drop(attn_out)

        if self.pre_lnorm:
            output = w + attn_out
        else:
            output = self.layer_norm(w + attn_out)
        return output


class RelPartialLearnableDecoderLayer(nn.Module):
    def __init__(self, n_head, d_model, d_head, d_inner, dropout, **kwargs):
        super(RelPartialLearnableDecoderLayer, self).__init__()
        self.dec_attn = RelPartialLearnableMultiHeadAttn(n_head, d_model, d_head, dropout,
                                                         **kwargs)
        self.pos_ff = PositionwiseFF(d_model, d_inner, dropout,
                                     pre_lnorm=kwargs.get('pre_lnorm'))

    def forward(self, dec_inp, r, r_w_bias, r_r_bias, dec_attn_mask=None, mems=None):
        output = self.dec_attn(dec_inp, r, r_w_bias, r_r_bias,
                               attn_mask=dec_attn_mask, mems=mems)
        output = self.pos_ff(output)
        return output


class MemTransformerLM(nn.Module):
    def __init__(self, n_token, n_layer, n_head, d_model, d_head, d_inner, dropout, dropatt,
                 tgt_len=None, mem_len=None, cutoffs=(), div_val=2, pre_lnorm=False):
        super(MemTransformerLM, self).__init__()
        self.n_token = n_token
        self.d_embed = d_model
        self.d_model = d_model
        self.n_head = n_head
        self.d_head = d_head
        self.word_emb = nn.Embedding(n_token, d_model)
        self.drop = nn.Dropout(dropout)
        self.n_layer = n_layer
        self.tgt_len = tgt_len
        self.mem_len = mem_len
        self.layers = nn.ModuleList()
        for i in range(n_layer):
            self.layers.append(RelPartialLearnableDecoderLayer(
                n_head, d_model, d_head, d_inner, dropout, dropatt=dropatt,
                pre_lnorm=pre_lnorm))
        self.crit = nn.AdaptiveLogSoftmaxWithLoss(d_model, n_token, cutoffs=list(cutoffs),
                                                  div_value=div_val)
        self.pos_emb = PositionalEmbedding(self.d_model)
        self.r_w_bias = nn.Parameter(torch.Tensor(self.n_head, self.d_head))
        self.r_r_bias = nn.Parameter(torch.Tensor(self.n_head, self.d_head))

    def init_mems(self):
        if self.mem_len > 0:
            mems = []
            param = next(self.parameters())
            for i in range(self.n_layer + 1):
                empty = torch.empty(0, dtype=param.dtype, device=param.device)
                mems.append(empty)
            return mems
        else:
            return None

    def _update_mems(self, hids, mems, qlen, mlen):
        # does not deal with None
        if mems is None:
            return None
        # mems is not None
        assert len(hids) == len(mems), 'len(hids) != len(mems)'
        # There are `mlen + qlen` steps that can be cached into mems
        with torch.no_grad():
            new_mems = []
            end_idx = mlen + max(0, qlen - 0)
            beg_idx = max(0, end_idx - self.mem_len)
            for i in range(len(hids)):
                cat = torch.cat([mems[i], hids[i]], dim=0)
                new_mems.append(cat[beg_idx:end_idx].detach())
        return new_mems

    def _forward(self, dec_inp, mems=None):
        qlen, bsz = dec_inp.size()
        word_emb = self.word_emb(dec_inp)
        mlen = mems[0].size(0) if mems is not None else 0
        klen = mlen + qlen
        dec_attn_mask = torch.triu(
            word_emb.new_ones(qlen, klen), diagonal=1 + mlen).byte()[:, :, None]
        hids = []
        pos_seq = torch.arange(klen - 1, -1, -1.0, device=word_emb.device,
                               dtype=word_emb.dtype)
        pos_emb = self.pos_emb(pos_seq)
        core_out = self.drop(word_emb)
        pos_emb = self.drop(pos_emb)
        hids.append(core_out)
        for i, layer in enumerate(self.layers):
            mems_i = None if mems is None else mems[i]
            core_out = layer(core_out, pos_emb, self.r_w_bias, self.r_r_bias,
                             dec_attn_mask=dec_attn_mask.bool(), mems=mems_i)
            hids.append(core_out)
        core_out = self.drop(core_out)
        new_mems = self._update_mems(hids, mems, mlen, qlen)
        return core_out, new_mems

    def forward(self, data, target, *mems):
        if not mems:
            mems = self.init_mems()
        tgt_len = target.size(0)
        hidden, new_mems = self._forward(data, mems=mems)
        pred_hid = hidden[-tgt_len:]
        out = self.crit(pred_hid.reshape(-1, pred_hid.size(-1)), target.reshape(-1))
        loss = -out.output.view(tgt_len, -1)
        if new_mems is None:
            return [loss]
        else:
            return [loss] + new_mems


torch.manual_seed(1111)
# the reference's _rel_shift on a small tensor: row i is shifted left by qlen-1-i
x = torch.arange(12.0).view(3, 4, 1, 1)
shifted = RelPartialLearnableMultiHeadAttn._rel_shift(None, x)
print("rel_shift", shifted[:, :, 0, 0].tolist())
print("rel_shift zero_triu", RelPartialLearnableMultiHeadAttn._rel_shift(
    None, x, zero_triu=True)[:, :, 0, 0].tolist())
pe = PositionalEmbedding(8)
print("pos_emb", pe(torch.arange(3, -1, -1.0)).shape, pe(torch.arange(2.0), bsz=3).shape)
print("pos_emb values", [round(v, 5) for v in pe(torch.arange(2.0))[1, 0].tolist()])
print("outer == ger", torch.equal(torch.outer(torch.arange(3.0), pe.inv_freq),
                                  torch.ger(torch.arange(3.0), pe.inv_freq)))
mask = torch.triu(torch.ones(3, 5), diagonal=1 + 2).byte()
print("mask", mask.dtype, mask.tolist())
print("bool mask", mask.bool()[:, :, None].shape, mask.bool().sum().item())
scores = torch.arange(15.0).view(3, 5)
print("where byte mask", torch.where(mask, torch.tensor(-1e4), scores)[0].tolist())
for bad in (lambda: scores.masked_fill(mask, -float('inf')),
            lambda: scores.masked_select(mask),
            lambda: scores.masked_scatter(mask, torch.zeros(15))):
    try:
        bad()
    except RuntimeError as err:
        print("RuntimeError:", err)

n_token, tgt_len, mem_len, bsz = 60, 6, 6, 4
model = MemTransformerLM(n_token, n_layer=2, n_head=2, d_model=16, d_head=8, d_inner=32,
                         dropout=0.1, dropatt=0.0, tgt_len=tgt_len, mem_len=mem_len,
                         cutoffs=[10, 30], div_val=2)


def init_weight(weight):
    nn.init.normal_(weight, 0.0, 0.02)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Linear') != -1:
        if hasattr(m, 'weight') and m.weight is not None:
            init_weight(m.weight)
        if hasattr(m, 'bias') and m.bias is not None:
            nn.init.constant_(m.bias, 0.0)
    elif classname.find('LayerNorm') != -1:
        if hasattr(m, 'weight'):
            nn.init.normal_(m.weight, 1.0, 0.02)
        if hasattr(m, 'bias') and m.bias is not None:
            nn.init.constant_(m.bias, 0.0)
    elif classname.find('TransformerLM') != -1:
        if hasattr(m, 'r_w_bias'):
            init_weight(m.r_w_bias)
        if hasattr(m, 'r_r_bias'):
            init_weight(m.r_r_bias)


model.apply(weights_init)
print(model)
print("crit", model.crit.shortlist_size, model.crit.n_clusters, model.crit.head_size,
      [tuple(t[0].weight.shape) + tuple(t[1].weight.shape) for t in model.crit.tail])
args_n_all_param = sum([p.nelement() for p in model.parameters()])
print("#params =", args_n_all_param)

# toy corpus: a frequent-token-heavy repeating sequence (Zipf-like, as word-level text)
period = torch.randint(0, n_token, (23,)) % torch.tensor([10, 30, 60]).repeat(8)[:23]
data = period.repeat(40)[:bsz * 120].view(bsz, -1).t().contiguous()
print("data", data.shape, data.dtype)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
max_step = 30
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max_step, eta_min=0.0)

model.train()
mems = tuple()
train_step = 0
for epoch in range(2):
    for i in range(0, data.size(0) - 1 - tgt_len, tgt_len):
        inp, tgt = data[i:i + tgt_len], data[i + 1:i + 1 + tgt_len]
        ret = model(inp, tgt, *mems)
        loss, mems = ret[0], ret[1:]
        loss = loss.float().mean().type_as(loss)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        scheduler.step()
        train_step += 1
        if train_step % 5 == 0:
            print("| step {:>4d} | lr {:.3g} | loss {:5.2f} | ppl {:9.3f}".format(
                train_step, optimizer.param_groups[0]['lr'], loss.item(),
                math.exp(loss.item())))
        if train_step == max_step:
            break
    if train_step == max_step:
        break
print("mems", len(mems), [tuple(m.shape) for m in mems][:2], mems[0].requires_grad)

model.eval()
with torch.no_grad():
    hidden, _ = model._forward(data[:tgt_len], mems=None)
    flat = hidden.view(-1, hidden.size(-1))
    log_prob = model.crit.log_prob(flat)
    pred = model.crit.predict(flat)
    out = model.crit(flat, data[1:tgt_len + 1].reshape(-1))
print("log_prob", log_prob.shape, torch.allclose(log_prob.exp().sum(1), torch.ones(flat.size(0))))
print("predict", pred.shape, pred.dtype, torch.equal(pred, log_prob.argmax(1)))
print("asm output", out.output.shape, out.loss.dim(), torch.allclose(
    out.output, log_prob.gather(1, data[1:tgt_len + 1].reshape(-1, 1)).squeeze(1)))
# a large div_value leaves the last tail cluster a zero-width projection (16 // 4**2 = 1,
# 16 // 4**3 = 0): it still trains
crit4 = nn.AdaptiveLogSoftmaxWithLoss(16, 60, cutoffs=[10, 20, 40], div_value=4.0)
print("div_value=4 tails", [tuple(t[0].weight.shape) for t in crit4.tail])
out4 = crit4(flat, data[1:tgt_len + 1].reshape(-1))
out4.loss.backward()
print("div_value=4 grads", [tuple(p.grad.shape) for p in crit4.parameters()])
try:
    nn.AdaptiveLogSoftmaxWithLoss(16, 60, cutoffs=[30, 10])
except ValueError as err:
    print("ValueError:", err)
try:
    nn.AdaptiveLogSoftmaxWithLoss(16.0, 60, cutoffs=[10])
except TypeError as err:
    print("TypeError:", err)
try:
    model.crit(flat, torch.full((flat.size(0),), n_token))
except RuntimeError as err:
    print("RuntimeError:", err)
