"""PixelCNN in the style of the classic PyTorch ports (jzbontar/pixelcnn-pytorch, the
'MaskedConv2d' of many tutorials): a Conv2d subclass whose type-'A'/'B' mask is a registered
buffer applied to the weight in forward, a 256-way categorical over each pixel trained with
F.cross_entropy on (N, 256, H, W) logits, bits-per-dim, then the autoregressive sampling loop
with torch.multinomial over softmax probabilities, pixel by pixel."""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

torch.manual_seed(1)
np.random.seed(1)


class MaskedConv2d(nn.Conv2d):
    def __init__(self, mask_type, *args, **kwargs):
        super(MaskedConv2d, self).__init__(*args, **kwargs)
        assert mask_type in {'A', 'B'}
        self.register_buffer('mask', self.weight.data.clone())
        _, _, kH, kW = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kH // 2, kW // 2 + (mask_type == 'B'):] = 0
        self.mask[:, :, kH // 2 + 1:] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super(MaskedConv2d, self).forward(x)


fm = 16
net = nn.Sequential(
    MaskedConv2d('A', 1, fm, 5, 1, 2, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
    MaskedConv2d('B', fm, fm, 3, 1, 1, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
    MaskedConv2d('B', fm, fm, 3, 1, 1, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
    nn.Conv2d(fm, 256, 1))
print(net)
print('mask A', net[0].mask[0, 0])
print('mask B', net[3].mask[0, 0].long())
print('buffers', [name for name, _ in net.named_buffers()][:4])
print('state_dict keys', len(net.state_dict()), list(net.state_dict())[:3])


# receptive field check: the output at a pixel must not depend on it or later pixels
x = torch.zeros(1, 1, 6, 6, requires_grad=True)
net.eval()
out = net(x)
out[0, :, 3, 3].sum().backward()
dep = (x.grad[0, 0] != 0).int()
print('depends on', dep)
print('causal:', bool(dep.flatten()[3 * 6 + 3:].sum() == 0))
net.train()

# tiny "binarised digits": 8x8 images of bars at random positions, values in {0, 255}
def make_images(n):
    imgs = np.zeros((n, 1, 8, 8), dtype=np.uint8)
    for k in range(n):
        r = np.random.randint(0, 8)
        c = np.random.randint(0, 8)
        if k % 2:
            imgs[k, 0, r, :] = 255
        else:
            imgs[k, 0, :, c] = 255
        imgs[k, 0, np.random.randint(0, 8), np.random.randint(0, 8)] = 128
    return torch.from_numpy(imgs)


train = make_images(64)
test = make_images(16)
print('data', train.shape, train.dtype, 'levels', torch.unique(train).tolist())
tr = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train), batch_size=16,
                                 shuffle=True)
optimizer = optim.Adam(net.parameters(), lr=3e-3)

for epoch in range(3):
    err_tr = []
    time_tr = time.time()
    net.train(True)
    for (inp,) in tr:
        input = inp.float() / 255.
        target = inp[:, 0].long()
        loss = F.cross_entropy(net(input), target)
        err_tr.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    time_tr = time.time() - time_tr
    with torch.no_grad():
        net.train(False)
        input = test.float() / 255.
        logits = net(input)
        err_te = F.cross_entropy(logits, test[:, 0].long(), reduction='none')
        print('per-pixel nll', err_te.shape, err_te.dtype)
        bpd = err_te.mean().item() / math.log(2)
    print('epoch={}; nll_tr={:.7f}; nll_te={:.7f}; bpd_te={:.4f}'.format(
        epoch, np.mean(err_tr), err_te.mean().item(), bpd))

# predicted distribution of one pixel
with torch.no_grad():
    probs = F.softmax(net(test[:1].float() / 255.)[0, :, 0, 0], dim=0)
print('probs', probs.shape, 'sum %.4f' % probs.sum().item(), 'argmax', probs.argmax().item())

# sample
sample = torch.Tensor(4, 1, 8, 8)
sample.fill_(0)
net.train(False)
with torch.no_grad():
    for i in range(8):
        for j in range(8):
            out = net(sample)
            probs = F.softmax(out[:, :, i, j], dim=-1).data
            sample[:, :, i, j] = torch.multinomial(probs, 1).float() / 255.
print('sample', sample.shape, sample.dtype, 'in [0, 1]:',
      bool(((sample >= 0) & (sample <= 1)).all()))
print('sample levels', (sample * 255).round().byte().unique().numel() <= 256)
torch.manual_seed(5)
draws = torch.multinomial(torch.tensor([[0.1, 0.0, 0.9], [0.5, 0.5, 0.0]]), 4, replacement=True)
print('multinomial', draws.shape, draws.dtype, bool((draws[0] != 1).all()), bool((draws[1] != 2).all()))
try:
    torch.multinomial(torch.tensor([0.2, 0.8]), 3)
except RuntimeError as e:
    print('RuntimeError:', e)
