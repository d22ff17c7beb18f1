"""AlphaZero-lite (in the style of alpha-zero-general and the suragnair/"simple
AlphaZero" tutorials): tic-tac-toe, a policy/value ResNet-ish net (conv trunk, policy
head with log_softmax, value head with tanh), MCTS in Python with PUCT using the net's
priors as tensors, Dirichlet noise at the root (torch.distributions.Dirichlet), moves
sampled with torch.distributions.Categorical from visit counts with a temperature,
self-play producing (state, pi, z) examples with 8-fold symmetries (torch.rot90, flip),
training with -sum(pi * log_softmax) and MSE."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, Dirichlet


class TicTacToe:
    n = 3

    def initial(self):
        return np.zeros((3, 3), dtype=np.int8)

    def valid_moves(self, board):
        return (board.reshape(-1) == 0).astype(np.float32)

    def next_state(self, board, player, action):
        b = board.copy()
        b[action // 3, action % 3] = player
        return b, -player

    def winner(self, board):
        lines = list(board) + list(board.T) + [board.diagonal(), np.fliplr(board).diagonal()]
        for line in lines:
            s = int(line.sum())
            if s == 3:
                return 1
            if s == -3:
                return -1
        if not (board == 0).any():
            return 1e-4  # draw: a small nonzero value as in alpha-zero-general
        return 0

    def canonical(self, board, player):
        return board * player


class ResBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(ch)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(ch)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + x)


class PolicyValueNet(nn.Module):
    def __init__(self, ch=16, n=3):
        super().__init__()
        self.n = n
        self.stem = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch), nn.ReLU())
        self.res = nn.Sequential(ResBlock(ch), ResBlock(ch))
        self.policy_head = nn.Sequential(nn.Conv2d(ch, 2, 1), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                                         nn.Linear(2 * n * n, n * n))
        self.value_head = nn.Sequential(nn.Conv2d(ch, 1, 1), nn.BatchNorm2d(1), nn.ReLU(), nn.Flatten(),
                                        nn.Linear(n * n, 32), nn.ReLU(), nn.Linear(32, 1), nn.Tanh())

    @staticmethod
    def encode(boards):
        """(B, 3, 3) canonical boards -> planes: own stones, opponent stones, empty."""
        boards = torch.as_tensor(boards, dtype=torch.float32)
        return torch.stack([(boards == 1).float(), (boards == -1).float(), (boards == 0).float()], dim=1)

    def forward(self, x):
        x = self.res(self.stem(x))
        return F.log_softmax(self.policy_head(x), dim=1), self.value_head(x)

    @torch.no_grad()
    def predict(self, board):
        self.eval()
        log_pi, v = self(self.encode(board[None]))
        return torch.exp(log_pi)[0], v[0, 0].item()


class MCTS:
    def __init__(self, game, net, num_sims=16, c_puct=1.0, dirichlet_alpha=0.3, eps=0.25):
        self.game, self.net = game, net
        self.num_sims, self.c_puct = num_sims, c_puct
        self.alpha, self.eps = dirichlet_alpha, eps
        self.Qsa, self.Nsa, self.Ns, self.Ps, self.Es, self.Vs = {}, {}, {}, {}, {}, {}

    def action_probs(self, board, temp=1.0):
        for _ in range(self.num_sims):
            self.search(board, root=True)
        s = board.tobytes()
        counts = torch.tensor([self.Nsa.get((s, a), 0) for a in range(9)], dtype=torch.float32)
        if temp == 0:
            best = torch.nonzero(counts == counts.max()).flatten()
            probs = torch.zeros(9)
            probs[best[0]] = 1.0
            return probs
        counts = counts ** (1.0 / temp)
        return counts / counts.sum()

    def search(self, board, root=False):
        s = board.tobytes()
        if s not in self.Es:
            self.Es[s] = self.game.winner(board)
        if self.Es[s] != 0:
            return -self.Es[s]  # the previous player made the last move
        if s not in self.Ps:
            pi, v = self.net.predict(board)
            valids = torch.from_numpy(self.game.valid_moves(board))
            pi = pi * valids
            total = pi.sum()
            pi = pi / total if total > 0 else valids / valids.sum()
            self.Ps[s], self.Vs[s], self.Ns[s] = pi, valids, 0
            return -v
        valids, prior = self.Vs[s], self.Ps[s]
        if root:
            noise = Dirichlet(torch.full((int(valids.sum().item()),), self.alpha)).sample()
            prior = prior.clone()
            prior[valids.bool()] = (1 - self.eps) * prior[valids.bool()] + self.eps * noise
        best, best_u = -1, -float("inf")
        for a in range(9):
            if valids[a]:
                if (s, a) in self.Qsa:
                    u = self.Qsa[(s, a)] + self.c_puct * prior[a].item() * math.sqrt(self.Ns[s]) / (1 + self.Nsa[(s, a)])
                else:
                    u = self.c_puct * prior[a].item() * math.sqrt(self.Ns[s] + 1e-8)
                if u > best_u:
                    best, best_u = a, u
        a = best
        next_board, _ = self.game.next_state(board, 1, a)
        next_board = self.game.canonical(next_board, -1)
        v = self.search(next_board)
        if (s, a) in self.Qsa:
            self.Qsa[(s, a)] = (self.Nsa[(s, a)] * self.Qsa[(s, a)] + v) / (self.Nsa[(s, a)] + 1)
            self.Nsa[(s, a)] += 1
        else:
            self.Qsa[(s, a)] = v
            self.Nsa[(s, a)] = 1
        self.Ns[s] += 1
        return -v


def symmetries(board, pi):
    """The 8 symmetries of a board and its policy (rotations, then left-right flips)."""
    out = []
    b = torch.as_tensor(board)
    p = pi.view(3, 3)
    for k in range(4):
        rb, rp = torch.rot90(b, k, dims=(0, 1)), torch.rot90(p, k, dims=(0, 1))
        out.append((rb, rp.reshape(-1)))
        out.append((torch.flip(rb, dims=[1]), torch.flip(rp, dims=[1]).reshape(-1)))
    return out


def self_play(game, net, temp_threshold=4):
    mcts = MCTS(game, net)
    board, player, step, examples = game.initial(), 1, 0, []
    while True:
        step += 1
        canonical = game.canonical(board, player)
        temp = 1.0 if step < temp_threshold else 0
        pi = mcts.action_probs(canonical, temp=temp)
        for b, p in symmetries(canonical, pi):
            examples.append([b, p, player])
        action = Categorical(probs=pi).sample().item()
        board, player = game.next_state(board, player, action)
        r = game.winner(board)
        if r != 0:
            return [(b, p, r * (1 if pl == player else -1) * -1) for b, p, pl in examples], r


torch.manual_seed(0)
np.random.seed(0)
torch.set_printoptions(precision=4, sci_mode=False)
game = TicTacToe()
net = PolicyValueNet()
print(net.policy_head)
print("parameters", sum(p.numel() for p in net.parameters()))
board = game.initial()
board[0, 0], board[1, 1] = 1, -1
planes = PolicyValueNet.encode(board[None])
print("planes", planes.shape, planes[0, 2])
pi, v = net.predict(board)
print("prior sums to one", abs(pi.sum().item() - 1) < 1e-5, "value in range", -1 <= v <= 1)
d = Dirichlet(torch.full((4,), 0.3))
print(d, d.batch_shape, d.event_shape)
print("dirichlet sample sums to one", abs(d.sample().sum().item() - 1) < 1e-5)
print("dirichlet log_prob", d.log_prob(torch.tensor([0.1, 0.2, 0.3, 0.4])))
print("dirichlet mean", d.mean, "entropy", d.entropy())
c = Categorical(probs=torch.tensor([0.0, 0.5, 0.25, 0.25]))
print(c, "entropy", c.entropy(), "log_prob", c.log_prob(torch.tensor([1, 3])))
print("syms", len(symmetries(board, torch.arange(9.0))), symmetries(board, torch.arange(9.0))[2][1])
print("rot90", torch.rot90(torch.arange(9).view(3, 3), 1, [0, 1]))

optimizer = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-4)
for it in range(2):
    examples, results = [], []
    for g in range(2):
        ex, r = self_play(game, net)
        examples += ex
        results.append(r)
    print(f"iteration {it} examples {len(examples)} results {len(results)}")
    boards = torch.stack([b for b, _, _ in examples])
    target_pis = torch.stack([p for _, p, _ in examples])
    target_vs = torch.tensor([z for _, _, z in examples], dtype=torch.float32)
    net.train()
    for epoch in range(4):
        perm = torch.randperm(len(examples))
        total = 0.0
        for start in range(0, len(examples), 32):
            idx = perm[start:start + 32]
            log_pi, v = net(PolicyValueNet.encode(boards[idx]))
            l_pi = -torch.sum(target_pis[idx] * log_pi) / target_pis[idx].size()[0]
            l_v = F.mse_loss(v.view(-1), target_vs[idx])
            loss = l_pi + l_v
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"  epoch {epoch} loss {total:.4f}")
