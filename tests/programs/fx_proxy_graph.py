"""pytorch/examples fx/proxy_based_graph_creation.py: build a graph by operating on
Proxies, then run it as a GraphModule."""
import torch
from torch.fx import Graph, GraphModule, Proxy
from torch.fx.proxy import GraphAppendingTracer

graph = Graph()
tracer = GraphAppendingTracer(graph)
raw1 = graph.placeholder("x")
raw2 = graph.placeholder("y")
y = Proxy(raw1, tracer)
z = Proxy(raw2, tracer)
a = torch.cat([y, z])
b = torch.tanh(a)
c = torch.neg(b)
z = torch.add(b, c) * 2 + a.sum()
graph.output(z.node)
graph.lint()
print(graph)
gm = GraphModule(torch.nn.Module(), graph)
print(gm.code)
print(gm(torch.tensor([0.5]), torch.tensor([-1.0, 2.0])).tolist())
