"""A LightningModule trained with pytorch_lightning's Trainer: fit with validation, a
scheduler, logged metrics, checkpoint save and reload, test and predict."""
import os
import sys

import pytorch_lightning as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class LitModel(pl.LightningModule):
    def __init__(self, hidden=16, lr=1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(1) == y).float().mean())

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_acc", (self(x).argmax(1) == y).float().mean())

    def predict_step(self, batch, batch_idx):
        return self(batch[0]).argmax(1)

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, 1, 0.5)}


x = torch.randn(64, 4)
y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
train = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
val = DataLoader(TensorDataset(x, y), batch_size=32)
trainer = pl.Trainer(max_epochs=4, logger=False, enable_progress_bar=False,
                     enable_model_summary=False, accelerator="cpu",
                     default_root_dir=sys.argv[1] if len(sys.argv) > 1 else ".")
model = LitModel()
print(model.hparams)
trainer.fit(model, train, val)
print({k: round(float(v), 4) for k, v in sorted(trainer.callback_metrics.items())})
print("epochs", trainer.current_epoch, "steps", trainer.global_step)
print("lr", trainer.optimizers[0].param_groups[0]["lr"])
path = os.path.join(trainer.default_root_dir, "model.ckpt")
trainer.save_checkpoint(path)
loaded = LitModel.load_from_checkpoint(path)
print("reloaded", loaded.hparams, all(torch.equal(a, b) for a, b in
                                      zip(model.state_dict().values(),
                                          loaded.state_dict().values())))
print([{k: round(v, 4) for k, v in r.items()} for r in trainer.test(model, val, verbose=False)])
preds = trainer.predict(model, val)
print([p.tolist() for p in preds])
