"""PyTorch's own docstring examples, run under PyTorch and under ember, compared line for
line: `ember compat --examples`.

The `>>>` examples of the installed PyTorch's docstrings (torch.*, Tensor methods,
torch.nn and nn.functional, linalg, fft, special, optim, autograd, func, distributions,
utils.data, testing) are a large body of PyTorch programs nobody on ember's team wrote.
Each docstring's examples run in order, in one namespace, seeded with `manual_seed(0)`
and the default dtype and print options reset, first in a process that imports the real
torch, then in one where `import torch` is ember (`python -m ember.run`); an example's
result is what it prints plus the repr of an expression's value, or the name of the
exception it raised. ember draws PyTorch's random streams, so most outputs compare
exactly. A docstring differs when one of its examples does; differing reprs of function
objects and memory addresses are differences too, so the count is an upper bound.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import warnings
from typing import Any

# where the examples are read from: PyTorch's modules, by name
NAMESPACES = ("torch", "torch.Tensor", "torch.nn.functional", "torch.linalg", "torch.special",
              "torch.fft", "torch.nn.init", "torch.nn", "torch.nn.utils", "torch.nn.utils.rnn",
              "torch.nn.utils.parametrize", "torch.nn.utils.parametrizations", "torch.optim",
              "torch.optim.lr_scheduler", "torch.autograd", "torch.autograd.functional",
              "torch.func", "torch.utils.data", "torch.distributions", "torch.testing")
TIMEOUT_S = 10  # one example's limit (some build tensors of hundreds of megabytes)


def _examples(doc: str) -> list[str]:
    """The `>>>` examples of a docstring, with their `...` continuation lines; examples
    marked to be skipped or that need CUDA are left out."""
    found, current = [], None
    for line in doc.splitlines():
        text = line.strip()
        if text.startswith(">>>"):
            if current is not None:
                found.append(current)
            current = text[4:] + "\n"
        elif text.startswith("...") and current is not None:
            current += text[4:] + "\n"
        else:
            if current is not None:
                found.append(current)
            current = None
    if current is not None:
        found.append(current)
    return [e for e in found if "SKIP" not in e and "cuda" not in e]


def collect(names: list[str] | None = None) -> list[dict[str, Any]]:
    """Every docstring with examples under NAMESPACES (or only the qualified `names`):
    `[{"name": "torch.add", "sources": [...]}]`. Run where `torch` is PyTorch."""
    import importlib

    seen, items = set(), []
    for namespace in NAMESPACES:
        module, _, attr = namespace.rpartition(".") if namespace == "torch.Tensor" else \
            (namespace, "", "")
        root = getattr(importlib.import_module(module), attr) if attr else \
            importlib.import_module(module)
        for name in sorted(dir(root)):
            qualified = f"{namespace}.{name}"
            if name.startswith("_") or (names is not None and qualified not in names):
                continue
            try:
                obj = getattr(root, name)
            except Exception:  # noqa: BLE001 - a lazy attribute that fails to load
                continue
            docs = [getattr(obj, "__doc__", None)]
            if isinstance(obj, type):  # a module class documents its use in these too
                docs += [getattr(getattr(obj, m, None), "__doc__", None)
                         for m in ("forward", "__init__", "step")]
            doc = "\n".join(d for d in docs if isinstance(d, str))
            if ">>>" not in doc or doc in seen:
                continue
            seen.add(doc)
            sources = _examples(doc)
            if sources:
                items.append({"name": qualified, "sources": sources})
    return items


class _Timeout(Exception):
    pass


def _on_alarm(*_: Any) -> None:
    raise _Timeout()


def run_examples(sources: list[str]) -> list[str]:
    """What each example of one docstring gives, run in order in one namespace where
    `torch` is whatever `import torch` imports here."""
    import math

    import numpy as np
    import torch  # PyTorch, or ember under `python -m ember.run`

    namespace = {"torch": torch, "F": torch.nn.functional, "nn": torch.nn, "math": math,
                 "np": np}
    torch.manual_seed(0)
    torch.set_default_dtype(torch.float32)
    torch.set_printoptions(profile="default")
    outputs = []
    for source in sources:
        printed = io.StringIO()
        signal.alarm(TIMEOUT_S)
        try:
            with contextlib.redirect_stdout(printed):
                try:
                    value = eval(compile(source, "<example>", "eval"), namespace)
                    if value is not None:
                        print(repr(value))
                except SyntaxError:
                    exec(compile(source, "<example>", "exec"), namespace)
            outputs.append(printed.getvalue())
        except BaseException as err:  # noqa: BLE001 - an example's error is its result
            outputs.append(printed.getvalue() + f"!! {type(err).__name__}")
        finally:
            signal.alarm(0)
    return outputs


def _worker(path: str, names: list[str] | None) -> None:
    """In a subprocess: collect (under PyTorch, when the file does not exist yet) or read
    the examples, run them, and write each docstring's outputs back."""
    signal.signal(signal.SIGALRM, _on_alarm)
    warnings.filterwarnings("ignore")
    if os.path.exists(path) and os.path.getsize(path):
        with open(path) as f:
            items = json.load(f)
        key = "ember"
    else:
        items = collect(names)
        key = "torch"
    for item in items:
        item[key] = run_examples(item["sources"])
    with open(path, "w") as f:
        json.dump(items, f)


def compare(names: list[str] | None = None) -> tuple[int, list[dict[str, Any]]]:
    """Run the examples under PyTorch, then under ember: how many docstrings gave the same
    results throughout, and for each other one its first differing example
    (`{"name", "source", "torch", "ember"}`)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "examples.json")
        argv = [path, json.dumps(names)]
        code = "import sys, json; from ember.utils.doc_examples import _worker; " \
               "_worker(sys.argv[1], json.loads(sys.argv[2]))"
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        subprocess.run([sys.executable, "-c", code, *argv], check=True, env=env,
                       cwd=tmp, stdout=subprocess.DEVNULL)
        script = os.path.join(tmp, "run_ember.py")
        with open(script, "w") as f:
            f.write(code.replace("; ", "\n"))
        subprocess.run([sys.executable, "-m", "ember.run", script, *argv], check=True,
                       env=env, cwd=tmp, stdout=subprocess.DEVNULL)
        with open(path) as f:
            items = json.load(f)
    same, differing = 0, []
    for item in items:
        pairs = zip(item["sources"], item["torch"], item["ember"])
        first = next(((s, t, e) for s, t, e in pairs if t != e), None)
        if first is None:
            same += 1
        else:
            differing.append({"name": item["name"], "source": first[0], "torch": first[1],
                              "ember": first[2]})
    return same, differing


def format_report(same: int, differing: list[dict[str, Any]], limit: int = 400,
                  summary: bool = False) -> str:
    """The count, then (unless `summary`) each differing docstring's first differing
    example."""
    lines = [f"PyTorch's docstring examples under ember: {same} of {same + len(differing)} "
             "docstrings give PyTorch's results throughout"]
    for d in [] if summary else differing:
        lines.append(f"\n{d['name']}:  >>> {d['source'].strip()}")
        lines.append("  torch: " + d["torch"].strip()[:limit].replace("\n", "\n         "))
        lines.append("  ember: " + d["ember"].strip()[:limit].replace("\n", "\n         "))
    return "\n".join(lines)
