# Eager-mode static post-training quantization, after PyTorch's "(beta) Static
# Quantization with Eager Mode in PyTorch" tutorial: a small CNN with QuantStub /
# DeQuantStub is trained in float, fused (conv-bn-relu, linear-relu), given the x86
# qconfig, prepared, calibrated on a few batches and converted; the models are printed
# and their accuracy and size compared.
import copy
import os

import torch
import torch.nn as nn
from torch.ao.quantization import DeQuantStub, QuantStub


class ConvBNReLU(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1):
        padding = (kernel_size - 1) // 2
        super(ConvBNReLU, self).__init__(
            nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, bias=False),
            nn.BatchNorm2d(out_planes, momentum=0.1),
            nn.ReLU(inplace=False)
        )


class SmallNet(nn.Module):
    def __init__(self, num_classes=4):
        super(SmallNet, self).__init__()
        self.quant = QuantStub()
        self.features = nn.Sequential(ConvBNReLU(1, 8), nn.MaxPool2d(2), ConvBNReLU(8, 16))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Linear(16, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, num_classes)
        self.dequant = DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.features(x)
        x = self.pool(x)
        x = x.reshape(x.shape[0], -1)
        x = self.relu(self.fc1(x))
        x = self.fc2(x)
        x = self.dequant(x)
        return x

    # Fuse Conv+BN and Conv+BN+Relu modules prior to quantization
    # This operation does not change the numerics
    def fuse_model(self):
        for m in self.modules():
            if type(m) == ConvBNReLU:
                torch.ao.quantization.fuse_modules(m, ['0', '1', '2'], inplace=True)
        torch.ao.quantization.fuse_modules(self, [['fc1', 'relu']], inplace=True)


def make_data(n, generator):
    # four classes: a bright quadrant of a 12x12 image
    labels = torch.randint(0, 4, (n,), generator=generator)
    images = torch.randn(n, 1, 12, 12, generator=generator) * 0.3
    for i in range(n):
        r, c = divmod(labels[i].item(), 2)
        images[i, 0, r * 6:(r + 1) * 6, c * 6:(c + 1) * 6] += 1.0
    return images, labels


def evaluate(model, criterion, batches):
    model.eval()
    correct, total, loss = 0, 0, 0.0
    with torch.no_grad():
        for image, target in batches:
            output = model(image)
            loss += criterion(output, target).item()
            correct += (output.argmax(1) == target).sum().item()
            total += target.size(0)
    return correct / total * 100, loss / len(batches)


def print_size_of_model(model):
    torch.save(model.state_dict(), "temp.p")
    print('Size (MB):', os.path.getsize("temp.p") / 1e6)
    os.remove('temp.p')


torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
train_x, train_y = make_data(256, g)
test_x, test_y = make_data(128, g)
train_batches = [(train_x[i:i + 32], train_y[i:i + 32]) for i in range(0, 256, 32)]
test_batches = [(test_x[i:i + 32], test_y[i:i + 32]) for i in range(0, 128, 32)]

float_model = SmallNet()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(float_model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(3):
    float_model.train()
    for image, target in train_batches:
        loss = criterion(float_model(image), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")

float_model.eval()
top1, float_loss = evaluate(float_model, criterion, test_batches)
print('Float model: Evaluation accuracy on %d images, %2.2f' % (128, top1))
print_size_of_model(float_model)

myModel = copy.deepcopy(float_model)
myModel.eval()
# Fuse Conv, bn and relu
myModel.fuse_model()
print('\n Features block: After fusion\n\n', myModel.features)

# Specify quantization configuration
myModel.qconfig = torch.ao.quantization.get_default_qconfig('x86')
print(myModel.qconfig)
torch.ao.quantization.prepare(myModel, inplace=True)
print('Post Training Quantization Prepare: Inserting Observers')
print('\n Features block: After observer insertion \n\n', myModel.features[0])

# Calibrate with the training set
evaluate(myModel, criterion, train_batches[:4])
print('Post Training Quantization: Calibration done')

# Convert to quantized model
torch.ao.quantization.convert(myModel, inplace=True)
print('Post Training Quantization: Convert done')
print('\n Features block: After fusion and quantization, note fused modules: \n\n',
      myModel.features)
print(myModel.fc1)

print("Size of model after quantization")
print_size_of_model(myModel)

top1_q, quant_loss = evaluate(myModel, criterion, test_batches)
print('Evaluation accuracy on %d images, %2.2f' % (128, top1_q))
print(f"loss float {float_loss:.4f} quantized {quant_loss:.4f}")

# the per-channel weights of the first convolution
w = myModel.features[0][0].weight()
print(w.dtype, w.qscheme(), tuple(w.q_per_channel_scales().shape))
out = myModel(test_x[:2])
print(out.dtype, out.shape)
