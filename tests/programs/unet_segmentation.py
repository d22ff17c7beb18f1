"""A small U-Net for binary segmentation in the style of milesial/Pytorch-UNet: DoubleConv
blocks, MaxPool2d downsampling, ConvTranspose2d upsampling with torch.cat skip
connections (F.pad to match odd sizes), BCEWithLogitsLoss plus a soft Dice loss,
F.interpolate(mode="bilinear", align_corners=False) to the mask size, and IoU/Dice
metrics from (torch.sigmoid(logits) > 0.5).float(); synthetic discs instead of Carvana."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.utils.data import DataLoader, Dataset, random_split


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True)
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    """Downscaling with maxpool then double conv"""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(
            nn.MaxPool2d(2),
            DoubleConv(in_channels, out_channels)
        )

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Upscaling then double conv"""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        # input is CHW
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]

        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2,
                        diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(OutConv, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, base=8):
        super(UNet, self).__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes

        self.inc = DoubleConv(n_channels, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4)
        self.up1 = Up(base * 4, base * 2)
        self.up2 = Up(base * 2, base)
        self.outc = OutConv(base, n_classes)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        logits = self.outc(x)
        return logits


class DiscsDataset(Dataset):
    """Noisy images of a few discs; the mask is the discs, given at twice the size."""

    def __init__(self, n, size=24, seed=0):
        g = torch.Generator().manual_seed(seed)
        yy, xx = torch.meshgrid(torch.arange(size * 2), torch.arange(size * 2), indexing='ij')
        self.images, self.masks = [], []
        for _ in range(n):
            mask = torch.zeros(size * 2, size * 2)
            for _ in range(int(torch.randint(1, 4, (1,), generator=g))):
                cy, cx = torch.randint(6, size * 2 - 6, (2,), generator=g).tolist()
                r = float(torch.rand(1, generator=g)) * 6 + 4
                mask[(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] = 1.0
            image = F.avg_pool2d(mask[None, None], 2)[0] + 0.3 * torch.randn(1, size, size, generator=g)
            self.images.append(image)
            self.masks.append(mask[None])

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        return {'image': self.images[idx], 'mask': self.masks[idx]}


def dice_loss(logits, target, epsilon=1e-6):
    probs = torch.sigmoid(logits)
    inter = 2 * (probs * target).sum(dim=(-1, -2))
    sets_sum = probs.sum(dim=(-1, -2)) + target.sum(dim=(-1, -2))
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)
    dice = (inter + epsilon) / (sets_sum + epsilon)
    return 1 - dice.mean()


@torch.inference_mode()
def evaluate(net, dataloader, device):
    net.eval()
    iou_sum, dice_sum, n = 0.0, 0.0, 0
    for batch in dataloader:
        image, mask_true = batch['image'].to(device), batch['mask'].to(device)
        logits = F.interpolate(net(image), size=mask_true.shape[-2:], mode='bilinear',
                               align_corners=False)
        mask_pred = (torch.sigmoid(logits) > 0.5).float()
        inter = (mask_pred * mask_true).sum(dim=(1, 2, 3))
        union = ((mask_pred + mask_true) > 0).float().sum(dim=(1, 2, 3))
        iou_sum += (inter / union.clamp(min=1)).sum().item()
        dice_sum += (2 * inter / (mask_pred.sum(dim=(1, 2, 3)) + mask_true.sum(dim=(1, 2, 3))).clamp(min=1)).sum().item()
        n += image.shape[0]
    net.train()
    return iou_sum / n, dice_sum / n


def train_model(model, device, epochs=5, batch_size=8, learning_rate=1e-2, val_percent=0.25):
    dataset = DiscsDataset(64, seed=1)
    n_val = int(len(dataset) * val_percent)
    n_train = len(dataset) - n_val
    train_set, val_set = random_split(dataset, [n_train, n_val], generator=torch.Generator().manual_seed(0))
    loader_args = dict(batch_size=batch_size, num_workers=0, pin_memory=False)
    train_loader = DataLoader(train_set, shuffle=True, **loader_args)
    val_loader = DataLoader(val_set, shuffle=False, drop_last=False, **loader_args)
    print(f'''Starting training:
        Epochs:          {epochs}
        Batch size:      {batch_size}
        Learning rate:   {learning_rate}
        Training size:   {n_train}
        Validation size: {n_val}
        Device:          {device.type}
    ''')

    optimizer = optim.RMSprop(model.parameters(), lr=learning_rate, weight_decay=1e-8, momentum=0.9)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, 'max', patience=2)
    criterion = nn.BCEWithLogitsLoss()
    global_step = 0

    for epoch in range(1, epochs + 1):
        model.train()
        epoch_loss = 0
        for batch in train_loader:
            images, true_masks = batch['image'], batch['mask']
            assert images.shape[1] == model.n_channels, \
                f'Network has been defined with {model.n_channels} input channels'
            images = images.to(device=device, dtype=torch.float32, memory_format=torch.channels_last)
            true_masks = true_masks.to(device=device, dtype=torch.float32)

            masks_pred = F.interpolate(model(images), scale_factor=2, mode='bilinear', align_corners=False)
            loss = criterion(masks_pred, true_masks)
            loss += dice_loss(masks_pred, true_masks)

            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()

            global_step += 1
            epoch_loss += loss.item()
            if global_step % 3 == 1:
                print(f'step {global_step}: loss (batch) {loss.item():.4f}')

        val_iou, val_dice = evaluate(model, val_loader, device)
        scheduler.step(val_dice)
        print(f'Epoch {epoch}: train loss {epoch_loss / len(train_loader):.4f}, '
              f'validation IoU {val_iou:.4f}, Dice {val_dice:.4f}, '
              f'lr {optimizer.param_groups[0]["lr"]:.4g}')
    return model


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='Train the UNet on images and target masks')
    parser.add_argument('--epochs', '-e', metavar='E', type=int, default=5, help='Number of epochs')
    parser.add_argument('--batch-size', '-b', dest='batch_size', metavar='B', type=int, default=8,
                        help='Batch size')
    parser.add_argument('--learning-rate', '-l', metavar='LR', type=float, default=1e-2,
                        help='Learning rate', dest='lr')
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    print(f'Using device {device}')
    model = UNet(n_channels=1, n_classes=1)
    model = model.to(memory_format=torch.channels_last)
    print(f'Network:\n\t{model.n_channels} input channels\n\t{model.n_classes} output channels (classes)')
    print(model.up1)
    train_model(model=model, epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.lr,
                device=device)
