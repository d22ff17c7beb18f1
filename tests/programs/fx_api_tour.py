"""A tour of the torch.fx API surface real programs touch (not from pytorch/examples):
nested modules, buffers and tensor attributes, torch.nn.functional calls of both kinds,
dtype arguments, concrete_args, *args, dead-code elimination, an Interpreter subclass."""
import math
import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F


@fx.wrap
def deco_fn(x, k):
    return x * k


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("buf", torch.arange(4.0))
        self.const = torch.ones(4)

    def forward(self, x):
        return self.lin(x) + self.buf - self.const


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.bn = nn.BatchNorm2d(2)
        self.drop = nn.Dropout(0.1)
        self.ln = nn.LayerNorm(4)
        self.w = nn.Parameter(torch.ones(4, 4))

    def forward(self, x, img, *, scale: float = 2.0):
        a = self.inner(x)
        a = self.inner(a)
        b = a.view(-1, 4).to(torch.float64).float()
        c = b[..., None].squeeze(-1)
        d = F.dropout(c, 0.2, training=self.training)
        e = F.layer_norm(d, (4,), eps=1e-5)
        f = F.gelu(e) + F.linear(e, self.w)
        g = F.log_softmax(f, dim=-1, dtype=torch.float32)
        h = self.bn(self.conv(img))
        i = F.max_pool2d(h, 2)
        j = F.interpolate(i, scale_factor=2.0, mode="nearest")
        k = F.pad(j, (1, 1, 1, 1))
        n = torch.flatten(k, 1).sum(1, keepdim=True)
        o = g * n.mean() * scale + x.shape[1] + x.size(0)
        o = deco_fn(o, 3)
        p = torch.zeros(2, dtype=torch.float32)
        q = o.new_zeros(4) + math.sqrt(2.0)
        r = torch.stack([o, o.T.T], dim=0).transpose(0, 1).contiguous()
        s = r.relu_()
        t = torch.where(s > 0, s, torch.zeros_like(s))
        u = -t + abs(t) - (~(t > 1)).float()
        v = torch.matmul(u, self.w.t()) @ self.w
        return v, p, q, self.ln(e), F.cross_entropy(f, torch.tensor([0, 1])), torch.max(v, dim=1)


torch.manual_seed(0)
net = Net().eval()
gm = fx.symbolic_trace(net)
print(gm.graph)
print(gm.code)
print(gm)
for n in gm.graph.nodes:
    print(n.format_node(), list(n.users), n.all_input_nodes)

x = torch.randn(2, 4)
img = torch.randn(2, 1, 4, 4)
out = gm(x, img)
ref = net(x, img)
print([torch.allclose(a, b, atol=1e-5) if isinstance(a, torch.Tensor) else None for a, b in zip(out[:5], ref[:5])])


def f(x, flag, opt=None):
    if flag:
        return x + 1
    return x - 1


g = fx.symbolic_trace(f, concrete_args={"flag": True, "opt": None})
print(g.code)
print(g(torch.ones(2), True).tolist())


def varargs(*args, **kwargs):
    return args[0] + args[1]


print(fx.symbolic_trace(varargs).code)


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(2, 2)

    def forward(self, x):
        return self.l(self.l(x))


print(fx.symbolic_trace(Twice()).graph)


def my_fn(x):
    return x.sum()


class UsesMyFn(nn.Module):
    def forward(self, x):
        return my_fn(x) + 1


print(fx.Tracer(autowrap_functions=(my_fn,)).trace(UsesMyFn()))


class U(nn.Module):
    def forward(self, x):
        y = x + 1
        y.add_(2)
        z = x * 5  # noqa: F841 (dead: eliminated)
        return x


gu = fx.symbolic_trace(U())
print(gu.graph.eliminate_dead_code())
print(gu.graph)


class I(fx.Interpreter):
    def call_module(self, target, args, kwargs):
        print("module", target)
        return super().call_module(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        print("method", target)
        return super().call_method(target, args, kwargs)


I(gm).run(x, img)
node = next(iter(gm.graph.nodes))
print(repr(node), str(node), node.op, node.target, node.type, node.meta)
print(gm.graph.nodes.__len__() if hasattr(gm.graph.nodes, '__len__') else None, len(gm.graph.nodes))
