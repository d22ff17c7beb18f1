"""The AMP training loop people copy from the "Automatic Mixed Precision" recipe and
timm's NativeScaler, run on the CPU: torch.autocast("cpu", dtype=torch.bfloat16),
torch.cuda.amp.GradScaler(enabled=False) and torch.amp.GradScaler("cpu"),
scaler.scale(loss).backward(); scaler.unscale_(optimizer); clip_grad_norm_;
scaler.step(optimizer); scaler.update(), zero_grad(set_to_none=True), and the dtypes
printed inside autocast."""
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers)).to(device)


batch_size = 64
in_size = 32
out_size = 8
num_layers = 3
num_batches = 6
epochs = 4

data = [torch.randn(batch_size, in_size, device=device) for _ in range(num_batches)]
w_true = torch.randn(in_size, out_size) * 0.3
targets = [d @ w_true for d in data]
loss_fn = torch.nn.MSELoss().cuda() if device == "cuda" else torch.nn.MSELoss()


def timed(name, fn):
    start_time = time.time()
    fn()
    elapsed = time.time() - start_time
    assert elapsed >= 0
    print(f"{name}: done")


# the dtypes autocast gives each op
net = make_model(in_size, out_size, num_layers)
with torch.autocast(device_type=device, dtype=torch.bfloat16):
    output = net(data[0])
    print(f"autocast enabled: {torch.is_autocast_enabled(device)} dtype {torch.get_autocast_dtype(device)}")
    print(f"output.dtype {output.dtype}")
    loss = loss_fn(output, targets[0])
    print(f"loss.dtype {loss.dtype}")
    summed = output.float().sum()
    print(f"sum dtype {summed.dtype}, softmax dtype {torch.softmax(output, 1).dtype}")
    with torch.autocast(device_type=device, enabled=False):
        print(f"disabled region: {net(data[0]).dtype}")
print(f"outside: {net(data[0]).dtype} autocast enabled: {torch.is_autocast_enabled(device)}")

# 1) the default-precision baseline
net = make_model(in_size, out_size, num_layers)
opt = torch.optim.SGD(net.parameters(), lr=0.02)


def default_precision():
    for epoch in range(epochs):
        for input, target in zip(data, targets):
            output = net(input)
            loss = loss_fn(output, target)
            loss.backward()
            opt.step()
            opt.zero_grad()  # set_to_none=True here can modestly improve performance
        print(f"default precision epoch {epoch} loss {loss.item():.4f}")


timed("Default precision", default_precision)

# 2) the recipe's loop with a disabled scaler: runs unchanged where CUDA is missing
use_amp = device == "cuda"
net = make_model(in_size, out_size, num_layers)
opt = torch.optim.SGD(net.parameters(), lr=0.02)
scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
print(f"scaler enabled: {scaler.is_enabled()} scale {scaler.get_scale()}")
for epoch in range(epochs):
    for input, target in zip(data, targets):
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=True):
            output = net(input)
            loss = loss_fn(output, target)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=10.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
    print(f"amp epoch {epoch} loss {loss.item():.4f} dtype {loss.dtype}")
print(f"grads after zero_grad(set_to_none=True): {[p.grad for p in net.parameters()][:2]}")

# 3) torch.amp.GradScaler("cpu"): a real scale, grads unscaled before clipping (timm's NativeScaler)


class NativeScaler:
    state_dict_key = "amp_scaler"

    def __init__(self, device="cpu"):
        self._scaler = torch.amp.GradScaler(device, init_scale=2.**10, growth_interval=3)

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        norm = None
        if clip_grad is not None:
            assert parameters is not None
            self._scaler.unscale_(optimizer)  # unscale the gradients of optimizer's assigned params in-place
            norm = torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
        self._scaler.step(optimizer)
        self._scaler.update()
        return norm

    def state_dict(self):
        return self._scaler.state_dict()

    def load_state_dict(self, state_dict):
        self._scaler.load_state_dict(state_dict)


net = make_model(in_size, out_size, num_layers)
opt = torch.optim.AdamW(net.parameters(), lr=3e-3)
loss_scaler = NativeScaler()
for epoch in range(epochs):
    for i, (input, target) in enumerate(zip(data, targets)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            output = net(input)
            loss = loss_fn(output.float(), target)
        opt.zero_grad(set_to_none=True)
        norm = loss_scaler(loss, opt, clip_grad=5.0, parameters=net.parameters())
        if i == 0:
            print(f"scaled epoch {epoch} loss {loss.item():.4f} grad norm {norm.item():.4f} "
                  f"scale {loss_scaler._scaler.get_scale()}")
print(loss_scaler.state_dict())

# an inf gradient: the step is skipped and the scale backs off
before = [p.detach().clone() for p in net.parameters()]
scaler = torch.amp.GradScaler("cpu", init_scale=8.0)
loss = net(data[0]).sum() * float("inf")
scaler.scale(loss).backward()
scaler.step(opt)
scaler.update()
print(f"after inf: scale {scaler.get_scale()} params unchanged "
      f"{all(torch.equal(a, b) for a, b in zip(before, net.parameters()))}")
