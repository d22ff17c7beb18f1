# A tabular-data classifier in the style of the common PyTorch tabular tutorials: a custom
# Dataset of categorical and continuous columns, one nn.Embedding per categorical column
# (size min(50, (n + 1) // 2)), BatchNorm on the continuous ones, random_split into
# train/validation, DataLoader with shuffle, CrossEntropyLoss, Adam with a ReduceLROnPlateau
# schedule, accuracy per epoch, and a state_dict checkpoint reloaded for the test.
import argparse
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, random_split


def make_table(n_rows, seed=0):
    """A synthetic 'adult income'-like table: 3 categorical and 4 continuous columns."""
    rng = np.random.default_rng(seed)
    cats = np.stack([rng.integers(0, 7, n_rows), rng.integers(0, 16, n_rows),
                     rng.integers(0, 3, n_rows)], axis=1)
    conts = rng.normal(size=(n_rows, 4)).astype(np.float32)
    score = (conts[:, 0] * 1.5 - conts[:, 1] + (cats[:, 0] % 3 == 0) * 1.2
             + (cats[:, 1] > 9) * 0.8 - (cats[:, 2] == 1) * 1.0)
    labels = (score + rng.normal(scale=0.5, size=n_rows) > 0.3).astype(np.int64)
    return cats, conts, labels


class TabularDataset(Dataset):
    def __init__(self, cats, conts, labels):
        self.cats = torch.tensor(cats, dtype=torch.int64)
        self.conts = torch.tensor(conts, dtype=torch.float32)
        self.labels = torch.tensor(labels)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.cats[idx], self.conts[idx], self.labels[idx]


class TabularModel(nn.Module):
    def __init__(self, emb_szs, n_cont, out_sz, layers, p=0.4):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Embedding(ni, nf) for ni, nf in emb_szs])
        self.emb_drop = nn.Dropout(p)
        self.bn_cont = nn.BatchNorm1d(n_cont)

        layerlist = []
        n_emb = sum((nf for ni, nf in emb_szs))
        n_in = n_emb + n_cont

        for i in layers:
            layerlist.append(nn.Linear(n_in, i))
            layerlist.append(nn.ReLU(inplace=True))
            layerlist.append(nn.BatchNorm1d(i))
            layerlist.append(nn.Dropout(p))
            n_in = i
        layerlist.append(nn.Linear(layers[-1], out_sz))

        self.layers = nn.Sequential(*layerlist)

    def forward(self, x_cat, x_cont):
        embeddings = []
        for i, e in enumerate(self.embeds):
            embeddings.append(e(x_cat[:, i]))
        x = torch.cat(embeddings, 1)
        x = self.emb_drop(x)

        x_cont = self.bn_cont(x_cont)
        x = torch.cat([x, x_cont], 1)
        x = self.layers(x)
        return x


def main():
    parser = argparse.ArgumentParser(description='Tabular MLP with categorical embeddings')
    parser.add_argument('--rows', type=int, default=1200)
    parser.add_argument('--epochs', type=int, default=6)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--seed', type=int, default=33)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    cats, conts, labels = make_table(args.rows)
    cat_szs = [int(cats[:, i].max()) + 1 for i in range(cats.shape[1])]
    emb_szs = [(size, min(50, (size + 1) // 2)) for size in cat_szs]
    print(emb_szs)

    dataset = TabularDataset(cats, conts, labels)
    n_val = len(dataset) // 5
    train_set, val_set = random_split(dataset, [len(dataset) - n_val, n_val],
                                      generator=torch.Generator().manual_seed(42))
    print(f'train rows: {len(train_set)}, validation rows: {len(val_set)}')
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=256)

    model = TabularModel(emb_szs, conts.shape[1], 2, [64, 32], p=0.2).to(device)
    print(model)
    print(f'parameters: {sum(p.numel() for p in model.parameters() if p.requires_grad)}')
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5, patience=1)

    for epoch in range(1, args.epochs + 1):
        model.train()
        running, seen = 0.0, 0
        for x_cat, x_cont, y in train_loader:
            x_cat, x_cont, y = x_cat.to(device), x_cont.to(device), y.to(device)
            optimizer.zero_grad()
            y_pred = model(x_cat, x_cont)
            loss = criterion(y_pred, y)
            loss.backward()
            optimizer.step()
            running += loss.item() * y.size(0)
            seen += y.size(0)

        model.eval()
        val_loss, correct = 0.0, 0
        with torch.no_grad():
            for x_cat, x_cont, y in val_loader:
                out = model(x_cat, x_cont)
                val_loss += F.cross_entropy(out, y, reduction='sum').item()
                correct += (out.argmax(1) == y).type(torch.float).sum().item()
        val_loss /= len(val_set)
        scheduler.step(val_loss)
        print(f'epoch: {epoch:2}  train loss: {running / seen:10.8f}  val loss: {val_loss:.4f}  '
              f'val accuracy: {100 * correct / len(val_set):.2f}%  lr: {optimizer.param_groups[0]["lr"]}')

    path = os.path.join(tempfile.mkdtemp(), 'tabular.pt')
    torch.save(model.state_dict(), path)
    reloaded = TabularModel(emb_szs, conts.shape[1], 2, [64, 32], p=0.2)
    reloaded.load_state_dict(torch.load(path))
    reloaded.eval()
    with torch.no_grad():
        x_cat, x_cont, y = next(iter(val_loader))
        same = torch.equal(reloaded(x_cat, x_cont).argmax(1), model(x_cat, x_cont).argmax(1))
    print(f'reloaded model agrees: {same}')


if __name__ == '__main__':
    main()
