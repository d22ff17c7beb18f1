"""Training-step time (forward, backward, SGD-momentum step): ember against PyTorch.

    python benchmarks/bench_train.py [--device cpu] [--only mlp,cnn,lstm,tiny] [--rounds 3]
                                     [--amp bfloat16|float16] [--no-compiled]

Each workload builds the same model in both frameworks (ember's copies PyTorch's initial
weights) and times whole steps on fixed random data. PyTorch runs on its CPU build with
all cores; ember runs on --device (default cpu). Goals are ember/PyTorch on the CPU.
With --amp, both frameworks run the forward pass under autocast in that dtype
(benchmarks/bench_amp.py sets those times beside float32's).

A second table gives each step's peak memory: how far the process's resident memory rises
above its steady state (weights, gradients, momentum, inputs) during one step, after
warm-up steps: activations, gradients in flight, temporaries. A second process samples
the resident size (/proc/PID/statm) in a loop, for both frameworks alike, each in a
process whose C allocator maps every block of 64 KiB or more on its own (so a freed
buffer leaves the resident set at once, instead of staying in the heap for the next
step, where neither framework's use would show; ember's CPU backend keeps its heap's
peak in a normal run, which this turns off); goal: ember's <= PyTorch's.

A third table times the same step under `ember.compile` (the step replayed as its
kernels, ember/jit/compiled.py) against ember's eager step: goals >= 1.5x faster on tiny
and LSTM, >= 1.1x on MLP and CNN.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from common import best_time, fmt_time, in_child, print_table  # noqa: E402

import ember  # noqa: E402

torch = None  # imported only where PyTorch is timed (see common.in_child)


def _import_torch():
    global torch
    try:
        import torch as module
    except ImportError:
        return None
    module.set_num_threads(os.cpu_count() or 1)
    torch = module
    return module


def _copy_weights(ember_model, torch_model) -> None:
    state = {k: ember.tensor(v.detach().numpy()) for k, v in torch_model.state_dict().items()}
    ember_model.load_state_dict(state)


def _models(name: str):
    """(ember model, torch model or None, input shape, target kind) for a workload."""
    from ember import nn as enn

    def build(nn):
        if name == "mlp":
            return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256),
                                 nn.ReLU(), nn.Linear(256, 10)), (128, 784)
        if name == "tiny":
            return nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(),
                                 nn.Linear(8, 8)), (4, 8)
        if name == "cnn":
            return nn.Sequential(
                nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10)), (64, 1, 28, 28)
        if name == "lstm":
            class LSTMHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lstm = nn.LSTM(32, 128, batch_first=True)
                    self.head = nn.Linear(128, 10)

                def forward(self, x):
                    out, _ = self.lstm(x)
                    return self.head(out[:, -1])
            return LSTMHead(), (32, 50, 32)
        raise ValueError(name)

    ours, shape = build(enn)
    theirs = None
    if torch is not None:  # the same starting weights, when both frameworks are loaded
        theirs, _ = build(torch.nn)
        _copy_weights(ours, theirs)
    return ours, theirs, shape


def _step_fns(name: str, device: str, amp: str | None = None):
    ours, theirs, shape = _models(name)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    classes = 8 if name == "tiny" else 10
    y = rng.integers(0, classes, shape[0])
    ours.to(device)
    ex, ey = ember.tensor(x, device=device), ember.tensor(y, device=device)
    eopt = ember.optim.SGD(ours.parameters(), lr=0.01, momentum=0.9)
    eloss = ember.nn.CrossEntropyLoss()

    def ember_region():
        if amp is None:
            return contextlib.nullcontext()
        return ember.autocast(device.split(":")[0], dtype=getattr(ember, amp))

    def ember_step():
        eopt.zero_grad()
        with ember_region():
            loss = eloss(ours(ex), ey)
        loss.backward()
        eopt.step()

    torch_step = None
    if theirs is not None:
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        topt = torch.optim.SGD(theirs.parameters(), lr=0.01, momentum=0.9)
        tloss = torch.nn.CrossEntropyLoss()

        def torch_region():
            if amp is None:
                return contextlib.nullcontext()
            return torch.autocast("cpu", dtype=getattr(torch, amp))

        def torch_step():
            topt.zero_grad()
            with torch_region():
                loss = tloss(theirs(tx), ty)
            loss.backward()
            topt.step()
    sync = None
    if device != "cpu":
        backend = ex._backend
        sync = lambda: backend.synchronize()  # noqa: E731
    return ember_step, torch_step, sync


WORKLOADS = {  # name: (title, steps a timing, goal of ember/PyTorch on the CPU)
    "mlp": ("MLP 784-512-256-10, batch 128", 30, "<= 0.9x"),
    "cnn": ("CNN conv32-conv64-fc128, 28x28, batch 64", 5, "<= 0.9x"),
    "lstm": ("LSTM(32->128) T=50 + linear, batch 32", 5, "<= 1.0x"),
    "tiny": ("tiny MLP 8-8-8 tanh, batch 4", 300, "<= 0.8x"),
}


COMPILED_GOALS = {"mlp": 1.1, "cnn": 1.1, "lstm": 1.5, "tiny": 1.5}


_SAMPLER = """
import os, sys, select
page = os.sysconf("SC_PAGE_SIZE")
path = f"/proc/{sys.argv[1]}/statm"
peak = 0
print("ready", flush=True)
while not select.select([sys.stdin], [], [], 0)[0]:  # until the parent writes a line
    with open(path) as f:
        peak = max(peak, int(f.read().split()[1]) * page)
print(peak)
"""


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_step_bytes(step, sync=None, warmup: int = 3, steps: int = 5,
                    span_s: float = 0.5) -> int:
    """How many bytes `step` raises the process's resident memory above where it stood
    before, after `warmup` calls: the most a sampling process (reading /proc/<pid>/statm
    in a loop, so the sampling takes nothing from this process) saw over at least
    `steps` calls and `span_s` seconds. Linux only."""
    import subprocess
    import time

    for _ in range(warmup):
        step()
    if sync is not None:
        sync()
    before = _resident_bytes()
    sampler = subprocess.Popen([sys.executable, "-c", _SAMPLER, str(os.getpid())],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    sampler.stdout.readline()  # sampling now
    start, done = time.perf_counter(), 0
    while done < steps or time.perf_counter() - start < span_s:
        step()
        done += 1
    if sync is not None:
        sync()
    out, _ = sampler.communicate("stop\n")
    return max(0, int(out.split()[-1]) - before)


def _child(framework: str, names: list[str], device: str, amp: str | None = None,
           memory: bool = False) -> None:
    """Time one framework's steps and print {name: seconds} as JSON (see common.in_child);
    with `memory`, {name: peak bytes of one step} instead."""
    import json

    times = {}
    for name in names:
        _, number, _ = WORKLOADS[name]
        ember_step, torch_step, sync = _step_fns(name, device, amp)
        if memory:
            step = ember_step if framework.startswith("ember") else torch_step
            if step is not None:
                times[name] = peak_step_bytes(step, sync if step is ember_step else None)
            continue
        if framework == "ember":
            times[name] = best_time(ember_step, number, repeat=5, sync=sync)
        elif framework == "ember-compiled":
            step = ember.compile(ember_step)
            for _ in range(3):  # warm-up and the two recordings; then it replays
                step()
            times[name] = best_time(step, number, repeat=5, sync=sync)
        elif torch_step is not None:
            times[name] = best_time(torch_step, number, repeat=5)
    print(json.dumps(times))


def _keep_best(best: dict, times: dict) -> None:
    for name, seconds in times.items():
        best[name] = min(seconds, best.get(name, seconds))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating ember/torch child runs; the best of each is kept")
    parser.add_argument("--amp", choices=["bfloat16", "float16"], default=None,
                        help="run the forward passes under autocast in this dtype")
    parser.add_argument("--no-compiled", action="store_true",
                        help="skip the table of ember.compile against eager")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the table of each step's peak memory")
    parser.add_argument("--child", choices=["ember", "ember-compiled", "torch"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = args.only.split(",")
    if args.child:
        if args.child == "torch":
            _import_torch()
        _child(args.child, names, args.device, args.amp, args.memory)
        return
    _import_torch()
    print(f"ember {ember.__version__} on {args.device}; torch "
          f"{torch.__version__ if torch else 'not installed'} on the CPU; "
          f"{os.cpu_count()} cores; each framework timed in its own process, best of "
          f"{max(args.rounds, 1)} alternating rounds")
    # Rounds alternate the two frameworks, so that a slow spell of a shared machine (other
    # tenants, the kernel's memory scanner) cannot land on one framework only.
    ours: dict = {}
    theirs: dict = {}
    compiled: dict = {}
    amp = ["--amp", args.amp] if args.amp else []
    ember_args = ["--device", args.device] + amp
    for _ in range(max(args.rounds, 1)):
        _keep_best(ours, in_child(__file__, "ember", names, ember_args))
        if not args.no_compiled:
            _keep_best(compiled, in_child(__file__, "ember-compiled", names, ember_args))
        if torch is not None:
            _keep_best(theirs, in_child(__file__, "torch", names, amp))
    rows = [(WORKLOADS[n][0], ours[n], theirs.get(n), WORKLOADS[n][2]) for n in names]
    title = "Training step: forward + backward + SGD(momentum) step"
    print_table(title + (f", autocast {args.amp}" if args.amp else ""), rows)
    if not args.no_memory and os.path.exists("/proc/self/statm"):
        _print_memory(names, ember_args, amp, torch is not None)
    if compiled:
        print("\nThe same step under ember.compile, against ember eager (speed-up = eager "
              "/ compiled) and PyTorch eager")
        print(f"{'workload':44s} {'compiled':>11s} {'eager':>11s} {'speed-up':>9s} "
              f"{'vs torch':>9s}  goal")
        for n in names:
            vs_torch = f"{compiled[n] / theirs[n]:8.2f}x" if theirs.get(n) else "        -"
            print(f"{WORKLOADS[n][0]:44s} {fmt_time(compiled[n])} {fmt_time(ours[n])} "
                  f"{ours[n] / compiled[n]:8.2f}x {vs_torch}  >= {COMPILED_GOALS[n]}x")


def _print_memory(names: list[str], ember_args: list[str], amp: list[str],
                  with_torch: bool) -> None:
    """Each step's peak memory above its steady state, each framework in its own process."""
    # blocks of 64 KiB and up mapped on their own and unmapped when freed, in both: the
    # resident size then follows the memory in use (ember's CPU backend otherwise keeps
    # its heap's peak, backends/cpu/memory.py, and the sampler would see a flat line)
    env = {"MALLOC_MMAP_THRESHOLD_": str(64 << 10), "MALLOC_TRIM_THRESHOLD_": str(64 << 10),
           "EMBER_CPU_MALLOC": "system"}
    # each workload in a process of its own: what an earlier workload left in the heap
    # (its free blocks, its arenas) would otherwise decide what the next one's step costs
    # (measured: the tiny step rose 28 KiB after the MLP's, 0 KiB alone)
    ours, theirs = {}, {}
    for n in names:
        ours.update(in_child(__file__, "ember", [n], ember_args + ["--memory"], env))
        if with_torch:
            theirs.update(in_child(__file__, "torch", [n], amp + ["--memory"], env))
    print("\nPeak memory of one step above the steady state (activations, gradients in "
          "flight, temporaries)")
    print(f"{'workload':44s} {'ember':>11s} {'torch':>11s} {'ember/torch':>12s}  goal")
    for n in names:
        mib = ours[n] / 2 ** 20
        if n in theirs:
            ratio = f"{ours[n] / theirs[n]:11.2f}x" if theirs[n] else f"{'-':>12s}"
            print(f"{WORKLOADS[n][0]:44s} {mib:8.2f} MiB {theirs[n] / 2 ** 20:8.2f} MiB "
                  f"{ratio}  <= 1.0x")
        else:
            print(f"{WORKLOADS[n][0]:44s} {mib:8.2f} MiB {'-':>11s} {'-':>12s}  <= 1.0x")


if __name__ == "__main__":
    main()
