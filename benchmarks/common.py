"""Shared timing helpers: min-of-repeats wall time, and a side-by-side table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable


def best_time(fn: Callable[[], object], number: int, repeat: int = 7,
              sync: Callable[[], object] | None = None) -> float:
    """Seconds per call: the best of `repeat` runs of `number` calls (after a warm-up)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if sync is not None:
            sync()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} us"
    return f"{seconds * 1e3:8.2f} ms"


def print_table(title: str, rows: list[tuple[str, float, float | None, str]]) -> None:
    """rows: (name, ember seconds, torch seconds or None, goal text)."""
    print(f"\n{title}")
    print(f"{'workload':44s} {'ember':>11s} {'torch':>11s} {'ember/torch':>12s}  goal")
    for name, ours, theirs, goal in rows:
        ratio = f"{ours / theirs:11.2f}x" if theirs else "          -"
        print(f"{name:44s} {fmt_time(ours)} {fmt_time(theirs) if theirs else '          -'} "
              f"{ratio}  {goal}")


def in_child(script: str, framework: str, names: list[str], extra: list[str] = (),
             env: dict[str, str] | None = None) -> dict:
    """Time `names` with one framework in a child process: {name: seconds}.

    Each framework runs alone, because two thread pools in one process fight: PyTorch's
    OpenMP threads and NumPy's OpenBLAS threads spin for a while after each parallel call,
    so whichever framework runs second loses cores to the other's spinning (measured: an
    ember MLP step 3.2 ms alone, 5.2 ms with PyTorch merely imported).
    """
    cmd = [sys.executable, script, "--child", framework, "--only", ",".join(names), *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if out.returncode != 0:
        raise RuntimeError(f"benchmark child ({framework}) failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])
