"""PyTorch tutorial "Building a Simple CPU Performance Profiler with FX" (small): an
Interpreter subclass timing each node, plus ShapeProp."""
import statistics
import time

import torch
import torch.fx
from torch.fx import Interpreter
from torch.fx.passes.shape_prop import ShapeProp


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = torch.flatten(x, 1)
        return torch.nn.functional.log_softmax(self.fc(x), dim=1)


class ProfilingInterpreter(Interpreter):
    def __init__(self, mod: torch.nn.Module):
        gm = torch.fx.symbolic_trace(mod)
        super().__init__(gm)
        self.total_runtime_sec = []
        self.runtimes_sec = {}

    def run(self, *args):
        t_start = time.time()
        return_val = super().run(*args)
        t_end = time.time()
        self.total_runtime_sec.append(t_end - t_start)
        return return_val

    def run_node(self, n: torch.fx.Node):
        t_start = time.time()
        return_val = super().run_node(n)
        t_end = time.time()
        self.runtimes_sec.setdefault(n, [])
        self.runtimes_sec[n].append(t_end - t_start)
        return return_val

    def summary(self):
        node_summaries = []
        mean_total_runtime = statistics.mean(self.total_runtime_sec)
        for node, runtimes in self.runtimes_sec.items():
            mean_runtime = statistics.mean(runtimes)
            pct_total = mean_runtime / mean_total_runtime * 100
            node_summaries.append([node.op, str(node), mean_runtime, pct_total])
        return node_summaries


torch.manual_seed(0)
net = Net().eval()
x = torch.randn(2, 3, 4, 4)
interp = ProfilingInterpreter(net)
out = interp.run(x)
print("same as eager:", torch.allclose(out, net(x), atol=1e-6))
for op, name, _, pct in interp.summary():
    print(op, name, pct >= 0)
gm = torch.fx.symbolic_trace(net)
print(gm.graph)
ShapeProp(gm).propagate(x)
for node in gm.graph.nodes:
    meta = node.meta.get("tensor_meta")
    if meta is not None:
        print(node.name, list(meta.shape), meta.dtype)
