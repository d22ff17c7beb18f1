"""`ember.finfo` and `ember.iinfo`: the numerical limits of a dtype, as torch.finfo and
torch.iinfo (programs read `finfo(float32).eps` for numerical guards)."""

from __future__ import annotations

import numpy as np

from ember.core import dtype as dt
from ember.core.backend import numpy_dtype
from ember.core.host import dtype_arg


def _dtype_arg(value: object, op: str) -> dt.dtype:
    """A dtype, or a Python type (`finfo(float)` is float64's), else PyTorch's error."""
    try:
        return dtype_arg(value, op)
    except TypeError:
        raise dt.not_a_dtype(value, op, "type", 1) from None


# PyTorch's limits of its float8 dtypes: (eps, max, smallest normal); min is -max but for
# float8_e8m0fnu, which has no sign (its min is its smallest normal). The resolution is 1.
_FLOAT8 = {"float8_e4m3fn": (2.0**-3, 448.0, 2.0**-6),
           "float8_e5m2": (2.0**-2, 57344.0, 2.0**-14),
           "float8_e4m3fnuz": (2.0**-3, 240.0, 2.0**-7),
           "float8_e5m2fnuz": (2.0**-3, 57344.0, 2.0**-15),
           "float8_e8m0fnu": (1.0, 2.0**127, 2.0**-127)}


def _g(value: float) -> str:
    return f"{value:g}"


@dt.printed_in_api()
class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating-point dtype (the default dtype when none is given; a
    complex dtype: that of its parts):
    `bits`, `eps`, `max`, `min`, `tiny` (= `smallest_normal`), `resolution`, `dtype`."""

    def __init__(self, type: dt.dtype | None = None) -> None:  # noqa: A002 - PyTorch's name
        d = dt.get_default_dtype() if type is None else _dtype_arg(type, "finfo")
        if isinstance(d, dt.dtype) and d.is_complex:  # PyTorch's: its parts' dtype's
            d = d.to_real()
        if not isinstance(d, dt.dtype) or not d.is_floating_point:
            raise TypeError(f"{dt.API_NAME}.finfo() requires a floating point input type. "
                            f"Use {dt.API_NAME}.iinfo to handle '{dt.API_NAME}.finfo'")
        self.bits = d.itemsize * 8
        self.dtype = d.name
        if d.name in _FLOAT8:
            self.eps, self.max, self.tiny = _FLOAT8[d.name]
            self.min = self.tiny if d is dt.float8_e8m0fnu else -self.max
            self.smallest_normal, self.resolution = self.tiny, 1.0
            return
        if d is dt.bfloat16:  # NumPy's finfo knows only its own types
            import ml_dtypes

            info = ml_dtypes.finfo(ml_dtypes.bfloat16)
        else:
            info = np.finfo(numpy_dtype(d))
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = float(10.0 ** -info.precision)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, "
                f"max={_g(self.max)}, eps={_g(self.eps)}, "
                f"smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, "
                f"dtype={self.dtype})")


@dt.printed_in_api()
class iinfo:  # noqa: N801 - PyTorch's name
    """Machine limits of an integer dtype: `bits`, `max`, `min`, `dtype`."""

    def __init__(self, type: dt.dtype) -> None:  # noqa: A002 - PyTorch's name
        type = _dtype_arg(type, "iinfo")  # noqa: A001
        if type is dt.bool_:
            raise TypeError(f"{type} is not supported by {dt.API_NAME}.iinfo")
        if not isinstance(type, dt.dtype) or type.is_floating_point or \
                type in dt.UNHELD_DTYPES:  # (PyTorch's iinfo knows no sub-byte integers)
            raise TypeError(f"{dt.API_NAME}.iinfo() requires an integer input type. "
                            f"Use {dt.API_NAME}.finfo to handle '{dt.API_NAME}.iinfo'")
        info = np.iinfo(numpy_dtype(type))
        self.bits = type.itemsize * 8
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = type.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"
