"""Differentiable simulation and rendering in plain torch, optimised by Adam to a
target: (1) a renderer-lite that splats soft discs on a pixel grid from
torch.meshgrid(indexing="ij") and recovers a sprite's pose (rotation, scale,
translation) by warping it with F.affine_grid / F.grid_sample(align_corners=False) to
match a target image; (2) a mass-spring chain integrated with semi-implicit Euler
(after the DiffTaichi mass_spring example) whose initial velocities are optimised so the
chain's tip lands on a goal, gradients flowing back through every time step.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def render_discs(centers, radii, colors, size=32, sharpness=40.0):
    """Soft discs over a [-1, 1]^2 canvas: (3, size, size)."""
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, size), torch.linspace(-1, 1, size),
                            indexing="ij")
    grid = torch.stack([xs, ys], -1)                               # (H, W, 2)
    d = (grid[None] - centers[:, None, None, :]).norm(dim=-1)      # (K, H, W)
    alpha = torch.sigmoid(sharpness * (radii[:, None, None] - d))  # (K, H, W)
    image = (alpha[:, None] * colors[:, :, None, None]).sum(0)
    return image.clamp(0, 1)


class PoseModel(nn.Module):
    """A sprite warped by a similarity transform."""
    def __init__(self):
        super().__init__()
        self.angle = nn.Parameter(torch.tensor(0.0))
        self.log_scale = nn.Parameter(torch.tensor(0.0))
        self.shift = nn.Parameter(torch.zeros(2))

    def theta(self):
        c, s = torch.cos(self.angle), torch.sin(self.angle)
        scale = self.log_scale.exp()
        row0 = torch.stack([c * scale, -s * scale, self.shift[0]])
        row1 = torch.stack([s * scale, c * scale, self.shift[1]])
        return torch.stack([row0, row1]).unsqueeze(0)             # (1, 2, 3)

    def forward(self, sprite):
        grid = F.affine_grid(self.theta(), sprite.size(), align_corners=False)
        return F.grid_sample(sprite, grid, mode='bilinear', padding_mode='zeros',
                             align_corners=False)


def fit_pose(args):
    sprite = render_discs(torch.tensor([[0.0, 0.0], [0.35, 0.1], [-0.2, -0.3]]),
                          torch.tensor([0.3, 0.15, 0.12]),
                          torch.tensor([[1., 0.2, 0.2], [0.2, 1., 0.2], [0.2, 0.2, 1.]]))
    sprite = sprite.unsqueeze(0)                                   # (1, 3, H, W)
    with torch.no_grad():
        true_pose = PoseModel()
        true_pose.angle.fill_(0.5)
        true_pose.log_scale.fill_(math.log(0.8))
        true_pose.shift.copy_(torch.tensor([0.15, -0.1]))
        target = true_pose(sprite)
    print('sprite', sprite.shape, 'target', target.shape, f'target mean {target.mean().item():.4f}')
    print('theta*', true_pose.theta())

    model = PoseModel()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for step in range(args.steps):
        optimizer.zero_grad()
        rendered = model(sprite)
        loss = F.mse_loss(rendered, target)
        loss.backward()
        optimizer.step()
        if step % 20 == 0 or step == args.steps - 1:
            print('step {:3d} image loss {:.6f} angle {:.4f} scale {:.4f} shift {}'.format(
                step, loss.item(), model.angle.item(), model.log_scale.exp().item(),
                [round(v, 3) for v in model.shift.tolist()]))
    return model


def make_chain(n):
    x = torch.stack([torch.linspace(0.1, 0.1 + 0.05 * (n - 1), n), torch.full((n,), 0.5)], 1)
    springs = torch.stack([torch.arange(n - 1), torch.arange(1, n)], 1)
    rest = (x[springs[:, 0]] - x[springs[:, 1]]).norm(dim=1)
    return x, springs, rest


def simulate(x0, v0, springs, rest, steps, dt=0.01, stiffness=300.0, damping=2.0,
             gravity=-4.9):
    x, v = x0, v0
    a, b = springs[:, 0], springs[:, 1]
    for _ in range(steps):
        d = x[a] - x[b]
        length = d.norm(dim=1, keepdim=True)
        force_ab = -stiffness * (length - rest.unsqueeze(1)) * d / length
        f = torch.zeros_like(x).index_add(0, a, force_ab).index_add(0, b, -force_ab)
        f = f + torch.tensor([0.0, gravity])
        v = v * math.exp(-dt * damping) + dt * f
        v = torch.cat([torch.zeros(1, 2), v[1:]])  # the first mass is pinned
        x = x + dt * v
    return x


def fit_throw(args):
    x0, springs, rest = make_chain(6)
    goal = torch.tensor([0.45, 0.62])
    v0 = torch.zeros_like(x0, requires_grad=True)
    optimizer = torch.optim.Adam([v0], lr=args.spring_lr)
    for it in range(args.spring_iters):
        optimizer.zero_grad()
        x = simulate(x0, v0, springs, rest, args.sim_steps)
        loss = (x[-1] - goal).pow(2).sum()
        loss.backward()
        optimizer.step()
        if it % 5 == 0 or it == args.spring_iters - 1:
            print(f'iter {it:2d} tip {x[-1].detach().numpy().round(3)} dist to goal '
                  f'{loss.sqrt().item():.5f} |grad v0| {v0.grad.norm():.4f}')


def main():
    parser = argparse.ArgumentParser(description='differentiable rendering and simulation')
    parser.add_argument('--steps', type=int, default=81)
    parser.add_argument('--lr', type=float, default=0.05)
    parser.add_argument('--spring-iters', type=int, default=21)
    parser.add_argument('--sim-steps', type=int, default=30)
    parser.add_argument('--spring-lr', type=float, default=0.5)
    args = parser.parse_args()
    torch.manual_seed(0)
    fit_pose(args)
    fit_throw(args)


if __name__ == '__main__':
    main()
