"""Project hygiene that CI checks with the tests: lint and the import layers."""

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(pathlib.Path(sys.executable).with_name("ruff"))
    if not pathlib.Path(ruff).exists():
        pytest.skip("ruff is not installed")
    out = subprocess.run([ruff, "check", "ember", "tests", "benchmarks", "examples"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_imports_respect_the_layers():
    """ARCHITECTURE.md's layers: core never imports a backend; backends import only the
    contract; nn/optim/amp never touch NumPy (checked by ../shared/tools/layers.py)."""
    tool = ROOT.parent / "shared" / "tools" / "layers.py"
    if not tool.exists():
        pytest.skip("../shared/tools/layers.py is not beside this checkout")
    out = subprocess.run([sys.executable, str(tool), "ember"], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout


def test_import_ember_loads_no_accelerator_library():
    code = ("import sys, ember; bad = [m for m in ('cupy', 'pyopencl', 'torch', 'onnx') "
            "if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
