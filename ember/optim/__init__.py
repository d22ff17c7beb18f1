"""Optimizers and learning-rate schedulers, with PyTorch's API.

    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        sched.step()

Every update is written with ember's Tensor ops under `ember.no_grad()`, so it runs on
whatever device the parameters live on. By default (`foreach=None`) an optimizer updates
all the parameters of a group that share a device and dtype with one list op per stage
(`ember._foreach_*`, which a backend may implement as one kernel); `foreach=False` runs
the same update as a loop of per-tensor in-place ops. The state (`state_dict()`) follows
PyTorch's layout, so a step-for-step comparison with PyTorch, or a resumed run, match.
"""

import sys

import ember.core.dtype as _dtypes
from ember.optim import lr_scheduler, swa_utils
from ember.optim.adadelta import Adadelta
from ember.optim.adafactor import Adafactor
from ember.optim.adagrad import Adagrad
from ember.optim.adam import Adam
from ember.optim.adamax import Adamax
from ember.optim.adamw import AdamW
from ember.optim.asgd import ASGD
from ember.optim.lamb import LAMB
from ember.optim.lbfgs import LBFGS
from ember.optim.muon import Muon
from ember.optim.nadam import NAdam
from ember.optim.optimizer import (
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
    required,
)
from ember.optim.radam import RAdam
from ember.optim.rmsprop import RMSprop
from ember.optim.rprop import Rprop
from ember.optim.sgd import SGD
from ember.optim.sparse_adam import SparseAdam

Lamb = LAMB  # the spelling some libraries use

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "LAMB", "Lamb",
           "Adadelta", "LBFGS", "Adamax", "NAdam", "RAdam", "ASGD",
           "Rprop", "Adafactor", "Muon", "SparseAdam",
           "lr_scheduler", "swa_utils", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]

# PyTorch exports these two from `torch.optim` itself (their files are private there)
_dtypes.place_in(sys.modules[__name__], Adafactor, Muon)
