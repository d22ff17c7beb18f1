"""pytorch/examples fx/replace_op.py: replace every add (operator, function, method)
with bitwise_and by editing the traced graph."""
import operator

import torch
from torch.fx import symbolic_trace


class M(torch.nn.Module):
    def forward(self, x, y):
        return x + y, torch.add(x, y), x.add(y)


traced = symbolic_trace(M())
print(traced.graph)

patterns = {operator.add, torch.add, "add"}
for n in traced.graph.nodes:
    if any(n.target == pattern for pattern in patterns):
        with traced.graph.inserting_after(n):
            new_node = traced.graph.call_function(torch.bitwise_and, n.args, n.kwargs)
            n.replace_all_uses_with(new_node)
        traced.graph.erase_node(n)
traced.recompile()
print(traced.code)
x = torch.tensor([3, 5, 6])
y = torch.tensor([1, 4, 2])
print([t.tolist() for t in traced(x, y)])
