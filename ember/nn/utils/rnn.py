"""Variable-length sequences: `pad_sequence`, `PackedSequence` and packing, as in
`torch.nn.utils.rnn`.

A PackedSequence stores the time steps of a batch of sequences sorted by decreasing
length, one after another: ``data`` is ``(sum(lengths), *)`` and ``batch_sizes[t]`` is how
many sequences are still running at step ``t`` (a CPU int64 tensor). Recurrent layers
consume it step by step; everything here is differentiable with respect to the values.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import ember
from ember import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


class _PackedSequenceBase(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceBase):
    r"""The data and per-step batch sizes of a packed batch of sequences.

    Create it with :func:`pack_padded_sequence` or :func:`pack_sequence`, not directly.

    Attributes:
        data (Tensor): the packed time steps, ``(sum(lengths), *)``.
        batch_sizes (Tensor): CPU int64, the batch size at each time step.
        sorted_indices (Tensor, optional): how the original batch was sorted by length.
        unsorted_indices (Tensor, optional): the inverse permutation.
    """

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of "
                             "PackedSequence should never be created manually. They should "
                             "be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        r"""Move/cast ``data`` (the indices follow it to its device)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = lambda t: None if t is None else t.to(data.device)
        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self.to("cuda" if not args else args[0], **kwargs)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=ember.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=ember.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=ember.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=ember.int64)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    r"""The inverse of a permutation given as an index tensor (``None`` stays ``None``)."""
    if permutation is None:
        return None
    n = permutation.numel()
    return ember.zeros(n, dtype=permutation.dtype, device=permutation.device).scatter(
        0, permutation, ember.arange(n, dtype=permutation.dtype, device=permutation.device))


def _lengths_list(lengths: Tensor | Sequence[int]) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.ndim}D {lengths.device} tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int],
                         batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    r"""Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` if ``batch_first``) of sequences
    of the given lengths.

    Args:
        lengths: each sequence's length (a list or a 1-D CPU tensor).
        enforce_sorted: require ``lengths`` to be decreasing; otherwise the batch is
            sorted here and the permutation kept in the result.
    """
    lens = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    sorted_indices = None
    if enforce_sorted:
        # (unsorted, the batch is first selected by the lengths' order, as PyTorch does: a
        # shorter list of lengths packs that many sequences)
        if len(lens) != input.shape[batch_dim]:
            raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                               f"{len(lens)} (batch_size={input.shape[batch_dim]})")
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
    else:
        # PyTorch's torch.sort(lengths, descending=True): its CPU order of equal lengths
        # decides which sequence is in which row (and so which dropout mask it gets)
        order = ember.sort(ember.tensor(lens, dtype=ember.int64), descending=True).indices
        lens = [lens[i] for i in order.tolist()]
        sorted_indices = order.to(input.device)
        input = ember.index_select(input, batch_dim, sorted_indices)
    if lens and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    if lens and lens[0] > input.shape[0]:
        raise RuntimeError(f"Expected the longest sequence (length {lens[0]}) to fit in the "
                           f"input's {input.shape[0]} time steps")
    steps = lens[0] if lens else 0
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(steps)]
    data = ember.cat([input[t, :bs] for t, bs in enumerate(batch_sizes)]) if steps else \
        input.reshape(0, *input.shape[2:])
    return PackedSequence(data, ember.tensor(batch_sizes, dtype=ember.int64),
                          sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    r"""Unpack a :class:`PackedSequence` into a padded batch (the inverse of
    :func:`pack_padded_sequence`).

    Returns:
        ``(padded, lengths)``: ``(T, B, *)`` (``(B, T, *)`` if ``batch_first``) and the
        lengths as a CPU int64 tensor, both in the original batch order.
    """
    batch_sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the "
                             f"longest sequence in input, but got total_length={total_length} "
                             f"and max sequence length being {max_len}")
        max_len = total_length
    data = sequence.data
    batch = batch_sizes[0] if batch_sizes else 0
    feature = tuple(data.shape[1:])

    def filler(rows: int) -> Tensor:
        return ember.full((rows, *feature), padding_value, dtype=data.dtype,
                          device=data.device)

    steps, offset = [], 0
    for bs in batch_sizes:
        chunk = data[offset:offset + bs]
        offset += bs
        steps.append(chunk if bs == batch else ember.cat([chunk, filler(batch - bs)]))
    steps.extend(filler(batch) for _ in range(max_len - len(batch_sizes)))
    padded = ember.stack(steps) if steps else filler(0).reshape(0, 0, *feature)
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(batch)]
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        order = [int(i) for i in sequence.unsorted_indices.tolist()]
        padded = ember.index_select(padded, 0 if batch_first else 1,
                                    sequence.unsorted_indices)
        lengths = [lengths[i] for i in order]
    return padded, ember.tensor(lengths, dtype=ember.int64)


def _check_trailing_sizes(sequences: list[Tensor]) -> None:
    """PyTorch's refusal of sequences whose trailing sizes differ from the first's: it
    copies each into its slot of the output, with copy_'s broadcasting and words."""
    from ember.core.shapes import broadcast_shapes, fmt_shape

    trailing = tuple(sequences[0].shape[1:])
    for s in sequences[1:]:
        slot = (s.shape[0],) + trailing if s.ndim else trailing
        if tuple(s.shape) != slot and \
                broadcast_shapes("pad_sequence", slot, tuple(s.shape)) != slot:
            raise RuntimeError(f"output with shape {fmt_shape(slot)} doesn't match the "
                               f"broadcast shape "
                               f"{fmt_shape(broadcast_shapes('pad_sequence', slot, s.shape))}")


def pad_sequence(sequences: Tensor | Iterable[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    r"""Stack sequences ``(L_i, *)`` of different lengths into one padded tensor
    ``(max L, B, *)`` (``(B, max L, *)`` if ``batch_first``).

    Args:
        padding_value: the value of the padding.
        padding_side: pad on the ``'right'`` (default) or the ``'left'``.
    """
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    elif not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg "
                           f"of type: {type(sequences)}")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    longest = max(s.shape[0] for s in sequences)
    _check_trailing_sizes(sequences)
    padded = []
    for s in sequences:
        slot = (s.shape[0], *sequences[0].shape[1:])
        if tuple(s.shape) != slot:  # (broadcast into its slot, as PyTorch's copy_ does)
            s = s.expand(slot)
        extra = longest - s.shape[0]
        if extra:
            # constant_pad_nd lists (left, right) pairs from the last dimension backwards
            pair = (0, extra) if padding_side == "right" else (extra, 0)
            s = ember.constant_pad_nd(s, (0, 0) * (s.ndim - 1) + pair, padding_value)
        padded.append(s)
    return ember.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    r"""Split a padded batch back into its sequences (the inverse of
    :func:`pad_sequence`)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths))]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    r"""Pack a list of sequences ``(L_i, *)`` (decreasing lengths unless
    ``enforce_sorted=False``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    r"""The list of sequences a :class:`PackedSequence` holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
