"""A plugin whose backend has an invalid name (upper case and a dash)."""

from emb_common import NumpyBackend

from ember.core.backend import hookimpl


class BadNameBackend(NumpyBackend):
    name = "Bad-Name"


@hookimpl
def ember_backends():
    return [BadNameBackend]
