"""Extending torch with a Tensor-like type (PyTorch docs, "Extending torch Python API"):
ScalarTensor, a diagonal matrix stored as one value, overrides torch.mean and torch.add
through __torch_function__ and a HANDLED_FUNCTIONS table."""
import functools

import torch

HANDLED_FUNCTIONS = {}


class ScalarTensor(object):
    def __init__(self, N, value):
        self._N = N
        self._value = value

    def __repr__(self):
        return "ScalarTensor(N={}, value={})".format(self._N, self._value)

    def tensor(self):
        return self._value * torch.eye(self._N)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func not in HANDLED_FUNCTIONS or not all(
            issubclass(t, (torch.Tensor, ScalarTensor))
            for t in types
        ):
            return NotImplemented
        return HANDLED_FUNCTIONS[func](*args, **kwargs)


def implements(torch_function):
    """Register a torch function override for ScalarTensor"""
    def decorator(func):
        functools.update_wrapper(func, torch_function)
        HANDLED_FUNCTIONS[torch_function] = func
        return func
    return decorator


@implements(torch.mean)
def mean(input):
    return float(input._value) / input._N


def ensure_tensor(data):
    if isinstance(data, ScalarTensor):
        return data.tensor()
    return torch.as_tensor(data)


@implements(torch.add)
def add(input, other):
    try:
        if input._N == other._N:
            return ScalarTensor(input._N, input._value + other._value)
        else:
            raise ValueError("Shape mismatch!")
    except AttributeError:
        return torch.add(ensure_tensor(input), ensure_tensor(other))


d = ScalarTensor(5, 2)
print(d)
print(d.tensor())
print("mean:", torch.mean(d))
print("add:", torch.add(d, d))
print("add tensor:", torch.add(d, torch.ones(5, 5)))
print("add reversed:", torch.add(torch.ones(5, 5), d))
try:
    torch.add(d, ScalarTensor(3, 1))
except ValueError as e:
    print("ValueError:", e)
try:
    torch.mul(d, 2)
except TypeError as e:
    print("TypeError:", str(e).splitlines()[0])
print("is_tensor_like:", torch.overrides.is_tensor_like(d), torch.overrides.is_tensor_like(2))
print("has_torch_function:", torch.overrides.has_torch_function((d,)),
      torch.overrides.has_torch_function((torch.ones(1),)))
print("handled:", sorted(f.__name__ for f in HANDLED_FUNCTIONS))
