"""Mixed precision on the CPU: training-step time under autocast against float32, for
ember and for PyTorch, each framework in its own process.

    python benchmarks/bench_amp.py [--amp bfloat16|float16] [--only mlp,cnn,lstm] [--rounds 3]

The steps are benchmarks/bench_train.py's (the same models, data and SGD step); with
autocast the forward pass runs in the region (a GradScaler would add nothing to the time
worth measuring). What it shows is whatever the CPU gives: NumPy has no fast half-
precision kernels, so ember computes bfloat16 matrix products through float32 BLAS and
pays for the casts; PyTorch's oneDNN has native bfloat16 kernels on CPUs with AVX-512 BF16
or AMX, and emulates them elsewhere.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import bench_train  # noqa: E402
from common import fmt_time, in_child  # noqa: E402


def _best(framework: str, names: list[str], extra: list[str], rounds: int) -> dict:
    best: dict = {}
    for _ in range(rounds):
        bench_train._keep_best(best, in_child(bench_train.__file__, framework, names, extra))
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--amp", choices=["bfloat16", "float16"], default="bfloat16")
    parser.add_argument("--only", default="mlp,cnn,lstm")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    names = args.only.split(",")
    bench_train._import_torch()
    has_torch = bench_train.torch is not None
    print(f"{os.cpu_count()} cores; autocast {args.amp} against float32 on the CPU; each "
          f"framework and precision timed in its own process, best of {args.rounds}")
    amp = ["--amp", args.amp]
    times = {}
    for framework in ("ember", "torch") if has_torch else ("ember",):
        device = ["--device", "cpu"] if framework == "ember" else []
        times[framework, "f32"] = _best(framework, names, device, args.rounds)
        times[framework, "amp"] = _best(framework, names, device + amp, args.rounds)
    print(f"\n{'workload':44s} {'ember f32':>11s} {'ember amp':>11s} {'amp/f32':>8s}"
          + (f" {'torch f32':>11s} {'torch amp':>11s} {'amp/f32':>8s} {'ember/torch amp':>16s}"
             if has_torch else ""))
    for name in names:
        ef, ea = times["ember", "f32"][name], times["ember", "amp"][name]
        row = f"{bench_train.WORKLOADS[name][0]:44s} {fmt_time(ef)} {fmt_time(ea)} " \
              f"{ea / ef:7.2f}x"
        if has_torch:
            tf, ta = times["torch", "f32"][name], times["torch", "amp"][name]
            row += f" {fmt_time(tf)} {fmt_time(ta)} {ta / tf:7.2f}x {ea / ta:15.2f}x"
        print(row)


if __name__ == "__main__":
    main()
