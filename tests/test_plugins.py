"""ember's plugin system, for real: backends found through the `ember.backends` entry-point
group by importlib.metadata and loaded with pluggy, with nothing mocked.

- The installed example plugin (examples/ember-plugin-example, device "countdev") is used
  in-process, on a fresh registry (`ember.core.plugins.reset()`, restored afterwards).
- Broken and extra plugins are real distributions on disk: a `*.dist-info` folder
  (`METADATA` + `entry_points.txt`) beside the plugin module (sources in
  tests/plugin_fixtures/), put on PYTHONPATH of a Python subprocess, where
  importlib.metadata finds them exactly as it finds a pip-installed plugin. Environment
  switches are tested in subprocesses too, since ember reads them when it loads plugins.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember.core import dispatch, errors, plugins
from ember.core.backend import API_VERSION, REQUIRED_KERNELS

FIXTURES = Path(__file__).parent / "plugin_fixtures"
ROOT = Path(__file__).resolve().parents[1]
SWITCHES = ("EMBER_STRICT", "EMBER_BACKENDS", "EMBER_PLUGIN_AUTOLOAD")
HAVE_COUNTDEV = importlib.util.find_spec("ember_plugin_example") is not None
HAVE_CLI = importlib.util.find_spec("ember.cli") is not None

needs_countdev = pytest.mark.skipif(
    not HAVE_COUNTDEV, reason="the example plugin is not installed "
    "(pip install -e examples/ember-plugin-example; `make test` does)")


# -- fake third-party distributions ---------------------------------------------------


@dataclass(frozen=True)
class Fake:
    """A fake distribution `ember-fake-<entry_point>` with one `ember.backends` entry point.

    `module` is the plugin_fixtures/ source copied beside it (None: none is, so the entry
    point names a module that does not exist); `target` is the entry point's value
    (default: the module)."""

    entry_point: str
    module: str | None
    target: str = ""

    @property
    def distribution(self) -> str:
        return f"ember-fake-{self.entry_point}"


def install(root: Path, *fakes: Fake) -> Path:
    """Lay out `fakes` in `root` the way pip installs a package: module + dist-info."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "emb_common.py", root)
    for fake in fakes:
        if fake.module:
            shutil.copy(FIXTURES / f"{fake.module}.py", root)
        info = root / f"{fake.distribution.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {fake.distribution}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(
            f"[ember.backends]\n{fake.entry_point} = {fake.target or fake.module}\n")
    return root


# -- subprocesses ---------------------------------------------------------------------

PRELUDE = """
import json, os, sys

def attempt(fn):
    try:
        fn()
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return None

out = {}
"""


def run_python(args: Sequence[str], *, path: Sequence[Path] = (),
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run this interpreter with `args`, ember's switches cleared, `path` on PYTHONPATH."""
    environ = {k: v for k, v in os.environ.items() if k not in SWITCHES + ("PYTHONPATH",)}
    if path:
        environ["PYTHONPATH"] = os.pathsep.join(str(p) for p in path)
    environ.update(env or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env=environ, cwd=ROOT, timeout=120)


def probe(code: str, **kwargs: Any) -> dict[str, Any]:
    """Run `code` (which fills the dict `out`) in a subprocess; return `out`."""
    proc = run_python(["-c", PRELUDE + code + "\nprint(json.dumps(out))\n"], **kwargs)
    assert proc.returncode == 0, f"subprocess failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def lines_matching(text: str, pattern: str) -> list[str]:
    return [line for line in text.splitlines() if re.search(pattern, line)]


# -- in-process fixtures --------------------------------------------------------------


@pytest.fixture
def registry(monkeypatch):
    """A registry loaded afresh with ember's switches cleared; the old one comes back after."""
    for var in SWITCHES:
        monkeypatch.delenv(var, raising=False)
    saved = plugins.registry
    plugins.reset()
    plugins.registry.ensure_loaded()
    try:
        yield plugins.registry
    finally:
        plugins.registry = saved


@pytest.fixture
def calls():
    import ember_plugin_example

    return ember_plugin_example.calls


@pytest.fixture
def fresh_warnings():
    """Forget which (backend, op) fallbacks have warned already (warned once a process)."""
    saved = set(errors._warned)
    errors._warned.clear()
    try:
        yield
    finally:
        errors._warned.clear()
        errors._warned.update(saved)


def fallback_warnings(record: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in record if issubclass(w.category, dispatch.FallbackWarning)]


# == the installed example plugin (countdev) ==========================================


@needs_countdev
def test_entry_points_list_the_builtins_and_countdev(registry):
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group="ember.backends")}
    for name in ("cpu", "cuda", "opencl"):
        assert eps[name].value == f"ember.backends.{name}"
    assert eps["countdev"].value == "ember_plugin_example"
    assert eps["countdev"].dist.name == "ember-plugin-example"
    record = next(r for r in registry.plugins if r.name == "countdev")
    assert (record.distribution, record.backends, record.error) == (
        "ember-plugin-example", ["countdev"], None)
    assert "countdev" in registry.backends
    assert "countdev: available" in registry.summary()


@needs_countdev
def test_countdev_tensor_runs_its_kernels(registry, calls):
    before = calls.copy()
    x = ember.tensor([1.0, 2.0], device="countdev")
    assert x.device.type == "countdev"
    y = x * 2 + 1
    assert y.device == x.device
    assert y.to("cpu").tolist() == [3.0, 5.0]
    assert calls["mul"] == before["mul"] + 1
    assert calls["add"] == before["add"] + 1


CASES: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "mul_scalar": lambda a, b: a * 2.5,
    "matmul": lambda a, b: a @ b.T,
    "exp_sum": lambda a, b: a.exp().sum(dim=1),
    "softmax": lambda a, b: ember.softmax(a, dim=-1),
    "view": lambda a, b: a[1:, ::2].transpose(0, 1),
    "where": lambda a, b: ember.where(a > b, a, b),
    "cumsum": lambda a, b: a.cumsum(0),
    "max_dim": lambda a, b: a.max(dim=0).values,
    "cat": lambda a, b: ember.cat([a, b], dim=0),
}


@needs_countdev
@pytest.mark.parametrize("case", list(CASES))
def test_countdev_matches_cpu(registry, calls, case):
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((3, 4)).astype(np.float32)
    b_np = rng.standard_normal((3, 4)).astype(np.float32)
    want = CASES[case](ember.tensor(a_np), ember.tensor(b_np))
    before = sum(calls.values())
    got = CASES[case](ember.tensor(a_np, device="countdev"), ember.tensor(b_np, device="countdev"))
    assert got.device.type == "countdev"
    assert sum(calls.values()) > before  # it ran countdev's own kernels
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.to("cpu").numpy(), want.numpy())


@needs_countdev
def test_to_round_trip_copies_between_memories(registry):
    host = ember.tensor([1.0, 2.0, 3.0])
    dev = host.to("countdev")
    back = dev.to("cpu")
    assert (dev.device.type, back.device.type) == ("countdev", "cpu")
    assert back.tolist() == [1.0, 2.0, 3.0]
    # countdev memory is its own: writes on either side are not seen on the other
    host.add_(10)
    dev.mul_(2)
    assert dev.to("cpu").tolist() == [2.0, 4.0, 6.0]
    assert back.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="same device"):
        host + dev


@needs_countdev
def test_to_is_differentiable_both_ways(registry):
    x = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.to("countdev")
    assert y.requires_grad
    (y * y).sum().backward()
    assert x.grad.device.type == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 6.0])

    w = ember.tensor([0.5, 1.0], device="countdev", requires_grad=True)
    w.to("cpu").exp().sum().backward()
    assert w.grad.device.type == "countdev"
    np.testing.assert_allclose(w.grad.to("cpu").numpy(), np.exp([0.5, 1.0]), rtol=1e-6)


@needs_countdev
def test_countdev_kernels_come_from_the_kernel_hook(registry, calls):
    import ember_plugin_example as example

    # The backend class brings no kernels of its own ...
    assert example.CountingBackend().kernels == {}
    # ... its plugin's ember_backend_kernels hook is registered with pluggy ...
    hooked = [impl.plugin for impl in registry.pm.hook.ember_backend_kernels.get_hookimpls()]
    assert example in hooked
    # ... and the loaded backend holds exactly the CPU's kernels, wrapped in its counter.
    countdev, cpu = registry.get("countdev"), registry.get("cpu")
    assert set(countdev.kernels) == set(cpu.kernels) - example.NOT_NATIVE
    assert REQUIRED_KERNELS <= set(countdev.kernels)
    assert "einsum" not in countdev.kernels
    before = calls["neg"]
    np.testing.assert_array_equal(countdev.kernels["neg"](np.ones(2, np.float32)), [-1, -1])
    assert calls["neg"] == before + 1


# -- missing-kernel fallback ----------------------------------------------------------


@needs_countdev
def test_missing_kernel_falls_back_to_cpu_and_warns_once(registry, calls, fresh_warnings):
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((2, 3)).astype(np.float32)
    b_np = rng.standard_normal((3, 4)).astype(np.float32)
    a, b = ember.tensor(a_np, device="countdev"), ember.tensor(b_np, device="countdev")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")  # count ember's own once-only logic, not Python's
        outs = [ember.einsum("ij,jk->ik", a, b) for _ in range(3)]
    for out in outs:
        assert out.device.type == "countdev"
        np.testing.assert_allclose(out.to("cpu").numpy(), np.einsum("ij,jk->ik", a_np, b_np),
                                   rtol=1e-5, atol=1e-6)
    fell_back = fallback_warnings(record)
    assert len(fell_back) == 1
    assert "einsum" in str(fell_back[0].message) and "'countdev'" in str(fell_back[0].message)
    assert calls["einsum"] == 0  # countdev has no einsum kernel: the CPU computed it


@needs_countdev
def test_fallback_warns_once_per_backend_and_op(registry, fresh_warnings, monkeypatch):
    countdev = registry.get("countdev")
    monkeypatch.delitem(countdev.kernels, "cumsum")  # now countdev lacks two ops
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device="countdev")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(2):
            c = x.cumsum(0)
            e = ember.einsum("ij,jk->ik", x, x)
    assert c.to("cpu").tolist() == [[1.0, 2.0], [4.0, 6.0]]
    assert e.to("cpu").tolist() == [[7.0, 10.0], [15.0, 22.0]]
    ops = sorted(str(w.message).split(":")[0] for w in fallback_warnings(record))
    assert ops == ["cumsum", "einsum"]


@needs_countdev
def test_fallback_is_differentiable(registry, fresh_warnings):
    a_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    b_np = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    a = ember.tensor(a_np, device="countdev", requires_grad=True)
    b = ember.tensor(b_np, device="countdev", requires_grad=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ember.einsum("ij,jk->ik", a, b).sum().backward()
    assert len(fallback_warnings(record)) == 1  # the backward's einsums warn no more
    assert a.grad.device.type == b.grad.device.type == "countdev"
    # d/da sum(a @ b) = ones @ b.T ; d/db = a.T @ ones
    np.testing.assert_allclose(a.grad.to("cpu").numpy(), np.ones((2, 4)) @ b_np.T, rtol=1e-5)
    np.testing.assert_allclose(b.grad.to("cpu").numpy(), a_np.T @ np.ones((2, 4)), rtol=1e-5)


@needs_countdev
def test_fallback_warning_points_at_the_caller(registry, fresh_warnings):
    a = ember.ones(2, 2, device="countdev")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ember.einsum("ij,jk->ik", a, a)
    (w,) = fallback_warnings(record)
    assert Path(w.filename).resolve() == Path(__file__).resolve()


@needs_countdev
def test_strict_mode_refuses_the_fallback(registry, fresh_warnings, monkeypatch):
    monkeypatch.setenv("EMBER_STRICT", "1")
    a = ember.ones(2, 3, device="countdev")
    b = ember.ones(3, 2, device="countdev")
    with pytest.raises(RuntimeError, match=r"einsum.*'countdev'.*EMBER_STRICT"):
        ember.einsum("ij,jk->ik", a, b)
    # ops countdev has natively are unaffected
    assert (a + 1).to("cpu").tolist() == [[2.0] * 3] * 2


# -- the CUDA backend without a GPU ---------------------------------------------------


def test_cuda_reports_itself_unavailable_with_a_reason(registry):
    cuda = registry.get("cuda")
    reason = plugins.safe_unavailable_reason(cuda)
    if reason is None:
        pytest.skip("a usable CUDA device is present")
    if importlib.util.find_spec("cupy") is None:
        assert "CuPy" in reason
    assert not cuda.is_available()
    assert f"cuda: unavailable ({reason})" in registry.summary()
    assert all(d.type != "cuda" for d in ember.devices())
    for name in ("cuda", "cuda:5"):
        with pytest.raises(AssertionError, match=re.escape(f"'{name}' is not available: {reason}")):
            ember.tensor([1.0, 2.0], device=name)


# == fake distributions in subprocesses ===============================================


@dataclass(frozen=True)
class Broken:
    """A broken plugin, the device a user would ask for (None: the name is ember's own),
    a regex for the error ember must keep, and whether its backend is refused (rather than
    loaded and reported unavailable)."""

    fake: Fake
    device: str | None
    reason: str
    refused: bool = True


BROKEN = [
    Broken(Fake("importfail", "emb_importfail"), "importfail",
           r"ImportError: emb_importfail: simulated missing vendor SDK"),
    Broken(Fake("ghost", None, "emb_ghost_not_installed"), "ghost",
           r"ModuleNotFoundError: No module named 'emb_ghost_not_installed'"),
    Broken(Fake("hookfail", "emb_hookfail"), "hookfail",
           r"ValueError: emb_hookfail: simulated driver handshake failure"),
    Broken(Fake("initfail", "emb_initfail"), "initfail",
           r"OSError: emb_initfail: simulated device open failure"),
    Broken(Fake("clash", "emb_clash"), None,
           r"backend name 'cpu' clashes with ember's built-in backend"),
    Broken(Fake("badname", "emb_badname"), "Bad-Name", r"invalid backend name 'Bad-Name'"),
    Broken(Fake("apidev", "emb_apiver"), "apidev",
           rf"built for ember backend API version 999\b.*version {API_VERSION}\b"),
    Broken(Fake("kernfail", "emb_kernfail"), None,
           r"KeyError: 'emb_kernfail: simulated kernel-table build failure'"),
    Broken(Fake("nokern", "emb_nokern"), "nokern",
           r"lacks the required kernels getitem \(", refused=False),
    Broken(Fake("probefail", "emb_probefail"), "probefail",
           r"availability check failed: RuntimeError: emb_probefail: simulated probe crash",
           refused=False),
    Broken(Fake("availfail", "emb_availfail"), "availfail",
           r"availability check failed: RuntimeError: emb_availfail: simulated is_available",
           refused=False),
    Broken(Fake("sysexit", "emb_sysexit"), "sysexit",
           r"SystemExit: emb_sysexit: simulated sys.exit while importing"),
]

ISOLATED = """
import ember
out["imported_early"] = [m for m in sys.modules if m.startswith("emb_")]
x = ember.tensor([1.0, 2.0]) * 3 + 1
out["cpu_values"], out["cpu_device"] = x.tolist(), str(x.device)
from ember.core import plugins
out["cpu_backend"] = type(plugins.get_backend("cpu")).__module__
out["summary"] = plugins.registry.summary()
out["available"] = [str(d) for d in ember.devices()]
DEVICE = {device!r}
out["device_error"] = DEVICE and attempt(lambda: ember.tensor([1.0], device=DEVICE))
out["auto_device"] = str(ember.tensor([1.0], device="auto").device)
"""


@pytest.fixture(scope="module", params=BROKEN, ids=lambda b: b.fake.entry_point)
def broken(request, tmp_path_factory) -> tuple[Broken, dict[str, Any]]:
    """One broken plugin alone on the path, and what a subprocess saw of it."""
    case: Broken = request.param
    site = install(tmp_path_factory.mktemp(case.fake.entry_point), case.fake)
    return case, probe(ISOLATED.format(device=case.device), path=[site])


def test_broken_plugin_never_breaks_ember(broken):
    case, out = broken
    assert out["imported_early"] == []  # discovery is lazy
    assert (out["cpu_values"], out["cpu_device"]) == ([4.0, 7.0], "cpu")
    assert out["cpu_backend"] == "ember.backends.cpu"  # never a plugin's impostor
    assert "cpu" in out["available"]
    assert out["auto_device"] in out["available"]  # "auto" still chooses a usable device
    shown = lines_matching(out["summary"], case.reason)
    assert shown, f"{case.reason!r} not in the summary:\n{out['summary']}"
    if case.refused:
        assert any("broken plugin" in line for line in shown)
    else:
        assert any("unavailable" in line for line in shown)
    if case.device is not None:
        assert case.device.lower() not in {d.split(":")[0] for d in out["available"]}
        assert out["device_error"].startswith("RuntimeError: ")
        assert re.search(case.reason, out["device_error"]), out["device_error"]


def test_broken_plugin_summary_names_its_distribution(broken):
    """What a user must upgrade or uninstall: the distribution (a refused backend's own
    name, e.g. "cpu" for a clash, does not say)."""
    case, out = broken
    shown = lines_matching(out["summary"], case.reason)
    if case.refused:
        assert any(case.fake.distribution in line for line in shown), out["summary"]
    else:  # loaded, but unusable: the line is the device's own
        assert any(line.strip().startswith(f"{case.device}: unavailable (") for line in shown)


# -- many plugins at once, good and broken ---------------------------------------------

GOOD = [Fake("gooda", "emb_gooda"), Fake("goodb", "emb_goodb"), Fake("dup1", "emb_dup1")]
# a second folder, later on PYTHONPATH, so its plugins are discovered after the first's
LATER = [Fake("dup2", "emb_dup2"), Fake("override", "emb_override")]

TOGETHER = """
import warnings
import ember
from ember.core import dispatch, plugins
plugins.registry.ensure_loaded()
out["backends"] = list(plugins.registry.backends)
out["summary"] = plugins.registry.summary()
a = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device="gooda")
b = ember.tensor([[0.5, 0.0], [0.0, 2.0]], device="goodb")
out["a_plus_a"], out["b_matmul_b"] = (a + a).tolist(), (b @ b).tolist()
moved = a.to("goodb")
out["moved"], out["moved_device"] = (moved @ b).tolist(), str(moved.device)
out["mixed"] = attempt(lambda: a + b)
import emb_override
out["neg_a"], out["neg_b"] = (-a).tolist(), (-b).tolist()
out["override_calls_after_neg"] = list(emb_override.calls)
c = ember.ones(2, 3, device="countdev")
with warnings.catch_warnings(record=True) as record:
    warnings.simplefilter("always")
    out["einsum"] = ember.einsum("ij,jk->ik", c, c.T).tolist()
out["fallback_warnings"] = [str(w.message) for w in record
                            if issubclass(w.category, dispatch.FallbackWarning)]
out["override_calls"] = list(emb_override.calls)
out["dupdev_origin"] = plugins.get_backend("dupdev").origin
out["dupdev_values"] = (ember.tensor([1.0], device="dupdev") * 4).tolist()
out["device_errors"] = {{d: attempt(lambda: ember.tensor([1.0], device=d)) for d in {devices!r}}}
"""


@pytest.fixture(scope="module")
def many_sites(tmp_path_factory) -> list[Path]:
    first = install(tmp_path_factory.mktemp("site1"), *(b.fake for b in BROKEN), *GOOD)
    return [first, install(tmp_path_factory.mktemp("site2"), *LATER)]


@pytest.fixture(scope="module")
def together(many_sites) -> dict[str, Any]:
    devices = [b.device for b in BROKEN if b.device]
    return probe(TOGETHER.format(devices=devices), path=many_sites)


def test_two_good_plugins_work_side_by_side(together):
    assert {"gooda", "goodb", "dupdev", "cpu"} <= set(together["backends"])
    assert together["a_plus_a"] == [[2.0, 4.0], [6.0, 8.0]]
    assert together["b_matmul_b"] == [[0.25, 0.0], [0.0, 4.0]]
    assert together["moved_device"] == "goodb:0"
    assert together["moved"] == [[0.5, 4.0], [1.5, 8.0]]
    assert re.search("same device", together["mixed"]), together["mixed"]
    for name in ("gooda", "goodb"):
        assert f"{name}: available" in together["summary"]


def test_every_broken_plugin_is_reported_among_many(together):
    for case in BROKEN:
        assert lines_matching(together["summary"], case.reason), case.reason
        if case.device:
            assert re.search(case.reason, together["device_errors"][case.device])


def test_duplicate_backend_name_first_wins(together):
    assert together["dupdev_origin"] == "emb_dup1"
    assert together["dupdev_values"] == [4.0]
    assert lines_matching(together["summary"], "backend name 'dupdev' is already taken")


def test_kernel_hook_adds_and_overrides_other_plugins_kernels(together):
    # emb_override (discovered after gooda) replaced gooda's `neg`, not goodb's
    assert together["neg_a"] == [[-1.0, -2.0], [-3.0, -4.0]]
    assert together["neg_b"] == [[-0.5, -0.0], [-0.0, -2.0]]
    assert together["override_calls_after_neg"] == ["neg"]
    # ... and gave countdev the einsum it lacks: no fallback any more
    if HAVE_COUNTDEV:
        assert together["einsum"] == [[3.0, 3.0], [3.0, 3.0]]
        assert together["override_calls"] == ["neg", "einsum"]
        assert together["fallback_warnings"] == []


@pytest.fixture(scope="module")
def cli_devices(many_sites) -> str:
    if not HAVE_CLI:
        pytest.skip("ember.cli is not importable yet")
    proc = run_python(["-m", "ember.cli", "devices"], path=many_sites)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_cli_devices_shows_broken_plugins_and_why(cli_devices):
    for case in BROKEN:
        assert re.search(case.reason, cli_devices), f"{case.reason!r} not in:\n{cli_devices}"
    for name in ("cpu", "gooda", "goodb", "dupdev"):
        assert re.search(rf"^\s*{name}: available", cli_devices, re.M), name
    if HAVE_COUNTDEV:
        assert re.search(r"^\s*countdev: available", cli_devices, re.M)


def test_cli_devices_names_each_broken_plugins_distribution(cli_devices):
    for case in BROKEN:
        if case.refused:
            shown = lines_matching(cli_devices, case.reason)
            assert any(case.fake.distribution in line for line in shown), case.fake


# -- switches ---------------------------------------------------------------------------

AUTOLOAD_OFF = """
import ember
from ember.core import plugins
out["first_use"] = attempt(lambda: ember.tensor([1.0]))
out["backends"] = list(plugins.registry.backends)
out["errors"] = dict(plugins.registry.errors)
out["imported"] = [m for m in sys.modules if m.startswith("emb_") or m == "ember_plugin_example"]
out["countdev"] = attempt(lambda: ember.tensor([1.0], device="countdev"))
out["gooda"] = attempt(lambda: ember.tensor([1.0], device="gooda"))
out["nosuch"] = attempt(lambda: ember.tensor([1.0], device="nosuch"))
"""


@pytest.fixture(scope="module")
def autoload_off(tmp_path_factory) -> dict[str, Any]:
    site = install(tmp_path_factory.mktemp("autoload"), Fake("gooda", "emb_gooda"),
                   Fake("importfail", "emb_importfail"))
    return probe(AUTOLOAD_OFF, path=[site], env={"EMBER_PLUGIN_AUTOLOAD": "0"})


def test_autoload_off_loads_builtins_only(autoload_off):
    assert autoload_off["first_use"] is None
    assert autoload_off["backends"] == ["cpu", "cuda", "opencl"]
    assert autoload_off["errors"] == {}  # the broken plugin was not even imported
    assert autoload_off["imported"] == []
    assert autoload_off["countdev"].startswith("RuntimeError: unknown device type 'countdev'")
    assert autoload_off["gooda"].startswith("RuntimeError: unknown device type 'gooda'")


def test_autoload_off_message_names_the_switch(autoload_off):
    for name in (["countdev"] if HAVE_COUNTDEV else []) + ["gooda"]:
        assert "EMBER_PLUGIN_AUTOLOAD=0" in autoload_off[name]
        assert f"an installed plugin provides '{name}'" in autoload_off[name]
    assert "installed plugin provides" not in autoload_off["nosuch"]


ALLOW_LIST = """
import ember
from ember.core import plugins
out["nosuch"] = attempt(lambda: ember.tensor([1.0]))
results = {}
for spec in ["countdev,cpu", "cpu,countdev", " CountDev , CPU ", "gooda,countdev,cpu"]:
    os.environ["EMBER_BACKENDS"] = spec
    plugins.reset()
    r = results[spec] = {}
    r["load"] = attempt(plugins.registry.ensure_loaded)
    r["backends"] = list(plugins.registry.backends)
    r["summary"] = [line.split(":")[0].strip()
                    for line in plugins.registry.summary().splitlines()[1:]]
    r["cuda"] = attempt(lambda: ember.tensor([1.0], device="cuda"))
    r["countdev"] = (ember.tensor([1.0, 2.0], device="countdev") * 2).to("cpu").tolist()
out["specs"] = results
"""


@needs_countdev
def test_backends_switch_restricts_and_orders(tmp_path_factory):
    site = install(tmp_path_factory.mktemp("allow"), Fake("gooda", "emb_gooda"))
    out = probe(ALLOW_LIST, path=[site], env={"EMBER_BACKENDS": "nosuch,cpu"})
    # `import ember` survived a bad allow-list; the first device use explains it
    assert out["nosuch"].startswith("RuntimeError: EMBER_BACKENDS names nosuch, which no "
                                    "plugin provides")
    specs = out["specs"]
    for spec, order in [("countdev,cpu", ["countdev", "cpu"]),
                        ("cpu,countdev", ["cpu", "countdev"]),
                        (" CountDev , CPU ", ["countdev", "cpu"]),
                        ("gooda,countdev,cpu", ["gooda", "countdev", "cpu"])]:
        r = specs[spec]
        assert r["load"] is None, r["load"]
        assert r["backends"] == order
        assert r["summary"] == order
        assert r["cuda"] == "AssertionError: Torch not compiled with CUDA enabled"
        assert r["countdev"] == [2.0, 4.0]


LOUD = """
import ember
out["imported"] = True
out["first"] = attempt(lambda: ember.tensor([1.0]))
out["second"] = attempt(lambda: ember.tensor([1.0]))
"""
LOUD_CASES = [b for b in BROKEN if b.fake.entry_point in ("importfail", "hookfail", "initfail",
                                                           "apidev", "kernfail")]


@pytest.fixture(scope="module", params=LOUD_CASES, ids=lambda b: b.fake.entry_point)
def loud(request, tmp_path_factory) -> tuple[Broken, dict[str, Any]]:
    case: Broken = request.param
    site = install(tmp_path_factory.mktemp("loud"), case.fake)
    allow = f"{case.device},cpu" if case.device else "cpu"
    return case, probe(LOUD, path=[site], env={"EMBER_BACKENDS": allow})


def test_backends_switch_makes_a_broken_plugin_loud(loud):
    case, out = loud
    assert out["imported"]
    assert out["first"] is not None, "EMBER_BACKENDS must raise a plugin's error"
    assert out["first"].startswith("RuntimeError: ember plugin ")
    assert re.search(case.reason, out["first"]), out["first"]


def test_strict_backends_error_is_repeated_on_every_use(loud):
    case, out = loud
    assert out["second"] == out["first"]


# -- lazy discovery -------------------------------------------------------------------

LAZY = """
WATCH = ["ember_plugin_example", "emb_gooda", "emb_importfail", "cupy", "pyopencl"]
import ember
out["after_import"] = [m for m in WATCH if m in sys.modules]
out["builtin_accelerators"] = [m for m in ("ember.backends.cuda", "ember.backends.opencl")
                               if m in sys.modules]
ember.tensor([1.0])
out["after_first_query"] = [m for m in WATCH if m in sys.modules]
"""


def test_discovery_is_lazy(tmp_path_factory):
    site = install(tmp_path_factory.mktemp("lazy"), Fake("gooda", "emb_gooda"),
                   Fake("importfail", "emb_importfail"))
    out = probe(LAZY, path=[site])
    assert out["after_import"] == []
    assert out["builtin_accelerators"] == []
    loaded = set(out["after_first_query"])
    assert "emb_gooda" in loaded
    if HAVE_COUNTDEV:
        assert "ember_plugin_example" in loaded
    # loading a plugin is cheap: CuPy / pyopencl wait for the first availability probe
    assert not loaded & {"cupy", "pyopencl"}


def test_import_time_is_reported(record_property):
    """Measures `import ember` (reported, never asserted: timings vary with the machine)."""
    proc = run_python(["-X", "importtime", "-c", "import ember"])
    assert proc.returncode == 0, proc.stderr
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((int(m[1]), int(m[2]), m[4]))
    total = {name: cumulative for _, cumulative, name in rows}
    assert "ember" in total and "numpy" in total
    slowest = sorted(rows, reverse=True)[:5]
    record_property("import_ember_us", total["ember"])
    print(f"\nimport ember: {total['ember'] / 1000:.1f} ms cumulative "
          f"(numpy {total['numpy'] / 1000:.1f} ms); slowest self times: "
          + ", ".join(f"{name} {us / 1000:.1f} ms" for us, _, name in slowest))


def test_the_conformance_suite_skips_dtypes_a_device_does_not_hold(tmp_path):
    """A vendor's backend that leaves out bfloat16 passes the suite: tests parametrized
    with bfloat16 are skipped naming the device, property tests never draw it."""
    site = install(tmp_path / "site", Fake("nobf16", "emb_nobf16"))
    proc = run_python(["-m", "pytest", "--pyargs", "ember.testing", "--ember-device",
                       "nobf16", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:randomly",
                       "-o", "addopts=", "-k", "test_full_zeros_ones or test_rand or "
                       "test_tensor_roundtrip or test_binary_scalar_operands or test_cast"],
                      path=[site, ROOT])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"SKIPPED .*device nobf16:0 holds no ember\.bfloat16 tensors", proc.stdout)
    assert re.search(r"\d+ passed", proc.stdout)
