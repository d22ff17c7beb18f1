"""A plugin built for a future version of ember's backend contract."""

from emb_common import NumpyBackend

from ember.core.backend import hookimpl


class FutureBackend(NumpyBackend):
    name = "apidev"
    api_version = 999


@hookimpl
def ember_backends():
    return [FutureBackend]
