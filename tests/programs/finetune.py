"""The "Transfer learning for computer vision" tutorial's finetuning idiom: a small
ResNet-style "pretrained" backbone (its weights saved and reloaded, as torchvision's would
be) frozen with requires_grad = False, its fc replaced, only the trainable parameters
given to the optimizer, StepLR, best-model tracking with copy.deepcopy of the state_dict."""
import copy
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class TinyResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = BasicBlock(8, 8)
        self.layer2 = BasicBlock(8, 16, stride=2, downsample=nn.Sequential(
            nn.Conv2d(8, 16, kernel_size=1, stride=2, bias=False), nn.BatchNorm2d(16)))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


# "ants and bees": two classes told apart by colour, ImageNet-normalized
rng = np.random.RandomState(0)
mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


def make_split(n):
    labels = rng.randint(0, 2, n)
    imgs = rng.rand(n, 3, 16, 16).astype(np.float32) * 0.5
    imgs[labels == 1, 0] += 0.5
    return TensorDataset((torch.from_numpy(imgs) - mean) / std, torch.from_numpy(labels))


image_datasets = {'train': make_split(96), 'val': make_split(48)}
dataloaders = {x: DataLoader(image_datasets[x], batch_size=16, shuffle=(x == 'train'), num_workers=0)
               for x in ['train', 'val']}
dataset_sizes = {x: len(image_datasets[x]) for x in ['train', 'val']}
class_names = ['ants', 'bees']

# the "pretrained" weights, as models.resnet18(weights='IMAGENET1K_V1') would download
pretrained_path = os.path.join(tempfile.mkdtemp(), 'tiny_resnet.pth')
torch.save(TinyResNet().state_dict(), pretrained_path)


def train_model(model, criterion, optimizer, scheduler, num_epochs=25):
    since = time.time()

    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0

    for epoch in range(num_epochs):
        print(f'Epoch {epoch}/{num_epochs - 1}')
        print('-' * 10)

        # Each epoch has a training and validation phase
        for phase in ['train', 'val']:
            if phase == 'train':
                model.train()  # Set model to training mode
            else:
                model.eval()   # Set model to evaluate mode

            running_loss = 0.0
            running_corrects = 0

            # Iterate over data.
            for inputs, labels in dataloaders[phase]:
                inputs = inputs.to(device)
                labels = labels.to(device)

                # zero the parameter gradients
                optimizer.zero_grad()

                # forward
                # track history if only in train
                with torch.set_grad_enabled(phase == 'train'):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)

                    # backward + optimize only if in training phase
                    if phase == 'train':
                        loss.backward()
                        optimizer.step()

                # statistics
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == 'train':
                scheduler.step()

            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]

            print(f'{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}')

            # deep copy the model
            if phase == 'val' and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())

        print()

    time_elapsed = time.time() - since
    print(f'Training complete in {time_elapsed // 60:.0f}m {time_elapsed % 60:.0f}s')
    print(f'Best val Acc: {best_acc:4f}')

    # load best model weights
    model.load_state_dict(best_model_wts)
    return model


# ConvNet as fixed feature extractor
model_conv = TinyResNet()
model_conv.load_state_dict(torch.load(pretrained_path))
for param in model_conv.parameters():
    param.requires_grad = False

# Parameters of newly constructed modules have requires_grad=True by default
num_ftrs = model_conv.fc.in_features
model_conv.fc = nn.Linear(num_ftrs, 2)

model_conv = model_conv.to(device)

criterion = nn.CrossEntropyLoss()

# Observe that only parameters of final layer are being optimized as
# opposed to before.
optimizer_conv = optim.SGD(model_conv.fc.parameters(), lr=0.01, momentum=0.9)

# Decay LR by a factor of 0.1 every 7 epochs
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, step_size=7, gamma=0.1)

model_conv = train_model(model_conv, criterion, optimizer_conv, exp_lr_scheduler, num_epochs=3)

# Finetuning the whole net: a new head, every parameter with requires_grad in the optimizer
for param in model_conv.parameters():
    param.requires_grad = True
model_conv.fc = nn.Linear(num_ftrs, len(class_names))
params_to_update = [p for p in model_conv.parameters() if p.requires_grad]
print(f'Params to learn: {len(params_to_update)}')
optimizer_ft = optim.SGD(params_to_update, lr=0.001, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=7, gamma=0.1)
model_ft = train_model(model_conv, criterion, optimizer_ft, exp_lr_scheduler, num_epochs=2)

frozen = sum(not p.requires_grad for p in model_ft.parameters())
print(f'Frozen parameters: {frozen}')
