"""The PyTorch "Channels Last Memory Format" tutorial and timm's channels_last training
recipe: x.to(memory_format=torch.channels_last), contiguous(memory_format=...),
is_contiguous(memory_format=...), the strides that conv2d (with/without bias, groups,
stride 2), batch_norm, activations, binary ops of NHWC with NHWC/NCHW, cat, pooling,
interpolate, pixel_shuffle, permute and the *_like factories give; then a small ResNet
converted with model.to(memory_format=torch.channels_last) trained for a few steps, and a
Conv3d under channels_last_3d."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


def show(name, t):
    print(f"{name:28s} {tuple(t.shape)} {t.stride()} "
          f"cl={t.is_contiguous(memory_format=torch.channels_last)} "
          f"c={t.is_contiguous()}")


# --- the tutorial: classic NCHW vs channels last -------------------------------------
N, C, H, W = 10, 3, 32, 32
x = torch.empty(N, C, H, W)
print(x.stride())  # (3072, 1024, 32, 1)
x = x.to(memory_format=torch.channels_last)
print(x.shape)
print(x.stride())  # (3072, 1, 96, 3)
x = x.to(memory_format=torch.contiguous_format)
print(x.stride())
x = x.contiguous(memory_format=torch.channels_last)
print(x.stride())
x = torch.empty(N, C, H, W, memory_format=torch.channels_last)
print(x.stride())
x = torch.empty(N, C, H, W).to(memory_format=torch.channels_last)
print(x.is_contiguous(memory_format=torch.channels_last))
x = torch.randn(N, C, H, W)
y = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
print("alternative way", y.stride(), torch.equal(x, y))
special = torch.empty(4, 1, 4, 4).to(memory_format=torch.channels_last)
print("C==1", special.stride(), special.is_contiguous(),
      special.is_contiguous(memory_format=torch.channels_last))
special = torch.empty(4, 4, 1, 1).to(memory_format=torch.channels_last)
print("H=W=1", special.stride(), special.is_contiguous(),
      special.is_contiguous(memory_format=torch.channels_last))

# --- operators preserve the format -----------------------------------------------------
x = torch.randn(2, 8, 12, 12).to(memory_format=torch.channels_last)
nchw = torch.randn(2, 8, 12, 12)
show("input", x)
show("conv bias", nn.Conv2d(8, 16, 3, padding=1)(x))
show("conv no bias", nn.Conv2d(8, 16, 3, padding=1, bias=False)(x))
show("conv groups=4", nn.Conv2d(8, 8, 3, padding=1, groups=4)(x))
show("conv depthwise", nn.Conv2d(8, 8, 3, padding=1, groups=8)(x))
show("conv stride 2", nn.Conv2d(8, 16, 3, stride=2, padding=1)(x))
show("conv 1x1", nn.Conv2d(8, 4, 1)(x))
cl_conv = nn.Conv2d(8, 16, 3, padding=1).to(memory_format=torch.channels_last)
show("cl weight on nchw input", cl_conv(nchw))
show("cl weight", cl_conv.weight)
pw = nn.Conv2d(8, 4, 1).to(memory_format=torch.channels_last)
show("cl 1x1 weight", pw.weight)
show("cl 1x1 weight on nchw input", pw(nchw))
show("cl 1x1 weight clone", pw.weight.detach().clone())
bn = nn.BatchNorm2d(8)
show("batch_norm train", bn(x))
bn.eval()
show("batch_norm eval", bn(x))
show("relu", F.relu(x))
show("relu_ inplace", F.relu(x.clone(), inplace=True))
show("gelu", F.gelu(x))
show("silu", F.silu(x))
show("sigmoid", torch.sigmoid(x))
show("x * 2 + 1", x * 2 + 1)
show("nhwc + nhwc", x + x)
show("nhwc + nchw", x + nchw)
show("nchw + nhwc", nchw + x)
show("nhwc + bias[:,None,None]", x + torch.randn(8)[:, None, None])
show("nhwc * scalar tensor", x * torch.tensor(3.0))
show("cat dim=1", torch.cat([x, x], dim=1))
show("cat dim=2", torch.cat([x, x], dim=2))
show("cat nhwc, nchw", torch.cat([x, nchw], dim=1))
show("stack dim=0", torch.stack([x, x]))
show("stack dim=1", torch.stack([x, x], dim=1))
show("max_pool2d", F.max_pool2d(x, 2))
show("max_pool2d 3/2/1", F.max_pool2d(x, 3, 2, 1))
show("avg_pool2d", F.avg_pool2d(x, 2))
show("adaptive_avg_pool2d 1", F.adaptive_avg_pool2d(x, 1))
show("adaptive_avg_pool2d 5", F.adaptive_avg_pool2d(x, 5))
show("interpolate nearest", F.interpolate(x, scale_factor=2, mode="nearest"))
show("interpolate bilinear", F.interpolate(x, size=(20, 20), mode="bilinear",
                                           align_corners=False))
show("Upsample", nn.Upsample(scale_factor=2)(x))
show("pixel_shuffle", F.pixel_shuffle(x, 2))
show("pixel_unshuffle", F.pixel_unshuffle(x, 2))
show("permute(0,2,3,1)", x.permute(0, 2, 3, 1))
show("empty_like", torch.empty_like(x))
show("zeros_like", torch.zeros_like(x))
show("ones_like contiguous", torch.ones_like(x, memory_format=torch.contiguous_format))
show("randn_like", torch.randn_like(x))
show("clone", x.clone())
show("clone contiguous_format", x.clone(memory_format=torch.contiguous_format))
show("contiguous()", x.contiguous())
show("dropout", F.dropout(x, 0.5))
show("softmax dim 1", F.softmax(x, dim=1))
show("mean keepdim", x.mean((2, 3), keepdim=True))
show("flatten(1)", torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
show("x[:, :4]", x[:, :4])
show("to(float64)", x.to(torch.float64))
show("x.float().half()", x.half())
show("addcmul", torch.addcmul(x, x, nchw, value=0.5))
show("addcmul nchw first", torch.addcmul(nchw, x, x))
show("lerp", torch.lerp(x, nchw, 0.3))
show("gather (cl index)", x.gather(1, torch.zeros_like(x, dtype=torch.long)))
show("masked_scatter", x.masked_scatter(x > 0, torch.randn(x.numel())))
show("where", torch.where(x > 0, x, torch.zeros_like(x)))
show("layer norm over C (perm)", F.layer_norm(x.permute(0, 2, 3, 1), (8,)))
show("group_norm", F.group_norm(x, 2))
out = F.conv2d(x, torch.randn(16, 8, 3, 3), padding=1)
out_ref = F.conv2d(x.contiguous(), torch.randn(16, 8, 3, 3), padding=1)
print("nchw vs nhwc result equal", out.shape == out_ref.shape)


# --- a small ResNet converted with model.to(memory_format=torch.channels_last) -------------
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
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
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = BasicBlock(8, 8)
        self.layer2 = BasicBlock(8, 16, 2, nn.Sequential(nn.Conv2d(8, 16, 1, 2, bias=False),
                                                         nn.BatchNorm2d(16)))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x, trace=False):
        x = self.relu(self.bn1(self.conv1(x)))
        if trace:
            show("stem", x)
        x = self.layer1(x)
        if trace:
            show("layer1", x)
        x = self.layer2(x)
        if trace:
            show("layer2", x)
        x = self.avgpool(x)
        if trace:
            show("avgpool", x)
        x = torch.flatten(x, 1)
        return self.fc(x)


model = TinyResNet()
print(model)
model = model.to(memory_format=torch.channels_last)
for name, p in model.named_parameters():
    if p.dim() == 4:
        print(f"param {name:28s} {tuple(p.shape)} {p.stride()} "
              f"cl={p.is_contiguous(memory_format=torch.channels_last)}")
print("buffers", [(n, b.stride()) for n, b in model.named_buffers() if b.dim() > 0][:3])
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
images = torch.randn(16, 3, 16, 16)
target = torch.randint(0, 10, (16,))
for step in range(6):
    inp = images.to(memory_format=torch.channels_last)
    output = model(inp, trace=step == 0)
    loss = F.cross_entropy(output, target)
    optimizer.zero_grad()
    loss.backward()
    if step == 0:
        g = model.conv1.weight.grad
        print("grad conv1", tuple(g.shape), g.stride(),
              g.is_contiguous(memory_format=torch.channels_last))
        g = model.layer2.conv2.weight.grad
        print("grad layer2.conv2", tuple(g.shape), g.stride())
    optimizer.step()
    print(f"resnet step {step} loss {loss.item():.4f}")
st = optimizer.state[model.conv1.weight]["momentum_buffer"]
print("momentum buffer", st.stride(), st.is_contiguous(memory_format=torch.channels_last))
print("param after step", model.conv1.weight.stride())
inp = images.to(memory_format=torch.channels_last).requires_grad_()
model(inp).sum().backward()
show("input grad", inp.grad)

# --- channels_last_3d for a Conv3d ------------------------------------------------------
v = torch.randn(2, 4, 6, 8, 8)
v3 = v.to(memory_format=torch.channels_last_3d)
print("3d", v3.stride(), v3.is_contiguous(memory_format=torch.channels_last_3d))
conv3 = nn.Conv3d(4, 8, 3, padding=1).to(memory_format=torch.channels_last_3d)
print("conv3d weight", conv3.weight.stride())
o3 = conv3(v3)
print("conv3d out", tuple(o3.shape), o3.stride(),
      o3.is_contiguous(memory_format=torch.channels_last_3d))
o3 = F.max_pool3d(o3, 2)
print("max_pool3d out", o3.stride(), o3.is_contiguous(memory_format=torch.channels_last_3d))
o3 = F.batch_norm(o3, None, None, training=True)
print("batch_norm3d out", o3.stride())
try:
    torch.randn(2, 3, 4).to(memory_format=torch.channels_last)
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last_3d)
except RuntimeError as e:
    print("RuntimeError:", e)
