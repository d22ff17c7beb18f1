"""PyTorch's CPU `randperm` stream, reproduced so that a sampler draws PyTorch's indices.

`torch.randperm(n, generator=g)` after `g.manual_seed(s)` seeds a Mersenne Twister
(mt19937, standard `init_genrand` with the seed's low 32 bits) and, for
n < 2**32 / 20, runs a Fisher-Yates shuffle forwards: for i in 0..n-2 it draws one
32-bit word w and swaps positions i and i + w % (n - i). NumPy's MT19937 gives the raw
32-bit words once its state is set to the same key, so the result equals PyTorch's
exactly (checked against torch in tests/test_ddp_sampler.py).
"""

from __future__ import annotations

import numpy as np

_MT_N = 624
# torch switches to another algorithm at and above this size (TensorFactories.cpp)
SMALL_N_LIMIT = (2 ** 32 - 1) // 20


def _mt19937_key(seed: int) -> np.ndarray:
    """The state words of mt19937's `init_genrand(seed & 0xffffffff)`."""
    key = np.empty(_MT_N, dtype=np.uint32)
    s = seed & 0xFFFFFFFF
    key[0] = s
    for j in range(1, _MT_N):
        s = (1812433253 * (s ^ (s >> 30)) + j) & 0xFFFFFFFF
        key[j] = s
    return key


def torch_randperm(n: int, seed: int) -> list[int]:
    """The permutation `torch.randperm(n, generator=torch.Generator().manual_seed(seed))`
    returns on the CPU, as a list of ints."""
    if n >= SMALL_N_LIMIT:
        raise ValueError(f"torch_randperm: n={n} is at or above {SMALL_N_LIMIT}, where "
                         "PyTorch uses another algorithm that is not reproduced here")
    perm = list(range(n))
    if n < 2:
        return perm
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": _mt19937_key(seed), "pos": _MT_N}}
    words = bits.random_raw(n - 1).astype(np.int64)
    offsets = (words % np.arange(n, 1, -1, dtype=np.int64)).tolist()
    for i, z in enumerate(offsets):  # the swaps depend on each other: sequential by nature
        j = i + z
        perm[i], perm[j] = perm[j], perm[i]
    return perm
