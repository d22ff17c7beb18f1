"""`ember.func` (PyTorch's torch.func): `functional_call`, calling a module with given
parameters and buffers (ember.nn.utils.stateless holds it)."""

from ember.nn.utils.stateless import functional_call

__all__ = ["functional_call"]
