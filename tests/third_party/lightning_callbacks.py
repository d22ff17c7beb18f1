"""Lightning with its defaults and callbacks: the model summary (with FLOPs from an
example input), ModelCheckpoint on a monitored metric, EarlyStopping, LearningRateMonitor,
the CSV logger, gradient clipping and accumulation, a LightningDataModule, manual
optimization."""
import sys

import pytorch_lightning as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from pytorch_lightning.callbacks import EarlyStopping, LearningRateMonitor, ModelCheckpoint
from pytorch_lightning.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset, random_split

root = sys.argv[1] if len(sys.argv) > 1 else "."
pl.seed_everything(7)


class Data(pl.LightningDataModule):
    def setup(self, stage=None):
        x = torch.randn(96, 1, 8, 8)
        y = (x.mean((1, 2, 3)) > 0).long()
        self.train, self.val = random_split(TensorDataset(x, y), [64, 32])

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=16, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=16)


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 8 * 8, 2)
        self.example_input_array = torch.zeros(2, 1, 8, 8)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).flatten(1))

    def training_step(self, batch, batch_idx):
        loss = F.cross_entropy(self(batch[0]), batch[1])
        self.log("loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", F.cross_entropy(self(batch[0]), batch[1]), prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
        return [opt], [sched]


class Manual(Net):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = F.cross_entropy(self(batch[0]), batch[1])
        opt.zero_grad()
        self.manual_backward(loss)
        self.clip_gradients(opt, gradient_clip_val=0.5, gradient_clip_algorithm="norm")
        opt.step()
        self.log("loss", loss)


ckpt = ModelCheckpoint(dirpath=root, monitor="val_loss", save_top_k=2, filename="{epoch}")
stop = EarlyStopping(monitor="val_loss", patience=2)
trainer = pl.Trainer(max_epochs=5, logger=CSVLogger(root, name="csv"), enable_progress_bar=False,
                     callbacks=[ckpt, stop, LearningRateMonitor()], accelerator="cpu",
                     gradient_clip_val=1.0, accumulate_grad_batches=2,
                     log_every_n_steps=1, deterministic=True)
trainer.fit(Net(), datamodule=Data())
print("best", sorted(p.rsplit("/", 1)[-1] for p in ckpt.best_k_models))
print("best score", round(float(ckpt.best_model_score), 4), "stopped", stop.stopped_epoch)
print("steps", trainer.global_step)
with open(trainer.logger.experiment.metrics_file_path) as fh:
    lines = fh.read().splitlines()
print(lines[0])
print(len(lines))
manual = pl.Trainer(max_epochs=2, logger=False, enable_progress_bar=False, accelerator="cpu",
                    enable_checkpointing=False, enable_model_summary=False)
m = Manual()
manual.fit(m, datamodule=Data())
print("manual", {k: round(float(v), 4) for k, v in manual.callback_metrics.items()})
