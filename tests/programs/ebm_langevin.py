"""An energy-based model trained with short-run Langevin dynamics and a replay buffer (in
the style of the "Implicit Generation and Generalization with EBMs" / JEM / UvA DL tutorial
code): spectral_norm'd layers from torch.nn.utils, Swish activations, samples refined by
torch.autograd.grad of the energy with respect to the inputs, noise by torch.randn_like,
clamp_ into the data range, a replay buffer reinitialised 5% of the time, contrastive
divergence plus an L2 regulariser on the energies, Adam with betas=(0.0, 0.999)."""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import spectral_norm


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class EnergyNet(nn.Module):
    def __init__(self, in_dim=2, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            spectral_norm(nn.Linear(in_dim, hidden)), Swish(),
            spectral_norm(nn.Linear(hidden, hidden)), Swish(),
            spectral_norm(nn.Linear(hidden, 1)),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)  # -E(x): higher is more likely


class Sampler:
    def __init__(self, model, sample_size, max_len=256):
        self.model = model
        self.sample_size = sample_size
        self.max_len = max_len
        self.examples = [(torch.rand((1, 2)) * 2 - 1) for _ in range(self.sample_size)]

    def sample_new_exmps(self, steps=20, step_size=0.05):
        n_new = np.random.binomial(self.sample_size, 0.05)
        rand_imgs = torch.rand((n_new, 2)) * 2 - 1
        old_imgs = torch.cat(random.choices(self.examples, k=self.sample_size - n_new), dim=0)
        inp_imgs = torch.cat([rand_imgs, old_imgs], dim=0).detach()
        inp_imgs = Sampler.generate_samples(self.model, inp_imgs, steps=steps, step_size=step_size)
        self.examples = list(inp_imgs.chunk(self.sample_size, dim=0)) + self.examples
        self.examples = self.examples[:self.max_len]
        return inp_imgs

    @staticmethod
    def generate_samples(model, inp_imgs, steps=60, step_size=10, return_img_per_step=False):
        is_training = model.training
        model.eval()
        for p in model.parameters():
            p.requires_grad = False
        inp_imgs.requires_grad = True
        had_gradients_enabled = torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        noise = torch.randn(inp_imgs.shape, device=inp_imgs.device)
        imgs_per_step = []
        for _ in range(steps):
            noise.normal_(0, 0.005)
            inp_imgs.data.add_(noise.data)
            inp_imgs.data.clamp_(min=-1.0, max=1.0)
            out_imgs = -model(inp_imgs)
            out_imgs.sum().backward()
            inp_imgs.grad.data.clamp_(-0.03, 0.03)
            inp_imgs.data.add_(-step_size * inp_imgs.grad.data)
            inp_imgs.grad.detach_()
            inp_imgs.grad.zero_()
            inp_imgs.data.clamp_(min=-1.0, max=1.0)
            if return_img_per_step:
                imgs_per_step.append(inp_imgs.clone().detach())
        for p in model.parameters():
            p.requires_grad = True
        model.train(is_training)
        torch.set_grad_enabled(had_gradients_enabled)
        if return_img_per_step:
            return torch.stack(imgs_per_step, dim=0)
        return inp_imgs


def langevin_autograd(model, x, n_steps=10, step_size=0.01, noise_scale=0.005):
    """The JEM-style loop: torch.autograd.grad of the summed energy wrt the inputs."""
    x_k = x.clone().requires_grad_(True)
    for _ in range(n_steps):
        f_prime = torch.autograd.grad(model(x_k).sum(), [x_k], retain_graph=True)[0]
        x_k.data += step_size * f_prime + noise_scale * torch.randn_like(x_k)
    return x_k.detach()


def make_data(n):
    """Two Gaussian blobs in [-1, 1]^2."""
    centers = torch.tensor([[-0.5, -0.5], [0.5, 0.5]])
    idx = torch.randint(0, 2, (n,))
    return (centers[idx] + 0.1 * torch.randn(n, 2)).clamp(-1, 1)


def main():
    torch.manual_seed(42)
    random.seed(42)
    np.random.seed(42)
    model = EnergyNet()
    print(model)
    lin = model.net[0]
    print("parametrized names", sorted(n for n, _ in lin.named_parameters()))
    print("buffers", sorted(n for n, _ in lin.named_buffers()))
    print("weight_u", lin.weight_u.shape, "weight_v", lin.weight_v.shape)
    sigma = torch.linalg.matrix_norm(lin.weight_orig.detach(), ord=2)
    with torch.no_grad():
        lin.eval()
        w = lin.weight
        lin.train()
    print("largest singular value of W/sigma", round(torch.linalg.matrix_norm(w, ord=2).item(), 2))
    print("sigma > 0", sigma.item() > 0)

    x = torch.zeros(4, 2, requires_grad=True)
    (g,) = torch.autograd.grad(model(x).sum(), x, create_graph=False)
    print("input grad", g.shape, g.requires_grad, x.grad)
    h = model.net[:2](x[:1])  # features of one input: their Jacobian, a row per feature
    (jac,) = torch.autograd.grad(h, x, torch.eye(64).view(64, 1, 64), is_grads_batched=True)
    print("jacobian", jac.shape, "row norm > 0", bool(jac[:, 0].norm(dim=-1).max() > 0))

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.0, 0.999))
    sampler = Sampler(model, sample_size=32, max_len=256)
    alpha = 0.1
    data = make_data(256)
    for step in range(25):
        real_imgs = data[(step * 32) % 256:(step * 32) % 256 + 32]
        small_noise = torch.randn_like(real_imgs) * 0.005
        real_imgs.add_(small_noise).clamp_(min=-1.0, max=1.0)
        fake_imgs = sampler.sample_new_exmps(steps=10, step_size=0.1)
        inp_imgs = torch.cat([real_imgs, fake_imgs], dim=0)
        real_out, fake_out = model(inp_imgs).chunk(2, dim=0)
        reg_loss = alpha * (real_out ** 2 + fake_out ** 2).mean()
        cdiv_loss = fake_out.mean() - real_out.mean()
        loss = reg_loss + cdiv_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 5 == 4:
            print(f"step {step:2d} loss {loss.item():.4f} cdiv {cdiv_loss.item():.4f} "
                  f"reg {reg_loss.item():.4f}")

    print("buffer", len(sampler.examples), sampler.examples[0].shape)
    model.eval()
    start = torch.rand(64, 2) * 2 - 1
    per_step = Sampler.generate_samples(model, start.clone(), steps=30, step_size=0.1,
                                        return_img_per_step=True)
    print("per step", per_step.shape, "within range", bool(per_step.abs().max() <= 1.0))
    refined = langevin_autograd(model, start, n_steps=20, step_size=0.05)
    with torch.no_grad():
        e_start, e_end = model(start).mean().item(), model(refined).mean().item()
        real_e, noise_e = model(make_data(64)).mean(), model(torch.rand(64, 2) * 2 - 1).mean()
    print(f"langevin raises -E: {e_end > e_start}")
    print(f"data scores above noise: {bool(real_e > noise_e)}")
    print("grad enabled after sampling", torch.is_grad_enabled(),
          all(p.requires_grad for p in model.parameters()))
    state = model.state_dict()
    print("state_dict keys", list(state)[:4])


if __name__ == "__main__":
    main()
