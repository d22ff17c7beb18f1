"""The scheduler's estimates against measured training steps, and what "auto" picks.

    python benchmarks/bench_scheduler.py [--devices cpu,opencl:0,countdev:0]
                                         [--only accuracy,grid] [--repeat 7] [--trials N]

Part 1 (accuracy): for the MLP, CNN, LSTM and tiny-MLP training steps of
bench_train.py, `ember.plan`'s estimate on each device beside the measured step time
(goal: within 2x). Part 2 (grid): MLPs of several widths x batch sizes; for each cell
the measured step on every device, the device measurement shows fastest, and the one
`ember.plan` chooses (goals: the fastest in >= 90% of the cells, never > 1.2x slower).

Traits come from the cache (`ember devices --calibrate` measures them). Steps are timed
as in bench_train.py: SGD with momentum and cross-entropy, best of `--repeat` rounds,
the devices of a workload timed in alternation. The plan is made for the same step (the
model with its cross-entropy loss). On a shared machine, each workload is planned and
measured `--trials` times, the workloads in alternation: each device's best measured
step is kept, and the plan recorded in the quietest moment.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

import ember  # noqa: E402

GRID_WIDTHS = (16, 128, 512, 2048)
GRID_BATCHES = (4, 64, 512)


def _accuracy_model(name: str):
    from bench_train import _models

    model, _, shape = _models(name)
    return model, shape, 8 if name == "tiny" else 10


def _mlp(width: int, classes: int = 10):
    from ember import nn

    return nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, classes))


def _step(model, shape: tuple, classes: int, device: str):
    """One training step of a copy of `model` on `device`, and the wait for the device."""
    import copy

    model = copy.deepcopy(model).to(device)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal(shape, dtype=np.float32), device=device)
    y = ember.tensor(rng.integers(0, classes, shape[0]), device=device)
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = ember.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step, x._backend.synchronize


def measure_steps(model, shape: tuple, classes: int, devices: list[str], repeat: int = 7,
                  budget_s: float = 0.5) -> dict[str, float]:
    """Seconds per training step of `model` on each device: the best of `repeat` rounds
    (each about `budget_s / repeat` long), the devices timed in alternation (so a burst
    of load on a shared machine hits one round of each, and the best round of each is
    one it missed)."""
    fns = {d: _step(model, shape, classes, d) for d in devices}
    number = {}
    for d, (step, sync) in fns.items():
        step()
        sync()
        start = time.perf_counter()
        step()
        sync()
        once = time.perf_counter() - start
        number[d] = max(1, min(200, int(budget_s / repeat / max(once, 1e-6))))
    best = dict.fromkeys(devices, float("inf"))
    for _ in range(repeat):
        for d, (step, sync) in fns.items():
            start = time.perf_counter()
            for _ in range(number[d]):
                step()
            sync()
            best[d] = min(best[d], (time.perf_counter() - start) / number[d])
    return best


def measure_step(model, shape: tuple, classes: int, device: str, repeat: int = 7,
                 budget_s: float = 0.5) -> float:
    """Seconds per training step of `model` on `device` (the best of `repeat` rounds)."""
    return measure_steps(model, shape, classes, [device], repeat, budget_s)[device]


class _WithLoss(ember.nn.Module):
    """The model and the cross-entropy loss of the timed step, as one module: the plan
    then records the step that is measured, loss included."""

    def __init__(self, model, classes: int, batch: int):
        super().__init__()
        self.model = model
        rng = np.random.default_rng(0)
        # a buffer: a copy of the model moved to another device takes it along
        self.register_buffer("target", ember.tensor(rng.integers(0, classes, batch)))
        self.loss = ember.nn.CrossEntropyLoss()

    def forward(self, x):
        return self.loss(self.model(x), self.target)


def estimate(model, shape: tuple, devices: list[str], classes: int = 10):
    """The plan for one training step of `model` at `shape` among `devices` (SGD with
    momentum on the cross-entropy loss against `classes` classes)."""
    x = ember.randn(*shape)
    return ember.plan(_WithLoss(model, classes, shape[0]), x, devices=devices)


def _trials(workloads: list, devices: list[str], trials: int, repeat: int) -> dict:
    """For each workload (key, model, shape, classes): its measured step on each device
    and its plan, `trials` times over, the workloads in alternation; kept: each device's
    best measured step, and the plan recorded in the quietest moment (the least source
    step time). A burst of other work on a shared machine then spoils one trial of a
    workload, not the estimate or the measurement of every trial."""
    best: dict = {}
    for _ in range(trials):
        for key, model, shape, classes in workloads:
            plan = estimate(model, shape, devices, classes)
            measured = measure_steps(model, shape, classes, devices, repeat)
            old = best.get(key)
            if old is None:
                best[key] = (measured, plan)
                continue
            quieter = plan.workload.measured_s < old[1].workload.measured_s
            best[key] = ({d: min(measured[d], old[0][d]) for d in devices},
                         plan if quieter else old[1])
    return best


def accuracy(devices: list[str], names=("mlp", "cnn", "lstm", "tiny"), repeat: int = 7,
             trials: int = 3):
    """[(workload, device, estimated s, measured s)]"""
    workloads = [(name, *_accuracy_model(name)) for name in names]
    best = _trials(workloads, devices, trials, repeat)
    return [(name, d, best[name][1].estimate(d).total_s, best[name][0][d])
            for name in names for d in devices]


def grid(devices: list[str], widths=GRID_WIDTHS, batches=GRID_BATCHES, repeat: int = 7,
         trials: int = 2):
    """[(width, batch, {device: measured s}, {device: estimated s}, chosen device)]"""
    workloads = []
    for w in widths:
        for b in batches:
            ember.manual_seed(0)
            workloads.append(((w, b), _mlp(w), (b, 256), 10))
    best = _trials(workloads, devices, trials, repeat)
    rows = []
    for (w, b), _, _, _ in workloads:
        measured, plan = best[(w, b)]
        rows.append((w, b, measured, {d: plan.estimate(d).total_s for d in devices},
                     str(plan.device)))
    return rows


def grid_score(rows) -> tuple[float, float]:
    """(share of cells where the choice is the measured fastest, worst slowdown ratio).
    A choice within 5% of the fastest counts as the fastest (timing noise)."""
    hits, worst = 0, 1.0
    for _, _, measured, _, chosen in rows:
        best = min(measured.values())
        ratio = measured[chosen] / best
        worst = max(worst, ratio)
        hits += ratio <= 1.05
    return hits / len(rows), worst


def _ms(s: float) -> str:
    return f"{s * 1e3:9.3f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default=None, help="comma-separated (default: every "
                        "available device)")
    parser.add_argument("--only", default="accuracy,grid")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--trials", type=int, default=None, help="plans and measurements "
                        "of each workload, the best kept (default: 3 for accuracy, 2 for "
                        "the grid)")
    args = parser.parse_args(argv)
    devices = args.devices.split(",") if args.devices else [str(d) for d in ember.devices()]
    parts = args.only.split(",")
    if "accuracy" in parts:
        print(f"Estimated vs measured training step (ms), devices {', '.join(devices)}")
        print(f"{'workload':8} {'device':11} {'estimate':>9} {'measured':>9} {'ratio':>6}")
        for name, d, est, meas in accuracy(devices, repeat=args.repeat,
                                                 trials=args.trials or 3):
            print(f"{name:8} {d:11} {_ms(est)} {_ms(meas)} {est / meas:6.2f}")
        print()
    if "grid" in parts:
        rows = grid(devices, repeat=args.repeat, trials=args.trials or 2)
        print("Grid: MLP 256-W-W-10, training step (ms): measured / estimated per device")
        head = f"{'width':>5} {'batch':>5} " + " ".join(f"{d:>21}" for d in devices)
        print(head + f" {'fastest':>11} {'auto':>11} {'slowdown':>8}")
        for w, b, measured, est, chosen in rows:
            fastest = min(measured, key=measured.get)
            cells = " ".join(f"{_ms(measured[d])} /{_ms(est[d])}" for d in devices)
            print(f"{w:5d} {b:5d} {cells} {fastest:>11} {chosen:>11} "
                  f"{measured[chosen] / measured[fastest]:8.2f}")
        share, worst = grid_score(rows)
        print(f"\n'auto' picked the measured fastest in {share:.0%} of {len(rows)} cells "
              f"(goal >= 90%); worst slowdown {worst:.2f}x (goal <= 1.2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
