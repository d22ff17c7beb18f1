"""pytorch/examples fx/custom_tracer.py: Tracer subclasses that keep ReLU traced through,
count module calls, and mark nodes."""
import torch
from torch.fx import GraphModule, Tracer


class M1(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        return self.relu(x)


default_traced: GraphModule = torch.fx.symbolic_trace(M1())
print(default_traced.graph)
default_traced.graph.print_tabular()


class LowerReluTracer(Tracer):
    def is_leaf_module(self, m: torch.nn.Module, qualname: str):
        if isinstance(m, torch.nn.ReLU):
            return False
        return super().is_leaf_module(m, qualname)


lower_relu_tracer = LowerReluTracer()
lower_relu_graph = lower_relu_tracer.trace(M1())
print(lower_relu_graph)
lower_relu_graph.print_tabular()


class M2(torch.nn.Module):
    def forward(self, a, b):
        return a + b


class TaggingTracer(Tracer):
    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        n = super().create_node(kind, target, args, kwargs, name)
        n.tag = "foo"
        return n


class M3(torch.nn.Module):
    def forward(self, a, b):
        return torch.relu(a) + b


for m in (M2(), M3()):
    t = TaggingTracer()
    g = t.trace(m)
    for n in g.nodes:
        assert hasattr(n, "tag") and n.tag == "foo"
    print(g)
    gm = GraphModule(m, g)
    print(gm(torch.tensor([1.0, -2.0]), torch.tensor([0.5, 0.5])).tolist())
