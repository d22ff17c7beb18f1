"""The torch.func per-sample-gradients tutorial, with a model-ensembling step: a small
CNN, the per-sample gradient computed by a loop of .backward() calls and by
vmap(grad(...)) over torch.func.functional_call, checked to agree, then used for a DP-SGD
style update (per-sample clipping + noise) that trains the model."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

parser = argparse.ArgumentParser()
parser.add_argument('--steps', type=int, default=30)
parser.add_argument('--batch-size', type=int, default=16)
parser.add_argument('--max-grad-norm', type=float, default=1.0)
parser.add_argument('--noise-multiplier', type=float, default=0.1)
args = parser.parse_args()

torch.manual_seed(0)
device = 'cuda' if torch.cuda.is_available() else 'cpu'


class SimpleCNN(nn.Module):
    def __init__(self):
        super(SimpleCNN, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


# a synthetic 12x12 "digits" set: each class has its own template
templates = torch.randn(10, 1, 12, 12)
def make_batch(n):
    targets = torch.randint(10, (n,), device=device)
    data = templates[targets] + 0.5 * torch.randn(n, 1, 12, 12)
    return data.to(device), targets


model = SimpleCNN().to(device=device)
print(model)
data, targets = make_batch(args.batch_size)


def compute_grad(sample, target):
    sample = sample.unsqueeze(0)  # prepend batch dimension for processing
    target = target.unsqueeze(0)
    prediction = model(sample)
    loss = loss_fn(prediction, target)
    return torch.autograd.grad(loss, list(model.parameters()))


def compute_sample_grads(data, targets):
    """ manually process each sample with per sample gradient """
    sample_grads = [compute_grad(data[i], targets[i]) for i in range(args.batch_size)]
    sample_grads = zip(*sample_grads)
    sample_grads = [torch.stack(shards) for shards in sample_grads]
    return sample_grads


per_sample_grads = compute_sample_grads(data, targets)
print(per_sample_grads[1].shape)

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,))
    loss = loss_fn(predictions, targets)
    return loss


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

for per_sample_grad, ft_per_sample_grad in zip(per_sample_grads, ft_per_sample_grads.values()):
    assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
print("vmap(grad) agrees with the loop:", len(ft_per_sample_grads), "parameters")
print({k: tuple(v.shape) for k, v in ft_per_sample_grads.items()})

# DP-SGD: clip every sample's gradient, add noise, average, step
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(args.steps):
    data, targets = make_batch(args.batch_size)
    params = {k: v.detach() for k, v in model.named_parameters()}
    sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
    norms = torch.stack([g.flatten(1).norm(dim=1) for g in sample_grads.values()], 1).norm(dim=1)
    factor = (args.max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
    for name, p in model.named_parameters():
        g = sample_grads[name] * factor.view(-1, *([1] * (sample_grads[name].dim() - 1)))
        noise = torch.randn_like(p) * args.noise_multiplier * args.max_grad_norm
        p.grad = (g.sum(0) + noise) / args.batch_size
    optimizer.step()
    if step % 10 == 0 or step == args.steps - 1:
        with torch.no_grad():
            loss = loss_fn(model(data), targets)
        print(f"step {step:2d} loss {loss.item():.4f} mean clipped norm {(norms * factor).mean():.3f}")
