# The "Custom Backends" tutorial for torch.compile (torch.compiler_custom_backends): a
# backend is a function (gm: torch.fx.GraphModule, example_inputs) -> callable; it sees
# the FX graph dynamo captured and returns what runs in its place.
from typing import List

import torch
import torch.nn as nn

torch.manual_seed(0)


def my_compiler(gm: torch.fx.GraphModule, example_inputs: List[torch.Tensor]):
    print("my_compiler() called with FX graph:")
    gm.graph.print_tabular()
    return gm.forward  # return a python callable


@torch.compile(backend=my_compiler)
def fn(x, y):
    a = torch.cos(x)
    b = torch.sin(y)
    return a + b


x, y = torch.randn(10), torch.randn(10)
out = fn(x, y)
print("fn matches eager:", torch.allclose(out, torch.cos(x) + torch.sin(y)))

# Graph breaks: data-dependent control flow splits the function into several graphs,
# each handed to the backend (the code after the branch once per branch taken).
def print_code_compiler(gm: torch.fx.GraphModule, example_inputs):
    print("my_compiler() called with FX graph:")
    print(gm.code)
    return gm.forward


def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


opt_toy = torch.compile(toy_example, backend=print_code_compiler)
for _ in range(4):
    a, b = torch.randn(10), torch.randn(10)
    print(f"toy sum {opt_toy(a, b).sum().item():.4f} eager {toy_example(a, b).sum().item():.4f}")

# A backend that keeps statistics about the graphs it is given
compile_count = 0
op_counts = []


def counting_backend(gm: torch.fx.GraphModule, example_inputs):
    global compile_count
    compile_count += 1
    n_ops = sum(1 for node in gm.graph.nodes if node.op in ("call_function", "call_method"))
    op_counts.append(n_ops)
    print(f"compile #{compile_count}: {len(example_inputs)} inputs, {n_ops} ops")
    print("  input shapes:", [tuple(t.shape) for t in example_inputs])
    print("  placeholders:", [node.target for node in gm.graph.nodes if node.op == "placeholder"])
    return gm.forward


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.fc2(h).softmax(dim=-1)


model = MLP()
opt_model = torch.compile(model, backend=counting_backend, dynamic=False)
for batch in (4, 4, 4, 16, 16):
    inp = torch.randn(batch, 8)
    with torch.no_grad():
        diff = (opt_model(inp) - model(inp)).abs().max().item()
    print(f"batch {batch}: max diff {diff:.1e} compiles so far {compile_count}")

# training through the compiled module: gradients flow through the backend's callable
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
target = torch.randint(0, 4, (16,))
data = torch.randn(16, 8)
for step in range(5):
    optimizer.zero_grad()
    loss = nn.functional.nll_loss(torch.log(opt_model(data)), target)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
print("compiles:", compile_count, "op counts:", op_counts)

torch._dynamo.reset()
opt_print = torch.compile(model, backend=print_code_compiler, dynamic=False)
print(opt_print(torch.randn(2, 8)).shape)

try:
    torch.compile(fn, backend="not_a_backend")
except Exception as e:
    print(type(e).__name__, e)
