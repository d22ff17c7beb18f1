"""One of two plugins that both provide a backend called "dupdev"."""

from emb_common import NumpyBackend, borrow_cpu_kernels

from ember.core.backend import hookimpl

ORIGIN = "emb_dup1"
_made: list[NumpyBackend] = []


class DupBackend(NumpyBackend):
    name = "dupdev"
    origin = ORIGIN


@hookimpl
def ember_backends():
    return [lambda: _made.append(DupBackend()) or _made[-1]]


@hookimpl
def ember_backend_kernels(backend):
    for mine in _made:
        borrow_cpu_kernels(mine, backend)
