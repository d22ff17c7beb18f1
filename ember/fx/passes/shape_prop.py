"""`torch.fx.passes.shape_prop.ShapeProp`: run a GraphModule on example inputs and store
each node's result shape and dtype in ``node.meta['tensor_meta']`` (a TensorMetadata)."""

from __future__ import annotations

from typing import Any, NamedTuple

from ember.fx.interpreter import Interpreter
from ember.fx.node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records of a tensor result."""

    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def _extract_tensor_metadata(result: Any) -> TensorMetadata:
    import ember

    memory_format = None
    for fmt in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
        if result.is_contiguous(memory_format=fmt):
            memory_format = fmt
            break
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(),
                          memory_format, False, {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*example_inputs)``: runs `gm`, recording on each node
    ``meta['tensor_meta']`` (for tensor results, nested as the result is) and
    ``meta['type']``."""

    def run_node(self, n: Node) -> Any:
        import ember

        result = super().run_node(n)
        found = False

        def extract(obj: Any) -> Any:
            nonlocal found
            if isinstance(obj, ember.Tensor):
                found = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the module on `args`, recording shapes; returns its output."""
        return super().run(*args)
