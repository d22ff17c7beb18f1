"""The `ember onnx run` command: run an ONNX model with ember on a device, from `.npy`
inputs, and optionally compare with onnxruntime (`--check`)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

__all__ = ["add_parser", "run"]

RTOL, ATOL = 1e-4, 1e-5


def add_parser(sub: Any) -> None:
    """Add `onnx run` to the `ember` command's subparsers."""
    p = sub.add_parser("onnx", help="run ONNX models with ember")
    onnx_sub = p.add_subparsers(dest="onnx_command", required=True)
    r = onnx_sub.add_parser("run", help="run an ONNX model on an ember device",
                            description="Run MODEL.onnx with ember ops on a device.")
    r.add_argument("model", metavar="MODEL.onnx", help="the ONNX model file to run")
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input of the model, from a .npy file (repeat for each input)")
    r.add_argument("--device", default="cpu", help="cpu, opencl, cuda, or a plugin's "
                   "device (default: cpu)")
    r.add_argument("--check", action="store_true", help="also run onnxruntime on the "
                   "same inputs and print the largest difference per output")
    r.add_argument("--save", metavar="DIR", default=None,
                   help="write each output to DIR/<output name>.npy")


def _parse_inputs(specs: list[str]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--input {spec!r}: expected NAME=FILE.npy")
        if name in out:
            raise ValueError(f"--input {name!r} given twice")
        try:
            out[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise ValueError(f"--input {name}: cannot read {path!r} as a .npy file: "
                             f"{err}") from err
    return out


def _describe(spec: Any) -> str:
    from onnx import TensorProto

    tt = spec.type.tensor_type
    dims = ["?" if not d.HasField("dim_value") else str(d.dim_value) for d in tt.shape.dim]
    return f"{spec.name} ({TensorProto.DataType.Name(tt.elem_type).lower()}[{', '.join(dims)}])"


def run(args: argparse.Namespace) -> int:
    """`ember onnx run`: returns the exit status (0, or 1 with the error on stderr)."""
    import ember
    from ember.exporters.onnx_import import load
    from ember.exporters.onnx_import_context import from_array
    from ember.exporters.onnx_import_strings import is_strings

    try:
        model = load(args.model, device=args.device)
        arrays = _parse_inputs(args.input)
        specs = model.input_specs
        unknown = sorted(set(arrays) - set(model.input_names))
        missing = [s for s in specs if s.name not in arrays]
        if unknown or missing:
            parts = []
            if unknown:
                parts.append(f"the model has no input {', '.join(map(repr, unknown))}")
            if missing:
                parts.append("missing --input for " + ", ".join(_describe(s) for s in missing))
            raise ValueError("; ".join(parts) + " (the model's inputs: " +
                             ", ".join(_describe(s) for s in specs) + ")")
        inputs = {n: a if is_strings(a) else from_array(a).to(args.device)  # strings: host
                  for n, a in arrays.items()}
        with ember.no_grad():
            out = model(**inputs)
    except (OSError, ValueError, TypeError, RuntimeError, NotImplementedError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    outs = out if isinstance(out, tuple) else (out,)
    # strings come back as NumPy object arrays: saved as str arrays (no pickle to load)
    results = {name: o.astype(str) if is_strings(o) else o.cpu().numpy()
               for name, o in zip(model.output_names, outs)}
    print(f"ran {args.model} on {args.device}")
    for name, value in results.items():
        print(f"  {name}: {value.dtype}{list(value.shape)}  "
              f"{np.array2string(value.reshape(-1)[:6], precision=5)}"
              f"{' ...' if value.size > 6 else ''}")
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        for name, value in results.items():
            np.save(os.path.join(args.save, f"{_filename(name)}.npy"), value)
    if args.check:
        return _check(args.model, arrays, results)
    return 0


def _filename(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _check(path: str, arrays: dict[str, np.ndarray], results: dict[str, np.ndarray]) -> int:
    from ember.exporters.onnx_import_strings import is_strings

    try:
        import onnxruntime as ort
    except ImportError:
        print("error: --check needs onnxruntime: pip install 'ember[onnx]'", file=sys.stderr)
        return 1
    try:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = session.run(list(results), arrays)
    except Exception as err:  # onnxruntime's own errors have no common base class
        print(f"error: onnxruntime cannot run the model: {type(err).__name__}: {err}",
              file=sys.stderr)
        return 1
    worst_ok = True
    print("check against onnxruntime:")
    for (name, got), ref in zip(results.items(), want):
        ref = np.asarray(ref)
        if got.shape != ref.shape:
            print(f"  {name}: shape {list(got.shape)} but onnxruntime gives "
                  f"{list(ref.shape)}")
            worst_ok = False
            continue
        if is_strings(got):
            ok = bool(np.array_equal(got, ref.astype(str)))
            worst_ok &= ok
            print(f"  {name}: strings {'equal (ok)' if ok else 'differ (MISMATCH)'}")
            continue
        diff = np.abs(got.astype(np.float64) - ref.astype(np.float64)) if got.size else \
            np.zeros(1)
        largest = float(np.nanmax(diff)) if diff.size else 0.0
        ok = bool(np.allclose(got.astype(np.float64), ref.astype(np.float64), rtol=RTOL,
                              atol=ATOL, equal_nan=True))
        worst_ok &= ok
        print(f"  {name}: largest difference {largest:.3g} "
              f"({'ok' if ok else 'MISMATCH'}: rtol={RTOL}, atol={ATOL})")
    return 0 if worst_ok else 1
