"""A categorical VAE with the Gumbel-softmax trick (Jang et al.; in the style of
YongfeiYan/Gumbel_Softmax_VAE and the ericjang notebook): F.gumbel_softmax(hard=True) with a
temperature annealed by exponential decay, a hand-written sample_gumbel / gumbel_softmax
with the straight-through estimator (y_hard - y.detach() + y) checked against autograd, the KL
to a uniform categorical via log_softmax, torch.distributions.OneHotCategorical and
RelaxedOneHotCategorical (rsample, log_prob, entropy), on binary 8x8 "digits" made with
torch.manual_seed'd prototypes, trained with Adam."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import OneHotCategorical, RelaxedOneHotCategorical, Categorical
from torch.distributions.kl import kl_divergence

latent_dim = 6
categorical_dim = 4
temp_min = 0.5
ANNEAL_RATE = 0.003


def sample_gumbel(shape, eps=1e-20):
    U = torch.rand(shape)
    return -torch.log(-torch.log(U + eps) + eps)


def gumbel_softmax_sample(logits, temperature):
    y = logits + sample_gumbel(logits.size())
    return F.softmax(y / temperature, dim=-1)


def gumbel_softmax(logits, temperature, hard=False):
    """ST-gumbel-softmax: input [*, n_class], return [*, n_class] an one-hot vector"""
    y = gumbel_softmax_sample(logits, temperature)
    if not hard:
        return y.view(-1, latent_dim * categorical_dim)
    shape = y.size()
    _, ind = y.max(dim=-1)
    y_hard = torch.zeros_like(y).view(-1, shape[-1])
    y_hard.scatter_(1, ind.view(-1, 1), 1)
    y_hard = y_hard.view(*shape)
    # Set gradients w.r.t. y_hard gradients w.r.t. y
    y_hard = (y_hard - y).detach() + y
    return y_hard.view(-1, latent_dim * categorical_dim)


class VAE_gumbel(nn.Module):
    def __init__(self, temp):
        super(VAE_gumbel, self).__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 32)
        self.fc3 = nn.Linear(32, latent_dim * categorical_dim)
        self.fc4 = nn.Linear(latent_dim * categorical_dim, 32)
        self.fc5 = nn.Linear(32, 64)
        self.fc6 = nn.Linear(64, 64)
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()

    def encode(self, x):
        h1 = self.relu(self.fc1(x))
        h2 = self.relu(self.fc2(h1))
        return self.relu(self.fc3(h2))

    def decode(self, z):
        h4 = self.relu(self.fc4(z))
        h5 = self.relu(self.fc5(h4))
        return self.sigmoid(self.fc6(h5))

    def forward(self, x, temp, hard):
        q = self.encode(x.view(-1, 64))
        q_y = q.view(q.size(0), latent_dim, categorical_dim)
        z = F.gumbel_softmax(q_y, tau=temp, hard=hard).view(-1, latent_dim * categorical_dim)
        return self.decode(z), F.softmax(q_y, dim=-1).reshape(*q.size())


def loss_function(recon_x, x, qy):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction='sum') / x.shape[0]
    log_ratio = torch.log(qy * categorical_dim + 1e-20)
    KLD = torch.sum(qy * log_ratio, dim=-1).mean()
    return BCE + KLD


def main():
    torch.manual_seed(0)
    torch.set_printoptions(precision=4, sci_mode=False)

    logits = torch.tensor([[1.0, 2.0, 0.5, -1.0]], requires_grad=True)
    y_soft = F.gumbel_softmax(logits, tau=1.0)
    print("soft sample sums to one:", torch.allclose(y_soft.sum(-1), torch.ones(1)))
    y = F.gumbel_softmax(logits, tau=0.5, hard=True)
    print("hard sample", y, y.dtype)
    print("one-hot:", bool(((y == 0) | (y == 1)).all()), y.sum().item())
    (y * torch.arange(4.0)).sum().backward()
    print("straight-through grad is the soft sample's:", logits.grad.abs().sum().item() > 0)

    # the hand-written straight-through estimator has the same gradient as the soft sample
    torch.manual_seed(1)
    l1 = logits.detach().clone().requires_grad_()
    hard = gumbel_softmax(l1.view(1, 1, 4).expand(1, latent_dim, 4), 0.7, hard=True)
    torch.manual_seed(1)
    l2 = logits.detach().clone().requires_grad_()
    soft = gumbel_softmax(l2.view(1, 1, 4).expand(1, latent_dim, 4), 0.7, hard=False)
    w = torch.randn(latent_dim * categorical_dim)
    (hard * w).sum().backward()
    (soft * w).sum().backward()
    print("ST grad == soft grad:", torch.allclose(l1.grad, l2.grad))
    print("grad", l1.grad)

    # distributions
    probs = torch.tensor([0.1, 0.2, 0.3, 0.4])
    ohc = OneHotCategorical(probs=probs)
    print(ohc)
    s = ohc.sample((5,))
    print("OneHotCategorical sample", s.shape, s.dtype, s.sum(-1).tolist())
    print("log_prob", ohc.log_prob(s))
    print("entropy", ohc.entropy(), "mean", ohc.mean, "variance", ohc.variance)
    print("has_rsample", ohc.has_rsample, RelaxedOneHotCategorical.has_rsample)
    relaxed = RelaxedOneHotCategorical(torch.tensor(0.5), logits=torch.log(probs))
    print(relaxed)
    r = relaxed.rsample((3,))
    print("relaxed rsample", r)
    print("relaxed log_prob", relaxed.log_prob(r))
    print("temperature", relaxed.temperature, "support", relaxed.support)
    cat = Categorical(logits=torch.zeros(4))
    print("KL(q || uniform)", kl_divergence(Categorical(probs=probs), cat))
    q_log = F.log_softmax(torch.log(probs), dim=-1)
    print("KL by log_softmax", (q_log.exp() * (q_log - np.log(1.0 / 4))).sum())
    counts = F.one_hot(Categorical(probs=probs).sample((2000,)), 4).sum(0)
    print("empirical counts", counts.tolist(), counts.dtype)

    # data: 4 prototypes of 8x8 binary images with bit-flip noise
    protos = (torch.rand(4, 64) > 0.5).float()
    idx = torch.randint(0, 4, (256,))
    flips = (torch.rand(256, 64) < 0.05).float()
    data = (protos[idx] - flips).abs()
    print("data", data.shape, data.mean().item() > 0.3)

    temp = 1.0
    model = VAE_gumbel(temp)
    print(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=64,
                                         shuffle=True)
    batch_idx = 0
    for epoch in range(1, 6):
        model.train()
        train_loss = 0
        for (x,) in loader:
            optimizer.zero_grad()
            recon_batch, qy = model(x, temp, hard=True)
            loss = loss_function(recon_batch, x, qy)
            loss.backward()
            train_loss += loss.item() * len(x)
            optimizer.step()
            batch_idx += 1
            if batch_idx % 4 == 1:
                temp = np.maximum(temp * np.exp(-ANNEAL_RATE * batch_idx), temp_min)
        print('====> Epoch: {} Average loss: {:.4f} temp {:.4f}'.format(
            epoch, train_loss / len(loader.dataset), temp))
    print("temp type", type(temp).__name__)

    model.eval()
    with torch.no_grad():
        ind = torch.zeros(latent_dim, 1).long()
        z = F.one_hot(ind, categorical_dim).float().view(1, -1)
        sample = model.decode(z)
        print("decoded sample", sample.shape, bool(((sample >= 0) & (sample <= 1)).all()))


if __name__ == "__main__":
    main()
