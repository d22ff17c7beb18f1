"""`ember export`: export a model to ONNX from the command line.

    ember export path/to/model.py:make_model -o model.onnx --input-shape 1,1,28,28 \\
        --dynamic-batch --checkpoint weights.ember --check

SPEC names the model: ``path/to/file.py:name`` (the file is imported by path) or
``package.module:name``; ``name`` is a class or factory called with no arguments (or an
``nn.Module`` instance). Exit status: 0 on success, 2 for a bad argument (SPEC, shape,
dtype, opset), 1 when the export or its check fails. Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
from typing import Any

PROG = "ember export"
RTOL, ATOL = 1e-4, 1e-5


class CLIError(Exception):
    """A failure to report as one line (exit status `code`)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text or type(err).__name__


def parse_shape(text: str) -> tuple[int, ...]:
    """'1,1,28,28' -> (1, 1, 28, 28); positive integers only."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise CLIError(f"--input-shape {text!r}: give comma-separated positive sizes, e.g. "
                       "1,1,28,28", 2)
    sizes = []
    for p in parts:
        try:
            n = int(p)
        except ValueError:
            raise CLIError(f"--input-shape {text!r}: {p!r} is not an integer", 2) from None
        if n <= 0:
            raise CLIError(f"--input-shape {text!r}: sizes must be positive integers, got {n}",
                           2)
        sizes.append(n)
    return tuple(sizes)


def _import_file(path: str) -> Any:
    if not os.path.isfile(path):
        raise CLIError(f"SPEC: no such file: {path}", 2)
    name = "_ember_export_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"SPEC: cannot import {path} (not a Python file?)", 2)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)  # sibling imports, as `python file.py` allows
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        sys.modules.pop(name, None)
        raise CLIError(f"SPEC: importing {path} failed: {type(err).__name__}: "
                       f"{_one_line(err)}") from err
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    return module


def load_model(spec: str) -> Any:
    """The `nn.Module` that SPEC names."""
    import ember

    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise CLIError(f"SPEC {spec!r} must be path/to/file.py:name or package.module:name",
                       2)
    is_file = where.endswith(".py") or os.sep in where or "/" in where or os.path.exists(where)
    if is_file:
        module = _import_file(where)
    else:
        # The current folder first, as `python -m` has it: a console script lacks it.
        added = os.getcwd() not in sys.path
        if added:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(where)
        except ImportError as err:
            raise CLIError(f"SPEC: cannot import module {where!r}: {_one_line(err)}", 2) \
                from err
        except Exception as err:
            raise CLIError(f"SPEC: importing {where} failed: {type(err).__name__}: "
                           f"{_one_line(err)}") from err
        finally:
            if added and os.getcwd() in sys.path:
                sys.path.remove(os.getcwd())
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CLIError(f"SPEC: {where} has no attribute {attr!r}", 2)
        obj = getattr(obj, part)
    if isinstance(obj, ember.nn.Module):
        return obj
    if not callable(obj):
        raise CLIError(f"SPEC: {where}:{attr} is of type {type(obj).__name__}, not an "
                       "nn.Module class or a factory", 2)
    try:
        model = obj()
    except Exception as err:
        raise CLIError(f"SPEC: calling {attr}() failed: {type(err).__name__}: "
                       f"{_one_line(err)}") from err
    if not isinstance(model, ember.nn.Module):
        raise CLIError(f"SPEC: {attr}() returned a {type(model).__name__}, not an "
                       "ember.nn.Module", 2)
    return model


def _keys(names: list[str]) -> str:
    shown = ", ".join(names[:8])
    return shown + (f", ... ({len(names) - 8} more)" if len(names) > 8 else "")


def load_checkpoint(model: Any, path: str) -> None:
    """Load an `ember.save` file (a state dict, or a dict with a "model" state dict)."""
    import ember

    if not os.path.isfile(path):
        raise CLIError(f"--checkpoint: no such file: {path}")
    try:
        saved = ember.load(path, map_location="cpu")
    except Exception as err:
        raise CLIError(f"--checkpoint {path}: cannot read it: {type(err).__name__}: "
                       f"{_one_line(err)}") from err
    state = saved.get("model", saved) if isinstance(saved, dict) and \
        isinstance(saved.get("model"), dict) else saved
    if not isinstance(state, dict):
        raise CLIError(f"--checkpoint {path} holds a {type(state).__name__}, not a state dict")
    expected = list(model.state_dict())
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in set(expected)]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing keys: {_keys(missing)}")
        if unexpected:
            parts.append(f"unexpected keys: {_keys(unexpected)}")
        raise CLIError(f"--checkpoint {path} does not match {type(model).__name__}: "
                       + "; ".join(parts))
    try:
        model.load_state_dict(state, strict=True)
    except Exception as err:
        raise CLIError(f"--checkpoint {path} does not match {type(model).__name__}: "
                       f"{_one_line(err)}") from err


def _example(shape: tuple[int, ...], dtype: Any) -> Any:
    import ember

    if dtype.is_floating_point:
        return ember.randn(*shape, dtype=dtype)
    if dtype is ember.bool:
        return ember.rand(*shape) > 0.5
    return ember.randint(0, 2, shape, dtype=dtype)  # valid ids for any embedding


def _flat(out: Any) -> list:
    import ember

    if isinstance(out, ember.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _flat(o)]
    return []


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n < 1024 ** 2 else f"{n / 1024 ** 2:.1f} MiB"


def _describe(info: Any) -> str:
    from onnx import helper

    t = info.type.tensor_type
    dims = [d.dim_param if d.dim_param else (str(d.dim_value) if d.HasField("dim_value")
                                             else "?") for d in t.shape.dim]
    return f"{helper.tensor_dtype_to_np_dtype(t.elem_type)}[{', '.join(dims)}]"


def _check(model: Any, path: str, shape: tuple[int, ...], dtype: Any, dynamic: bool) -> str:
    import numpy as np
    import onnx

    import ember

    try:
        import onnxruntime as ort
    except ImportError:
        raise CLIError("--check needs onnxruntime: pip install 'ember[onnx]'") from None
    onnx.checker.check_model(path, full_check=True)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    batches = [shape[0]] if shape else [None]
    if dynamic and shape:
        batches.append(shape[0] + 2)
    report = []
    for batch in batches:
        sample = _example((batch,) + shape[1:] if shape else shape, dtype)
        with ember.no_grad():
            want = [t.detach().numpy(force=True) for t in _flat(model(sample))]
        got = session.run(None, {session.get_inputs()[0].name: sample.numpy()})
        worst = 0.0
        for i, (g, w) in enumerate(zip(got, want)):
            if g.shape != w.shape:
                raise CLIError(f"check failed: onnxruntime's output_{i} has shape "
                               f"{list(g.shape)}, ember's {list(w.shape)} (batch {batch})")
            diff = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) \
                if g.size else 0.0
            worst = max(worst, diff)
            if not np.allclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True):
                raise CLIError(f"check failed: onnxruntime's output_{i} differs from ember's by "
                               f"up to {diff:.3g} at batch {batch} (tolerance rtol={RTOL:g}, "
                               f"atol={ATOL:g})")
        report.append(f"{worst:.3g} at batch {batch}")
    return ("onnx.checker (full_check) passed; onnxruntime vs ember: max |diff| "
            + ", ".join(report) + f" (tolerance rtol={RTOL:g}, atol={ATOL:g})")


def _run(args: argparse.Namespace) -> int:
    import ember

    shape = parse_shape(args.input_shape)
    dtype = getattr(ember, args.input_dtype, None)
    if not isinstance(dtype, ember.dtype):
        raise CLIError(f"--input-dtype {args.input_dtype!r} is not an ember dtype (float32, "
                       "float64, int64 ...)", 2)
    from ember.exporters import onnx as exporter

    if args.opset is not None and not exporter.MIN_OPSET <= args.opset <= exporter.MAX_OPSET:
        raise CLIError(f"--opset {args.opset} is not supported; ember writes opsets "
                       f"{exporter.MIN_OPSET} to {exporter.MAX_OPSET}", 2)
    if args.dynamic_batch and not shape:
        raise CLIError("--dynamic-batch needs an input with at least one dimension", 2)
    path = os.path.abspath(args.output)
    if not os.path.isdir(os.path.dirname(path)):
        raise CLIError(f"-o {args.output}: the folder {os.path.dirname(path)} does not exist",
                       2)
    model = load_model(args.spec)
    if args.checkpoint:
        load_checkpoint(model, args.checkpoint)
    model.eval()
    example = _example(shape, dtype)
    try:
        with ember.no_grad():
            outputs = _flat(model(example))
    except Exception as err:
        raise CLIError(f"running {type(model).__name__} on an input of shape {list(shape)} "
                       f"failed: {type(err).__name__}: {_one_line(err)}") from err
    axes = None
    if args.dynamic_batch:
        axes = {"input_0": {0: "batch"}}
        axes.update({f"output_{i}": {0: "batch"} for i, t in enumerate(outputs) if t.ndim})
    # Written and checked in a private folder beside the output, then moved into place:
    # an export or check that fails leaves an existing output (and its .data) as it was.
    folder = os.path.dirname(path)
    work = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.ember-export-", dir=folder)
    try:
        staged = os.path.join(work, os.path.basename(path))
        _export_and_check(model, example, staged, axes, args, shape, dtype)
        data, staged_data = path + ".data", staged + ".data"
        if os.path.exists(staged_data):
            os.replace(staged_data, data)
        elif os.path.exists(data):  # the new model keeps its weights inside: drop the old ones
            os.unlink(data)
        os.replace(staged, path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _export_and_check(model: Any, example: Any, staged: str, axes: Any,
                      args: argparse.Namespace, shape: tuple[int, ...], dtype: Any) -> Any:
    import ember
    from ember.exporters import onnx as exporter

    try:
        proto = ember.onnx.export(model, example, staged, dynamic_axes=axes,
                                  opset_version=args.opset)
    except exporter.UnsupportedOperatorError as err:
        raise CLIError(_one_line(err)) from err
    written = os.path.getsize(staged)
    data = staged + ".data"
    external = any(t.data_location == 1 for t in proto.graph.initializer) and \
        os.path.exists(data)
    if external:
        written += os.path.getsize(data)
    print(f"{PROG}: wrote {args.output} ({_size(written)}; opset "
          f"{proto.opset_import[0].version}, IR version {proto.ir_version})"
          + (f"; weights in {os.path.basename(data)}" if external else ""))
    for info in proto.graph.input:
        print(f"  input   {info.name}: {_describe(info)}")
    for info in proto.graph.output:
        print(f"  output  {info.name}: {_describe(info)}")
    if args.check:
        try:
            print("check: " + _check(model, staged, shape, dtype, args.dynamic_batch))
        except CLIError as err:
            raise CLIError(f"{err}; {args.output} was not written (an existing file is "
                           "left as it was)") from err
    return proto


def run(args: argparse.Namespace) -> int:
    """`ember export` (arguments parsed by ember.cli). Returns the exit status."""
    try:
        return _run(args)
    except CLIError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return err.code
    except Exception as err:  # anything else: still one line, not a traceback
        if os.environ.get("EMBER_TRACEBACK"):
            raise
        print(f"{PROG}: error: {type(err).__name__}: {_one_line(err)} (set EMBER_TRACEBACK=1 "
              "for the traceback)", file=sys.stderr)
        return 1
