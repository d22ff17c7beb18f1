"""A plugin whose backend lacks a required kernel (`getitem`: views must be native)."""

from emb_common import NumpyBackend, borrow_cpu_kernels

from ember.core.backend import hookimpl

_mine: list[NumpyBackend] = []


class NoKernBackend(NumpyBackend):
    name = "nokern"


def _make() -> NoKernBackend:
    _mine.append(NoKernBackend())
    return _mine[-1]


@hookimpl
def ember_backends():
    return [_make]


@hookimpl
def ember_backend_kernels(backend):
    for mine in _mine:
        borrow_cpu_kernels(mine, backend, skip=frozenset({"getitem"}))
