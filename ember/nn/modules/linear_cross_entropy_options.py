"""`LinearCrossEntropyOptions`: PyTorch's configuration of its chunked
`linear_cross_entropy`. ember computes that loss in one piece (the chunking only lowers
PyTorch's peak memory, not the result), so the options are validated as PyTorch validates
them and otherwise accepted."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import ember

_ACC_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Configuration for the chunked implementation of :func:`linear_cross_entropy`
    (`batch_chunk_size` rows per chunk, or a `chunking_method` of "auto",
    "aspect_ratio" or "aspect_ratio:N"; an `acc_policy` and `acc_dtype` for its
    accumulation). Pass an instance as ``options=`` to opt in."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: Any = None

    def __post_init__(self) -> None:
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        supported = (ember.float16, ember.bfloat16, ember.float32, ember.float64)
        if self.acc_dtype is not None and self.acc_dtype not in supported:
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, "
                             f"torch.bfloat16, torch.float32, torch.float64}}, got "
                             f"{self.acc_dtype!r}. Pass acc_dtype=None to let the op pick "
                             "automatically.")
