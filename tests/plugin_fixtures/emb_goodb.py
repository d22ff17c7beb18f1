"""A working third-party backend, "goodb", on private NumPy memory."""

from emb_common import NumpyBackend, borrow_cpu_kernels

from ember.core.backend import hookimpl

_mine: list[NumpyBackend] = []


class GoodBBackend(NumpyBackend):
    name = "goodb"


def _make() -> GoodBBackend:
    _mine.append(GoodBBackend())
    return _mine[-1]


@hookimpl
def ember_backends():
    return [_make]


@hookimpl
def ember_backend_kernels(backend):
    for mine in _mine:
        borrow_cpu_kernels(mine, backend)
