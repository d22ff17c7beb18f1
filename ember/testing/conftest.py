"""Registers the conformance suite's pytest plugin when the suite runs as
`pytest --pyargs ember.testing` (this is the package's initial conftest then)."""

pytest_plugins = ["ember.testing.plugin"]
