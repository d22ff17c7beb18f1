"""A plugin with no backend of its own whose `ember_backend_kernels` hook raises."""

from ember.core.backend import hookimpl


@hookimpl
def ember_backend_kernels(backend):
    raise KeyError("emb_kernfail: simulated kernel-table build failure")
