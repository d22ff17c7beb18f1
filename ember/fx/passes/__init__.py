"""torch.fx.passes: analyses and transforms over a GraphModule (shape_prop.ShapeProp,
split_module.split_module)."""

from ember.fx.passes import shape_prop, split_module

__all__ = ["shape_prop", "split_module"]
