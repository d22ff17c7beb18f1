"""A linear-Gaussian state-space model in plain torch, batched over series: a
constant-velocity tracker whose Kalman filter (predict / update with
torch.linalg.solve for the gain, `@` and `.mT` for the covariance algebra) gives the
exact log-likelihood of the observations as a sum of innovation terms, each
torch.distributions.MultivariateNormal(0, scale_tril=torch.linalg.cholesky(S)).log_prob.
The process and measurement noise scales are fitted by maximum likelihood with Adam
through the whole filter (autograd), then a Rauch-Tung-Striebel smoother runs on the
fitted model.
"""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal


def simulate(rng, batch, steps, dt, q, r):
    """Positions in 2-D with white-acceleration dynamics, observed with noise."""
    F = np.array([[1, 0, dt, 0], [0, 1, 0, dt], [0, 0, 1, 0], [0, 0, 0, 1]])
    G = np.array([[dt ** 2 / 2, 0], [0, dt ** 2 / 2], [dt, 0], [0, dt]])
    x = np.zeros((batch, 4))
    x[:, 2:] = rng.randn(batch, 2)
    states, obs = [], []
    for _ in range(steps):
        x = x @ F.T + (rng.randn(batch, 2) * q) @ G.T
        states.append(x)
        obs.append(x[:, :2] + rng.randn(batch, 2) * r)
    return (torch.tensor(np.stack(states, 1), dtype=torch.float32),
            torch.tensor(np.stack(obs, 1), dtype=torch.float32))


class KalmanFilter(nn.Module):
    def __init__(self, dt=0.1, init_q=1.0, init_r=1.0):
        super().__init__()
        self.register_buffer('F', torch.tensor([[1., 0., dt, 0.], [0., 1., 0., dt],
                                                [0., 0., 1., 0.], [0., 0., 0., 1.]]))
        self.register_buffer('H', torch.eye(2, 4))
        G = torch.tensor([[dt ** 2 / 2, 0.], [0., dt ** 2 / 2], [dt, 0.], [0., dt]])
        self.register_buffer('GGt', G @ G.mT)
        self.log_q = nn.Parameter(torch.tensor(math.log(init_q)))
        self.log_r = nn.Parameter(torch.tensor(math.log(init_r)))

    @property
    def Q(self):
        return self.log_q.exp().pow(2) * self.GGt

    @property
    def R(self):
        return self.log_r.exp().pow(2) * torch.eye(2)

    def forward(self, y):
        """Filter the (batch, steps, 2) observations: the filtered means and covariances
        and the total log-likelihood of each series."""
        batch, steps, _ = y.shape
        m = torch.zeros(batch, 4)
        P = torch.eye(4).expand(batch, 4, 4) * 10.0
        Q, R, F, H = self.Q, self.R, self.F, self.H
        loglik = torch.zeros(batch)
        means, covs, preds = [], [], []
        for t in range(steps):
            # predict
            m = m @ F.mT
            P = F @ P @ F.mT + Q
            preds.append((m, P))
            # update
            S = H @ P @ H.mT + R                          # (batch, 2, 2)
            innovation = y[:, t] - m @ H.mT
            K = torch.linalg.solve(S, H @ P).mT           # P H^T S^-1, S symmetric
            m = m + (K @ innovation.unsqueeze(-1)).squeeze(-1)
            I_KH = torch.eye(4) - K @ H
            P = I_KH @ P @ I_KH.mT + K @ R @ K.mT         # Joseph form
            L = torch.linalg.cholesky(S)
            loglik = loglik + MultivariateNormal(torch.zeros(2), scale_tril=L).log_prob(innovation)
            means.append(m)
            covs.append(P)
        return torch.stack(means, 1), torch.stack(covs, 1), preds, loglik

    def smooth(self, means, covs, preds):
        """Rauch-Tung-Striebel: the smoothed means, backwards from the last step."""
        steps = means.size(1)
        ms = means[:, -1]
        Ps = covs[:, -1]
        out = [ms]
        for t in range(steps - 2, -1, -1):
            m_pred, P_pred = preds[t + 1]
            C = torch.linalg.solve(P_pred, self.F @ covs[:, t]).mT  # P_t F^T P_pred^-1
            ms = means[:, t] + (C @ (ms - m_pred).unsqueeze(-1)).squeeze(-1)
            Ps = covs[:, t] + C @ (Ps - P_pred) @ C.mT
            out.append(ms)
        return torch.stack(out[::-1], 1)


def main():
    parser = argparse.ArgumentParser(description='Kalman filter MLE')
    parser.add_argument('--batch', type=int, default=8)
    parser.add_argument('--steps', type=int, default=25)
    parser.add_argument('--iters', type=int, default=20)
    parser.add_argument('--lr', type=float, default=0.15)
    args = parser.parse_args()
    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    true_q, true_r = 2.0, 0.3
    states, y = simulate(rng, args.batch, args.steps, 0.1, true_q, true_r)
    print('observations', y.shape, y.dtype)

    kf = KalmanFilter(init_q=0.5, init_r=1.5)
    print(kf)
    print('parameters', [(name, p.shape) for name, p in kf.named_parameters()])
    optimizer = torch.optim.Adam(kf.parameters(), lr=args.lr)
    for it in range(args.iters):
        optimizer.zero_grad()
        _, _, _, loglik = kf(y)
        loss = -loglik.sum() / (args.batch * args.steps)
        loss.backward()
        optimizer.step()
        if it % 4 == 0 or it == args.iters - 1:
            print(f'iter {it:3d} nll/step {loss.item():.4f} q {kf.log_q.exp().item():.4f} '
                  f'r {kf.log_r.exp().item():.4f} grad {kf.log_q.grad.item():+.4f}')

    with torch.no_grad():
        means, covs, preds, loglik = kf(y)
        smoothed = kf.smooth(means, covs, preds)
    rmse = lambda est: (est[..., :2] - states[..., :2]).pow(2).mean().sqrt().item()
    print('position rmse: observed {:.4f} filtered {:.4f} smoothed {:.4f}'.format(
        rmse(y), rmse(means), rmse(smoothed)))
    print('final covariance is symmetric:', torch.allclose(covs[:, -1], covs[:, -1].mT, atol=1e-6))
    eig = torch.linalg.eigvalsh(covs[:, -1])
    print('and positive definite:', bool((eig > 0).all()))
    print('per-series loglik', loglik.shape, f'{loglik.mean().item():.3f}')


if __name__ == '__main__':
    main()
