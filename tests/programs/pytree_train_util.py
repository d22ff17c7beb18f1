"""A small training utility built on torch.utils._pytree: nested batches moved and cast
with tree_map_only, an exponential moving average of the parameters kept as a pytree, and
a flattened checkpoint of the optimizer state."""
import collections

import torch
import torch.nn as nn
from torch.utils._pytree import (tree_flatten, tree_leaves, tree_map, tree_map_only,
                                 tree_structure, tree_unflatten)

Batch = collections.namedtuple("Batch", ["inputs", "target"])


def to_device(batch, device, dtype=torch.float32):
    return tree_map_only(torch.Tensor, lambda t: t.to(device=device, dtype=dtype)
                         if t.is_floating_point() else t.to(device), batch)


def make_batches(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        x = torch.randn(16, 3, generator=g, dtype=torch.float64)
        extra = {"scale": torch.rand(16, 1, generator=g, dtype=torch.float64), "ids": torch.arange(16)}
        y = x.sum(dim=1, keepdim=True) * 0.5
        yield Batch(inputs={"x": x, "extra": extra}, target=(y,))


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
ema = tree_map(lambda p: p.detach().clone(), dict(model.named_parameters()))

first = to_device(next(make_batches(1)), "cpu")
leaves, spec = tree_flatten(first)
print(spec)
print([tuple(t.shape) for t in leaves], [str(t.dtype) for t in leaves])
print(tree_structure(ema))

for step, batch in enumerate(make_batches(20)):
    batch = to_device(batch, "cpu")
    feats = torch.cat([batch.inputs["x"], batch.inputs["extra"]["scale"]], dim=1)
    loss = nn.functional.mse_loss(model(feats), batch.target[0])
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema = tree_map(lambda e, p: e * 0.9 + p.detach() * 0.1, ema, dict(model.named_parameters()))
    if step % 10 == 0:
        print(f"step {step:2d} loss {loss.item():.5f}")

norms = tree_map(lambda t: round(t.norm().item(), 4), ema)
print("ema keys:", list(norms))
state_leaves, state_spec = tree_flatten(opt.state_dict())
print("optimizer state leaves:", len(state_leaves), state_spec.num_leaves)
rebuilt = tree_unflatten(state_leaves, state_spec)
print("rebuilt equal:", rebuilt["param_groups"][0]["lr"], list(rebuilt["state"]) == list(opt.state_dict()["state"]))
print("tensor leaves:", sum(isinstance(v, torch.Tensor) for v in tree_leaves(rebuilt)))
