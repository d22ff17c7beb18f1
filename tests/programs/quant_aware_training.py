# Quantization-aware training in eager mode, after the QAT part of PyTorch's static
# quantization tutorial: a model with conv-bn-relu blocks is fused for QAT
# (fuse_modules_qat), given get_default_qat_qconfig('x86'), prepared with prepare_qat and
# trained with fake quantization; after a few epochs the observers and the batch-norm
# statistics are frozen; each epoch the model is converted and the quantized one evaluated.
import torch
import torch.nn as nn
import torch.ao.quantization as tq


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(1, 6, 3, bias=False)
        self.bn = nn.BatchNorm2d(6)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(6 * 4 * 4, 24)
        self.relu2 = nn.ReLU()
        self.fc2 = nn.Linear(24, 3)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.pool(self.relu1(self.bn(self.conv(x))))
        x = torch.flatten(x, 1)
        x = self.relu2(self.fc1(x))
        x = self.fc2(x)
        return self.dequant(x)

    def fuse_model(self, is_qat=False):
        fuse = tq.fuse_modules_qat if is_qat else tq.fuse_modules
        fuse(self, [["conv", "bn", "relu1"], ["fc1", "relu2"]], inplace=True)


def make_data(n, g):
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 1, 10, 10, generator=g) * 0.5
    x[:, 0, 2:8, 2:8] += (y.float() - 1.0).view(-1, 1, 1)
    return x, y


def train_one_epoch(model, criterion, optimizer, x_train, y_train):
    model.train()
    total = 0.0
    for i in range(0, len(x_train), 32):
        xb, yb = x_train[i:i + 32], y_train[i:i + 32]
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / (len(x_train) // 32)


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item() * 100


torch.manual_seed(0)
g = torch.Generator().manual_seed(3)
x_train, y_train = make_data(192, g)
x_test, y_test = make_data(96, g)

qat_model = Net()
qat_model.train()
qat_model.fuse_model(is_qat=True)
print(qat_model.conv.__class__.__name__, [type(m).__name__ for m in qat_model.conv])
optimizer = torch.optim.SGD(qat_model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
qat_model.qconfig = tq.get_default_qat_qconfig("x86")
tq.prepare_qat(qat_model, inplace=True)
print("Classifier head: After preparation for QAT, note fake-quantization modules")
print(qat_model.fc2)

for nepoch in range(6):
    loss = train_one_epoch(qat_model, criterion, optimizer, x_train, y_train)
    if nepoch > 3:
        # Freeze quantizer parameters
        qat_model.apply(tq.disable_observer)
    if nepoch > 2:
        # Freeze batch norm mean and variance estimates
        qat_model.apply(torch.nn.intrinsic.qat.freeze_bn_stats)
    # Check the accuracy after each epoch
    quantized_model = tq.convert(qat_model.eval(), inplace=False)
    quantized_model.eval()
    print(f"Epoch {nepoch}: loss {loss:.4f}, quantized accuracy "
          f"{accuracy(quantized_model, x_test, y_test):.1f}")

qat_model.eval()
print(f"QAT model accuracy: {accuracy(qat_model, x_test, y_test):.1f}")
print(quantized_model)
print(f"Quantized model accuracy: {accuracy(quantized_model, x_test, y_test):.1f}")
scale = qat_model.fc2.activation_post_process.scale
print(f"fc2 output scale matches: {abs(quantized_model.fc2.scale - scale.item()) < 1e-6}")
