"""Shared fixtures. The conformance suite's options (--ember-device) come from
ember.testing's pytest plugin."""

import os
import sys

import pytest

pytest_plugins = ["ember.testing.plugin"]

# Hypothesis (6.170) chains one more settings object onto a @given test's settings for
# each of its parametrized cases, and reads the chain recursively: the fuzz file's
# ~950-case extreme-values test reached Python's default limit of 1000 frames (a
# RecursionError in hypothesis/_settings.py). Pure-Python frames, so a higher limit is
# safe.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))


@pytest.fixture(autouse=True, scope="session")
def _trait_cache(tmp_path_factory):
    """The scheduler's device-trait cache in a folder of this session (inherited by the
    subprocesses tests start): tests never read or write the user's cache, and a device is
    calibrated at most once a session."""
    saved = os.environ.get("EMBER_CACHE_DIR")
    os.environ["EMBER_CACHE_DIR"] = str(tmp_path_factory.mktemp("ember-cache"))
    yield
    if saved is None:
        os.environ.pop("EMBER_CACHE_DIR", None)
    else:
        os.environ["EMBER_CACHE_DIR"] = saved


def pytest_collection_modifyitems(config, items):
    """Tests marked `long` (measured soak runs) run only with EMBER_LONG_TESTS=1."""
    if os.environ.get("EMBER_LONG_TESTS", "0") not in ("", "0"):
        return
    skip = pytest.mark.skip(reason="a long measured run: set EMBER_LONG_TESTS=1")
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _torch_function_watch_off():
    """A test whose Tensor subclass defines `__torch_function__` turns on ember's override
    check (for good, as in a program): later tests in the process must not inherit it
    (their op-entry hooks, method routing and error texts would change)."""
    yield
    from ember.core import torch_function

    if torch_function.watching:
        torch_function.unwatch()


@pytest.fixture
def clean_env(monkeypatch):
    """Clear ember's switches so a test starts from the defaults."""
    for var in ("EMBER_STRICT", "EMBER_BACKENDS", "EMBER_PLUGIN_AUTOLOAD"):
        monkeypatch.delenv(var, raising=False)
    return os.environ


def pytest_collection_finish(session):
    """Importing the test modules must leave ember as a program finds it: a module-level
    `__torch_function__` (or autocast, or profile) would install an op-entry hook for
    every test collected, and the tests that check for none would fail far away."""
    from ember.core import interpose

    if interpose.active is not None:
        raise pytest.UsageError("a test module installed an ember op-entry hook at import "
                                "(a module-level __torch_function__ subclass?): define it "
                                "inside the test, or in a helper module the test imports")
