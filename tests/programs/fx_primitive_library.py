"""pytorch/examples fx/primitive_library.py: a library of composite ops recorded as
single calls with `torch.fx.wrap`, then inlined into the graph on demand."""
import torch
import torch.fx


def sigmoid_lowp(x: torch.Tensor):
    x = x.float()
    x = x.sigmoid()
    return x.half()


# wrap() indicates that the passed-in function should always be recorded as a
# call_function node rather than being traced through
torch.fx.wrap("sigmoid_lowp")


def add_lowp(a: torch.Tensor, b: torch.Tensor):
    a, b = a.float(), b.float()
    c = a + b
    return c.half()


torch.fx.wrap("add_lowp")


class Foo(torch.nn.Module):
    def forward(self, x, y):
        x = sigmoid_lowp(x)
        y = sigmoid_lowp(y)
        return add_lowp(x, y)


traced = torch.fx.symbolic_trace(Foo())
print(traced.code)


def inline_lowp_func(n: torch.fx.Node):
    # If we find a call to a function in our "lowp" module, inline it
    if n.op == "call_function" and n.target.__module__ == inline_lowp_func.__module__:
        tracer = torch.fx.proxy.GraphAppendingTracer(n.graph)
        with n.graph.inserting_before(n):
            proxy_args = torch.fx.node.map_arg(n.args, lambda x: torch.fx.Proxy(x, tracer))
            proxy_kwargs = torch.fx.node.map_arg(n.kwargs, lambda x: torch.fx.Proxy(x, tracer))
            output_proxy = n.target(*proxy_args, **proxy_kwargs)
            n.replace_all_uses_with(output_proxy.node)
            n.graph.erase_node(n)


for node in traced.graph.nodes:
    if node.op == "call_function" and node.target is sigmoid_lowp:
        inline_lowp_func(node)
traced.recompile()
print(traced.code)

x = torch.tensor([[0.5, -1.0], [2.0, 0.0]])
y = torch.tensor([[1.0, 1.0], [-2.0, 3.0]])
out = traced(x, y)
print(out.dtype, out.float().tolist())
print(torch.equal(out, Foo()(x, y)))
