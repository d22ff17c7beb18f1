"""How torch.nn.functional calls are recorded while tracing, as PyTorch records them.

A Python function of torch.nn.functional hands a Proxy over with its tensor arguments
positional and every later parameter as a keyword, defaults included
(`relu(x, inplace = False)`); one bound to a C++ builtin is recorded as called
(`linear(x, w, b)`); `tanh`/`sigmoid` call the method. The tables below say which is
which (read off torch 2.13's `handle_torch_function` calls).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ember.nn.functional import TORCH_BUILTINS

# name -> (leading arguments passed positionally, the keywords that follow)
NORMALIZED: dict[str, tuple[int, tuple[str, ...]]] = {
    "adaptive_avg_pool2d": (2, ()), "adaptive_avg_pool3d": (2, ()),
    "adaptive_max_pool1d": (2, ("return_indices",)),
    "adaptive_max_pool2d": (2, ("return_indices",)),
    "adaptive_max_pool3d": (2, ("return_indices",)),
    "affine_grid": (2, ("align_corners",)),
    "alpha_dropout": (1, ("p", "training", "inplace")),
    "batch_norm": (3, ("weight", "bias", "training", "momentum", "eps")),
    "binary_cross_entropy": (2, ("weight", "size_average", "reduce", "reduction")),
    "binary_cross_entropy_with_logits": (2, ("weight", "size_average", "reduce", "reduction",
                                             "pos_weight")),
    "celu": (1, ("alpha", "inplace")),
    "cosine_embedding_loss": (3, ("margin", "size_average", "reduce", "reduction")),
    "cross_entropy": (2, ("weight", "size_average", "ignore_index", "reduce", "reduction",
                          "label_smoothing")),
    "dropout": (1, ("p", "training", "inplace")), "dropout1d": (1, ("p", "training", "inplace")),
    "dropout2d": (1, ("p", "training", "inplace")),
    "dropout3d": (1, ("p", "training", "inplace")),
    "elu": (1, ("alpha", "inplace")),
    "embedding": (2, ("padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse")),
    "feature_alpha_dropout": (1, ("p", "training", "inplace")),
    "fold": (3, ("dilation", "padding", "stride")),
    "glu": (1, ("dim",)), "grid_sample": (2, ("mode", "padding_mode", "align_corners")),
    "group_norm": (2, ("weight", "bias", "eps")),
    "gumbel_softmax": (1, ("tau", "hard", "eps", "dim")),
    "hardsigmoid": (1, ("inplace",)), "hardswish": (1, ("inplace",)),
    "hardtanh": (1, ("min_val", "max_val", "inplace")),
    "hinge_embedding_loss": (2, ("margin", "size_average", "reduce", "reduction")),
    "huber_loss": (2, ("reduction", "delta", "weight")),
    "instance_norm": (1, ("running_mean", "running_var", "weight", "bias", "use_input_stats",
                          "momentum", "eps")),
    "interpolate": (1, ("size", "scale_factor", "mode", "align_corners",
                        "recompute_scale_factor", "antialias")),
    "kl_div": (2, ("size_average", "reduce", "reduction", "log_target")),
    "l1_loss": (2, ("size_average", "reduce", "reduction")),
    "layer_norm": (2, ("weight", "bias", "eps")),
    "leaky_relu": (1, ("negative_slope", "inplace")),
    "local_response_norm": (2, ("alpha", "beta", "k")),
    "log_softmax": (1, ("dim", "_stacklevel", "dtype")),
    "margin_ranking_loss": (3, ("margin", "size_average", "reduce", "reduction")),
    "max_pool1d": (2, ("stride", "padding", "dilation", "ceil_mode", "return_indices")),
    "max_pool2d": (2, ("stride", "padding", "dilation", "ceil_mode", "return_indices")),
    "max_pool3d": (2, ("stride", "padding", "dilation", "ceil_mode", "return_indices")),
    "mish": (1, ("inplace",)),
    "mse_loss": (2, ("size_average", "reduce", "reduction", "weight")),
    "multi_margin_loss": (2, ("p", "margin", "weight", "size_average", "reduce", "reduction")),
    "multilabel_margin_loss": (2, ("size_average", "reduce", "reduction")),
    "multilabel_soft_margin_loss": (2, ("weight", "size_average", "reduce", "reduction")),
    "nll_loss": (2, ("weight", "size_average", "ignore_index", "reduce", "reduction")),
    "normalize": (1, ("p", "dim", "eps", "out")),
    "pad": (2, ("mode", "value")),
    "poisson_nll_loss": (2, ("log_input", "full", "size_average", "eps", "reduce",
                             "reduction")),
    "relu": (1, ("inplace",)), "relu6": (1, ("inplace",)),
    "rms_norm": (2, ("weight", "eps")),
    "rrelu": (1, ("lower", "upper", "training", "inplace")),
    "selu": (1, ("inplace",)), "silu": (1, ("inplace",)),
    "smooth_l1_loss": (2, ("size_average", "reduce", "reduction", "beta")),
    "soft_margin_loss": (2, ("size_average", "reduce", "reduction")),
    "softmax": (1, ("dim", "_stacklevel", "dtype")),
    "softmin": (1, ("dim", "_stacklevel", "dtype")),
    "softsign": (1, ()), "tanhshrink": (1, ()),
    "triplet_margin_loss": (3, ("margin", "p", "eps", "swap", "size_average", "reduce",
                                "reduction")),
    "unfold": (2, ("dilation", "padding", "stride")),
}
# torch's defaults for parameters ember's functions may not take
_DEFAULTS = {"_stacklevel": 3, "size_average": None, "reduce": None, "dtype": None,
             "out": None, "weight": None}
# bound to C++ builtins in torch: recorded as called, named by torch's path (the table is
# torch.nn.functional's: its overrides check reads it too)
BUILTIN = TORCH_BUILTINS
AS_METHOD = frozenset(("tanh", "sigmoid"))


def recorded_call(name: str, fn: Callable[..., Any], args: tuple, kwargs: dict
                  ) -> tuple[tuple, dict]:
    """The (args, kwargs) torch.fx records for ``F.<name>(*args, **kwargs)``."""
    spec = NORMALIZED.get(name)
    if spec is None:
        return args, kwargs
    npos, keywords = spec
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return args, kwargs
    bound.apply_defaults()
    values = dict(bound.arguments)
    params = list(values)
    pos = tuple(values[p] for p in params[:npos])
    kw = {k: values[k] if k in values else _DEFAULTS.get(k) for k in keywords}
    return pos, kw
