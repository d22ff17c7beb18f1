"""`ember.nn.attention.flex_attention` (torch.nn.attention.flex_attention): attention whose
scores a user function modifies (`score_mod`) and whose pattern a mask function and its
`BlockMask` restrict (`mask_mod`).

PyTorch runs flex_attention outside `torch.compile` through its unfused reference path
(`math_attention`), and ember runs that path too: the whole score matrix in float32
(float64 for float64 queries), `score_mod` and `mask_mod` applied to it, a safe softmax
(rows masked out entirely give 0, their logsumexp -inf), then the product with `value`.
PyTorch calls the mods through `vmap` over the batch, head, query and key indices; ember
calls them once, with index tensors that broadcast (`b` of shape (B, 1, 1, 1), `h` of
(1, H, 1, 1), `q_idx` of (1, 1, L, 1), `kv_idx` of (1, 1, 1, S), all int64), which gives
the same values for the elementwise functions the mods are (`_vmap_for_bhqkv`, which
attention-gym's helpers import, maps them so). Being made of ember's tensor
ops, the result is differentiable, tensors the mods capture (a learnable bias table)
included. Like PyTorch's reference path, the output ignores the block tables of the
`BlockMask` (only its `mask_mod` decides); the tables (`kv_num_blocks`, `kv_indices` ...)
are built exactly as PyTorch builds them (int32, same order), for printing and for
programs that read them.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import operator
import typing
import warnings
from collections.abc import Callable
from enum import Enum
from typing import Any, Literal, NamedTuple, TypedDict

import ember
from ember import Tensor
from ember.nn.functional import _repeat_heads, _safe_softmax

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions",
           "create_block_mask", "create_mask", "or_masks", "and_masks", "noop_mask"]

# Set it True to skip the one-time advice to compile (PyTorch's debugging switch; ember's
# eager path is the same either way).
_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = False

_WARNINGS_SHOWN: set[str] = set()

_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
_Backend = Literal["AUTO", "TRITON", "FLASH", "TRITON_DECODE"]

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30


def _warn_once(warning_id: str, message: str, category: type[Warning] = UserWarning) -> None:
    """Each of these warnings is shown once per process, as PyTorch's are."""
    if warning_id not in _WARNINGS_SHOWN:
        warnings.warn(message, category, stacklevel=2)
        _WARNINGS_SHOWN.add(warning_id)


class FlexKernelOptions(TypedDict, total=False):
    """Options of PyTorch's Triton kernels (accepted and validated; ember's reference path
    has no tiles to tune)."""

    BACKEND: _Backend
    PRESCALE_QK: bool
    ROWS_GUARANTEED_SAFE: bool
    BLOCKS_ARE_CONTIGUOUS: bool
    WRITE_DQ: bool
    FORCE_USE_FLEX_ATTENTION: bool


class AuxRequest(NamedTuple):
    """Request which auxiliary outputs to compute from flex_attention."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """Auxiliary outputs from flex_attention (None where not requested)."""

    lse: Tensor | None = None
    max_scores: Tensor | None = None


class _ModificationType(Enum):
    SCORE_MOD = 1
    MASK_MOD = 2
    UNKNOWN = 3


def _get_mod_type(fn: Callable[..., Any]) -> _ModificationType:
    """A score_mod has 5 positional arguments, a mask_mod 4 (PyTorch's rule)."""
    if hasattr(fn, "__code__"):
        num_positional_args = fn.__code__.co_argcount - len(getattr(fn, "__defaults__", None)
                                                             or ())
    else:
        num_positional_args = sum(1 for p in inspect.signature(fn).parameters.values()
                                  if p.default is inspect.Parameter.empty)
    if num_positional_args not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {num_positional_args}")
    return _ModificationType.SCORE_MOD if num_positional_args == 5 else \
        _ModificationType.MASK_MOD


def _vmap_for_bhqkv(fn: Callable[..., Any], prefix: tuple[int | None, ...],
                    suffix: tuple[int | None, ...] = (), out_dims: int | list = 0,
                    group_dim: bool = False) -> Callable[..., Any]:
    """`fn` mapped over the batch, head, query and key/value indices, as PyTorch's nested
    `vmap`s map it: the returned function takes the mapped arguments whole (a prefix such
    as the (B, H, M, N) scores, marked 0), the four 1-D index tensors (the head one 2-D,
    (Hkv, G), with `group_dim`) and the unmapped ones (marked None), and returns the
    (B, H, [G,] M, N) result. ember calls `fn` once on index tensors laid along their own
    dimensions, which broadcast to the same values for an elementwise `fn`."""
    if out_dims != 0:
        raise NotImplementedError("ember maps score_mod/mask_mod with out_dims=0 only")

    def mapped(*args: Any) -> Any:
        head = len(prefix)
        b, h, m, n = args[head:head + 4]
        heads = tuple(h.shape) if group_dim else (h.shape[0],)
        grid = (b.shape[0], *heads, m.shape[0], n.shape[0])
        lead = len(grid) - 2
        b = b.reshape(grid[0], *([1] * (len(grid) - 1)))
        h = h.reshape(1, *heads, 1, 1)
        m = m.reshape(*([1] * lead), grid[-2], 1)
        n = n.reshape(*([1] * (len(grid) - 1)), grid[-1])
        out = fn(*args[:head], b, h, m, n, *args[head + 4:])
        return out.expand(grid)

    return mapped


def _identity(score: Tensor, batch: Tensor, head: Tensor, token_q: Tensor,
              token_kv: Tensor) -> Tensor:
    return score


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """Returns a noop mask_mod"""
    return batch.new_ones(size=(), dtype=ember.bool, device=batch.device)


def _sliced_mask_mod_error(batch: Tensor, head: Tensor, token_q: Tensor,
                           token_kv: Tensor) -> typing.NoReturn:
    """The mask_mod of a sliced BlockMask: raises PyTorch's explanation."""
    raise RuntimeError(
        "Cannot use mask_mod from a sliced BlockMask. "
        "When you slice a BlockMask using [], the mask_mod attribute is reset. "
        "You must set it from the original BlockMask's mask_mod."
        "\n\nIncorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(sliced_mask.mask_mod, offset)  # WRONG!"
        "\n\nCorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(base_mask.mask_mod, offset)  # Use base_mask!")


def or_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """Returns a mask_mod that's the union of provided mask_mods"""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = b.new_zeros((), dtype=ember.bool)
        for mask in mask_mods:
            result = result | mask(b, h, q_idx, kv_idx)
        return result

    return or_mask


def and_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """Returns a mask_mod that's the intersection of provided mask_mods"""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = b.new_ones((), dtype=ember.bool)
        for mask in mask_mods:
            result = result & mask(b, h, q_idx, kv_idx)
        return result

    return and_mask


# -- the block tables -------------------------------------------------------------------


def _ordered_to_dense(num_blocks_in_row: Tensor, col_indices: Tensor, num_cols: int) -> Tensor:
    """The 0/1 int32 block picture of (num_blocks, indices): the first num_blocks indices
    of each row are marked; the rest are written to a spare column that is cut off."""
    device = col_indices.device
    col_range = ember.arange(col_indices.shape[-1], dtype=ember.int32, device=device)
    valid = ember.where(col_range < num_blocks_in_row.unsqueeze(-1), col_indices, num_cols)
    dense = ember.zeros(*col_indices.shape[:-1], num_cols + 1, dtype=ember.int32,
                        device=device)
    dense.scatter_(-1, valid.long(), 1)
    return dense[..., :num_cols].contiguous()


def _dense_to_ordered(dense_mask: Tensor) -> tuple[Tensor, Tensor]:
    """(number of marked blocks, their indices first in ascending order then the others),
    both int32, as PyTorch orders them (a stable descending argsort)."""
    dense_mask = dense_mask.to(dtype=ember.int32)
    num_blocks_in_row = dense_mask.sum(dim=-1)
    col_indices = ember.argsort(dense_mask, dim=-1, descending=True, stable=True)
    return (num_blocks_in_row.to(ember.int32).contiguous(),
            col_indices.to(ember.int32).contiguous())


def _transpose_ordered(num_blocks_in_row: Tensor, col_indices: Tensor) -> tuple[Tensor, Tensor]:
    dense = _ordered_to_dense(num_blocks_in_row, col_indices, col_indices.shape[-1])
    return _dense_to_ordered(dense.transpose(-2, -1))


def _adjust_num_blocks_and_indices(num_blocks: Tensor, indices: Tensor, new_num_rows: int,
                                   new_num_cols: int) -> tuple[Tensor, Tensor]:
    indices = indices[:, :, :new_num_rows, :new_num_cols]
    num_blocks = num_blocks[:, :, :new_num_rows]
    num_blocks = ember.where(num_blocks < new_num_cols, num_blocks, new_num_cols)
    num_blocks = ember.sum(indices < num_blocks[:, :, :, None], dim=-1).to(ember.int32)
    return num_blocks, indices


class BlockMask:
    r"""PyTorch's block-sparse attention mask: for each row of query blocks, the key/value
    blocks it attends to, partially (``kv_num_blocks``, ``kv_indices``) or fully
    (``full_kv_num_blocks``, ``full_kv_indices``), their transposes for the backward pass
    (``q_num_blocks``, ``q_indices``, ``full_q_*``), the ``BLOCK_SIZE`` (query, key/value),
    the ``seq_lengths`` and the element-wise ``mask_mod``."""

    _TENSOR_ATTRS = ["kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                     "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices",
                     "dq_write_order", "dq_write_order_full", "dq_kv_order"]

    def __init__(self, seq_lengths: tuple[int, int], kv_num_blocks: Tensor,
                 kv_indices: Tensor, full_kv_num_blocks: Tensor | None,
                 full_kv_indices: Tensor | None, q_num_blocks: Tensor | None,
                 q_indices: Tensor | None, full_q_num_blocks: Tensor | None,
                 full_q_indices: Tensor | None,
                 BLOCK_SIZE: tuple[int, int] = (_DEFAULT_SPARSE_BLOCK_SIZE,
                                                _DEFAULT_SPARSE_BLOCK_SIZE),
                 mask_mod: _mask_mod_signature = noop_mask, *,
                 dq_write_order: Tensor | None = None,
                 dq_write_order_full: Tensor | None = None,
                 dq_kv_order: Tensor | None = None,
                 dq_kv_order_spt: bool | None = None) -> None:
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        if (full_q_num_blocks is None) != (full_q_indices is None):
            raise AssertionError(
                "full_q_num_blocks and full_q_indices must be both provided or omitted")
        if dq_write_order_full is not None and dq_write_order is None:
            raise ValueError("dq_write_order_full requires dq_write_order")
        self.seq_lengths = seq_lengths
        self.kv_num_blocks = kv_num_blocks
        self.kv_indices = kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.q_num_blocks = q_num_blocks
        self.q_indices = q_indices
        self.full_q_num_blocks = full_q_num_blocks
        self.full_q_indices = full_q_indices
        self.dq_write_order = dq_write_order
        self.dq_write_order_full = dq_write_order_full
        self.dq_kv_order = dq_kv_order
        self.dq_kv_order_spt = dq_kv_order_spt
        self.BLOCK_SIZE = BLOCK_SIZE
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks: Tensor, kv_indices: Tensor,
                       full_kv_num_blocks: Tensor | None = None,
                       full_kv_indices: Tensor | None = None,
                       BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
                       mask_mod: _mask_mod_signature | None = None,
                       seq_lengths: tuple[int, int] | None = None,
                       compute_q_blocks: bool = True, *,
                       dq_write_order: Tensor | None = None,
                       dq_write_order_full: Tensor | None = None,
                       dq_kv_order: Tensor | bool | None = None) -> BlockMask:
        """Creates a BlockMask from the key/value block tables; the query tables are
        their transposes, the sequence lengths the blocks' extent unless given."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        q_num_blocks = q_indices = full_q_num_blocks = full_q_indices = None
        if compute_q_blocks:
            q_num_blocks, q_indices = _transpose_ordered(kv_num_blocks, kv_indices)
            if full_kv_num_blocks is not None:
                full_q_num_blocks, full_q_indices = _transpose_ordered(full_kv_num_blocks,
                                                                       full_kv_indices)
        if isinstance(BLOCK_SIZE, int):
            BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * BLOCK_SIZE[0],
                           kv_indices.shape[-1] * BLOCK_SIZE[1])
        if dq_kv_order is not None and not isinstance(dq_kv_order, (bool, Tensor)):
            raise ValueError("dq_kv_order must be a bool, Tensor, or None")
        return cls(seq_lengths=seq_lengths, kv_num_blocks=kv_num_blocks,
                   kv_indices=kv_indices, full_kv_num_blocks=full_kv_num_blocks,
                   full_kv_indices=full_kv_indices, q_num_blocks=q_num_blocks,
                   q_indices=q_indices, full_q_num_blocks=full_q_num_blocks,
                   full_q_indices=full_q_indices, BLOCK_SIZE=BLOCK_SIZE,
                   mask_mod=mask_mod if mask_mod is not None else noop_mask,
                   dq_write_order=dq_write_order, dq_write_order_full=dq_write_order_full,
                   dq_kv_order=dq_kv_order if isinstance(dq_kv_order, Tensor) else None,
                   dq_kv_order_spt=dq_kv_order if isinstance(dq_kv_order, bool) else None)

    def as_tuple(self, flatten: bool = True) -> tuple[Any, ...]:
        """The attributes as a tuple (BLOCK_SIZE and seq_lengths unpacked if `flatten`)."""
        block_size = tuple(self.BLOCK_SIZE) if flatten else (self.BLOCK_SIZE,)
        seq_lengths = tuple(self.seq_lengths) if flatten else (self.seq_lengths,)
        return (*seq_lengths, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices, self.q_num_blocks, self.q_indices,
                self.full_q_num_blocks, self.full_q_indices, self.dq_write_order,
                self.dq_write_order_full, self.dq_kv_order, self.dq_kv_order_spt,
                *block_size, self.mask_mod)

    @property
    def shape(self) -> tuple[int, ...]:
        *batch_dims, _, _ = self.kv_indices.shape
        return tuple(batch_dims) + tuple(self.seq_lengths)

    def __str__(self) -> str:
        return (f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
                f"{self.to_string().strip()}\n)")

    def __getitem__(self, index: Any) -> BlockMask:
        """A BlockMask of the given batch, head and query-block rows (its mask_mod raises:
        set it from the original's)."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Slicing BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata.")
        index = index if isinstance(index, tuple) else (index,)
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        sizes = self.kv_num_blocks.shape[:3]
        # an int keeps its dimension (a slice of one), as PyTorch's slicing does
        index = tuple((slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1))
                      if isinstance(i, int) else i for i, n in zip(padded, sizes, strict=True))
        full = self.full_kv_num_blocks is not None
        new = BlockMask.from_kv_blocks(
            self.kv_num_blocks[index], self.kv_indices[index],
            self.full_kv_num_blocks[index] if full else None,
            self.full_kv_indices[index] if full else None,
            BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=_sliced_mask_mod_error,
            seq_lengths=self.seq_lengths, compute_q_blocks=self.q_indices is not None)
        new.dq_kv_order_spt = self.dq_kv_order_spt
        return new

    def __repr__(self) -> str:
        def shape_or_none(x: Tensor | None) -> Any:
            return x.shape if x is not None else None

        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return (f"BlockMask(\n"
                f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
                f"    kv_indices={self.kv_indices.shape},\n"
                f"    full_kv_num_blocks={shape_or_none(self.full_kv_num_blocks)},\n"
                f"    full_kv_indices={shape_or_none(self.full_kv_indices)},\n"
                f"    q_num_blocks={shape_or_none(self.q_num_blocks)},\n"
                f"    q_indices={shape_or_none(self.q_indices)},\n"
                f"    full_q_num_blocks={shape_or_none(self.full_q_num_blocks)},\n"
                f"    full_q_indices={shape_or_none(self.full_q_indices)},\n"
                f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
                f"    shape={self.shape},\n"
                f"    sparsity={self.sparsity():.2f}%,\n"
                f"    mask_mod={name}\n"
                f")")

    def _adjust(self, new_q_len: int, new_kv_len: int) -> BlockMask:
        """The mask cropped (or its tables read) for new sequence lengths."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Adjusting BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata.")
        rows = (new_q_len + self.BLOCK_SIZE[0] - 1) // self.BLOCK_SIZE[0]
        cols = (new_kv_len + self.BLOCK_SIZE[1] - 1) // self.BLOCK_SIZE[1]
        kv_num, kv_idx = _adjust_num_blocks_and_indices(self.kv_num_blocks, self.kv_indices,
                                                        rows, cols)
        full_num = full_idx = None
        if self.full_kv_num_blocks is not None:
            full_num, full_idx = _adjust_num_blocks_and_indices(
                self.full_kv_num_blocks, self.full_kv_indices, rows, cols)
        new = self.from_kv_blocks(kv_num, kv_idx, full_num, full_idx,
                                  BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod,
                                  seq_lengths=(new_q_len, new_kv_len),
                                  compute_q_blocks=self.q_indices is not None)
        new.dq_kv_order_spt = self.dq_kv_order_spt
        return new

    def numel(self) -> int:
        """Returns the number of elements (not accounting for sparsity) in the mask."""
        return functools.reduce(operator.mul, self.shape, 1)

    def sparsity(self) -> float:
        """Computes the percentage of blocks that are sparse (i.e. not computed)"""
        computed_blocks = self.kv_num_blocks.sum()
        if self.full_kv_num_blocks is not None:
            computed_blocks += self.full_kv_num_blocks.sum()
        computed_size = computed_blocks.item() * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1]
        return 100 * (1 - computed_size / self.numel())

    def to_dense(self) -> Tensor:
        """Returns a dense block that is equivalent to the block mask."""
        partial = _ordered_to_dense(self.kv_num_blocks, self.kv_indices,
                                    self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            return partial | _ordered_to_dense(self.full_kv_num_blocks, self.full_kv_indices,
                                               self.full_kv_indices.shape[-1])
        return partial

    def to_string(self, grid_size: int | tuple[int, int] = (20, 20), limit: int = 4) -> str:
        """Returns a string representation of the block mask: per batch and head, a grid
        of blocks, "█" where all are computed, "░" where some, " " where none.

        If grid_size is -1, prints out an uncompressed version. Warning, it can be quite
        big!"""
        dense_mask = self.to_dense()
        *batch_dims, num_rows, num_cols = dense_mask.shape
        if isinstance(grid_size, int):
            max_rows = max_cols = grid_size
        else:
            max_rows, max_cols = grid_size
        row_step = max(1, -(-num_rows // max_rows))
        col_step = max(1, -(-num_cols // max_cols))

        def create_block_vis(*batch_idx: int) -> str:
            grid = dense_mask[batch_idx].tolist() if batch_idx else dense_mask.tolist()
            vis = f"{batch_idx}\n"
            for r in range(0, num_rows, row_step):
                for c in range(0, num_cols, col_step):
                    section = [x for row in grid[r:r + row_step] for x in row[c:c + col_step]]
                    char = "█" if all(section) else " " if not any(section) else "░"
                    vis += char * 2
                vis += "\n"
            return vis

        total_vis = []
        for idx, batch_idx in enumerate(itertools.product(*[range(i) for i in batch_dims])):
            if idx == limit:
                total_vis.append("...")
                total_vis.append("To print out more, set BlockMask.to_string(limit=N)")
                total_vis.append("You can also index (BlockMask[batch, head]) to choose a "
                                 "specific batch or head")
                break
            total_vis.append(create_block_vis(*batch_idx))
        return "\n".join(total_vis)

    def to(self, device: Any) -> BlockMask:
        """A new BlockMask with its tensors moved to `device`."""
        moved = {attr: None if getattr(self, attr) is None else getattr(self, attr).to(device)
                 for attr in self._TENSOR_ATTRS}
        return BlockMask(seq_lengths=self.seq_lengths, **moved, BLOCK_SIZE=self.BLOCK_SIZE,
                         mask_mod=self.mask_mod, dq_kv_order_spt=self.dq_kv_order_spt)


def _indices(*sizes: int, device: Any) -> list[Tensor]:
    """The batch, head, query and key/value indices (int64 aranges)."""
    return [ember.arange(0, size, device=device) for size in sizes]


def _default_device() -> Any:
    """PyTorch's default for the masks: the accelerator when there is one (so a mask made
    without `device=` on a GPU machine is on the GPU), else the CPU."""
    return ember.accelerator.current_accelerator() or "cpu"


def create_mask(mod_fn: _score_mod_signature | _mask_mod_signature, B: int | None,
                H: int | None, Q_LEN: int, KV_LEN: int, device: Any = None) -> Tensor:
    r"""This function creates a mask tensor from a mod_fn function.

    Args:
        mod_fn (Union[_score_mod_signature, _mask_mod_signature]): Function to modify
            attention scores.
        B (int): Batch size.
        H (int): Number of query heads.
        Q_LEN (int): Sequence length of query.
        KV_LEN (int): Sequence length of key/value.
        device (str): Device to run the mask creation on.

    Returns:
        mask (Tensor): A mask tensor with shape (B, H, M, N).
    """
    device = _default_device() if device is None else device
    B = 1 if B is None else B
    H = 1 if H is None else H
    b, h, m, n = _indices(B, H, Q_LEN, KV_LEN, device=device)
    if _get_mod_type(mod_fn) == _ModificationType.SCORE_MOD:
        score_mod = _vmap_for_bhqkv(mod_fn, prefix=(0,))
        out = score_mod(ember.zeros(B, H, Q_LEN, KV_LEN, device=device), b, h, m, n)
        return ember.where(ember.isneginf(out), False, True)
    return _vmap_for_bhqkv(mod_fn, prefix=())(b, h, m, n).contiguous()


def _convert_mask_to_block_mask(mask: Tensor, Q_BLOCK_SIZE: int = _DEFAULT_SPARSE_BLOCK_SIZE,
                                KV_BLOCK_SIZE: int = _DEFAULT_SPARSE_BLOCK_SIZE,
                                separate_full_blocks: bool = False
                                ) -> tuple[Tensor, Tensor | None]:
    """The (B, H, Q blocks, KV blocks) int8 pictures of the blocks the mask touches
    partially and, if `separate_full_blocks`, fully (the lengths padded up to whole
    blocks with False)."""
    if mask.dtype is not ember.bool:
        raise AssertionError(f"mask.dtype must be torch.bool, got {mask.dtype}")
    while mask.dim() < 4:
        mask = mask.unsqueeze(0)
    pad_q = -mask.shape[-2] % Q_BLOCK_SIZE
    pad_kv = -mask.shape[-1] % KV_BLOCK_SIZE
    mask = ember.nn.functional.pad(mask, (0, pad_kv, 0, pad_q))
    B, H, Q, KV = mask.shape
    mask = mask.view(B, H, Q // Q_BLOCK_SIZE, Q_BLOCK_SIZE, KV // KV_BLOCK_SIZE, KV_BLOCK_SIZE)
    block_sum = mask.permute(0, 1, 2, 4, 3, 5).sum(dim=[-2, -1])
    if separate_full_blocks:
        full = Q_BLOCK_SIZE * KV_BLOCK_SIZE
        partial_blocks = (block_sum > 0) & (block_sum < full)
        return partial_blocks.to(dtype=ember.int8), (block_sum == full).to(dtype=ember.int8)
    return (block_sum > 0).to(dtype=ember.int8), None


def create_block_mask(mask_mod: _mask_mod_signature, B: int | None, H: int | None,
                      Q_LEN: int, KV_LEN: int, device: Any = None,
                      BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
                      _compile: bool = False, separate_full_blocks: bool = True,
                      compute_dq_write_order: bool = False,
                      dq_kv_order: bool = True) -> BlockMask:
    r"""This function creates a block mask tuple from a mask_mod function.

    Args:
        mask_mod (Callable): mask_mod(b, h, q_idx, kv_idx) -> bool tensor, True where the
            query attends to the key/value.
        B (int): Batch size (None: 1, broadcast).
        H (int): Number of query heads (None: 1, broadcast).
        Q_LEN (int): Sequence length of query.
        KV_LEN (int): Sequence length of key/value.
        device (str): Device to run the mask creation on (default: the accelerator if
            there is one, else the CPU).
        BLOCK_SIZE (int or tuple[int, int]): Block size for the block mask.
        separate_full_blocks (bool): If True, fully unmasked blocks are stored separately.

    Returns:
        BlockMask: A BlockMask object that contains the block mask information.
    """
    if device is None:
        device = _default_device()
    if _get_mod_type(mask_mod) != _ModificationType.MASK_MOD:
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    B = 1 if B is None else B
    H = 1 if H is None else H
    if isinstance(BLOCK_SIZE, int):
        Q_BLOCK_SIZE = KV_BLOCK_SIZE = BLOCK_SIZE
    else:
        Q_BLOCK_SIZE, KV_BLOCK_SIZE = BLOCK_SIZE
    if _compile:
        warnings.warn(
            "_compile flag on create_block_mask was originally added to work around a "
            "torch.compile limitation. That limitation has since been addressed. So, to "
            "compile create_block_mask, we suggest doing torch.compile(create_block_mask). "
            "This still works for now, but will be removed in the future.",
            DeprecationWarning, stacklevel=2)
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")
    if compute_dq_write_order:  # (metadata for PyTorch's deterministic FLASH backward only)
        raise NotImplementedError("create_block_mask(compute_dq_write_order=True) is not "
                                  "supported by ember")
    mask_tensor = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    blocks = _convert_mask_to_block_mask(mask_tensor, Q_BLOCK_SIZE, KV_BLOCK_SIZE,
                                         separate_full_blocks)
    return _create_sparse_block_from_block_mask(blocks, mask_mod, (Q_LEN, KV_LEN),
                                                Q_BLOCK_SIZE, KV_BLOCK_SIZE)


def _create_sparse_block_from_block_mask(block_mask: tuple[Tensor, Tensor | None],
                                         mask_mod: _mask_mod_signature | None,
                                         seq_lengths: tuple[int, int],
                                         Q_BLOCK_SIZE: int = _DEFAULT_SPARSE_BLOCK_SIZE,
                                         KV_BLOCK_SIZE: int = _DEFAULT_SPARSE_BLOCK_SIZE
                                         ) -> BlockMask:
    """The BlockMask of the (partial, full) block pictures of
    `_convert_mask_to_block_mask`."""
    partial, full = block_mask
    kv_num, kv_idx = _dense_to_ordered(partial)
    full_num, full_idx = _dense_to_ordered(full) if full is not None else (None, None)
    return BlockMask.from_kv_blocks(kv_num, kv_idx, full_num, full_idx,
                                    BLOCK_SIZE=(Q_BLOCK_SIZE, KV_BLOCK_SIZE),
                                    mask_mod=mask_mod, seq_lengths=seq_lengths)


def _create_empty_block_mask(query: Tensor, key: Tensor) -> BlockMask:
    """The block mask of no mask: one block covering everything."""
    device = query.device
    return BlockMask.from_kv_blocks(
        kv_num_blocks=ember.ones([1, 1, 1], dtype=ember.int32, device=device),
        kv_indices=ember.zeros([1, 1, 1, 1], dtype=ember.int32, device=device),
        BLOCK_SIZE=_LARGE_SPARSE_BLOCK_SIZE, seq_lengths=(1, 1))


# -- flex_attention ---------------------------------------------------------------------


def _validate_inputs(query: Tensor, key: Tensor, value: Tensor, enable_gqa: bool,
                     block_mask: BlockMask | None) -> None:
    """PyTorch's checks of the inputs, in its order and words."""
    if getattr(query, "is_nested", False) or getattr(key, "is_nested", False) or \
            getattr(value, "is_nested", False):
        raise NotImplementedError(
            "flex_attention does not support NestedTensor inputs, including "
            "torch.compile(flex_attention) with jagged NestedTensor inputs. "
            "Convert inputs to dense tensors before calling flex_attention.")
    if query.device != key.device or query.device != value.device:
        raise ValueError(
            f"Expected query, key, and value to have the same device type, but got "
            f"query.device: {query.device}, key.device: {key.device}, and value.device: "
            f"{value.device} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise ValueError(
            f"Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()}, key.dim: {key.dim()} and value.dim: {value.dim()} "
            f"instead.")
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"Expect query and key/value to have the same embedding dimension but got "
            f"E={query.size(-1)} and E={key.size(-1)}.")
    if query.device.type in ("cpu", "mps") and (
            query.requires_grad or key.requires_grad or value.requires_grad):
        name = "CPU" if query.device.type == "cpu" else "MPS"
        raise NotImplementedError(
            f"FlexAttention does not support backward on {name}. Please set the input "
            f"requires_grad to False or use another device.")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if not enable_gqa and query.size(-3) != key.size(-3):
        raise ValueError(
            f"Expect query and key/value to have the same number of heads but got "
            f"Hq={query.size(-3)} and Hkv={key.size(-3)}. Try setting enable_gqa=True for "
            f"GQA.")
    if enable_gqa and query.size(1) % key.size(1) != 0:
        raise ValueError(
            f"Expect number of query heads to be a multiple of kv heads for GQA but got "
            f"Hq={query.size(1)} and Hkv={key.size(1)}.")
    if query.size(0) != key.size(0):
        if block_mask is None:
            raise ValueError(
                f"Expect query and key/value to have the same batch size, or non-none "
                f"block_mask, but got block_mask=None, Bq={query.size(0)}, and "
                f"Bkv={key.size(0)}.")
        if block_mask.kv_num_blocks.size(0) != query.size(0):
            raise ValueError(
                f"Expect query and key/value to have the same batch size, or block_mask "
                f"and query to have the same batch size, but got Bq={query.size(0)}, "
                f"Bkv={key.size(0)}, B_block_mask={block_mask.kv_num_blocks.size(0)}.")


def _validate_block_mask(block_mask: BlockMask, query: Tensor, key: Tensor) -> None:
    """The mask must have been made for these lengths (PyTorch's words)."""
    if block_mask.mask_mod is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    if tuple(block_mask.BLOCK_SIZE) == (_LARGE_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE):
        return  # (the mask of no mask)
    q_len, kv_len = block_mask.shape[-2], block_mask.shape[-1]
    lq, lk = query.size(-2), key.size(-2)
    if lq > q_len or lk > kv_len:
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got "
            f"q_len={lq} and kv_len={lk}. As the block mask was created for a smaller length "
            f"than you're using it for, you likely need to create a new block mask.")
    if (lq < q_len and lk <= kv_len) or (lq <= q_len and lk < kv_len):
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got "
            f"q_len={lq} and kv_len={lk}. As the block mask was created for a larger length "
            f"than you're using it for, you can either 1. create a new block mask with the "
            f"correct length, or 2. 'adjust' the existing block mask to the correct length "
            f"by calling block_mask._adjust(q_len, kv_len). This essentially 'crops' the "
            f"block mask to the upper left corner, which does not work for all mask_mods!")


def _check_kernel_options(query: Tensor, kernel_options: FlexKernelOptions | None,
                          return_aux: AuxRequest | None) -> None:
    """PyTorch's refusals of the kernel options and of max_scores on the CPU."""
    options = dict(kernel_options or {})
    if "BACKEND" in options and options.get("FORCE_USE_FLEX_ATTENTION", False):
        raise RuntimeError(
            "BACKEND cannot be combined with legacy FORCE_USE_FLEX_ATTENTION. BACKEND "
            "supersedes the legacy knob; please drop FORCE_USE_FLEX_ATTENTION and only "
            "specify the desired BACKEND.")
    valid_backends = typing.get_args(_Backend)
    if "BACKEND" in options and options["BACKEND"] not in valid_backends:
        raise ValueError(f"Invalid BACKEND value '{options['BACKEND']}'. "
                         f"Must be one of {valid_backends}")
    for internal in ("OUTPUT_LOGSUMEXP", "OUTPUT_MAX"):
        if internal in options:
            raise AssertionError(f"{internal} must not be in kernel_options")
    output_max = return_aux is not None and return_aux.max_scores
    if options.get("BACKEND", "AUTO") == "FLASH" and output_max:
        raise NotImplementedError(
            "Returning max scores is not supported with BACKEND='FLASH'. "
            "Use return_aux=AuxRequest(lse=True) or omit max_scores.")
    if query.device.type in ("cpu", "mps") and output_max:
        raise NotImplementedError("Returning max scores is not supported on CPU/MPS.")


def _math_attention(query: Tensor, key: Tensor, value: Tensor, score_mod: Callable,
                    mask_mod: Callable, scale: float) -> tuple[Tensor, Tensor, Tensor]:
    """PyTorch's reference flex attention (`math_attention`): the output, and the rows'
    logsumexp and max of the modified scores (natural log)."""
    G = query.size(1) // key.size(1)
    key, value = _repeat_heads(key, G), _repeat_heads(value, G)
    Bq, Bkv = query.size(0), key.size(0)
    if not (Bq == Bkv or (Bq > 1 and Bkv == 1)):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={Bq} and Bkv={Bkv}")
    key = key.expand((Bq, *key.shape[1:]))
    value = value.expand((Bq, *value.shape[1:]))
    working = ember.float64 if query.dtype is ember.float64 else ember.float32
    scores = ember.matmul(query.to(working), key.to(working).transpose(-2, -1))
    scores = (scores * scale).to(working)
    b, h, m, n = _indices(*scores.shape, device=scores.device)
    score_mod = _vmap_for_bhqkv(score_mod, prefix=(0,))
    mask_mod = _vmap_for_bhqkv(mask_mod, prefix=())
    neg_inf = ember.tensor(-float("inf"), dtype=working, device=scores.device)
    post = ember.where(mask_mod(b, h, m, n), score_mod(scores, b, h, m, n), neg_inf)
    logsumexp = post.logsumexp(dim=-1)
    masked_rows = ember.all(post == -float("inf"), dim=-1)
    logsumexp = ember.where(masked_rows, -float("inf"), logsumexp)
    max_scores = ember.max(post, dim=-1)[0]
    out = ember.matmul(_safe_softmax(post).to(query.dtype), value.to(query.dtype))
    # PyTorch's kernels work in base 2 and convert back: the same two roundings
    ln2 = math.log(2.0)
    return out, logsumexp / ln2 * ln2, max_scores / ln2 * ln2


def flex_attention(query: Tensor, key: Tensor, value: Tensor,
                   score_mod: _score_mod_signature | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None,
                   enable_gqa: bool = False, return_lse: bool = False,
                   kernel_options: FlexKernelOptions | None = None, *,
                   return_aux: AuxRequest | None = None
                   ) -> Tensor | tuple[Tensor, Tensor] | tuple[Tensor, AuxOutput]:
    r"""Scaled dot product attention whose scores ``score_mod(score, b, h, q_idx, kv_idx)``
    modifies and whose ``block_mask`` (its ``mask_mod``) restricts.

    Args:
        query (Tensor): shape :math:`(B, Hq, L, E)`.
        key (Tensor): shape :math:`(B, Hkv, S, E)`.
        value (Tensor): shape :math:`(B, Hkv, S, Ev)`.
        score_mod (Optional[Callable]): Function to modify attention scores.
        block_mask (Optional[BlockMask]): the mask (from :func:`create_block_mask`).
        scale (Optional[float]): Scaling factor applied prior to softmax (default
            :math:`\frac{1}{\sqrt{E}}`).
        enable_gqa (bool): broadcast key/value heads to query heads (Grouped Query
            Attention).
        return_lse (bool): also return the logsumexp of the scores (deprecated: use
            ``return_aux=AuxRequest(lse=True)``).
        kernel_options (Optional[FlexKernelOptions]): options of PyTorch's kernels.
        return_aux (Optional[AuxRequest]): auxiliary outputs to return.

    Returns:
        output (Tensor): shape :math:`(B, Hq, L, Ev)`; with ``return_aux`` also an
        :class:`AuxOutput`, with ``return_lse`` the logsumexp :math:`(B, Hq, L)` (natural
        log, float32 or float64; -inf for rows masked out entirely, whose output is 0).
    """
    _validate_inputs(query, key, value, enable_gqa, block_mask)
    score_mod = _identity if score_mod is None else score_mod
    block_mask = _create_empty_block_mask(query, key) if block_mask is None else block_mask
    _validate_block_mask(block_mask, query, key)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    if query.device != block_mask.kv_num_blocks.device:
        raise RuntimeError(f"Expect q/k/v and block_mask to be on the same device but got "
                           f"{query.device} and {block_mask.kv_num_blocks.device}.")
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is "
                         "deprecated, please use return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        _warn_once("deprecated_return_lse",
                   "return_lse is deprecated and will be removed in v2.10. "
                   "Please use return_aux=AuxRequest(lse=True) instead.", FutureWarning)
    _check_kernel_options(query, kernel_options, return_aux)
    if not _FLEX_ATTENTION_DISABLE_COMPILE_DEBUG:
        _warn_once(
            "flex_attention_performance",
            "flex_attention called without torch.compile() - this will use an unfused "
            "implementation that materializes the full scores matrix instead of generating "
            "a fused kernel.\n\nSOLUTION: Use torch.compile(flex_attention)(...)\n\n"
            "If you want to debug your score_mod/mask_mod, you can set:\n"
            "torch.nn.attention.flex_attention._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = True"
            "\n\nThis will allow you to use print statements or breakpoints. Note: This "
            "doesn't work with the backwards pass and may produce incorrect results.")
    out, lse, max_scores = _math_attention(query, key, value, score_mod, block_mask.mask_mod,
                                           scale)
    if return_aux is not None:
        return out, AuxOutput(lse=lse if return_aux.lse else None,
                              max_scores=max_scores if return_aux.max_scores else None)
    if return_lse:
        return out, lse
    return out
