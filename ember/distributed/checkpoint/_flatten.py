"""DCP's flattening of a nested state dict into dotted keys, and back into place."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flatten(state_dict: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"model": {"fc.weight": w}, "step": 3}` -> `{"model.fc.weight": w, "step": 3}`."""
    flat: dict[str, Any] = {}
    for key, value in state_dict.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def assign(state_dict: dict[str, Any], loaded: Mapping[str, Any], prefix: str = "") -> None:
    """Loads `loaded` (flattened) into the nested `state_dict`: tensors in place, other
    values replaced, keys `loaded` lacks left as they are."""
    from ember.autograd import no_grad
    from ember.core.tensor import Tensor

    for key, value in state_dict.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            assign(value, loaded, name + ".")  # type: ignore[arg-type]
            continue
        if name not in loaded:
            continue
        new = loaded[name]
        if isinstance(value, Tensor) and isinstance(new, Tensor):
            if tuple(value.shape) != tuple(new.shape):
                raise RuntimeError(f"Size mismatch between saved {tuple(new.shape)} and "
                                   f"current: {tuple(value.shape)} for {name}")
            with no_grad():
                value.copy_(new)
        else:
            state_dict[key] = new


def missing(state_dict: Mapping[str, Any], loaded: Mapping[str, Any]) -> list[str]:
    """The target's flattened keys the checkpoint lacks."""
    return [k for k in flatten(state_dict) if k not in loaded]
