"""The `ember` command as a new user meets it: usage errors exit 2 with a message and no
traceback, every flag says what it does, and nothing is left behind."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ember import cli


def ember(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """`ember ARGS` in a subprocess, as a user types it (the console script if installed)."""
    script = Path(sys.executable).parent / "ember"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "ember.cli"]
    return subprocess.run(command + list(args), cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, **env))


def _actions(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("ember",)):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, path + (name,))
        else:
            yield path, action


def test_every_flag_and_argument_has_help_text() -> None:
    missing = [f"{' '.join(path)} {'/'.join(a.option_strings) or a.dest}"
               for path, a in _actions(cli.build_parser()) if not a.help]
    assert not missing, f"flags without help text: {missing}"


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_demo_rejects_an_epoch_count_that_is_not_positive(value: str, tmp_path: Path) -> None:
    done = ember("demo", "--epochs", value, cwd=tmp_path)
    assert done.returncode == 2
    assert "usage: ember demo" in done.stderr
    assert "argument --epochs" in done.stderr and "Traceback" not in done.stderr


def test_demo_with_an_unknown_device_is_a_usage_error(tmp_path: Path) -> None:
    done = ember("demo", "--device", "nosuch", "--epochs", "1", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "--device nosuch: Expected one of cpu, cuda" in done.stderr  # PyTorch's words
    assert "unknown device type 'nosuch'" in done.stderr  # and ember's note
    assert "cpu: available" in done.stderr  # what the user can pick instead


def test_a_short_demo_passes_its_round_trip_and_leaves_no_temporary_folder(
        tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = ember("demo", "--epochs", "1", "--no-progress", "--device", "cpu", cwd=tmp_path,
                 TMPDIR=str(scratch))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 epoch in" in done.stdout
    assert "round trip only" in done.stdout and "FAILED" not in done.stdout
    assert list(scratch.iterdir()) == []  # the checkpoint's temporary folder is gone


def test_a_misspelt_backend_lists_the_backends_the_plugins_offer(tmp_path: Path) -> None:
    done = ember("devices", cwd=tmp_path, EMBER_BACKENDS="cdua")
    assert done.returncode != 0
    out = done.stdout + done.stderr
    assert "EMBER_BACKENDS names cdua, which no plugin provides" in out
    assert "the plugins offer: cpu" in out and "Traceback" not in out


def test_export_imports_a_package_from_the_current_folder(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(
        "import ember\n\ndef make():\n    return ember.nn.Linear(4, 2)\n")
    done = ember("export", "mypkg.model:make", "-o", "m.onnx", "--input-shape", "1,4",
                 cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "m.onnx").stat().st_size > 0


def test_compat_reports_coverage_per_namespace(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    done = ember("compat", "--summary", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for namespace in ("Tensor methods", "torch functions", "nn.functional", "nn modules",
                      "optimizers", "LR schedulers"):
        line = next(ln for ln in done.stdout.splitlines() if ln.strip().startswith(namespace))
        have, total = (int(v) for v in line.split()[-4:-1:2])
        assert 0 < have <= total


def test_compat_examples_run_pytorchs_docstrings_under_both(tmp_path: Path) -> None:
    """`ember compat --examples`: these docstrings' examples (seeded random tensors,
    printed results, a refusal, the conjugate bit) give PyTorch's output under ember;
    torch.resolve_neg's negative bit (`is_neg()` True of a conjugate's imaginary part) is
    a known difference, reported with its example."""
    pytest.importorskip("torch")
    done = ember("compat", "--examples", "--only",
                 "torch.remainder,torch.round,torch.asarray,torch.nn.Linear,torch.conj,"
                 "torch.resolve_neg", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("PyTorch's docstring examples under ember: 5 of 6 docstrings give "
                        "PyTorch's results throughout")
    assert "torch.resolve_neg:  >>> z.is_neg()" in lines and "  torch: True" in lines


def test_compat_counts_public_names_and_leaves_out_the_excluded_families() -> None:
    pytest.importorskip("torch")
    from ember.utils import compat

    report = {c.namespace: c for c in compat.measure()}
    tensor = report["Tensor methods"]
    assert {"add", "add_", "matmul", "T", "grad"} <= set(tensor.names)
    assert "add" not in tensor.missing
    every = [n for c in report.values() for n in c.names]
    assert not [n for n in every if n.startswith("_") or "sparse" in n or "quantiz" in n]
    assert "Linear" in report["nn modules"].names
    assert "LazyLinear" in report["nn modules"].names
    assert "LazyLinear" not in report["nn modules"].missing
    assert "SGD" in report["optimizers"].names and "StepLR" in report["LR schedulers"].names
