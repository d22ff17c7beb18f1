"""timm-style models and timm's training pieces: RegNetY blocks (make_divisible, Squeeze-
Excite with rd_ratio), ConvMixer (a Residual wrapper, depthwise conv with padding="same"),
PoolFormer (AvgPool2d(count_include_pad=False) token mixer, GroupNorm(1, C), LayerScale,
DropPath with x.new_empty(shape).bernoulli_(keep_prob).div_), a MaxViT block/grid window
partition; weight-decay parameter groups, LabelSmoothingCrossEntropy and
SoftTargetCrossEntropy, a ModelEmaV3-style EMA with torch._foreach_lerp_/_mul_/_add_, a
cosine schedule with warmup, clip_grad_norm_(foreach=True), clip_grad_value_, and a top-1/
top-5 evaluation with topk(5, 1, True, True)."""
import math
from copy import deepcopy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


def make_divisible(v, divisor=8, min_value=None, round_limit=.9):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < round_limit * v:
        new_v += divisor
    return new_v


def drop_path(x, drop_prob: float = 0., training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0., scale_by_keep: bool = True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self):
        return f'drop_prob={round(self.drop_prob, 3):0.3f}'


class SEModule(nn.Module):
    def __init__(self, channels, rd_ratio=1. / 16, rd_channels=None, rd_divisor=8,
                 add_maxpool=False, bias=True, act_layer=nn.ReLU, norm_layer=None):
        super().__init__()
        self.add_maxpool = add_maxpool
        if not rd_channels:
            rd_channels = make_divisible(channels * rd_ratio, rd_divisor, round_limit=0.)
        self.fc1 = nn.Conv2d(channels, rd_channels, kernel_size=1, bias=bias)
        self.bn = norm_layer(rd_channels) if norm_layer else nn.Identity()
        self.act = act_layer(inplace=True)
        self.fc2 = nn.Conv2d(rd_channels, channels, kernel_size=1, bias=bias)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        x_se = x.mean((2, 3), keepdim=True)
        if self.add_maxpool:
            x_se = 0.5 * x_se + 0.5 * x.amax((2, 3), keepdim=True)
        x_se = self.fc1(x_se)
        x_se = self.act(self.bn(x_se))
        x_se = self.fc2(x_se)
        return x * self.gate(x_se)


class ConvNormAct(nn.Sequential):
    def __init__(self, in_chs, out_chs, kernel_size=1, stride=1, groups=1, apply_act=True):
        super().__init__(
            nn.Conv2d(in_chs, out_chs, kernel_size, stride, kernel_size // 2, groups=groups,
                      bias=False),
            nn.BatchNorm2d(out_chs),
            nn.ReLU(inplace=True) if apply_act else nn.Identity())


class RegBottleneck(nn.Module):
    """RegNet Bottleneck: 1x1 -> group 3x3 -> SE -> 1x1, the shortcut projected when needed."""
    def __init__(self, in_chs, out_chs, stride=1, bottle_ratio=1, group_size=8, se_ratio=0.25,
                 drop_path_rate=0.):
        super().__init__()
        bottleneck_chs = int(round(out_chs * bottle_ratio))
        groups = bottleneck_chs // group_size
        self.conv1 = ConvNormAct(in_chs, bottleneck_chs, kernel_size=1)
        self.conv2 = ConvNormAct(bottleneck_chs, bottleneck_chs, kernel_size=3, stride=stride,
                                 groups=groups)
        se_channels = int(round(in_chs * se_ratio))
        self.se = SEModule(bottleneck_chs, rd_channels=se_channels) if se_ratio else nn.Identity()
        self.conv3 = ConvNormAct(bottleneck_chs, out_chs, kernel_size=1, apply_act=False)
        self.act3 = nn.ReLU()
        self.downsample = ConvNormAct(in_chs, out_chs, 1, stride, apply_act=False) \
            if in_chs != out_chs or stride != 1 else nn.Identity()
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate > 0 else nn.Identity()

    def zero_init_last(self):
        nn.init.zeros_(self.conv3[1].weight)

    def forward(self, x):
        shortcut = x
        x = self.conv1(x)
        x = self.conv2(x)
        x = self.se(x)
        x = self.conv3(x)
        x = self.drop_path(x) + self.downsample(shortcut)
        return self.act3(x)


class RegNetY(nn.Module):
    def __init__(self, widths=(16, 32), depths=(1, 2), num_classes=10, drop_path_rate=0.1):
        super().__init__()
        self.stem = ConvNormAct(3, 16, 3, stride=2)
        dpr = [x.tolist() for x in torch.linspace(0, drop_path_rate, sum(depths)).split(depths)]
        stages, prev = [], 16
        for i, (w, d) in enumerate(zip(widths, depths)):
            blocks = [RegBottleneck(prev if j == 0 else w, w, stride=2 if j == 0 else 1,
                                    drop_path_rate=dpr[i][j]) for j in range(d)]
            stages.append(nn.Sequential(*blocks))
            prev = w
        self.stages = nn.Sequential(*stages)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(1),
                                  nn.Linear(prev, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                fan_out //= m.groups
                nn.init.normal_(m.weight, 0, math.sqrt(2.0 / fan_out))
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0.0, std=0.01)
                nn.init.zeros_(m.bias)
        for m in self.modules():
            if hasattr(m, 'zero_init_last'):
                m.zero_init_last()

    def forward(self, x):
        return self.head(self.stages(self.stem(x)))


# --- ConvMixer ("Patches Are All You Need?") ---------------------------------------------
class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


def ConvMixer(dim, depth, kernel_size=9, patch_size=7, n_classes=1000):
    return nn.Sequential(
        nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size),
        nn.GELU(),
        nn.BatchNorm2d(dim),
        *[nn.Sequential(
            Residual(nn.Sequential(
                nn.Conv2d(dim, dim, kernel_size, groups=dim, padding="same"),
                nn.GELU(),
                nn.BatchNorm2d(dim)
            )),
            nn.Conv2d(dim, dim, kernel_size=1),
            nn.GELU(),
            nn.BatchNorm2d(dim)
        ) for i in range(depth)],
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(dim, n_classes)
    )


# --- PoolFormer (MetaFormer) --------------------------------------------------------------
class GroupNorm1(nn.GroupNorm):
    def __init__(self, num_channels, **kwargs):
        super().__init__(1, num_channels, **kwargs)


class Pooling(nn.Module):
    def __init__(self, pool_size=3):
        super().__init__()
        self.pool = nn.AvgPool2d(pool_size, stride=1, padding=pool_size // 2,
                                 count_include_pad=False)

    def forward(self, x):
        return self.pool(x) - x


class LayerScale2d(nn.Module):
    def __init__(self, dim, init_values=1e-5, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        gamma = self.gamma.view(1, -1, 1, 1)
        return x.mul_(gamma) if self.inplace else x * gamma


class ConvMlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Conv2d(dim, hidden, 1)
        self.act = nn.GELU()
        self.fc2 = nn.Conv2d(hidden, dim, 1)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class PoolFormerBlock(nn.Module):
    def __init__(self, dim, mlp_ratio=4., drop_path=0., layer_scale_init_value=1e-5):
        super().__init__()
        self.norm1 = GroupNorm1(dim)
        self.token_mixer = Pooling(3)
        self.ls1 = LayerScale2d(dim, layer_scale_init_value)
        self.drop_path1 = DropPath(drop_path) if drop_path > 0. else nn.Identity()
        self.norm2 = GroupNorm1(dim)
        self.mlp = ConvMlp(dim, int(dim * mlp_ratio))
        self.ls2 = LayerScale2d(dim, layer_scale_init_value)
        self.drop_path2 = DropPath(drop_path) if drop_path > 0. else nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.token_mixer(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


# --- MaxViT window / grid partition -----------------------------------------------------
def window_partition(x, window_size):
    B, H, W, C = x.shape
    x = x.view(B, H // window_size[0], window_size[0], W // window_size[1], window_size[1], C)
    windows = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size[0], window_size[1], C)
    return windows


def window_reverse(windows, window_size, img_size):
    H, W = img_size
    C = windows.shape[-1]
    x = windows.view(-1, H // window_size[0], W // window_size[1], window_size[0], window_size[1], C)
    x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, H, W, C)
    return x


def grid_partition(x, grid_size):
    B, H, W, C = x.shape
    x = x.view(B, grid_size[0], H // grid_size[0], grid_size[1], W // grid_size[1], C)
    windows = x.permute(0, 2, 4, 1, 3, 5).contiguous().view(-1, grid_size[0], grid_size[1], C)
    return windows


def grid_reverse(windows, grid_size, img_size):
    H, W = img_size
    C = windows.shape[-1]
    x = windows.view(-1, H // grid_size[0], W // grid_size[1], grid_size[0], grid_size[1], C)
    x = x.permute(0, 3, 1, 4, 2, 5).contiguous().view(-1, H, W, C)
    return x


class PartitionAttention(nn.Module):
    def __init__(self, dim, partition_type="block", partition_size=(4, 4), num_heads=2):
        super().__init__()
        self.partition_type = partition_type
        self.partition_size = partition_size
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(2 * dim, dim))

    def _partition_attn(self, x):
        img_size = x.shape[1:3]
        if self.partition_type == "block":
            partitioned = window_partition(x, self.partition_size)
        else:
            partitioned = grid_partition(x, self.partition_size)
        p = partitioned.flatten(1, 2)
        p, _ = self.attn(p, p, p, need_weights=False)
        partitioned = p.view(partitioned.shape)
        if self.partition_type == "block":
            return window_reverse(partitioned, self.partition_size, img_size)
        return grid_reverse(partitioned, self.partition_size, img_size)

    def forward(self, x):
        x = x + self._partition_attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyMaxViT(nn.Module):
    def __init__(self, dim=16, num_classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 3, 2, 1)
        self.block = PartitionAttention(dim, "block")
        self.grid = PartitionAttention(dim, "grid")
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.stem(x).permute(0, 2, 3, 1)
        x = self.grid(self.block(x))
        return self.head(x.mean((1, 2)))


# --- timm's training pieces ---------------------------------------------------------------
class LabelSmoothingCrossEntropy(nn.Module):
    def __init__(self, smoothing=0.1):
        super().__init__()
        assert smoothing < 1.0
        self.smoothing = smoothing
        self.confidence = 1. - smoothing

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        logprobs = F.log_softmax(x, dim=-1)
        nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
        nll_loss = nll_loss.squeeze(1)
        smooth_loss = -logprobs.mean(dim=-1)
        loss = self.confidence * nll_loss + self.smoothing * smooth_loss
        return loss.mean()


class SoftTargetCrossEntropy(nn.Module):
    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1)
        return loss.mean()


class ModelEmaV3(nn.Module):
    def __init__(self, model, decay=0.9999, min_decay=0.0, update_after_step=0,
                 use_warmup=False, warmup_gamma=1.0, warmup_power=2/3, foreach=True):
        super().__init__()
        self.module = deepcopy(model)
        self.module.eval()
        self.decay = decay
        self.min_decay = min_decay
        self.update_after_step = update_after_step
        self.use_warmup = use_warmup
        self.warmup_gamma = warmup_gamma
        self.warmup_power = warmup_power
        self.foreach = foreach

    def get_decay(self, step=None):
        if step is None:
            return self.decay
        step = max(0, step - self.update_after_step - 1)
        if step <= 0:
            return 0.0
        if self.use_warmup:
            decay = 1 - (1 + step / self.warmup_gamma) ** -self.warmup_power
            decay = max(min(decay, self.decay), self.min_decay)
        else:
            decay = self.decay
        return decay

    @torch.no_grad()
    def update(self, model, step=None):
        decay = self.get_decay(step)
        ema_lerp_values = []
        model_lerp_values = []
        for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
            if ema_v.is_floating_point():
                ema_lerp_values.append(ema_v)
                model_lerp_values.append(model_v)
            else:
                ema_v.copy_(model_v)
        if hasattr(torch, '_foreach_lerp_'):
            torch._foreach_lerp_(ema_lerp_values, model_lerp_values, weight=1. - decay)
        else:
            torch._foreach_mul_(ema_lerp_values, scalar=decay)
            torch._foreach_add_(ema_lerp_values, model_lerp_values, alpha=1. - decay)

    @torch.no_grad()
    def update_mul_add(self, model, decay):
        ema = [v for v in self.module.state_dict().values() if v.is_floating_point()]
        cur = [v for v in model.state_dict().values() if v.is_floating_point()]
        torch._foreach_mul_(ema, decay)
        torch._foreach_add_(ema, cur, alpha=1. - decay)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


def param_groups_weight_decay(model, weight_decay=1e-5, no_weight_decay_list=()):
    no_weight_decay_list = set(no_weight_decay_list)
    decay = []
    no_decay = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
            no_decay.append(param)
        else:
            decay.append(param)
    return [
        {'params': no_decay, 'weight_decay': 0.},
        {'params': decay, 'weight_decay': weight_decay}]


def cosine_lr(step, base_lr, warmup_steps, total_steps, warmup_lr_init=1e-4, lr_min=1e-5):
    if step < warmup_steps:
        return warmup_lr_init + (base_lr - warmup_lr_init) * step / warmup_steps
    t = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return lr_min + 0.5 * (base_lr - lr_min) * (1 + math.cos(math.pi * t))


def accuracy(output, target, topk=(1,)):
    maxk = min(max(topk), output.size()[1])
    batch_size = target.size(0)
    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.reshape(1, -1).expand_as(pred))
    return [correct[:min(k, maxk)].reshape(-1).float().sum(0) * 100. / batch_size for k in topk]


# --- a few pieces on their own ------------------------------------------------------------
print("make_divisible", [make_divisible(v) for v in (3, 12.5, 30, 100.4, 7.2)],
      make_divisible(64 * 0.25, 8, round_limit=0.))
se = SEModule(32, rd_ratio=0.25)
print(se)
x = torch.randn(2, 32, 5, 5)
print("se out", tuple(se(x).shape))
dp = DropPath(0.5)
print(dp, dp.training)
y = dp(torch.ones(8, 3, 2, 2))
print("drop path kept", (y[:, 0, 0, 0] > 0).tolist(), y.unique().tolist())
mask = torch.ones(4, 1, 1).new_empty((4, 1, 1)).bernoulli_(0.75)
print("bernoulli_ mask", mask.flatten().tolist(), mask.dtype)
pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
print(pool)
print("avgpool no pad count", pool(torch.arange(16.).view(1, 1, 4, 4)))
same = nn.Conv2d(4, 4, 4, groups=4, padding="same")
print(same, tuple(same(torch.randn(1, 4, 6, 7)).shape))
same_d = nn.Conv2d(4, 4, 3, groups=4, padding="same", dilation=2, padding_mode="reflect")
print(same_d, tuple(same_d(torch.randn(1, 4, 6, 7)).shape))
try:
    nn.Conv2d(4, 4, 3, stride=2, padding="same")
except ValueError as e:
    print("ValueError:", e)
img = torch.arange(2 * 8 * 8 * 3, dtype=torch.float32).view(2, 8, 8, 3)
w = window_partition(img, (4, 4))
g = grid_partition(img, (4, 4))
print("window partition", tuple(w.shape), w.stride(), w[1, 0, :, 0].tolist())
print("grid partition", tuple(g.shape), g[1, 0, :, 0].tolist())
print("reverse ok", torch.equal(window_reverse(w, (4, 4), (8, 8)), img),
      torch.equal(grid_reverse(g, (4, 4), (8, 8)), img))
logits = torch.randn(6, 5)
tgt = torch.tensor([0, 1, 2, 3, 4, 0])
ls = LabelSmoothingCrossEntropy(0.1)
print("label smoothing", round(ls(logits, tgt).item(), 5),
      round(F.cross_entropy(logits, tgt, label_smoothing=0.1).item(), 5))
soft = F.one_hot(tgt, 5).float() * 0.8 + 0.04
print("soft target", round(SoftTargetCrossEntropy()(logits, soft).item(), 5),
      round(F.cross_entropy(logits, soft).item(), 5))
acc1, acc5 = accuracy(logits, tgt, topk=(1, 5))
print("acc", acc1.item(), acc5.item(), acc1.dtype, acc1.shape)
ps = [torch.ones(3, requires_grad=True), torch.ones(2, 2, requires_grad=True)]
for p, gr in zip(ps, (torch.tensor([3., 4., 0.]), torch.full((2, 2), 10.))):
    p.grad = gr.clone()
norm = torch.nn.utils.clip_grad_norm_(ps, max_norm=1.0, foreach=True)
print("clip_grad_norm_", norm, [p.grad for p in ps])
torch.nn.utils.clip_grad_value_(ps, clip_value=0.05)
print("clip_grad_value_", [p.grad for p in ps])
norm = torch.nn.utils.clip_grad_norm_(ps, max_norm=1.0, norm_type=float("inf"), foreach=True)
print("inf norm", norm)
a = [torch.zeros(3), torch.ones(2)]
torch._foreach_lerp_(a, [torch.ones(3), torch.full((2,), 3.)], weight=0.25)
print("foreach_lerp_", a)
torch._foreach_mul_(a, 2.0)
torch._foreach_add_(a, [torch.ones(3), torch.ones(2)], alpha=0.5)
print("foreach mul/add", a)
print("lr", [round(cosine_lr(s, 0.1, 3, 12), 6) for s in range(13)])

# --- train each model a few steps: param groups, EMA, clipping, schedule ------------------
images = torch.randn(16, 3, 16, 16)
labels = torch.randint(0, 10, (16,))
models = {
    "regnety": RegNetY(),
    "convmixer": ConvMixer(16, 2, kernel_size=5, patch_size=2, n_classes=10),
    "poolformer": nn.Sequential(nn.Conv2d(3, 16, 4, 4), PoolFormerBlock(16, drop_path=0.1),
                                PoolFormerBlock(16), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                nn.Linear(16, 10)),
    "maxvit": TinyMaxViT(),
}
print(models["regnety"].stages[1][0])
print(models["convmixer"][3])
print(models["poolformer"][1])
print(models["maxvit"].block)
total_steps = 8
for name, model in models.items():
    n_params = sum(p.numel() for p in model.parameters())
    groups = param_groups_weight_decay(model, weight_decay=0.05)
    print(name, "params", n_params, "groups", [len(g["params"]) for g in groups])
    optimizer = torch.optim.AdamW(groups, lr=1e-3)
    ema = ModelEmaV3(model, decay=0.9, use_warmup=True)
    criterion = SoftTargetCrossEntropy() if name in ("poolformer", "maxvit") else \
        LabelSmoothingCrossEntropy(0.1)
    for step in range(total_steps):
        lr = cosine_lr(step, 2e-3, 2, total_steps)
        for group in optimizer.param_groups:
            group["lr"] = lr
        model.train()
        out = model(images)
        target = labels if isinstance(criterion, LabelSmoothingCrossEntropy) else \
            F.one_hot(labels, 10).float() * 0.9 + 0.01
        loss = criterion(out, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if name == "convmixer":
            torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0, foreach=True)
        optimizer.step()
        ema.update(model, step=step)
        print(f"{name} step {step} loss {loss.item():.4f} lr {lr:.6f} grad_norm {gnorm.item():.4f}")
    ema.update_mul_add(model, 0.5)
    model.eval()
    with torch.no_grad():
        out = model(images)
        ema_out = ema(images)
    a1, a5 = accuracy(out, labels, topk=(1, 5))
    e1, e5 = accuracy(ema_out, labels, topk=(1, 5))
    print(f"{name} eval top1 {a1.item():.2f} top5 {a5.item():.2f} "
          f"ema top1 {e1.item():.2f} top5 {e5.item():.2f}")
