"""Recurrent and attention layers with the options model code sets: RNN/LSTM/GRU with
num_layers, bidirectional, batch_first, dropout (eval), proj_size, relu nonlinearity,
bias=False, unbatched input and given initial states; packed sequences (pack_padded_sequence
sorted or not, pad_packed_sequence total_length, pack_sequence, pad_sequence); the cells;
MultiheadAttention with kdim/vdim, batch_first, bias_kv, zero_attn, weights options and
masks; Transformer encoder/decoder layers with norm_first, gelu or callable activations and
causal masks; scaled_dot_product_attention with scale, enable_gqa and dropout in eval; the
gradient of each layer's output sum with respect to a weight; and the errors."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import (pack_padded_sequence, pack_sequence, pad_packed_sequence,
                                pad_sequence)

torch.set_printoptions(precision=4)


def fmt(x):
    s = f"{x:.4f}"
    return '0.0000' if s == '-0.0000' else s


def show(name, t):
    t = t.detach()
    vals = ' '.join(fmt(v) for v in t.double().flatten()[:5].tolist())
    if t.numel() and t.is_floating_point():
        stats = f"sum={fmt(t.double().sum().item())} abs={fmt(t.double().abs().sum().item())}"
    elif t.numel():
        stats = f"sum={t.sum().item()}"
    else:
        stats = 'empty'
    print(f"{name}: {tuple(t.shape)} {t.dtype} {stats} [{vals}]")


def err(name, fn):
    try:
        out = fn()
        print(f"{name}: no error {type(out).__name__}")
    except Exception as e:  # noqa: BLE001
        print(f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def data(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def show_state(name, h):
    if isinstance(h, tuple):
        for i, part in enumerate(h):
            show(f"{name}[{i}]", part)
    else:
        show(name, h)


# --- RNN / LSTM / GRU ----------------------------------------------------------------------
print('== recurrent layers')
configs = [
    (nn.RNN, dict(num_layers=2, nonlinearity='relu')),
    (nn.RNN, dict(bidirectional=True, bias=False, batch_first=True)),
    (nn.LSTM, dict(num_layers=2, bidirectional=True, dropout=0.3)),
    (nn.LSTM, dict(proj_size=3, batch_first=True)),
    (nn.LSTM, dict(num_layers=2, proj_size=2, bidirectional=True, bias=False)),
    (nn.GRU, dict(num_layers=3, batch_first=True, dropout=0.5)),
    (nn.GRU, dict(bidirectional=True)),
]
for i, (cls, kw) in enumerate(configs):
    torch.manual_seed(100 + i)
    m = cls(4, 5, **kw)
    m.eval()
    print(m)
    print('params', [(n, tuple(p.shape)) for n, p in m.named_parameters()])
    bf = kw.get('batch_first', False)
    x = data(3, 6, 4, seed=i)  # (L, N, H) or (N, L, H)
    out, h = m(x)
    show(f'{cls.__name__}{i} out', out)
    show_state(f'{cls.__name__}{i} h', h)
    # unbatched input
    out_u, h_u = m(x[0] if bf else x[:, 0])
    show(f'{cls.__name__}{i} unbatched out', out_u)
    show_state(f'{cls.__name__}{i} unbatched h', h_u)
    # given initial state
    layers = kw.get('num_layers', 1) * (2 if kw.get('bidirectional') else 1)
    hsize = kw.get('proj_size', 0) or 5
    batch = x.shape[0] if bf else x.shape[1]
    h0 = data(layers, batch, hsize, seed=50 + i)
    if cls is nn.LSTM:
        c0 = data(layers, batch, 5, seed=60 + i)
        out2, h2 = m(x, (h0, c0))
    else:
        out2, h2 = m(x, h0)
    show(f'{cls.__name__}{i} out h0', out2)
    show_state(f'{cls.__name__}{i} h h0', h2)
    # gradient of the output sum with respect to the first weight
    m.train()
    m.zero_grad()
    out3, _ = m(x)
    out3.sum().backward()
    show(f'{cls.__name__}{i} grad weight_ih_l0', m.weight_ih_l0.grad)
    show(f'{cls.__name__}{i} grad weight_hh_l0', m.weight_hh_l0.grad)
    if kw.get('proj_size'):
        show(f'{cls.__name__}{i} grad weight_hr_l0', m.weight_hr_l0.grad)
    m.flatten_parameters()
torch.manual_seed(7)
lstm = nn.LSTM(4, 5, batch_first=True)
print('lstm all_weights', [tuple(w.shape) for ws in lstm.all_weights for w in ws])
print('lstm _flat_weights_names', lstm._flat_weights_names)
err('rnn bad nonlinearity', lambda: nn.RNN(4, 5, nonlinearity='gelu'))
err('lstm proj too big', lambda: nn.LSTM(4, 5, proj_size=5))
err('lstm proj negative', lambda: nn.LSTM(4, 5, proj_size=-1))
err('gru proj', lambda: nn.GRU(4, 5, proj_size=2))
err('rnn dropout range', lambda: nn.RNN(4, 5, dropout=1.5))
err('rnn input size', lambda: lstm(data(2, 3, 3)))
err('rnn rank 4', lambda: lstm(data(2, 3, 4, 1)))
err('rnn rank 1', lambda: lstm(data(4)))
err('lstm h0 shape', lambda: lstm(data(2, 3, 4), (data(1, 3, 5), data(1, 2, 5))))
err('lstm h0 wrong batch', lambda: lstm(data(2, 3, 4), (data(1, 3, 5), data(1, 3, 5))))
err('gru h0 unbatched rank', lambda: nn.GRU(4, 5)(data(3, 4), data(1, 2, 5)))
err('rnn h0 tuple', lambda: nn.RNN(4, 5)(data(3, 2, 4), (data(1, 2, 5), data(1, 2, 5))))
torch.manual_seed(8)
rnn_dbl = nn.GRU(3, 2).double()
out, h = rnn_dbl(data(4, 2, 3).double())
show('gru double', out)
err('gru dtype mismatch', lambda: rnn_dbl(data(4, 2, 3)))
show('lstm empty batch', nn.LSTM(4, 5)(torch.zeros(3, 0, 4))[0])

torch.manual_seed(9)
lstm_u = nn.LSTM(4, 3, num_layers=2, bidirectional=True)
xu = data(5, 4, seed=9)
out_u, (hu, cu) = lstm_u(xu, (data(4, 3, seed=10), data(4, 3, seed=11)))
show('lstm unbatched h0 out', out_u)
show('lstm unbatched hn', hu)
err('lstm unbatched h0 3d', lambda: lstm_u(xu, (data(4, 1, 3), data(4, 1, 3))))
err('rnn int input', lambda: nn.RNN(4, 3)(torch.ones(2, 1, 4, dtype=torch.long)))
err('lstm hx not tuple', lambda: lstm_u(xu, data(4, 3)))
torch.manual_seed(12)
gru_h = nn.GRU(4, 3, batch_first=True).half()
show('gru half', gru_h(data(2, 3, 4).half())[0])
torch.manual_seed(13)
rnn_bf = nn.RNN(2, 2, batch_first=True, num_layers=2, nonlinearity='relu', bias=False)
print('rnn no bias params', [n for n, _ in rnn_bf.named_parameters()])
print('rnn repr', rnn_bf)

# --- packed sequences ------------------------------------------------------------------------
print('== packed sequences')
seqs = [data(5, 3, seed=70), data(2, 3, seed=71), data(4, 3, seed=72)]
lengths = torch.tensor([5, 2, 4])
padded = pad_sequence(seqs)
show('pad_sequence', padded)
show('pad_sequence batch_first', pad_sequence(seqs, batch_first=True, padding_value=-1.0))
show('pad_sequence left', pad_sequence(seqs, batch_first=True, padding_side='left'))
err('pad_sequence side', lambda: pad_sequence(seqs, padding_side='middle'))
packed = pack_padded_sequence(padded, lengths, enforce_sorted=False)
print('packed batch_sizes', packed.batch_sizes)
print('packed sorted_indices', packed.sorted_indices)
print('packed unsorted_indices', packed.unsorted_indices)
show('packed data', packed.data)
err('pack unsorted enforce', lambda: pack_padded_sequence(padded, lengths))
err('pack zero length', lambda: pack_padded_sequence(padded, torch.tensor([5, 0, 4]),
                                                     enforce_sorted=False))
err('pack lengths batch', lambda: pack_padded_sequence(padded, torch.tensor([5, 2]),
                                                       enforce_sorted=False))
sorted_pack = pack_padded_sequence(padded[:, [0, 2, 1]], [5, 4, 2])
print('sorted pack indices', sorted_pack.sorted_indices, sorted_pack.batch_sizes)
ps = pack_sequence(seqs, enforce_sorted=False)
print('pack_sequence batch_sizes', ps.batch_sizes.tolist())
err('pack_sequence sorted', lambda: pack_sequence(seqs))
for i, (cls, kw) in enumerate([(nn.LSTM, dict(bidirectional=True)),
                               (nn.GRU, dict(num_layers=2)),
                               (nn.RNN, dict(batch_first=True)),
                               (nn.LSTM, dict(proj_size=2, batch_first=True))]):
    torch.manual_seed(200 + i)
    m = cls(3, 4, **kw)
    bf = kw.get('batch_first', False)
    inp = padded.transpose(0, 1) if bf else padded
    pk = pack_padded_sequence(inp, lengths, batch_first=bf, enforce_sorted=False)
    out, h = m(pk)
    print(type(out).__name__, out.batch_sizes.tolist())
    unpacked, lens = pad_packed_sequence(out, batch_first=bf, total_length=7)
    show(f'packed {cls.__name__}{i} out', unpacked)
    print('lengths', lens)
    show_state(f'packed {cls.__name__}{i} h', h)
    unpacked2, _ = pad_packed_sequence(out, batch_first=bf, padding_value=9.0)
    show(f'packed {cls.__name__}{i} padding_value', unpacked2)
    m.zero_grad()
    unpacked.sum().backward()
    show(f'packed {cls.__name__}{i} grad', m.weight_ih_l0.grad)
err('pad_packed total_length', lambda: pad_packed_sequence(packed, total_length=3))
p2 = packed.to(torch.float64)
print('packed to', p2.data.dtype, p2.is_cuda, type(p2).__name__)

# --- more packed-sequence forms ----------------------------------------------------------------
print('== packed extras')
print('packed repr', pack_sequence([torch.tensor([1., 2., 3.]), torch.tensor([4., 5.])]))
print('packed long', pack_sequence([torch.tensor([1, 2, 3]), torch.tensor([4])]).data)
unp = torch.nn.utils.rnn.unpack_sequence(ps)
print('unpack_sequence', [tuple(t.shape) for t in unp],
      all(torch.equal(a, b) for a, b in zip(unp, seqs)))
unpad = torch.nn.utils.rnn.unpad_sequence(pad_sequence(seqs, batch_first=True), lengths,
                                          batch_first=True)
print('unpad_sequence', [tuple(t.shape) for t in unpad],
      all(torch.equal(a, b) for a, b in zip(unpad, seqs)))
torch.manual_seed(210)
lstm_p = nn.LSTM(3, 4, num_layers=2, batch_first=True, proj_size=2)
h0 = data(2, 3, 2, seed=211)
c0 = data(2, 3, 4, seed=212)
pk = pack_padded_sequence(padded.transpose(0, 1), lengths, batch_first=True,
                          enforce_sorted=False)
out, (hn, cn) = lstm_p(pk, (h0, c0))
show('packed lstm h0 out', out.data)
show('packed lstm h0 hn', hn)
show('packed lstm h0 cn', cn)
print('hn order check', hn.shape, torch.equal(hn[-1, 1], pad_packed_sequence(
    out, batch_first=True)[0][1, 1]))
torch.manual_seed(213)
rnn_r = nn.RNN(3, 4, nonlinearity='relu', bidirectional=True, batch_first=True)
out, hn = rnn_r(pack_sequence(seqs, enforce_sorted=False))
show('packed relu bi out', out.data)
show('packed relu bi hn', hn)
err('packed h0 batch', lambda: rnn_r(pk, data(2, 2, 4)))
for dt in [torch.float64]:
    torch.manual_seed(214)
    g = nn.GRU(3, 4, dtype=dt)
    out, hn = g(padded.to(dt))
    show(f'gru {dt}', out)
    torch.manual_seed(215)
    cell = nn.LSTMCell(3, 4, dtype=dt)
    show_state(f'lstmcell {dt}', cell(seqs[0].to(dt)))
torch.manual_seed(216)
lstm_sd = nn.LSTM(2, 3, num_layers=2, bidirectional=True, proj_size=1)
print('state_dict keys', list(lstm_sd.state_dict().keys()))
print('lstm extra_repr', lstm_sd.extra_repr())

# --- cells ---------------------------------------------------------------------------------
print('== cells')
for i, (cls, kw) in enumerate([(nn.RNNCell, dict(nonlinearity='relu')),
                               (nn.RNNCell, dict(bias=False)),
                               (nn.LSTMCell, dict()), (nn.GRUCell, dict(bias=False))]):
    torch.manual_seed(300 + i)
    cell = cls(3, 4, **kw)
    print(cell)
    x = data(2, 3, seed=80 + i)
    h = cell(x)
    show_state(f'{cls.__name__}{i}', h)
    h0 = data(2, 4, seed=90 + i)
    h = cell(x, (h0, h0 * 0.5) if cls is nn.LSTMCell else h0)
    show_state(f'{cls.__name__}{i} h0', h)
    show_state(f'{cls.__name__}{i} unbatched', cell(x[0]))
    cell.zero_grad()
    out = cell(x)
    (out[0] if isinstance(out, tuple) else out).sum().backward()
    show(f'{cls.__name__}{i} grad', cell.weight_hh.grad)
err('cell input size', lambda: nn.GRUCell(3, 4)(data(2, 5)))
err('cell hidden batch', lambda: nn.GRUCell(3, 4)(data(2, 3), data(3, 4)))
err('cell rank', lambda: nn.LSTMCell(3, 4)(data(1, 2, 3)))
err('cell nonlinearity', lambda: nn.RNNCell(3, 4, nonlinearity='sigmoid')(data(2, 3)))

# --- MultiheadAttention ---------------------------------------------------------------------
print('== multihead attention')
torch.manual_seed(400)
mha = nn.MultiheadAttention(8, 2)
print(mha)
print('mha params', [(n, tuple(p.shape)) for n, p in mha.named_parameters()])
q = data(4, 3, 8, seed=100)
k = data(5, 3, 8, seed=101)
v = data(5, 3, 8, seed=102)
out, w = mha(q, k, v)
show('mha out', out)
show('mha weights', w)
out, w = mha(q, k, v, average_attn_weights=False)
show('mha per-head weights', w)
out, w = mha(q, k, v, need_weights=False)
show('mha need_weights=False', out)
print('weights', w)
bool_mask = torch.tensor([[False, True, False, False, True]] * 4)
show('mha bool attn_mask', mha(q, k, v, attn_mask=bool_mask)[0])
float_mask = torch.zeros(4, 5)
float_mask[:, 1] = float('-inf')
float_mask[0, 2] = -1.5
show('mha float attn_mask', mha(q, k, v, attn_mask=float_mask)[0])
mask3 = torch.zeros(3 * 2, 4, 5)
mask3[:, :, 0] = -1e9
show('mha 3d attn_mask', mha(q, k, v, attn_mask=mask3)[1])
kpm = torch.tensor([[False, False, False, True, True], [False] * 5,
                    [True, False, False, False, False]])
show('mha key_padding_mask', mha(q, k, v, key_padding_mask=kpm)[1])
show('mha float key_padding_mask',
     mha(q, k, v, key_padding_mask=kpm.float() * -1e4)[0])
show('mha both masks', mha(q, k, v, key_padding_mask=kpm, attn_mask=bool_mask)[0])
causal = nn.Transformer.generate_square_subsequent_mask(4)
print('square mask', causal)
show('mha is_causal', mha(q, q, q, attn_mask=causal, is_causal=True)[0])
err('mha is_causal no mask', lambda: mha(q, q, q, is_causal=True))
show('mha unbatched', mha(q[:, 0], k[:, 0], v[:, 0])[0])
show('mha unbatched weights', mha(q[:, 0], k[:, 0], v[:, 0])[1])
mha.zero_grad()
mha(q, k, v)[0].sum().backward()
show('mha grad in_proj_weight', mha.in_proj_weight.grad)
show('mha grad out_proj', mha.out_proj.weight.grad)
torch.manual_seed(401)
mkv = nn.MultiheadAttention(8, 4, kdim=6, vdim=3, batch_first=True, bias=False)
print(mkv)
print('mkv params', [(n, tuple(p.shape)) for n, p in mkv.named_parameters()])
print('mkv _qkv_same_embed_dim', mkv._qkv_same_embed_dim, mkv.in_proj_weight)
qb, kb, vb = data(2, 4, 8, seed=103), data(2, 5, 6, seed=104), data(2, 5, 3, seed=105)
out, w = mkv(qb, kb, vb)
show('mkv out', out)
show('mkv weights', w)
mkv.zero_grad()
mkv(qb, kb, vb)[0].sum().backward()
show('mkv grad q_proj', mkv.q_proj_weight.grad)
show('mkv grad v_proj', mkv.v_proj_weight.grad)
torch.manual_seed(402)
mbz = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, dropout=0.1)
print(mbz)
print('mbz params', [(n, tuple(p.shape)) for n, p in mbz.named_parameters()])
mbz.eval()
out, w = mbz(q, k, v, key_padding_mask=kpm, attn_mask=bool_mask)
show('mbz out', out)
show('mbz weights', w)
mbz.train()
mbz.zero_grad()
torch.manual_seed(403)
out, w = mbz(q, k, v)
print('mbz train out shape', tuple(out.shape), tuple(w.shape))
torch.manual_seed(404)
mbf = nn.MultiheadAttention(6, 3, batch_first=True, kdim=4, vdim=4)
qf, kf = data(2, 3, 6, seed=106), data(2, 5, 4, seed=107)
out, w = mbf(qf, kf, kf, key_padding_mask=torch.tensor([[False] * 4 + [True], [False] * 5]),
             average_attn_weights=False)
show('mbf out', out)
show('mbf per-head weights', w)
err('mbf unbatched mismatch', lambda: mbf(qf[0], kf, kf))
err('mha key value batch', lambda: mha(q, k, v[:, :2]))
out, w = F.multi_head_attention_forward(
    q, k, v, 8, 2, mha.in_proj_weight, mha.in_proj_bias, None, None, False, 0.0,
    mha.out_proj.weight, mha.out_proj.bias, training=False, need_weights=True)
show('F.mha out', out)
show('F.mha weights', w)
err('mha embed_dim heads', lambda: nn.MultiheadAttention(10, 3))
err('mha query dim', lambda: mha(data(4, 3, 7), k, v))
err('mha key value len', lambda: mha(q, k, v[:4]))
err('mha mask shape', lambda: mha(q, k, v, attn_mask=torch.zeros(3, 5)))
err('mha kpm shape', lambda: mha(q, k, v, key_padding_mask=torch.zeros(3, 4, dtype=torch.bool)))
err('mha int mask', lambda: mha(q, k, v, attn_mask=torch.zeros(4, 5, dtype=torch.long)))
err('mha rank', lambda: mha(data(2, 4, 3, 8), k, v))

# --- Transformer layers -------------------------------------------------------------------
print('== transformer layers')


def swish(x):
    return x * torch.sigmoid(x)


for i, kw in enumerate([dict(), dict(norm_first=True, activation='gelu'),
                        dict(activation=swish, batch_first=True, bias=False),
                        dict(activation=F.gelu, norm_first=True, layer_norm_eps=1e-3)]):
    torch.manual_seed(500 + i)
    enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.1, **kw)
    enc.eval()
    print(type(enc).__name__, enc.norm_first, enc.self_attn.batch_first,
          enc.activation_relu_or_gelu, tuple(enc.linear1.weight.shape))
    src = data(3, 5, 8, seed=110 + i)
    mask = nn.Transformer.generate_square_subsequent_mask(3 if not kw.get('batch_first') else 5)
    show(f'enc{i}', enc(src))
    show(f'enc{i} mask', enc(src, src_mask=mask))
    show(f'enc{i} causal', enc(src, src_mask=mask, is_causal=True))
    n_batch, n_seq = (3, 5) if kw.get('batch_first') else (5, 3)
    spm = torch.zeros(n_batch, n_seq, dtype=torch.bool)
    spm[0, -1] = True
    show(f'enc{i} key_padding', enc(src, src_key_padding_mask=spm))
    enc.train()
    enc.zero_grad()
    torch.manual_seed(0)
    enc.dropout.p = 0.0
    enc.dropout1.p = 0.0
    enc.dropout2.p = 0.0
    enc.self_attn.dropout = 0.0
    enc(src).sum().backward()
    show(f'enc{i} grad linear1', enc.linear1.weight.grad)
    show(f'enc{i} grad in_proj', enc.self_attn.in_proj_weight.grad)
torch.manual_seed(510)
layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
stack = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(8),
                              enable_nested_tensor=False)
stack.eval()
print('encoder layers', len(stack.layers), stack.layers[0] is layer)
src = data(4, 2, 8, seed=120)
show('encoder stack', stack(src))
show('encoder stack mask', stack(src, mask=nn.Transformer.generate_square_subsequent_mask(4)))
show('encoder stack causal', stack(src, mask=nn.Transformer.generate_square_subsequent_mask(4),
                                   is_causal=True))
for i, kw in enumerate([dict(), dict(norm_first=True, activation='gelu', batch_first=True)]):
    torch.manual_seed(520 + i)
    dec = nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0, **kw)
    tgt = data(3, 2, 8, seed=130 + i)
    memory = data(4, 2, 8, seed=140 + i)
    if kw.get('batch_first'):
        tgt, memory = tgt.transpose(0, 1), memory.transpose(0, 1)
    tmask = nn.Transformer.generate_square_subsequent_mask(3)
    show(f'dec{i}', dec(tgt, memory))
    show(f'dec{i} tgt_mask', dec(tgt, memory, tgt_mask=tmask))
    show(f'dec{i} causal', dec(tgt, memory, tgt_mask=tmask, tgt_is_causal=True))
    mpm = torch.zeros(2, 4, dtype=torch.bool)
    mpm[1, 0] = True
    show(f'dec{i} memory_key_padding', dec(tgt, memory, memory_key_padding_mask=mpm))
    dec.zero_grad()
    dec(tgt, memory, tgt_mask=tmask).sum().backward()
    show(f'dec{i} grad linear2', dec.linear2.weight.grad)
    show(f'dec{i} grad cross in_proj', dec.multihead_attn.in_proj_weight.grad)
torch.manual_seed(530)
decs = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 12, 0.0), num_layers=2)
show('decoder stack', decs(data(3, 2, 8, seed=150), data(4, 2, 8, seed=151),
                           tgt_mask=nn.Transformer.generate_square_subsequent_mask(3)))
print('square mask 3 float64',
      nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64))
err('encoder bad activation', lambda: nn.TransformerEncoderLayer(8, 2, activation='tanh'))
err('encoder d_model', lambda: nn.TransformerEncoderLayer(8, 2)(data(3, 2, 6)))

# --- encoder padding, nn.Transformer --------------------------------------------------------
print('== transformer extras')
torch.manual_seed(540)
enc_layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
encoder = nn.TransformerEncoder(enc_layer, 2, enable_nested_tensor=False)
encoder.eval()
src = data(2, 4, 8, seed=170)
pad_mask = torch.tensor([[False, False, False, True], [False, False, True, True]])
with torch.no_grad():
    show('encoder padded eval', encoder(src, src_key_padding_mask=pad_mask))
    show('encoder padded eval row0', encoder(src, src_key_padding_mask=pad_mask)[0, :3])
show('encoder padded grad mode', encoder(src, src_key_padding_mask=pad_mask))
torch.manual_seed(541)
model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
                       dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True,
                       activation='gelu')
print('transformer submodules', [n for n, _ in model.named_children()])
print('transformer params', sum(p.numel() for p in model.parameters()))
src, tgt = data(2, 5, 8, seed=171), data(2, 3, 8, seed=172)
tmask = model.generate_square_subsequent_mask(3)
out = model(src, tgt, tgt_mask=tmask, src_key_padding_mask=torch.tensor(
    [[False] * 5, [False, False, False, False, True]]), memory_key_padding_mask=torch.tensor(
    [[False] * 5, [False, False, False, False, True]]), tgt_is_causal=True)
show('transformer out', out)
model.zero_grad()
out.sum().backward()
show('transformer grad enc linear1', model.encoder.layers[0].linear1.weight.grad)
show('transformer grad dec norm3', model.decoder.layers[1].norm3.weight.grad)
err('transformer batch mismatch', lambda: model(src, tgt[:1]))
err('transformer d_model', lambda: model(src[..., :6], tgt))
torch.manual_seed(542)
mha_fp = nn.MultiheadAttention(8, 2, batch_first=True)
mha_fp.eval()
qb = data(2, 4, 8, seed=173)
kpm_b = torch.tensor([[False, False, True, True], [False] * 4])
with torch.no_grad():
    show('mha eval no_grad self', mha_fp(qb, qb, qb)[0])
    show('mha eval no_grad kpm', mha_fp(qb, qb, qb, key_padding_mask=kpm_b,
                                        need_weights=False)[0])
    show('mha eval no_grad weights', mha_fp(qb, qb, qb, key_padding_mask=kpm_b)[1])
show('mha eval grad kpm', mha_fp(qb, qb, qb, key_padding_mask=kpm_b, need_weights=False)[0])
full_mask = torch.zeros(4, 4, dtype=torch.bool)
full_mask[1] = True
show('mha fully masked row', mha_fp(qb, qb, qb, attn_mask=full_mask)[0])
show('mha fully masked weights', mha_fp(qb, qb, qb, attn_mask=full_mask)[1])

# --- scaled_dot_product_attention --------------------------------------------------------------
print('== sdpa')
qs, ks, vs = data(2, 4, 3, 8, seed=160), data(2, 4, 5, 8, seed=161), data(2, 4, 5, 6, seed=162)
show('sdpa', F.scaled_dot_product_attention(qs, ks, vs))
show('sdpa scale', F.scaled_dot_product_attention(qs, ks, vs, scale=0.5))
show('sdpa dropout eval', F.scaled_dot_product_attention(qs, ks, vs, dropout_p=0.0))
show('sdpa bool mask', F.scaled_dot_product_attention(
    qs, ks, vs, attn_mask=torch.tensor([[True, False, True, True, False]] * 3)))
show('sdpa float mask', F.scaled_dot_product_attention(qs, ks, vs, attn_mask=data(3, 5, seed=1)))
qc = data(2, 4, 5, 8, seed=163)
show('sdpa causal', F.scaled_dot_product_attention(qc, ks, vs, is_causal=True))
show('sdpa causal rect', F.scaled_dot_product_attention(qs, ks, vs, is_causal=True))
show('sdpa all masked row', F.scaled_dot_product_attention(
    qs, ks, vs, attn_mask=torch.zeros(3, 5, dtype=torch.bool)))
qg = data(2, 4, 3, 8, seed=164)
kg, vg = data(2, 2, 5, 8, seed=165), data(2, 2, 5, 8, seed=166)
show('sdpa gqa', F.scaled_dot_product_attention(qg, kg, vg, enable_gqa=True))
err('sdpa gqa off', lambda: F.scaled_dot_product_attention(qg, kg, vg))
err('sdpa gqa ratio', lambda: F.scaled_dot_product_attention(
    data(2, 3, 3, 8), kg, vg, enable_gqa=True))
err('sdpa causal with mask', lambda: F.scaled_dot_product_attention(
    qs, ks, vs, attn_mask=torch.zeros(3, 5), is_causal=True))
err('sdpa dims', lambda: F.scaled_dot_product_attention(qs, data(2, 4, 5, 7), vs))
show('sdpa 3d', F.scaled_dot_product_attention(qs[0], ks[0], vs[0]))
show('sdpa half', F.scaled_dot_product_attention(qs.half(), ks.half(), vs.half()))
show('sdpa broadcast mask', F.scaled_dot_product_attention(
    qs, ks, vs, attn_mask=torch.tensor([[[[True, True, False, True, True]]]])))
ninf = torch.zeros(3, 5)
ninf[1] = float('-inf')
show('sdpa -inf row', F.scaled_dot_product_attention(qs, ks, vs, attn_mask=ninf))
show('sdpa empty query', F.scaled_dot_product_attention(qs[:, :, :0], ks, vs))
vsq = data(2, 4, 5, 8, seed=167)
show('sdpa half flash', F.scaled_dot_product_attention(qs.half(), ks.half(), vsq.half(),
                                                       is_causal=True))
show('sdpa bf16 math', F.scaled_dot_product_attention(qs.bfloat16(), ks.bfloat16(),
                                                      vs.bfloat16(), scale=0.2))
err('sdpa dtype mix', lambda: F.scaled_dot_product_attention(qs, ks.double(), vs))
err('sdpa mask dtype', lambda: F.scaled_dot_product_attention(
    qs, ks, vs, attn_mask=torch.zeros(3, 5, dtype=torch.long)))
qq = qs.clone().requires_grad_()
kk = ks.clone().requires_grad_()
F.scaled_dot_product_attention(qq, kk, vs, scale=0.3, is_causal=True).sum().backward()
show('sdpa grad q', qq.grad)
show('sdpa grad k', kk.grad)
print('done')
