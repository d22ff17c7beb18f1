"""A Kaggle-style tabular notebook: NumPy data from np.random.default_rng, features
standardised with mean(0)/std(0), categorical embeddings concatenated with continuous
features, BatchNorm1d and Dropout, a 3-fold CV loop over numpy indices, early stopping
that keeps copy.deepcopy(model.state_dict()), torch.sigmoid(out).detach().cpu().numpy(),
AUC computed with numpy, and the mean of the fold scores."""
import copy
import random

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

SEED = 2024


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


seed_everything(SEED)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# --- data ----------------------------------------------------------------------------
rng = np.random.default_rng(SEED)
N = 480
cat_cardinalities = [5, 8, 3]
X_cat = np.stack([rng.integers(0, c, N) for c in cat_cardinalities], axis=1)
X_num = rng.normal(loc=[10.0, -3.0, 0.5, 100.0], scale=[2.0, 1.0, 0.1, 25.0], size=(N, 4))
logit = (0.8 * (X_num[:, 0] - 10) / 2 - 1.2 * (X_num[:, 1] + 3) + 0.9 * (X_cat[:, 0] == 2)
         - 0.7 * (X_cat[:, 1] > 4) + 0.5 * rng.normal(size=N))
y = (logit > 0).astype(np.float32)
print(f"X_cat {X_cat.shape} {X_cat.dtype}, X_num {X_num.shape} {X_num.dtype}, positive rate {y.mean():.3f}")


def roc_auc(y_true, y_score):
    order = np.argsort(-y_score, kind="mergesort")
    y_true = y_true[order]
    tps = np.cumsum(y_true)
    fps = np.cumsum(1 - y_true)
    tpr = np.concatenate([[0], tps / tps[-1]])
    fpr = np.concatenate([[0], fps / fps[-1]])
    return float(np.trapezoid(tpr, fpr)) if hasattr(np, "trapezoid") else float(np.trapz(tpr, fpr))


class TabularDataset(Dataset):
    def __init__(self, x_cat, x_num, y):
        self.x_cat = torch.from_numpy(x_cat).long()
        self.x_num = torch.from_numpy(x_num).float()
        self.y = torch.from_numpy(y).float()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx):
        return self.x_cat[idx], self.x_num[idx], self.y[idx]


class TabularNN(nn.Module):
    def __init__(self, cardinalities, n_num, emb_dim=4, hidden=32, dropout=0.2):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.Embedding(c, min(emb_dim, (c + 1) // 2)) for c in cardinalities])
        n_emb = sum(e.embedding_dim for e in self.embeddings)
        self.bn_num = nn.BatchNorm1d(n_num)
        self.mlp = nn.Sequential(
            nn.Linear(n_emb + n_num, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, hidden // 2), nn.BatchNorm1d(hidden // 2), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden // 2, 1))

    def forward(self, x_cat, x_num):
        x = [emb(x_cat[:, i]) for i, emb in enumerate(self.embeddings)]
        x = torch.cat(x, 1)
        x = torch.cat([x, self.bn_num(x_num)], 1)
        return self.mlp(x).squeeze(-1)


model = TabularNN(cat_cardinalities, X_num.shape[1])
print(model)
print(f"trainable params: {sum(p.numel() for p in model.parameters() if p.requires_grad)}")

# --- k-fold cross validation ---------------------------------------------------------
n_folds = 3
folds = np.array_split(np.random.permutation(N), n_folds)
fold_scores = []
oof = np.zeros(N)
for fold in range(n_folds):
    val_idx = folds[fold]
    trn_idx = np.concatenate([folds[k] for k in range(n_folds) if k != fold])
    # standardise with the training fold's statistics only
    mean, std = X_num[trn_idx].mean(0), X_num[trn_idx].std(0)
    x_num_trn = (X_num[trn_idx] - mean) / std
    x_num_val = (X_num[val_idx] - mean) / std

    train_loader = DataLoader(TabularDataset(X_cat[trn_idx], x_num_trn, y[trn_idx]), batch_size=64,
                              shuffle=True, drop_last=True)
    valid_loader = DataLoader(TabularDataset(X_cat[val_idx], x_num_val, y[val_idx]), batch_size=256)

    model = TabularNN(cat_cardinalities, X_num.shape[1]).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
    criterion = nn.BCEWithLogitsLoss()
    best_auc, best_state, patience, bad = -np.inf, None, 2, 0
    for epoch in range(5):
        model.train()
        train_loss = 0.0
        for x_c, x_n, target in train_loader:
            x_c, x_n, target = x_c.to(device), x_n.to(device), target.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x_c, x_n), target)
            loss.backward()
            optimizer.step()
            train_loss += loss.item() / len(train_loader)
        model.eval()
        preds = []
        with torch.no_grad():
            for x_c, x_n, target in valid_loader:
                out = model(x_c.to(device), x_n.to(device))
                preds.append(torch.sigmoid(out).detach().cpu().numpy())
        preds = np.concatenate(preds)
        val_auc = roc_auc(y[val_idx], preds)
        print(f"Fold {fold} Epoch {epoch:02d} | train loss {train_loss:.4f} | val AUC {val_auc:.4f}")
        if val_auc > best_auc:
            best_auc, bad = val_auc, 0
            best_state = copy.deepcopy(model.state_dict())
            oof[val_idx] = preds
        else:
            bad += 1
            if bad >= patience:
                print(f"Early stopping at epoch {epoch}")
                break
    model.load_state_dict(best_state)
    print(f"Fold {fold} best AUC: {best_auc:.4f} ({type(best_state).__name__}, {len(best_state)} tensors)")
    fold_scores.append(best_auc)

print(f"CV AUC: {np.mean(fold_scores):.4f} +/- {np.std(fold_scores):.4f}")
print(f"OOF AUC: {roc_auc(y, oof):.4f}")
