"""Rainbow-lite DQN pieces (Hessel et al.; in the style of Kaixhin/Rainbow and Curt-Park's
rainbow-is-all-you-need): NoisyLinear with factorised gaussian noise (sign(x) *
sqrt(|x|), epsilon buffers refreshed with .copy_(ger/outer)), a dueling distributional
(C51) network, the categorical projection of the Bellman target with floor/ceil and
view(-1).index_add_, a prioritized replay sum-tree in NumPy, n-step returns, the
cross-entropy between distributions weighted by importance sampling, target network
syncs, and a short training run on a tiny deterministic chain MDP."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class NoisyLinear(nn.Module):
    def __init__(self, in_features, out_features, std_init=0.5):
        super(NoisyLinear, self).__init__()
        self.module_name = 'noisy_linear'
        self.in_features = in_features
        self.out_features = out_features
        self.std_init = std_init
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
        self.register_buffer('weight_epsilon', torch.empty(out_features, in_features))
        self.bias_mu = nn.Parameter(torch.empty(out_features))
        self.bias_sigma = nn.Parameter(torch.empty(out_features))
        self.register_buffer('bias_epsilon', torch.empty(out_features))
        self.reset_parameters()
        self.reset_noise()

    def reset_parameters(self):
        mu_range = 1 / math.sqrt(self.in_features)
        self.weight_mu.data.uniform_(-mu_range, mu_range)
        self.weight_sigma.data.fill_(self.std_init / math.sqrt(self.in_features))
        self.bias_mu.data.uniform_(-mu_range, mu_range)
        self.bias_sigma.data.fill_(self.std_init / math.sqrt(self.out_features))

    def _scale_noise(self, size):
        x = torch.randn(size, device=self.weight_mu.device)
        return x.sign().mul_(x.abs().sqrt_())

    def reset_noise(self):
        epsilon_in = self._scale_noise(self.in_features)
        epsilon_out = self._scale_noise(self.out_features)
        self.weight_epsilon.copy_(epsilon_out.ger(epsilon_in))
        self.bias_epsilon.copy_(epsilon_out)

    def forward(self, input):
        if self.training:
            return F.linear(input, self.weight_mu + self.weight_sigma * self.weight_epsilon,
                            self.bias_mu + self.bias_sigma * self.bias_epsilon)
        else:
            return F.linear(input, self.weight_mu, self.bias_mu)

    def extra_repr(self):
        return f'in_features={self.in_features}, out_features={self.out_features}, std_init={self.std_init}'


class DQN(nn.Module):
    def __init__(self, state_dim, action_space, atoms=11, hidden_size=32, noisy_std=0.5):
        super(DQN, self).__init__()
        self.atoms = atoms
        self.action_space = action_space
        self.fc = nn.Sequential(nn.Linear(state_dim, hidden_size), nn.ReLU())
        self.fc_h_v = NoisyLinear(hidden_size, hidden_size, std_init=noisy_std)
        self.fc_h_a = NoisyLinear(hidden_size, hidden_size, std_init=noisy_std)
        self.fc_z_v = NoisyLinear(hidden_size, self.atoms, std_init=noisy_std)
        self.fc_z_a = NoisyLinear(hidden_size, action_space * self.atoms, std_init=noisy_std)

    def forward(self, x, log=False):
        x = self.fc(x)
        v = self.fc_z_v(F.relu(self.fc_h_v(x)))
        a = self.fc_z_a(F.relu(self.fc_h_a(x)))
        v, a = v.view(-1, 1, self.atoms), a.view(-1, self.action_space, self.atoms)
        q = v + a - a.mean(1, keepdim=True)
        if log:
            q = F.log_softmax(q, dim=2)
        else:
            q = F.softmax(q, dim=2)
        return q

    def reset_noise(self):
        for name, module in self.named_children():
            if 'fc_' in name:
                module.reset_noise()


class SumTree:
    """A binary segment tree of priorities in NumPy (leaves at the end of the array)."""

    def __init__(self, size):
        self.index = 0
        self.size = size
        self.full = False
        self.tree_start = 2 ** (size - 1).bit_length() - 1
        self.sum_tree = np.zeros((self.tree_start + self.size,), dtype=np.float32)
        self.data = [None] * size
        self.max = 1

    def _update_nodes(self, indices):
        children_indices = indices * 2 + np.expand_dims([1, 2], axis=1)
        self.sum_tree[indices] = np.sum(self.sum_tree[children_indices], axis=0)

    def _propagate(self, indices):
        parents = (indices - 1) // 2
        unique_parents = np.unique(parents)
        self._update_nodes(unique_parents)
        if parents[0] != 0:
            self._propagate(parents)

    def update(self, indices, values):
        self.sum_tree[indices] = values
        self._propagate(indices)
        current_max_value = np.max(values)
        self.max = max(current_max_value, self.max)

    def append(self, data, value):
        self.data[self.index] = data
        self.update(np.array([self.index + self.tree_start]), np.array([value]))
        self.index = (self.index + 1) % self.size
        self.full = self.full or self.index == 0

    def _retrieve(self, indices, values):
        children_indices = (indices * 2 + np.expand_dims([1, 2], axis=1))
        if children_indices[0, 0] >= self.sum_tree.shape[0]:
            return indices
        elif children_indices[0, 0] >= self.tree_start:
            children_indices = np.minimum(children_indices, self.sum_tree.shape[0] - 1)
        left_children_values = self.sum_tree[children_indices[0]]
        successor_choices = np.greater(values, left_children_values).astype(np.int32)
        successor_indices = children_indices[successor_choices, np.arange(indices.size)]
        successor_values = values - successor_choices * left_children_values
        return self._retrieve(successor_indices, successor_values)

    def find(self, values):
        indices = self._retrieve(np.zeros(values.shape, dtype=np.int32), values)
        data_index = indices - self.tree_start
        return (self.sum_tree[indices], data_index, indices)

    def total(self):
        return self.sum_tree[0]


class ChainEnv:
    """States 0..n-1 (one-hot); action 1 moves right, 0 moves left; reward 1 at the end."""

    def __init__(self, n=5):
        self.n = n

    def reset(self):
        self.s = 0
        return self._obs()

    def _obs(self):
        o = np.zeros(self.n, dtype=np.float32)
        o[self.s] = 1.0
        return o

    def step(self, a):
        self.s = min(self.s + 1, self.n - 1) if a == 1 else max(self.s - 1, 0)
        done = self.s == self.n - 1
        return self._obs(), float(done), done


def project_distribution(next_dist, rewards, dones, support, v_min, v_max, gamma_n):
    batch_size, atoms = next_dist.shape
    delta_z = (v_max - v_min) / (atoms - 1)
    Tz = rewards.unsqueeze(1) + (1 - dones).unsqueeze(1) * gamma_n * support.unsqueeze(0)
    Tz = Tz.clamp(min=v_min, max=v_max)
    b = (Tz - v_min) / delta_z
    l, u = b.floor().to(torch.int64), b.ceil().to(torch.int64)
    l[(u > 0) * (l == u)] -= 1
    u[(l < (atoms - 1)) * (l == u)] += 1
    m = next_dist.new_zeros(batch_size, atoms)
    offset = torch.linspace(0, ((batch_size - 1) * atoms), batch_size).unsqueeze(1).expand(
        batch_size, atoms).to(rewards.device, dtype=torch.int64)
    m.view(-1).index_add_(0, (l + offset).view(-1), (next_dist * (u.float() - b)).view(-1))
    m.view(-1).index_add_(0, (u + offset).view(-1), (next_dist * (b - l.float())).view(-1))
    return m


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_printoptions(precision=4, sci_mode=False)

    nl = NoisyLinear(4, 3)
    print(nl)
    print("buffers", [(n, tuple(b.shape)) for n, b in nl.named_buffers()])
    print("weight_epsilon", nl.weight_epsilon)
    eps_out = nl.bias_epsilon
    print("epsilon is an outer product:",
          torch.allclose(nl.weight_epsilon, torch.outer(eps_out, nl.weight_epsilon[0] / eps_out[0])))
    x = torch.randn(2, 4)
    nl.train()
    y1 = nl(x)
    nl.reset_noise()
    y2 = nl(x)
    nl.eval()
    print("noise changes train output:", not torch.equal(y1, y2), "eval output", nl(x))
    print("state_dict keys", list(nl.state_dict().keys()))

    atoms, v_min, v_max = 11, 0.0, 2.0
    support = torch.linspace(v_min, v_max, atoms)
    print("support", support)
    p = torch.full((3, atoms), 1.0 / atoms)
    m = project_distribution(p, torch.tensor([0.0, 1.0, 0.35]), torch.tensor([0.0, 1.0, 0.0]),
                             support, v_min, v_max, 0.9)
    print("projected\n", m)
    print("projected mass", m.sum(1))

    tree = SumTree(8)
    for i in range(8):
        tree.append(i, float(i + 1))
    print("tree total", tree.total(), "leaves", tree.sum_tree[tree.tree_start:])
    vals, data_idx, tree_idx = tree.find(np.array([0.5, 3.5, 20.0, 35.9], dtype=np.float32))
    print("found", vals.tolist(), data_idx.tolist())

    env = ChainEnv(5)
    net = DQN(5, 2, atoms=atoms)
    target = DQN(5, 2, atoms=atoms)
    target.load_state_dict(net.state_dict())
    for param in target.parameters():
        param.requires_grad = False
    print(net)
    optimiser = optim.Adam(net.parameters(), lr=5e-3, eps=1.5e-4)

    memory = SumTree(256)
    n, gamma = 2, 0.9
    obs = env.reset()
    rng = np.random.RandomState(0)
    for t in range(200):
        a = rng.randint(2) if rng.rand() < 0.5 else 1
        nobs, r, done = env.step(a)
        memory.append((obs, a, r, nobs, done), memory.max)
        obs = env.reset() if done else nobs
    print("memory total priority", float(memory.total()))

    beta = 0.4
    for step in range(40):
        net.reset_noise()
        segment = memory.total() / 32
        samples = np.arange(32, dtype=np.float32) * segment + rng.uniform(0.0, segment, 32).astype(np.float32)
        probs, idxs, tree_idxs = memory.find(samples)
        batch = [memory.data[i] for i in idxs]
        states = torch.tensor(np.stack([b[0] for b in batch]))
        actions = torch.tensor([b[1] for b in batch])
        rewards = torch.tensor([b[2] for b in batch], dtype=torch.float32)
        next_states = torch.tensor(np.stack([b[3] for b in batch]))
        dones = torch.tensor([b[4] for b in batch], dtype=torch.float32)
        weights = (memory.size * probs / memory.total()) ** -beta
        weights = torch.tensor(weights / weights.max(), dtype=torch.float32)

        log_ps = net(states, log=True)
        log_ps_a = log_ps[range(32), actions]
        with torch.no_grad():
            pns = net(next_states)
            dns = support.expand_as(pns) * pns
            argmax_indices_ns = dns.sum(2).argmax(1)
            target.reset_noise()
            pns = target(next_states)
            pns_a = pns[range(32), argmax_indices_ns]
            m = project_distribution(pns_a, rewards, dones, support, v_min, v_max, gamma ** n)
        loss = -torch.sum(m * log_ps_a, 1)
        net.zero_grad()
        (weights * loss).mean().backward()
        nn.utils.clip_grad_norm_(net.parameters(), 10.0)
        optimiser.step()
        memory.update(tree_idxs, loss.detach().numpy())
        if step % 10 == 0:
            target.load_state_dict(net.state_dict())
        if step % 8 == 0 or step == 39:
            print(f"step {step:2d} loss {loss.mean().item():.4f}")

    net.eval()
    with torch.no_grad():
        q = (net(torch.eye(5)) * support).sum(2)
    print("greedy actions", q.argmax(1).tolist())
    print("smooth_l1", F.smooth_l1_loss(q[:, 1], q[:, 0] + 0.5).item() >= 0)


if __name__ == "__main__":
    main()
