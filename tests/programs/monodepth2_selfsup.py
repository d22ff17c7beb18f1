"""Self-supervised monocular depth in the style of nianticlabs/monodepth2 (layers.py,
trainer.py): a tiny depth encoder-decoder with ReflectionPad2d convs and sigmoid disparity,
a PoseNet giving axis-angle + translation, BackprojectDepth/Project3D camera geometry
(torch.inverse of K, 4x4 torch.matmul, meshgrid(indexing="ij")), F.grid_sample warping with
padding_mode="border", the SSIM loss built on nn.AvgPool2d(3, 1), edge-aware disparity
smoothness, per-pixel minimum reprojection with torch.min(dim=1) and automasking."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def disp_to_depth(disp, min_depth, max_depth):
    min_disp = 1 / max_depth
    max_disp = 1 / min_depth
    scaled_disp = min_disp + (max_disp - min_disp) * disp
    depth = 1 / scaled_disp
    return scaled_disp, depth


def rot_from_axisangle(vec):
    angle = torch.norm(vec, 2, 2, True)
    axis = vec / (angle + 1e-7)
    ca = torch.cos(angle)
    sa = torch.sin(angle)
    C = 1 - ca
    x = axis[..., 0].unsqueeze(1)
    y = axis[..., 1].unsqueeze(1)
    z = axis[..., 2].unsqueeze(1)
    xs, ys, zs = x * sa, y * sa, z * sa
    xC, yC, zC = x * C, y * C, z * C
    xyC, yzC, zxC = x * yC, y * zC, z * xC
    rot = torch.zeros((vec.shape[0], 4, 4)).to(device=vec.device)
    rot[:, 0, 0] = torch.squeeze(x * xC + ca)
    rot[:, 0, 1] = torch.squeeze(xyC - zs)
    rot[:, 0, 2] = torch.squeeze(zxC + ys)
    rot[:, 1, 0] = torch.squeeze(xyC + zs)
    rot[:, 1, 1] = torch.squeeze(y * yC + ca)
    rot[:, 1, 2] = torch.squeeze(yzC - xs)
    rot[:, 2, 0] = torch.squeeze(zxC - ys)
    rot[:, 2, 1] = torch.squeeze(yzC + xs)
    rot[:, 2, 2] = torch.squeeze(z * zC + ca)
    rot[:, 3, 3] = 1
    return rot


def get_translation_matrix(translation_vector):
    T = torch.zeros(translation_vector.shape[0], 4, 4).to(device=translation_vector.device)
    t = translation_vector.contiguous().view(-1, 3, 1)
    T[:, 0, 0] = 1
    T[:, 1, 1] = 1
    T[:, 2, 2] = 1
    T[:, 3, 3] = 1
    T[:, :3, 3, None] = t
    return T


def transformation_from_parameters(axisangle, translation, invert=False):
    R = rot_from_axisangle(axisangle)
    t = translation.clone()
    if invert:
        R = R.transpose(1, 2)
        t *= -1
    T = get_translation_matrix(t)
    if invert:
        M = torch.matmul(R, T)
    else:
        M = torch.matmul(T, R)
    return M


class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = Conv3x3(in_channels, out_channels)
        self.nonlin = nn.ELU(inplace=True)

    def forward(self, x):
        return self.nonlin(self.conv(x))


class Conv3x3(nn.Module):
    def __init__(self, in_channels, out_channels, use_refl=True):
        super().__init__()
        self.pad = nn.ReflectionPad2d(1) if use_refl else nn.ZeroPad2d(1)
        self.conv = nn.Conv2d(int(in_channels), int(out_channels), 3)

    def forward(self, x):
        return self.conv(self.pad(x))


class BackprojectDepth(nn.Module):
    def __init__(self, batch_size, height, width):
        super().__init__()
        self.batch_size = batch_size
        self.height = height
        self.width = width
        meshgrid = np.meshgrid(range(self.width), range(self.height), indexing="xy")
        self.id_coords = np.stack(meshgrid, axis=0).astype(np.float32)
        self.id_coords = nn.Parameter(torch.from_numpy(self.id_coords), requires_grad=False)
        self.ones = nn.Parameter(torch.ones(self.batch_size, 1, self.height * self.width),
                                 requires_grad=False)
        self.pix_coords = torch.unsqueeze(torch.stack(
            [self.id_coords[0].view(-1), self.id_coords[1].view(-1)], 0), 0)
        self.pix_coords = self.pix_coords.repeat(batch_size, 1, 1)
        self.pix_coords = nn.Parameter(torch.cat([self.pix_coords, self.ones], 1),
                                       requires_grad=False)

    def forward(self, depth, inv_K):
        cam_points = torch.matmul(inv_K[:, :3, :3], self.pix_coords)
        cam_points = depth.view(self.batch_size, 1, -1) * cam_points
        cam_points = torch.cat([cam_points, self.ones], 1)
        return cam_points


class Project3D(nn.Module):
    def __init__(self, batch_size, height, width, eps=1e-7):
        super().__init__()
        self.batch_size = batch_size
        self.height = height
        self.width = width
        self.eps = eps

    def forward(self, points, K, T):
        P = torch.matmul(K, T)[:, :3, :]
        cam_points = torch.matmul(P, points)
        pix_coords = cam_points[:, :2, :] / (cam_points[:, 2, :].unsqueeze(1) + self.eps)
        pix_coords = pix_coords.view(self.batch_size, 2, self.height, self.width)
        pix_coords = pix_coords.permute(0, 2, 3, 1)
        pix_coords[..., 0] /= self.width - 1
        pix_coords[..., 1] /= self.height - 1
        pix_coords = (pix_coords - 0.5) * 2
        return pix_coords


def upsample(x):
    return F.interpolate(x, scale_factor=2, mode="nearest")


def get_smooth_loss(disp, img):
    grad_disp_x = torch.abs(disp[:, :, :, :-1] - disp[:, :, :, 1:])
    grad_disp_y = torch.abs(disp[:, :, :-1, :] - disp[:, :, 1:, :])
    grad_img_x = torch.mean(torch.abs(img[:, :, :, :-1] - img[:, :, :, 1:]), 1, keepdim=True)
    grad_img_y = torch.mean(torch.abs(img[:, :, :-1, :] - img[:, :, 1:, :]), 1, keepdim=True)
    grad_disp_x *= torch.exp(-grad_img_x)
    grad_disp_y *= torch.exp(-grad_img_y)
    return grad_disp_x.mean() + grad_disp_y.mean()


class SSIM(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu_x_pool = nn.AvgPool2d(3, 1)
        self.mu_y_pool = nn.AvgPool2d(3, 1)
        self.sig_x_pool = nn.AvgPool2d(3, 1)
        self.sig_y_pool = nn.AvgPool2d(3, 1)
        self.sig_xy_pool = nn.AvgPool2d(3, 1)
        self.refl = nn.ReflectionPad2d(1)
        self.C1 = 0.01 ** 2
        self.C2 = 0.03 ** 2

    def forward(self, x, y):
        x = self.refl(x)
        y = self.refl(y)
        mu_x = self.mu_x_pool(x)
        mu_y = self.mu_y_pool(y)
        sigma_x = self.sig_x_pool(x ** 2) - mu_x ** 2
        sigma_y = self.sig_y_pool(y ** 2) - mu_y ** 2
        sigma_xy = self.sig_xy_pool(x * y) - mu_x * mu_y
        SSIM_n = (2 * mu_x * mu_y + self.C1) * (2 * sigma_xy + self.C2)
        SSIM_d = (mu_x ** 2 + mu_y ** 2 + self.C1) * (sigma_x + sigma_y + self.C2)
        return torch.clamp((1 - SSIM_n / SSIM_d) / 2, 0, 1)


class DepthNet(nn.Module):
    def __init__(self, num_ch_enc=(8, 16, 32), scales=range(2)):
        super().__init__()
        self.scales = scales
        chs = (3,) + tuple(num_ch_enc)
        self.encoder = nn.ModuleList(
            [nn.Sequential(nn.Conv2d(chs[i], chs[i + 1], 3, stride=2, padding=1),
                           nn.BatchNorm2d(chs[i + 1]), nn.ReLU(inplace=True))
             for i in range(len(num_ch_enc))])
        self.num_ch_dec = (4, 8, 16)
        self.convs = nn.ModuleDict()
        for i in range(2, -1, -1):
            num_ch_in = num_ch_enc[-1] if i == 2 else self.num_ch_dec[i + 1]
            self.convs[f"upconv_{i}_0"] = ConvBlock(num_ch_in, self.num_ch_dec[i])
            num_ch_in = self.num_ch_dec[i] + (num_ch_enc[i - 1] if i > 0 else 0)
            self.convs[f"upconv_{i}_1"] = ConvBlock(num_ch_in, self.num_ch_dec[i])
        for s in self.scales:
            self.convs[f"dispconv_{s}"] = Conv3x3(self.num_ch_dec[s], 1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        features = []
        for layer in self.encoder:
            x = layer(x)
            features.append(x)
        outputs = {}
        x = features[-1]
        for i in range(2, -1, -1):
            x = self.convs[f"upconv_{i}_0"](x)
            x = [upsample(x)]
            if i > 0:
                x += [features[i - 1]]
            x = torch.cat(x, 1)
            x = self.convs[f"upconv_{i}_1"](x)
            if i in self.scales:
                outputs[("disp", i)] = self.sigmoid(self.convs[f"dispconv_{i}"](x))
        return outputs


class PoseNet(nn.Module):
    def __init__(self, num_frames_to_predict_for=1):
        super().__init__()
        self.num_frames_to_predict_for = num_frames_to_predict_for
        self.net = nn.Sequential(nn.Conv2d(6, 8, 3, 2, 1), nn.ReLU(True),
                                 nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU(True),
                                 nn.Conv2d(16, 6 * num_frames_to_predict_for, 1))

    def forward(self, x):
        out = self.net(x)
        out = out.mean(3).mean(2)
        out = 0.01 * out.view(-1, self.num_frames_to_predict_for, 1, 6)
        axisangle = out[..., :3]
        translation = out[..., 3:]
        return axisangle, translation


B, H, W = 2, 16, 24
K = np.array([[0.58, 0, 0.5, 0], [0, 1.92, 0.5, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
             dtype=np.float32)
K[0, :] *= W
K[1, :] *= H
K = torch.from_numpy(K).unsqueeze(0).repeat(B, 1, 1)
inv_K = torch.inverse(K)
print("K", K[0])
print("inv_K", inv_K[0])
print("K @ inv_K", torch.allclose(torch.matmul(K, inv_K), torch.eye(4).expand(B, 4, 4),
                                  atol=1e-5))

# a textured scene: the target frame and two neighbours shifted by a pixel
base = torch.rand(B, 3, H, W + 4)
frames = {0: base[..., 2:W + 2], -1: base[..., 1:W + 1], 1: base[..., 3:W + 3]}

backproject = BackprojectDepth(B, H, W)
project = Project3D(B, H, W)
print("pix_coords", tuple(backproject.pix_coords.shape), backproject.pix_coords[0, :, :3])
ys, xs = torch.meshgrid(torch.arange(H, dtype=torch.float32),
                        torch.arange(W, dtype=torch.float32), indexing="ij")
print("meshgrid ij agrees", torch.equal(xs.reshape(-1), backproject.pix_coords[0, 0]),
      torch.equal(ys.reshape(-1), backproject.pix_coords[0, 1]))

# identity pose: warping reproduces the frame
depth = torch.full((B, 1, H, W), 5.0)
T = transformation_from_parameters(torch.zeros(B, 1, 3), torch.zeros(B, 1, 3))
print("identity pose", torch.equal(T, torch.eye(4).expand(B, 4, 4)))
pix = project(backproject(depth, inv_K), K, T)
warped = F.grid_sample(frames[0], pix, padding_mode="border", align_corners=False)
print(f"identity warp mean error {(warped - frames[0]).abs().mean().item():.6f}")
print("pix range", pix.min().item(), pix.max().item())

axisangle = torch.tensor([[[0.01, -0.02, 0.005]], [[0.0, 0.03, 0.0]]]).unsqueeze(1)
translation = torch.tensor([[[0.1, 0.0, 0.05]], [[-0.1, 0.02, 0.0]]]).unsqueeze(1)
M = transformation_from_parameters(axisangle[:, 0], translation[:, 0])
Minv = transformation_from_parameters(axisangle[:, 0], translation[:, 0], invert=True)
print("pose", M[0])
print("pose @ inverse pose", torch.allclose(torch.matmul(M, Minv), torch.eye(4), atol=1e-6))
print("rotation det", torch.det(M[:, :3, :3]))

ssim = SSIM()
print(ssim)
print("ssim self", ssim(frames[0], frames[0]).mean().item())
print("ssim shifted", ssim(frames[0], frames[1]).mean().item())


def compute_reprojection_loss(pred, target):
    abs_diff = torch.abs(target - pred)
    l1_loss = abs_diff.mean(1, True)
    ssim_loss = ssim(pred, target).mean(1, True)
    return 0.85 * ssim_loss + 0.15 * l1_loss


depth_net = DepthNet()
pose_net = PoseNet()
print(depth_net.convs)
params = list(depth_net.parameters()) + list(pose_net.parameters())
optimizer = torch.optim.Adam(params, 1e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 3, 0.1)
for step in range(6):
    outputs = depth_net(frames[0])
    losses = []
    for scale in depth_net.scales:
        disp = outputs[("disp", scale)]
        disp = F.interpolate(disp, [H, W], mode="bilinear", align_corners=False)
        _, depth = disp_to_depth(disp, 0.1, 100.0)
        reprojection_losses, identity_losses = [], []
        for frame_id in (-1, 1):
            pair = [frames[frame_id], frames[0]] if frame_id < 0 else [frames[0], frames[frame_id]]
            aa, tr = pose_net(torch.cat(pair, 1))
            T = transformation_from_parameters(aa[:, 0], tr[:, 0], invert=frame_id < 0)
            pix = project(backproject(depth, inv_K), K, T)
            pred = F.grid_sample(frames[frame_id], pix, padding_mode="border",
                                 align_corners=False)
            reprojection_losses.append(compute_reprojection_loss(pred, frames[0]))
            identity_losses.append(compute_reprojection_loss(frames[frame_id], frames[0]))
        reprojection_losses = torch.cat(reprojection_losses, 1)
        identity_reprojection_loss = torch.cat(identity_losses, 1)
        identity_reprojection_loss += torch.randn(identity_reprojection_loss.shape) * 0.00001
        combined = torch.cat((identity_reprojection_loss, reprojection_losses), dim=1)
        to_optimise, idxs = torch.min(combined, dim=1)
        automask = (idxs > identity_reprojection_loss.shape[1] - 1).float()
        loss = to_optimise.mean()
        norm_disp = outputs[("disp", scale)]
        mean_disp = norm_disp.mean(2, True).mean(3, True)
        norm_disp = norm_disp / (mean_disp + 1e-7)
        color = F.interpolate(frames[0], norm_disp.shape[2:], mode="bilinear",
                              align_corners=False)
        smooth_loss = get_smooth_loss(norm_disp, color)
        loss += 1e-3 * smooth_loss / (2 ** scale)
        losses.append(loss)
    total = sum(losses) / len(losses)
    optimizer.zero_grad()
    total.backward()
    optimizer.step()
    scheduler.step()
    print(f"depth step {step} loss {total.item():.5f} automask {automask.mean().item():.3f} "
          f"idxs {idxs.dtype} {tuple(idxs.shape)}")

with torch.no_grad():
    disp = depth_net(frames[0])[("disp", 0)]
    scaled, depth = disp_to_depth(disp, 0.1, 100.0)
    print("disp", tuple(disp.shape), "depth range", depth.min().item() > 0.1,
          depth.max().item() < 100.0)
    print("median scaling", tuple(torch.median(depth.view(B, -1), dim=1).values.shape))


def compute_depth_errors(gt, pred):
    thresh = torch.max((gt / pred), (pred / gt))
    a1 = (thresh < 1.25).float().mean()
    a2 = (thresh < 1.25 ** 2).float().mean()
    a3 = (thresh < 1.25 ** 3).float().mean()
    rmse = (gt - pred) ** 2
    rmse = torch.sqrt(rmse.mean())
    rmse_log = (torch.log(gt) - torch.log(pred)) ** 2
    rmse_log = torch.sqrt(rmse_log.mean())
    abs_rel = torch.mean(torch.abs(gt - pred) / gt)
    sq_rel = torch.mean((gt - pred) ** 2 / gt)
    return abs_rel, sq_rel, rmse, rmse_log, a1, a2, a3


# evaluation as in monodepth2's trainer.compute_depth_losses: crop mask, median scaling
depth_gt = 2.0 + 8.0 * torch.rand(B, 1, H, W)
depth_gt[:, :, :2] = 0
depth_pred = torch.clamp(F.interpolate(depth, [H, W], mode="bilinear", align_corners=False),
                         1e-3, 80)
mask = depth_gt > 0
crop_mask = torch.zeros_like(mask)
crop_mask[:, :, 4:14, 2:22] = 1
mask = mask * crop_mask
print("mask", mask.dtype, mask.sum().item())
gt, pred = depth_gt[mask], depth_pred[mask]
pred *= torch.median(gt) / torch.median(pred)
pred = torch.clamp(pred, min=1e-3, max=80)
names = ["abs_rel", "sq_rel", "rms", "log_rms", "a1", "a2", "a3"]
print("depth metrics", " ".join(f"{n} {v.item():.4f}" for n, v in
                                zip(names, compute_depth_errors(gt, pred.detach()))))

# other warping modes used by monodepth-style code
theta = torch.tensor([[[0.9, -0.1, 0.05], [0.1, 0.9, -0.02]]]).repeat(B, 1, 1)
grid = F.affine_grid(theta, frames[0].shape, align_corners=False)
print("affine grid", tuple(grid.shape), grid[0, 0, :2])
for mode, padding in (("bilinear", "zeros"), ("nearest", "border"), ("bilinear", "reflection"),
                      ("bicubic", "border")):
    out = F.grid_sample(frames[0], grid, mode=mode, padding_mode=padding, align_corners=False)
    print(f"grid_sample {mode} {padding} {out.mean().item():.5f}")
padded = F.pad(frames[0], (2, 2, 1, 1), mode="reflect")
print("reflect pad", tuple(padded.shape),
      torch.equal(padded, nn.ReflectionPad2d((2, 2, 1, 1))(frames[0])))
print("replicate pad", F.pad(frames[0][:1, :1, :2, :3], (1, 1, 0, 0), mode="replicate"))
print("bicubic up", F.interpolate(frames[0][:1, :1, :3, :3], scale_factor=2, mode="bicubic",
                                  align_corners=False)[0, 0, 0])
print("antialias down", F.interpolate(frames[0][:1, :1], size=(8, 12), mode="bilinear",
                                      antialias=True, align_corners=False)[0, 0, 0, :4])
