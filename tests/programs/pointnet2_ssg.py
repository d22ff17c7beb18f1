"""PointNet++ (SSG) set abstraction, scaled down, as yanx27/Pointnet_Pointnet2_pytorch's
pointnet2_utils.py writes it: square_distance by matmul and permute, index_points with
advanced indexing points[batch_indices, idx, :], farthest_point_sample (a loop of
torch.randint, torch.min, torch.max(dim=-1)[1]), query_ball_point (sqrdists > r**2 masked,
sort()[0][:, :, :nsample], repeat), sample_and_group, Conv2d 1x1 MLPs with BatchNorm2d,
torch.max(new_points, 2)[0], and a classifier trained on toy shapes with Adam and StepLR."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def pc_normalize(pc):
    centroid = np.mean(pc, axis=0)
    pc = pc - centroid
    m = np.max(np.sqrt(np.sum(pc**2, axis=1)))
    pc = pc / m
    return pc


def square_distance(src, dst):
    B, N, _ = src.shape
    _, M, _ = dst.shape
    dist = -2 * torch.matmul(src, dst.permute(0, 2, 1))
    dist += torch.sum(src ** 2, -1).view(B, N, 1)
    dist += torch.sum(dst ** 2, -1).view(B, 1, M)
    return dist


def index_points(points, idx):
    device = points.device
    B = points.shape[0]
    view_shape = list(idx.shape)
    view_shape[1:] = [1] * (len(view_shape) - 1)
    repeat_shape = list(idx.shape)
    repeat_shape[0] = 1
    batch_indices = torch.arange(B, dtype=torch.long).to(device).view(view_shape).repeat(
        repeat_shape)
    new_points = points[batch_indices, idx, :]
    return new_points


def farthest_point_sample(xyz, npoint):
    device = xyz.device
    B, N, C = xyz.shape
    centroids = torch.zeros(B, npoint, dtype=torch.long).to(device)
    distance = torch.ones(B, N).to(device) * 1e10
    farthest = torch.randint(0, N, (B,), dtype=torch.long).to(device)
    batch_indices = torch.arange(B, dtype=torch.long).to(device)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch_indices, farthest, :].view(B, 1, 3)
        dist = torch.sum((xyz - centroid) ** 2, -1)
        mask = dist < distance
        distance[mask] = dist[mask]
        farthest = torch.max(distance, -1)[1]
    return centroids


def query_ball_point(radius, nsample, xyz, new_xyz):
    device = xyz.device
    B, N, C = xyz.shape
    _, S, _ = new_xyz.shape
    group_idx = torch.arange(N, dtype=torch.long).to(device).view(1, 1, N).repeat([B, S, 1])
    sqrdists = square_distance(new_xyz, xyz)
    group_idx[sqrdists > radius ** 2] = N
    group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]
    group_first = group_idx[:, :, 0].view(B, S, 1).repeat([1, 1, nsample])
    mask = group_idx == N
    group_idx[mask] = group_first[mask]
    return group_idx


def sample_and_group(npoint, radius, nsample, xyz, points, returnfps=False):
    B, N, C = xyz.shape
    S = npoint
    fps_idx = farthest_point_sample(xyz, npoint)  # [B, npoint]
    new_xyz = index_points(xyz, fps_idx)
    idx = query_ball_point(radius, nsample, xyz, new_xyz)
    grouped_xyz = index_points(xyz, idx)  # [B, npoint, nsample, C]
    grouped_xyz_norm = grouped_xyz - new_xyz.view(B, S, 1, C)

    if points is not None:
        grouped_points = index_points(points, idx)
        new_points = torch.cat([grouped_xyz_norm, grouped_points], dim=-1)
    else:
        new_points = grouped_xyz_norm
    if returnfps:
        return new_xyz, new_points, grouped_xyz, fps_idx
    return new_xyz, new_points


def sample_and_group_all(xyz, points):
    device = xyz.device
    B, N, C = xyz.shape
    new_xyz = torch.zeros(B, 1, C).to(device)
    grouped_xyz = xyz.view(B, 1, N, C)
    if points is not None:
        new_points = torch.cat([grouped_xyz, points.view(B, 1, N, -1)], dim=-1)
    else:
        new_points = grouped_xyz
    return new_xyz, new_points


class PointNetSetAbstraction(nn.Module):
    def __init__(self, npoint, radius, nsample, in_channel, mlp, group_all):
        super().__init__()
        self.npoint = npoint
        self.radius = radius
        self.nsample = nsample
        self.mlp_convs = nn.ModuleList()
        self.mlp_bns = nn.ModuleList()
        last_channel = in_channel
        for out_channel in mlp:
            self.mlp_convs.append(nn.Conv2d(last_channel, out_channel, 1))
            self.mlp_bns.append(nn.BatchNorm2d(out_channel))
            last_channel = out_channel
        self.group_all = group_all

    def forward(self, xyz, points):
        xyz = xyz.permute(0, 2, 1)
        if points is not None:
            points = points.permute(0, 2, 1)

        if self.group_all:
            new_xyz, new_points = sample_and_group_all(xyz, points)
        else:
            new_xyz, new_points = sample_and_group(self.npoint, self.radius, self.nsample,
                                                   xyz, points)
        # new_points: sampled points position data, [B, npoint, nsample, C+D]
        new_points = new_points.permute(0, 3, 2, 1)  # [B, C+D, nsample,npoint]
        for i, conv in enumerate(self.mlp_convs):
            bn = self.mlp_bns[i]
            new_points = F.relu(bn(conv(new_points)))

        new_points = torch.max(new_points, 2)[0]
        new_xyz = new_xyz.permute(0, 2, 1)
        return new_xyz, new_points


class get_model(nn.Module):
    def __init__(self, num_class, normal_channel=False):
        super().__init__()
        in_channel = 6 if normal_channel else 3
        self.normal_channel = normal_channel
        self.sa1 = PointNetSetAbstraction(npoint=32, radius=0.4, nsample=8,
                                          in_channel=in_channel, mlp=[16, 16, 32],
                                          group_all=False)
        self.sa2 = PointNetSetAbstraction(npoint=8, radius=0.8, nsample=8,
                                          in_channel=32 + 3, mlp=[32, 32, 64], group_all=False)
        self.sa3 = PointNetSetAbstraction(npoint=None, radius=None, nsample=None,
                                          in_channel=64 + 3, mlp=[64, 128], group_all=True)
        self.fc1 = nn.Linear(128, 64)
        self.bn1 = nn.BatchNorm1d(64)
        self.drop1 = nn.Dropout(0.4)
        self.fc3 = nn.Linear(64, num_class)

    def forward(self, xyz):
        B, _, _ = xyz.shape
        if self.normal_channel:
            norm = xyz[:, 3:, :]
            xyz = xyz[:, :3, :]
        else:
            norm = None
        l1_xyz, l1_points = self.sa1(xyz, norm)
        l2_xyz, l2_points = self.sa2(l1_xyz, l1_points)
        l3_xyz, l3_points = self.sa3(l2_xyz, l2_points)
        x = l3_points.view(B, 128)
        x = self.drop1(F.relu(self.bn1(self.fc1(x))))
        x = self.fc3(x)
        x = F.log_softmax(x, -1)
        return x, l3_points


def make_shapes(n, num_points, rng):
    """Spheres, cubes and cylinders' surfaces: the class is the shape."""
    labels = rng.integers(0, 3, size=n)
    clouds = []
    for label in labels:
        p = rng.standard_normal((num_points, 3))
        if label == 0:
            p /= np.linalg.norm(p, axis=1, keepdims=True)
        elif label == 1:
            p /= np.abs(p).max(axis=1, keepdims=True)
        else:
            p[:, :2] /= np.linalg.norm(p[:, :2], axis=1, keepdims=True)
            p[:, 2] = rng.uniform(-1.5, 1.5, num_points)
        clouds.append(pc_normalize(p))
    return np.stack(clouds).astype(np.float32), labels


def main():
    torch.manual_seed(2024)
    rng = np.random.default_rng(7)
    points, labels = make_shapes(24, 64, rng)
    print("points", points.shape, points.dtype, "labels", labels[:8].tolist())
    xyz = torch.from_numpy(points)
    target = torch.from_numpy(labels).long()

    d = square_distance(xyz[:2, :4], xyz[:2, :4])
    print("square_distance", d.shape, torch.allclose(d, torch.cdist(xyz[:2, :4],
                                                                    xyz[:2, :4]) ** 2,
                                                      atol=1e-5))
    fps = farthest_point_sample(xyz[:2], 6)
    print("fps", fps.shape, fps.dtype)
    new_xyz = index_points(xyz[:2], fps)
    print("index_points", new_xyz.shape, new_xyz.is_contiguous())
    idx = query_ball_point(0.5, 8, xyz[:2], new_xyz)
    print("ball query", idx.shape, idx.dtype, bool((idx < 64).all()))
    grouped = index_points(xyz[:2], idx)
    print("grouped", grouped.shape, grouped.stride())
    _, grouped_all = sample_and_group_all(xyz[:2], xyz[:2])
    print("group_all", grouped_all.shape)
    m, am = torch.max(grouped, 2)
    print("max over samples", m.shape, am.shape, am.dtype)
    print("argmax", torch.argmax(torch.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]), dim=1))
    g = torch.gather(torch.arange(12.).view(3, 4), 1, torch.tensor([[3, 0], [1, 1], [0, 2]]))
    print("gather", g)
    s, si = torch.tensor([[0.3, 0.1, 0.3, 0.2]]).sort(dim=-1)
    print("sort", s, si)

    classifier = get_model(3)
    print(classifier)
    optimizer = torch.optim.Adam(classifier.parameters(), lr=0.003, betas=(0.9, 0.999),
                                 eps=1e-08, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.7)
    for epoch in range(8):
        classifier = classifier.train()
        mean_correct = []
        losses = []
        for start in range(0, 24, 8):
            pts = xyz[start:start + 8].transpose(2, 1)
            tgt = target[start:start + 8]
            optimizer.zero_grad()
            pred, trans_feat = classifier(pts)
            loss = F.nll_loss(pred, tgt.long())
            pred_choice = pred.data.max(1)[1]
            correct = pred_choice.eq(tgt.long().data).cpu().sum()
            mean_correct.append(correct.item() / float(pts.size()[0]))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if epoch == 0 and start == 0:
                print(f"first batch loss {loss.item():.6f}")
        scheduler.step()
        print(f"Epoch {epoch + 1} lr {scheduler.get_last_lr()[0]:.6f} "
              f"loss {np.mean(losses):.4f} train acc {np.mean(mean_correct):.4f}")

    with torch.no_grad():
        classifier = classifier.eval()
        pred, feat = classifier(xyz.transpose(2, 1))
    print("eval", pred.shape, feat.shape, pred.exp().sum(1).allclose(torch.ones(24)))


if __name__ == '__main__':
    main()
