"""TensorBoard logging, as ``torch.utils.tensorboard``: ``SummaryWriter``.

    from ember.utils.tensorboard import SummaryWriter

    with SummaryWriter("runs/exp1") as writer:
        writer.add_scalar("train/loss", loss, step)      # loss: a 0-d tensor, any device
        writer.add_histogram("fc.weight", model.fc.weight, step)

Then ``tensorboard --logdir runs``. The event files are written with tensorboardX
(``pip install 'ember[tensorboard]'``), imported when the first writer is made.
"""

from __future__ import annotations

from .writer import SummaryWriter

__all__ = ["SummaryWriter"]
