"""A small Vision Transformer in the style of the "ViT from scratch" tutorials
(lucidrains/vit-pytorch, omihub777/ViT-CIFAR): Conv2d patch embedding with
stride=patch, a cls token nn.Parameter, a learned positional embedding,
nn.TransformerEncoder(batch_first=True, norm_first=True) with GELU, AdamW with a linear
warmup LambdaLR then cosine decay, clip_grad_norm_, top-1/top-3 accuracy with topk."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser(description='ViT on synthetic images')
parser.add_argument('--epochs', type=int, default=3)
parser.add_argument('--lr', type=float, default=3e-3)
parser.add_argument('--warmup-steps', type=int, default=8)
parser.add_argument('--patch-size', type=int, default=4)
parser.add_argument('--dim', type=int, default=32)
args = parser.parse_args()

torch.manual_seed(0)
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')


class PatchEmbedding(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=32):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)                  # (B, E, H/P, W/P)
        x = x.flatten(2).transpose(1, 2)  # (B, N, E)
        return x


class ViT(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, num_classes=10, embed_dim=32,
                 depth=2, num_heads=4, mlp_ratio=2.0, dropout=0.1):
        super().__init__()
        self.patch_embed = PatchEmbedding(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(p=dropout)
        encoder_layer = nn.TransformerEncoderLayer(
            d_model=embed_dim, nhead=num_heads, dim_feedforward=int(embed_dim * mlp_ratio),
            dropout=dropout, activation='gelu', batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(encoder_layer, num_layers=depth)
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)

        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    def forward(self, x):
        B = x.shape[0]
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(B, -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        x = x + self.pos_embed
        x = self.pos_drop(x)
        x = self.encoder(x)
        x = self.norm(x)
        return self.head(x[:, 0])


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


# synthetic images: a class is which quadrant holds a bright blob, and its colour
def make_data(n, gen):
    y = torch.randint(0, 8, (n,), generator=gen)
    x = 0.3 * torch.randn(n, 3, 16, 16, generator=gen)
    for i in range(n):
        q = y[i].item() % 4
        r, c = (q // 2) * 8, (q % 2) * 8
        x[i, y[i].item() // 4, r:r + 8, c:c + 8] += 1.0
    return x, y


gen = torch.Generator().manual_seed(1)
train_ds = TensorDataset(*make_data(256, gen))
val_ds = TensorDataset(*make_data(128, gen))
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True)
val_loader = DataLoader(val_ds, batch_size=64)

model = ViT(patch_size=args.patch_size, embed_dim=args.dim, num_classes=8).to(device)
print(model.patch_embed)
print(f'cls_token {tuple(model.cls_token.shape)}, pos_embed {tuple(model.pos_embed.shape)}')
print(f'Number of parameters: {sum(p.numel() for p in model.parameters()) / 1e3:.1f}K')

optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.999), weight_decay=0.05)
total_steps = args.epochs * len(train_loader)


def lr_lambda(step):
    if step < args.warmup_steps:
        return float(step + 1) / float(args.warmup_steps)
    progress = float(step - args.warmup_steps) / float(max(1, total_steps - args.warmup_steps))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
criterion = nn.CrossEntropyLoss()

step = 0
for epoch in range(1, args.epochs + 1):
    model.train()
    for images, target in train_loader:
        images, target = images.to(device), target.to(device)
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        if step % 4 == 0:
            print(f'step {step:3d} | loss {loss.item():.4f} | grad norm {grad_norm:.3f} '
                  f'| lr {scheduler.get_last_lr()[0]:.2e}')
        step += 1

    model.eval()
    top1_sum, top3_sum, val_loss, n = 0.0, 0.0, 0.0, 0
    with torch.no_grad():
        for images, target in val_loader:
            output = model(images.to(device))
            val_loss += F.cross_entropy(output, target, reduction='sum').item()
            acc1, acc3 = accuracy(output, target, topk=(1, 3))
            top1_sum += acc1.item() * images.size(0)
            top3_sum += acc3[0] * images.size(0)
            n += images.size(0)
    print(f'Epoch {epoch}: val loss {val_loss / n:.4f}  Acc@1 {top1_sum / n:.2f}  '
          f'Acc@3 {top3_sum / n:.2f}')
print(acc1, acc3.dtype)
