"""Mixed-precision training on the CPU as in the "Automatic Mixed Precision" recipe and
the gradient-accumulation / activation-checkpointing idioms of large-model training
scripts: torch.autocast(device_type="cpu", dtype=torch.bfloat16), a GradScaler (disabled
on the CPU, as the recipe's `enabled=use_amp`), gradient accumulation over micro-batches,
and torch.utils.checkpoint.checkpoint(..., use_reentrant=False) around each block."""
import argparse
import time

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument('--epochs', type=int, default=4)
parser.add_argument('--accum-steps', type=int, default=4)
parser.add_argument('--micro-batch', type=int, default=16)
parser.add_argument('--lr', type=float, default=2e-3)
parser.add_argument('--no-checkpoint', action='store_true')
args = parser.parse_args()

torch.manual_seed(0)
device = 'cuda' if torch.cuda.is_available() else 'cpu'
amp_dtype = torch.float16 if device == 'cuda' else torch.bfloat16
use_scaler = device == 'cuda'


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class MLP(nn.Module):
    def __init__(self, in_dim=32, dim=64, depth=3, out_dim=1, use_checkpoint=True):
        super().__init__()
        self.inp = nn.Linear(in_dim, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, out_dim)
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        x = self.inp(x)
        for blk in self.blocks:
            if self.use_checkpoint and self.training:
                x = checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return self.head(x)


gen = torch.Generator().manual_seed(5)
X = torch.randn(1024, 32, generator=gen)
true_w = 0.25 * torch.randn(32, 1, generator=gen)
Y = torch.sin(X @ true_w) + 0.1 * torch.randn(1024, 1, generator=gen)
train_loader = DataLoader(TensorDataset(X[:768], Y[:768]), batch_size=args.micro_batch, shuffle=True)
val_x, val_y = X[768:], Y[768:]

model = MLP(use_checkpoint=not args.no_checkpoint).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
scaler = torch.amp.GradScaler(device, enabled=use_scaler)
legacy_scaler = torch.cuda.amp.GradScaler(enabled=False)
print(f'scaler enabled: {scaler.is_enabled()}, legacy enabled: {legacy_scaler.is_enabled()}, '
      f'scale {scaler.get_scale()}')
criterion = nn.MSELoss()

with torch.autocast(device_type=device, dtype=amp_dtype):
    probe = model.inp(X[:2])
    print(f'autocast linear output dtype: {probe.dtype}, '
          f'autocast enabled: {torch.is_autocast_enabled(device)}')
print(f'outside autocast: {model.inp(X[:2]).dtype}')

start = time.perf_counter()
for epoch in range(args.epochs):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    running = 0.0
    for i, (xb, yb) in enumerate(train_loader):
        xb, yb = xb.to(device), yb.to(device)
        with torch.autocast(device_type=device, dtype=amp_dtype):
            output = model(xb)
            loss = criterion(output.float(), yb)
            loss = loss / args.accum_steps
        scaler.scale(loss).backward()
        running += loss.item()
        if (i + 1) % args.accum_steps == 0:
            scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            step = (i + 1) // args.accum_steps
            if step % 4 == 1:
                print(f'epoch {epoch} step {step:2d} loss {running:.4f} grad norm {norm.item():.3f}')
            running = 0.0
    model.eval()
    with torch.no_grad(), torch.autocast(device_type=device, dtype=amp_dtype):
        pred = model(val_x.to(device))
        val_loss = criterion(pred.float(), val_y.to(device))
    print(f'epoch {epoch}: val loss {val_loss.item():.4f} (output dtype {pred.dtype})')

w = model.head.weight
print(f'weights stay {w.dtype}, grads were {type(w.grad)}')
print(f'finished in {time.perf_counter() - start:.1f}s')
