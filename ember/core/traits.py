"""Device traits: what the scheduler knows of each device, measured once and cached.

A device's traits are a few numbers a short calibration measures through ember's own
dispatch (`ember.core.calibration`): the time one small op takes end to end (ember's
dispatch plus the device's launch), matmul GFLOP/s at a few sizes, elementwise GB/s,
host<->device GB/s, and free memory. They are cached as JSON in the user's cache
directory (`platformdirs.user_cache_dir("ember")`, or `$EMBER_CACHE_DIR`), one file per
device, keyed by the device's name and driver: another device or driver is measured
afresh. A file that does not parse or holds nonsense is measured again, not trusted.
Measuring, and the policy of when to measure, is `ember.core.calibration`'s.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ember.core import plugins
from ember.core.backend import cache_dir
from ember.core.device import device as Device

FORMAT = 1
"""The cache files' format version; another version is measured again."""


@dataclass
class DeviceTraits:
    """What the cost model needs to know of one device.

    Attributes:
        device: the device string (`"cpu"`, `"opencl:0"`).
        key: the device's name and driver; the cache entry is valid only for this key.
        launch_s: seconds one tiny op takes, end to end through ember's dispatch.
        record_s: the extra seconds an op pays while autograd records it (its node).
        matmul_gflops: square matmul size n -> measured float32 GFLOP/s.
        vector_gflops: FLOP/s of elementwise arithmetic (a transcendental op), GFLOP/s.
        elementwise_gbs: bytes size -> measured GB/s of an elementwise op (reads + write).
        h2d_gbs, d2h_gbs: host -> device and device -> host GB/s (inf on the CPU).
        memory_free: bytes free for tensors (None: unknown).
        measured: False for the defaults used when nothing could be measured.
    """

    device: str
    key: str
    launch_s: float
    record_s: float
    matmul_gflops: dict[int, float]
    vector_gflops: float
    elementwise_gbs: dict[int, float]
    h2d_gbs: float
    d2h_gbs: float
    memory_free: int | None
    measured: bool = True
    measured_at: float = field(default_factory=time.time)

    # -- rates the cost model reads ---------------------------------------------------
    def matmul_rate(self, flops: float) -> float:
        """FLOP/s of a matmul of `flops` FLOPs: the measured rates, interpolated in
        log(FLOPs) between the square sizes measured (2*n^3 FLOPs each)."""
        return _interpolate({2.0 * n ** 3: g for n, g in self.matmul_gflops.items()},
                            flops) * 1e9

    def bandwidth(self, nbytes: float) -> float:
        """Bytes/s of elementwise traffic of `nbytes` bytes (small arrays sit in caches)."""
        return _interpolate({float(b): g for b, g in self.elementwise_gbs.items()},
                            nbytes) * 1e9

    def transfer_s(self, nbytes: float, to_device: bool = True) -> float:
        """Seconds to move `nbytes` between the host and this device (0 on the CPU)."""
        rate = self.h2d_gbs if to_device else self.d2h_gbs
        return 0.0 if math.isinf(rate) or nbytes == 0 else nbytes / (rate * 1e9)

    # -- the cache's form ---------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["format"] = FORMAT
        for k in ("h2d_gbs", "d2h_gbs"):  # JSON has no infinity
            d[k] = None if math.isinf(d[k]) else d[k]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DeviceTraits:
        """Traits from a cache file's contents; ValueError for anything malformed."""
        try:
            if d.get("format") != FORMAT:
                raise ValueError(f"format {d.get('format')!r}, expected {FORMAT}")
            t = cls(device=str(d["device"]), key=str(d["key"]), launch_s=float(d["launch_s"]),
                    record_s=float(d["record_s"]),
                    matmul_gflops={int(k): float(v) for k, v in d["matmul_gflops"].items()},
                    vector_gflops=float(d["vector_gflops"]),
                    elementwise_gbs={int(k): float(v) for k, v in d["elementwise_gbs"].items()},
                    h2d_gbs=math.inf if d["h2d_gbs"] is None else float(d["h2d_gbs"]),
                    d2h_gbs=math.inf if d["d2h_gbs"] is None else float(d["d2h_gbs"]),
                    memory_free=None if d["memory_free"] is None else int(d["memory_free"]),
                    measured=bool(d["measured"]), measured_at=float(d["measured_at"]))
        except (KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"missing or mistyped field: {err}") from None
        if t.record_s < 0 or math.isnan(t.record_s):
            raise ValueError("record_s is negative or NaN")
        rates = [t.launch_s, t.vector_gflops, t.h2d_gbs, t.d2h_gbs,
                 *t.matmul_gflops.values(), *t.elementwise_gbs.values()]
        if not t.matmul_gflops or not t.elementwise_gbs or \
                not all(r > 0 and not math.isnan(r) for r in rates):
            raise ValueError("a rate is missing, zero, negative or NaN")
        return t


def _interpolate(points: dict[float, float], x: float) -> float:
    """Piecewise-linear in log(x) through `points`, flat beyond the ends."""
    xs = sorted(points)
    if x <= xs[0]:
        return points[xs[0]]
    if x >= xs[-1]:
        return points[xs[-1]]
    for lo, hi in zip(xs, xs[1:]):
        if x <= hi:
            w = (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))
            return points[lo] * (1 - w) + points[hi] * w
    return points[xs[-1]]  # unreachable


# -- defaults: used when nothing can be measured ------------------------------------------

def default_traits(device: Device, key: str = "", memory_free: int | None = None,
                   peak_gflops: float | None = None) -> DeviceTraits:
    """Modest guesses: a 2-core CPU, and an accelerator that is faster at large work and
    slower to start an op. `peak_gflops` (a backend's own figure) replaces the guess."""
    if device.type == "cpu":
        return DeviceTraits(str(device), key, 15e-6, 15e-6, {64: 10.0, 256: 50.0, 1024: 100.0}, 1.0,
                            {1 << 20: 20.0, 1 << 26: 8.0}, math.inf, math.inf, memory_free,
                            measured=False)
    peak = peak_gflops or 1000.0
    return DeviceTraits(str(device), key, 30e-6, 15e-6,
                        {64: peak / 100, 256: peak / 10, 1024: peak / 2}, peak / 50,
                        {1 << 20: 50.0, 1 << 26: 200.0}, 8.0, 8.0, memory_free,
                        measured=False)


# -- where the traits live ----------------------------------------------------------------

def cache_file(device: Device) -> Path:
    return cache_dir() / f"traits-{re.sub(r'[^A-Za-z0-9_.-]', '_', str(device))}.json"


def device_key(device: Device) -> str:
    """The device's name and driver, as its backend reports them: the cache's key."""
    backend = plugins.get_backend(device.type)
    info = backend.device_info(device.index or 0)
    driver = info.details.get("driver") or info.details.get("blas") or ""
    if device.type == "cpu":
        import numpy

        driver = f"numpy {numpy.__version__}; {driver}"
    return f"{device.type}: {info.name}; {driver}".strip()


def free_memory(device: Device) -> int | None:
    """Bytes free for tensors on `device`: the host's available memory for the CPU, the
    backend's figure (`details['free memory']`) or its total memory otherwise."""
    if device.type == "cpu":
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
    backend = plugins.get_backend(device.type)
    info = backend.device_info(device.index or 0)
    free = info.details.get("free memory")
    return int(free) if isinstance(free, (int, float)) else info.memory_bytes


def load(device: Device) -> DeviceTraits | None:
    """The cached traits of `device`, or None when there are none valid for it (absent,
    another device or driver, or corrupt: a corrupt file is reported and ignored)."""
    path = cache_file(device)
    try:
        text = path.read_text()
    except OSError:
        return None
    try:
        t = DeviceTraits.from_json(json.loads(text))
    except (ValueError, json.JSONDecodeError) as err:
        warnings.warn(f"ember: the trait cache {path} is corrupt ({err}); measuring "
                      f"{device} again", stacklevel=3)
        return None
    return t if t.key == device_key(device) else None


def save(t: DeviceTraits) -> Path:
    """Write traits to the cache (atomically: a crash never leaves half a file)."""
    path = cache_file(Device(t.device))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(t.to_json(), indent=1, sort_keys=True))
    os.replace(tmp, path)
    return path


def cache_writable() -> bool:
    """Whether the cache folder can be created and written."""
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / f".probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        return True
    except OSError:
        return False
