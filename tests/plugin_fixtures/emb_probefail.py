"""A plugin whose backend's availability probe raises instead of answering."""

from emb_common import NumpyBackend

from ember.core.backend import hookimpl


class ProbeFailBackend(NumpyBackend):
    name = "probefail"

    def unavailable_reason(self):
        raise RuntimeError("emb_probefail: simulated probe crash")


@hookimpl
def ember_backends():
    return [ProbeFailBackend]
