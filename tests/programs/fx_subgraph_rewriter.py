"""pytorch/examples fx/subgraph_rewriter_basic_use.py: replace_pattern."""
import torch
from torch.fx import replace_pattern, symbolic_trace


class M(torch.nn.Module):
    def forward(self, x, w1, w2):
        val1 = torch.neg(w1)
        m1 = torch.cat([val1, w2]).sum()
        val2 = torch.neg(w1)
        m2 = torch.cat([val2, w2]).sum()
        return x + torch.max(m1) + torch.max(m2)


traced = symbolic_trace(M())


def pattern(a1, a2):
    val1 = torch.neg(a1)
    return torch.cat([val1, a2]).sum()


def replacement(w1, w2):
    return torch.stack([w1, w2])


x = torch.tensor([1.0, 2.0])
w1 = torch.tensor([0.5, -1.5])
w2 = torch.tensor([2.0, 3.0])
print(traced.code)
matches = replace_pattern(traced, pattern, replacement)
print(len(matches))
print(traced.code)
print(traced(x, w1, w2).tolist())
