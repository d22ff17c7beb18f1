"""Real PyTorch programs (set B: text, sequence, RL, misc; set D: generative models, graphs,
advanced autograd and API; set F: the official PyTorch tutorials) run unchanged on ember.
(regression.py and time_sequence_prediction.py of this set run in test_programs_A.py.)

Each program in tests/programs/ runs twice in a subprocess: with the real torch, and with
`import torch` answered by ember (`python -m ember.run`). Their printed outputs are compared:

- lines that do not depend on the random stream (NumPy sections, fixed initial weights,
  shapes, printed models, "reloaded model agrees: True") must be the same text, or the
  same numbers within float32 rounding;
- training losses: when ember's CPU random stream reproduces torch's (same weights, same
  shuffles), the first loss must agree to rel 1e-4; otherwise (and for every later loss,
  where float32 drift and chaotic training add up) each run must train: its last loss
  below its first, and ember's last loss within a factor of torch's.

Programs that take more than ~3 s on a quiet 2-core machine are marked `long`
(EMBER_LONG_TESTS=1), so the suite keeps to its 15-minute budget.
The ember behaviours the programs needed are unit-tested against torch at the end.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "programs"
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
TIMINGS = re.compile(r"\(\d+m \d+s( \(- \d+m \d+s\))?\)|\d+m \d+s \(- \d+m \d+s\)"
                     r"|ms/batch\s+[\d.]+|time:\s+[\d.]+s|Epoch time = [\d.]+s|iter_dt [\d.]+ms")


@dataclass(frozen=True)
class Program:
    """A program, its arguments, and how its output is compared (regexes over lines)."""

    script: str
    args: tuple[str, ...] = ()
    same: str | None = None  # lines printed identically by both runs
    skeleton: str | None = None  # lines printed identically but for their (finite) numbers
    close: str | None = None  # lines whose numbers agree within float32 rounding
    losses: str | None = None  # training-progress lines: group "loss"; optional group "tag"
    factor: float | None = 3.0  # ember's last loss <= factor * torch's (None: trend only)
    check: Callable[[str], None] | None = None  # what each run's output must show by itself
    seeded: bool = True  # calls manual_seed (PyTorch seeds an unseeded program at random)
    long: bool = False

    @property
    def id(self) -> str:
        return " ".join((self.script, *self.args))


def _test_accuracy(at_least: float) -> Callable[[str], None]:
    def check(out: str) -> None:
        """The program's final "test accuracy" line shows it learned its task."""
        assert float(re.search(r"^test accuracy\s+(\S+)$", out, re.M).group(1)) >= at_least
    return check


# word_language_model: the training loss every log interval, then the test loss
WLM_LOSSES = r"loss\s+(?P<loss>[\d.]+) \| (?:test )?ppl"

PROGRAMS_B = [
    Program("learning_pytorch_examples.py",
            close=r"^numpy |^function ",
            losses=r"^(?P<tag>tensors|autograd|nn|optim|module|dynamic) \d+ (?P<loss>\S+)$",
            factor=None, seeded=False, long=True),
    Program("word_language_model.py", ("--model", "LSTM", "--tied", "--epochs", "1"),
            losses=WLM_LOSSES, factor=1.5,
            same=r"^[-=]+$"),
    Program("word_language_model.py", ("--model", "GRU"),
            losses=WLM_LOSSES, factor=1.5, long=True),
    Program("word_language_model.py", ("--model", "Transformer", "--lr", "5"),
            losses=WLM_LOSSES, factor=1.5, long=True),
    Program("nanogpt.py", ("--max_iters", "40"),
            same=r"^number of parameters|^num |^using fused|^sample of",
            losses=r"^step \d+: train loss (?P<loss>[\d.]+)", factor=1.3, long=True),
    Program("nanogpt.py", ("--no_flash", "--dropout", "0.1"),
            same=r"^number of parameters|^num |^using fused|^sample of",
            losses=r"^step \d+: train loss (?P<loss>[\d.]+)", factor=1.3, long=True),
    Program("mingpt_sort.py", ("60",),
            same=r"^number of parameters|^running on device",
            skeleton=r"^\d+ -?\d+$|final score",
            losses=r"iter \d+: train loss (?P<loss>[\d.]+)", factor=1.3, long=True),
    Program("dqn.py",
            same=r"^Complete", skeleton=r"^episode|^mean duration",
            losses=r"mean loss (?P<loss>[\d.]+)", factor=3.0, long=True),
    Program("ppo_continuous.py",
            same=r"^Device set to|^saved and reloaded", skeleton=r"^Episode", long=True),
    Program("text_classification.py",
            same=r"^-+$|^Checking|^This is a", skeleton=r"accuracy", check=_test_accuracy(0.9),
            long=True),
    Program("reinforce.py", ("--episodes", "20"),
            skeleton=r"^Episode (10|20)\t", losses=None, long=True),
    Program("actor_critic.py", ("--episodes", "20"),
            skeleton=r"^Episode (10|20)\t", losses=None, long=True),
    Program("char_rnn_classification.py",
            same=r"^tensor|^ember|^torch|^True|^> ",
            losses=r"^average losses (?P<loss>.*)$", factor=1.5, long=True),
    Program("seq2seq_translation.py",
            same=r"^Read|^Trimmed|^Counting|^Counted|^fra |^eng |^> |^= ",
            losses=r"^.*\(\d+ \d+%\) (?P<loss>[\d.]+)$", factor=2.0, long=True),
    Program("transformer_translation.py",
            losses=r"^Epoch: \d+, Train loss: (?P<loss>[\d.]+)", factor=1.3, long=True),
    Program("tabular_mlp.py",
            same=r"^\[|^train rows|^TabularModel|^  |^\)|^parameters|^reloaded",
            losses=r"train loss: (?P<loss>[\d.]+)", factor=1.5, long=True),
    # set D: generative models, graphs, advanced autograd and API
    Program("ddpm_2d.py",
            same=r"^betas|^Denoiser|^  |^\)|^samples", skeleton=r"^fraction near a mode",
            losses=r"^epoch .* loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("realnvp_2d.py",
            same=r"^Parameter|^tensor|^        \[|^MultivariateNormal|^Independent|^base log_prob"
                 r"|^max reconstruction|^sample shape",
            skeleton=r"^test nll", losses=r"^iter \d+: loss = (?P<loss>[\d.]+)", factor=1.5,
            long=True),
    Program("gcn.py",
            same=r"^nodes|^torch.Size|^symmetric|^mm ==|^masks|^GCN|^  \(|^\)|^Optimization",
            skeleton=r"^Epoch|^Test set", losses=r"loss_train: (?P<loss>[\d.]+)", factor=3.0,
            long=True),
    Program("pygcn.py",
            same=r"^Loading|^adj |^coalesced|^row sums|^spmm|^to_sparse|^tensor|^ |^GCN|^\)"
                 r"|^Optimization",
            skeleton=r"^Epoch|^Test set", check=_test_accuracy(0.8),
            losses=r"loss_train: (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("moe.py",
            same=r"^Model|^  |^\)|^number of parameters|^tokens per expert",
            skeleton=r"^eval mse", losses=r"^step +\d+ loss (?P<loss>[\d.]+)", factor=1.5,
            long=True),
    Program("autograd_hooks_maml.py",
            same=r"^tensor|^ |^gradcheck|^w.grad|^hooked|^activation|^hooks removed"
                 r"|^gradient penalty",
            losses=r"^meta iter +\d+ meta loss (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("pruning_parametrize.py",  # (the printed hooks show addresses: not compared)
            same=r"^\['|^\[\]|^\[\(|^bias zeros|^zero filters|^dict_keys|^Global|^still sparse"
                 r"|^Parametrized|^Linear|^  |^\)|^True|^torch.Size|^spectral|^cached",
            skeleton=r"^\('bias'|^tensor|^       requires|^Sparsity",
            losses=r"^finetune step \d+ loss (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("per_sample_grads.py",
            same=r"^SimpleCNN|^  |^\)|^torch.Size|^vmap\(grad\) agrees|^\{",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+)", factor=1.3, long=True),
    Program("numeric_utils.py", same=r"^(?!standardized)", close=r"^standardized",
            seeded=False),
    Program("padded_gru_tagger.py",
            same=r"^Namespace|^vocab size|^BiGRUTagger|^  |^\)|^padding row|^packed|^reloaded"
                 r"|/DET",
            skeleton=r"^test accuracy", check=_test_accuracy(0.9),
            losses=r"^epoch \d+ \| loss (?P<loss>[\d.]+)", factor=3.0, long=True),
    Program("model_ensembling.py", same=r".*", long=True),  # (its asserts check the values)
    # set G: well-known model implementations (as their reference repositories write them)
    Program("mobilenet_v2.py",
            same=r"^Namespace|^InvertedResidual|^Conv2dNormActivation|^Sequential|^  |^\)"
                 r"|^last_channel|^_make_divisible|^reloaded|^running_mean",
            skeleton=r"^Test set", losses=r"\tLoss: (?P<loss>[\d.]+)", factor=3.0, long=True),
    Program("efficientnet_mbconv.py",
            same=r"^DropPath|^drop_path values|^eval is|^MBConv|^  |^\)|^drop path rates"
                 r"|^number of params|^stem BN",
            skeleton=r"^train accuracy", losses=r"^step +\d+ loss (?P<loss>[\d.]+)", factor=2.0,
            long=True),
    Program("convnext.py",
            same=r"^channels_first|^Sequential|^  |^\)|^number of params|^gamma|^trunc_normal"
                 r"|^<All keys|^Resume|^reloaded",
            skeleton=r"^Epoch: \[\d\] \[0|^Accuracy",
            losses=r"Averaged stats: loss: (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("swin_transformer.py",
            same=r"^windows|^roll ok|^SwinTransformerBlock|^  |^\)|^attn_mask"
                 r"|^relative_position_index|^\['attn|^number of params|^no decay|^bias table",
            skeleton=r"Acc@1", losses=r"^Train: .* loss (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("mlp_mixer_perceiver.py",
            same=r"^Sequential|^  |^\)|^mixer parameters|^mixer logits|^MultiheadAttention"
                 r"|^in_proj_weight|^perceiver parameters|^padding ignored|^average attn",
            losses=r"^(?P<tag>mixer|perceiver) step +\d+ loss (?P<loss>[\d.]+)", factor=2.0,
            long=True),
    Program("densenet_bc.py",
            same=r"^_Transition|^  |^\)|^\['dense|^_DenseLayer|^classifier|^parameters"
                 r"|^checkpoint outputs|^output grad_fn",
            skeleton=r"^Epoch: \[|^Test error",
            losses=r"^Epoch \d+: train loss (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("yolo_head.py",
            same=r"^Namespace|^iou|^giou|^ciou|^nms keep|^heat|^Detect|^  |^\)|^anchors"
                 r"|^inference out|^grid",
            skeleton=r"^bias|^image \d",
            losses=r"^\s+\d+/\d+\s+loss(?:\s+\S+){3}\s+(?P<loss>\S+)$", factor=1.5, long=True),
    Program("stylegan_lite.py",  # (a GAN: its losses need not fall in ten steps)
            same=r"^StyledConv|^Sequential|^  |^\)|^G params|^grouped conv|^sample"
                 r"|^checkpoint keys",
            skeleton=r"^d: .*; g: .*; r1: .*; real: .*; fake: ",
            long=True),
    Program("mamba_scan.py",
            same=r"^ModelArgs|^ResidualBlock|^  |^\)|^tied|^number of parameters|^A_log"
                 r"|^scan forms agree|^causal|^A stays negative",
            skeleton=r"^copy accuracy", losses=r"^step +\d+ \| loss (?P<loss>[\d.]+)",
            factor=1.5, long=True),
    Program("pointnet.py",
            same=r"^Namespace|^Random Seed|^96 48|^classes|^stn|^loss True|^point feat|^STN3d"
                 r"|^  |^\)|^saved keys",
            skeleton=r"^final accuracy", losses=r"train loss: (?P<loss>[\d.]+)", factor=1.5,
            long=True),
    Program("graph_transformer.py",
            same=r"^nodes|^smallest|^softmax sums|^degree|^GraphTransformerNet|^  |^\)"
                 r"|^Optimization",
            skeleton=r"^Epoch|^Test set", losses=r"loss_train: (?P<loss>[\d.]+)", factor=3.0,
            long=True),
    Program("vq_vae.py",
            same=r"^Namespace|^data variance|^straight-through|^one-hot rows|^cdist argmin"
                 r"|^VectorQuantizer|^Decoder|^  |^\)|^\d+ iterations",
            skeleton=r"perplexity: |^ema ",  # (the EMA codebook collapses early: no trend)
            losses=r"^vq recon_error: (?P<loss>[\d.]+)", factor=1.5,
            long=True),
    Program("capsnet.py",
            same=r"^PrimaryCaps|^  |^\)|^W |^parameters|^squash norms|^output",
            skeleton=r"^train accuracy|^test loss",
            losses=r"^epoch \d+ train loss (?P<loss>[\d.]+)", factor=1.5,
            long=True),
    Program("cyclegan.py",  # (adversarial terms need not fall: the cycle loss must)
            same=r"^initialize|^ResnetBlock|^NLayerDiscriminator|^  |^\)|^\[Network"
                 r"|^learning rate",
            skeleton=r"^\(epoch|^pool sizes", losses=r"cycle_A: (?P<loss>[\d.]+)", factor=1.5,
            long=True),
    Program("wavenet.py",
            same=r"^mu-law|^ResidualLayer|^  |^\)|^dilations|^parameters|^causal|^generated",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+)", factor=1.5,
            long=True),
]


def _blitz_grad_fns(out: str) -> None:
    """The 60 Minute Blitz prints grad_fn objects (their addresses differ from run to run):
    their names are PyTorch's, down to the `next_functions[0][0]` of linear's
    AddmmBackward0: the bias's AccumulateGrad (PyTorch's addmm lists the bias first)."""
    names = re.findall(r"^<(\w+) object at 0x[0-9a-f]+>$", out, re.M)
    assert names[:5] == ["AddBackward0", "SumBackward0", "MseLossBackward0",
                         "AddmmBackward0", "AccumulateGrad"], names


def _fundamentals_edges(out: str) -> None:
    """The Fundamentals of Autograd walks `next_functions` from `d = 2 * sin(a) + 1` down to
    the leaf: PyTorch's nodes, edges in PyTorch's order (the tensor before the scalar)."""
    assert ("AddBackward0\n((MulBackward0, 0), (None, 0))\n((SinBackward0, 0), (None, 0))\n"
            "((torch::autograd::AccumulateGrad, 0))\n()\n") in out


# set F: the PyTorch tutorials (pytorch.org/tutorials)
PROGRAMS_F = [
    Program("blitz_tensors_autograd.py",
            skeleton=r"^(?!<\w+ object at|step \d)", check=_blitz_grad_fns,
            losses=r"^step \d+ loss (?P<loss>\S+)$", factor=1.5, long=True),
    Program("blitz_cifar10.py",
            same=r"^torch.Size|^Net|^  \(|^\)|^Finished|^GroundTruth|^<All keys|^cpu",
            skeleton=r"^Accuracy", losses=r"^\[\d+, +\d+\] loss: (?P<loss>[\d.]+)",
            factor=1.5, long=True),
    Program("transformer_lm.py",
            same=r"^train_data|^tensor|^        \[|^True|^parameters|^-+$|^=+$|^reloaded",
            losses=r"\| loss +(?P<loss>[\d.]+) \| ppl", factor=1.5, long=True),
    Program("word_embeddings.py",
            same=r"^\[\(|^CBOW|^  \(|^\)|^Raw text|^Context", skeleton=r"^tensor|^ +[-\d]",
            losses=r"^(?:(?P<tag>cbow) epoch \d+ loss |\[)(?P<loss>[\d.]+(?:, [\d.]+)*)\]?$",
            factor=1.5, long=True),
    Program("custom_autograd_functions.py",
            same=r"gradcheck|^once_differentiable|^Sequential|^  \(|^\)",
            close=r"^\d+ [\d.]+$|^Result",
            losses=r"^fused step +\d+ loss (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("saving_loading.py",
            skeleton=r"^(?!step \d)", losses=r"^step \d+ loss (?P<loss>[\d.]+)", factor=1.5,
            long=True),
    Program("custom_dataset.py", same=r"."),
    Program("autograd_hooks_memory.py",
            same=r"grads|^Packing|^Unpacking|^tensor\(\[2|^True|^packed|^left|^save_on_cpu",
            skeleton=r"^tensor\(\[-?\d", losses=r"^fused step \d+ loss (?P<loss>[\d.]+)",
            factor=1.5, long=True),
    Program("tensorboard_profiler.py",  # (PyTorch's add_graph and profiler take ~20 s)
            same=r"^torch.Size|^embedding|^Finished|^event files|^Name|^True|^trace",
            skeleton=r"^test accuracy", losses=r"^\[\d+, +\d+\] loss: (?P<loss>[\d.]+)",
            factor=1.5, long=True),
    Program("autograd_fundamentals.py",  # (profiler op names: aten:: there, ember:: here)
            skeleton=r"^(?!\['(aten|ember)::)", check=_fundamentals_edges, long=True),
    Program("nlp_bow_lstm_tagger.py",
            skeleton=r"^(?!<\w+ object at|bow epoch|tagger epoch)",
            losses=r"^(?P<tag>bow|tagger) epoch \d+ loss (?P<loss>[\d.]+)", factor=1.5,
            long=True),
    Program("learn_the_basics.py", skeleton=r"^(?!loss: )",
            losses=r"^loss: +(?P<loss>[\d.]+) ", factor=1.5, long=True),
]
PROGRAMS_B += PROGRAMS_F

# set H: Karpathy's "Neural Networks: Zero to Hero" (makemore parts 1-5, gpt-dev, build-nanogpt,
# micrograd). Samples drawn from trained weights are not compared: float32 drift may move a
# draw across a bucket boundary; those from counts and seeded generators are.
MAKEMORE_DATA = r"^\['|^\{|^torch.Size|^\d+$"
MAKEMORE_REPO = (r"^\{'input_file'|^number|^max word|^vocabulary|^[a-z]+$|^split up|^dataset"
                 r"|^model #params")
PROGRAMS_H = [
    Program("makemore_bigram.py",  # (30 full-batch steps: the losses agree to float32 rounding)
            same=r"^(?!average negative|\d+\.\d+$)", close=r"^average negative|^\d+\.\d+$",
            long=True),
    Program("makemore_mlp.py", same=MAKEMORE_DATA + r"|^tensor\(\[|^        \[",
            skeleton=r"^mean log10|^train|^val|^tensor\(\d",
            losses=r"^ *\d+ (?P<loss>[\d.]+)$", factor=1.1, long=True),
    Program("makemore_batchnorm.py", same=MAKEMORE_DATA + r"|^saturated|^\d+ \d+$",
            skeleton=r"^train|^val|^layer|^weight|^param",
            losses=r"^ +\d+/ +(?P<tag>\d+): (?P<loss>[\d.]+)$", factor=1.1, long=True),
    Program("makemore_backprop.py", same=MAKEMORE_DATA + r"|^torch.Size",
            skeleton=r"\| exact: |^[\d.]+ diff:|^max diff|^train|^val|^tensor\([\d-]",
            losses=r"^ +\d+/ +\d+: (?P<loss>[\d.]+)$", factor=1.1, long=True),
    Program("makemore_wavenet.py",
            same=MAKEMORE_DATA + r"| --> |^[A-Za-z]+ : |^tensor\(\[\[|^        \[|^torch.Size",
            skeleton=r"^train|^val|^tensor\(\[\d",
            losses=r"^ +\d+/ +\d+: (?P<loss>[\d.]+)$", factor=1.1, long=True),
    Program("gpt_dev.py",  # (torch.allclose(xbow, xbow2): 3e-8 apart, False in PyTorch 2.x)
            same=r"^length|^ !|^\d+$|^\[|^hii|^torch.Size|^tensor\(\[\d|^ +\d|^when input"
                 r"|^inputs|^targets|^----|^[abc]=|^--$|^        \[|^       grad_fn|^tensor\(True"
                 r"|M parameters|^Block|^  +\(|^  +\)|^\)",
            skeleton=r"^tensor\(\d|^-?0\.\d+, ", close=r"^\d\.\d+$",
            losses=r"^step \d+: train loss (?P<loss>[\d.]+)", factor=1.1, long=True),
    Program("build_nanogpt.py",
            same=r"^using|^total|^=>|^found|^number|^True|^num |^2 \[|^rank|^torch",
            skeleton=r"^validation loss",
            losses=r"^step +\d+ \| loss: (?P<loss>[\d.]+)", factor=1.1, long=True),
    Program("micrograd_vs_torch.py", same=r"."),  # (its asserts check micrograd against torch)
    Program("makemore_repo.py",
            ("--max-steps", "31", "--eval-every", "15", "--num-workers", "0", "--n-layer", "1"),
            same=MAKEMORE_REPO, skeleton=r"train loss: |is the best so far",
            losses=r"^step \d+ \| loss (?P<loss>[\d.]+) \|", factor=1.1, long=True),
    Program("makemore_repo.py",
            ("--type", "gru", "--max-steps", "31", "--eval-every", "15", "--num-workers", "0"),
            same=MAKEMORE_REPO, skeleton=r"train loss: |is the best so far",
            losses=r"^step \d+ \| loss (?P<loss>[\d.]+) \|", factor=1.1, long=True),
]
PROGRAMS_B += PROGRAMS_H


def _topic_neighbours(at_least: int) -> Callable[[str], None]:
    def check(out: str) -> None:
        """The word vectors learned the topics: most nearest words share the word's."""
        found = re.search(r"^neighbours in the same topic: (\d+)/12$", out, re.M)
        assert int(found.group(1)) >= at_least
    return check


# set S: sparse gradients (nn.Embedding(sparse=True) with SparseAdam, EmbeddingBag with SGD)
PROGRAMS_S = [
    Program("word2vec_sgns.py",
            same=r"^vocabulary|^\d+ \(centre|^SkipGramNeg|^  \(|^\)|^grad is sparse",
            skeleton=r"^neighbours in the same topic",
            losses=r"^epoch \d+ loss (?P<loss>[\d.]+)$", factor=1.2,
            check=_topic_neighbours(9), long=True),
    Program("fasttext_classifier.py",
            same=r"^FastText|^  \(|^\)|grad is sparse|^the storm|^we bake",
            skeleton=r"^test accuracy", losses=r"^epoch \d+ loss (?P<loss>[\d.]+)$",
            factor=1.5, check=_test_accuracy(0.8), long=True),
]
PROGRAMS_B += PROGRAMS_S

# complex numbers, second round: a complex-valued MLP (complex nn.Linear, CReLU through the
# view_as_real round trip) trained with Adam, and complex ops on fixed values
PROGRAMS_C2 = [
    Program("complex_net.py", same=r"^parameters|^fits", close=r"^target|^eigvals|^cplx ops",
            skeleton=r"^relative test error", losses=r"^step \d+ loss (?P<loss>[\d.]+)",
            factor=1.5, long=True),
]
PROGRAMS_B += PROGRAMS_C2

# torch.fx: pytorch/examples fx/ programs and the FX tutorials. Printed graphs and
# generated code must be torch's text; values agree within float32 rounding.
PROGRAMS_FX = [
    Program("fx_replace_op.py", same=r"^"),
    Program("fx_inline_function.py", same=r"^(?!\[)", close=r"^\["),
    Program("fx_invert.py", same=r"^(?!\[)", close=r"^\["),
    Program("fx_custom_tracer.py", same=r"^(?!\[)(?!.* at 0x)", close=r"^\["),
    Program("fx_subgraph_rewriter.py", same=r"^(?!\[)", close=r"^\["),
    Program("fx_wrap_output.py", same=r"^(?!\[)", close=r"^\["),
    Program("fx_proxy_graph.py", same=r"^(?!\[)", close=r"^\["),
    Program("fx_conv_bn_fuser.py", same=r"^(?!output:)", close=r"^output:"),
    Program("fx_profiler.py", same=r"^"),
    Program("fx_primitive_library.py", same=r"^"),
    Program("fx_module_tracer.py", same=r"^"),
    Program("fx_api_tour.py", same=r"^"),
    Program("fx_transformer_block.py", same=r"^"),
    Program("fx_mnist_net.py", same=r"^"),
]
PROGRAMS_B += PROGRAMS_FX

# PyTorch-compat round (s26): the "Python Custom Operators" tutorial (torch.library custom
# ops with fake kernels and autograd, under torch.compile(fullgraph=True); long: PyTorch's
# inductor compiles C++), and a training run resumed from a checkpoint whose optimizer
# state holds PyTorch's step tensors (it must continue exactly as the uninterrupted run)
PROGRAMS_CO = [
    Program("python_custom_ops.py",
            same=r"^(?!numpy_sin \d|step \d|cropped)", skeleton=r"^numpy_sin \d|^cropped",
            losses=r"^step \d+ loss (?P<loss>[\d.]+)$", factor=1.1, long=True),
    Program("resume_checkpoint.py", same=r"^(?!epoch \d)",
            losses=r"^epoch \d+ loss (?P<loss>[\d.]+) ", factor=1.1),
]
PROGRAMS_B += PROGRAMS_CO
# __torch_function__ (the "Extending torch Python API" docs' ScalarTensor, LoggingTensor and
# metadata wrappers), a TorchFunctionMode op counter, and a torch.utils._pytree utility:
# every line is torch's text (the logged function names included)
PROGRAMS_TF = [
    Program("tf_scalar_tensor.py", same=r"^"),
    Program("tf_logging_tensor.py", same=r"^(?!mean:)", close=r"^mean:"),
    Program("tf_metadata_tensor.py", same=r"^"),
    Program("tf_mode_counter.py", same=r"^"),
    Program("pytree_train_util.py", same=r"^(?!step)", close=r"^step"),
]
PROGRAMS_B += PROGRAMS_TF

# set K: LLM and NLP-pretraining programs (Hugging Face's modeling files written out, GPT-2
# generation with a KV cache and the logits processors, LoRA, T5, Mistral-style SDPA and
# inference_mode, byte-level BPE with collators, sentence embeddings, speculative decoding
# with an int8 KV cache). Seeded draws match torch's; what follows training is a skeleton.
PROGRAMS_K = [
    Program("bert_mlm.py",
            same=r"^BertEmbeddings|^  \(|^\)|^decoder tied|^position_ids|^state_dict has"
                 r"|^number of parameters|^input_ids|^token_type_ids|^extended mask|^attentions"
                 r"|^padding gets|^<All keys|^reloaded",
            skeleton=r"^mask fraction|^masked token accuracy",
            losses=r"^step +\d+ \| lr \S+ \| loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("gpt2_generate.py",
            same=r"^GPT2Block|^  |^\)|^number of|^tied|^past_key_values|^greedy cached"
                 r"|^last-step|^repetition|^top-k|^top-p|^classic|^temperature|^multinomial"
                 r"|^        \[|^sampled shape|^beam output shape",
            skeleton=r"^beam best scores", losses=r"^step \d+ loss (?P<loss>[\d.]+)$",
            factor=1.5, long=True),
    Program("lora_finetune.py",
            same=r"^MLP|^  \(|^\)|^missing|^unexpected|^trainable|^lora_A|^lora_B|^frozen"
                 r"|^base weight|^merged|^unmerged|^lora keys|^reloaded",
            skeleton=r"^pretrained:|^adapted:",
            losses=r"^(?P<tag>pretrain|lora) step +\d+ loss (?P<loss>[\d.]+)$", factor=2.0,
            long=True),
    Program("t5_relative_bias.py",
            same=r"^bidirectional|^causal|^T5LayerNorm|^       grad_fn|^T5LayerSelfAttention"
                 r"|^  |^\)|^T5Attention|^parameters|^shift_right|^position bias",
            skeleton=r"^token accuracy", losses=r"^step +\d+ loss (?P<loss>[\d.]+)$",
            factor=1.5, long=True),
    Program("mistral_sdpa.py",
            same=r"^tensor\(\[\[0|^        \[|^bool mask|^enable_gqa|^scale=|^TransformerBlock"
                 r"|^  |^\)|^freqs_cis|^tied|^number of|^generated|^inference tensors"
                 r"|^cached and full|^RuntimeError",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+) lr", factor=1.5, long=True),
    Program("bpe_collator.py", same=r"^(?!epoch|collated)", skeleton=r"^collated",
            losses=r"^epoch \d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("sentence_contrastive.py",  # (the SimCSE steps need not fall: a skeleton)
            same=r"^mean pooling|^all-padding|^normalize|^        \[0\.0000|^TransformerEncoder"
                 r"|^  |^\)|^parameters|^embeddings|^<All keys|^reloaded",
            skeleton=r"simcse loss|^most similar pair|^top hits",
            losses=r"^step +\d+ mnrl loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("speculative_kvquant.py",
            same=r"^int8|^        \[|^dequantized|^round half|^clamp then|^max_fn|^target params"
                 r"|^quantized-cache|^incremental|^autoregressive",
            skeleton=r"^speculative|^acceptance rate|^follows the pattern",
            losses=r"^(?P<tag>target|draft) step +\d+ loss (?P<loss>[\d.]+)$", factor=1.5,
            long=True),
]
PROGRAMS_B += PROGRAMS_K

# torch.compile's "Custom Backends" tutorial (the backend sees dynamo's FX graphs: once per
# shape with dynamic=False, one per side of a graph break, nodes named after the variables)
# and a torch.export tutorial-style script (graph signature, ep.module(), Dim, save/load).
# Every line is torch's but the builtins' addresses and one line: `t.softmax(dim=-1)`,
# which ember records as `torch.softmax(t, dim = -1)` (its method is the function).
# Both are `long`: PyTorch's side alone costs ~4.5 s of CPU (dynamo and export load).
PROGRAMS_EX = [
    Program("compile_custom_backend.py",
            same=r"^(?!.* at 0x)(?!    softmax = )(?!step )",
            losses=r"^step \d+ loss (?P<loss>[\d.]+)$", factor=1.1, long=True),
    Program("export_small_cnn.py", same=r"^(?!train step)",
            losses=r"^train step \d+ loss (?P<loss>[\d.]+)$", factor=1.1, long=True),
]
PROGRAMS_B += PROGRAMS_EX

# set M: data pipelines (samplers, splits, padding collate, worker-sharded IterableDataset),
# densities (MixtureSameFamily, transforms and TransformedDistribution, conjugate and
# variational Bayesian regression with kl_divergence), numerical methods (PCA, Newton with
# autograd.functional, lstsq, FFT filtering, statistics) and regularisation idioms
# (spectral_norm / orthogonal / weight_norm, gradient clipping, tied weights, checkpoint)
PROGRAMS_M = [
    Program("data_pipeline.py", same=r"^(?!epoch \d|val accuracy)",
            skeleton=r"^epoch \d+ class counts|^val accuracy",
            losses=r"^epoch \d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("flow_transforms.py", same=r"^(?!.* step +\d+ nll|stack|        \[)",
            close=r"^stack|^        \[",
            losses=r"^(?P<tag>mdn|flow) step +\d+ nll (?P<loss>[-\d.]+)$", factor=None, long=True),
    Program("bayes_linreg_vi.py",
            same=r"^(?!step|vi |tensor\(\[ 0\.5|mean error|KL\(q|learned|mc pred|registered)",
            skeleton=r"^vi |^tensor\(\[ 0\.5|^mean error|^KL\(q|^learned|^mc pred|^registered",
            losses=r"^step +\d+ -elbo (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("numerical_methods.py", same=r"^(?!newton \d|gauss-newton|fitted)",
            skeleton=r"^newton \d", close=r"^fitted",
            losses=r"^gauss-newton \d+ loss (?P<loss>[\d.]+)$", factor=1.5),
    Program("regularization_idioms.py",
            same=r"^(?!gan step|spectral norms after|generated radius|rnn step|lm step"
                 r"|returned norm|inf norm)",
            skeleton=r"^gan step|^spectral norms after|^generated radius",
            close=r"^returned norm|^inf norm",
            losses=r"^(?P<tag>rnn|lm) step +\d+ loss (?P<loss>[\d.]+)", factor=1.5, long=True),
]
PROGRAMS_B += PROGRAMS_M


# set N: neural fields and self-supervised / generative vision (tiny NeRF with searchsorted
# hierarchical sampling, SIREN's gradients and Laplacians by create_graph, PixelCNN's masked
# convolutions and multinomial sampling, MAE, CLIP, MoCo v2 / BYOL, DINO's multi-crop with
# antialiased resizes, a diffusion UNet with DDIM sampling). Seeded draws match torch's.
# All are `long` (siren.py and dino.py take ~10 s each; their fixes are unit-tested).
PROGRAMS_N = [
    Program("tiny_nerf.py", same=r"^(?!\[TRAIN\]|render|test psnr)",
            skeleton=r"^render|^test psnr",
            losses=r"^\[TRAIN\] Iter: \d+ Loss: (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("siren.py", same=r"^(?!Step|  grad norm|poisson step|func step)",
            skeleton=r"^  grad norm|^func step",
            losses=r"^(?P<tag>Step|poisson step) \d+,? (?:Total )?loss (?P<loss>[\d.]+)$",
            factor=3.0, long=True),
    Program("pixelcnn.py", same=r"^(?!epoch=|per-pixel|probs)", skeleton=r"^probs",
            losses=r"^epoch=\d+; nll_tr=(?P<loss>[\d.]+);", factor=1.2, long=True),
    Program("mae.py", same=r"^(?!Epoch|visualised)", skeleton=r"^visualised",
            losses=r"^Epoch: \[\d+\] lr: \S+ loss: (?P<loss>[\d.]+)$", factor=1.2, long=True),
    Program("clip_contrastive.py", same=r"^(?!step|zero-shot|fp16)",
            skeleton=r"^zero-shot|^fp16",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+) ", factor=3.0, long=True),
    Program("moco_byol.py", same=r"^(?!moco epoch|byol step|logits)", skeleton=r"^moco epoch",
            losses=r"^byol step +\d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("dino.py", same=r"^(?!Epoch)", skeleton=r"^Epoch", long=True),
    Program("diffusion_unet.py", same=r"^(?!step|sampled)", skeleton=r"^sampled",
            losses=r"^step +\d+ loss: (?P<loss>[\d.]+)$", factor=1.5, long=True),
]
PROGRAMS_B += PROGRAMS_N

# set O: research-code programs (efficient-kan's B-spline KAN with lstsq grid updates,
# RWKV-4 with ZeroPad2d token shift and a stable WKV loop plus top-p sampling, a Decision
# Transformer, TD3/DDPG with deepcopy targets and soft updates, DETR-lite with Hungarian
# matching by scipy, hand-written sLSTM/mLSTM cells, AlphaZero-lite with MCTS and
# Dirichlet noise, a Lightning-free Trainer with OneCycleLR and weights_only checkpoints).
# All long: each side costs 4-8 s of CPU (PyTorch's import alone ~3 s on the 2-core box)
PROGRAMS_O = [
    Program("kan_efficient.py", same=r"^(?!step|test mse|grid updated)",
            skeleton=r"^test mse", close=r"^grid updated",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+) ", factor=1.5,
            long=True),
    Program("rwkv_lm.py", same=r"^(?!step|next token|sampled)",
            skeleton=r"^next token|^sampled",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+)$", factor=1.5,
            long=True),
    Program("decision_transformer.py", same=r"^(?!step)",
            losses=r"^step +\d+ action loss (?P<loss>[\d.]+) ", factor=1.5,
            long=True),
    Program("td3_ddpg.py", same=r"^(?!initial action|td3 it|ddpg it)",
            close=r"^initial action",
            losses=r"^(?P<tag>td3|ddpg) it +\d+ critic loss (?P<loss>[\d.]+) ", factor=2.0,
            long=True),
    Program("detr_lite.py", same=r"^(?!epoch)",
            losses=r"^epoch \d+ loss (?P<loss>[\d.]+) ", factor=1.5,
            long=True),
    Program("xlstm_cells.py", same=r"^(?!step)",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+) ", factor=1.5,
            long=True),
    Program("alphazero_lite.py", same=r"^(?!iteration|  epoch)", skeleton=r"^iteration",
            losses=r"^  epoch \d+ loss (?P<loss>[\d.]+)$", factor=1.5,
            long=True),
    Program("trainer_loop.py",
            same=r"^(?!epoch|   grad norms|early stopping|best macro|confusion|        \[|"
                 r"reloaded f1|precision)",
            skeleton=r"^   grad norms|^early stopping|^best macro|^confusion|^        \[|"
                     r"^reloaded f1|^precision",
            losses=r"^epoch +\d+ train loss (?P<loss>[\d.]+) ", factor=1.5,
            long=True),
]
PROGRAMS_B += PROGRAMS_O


# set P: research-code programs (Glow with data-dependent ActNorm, slogdet and LU-decomposed
# 1x1 convolutions; GraphSAGE with scatter_reduce / index_add_ aggregation and neighbour
# sampling; an audio classifier with stft, a torch-built mel filterbank and SpecAugment; an
# EBM with spectral_norm and Langevin sampling by autograd.grad; a mixture density network
# with MixtureSameFamily and EM by logsumexp; TransE with max_norm embeddings and Hits@k;
# RAFT-lite with a correlation pyramid, grid_sample lookups and a ConvGRU; a C3D video
# classifier with Conv3d, ceil_mode pools and channels_last_3d). Seeded draws match torch's.
PROGRAMS_P = [
    Program("glow_lite.py", same=r"^(?!step)",
            losses=r"^step +\d+ loss: (?P<loss>[\d.]+);", factor=1.5, long=True),
    Program("graphsage.py", same=r"^(?!(mean|max) (epoch|test))",
            skeleton=r"^(mean|max) test accuracy",
            losses=r"^(?P<tag>mean|max) epoch \d+ loss (?P<loss>[\d.]+)$", factor=1.5,
            long=True),
    Program("audio_spec_classifier.py", same=r"^(?!epoch|held-out)",
            skeleton=r"^held-out", losses=r"^epoch \d+ loss (?P<loss>[\d.]+) ", factor=1.5,
            long=True),
    Program("ebm_langevin.py", same=r"^(?!step|langevin|data scores)", skeleton=r"^step",
            long=True),
    Program("mixture_density.py",
            same=r"^(?!mdn step|em iter|recovered|        \[|weights|monotone|MixtureSameFamily a)",
            close=r"^em iter",
            losses=r"^mdn step +\d+ nll (?P<loss>\S+)$", factor=None, long=True),
    Program("transe_kg.py", same=r"^(?!epoch|hits@)", skeleton=r"^hits@",
            losses=r"^epoch +\d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("raft_lite.py", same=r"^(?!step)",
            losses=r"^step \d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("c3d_video.py", same=r"^(?!\[train\])",
            losses=r"^\[train\] Epoch: \d+/\d+ Loss: (?P<loss>[\d.]+) ", factor=1.5, long=True),
]
PROGRAMS_B += PROGRAMS_P

# set Q: point clouds, long convolutions, tabular, forecasting, memory nets, interpretability
# and a HuggingFace-style model file (DGCNN EdgeConv with kNN by topk and index arithmetic,
# Hyena's FFT long convolution with an implicit Sin-MLP filter and per-parameter _optim groups,
# TabNet with sparsemax / entmax15 autograd Functions and ghost batch norm, N-BEATS with trend
# and seasonality bases and sMAPE/MASE losses, a Neural Turing Machine on the copy task, a
# TopK sparse autoencoder over hook-cached activations with decoder renormalisation and a
# splicing hook, Autoformer's autocorrelation and Informer's ProbSparse attention, an inline
# Llama with 4-D finfo masks, a KV cache, generate() and renamed state_dict keys).
# All long: each side costs 4-10 s of CPU (PyTorch's import alone ~3 s on the 2-core box)
PROGRAMS_Q = [
    Program("dgcnn_edgeconv.py", same=r"^(?!epoch)",
            losses=r"^epoch \d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("hyena_fftconv.py", same=r"^(?!step)",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("tabnet.py", same=r"^(?!epoch)",
            losses=r"^epoch \d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("nbeats.py", same=r"^(?!\w+ iter|\w+ test)", skeleton=r"^\w+ test smape",
            losses=r"^(?P<tag>\w+) iter +\d+ smape (?P<loss>[\d.]+)$", factor=1.5,
            long=True),
    Program("ntm_copy.py", same=r"^(?!batch)",
            losses=r"^batch +\d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("sae_interp.py",
            same=r"^(?!lm step|sae step|relu sae|decoder norms after|log feature|top feature|"
                 r"ce clean|loss recovered)",
            skeleton=r"^decoder norms after|^log feature|^top feature|^ce clean|^loss recovered",
            losses=r"^(?P<tag>lm|sae|relu sae) step +\d+ (?:loss|mse) (?P<loss>[\d.]+)(?: |$)",
            factor=1.5, long=True),
    Program("autoformer_informer.py", same=r"^(?!step|eval mse)", skeleton=r"^eval mse",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("hf_inline_model.py", same=r"^(?!step|greedy|penalized|        \[)",
            skeleton=r"^greedy|^penalized|^        \[",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
]
PROGRAMS_B += PROGRAMS_Q


# set S30: sequence models (Conformer, Performer FAVOR+, Reformer LSH, RetNet), generative
# models (masked autoregressive flow, Gumbel-softmax dVAE), RL (Rainbow-lite), optimizers
# people copy (Lion, Muon, LAMB)
PROGRAMS_S30 = [
    Program("conformer_block.py", same=r"^(?!step|first frame|frame accuracy|running_var)",
            skeleton=r"^first frame|^frame accuracy|^running_var",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("performer_favor.py", same=r"^(?!step|copy accuracy|features +\d+ mean)",
            skeleton=r"^copy accuracy|^features +\d+ mean",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("reformer_lsh.py", same=r"^(?!step|lsh out|        \[ )",
            skeleton=r"^lsh out|^        \[ ",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("retnet_retention.py", same=r"^(?!step|parallel logits)",
            skeleton=r"^parallel logits",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("maf_flow.py", same=r"^(?!epoch|data |running_mean|eval nll)",
            skeleton=r"^data |^running_mean|^eval nll",
            losses=r"^epoch \d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("gumbel_dvae.py", same=r"^(?!====>)",
            losses=r"Average loss: (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("custom_optimizers_lion_muon.py",
            same=r"^(?!(lion|muon|lamb) (step|accuracy)|exp_avg of|trust ratio)",
            skeleton=r"^(lion|muon|lamb) accuracy|^exp_avg of|^trust ratio",
            losses=r"^(?P<tag>\w+) step +\d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
    Program("rainbow_dqn.py", same=r"^(?!step|greedy)", skeleton=r"^greedy",
            losses=r"^step +\d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
]
PROGRAMS_B += PROGRAMS_S30


# set U31: self-supervised learning (Barlow Twins/VICReg with LARS, SwAV's Sinkhorn-Knopp),
# model-based and off-policy RL (Dreamer RSSM, IMPALA V-trace + GAE), scientific ML with
# torch.func (DeepONet, Fourier features, a Lagrangian NN), recommenders (DeepFM/DCN-v2,
# SASRec), training utilities (checkpointing, schedulers, samplers, BytesIO checkpoints),
# score matching and flow matching with EMA weights
PROGRAMS_U31 = [
    Program("barlow_vicreg.py", same=r"^(?!(barlow|vicreg) step)",
            skeleton=r"^(barlow|vicreg) step",
            losses=r"^(?P<tag>barlow|vicreg) step +\d+ loss (?P<loss>[\d.]+) ", factor=1.5,
            long=True),
    Program("swav_sinkhorn.py", same=r"^(?!iter|prototype norms|codes argmax|        1)",
            skeleton=r"^iter|^prototype norms|^codes argmax|^        1", long=True),
    Program("dreamer_rssm.py", same=r"^(?!(gauss|discrete|imagine) step)",
            skeleton=r"^(gauss|discrete|imagine) step",
            losses=r"^(?P<tag>gauss|discrete) step \d+ loss (?P<loss>[\d.]+) ", factor=1.5,
            long=True),
    Program("vtrace_gae.py", same=r"^(?!step|normalized adv)",
            skeleton=r"^step|^normalized adv", long=True),
    Program("deeponet_lnn.py", same=r"^(?!(deeponet|fourier|lnn) step)",
            skeleton=r"^(deeponet|fourier|lnn) step",
            losses=r"^(?P<tag>deeponet|fourier|lnn) step +\d+ loss (?P<loss>[\d.]+)",
            factor=1.5, long=True),
    Program("training_utils.py", same=r"^(?!epoch|restored lr)",
            skeleton=r"^epoch|^restored lr", long=True),
    Program("recsys_deepfm_sasrec.py", same=r"^(?!(ctr|sasrec) epoch)",
            skeleton=r"^(ctr|sasrec) epoch",
            losses=r"^(?P<tag>ctr|sasrec) epoch \d+ loss (?P<loss>[\d.]+)$", factor=1.5,
            long=True),
    Program("score_flow_matching.py", same=r"^(?!(ssm|flow) step)",
            skeleton=r"^(ssm|flow) step",
            losses=r"^(?P<tag>flow) step +\d+ loss (?P<loss>[\d.]+)$", factor=1.5, long=True),
]
PROGRAMS_B += PROGRAMS_U31


# set X32: volumetric and geometric vision (3D U-Net with Dice + CE), self-supervised depth
# (Monodepth2), probabilistic forecasting (DeepAR), tabular transformers (FT-Transformer with
# sparsemax/entmax)
PROGRAMS_X32 = [
    Program("unet3d_volumes.py", same=r"^(?!unet step|eval dice|tta probs|instance-normed)",
            skeleton=r"^unet step|^eval dice",
            close=r"^tta probs|^instance-normed",
            losses=r"^unet step \d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("monodepth2_selfsup.py",
            same=r"^(?!depth step|identity warp|ssim|depth metrics|grid_sample|antialias)",
            skeleton=r"^depth step",
            close=r"^identity warp|^ssim|^depth metrics|^grid_sample|^antialias",
            losses=r"^depth step \d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("deepar_forecast.py",
            same=r"^(?!\w+ step|\w+ (mase|quantile loss)|neg-binomial probs form)",
            skeleton=r"^\w+ step|^\w+ (mase|quantile loss)",
            close=r"^neg-binomial probs form",
            losses=r"^(?P<tag>\w+) step +\d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("ft_transformer_entmax.py", same=r"^(?!\w+ (epoch|rmse|attention))",
            skeleton=r"^\w+ (epoch|rmse|attention)",
            losses=r"^(?P<tag>\w+) epoch \d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
]
PROGRAMS_B += PROGRAMS_X32

# set AB33: image augmentation as torchvision.transforms.v2's tensor kernels (HSV, affine
# grids, uint8 antialiased resize, blur, erasing), an audio front-end (mel filterbank, STFT,
# Griffin-Lim, SpecAugment), Set Transformer blocks, neural processes (CNP/ANP)
_TV2_CLOSE = r"^(grid_sample|blur float|affine|hsv|normalize|resize \()"
PROGRAMS_AB33 = [
    Program("tv2_augment_kernels.py", same=r"^(?!grid_sample|blur float|affine|hsv|normalize"
            r"|resize \(|aug step)", close=_TV2_CLOSE, skeleton=r"^aug step",
            losses=r"^aug step \d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("audio_frontend_specaug.py",
            same=r"^(?!power spec|magnitude|mel |dB|mfcc|griffinlim spectral|resample|kws)",
            close=r"^(power spec|magnitude|mel |dB|resample)",
            skeleton=r"^(mfcc|griffinlim spectral|kws step)",
            losses=r"^kws step \d+ loss (?P<loss>[\d.]+) ", factor=1.5, long=True),
    Program("set_transformer_perceiver.py",
            same=r"^(?!(set|perceiver) step|PMA attention|cross weights|weights head| +\[)",
            close=r"^PMA attention|^weights head",
            skeleton=r"^(set|perceiver) step|^cross weights",
            losses=r"^(?P<tag>set|perceiver) step \d+ loss (?P<loss>[\d.]+) ", factor=1.5,
            long=True),
    Program("neural_process_anp.py",
            same=r"^(?!(cnp|anp) (step|predictive)|mvn (log_prob|entropy|kl))",
            close=r"^mvn (log_prob|entropy|kl)",
            skeleton=r"^(cnp|anp) (step|predictive)",
            losses=r"^(?P<tag>cnp|anp) step +\d+ loss (?P<loss>[\d.]+)", factor=1.5,
            long=True),
]
PROGRAMS_B += PROGRAMS_AB33

# set AE35: memory layouts (the channels-last tutorial and timm's channels_last recipe:
# the strides every op gives, a ResNet trained channels-last, channels_last_3d), timm-style
# models and training pieces
PROGRAMS_AE35 = [
    Program("channels_last_tour.py", same=r"^(?!resnet step)",
            losses=r"^resnet step \d+ loss (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("timm_zoo_recipe.py", same=r"^(?!\w+ (step|eval) )",
            skeleton=r"^\w+ eval ",
            losses=r"^(?P<tag>\w+) step \d+ loss (?P<loss>[\d.]+)", factor=1.5, long=True),
    Program("seg_det_heads.py",
            same=r"^(?!seg step|confusion|roi|identity|nearest|bilinear|bicubic|3d grid| +\[)",
            close=r"^(roi|identity|nearest|bilinear|bicubic|3d grid| +\[)",
            skeleton=r"^confusion",
            losses=r"^seg step \d+ loss (?P<loss>[\d.]+)", factor=1.5, long=True),
]
PROGRAMS_B += PROGRAMS_AE35

# set AF36: classic machine learning written in torch (k-means++, PCA four ways, GMM EM,
# LBFGS logistic regression, kernel ridge, k-NN, t-SNE); data loading as training scripts
# use it (seeded workers, samplers, sharded iterable datasets, collate functions)
_CLASSIC_SAME = (r"^(data |kmeans (iterations|sizes|index)|multinomial|cov corr|svd shapes"
                 r"|pca_lowrank shapes|torch.svd|cholesky |cholesky_ex|lbfgs state|logreg"
                 r"|krr err|knn (votes|mode|accuracy)|values=tensor\(\[2|indices=tensor\(\[2"
                 r"|tsne P|tsne clusters|fill_diag)")
PROGRAMS_AF36 = [
    Program("classic_ml_torch.py", same=_CLASSIC_SAME,
            skeleton=r"^(?!data |kmeans (iterations|sizes|index)|multinomial|cov corr"
                     r"|svd shapes|pca_lowrank shapes|torch.svd|cholesky |cholesky_ex"
                     r"|lbfgs state|logreg|krr err|knn (votes|mode|accuracy)"
                     r"|values=tensor\(\[2|indices=tensor\(\[2|tsne P|tsne clusters"
                     r"|fill_diag|lbfgs step|tsne step)",
            losses=r"^(?P<tag>lbfgs|tsne) step \d+ \w+ (?P<loss>[\d.]+)", factor=1.5,
            long=True),
    # every line: the seeded orders, worker seeds and collated batches are torch's exactly
    Program("loader_reproducibility.py", same=r"^", long=True),
]
PROGRAMS_B += PROGRAMS_AF36

# set AG37: printed forms as debugging and teaching scripts print them (every dtype's edge
# values, summarised and n-d tensors, grad_fn names, set_printoptions, Size/dtype/finfo
# reprs, nn module and optimizer reprs, f-strings); dtype semantics (type promotion,
# integer division and overflow, bool arithmetic, reduction dtypes, conversions)
PROGRAMS_AG37 = [
    # every line: printing involves no random stream but randn's, which ember reproduces
    Program("printing_tour.py", same=r"^", long=True),
    # every line: dtypes, values and error messages are PyTorch's exactly
    Program("dtype_semantics.py", same=r"^", long=True),
]
PROGRAMS_B += PROGRAMS_AG37

# set AJ38: reductions, scans, sorting and counting as data and metrics code uses them (on
# float, int, bool and half inputs with NaN/inf, ties, empty and 0-d inputs, with their
# gradients, layouts and errors); torch.nn.functional's argument variants as vision and NLP
# code passes them (interpolate, pad, fold, embedding, the losses, grid_sample, dropout)
PROGRAMS_AJ38 = [
    # every line: values, dtypes, gradients, strides and error messages are PyTorch's
    Program("reductions_scans_tour.py", same=r"^", long=True),
    # every line within float32 rounding, but bicubic grid_sample's gradient with respect to
    # the grid: sums of cancelling taps, in another order than ATen's
    Program("functional_variants.py", close=r"^(?!grid_sample bicubic \w+ ac=\w+ grad 1 )",
            skeleton=r"^grid_sample bicubic \w+ ac=\w+ grad 1 ", long=True),
]
PROGRAMS_B += PROGRAMS_AJ38

AL39_ULPS = (r"(digamma|i0|i1|i1e|bessel_j[01]|bessel_y0|gammainc|igamma|torch\.i0 method)"
             r"( int| 64)? float32")
PROGRAMS_AL39 = [
    # torch.special and elementwise math at NaN/inf/0/denormal values in every dtype, result
    # dtypes, gradients and errors: every line PyTorch's, but float32 special functions
    # (digamma, i0/i1/i1e, bessel_j0/j1/y0, gammainc/igamma) ulps apart from ATen's own
    # series (6 digits shown)
    Program("special_math_tour.py", same=rf"^(?!{AL39_ULPS})", close=rf"^{AL39_ULPS}",
            long=True),
    # every line: dtype inference, factories, ranges, NumPy sharing, default dtype, seeded
    # random streams, promotion tables, iinfo/finfo and the errors are PyTorch's
    Program("tensor_factories_tour.py", same=r"^", long=True),
]
PROGRAMS_B += PROGRAMS_AL39

# set AN39: autograd's graph API as debugging and research code walks it (grad_fn names and
# next_functions, node and tensor hooks and their checks, retain_grad, autograd.grad's
# options, backward(inputs=), grad modes and inference mode, saved-tensor and multi-grad
# hooks, anomaly mode, custom Functions, gradcheck); the legacy API pre-1.0 programs still
# use (legacy tensor types and constructors, Variable, .data, set_default_tensor_type,
# storages, x.new, resize_, old checkpoints, deprecated aliases, loss and add overloads)
PROGRAMS_AN39 = [
    # every line: graph walks, hook results, gradients and error messages are PyTorch's
    Program("autograd_graph_tour.py", same=r"^", long=True),
    # every line: types, storages, warnings (their first lines) and messages are PyTorch's
    Program("legacy_api_tour.py", same=r"^", long=True),
]
PROGRAMS_B += PROGRAMS_AN39


def _streams_match() -> bool:
    """Whether ember's CPU generator reproduces torch's (then weights and shuffles agree)."""
    checks = []
    for make in (lambda m: m.rand(7), lambda m: m.randn(33), lambda m: m.randperm(20)):
        torch.manual_seed(0)
        ember.manual_seed(0)
        checks.append(make(torch).tolist() == make(ember).tolist())
    return all(checks)


def _run(program: Program, on_ember: bool, tmp_path: Path) -> str:
    script = str(PROGRAMS / program.script)
    cmd = [sys.executable, *(["-m", "ember.run"] if on_ember else []), script, *program.args]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env,
                          cwd=tmp_path)
    who = "ember" if on_ember else "torch"
    assert proc.returncode == 0, f"{program.id} failed on {who}:\n{proc.stderr[-4000:]}"
    # the alias prints ember's own names (ember.Size, ember.float32): compare the rest
    return TIMINGS.sub("<time>", proc.stdout.replace("ember.", "torch."))


def _lines(out: str, pattern: str | None) -> list[str]:
    return [ln for ln in out.splitlines() if pattern and re.search(pattern, ln)]


def _numbers(line: str) -> list[float]:
    return [float(x) for x in NUMBER.findall(line)]


def _losses(out: str, pattern: str) -> dict[str, list[float]]:
    series: dict[str, list[float]] = {}
    for line in out.splitlines():
        m = re.search(pattern, line)
        if m:
            tag = m.groupdict().get("tag") or ""
            series.setdefault(tag, []).extend(_numbers(m.group("loss")))
    return series


def _check(program: Program, want: str, got: str) -> None:
    if program.check is not None:
        program.check(want)
        program.check(got)
    assert _lines(got, program.same) == _lines(want, program.same)
    skel_want, skel_got = _lines(want, program.skeleton), _lines(got, program.skeleton)
    assert [NUMBER.sub("#", ln) for ln in skel_got] == [NUMBER.sub("#", ln) for ln in skel_want]
    assert all(math.isfinite(x) for ln in skel_got for x in _numbers(ln)), skel_got
    close_want, close_got = _lines(want, program.close), _lines(got, program.close)
    assert len(close_got) == len(close_want)
    for w, g in zip(close_want, close_got):
        assert NUMBER.sub("#", g) == NUMBER.sub("#", w)
        assert _numbers(g) == pytest.approx(_numbers(w), rel=1e-5, abs=1e-6), (w, g)
    if program.losses is None:
        return
    want_losses, got_losses = _losses(want, program.losses), _losses(got, program.losses)
    assert want_losses and got_losses.keys() == want_losses.keys()
    exact = program.seeded and _streams_match()
    for tag, torch_series in want_losses.items():
        series = got_losses[tag]
        assert len(series) == len(torch_series), tag
        assert all(math.isfinite(x) for x in series), (tag, series)
        if exact:
            assert series[0] == pytest.approx(torch_series[0], rel=1e-4), tag
        if len(series) > 1:
            assert series[-1] < series[0], (tag, series)
            assert torch_series[-1] < torch_series[0], (tag, torch_series)
        if program.factor is not None:
            assert series[-1] <= program.factor * torch_series[-1], (tag, series, torch_series)


@pytest.mark.parametrize("program", [
    pytest.param(p, id=p.id, marks=[pytest.mark.long] if p.long else [])
    for p in PROGRAMS_B])
def test_program_runs_unchanged(program: Program, tmp_path: Path) -> None:
    want = _run(program, on_ember=False, tmp_path=tmp_path)
    got = _run(program, on_ember=True, tmp_path=tmp_path)
    _check(program, want, got)
