"""Numerical limits of ember's dtypes: `ember.finfo` and `ember.iinfo`, as torch.finfo/iinfo."""

from __future__ import annotations

import numpy as np

from ember.core import dtype as dt

__all__ = ["finfo", "iinfo"]

# bfloat16 has no NumPy dtype: its limits as PyTorch reports them (8 exponent, 7 mantissa bits)
_BFLOAT16 = {"bits": 16, "eps": 0.0078125, "max": 3.3895313892515355e38,
             "min": -3.3895313892515355e38, "tiny": 1.1754943508222875e-38, "resolution": 0.01}


def _g(value: float) -> str:
    return f"{value:g}"


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating point dtype (default: the default dtype).

    Attributes: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``),
    ``resolution``, ``dtype`` (the dtype's name), each a Python number.
    """

    def __init__(self, type: dt.dtype | None = None):  # noqa: A002 - PyTorch's argument name
        if type is None:
            type = dt.get_default_dtype()  # noqa: A001
        if not isinstance(type, dt.dtype) or not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. "
                            "Use torch.iinfo to handle 'torch.finfo'")
        if type is dt.bfloat16:
            limits = _BFLOAT16
        else:
            info = np.finfo(np.dtype(type.name))
            limits = {"bits": int(info.bits), "eps": float(info.eps), "max": float(info.max),
                      "min": float(info.min), "tiny": float(info.smallest_normal),
                      "resolution": 10.0 ** -int(info.precision)}
        self.bits: int = limits["bits"]
        self.eps: float = limits["eps"]
        self.max: float = limits["max"]
        self.min: float = limits["min"]
        self.tiny: float = limits["tiny"]
        self.smallest_normal: float = limits["tiny"]
        self.resolution: float = limits["resolution"]
        self.dtype: str = type.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, max={_g(self.max)}, "
                f"eps={_g(self.eps)}, smallest_normal={_g(self.smallest_normal)}, "
                f"tiny={_g(self.tiny)}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - PyTorch's name
    """Machine limits of an integer dtype: ``bits``, ``max``, ``min`` (ints) and ``dtype``."""

    def __init__(self, type: dt.dtype):  # noqa: A002 - PyTorch's argument name
        if type is dt.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if not isinstance(type, dt.dtype) or type.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. "
                            "Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(np.dtype(type.name))
        self.bits: int = int(info.bits)
        self.max: int = int(info.max)
        self.min: int = int(info.min)
        self.dtype: str = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"
