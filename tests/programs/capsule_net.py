"""Dynamic routing between capsules (Sabour et al.), after gram-ai/capsule-networks'
capsule_network.py, scaled down: a conv layer, primary capsules (one Conv2d per
capsule, squashed), digit capsules with routing-by-agreement (priors by a broadcast
matmul, checked against torch.einsum; softmax over the routes through the
transpose/view helper), the masked reconstruction decoder, the margin loss with
F.relu(..., inplace=True) ** 2 and the reconstruction term with the deprecated
nn.MSELoss(size_average=False). Synthetic NumPy "digits" with random-shift augmentation
replace MNIST, and a plain loop replaces torchnet's engine."""
import argparse

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd import Variable
from torch.optim import Adam
from torch.optim.lr_scheduler import ExponentialLR

BATCH_SIZE = 25
NUM_CLASSES = 5
NUM_EPOCHS = 3
NUM_ROUTING_ITERATIONS = 3
IMAGE = 16


def softmax(input, dim=1):
    transposed_input = input.transpose(dim, len(input.size()) - 1)
    softmaxed_output = F.softmax(transposed_input.contiguous().view(-1, transposed_input.size(-1)), dim=-1)
    return softmaxed_output.view(*transposed_input.size()).transpose(dim, len(input.size()) - 1)


def augmentation(x, max_shift=2):
    _, _, height, width = x.size()

    h_shift, w_shift = np.random.randint(-max_shift, max_shift + 1, size=2)
    source_height_slice = slice(max(0, h_shift), h_shift + height)
    source_width_slice = slice(max(0, w_shift), w_shift + width)
    target_height_slice = slice(max(0, -h_shift), -h_shift + height)
    target_width_slice = slice(max(0, -w_shift), -w_shift + width)

    shifted_image = torch.zeros(*x.size())
    shifted_image[:, :, source_height_slice, source_width_slice] = x[:, :, target_height_slice, target_width_slice]
    return shifted_image.float()


class CapsuleLayer(nn.Module):
    def __init__(self, num_capsules, num_route_nodes, in_channels, out_channels, kernel_size=None, stride=None,
                 num_iterations=NUM_ROUTING_ITERATIONS):
        super(CapsuleLayer, self).__init__()

        self.num_route_nodes = num_route_nodes
        self.num_iterations = num_iterations

        self.num_capsules = num_capsules

        if num_route_nodes != -1:
            self.route_weights = nn.Parameter(torch.randn(num_capsules, num_route_nodes, in_channels, out_channels))
        else:
            self.capsules = nn.ModuleList(
                [nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=0) for _ in
                 range(num_capsules)])

    def squash(self, tensor, dim=-1):
        squared_norm = (tensor ** 2).sum(dim=dim, keepdim=True)
        scale = squared_norm / (1 + squared_norm)
        return scale * tensor / torch.sqrt(squared_norm)

    def forward(self, x):
        if self.num_route_nodes != -1:
            priors = x[None, :, :, None, :] @ self.route_weights[:, None, :, :, :]
            if not self.training:
                # the same u_hat, as the einsum-based implementations write it
                u_hat = torch.einsum('bri,crio->cbro', x, self.route_weights)
                assert torch.allclose(u_hat, priors.squeeze(3), rtol=1e-4, atol=1e-5)

            logits = Variable(torch.zeros(*priors.size()))
            if torch.cuda.is_available():
                logits = logits.cuda()
            for i in range(self.num_iterations):
                probs = softmax(logits, dim=2)
                outputs = self.squash((probs * priors).sum(dim=2, keepdim=True))

                if i != self.num_iterations - 1:
                    delta_logits = (priors * outputs).sum(dim=-1, keepdim=True)
                    logits = logits + delta_logits
        else:
            outputs = [capsule(x).view(x.size(0), -1, 1) for capsule in self.capsules]
            outputs = torch.cat(outputs, dim=-1)
            outputs = self.squash(outputs)

        return outputs


class CapsuleNet(nn.Module):
    def __init__(self):
        super(CapsuleNet, self).__init__()

        self.conv1 = nn.Conv2d(in_channels=1, out_channels=32, kernel_size=5, stride=1)
        self.primary_capsules = CapsuleLayer(num_capsules=8, num_route_nodes=-1, in_channels=32, out_channels=8,
                                             kernel_size=5, stride=2)
        self.digit_capsules = CapsuleLayer(num_capsules=NUM_CLASSES, num_route_nodes=8 * 4 * 4, in_channels=8,
                                           out_channels=16)

        self.decoder = nn.Sequential(
            nn.Linear(16 * NUM_CLASSES, 128),
            nn.ReLU(inplace=True),
            nn.Linear(128, 256),
            nn.ReLU(inplace=True),
            nn.Linear(256, IMAGE * IMAGE),
            nn.Sigmoid()
        )

    def forward(self, x, y=None):
        x = F.relu(self.conv1(x), inplace=True)
        x = self.primary_capsules(x)
        x = self.digit_capsules(x).squeeze().transpose(0, 1)

        classes = (x ** 2).sum(dim=-1) ** 0.5
        classes = F.softmax(classes, dim=-1)

        if y is None:
            # In all batches, get the most active capsule.
            _, max_length_indices = classes.max(dim=1)
            y = Variable(torch.eye(NUM_CLASSES)).index_select(dim=0, index=max_length_indices.data)

        reconstructions = self.decoder((x * y[:, :, None]).reshape(x.size(0), -1))

        return classes, reconstructions


class CapsuleLoss(nn.Module):
    def __init__(self):
        super(CapsuleLoss, self).__init__()
        self.reconstruction_loss = nn.MSELoss(size_average=False)

    def forward(self, images, labels, classes, reconstructions):
        left = F.relu(0.9 - classes, inplace=True) ** 2
        right = F.relu(classes - 0.1, inplace=True) ** 2

        margin_loss = labels * left + 0.5 * (1. - labels) * right
        margin_loss = margin_loss.sum()

        assert torch.numel(images) == torch.numel(reconstructions)
        images = images.view(reconstructions.size()[0], -1)
        reconstruction_loss = self.reconstruction_loss(reconstructions, images)

        return (margin_loss + 0.0005 * reconstruction_loss) / images.size(0)


def get_dataset(n, seed):
    """Five fixed stroke patterns with intensity noise, in [0, 1] as ToTensor gives."""
    patterns = (np.random.RandomState(0).rand(NUM_CLASSES, IMAGE, IMAGE) > 0.75).astype(np.float32)
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, NUM_CLASSES, n)
    images = np.clip(patterns[labels] * rng.uniform(0.7, 1.0, (n, 1, 1)) + 0.2 * rng.rand(n, IMAGE, IMAGE), 0, 1)
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description='Capsule network')
    parser.add_argument('--epochs', type=int, default=NUM_EPOCHS)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    model = CapsuleNet()
    print("# parameters:", sum(param.numel() for param in model.parameters()))
    print(model.primary_capsules)

    optimizer = Adam(model.parameters(), lr=5e-3)
    scheduler = ExponentialLR(optimizer, gamma=0.9)
    capsule_loss = CapsuleLoss()

    train_data, train_labels = get_dataset(200, seed=1)
    test_data, test_labels = get_dataset(100, seed=2)

    def processor(sample):
        data, labels, training = sample

        data = augmentation(data.unsqueeze(1).float())
        labels = torch.LongTensor(labels)

        labels = torch.eye(NUM_CLASSES).index_select(dim=0, index=labels)

        data = Variable(data)
        labels = Variable(labels)

        if training:
            classes, reconstructions = model(data, labels)
        else:
            classes, reconstructions = model(data)

        loss = capsule_loss(data, labels, classes, reconstructions)

        return loss, classes

    for epoch in range(1, args.epochs + 1):
        model.train()
        meter_loss, correct = [], 0
        perm = torch.randperm(len(train_data))
        for i in range(0, len(train_data), BATCH_SIZE):
            idx = perm[i:i + BATCH_SIZE]
            optimizer.zero_grad()
            loss, classes = processor((train_data[idx], train_labels[idx], True))
            loss.backward()
            optimizer.step()
            meter_loss.append(loss.item())
            correct += (classes.argmax(1) == train_labels[idx]).sum().item()
            if i == 0 and epoch == 1:
                print('first batch loss: %.4f' % loss.item())
        scheduler.step()
        print('[Epoch %d] Training Loss: %.4f (Accuracy: %.2f%%) lr %.6f' % (
            epoch, np.mean(meter_loss), 100. * correct / len(train_data), scheduler.get_last_lr()[0]))

        model.eval()
        with torch.no_grad():
            loss, classes = processor((test_data, test_labels, False))
        accuracy = (classes.max(dim=1)[1] == test_labels).float().mean()
        print('[Epoch %d] Testing Loss: %.4f (Accuracy: %.2f%%)' % (epoch, loss.item(), 100. * accuracy))

    with torch.no_grad():
        _, reconstructions = model(test_data[:4].unsqueeze(1))
    print('reconstructions', reconstructions.view(-1, 1, IMAGE, IMAGE).shape,
          reconstructions.min().item() >= 0, reconstructions.max().item() <= 1)
