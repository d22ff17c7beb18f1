"""ConvNeXt (Liu et al. 2022) as facebookresearch/ConvNeXt writes it: Block with a 7x7
depthwise conv, a channels_first LayerNorm written by hand (mean/pow/sqrt over dim 1),
permute to channels-last for nn.LayerNorm and pointwise Linear layers, GELU, a layer-scale
gamma Parameter, DropPath, trunc_normal_ init, head_init_scale, AdamW with a param-group
weight-decay split, a cosine schedule with warmup, and a checkpoint saved and resumed."""
import argparse
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.init import trunc_normal_


def drop_path(x, drop_prob: float = 0., training: bool = False):
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = keep_prob + torch.rand(shape, dtype=x.dtype, device=x.device)
    random_tensor.floor_()  # binarize
    output = x.div(keep_prob) * random_tensor
    return output


class DropPath(nn.Module):
    def __init__(self, drop_prob=None):
        super(DropPath, self).__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training)


class LayerNorm(nn.Module):
    r""" LayerNorm that supports two data formats: channels_last (default) or channels_first.
    The ordering of the dimensions in the inputs. channels_last corresponds to inputs with
    shape (batch_size, height, width, channels) while channels_first corresponds to inputs
    with shape (batch_size, channels, height, width).
    """
    def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps
        self.data_format = data_format
        if self.data_format not in ["channels_last", "channels_first"]:
            raise NotImplementedError
        self.normalized_shape = (normalized_shape, )

    def forward(self, x):
        if self.data_format == "channels_last":
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        elif self.data_format == "channels_first":
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.eps)
            x = self.weight[:, None, None] * x + self.bias[:, None, None]
            return x


class Block(nn.Module):
    r""" ConvNeXt Block. There are two equivalent implementations:
    (1) DwConv -> LayerNorm (channels_first) -> 1x1 Conv -> GELU -> 1x1 Conv; all in (N, C, H, W)
    (2) DwConv -> Permute to (N, H, W, C); LayerNorm (channels_last) -> Linear -> GELU -> Linear; Permute back
    We use (2) as we find it slightly faster in PyTorch
    """
    def __init__(self, dim, drop_path=0., layer_scale_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)  # depthwise conv
        self.norm = LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)  # pointwise/1x1 convs, implemented with linear layers
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale_init_value * torch.ones((dim)),
                                  requires_grad=True) if layer_scale_init_value > 0 else None
        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()

    def forward(self, x):
        input = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
        x = self.norm(x)
        x = self.pwconv1(x)
        x = self.act(x)
        x = self.pwconv2(x)
        if self.gamma is not None:
            x = self.gamma * x
        x = x.permute(0, 3, 1, 2)  # (N, H, W, C) -> (N, C, H, W)

        x = input + self.drop_path(x)
        return x


class ConvNeXt(nn.Module):
    def __init__(self, in_chans=3, num_classes=1000,
                 depths=[3, 3, 9, 3], dims=[96, 192, 384, 768], drop_path_rate=0.,
                 layer_scale_init_value=1e-6, head_init_scale=1.,
                 ):
        super().__init__()

        self.downsample_layers = nn.ModuleList()  # stem and 3 intermediate downsampling conv layers
        stem = nn.Sequential(
            nn.Conv2d(in_chans, dims[0], kernel_size=4, stride=4),
            LayerNorm(dims[0], eps=1e-6, data_format="channels_first")
        )
        self.downsample_layers.append(stem)
        for i in range(len(dims) - 1):
            downsample_layer = nn.Sequential(
                    LayerNorm(dims[i], eps=1e-6, data_format="channels_first"),
                    nn.Conv2d(dims[i], dims[i+1], kernel_size=2, stride=2),
            )
            self.downsample_layers.append(downsample_layer)

        self.stages = nn.ModuleList()  # feature resolution stages, each consisting of multiple residual blocks
        dp_rates = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
        cur = 0
        for i in range(len(dims)):
            stage = nn.Sequential(
                *[Block(dim=dims[i], drop_path=dp_rates[cur + j],
                layer_scale_init_value=layer_scale_init_value) for j in range(depths[i])]
            )
            self.stages.append(stage)
            cur += depths[i]

        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)  # final norm layer
        self.head = nn.Linear(dims[-1], num_classes)

        self.apply(self._init_weights)
        self.head.weight.data.mul_(head_init_scale)
        self.head.bias.data.mul_(head_init_scale)

    def _init_weights(self, m):
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            trunc_normal_(m.weight, std=.02)
            nn.init.constant_(m.bias, 0)

    def forward_features(self, x):
        for i in range(len(self.stages)):
            x = self.downsample_layers[i](x)
            x = self.stages[i](x)
        return self.norm(x.mean([-2, -1]))  # global average pooling, (N, C, H, W) -> (N, C)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.head(x)
        return x


def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0,
                     start_warmup_value=0):
    warmup_schedule = []
    warmup_iters = warmup_epochs * niter_per_ep
    if warmup_epochs > 0:
        warmup_schedule = [start_warmup_value + (base_value - start_warmup_value) * i / warmup_iters
                           for i in range(warmup_iters)]
    iters = range(epochs * niter_per_ep - warmup_iters)
    schedule = warmup_schedule + [
        final_value + 0.5 * (base_value - final_value) * (1 + math.cos(math.pi * i / len(iters)))
        for i in iters]
    return schedule


def main():
    parser = argparse.ArgumentParser('ConvNeXt training', add_help=False)
    parser.add_argument('--epochs', default=3, type=int)
    parser.add_argument('--batch_size', default=16, type=int)
    parser.add_argument('--lr', type=float, default=4e-3)
    parser.add_argument('--drop_path', type=float, default=0.1)
    parser.add_argument('--layer_scale_init_value', default=1e-6, type=float)
    parser.add_argument('--output_dir', default='.')
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

    # the hand-written channels_first LayerNorm is F.layer_norm over the channel dim
    ln = LayerNorm(6, data_format="channels_first")
    t = torch.randn(2, 6, 3, 3)
    ref = F.layer_norm(t.permute(0, 2, 3, 1), (6,), eps=1e-6).permute(0, 3, 1, 2)
    print("channels_first LayerNorm matches:", torch.allclose(ln(t), ref, atol=1e-5))

    model = ConvNeXt(num_classes=5, depths=[1, 1, 2], dims=[8, 16, 32],
                     drop_path_rate=args.drop_path,
                     layer_scale_init_value=args.layer_scale_init_value, head_init_scale=1.0)
    model.to(device)
    print(model.stages[2])
    n_parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print('number of params:', n_parameters)
    print('gamma', model.stages[0][0].gamma.shape, model.stages[0][0].gamma[:3])
    w = model.head.weight
    print(f'trunc_normal_ within 2 (std .02): {bool(w.abs().max() <= 2)} '
          f'std ~ {w.std().item() < 0.05}')

    g = torch.Generator().manual_seed(7)
    images = torch.randn(80, 3, 32, 32, generator=g)
    labels = torch.randint(0, 5, (80,), generator=g)
    images += labels.view(-1, 1, 1, 1).float() * 0.3
    dataset = torch.utils.data.TensorDataset(images, labels)
    data_loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size,
                                              shuffle=True, drop_last=True)

    skip = {'gamma'}
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if len(param.shape) == 1 or name.endswith(".bias") or name.split('.')[-1] in skip:
            no_decay.append(param)
        else:
            decay.append(param)
    optimizer = torch.optim.AdamW([{'params': no_decay, 'weight_decay': 0.},
                                   {'params': decay, 'weight_decay': 0.05}], lr=args.lr)
    lr_schedule_values = cosine_scheduler(args.lr, 1e-6, args.epochs, len(data_loader),
                                          warmup_epochs=1)
    criterion = torch.nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        model.train(True)
        total = 0.
        for data_iter_step, (samples, targets) in enumerate(data_loader):
            it = epoch * len(data_loader) + data_iter_step
            for i, param_group in enumerate(optimizer.param_groups):
                param_group["lr"] = lr_schedule_values[it]
            samples = samples.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            output = model(samples)
            loss = criterion(output, targets)
            loss_value = loss.item()
            if not math.isfinite(loss_value):
                print("Loss is {}, stopping training".format(loss_value))
                raise SystemExit(1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss_value
            if data_iter_step == 0:
                print(f"Epoch: [{epoch}] [{data_iter_step}/{len(data_loader)}] "
                      f"loss: {loss_value:.4f} lr: {lr_schedule_values[it]:.6f}")
        print(f"Epoch: [{epoch}] Averaged stats: loss: {total / len(data_loader):.4f}")

    checkpoint_path = os.path.join(args.output_dir, 'checkpoint-last.pth')
    torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(),
                'epoch': args.epochs - 1, 'args': vars(args)}, checkpoint_path)
    checkpoint = torch.load(checkpoint_path, map_location='cpu')
    model_without_ddp = ConvNeXt(num_classes=5, depths=[1, 1, 2], dims=[8, 16, 32])
    msg = model_without_ddp.load_state_dict(checkpoint['model'])
    print(msg)
    print("Resume checkpoint epoch", checkpoint['epoch'], sorted(checkpoint['args']))
    model.eval()
    model_without_ddp.eval()
    with torch.no_grad():
        acc = (model(images).argmax(-1) == labels).float().mean()
        same = torch.allclose(model(images[:4]), model_without_ddp(images[:4]), atol=1e-6)
    print(f"Accuracy of the network on the train images: {acc.item() * 100:.1f}%")
    print("reloaded model agrees:", same)


if __name__ == '__main__':
    main()
