"""`torch._dynamo.exc`: the errors programs catch around `torch.compile`."""

from ember.jit.backends import InvalidBackend

__all__ = ["InvalidBackend"]
