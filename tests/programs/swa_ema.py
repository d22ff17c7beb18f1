"""Weight averaging as in the "Stochastic Weight Averaging in PyTorch" blog post and the
torch.optim.swa_utils docs: AveragedModel, SWALR after a CosineAnnealingLR phase,
update_bn to recompute BatchNorm statistics for the averaged weights; plus a hand-written
exponential moving average of the weights (timm's ModelEmaV2 / the DDPM training loop
idiom) with torch._foreach_mul_/_foreach_add_ and p.lerp_."""
import argparse
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument('--epochs', type=int, default=8)
parser.add_argument('--swa-start', type=int, default=5)
parser.add_argument('--lr', type=float, default=0.05)
parser.add_argument('--swa-lr', type=float, default=0.02)
parser.add_argument('--ema-decay', type=float, default=0.9)
args = parser.parse_args()

torch.manual_seed(0)
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.bn1 = nn.BatchNorm1d(64)
        self.fc2 = nn.Linear(64, 64)
        self.bn2 = nn.BatchNorm1d(64)
        self.fc3 = nn.Linear(64, 4)

    def forward(self, x):
        x = F.relu(self.bn1(self.fc1(x)))
        x = F.relu(self.bn2(self.fc2(x)))
        return self.fc3(x)


class ModelEma(nn.Module):
    """EMA of the parameters and buffers of a model, updated in place."""

    def __init__(self, model, decay=0.999):
        super().__init__()
        self.module = copy.deepcopy(model)
        self.module.eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        ema_params = [p for p in self.module.parameters()]
        model_params = [p.detach() for p in model.parameters()]
        torch._foreach_mul_(ema_params, self.decay)
        torch._foreach_add_(ema_params, model_params, alpha=1.0 - self.decay)
        for ema_b, b in zip(self.module.buffers(), model.buffers()):
            if ema_b.dtype.is_floating_point:
                ema_b.lerp_(b, 1.0 - self.decay)
            else:
                ema_b.copy_(b)


def make_data(n, gen):
    x = torch.randn(n, 20, generator=gen)
    y = (x @ teacher + 0.1 * torch.randn(n, 4, generator=gen)).argmax(dim=1)
    return TensorDataset(x * 3 + 1, y)


gen = torch.Generator().manual_seed(3)
teacher = torch.randn(20, 4, generator=gen)
loader = DataLoader(make_data(512, gen), batch_size=32, shuffle=True)
test_loader = DataLoader(make_data(256, gen), batch_size=128)

model = Net().to(device)
swa_model = AveragedModel(model)
ema = ModelEma(model, decay=args.ema_decay)
print(swa_model)
print(f'n_averaged: {swa_model.n_averaged}')

optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.swa_start)
swa_scheduler = SWALR(optimizer, swa_lr=args.swa_lr, anneal_epochs=2, anneal_strategy='cos')
loss_fn = nn.CrossEntropyLoss()


def evaluate(net):
    net.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for x, y in test_loader:
            out = net(x.to(device))
            loss += loss_fn(out, y.to(device)).item() * x.size(0)
            correct += (out.argmax(1) == y).sum().item()
    n = len(test_loader.dataset)
    return loss / n, 100.0 * correct / n


for epoch in range(args.epochs):
    model.train()
    total = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        ema.update(model)
        total += loss.item()
    if epoch >= args.swa_start:
        swa_model.update_parameters(model)
        swa_scheduler.step()
    else:
        scheduler.step()
    lr = optimizer.param_groups[0]['lr']
    test_loss, acc = evaluate(model)
    print(f'epoch {epoch}: train loss {total / len(loader):.4f} test loss {test_loss:.4f} '
          f'acc {acc:.2f}% lr {lr:.4f}')

# the averaged weights need BatchNorm statistics of their own
update_bn(loader, swa_model, device=device)
print(f'n_averaged: {swa_model.n_averaged}')
swa_loss, swa_acc = evaluate(swa_model)
ema_loss, ema_acc = evaluate(ema.module)
print(f'SWA test loss {swa_loss:.4f} acc {swa_acc:.2f}%')
print(f'EMA test loss {ema_loss:.4f} acc {ema_acc:.2f}%')
print(sorted(swa_model.state_dict().keys())[:4])
print(swa_model.module.bn1.momentum, swa_model.module.bn1.num_batches_tracked)
