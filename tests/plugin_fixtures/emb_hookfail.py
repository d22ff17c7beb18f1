"""A plugin that imports fine but whose `ember_backends()` hook raises."""

from ember.core.backend import hookimpl


@hookimpl
def ember_backends():
    raise ValueError("emb_hookfail: simulated driver handshake failure")
