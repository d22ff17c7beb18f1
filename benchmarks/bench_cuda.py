"""ember's CUDA backend against PyTorch CUDA, side by side in one run, timed with CUDA
events (each framework's own: ember.cuda.Event and torch.cuda.Event):

    python benchmarks/bench_cuda.py [--only add,matmul,mlp,cnn,lstm] [--repeat 5]

- per-op overhead of `a + b` on 1000 floats (launch-bound: the host cost of one op);
- matmul 4096x4096 at float32, float16 and bfloat16, in TFLOP/s (both call cuBLAS);
- training steps (forward, backward, SGD with momentum) of an MLP 784-512-256-10, a CNN
  conv32-conv64-fc128 on 28x28 and an LSTM(32->128) T=50, at batch 256 and 1024.

Goals (ember/PyTorch throughput): MLP and CNN steps >= 0.9x at batch >= 256, LSTM >= 1/1.5,
matmul >= 0.95x. Without a usable GPU it prints why and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

import ember  # noqa: E402


def cuda_time(framework, fn, number: int, repeat: int) -> float:
    """Seconds per call of `fn`: the best of `repeat` runs of `number` calls, measured by
    the framework's CUDA events around the runs (after a warm-up)."""
    fn()
    framework.cuda.synchronize()
    best = float("inf")
    for _ in range(repeat):
        start = framework.cuda.Event(enable_timing=True)
        end = framework.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(number):
            fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / number)
    return best


def _add(fw):
    a = fw.ones(1000, device="cuda")
    b = fw.ones(1000, device="cuda")
    return lambda: a + b


def _matmul(fw, dtype_name: str):
    dtype = getattr(fw, dtype_name)
    fw.manual_seed(0)
    a = fw.randn(4096, 4096, device="cuda").to(dtype)
    b = fw.randn(4096, 4096, device="cuda").to(dtype)
    return lambda: a @ b


def _model(nn, name: str):
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                             nn.Linear(256, 10)), (784,)
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(),
            nn.Linear(128, 10)), (1, 28, 28)

    class LSTMHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(32, 128, batch_first=True)
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1])
    return LSTMHead(), (50, 32)


def _train_step(fw, name: str, batch: int):
    model, shape = _model(fw.nn, name)
    model.to("cuda")
    rng = np.random.default_rng(0)
    x = fw.tensor(rng.standard_normal((batch, *shape), dtype=np.float32), device="cuda")
    y = fw.tensor(rng.integers(0, 10, batch), device="cuda")
    opt = fw.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = fw.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="add,matmul,mlp,cnn,lstm")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if not ember.cuda.is_available():
        from ember.core import plugins

        reason = plugins.safe_unavailable_reason(plugins.get_backend("cuda"))
        print(f"bench_cuda: skipped, CUDA is unavailable here: {reason}")
        return 0
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("PyTorch has no CUDA here")
    except ImportError as err:
        print(f"bench_cuda: PyTorch CUDA unavailable ({err}); ember's times only")
        torch = None
    only = set(args.only.split(","))
    print(f"device: {ember.cuda.get_device_name()}"
          + (f"; torch {torch.__version__}" if torch else ""))
    print(f"{'workload':40s} {'ember':>12s} {'torch':>12s} {'ratio':>8s}  goal")

    def row(label, make, number, unit="time", flops=0.0, goal=""):
        results = []
        for fw in (ember, torch):
            if fw is None:
                results.append(None)
                continue
            try:
                results.append(cuda_time(fw, make(fw), number, args.repeat))
            except (TypeError, RuntimeError, AttributeError) as err:  # a dtype it lacks
                print(f"  {label}: {fw.__name__} cannot run it ({type(err).__name__}: "
                      f"{str(err).splitlines()[0][:80]})")
                results.append(None)
        ours, theirs = results

        def show(t):
            if t is None:
                return f"{'-':>12s}"
            return f"{flops / t / 1e12:8.1f} TF/s" if unit == "flops" else f"{t * 1e6:9.1f} us"
        ratio = f"{theirs / ours:7.2f}x" if ours and theirs else f"{'-':>8s}"
        print(f"{label:40s} {show(ours)} {show(theirs)} {ratio}  {goal}")

    if "add" in only:
        row("a + b (1000 floats): per-op time", _add, 1000, goal="(launch overhead)")
    if "matmul" in only:
        n = 4096
        for dt in ("float32", "float16", "bfloat16"):
            row(f"matmul {n}^2 {dt}", lambda fw, d=dt: _matmul(fw, d), 20, unit="flops",
                flops=2.0 * n ** 3, goal=">= 0.95x")
    for name, goal in (("mlp", ">= 0.9x"), ("cnn", ">= 0.9x"), ("lstm", ">= 0.67x")):
        if name in only:
            for batch in (256, 1024):
                row(f"{name} train step, batch {batch}",
                    lambda fw, n=name, b=batch: _train_step(fw, n, b), 10, goal=goal)
    print("ratio: ember's throughput over PyTorch's (above 1: ember is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
