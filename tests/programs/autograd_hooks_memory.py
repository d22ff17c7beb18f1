"""Three PyTorch tutorials/recipes on autograd and memory, as written there (smaller):
"How to save memory by fusing the optimizer step into the backward pass"
(register_post_accumulate_grad_hook) and "Hooks for autograd saved tensors"
(saved_tensors_hooks, save_on_cpu)."""
import torch
import torch.nn as nn

torch.manual_seed(0)

# ---- Optimizer step in backward
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
inputs = torch.randn(8, 16)
targets = torch.randn(8, 4)

# Instead of having just *one* optimizer, we will have a ``dict`` of optimizers
# for every parameter so we could reference them in our hook.
optimizer_dict = {p: torch.optim.Adam([p], foreach=False) for p in model.parameters()}


# Define our hook, which will call the optimizer ``step()`` and ``zero_grad()``
def optimizer_hook(parameter) -> None:
    optimizer_dict[parameter].step()
    optimizer_dict[parameter].zero_grad()


# Register the hook onto every parameter
handles = [p.register_post_accumulate_grad_hook(optimizer_hook) for p in model.parameters()]


def train(model):
    loss = nn.functional.mse_loss(model(inputs), targets)
    # Backward pass: the optimizer steps run inside it
    loss.backward()
    # no optimizer.step() / zero_grad() here: the hooks did both
    return loss


for step in range(6):
    loss = train(model)
    print(f"fused step {step} loss {loss.item():.5f} grads cleared: "
          f"{all(p.grad is None for p in model.parameters())}")

for h in handles:
    h.remove()
loss = train(model)
print("after removing hooks, grads kept:", all(p.grad is not None for p in model.parameters()))

# ---- Hooks for autograd saved tensors
a = torch.randn(5, requires_grad=True)
b = torch.ones(5, requires_grad=True)
c = torch.ones(5, requires_grad=True)

d = a * b  # a and b are saved in the graph of d
print(d.grad_fn._saved_self is a, d.grad_fn._saved_other is b)
y = a.exp()
print(y.equal(y.grad_fn._saved_result), y is y.grad_fn._saved_result)


def pack_hook(x):
    print("Packing", x.shape)
    return x


def unpack_hook(x):
    print("Unpacking", x.shape)
    return x


a = torch.ones(5, requires_grad=True)
b = torch.ones(5, requires_grad=True) * 2
with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    y = a * b

y.sum().backward()
print(a.grad)

# storing tensors in a list and referring to them by index
storage = []


def pack(x):
    storage.append(x)
    return len(storage) - 1


def unpack(x):
    return storage[x]


x = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = x.pow(2)
print(y.grad_fn._saved_self, len(storage))
y.sum().backward()
print(x.grad.equal(2 * x))


# saving to "disk" (a dict of clones, keyed by a counter), then save_on_cpu
class SelfDeletingStore:
    def __init__(self):
        self.saved = {}
        self.count = 0

    def pack(self, x):
        self.count += 1
        self.saved[self.count] = x.detach().clone()
        return self.count

    def unpack(self, key):
        return self.saved.pop(key)


store = SelfDeletingStore()
x = torch.randn(4, 4, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(store.pack, store.unpack):
    y = (x.sin() * x.cos()).sum()
print("packed", store.count, "kept", len(store.saved))
y.backward()
print("left after backward", len(store.saved),
      torch.allclose(x.grad, torch.cos(2 * x)))

model = nn.Sequential(nn.Linear(10, 100), nn.ReLU(), nn.Linear(100, 10))
x = torch.randn(3, 10)
with torch.autograd.graph.save_on_cpu(pin_memory=False):
    out = model(x).pow(2).sum()
out.backward()
print("save_on_cpu grad", model[0].weight.grad.shape, model[0].weight.grad.abs().sum().item() > 0)
