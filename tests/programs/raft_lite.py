"""RAFT-lite optical flow (in the style of princeton-vl/RAFT's core/): a small feature and
context encoder, the all-pairs correlation volume by a matmul of feature maps divided by
sqrt(dim), its avg_pool2d pyramid, lookups by F.grid_sample(align_corners=True) around
coords built with torch.meshgrid(indexing="ij"), a ConvGRU update block, convex
upsampling with unfold and softmax, the sequence loss with gamma weights, and the
end-point error (EPE) with its 1px/3px/5px metrics, trained a few steps on synthetic
translations of random textures."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def bilinear_sampler(img, coords, mode="bilinear", mask=False):
    """ Wrapper for grid_sample, uses pixel coordinates """
    H, W = img.shape[-2:]
    xgrid, ygrid = coords.split([1, 1], dim=-1)
    xgrid = 2 * xgrid / (W - 1) - 1
    ygrid = 2 * ygrid / (H - 1) - 1
    grid = torch.cat([xgrid, ygrid], dim=-1)
    img = F.grid_sample(img, grid, align_corners=True)
    if mask:
        mask = (xgrid > -1) & (ygrid > -1) & (xgrid < 1) & (ygrid < 1)
        return img, mask.float()
    return img


def coords_grid(batch, ht, wd, device):
    coords = torch.meshgrid(torch.arange(ht, device=device), torch.arange(wd, device=device),
                            indexing="ij")
    coords = torch.stack(coords[::-1], dim=0).float()
    return coords[None].repeat(batch, 1, 1, 1)


def upflow8(flow, mode="bilinear"):
    new_size = (8 * flow.shape[2], 8 * flow.shape[3])
    return 8 * F.interpolate(flow, size=new_size, mode=mode, align_corners=True)


class CorrBlock:
    def __init__(self, fmap1, fmap2, num_levels=2, radius=2):
        self.num_levels = num_levels
        self.radius = radius
        self.corr_pyramid = []
        corr = CorrBlock.corr(fmap1, fmap2)
        batch, h1, w1, dim, h2, w2 = corr.shape
        corr = corr.reshape(batch * h1 * w1, dim, h2, w2)
        self.corr_pyramid.append(corr)
        for i in range(self.num_levels - 1):
            corr = F.avg_pool2d(corr, 2, stride=2)
            self.corr_pyramid.append(corr)

    def __call__(self, coords):
        r = self.radius
        coords = coords.permute(0, 2, 3, 1)
        batch, h1, w1, _ = coords.shape
        out_pyramid = []
        for i in range(self.num_levels):
            corr = self.corr_pyramid[i]
            dx = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
            dy = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
            delta = torch.stack(torch.meshgrid(dy, dx, indexing="ij"), axis=-1)
            centroid_lvl = coords.reshape(batch * h1 * w1, 1, 1, 2) / 2 ** i
            delta_lvl = delta.view(1, 2 * r + 1, 2 * r + 1, 2)
            coords_lvl = centroid_lvl + delta_lvl
            corr = bilinear_sampler(corr, coords_lvl)
            corr = corr.view(batch, h1, w1, -1)
            out_pyramid.append(corr)
        out = torch.cat(out_pyramid, dim=-1)
        return out.permute(0, 3, 1, 2).contiguous().float()

    @staticmethod
    def corr(fmap1, fmap2):
        batch, dim, ht, wd = fmap1.shape
        fmap1 = fmap1.view(batch, dim, ht * wd)
        fmap2 = fmap2.view(batch, dim, ht * wd)
        corr = torch.matmul(fmap1.transpose(1, 2), fmap2)
        corr = corr.view(batch, ht, wd, 1, ht, wd)
        return corr / torch.sqrt(torch.tensor(dim).float())


class ResidualBlock(nn.Module):
    def __init__(self, in_planes, planes, norm_fn="instance", stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, padding=1, stride=stride)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, padding=1)
        self.relu = nn.ReLU(inplace=True)
        if norm_fn == "instance":
            self.norm1 = nn.InstanceNorm2d(planes)
            self.norm2 = nn.InstanceNorm2d(planes)
            self.norm3 = nn.InstanceNorm2d(planes) if stride != 1 else None
        else:
            self.norm1, self.norm2 = nn.BatchNorm2d(planes), nn.BatchNorm2d(planes)
            self.norm3 = nn.BatchNorm2d(planes) if stride != 1 else None
        if stride == 1:
            self.downsample = None
        else:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride), self.norm3)

    def forward(self, x):
        y = x
        y = self.relu(self.norm1(self.conv1(y)))
        y = self.relu(self.norm2(self.conv2(y)))
        if self.downsample is not None:
            x = self.downsample(x)
        return self.relu(x + y)


class BasicEncoder(nn.Module):
    def __init__(self, output_dim=32, norm_fn="instance"):
        super().__init__()
        self.norm_fn = norm_fn
        self.conv1 = nn.Conv2d(3, 16, kernel_size=7, stride=2, padding=3)
        self.norm1 = nn.InstanceNorm2d(16) if norm_fn == "instance" else nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU(inplace=True)
        self.layer1 = ResidualBlock(16, 16, norm_fn, stride=1)
        self.layer2 = ResidualBlock(16, 24, norm_fn, stride=2)
        self.layer3 = ResidualBlock(24, 32, norm_fn, stride=2)
        self.conv2 = nn.Conv2d(32, output_dim, kernel_size=1)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.InstanceNorm2d, nn.GroupNorm)):
                if m.weight is not None:
                    nn.init.constant_(m.weight, 1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        is_list = isinstance(x, (tuple, list))
        if is_list:
            batch_dim = x[0].shape[0]
            x = torch.cat(x, dim=0)
        x = self.relu1(self.norm1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        x = self.conv2(x)
        if is_list:
            x = torch.split(x, [batch_dim, batch_dim], dim=0)
        return x


class ConvGRU(nn.Module):
    def __init__(self, hidden_dim=32, input_dim=48):
        super().__init__()
        self.convz = nn.Conv2d(hidden_dim + input_dim, hidden_dim, 3, padding=1)
        self.convr = nn.Conv2d(hidden_dim + input_dim, hidden_dim, 3, padding=1)
        self.convq = nn.Conv2d(hidden_dim + input_dim, hidden_dim, 3, padding=1)

    def forward(self, h, x):
        hx = torch.cat([h, x], dim=1)
        z = torch.sigmoid(self.convz(hx))
        r = torch.sigmoid(self.convr(hx))
        q = torch.tanh(self.convq(torch.cat([r * h, x], dim=1)))
        return (1 - z) * h + z * q


class BasicMotionEncoder(nn.Module):
    def __init__(self, cor_planes):
        super().__init__()
        self.convc1 = nn.Conv2d(cor_planes, 32, 1, padding=0)
        self.convf1 = nn.Conv2d(2, 16, 7, padding=3)
        self.convf2 = nn.Conv2d(16, 8, 3, padding=1)
        self.conv = nn.Conv2d(32 + 8, 32 - 2, 3, padding=1)

    def forward(self, flow, corr):
        cor = F.relu(self.convc1(corr))
        flo = F.relu(self.convf1(flow))
        flo = F.relu(self.convf2(flo))
        out = F.relu(self.conv(torch.cat([cor, flo], dim=1)))
        return torch.cat([out, flow], dim=1)


class BasicUpdateBlock(nn.Module):
    def __init__(self, cor_planes, hidden_dim=32, context_dim=16):
        super().__init__()
        self.encoder = BasicMotionEncoder(cor_planes)
        self.gru = ConvGRU(hidden_dim=hidden_dim, input_dim=32 + context_dim)
        self.flow_head = nn.Sequential(nn.Conv2d(hidden_dim, 32, 3, padding=1), nn.ReLU(inplace=True),
                                       nn.Conv2d(32, 2, 3, padding=1))
        self.mask = nn.Sequential(nn.Conv2d(hidden_dim, 32, 3, padding=1), nn.ReLU(inplace=True),
                                  nn.Conv2d(32, 64 * 9, 1, padding=0))

    def forward(self, net, inp, corr, flow):
        motion_features = self.encoder(flow, corr)
        inp = torch.cat([inp, motion_features], dim=1)
        net = self.gru(net, inp)
        delta_flow = self.flow_head(net)
        # scale mask to balence gradients
        mask = .25 * self.mask(net)
        return net, mask, delta_flow


class RAFT(nn.Module):
    def __init__(self, hidden_dim=32, context_dim=16, corr_levels=2, corr_radius=2):
        super().__init__()
        self.hidden_dim, self.context_dim = hidden_dim, context_dim
        self.corr_levels, self.corr_radius = corr_levels, corr_radius
        self.fnet = BasicEncoder(output_dim=32, norm_fn="instance")
        self.cnet = BasicEncoder(output_dim=hidden_dim + context_dim, norm_fn="batch")
        cor_planes = corr_levels * (2 * corr_radius + 1) ** 2
        self.update_block = BasicUpdateBlock(cor_planes, hidden_dim, context_dim)

    def initialize_flow(self, img):
        """ Flow is represented as difference between two coordinate grids flow = coords1 - coords0"""
        N, C, H, W = img.shape
        coords0 = coords_grid(N, H // 8, W // 8, device=img.device)
        coords1 = coords_grid(N, H // 8, W // 8, device=img.device)
        return coords0, coords1

    def upsample_flow(self, flow, mask):
        """ Upsample flow field [H/8, W/8, 2] -> [H, W, 2] using convex combination """
        N, _, H, W = flow.shape
        mask = mask.view(N, 1, 9, 8, 8, H, W)
        mask = torch.softmax(mask, dim=2)
        up_flow = F.unfold(8 * flow, [3, 3], padding=1)
        up_flow = up_flow.view(N, 2, 9, 1, 1, H, W)
        up_flow = torch.sum(mask * up_flow, dim=2)
        up_flow = up_flow.permute(0, 1, 4, 2, 5, 3)
        return up_flow.reshape(N, 2, 8 * H, 8 * W)

    def forward(self, image1, image2, iters=4, flow_init=None):
        image1 = 2 * (image1 / 255.0) - 1.0
        image2 = 2 * (image2 / 255.0) - 1.0
        image1 = image1.contiguous()
        image2 = image2.contiguous()
        fmap1, fmap2 = self.fnet([image1, image2])
        fmap1, fmap2 = fmap1.float(), fmap2.float()
        corr_fn = CorrBlock(fmap1, fmap2, num_levels=self.corr_levels, radius=self.corr_radius)
        cnet = self.cnet(image1)
        net, inp = torch.split(cnet, [self.hidden_dim, self.context_dim], dim=1)
        net = torch.tanh(net)
        inp = torch.relu(inp)
        coords0, coords1 = self.initialize_flow(image1)
        if flow_init is not None:
            coords1 = coords1 + flow_init
        flow_predictions = []
        for itr in range(iters):
            coords1 = coords1.detach()
            corr = corr_fn(coords1)  # index correlation volume
            flow = coords1 - coords0
            net, up_mask, delta_flow = self.update_block(net, inp, corr, flow)
            # F(t+1) = F(t) + \Delta(t)
            coords1 = coords1 + delta_flow
            flow_up = self.upsample_flow(coords1 - coords0, up_mask)
            flow_predictions.append(flow_up)
        return flow_predictions


MAX_FLOW = 400


def sequence_loss(flow_preds, flow_gt, valid, gamma=0.8, max_flow=MAX_FLOW):
    """ Loss function defined over sequence of flow predictions """
    n_predictions = len(flow_preds)
    flow_loss = 0.0
    # exlude invalid pixels and extremely large diplacements
    mag = torch.sum(flow_gt ** 2, dim=1).sqrt()
    valid = (valid >= 0.5) & (mag < max_flow)
    for i in range(n_predictions):
        i_weight = gamma ** (n_predictions - i - 1)
        i_loss = (flow_preds[i] - flow_gt).abs()
        flow_loss += i_weight * (valid[:, None] * i_loss).mean()
    epe = torch.sum((flow_preds[-1] - flow_gt) ** 2, dim=1).sqrt()
    epe = epe.view(-1)[valid.view(-1)]
    metrics = {
        "epe": epe.mean().item(),
        "1px": (epe < 1).float().mean().item(),
        "3px": (epe < 3).float().mean().item(),
        "5px": (epe < 5).float().mean().item(),
    }
    return flow_loss, metrics


def make_pair(batch, size=32, max_shift=2):
    """A smooth random texture and a copy shifted by an integer flow (u, v)."""
    base = F.avg_pool2d(torch.rand(batch, 3, size + 8, size + 8) * 255, 3, stride=1, padding=1)
    shifts = torch.randint(-max_shift, max_shift + 1, (batch, 2))
    img1 = base[:, :, 4:4 + size, 4:4 + size]
    img2 = torch.stack([torch.roll(base[b], shifts=(int(shifts[b, 1]), int(shifts[b, 0])), dims=(1, 2))
                        for b in range(batch)])[:, :, 4:4 + size, 4:4 + size]
    flow = shifts.float()[:, :, None, None].expand(batch, 2, size, size)
    return img1, img2, flow


def main():
    torch.manual_seed(1234)
    coords = coords_grid(1, 3, 4, device="cpu")
    print("coords grid", coords.shape, coords[0, 0].tolist(), coords[0, 1, :, 0].tolist())
    ii, jj = torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")
    xx, yy = torch.meshgrid(torch.arange(2), torch.arange(3), indexing="xy")
    print("meshgrid ij", ii.tolist(), "xy", xx.tolist())
    img = torch.arange(16.0).view(1, 1, 4, 4)
    pts = torch.tensor([[[[0.0, 0.0], [1.5, 0.5], [3.0, 3.0], [4.0, 1.0]]]])
    print("bilinear_sampler", bilinear_sampler(img, pts))
    print("grid_sample zeros/border", F.grid_sample(img, torch.tensor([[[[1.2, 0.0]]]]), align_corners=True),
          F.grid_sample(img, torch.tensor([[[[1.2, 0.0]]]]), padding_mode="border", align_corners=True),
          F.grid_sample(img, torch.tensor([[[[0.3, -0.2]]]]), mode="nearest", align_corners=False))

    f1, f2 = torch.randn(1, 8, 4, 4), torch.randn(1, 8, 4, 4)
    corr_fn = CorrBlock(f1, f2, num_levels=2, radius=1)
    print("corr pyramid", [tuple(c.shape) for c in corr_fn.corr_pyramid])
    looked = corr_fn(coords_grid(1, 4, 4, "cpu"))
    print("lookup", looked.shape, "center equals corr", torch.allclose(
        looked[0, 4], CorrBlock.corr(f1, f2).view(16, 16).diagonal().view(4, 4), atol=1e-5))

    model = RAFT()
    print(model.update_block)
    print("parameters", sum(p.numel() for p in model.parameters() if p.requires_grad))
    optimizer = torch.optim.AdamW(model.parameters(), lr=4e-4, weight_decay=1e-5, eps=1e-8)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, 4e-4, 8 + 100, pct_start=0.05,
                                                    cycle_momentum=False, anneal_strategy="linear")
    model.train()
    for step in range(8):
        img1, img2, flow = make_pair(2)
        valid = torch.ones(2, 32, 32)
        flow_predictions = model(img1, img2, iters=3)
        loss, metrics = sequence_loss(flow_predictions, flow, valid, gamma=0.8)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        print(f"step {step} loss {loss.item():.4f} epe {metrics['epe']:.4f} "
              f"1px {metrics['1px']:.3f} lr {scheduler.get_last_lr()[0]:.2e}")
    model.eval()
    with torch.no_grad():
        img1, img2, flow = make_pair(1)
        preds = model(img1, img2, iters=2)
        print("predictions", len(preds), tuple(preds[-1].shape))
        print("upflow8", upflow8(preds[-1][:, :, ::8, ::8]).shape)


if __name__ == "__main__":
    main()
