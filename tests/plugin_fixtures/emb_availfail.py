"""A plugin whose backend's `is_available()` (not `unavailable_reason`) raises."""

from emb_common import NumpyBackend

from ember.core.backend import hookimpl


class AvailFailBackend(NumpyBackend):
    name = "availfail"

    def is_available(self):
        raise RuntimeError("emb_availfail: simulated is_available crash")


@hookimpl
def ember_backends():
    return [AvailFailBackend]
