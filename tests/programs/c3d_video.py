"""A C3D-style video classifier (in the style of jfzhang95/pytorch-video-recognition and
the R(2+1)D / C3D baselines): Conv3d + BatchNorm3d + ReLU blocks, MaxPool3d with
ceil_mode=True and a (1, 2, 2) first pool, AdaptiveAvgPool3d, Dropout3d (inactive in
eval), the channels_last_3d memory format, kaiming init, label-smoothing cross entropy,
SGD with nesterov momentum and StepLR, on synthetic clips of moving bars."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class C3D(nn.Module):
    """The C3D network, narrowed: conv1..conv4 with 3x3x3 kernels."""

    def __init__(self, num_classes, width=8):
        super().__init__()
        w = width
        self.conv1 = nn.Conv3d(3, w, kernel_size=(3, 3, 3), padding=(1, 1, 1))
        self.bn1 = nn.BatchNorm3d(w)
        self.pool1 = nn.MaxPool3d(kernel_size=(1, 2, 2), stride=(1, 2, 2))
        self.conv2 = nn.Conv3d(w, 2 * w, kernel_size=(3, 3, 3), padding=(1, 1, 1))
        self.bn2 = nn.BatchNorm3d(2 * w)
        self.pool2 = nn.MaxPool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), ceil_mode=True)
        self.conv3a = nn.Conv3d(2 * w, 4 * w, kernel_size=(3, 3, 3), padding=(1, 1, 1))
        self.conv3b = nn.Conv3d(4 * w, 4 * w, kernel_size=(3, 3, 3), padding=(1, 1, 1))
        self.bn3 = nn.BatchNorm3d(4 * w)
        self.pool3 = nn.MaxPool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 1, 1),
                                  ceil_mode=True)
        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.dropout = nn.Dropout3d(p=0.2)
        self.fc = nn.Linear(4 * w, num_classes)
        self.relu = nn.ReLU()
        self.__init_weight()

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.pool1(x)
        x = self.relu(self.bn2(self.conv2(x)))
        x = self.pool2(x)
        x = self.relu(self.conv3a(x))
        x = self.relu(self.bn3(self.conv3b(x)))
        x = self.pool3(x)
        x = self.dropout(x)
        x = self.avgpool(x)
        x = x.view(-1, self.fc.in_features)
        return self.fc(x)

    def __init_weight(self):
        for m in self.modules():
            if isinstance(m, nn.Conv3d):
                torch.nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm3d):
                m.weight.data.fill_(1)
                m.bias.data.zero_()


def get_1x_lr_params(model):
    """The conv layers train at the base rate, the classifier at 10x (as in the repo)."""
    for name in ("conv1", "conv2", "conv3a", "conv3b", "bn1", "bn2", "bn3"):
        yield from getattr(model, name).parameters()


def make_clips(n, frames=8, size=16):
    """Four classes: a vertical bar moving right or left, a horizontal bar moving down or up."""
    labels = torch.randint(0, 4, (n,))
    clips = 0.1 * torch.rand(n, 3, frames, size, size)
    color = torch.rand(n, 3)
    for i, label in enumerate(labels.tolist()):
        start = int(torch.randint(0, size - frames, (1,)))
        for t in range(frames):
            pos = start + t if label in (0, 2) else start + frames - 1 - t
            if label < 2:
                clips[i, :, t, :, pos] += color[i, :, None]
            else:
                clips[i, :, t, pos, :] += color[i, :, None]
    return clips, labels


def main():
    torch.manual_seed(7)
    pool = nn.MaxPool3d(kernel_size=2, stride=2, ceil_mode=True)
    x = torch.arange(5 * 5 * 5, dtype=torch.float32).view(1, 1, 5, 5, 5)
    print(pool)
    print("ceil_mode shape", pool(x).shape, "floor shape", F.max_pool3d(x, 2).shape)
    out, idx = F.max_pool3d(x, 2, stride=2, ceil_mode=True, return_indices=True)
    print("indices", idx[0, 0, -1], idx.dtype)
    print("adaptive", F.adaptive_avg_pool3d(x, (2, 3, 1)).flatten().tolist())
    print("adaptive max", F.adaptive_max_pool3d(x, 2).flatten().tolist())

    model = C3D(num_classes=4)
    print(model)
    print("trainable", sum(p.numel() for p in model.parameters() if p.requires_grad))
    clips, labels = make_clips(32)
    print("clips", clips.shape, labels.bincount())

    cl = clips[:2].to(memory_format=torch.channels_last_3d)
    print("channels_last_3d", cl.is_contiguous(), cl.is_contiguous(memory_format=torch.channels_last_3d),
          cl.stride())
    model_cl = C3D(num_classes=4).to(memory_format=torch.channels_last_3d)
    print("conv weight channels_last_3d",
          model_cl.conv1.weight.is_contiguous(memory_format=torch.channels_last_3d))
    model_cl.eval()
    with torch.no_grad():
        y_cl = model_cl(cl)
        y_ref = model_cl(clips[:2])
    print("channels_last output agrees", torch.allclose(y_cl, y_ref, atol=1e-5), y_cl.shape)

    drop = nn.Dropout3d(p=0.5)
    drop.train()
    z = drop(torch.ones(2, 4, 2, 2, 2))
    per_channel = z.view(2, 4, -1)
    print("dropout3d zeroes whole channels", bool(((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()))
    drop.eval()
    print("dropout3d eval is identity", torch.equal(drop(z), z))

    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    print(criterion, criterion.label_smoothing)
    logits = torch.tensor([[2.0, 0.5, -1.0, 0.0]])
    print("smoothed loss", criterion(logits, torch.tensor([0])),
          "soft targets", F.cross_entropy(logits, torch.tensor([[0.7, 0.1, 0.1, 0.1]])))

    lr = 1e-2
    train_params = [{"params": get_1x_lr_params(model), "lr": lr},
                    {"params": model.fc.parameters(), "lr": lr * 10}]
    optimizer = torch.optim.SGD(train_params, lr=lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    print("param groups", [len(g["params"]) for g in optimizer.param_groups])
    for epoch in range(8):
        model.train()
        running_loss, running_corrects = 0.0, 0
        for i in range(0, 24, 8):
            inputs, targets = clips[i:i + 8], labels[i:i + 8]
            outputs = model(inputs)
            probs = nn.Softmax(dim=1)(outputs)
            preds = torch.max(probs, 1)[1]
            loss = criterion(outputs, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running_loss += loss.item() * inputs.size(0)
            running_corrects += torch.sum(preds == targets.data)
        scheduler.step()
        epoch_loss = running_loss / 24
        epoch_acc = running_corrects.double() / 24
        print("[train] Epoch: {}/{} Loss: {:.4f} Acc: {:.4f} lr {}".format(
            epoch + 1, 8, epoch_loss, epoch_acc, scheduler.get_last_lr()))
    model.eval()
    with torch.no_grad():
        outputs = model(clips[24:])
        loss = criterion(outputs, labels[24:])
    print("running stats", model.bn1.num_batches_tracked, model.bn1.running_mean.shape)
    print("[test] outputs", outputs.shape, "finite", bool(torch.isfinite(loss)))


if __name__ == "__main__":
    main()
