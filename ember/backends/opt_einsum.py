"""`ember.backends.opt_einsum`, as `torch.backends.opt_einsum`: ember's einsum contracts
left to right without the opt_einsum package, so it reports the package as absent."""

from __future__ import annotations

from typing import Any

enabled = False
strategy = None


def is_available() -> bool:
    """False: ember's einsum does not use the opt_einsum package."""
    return False


def get_opt_einsum() -> Any:
    """None: the opt_einsum package is not used."""
    return None
