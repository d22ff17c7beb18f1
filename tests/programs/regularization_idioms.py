"""Regularisation idioms from real training code: a small GAN whose discriminator uses
torch.nn.utils.parametrizations.spectral_norm (SN-GAN), an RNN whose recurrent matrix is
kept orthogonal with parametrizations.orthogonal, the older torch.nn.utils.weight_norm /
spectral_norm hooks (weight_g / weight_v / weight_orig), gradient clipping by value and by
norm with the returned total norm printed, a word-level language model whose decoder
weight is tied to the embedding, and activation checkpointing with
torch.utils.checkpoint.checkpoint(..., use_reentrant=False) / checkpoint_sequential."""
import argparse
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_, clip_grad_value_, parametrizations, parametrize
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

warnings.filterwarnings("ignore")  # weight_norm's deprecation warning

parser = argparse.ArgumentParser()
parser.add_argument('--steps', type=int, default=30)
args = parser.parse_args()

torch.manual_seed(0)

# ---------------------------------------------------------------- SN-GAN on a 2-D ring
SN = parametrizations.spectral_norm


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(SN(nn.Linear(2, 32)), nn.LeakyReLU(0.2),
                                 SN(nn.Linear(32, 32)), nn.LeakyReLU(0.2),
                                 SN(nn.Linear(32, 1)))

    def forward(self, x):
        return self.net(x)


G = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
D = Discriminator()
print(D)
print("parametrized:", parametrize.is_parametrized(D.net[0]), parametrize.is_parametrized(D.net[0], "bias"))
print(sorted(n for n, _ in D.net[0].named_parameters()))
print(list(D.net[0].state_dict().keys()))


def real_batch(n):
    angle = torch.rand(n) * 6.283185307179586
    return torch.stack([angle.cos(), angle.sin()], 1) * 2 + 0.05 * torch.randn(n, 2)


opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
for step in range(args.steps):
    real = real_batch(64)
    fake = G(torch.randn(64, 4))
    d_loss = F.softplus(-D(real)).mean() + F.softplus(D(fake.detach())).mean()
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = F.softplus(-D(fake)).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    if step % 10 == 0 or step == args.steps - 1:
        print(f"gan step {step:3d} d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f}")

D.eval()
with torch.no_grad():
    sigmas = [torch.linalg.matrix_norm(m.weight, ord=2).item() for m in D.net if isinstance(m, nn.Linear)]
print("spectral norms after training:", [f"{s:.3f}" for s in sigmas])
radius = G(torch.randn(500, 4)).norm(dim=1).mean().item()
print(f"generated radius {radius:.2f} (target 2)")


# ---------------------------------------------------------------- orthogonal RNN
class OrthoRNN(nn.Module):
    def __init__(self, n_in, hidden, n_out):
        super().__init__()
        self.rnn = nn.RNN(n_in, hidden, batch_first=True, nonlinearity='tanh')
        parametrizations.orthogonal(self.rnn, "weight_hh_l0")
        self.head = nn.Linear(hidden, n_out)

    def forward(self, x):
        out, h = self.rnn(x)
        return self.head(out[:, -1])


rnn_model = OrthoRNN(1, 16, 1)
print(rnn_model)
W = rnn_model.rnn.weight_hh_l0
print("orthogonal at init", torch.allclose(W @ W.T, torch.eye(16), atol=1e-5))
seq = torch.randn(32, 12, 1)
target = seq[:, 0]  # remember the first input over 12 steps
opt = torch.optim.RMSprop(rnn_model.parameters(), lr=3e-3)
for step in range(args.steps):
    loss = F.mse_loss(rnn_model(seq), target)
    opt.zero_grad()
    loss.backward()
    total_norm = clip_grad_norm_(rnn_model.parameters(), max_norm=1.0)
    opt.step()
    if step % 10 == 0 or step == args.steps - 1:
        print(f"rnn step {step:3d} loss {loss.item():.4f} grad norm {total_norm:.4f}")
W = rnn_model.rnn.weight_hh_l0
print("still orthogonal", torch.allclose(W @ W.T, torch.eye(16), atol=1e-4))
print("original", type(rnn_model.rnn.parametrizations.weight_hh_l0.original).__name__,
      rnn_model.rnn.parametrizations.weight_hh_l0.original.shape)

# ---------------------------------------------------------------- old-style hooks
lin = nn.utils.weight_norm(nn.Linear(5, 3), name='weight', dim=0)
print(sorted(n for n, _ in lin.named_parameters()), lin.weight_g.shape, lin.weight_v.shape)
print("w = g * v / |v|", torch.allclose(lin.weight, lin.weight_g * lin.weight_v / lin.weight_v.norm(dim=1, keepdim=True)))
nn.utils.remove_weight_norm(lin)
print("after remove", sorted(n for n, _ in lin.named_parameters()))
conv = nn.utils.spectral_norm(nn.Conv2d(3, 4, 3))
print(sorted(n for n, _ in conv.named_parameters()), sorted(n for n, _ in conv.named_buffers()))
conv(torch.randn(1, 3, 8, 8))
sigma = torch.linalg.matrix_norm(conv.weight.flatten(1), ord=2).item()
print(f"one power iteration: sigma {sigma:.2f}")
nn.utils.remove_spectral_norm(conv)
wn = parametrizations.weight_norm(nn.Linear(4, 2))
print(sorted(n for n, _ in wn.named_parameters()))
print("original0", wn.parametrizations.weight.original0.shape, "original1", wn.parametrizations.weight.original1.shape)

# ---------------------------------------------------------------- clipping
net = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
out = net(torch.randn(8, 10) * 50).pow(2).mean()
out.backward()
before = torch.cat([p.grad.flatten() for p in net.parameters()])
print(f"grad norm before {before.norm():.4f} max {before.abs().max():.4f}")
norm = clip_grad_norm_(net.parameters(), max_norm=5.0, norm_type=2.0)
after = torch.cat([p.grad.flatten() for p in net.parameters()])
print(f"returned norm {norm:.4f} after {after.norm():.4f}", type(norm).__name__, norm.dtype)
inf_norm = clip_grad_norm_(net.parameters(), max_norm=0.1, norm_type='inf')
print(f"inf norm {inf_norm:.4f} now max {max(p.grad.abs().max() for p in net.parameters()):.4f}")
clip_grad_value_(net.parameters(), clip_value=0.01)
print("clipped by value", max(p.grad.abs().max().item() for p in net.parameters()) <= 0.01)
print("get_total_norm", nn.utils.get_total_norm([p.grad for p in net.parameters()]))
print("no grads", clip_grad_norm_([nn.Parameter(torch.ones(2))], 1.0))
net[0].weight.grad[0, 0] = float('nan')
try:
    clip_grad_norm_(net.parameters(), 1.0, error_if_nonfinite=True)
except RuntimeError as e:
    print("RuntimeError:", str(e).split('.')[0])


# ---------------------------------------------------------------- tied language model
class TiedLM(nn.Module):
    def __init__(self, ntoken, ninp, nlayers=1, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, ninp, nlayers, batch_first=True)
        self.decoder = nn.Linear(ninp, ntoken)
        self.decoder.weight = self.encoder.weight  # weight tying (Press & Wolf)
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, tokens):
        emb = self.drop(self.encoder(tokens))
        out, _ = checkpoint(self.rnn, emb, use_reentrant=False)
        return self.decoder(self.drop(out))


vocab = 30
corpus = torch.tensor([(i * 7 + i // 5) % vocab for i in range(400)])
lm = TiedLM(vocab, 24)
print(lm)
n_params = sum(p.numel() for p in lm.parameters())
print("parameters", n_params, "tied:", lm.decoder.weight is lm.encoder.weight,
      "state_dict keys", len(lm.state_dict()))
opt = torch.optim.SGD(lm.parameters(), lr=2.0)
for step in range(args.steps):
    i = (step * 16) % (len(corpus) - 33)
    batch = corpus[i:i + 33].unfold(0, 17, 16)
    inp, tgt = batch[:, :-1], batch[:, 1:]
    lm.train()
    logits = lm(inp)
    loss = F.cross_entropy(logits.reshape(-1, vocab), tgt.reshape(-1))
    opt.zero_grad()
    loss.backward()
    grad_norm = clip_grad_norm_(lm.parameters(), 0.25)
    opt.step()
    if step % 10 == 0 or step == args.steps - 1:
        print(f"lm step {step:3d} loss {loss.item():.4f} ppl {loss.exp().item():8.2f} grad norm {grad_norm.item():.3f}")
print("still tied after training", lm.decoder.weight.data_ptr() == lm.encoder.weight.data_ptr())
sd = lm.state_dict()
print("state_dict shares storage", sd['decoder.weight'].data_ptr() == sd['encoder.weight'].data_ptr())
reloaded = TiedLM(vocab, 24)
reloaded.load_state_dict(sd)
lm.eval()
reloaded.eval()
probe = corpus[:16].unsqueeze(0)
print("reloaded model agrees:", torch.allclose(lm(probe), reloaded(probe)))

# ---------------------------------------------------------------- checkpointing
block = nn.Sequential(*[nn.Sequential(nn.Linear(16, 16), nn.GELU()) for _ in range(4)])
xin = torch.randn(4, 16, requires_grad=True)
ref = block(xin).sum()
ref.backward()
g_ref = xin.grad.clone()
xin.grad = None
ck = checkpoint_sequential(block, 2, xin, use_reentrant=False).sum()
ck.backward()
print("checkpoint_sequential same grad", torch.allclose(xin.grad, g_ref, atol=1e-6), torch.allclose(ck, ref))
xin.grad = None
calls = []


def segment(a, b):
    calls.append(1)
    return block(a) * b


out = checkpoint(segment, xin, torch.tensor(2.0), use_reentrant=False)
out.sum().backward()
print("checkpoint recomputes forward:", len(calls), "calls;", torch.allclose(xin.grad, 2 * g_ref, atol=1e-6))
with torch.no_grad():
    print("under no_grad", checkpoint(segment, xin, torch.tensor(1.0), use_reentrant=False).requires_grad, len(calls))
drop = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5))
torch.manual_seed(3)
xd = torch.randn(2, 16, requires_grad=True)
state = torch.get_rng_state()
y1 = checkpoint(drop, xd, use_reentrant=False, preserve_rng_state=True)
y1.sum().backward()
g1 = xd.grad.clone()
xd.grad = None
torch.set_rng_state(state)
y2 = drop(xd)
y2.sum().backward()
print("dropout mask replayed:", torch.equal(y1, y2), torch.allclose(g1, xd.grad))
