"""A working third-party backend, "gooda", on private NumPy memory."""

from emb_common import NumpyBackend, borrow_cpu_kernels

from ember.core.backend import hookimpl

_mine: list[NumpyBackend] = []


class GoodABackend(NumpyBackend):
    name = "gooda"


def _make() -> GoodABackend:
    _mine.append(GoodABackend())
    return _mine[-1]


@hookimpl
def ember_backends():
    return [_make]


@hookimpl
def ember_backend_kernels(backend):
    for mine in _mine:
        borrow_cpu_kernels(mine, backend)
