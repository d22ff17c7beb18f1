"""`torch._dynamo.exc`: the errors programs catch around `torch.compile` and
`torch.export`."""

from ember.jit.backends import InvalidBackend

__all__ = ["InvalidBackend", "UserError"]


class UserError(RuntimeError):
    """A call `torch.export` (or `torch.compile`) refuses for how it was made."""
