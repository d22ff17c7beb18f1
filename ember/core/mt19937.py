"""PyTorch's CPU random engine: the state of `torch.Generator("cpu")`, word for word.

PyTorch's CPU generator (`CPUGeneratorImpl`) is a 32-bit Mersenne Twister (mt19937)
seeded with the standard `init_genrand(seed & 0xffffffff)`, plus two cached normal
samples (the second value of a Box-Muller pair, in double and in float). NumPy's
`MT19937` runs the same twister in C, so drawing the raw words in bulk costs what
NumPy's own generators cost; this class keeps the rest of PyTorch's state around it.

`get_state`/`set_state` read and write PyTorch's byte layout (5056 bytes: the legacy
`THGeneratorState` struct followed by the float normal cache), so a state taken from
`torch.get_rng_state()` restores here and the other way round.
"""

from __future__ import annotations

import struct

import numpy as np

STATE_SIZE = 5056
"""Bytes of PyTorch's `CPUGeneratorImplState`."""

DEFAULT_SEED = 67280421310721
"""The seed of a new `torch.Generator()` (c10's `default_rng_seed_val`)."""

_N = 624  # words of the twister's state
_HEAD = struct.Struct("<QiiQ")  # the_initial_seed, left, seeded, next
_TAIL = struct.Struct("<dddi4xf?3x")  # normal_x, normal_y, normal_rho, normal_is_valid,
#                                       next_float_normal_sample, its validity


class MT19937:
    """The state of one PyTorch CPU generator, drawing through NumPy's MT19937."""

    __slots__ = ("_bits", "initial_seed", "next_double_normal", "next_float_normal",
                 "_fresh")

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self._bits = np.random.MT19937(0)
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        """Seed as `init_genrand(seed & 0xffffffff)`; keep the whole seed for
        `initial_seed`, and forget the cached normal samples (as PyTorch's
        `set_current_seed`)."""
        self.initial_seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        # NumPy's legacy seeding of a 32-bit seed is init_genrand
        self._bits.state = np.random.RandomState(self.initial_seed & 0xFFFFFFFF) \
            ._bit_generator.state
        self.next_double_normal: float | None = None
        self.next_float_normal: float | None = None
        self._fresh = True  # seeded, nothing drawn: PyTorch's `next` is 0, not 624

    # -- drawing ------------------------------------------------------------------------
    def words(self, n: int) -> np.ndarray:
        """The next `n` 32-bit outputs (PyTorch's `random()`), as uint32."""
        if n <= 0:
            return np.empty(0, np.uint32)
        self._fresh = False
        return self._bits.random_raw(n).astype(np.uint32)

    def words64(self, n: int) -> np.ndarray:
        """The next `n` 64-bit outputs (PyTorch's `random64()`: two words, the first
        one high), as uint64."""
        w = self.words(2 * n).astype(np.uint64)
        return (w[0::2] << np.uint64(32)) | w[1::2]

    def word(self) -> int:
        return int(self.words(1)[0])

    def word64(self) -> int:
        return int(self.words64(1)[0])

    def skip(self, n: int) -> None:
        """Advance past `n` words without keeping them."""
        self.words(n)

    def snapshot(self) -> bytes:
        return self.get_state()

    def restore(self, state: bytes) -> None:
        self.set_state(state)

    # -- PyTorch's byte layout -------------------------------------------------------------
    def get_state(self) -> bytes:
        """The state as `torch.Generator.get_state()` lays it out (5056 bytes)."""
        state = self._bits.state["state"]
        pos = int(state["pos"])
        # NumPy's `pos` is the index of the next word; PyTorch counts `left` down to the
        # next twist (1 when it is due) and `next` up
        left, nxt = _N + 1 - pos, (0 if self._fresh else pos)
        head = _HEAD.pack(self.initial_seed, left, 1, nxt)
        words = np.asarray(state["key"], dtype=np.uint32).astype("<u8").tobytes()
        double_valid = self.next_double_normal is not None
        float_valid = self.next_float_normal is not None
        tail = _TAIL.pack(0.0, self.next_double_normal if double_valid else 0.0, 0.0,
                          int(double_valid), self.next_float_normal if float_valid else 0.0,
                          float_valid)
        return head + words + tail

    def set_state(self, data: bytes) -> None:
        """Restore a state laid out as `get_state` (and PyTorch) write it."""
        if len(data) != STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but "
                               f"found the input RNG state size to be {len(data)}")
        seed, left, _seeded, nxt = _HEAD.unpack_from(data, 0)
        if left < 1 or left > _N + 1 or nxt > _N:
            raise RuntimeError("The input RNG state is invalid: its position in the "
                               f"Mersenne Twister state (left={left}, next={nxt}) is out "
                               "of range")
        key = np.frombuffer(data, dtype="<u8", count=_N, offset=_HEAD.size)
        _, normal_y, _, normal_valid, float_normal, float_valid = _TAIL.unpack_from(
            data, _HEAD.size + 8 * _N)
        self._bits.state = {"bit_generator": "MT19937",
                            "state": {"key": key.astype(np.uint32), "pos": _N + 1 - left}}
        self.initial_seed = seed
        self._fresh = left == 1 and nxt == 0
        self.next_double_normal = normal_y if normal_valid else None
        self.next_float_normal = float_normal if float_valid else None
