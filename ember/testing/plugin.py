"""The pytest plugin of ember's backend conformance suite.

It adds:

* ``--ember-device DEVICE`` (repeatable, or comma-separated): the devices to test, e.g.
  ``cpu``, ``countdev``, ``cuda:1``. Default: every device available now
  (``ember.devices()``, and the devices of every other available backend plugin).
* ``--ember-examples N``: how many Hypothesis examples each property test draws
  (default 15; raise it for a longer, more thorough run).
* the ``device`` fixture: an ``ember.device``, parametrized over the chosen devices, so a
  test that takes ``device`` runs once per device (test ids ``[cpu]``, ``[countdev:0]``).
  A test module may pin its own list with ``EMBER_TEST_DEVICES = ["cpu", "countdev"]``
  (used unless ``--ember-device`` is given; an unavailable device is skipped). A project
  that defines its own ``device`` fixture keeps it: only tests that resolve ``device`` to
  this plugin's fixture are parametrized.

The run's header lists each device under test and the primitive ops its backend has no
kernel for (those run on the CPU backend instead, with a FallbackWarning).

Loading it: ``pytest_plugins = ["ember.testing.plugin"]`` in a top-level conftest.py,
or ``-p ember.testing.plugin`` on the command line, or the ``pytest11`` entry point
named ``ember.testing.plugin`` (then ``pytest --pyargs ember.testing`` needs nothing
else). Every way registers it under that one name, so they combine without clashing.
Importing it is cheap: ember is imported when a test needs a device.
"""

from __future__ import annotations

from typing import Any

import pytest

DEFAULT_EXAMPLES = 15
_max_examples = DEFAULT_EXAMPLES


def max_examples() -> int:
    """Hypothesis examples per property test (``--ember-examples``)."""
    return _max_examples


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ember", "ember backend conformance")
    group.addoption(
        "--ember-device", action="append", dest="ember_devices", default=None,
        metavar="DEVICE",
        help="run the tests that take a `device` fixture on DEVICE (repeatable; default: "
             "every available device)")
    group.addoption(
        "--ember-examples", type=int, dest="ember_examples", default=DEFAULT_EXAMPLES,
        metavar="N",
        help=f"Hypothesis examples per property test in ember.testing (default "
             f"{DEFAULT_EXAMPLES})")


def available_devices() -> list[Any]:
    """Every device usable now: `ember.devices()`, plus the devices of any other loaded
    backend that is available (a plugin need not be an accelerator to be tested)."""
    import ember
    from ember.core import plugins

    out = list(ember.devices())
    plugins.registry.ensure_loaded()
    for backend in plugins.registry.backends.values():
        if plugins.safe_unavailable_reason(backend) is not None:
            continue
        if backend.name == "cpu":
            found = [ember.device("cpu")]
        else:
            found = [ember.device(backend.name, i) for i in range(backend.device_count())]
        out.extend(d for d in found if d not in out)
    return out


def _resolve(name: str) -> Any:
    from ember.core.placement import resolve

    return resolve(name)[0]  # validates, and normalises "countdev" -> countdev:0


def _chosen_devices(config: pytest.Config) -> list[Any]:
    names = config.getoption("ember_devices")
    if not names:
        return available_devices()
    chosen: list[Any] = []
    for name in names:
        for part in (p.strip() for p in name.split(",")):
            if not part:
                continue
            try:
                dev = _resolve(part)
            except Exception as err:  # unknown backend, unavailable device, bad index
                why = "\n".join([str(err), *getattr(err, "__notes__", ())])  # notes: ember's why
                raise pytest.UsageError(f"--ember-device {part}: {why}") from None
            if dev not in chosen:
                chosen.append(dev)
    return chosen


def pytest_configure(config: pytest.Config) -> None:
    global _max_examples
    _max_examples = max(1, int(config.getoption("ember_examples")))
    config._ember_devices = None  # resolved lazily: loading plugins waits for a test
    if config.getoption("ember_devices"):
        config._ember_devices = _chosen_devices(config)  # a bad name: a usage error now


def _devices(config: pytest.Config) -> list[Any]:
    if getattr(config, "_ember_devices", None) is None:
        config._ember_devices = _chosen_devices(config)
    return config._ember_devices


def pytest_report_header(config: pytest.Config) -> list[str]:
    # only for conformance runs: elsewhere, listing devices would load every plugin early
    if not (config.getoption("ember_devices") or config.option.pyargs):
        return []
    from ember.core import plugins
    from ember.core.opdef import OPS, Kind

    lines = []
    for dev in _devices(config):
        backend = plugins.get_backend(dev.type)
        missing = sorted(name for name, op in OPS.items()
                         if op.kind is Kind.PRIMITIVE and name not in backend.kernels)
        note = f"no kernel for {', '.join(missing)} (runs on the CPU)" if missing else \
            "a kernel for every primitive"
        lines.append(f"ember device {dev}: {note}")
    return lines


def _uses_our_fixture(metafunc: pytest.Metafunc) -> bool:
    """Whether `device` resolves to this plugin's fixture (not a project's own)."""
    defs = metafunc.definition._fixtureinfo.name2fixturedefs.get("device")
    return bool(defs) and getattr(defs[-1].func, "__code__", None) is _device.__code__


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" not in metafunc.fixturenames or not _uses_our_fixture(metafunc):
        return
    # a test that parametrizes `device` itself keeps its own values
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        if "device" in ([n.strip() for n in names.split(",")] if isinstance(names, str)
                        else list(names)):
            return
    pinned = getattr(metafunc.module, "EMBER_TEST_DEVICES", None)
    if pinned is not None and not metafunc.config.getoption("ember_devices"):
        params = [_pinned_param(name) for name in pinned]
    else:
        params = [pytest.param(d, id=str(d)) for d in _devices(metafunc.config)]
    # session scope: one value per device, and no Hypothesis health check about
    # function-scoped fixtures
    metafunc.parametrize("device", params, indirect=True, scope="session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test parametrized with a dtype its device does not hold is skipped, naming both
    (a backend may leave dtypes out: bfloat16, float64 on some GPUs)."""
    held: dict[Any, frozenset] = {}
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        device = params.get("device")
        if device is None or not hasattr(device, "type"):
            continue
        if device.type not in held:
            from ember.core import plugins

            held[device.type] = frozenset(plugins.get_backend(device.type).dtypes)
        import ember

        for value in params.values():
            if isinstance(value, ember.dtype) and value not in held[device.type]:
                item.add_marker(pytest.mark.skip(
                    reason=f"device {device} holds no {value} tensors"))
                break


def _pinned_param(name: str) -> Any:
    """A device a test module pins (`EMBER_TEST_DEVICES`); skipped when unavailable."""
    try:
        return pytest.param(_resolve(name), id=name)
    except Exception as err:
        return pytest.param(None, id=name, marks=pytest.mark.skip(
            reason=[*getattr(err, "__notes__", ()),  # ember's why, when the error has it
                    f"device {name!r} is not available: {err}"][0].splitlines()[0]))


def _device(request: pytest.FixtureRequest) -> Any:
    """The ember device a conformance test runs on (see ``--ember-device``)."""
    param = getattr(request, "param", None)
    if param is None:  # not parametrized (e.g. requested by another fixture)
        return _devices(request.config)[0]
    return param


device = pytest.fixture(scope="session", name="device")(_device)
