"""`torch.export.Dim`: a named dimension that may vary between calls of an exported
program, within `[min, max]`."""

from __future__ import annotations

__all__ = ["Dim"]


class Dim:
    """``Dim("batch", min=1, max=64)``: the dimension of an input that `dynamic_shapes`
    marks as dynamic. ``Dim.AUTO``/``Dim.DYNAMIC`` (unnamed) and ``Dim.STATIC`` are
    accepted as PyTorch's markers."""

    AUTO: Dim
    DYNAMIC: Dim
    STATIC: Dim

    def __init__(self, name: str, *, min: int | None = None,  # noqa: A002 - PyTorch's names
                 max: int | None = None) -> None:
        if min is not None and max is not None and max < min:
            raise AssertionError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        self.__name__ = name
        self.min = 0 if min is None else min
        self.max = max

    def __repr__(self) -> str:
        bounds = f", min={self.min}" + ("" if self.max is None else f", max={self.max}")
        return f"Dim({self.__name__!r}{bounds})"

    def allows(self, size: int) -> bool:
        return size >= self.min and (self.max is None or size <= self.max)


Dim.AUTO = Dim("AUTO")
Dim.DYNAMIC = Dim("DYNAMIC")
Dim.STATIC = Dim("STATIC")
