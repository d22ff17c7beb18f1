"""`ember devices --calibrate` and `ember devices --explain SPEC --input-shape ...`, and
the traits `ember devices` shows (ember.cli parses the arguments and calls these)."""

from __future__ import annotations

import argparse
import math
import sys

from ember.core import calibration, scheduler, traits
from ember.core.device import device as Device
from ember.core.scheduler import fmt_bytes, fmt_time


def trait_lines(device: Device | str) -> list[str]:
    """The cached traits of one device, for `ember devices` (nothing is measured)."""
    device = Device(device)
    try:
        t = traits.load(device)
    except Exception as err:  # a listing must not fail on a trait cache
        return [f"traits: unreadable ({type(err).__name__}: {err})"]
    if t is None:
        return ["traits: not measured yet (`ember devices --calibrate`)"]
    mm = ", ".join(f"{n}: {g:.1f}" for n, g in sorted(t.matmul_gflops.items()))
    ew = ", ".join(f"{fmt_bytes(b)}: {g:.1f}" for b, g in sorted(t.elementwise_gbs.items()))
    lines = [f"traits: op latency {fmt_time(t.launch_s)}; matmul GFLOP/s (n^3) {mm}",
             f"        elementwise GB/s {ew}; vector {t.vector_gflops:.1f} GFLOP/s"]
    if not math.isinf(t.h2d_gbs):
        lines.append(f"        host->device {t.h2d_gbs:.1f} GB/s, device->host "
                     f"{t.d2h_gbs:.1f} GB/s")
    lines.append(f"        free memory {fmt_bytes(t.memory_free)} (when measured)")
    return lines


def calibrate() -> int:
    """Measure every available device again and print what was measured."""
    devices = scheduler.candidate_devices(accelerators_only=False)
    if not traits.cache_writable():
        print(f"error: cannot write the trait cache folder {traits.cache_dir()} (set "
              "EMBER_CACHE_DIR to a writable folder)", file=sys.stderr)
        return 1
    calibration.forget()
    measured = calibration.measure_and_save(devices, progress=True)
    print(f"calibrated {len(measured)} device(s); cached in {traits.cache_dir()}")
    for t in measured:
        print(f"  {t.device}:")
        for line in trait_lines(Device(t.device)):
            print(f"    {line}")
    return 0


def explain(args: argparse.Namespace) -> int:
    """Print the plan of a model spec (SPEC as `ember export`'s) at --input-shape."""
    import ember
    from ember.exporters.cli import CLIError, _example, _one_line, load_model, parse_shape

    prog = "ember devices --explain"
    try:
        if not args.input_shape:
            raise CLIError("--explain SPEC needs --input-shape (e.g. 64,1,28,28)", 2)
        shape = parse_shape(args.input_shape)
        dtype = getattr(ember, args.input_dtype, None)
        if not isinstance(dtype, ember.dtype):
            raise CLIError(f"--input-dtype {args.input_dtype!r} is not an ember dtype", 2)
        model = load_model(args.explain)
        example = _example(shape, dtype)
        try:
            plan = ember.plan(model, example, training=not args.inference)
        except Exception as err:
            raise CLIError(f"running {type(model).__name__} on an input of shape "
                           f"{list(shape)} failed: {type(err).__name__}: {_one_line(err)}") \
                from err
    except CLIError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return err.code
    print(plan)
    return 0


def run(args: argparse.Namespace) -> int | None:
    """The scheduler's part of `ember devices`: a status when it handled the command,
    None when the plain listing should run."""
    if args.calibrate:
        return calibrate()
    if isinstance(args.explain, str):
        return explain(args)
    return None


def auto_line() -> str:
    return scheduler.describe_auto()

