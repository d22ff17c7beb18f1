"""`torch.types`: the type aliases PyTorch's signatures use (`Device`, `Number`,
`_size`, `_dtype` ...), as annotated user code imports them."""

import os
from builtins import bool as _bool  # noqa: F401 - PyTorch's re-exported names
from builtins import bytes as _bytes  # noqa: F401
from builtins import complex as _complex  # noqa: F401
from builtins import float as _float  # noqa: F401
from builtins import int as _int  # noqa: F401
from builtins import str as _str  # noqa: F401
from collections.abc import Sequence
from typing import IO, TypeAlias

from ember.core.device import device as _device
from ember.core.dtype import dtype as _dtype  # noqa: F401
from ember.core.storage import layout as _layout  # noqa: F401
from ember.core.tensor import Size, Tensor

__all__ = ["Device", "FileLike", "Number"]

_TensorOrTensors: TypeAlias = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors: TypeAlias = Tensor | Sequence[Tensor | None]
_size: TypeAlias = Size | list[int] | tuple[int, ...]

Number: TypeAlias = int | float | bool
_Number = (int, float, bool)
FileLike: TypeAlias = str | os.PathLike[str] | IO[bytes]
Device: TypeAlias = _device | str | int | None
