"""Capsule network with dynamic routing (Sabour et al. 2017; as the widely used
gram-ai/capsule-networks and higgsfield/Capsule-Network-Tutorial write it): PrimaryCaps
from a Conv2d reshaped to (batch, -1, 8), the squash non-linearity, DigitCaps with a
W parameter of shape (1, in_caps, out_caps, out_dim, in_dim) applied by torch.matmul
broadcasting over 5-D tensors, routing by agreement (F.softmax over the input capsules,
b_ij updated with torch.matmul of u_hat and v_j), the margin loss, masking by the longest
capsule (torch.eye(n).index_select), and a reconstruction decoder. Synthetic 16x16 images
of three shapes."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

USE_CUDA = torch.cuda.is_available()


def squash(input_tensor, dim=-1):
    squared_norm = (input_tensor ** 2).sum(dim, keepdim=True)
    output_tensor = squared_norm * input_tensor / ((1. + squared_norm) * torch.sqrt(squared_norm))
    return output_tensor


class ConvLayer(nn.Module):
    def __init__(self, in_channels=1, out_channels=32, kernel_size=5):
        super(ConvLayer, self).__init__()
        self.conv = nn.Conv2d(in_channels=in_channels, out_channels=out_channels,
                              kernel_size=kernel_size, stride=1)

    def forward(self, x):
        return F.relu(self.conv(x))


class PrimaryCaps(nn.Module):
    def __init__(self, num_capsules=8, in_channels=32, out_channels=8, kernel_size=5):
        super(PrimaryCaps, self).__init__()
        self.capsules = nn.ModuleList([
            nn.Conv2d(in_channels=in_channels, out_channels=out_channels,
                      kernel_size=kernel_size, stride=2, padding=0)
            for _ in range(num_capsules)])

    def forward(self, x):
        u = [capsule(x) for capsule in self.capsules]
        u = torch.stack(u, dim=1)
        u = u.view(x.size(0), -1, u.size(1))
        return squash(u)


class DigitCaps(nn.Module):
    def __init__(self, num_capsules=3, num_routes=8 * 4 * 4, in_channels=8, out_channels=8):
        super(DigitCaps, self).__init__()
        self.in_channels = in_channels
        self.num_routes = num_routes
        self.num_capsules = num_capsules
        self.W = nn.Parameter(torch.randn(1, num_routes, num_capsules, out_channels, in_channels) * 0.1)

    def forward(self, x):
        batch_size = x.size(0)
        x = torch.stack([x] * self.num_capsules, dim=2).unsqueeze(4)
        W = torch.cat([self.W] * batch_size, dim=0)
        u_hat = torch.matmul(W, x)
        b_ij = Variable(torch.zeros(1, self.num_routes, self.num_capsules, 1))
        if USE_CUDA:
            b_ij = b_ij.cuda()
        num_iterations = 3
        for iteration in range(num_iterations):
            c_ij = F.softmax(b_ij, dim=1)
            c_ij = torch.cat([c_ij] * batch_size, dim=0).unsqueeze(4)
            s_j = (c_ij * u_hat).sum(dim=1, keepdim=True)
            v_j = squash(s_j, dim=-2)
            if iteration < num_iterations - 1:
                a_ij = torch.matmul(u_hat.transpose(3, 4), torch.cat([v_j] * self.num_routes, dim=1))
                b_ij = b_ij + a_ij.squeeze(4).mean(dim=0, keepdim=True)
        return v_j.squeeze(1)


class Decoder(nn.Module):
    def __init__(self, num_classes=3, out_dim=8, image_size=16):
        super(Decoder, self).__init__()
        self.num_classes = num_classes
        self.image_size = image_size
        self.reconstraction_layers = nn.Sequential(
            nn.Linear(out_dim * num_classes, 64),
            nn.ReLU(inplace=True),
            nn.Linear(64, 128),
            nn.ReLU(inplace=True),
            nn.Linear(128, image_size * image_size),
            nn.Sigmoid()
        )

    def forward(self, x, data):
        classes = torch.sqrt((x ** 2).sum(2))
        classes = F.softmax(classes, dim=1)
        _, max_length_indices = classes.max(dim=1)
        masked = Variable(torch.eye(self.num_classes))
        if USE_CUDA:
            masked = masked.cuda()
        masked = masked.index_select(dim=0, index=Variable(max_length_indices.squeeze(1).data))
        reconstructions = self.reconstraction_layers((x * masked[:, :, None, None]).view(x.size(0), -1))
        reconstructions = reconstructions.view(-1, 1, self.image_size, self.image_size)
        return reconstructions, masked


class CapsNet(nn.Module):
    def __init__(self):
        super(CapsNet, self).__init__()
        self.conv_layer = ConvLayer(1, 32, 5)
        self.primary_capsules = PrimaryCaps(8, 32, 8, 5)
        self.digit_capsules = DigitCaps(3, 8 * 4 * 4, 8, 8)
        self.decoder = Decoder(3, 8, 16)
        self.mse_loss = nn.MSELoss()

    def forward(self, data):
        output = self.digit_capsules(self.primary_capsules(self.conv_layer(data)))
        reconstructions, masked = self.decoder(output, data)
        return output, reconstructions, masked

    def loss(self, data, x, target, reconstructions):
        return self.margin_loss(x, target) + self.reconstruction_loss(data, reconstructions)

    def margin_loss(self, x, labels, size_average=True):
        batch_size = x.size(0)
        v_c = torch.sqrt((x ** 2).sum(dim=2, keepdim=True))
        left = F.relu(0.9 - v_c).view(batch_size, -1)
        right = F.relu(v_c - 0.1).view(batch_size, -1)
        loss = labels * left + 0.5 * (1.0 - labels) * right
        loss = loss.sum(dim=1).mean()
        return loss

    def reconstruction_loss(self, data, reconstructions):
        loss = self.mse_loss(reconstructions.view(reconstructions.size(0), -1),
                             data.view(reconstructions.size(0), -1))
        return loss * 0.0005


def make_shapes(n, generator):
    """Class 0: a square outline, 1: a plus sign, 2: a diagonal; random offsets and noise."""
    images = torch.rand(n, 1, 16, 16, generator=generator) * 0.1
    labels = torch.randint(0, 3, (n,), generator=generator)
    offsets = torch.randint(0, 5, (n, 2), generator=generator)
    for i in range(n):
        r, c = offsets[i].tolist()
        patch = images[i, 0, r:r + 12, c:c + 12]
        if labels[i] == 0:
            patch[0, :] = patch[-1, :] = patch[:, 0] = patch[:, -1] = 1.0
        elif labels[i] == 1:
            patch[5:7, :] = 1.0
            patch[:, 5:7] = 1.0
        else:
            patch.diagonal().fill_(1.0)
    return images, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--n_epochs', type=int, default=3)
    parser.add_argument('--batch_size', type=int, default=16)
    args = parser.parse_args()

    torch.manual_seed(0)
    capsule_net = CapsNet()
    if USE_CUDA:
        capsule_net = capsule_net.cuda()
    print(capsule_net.primary_capsules)
    print('W', capsule_net.digit_capsules.W.shape)
    print('parameters', sum(p.numel() for p in capsule_net.parameters()))
    v = squash(torch.tensor([[3.0, 4.0], [0.3, 0.4]]))
    print('squash norms', v.norm(dim=-1))

    optimizer = torch.optim.Adam(capsule_net.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(0)
    train_x, train_y = make_shapes(96, g)
    test_x, test_y = make_shapes(48, g)
    train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_x, train_y),
                                               batch_size=args.batch_size, shuffle=True)

    for epoch in range(args.n_epochs):
        capsule_net.train()
        train_loss = 0
        for batch_id, (data, target) in enumerate(train_loader):
            target = torch.eye(3).index_select(dim=0, index=target)
            data, target = Variable(data), Variable(target)
            if USE_CUDA:
                data, target = data.cuda(), target.cuda()
            optimizer.zero_grad()
            output, reconstructions, masked = capsule_net(data)
            loss = capsule_net.loss(data, output, target, reconstructions)
            loss.backward()
            optimizer.step()
            train_loss += loss.item()
            if batch_id % 3 == 0:
                print("train accuracy:", sum(np.argmax(masked.data.cpu().numpy(), 1) ==
                                             np.argmax(target.data.cpu().numpy(), 1)) / float(args.batch_size))
        print(f"epoch {epoch} train loss {train_loss / len(train_loader):.5f}")

    capsule_net.eval()
    with torch.no_grad():
        output, reconstructions, masked = capsule_net(test_x)
        target = torch.eye(3).index_select(0, test_y)
        test_loss = capsule_net.loss(test_x, output, target, reconstructions)
    acc = (masked.argmax(1) == test_y).float().mean().item()
    print(f"test loss {test_loss.item():.5f} test accuracy {acc:.3f}")
    print('output', tuple(output.shape), 'reconstructions', tuple(reconstructions.shape))


import numpy as np  # noqa: E402  (the tutorial imports it late)

if __name__ == '__main__':
    main()
