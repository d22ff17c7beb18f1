# Quantization-aware training in eager mode, after the QAT part of PyTorch's static
# quantization tutorial: fuse (model in eval mode), attach get_default_qat_qconfig('x86'),
# prepare_qat, train with fake quantization (freezing the observers and the batch-norm
# statistics after a few epochs), then convert to a quantized model and evaluate it.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.ao.quantization as tq


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(1, 6, 3)
        self.relu1 = nn.ReLU()
        self.fc1 = nn.Linear(6 * 4 * 4, 24)
        self.relu2 = nn.ReLU()
        self.fc2 = nn.Linear(24, 3)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.relu1(self.conv(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.relu2(self.fc1(x))
        x = self.fc2(x)
        return self.dequant(x)


def make_data(n, g):
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 1, 10, 10, generator=g) * 0.5
    x[:, 0, 2:8, 2:8] += (y.float() - 1.0).view(-1, 1, 1)
    return x, y


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item() * 100


torch.manual_seed(0)
g = torch.Generator().manual_seed(3)
x_train, y_train = make_data(192, g)
x_test, y_test = make_data(96, g)

model = Net()
model.eval()
tq.fuse_modules(model, [["conv", "relu1"], ["fc1", "relu2"]], inplace=True)
model.qconfig = tq.get_default_qat_qconfig("x86")
model.train()
tq.prepare_qat(model, inplace=True)
print(model.conv)
print(type(model.fc2).__name__, type(model.fc2.weight_fake_quant).__name__)

optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
for nepoch in range(6):
    model.train()
    total = 0.0
    for i in range(0, 192, 32):
        xb, yb = x_train[i:i + 32], y_train[i:i + 32]
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item()
    if nepoch > 3:
        # Freeze quantizer parameters
        model.apply(tq.disable_observer)
    print(f"Epoch {nepoch}: loss {total / 6:.4f}")

model.eval()
print(f"QAT model accuracy: {accuracy(model, x_test, y_test):.1f}")
quantized_model = tq.convert(model, inplace=False)
print(quantized_model)
print(f"Quantized model accuracy: {accuracy(quantized_model, x_test, y_test):.1f}")
scale = model.fc2.activation_post_process.scale
print(f"fc2 output scale matches: {abs(quantized_model.fc2.scale - scale.item()) < 1e-6}")
