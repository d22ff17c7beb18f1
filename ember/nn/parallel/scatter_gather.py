"""Split inputs over devices and gather outputs back: what `DataParallel` moves.

Tensors are cut along `dim` into pieces of the given sizes and moved with `.to(device)`,
which is differentiable, so gradients flow back to the whole batch; lists, tuples and
dicts are walked; anything else is passed to every device as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember
from ember import Tensor


def scatter(obj: Any, sizes: Sequence[int], devices: Sequence[ember.device], dim: int = 0
            ) -> list[Any]:
    """`obj` cut into `len(devices)` pieces: piece i has `sizes[i]` rows along `dim` of
    every tensor in it, on `devices[i]`."""
    if isinstance(obj, Tensor):
        if obj.dim() == 0:
            raise ValueError("scatter: cannot split a 0-dim tensor over devices")
        if sum(sizes) != obj.shape[dim]:
            raise ValueError(f"scatter: the split {list(sizes)} does not add up to the size "
                             f"{obj.shape[dim]} of dim {dim} of an input of shape "
                             f"{list(obj.shape)}")
        pieces, start = [], 0
        for size, device in zip(sizes, devices):
            pieces.append(obj.narrow(dim, start, size).to(device))
            start += size
        return pieces
    if isinstance(obj, (list, tuple)) and obj:
        per_item = [scatter(item, sizes, devices, dim) for item in obj]
        return [_rebuild(obj, items) for items in zip(*per_item)]
    if isinstance(obj, dict) and obj:
        per_key = {k: scatter(v, sizes, devices, dim) for k, v in obj.items()}
        return [type(obj)({k: per_key[k][i] for k in obj}) for i in range(len(devices))]
    return [obj] * len(devices)


def gather(outputs: Sequence[Any], device: ember.device, dim: int = 0) -> Any:
    """The per-device `outputs` joined along `dim` on `device` (walking lists, tuples
    and dicts as `scatter` does)."""
    first = outputs[0]
    if isinstance(first, Tensor):
        return ember.cat([o.to(device) for o in outputs], dim)
    if first is None:
        return None
    if isinstance(first, (list, tuple)):
        return _rebuild(first, [gather(items, device, dim) for items in zip(*outputs)])
    if isinstance(first, dict):
        return type(first)({k: gather([o[k] for o in outputs], device, dim) for k in first})
    raise TypeError(f"gather: cannot join outputs of type {type(first).__name__} from several "
                    "devices (a Tensor, or lists, tuples and dicts of them, expected)")


def _rebuild(like: list | tuple, items: Sequence[Any]) -> list | tuple:
    """A sequence of `like`'s type (named tuples included) holding `items`."""
    if hasattr(like, "_fields"):
        return type(like)(*items)
    return type(like)(items)


def tensors_in(obj: Any) -> list[Tensor]:
    """The tensors in `obj`, walking lists, tuples and dicts."""
    if isinstance(obj, Tensor):
        return [obj]
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) \
        else ()
    return [t for item in items for t in tensors_in(item)]
