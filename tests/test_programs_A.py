"""Real PyTorch programs run unchanged on ember (issue 16, set A: vision, GANs, classic
examples).

Each program in tests/programs is run twice in subprocesses, at the same time: once with
the real torch, once with `python -m ember.run` (torch mapped to ember). Then:

- the outputs must have the same skeleton: the same lines with every number blanked, so
  printed forms (`torch.Size([64, 1, 28, 28])`, `grad_fn=<NllLossBackward0>`, module
  reprs, argparse Namespaces) match PyTorch's;
- the metrics each program prints (losses, accuracies, PSNR) must move as PyTorch's do:
  both improve by the program's margin and end close to each other. The runs start from
  different random weights while ember's random stream is not PyTorch's; where it is
  (see `_streams_match`), the first printed loss must also agree to rel 1e-4;
- numbers that do not depend on the random stream (data made with NumPy) must be equal.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "programs"
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\bnan\b|\binf\b")


def _streams_match() -> bool:
    """Whether ember's CPU random stream is PyTorch's (rand, randn, after the same seed)."""
    torch.manual_seed(1234)
    ember.manual_seed(1234)
    t = torch.cat([torch.rand(64), torch.randn(64)]).tolist()
    e = ember.cat([ember.rand(64), ember.randn(64)]).tolist()
    return all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7) for a, b in zip(t, e))


SAME_STREAMS = _streams_match()


def skeleton(out: str) -> list[str]:
    """The output's lines with every number replaced by '#'."""
    return [NUMBER.sub("#", line).rstrip() for line in out.splitlines()]


def metric(out: str, pattern: str) -> list[float]:
    """The numbers that `pattern`'s first group captures, in order of printing."""
    return [float(m) for m in re.findall(pattern, out)]


def _ends(series: list[float]) -> tuple[float, float]:
    """The means of the first and the last quarter (at least one value each): GAN and
    minibatch losses are noisy from one step to the next."""
    k = max(1, len(series) // 4)
    return sum(series[:k]) / k, sum(series[-k:]) / k


@dataclass
class Trend:
    """A metric both runs must improve: `last <= first * shrink` (or >= first * grow for a
    metric that rises), and ember's last within `tol` x |torch's first| of torch's last."""

    pattern: str
    shrink: float = 1.0
    tol: float = 0.3
    rises: bool = False
    count: int | None = None  # only the first `count` values (one phase of a program)

    def check(self, name: str, t_out: str, e_out: str) -> None:
        t = metric(t_out, self.pattern)[:self.count]
        e = metric(e_out, self.pattern)[:self.count]
        assert t and len(t) == len(e), f"{name}: {self.pattern!r} printed {len(t)} vs {len(e)}"
        assert all(math.isfinite(v) for v in e), f"{name}: ember printed {e}"
        for who, series in (("torch", t), ("ember", e)):
            first, last = _ends(series)
            if self.rises:
                assert last >= first * self.shrink, f"{name} ({who}): {self.pattern} {series}"
            else:
                assert last <= first * self.shrink, f"{name} ({who}): {self.pattern} {series}"
        assert abs(_ends(e)[1] - _ends(t)[1]) <= self.tol * abs(t[0]), \
            f"{name}: {self.pattern}: ember ends at {e}, torch at {t}"


@dataclass
class Program:
    script: str
    args: list[str] = field(default_factory=list)
    trends: list[Trend] = field(default_factory=list)
    # a pattern whose numbers come from NumPy-made data only: equal in both runs
    same: str | None = None
    # the first printed loss (this pattern's first match) is exact when the streams match
    first: str | None = None
    extra: Callable[[str, str], None] | None = None
    long: bool = False
    # environment for both runs (PYTHONUNBUFFERED="": processes that print to one pipe
    # write whole buffers, not a line's text and its newline apart)
    env: dict[str, str] = field(default_factory=dict)


def _gan_1d_balance(t_out: str, e_out: str) -> None:
    # the adversarial losses settle near log(2) = 0.693 in both
    for out in (t_out, e_out):
        last = out.strip().splitlines()[-1]
        errs = [float(v) for v in re.findall(r"([\d.]+) (?:real_err|fake_err|err)\b", last)]
        assert len(errs) == 3 and all(0.45 < v < 0.95 for v in errs), last


def _nn_really_fits(t_out: str, e_out: str) -> None:
    # the hand-written logistic regression: loss from about log(10) to well below it
    for out in (t_out, e_out):
        losses = metric(out, r"tensor\(([\d.e+-]+), grad_fn=<NegBackward0>\)")
        assert len(losses) == 2 and 1.8 < losses[0] < 3.2 and losses[1] < 0.5 * losses[0]


def _regression_fits(t_out: str, e_out: str) -> None:
    # the learned polynomial is the target's (each run draws its own target)
    for out in (t_out, e_out):
        coef = [re.findall(r"[-+][\d.]+", line) for line in out.splitlines()
                if "function:" in line]
        assert len(coef) == 2 and len(coef[0]) == len(coef[1]) == 5
        assert all(abs(float(a) - float(b)) < 0.3 for a, b in zip(*coef)), coef


def _stn_runs(t_out: str, e_out: str) -> None:
    # two short epochs barely move a spatial transformer: the loss stays near log(10)
    for out in (t_out, e_out):
        losses = metric(out, r"Average loss: ([\d.]+)")
        assert losses and all(1.9 < v < 2.7 for v in losses), losses


def _swa_and_ema_help(t_out: str, e_out: str) -> None:
    # the averaged models test at least as well as the first epoch's model did
    for out in (t_out, e_out):
        first = metric(out, r"epoch 0: .*test loss ([\d.]+)")[0]
        averaged = metric(out, r"(?:SWA|EMA) test loss ([\d.]+)")
        assert len(averaged) == 2 and all(v < 0.8 * first for v in averaged), out
        assert metric(out, r"n_averaged: (\d+)") == [0, 3]


def _teacher_and_students_learn(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        acc = metric(out, r"Test Accuracy: ([\d.]+)%")
        assert len(acc) == 3 and acc[0] > 60 and min(acc[1:]) > 30, acc


def _contrastive_forms_agree(t_out: str, e_out: str) -> None:
    # the index and masked_fill forms of NT-Xent are one loss; the features separate
    for out in (t_out, e_out):
        forms = metric(out, r"form ([\d.]+)")
        assert len(forms) == 2 and forms[0] == forms[1], forms
        assert metric(out, r"test top1 ([\d.]+)%")[0] > 60


def _hogwild_children_trained(t_out: str, e_out: str) -> None:
    # two processes, two epochs each, two logged batches an epoch; both exited cleanly
    for out in (t_out, e_out):
        assert len(re.findall(r"^\d+\tTrain Epoch: ", out, re.M)) == 8, out
        assert "exit codes: [0, 0]" in out


def _imagenet_resumes(t_out: str, e_out: str) -> None:
    # the resumed run starts at epoch 3 with StepLR's decayed rate; --evaluate of
    # model_best reproduces the best epoch's summary
    for out in (t_out, e_out):
        assert "=> loaded checkpoint 'checkpoint.pth.tar' (epoch 3)" in out
        assert re.search(r"best_acc1 [\d.]+ lr 0\.01\d* last_epoch 3", out), out
        summaries = re.findall(r"^ \*   (.*)$", out, re.M)
        assert len(summaries) == 5 and summaries[-1] == summaries[-2], summaries


def _snli_best_snapshot(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert metric(out, r"best snapshot reloaded: SNLIClassifier dev accuracy ([\d.]+)")[0] > 80
        assert "Embedding(40, 24) False True" in out


def _gp_fits(t_out: str, e_out: str) -> None:
    # the hand-written likelihood is MultivariateNormal's; the posterior covers sin(2 pi x)
    for out in (t_out, e_out):
        by_hand, mvn = re.search(r"check: ([-\d.]+) ([-\d.]+)", out).groups()
        assert by_hand == mvn
        assert metric(out, r"rmse ([\d.]+)")[0] < 0.15
        assert metric(out, r"inside 2 sigma ([\d.]+)")[0] >= 0.9


def _ddp_ranks_agree(t_out: str, e_out: str) -> None:
    # both ranks ran every demo; each epoch's all_reduce'd count is the whole dataset
    for out in (t_out, e_out):
        assert "parameters agree across ranks: True" in out
        for demo in ("basic DDP example", "DDP checkpoint example"):
            assert sorted(re.findall(rf"Finished running {demo} on rank (\d)", out)) == \
                ["0", "1"], out
        assert metric(out, r"samples (\d+)") == [256] * 4


def _fgsm_hurts(t_out: str, e_out: str) -> None:
    # the clean model is accurate; larger epsilons never help it
    for out in (t_out, e_out):
        assert metric(out, r"Epsilon: 0\tTest Accuracy = \d+ / \d+ = ([\d.]+)")[0] >= 0.9
        assert "accuracies fall: True" in out


def _sentiment_learned(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert metric(out, r"Test Acc: ([\d.]+)%")[0] > 80
        assert "The model has 22,801 trainable parameters" in out


def _names_generated(t_out: str, e_out: str) -> None:
    # the averaged losses fall; the samples are names of letters
    for out in (t_out, e_out):
        losses = [float(v) for v in re.search(r"^losses (.*)$", out, re.M).group(1).split()]
        assert len(losses) == 6 and losses[-1] < 0.6 * losses[0], losses
        names = out.strip().splitlines()[-4:]
        assert all(re.fullmatch(r"[A-Z][a-z]*", n) for n in names), names


def _all_checks_true(t_out: str, e_out: str) -> None:
    # the tutorials print their checks (forward vs reverse mode, two NTK methods): all hold
    for out in (t_out, e_out):
        assert out.count("True") >= 5 and "False" not in out, out


PROGRAM_SPECS = [
    Program("quickstart.py", trends=[Trend(r"Avg loss: ([\d.]+)", 0.8, 0.3),
                                     Trend(r"Accuracy: ([\d.]+)%", 1.2, 0.5, rises=True)],
            first=r"loss: ([\d.]+)", long=True),
    Program("nn_really.py",
            first=r"tensor\(([\d.]+), grad_fn=<NegBackward0>\)", extra=_nn_really_fits, long=True),
    Program("vae.py", trends=[Trend(r"Test set loss: ([\d.]+)", 0.97, 0.05)],
            first=r"Loss: ([\d.]+)", long=True),
    Program("dcgan.py", trends=[Trend(r"Loss_D: ([\d.]+)", 0.97, 0.1)],
            first=r"Loss_D: ([\d.]+)", long=True),
    Program("wgan_gp.py", trends=[Trend(r"D loss: ([-\d.]+)", 0.99, 0.05)],
            first=r"D loss: ([-\d.]+)", long=True),
    Program("gan_1d.py", same=r"Real Dist \((\[.*?\])\)", first=r"D \(([\d.]+) real_err",
            extra=_gan_1d_balance, long=True),
    Program("super_resolution.py", args=["--lr", "0.001"],
            trends=[Trend(r"Avg. PSNR: ([\d.]+)", 1.1, 0.25, rises=True)],
            first=r"Loss: ([\d.]+)", long=True),
    Program("finetune.py", trends=[Trend(r"train Loss: ([\d.]+)", 0.9, 0.5, count=3)],
            first=r"train Loss: ([\d.]+)", long=True),
    Program("siamese.py", trends=[Trend(r"Average loss: ([\d.]+)", 1.0, 0.1)],
            first=r"Loss: ([\d.]+)", long=True),
    Program("forward_forward.py", trends=[Trend(r"Loss:  ([\d.]+)", 0.7, 0.05)],
            first=r"Loss:  ([\d.]+)", long=True),
    Program("mnist_rnn.py", args=["--lr", "1.0"],
            trends=[Trend(r"Average loss: ([\d.]+)", 0.97, 0.05)], long=True),
    Program("regression.py", extra=_regression_fits, long=True),
    Program("time_sequence_prediction.py",
            trends=[Trend(r"test loss: ([\d.e-]+)", 0.5, 0.2)], first=r"loss: ([\d.]+)",
            long=True),
    Program("spatial_transformer.py", extra=_stn_runs, long=True),
    Program("mnist.py", trends=[Trend(r"Average loss: ([\d.]+)", 0.8, 0.3)], long=True),
    # set C: vision and modern training idioms
    Program("resnet_cifar.py",
            trends=[Trend(r"Test Loss: ([\d.]+)", 0.8, 0.3),
                    Trend(r"Test Loss: [\d.]+ \| Acc: ([\d.]+)%", 1.1, 0.5, rises=True)],
            first=r"\] loss: ([\d.]+)", long=True),
    Program("vit.py", trends=[Trend(r"val loss ([\d.]+)", 0.95, 0.2)],
            first=r"step +0 \| loss ([\d.]+)", long=True),
    Program("unet_segmentation.py",
            trends=[Trend(r"train loss ([\d.]+)", 0.5, 0.3),
                    Trend(r"Dice ([\d.]+)", 1.5, 1.0, rises=True)],
            first=r"loss \(batch\) ([\d.]+)", long=True),
    Program("distillation.py", trends=[Trend(r"Loss: ([\d.]+)", 0.7, 0.3, count=4)],
            first=r"Loss: ([\d.]+)", extra=_teacher_and_students_learn, long=True),
    Program("amp_accum.py", trends=[Trend(r"val loss ([\d.]+)", 0.8, 0.3)],
            first=r"step +1 loss ([\d.]+)", long=True),
    Program("swa_ema.py", trends=[Trend(r"test loss ([\d.]+)", 0.8, 0.3, count=8)],
            first=r"train loss ([\d.]+)", extra=_swa_and_ema_help, long=True),
    Program("denoising_autoencoder.py",
            trends=[Trend(r"Training Loss: ([\d.]+)", 0.6, 0.1)],
            first=r"Training Loss: ([\d.]+)", long=True),
    Program("simclr.py", trends=[Trend(r"Loss: ([\d.]+)", 0.7, 0.3)],
            first=r"Step 0\tLoss: ([\d.]+)", extra=_contrastive_forms_agree, long=True),
    # forward-mode AD and torch.func tutorials
    Program("forward_ad_usage.py", first=r"jvp (-?[\d.]+)", extra=_all_checks_true, long=True),
    Program("neural_tangent_kernels.py", first=r"trace of the train NTK: ([\d.]+)",
            extra=_all_checks_true, long=True),
    # set E: pytorch/examples and classic recipes
    Program("fast_neural_style.py",
            trends=[Trend(r"total: ([\d.]+)", 0.8, 0.1)], first=r"content: ([\d.]+)", long=True),
    Program("gat.py", trends=[Trend(r"loss_val: ([\d.]+)", 0.9, 0.05),
                              Trend(r"acc_val: ([\d.]+)", 1.5, 0.3, rises=True)],
            first=r"loss_train: ([\d.]+)", long=True),
    # the children's lines interleave at random: only the parent's tests are compared
    Program("mnist_hogwild.py", trends=[Trend(r"Average loss: ([\d.]+)", 0.8, 0.3)],
            extra=_hogwild_children_trained, long=True, env={"PYTHONUNBUFFERED": ""}),
    Program("imagenet_utils.py",
            trends=[Trend(r" \*   Acc@1 ([\d.]+)", 1.2, 0.3, rises=True, count=3)],
            first=r"Loss ([\d.]+e[-+]\d+) \(", extra=_imagenet_resumes, long=True),
    Program("snli.py", trends=[Trend(r"% +([\d.]+) ", 0.5, 0.3)], first=r"% +([\d.]+) ",
            extra=_snli_best_snapshot, long=True),
    Program("capsule_net.py", trends=[Trend(r"Training Loss: ([\d.]+)", 0.97, 0.05)],
            first=r"first batch loss: ([\d.]+)", long=True),
    Program("gp_regression.py", trends=[Trend(r"Loss: ([-\d.]+)", 0.5, 0.05)],
            first=r"Loss: ([-\d.]+)", extra=_gp_fits, long=True),
    # three mp.spawn worlds of two ranks each: the processes' start-up is most of it
    Program("ddp_tutorial.py", trends=[Trend(r"train loss ([\d.]+)", 0.8, 0.1)],
            extra=_ddp_ranks_agree, long=True, env={"PYTHONUNBUFFERED": ""}),
    # the tutorials' classics
    Program("bilstm_crf.py", trends=[Trend(r"nll ([\d.]+)", 0.8, 0.1)],
            first=r"nll ([\d.]+)", long=True),
    Program("fgsm.py", trends=[Trend(r"pretraining epoch \d: loss ([\d.]+)", 0.5, 0.1)],
            first=r"pretraining epoch 0: loss ([\d.]+)", extra=_fgsm_hurts, long=True),
    # LBFGS on the image amplifies float32 rounding: trends only
    Program("neural_style_lbfgs.py", trends=[Trend(r"Style Loss : ([\d.]+)", 0.1, 0.05)],
            long=True),
    Program("annotated_transformer.py",
            trends=[Trend(r"eval loss tensor\(([\d.]+)\)", 0.9, 0.2)],
            same=r"\n(\[[\d., ]+\])\n", first=r"Loss: +([\d.]+)", long=True),
    # packed sequences with equal lengths: PyTorch's CPU sort order puts them in its rows
    Program("sentiment_rnn.py", trends=[Trend(r"Train Loss: ([\d.]+)", 0.8, 0.2)],
            first=r"Train Loss: ([\d.]+)", extra=_sentiment_learned, long=True),
    Program("char_rnn_generation.py", first=r"%\) ([\d.]+)", extra=_names_generated,
            long=True),
    Program("pinn_burgers.py", trends=[Trend(r" Loss: ([\d.e+-]+),", 0.5, 0.1)],
            first=r"Adam It: 0, Loss: ([\d.e+-]+),", long=True),
    # complex tensors and torch.fft: LLaMA's rotary embeddings, a Fourier neural operator
    Program("llama_rope.py", trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.5, 0.3)],
            first=r"step +0 loss ([\d.]+)", long=True),
    Program("fno_1d.py", trends=[Trend(r"test l2 ([\d.]+)", 0.5, 0.3)],
            first=r"train l2 ([\d.]+)", long=True),
]


# -- set J: modern training recipes (timm-style components, scripts people copy) ---------

def _smoothed_losses_agree(t_out: str, e_out: str) -> None:
    # LabelSmoothingCrossEntropy, CrossEntropyLoss(label_smoothing=0.1) and
    # SoftTargetCrossEntropy of smoothed one-hot targets are one loss
    for out in (t_out, e_out):
        forms = re.search(r"smoothing: ([\d.]+) ([\d.]+) ([\d.]+)", out).groups()
        assert len(set(forms)) == 1, forms
        assert metric(out, r"Top 1-acc ([\d.]+)")[-1] >= 80
    if SAME_STREAMS:  # torch.distributions.Beta draws PyTorch's lam, and the pairs after it
        lam = r"torch Beta lam (.*)"
        assert re.findall(lam, e_out) == re.findall(lam, t_out)


def _schedules_agree(t_out: str, e_out: str) -> None:
    # a schedule depends on no random number: every lr, momentum and plateau count printed
    # is PyTorch's to the last digit (only the small regression's losses may differ)
    t_lines = [line for line in t_out.splitlines() if "loss" not in line]
    e_lines = [line for line in e_out.splitlines() if "loss" not in line]
    assert e_lines == t_lines
    assert "same weights: True" in e_out


def _folds_score(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert metric(out, r"CV AUC: ([\d.]+)")[0] > 0.85, out


def _metric_learning_agrees(t_out: str, e_out: str) -> None:
    # the built-in and hand-written triplet losses are one loss; retrieval works
    for out in (t_out, e_out):
        builtin, by_hand = re.search(r"triplet: builtin ([\d.]+) by hand ([\d.]+)", out).groups()
        assert builtin == by_hand
        assert min(metric(out, r"recall@1 ([\d.]+)")) > 0.8


def _gradient_tricks_hold(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert "checkpoint grads match: True" in out and "frozen stem unchanged: True" in out
        assert metric(out, r"max \|grad\| ([\d.]+)") == [0.005] * 4  # clip_grad_value_
        assert metric(out, r"SAM train accuracy ([\d.]+)")[0] > 0.6


def _optimizers_agree(t_out: str, e_out: str) -> None:
    # each optimizer's update is deterministic from the same weights and data: the final
    # full-batch losses agree closely, and all but LARS (tiny trust ratio) improve
    pattern = r"^(\S.*?) +first ([\d.]+) final ([\d.]+)$"
    t, e = re.findall(pattern, t_out, re.M), re.findall(pattern, e_out, re.M)
    assert len(t) == len(e) == 9
    for (name, first, t_final), (_, _, e_final) in zip(t, e):
        assert math.isclose(float(e_final), float(t_final), rel_tol=2e-3, abs_tol=2e-4), name
        assert name == "LARS" or float(t_final) < float(first), (name, first, t_final)


def _segmentation_scores(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert metric(out, r"mean IoU: ([\d.]+)")[0] > 70


PROGRAMS_J = [
    Program("timm_deit.py", trends=[Trend(r"val loss ([\d.]+)", 0.9, 0.3)],
            first=r"Loss: ([\d.]+)", long=True),
    Program("mixup_cutmix.py", trends=[Trend(r"Val Loss ([\d.]+)", 0.8, 0.3)],
            same=r"class counts: (\[.*\])", first=r"first batch: lam [\d.]+ loss ([\d.]+)",
            extra=_smoothed_losses_agree, long=True),
    Program("lr_schedules.py", first=r"epoch 0 loss ([\d.]+)", extra=_schedules_agree, long=True),
    Program("amp_cpu_loop.py", trends=[Trend(r"amp epoch \d loss ([\d.]+)", 1.0, 0.05),
                                       Trend(r"scaled epoch \d loss ([\d.]+)", 0.95, 0.1)],
            first=r"default precision epoch 0 loss ([\d.]+)", long=True),
    Program("tabular_kfold.py", trends=[Trend(r"train loss ([\d.]+)", 0.7, 0.2, count=5)],
            same=r"(X_cat .*)", first=r"train loss ([\d.]+)", extra=_folds_score, long=True),
    Program("supcon_metric.py", trends=[Trend(r"\tloss ([\d.]+)", 0.9, 0.3),
                                        Trend(r"triplet step +\d+ loss ([\d.]+)", 0.5, 0.3)],
            first=r"\tloss ([\d.]+)", extra=_metric_learning_agrees, long=True),
    Program("sam_grad_tricks.py", first=r"SAM epoch 0 loss ([\d.]+)",
            extra=_gradient_tricks_hold, long=True),
    Program("custom_optimizers.py", first=r"Lion +first ([\d.]+)", extra=_optimizers_agree,
            long=True),
    Program("eval_metrics.py", trends=[Trend(r"step \d+ loss ([\d.]+)", 0.5, 0.2)],
            same=r"\n((?:precision|recall|f1) .*)", first=r"step 0 loss ([\d.]+)",
            extra=_segmentation_scores, long=True),
]
PROGRAM_SPECS += PROGRAMS_J


def _d2l_estimates_hold(t_out: str, e_out: str) -> None:
    # the fitted linear regression recovers w and b; the scripted MLP saved itself
    for out in (t_out, e_out):
        assert out.rstrip().endswith("True True"), out[-200:]


# Set I: Dive into Deep Learning (d2l.ai, PyTorch edition), its helpers inline
PROGRAMS_I = [
    Program("d2l_linear_regression.py", first=r"epoch 1, loss ([\d.]+)",
            trends=[Trend(r"epoch \d, loss ([\d.]+)", 0.1, 0.3, count=3)],
            extra=_d2l_estimates_hold, long=True),
    Program("d2l_softmax_regression.py", first=r"epoch 1, loss ([\d.]+)",
            trends=[Trend(r"loss ([\d.]+), train acc", 0.5, 0.3, count=4),
                    Trend(r"train acc ([\d.]+)", 1.2, 0.3, rises=True, count=4)], long=True),
    Program("d2l_mlp.py", first=r"epoch 1, loss ([\d.]+)",
            trends=[Trend(r"loss ([\d.]+), train acc", 0.99, 0.1, count=3),
                    Trend(r"epoch \d+: train ([\d.]+)", 0.1, 0.3, count=3)], long=True),
    Program("d2l_builders_guide.py"),
    Program("d2l_cnn_basics.py", first=r"epoch 2, loss ([\d.]+)",
            trends=[Trend(r"epoch \d+, loss ([\d.]+)\n", 0.1, 0.3, count=5),
                    Trend(r"loss ([\d.]+), train acc", 0.97, 0.1)], long=True),
    Program("d2l_modern_cnn.py", first=r"epoch 1, loss ([\d.]+)",
            trends=[Trend(r"loss ([\d.]+), train acc", 0.5, 0.3)], long=True),
    Program("d2l_rnn.py", first=r"epoch 1, perplexity ([\d.]+)",
            trends=[Trend(r"epoch \d, perplexity ([\d.]+)", 0.9, 0.2, count=5)], long=True),
    Program("d2l_attention.py", first=r"epoch 1, loss ([\d.]+)",
            trends=[Trend(r"epoch \d+, loss ([\d.]+)\n", 0.3, 0.3, count=4),
                    Trend(r"epoch \d, loss ([\d.]+)\n", 0.9, 0.3)], long=True),
    Program("d2l_optimization.py", first=r"epoch 20, x1: (-?[\d.]+)",
            trends=[Trend(r"train loss ([\d.]+), lr", 1.0, 0.1)], long=True),
    Program("d2l_word2vec.py", first=r"epoch 1, loss ([\d.]+)",
            trends=[Trend(r"epoch \d, loss ([\d.]+)", 0.8, 0.2)], long=True),
    Program("d2l_preliminaries.py", extra=_d2l_estimates_hold),
    Program("d2l_object_detection.py"),
    Program("d2l_nlp_gan.py", long=True),
]
PROGRAM_SPECS += PROGRAMS_I


def _dynamic_close_to_float(t_out: str, e_out: str) -> None:
    # dynamic quantization costs little: the quantized models' outputs stay near the float
    for out in (t_out, e_out):
        assert metric(out, r"loss difference: ([\d.]+)")[0] < 0.05, out[-300:]
        assert metric(out, r"argmax agreement: ([\d.]+)")[0] >= 0.75, out[-300:]


def _qat_converts_faithfully(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        qat, quantized = metric(out, r"(?:QAT|Quantized) model accuracy: ([\d.]+)")
        assert quantized >= 80 and abs(qat - quantized) <= 10, (qat, quantized)
        assert "fc2 output scale matches: True" in out


def _ptq_keeps_accuracy(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        float_acc = metric(out, r"Float model: Evaluation accuracy on \d+ images, ([\d.]+)")[0]
        quant_acc = metric(out, r"(?m)^Evaluation accuracy on \d+ images, ([\d.]+)")
        assert quant_acc and abs(quant_acc[0] - float_acc) <= 6, (float_acc, quant_acc)
        loss_f, loss_q = re.search(r"loss float ([\d.]+) quantized ([\d.]+)", out).groups()
        assert abs(float(loss_f) - float(loss_q)) < 0.1


# Set Q: PyTorch's quantization tutorials (dynamic, eager static PTQ, QAT)
PROGRAMS_Q = [
    Program("quant_dynamic_lstm.py", first=r"train loss +([\d.]+)",
            trends=[Trend(r"train loss +([\d.]+)", 0.95, 0.1)],
            extra=_dynamic_close_to_float),
    Program("quant_static_ptq.py", first=r"epoch 0 loss ([\d.]+)",
            trends=[Trend(r"epoch \d loss ([\d.]+)", 0.95, 0.3)], extra=_ptq_keeps_accuracy),
    Program("quant_aware_training.py", first=r"Epoch 0: loss ([\d.]+)",
            trends=[Trend(r"Epoch \d: loss ([\d.]+)", 0.9, 0.2)],
            extra=_qat_converts_faithfully),
]
PROGRAM_SPECS += PROGRAMS_Q


# -- set L: audio, recommendation, time series and scientific ML -------------------------

def _speech_decodes(t_out: str, e_out: str) -> None:
    # the STFT inverts; greedy CTC decoding reads some characters right
    for out in (t_out, e_out):
        assert metric(out, r"istft round-trip error ([\d.e+-]+)")[0] < 1e-5
        assert metric(out, r"Average CER: ([\d.]+)")[-1] < 0.6


def _recommenders_rank(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert metric(out, r"reloaded HR@10 ([\d.]+)")[0] >= 0.8
        assert metric(out, r"accuracy ([\d.]+) %")[-1] > 70
        assert "embedding grad torch.sparse_coo True" in out


def _anomalies_found(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert metric(out, r"Correct normal predictions: (\d+)/32")[0] >= 24
        assert metric(out, r"Correct anomaly predictions: (\d+)/32")[0] >= 28


def _hnn_conserves_energy(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        baseline, hnn = metric(out, r"(?:baseline|HNN) ([\d.]+)")[-2:]
        assert hnn < baseline, (baseline, hnn)


def _uncertainty_grows_away_from_data(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        std_in, std_out = re.search(r"predictive std in ([\d.]+) out ([\d.]+)", out).groups()
        assert float(std_out) > float(std_in)
        assert "out > in: True" in out and "deterministic: True" in out
        assert "weights sum 1.0000" in out


def _kalman_filters(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        observed, filtered, smoothed = (float(v) for v in re.search(
            r"observed ([\d.]+) filtered ([\d.]+) smoothed ([\d.]+)", out).groups())
        assert smoothed < filtered < observed
        assert "symmetric: True" in out and "positive definite: True" in out


def _pose_recovered(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        angle, scale = (float(v) for v in re.findall(r"angle ([\d.-]+) scale ([\d.]+)", out)[-1])
        assert abs(angle - 0.5) < 0.05 and abs(scale - 0.8) < 0.02


def _sac_targets_frozen(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert "target requires_grad: False" in out
        assert metric(out, r"TestEpRet ([-\d.]+)")[-1] > -5


def _a2c_balances(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert metric(out, r"mean/median reward ([\d.]+)")[-1] > 40
        assert "greedy action at the upright state [[" in out


def _adjoint_is_backprop(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert "prediction torch.Size([12, 1, 2]) OdeintAdjointMethodBackward" in out
        assert "adjoint grads match backprop: True" in out


PROGRAMS_L = [
    Program("speech_ctc.py", trends=[Trend(r"Average loss: ([\d.]+)", 0.5, 0.3)],
            same=r"(mel filterbank .*)", first=r"\tLoss: ([\d.]+)", extra=_speech_decodes,
            long=True),
    Program("recsys_ncf_dlrm.py", trends=[Trend(r"BPR loss: ([\d.]+)", 0.7, 0.3),
                                          Trend(r"HR: ([\d.]+)", 1.5, 0.5, rises=True),
                                          Trend(r"it \d+/\d+, loss ([\d.]+)", 0.8, 0.3)],
            same=r"(train interactions .*)", first=r"BPR loss: ([\d.]+)",
            extra=_recommenders_rank, long=True),
    Program("tcn_forecast.py", trends=[Trend(r"\| train loss ([\d.]+)", 0.5, 0.3),
                                       Trend(r"test RMSE ([\d.]+)", 0.9, 0.5),
                                       Trend(r": train loss ([\d.]+) val", 0.8, 0.3)],
            same=r"(series .*)", first=r"\| train loss ([\d.]+)", extra=_anomalies_found,
            long=True),
    Program("neural_ode_hnn.py", trends=[Trend(r"running loss ([\d.]+)", 0.8, 0.3),
                                         Trend(r"HNN step \d+, train_loss ([\d.e+-]+)", 0.1, 0.1)],
            same=r"(true_y .*)", first=r"Total Loss ([\d.]+)", extra=_hnn_conserves_energy,
            long=True),
    Program("bayesian_uncertainty.py",
            trends=[Trend(r"BBB epoch +\d+ loss ([\d.]+)", 0.6, 0.3),
                    Trend(r"MC dropout epoch +\d+ mse ([\d.]+)", 0.2, 0.3),
                    Trend(r"MDN step +\d+ nll ([-\d.]+)", 0.3, 0.3)],
            first=r"BBB epoch +0 loss ([\d.]+)", extra=_uncertainty_grows_away_from_data,
            long=True),
    Program("kalman_ssm.py", trends=[Trend(r"nll/step ([\d.]+)", 0.6, 0.3)],
            first=r"iter +0 nll/step ([\d.]+)", extra=_kalman_filters, long=True),
    Program("diff_render_spring.py", trends=[Trend(r"image loss ([\d.]+)", 0.01, 0.1),
                                             Trend(r"dist to goal ([\d.]+)", 0.3, 0.3)],
            same=r"(sprite .*)", first=r"image loss ([\d.]+)", extra=_pose_recovered, long=True),
    Program("sac_continuous.py", trends=[Trend(r"TestEpRet ([-\d.]+)", 0.5, 0.3, rises=True),
                                         Trend(r"LossQ ([\d.]+)", 0.5, 0.3)],
            first=r"LossQ ([\d.]+)", extra=_sac_targets_frozen, long=True),
    Program("a2c_gae.py", trends=[Trend(r"mean/median reward ([\d.]+)", 1.5, 0.5, rises=True),
                                  Trend(r"entropy ([\d.]+)", 0.95, 0.3)],
            first=r"value loss ([\d.]+)", extra=_a2c_balances, long=True),
    Program("neural_ode_adjoint.py", trends=[Trend(r"\| Loss ([\d.]+)", 0.6, 0.2)],
            first=r"\| Loss ([\d.]+)", extra=_adjoint_is_backprop, long=True),
]
PROGRAM_SPECS += PROGRAMS_L


# -- set R: vision and structured models (detection and segmentation heads, cellular
# automata, pose, few-shot and anomaly detection) ------------------------------------------

def _detections_found(t_out: str, e_out: str) -> None:
    # the decoding helpers on a fixed map agree exactly; both detectors find objects
    for out in (t_out, e_out):
        assert "nms peaks [[0, 0, 1, 2], [0, 1, 4, 4], [0, 1, 5, 0]]" in out
        found = re.findall(r"image \d: (\d) objects, (\d) detections", out)
        assert sum(int(d) > 0 for _, d in found) >= 2, found
    assert re.findall(r"gathered .*\n.*\n.*", e_out) == re.findall(r"gathered .*\n.*\n.*",
                                                                    t_out)


def _segmenters_score(t_out: str, e_out: str) -> None:
    # PSPNet learns the shapes; both runs compute the same IoUs two ways
    for out in (t_out, e_out):
        assert metric(out, r"mean IoU: ([\d.]+)")[-1] > 40
        ious = metric(out, r"mean IoU: ([\d.]+)")
        assert [round(v * 100, 1) for v in metric(out, r"mIoU ([\d.]+)")] == \
            pytest.approx(ious, abs=0.11)


def _pixels_classified(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert metric(out, r"pixel acc ([\d.]+)")[0] > 0.6


def _classifier_learns(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert metric(out, r"Test:  Acc@1 ([\d.]+)")[0] > 20
        assert "milestones [2] last_epoch 6" in out


def _joints_located(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert metric(out, r"PCK@0.2 hard ([\d.]+)")[0] > 0.3


def _episodes_classified(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert "agree True" in out
        assert metric(out, r"Test Acc: ([\d.]+)")[0] > 0.5


def _anomalies_ranked(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        aucs = metric(out, r"Test set AUC: ([\d.]+)%")
        assert len(aucs) == 2 and min(aucs) > 90
        assert metric(out, r"rank-sum AUC: ([\d.]+)%") == aucs
        assert "AUC (fixed scores) tensor(0.8889)" in out


PROGRAMS_R30 = [
    Program("centernet_head.py", trends=[Trend(r"\]  loss ([\d.]+)", 0.3, 0.3)],
            same=r"(gaussian radius .*)", first=r"\]  loss ([\d.]+)", extra=_detections_found,
            long=True),
    Program("deeplab_pspnet.py", trends=[Trend(r"deeplabv3 epoch \d loss ([\d.]+)", 0.6, 0.3),
                                         Trend(r"pspnet epoch \d loss ([\d.]+)", 0.4, 0.3)],
            same=r"(interpolate .*)", first=r"deeplabv3 epoch 0 loss ([\d.]+)",
            extra=_segmenters_score, long=True),
    Program("growing_nca.py", trends=[Trend(r"steps \d+, loss = ([\d.]+)", 0.95, 0.3)],
            same=r"(target .*)", first=r"steps \d+, loss = ([\d.]+)", long=True),
    Program("segformer_lite.py", trends=[Trend(r"iter \d+ loss ([\d.]+)", 0.7, 0.3)],
            first=r"iter \d+ loss ([\d.]+)", extra=_pixels_classified, long=True),
    Program("resnext_se.py", trends=[Trend(r"\tLoss [\d.e+-]+ \(([\d.e+-]+)\)", 0.9, 0.3)],
            first=r"\tLoss [\d.e+-]+ \(([\d.e+-]+)\)", extra=_classifier_learns, long=True),
    Program("stacked_hourglass.py", trends=[Trend(r"iter +\d+ loss ([\d.]+)", 0.3, 0.3)],
            first=r"iter +\d+ loss ([\d.]+)", extra=_joints_located, long=True),
    Program("protonet_fewshot.py", trends=[Trend(r"Avg Train Loss: ([\d.]+)", 0.8, 0.5)],
            same=r"(train .*)", first=r"Avg Train Loss: ([\d.]+)", extra=_episodes_classified,
            long=True),
    Program("deep_svdd.py", trends=[Trend(r"AE Epoch \d/\d\t Loss: ([\d.]+)", 0.9, 0.1),
                                    Trend(r"one-class Epoch \d/\d\t Loss: ([\d.]+)", 0.3, 0.1)],
            same=r"(train torch.*)", first=r"AE Epoch 1/\d\t Loss: ([\d.]+)",
            extra=_anomalies_ranked, long=True),
]
PROGRAM_SPECS += PROGRAMS_R30


# -- set T: vision, audio, time series, detection and molecules (ShuffleNet/GhostNet,
# Inception-v3, HiFi-GAN, PatchTST/DLinear, TFT, an SSD box pipeline, Tacotron 2, SchNet) --

def _boxes_matched(t_out: str, e_out: str) -> None:
    # the box helpers agree exactly; the trained detector finds some of the objects
    for out in (t_out, e_out):
        assert "nms keep [3, 0]" in out and "batched_nms keep [3, 0, 1]" in out
        found = metric(out, r"found (\d)")
        assert len(found) == 4


def _vocoder_pieces_agree(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert "old checkpoint <All keys matched successfully> True" in out
        assert "after removal ['bias', 'weight']" in out


def _forces_differentiable(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert "forces torch.Size([30, 3]) True True" in out
        assert "translation invariant True" in out


def _tacotron_masks(t_out: str, e_out: str) -> None:
    for out in (t_out, e_out):
        assert "arange out tensor([0, 1, 2, 3]) True torch.int64" in out
        assert "padded mel zero True gate padded 1e3 1000.0" in out


PROGRAMS_T31 = [
    Program("shufflenet_ghostnet.py",
            trends=[Trend(r"step +\d+ lr [\d.]+ loss ([\d.]+)", 0.9, 0.3)],
            same=r"(shuffled channels .*|chunk .*|transposed .*|hard_sigmoid .*|"
                 r"make_divisible .*)",
            first=r"step +\d+ lr [\d.]+ loss ([\d.]+)", long=True),
    Program("inception_v3_lite.py",
            trends=[Trend(r"epoch +\d+ lr [\d.]+ loss ([\d.]+)", 0.8, 0.3)],
            same=r"(InceptionOutputs .*|tuple unpack .*|eval output .*|state_dict keys .*)",
            first=r"epoch +\d+ lr [\d.]+ loss ([\d.]+)", long=True),
    Program("hifigan_lite.py", trends=[Trend(r"Mel-Spec. Error : ([\d.]+)", 0.9, 0.3)],
            same=r"(weight_norm params .*|parametrized .*|convtranspose out .*|generated .*|"
                 r"mpd outputs .*|fmap shapes .*)",
            first=r"Gen Loss Total : ([\d.]+)", extra=_vocoder_pieces_agree, long=True),
    Program("patchtst_dlinear.py",
            trends=[Trend(r"DLinear Epoch: \d+ \| Train Loss: ([\d.]+)", 0.5, 0.3),
                    Trend(r"PatchTST Epoch: \d+ \| Train Loss: ([\d.]+)", 0.5, 0.3)],
            same=r"(series .*|windows .*|decomp .*|repeat .*|unfold .*|periods .*|rfft .*)",
            first=r"DLinear Epoch: \d+ \| Train Loss: ([\d.]+)", long=True),
    Program("tft_lite.py", trends=[Trend(r"epoch \d train_loss ([\d.]+)", 0.5, 0.3)],
            same=r"(glu .*|quantile losses .*|one_hot .*|data .*|max .*)",
            first=r"epoch \d train_loss ([\d.]+)", long=True),
    Program("ssd_box_pipeline.py", trends=[Trend(r"iter +\d+ loss ([\d.]+)", 0.8, 0.3)],
            same=r"(jaccard agrees .*|grid anchors .*|meshgrid .*|index_fill_ .*|focal sum .*|"
                 r"targets .*|priors .*)",
            first=r"iter +\d+ loss ([\d.]+)", extra=_boxes_matched, long=True),
    Program("tacotron2_lite.py", trends=[Trend(r"Train loss \d+ ([\d.]+)", 0.95, 0.3)],
            same=r"(mask .*|collated .*|packed .*|pad_packed .*|bce pos_weight .*)",
            first=r"Train loss \d+ ([\d.]+)", extra=_tacotron_masks, long=True),
    Program("schnet_lite.py", trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.3, 0.3)],
            same=r"(shifted softplus .*|gaussians .*|radius graph .*|nonzero .*|scatter_add .*|"
                 r"index_add alpha .*|data .*|energies .*)",
            first=r"step +\d+ loss ([\d.]+)", extra=_forces_differentiable, long=True),
]
PROGRAM_SPECS += PROGRAMS_T31

# set V: Whisper's log-mel encoder (stft, mel matmul, log10 clamp, sinusoids, MHA + SDPA),
# GATv2 graph utilities, PointNet++ set abstraction, FPN + RoIAlign by grid_sample
PROGRAMS_V31 = [
    Program("whisper_encoder.py", trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.8, 0.3)],
            same=r"(audio .*|hann window .*|stft .*|filters .*|mel .*|sinusoids .*|"
                 r"buffers .*|encoder out .*|accuracy .*|sdpa mask agrees .*)",
            first=r"step +\d+ loss ([\d.]+)", long=True),
    Program("gatv2_graph.py", trends=[Trend(r"Epoch: \d+, Loss: ([\d.]+)", 0.6, 0.3)],
            same=r"(edge_index .*|coalesced .*|self loops .*|degree .*|unique .*|adj .*|"
                 r"small .*|sparse.mm .*|attention .*|Test accuracy .*)",
            first=r"Epoch: \d+, Loss: ([\d.]+)", long=True),
    Program("pointnet2_ssg.py", trends=[Trend(r"Epoch \d+ lr [\d.]+ loss ([\d.]+)", 0.6, 0.3)],
            same=r"(points .*|square_distance .*|fps .*|index_points .*|ball query .*|"
                 r"grouped .*|group_all .*|max over samples .*|argmax .*|gather .*|sort .*|"
                 r"eval .*|Epoch \d+ lr [\d.]+ )",
            first=r"first batch loss ([\d.]+)", long=True),
    Program("fpn_roialign.py", trends=[Trend(r"iter +\d+ lr [\d.]+ loss ([\d.]+)", 0.8, 0.3)],
            same=r"(images .*|nearest .*|maxpool .*|affine grid .*|grid sample .*|roi_align .*|"
                 r"encode .*|decode .*|box_iou .*|levels .*|smooth_l1 .*|fpn .*|eval .*)",
            first=r"iter +\d+ lr [\d.]+ loss ([\d.]+)", long=True),
]
PROGRAM_SPECS += PROGRAMS_V31

# set Y: the utility layers programs lean on: torch.utils.data (samplers, splits, collation,
# packing), torch.autograd.functional and torch.func, LR schedulers and optimizer state,
# parametrizations and module hooks/utilities
PROGRAMS_Y32 = [
    Program("data_utils_tour.py", trends=[Trend(r"epoch \d+ loss ([\d.]+)", 0.5, 0.3)],
            same=r"((?:stream|tensor dataset|split|subset|concat|sequential|random|weighted|"
                 r"batch sampler|collate|loader|padded|packed|unpacked|toy sample|val size) .*)",
            first=r"epoch \d+ loss ([\d.]+)", long=True),
    Program("autograd_functional_tour.py",
            trends=[Trend(r"gauss-newton step \d+ loss ([\d.]+)", 0.01, 0.01),
                    Trend(r"(?m)^newton step \d+ loss ([\d.]+)", 0.1, 0.01)],
            same=r"((?:jacobian|hessian|hvp|vhp|vjp|jvp|strict error|non-strict|allow_unused|"
                 r"materialize_grads|retain_graph|unused error|double backward|grad_outputs|"
                 r"gradcheck|gradgradcheck|func|grad_and_value|jacrev|jacfwd|vmap|per-example|"
                 r"tied|functional_call|grad over dict|per-sample|setup_context|recovered) .*)",
            first=r"gauss-newton step \d+ loss ([\d.]+)", long=True),
    Program("scheduler_state_tour.py",
            trends=[Trend(r"step +\d+ lr [\d.]+ [\d.]+ loss ([\d.]+)", 0.3, 0.3)],
            same=r"((?:onecycle|warm restarts|plateau|sequential|chained|cyclic|polynomial|"
                 r"stacked|multistep|swalr|groups|zero_grad|optimizer|scheduler|resumed|load error|"
                 r"steplr) .*|step +\d+ lr [\d.]+ [\d.]+ )",
            first=r"step +\d+ lr [\d.]+ [\d.]+ loss ([\d.]+)", long=True),
    Program("parametrize_module_utils.py",
            trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.95, 0.3)],
            same=r"((?:symmetric|original shape|state_dict|named|chained|after|cached|uncached|"
                 r"removed|right_inverse|orthogonal|unitary|spectral|weight_norm|hook|hooks|load|"
                 r"missing|strict load|shape error|parameters|to float64|requires_grad_|partial|"
                 r"get_submodule|set_submodule|get_parameter|extra_repr|grad-cam|train accuracy|"
                 r"classifier keys) .*)",
            first=r"step +\d+ loss ([\d.]+)", long=True),
]
PROGRAM_SPECS += PROGRAMS_Y32

# set W: DPO preference training (frozen deepcopy reference, gathered log-probs, logsigmoid,
# top-p sampling), Conv-TasNet (PReLU, GroupNorm gLN, dilated depthwise Conv1d,
# ConvTranspose1d, fold overlap-add, PIT SI-SNR), neural spline flows (searchsorted, gather,
# softplus, Independent(Normal)), EGNN (combinations, triu_indices, scatter_add_, qr rotations)
PROGRAMS_W32 = [
    Program("dpo_preference.py",
            trends=[Trend(r"step +\d+ lr [\d.]+ loss ([\d.]+)", 0.9, 0.3)],
            same=r"(TinyLM.*|parameters .*|tied .*|reference .*|deepcopy .*|batch logps .*|"
                 r"losses .*|logsigmoid .*|schedule .*|top_p .*|loss grad_fn .*|generated .*)",
            first=r"step +\d+ lr [\d.]+ loss ([\d.]+)", long=True),
    Program("conv_tasnet.py", trends=[Trend(r"step +\d+ loss (-?[\d.]+)", 0.5, 0.5)],
            same=r"(parameters .*|prelu .*|fold ola .*|convtranspose ola .*|unfold .*|"
                 r"fold/unfold .*|gLN .*|pad .*|mixture torch.*)",
            first=r"step +\d+ loss (-?[\d.]+)", long=True),
    Program("neural_spline_flow.py",
            trends=[Trend(r"epoch +\d+ lr [\d.]+ nll ([\d.]+)", 0.7, 0.3)],
            same=r"(spline .*|logabsdet .*|inverse .*|searchsorted .*|softplus const .*|"
                 r"pad cumsum .*|gather .*|dy/dx .*|data .*|base .*|parameters .*|samples .*|"
                 r"coupling invertible .*)",
            first=r"epoch +\d+ lr [\d.]+ nll ([\d.]+)", long=True),
    Program("egnn.py", trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.5, 0.3)],
            same=r"(edges .*|combinations .*|triu_indices .*|undirected .*|segment .*|"
                 r"index_add_ .*|scatter_reduce .*|vector_norm .*|parameters .*|coord layer .*|"
                 r"rotation .*|h invariant .*|x equivariant .*|outputs .*|trained .*)",
            first=r"step +\d+ loss ([\d.]+)", long=True),
]
PROGRAM_SPECS += PROGRAMS_W32

# set AA (session 33): memory-saving training (activation checkpointing, saved-tensor
# hooks, optimizer in backward), sparse embeddings and recommenders, Transformer-XL,
# sliding-window attention
PROGRAMS_AA33 = [
    Program("checkpoint_memory.py",
            trends=[Trend(r"accum step +\d+ loss ([\d.]+)", 0.9, 0.3),
                    Trend(r"in-backward step +\d+ loss ([\d.]+)", 0.8, 0.3)],
            same=r"(Encoder.*|.*grads bitwise equal.*|kwargs grads .*|reentrant kwargs.*|"
                 r"checkpoint_sequential .*|selective checkpoint .*|ValueError.*|"
                 r"RuntimeError.*|packed .*|save_on_cpu .*|saved self .*|  pack .*|"
                 r"grad via hooks .*|set_to_none.*|hook order .*|grads after hooks .*|"
                 r"after remove .*)",
            first=r"accum step +\d+ loss ([\d.]+)", long=True),
    Program("sparse_embedding_recsys.py",
            trends=[Trend(r"epoch +\d+ loss ([\d.]+)", 0.8, 0.3)],
            same=r"(EmbeddingBag.*|Embedding\(.*|2D input .*|padding mean .*|functional .*|"
                 r"\w+Error.*|\[ torch.*|is_sparse .*|nnz before .*|coalesced .*|dense equal .*|"
                 r"micro .*|after many .*|bag grad .*|renormed rows .*|lookup .*|"
                 r"user grad sparse .*|SparseAdam state .*|    \w+: .*)",
            first=r"epoch +\d+ loss ([\d.]+)", long=True),
    Program("transformer_xl.py",
            trends=[Trend(r"\| step +\d+ \| lr [\d.e-]+ \| loss +([\d.]+)", 1.0, 0.3)],
            same=r"(rel_shift .*|pos_emb .*|outer == ger .*|mask .*|bool mask .*|where .*|"
                 r"div_value=4 .*|"
                 r"\w+Error: .*|crit .*|#params .*|data .*|mems .*|log_prob .*|predict .*|"
                 r"asm output .*|.*Linear\(.*|.*LayerNorm\(.*|.*Embedding\(.*)",
            first=r"\| step +\d+ \| lr [\d.e-]+ \| loss +([\d.]+)", long=True),
    Program("longformer_sliding_window.py",
            trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.8, 0.3)],
            same=r"(chunk .*|unfold .*|onnx chunk .*|pad_and_.*|invalid locations .*|band .*|"
                 r"context == dense .*|all -inf .*|finfo.*|min-masked .*|local .*|global .*|"
                 r".*Linear\(.*|.*LayerNorm\(.*|.*Embedding\(.*|parameters .*)",
            first=r"step +\d+ loss ([\d.]+)", long=True),
]
PROGRAM_SPECS += PROGRAMS_AA33

# set Z: library tours as notebooks write them: torch.distributions (families, transforms,
# kl_divergence, constraints, biject_to, validate_args errors), torch.linalg, torch.fft,
# RNG and reproducibility (generators, states, fork_rng, nn.init)
PROGRAMS_Z33 = [
    Program("distributions_tour.py", trends=[Trend(r"vi step +\d+ loss ([\d.]+)", 0.1, 0.3)],
            same=r"(?m)^(?!sample values|vi |compose forward|gmm2 |\s).*",
            first=r"vi step +\d+ loss ([\d.]+)", long=True),
    Program("linalg_tour.py", trends=[Trend(r"lsq step +\d+ loss ([\d.]+)", 0.2, 0.3)],
            same=r"(?m)^(?!svd S|matrix_norm nuc|lsq step|batched det|svdvals|eigvalsh|det |"
                 r"vector_norm dim|\s).*",
            first=r"lsq step +\d+ loss ([\d.]+)", long=True),
    Program("fft_tour.py", trends=[Trend(r"spectral step +\d+ loss ([\d.]+)", 0.8, 0.3)],
            same=r"(?m)^(?!spectral step|\s).*",
            first=r"spectral step +\d+ loss ([\d.]+)", long=True),
    Program("rng_tour.py", trends=[Trend(r"seeded step +\d+ loss ([\d.]+)", 0.5, 0.3)],
            same=r"(?m)^(?:manual_seed|initial_seed|randint dtypes|rand scalar|generator manual|"
                 r"state|two generators|seed\(\)|default_generator|rng state|set_rng_state|"
                 r"fork_rng restored|torch.random.manual_seed|torch.seed|dropout eval|"
                 r"orthogonal gain|calculate_gain|fan|gain error|rng error|deterministic|"
                 r"warn_only|cudnn|runs identical|worker batch) .*",
            first=r"seeded step +\d+ loss ([\d.]+)", long=True),
]
PROGRAM_SPECS += PROGRAMS_Z33

# set AC (session 34): decoding and detection as libraries write them: fairseq /
# HuggingFace-style beam search (beams flattened into the batch, topk over beam * vocab,
# eos masking, length penalty, n-best lists), top-k / nucleus sampling with multinomial;
# RetinaNet targets and COCO-style AP (anchors by meshgrid, BoxCoder, Matcher with
# low-quality matches, sigmoid focal loss, batched NMS by coordinate offsets, cummax AP);
# graph pooling (scatter_reduce both include_self ways, index_reduce_, bincount, CSR
# segment sums, kNN graphs by cdist + topk(largest=False))
PROGRAMS_AC34 = [
    Program("beam_search_generate.py", trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.5, 0.3)],
            same=r"(?m)^(?!step +\d+ loss).*",
            first=r"step +\d+ loss ([\d.]+)", long=True),
    Program("retinanet_losses_map.py",
            trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.6, 0.3)],
            same=r"(?m)^(?!step +\d+ loss|detections|AP per class).*",
            first=r"step +\d+ loss ([\d.]+)", long=True),
    Program("graph_pooling_scatter.py",
            trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.5, 0.3)],
            same=r"(?m)^(?!step +\d+ loss).*",
            first=r"step +\d+ loss ([\d.]+)", long=True),
]
PROGRAM_SPECS += PROGRAMS_AC34

# torch.nn.attention.flex_attention run eagerly, as attention-gym's examples use it: block
# masks (causal, sliding window, prefix-LM, document masking; and_masks/or_masks), their
# pictures, sparsity and int32 block tables; ALiBi, soft-capping and relative-position
# score_mods checked against scaled_dot_product_attention; GQA; logsumexp; a learnable
# relative-position table captured by the score_mod, trained
PROGRAMS_FLEX35 = [
    Program("flex_attention_gym.py", trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.2, 0.3)],
            same=r"(?m)^(?!step +\d+ loss).*?(?=checksum|$)",
            first=r"step +\d+ loss ([\d.]+)", long=True),
]
PROGRAM_SPECS += PROGRAMS_FLEX35

# set AD (session 35): HuggingFace-style LLM and encoder-decoder inference: Qwen2 / Gemma2
# decoders (float32 RMSNorm, rotary buffers, GQA by repeat_kv and SDPA's enable_gqa, soft-capping,
# sliding windows, dynamic and static key/value caches, greedy and sampled decoding, bfloat16);
# BART-style encoder-decoder (4-D additive masks, cross-attention caches, label smoothing,
# warmup schedules, pad_sequence padding_side); Mixtral / DeepSeek / Qwen2-MoE expert routing
# (one_hot masks, index_add_, group-limited top-k, sorted dispatch, load-balancing loss)
PROGRAMS_AD35 = [
    Program("qwen2_gemma2_decode.py", trends=[Trend(r"train step +\d+ loss ([\d.]+)", 0.1, 0.3)],
            same=r"(?m)^(?!.*step \d+ ).*",
            first=r"train step +\d+ loss ([\d.]+)", long=True),
    Program("bart_seq2seq_cache.py", trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.8, 0.3)],
            same=r"(?m)^(?!step +\d+ loss|eval loss).*",
            first=r"step +\d+ loss ([\d.]+)", long=True),
    Program("mixtral_deepseek_moe.py", trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.6, 0.3)],
            same=r"(?m)^(?!step +\d+ loss|bias ).*",
            first=r"step +\d+ loss ([\d.]+)", long=True),
]
PROGRAM_SPECS += PROGRAMS_AD35

# set AH (session 37): sparse COO and CSR tensors as GNN and recommender code uses them
# (construction, coalescing, conversions, sparse x dense products and their gradients,
# sparse.sum/softmax, cat, repr, storage errors, a GCN over a normalised adjacency, sparse
# embedding gradients with SGD and SparseAdam); every built-in optimizer and lr scheduler
PROGRAMS_AH37 = [
    Program("sparse_tensor_tour.py", trends=[Trend(r"step +\d+ loss ([\d.]+)", 0.5, 0.3)],
            same=r"(?m)^(?!step +\d+ loss).*",
            first=r"step +\d+ loss ([\d.]+)", long=True),
    # float64 parameters from fixed data, printed to 12 digits: the same text
    Program("optim_flags_matrix.py", same=r"(?m)^.*", long=True),
]
PROGRAM_SPECS += PROGRAMS_AH37


def _numbers_close(t_out: str, e_out: str) -> None:
    """Every printed number within float32 rounding of PyTorch's (the random stream is
    PyTorch's; ember's Jacobian-vector products come from double backward, not forward
    formulas, so a last printed digit may differ)."""
    if not SAME_STREAMS:
        return
    for t_line, e_line in zip(t_out.splitlines(), e_out.splitlines()):
        t_nums, e_nums = NUMBER.findall(t_line), NUMBER.findall(e_line)
        assert len(t_nums) == len(e_nums), (t_line, e_line)
        for a, b in zip(t_nums, e_nums):
            assert math.isclose(float(a), float(b), rel_tol=1e-4, abs_tol=2e-5), (t_line, e_line)


# set AI (session 38): torch.func as research code drives it (grad/vjp/jvp/jacrev/jacfwd with
# argnums and has_aux, hessian, vmap in_dims pytrees / out_dims / chunk_size / randomness,
# functional_call with (params, buffers), stack_module_state ensembles, linearize,
# autograd.functional strategies, dual numbers with a custom jvp, transforms' errors); nn.Module
# and nn.init as libraries drive them (every init seeded, named_modules/parameters variants, tied
# weights, load_state_dict strictness and errors, state_dict and forward/backward hooks,
# containers and their reprs, dtype/memory-format moves, registration and attribute errors)
PROGRAMS_AI38 = [
    Program("func_transforms_research.py", extra=_numbers_close, long=True),
    # seeded initial weights and fixed data: the same text
    Program("module_init_api.py", same=r"(?m)^.*", long=True),
]
PROGRAM_SPECS += PROGRAMS_AI38

PROGRAMS_AK39 = [
    # indexing (basic, advanced, masks, several ellipses, setitem), index_put_/index_add_/
    # index_copy_/index_fill_/index_reduce_, scatter and scatter_reduce, gather, take, masked
    # ops, nonzero/where, their gradients and errors: arange data, the same text
    Program("indexing_scatter_tour.py", same=r"(?m)^.*", long=True),
    # view/reshape rules, strides and offsets, as_strided/unfold, expand/repeat, splits,
    # permutations, dtype and complex views, which ops share storage, in-place writes through
    # views, memory-overlap errors, the version counter: the same text
    Program("views_strides_memory.py", same=r"(?m)^.*", long=True),
]
PROGRAM_SPECS += PROGRAMS_AK39


# set AM (session 39): nn layers as model code configures them, with their non-default
# options (conv padding modes / 'same' / groups, transposed output_size, pools with ceil_mode,
# divisor_override and unpooling, norms without affine or running stats, embedding bags,
# every upsample mode, folds and shuffles, parameterised activations), their reprs and
# rank errors; RNN/LSTM/GRU, packed sequences, MultiheadAttention and Transformer layers
# with their options, and scaled_dot_product_attention
def _stats_close(t_out: str, e_out: str) -> None:
    """Every printed number within float32 rounding of PyTorch's, NaN and infinities the
    same words."""
    for t_line, e_line in zip(t_out.splitlines(), e_out.splitlines()):
        t_nums = re.findall(r"-?(?:nan|inf|\d+\.?\d*(?:e[-+]?\d+)?)", t_line)
        e_nums = re.findall(r"-?(?:nan|inf|\d+\.?\d*(?:e[-+]?\d+)?)", e_line)
        assert len(t_nums) == len(e_nums), (t_line, e_line)
        for a, b in zip(t_nums, e_nums):
            if a != b:
                assert math.isclose(float(a), float(b), rel_tol=1e-4, abs_tol=2e-4), \
                    (t_line, e_line)


PROGRAMS_AM39 = [
    # seeded weights: reprs, shapes and errors the same text; printed statistics within
    # float32 rounding (a last digit of a sum may differ)
    Program("nn_layers_zoo.py", same=r"(?m)^(?!.*(sum=|\[-?\d)).*", extra=_stats_close,
            long=True),
    Program("rnn_attention_options.py", same=r"(?m)^(?!.*(sum=|\[-?\d)).*",
            extra=_stats_close, long=True),
]
PROGRAM_SPECS += PROGRAMS_AM39


def _start(prog: Program, workdir: Path, alias: bool) -> subprocess.Popen:
    workdir.mkdir()
    cmd = [sys.executable, "-W", "ignore"] + (["-m", "ember.run"] if alias else []) + \
        [str(PROGRAMS / prog.script), *prog.args]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        OMP_NUM_THREADS="1", **prog.env)  # the two runs share the machine's cores
    return subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen, who: str, prog: Program) -> str:
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{prog.script} under {who} timed out:\n{err[-3000:]}")
    assert proc.returncode == 0, f"{prog.script} under {who} failed:\n{err[-4000:]}"
    return out


def _params():
    for prog in PROGRAM_SPECS:
        marks = [pytest.mark.long] if prog.long else []
        yield pytest.param(prog, id=prog.script[:-3], marks=marks)


@pytest.mark.parametrize("prog", _params())
def test_program_runs_unchanged(prog: Program, tmp_path: Path) -> None:
    procs = {who: _start(prog, tmp_path / who, alias=who == "ember")
             for who in ("torch", "ember")}  # both at once: the machine has two cores
    outs = {who: _finish(proc, who, prog) for who, proc in procs.items()}
    t_out, e_out = outs["torch"], outs["ember"]

    assert skeleton(e_out) == skeleton(t_out), f"printed forms differ:\n{e_out}\n---\n{t_out}"
    for trend in prog.trends:
        trend.check(prog.script, t_out, e_out)
    if prog.same:
        assert re.findall(prog.same, e_out) == re.findall(prog.same, t_out)
    if prog.first and SAME_STREAMS:
        t0, e0 = metric(t_out, prog.first)[0], metric(e_out, prog.first)[0]
        assert math.isclose(e0, t0, rel_tol=1e-4), f"{prog.script}: first {e0} vs {t0}"
    if prog.extra:
        prog.extra(t_out, e_out)


# -- the alias itself -------------------------------------------------------------------

def _run_alias(tmp_path: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    script = tmp_path / "prog.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ember.run", str(script), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_alias_maps_every_torch_submodule(tmp_path: Path) -> None:
    proc = _run_alias(tmp_path, """
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.optim.lr_scheduler import StepLR
import ember, ember.nn.functional, ember.utils.data, ember.optim.lr_scheduler
import helper_mod  # the script's folder is on sys.path, as with `python prog.py`
assert torch is ember and nn is ember.nn and F is ember.nn.functional
assert DataLoader is ember.utils.data.DataLoader and StepLR is ember.optim.lr_scheduler.StepLR
assert sys.modules["torch.nn.functional"] is ember.nn.functional
from torch.nn.modules.utils import _pair, _triple
from torch.nn.modules.batchnorm import _BatchNorm
from torch.autograd.function import Function
assert _pair(3) == (3, 3) and _triple([1, 2, 3]) == (1, 2, 3)
assert isinstance(nn.BatchNorm2d(2), _BatchNorm) and Function is torch.autograd.Function
assert torch.version.cuda is None and torch.version.__version__ == torch.__version__
x = torch.ones(2, 3)
assert isinstance(x, torch.Tensor) and isinstance(nn.Linear(2, 2).weight, torch.nn.Parameter)
print(sys.argv[1:], __name__, helper_mod.VALUE + 1, x.shape, x.dtype, x.type())
try:
    import torch.no_such_module
except ModuleNotFoundError as err:
    print(err.name, "|", err)
""", "--flag", "3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == ("['--flag', '3'] __main__ 42 torch.Size([2, 3]) torch.float32 "
                        "torch.FloatTensor")
    assert lines[1].startswith("torch.no_such_module | No module named 'torch.no_such_module'")


def test_alias_runner_usage_and_exit_status(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    usage = subprocess.run([sys.executable, "-m", "ember.run"], env=env, capture_output=True,
                           text=True, timeout=60)
    assert usage.returncode == 2 and "usage: python -m ember.run" in usage.stderr
    failing = _run_alias(tmp_path, "import torch\nraise SystemExit(3)\n")
    assert failing.returncode == 3


def test_alias_reaches_spawned_children(tmp_path: Path) -> None:
    """mnist_hogwild's `mp.set_start_method('spawn')` + `mp.Process`: the child imports the
    script again, and its `import torch` must be ember too (a forked child inherits it)."""
    proc = _run_alias(tmp_path, """
import torch
import torch.multiprocessing as mp

def child(queue, t):
    import ember
    queue.put((torch.__name__, type(t) is ember.Tensor, str(t.dtype), (t * 2).tolist()))

if __name__ == "__main__":
    for method in ("spawn", "fork"):
        ctx = mp.get_context(method)
        queue = ctx.SimpleQueue()
        p = ctx.Process(target=child, args=(queue, torch.ones(2)))
        p.start()
        print(method, queue.get())
        p.join()
        assert p.exitcode == 0
""")
    assert proc.returncode == 0, proc.stderr
    for method, line in zip(("spawn", "fork"), proc.stdout.splitlines()):
        assert line == f"{method} ('ember', True, 'torch.float32', [2.0, 2.0])"


def test_alias_refuses_after_real_torch_and_uninstalls() -> None:
    from ember import torch_alias

    with pytest.raises(RuntimeError, match="the real torch is already imported"):
        torch_alias.install()  # this test module imported the real torch
    from multiprocessing import spawn

    assert not hasattr(spawn.get_preparation_data, "_ember_alias")  # nothing left behind
    assert repr(ember.float32) == "ember.float32" and repr(ember.Size([2])) == "ember.Size([2])"


# -- what the programs needed, against PyTorch ------------------------------------------

def test_tensor_class_is_the_default_dtype_constructor() -> None:
    import numpy as np

    for args in [(np.arange(3.0),), ([1, 2],), (np.arange(3),), ((2.5, 1),), ()]:
        t, e = torch.Tensor(*args), ember.Tensor(*args)
        assert str(e.dtype)[6:] == str(t.dtype)[6:] == "float32", args
        assert e.tolist() == t.tolist()
    assert tuple(ember.Tensor(2, 3).shape) == tuple(torch.Tensor(2, 3).shape) == (2, 3)
    assert tuple(ember.Tensor(ember.Size([4])).shape) == (4,)
    x = ember.tensor([1, 2])
    assert ember.Tensor(x) is x  # PyTorch: an alias of any tensor, of its dtype
    import pickle

    for d in (ember.float64, ember.int64, ember.bfloat16):  # unpickling keeps the dtype
        y = pickle.loads(pickle.dumps(ember.ones(2, dtype=d)))
        assert y.dtype is d and y.tolist() == [1, 1]
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ember.Tensor(2, -1)


def test_autograd_grad_only_inputs_gradient_penalty() -> None:
    import numpy as np

    values = np.random.RandomState(0).rand(4, 3).astype(np.float32)
    results = []
    for lib in (torch, ember):
        x = lib.tensor(values, requires_grad=True)
        out = (x ** 3).sum(1, keepdim=True)
        grads = lib.autograd.grad(outputs=out, inputs=x, grad_outputs=lib.ones(4, 1),
                                  create_graph=True, retain_graph=True, only_inputs=True)[0]
        penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
        penalty.backward()
        results.append((penalty.item(), x.grad.numpy()))
    assert math.isclose(results[0][0], results[1][0], rel_tol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5)
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        x = ember.ones(2, requires_grad=True)
        ember.autograd.grad(x.sum(), x, only_inputs=False)


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_finfo_matches_torch(name: str) -> None:
    t, e = torch.finfo(getattr(torch, name)), ember.finfo(getattr(ember, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert repr(e) == repr(t)


def test_iinfo_and_errors_match_torch() -> None:
    for name in ("uint8", "int8", "int16", "int32", "int64"):
        t, e = torch.iinfo(getattr(torch, name)), ember.iinfo(getattr(ember, name))
        assert (e.bits, e.min, e.max, e.dtype, repr(e)) == (t.bits, t.min, t.max, t.dtype,
                                                            repr(t))
    assert repr(ember.finfo()) == repr(torch.finfo())
    with pytest.raises(TypeError, match=r"finfo\(\) requires a floating point input type"):
        ember.finfo(ember.int64)
    with pytest.raises(TypeError, match=r"iinfo\(\) requires an integer input type"):
        ember.iinfo(ember.float32)


@pytest.mark.parametrize("options", [
    {"precision": 2}, {"precision": 6, "sci_mode": False}, {"sci_mode": True},
    {"threshold": 5, "edgeitems": 1}, {"profile": "short"}, {"profile": "full"},
    {"linewidth": 40}])
def test_set_printoptions_matches_torch(options: dict) -> None:
    import numpy as np

    values = np.random.RandomState(1).randn(3, 12).astype(np.float32) * 50
    try:
        torch.set_printoptions(**options)
        ember.set_printoptions(**options)
        assert repr(ember.tensor(values)) == repr(torch.tensor(values))
        assert repr(ember.tensor(values[0, :3])) == repr(torch.tensor(values[0, :3]))
    finally:
        torch.set_printoptions(profile="default", sci_mode=None)
        ember.set_printoptions(profile="default", sci_mode=None)
    assert ember.get_printoptions()["precision"] == 4


def test_num_threads_as_torch() -> None:
    saved = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
    finally:
        ember.set_num_threads(saved)
    for bad in (0, -1):
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            ember.set_num_threads(bad)
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            torch.set_num_threads(bad)


@pytest.mark.parametrize("kind", ["linear", "conv", "convtranspose"])
def test_spectral_norm_matches_torch(kind: str) -> None:
    import numpy as np

    def build(lib):
        lib.manual_seed(0)
        return {"linear": lambda: lib.nn.Linear(5, 4),
                "conv": lambda: lib.nn.Conv2d(2, 3, 3),
                "convtranspose": lambda: lib.nn.ConvTranspose2d(2, 3, 3)}[kind]()

    t_mod = torch.nn.utils.spectral_norm(build(torch), n_power_iterations=2)
    e_mod = ember.nn.utils.spectral_norm(build(ember), n_power_iterations=2)
    assert sorted(e_mod.state_dict()) == sorted(t_mod.state_dict())
    e_mod.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_mod.state_dict().items()})
    x = np.random.RandomState(0).randn(2, 5) if kind == "linear" else \
        np.random.RandomState(0).randn(1, 2, 5, 5)
    x = x.astype(np.float32)
    for _ in range(2):  # two training forwards: the power iteration updates u and v
        t_out, e_out = t_mod(torch.tensor(x)), e_mod(ember.tensor(x))
    t_out.sum().backward()
    e_out.sum().backward()
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(e_mod.weight_u.numpy(), t_mod.weight_u.numpy(), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(e_mod.weight_orig.grad.numpy(), t_mod.weight_orig.grad.numpy(),
                               rtol=1e-4, atol=1e-5)
    t_mod.eval()
    e_mod.eval()  # eval: no power iteration, the same sigma
    np.testing.assert_allclose(e_mod(ember.tensor(x)).detach().numpy(),
                               t_mod(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    ember.nn.utils.remove_spectral_norm(e_mod)
    assert sorted(e_mod.state_dict()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        ember.nn.utils.remove_spectral_norm(e_mod)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(dim) -> None:
    import numpy as np

    w = np.random.RandomState(2).randn(3, 2, 3, 3).astype(np.float32)
    x = np.random.RandomState(3).randn(1, 2, 5, 5).astype(np.float32)
    results = []
    for lib in (torch, ember):
        conv = lib.nn.Conv2d(2, 3, 3, bias=False)
        with lib.no_grad():
            conv.weight.copy_(lib.tensor(w))
        with pytest.warns(FutureWarning, match="weight_norm` is deprecated in favor of"):
            conv = lib.nn.utils.weight_norm(conv, dim=dim)
        with lib.no_grad():
            conv.weight_g.mul_(2.0)
        out = conv(lib.tensor(x))
        out.square().sum().backward()
        results.append((sorted(conv.state_dict()), out.detach().numpy(),
                        conv.weight_g.grad.numpy(), conv.weight_v.grad.numpy()))
        lib.nn.utils.remove_weight_norm(conv)
        assert sorted(conv.state_dict()) == ["weight"]
    (t_keys, *t_vals), (e_keys, *e_vals) = results
    assert e_keys == t_keys == ["weight_g", "weight_v"]
    for e, t in zip(e_vals, t_vals):
        np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-4)


def test_lbfgs_lstmcell_trajectory_is_torchs_from_the_same_weights() -> None:
    """time_sequence_prediction's model and optimizer, started from PyTorch's weights:
    the LBFGS closure's losses are PyTorch's to float64 rounding."""
    import numpy as np

    x = np.arange(16)[None] + np.random.RandomState(2).randint(-40, 40, 4)[:, None]
    data = np.sin(x / 20.0)

    def build(lib):
        class Sequence(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm1, self.lstm2 = lib.nn.LSTMCell(1, 16), lib.nn.LSTMCell(16, 16)
                self.linear = lib.nn.Linear(16, 1)

            def forward(self, input):
                h = c = h2 = c2 = lib.zeros(input.size(0), 16, dtype=lib.double)
                outputs = []
                for input_t in input.split(1, dim=1):
                    h, c = self.lstm1(input_t, (h, c))
                    h2, c2 = self.lstm2(h, (h2, c2))
                    outputs.append(self.linear(h2))
                return lib.cat(outputs, dim=1)

        return Sequence().double()

    torch.manual_seed(0)
    t_model, e_model = build(torch), build(ember)
    e_model.load_state_dict({k: ember.tensor(v.numpy()) for k, v in
                             t_model.state_dict().items()})
    runs = []
    for lib, model in ((torch, t_model), (ember, e_model)):
        inp, tgt = lib.tensor(data[:, :-1]), lib.tensor(data[:, 1:])
        optimizer = lib.optim.LBFGS(model.parameters(), lr=0.8, max_iter=6)
        losses = []

        def closure(lib=lib, model=model, optimizer=optimizer, losses=losses,
                    inp=inp, tgt=tgt):
            optimizer.zero_grad()
            loss = lib.nn.MSELoss()(model(inp), tgt)
            losses.append(loss.item())
            loss.backward()
            return loss

        optimizer.step(closure)
        runs.append(losses)
    assert len(runs[0]) == len(runs[1]) and len(runs[0]) > 4
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-9)


def _dropout_outcome(lib, fn_name: str, shape: tuple, training: bool = True):
    """(the axes along which the kept/dropped pattern is constant, the warnings, the
    error) of lib's dropout{1,2,3}d on ones of `shape`."""
    import warnings

    fn = getattr(lib.nn.functional, fn_name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            y = fn(lib.ones(shape), 0.5, training).numpy()
        except RuntimeError as err:
            return None, [str(w.message) for w in caught], str(err)
    constant = [ax for ax in range(len(shape)) if (y == y.take([0], axis=ax)).all()]
    return constant, [str(w.message) for w in caught], None


@pytest.mark.parametrize("fn_name", ["dropout1d", "dropout2d", "dropout3d"])
@pytest.mark.parametrize("ndim", [1, 2, 3, 4, 5, 6])
def test_feature_dropout_ranks_as_torch(fn_name: str, ndim: int) -> None:
    """mnist_rnn's Dropout2d on (N, features): per element with a deprecation warning, as
    PyTorch; a 3-D input to dropout2d is (N, C, L); other ranks as PyTorch's."""
    shape = ((16, 16) + (3,) * 4)[:ndim]  # 16 draws: a chance equal pattern is 2^-15
    t, e = _dropout_outcome(torch, fn_name, shape), _dropout_outcome(ember, fn_name, shape)
    assert e == t
    assert _dropout_outcome(ember, fn_name, shape, training=False)[1:] == \
        _dropout_outcome(torch, fn_name, shape, training=False)[1:]


def test_indexing_a_0d_tensor_errors_as_torch() -> None:
    """Old programs' `loss.data[0]`: PyTorch's IndexError, naming `.item()`."""
    for key in (0, slice(0, 1)):
        with pytest.raises(IndexError) as t_err:
            torch.tensor(2.0)[key]
        with pytest.raises(IndexError) as e_err:
            ember.tensor(2.0)[key]
        assert str(e_err.value) == str(t_err.value)
