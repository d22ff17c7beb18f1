"""A hand-written training loop on lightning's Fabric: setup of model and optimizer,
dataloaders, fabric.backward, gradient clipping, all_reduce/broadcast in one process,
save and load of a checkpoint dict."""
import os
import sys

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

root = sys.argv[1] if len(sys.argv) > 1 else "."
fabric = L.Fabric(accelerator="cpu", devices=1, precision="32-true")
fabric.launch()
fabric.seed_everything(3)
model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
model, optimizer = fabric.setup(model, optimizer)
x = torch.randn(80, 6)
y = (x[:, :3].argmax(1))
loader = fabric.setup_dataloaders(DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True))
for epoch in range(3):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        fabric.backward(loss)
        fabric.clip_gradients(model, optimizer, max_norm=1.0)
        optimizer.step()
        total += loss.item()
    mean = fabric.all_reduce(torch.tensor(total / len(loader)), reduce_op="mean")
    fabric.print(f"epoch {epoch} loss {mean.item():.4f}")
print("broadcast", fabric.broadcast(7), fabric.world_size, fabric.global_rank, fabric.device)
path = os.path.join(root, "fabric.ckpt")
fabric.save(path, {"model": model, "optimizer": optimizer, "epoch": 3})
state = {"model": model, "optimizer": optimizer}
rest = fabric.load(path, state)
print("loaded", rest)
print(type(model).__name__, type(optimizer).__name__)
