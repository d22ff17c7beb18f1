"""Saving and Loading Models, and the recipes "Saving and loading a general checkpoint",
"Saving multiple models in one file" and "Warmstarting model using parameters from a
different model" (the PyTorch tutorials), with random data instead of CIFAR-10."""
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)
tmp = tempfile.mkdtemp()


# Define model
class TheModelClass(nn.Module):
    def __init__(self):
        super(TheModelClass, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


# Initialize model
model = TheModelClass()

# Initialize optimizer
optimizer = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)

inputs = torch.randn(8, 3, 32, 32)
labels = torch.randint(0, 10, (8,))
criterion = nn.CrossEntropyLoss()
for step in range(3):
    optimizer.zero_grad()
    loss = criterion(model(inputs), labels)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

# Print model's state_dict
print("Model's state_dict:")
for param_tensor in model.state_dict():
    print(param_tensor, "\t", model.state_dict()[param_tensor].size())

# Print optimizer's state_dict
print("Optimizer's state_dict:")
for var_name in optimizer.state_dict():
    print(var_name, "\t", optimizer.state_dict()[var_name])

# ---- Save/Load state_dict (Recommended)
PATH = os.path.join(tmp, "model_weights.pth")
torch.save(model.state_dict(), PATH)

model2 = TheModelClass()
print(model2.load_state_dict(torch.load(PATH, weights_only=True)))
model2.eval()
print("state_dict reload agrees:", torch.equal(model2(inputs), model.eval()(inputs)))

# ---- Save/Load Entire Model
PATH = os.path.join(tmp, "entire_model.pt")
torch.save(model, PATH)

# Model class must be defined somewhere
model3 = torch.load(PATH, weights_only=False)
model3.eval()
print(type(model3).__name__, model3.training)
print("entire model reload agrees:", torch.equal(model3(inputs), model(inputs)))

# ---- Saving & Loading a General Checkpoint for Inference and/or Resuming Training
PATH = os.path.join(tmp, "model.pt")
EPOCH = 5
LOSS = 0.4

torch.save({
            'epoch': EPOCH,
            'model_state_dict': model.state_dict(),
            'optimizer_state_dict': optimizer.state_dict(),
            'loss': LOSS,
            }, PATH)

model = TheModelClass()
optimizer = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)

checkpoint = torch.load(PATH, weights_only=True)
model.load_state_dict(checkpoint['model_state_dict'])
optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
epoch = checkpoint['epoch']
loss = checkpoint['loss']
print(sorted(checkpoint.keys()), epoch, loss)
print("momentum buffers:", len(optimizer.state), [tuple(s['momentum_buffer'].shape)
                                                  for s in list(optimizer.state.values())[:2]])

model.train()
model.zero_grad()
resumed = criterion(model(inputs), labels)
resumed.backward()
optimizer.step()
print(f"resumed training loss {resumed.item():.4f}")

# ---- Saving Multiple Models in One File
modelA = TheModelClass()
modelB = TheModelClass()
optimizerA = optim.SGD(modelA.parameters(), lr=0.001, momentum=0.9)
optimizerB = optim.Adam(modelB.parameters(), lr=0.001)
PATH = os.path.join(tmp, "models.tar")
torch.save({
            'modelA_state_dict': modelA.state_dict(),
            'modelB_state_dict': modelB.state_dict(),
            'optimizerA_state_dict': optimizerA.state_dict(),
            'optimizerB_state_dict': optimizerB.state_dict(),
            }, PATH)

modelA2 = TheModelClass()
modelB2 = TheModelClass()
optimizerA2 = optim.SGD(modelA2.parameters(), lr=0.001, momentum=0.9)
optimizerB2 = optim.Adam(modelB2.parameters(), lr=0.001)

checkpoint = torch.load(PATH, weights_only=True)
modelA2.load_state_dict(checkpoint['modelA_state_dict'])
modelB2.load_state_dict(checkpoint['modelB_state_dict'])
optimizerA2.load_state_dict(checkpoint['optimizerA_state_dict'])
optimizerB2.load_state_dict(checkpoint['optimizerB_state_dict'])
print(optimizerB2.state_dict()['param_groups'][0]['betas'],
      optimizerB2.state_dict()['param_groups'][0]['params'][:3])
modelA2.eval()
modelB2.eval()
print("A agrees:", torch.equal(modelA2(inputs), modelA.eval()(inputs)),
      "B agrees:", torch.equal(modelB2(inputs), modelB.eval()(inputs)))


# ---- Warmstarting Model Using Parameters from a Different Model
class NetA(nn.Module):
    def __init__(self):
        super(NetA, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


netA = NetA()


class NetB(nn.Module):
    def __init__(self):
        super(NetB, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)
        self.fc4 = nn.Linear(10, 2)  # a new head

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return self.fc4(x)


netB = NetB()

# Specify a path to save to
PATH = os.path.join(tmp, "model_a.pt")

torch.save(netA.state_dict(), PATH)
result = netB.load_state_dict(torch.load(PATH, weights_only=True), strict=False)
print(result)
print("missing:", result.missing_keys, "unexpected:", result.unexpected_keys)
print("conv1 warmstarted:", torch.equal(netB.conv1.weight, netA.conv1.weight))

renamed = {k.replace("fc3", "head"): v for k, v in netA.state_dict().items()}
print(netA.load_state_dict(renamed, strict=False))
try:
    netA.load_state_dict(renamed)
except RuntimeError as e:
    print("strict load:", str(e).splitlines()[0])

# ---- Saving & Loading Model Across Devices
device = torch.device("cpu")
model = TheModelClass()
model.load_state_dict(torch.load(os.path.join(tmp, "model_weights.pth"), map_location=device,
                                 weights_only=True))
print(next(model.parameters()).device)
state = torch.load(os.path.join(tmp, "model_weights.pth"), map_location="cpu", weights_only=True)
print(type(state).__name__, list(state)[:2], state["fc3.bias"].device)
state = torch.load(os.path.join(tmp, "model_weights.pth"),
                   map_location=lambda storage, loc: storage, weights_only=True)
print(state["conv1.weight"].shape)
