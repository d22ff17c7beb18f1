"""Calibration: measure a device's traits (`ember.core.traits.DeviceTraits`) in a few
seconds, through ember's own dispatch, so the numbers include what every op pays on the
host (argument checks, the result's Tensor, the backend's launch).

Each figure is the best of a few timed rounds: on a busy machine the best round is the
one least disturbed by other work. Under ten seconds for the devices found here (the CPU,
OpenCL on PoCL, the example plugin); `ember devices --calibrate` runs it.

`traits_of(device)` is the policy the scheduler asks: the traits used in this process,
else the cached ones, else measured now (and cached). When the cache cannot be written
(a read-only folder), measuring would repeat in every process: it uses defaults instead
and says so once.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from typing import Any

from ember.core import plugins, traits
from ember.core.device import device as Device

MATMUL_SIZES = (64, 256, 1024)
ELEMENTWISE_SIZES = (1 << 16, 1 << 22)  # elements: an array in cache, and one far beyond
TRANSFER_BYTES = 16 << 20
ROUND_S = 0.03  # each timed round runs at least this long
ROUNDS = 5


def _best_time(fn: Callable[[], Any], sync: Callable[[], None], budget_s: float = 1.0) -> float:
    """Seconds one call of `fn` takes: the best of `ROUNDS` rounds of repeated calls,
    each at least `ROUND_S` long (waiting for the device at each round's end)."""
    return _best_times({0: fn}, sync, budget_s)[0]


def _best_times(fns: dict[Any, Callable[[], Any]], sync: Callable[[], None],
                budget_s: float = 1.0) -> dict[Any, float]:
    """`_best_time` of several functions, their rounds interleaved: a burst of other
    work on a shared machine then slows one round of each, not every round of one (a
    rate measured in such a burst would be wrong against the others)."""
    reps = {}
    for key, fn in fns.items():
        fn()
        sync()
        start = time.perf_counter()
        fn()
        sync()
        once = max(time.perf_counter() - start, 1e-7)
        reps[key] = max(1, min(1000, int(ROUND_S / once)))
    best = dict.fromkeys(fns, math.inf)
    spent = 0.0
    for _ in range(ROUNDS):
        for key, fn in fns.items():
            start = time.perf_counter()
            for _ in range(reps[key]):
                fn()
            sync()
            elapsed = time.perf_counter() - start
            best[key] = min(best[key], elapsed / reps[key])
            spent += elapsed
        if spent > budget_s * len(fns):
            break
    return best


def _steps(device: Device) -> list[tuple[str, Callable[[dict], None]]]:
    """The measurements of one device, each filling its part of a dict of results."""
    import numpy as np

    from ember.core.opdef import OPS
    from ember.core.tensor import Tensor

    backend = plugins.get_backend(device.type)
    index = device.index or 0

    def sync() -> None:
        backend.synchronize(index)

    def put(shape: tuple[int, ...]) -> Any:
        rng = np.random.default_rng(0)
        return Tensor._from_data(rng.standard_normal(shape, dtype=np.float32), device=device)

    def launch(out: dict) -> None:
        from ember.core.grad_mode import enable_grad

        a, b = put((1,)), put((1,))
        out["launch_s"] = _best_time(lambda: a + b, sync)
        w = put((1,)).requires_grad_(True)
        with enable_grad():  # the same op, now recording its autograd node
            recorded = _best_time(lambda: w + b, sync)
        out["record_s"] = max(0.0, recorded - out["launch_s"])

    def matmul(out: dict) -> None:
        fns = {}
        for n in MATMUL_SIZES:
            a, b = put((n, n)), put((n, n))
            fns[n] = lambda a=a, b=b: a @ b
        best = _best_times(fns, sync)
        rates, fastest = {}, 0.0
        for n in MATMUL_SIZES:
            # a larger matmul is taken as never slower a FLOP than a smaller one: a dip is
            # other work's (a shared machine's BLAS threads waiting for a core), and a
            # step timed at its best would not see it either
            fastest = max(fastest, 2.0 * n ** 3 / best[n] / 1e9)
            rates[n] = fastest
        out["matmul_gflops"] = rates

    def elementwise(out: dict) -> None:
        fns = {}
        for n in ELEMENTWISE_SIZES:
            a, b = put((n,)), put((n,))
            fns[3 * 4 * n] = lambda a=a, b=b: a + b  # bytes moved: two reads, one write
        best = _best_times(fns, sync)
        out["elementwise_gbs"] = {
            moved: moved / max(seconds - out.get("launch_s", 0.0), 1e-9) / 1e9
            for moved, seconds in best.items()}
        a = put((1 << 20,))
        flops = OPS["exp"].cost(a).flops  # what the cost model will charge an exp
        out["vector_gflops"] = flops / _best_time(a.exp, sync) / 1e9

    def transfers(out: dict) -> None:
        if device.type == "cpu":  # the host's own memory: nothing to move
            out["h2d_gbs"] = out["d2h_gbs"] = math.inf
            return
        host = np.ones(TRANSFER_BYTES // 4, np.float32)
        buf = backend.from_numpy(host, index)
        out["h2d_gbs"] = TRANSFER_BYTES / _best_time(
            lambda: backend.from_numpy(host, index), sync, 0.5) / 1e9
        out["d2h_gbs"] = TRANSFER_BYTES / _best_time(
            lambda: backend.to_numpy(buf), sync, 0.5) / 1e9

    return [("launch latency", launch), ("matmul GFLOP/s", matmul),
            ("elementwise GB/s", elementwise), ("host<->device GB/s", transfers)]


def measure(devices: list[Device], progress: bool = True) -> list[traits.DeviceTraits]:
    """Measure each device's traits, with one tqdm progress bar over all the steps."""
    from ember.core.grad_mode import no_grad

    plans = [(d, _steps(d)) for d in devices]
    total = sum(len(steps) for _, steps in plans)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, desc="ember: calibrating", unit="step", leave=False)
    results = []
    try:
        with no_grad():
            for device, steps in plans:
                out: dict[str, Any] = {}
                for label, step in steps:
                    if bar is not None:
                        bar.set_postfix_str(f"{device}: {label}")
                    step(out)
                    if bar is not None:
                        bar.update(1)
                results.append(traits.DeviceTraits(
                    device=str(device), key=traits.device_key(device),
                    memory_free=traits.free_memory(device), **out))
    finally:
        if bar is not None:
            bar.close()
    return results


_memo: dict[str, traits.DeviceTraits] = {}  # device -> traits used in this process
_told_defaults = False


def _normalise(device: Any) -> Device:
    device = Device(device)
    if device.type == "cpu":
        return Device("cpu")
    return device if device.index is not None else Device(device.type, 0)


def prepare(devices: list[Any], progress: bool = True) -> None:
    """Measure, under one progress bar, those of `devices` with no traits yet (nothing
    when the cache cannot be written: `traits_of` then uses defaults)."""
    missing = [d for d in map(_normalise, devices)
               if str(d) not in _memo and traits.load(d) is None]
    if missing and traits.cache_writable():
        measure_and_save(missing, progress=progress)


def traits_of(device: Any, calibrate: bool = True,
              progress: bool = True) -> traits.DeviceTraits:
    """The traits of `device`: remembered, else cached, else measured now (and cached).

    When the cache cannot be written, measuring would repeat in every process: defaults
    are used instead, with a one-time notice. `calibrate=False` never measures.
    """
    global _told_defaults
    device = _normalise(device)
    name = str(device)
    if name in _memo:
        return _memo[name]
    t = traits.load(device)
    if t is None:
        if calibrate and traits.cache_writable():
            t = measure_and_save([device], progress=progress)[0]
        else:
            backend = plugins.get_backend(device.type)
            info = backend.device_info(device.index or 0)
            t = traits.default_traits(device, traits.device_key(device), traits.free_memory(device),
                               info.peak_gflops)
            if calibrate and not _told_defaults:
                _told_defaults = True
                warnings.warn(f"ember: cannot write the device-trait cache in "
                              f"{traits.cache_dir()}; 'auto' plans with default device "
                              "traits (set EMBER_CACHE_DIR to a writable folder, then run "
                              "`ember devices --calibrate`)", stacklevel=2)
    else:
        t.memory_free = traits.free_memory(device)  # free memory changes: ask again each process
    _memo[name] = t
    return t


def measure_and_save(devices: list[Device], progress: bool = True) -> list[traits.DeviceTraits]:
    """Calibrate `devices` (one progress bar for all) and cache what was measured."""
    measured = measure(devices, progress=progress)
    for t in measured:
        _memo[t.device] = t
        try:
            traits.save(t)
        except OSError as err:
            warnings.warn(f"ember: could not cache the traits of {t.device}: {err}",
                          stacklevel=2)
    return measured


def forget() -> None:
    """Drop the traits remembered in this process (the cache files stay)."""
    global _told_defaults
    _memo.clear()
    _told_defaults = False


def remember(t: traits.DeviceTraits) -> None:
    """Use `t` for its device in this process (given traits: tests, what-if plans)."""
    _memo[t.device] = t
