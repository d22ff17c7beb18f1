"""`torch.distributed.tensor.placement_types`: how a distributed tensor's dims lie on a
device mesh's dims. ember has no DTensor (see `ember.distributed.tensor`); the placements
are plain values, with PyTorch's fields, printed forms and shard arithmetic, for the
libraries that name them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Placement", "Shard", "Replicate", "Partial"]


class Placement:
    """The base of the placements."""

    def is_shard(self, dim: int | None = None) -> bool:
        return False

    def is_replicate(self) -> bool:
        return False

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return False


@dataclass(frozen=True)
class Shard(Placement):
    """The tensor split along `dim` over a mesh dim, in contiguous chunks (as
    ``torch.chunk``)."""

    dim: int

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim

    @staticmethod
    def local_shard_size_and_offset(curr_local_size: int, num_chunks: int,
                                    rank: int) -> tuple[int, int]:
        """The size and offset of `rank`'s chunk of `curr_local_size` elements split in
        `num_chunks` (``torch.chunk``'s sizes: the last chunks may be short or empty)."""
        chunk = -(-curr_local_size // num_chunks)
        offset = min(chunk * rank, curr_local_size)
        return max(0, min(curr_local_size, offset + chunk) - offset), offset

    def __repr__(self) -> str:
        return f"Shard(dim={self.dim})"

    def __str__(self) -> str:
        return f"S({self.dim})"


@dataclass(frozen=True)
class _StridedShard(Shard):
    """A shard of a shard: `dim` split in `split_factor` strided pieces first."""

    split_factor: int = 1

    def __repr__(self) -> str:
        return f"_StridedShard(dim={self.dim}, sf={self.split_factor})"

    def __str__(self) -> str:
        return f"_S({self.dim}, {self.split_factor})"


@dataclass(frozen=True)
class Replicate(Placement):
    """A whole copy of the tensor on every device of the mesh dim."""

    def is_replicate(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "Replicate()"

    def __str__(self) -> str:
        return "R"


@dataclass(frozen=True)
class Partial(Placement):
    """Partial values on each device, whose `reduce_op` over the mesh dim is the tensor."""

    reduce_op: str = "sum"

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return reduce_op is None or reduce_op == self.reduce_op

    def __repr__(self) -> str:
        return f"Partial({self.reduce_op})"

    def __str__(self) -> str:
        return f"P({self.reduce_op})"
