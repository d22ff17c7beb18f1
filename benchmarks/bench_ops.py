"""Per-op overhead and matmul throughput: ember against PyTorch, in one run.

    python benchmarks/bench_ops.py

NumPy is imported *before* ember on purpose: that is the order most scripts use, and the
one where OpenBLAS has already picked its kernels (see `ember devices` and the README).
"""

from __future__ import annotations

import os
import sys

import numpy as np  # noqa: F401 - first, on purpose

sys.path.insert(0, os.path.dirname(__file__))

from common import best_time, print_table  # noqa: E402

import ember  # noqa: E402

try:
    import torch  # noqa: E402

    torch.set_num_threads(os.cpu_count() or 1)
except ImportError:  # the ratios need PyTorch; ember's own figures still print
    torch = None


def overhead_rows() -> list:
    rows = []
    for grad in (False, True):
        a = ember.ones(4, requires_grad=grad)
        b = ember.ones(4)
        ours = best_time(lambda a=a, b=b: a + b, 20000)
        theirs = None
        if torch is not None:
            ta, tb = torch.ones(4, requires_grad=grad), torch.ones(4)
            theirs = best_time(lambda ta=ta, tb=tb: ta + tb, 20000)
        rows.append((f"a + b, 4 floats{', requires_grad' if grad else ''}", ours, theirs,
                     "<= 6x"))
    return rows


def matmul_rows(n: int = 1024) -> list:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n), dtype=np.float32)
    y = rng.standard_normal((n, n), dtype=np.float32)
    a, b = ember.tensor(x), ember.tensor(y)
    ours = best_time(lambda: a @ b, 10)
    theirs = None
    if torch is not None:
        ta, tb = torch.from_numpy(x), torch.from_numpy(y)
        theirs = best_time(lambda: ta @ tb, 10)
    flops = 2 * n ** 3
    name = f"matmul {n}x{n} float32 ({flops / ours / 1e9:.0f} GFLOP/s"
    if theirs:
        name += f" vs {flops / theirs / 1e9:.0f}"
    return [(name + ")", ours, theirs, "<= 1.0x (throughput >= torch)")]


def main() -> None:
    from ember.backends.cpu import blas

    info = blas.openblas_info()
    print(f"ember {ember.__version__}; torch {torch.__version__ if torch else 'not installed'}; "
          f"{os.cpu_count()} cores; NumPy's OpenBLAS runs {info.get('corename')} kernels "
          f"(best for this CPU: {info.get('best')})")
    print_table("Per-op overhead and matmul (CPU)", overhead_rows() + matmul_rows())


if __name__ == "__main__":
    main()
