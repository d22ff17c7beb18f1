"""The backend conformance suite (`ember.testing`) on the built-in CPU backend and on the
example plugin `countdev`, in this process.

Each test function of ember.testing is bound here under a name that keeps its module
(`test_grads_gradcheck[cpu-exp]`), so a failure reads like a failure of the suite run as
`pytest --pyargs ember.testing`. Plus: that very command, in a subprocess, on countdev
(a quick selection), and the plugin's option handling.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

# the devices the `device` fixture takes in this module (unless --ember-device is given);
# countdev lacks an einsum kernel on purpose: those tests pass through the CPU fallback
EMBER_TEST_DEVICES = ["cpu", "countdev"]

_MODULES = ["test_elementwise", "test_reductions", "test_shapes", "test_indexing",
            "test_linalg", "test_nn", "test_losses", "test_creation", "test_foreach",
            "test_transfers", "test_variants", "test_fused", "test_grads", "test_torch_parity",
            "test_training", "test_coverage",
            "test_elementwise_math"]  # elementwise math (issue 16)


def _bind_suite() -> None:
    for short in _MODULES:
        module = importlib.import_module(f"ember.testing.{short}")
        marks = getattr(module, "pytestmark", [])
        marks = marks if isinstance(marks, list) else [marks]
        for name, fn in vars(module).items():
            if not (name.startswith("test_") and callable(fn)):
                continue
            for mark in marks:  # module-level marks (torch parity's skipif) travel along
                fn = mark(fn)
            alias = f"{short}_{name[len('test_'):]}"
            assert alias not in globals(), f"duplicate conformance test name {alias}"
            globals()[alias] = fn


_bind_suite()


# -- the suite as a plugin author runs it ---------------------------------------------


def _run_pytest(*args: str, cwd: str, pythonpath: str | None = None
                ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("EMBER_STRICT", "EMBER_BACKENDS", "EMBER_PLUGIN_AUTOLOAD",
                        "PYTEST_ADDOPTS")}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH"))
                                            if p)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _entry_point_path(tmp_path) -> str | None:
    """None when ember's `pytest11` entry point is installed; else a folder holding a
    stand-in distribution that declares it (the lines pyproject.toml should carry)."""
    from importlib.metadata import entry_points

    if any(ep.name == "ember.testing.plugin" for ep in entry_points(group="pytest11")):
        return None
    info = tmp_path / "site" / "ember_pytest_entry-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ember-pytest-entry\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text("[pytest11]\n"
                                           "ember.testing.plugin = ember.testing.plugin\n")
    return str(tmp_path / "site")


def test_pyargs_run_on_countdev(tmp_path) -> None:
    """`pytest --pyargs ember.testing --ember-device countdev`, from any directory: the
    plugin comes from its pytest11 entry point."""
    work = tmp_path / "elsewhere"
    work.mkdir()
    result = _run_pytest("--pyargs", "ember.testing", "--ember-device", "countdev",
                         "-k", "write_through_view or test_matmul or einsum_mm or "
                               "test_softmax", "-rA", cwd=str(work),
                         pythonpath=_entry_point_path(tmp_path))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "ember device countdev:0: no kernel for einsum (runs on the CPU)" in out, out
    assert "[countdev:0-" in out and "[cpu" not in out, out
    assert " passed" in out and " failed" not in out, out


def test_unknown_device_is_a_usage_error(tmp_path) -> None:
    """Also the plugin's other way in, without the entry point: `-p ember.testing.plugin`."""
    result = _run_pytest("-p", "ember.testing.plugin", "--pyargs",
                         "ember.testing.test_coverage", "--ember-device", "nosuchdev",
                         cwd=str(tmp_path))
    assert result.returncode == 4, result.stdout + result.stderr  # pytest's usage error
    assert "--ember-device nosuchdev" in result.stderr, result.stderr


def test_device_fixture_follows_the_pinned_list(request: pytest.FixtureRequest) -> None:
    import ember
    from ember.testing.plugin import available_devices

    names = {str(d) for d in available_devices()}
    assert {"cpu", "countdev:0"} <= names, names
    if not request.config.getoption("ember_devices"):
        ids = {item.callspec.params["device"] for item in request.session.items
               if item.module is sys.modules[__name__] and hasattr(item, "callspec")
               and "device" in item.callspec.params}
        if ids:  # (none when -k deselects the suite)
            assert ids == {ember.device("cpu"), ember.device("countdev", 0)}, ids
