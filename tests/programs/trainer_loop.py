"""A Lightning-free Trainer (in the style of the hand-written training loops of HF
run_*_no_trainer.py scripts and the timm/fastai-free "simple trainer" recipes): gradient
accumulation, torch.nn.utils.clip_grad_norm_ returning the total norm, OneCycleLR stepped
per optimizer step, early stopping with patience on a validation metric, best checkpoint
saved with torch.save of a dict and reloaded with torch.load(weights_only=True),
evaluation under torch.inference_mode, a confusion matrix via torch.bincount, per-class
precision/recall/F1, and a deterministic Generator-driven DataLoader."""
import copy
import io
import math
import os
import tempfile
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset, random_split


@dataclass
class TrainingArguments:
    lr: float = 3e-3
    epochs: int = 12
    batch_size: int = 16
    grad_accum_steps: int = 2
    max_grad_norm: float = 1.0
    weight_decay: float = 0.01
    patience: int = 3
    seed: int = 0
    metric: str = "macro_f1"
    extra: dict = field(default_factory=dict)


class Classifier(nn.Module):
    def __init__(self, in_dim, hidden, num_classes, p=0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.GELU(), nn.Dropout(p),
            nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.net(x)


def confusion_matrix(preds, targets, num_classes):
    idx = targets * num_classes + preds
    return torch.bincount(idx, minlength=num_classes ** 2).reshape(num_classes, num_classes)


def metrics_from_confusion(cm):
    tp = cm.diag().float()
    precision = tp / cm.sum(0).clamp(min=1)
    recall = tp / cm.sum(1).clamp(min=1)
    f1 = 2 * precision * recall / (precision + recall).clamp(min=1e-12)
    return {"accuracy": (tp.sum() / cm.sum()).item(), "macro_f1": f1.mean().item(),
            "precision": precision, "recall": recall}


class Trainer:
    def __init__(self, model, args, train_dataset, eval_dataset, num_classes):
        self.model = model
        self.args = args
        self.num_classes = num_classes
        g = torch.Generator()
        g.manual_seed(args.seed)
        self.train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True,
                                       generator=g, drop_last=False)
        self.eval_loader = DataLoader(eval_dataset, batch_size=64)
        decay, no_decay = [], []
        for name, p in model.named_parameters():
            (no_decay if p.ndim < 2 or name.endswith(".bias") else decay).append(p)
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": args.weight_decay},
             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
        steps_per_epoch = math.ceil(len(self.train_loader) / args.grad_accum_steps)
        self.scheduler = torch.optim.lr_scheduler.OneCycleLR(
            self.optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=steps_per_epoch,
            pct_start=0.3, anneal_strategy="cos")
        self.global_step = 0

    def training_step(self, batch):
        x, y = batch
        logits = self.model(x)
        return F.cross_entropy(logits, y, label_smoothing=0.05)

    def train_epoch(self, epoch):
        self.model.train()
        total, count, norms = 0.0, 0, []
        self.optimizer.zero_grad(set_to_none=True)
        for i, batch in enumerate(self.train_loader):
            loss = self.training_step(batch) / self.args.grad_accum_steps
            loss.backward()
            total += loss.item() * self.args.grad_accum_steps
            count += 1
            if (i + 1) % self.args.grad_accum_steps == 0 or i + 1 == len(self.train_loader):
                norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)
                norms.append(norm)
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
                self.global_step += 1
        return total / count, torch.stack(norms)

    def evaluate(self):
        self.model.eval()
        preds, targets, loss = [], [], 0.0
        with torch.inference_mode():
            for x, y in self.eval_loader:
                logits = self.model(x)
                loss += F.cross_entropy(logits, y, reduction="sum").item()
                preds.append(logits.argmax(dim=-1))
                targets.append(y)
        preds, targets = torch.cat(preds), torch.cat(targets)
        cm = confusion_matrix(preds, targets, self.num_classes)
        out = metrics_from_confusion(cm)
        out["loss"] = loss / len(targets)
        out["cm"] = cm
        out["inference"] = preds.is_inference()
        return out

    def fit(self, ckpt_path):
        best, bad_epochs = -float("inf"), 0
        for epoch in range(self.args.epochs):
            train_loss, norms = self.train_epoch(epoch)
            metrics = self.evaluate()
            lr = self.scheduler.get_last_lr()[0]
            print(f"epoch {epoch:2d} train loss {train_loss:.4f} val loss {metrics['loss']:.4f} "
                  f"acc {metrics['accuracy']:.3f} f1 {metrics['macro_f1']:.3f} lr {lr:.6f}")
            print(f"   grad norms {norms.shape} max {norms.max().item():.3f} dtype {norms.dtype}")
            score = metrics[self.args.metric]
            if score > best:
                best, bad_epochs = score, 0
                torch.save({"epoch": epoch, "model_state_dict": self.model.state_dict(),
                            "optimizer_state_dict": self.optimizer.state_dict(),
                            "scheduler_state_dict": self.scheduler.state_dict(),
                            "best_metric": best}, ckpt_path)
            else:
                bad_epochs += 1
                if bad_epochs >= self.args.patience:
                    print(f"early stopping at epoch {epoch}")
                    break
        return best


torch.manual_seed(0)
torch.set_printoptions(precision=4)
num_classes, in_dim = 3, 8
centers = torch.randn(num_classes, in_dim) * 1.5
y_all = torch.randint(0, num_classes, (300,))
x_all = centers[y_all] + torch.randn(300, in_dim)
dataset = TensorDataset(x_all, y_all)
train_set, val_set = random_split(dataset, [240, 60], generator=torch.Generator().manual_seed(42))
print("split", len(train_set), len(val_set), val_set.indices[:5])
print("class counts", torch.bincount(y_all), torch.bincount(y_all, minlength=5))
w = torch.tensor([0.5, 1.0, 2.0])
print("weighted bincount", torch.bincount(torch.tensor([0, 1, 1, 2]), weights=torch.tensor([0.5, 1.0, 1.0, 2.0])))

args = TrainingArguments()
print(args)
model = Classifier(in_dim, 32, num_classes)
print(model)
trainer = Trainer(model, args, train_set, val_set, num_classes)
print("steps", len(trainer.train_loader), trainer.scheduler.total_steps)
print("initial lr", trainer.scheduler.get_last_lr(), trainer.optimizer.param_groups[0]["initial_lr"],
      trainer.optimizer.param_groups[0]["max_lr"], trainer.optimizer.param_groups[0]["min_lr"])

# clip_grad_norm_ returns the total norm before clipping, as a tensor
p = nn.Parameter(torch.ones(4))
p.grad = torch.full((4,), 3.0)
total = torch.nn.utils.clip_grad_norm_([p], max_norm=1.0)
print("clip returns", total, p.grad)
total_inf = torch.nn.utils.clip_grad_norm_([p], max_norm=1.0, norm_type="inf")
print("inf norm", total_inf)

with tempfile.TemporaryDirectory() as d:
    ckpt_path = os.path.join(d, "best.pt")
    best = trainer.fit(ckpt_path)
    print(f"best {args.metric} {best:.3f}")
    checkpoint = torch.load(ckpt_path, weights_only=True)
print("checkpoint keys", sorted(checkpoint))
print("best epoch is an int", type(checkpoint["epoch"]).__name__)
reloaded = Classifier(in_dim, 32, num_classes)
print(reloaded.load_state_dict(checkpoint["model_state_dict"]))
opt2 = torch.optim.AdamW(reloaded.parameters(), lr=args.lr)
opt2_groups = copy.deepcopy(checkpoint["optimizer_state_dict"])
print("optimizer groups", len(opt2_groups["param_groups"]), sorted(opt2_groups["param_groups"][0]))
sched_state = checkpoint["scheduler_state_dict"]
print("scheduler state", sorted(k for k in sched_state if not k.startswith("_")))

# the reloaded best model reproduces its metric
trainer.model = reloaded
metrics = trainer.evaluate()
print(f"reloaded f1 {metrics['macro_f1']:.3f} equals best {abs(metrics['macro_f1'] - checkpoint['best_metric']) < 1e-6}")
print("confusion matrix", metrics["cm"], metrics["cm"].dtype)
print("inference tensors", metrics["inference"])
print("precision", metrics["precision"])

# weights_only refuses arbitrary objects
buf = io.BytesIO()
torch.save({"args": args}, buf)
buf.seek(0)
try:
    torch.load(buf, weights_only=True)
except Exception as e:
    print("weights_only refused", type(e).__name__)
buf.seek(0)
print("weights_only=False loads", type(torch.load(buf, weights_only=False)["args"]).__name__)
with torch.inference_mode():
    t = torch.ones(2)
try:
    t.add_(1)
except RuntimeError as e:
    print("RuntimeError", e)
