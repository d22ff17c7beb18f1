"""A ResNet-style CIFAR-10 classifier in the style of kuangliu/pytorch-cifar and the
"94% in minutes" training scripts: BasicBlocks with BatchNorm2d and residual adds,
AdaptiveAvgPool2d, SGD with nesterov momentum and weight decay only on conv/linear
weights, OneCycleLR, label smoothing, random-crop/flip augmentation on the batch
(F.pad + torch.randint + torch.flip); synthetic 16x16 "CIFAR" instead of the download."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser(description='PyTorch CIFAR10 Training')
parser.add_argument('--lr', default=0.1, type=float, help='learning rate')
parser.add_argument('--epochs', default=3, type=int)
parser.add_argument('--batch-size', default=32, type=int)
parser.add_argument('--wd', default=5e-4, type=float, help='weight decay')
args = parser.parse_args()
print(args)

torch.manual_seed(0)
device = 'cuda' if torch.cuda.is_available() else 'cpu'
if device == 'cuda':
    torch.backends.cudnn.benchmark = True


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super(BasicBlock, self).__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != self.expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(self.expansion * planes)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        out = F.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, block, num_blocks, num_classes=10):
        super(ResNet, self).__init__()
        self.in_planes = 8

        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = self._make_layer(block, 8, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(block, 16, num_blocks[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.linear = nn.Linear(16 * block.expansion, num_classes)

    def _make_layer(self, block, planes, num_blocks, stride):
        strides = [stride] + [1] * (num_blocks - 1)
        layers = []
        for stride in strides:
            layers.append(block(self.in_planes, planes, stride))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer1(out)
        out = self.layer2(out)
        out = self.avgpool(out)
        out = out.view(out.size(0), -1)
        out = self.linear(out)
        return out


def ResNetTiny():
    return ResNet(BasicBlock, [1, 1])


# synthetic CIFAR: each class a colour and a stripe orientation, plus noise
classes = ('plane', 'car', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck')
g = torch.Generator().manual_seed(42)


def make_split(n):
    labels = torch.randint(0, 10, (n,), generator=g)
    colour = torch.rand(10, 3, 1, 1, generator=torch.Generator().manual_seed(7))
    xs = torch.arange(16).float()
    stripes = torch.sin(xs.view(1, 16, 1) * (labels.view(-1, 1, 1) % 5 + 1) * 0.4)
    images = colour[labels] * 0.8 + 0.3 * stripes.unsqueeze(1) + 0.2 * torch.randn(n, 3, 16, 16, generator=g)
    mean = images.mean(dim=(0, 2, 3), keepdim=True)
    std = images.std(dim=(0, 2, 3), keepdim=True)
    return TensorDataset((images - mean) / std, labels)


trainset, testset = make_split(256), make_split(128)
trainloader = DataLoader(trainset, batch_size=args.batch_size, shuffle=True, drop_last=True)
testloader = DataLoader(testset, batch_size=64, shuffle=False)
print(f'train: {len(trainset)} images, test: {len(testset)} images, '
      f'{len(trainloader)} batches per epoch')


def augment(x, pad=2):
    """Random crop with zero padding and a random horizontal flip, on the whole batch."""
    n, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), mode='constant', value=0.0)
    ix = torch.randint(0, 2 * pad + 1, (n,))
    iy = torch.randint(0, 2 * pad + 1, (n,))
    crops = torch.stack([padded[i, :, iy[i]:iy[i] + h, ix[i]:ix[i] + w] for i in range(n)])
    flip = torch.rand(n) < 0.5
    crops[flip] = torch.flip(crops[flip], dims=[3])
    return crops


print('==> Building model..')
net = ResNetTiny().to(device)
print(net.layer2)
n_params = sum(p.numel() for p in net.parameters() if p.requires_grad)
print(f'{n_params:,} trainable parameters')

# no weight decay on biases and BatchNorm parameters
decay, no_decay = [], []
for name, param in net.named_parameters():
    if param.ndim <= 1 or name.endswith('.bias'):
        no_decay.append(param)
    else:
        decay.append(param)
optimizer = optim.SGD([{'params': decay, 'weight_decay': args.wd},
                       {'params': no_decay, 'weight_decay': 0.0}],
                      lr=args.lr, momentum=0.9, nesterov=True)
print(f'param groups: {[len(g["params"]) for g in optimizer.param_groups]}')
scheduler = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                          steps_per_epoch=len(trainloader))
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)


def train(epoch):
    print('\nEpoch: %d' % epoch)
    net.train()
    train_loss = 0
    correct = 0
    total = 0
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        inputs, targets = augment(inputs).to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        scheduler.step()

        train_loss += loss.item()
        _, predicted = outputs.max(1)
        total += targets.size(0)
        correct += predicted.eq(targets).sum().item()
        if batch_idx % 4 == 0:
            print(f'[{batch_idx:2d}/{len(trainloader)}] loss: {loss.item():.4f} '
                  f'lr: {scheduler.get_last_lr()[0]:.5f}')
    print('Train Loss: %.3f | Acc: %.3f%% (%d/%d)'
          % (train_loss / (batch_idx + 1), 100. * correct / total, correct, total))


def test(epoch):
    net.eval()
    test_loss = 0
    correct = 0
    total = 0
    with torch.no_grad():
        for batch_idx, (inputs, targets) in enumerate(testloader):
            inputs, targets = inputs.to(device), targets.to(device)
            outputs = net(inputs)
            loss = criterion(outputs, targets)

            test_loss += loss.item()
            _, predicted = outputs.max(1)
            total += targets.size(0)
            correct += predicted.eq(targets).sum().item()
    acc = 100. * correct / total
    print('Test Loss: %.3f | Acc: %.3f%% (%d/%d)'
          % (test_loss / (batch_idx + 1), acc, correct, total))
    return acc


start = time.time()
best_acc = 0
for epoch in range(args.epochs):
    train(epoch)
    best_acc = max(best_acc, test(epoch))
print(f'best acc: {best_acc:.2f}%, final lr {optimizer.param_groups[0]["lr"]:.2e}, '
      f'bn1 running_mean[:3] {net.bn1.running_mean[:3]}')
print(f'num_batches_tracked: {net.bn1.num_batches_tracked}')
