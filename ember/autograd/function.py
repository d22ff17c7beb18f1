"""PyTorch's module path of custom autograd functions
(`from torch.autograd.function import Function`)."""

from ember.core.function import Function, FunctionCtx  # noqa: F401
