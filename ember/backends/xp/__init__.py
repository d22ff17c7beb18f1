"""Kernels shared by the backends whose arrays come from a NumPy-like module.

Each kernel is written once against an array module `xp` (NumPy or CuPy, which mirrors
NumPy's API): the CPU backend builds its table with `make_kernels(numpy, ...)`, the CUDA
backend with `make_kernels(cupy, ...)`. What one backend does its own way (its BLAS, the
quirks of its dtypes) comes in as `Hooks`. Kernel names, arguments and semantics are the
backend contract's (`ember.core.backend`; each op's declaration in ember/core/ops, and
`ember ops --kernels`, say what its kernel takes).

This package imports no backend, no array module and nothing of ember but the contract.
Random numbers are not here: each backend draws them from its own generator.

Modules, one family of kernels each:

- `lib`: the array module and the hooks every family is written against
- `elementwise`: unary and binary ops (with `out=`), where, clamp, cast
- `special`: special functions (lgamma, digamma, erfinv, i0 ...) through SciPy
- `reductions`: sum, max, argmax ... and cumsum
- `shapes`: views (reshape, permute, expand) and copies (flip, cat, pad ...)
- `creation`: full, arange
- `indexing`: getitem/setitem, assign, gather/scatter
- `linalg`: matmul, einsum, the fused linear layer, the LAPACK factorizations
- `ldl`: the symmetric indefinite (Bunch-Kaufman) LDL factorization and its solve
- `fused`: backward formulas, cross-entropy, one LSTM step
- `windows`, `conv`, `pooling`: sliding windows, convolution, max pooling
- `opmath`: PyTorch's rounding rules for add(alpha=), addcmul, addcdiv and lerp
- `foreach`: list kernels and SGD's fused update, for the optimizers
"""

from __future__ import annotations

from typing import Any

from ember.backends.xp import (
    conv,
    creation,
    elementwise,
    fft,
    foreach,
    fused,
    indexing,
    ldl,
    linalg,
    opmath,
    pooling,
    reductions,
    shapes,
    special,
)
from ember.backends.xp.lib import OVERLAP, ArrayLib, Hooks, Kernel

__all__ = ["OVERLAP", "Hooks", "make_kernels"]

_FAMILIES = (elementwise, reductions, shapes, creation, indexing, linalg, ldl, fused,
             conv, pooling, opmath, foreach, special, fft)


def make_kernels(xp: Any, *, hooks: Hooks | None = None) -> dict[str, Kernel]:
    """The kernel table, op name -> kernel, for arrays of module `xp`, with a backend's
    `hooks` (each optional: see `Hooks`). Returns a new dict the backend may add to."""
    lib = ArrayLib(xp, hooks or Hooks())
    table: dict[str, Kernel] = {}
    for family in _FAMILIES:
        table.update(family.kernels(lib))
    return table
