"""pytorch/examples siamese_network (a shared CNN tower, pairs of images, BCELoss on a
sigmoid head), plus the metric-learning variant with nn.TripletMarginLoss and a
contrastive loss written in torch ops. Synthetic MNIST-like digits (NumPy-seeded)."""
from __future__ import print_function

import argparse
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import Dataset


class SiameseNetwork(nn.Module):
    """Siamese network for image similarity estimation: two images through the same
    tower, the features concatenated and classified as same / different."""

    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, stride=2, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(8, 16, kernel_size=3, stride=2, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((2, 2)),
        )
        self.fc_in_features = 16 * 2 * 2

        # add linear layers to compare between the features of the two images
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 32),
            nn.ReLU(inplace=True),
            nn.Linear(32, 1),
        )

        self.sigmoid = nn.Sigmoid()

        # initialize the weights
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.features(x)
        output = output.view(output.size()[0], -1)
        return output

    def forward(self, input1, input2):
        # get two images' features
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)

        # concatenate both images' features
        output = torch.cat((output1, output2), 1)

        # pass the concatenation to the linear layers
        output = self.fc(output)

        # pass the out of the linear layers to sigmoid layer
        output = self.sigmoid(output)

        return output


class APP_MATCHER(Dataset):
    def __init__(self, n, seed):
        super(APP_MATCHER, self).__init__()
        rng = np.random.RandomState(seed)
        templates = (np.random.RandomState(0).rand(10, 14, 14) > 0.6).astype(np.float32)
        self.targets = torch.from_numpy(rng.randint(0, 10, n))
        noise = rng.rand(n, 14, 14).astype(np.float32) * 0.8
        self.data = torch.from_numpy(templates[self.targets.numpy()] + noise)
        self.group_examples()
        self.pair_rng = random.Random(seed)

    def group_examples(self):
        """Group the examples by label: {label: array of indices}."""
        np_arr = np.array(self.targets.clone())
        self.grouped_examples = {}
        for i in range(0, 10):
            self.grouped_examples[i] = np.where((np_arr == i))[0]

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, index):
        # pick a random class for the first image
        selected_class = self.pair_rng.randint(0, 9)
        random_index_1 = self.pair_rng.randint(0, self.grouped_examples[selected_class].shape[0] - 1)
        index_1 = self.grouped_examples[selected_class][random_index_1]
        image_1 = self.data[index_1].clone().float()

        # same class
        if index % 2 == 0:
            random_index_2 = self.pair_rng.randint(0, self.grouped_examples[selected_class].shape[0] - 1)
            index_2 = self.grouped_examples[selected_class][random_index_2]
            image_2 = self.data[index_2].clone().float()
            target = torch.tensor(1, dtype=torch.float)
        # different class
        else:
            other_selected_class = self.pair_rng.randint(0, 9)
            while other_selected_class == selected_class:
                other_selected_class = self.pair_rng.randint(0, 9)
            random_index_2 = self.pair_rng.randint(0, self.grouped_examples[other_selected_class].shape[0] - 1)
            index_2 = self.grouped_examples[other_selected_class][random_index_2]
            image_2 = self.data[index_2].clone().float()
            target = torch.tensor(0, dtype=torch.float)

        return image_1.unsqueeze(0), image_2.unsqueeze(0), target


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()

    # we aren't using `TripletLoss` as the MNIST dataset is simple, so `BCELoss` can do the trick.
    criterion = nn.BCELoss()

    for batch_idx, (images_1, images_2, targets) in enumerate(train_loader):
        images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(images_1), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0

    # we aren't using `TripletLoss` as the MNIST dataset is simple, so `BCELoss` can do the trick.
    criterion = nn.BCELoss()

    with torch.no_grad():
        for (images_1, images_2, targets) in test_loader:
            images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
            outputs = model(images_1, images_2).squeeze()
            test_loss += criterion(outputs, targets).sum().item()  # sum up batch loss
            pred = torch.where(outputs > 0.5, 1, 0)  # get the index of the max log-probability
            correct += pred.eq(targets.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)

    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))


def contrastive_loss(output1, output2, label, margin=2.0):
    """Hadsell et al.'s contrastive loss: pull same pairs together, push others apart."""
    euclidean_distance = F.pairwise_distance(output1, output2, keepdim=True)
    return torch.mean(label * torch.pow(euclidean_distance, 2) +
                      (1 - label) * torch.pow(torch.clamp(margin - euclidean_distance, min=0.0), 2))


def train_metric(model, device, dataset, epochs):
    """Metric learning on the same tower: triplets (anchor, positive, negative)."""
    triplet_loss = nn.TripletMarginLoss(margin=1.0, p=2)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    by_class = dataset.grouped_examples
    rng = np.random.RandomState(0)
    for epoch in range(1, epochs + 1):
        model.train()
        anchors = rng.randint(0, len(dataset), 64)
        labels = dataset.targets[anchors].numpy()
        pos = np.array([rng.choice(by_class[int(c)]) for c in labels])
        neg = np.array([rng.choice(by_class[int((c + 1 + rng.randint(9)) % 10)]) for c in labels])
        a, p, n = (dataset.data[idx].unsqueeze(1).to(device) for idx in (anchors, pos, neg))
        optimizer.zero_grad()
        ea, ep, en = model.forward_once(a), model.forward_once(p), model.forward_once(n)
        loss = triplet_loss(ea, ep, en)
        closs = contrastive_loss(ea, en, torch.zeros(len(ea), 1)) + contrastive_loss(ea, ep, torch.ones(len(ea), 1))
        (loss + 0.1 * closs).backward()
        optimizer.step()
        print(f"Triplet epoch {epoch}: triplet {loss.item():.4f} contrastive {closs.item():.4f}")


def main():
    # Training settings
    parser = argparse.ArgumentParser(description='PyTorch Siamese network Example')
    parser.add_argument('--batch-size', type=int, default=32, metavar='N',
                        help='input batch size for training (default: 32)')
    parser.add_argument('--test-batch-size', type=int, default=100, metavar='N',
                        help='input batch size for testing (default: 100)')
    parser.add_argument('--epochs', type=int, default=3, metavar='N',
                        help='number of epochs to train (default: 3)')
    parser.add_argument('--lr', type=float, default=1.0, metavar='LR',
                        help='learning rate (default: 1.0)')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M',
                        help='Learning rate step gamma (default: 0.7)')
    parser.add_argument('--no-cuda', action='store_true', default=False,
                        help='disables CUDA training')
    parser.add_argument('--seed', type=int, default=1, metavar='S',
                        help='random seed (default: 1)')
    parser.add_argument('--log-interval', type=int, default=4, metavar='N',
                        help='how many batches to wait before logging training status')
    parser.add_argument('--save-model', action='store_true', default=False,
                        help='For Saving the current Model')
    args = parser.parse_args()

    use_cuda = not args.no_cuda and torch.cuda.is_available()

    torch.manual_seed(args.seed)

    if use_cuda:
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")

    train_kwargs = {'batch_size': args.batch_size}
    test_kwargs = {'batch_size': args.test_batch_size}
    if use_cuda:
        cuda_kwargs = {'num_workers': 1,
                       'pin_memory': True,
                       'shuffle': True}
        train_kwargs.update(cuda_kwargs)
        test_kwargs.update(cuda_kwargs)

    train_dataset = APP_MATCHER(256, seed=1)
    test_dataset = APP_MATCHER(200, seed=2)
    train_loader = torch.utils.data.DataLoader(train_dataset, **train_kwargs)
    test_loader = torch.utils.data.DataLoader(test_dataset, **test_kwargs)

    model = SiameseNetwork().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()

    train_metric(model, device, train_dataset, epochs=4)

    if args.save_model:
        torch.save(model.state_dict(), "siamese_network.pt")


if __name__ == '__main__':
    main()
