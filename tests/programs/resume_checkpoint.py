"""Save a training checkpoint (model, optimizer, scheduler, epoch) and resume from it:
the resumed run continues exactly as the uninterrupted one (the pattern of PyTorch's
"Saving and loading a general checkpoint" recipe and of most training scripts)."""
import copy
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
g = torch.Generator().manual_seed(1)
X = torch.randn(256, 8, generator=g)
w_true = torch.randn(8, 3, generator=g)
y = (X @ w_true).argmax(dim=1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.bn(self.fc1(x))))


def make(model_state=None):
    model = Net()
    if model_state is not None:
        model.load_state_dict(model_state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01, amsgrad=True)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    return model, optimizer, scheduler


def train_epoch(model, optimizer, scheduler, epoch):
    model.train()
    perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(epoch))
    total = 0.0
    for i in range(0, len(X), 64):
        idx = perm[i:i + 64]
        optimizer.zero_grad()
        loss = F.cross_entropy(model(X[idx]), y[idx])
        loss.backward()
        optimizer.step()
        total += loss.item()
    scheduler.step()
    return total / 4


model, optimizer, scheduler = make()
initial = copy.deepcopy(model.state_dict())
print(optimizer)
path = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")
for epoch in range(8):
    loss = train_epoch(model, optimizer, scheduler, epoch)
    print(f"epoch {epoch} loss {loss:.4f} lr {scheduler.get_last_lr()[0]:.5f}")
    if epoch == 3:
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(),
                    "scheduler_state_dict": scheduler.state_dict(), "loss": loss}, path)
final = model.state_dict()

sd = optimizer.state_dict()
print("state keys", list(sd["state"][0].keys()))
print("step", sd["state"][0]["step"], type(sd["state"][0]["step"]).__name__,
      sd["state"][0]["step"].dtype)
print("param_groups", [{k: v for k, v in group.items() if k != "params"}
                       for group in sd["param_groups"]])
print("params", sd["param_groups"][0]["params"])

# -- resume ---------------------------------------------------------------------------
checkpoint = torch.load(path)
model2, optimizer2, scheduler2 = make(initial)
model2.load_state_dict(checkpoint["model_state_dict"])
optimizer2.load_state_dict(checkpoint["optimizer_state_dict"])
scheduler2.load_state_dict(checkpoint["scheduler_state_dict"])
start_epoch = checkpoint["epoch"] + 1
print(f"resuming from epoch {start_epoch} (loss {checkpoint['loss']:.4f})")
print("step", optimizer2.state_dict()["state"][0]["step"])
print(optimizer2.state[model2.fc1.weight]["step"], optimizer2.state[model2.fc1.weight]["exp_avg"].shape)
for epoch in range(start_epoch, 8):
    loss = train_epoch(model2, optimizer2, scheduler2, epoch)
    print(f"epoch {epoch} loss {loss:.4f} lr {scheduler2.get_last_lr()[0]:.5f}")
print("step", optimizer2.state_dict()["state"][0]["step"])
same = all(torch.equal(final[k], v) for k, v in model2.state_dict().items())
print("resumed run matches the uninterrupted one:", same)

# -- an old checkpoint whose step counts are Python numbers ------------------------------
old = copy.deepcopy(checkpoint["optimizer_state_dict"])
for s in old["state"].values():
    s["step"] = int(s["step"])
model3, optimizer3, _ = make(checkpoint["model_state_dict"])
optimizer3.load_state_dict(old)
print("old checkpoint step", repr(optimizer3.state[model3.fc2.bias]["step"]))
model3.train()
optimizer3.zero_grad()
F.cross_entropy(model3(X[:64]), y[:64]).backward()
optimizer3.step()
print("after one more step", optimizer3.state_dict()["state"][5]["step"])

# -- SGD with momentum: no step count, a momentum_buffer --------------------------------
sgd = torch.optim.SGD(model3.parameters(), lr=0.1, momentum=0.9, nesterov=True)
optimizer3.zero_grad()
F.cross_entropy(model3(X[:64]), y[:64]).backward()
sgd.step()
print(list(sgd.state_dict()["state"][0].keys()), sgd.state_dict()["param_groups"][0]["nesterov"])
