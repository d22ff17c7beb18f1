"""A TorchFunctionMode that counts the torch functions a model calls (PyTorch docs,
torch.overrides.TorchFunctionMode), and one that logs them while a nested mode runs."""
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode, resolve_name


class OpCounter(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.counts[func.__name__] += 1
        return func(*args, **kwargs)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


torch.manual_seed(0)
model = Net()
x = torch.randn(5, 4)
target = torch.tensor([0, 2, 1, 1, 0])

with OpCounter() as counter:
    logits = model(x)
    loss = F.cross_entropy(logits, target)
    probs = torch.softmax(logits + torch.zeros(5, 3), dim=1)
    top = probs.argmax(dim=1)
for name, n in sorted(counter.counts.items()):
    print(f"{name:>16}: {n}")
print(f"loss {loss.item():.4f}", top.tolist())


class Doubler(TorchFunctionMode):
    """Replaces every torch.add with torch.mul."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.add:
            return torch.mul(*args, **kwargs)
        return func(*args, **kwargs)


a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
with OpCounter() as outer:
    with Doubler():
        r = torch.add(a, b)
print("replaced:", r.tolist(), dict(outer.counts))
print("after:", torch.add(a, b).tolist())
print("names:", resolve_name(torch.add), resolve_name(F.relu))
