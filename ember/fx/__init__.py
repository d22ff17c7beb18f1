"""torch.fx for ember: symbolic tracing, the Graph IR, GraphModule, Interpreter.

    >>> gm = torch.fx.symbolic_trace(model)   # a GraphModule
    >>> print(gm.graph); print(gm.code)

Modules: node (Node, map_arg), graph (Graph), _codegen (forward's source), proxy (Proxy),
_symbolic_trace (Tracer, symbolic_trace, wrap), graph_module (GraphModule),
interpreter (Interpreter, Transformer), subgraph_rewriter (replace_pattern),
passes.shape_prop (ShapeProp).
"""

from ember.fx import passes  # noqa: F401 (torch.fx.passes.shape_prop without an import)
from ember.fx._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.interpreter import Interpreter, Transformer
from ember.fx.node import Node, has_side_effect, map_arg
from ember.fx.proxy import Proxy
from ember.fx.subgraph_rewriter import replace_pattern

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "replace_pattern", "has_side_effect", "map_arg",
           "PH"]
