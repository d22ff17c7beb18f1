"""Training-loop utility idioms from real projects: activation checkpointing with
torch.utils.checkpoint.checkpoint(use_reentrant=False) and checkpoint_sequential, the
OneCycleLR / SequentialLR / ReduceLROnPlateau schedulers (get_last_lr() printed),
WeightedRandomSampler for class imbalance, random_split with a generator, ConcatDataset,
Subset, an IterableDataset sharded with get_worker_info(), torch.autocast('cpu',
dtype=torch.bfloat16), gradient accumulation, model.apply(init_fn),
parameters_to_vector / vector_to_parameters, and a state-dict round trip through io.BytesIO
with torch.save / torch.load(weights_only=True)."""
import io
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential
from torch.utils.data import (ConcatDataset, DataLoader, IterableDataset, Subset, TensorDataset,
                              WeightedRandomSampler, get_worker_info, random_split)

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, dim=16, depth=3, classes=3, grad_checkpointing=True):
        super().__init__()
        self.stem = nn.Linear(8, dim)
        self.blocks = nn.Sequential(*[Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, classes)
        self.grad_checkpointing = grad_checkpointing

    def forward(self, x):
        x = self.stem(x)
        if self.grad_checkpointing and self.training:
            for blk in self.blocks:
                x = checkpoint(blk, x, use_reentrant=False)
        else:
            x = self.blocks(x)
        return self.head(x)


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.trunc_normal_(m.weight, std=0.02)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.LayerNorm):
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)


class ShardedStream(IterableDataset):
    def __init__(self, start, end):
        super().__init__()
        assert end > start
        self.start, self.end = start, end

    def __iter__(self):
        worker_info = get_worker_info()
        if worker_info is None:  # single-process data loading, return the full iterator
            iter_start, iter_end = self.start, self.end
        else:  # in a worker process: split workload
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            worker_id = worker_info.id
            iter_start = self.start + worker_id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        return iter(range(iter_start, iter_end))


# --- data -----------------------------------------------------------------------------
X = torch.randn(120, 8)
y = (X[:, 0] > 0.8).long() + (X[:, 1] > 1.0).long()
full = TensorDataset(X, y)
train_set, val_set = random_split(full, [0.75, 0.25], generator=torch.Generator().manual_seed(42))
print("split", len(train_set), len(val_set), train_set.indices[:5])
a, b, c = random_split(range(10), [3, 3, 4], generator=torch.Generator().manual_seed(1))
print("split range", list(a), list(b), list(c))
extra = Subset(full, list(range(0, 20, 2)))
combined = ConcatDataset([train_set, extra])
print("concat", len(combined), combined.cumulative_sizes, type(combined[95][0]).__name__)
print("stream", list(DataLoader(ShardedStream(3, 7), num_workers=0)))
print("stream batched", [t.tolist() for t in DataLoader(ShardedStream(0, 10), batch_size=4)])

labels = torch.stack([combined[i][1] for i in range(len(combined))])
class_count = torch.bincount(labels)
print("class counts", class_count.tolist())
sample_weights = (1.0 / class_count.float())[labels]
sampler = WeightedRandomSampler(sample_weights, num_samples=len(sample_weights), replacement=True,
                                generator=torch.Generator().manual_seed(0))
print("sampler", len(sampler), list(sampler)[:8])
loader = DataLoader(combined, batch_size=16, sampler=sampler)
val_loader = DataLoader(val_set, batch_size=32)

# --- model ----------------------------------------------------------------------------
model = Net()
model.apply(init_weights)
print(model)
vec = nn.utils.parameters_to_vector(model.parameters())
print("num params", vec.numel(), sum(p.numel() for p in model.parameters()))
seq = nn.Sequential(*[Block(16) for _ in range(4)])
inp = torch.randn(5, 16, requires_grad=True)
out = checkpoint_sequential(seq, 2, inp, use_reentrant=False)
out.sum().backward()
ref_inp = inp.detach().clone().requires_grad_()
seq(ref_inp).sum().backward()
print("checkpoint_sequential", out.shape, torch.allclose(inp.grad, ref_inp.grad, atol=1e-6))

# --- OneCycleLR with gradient accumulation ----------------------------------------------
epochs, accum = 4, 2
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
steps_per_epoch = math.ceil(len(loader) / accum)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, epochs=epochs,
                                                steps_per_epoch=steps_per_epoch)
print("onecycle start", scheduler.get_last_lr(), optimizer.param_groups[0]["betas"])
criterion = nn.CrossEntropyLoss()
for epoch in range(epochs):
    model.train()
    total = 0.0
    optimizer.zero_grad(set_to_none=True)
    for i, (xb, yb) in enumerate(loader):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(xb)
            loss = criterion(logits, yb)
        if epoch == 0 and i == 0:
            print("autocast dtypes", logits.dtype, loss.dtype)
        (loss / accum).backward()
        total += loss.item()
        if (i + 1) % accum == 0 or i + 1 == len(loader):
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for xb, yb in val_loader:
            correct += (model(xb).argmax(1) == yb).sum().item()
    print(f"epoch {epoch} loss {total / len(loader):.4f} val_acc {correct / len(val_set):.3f} "
          f"lr {scheduler.get_last_lr()[0]:.6f}")

# --- SequentialLR (warmup then cosine) and ReduceLROnPlateau ----------------------------
opt = torch.optim.SGD([nn.Parameter(torch.zeros(2))], lr=0.1, momentum=0.9)
warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5, eta_min=0.001)
sched = torch.optim.lr_scheduler.SequentialLR(opt, schedulers=[warm, cos], milestones=[3])
lrs = []
for _ in range(8):
    opt.step()
    sched.step()
    lrs.append(round(sched.get_last_lr()[0], 6))
print("sequential", lrs)
opt = torch.optim.Adam([nn.Parameter(torch.zeros(2))], lr=0.01)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
for metric in [1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.6, 0.7, 0.8]:
    plateau.step(metric)
    print("plateau", metric, plateau.get_last_lr(), plateau.num_bad_epochs)

# --- parameters_to_vector / vector_to_parameters and a BytesIO checkpoint ----------------
vec = nn.utils.parameters_to_vector(model.parameters())
clone = Net()
nn.utils.vector_to_parameters(vec.detach().clone(), clone.parameters())
clone.eval()
model.eval()
xb = X[:4]
print("vector roundtrip", torch.equal(model(xb), clone(xb)))
buffer = io.BytesIO()
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "epoch": epochs}, buffer)
buffer.seek(0)
ckpt = torch.load(buffer, weights_only=True)
print("checkpoint keys", sorted(ckpt), ckpt["epoch"], list(ckpt["model"])[:3])
print("optimizer state keys", sorted(ckpt["optimizer"]), sorted(ckpt["optimizer"]["state"][0]))
restored = Net()
print(restored.load_state_dict(ckpt["model"]))
restored.eval()
print("reloaded model agrees:", torch.equal(restored(xb), model(xb)))
opt2 = torch.optim.AdamW(restored.parameters(), lr=1e-3, weight_decay=0.05)
opt2.load_state_dict(ckpt["optimizer"])
print("restored lr", opt2.param_groups[0]["lr"], opt2.param_groups[0]["initial_lr"],
      opt2.state[restored.stem.weight]["step"])
