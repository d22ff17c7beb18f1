"""EGNN (Satorras, Hoogeboom & Welling, "E(n) Equivariant Graph Neural Networks"), scaled
down, as vgsatorras/egnn's models/gcl.py (E_GCL) writes it: fully connected edges per
molecule from torch.combinations / torch.triu_indices, coord_diff = x[row] - x[col],
radial = sum of squares, SiLU edge/node/coord MLPs (xavier_uniform_ with gain 0.001 on
the last coord layer), unsorted_segment_sum via new_full + scatter_add_ and index_add_,
coords_agg = 'mean' via segment counts, attention with sigmoid, tanh-bounded coordinate
updates, node-wise residuals; trained to regress a rotation-invariant energy with Adam and
checked for E(n) equivariance with a random rotation from torch.linalg.qr (sign-fixed by
torch.det) plus a translation, printed with torch.allclose."""
import torch
import torch.nn as nn


def unsorted_segment_sum(data, segment_ids, num_segments):
    result_shape = (num_segments, data.size(1))
    result = data.new_full(result_shape, 0)  # Init empty result tensor.
    segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
    result.scatter_add_(0, segment_ids, data)
    return result


def unsorted_segment_mean(data, segment_ids, num_segments):
    result_shape = (num_segments, data.size(1))
    segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
    result = data.new_full(result_shape, 0)  # Init empty result tensor.
    count = data.new_full(result_shape, 0)
    result.scatter_add_(0, segment_ids, data)
    count.scatter_add_(0, segment_ids, torch.ones_like(data))
    return result / count.clamp(min=1)


class E_GCL(nn.Module):
    """E(n) Equivariant Convolutional Layer"""

    def __init__(self, input_nf, output_nf, hidden_nf, edges_in_d=0, act_fn=nn.SiLU(),
                 residual=True, attention=False, normalize=False, coords_agg="mean",
                 tanh=False):
        super(E_GCL, self).__init__()
        input_edge = input_nf * 2
        self.residual = residual
        self.attention = attention
        self.normalize = normalize
        self.coords_agg = coords_agg
        self.tanh = tanh
        self.epsilon = 1e-8
        edge_coords_nf = 1

        self.edge_mlp = nn.Sequential(
            nn.Linear(input_edge + edge_coords_nf + edges_in_d, hidden_nf),
            act_fn,
            nn.Linear(hidden_nf, hidden_nf),
            act_fn)

        self.node_mlp = nn.Sequential(
            nn.Linear(hidden_nf + input_nf, hidden_nf),
            act_fn,
            nn.Linear(hidden_nf, output_nf))

        layer = nn.Linear(hidden_nf, 1, bias=False)
        torch.nn.init.xavier_uniform_(layer.weight, gain=0.001)

        coord_mlp = []
        coord_mlp.append(nn.Linear(hidden_nf, hidden_nf))
        coord_mlp.append(act_fn)
        coord_mlp.append(layer)
        if self.tanh:
            coord_mlp.append(nn.Tanh())
        self.coord_mlp = nn.Sequential(*coord_mlp)

        if self.attention:
            self.att_mlp = nn.Sequential(
                nn.Linear(hidden_nf, 1),
                nn.Sigmoid())

    def edge_model(self, source, target, radial, edge_attr):
        if edge_attr is None:  # Unused.
            out = torch.cat([source, target, radial], dim=1)
        else:
            out = torch.cat([source, target, radial, edge_attr], dim=1)
        out = self.edge_mlp(out)
        if self.attention:
            att_val = self.att_mlp(out)
            out = out * att_val
        return out

    def node_model(self, x, edge_index, edge_attr, node_attr):
        row, col = edge_index
        agg = unsorted_segment_sum(edge_attr, row, num_segments=x.size(0))
        if node_attr is not None:
            agg = torch.cat([x, agg, node_attr], dim=1)
        else:
            agg = torch.cat([x, agg], dim=1)
        out = self.node_mlp(agg)
        if self.residual:
            out = x + out
        return out, agg

    def coord_model(self, coord, edge_index, coord_diff, edge_feat):
        row, col = edge_index
        trans = coord_diff * self.coord_mlp(edge_feat)
        if self.coords_agg == "sum":
            agg = unsorted_segment_sum(trans, row, num_segments=coord.size(0))
        elif self.coords_agg == "mean":
            agg = unsorted_segment_mean(trans, row, num_segments=coord.size(0))
        else:
            raise Exception("Wrong coords_agg parameter" % self.coords_agg)
        coord = coord + agg
        return coord

    def coord2radial(self, edge_index, coord):
        row, col = edge_index
        coord_diff = coord[row] - coord[col]
        radial = torch.sum(coord_diff**2, 1).unsqueeze(1)

        if self.normalize:
            norm = torch.sqrt(radial).detach() + self.epsilon
            coord_diff = coord_diff / norm

        return radial, coord_diff

    def forward(self, h, edge_index, coord, edge_attr=None, node_attr=None):
        row, col = edge_index
        radial, coord_diff = self.coord2radial(edge_index, coord)

        edge_feat = self.edge_model(h[row], h[col], radial, edge_attr)
        coord = self.coord_model(coord, edge_index, coord_diff, edge_feat)
        h, agg = self.node_model(h, edge_index, edge_feat, node_attr)

        return h, coord, edge_attr


class EGNN(nn.Module):
    def __init__(self, in_node_nf, hidden_nf, out_node_nf, in_edge_nf=0, act_fn=nn.SiLU(),
                 n_layers=4, residual=True, attention=False, normalize=False, tanh=False):
        super(EGNN, self).__init__()
        self.hidden_nf = hidden_nf
        self.n_layers = n_layers
        self.embedding_in = nn.Linear(in_node_nf, self.hidden_nf)
        self.embedding_out = nn.Linear(self.hidden_nf, out_node_nf)
        for i in range(0, n_layers):
            self.add_module("gcl_%d" % i, E_GCL(self.hidden_nf, self.hidden_nf, self.hidden_nf,
                                                edges_in_d=in_edge_nf, act_fn=act_fn,
                                                residual=residual, attention=attention,
                                                normalize=normalize, tanh=tanh))

    def forward(self, h, x, edges, edge_attr):
        h = self.embedding_in(h)
        for i in range(0, self.n_layers):
            h, x, _ = self._modules["gcl_%d" % i](h, edges, x, edge_attr=edge_attr)
        h = self.embedding_out(h)
        return h, x


def get_edges_batch(n_nodes, batch_size):
    """vgsatorras' fully connected edges, for every molecule of the batch."""
    rows, cols = [], []
    for i in range(n_nodes):
        for j in range(n_nodes):
            if i != j:
                rows.append(i)
                cols.append(j)
    edges = [torch.LongTensor(rows), torch.LongTensor(cols)]
    edge_attr = torch.ones(len(edges[0]) * batch_size, 1)
    if batch_size > 1:
        rows, cols = [], []
        for i in range(batch_size):
            rows.append(edges[0] + n_nodes * i)
            cols.append(edges[1] + n_nodes * i)
        edges = [torch.cat(rows), torch.cat(cols)]
    return edges, edge_attr


def random_rotation(dim=3, dtype=torch.float32):
    q, r = torch.linalg.qr(torch.randn(dim, dim, dtype=dtype))
    q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)
    if torch.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


torch.manual_seed(0)
n_nodes, batch_size, n_feat, x_dim = 5, 8, 3, 3

# edges three ways: loops, torch.combinations, torch.triu_indices
edges, edge_attr = get_edges_batch(n_nodes, 1)
print("edges", torch.stack(edges)[:, :6], len(edges[0]))
pairs = torch.combinations(torch.arange(n_nodes), r=2)
print("combinations", pairs.shape, pairs[:4].tolist())
iu = torch.triu_indices(n_nodes, n_nodes, offset=1)
print("triu_indices", iu, torch.equal(iu.t(), pairs))
both = torch.cat([iu, iu.flip(0)], dim=1)
print("undirected", both.shape, torch.tril_indices(3, 3, -1))
print("combinations with replacement", torch.combinations(torch.tensor([1, 2, 3]), with_replacement=True).tolist())

# segment sums: scatter_add_ and index_add_ agree; mean divides by counts
data = torch.arange(12.0).view(6, 2)
seg = torch.tensor([0, 2, 0, 1, 2, 2])
print("segment sum", unsorted_segment_sum(data, seg, 4))
print("index_add_", torch.zeros(4, 2).index_add_(0, seg, data))
print("segment mean", unsorted_segment_mean(data, seg, 4))
print("scatter_reduce mean", torch.zeros(4, 2).scatter_reduce(0, seg[:, None].expand(-1, 2), data, "mean", include_self=False))
print("vector_norm", torch.linalg.vector_norm(data[:2], dim=-1, keepdim=True), torch.linalg.vector_norm(data, ord=1))

# the toy task: an energy made of pairwise distances per molecule
edges, edge_attr = get_edges_batch(n_nodes, batch_size)
h = torch.ones(batch_size * n_nodes, n_feat)
x = torch.randn(batch_size * n_nodes, x_dim)
batch = torch.arange(batch_size).repeat_interleave(n_nodes)
dist = torch.linalg.vector_norm(x[edges[0]] - x[edges[1]], dim=-1)
target = torch.zeros(batch_size).index_add_(0, batch[edges[0]], torch.exp(-dist)) / 10
print("target", target)

egnn = EGNN(in_node_nf=n_feat, hidden_nf=32, out_node_nf=1, in_edge_nf=1, n_layers=3,
            attention=True, tanh=True)
print(egnn)
print("parameters", sum(p.numel() for p in egnn.parameters()))
print("coord layer", egnn.gcl_0.coord_mlp[2].weight.abs().max().item() < 0.01)

# E(n) equivariance: rotate + translate the input, the output coordinates follow
Q = random_rotation()
print("rotation", torch.allclose(Q @ Q.T, torch.eye(3), atol=1e-5), torch.det(Q).round())
t = torch.randn(1, x_dim)
h_out, x_out = egnn(h, x, edges, edge_attr)
h_rot, x_rot = egnn(h, x @ Q.T + t, edges, edge_attr)
print("h invariant", torch.allclose(h_out, h_rot, atol=1e-4))
print("x equivariant", torch.allclose(x_out @ Q.T + t, x_rot, atol=1e-4))
print("outputs", h_out.shape, x_out.shape, h_out.grad_fn is not None)

optimizer = torch.optim.Adam(egnn.parameters(), lr=2e-3, weight_decay=1e-16)
loss_fn = nn.L1Loss()
for step in range(40):
    h_out, x_out = egnn(h, x, edges, edge_attr)
    pred = torch.zeros(batch_size).index_add(0, batch, h_out.squeeze(-1)) / n_nodes
    loss = loss_fn(pred, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 5 == 0 or step == 39:
        print(f"step {step:3d} loss {loss.item():.5f}")

with torch.no_grad():
    h_out, x_out = egnn(h, x, edges, edge_attr)
    h_rot, x_rot = egnn(h, x @ Q.T + t, edges, edge_attr)
    print("trained h invariant", torch.allclose(h_out, h_rot, atol=1e-4))
    print("trained x equivariant", torch.allclose(x_out @ Q.T + t, x_rot, atol=1e-4))
