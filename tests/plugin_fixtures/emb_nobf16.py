"""A working third-party backend, "nobf16", that holds every dtype but bfloat16 (as many
accelerators leave some out): the conformance suite must skip or never draw bfloat16."""

from emb_common import NumpyBackend, borrow_cpu_kernels

from ember.core.backend import ALL_DTYPES, bfloat16, hookimpl

_mine: list[NumpyBackend] = []


class NoBF16Backend(NumpyBackend):
    name = "nobf16"

    def __init__(self) -> None:
        super().__init__()
        self.dtypes = frozenset(d for d in ALL_DTYPES if d is not bfloat16)


def _make() -> NoBF16Backend:
    _mine.append(NoBF16Backend())
    return _mine[-1]


@hookimpl
def ember_backends():
    return [_make]


@hookimpl
def ember_backend_kernels(backend):
    for mine in _mine:
        borrow_cpu_kernels(mine, backend)
