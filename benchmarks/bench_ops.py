"""Per-op overhead, matmul throughput and a traced forward's replay: ember against
PyTorch, in one run.

    python benchmarks/bench_ops.py [--only overhead,small,matmul,jit,random]

NumPy is imported *before* ember on purpose: that is the order most scripts use, and the
one where OpenBLAS has already picked its kernels (see `ember devices` and the README).
The traced replays run each framework in its own child process (common.in_child).
"""

from __future__ import annotations

import os
import sys

import numpy as np  # noqa: F401 - first, on purpose

sys.path.insert(0, os.path.dirname(__file__))

from common import best_time, print_table  # noqa: E402

import ember  # noqa: E402

# PyTorch, imported by main() (a child timing ember alone never imports it); None without
# it: the ratios need PyTorch, ember's own figures still print
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
                     "<= 1.5x" if grad else "<= 1.2x"))
    # the same with a backward through it: the engine's fixed cost per backward call
    a, b, g = ember.ones(4, requires_grad=True), ember.ones(4), ember.ones(4)
    ours = best_time(lambda: (a + b).backward(g), 5000)
    theirs = None
    if torch is not None:
        ta, tb, tg = torch.ones(4, requires_grad=True), torch.ones(4), torch.ones(4)
        theirs = best_time(lambda: (ta + tb).backward(tg), 5000)
    rows.append(("(a + b).backward(g), 4 floats", ours, theirs, "<= 1.5x"))
    return rows


# Small-tensor ops real programs call in their Python loops (views, indexing, joins,
# reductions, factories): each one's fixed cost, on an 8x8 float32 tensor
SMALL_OPS = {
    "x.view(64)": lambda m, x, i, k: x.view(64),
    "x.unsqueeze(0)": lambda m, x, i, k: x.unsqueeze(0),
    "x.t()": lambda m, x, i, k: x.t(),
    "x.permute(1, 0)": lambda m, x, i, k: x.permute(1, 0),
    "x[0].expand(4, 8)": lambda m, x, i, k: x[0].expand(4, 8),
    "x[0]": lambda m, x, i, k: x[0],
    "x[:, 1:3]": lambda m, x, i, k: x[:, 1:3],
    "x[idx], 4 rows": lambda m, x, i, k: x[i],
    "x[mask]": lambda m, x, i, k: x[k],
    "cat([x, x])": lambda m, x, i, k: m.cat([x, x]),
    "stack([x, x])": lambda m, x, i, k: m.stack([x, x]),
    "x.sum(1)": lambda m, x, i, k: x.sum(1),
    "x.mean(1)": lambda m, x, i, k: x.mean(1),
    "x.max(1)": lambda m, x, i, k: x.max(1),
    "x.softmax(-1)": lambda m, x, i, k: x.softmax(-1),
    "x / 8": lambda m, x, i, k: x / 8,
    "zeros(8)": lambda m, x, i, k: m.zeros(8),
    "x[0, 0].item()": lambda m, x, i, k: x[0, 0].item(),
}


def small_op_rows() -> list:
    """Each small op's time, ember against PyTorch (no goal of its own: the training
    steps' goals in bench_train.py are where these add up)."""
    def operands(lib):
        x = lib.tensor(np.random.default_rng(0).standard_normal((8, 8), dtype=np.float32))
        return x, lib.tensor([0, 3, 5, 7]), x > 0

    mine, theirs = operands(ember), operands(torch) if torch is not None else None
    rows = []
    for name, op in SMALL_OPS.items():
        ours = best_time(lambda op=op: op(ember, *mine), 3000)
        other = best_time(lambda op=op: op(torch, *theirs), 3000) if theirs else None
        rows.append((name, ours, other, "-"))
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


# Large random draws, which models' initialisation makes (an embedding's normal_, a data
# loader's shuffle): ember draws PyTorch's CPU stream, the same numbers from the same seed
RANDOM_DRAWS = {
    "randn(4M) float32": lambda m: m.randn(1 << 22),
    "empty(4M).normal_(0, 0.02)": lambda m: m.empty(1 << 22).normal_(0, 0.02),
    "randn(2M) float64": lambda m: m.randn(1 << 21, dtype=m.float64),
    "randperm(1M)": lambda m: m.randperm(1 << 20),
    "rand(4M) float32": lambda m: m.rand(1 << 22),
}


def random_rows() -> list:
    """Each draw's time, ember against PyTorch (the first, untimed call loads numba's
    kernels where ember compiles the transform)."""
    rows = []
    for name, draw in RANDOM_DRAWS.items():
        ours = best_time(lambda draw=draw: draw(ember), 3, repeat=3)
        other = best_time(lambda draw=draw: draw(torch), 3, repeat=3) if torch else None
        rows.append((name, ours, other, "-"))
    return rows


def _tiny_mlp(nn):
    return nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(),
                         nn.Linear(8, 8))


def _jit_child(framework: str) -> None:
    """Time the tiny MLP's traced forward, replayed, in this process; print JSON."""
    import json

    x = np.random.default_rng(0).standard_normal((4, 8), dtype=np.float32)
    if framework == "ember":
        lib = ember
    else:
        lib = _torch()
        if lib is None:
            print(json.dumps({}))
            return
    model = _tiny_mlp(lib.nn)
    tx = lib.tensor(x)
    with lib.no_grad():
        traced = lib.jit.trace(model, tx)
        seconds = best_time(lambda: traced(tx), 5000)
    print(json.dumps({"jit": seconds}))


def _torch():
    try:
        import torch as module
    except ImportError:
        return None
    module.set_num_threads(os.cpu_count() or 1)
    return module


def jit_rows(rounds: int = 3) -> list:
    """The tiny MLP (8-8-8, tanh, batch 4) traced, replayed: each framework in its own
    process, alternating, best of `rounds`."""
    from common import in_child

    best: dict[str, float] = {}
    for _ in range(rounds):
        for framework in ("ember", "torch"):
            got = in_child(__file__, framework, ["jit"]).get("jit")
            if got is not None:
                best[framework] = min(got, best.get(framework, got))
    return [("traced tiny MLP forward, replayed", best["ember"], best.get("torch"),
             "< 1.0x (torch.jit.trace)")]


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="overhead,small,matmul,jit,random")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the jit children")
    parser.add_argument("--child", choices=["ember", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # common.in_child passes --only too
        _jit_child(args.child)
        return
    from ember.backends.cpu import blas

    global torch
    torch = _torch()
    only = args.only.split(",")
    info = blas.openblas_info()
    print(f"ember {ember.__version__}; torch {torch.__version__ if torch else 'not installed'}; "
          f"{os.cpu_count()} cores; NumPy's OpenBLAS runs {info.get('corename')} kernels "
          f"(best for this CPU: {info.get('best')})")
    rows = (overhead_rows() if "overhead" in only else []) + \
        (matmul_rows() if "matmul" in only else []) + \
        (jit_rows(args.rounds) if "jit" in only else [])
    print_table("Per-op overhead, matmul and traced replay (CPU)", rows)
    if "small" in only:
        print_table("Small-tensor ops, 8x8 float32 (the fixed cost of each call)",
                    small_op_rows())
    if "random" in only:
        print_table("Large random draws, PyTorch's stream", random_rows())


if __name__ == "__main__":
    main()
