"""`torch.torch_version.TorchVersion`: the version string that compares as a version.

`torch.__version__` is one: a `str` (so `.split('.')`, `'+' in v` and printing work as on
any string) whose comparisons parse both sides as PEP 440 versions, so
`torch.__version__ >= "1.10"` and `>= (2, 0)` are true for 2.13 although "2.13" < "1.10"
as strings. ember's alias presents `torch.__version__` as one (ember.torch_alias); ember's
own `ember.__version__` stays a plain string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["TorchVersion", "InvalidVersion"]

PYTORCH_API = "2.13.0"
"""The PyTorch release whose API ember follows (its tests' oracle)."""

ALIASED_VERSION = f"{PYTORCH_API}+ember"
"""`torch.__version__` under the alias: the release, with `ember` as its local label where
PyTorch's builds put `cpu` or `cu121`; three dot-separated parts, as programs that split
it expect (ember's own version is ember.torch_alias.OWN_VERSION)."""

# PEP 440's public version, normalized as `packaging` does (epochs left out: no PyTorch
# version has one), and an optional local label (`+cpu`, `+cu121`, `+ember`)
_VERSION = re.compile(
    r"^\s*v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?P<post>-(?P<post_n1>\d+)|[-_.]?(?:post|rev|r)[-_.]?(?P<post_n2>\d+)?)?"
    r"(?P<dev>[-_.]?dev[-_.]?(?P<dev_n>\d+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$", re.IGNORECASE)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_INF = float("inf")


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version."""


def _key(text: str) -> tuple:
    """The sort key of version `text` (PEP 440's order: 1.0.dev0 < 1.0a1 < 1.0 < 1.0.post1;
    a local label sorts after the same public version)."""
    m = _VERSION.match(text)
    if m is None:
        raise InvalidVersion(f"Invalid version: {text!r}")
    release = [int(p) for p in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:  # 2.0 == 2.0.0
        release.pop()
    has_post, has_dev = m["post"] is not None, m["dev"] is not None
    if m["pre_l"] is not None:
        pre: tuple = (_PRE[m["pre_l"].lower()], int(m["pre_n"] or 0))
    elif has_dev and not has_post:
        pre = (-_INF,)  # 1.0.dev0 sorts before 1.0a0
    else:
        pre = (_INF,)
    post = int(m["post_n1"] or m["post_n2"] or 0) if has_post else -_INF
    dev = int(m["dev_n"] or 0) if has_dev else _INF
    local = tuple((0, int(p)) if p.isdigit() else (-1, p.lower())
                  for p in re.split(r"[-_.]", m["local"])) if m["local"] else ()
    return tuple(release), pre, post, dev, local


def _as_text(other: Any) -> str:
    if isinstance(other, str):
        return other
    if isinstance(other, Iterable):  # (2, 0) means "2.0"
        return ".".join(str(item) for item in other)
    raise InvalidVersion(other)


class TorchVersion(str):
    """A version string comparing as a version with strings and tuples of numbers
    (`TorchVersion("2.13.0+cpu") >= (2, 0)`); a string that is no version falls back to
    string comparison, as PyTorch's does."""

    __slots__ = ()

    def _cmp(self, other: Any, method: str) -> Any:
        try:
            mine, theirs = _key(str(self)), _key(_as_text(other))
        except InvalidVersion:
            return getattr(str, method)(self, other)
        return getattr(mine, method)(theirs)

    def __gt__(self, other: Any) -> bool:
        return self._cmp(other, "__gt__")

    def __ge__(self, other: Any) -> bool:
        return self._cmp(other, "__ge__")

    def __lt__(self, other: Any) -> bool:
        return self._cmp(other, "__lt__")

    def __le__(self, other: Any) -> bool:
        return self._cmp(other, "__le__")

    def __eq__(self, other: Any) -> bool:
        return self._cmp(other, "__eq__")

    def __ne__(self, other: Any) -> bool:
        return not self == other

    __hash__ = str.__hash__


def __getattr__(name: str) -> Any:
    """`internal_version` (the plain string) and `__version__` (that string as a
    TorchVersion): the version ember presents now, PyTorch's release under the alias and
    ember's own otherwise, read when asked since the alias sets it when installed."""
    if name in ("internal_version", "__version__"):
        import ember.version

        text = str(ember.version.__version__)
        return text if name == "internal_version" else TorchVersion(text)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
