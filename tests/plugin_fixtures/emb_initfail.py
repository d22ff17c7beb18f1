"""A plugin whose backend class raises in `__init__`."""

from emb_common import NumpyBackend

from ember.core.backend import hookimpl


class InitFailBackend(NumpyBackend):
    name = "initfail"

    def __init__(self) -> None:
        super().__init__()
        raise OSError("emb_initfail: simulated device open failure")


@hookimpl
def ember_backends():
    return [InitFailBackend]
