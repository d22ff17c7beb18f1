"""A tour of autograd's graph API as debugging and research code uses it.

grad_fn names and next_functions walks, node hooks and metadata, tensor hooks,
retain_grad, torch.autograd.grad's options, backward(inputs=), the errors autograd
raises, grad modes as context managers and decorators, inference mode, saved tensor
hooks, multi-grad hooks, anomaly mode, custom Functions and gradcheck.
"""
import warnings

import torch
import torch.nn.functional as F
from torch.autograd import Function, gradcheck, gradgradcheck
from torch.autograd.function import once_differentiable

torch.manual_seed(0)


def show(label, value):
    print(f"{label}: {value}")


def err(label, fn):
    try:
        fn()
        print(f"{label}: no error")
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"{label}: {type(e).__name__}: {msg}")


def walk(fn, depth=0, seen=None):
    """Print the graph below a grad_fn, one node a line."""
    if seen is None:
        seen = set()
    if fn is None:
        print("  " * depth + "None")
        return
    name = type(fn).__name__
    extra = ""
    if name == "AccumulateGrad":
        extra = f" variable shape={tuple(fn.variable.shape)}"
    print("  " * depth + name + extra)
    if id(fn) in seen:
        return
    seen.add(id(fn))
    for nxt, idx in fn.next_functions:
        if nxt is not None:
            print("  " * (depth + 1) + f"[input {idx}]")
        walk(nxt, depth + 1, seen)


# ---------------------------------------------------------------- grad_fn names
print("== grad_fn names")
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
exprs = {
    "a+b": lambda: a + b,
    "a-b": lambda: a - b,
    "a*b": lambda: a * b,
    "a/b": lambda: a / b,
    "a*2": lambda: a * 2,
    "a+1": lambda: a + 1,
    "-a": lambda: -a,
    "a.exp()": lambda: a.exp(),
    "a.log()": lambda: a.log(),
    "a.sin()": lambda: a.sin(),
    "a.tanh()": lambda: a.tanh(),
    "a.sigmoid()": lambda: a.sigmoid(),
    "a.relu()": lambda: a.relu(),
    "a.pow(2)": lambda: a.pow(2),
    "a**b": lambda: a ** b,
    "a.sqrt()": lambda: a.sqrt(),
    "a.abs()": lambda: a.abs(),
    "a.sum()": lambda: a.sum(),
    "a.mean()": lambda: a.mean(),
    "a.max()": lambda: a.max(),
    "a.view(3,1)": lambda: a.view(3, 1),
    "a.reshape(1,3)": lambda: a.reshape(1, 3),
    "a.unsqueeze(0)": lambda: a.unsqueeze(0),
    "a[1:]": lambda: a[1:],
    "a[0]": lambda: a[0],
    "a.clone()": lambda: a.clone(),
    "a.double()": lambda: a.double(),
    "a.expand(2,3)": lambda: a.expand(2, 3),
    "torch.stack": lambda: torch.stack([a, b]),
    "torch.cat": lambda: torch.cat([a, b]),
    "torch.where": lambda: torch.where(a > 1, a, b),
    "a.clamp(0,2)": lambda: a.clamp(0, 2),
    "F.softmax": lambda: F.softmax(a, 0),
    "F.log_softmax": lambda: F.log_softmax(a, 0),
    "a.cumsum(0)": lambda: a.cumsum(0),
    "a.prod()": lambda: a.prod(),
    "a.norm()": lambda: a.norm(),
    "torch.dot": lambda: torch.dot(a, b),
    "a.t()": lambda: a.view(3, 1).t(),
    "a@W": lambda: a @ torch.ones(3, 2, requires_grad=True),
    "a.detach()": lambda: a.detach(),
}
for label, fn in exprs.items():
    out = fn()
    name = type(out.grad_fn).__name__ if out.grad_fn is not None else None
    print(f"{label:16s} grad_fn={name} requires_grad={out.requires_grad} leaf={out.is_leaf}")

print("leaf grad_fn:", a.grad_fn, "is_leaf:", a.is_leaf)
c = torch.ones(2)
print("constant:", c.grad_fn, c.requires_grad, c.is_leaf)
print(repr(a * 2))
print(repr((a * b).sum()))
print(repr(a.view(3, 1)))

# ---------------------------------------------------------------- next_functions
print("== next_functions walks")
x = torch.tensor([1.0, 2.0], requires_grad=True)
w = torch.tensor([[0.5, -0.5], [1.0, 2.0]], requires_grad=True)
y = (w @ x).tanh().sum() * 3
walk(y.grad_fn)
z = x * x
walk(z.grad_fn)
u = x + torch.ones(2)
walk(u.grad_fn)
print("next of constant side:", [(type(n).__name__, i) for n, i in u.grad_fn.next_functions])
v = (x * 2)[0] + x[1]
walk(v.grad_fn)
acc = y.grad_fn.next_functions[0][0]
print("type of y.grad_fn:", type(y.grad_fn).__name__)
print("name():", y.grad_fn.name())
print("tanh name():", y.grad_fn.next_functions[0][0].next_functions[0][0].name())

# AccumulateGrad nodes
acc_x = z.grad_fn.next_functions[0][0]
print("AccumulateGrad name():", acc_x.name())
print("AccumulateGrad variable is x:", acc_x.variable is x)
print("AccumulateGrad next_functions:", acc_x.next_functions)
print("same AccumulateGrad node:", z.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[1][0])

# calling a node runs its backward (grad mode on: the result records a graph)
xc = torch.tensor([1.0, 2.0], requires_grad=True)
print("call x*x node:", (xc * xc).grad_fn(torch.ones(2)))
print("call x+1 node:", (xc + 1).grad_fn(torch.ones(2)))
print("call SumBackward0:", xc.sum().grad_fn(torch.tensor(1.0)))
print("call MeanBackward0:", xc.mean().grad_fn(torch.tensor(1.0)))
print("call ExpBackward0:", xc.exp().grad_fn(torch.ones(2)))
print("call SigmoidBackward0:", xc.sigmoid().grad_fn(torch.ones(2)))
print("call CatBackward0:", torch.cat([xc, xc * 2]).grad_fn(torch.arange(4.0)))
print("call ViewBackward0:", xc.view(2, 1).grad_fn(torch.ones(2, 1)))
node = (xc * xc.exp()).grad_fn
with torch.no_grad():
    print("call under no_grad:", node(torch.ones(2)))

# metadata
m = (x * 3).sum()
m.grad_fn.metadata["tag"] = "loss"
print("metadata:", m.grad_fn.metadata)
print("metadata type:", type(m.grad_fn.metadata).__name__)
print("fresh node metadata:", (x + 1).grad_fn.metadata)

# ---------------------------------------------------------------- node hooks
print("== node hooks")
x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
y = x * 2
s = y.sum()
log = []


def node_hook(grad_inputs, grad_outputs):
    log.append(("post", [None if g is None else g.tolist() for g in grad_inputs],
                [None if g is None else g.tolist() for g in grad_outputs]))


def node_prehook(grad_outputs):
    log.append(("pre", [None if g is None else g.tolist() for g in grad_outputs]))


h1 = y.grad_fn.register_hook(node_hook)
h2 = y.grad_fn.register_prehook(node_prehook)
s.backward()
for entry in log:
    print(entry)
print("x.grad:", x.grad)
print("handle type:", type(h1).__name__)
h1.remove()
h2.remove()

# a prehook that replaces the gradient
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
y.sum().backward()
print("prehook scaled grad:", x.grad)

# a post hook that replaces grad_inputs
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
print("x*3 inputs:", len(y.grad_fn.next_functions))
y.grad_fn.register_hook(lambda gi, go: (gi[0] + 100, None))
y.sum().backward()
print("post hook replaced grad:", x.grad)
y = x * 3
y.grad_fn.register_hook(lambda gi, go: (gi[0] + 100,))
err("post hook wrong count", lambda: y.sum().backward())
y = x * 3
y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
err("prehook wrong count", lambda: y.sum().backward())
y = x * 3
y.grad_fn.register_hook(lambda gi, go: 5)
err("post hook bad type", lambda: y.sum().backward())
y = x * 3
y.grad_fn.register_hook(lambda gi, go: [gi[0], None])
err("post hook list", lambda: y.sum().backward())
y = x * 3
y.grad_fn.register_hook(lambda gi, go: (gi[0], torch.ones(2)))
err("post hook fills None", lambda: y.sum().backward())
y = x * 3
y.grad_fn.register_hook(lambda gi, go: ("a", None))
err("post hook str value", lambda: y.sum().backward())
y = x * 3
y.grad_fn.register_prehook(lambda go: (go[0].double(),))
err("prehook dtype", lambda: y.sum().backward())


class Scale:
    def __call__(self, go):
        return (go[0] * 2, go[0])


y = x * 3
y.grad_fn.register_prehook(Scale())
err("callable object prehook", lambda: y.sum().backward())
x.grad = None
y = x * 3
y.grad_fn.register_hook(lambda gi, go: (None, None))
y.sum().backward()
print("post hook dropping grads:", x.grad)

# a hook on the AccumulateGrad node
x = torch.tensor([4.0, 5.0], requires_grad=True)
y = (x * x).sum()
accnode = y.grad_fn.next_functions[0][0].next_functions[0][0]
seen = []
accnode.register_hook(lambda gi, go: seen.append([g.tolist() if g is not None else None for g in go]))
y.backward()
print("AccumulateGrad hook saw:", seen, "x.grad:", x.grad)
y = (x * x).sum()
accnode.register_prehook(lambda go: print("  AccumulateGrad prehook:", go))
accnode.register_hook(lambda gi, go: (torch.zeros(2),))
err("AccumulateGrad post hook returning a value", lambda: y.backward())
print("x.grad:", x.grad)

# ---------------------------------------------------------------- tensor hooks
print("== tensor hooks")
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
seen = []
x.register_hook(lambda g: seen.append(g.clone()))
x.register_hook(lambda g: g * 2)
x.register_hook(lambda g: None)
(x * x).sum().backward()
print("observed:", seen[0])
print("x.grad after doubling hook:", x.grad)

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
y.register_hook(lambda g: g + 1)
hh = y.register_hook(lambda g: print("intermediate grad:", g))
(y * y).sum().backward()
print("x.grad:", x.grad)
hh.remove()

x = torch.tensor([1.0, 2.0], requires_grad=True)
handle = x.register_hook(lambda g: g * 100)
handle.remove()
(x * 1).sum().backward()
print("removed hook:", x.grad)

err("hook on no-grad tensor", lambda: torch.ones(2).register_hook(lambda g: g))


def reshaping_hook(g):
    return g.reshape(1, -1)


for label, hook in [("shape", reshaping_hook), ("dtype", lambda g: g.double()),
                    ("half", lambda g: g.half()), ("int", lambda g: 1),
                    ("list", lambda g: [g]), ("same", lambda g: g * 0)]:
    for where in ("leaf", "non-leaf"):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        (x if where == "leaf" else y).register_hook(hook)
        err(f"tensor hook {label} on {where}", lambda: y.sum().backward())
        print("   grad:", x.grad)

# post-accumulate-grad hooks
x = torch.tensor([1.0, 2.0], requires_grad=True)
post = []
x.register_post_accumulate_grad_hook(lambda p: post.append(p.grad.clone()))
(x * 3).sum().backward()
(x * 3).sum().backward()
print("post accumulate saw:", [t.tolist() for t in post])


def zeroing_hook(p):
    p.grad.zero_()


x = torch.tensor([1.0, 2.0], requires_grad=True)
x.register_post_accumulate_grad_hook(zeroing_hook)
(x * 3).sum().backward()
print("grad zeroed by post hook:", x.grad)
err("post hook on non-leaf", lambda: (x * 2).register_post_accumulate_grad_hook(lambda p: None))

# retain_grad
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
z = y * y
y.retain_grad()
z.retain_grad()
z.sum().backward()
print("y.grad:", y.grad, "z.grad:", z.grad, "retains_grad:", y.retains_grad, x.retains_grad)
w = x * 5
w.sum().backward()
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    g = w.grad
print("non-leaf .grad:", g, "warnings:", len(rec), rec[0].category.__name__ if rec else None)
if rec:
    print("  ", str(rec[0].message).splitlines()[0][:90])
x.retain_grad()
print("leaf retain_grad is a no-op:", x.retains_grad)
err("retain_grad on no-grad", lambda: torch.ones(2).retain_grad())

# ---------------------------------------------------------------- autograd.grad
print("== torch.autograd.grad")
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x ** 3
(g,) = torch.autograd.grad(y.sum(), x)
print("dy/dx:", g)
y = x ** 3
(g,) = torch.autograd.grad(y, x, grad_outputs=torch.tensor([1.0, 0.0, -1.0]))
print("with grad_outputs:", g)
y = x ** 3
(g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
print("create_graph grad:", g, "requires_grad:", g.requires_grad)
(g2,) = torch.autograd.grad(g.sum(), x)
print("second derivative:", g2)
y = (x * x).sum()
torch.autograd.grad(y, x, retain_graph=True)
(g,) = torch.autograd.grad(y, x)
print("twice with retain_graph:", g)
y = (x * x).sum()
torch.autograd.grad(y, x)
err("grad twice", lambda: torch.autograd.grad(y, x))
p = torch.tensor([1.0], requires_grad=True)
q = torch.tensor([2.0], requires_grad=True)
y = (p * 2).sum()
err("unused input", lambda: torch.autograd.grad(y, [p, q], retain_graph=True))
print("allow_unused:", torch.autograd.grad(y, [p, q], allow_unused=True, retain_graph=True))
print("materialize_grads:",
      torch.autograd.grad(y, [p, q], allow_unused=True, materialize_grads=True))
err("non-scalar grad", lambda: torch.autograd.grad(p * torch.ones(3), p))
err("grad of no-grad", lambda: torch.autograd.grad(torch.ones(1).sum(), p))
err("grad w.r.t. no-grad", lambda: torch.autograd.grad((p * 2).sum(), torch.ones(1)))
err("grad_outputs shape", lambda: torch.autograd.grad(p * torch.ones(3), p,
                                                      grad_outputs=torch.ones(2)))
# multiple outputs and inputs
x = torch.tensor([1.0, 2.0], requires_grad=True)
w = torch.tensor([3.0, -1.0], requires_grad=True)
o1 = (x * w).sum()
o2 = (x + w).prod()
gx, gw = torch.autograd.grad([o1, o2], [x, w])
print("multi outputs:", gx, gw)
gx, gw = torch.autograd.grad([x * w], [x, w], grad_outputs=[torch.tensor([1.0, 2.0])])
print("tensor output list:", gx, gw)
# is_grads_batched
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * torch.tensor([2.0, 3.0, 4.0])
eye = torch.eye(3)
(jac,) = torch.autograd.grad(y, x, grad_outputs=eye, is_grads_batched=True)
print("jacobian via is_grads_batched:")
print(jac)
y = x.sin()
(jac,) = torch.autograd.grad(y, x, grad_outputs=eye, is_grads_batched=True)
print(jac)
# torch.autograd.backward and backward(inputs=)
x = torch.tensor([1.0, 2.0], requires_grad=True)
w = torch.tensor([3.0, 4.0], requires_grad=True)
(x * w).sum().backward(inputs=[x])
print("inputs=[x]:", x.grad, w.grad)
x.grad = None
(x * w).sum().backward(inputs=w)
print("inputs=w:", x.grad, w.grad)
torch.autograd.backward([(x * w).sum()], inputs=[x, w])
print("autograd.backward:", x.grad, w.grad)
x.grad = None
w.grad = None
torch.autograd.backward(x * w, grad_tensors=torch.tensor([1.0, -1.0]))
print("grad_tensors:", x.grad, w.grad)
err("empty inputs", lambda: (x * w).sum().backward(inputs=[]))
x.grad = None
yy = x * 2
yy.sum().backward(inputs=[yy])
print("inputs=non-leaf:", x.grad)

# ---------------------------------------------------------------- errors
print("== errors")
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * x).sum()
y.backward()
err("backward twice", lambda: y.backward())
y = (x.exp()).sum()
y.backward(retain_graph=True)
y.backward()
print("retain_graph twice ok:", x.grad)
err("non-scalar backward", lambda: (x * 2).backward())
err("backward no grad", lambda: torch.ones(2).sum().backward())
err("grad shape", lambda: (x * 2).backward(torch.ones(3)))
err("leaf in-place", lambda: x.add_(1))
err("leaf in-place mul", lambda: x.mul_(2))
err("leaf view in-place", lambda: x[0].fill_(3))
with torch.no_grad():
    x.add_(1)
print("in-place under no_grad:", x)
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.exp()
y.add_(1)
err("modified exp output", lambda: y.sum().backward())
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
z = y * y
y.mul_(3)
err("modified saved", lambda: z.sum().backward())
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.sigmoid()
y.mul_(2)
err("sigmoid output mutated", lambda: y.sum().backward())
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
print("version before:", y._version)
y.add_(1)
y[0] = 5
print("version after:", y._version)
y.sum().backward()
print("in-place on unsaved ok:", x.grad)
err("numpy with grad", lambda: torch.ones(2, requires_grad=True).numpy())
print("detach().numpy():", torch.ones(2, requires_grad=True).detach().numpy())
err("int requires_grad", lambda: torch.tensor([1, 2], requires_grad=True))
err("int requires_grad_", lambda: torch.tensor([1, 2]).requires_grad_())
err("bool requires_grad", lambda: torch.zeros(2, dtype=torch.bool).requires_grad_(True))
err("non-leaf requires_grad False", lambda: (x * 2).requires_grad_(False))
print("complex ok:", torch.ones(2, dtype=torch.complex64).requires_grad_().requires_grad)
err("item of multi", lambda: torch.ones(2, requires_grad=True).item())
err("set grad wrong shape", lambda: setattr(torch.ones(2, requires_grad=True), "grad",
                                            torch.ones(3)))
err("set grad wrong dtype", lambda: setattr(torch.ones(2, requires_grad=True), "grad",
                                            torch.ones(2, dtype=torch.float64)))
t = torch.ones(2, requires_grad=True)
t.grad = torch.full((2,), 7.0)
print("assigned grad:", t.grad)

# ---------------------------------------------------------------- grad modes
print("== grad modes")
x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.no_grad():
    y = x * 2
    print("no_grad:", y.requires_grad, torch.is_grad_enabled())
    with torch.enable_grad():
        z = x * 2
        print("enable_grad inside:", z.requires_grad, torch.is_grad_enabled())
print("after:", torch.is_grad_enabled())
with torch.set_grad_enabled(False):
    print("set_grad_enabled(False):", (x * 2).requires_grad)
with torch.set_grad_enabled(True):
    print("set_grad_enabled(True):", (x * 2).requires_grad)
torch.set_grad_enabled(False)
print("function form off:", torch.is_grad_enabled(), (x * 2).requires_grad)
torch.set_grad_enabled(True)
print("function form on:", torch.is_grad_enabled())


@torch.no_grad()
def f_nograd(t):
    return t * 2


@torch.no_grad
def f_nograd_bare(t):
    return t * 2


@torch.enable_grad()
def f_enable(t):
    return t * 2


@torch.inference_mode()
def f_inference(t):
    return t * 2


print("decorated no_grad:", f_nograd(x).requires_grad, f_nograd_bare(x).requires_grad)
with torch.no_grad():
    print("decorated enable_grad under no_grad:", f_enable(x).requires_grad)
r = f_inference(x)
print("decorated inference_mode:", r.requires_grad, r.is_inference())
print("decorator keeps name:", f_nograd.__name__, f_inference.__name__)


def gen():
    for i in range(2):
        yield torch.is_grad_enabled()


print("generator under no_grad decorator:", list(torch.no_grad()(gen)()))

with torch.inference_mode():
    i = torch.ones(3) * 2
    print("inference_mode:", torch.is_inference_mode_enabled(), i.is_inference(),
          i.requires_grad, torch.is_grad_enabled())
with torch.inference_mode(False):
    print("inference_mode(False):", torch.is_inference_mode_enabled(), torch.is_grad_enabled())
print("outside:", torch.is_inference_mode_enabled(), i.is_inference(),
      torch.ones(1).is_inference())
err("inference tensor in-place", lambda: i.add_(1))
err("inference requires_grad", lambda: i.requires_grad_())
err("inference in autograd", lambda: (i * x.sum()).sum().backward())
print("inference clone:", i.clone().is_inference())
with torch.inference_mode():
    i2 = torch.ones(3)
    i2.add_(1)
    print("in-place inside inference_mode:", i2, i2.is_inference())
print("no_grad tensor is_inference:", f_nograd(x).is_inference())

# ---------------------------------------------------------------- saved tensor hooks
print("== saved tensor hooks")
packed = []


def pack(t):
    packed.append(tuple(t.shape))
    return t.clone()


def unpack(t):
    packed.append("unpack")
    return t


x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = (x * x).sum()
y.backward()
print("pack/unpack log:", packed)
print("grad:", x.grad)

x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 0 + 1, lambda t: t):
    y = (x * x).sum()
y.backward()
print("hooked saved values change grad:", x.grad)

x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.autograd.graph.save_on_cpu():
    y = (x.exp() * x).sum()
y.backward()
print("save_on_cpu grad:", x.grad)

with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 5):
    y = (x * x).sum()
err("unpack hook returning an int", lambda: y.backward())
with torch.autograd.graph.allow_mutation_on_saved_tensors():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a.clone()
    out = (b * b).sum()
    b.mul_(10)
    out.backward()
    print("allow_mutation_on_saved_tensors grad:", a.grad, "b:", b)
t = torch.ones(2)
torch.autograd.graph.increment_version(t)
print("increment_version:", t._version)

# the order hooks run in
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
order = []
y.register_hook(lambda g: order.append("y hook 1"))
y.grad_fn.register_prehook(lambda g: order.append("node prehook"))
y.register_hook(lambda g: order.append("y hook 2"))
y.retain_grad()
y.register_hook(lambda g: order.append(("y hook after retain_grad sees .grad", y.grad)))
y.grad_fn.register_hook(lambda gi, go: order.append("node post hook"))
x.register_hook(lambda g: order.append("x hook"))
x.register_post_accumulate_grad_hook(lambda p: order.append("x post accumulate"))
y.sum().backward()
for entry in order:
    print("  ", entry)
print("y.grad after:", y.grad)

with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
    err("hooks disabled", lambda: torch.autograd.graph.saved_tensors_hooks(
        lambda t: t, lambda t: t).__enter__())
x = torch.tensor([2.0], requires_grad=True)
y = x * x
print("_saved_self:", y.grad_fn._saved_self, "_saved_other:", y.grad_fn._saved_other)
e = x.exp()
print("exp _saved_result:", e.grad_fn._saved_result)

# ---------------------------------------------------------------- multi grad hooks
print("== register_multi_grad_hook")
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0], requires_grad=True)
c = torch.tensor([4.0], requires_grad=True)
calls = []


def all_hook(grads):
    calls.append(["None" if g is None else g.tolist() for g in grads])


hm = torch.autograd.graph.register_multi_grad_hook((a, b, c), all_hook)
(a.sum() * b).sum().backward()
print("all mode, c unused:", calls)
calls.clear()
(a.sum() + b + c).sum().backward()
print("all mode, all used:", calls)
hm.remove()
calls.clear()
(a.sum() + b + c).sum().backward()
print("after remove:", calls)

anys = []
h_any = torch.autograd.graph.register_multi_grad_hook(
    (a, b), lambda g: anys.append(g.tolist()), mode="any")
(a.sum() * 2 + b * 3).sum().backward()
print("any mode:", anys)
h_any.remove()
err("bad mode", lambda: torch.autograd.graph.register_multi_grad_hook((a,), print, mode="x"))

# ---------------------------------------------------------------- anomaly mode
print("== anomaly mode")
print("anomaly enabled:", torch.is_anomaly_enabled())
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    with torch.autograd.detect_anomaly():
        print("inside:", torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
        x = torch.tensor([0.0, 1.0], requires_grad=True)
        y = (x.sqrt() * 0).sum()
        err("nan in backward", lambda: torch.autograd.grad(x.sqrt().sum() * 0 + (x * 0).div(x).sum(), x))
print("warnings:", [(w.category.__name__, str(w.message).splitlines()[0][:60]) for w in rec])
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    with torch.autograd.detect_anomaly():
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        print("metadata keys under anomaly mode:", list(y.grad_fn.metadata))
        y.add_(1)
        err("inplace error under anomaly mode", lambda: y.sum().backward())
for w in rec:
    # (without PyTorch's note of the C++ source that warned)
    lines = str(w.message).split(" (Triggered internally")[0].splitlines()
    print("warning:", w.category.__name__, lines[0])
    if len(lines) > 1:  # the forward call's stack: its last frame's code
        print("   forward call:", lines[-1].strip())
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    with torch.autograd.detect_anomaly():
        x = torch.tensor([-1.0, 4.0], requires_grad=True)
        err("nan from sqrt", lambda: x.sqrt().sum().backward())
        x = torch.tensor([1.0], requires_grad=True)
        (x * 2).sum().backward()
        print("clean backward:", x.grad)
print("warnings:", [(w.category.__name__, str(w.message).splitlines()[0]) for w in rec])
with torch.autograd.detect_anomaly(check_nan=False):
    print("check_nan False:", torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
    x = torch.tensor([0.0], requires_grad=True)
    (g,) = torch.autograd.grad((x * 0).div(x).sum(), x)
    print("nan grad allowed:", g)
torch.autograd.set_detect_anomaly(True)
print("set_detect_anomaly(True):", torch.is_anomaly_enabled())
torch.autograd.set_detect_anomaly(False)
print("set_detect_anomaly(False):", torch.is_anomaly_enabled())
with torch.autograd.set_detect_anomaly(True):
    print("as context:", torch.is_anomaly_enabled())
print("after context:", torch.is_anomaly_enabled())

# ---------------------------------------------------------------- custom Functions
print("== custom Functions")


class MulAdd(Function):
    @staticmethod
    def forward(ctx, x, y, alpha):
        ctx.save_for_backward(x, y)
        ctx.alpha = alpha
        print("  needs_input_grad:", ctx.needs_input_grad)
        return x * y + alpha

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = g * y if ctx.needs_input_grad[0] else None
        gy = g * x if ctx.needs_input_grad[1] else None
        return gx, gy, None


x = torch.tensor([1.0, 2.0], requires_grad=True)
y = torch.tensor([3.0, 4.0])
out = MulAdd.apply(x, y, 0.5)
print("out:", out)
print("grad_fn name:", type(out.grad_fn).__name__, out.grad_fn.name())
print("node reads ctx:", out.grad_fn.needs_input_grad, out.grad_fn.alpha,
      type(out.grad_fn).__mro__[1].__name__, out.grad_fn._forward_cls.__name__)
out.sum().backward()
print("x.grad:", x.grad)
err("saved_tensors after backward", lambda: out.grad_fn.saved_tensors)
err("missing ctx attribute", lambda: out.grad_fn.beta)
out2 = MulAdd.apply(torch.ones(2), torch.ones(2), 1.0)
print("no grad inputs:", out2.requires_grad, out2.grad_fn)


class InplaceDouble(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


x = torch.tensor([1.0, 3.0], requires_grad=True)
t = x.clone()
r = InplaceDouble.apply(t)
print("mark_dirty result is input:", r is t, r, type(r.grad_fn).__name__)
r.sum().backward()
print("grad through dirty:", x.grad)


class SortWithIdx(Function):
    @staticmethod
    def forward(ctx, x):
        vals, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return vals, idx

    @staticmethod
    def backward(ctx, gv, gi):
        (idx,) = ctx.saved_tensors
        print("  gi is:", gi)
        out = torch.zeros_like(gv)
        out[idx] = gv
        return out


x = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
vals, idx = SortWithIdx.apply(x)
print("vals:", vals.requires_grad, "idx:", idx.requires_grad, idx)
(vals * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
print("grad through sort:", x.grad)


class TwoOut(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        print("  g1:", g1, "g2:", g2)
        total = torch.zeros(2)
        if g1 is not None:
            total = total + g1 * 2
        if g2 is not None:
            total = total + g2 * 3
        return total


x = torch.tensor([1.0, 1.0], requires_grad=True)
o1, o2 = TwoOut.apply(x)
o1.sum().backward()
print("materialize False grad:", x.grad)


class TwoOutMat(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        print("  materialized g2:", g2)
        return g1 * 2 + g2 * 3


x = torch.tensor([1.0, 1.0], requires_grad=True)
o1, o2 = TwoOutMat.apply(x)
o1.sum().backward()
print("materialize True grad:", x.grad)


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


x = torch.tensor([2.0], requires_grad=True)
y = Cube.apply(x)
(g,) = torch.autograd.grad(y, x, create_graph=True)
print("once_differentiable first grad:", g, g.requires_grad)
err("double backward through once_differentiable", lambda: g.backward())


class CubeTwice(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


x = torch.tensor([2.0], requires_grad=True)
(g,) = torch.autograd.grad(CubeTwice.apply(x), x, create_graph=True)
(g2,) = torch.autograd.grad(g, x)
print("double backward through Function:", g, g2)


class WrongCount(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g, g


err("too many grads", lambda: WrongCount.apply(torch.ones(2, requires_grad=True)).sum().backward())


class WrongShape(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return torch.ones(5)


err("wrong grad shape", lambda: WrongShape.apply(torch.ones(2, requires_grad=True)).sum().backward())


class NoBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x + 1


err("no backward", lambda: NoBackward.apply(torch.ones(2, requires_grad=True)).sum().backward())
err("Function() call", lambda: MulAdd()(torch.ones(1), torch.ones(1), 1.0))
err("calling a custom Function's node",
    lambda: MulAdd.apply(torch.ones(1, requires_grad=True), torch.ones(1), 1.0).grad_fn(
        torch.ones(1)))


class ViewFn(Function):
    @staticmethod
    def forward(ctx, x):
        return x.view(-1)

    @staticmethod
    def backward(ctx, g):
        return g.view(2, 2)


x = torch.ones(2, 2, requires_grad=True)
vf = ViewFn.apply(x)
print("view from Function:", vf.shape, type(vf.grad_fn).__name__)


class Setup(Function):
    @staticmethod
    def forward(x, k):
        return x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.k = k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


x = torch.tensor([1.0, 2.0], requires_grad=True)
Setup.apply(x, 5.0).sum().backward()
print("setup_context style:", x.grad)

# ---------------------------------------------------------------- gradcheck
print("== gradcheck")
inp = torch.randn(3, 2, dtype=torch.double, requires_grad=True)
w = torch.randn(2, 4, dtype=torch.double, requires_grad=True)
print("matmul:", gradcheck(torch.matmul, (inp, w)))
print("tanh:", gradcheck(torch.tanh, (inp,), eps=1e-6, atol=1e-4))
print("gradgradcheck sin:", gradgradcheck(torch.sin, (inp,)))
print("Cube:", gradcheck(CubeTwice.apply, (inp,)))
print("gradgradcheck Cube:", gradgradcheck(CubeTwice.apply, (inp,)))
print("softmax:", gradcheck(lambda t: F.softmax(t, dim=1), (inp,)))


class BadGrad(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


print("bad grad, raise_exception=False:",
      gradcheck(BadGrad.apply, (inp,), raise_exception=False))
err("bad grad raising", lambda: gradcheck(BadGrad.apply, (inp,)))
print("bad gradgrad:", gradgradcheck(Cube.apply, (inp,), raise_exception=False))
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    f32 = torch.randn(3, requires_grad=True)
    res = gradcheck(torch.sin, (f32,), raise_exception=False)
print("float32 inputs:", res, [w.category.__name__ for w in rec][:1])
err("no grad inputs", lambda: gradcheck(torch.sin, (torch.randn(3, dtype=torch.double),),
                                     raise_exception=False))
print("fast_mode:", gradcheck(torch.exp, (inp,), fast_mode=True))

# ---------------------------------------------------------------- GradientEdge & misc
print("== misc")
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
edge = torch.autograd.graph.get_gradient_edge(y)
print("edge node:", type(edge.node).__name__, "output_nr:", edge.output_nr)
(gy,) = torch.autograd.grad((y * y).sum(), edge)
print("grad at edge:", gy)
print("is Node:", isinstance(y.grad_fn, torch.autograd.graph.Node))
v = torch.ones(3, requires_grad=True)
sp = v.split(1)
print("split grad_fns:", [type(t.grad_fn).__name__ for t in sp])
sp2 = torch.ones(4, requires_grad=True).tensor_split(2)
print("tensor_split output_nr:", [t.output_nr for t in sp2], (v * 2).output_nr, v.output_nr)
xs = torch.ones(2, requires_grad=True)
d = xs.detach()
d.add_(1)
print("detach shares storage:", xs)
err("detached view then backward", lambda: (xs * xs).sum().backward())
xs = torch.ones(2, requires_grad=True)
ys = xs * xs
xs.detach().add_(1)
err("detached write bumps version", lambda: ys.sum().backward())
xd = torch.ones(2, requires_grad=True)
print("x.data shares but no version bump:")
yd = xd * xd
xd.data.add_(1)
yd.sum().backward()
print(" grad:", xd.grad)
print("done")
