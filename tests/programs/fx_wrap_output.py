"""pytorch/examples fx/wrap_output_dynamically.py: a pass that wraps a module's output
in an activation chosen at run time, built with Proxies."""
from enum import Enum, auto

import torch
from torch.fx import GraphModule, Node, Proxy, symbolic_trace


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        y = torch.cat([x, y])
        return y


traced = symbolic_trace(M())


class ActivationFunction(Enum):
    RELU = auto()
    LEAKY_RELU = auto()
    PRELU = auto()


activation_functions = {
    ActivationFunction.RELU: torch.nn.ReLU(),
    ActivationFunction.LEAKY_RELU: torch.nn.LeakyReLU(),
    ActivationFunction.PRELU: torch.nn.PReLU(),
}


def wrap_in_activation_function(m: GraphModule, fn: ActivationFunction) -> GraphModule:
    output_node: Node | None = None
    for n in reversed(m.graph.nodes):
        if n.op == "output":
            output_node = n
            break
    assert output_node
    assert len(output_node.all_input_nodes) == 1
    wrap_node = output_node.all_input_nodes[0]
    wrap_proxy = Proxy(wrap_node)
    fn_impl = activation_functions[fn]
    fn_impl_traced = symbolic_trace(fn_impl)
    with traced.graph.inserting_after(wrap_node):
        fn_impl_output_node = fn_impl_traced(wrap_proxy)
        new_args = (fn_impl_output_node.node,)
        output_node.args = new_args
    m.recompile()
    return m


x, y = torch.tensor([[-1.0, 2.0]]), torch.tensor([[3.0, -4.0]])
print(traced(x, y).tolist())
wrap_in_activation_function(traced, ActivationFunction.LEAKY_RELU)
print(traced.code)
print(traced(x, y).tolist())
