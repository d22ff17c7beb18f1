"""`torch._dynamo._trace_wrapped_higher_order_op`: `TransformGetItemToIndex`, the mode in
which PyTorch runs flex_attention's score_mod/mask_mod (and attention-gym's helpers run
theirs) so that `table[q_idx]` with a scalar index tensor indexes instead of making a
view. ember calls the mods with whole index tensors (see
`ember.nn.attention.flex_attention`), for which indexing already gathers, so the mode
changes nothing."""

from __future__ import annotations

from typing import Any

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex:
    """Context manager accepted for PyTorch's programs: tensor indexing inside it is
    ember's ordinary advanced indexing."""

    def __enter__(self) -> TransformGetItemToIndex:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
