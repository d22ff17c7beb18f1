"""Device names: `"cpu"`, `"cuda:0"`, `"opencl:1"`, `"auto"`, or a plugin's name."""

from __future__ import annotations

import functools

from ember.core import dtype as dt
from ember.core.errors import with_context


@dt.printed_in_api()
class device:  # noqa: N801 - PyTorch's spelling
    """A device: a backend name (`type`) and an optional device `index`.

    >>> ember.device("cuda:1")
    device(type='cuda', index=1)
    """

    __slots__ = ("type", "index")

    def __new__(cls, type_or_str: str | device | None = None, index: int | None = None, *,
                type: str | None = None) -> device:  # noqa: A002 - PyTorch's keyword
        if type is not None:  # `device(type='cpu', index=0)`, as its repr reads
            if type_or_str is not None:
                raise TypeError("device(): got multiple values for argument 'type'")
            type_or_str = type
        if isinstance(type_or_str, device):
            return type_or_str if index is None else _make(type_or_str.type, index)
        if not isinstance(type_or_str, str):
            raise TypeError(f"device(): expected a string like 'cpu' or 'cuda:0', "
                            f"got {type_or_str.__class__.__name__}")
        kind, parsed = parse(type_or_str)
        if index is not None and parsed is not None:
            raise ValueError(f"device(): index given twice in {type_or_str!r} and {index}")
        return _make(kind, parsed if index is None else index)

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError):
                return False
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self) -> device:
        """`with ember.device("meta"):` makes factories called without a device create
        their tensors here (PyTorch's device context); the previous default comes back
        on exit."""
        from ember.core import placement

        placement.push_default_device(self)
        return self

    def __exit__(self, *exc: object) -> None:
        from ember.core import placement

        placement.pop_default_device()


@functools.cache
def _make(kind: str, index: int | None) -> device:
    obj = object.__new__(device)
    object.__setattr__(obj, "type", kind)
    object.__setattr__(obj, "index", index)
    return obj


@functools.cache
def parse(text: str) -> tuple[str, int | None]:
    """`"cuda:1"` -> `("cuda", 1)`; `"cpu"` -> `("cpu", None)`."""
    if not text:
        raise RuntimeError("Device string must not be empty")
    kind, sep, idx = text.strip().partition(":")
    if not kind or not (kind.replace("_", "").replace("-", "").isalnum()):
        raise with_context(RuntimeError(f"Invalid device string: {text!r}"),
                           "expected 'type' or 'type:index'")
    if not sep:
        return kind.lower(), None
    if not idx.isdigit():
        raise with_context(RuntimeError(f"Invalid device string: {text!r}"),
                           "the index must be a non-negative integer")
    return kind.lower(), int(idx)
