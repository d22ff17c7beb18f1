"""A Tensor subclass that logs every torch function called on it (PyTorch docs,
"Extending torch Python API": subclassing torch.Tensor), through a small model's forward
and backward pass."""
import logging
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")


class LoggingTensor(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # NOTE: Logging calls Tensor.__repr__, so we can't log __repr__ without infinite recursion
        if func is not torch.Tensor.__repr__:
            logging.info(f"func: {func.__name__}, types: {[t.__name__ for t in types]}")
        if kwargs is None:
            kwargs = {}
        return super().__torch_function__(func, types, args, kwargs)


torch.manual_seed(0)
x = torch.tensor([[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]]).as_subclass(LoggingTensor)
print(type(x).__name__, x.shape)
y = x * 2 + 1
print(type(y).__name__, y)
z = torch.relu(y).sum(dim=1)
print("z:", z)
print("mean:", F.softmax(x, dim=-1).mean().item())

w = torch.tensor([[0.1, 0.2, 0.3], [-0.3, 0.2, 0.1]], requires_grad=True)
out = F.linear(x, w)
print("out:", type(out).__name__, out.shape)
loss = out.pow(2).mean()
print(f"loss: {loss.item():.4f}")
loss.backward()
print("w.grad:", w.grad)

with torch._C.DisableTorchFunctionSubclass():
    plain = x + 1
print("disabled:", type(plain).__name__)
print("clone:", type(x.clone()).__name__, "detach:", type(x.detach()).__name__,
      "to:", type(x.to(torch.float64)).__name__)
values, indices = torch.max(x, dim=1)
print("max:", type(values).__name__, type(indices).__name__, indices.tolist())
p = nn.Parameter(torch.ones(2))
print(type(p * 2).__name__, p)
