"""torch.fx.passes: analyses over a GraphModule (shape_prop.ShapeProp)."""
