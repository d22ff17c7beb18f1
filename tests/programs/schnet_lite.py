"""SchNet, scaled down, as schnetpack and PyTorch Geometric's schnet.py write it, with
DimeNet's envelope pieces: a radius graph from torch.cdist and nonzero (no torch_cluster),
GaussianSmearing (offset from torch.linspace, coeff = -0.5 / (offset[1] - offset[0])**2,
torch.exp(coeff * dist**2)), the cosine cutoff, ShiftedSoftplus as
F.softplus(x) - math.log(2.0), CFConv message passing with index_add_ and scatter_add
aggregation, per-molecule energy readout via scatter_add over the batch vector, forces
as -torch.autograd.grad(energy.sum(), pos, create_graph=True) and a force-matching loss
(a double backward), trained on a toy Lennard-Jones-like potential with Adam."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Embedding, Linear, ModuleList, Sequential


class ShiftedSoftplus(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = torch.log(torch.tensor(2.0)).item()

    def forward(self, x):
        return F.softplus(x) - self.shift


def shifted_softplus(x):
    return F.softplus(x) - math.log(2.0)


class GaussianSmearing(torch.nn.Module):
    def __init__(self, start=0.0, stop=5.0, num_gaussians=50):
        super().__init__()
        offset = torch.linspace(start, stop, num_gaussians)
        self.coeff = -0.5 / (offset[1] - offset[0]).item()**2
        self.register_buffer('offset', offset)

    def forward(self, dist):
        dist = dist.view(-1, 1) - self.offset.view(1, -1)
        return torch.exp(self.coeff * torch.pow(dist, 2))


class CosineCutoff(nn.Module):
    def __init__(self, cutoff=5.0):
        super(CosineCutoff, self).__init__()
        self.register_buffer("cutoff", torch.FloatTensor([cutoff]))

    def forward(self, distances):
        # Compute values of cutoff function
        cutoffs = 0.5 * (torch.cos(distances * math.pi / self.cutoff) + 1.0)
        # Remove contributions beyond the cutoff radius
        cutoffs *= (distances < self.cutoff).float()
        return cutoffs


class Envelope(torch.nn.Module):
    """DimeNet's polynomial envelope."""
    def __init__(self, exponent):
        super().__init__()
        self.p = exponent + 1
        self.a = -(self.p + 1) * (self.p + 2) / 2
        self.b = self.p * (self.p + 2)
        self.c = -self.p * (self.p + 1) / 2

    def forward(self, x):
        p, a, b, c = self.p, self.a, self.b, self.c
        x_pow_p0 = x.pow(p - 1)
        x_pow_p1 = x_pow_p0 * x
        x_pow_p2 = x_pow_p1 * x
        return (1. / x + a * x_pow_p0 + b * x_pow_p1 +
                c * x_pow_p2) * (x < 1.0).to(x.dtype)


def radius_graph(pos, r, batch, loop=False, max_num_neighbors=32):
    """All pairs within distance r in the same molecule, as torch_cluster.radius_graph's
    (source, target) edge_index, from a dense cdist."""
    dist = torch.cdist(pos, pos)
    same = batch.unsqueeze(0) == batch.unsqueeze(1)
    adj = (dist < r) & same
    if not loop:
        adj.fill_diagonal_(False)
    row, col = adj.nonzero(as_tuple=True)
    return torch.stack([col, row], dim=0)


class CFConv(torch.nn.Module):
    def __init__(self, in_channels, out_channels, num_filters, nn, cutoff):
        super().__init__()
        self.lin1 = Linear(in_channels, num_filters, bias=False)
        self.lin2 = Linear(num_filters, out_channels)
        self.nn = nn
        self.cutoff = cutoff

        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.xavier_uniform_(self.lin1.weight)
        torch.nn.init.xavier_uniform_(self.lin2.weight)
        self.lin2.bias.data.fill_(0)

    def forward(self, x, edge_index, edge_weight, edge_attr):
        C = 0.5 * (torch.cos(edge_weight * math.pi / self.cutoff) + 1.0)
        W = self.nn(edge_attr) * C.view(-1, 1)

        x = self.lin1(x)
        # propagate: messages x_j * W gathered at the source, summed at the target
        msg = x[edge_index[0]] * W
        out = torch.zeros_like(x).index_add_(0, edge_index[1], msg)
        x = self.lin2(out)
        return x


class InteractionBlock(torch.nn.Module):
    def __init__(self, hidden_channels, num_gaussians, num_filters, cutoff):
        super().__init__()
        self.mlp = Sequential(
            Linear(num_gaussians, num_filters),
            ShiftedSoftplus(),
            Linear(num_filters, num_filters),
        )
        self.conv = CFConv(hidden_channels, hidden_channels, num_filters,
                           self.mlp, cutoff)
        self.act = ShiftedSoftplus()
        self.lin = Linear(hidden_channels, hidden_channels)

        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.xavier_uniform_(self.mlp[0].weight)
        self.mlp[0].bias.data.fill_(0)
        torch.nn.init.xavier_uniform_(self.mlp[2].weight)
        self.mlp[2].bias.data.fill_(0)
        self.conv.reset_parameters()
        torch.nn.init.xavier_uniform_(self.lin.weight)
        self.lin.bias.data.fill_(0)

    def forward(self, x, edge_index, edge_weight, edge_attr):
        x = self.conv(x, edge_index, edge_weight, edge_attr)
        x = self.act(x)
        x = self.lin(x)
        return x


class SchNet(torch.nn.Module):
    def __init__(self, hidden_channels=32, num_filters=32, num_interactions=2,
                 num_gaussians=20, cutoff=3.0, max_num_neighbors=32, readout='add',
                 mean=None, std=None):
        super().__init__()
        self.hidden_channels = hidden_channels
        self.num_filters = num_filters
        self.num_interactions = num_interactions
        self.num_gaussians = num_gaussians
        self.cutoff = cutoff
        self.max_num_neighbors = max_num_neighbors
        self.readout = readout
        self.mean = mean
        self.std = std
        self.scale = None

        self.embedding = Embedding(10, hidden_channels, padding_idx=0)
        self.distance_expansion = GaussianSmearing(0.0, cutoff, num_gaussians)

        self.interactions = ModuleList()
        for _ in range(num_interactions):
            block = InteractionBlock(hidden_channels, num_gaussians,
                                     num_filters, cutoff)
            self.interactions.append(block)

        self.lin1 = Linear(hidden_channels, hidden_channels // 2)
        self.act = ShiftedSoftplus()
        self.lin2 = Linear(hidden_channels // 2, 1)

        self.reset_parameters()

    def reset_parameters(self):
        self.embedding.reset_parameters()
        for interaction in self.interactions:
            interaction.reset_parameters()
        torch.nn.init.xavier_uniform_(self.lin1.weight)
        self.lin1.bias.data.fill_(0)
        torch.nn.init.xavier_uniform_(self.lin2.weight)
        self.lin2.bias.data.fill_(0)

    def forward(self, z, pos, batch=None):
        batch = torch.zeros_like(z) if batch is None else batch

        h = self.embedding(z)
        edge_index = radius_graph(pos, r=self.cutoff, batch=batch,
                                  max_num_neighbors=self.max_num_neighbors)
        row, col = edge_index
        edge_weight = (pos[row] - pos[col]).norm(dim=-1)
        edge_attr = self.distance_expansion(edge_weight)

        for interaction in self.interactions:
            h = h + interaction(h, edge_index, edge_weight, edge_attr)

        h = self.lin1(h)
        h = self.act(h)
        h = self.lin2(h)

        if self.mean is not None and self.std is not None:
            h = h * self.std + self.mean

        num_graphs = int(batch.max()) + 1
        out = torch.zeros(num_graphs, 1, dtype=h.dtype).scatter_add_(
            0, batch.view(-1, 1).expand_as(h), h)
        return out

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}('
                f'hidden_channels={self.hidden_channels}, '
                f'num_filters={self.num_filters}, '
                f'num_interactions={self.num_interactions}, '
                f'num_gaussians={self.num_gaussians}, '
                f'cutoff={self.cutoff})')


def toy_energy(pos, batch, num_graphs):
    """A smooth pair potential (soft Lennard-Jones) summed per molecule."""
    dist = torch.cdist(pos, pos)
    same = (batch[:, None] == batch[None, :]) & ~torch.eye(len(pos), dtype=torch.bool)
    d = dist[same]
    pair = 4 * ((1.0 / (d ** 2 + 0.5)) ** 6 - (1.0 / (d ** 2 + 0.5)) ** 3)
    owner = batch[:, None].expand_as(dist)[same]
    return 0.5 * torch.zeros(num_graphs, dtype=pos.dtype).index_add(0, owner, pair)


def make_molecules(n_mol=6, atoms=5):
    g = torch.Generator().manual_seed(11)
    pos = torch.randn(n_mol * atoms, 3, generator=g) * 0.9
    z = torch.randint(1, 4, (n_mol * atoms,), generator=g)
    batch = torch.arange(n_mol).repeat_interleave(atoms)
    pos.requires_grad_(True)
    e = toy_energy(pos, batch, n_mol)
    f = -torch.autograd.grad(e.sum(), pos)[0]
    return z, pos.detach(), batch, e.detach(), f.detach()


def main():
    torch.manual_seed(0)
    ssp = ShiftedSoftplus()
    xs = torch.tensor([-2.0, 0.0, 2.0])
    print("shifted softplus", ssp(xs), torch.allclose(ssp(xs), shifted_softplus(xs)))
    print("softplus beta", F.softplus(xs, beta=2.0, threshold=1.0))
    gs = GaussianSmearing(0.0, 3.0, 5)
    print("gaussians", gs.offset, round(gs.coeff, 4), gs(torch.tensor([0.0, 1.5])))
    cc = CosineCutoff(2.0)
    print("cosine cutoff", cc(torch.tensor([0.0, 1.0, 1.9, 2.5])))
    env = Envelope(5)
    print("envelope", env(torch.tensor([0.25, 0.5, 0.99, 1.2])))

    pos = torch.tensor([[0., 0., 0.], [1., 0., 0.], [0., 2., 0.], [5., 5., 5.]])
    batch = torch.tensor([0, 0, 0, 1])
    print("cdist", torch.cdist(pos, pos))
    ei = radius_graph(pos, 1.5, batch)
    print("radius graph", ei, ei.dtype)
    adj = torch.cdist(pos, pos) < 2.5
    print("nonzero", adj.nonzero().shape, adj.nonzero(as_tuple=True)[0].tolist())
    src = torch.tensor([1.0, 2.0, 3.0, 4.0])
    idx = torch.tensor([0, 1, 0, 2])
    print("scatter_add", torch.zeros(3).scatter_add(0, idx, src),
          torch.zeros(3).index_add_(0, idx, src))
    print("index_add alpha", torch.ones(3).index_add(0, idx, src, alpha=-1))

    z, pos, batch, energy, forces = make_molecules()
    print("data", z.shape, pos.shape, batch.tolist()[:10], energy.shape)
    print("energies", energy)
    print("mean |F|", forces.abs().mean())

    model = SchNet(mean=energy.mean().item(), std=None)
    print(model)
    print("params", sum(p.numel() for p in model.parameters()))
    p = pos.clone().requires_grad_(True)
    e = model(z, p, batch)
    print("energy out", e.shape, e.grad_fn is not None)
    f = -torch.autograd.grad(e.sum(), p, create_graph=True)[0]
    print("forces", f.shape, f.requires_grad, f.grad_fn is not None)
    print("translation invariant", torch.allclose(model(z, pos + 1.0, batch), model(z, pos, batch),
                                                  atol=1e-5))

    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=15, eta_min=1e-4)
    rho = 10.0  # force weight
    for step in range(15):
        p = pos.clone().requires_grad_(True)
        e = model(z, p, batch).squeeze(-1)
        f = -torch.autograd.grad(e.sum(), p, create_graph=True)[0]
        loss_e = F.mse_loss(e, energy)
        loss_f = F.mse_loss(f, forces)
        loss = loss_e + rho * loss_f
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        print(f"step {step:2d} loss {loss.item():.5f} energy mse {loss_e.item():.5f} "
              f"force mse {loss_f.item():.5f}")
    p = pos.clone().requires_grad_(True)
    e = model(z, p, batch).squeeze(-1)
    f = -torch.autograd.grad(e.sum(), p)[0]
    print(f"final energy MAE {(e - energy).abs().mean().item():.4f} "
          f"force MAE {(f - forces).abs().mean().item():.4f}")
    print("no graph kept", f.requires_grad)


if __name__ == "__main__":
    main()
