"""`ReduceOp`: the reductions of all_reduce, reduce and reduce_scatter, with PyTorch's
names (`ReduceOp.SUM` prints as `<RedOpType.SUM: 0>`, as in torch)."""

from __future__ import annotations

import enum


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __str__(self) -> str:
        return f"RedOpType.{self.name}"


class ReduceOp:
    """The reduction of a collective: `ReduceOp.SUM`, `AVG`, `PRODUCT`, `MIN`, `MAX`, and
    the bitwise `BAND`, `BOR`, `BXOR` (integer and bool tensors)."""

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR


def as_red_op(op: object, where: str) -> RedOpType:
    """`op` as a RedOpType, or a ValueError naming the call."""
    if isinstance(op, RedOpType):
        return op
    if isinstance(op, str) and op.upper() in RedOpType.__members__:
        return RedOpType[op.upper()]
    raise ValueError(f"{where}: op must be an ember.distributed.ReduceOp, got {op!r}")


def supports_complex(reduce_op: RedOpType) -> bool:
    """Whether a reduction can take complex tensors (not MAX, MIN, PRODUCT nor the bitwise
    ones)."""
    return reduce_op not in (RedOpType.MAX, RedOpType.MIN, RedOpType.PRODUCT, RedOpType.BAND,
                             RedOpType.BOR, RedOpType.BXOR)
