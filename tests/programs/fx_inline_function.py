"""pytorch/examples fx/inline_function.py: inline a leaf module's forward into the
graph by running it on Proxies of the node's arguments."""
import torch
from torch.fx import Proxy, symbolic_trace
from torch.fx.node import map_arg


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        return self.relu(x) + 1.0


m = symbolic_trace(M())
print(m.code)

tracer = torch.fx.proxy.GraphAppendingTracer(m.graph)
for node in m.graph.nodes:
    if (node.op, node.target) == ("call_module", "relu"):
        with m.graph.inserting_before(node):
            proxy_args = map_arg(node.args, lambda n: Proxy(n, tracer))
            proxy_output = m.relu.forward(*proxy_args)
            node.replace_all_uses_with(proxy_output.node)
            m.graph.erase_node(node)
m.recompile()
print(m.code)
x = torch.tensor([[-1.0, 2.0], [0.5, -3.0]])
print(m(x).tolist())
