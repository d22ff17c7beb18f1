"""The errors ember.distributed raises, with PyTorch's names and bases."""

from __future__ import annotations


class DistError(RuntimeError):
    """Base of the errors of ember.distributed (torch.distributed.DistError)."""

    __module__ = "ember.distributed"  # how tracebacks name it


class DistBackendError(DistError):
    """A collective or point-to-point operation failed: a peer rank raised, died, or did
    not respond within the process group's timeout. The message names the rank(s)."""

    __module__ = "ember.distributed"


NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")
"""PyTorch's message (a ValueError) for a call that needs the default group before it
exists."""
