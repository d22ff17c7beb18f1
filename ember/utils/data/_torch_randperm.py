"""PyTorch's CPU `randperm` stream for a seed, so that a sampler draws PyTorch's indices.

`torch.randperm(n, generator=torch.Generator().manual_seed(s))`: ember's CPU generator is
PyTorch's (ember.core.mt19937, ember.core.cpu_random), so this is `ember.randperm` with a
generator seeded the same way.
"""

from __future__ import annotations

import ember
from ember.core.cpu_random import RANDPERM_SMALL

# torch switches to another algorithm at and above this size (TensorFactories.cpp); ember
# reproduces it too, but a Python loop over 2**28 swaps is no sampler's business
SMALL_N_LIMIT = RANDPERM_SMALL


def torch_randperm(n: int, seed: int) -> list[int]:
    """The permutation `torch.randperm(n, generator=torch.Generator().manual_seed(seed))`
    returns on the CPU, as a list of ints."""
    if n >= SMALL_N_LIMIT:
        raise ValueError(f"torch_randperm: n={n} is at or above {SMALL_N_LIMIT}, where "
                         "PyTorch uses another algorithm that is not reproduced here")
    return ember.randperm(n, generator=ember.Generator().manual_seed(seed),
                          device="cpu").tolist()
