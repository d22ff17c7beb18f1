"""Shared fixtures. The conformance suite's options (--ember-device) come from
ember.testing's pytest plugin."""

import os

import pytest

pytest_plugins = ["ember.testing.plugin"]


@pytest.fixture
def clean_env(monkeypatch):
    """Clear ember's switches so a test starts from the defaults."""
    for var in ("EMBER_STRICT", "EMBER_BACKENDS", "EMBER_PLUGIN_AUTOLOAD"):
        monkeypatch.delenv(var, raising=False)
    return os.environ
