"""A DDPM toy in the style of the diffusion tutorials: learn to denoise 2-D points from a
mixture of Gaussians with an MLP conditioned on sinusoidal timestep embeddings, then sample
with the reverse process under torch.no_grad()."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser(description='DDPM on 2-D points')
parser.add_argument('--timesteps', type=int, default=50)
parser.add_argument('--epochs', type=int, default=150)
parser.add_argument('--batch-size', type=int, default=128)
parser.add_argument('--lr', type=float, default=2e-3)
parser.add_argument('--seed', type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_moons(n):
    centers = torch.tensor([[-1.0, -1.0], [1.0, 1.0], [-1.0, 1.0], [1.0, -1.0]])
    idx = torch.randint(0, 4, (n,))
    return centers[idx] + 0.1 * torch.randn(n, 2)


class SinusoidalPositionEmbeddings(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, time):
        half_dim = self.dim // 2
        embeddings = math.log(10000) / (half_dim - 1)
        embeddings = torch.exp(torch.arange(half_dim, device=time.device) * -embeddings)
        embeddings = time[:, None] * embeddings[None, :]
        embeddings = torch.cat((embeddings.sin(), embeddings.cos()), dim=-1)
        return embeddings


class Denoiser(nn.Module):
    def __init__(self, hidden=64, time_dim=16):
        super().__init__()
        self.time_mlp = nn.Sequential(
            SinusoidalPositionEmbeddings(time_dim),
            nn.Linear(time_dim, hidden),
            nn.GELU(),
        )
        self.inp = nn.Linear(2, hidden)
        self.net = nn.Sequential(
            nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 2))

    def forward(self, x, t):
        return self.net(self.inp(x) + self.time_mlp(t))


T = args.timesteps
betas = torch.linspace(1e-4, 0.2, T)
alphas = 1. - betas
alphas_cumprod = torch.cumprod(alphas, dim=0)
alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
sqrt_recip_alphas = torch.sqrt(1.0 / alphas)
sqrt_alphas_cumprod = torch.sqrt(alphas_cumprod)
sqrt_one_minus_alphas_cumprod = torch.sqrt(1. - alphas_cumprod)
posterior_variance = betas * (1. - alphas_cumprod_prev) / (1. - alphas_cumprod)
print(f"betas: {betas[0]:.4f} ... {betas[-1]:.4f}, alpha_bar_T = {alphas_cumprod[-1].item():.6f}")


def extract(a, t, x_shape):
    batch_size = t.shape[0]
    out = a.gather(-1, t.cpu())
    return out.reshape(batch_size, *((1,) * (len(x_shape) - 1))).to(t.device)


def q_sample(x_start, t, noise=None):
    if noise is None:
        noise = torch.randn_like(x_start)
    sqrt_alphas_cumprod_t = extract(sqrt_alphas_cumprod, t, x_start.shape)
    sqrt_one_minus_alphas_cumprod_t = extract(sqrt_one_minus_alphas_cumprod, t, x_start.shape)
    return sqrt_alphas_cumprod_t * x_start + sqrt_one_minus_alphas_cumprod_t * noise


def p_losses(denoise_model, x_start, t, loss_type="l2"):
    noise = torch.randn_like(x_start)
    x_noisy = q_sample(x_start=x_start, t=t, noise=noise)
    predicted_noise = denoise_model(x_noisy, t)
    if loss_type == 'l1':
        loss = F.l1_loss(noise, predicted_noise)
    elif loss_type == 'l2':
        loss = F.mse_loss(noise, predicted_noise)
    elif loss_type == "huber":
        loss = F.smooth_l1_loss(noise, predicted_noise)
    else:
        raise NotImplementedError()
    return loss


@torch.no_grad()
def p_sample(model, x, t, t_index):
    betas_t = extract(betas, t, x.shape)
    sqrt_one_minus_alphas_cumprod_t = extract(sqrt_one_minus_alphas_cumprod, t, x.shape)
    sqrt_recip_alphas_t = extract(sqrt_recip_alphas, t, x.shape)
    model_mean = sqrt_recip_alphas_t * (
        x - betas_t * model(x, t) / sqrt_one_minus_alphas_cumprod_t)
    if t_index == 0:
        return model_mean
    posterior_variance_t = extract(posterior_variance, t, x.shape)
    noise = torch.randn_like(x)
    return model_mean + torch.sqrt(posterior_variance_t) * noise


@torch.no_grad()
def p_sample_loop(model, shape):
    b = shape[0]
    img = torch.randn(shape, device=device)
    for i in reversed(range(0, T)):
        img = p_sample(model, img, torch.full((b,), i, device=device, dtype=torch.long), i)
    return img


data = make_moons(1024).to(device)
model = Denoiser().to(device)
print(model)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

for epoch in range(args.epochs):
    model.train()
    perm = torch.randperm(data.size(0))[:args.batch_size]
    batch = data[perm]
    t = torch.randint(0, T, (batch.shape[0],), device=device).long()
    optimizer.zero_grad()
    loss = p_losses(model, batch, t, loss_type="huber")
    loss.backward()
    optimizer.step()
    scheduler.step()
    if epoch % 50 == 0 or epoch == args.epochs - 1:
        print(f"epoch {epoch:4d} | lr {scheduler.get_last_lr()[0]:.5f} | loss {loss.item():.4f}")

model.eval()
samples = p_sample_loop(model, (512, 2))
print("samples", tuple(samples.shape), samples.dtype)
# how many samples landed near one of the four modes
centers = torch.tensor([[-1.0, -1.0], [1.0, 1.0], [-1.0, 1.0], [1.0, -1.0]])
dist = torch.cdist(samples, centers).min(dim=1).values
print(f"fraction near a mode: {(dist < 0.5).float().mean().item():.3f}")
