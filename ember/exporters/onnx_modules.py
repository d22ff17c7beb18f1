"""ONNX converters for `ember.nn` module calls, keyed by class name.

A module converter reads the module's configuration (`node.module`) and its positional
tensor arguments (`node.args`), and emits the ONNX operator that does the same thing
(Conv, Gemm, LSTM, BatchNormalization ...). It returns `NotImplemented` for a
configuration the ONNX operator does not cover (a subclass that overrides `forward`, a
training-mode module, an LSTM projection ...): the ops the module ran are then exported
one by one instead, which is always correct, only less compact. They enter the export
table (`onnx_registry`) when this module is imported, as the driver does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember import nn
from ember.core import dtype as dt
from ember.exporters.onnx_context import ExportContext, numpy_dtype
from ember.exporters.onnx_converters import (
    emit_conv,
    emit_conv_transpose,
    emit_layer_norm,
    emit_linear,
)
from ember.exporters.onnx_registry import converter
from ember.jit.graph import Node, Value


def _plain(node: Node, cls: type, nargs: int = 1) -> Value | None:
    """The input of a call of an unmodified `cls` with `nargs` positional tensors, or None
    (a subclass with its own forward, other arguments, a module in training mode)."""
    module = node.module
    if not isinstance(module, cls) or type(module).forward is not cls.forward:
        return None
    if len(node.args) != nargs or not all(isinstance(a, Value) for a in node.args):
        return None
    if len(node.outputs) != 1:
        return None
    return node.args[0]


def _float(x: Value) -> bool:
    return x.dtype.is_floating_point


# -- linear, convolution ----------------------------------------------------------------------


@converter("Linear", "NonDynamicallyQuantizableLinear")
def _linear(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.Linear)
    if x is None or not _float(x) or not x.shape:
        return NotImplemented
    m = node.module
    weight = ctx.param_value(m.weight)
    bias = None if m.bias is None else ctx.param_value(m.bias)
    if weight is None or (m.bias is not None and bias is None) or weight.dtype is not x.dtype:
        return NotImplemented
    return emit_linear(ctx, x, weight, bias)


def _conv_module(ctx: ExportContext, node: Node, cls: type, n: int) -> Any:
    x = _plain(node, cls)
    m = node.module
    if x is None or not _float(x) or m.padding_mode != "zeros":
        return NotImplemented
    bias = None if m.bias is None else ctx.param(m.bias, f"{node.scope}.bias")
    return emit_conv(ctx, ctx.name(x), n, ctx.param(m.weight, f"{node.scope}.weight"), bias,
                     tuple(m.weight.shape[2:]), m.stride, m.padding, m.dilation, m.groups,
                     unbatched=len(x.shape) == n + 1)


@converter("Conv1d")
def _conv1d(ctx: ExportContext, node: Node) -> Any:
    return _conv_module(ctx, node, nn.Conv1d, 1)


@converter("Conv2d")
def _conv2d(ctx: ExportContext, node: Node) -> Any:
    return _conv_module(ctx, node, nn.Conv2d, 2)


@converter("Conv3d")
def _conv3d(ctx: ExportContext, node: Node) -> Any:
    return _conv_module(ctx, node, nn.Conv3d, 3)


@converter("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
def _conv_transpose(ctx: ExportContext, node: Node) -> Any:
    cls = next((c for c in (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
                if isinstance(node.module, c)), None)
    if cls is None:
        return NotImplemented
    x = _plain(node, cls)  # an output_size argument would make 2 args
    m = node.module
    if x is None or not _float(x) or m.padding_mode != "zeros":
        return NotImplemented
    bias = None if m.bias is None else ctx.param(m.bias, f"{node.scope}.bias")
    return emit_conv_transpose(ctx, ctx.name(x), ctx.param(m.weight, f"{node.scope}.weight"),
                               bias, tuple(m.weight.shape[2:]), m.stride, m.padding,
                               m.output_padding, m.groups, m.dilation,
                               unbatched=len(x.shape) == m.weight.ndim - 1)


# -- normalization ----------------------------------------------------------------------------


def _vector(ctx: ExportContext, node: Node, tensor: Any, attr: str, fill: float, n: int,
            dtype: Any) -> str:
    if tensor is None:
        return ctx.const(np.full(n, fill, dtype=numpy_dtype(dtype)))
    return ctx.param(tensor, f"{node.scope}.{attr}")


@converter("BatchNorm1d", "BatchNorm2d", "BatchNorm3d")
def _batch_norm(ctx: ExportContext, node: Node) -> Any:
    cls = getattr(nn, node.op)
    x = _plain(node, cls)
    m = node.module
    if x is None or not _float(x) or m.training or m.running_mean is None or \
            m.running_var is None:
        return NotImplemented
    c = m.num_features
    scale = _vector(ctx, node, m.weight, "weight", 1.0, c, x.dtype)
    shift = _vector(ctx, node, m.bias, "bias", 0.0, c, x.dtype)
    mean = ctx.param(m.running_mean, f"{node.scope}.running_mean")
    var = ctx.param(m.running_var, f"{node.scope}.running_var")
    name = ctx.name(x)
    flat = len(x.shape) == 2  # (N, C): BatchNormalization wants spatial dims
    if flat:
        name = ctx.unsqueeze(name, [2])
    out = ctx.op("BatchNormalization", name, scale, shift, mean, var, epsilon=float(m.eps))
    return ctx.squeeze(out, [2]) if flat else out


@converter("LayerNorm")
def _layer_norm(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.LayerNorm)
    m = node.module
    if x is None or not _float(x) or ctx.opset < 17:
        return NotImplemented
    shape = tuple(m.normalized_shape)
    scale = ctx.param(m.weight, f"{node.scope}.weight") if m.weight is not None else \
        ctx.const(np.ones(shape, dtype=numpy_dtype(x.dtype)))
    bias = None if m.bias is None else ctx.param(m.bias, f"{node.scope}.bias")
    return emit_layer_norm(ctx, ctx.name(x), len(shape), scale, bias, float(m.eps))


@converter("GroupNorm")
def _group_norm(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.GroupNorm)
    m = node.module
    if x is None or not _float(x) or len(x.shape) < 2:
        return NotImplemented
    g, c = m.num_groups, m.num_channels
    name = ctx.name(x)
    # InstanceNormalization over (N, G, C/G * spatial) gives each group's statistics
    grouped = ctx.op("Reshape", name, ctx.ints([0, g, -1]))
    ones = ctx.const(np.ones(g, dtype=numpy_dtype(x.dtype)))
    zeros = ctx.const(np.zeros(g, dtype=numpy_dtype(x.dtype)))
    normed = ctx.op("InstanceNormalization", grouped, ones, zeros, epsilon=float(m.eps))
    out = ctx.op("Reshape", normed, ctx.shape(name))
    trail = [1] * (len(x.shape) - 2)
    if m.weight is not None:
        out = ctx.op("Mul", out, ctx.op("Reshape", ctx.param(m.weight, f"{node.scope}.weight"),
                                        ctx.ints([c] + trail)))
    if m.bias is not None:
        out = ctx.op("Add", out, ctx.op("Reshape", ctx.param(m.bias, f"{node.scope}.bias"),
                                        ctx.ints([c] + trail)))
    return out


@converter("Embedding")
def _embedding(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.Embedding)
    m = node.module
    if x is None or m.max_norm is not None or x.dtype.is_floating_point:
        return NotImplemented
    return ctx.op("Gather", ctx.param(m.weight, f"{node.scope}.weight"),
                  ctx.value(x, dt.int64) if x.dtype not in (dt.int32, dt.int64)
                  else ctx.name(x), axis=0)


@converter("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "Identity")
def _dropout(ctx: ExportContext, node: Node) -> Any:
    cls = getattr(nn, node.op)
    x = _plain(node, cls)
    if x is None or node.module.training and node.op != "Identity":
        return NotImplemented
    return ctx.name(x)


# -- activations ---------------------------------------------------------------------------------


def _act(cls_name: str) -> Any:
    def check(node: Node) -> Value | None:
        return _plain(node, getattr(nn, cls_name))
    return check


def _simple(op_type: str, cls_name: str, **attrs: Any) -> None:
    check = _act(cls_name)

    def conv(ctx: ExportContext, node: Node) -> Any:
        x = check(node)
        if x is None or not _float(x):
            return NotImplemented
        values = {k: (v(node.module) if callable(v) else v) for k, v in attrs.items()}
        return ctx.op(op_type, ctx.name(x), **values)
    converter(cls_name)(conv)


_simple("Relu", "ReLU")
_simple("Sigmoid", "Sigmoid")
_simple("Tanh", "Tanh")
_simple("Softsign", "Softsign")
_simple("LeakyRelu", "LeakyReLU", alpha=lambda m: float(m.negative_slope))
_simple("Elu", "ELU", alpha=lambda m: float(m.alpha))
_simple("Celu", "CELU", alpha=lambda m: float(m.alpha))
_simple("Selu", "SELU", alpha=1.6732632423543772848170429916717,
        gamma=1.0507009873554804934193349852946)
_simple("HardSigmoid", "Hardsigmoid", alpha=1.0 / 6.0, beta=0.5)
_simple("HardSwish", "Hardswish")


@converter("GELU")
def _gelu(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.GELU)
    if x is None or not _float(x):
        return NotImplemented
    approximate = node.module.approximate
    name = ctx.name(x)
    if ctx.opset >= 20:
        return ctx.op("Gelu", name, approximate=approximate)
    half = ctx.scalar(0.5, x.dtype)
    one = ctx.scalar(1.0, x.dtype)
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = ctx.op("Mul", ctx.op("Mul", name, name), name)
        inner = ctx.op("Add", name, ctx.op("Mul", cube, ctx.scalar(0.044715, x.dtype)))
        t = ctx.op("Tanh", ctx.op("Mul", inner, ctx.scalar(math.sqrt(2 / math.pi), x.dtype)))
    else:  # 0.5 x (1 + erf(x / sqrt(2)))
        t = ctx.op("Erf", ctx.op("Mul", name, ctx.scalar(1 / math.sqrt(2), x.dtype)))
    return ctx.op("Mul", ctx.op("Mul", name, half), ctx.op("Add", t, one))


@converter("SiLU")
def _silu(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.SiLU)
    if x is None or not _float(x):
        return NotImplemented
    name = ctx.name(x)
    return ctx.op("Mul", name, ctx.op("Sigmoid", name))


@converter("Mish")
def _mish(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.Mish)
    if x is None or not _float(x):
        return NotImplemented
    name = ctx.name(x)
    if ctx.opset >= 18:
        return ctx.op("Mish", name)
    return ctx.op("Mul", name, ctx.op("Tanh", ctx.op("Softplus", name)))


@converter("Softplus")
def _softplus(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.Softplus)
    if x is None or not _float(x):
        return NotImplemented
    beta, threshold = float(node.module.beta), float(node.module.threshold)
    name = ctx.name(x)
    scaled = name if beta == 1.0 else ctx.op("Mul", name, ctx.scalar(beta, x.dtype))
    soft = ctx.op("Softplus", scaled)
    if beta != 1.0:
        soft = ctx.op("Div", soft, ctx.scalar(beta, x.dtype))
    # PyTorch reverts to the identity where beta * x > threshold
    return ctx.op("Where", ctx.op("Greater", scaled, ctx.scalar(threshold, x.dtype)), name,
                  soft)


@converter("Hardtanh", "ReLU6")
def _hardtanh(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, getattr(nn, node.op))
    if x is None or not _float(x):
        return NotImplemented
    m = node.module
    return ctx.op("Clip", ctx.name(x), ctx.scalar(float(m.min_val), x.dtype),
                  ctx.scalar(float(m.max_val), x.dtype))


@converter("PReLU")
def _prelu(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.PReLU)
    m = node.module
    if x is None or not _float(x) or not x.shape:
        return NotImplemented
    slope = ctx.param(m.weight, f"{node.scope}.weight")
    n = m.weight.shape[0]
    if n > 1:  # one slope per channel (dim 1)
        if len(x.shape) < 2:
            return NotImplemented
        slope = ctx.op("Reshape", slope, ctx.ints([n] + [1] * (len(x.shape) - 2)))
    return ctx.op("PRelu", ctx.name(x), slope)


def _softmax_dim(m: Any, ndim: int) -> int:
    dim = m.dim
    if dim is None:  # PyTorch's legacy implicit choice
        dim = 0 if ndim in (0, 1, 3) else 1
    return dim % ndim


@converter("Softmax", "LogSoftmax", "Softmin")
def _softmax(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, getattr(nn, node.op))
    if x is None or not _float(x) or not x.shape:
        return NotImplemented
    axis = _softmax_dim(node.module, len(x.shape))
    name = ctx.name(x)
    if node.op == "Softmin":
        name = ctx.op("Neg", name)
    return ctx.op("LogSoftmax" if node.op == "LogSoftmax" else "Softmax", name, axis=axis)


# -- shapes ------------------------------------------------------------------------------------


@converter("Flatten")
def _flatten(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.Flatten)
    m = node.module
    if x is None or len(x.shape) < 2:
        return NotImplemented
    n = len(x.shape)
    if m.start_dim % n == 1 and m.end_dim % n == n - 1:
        return ctx.op("Flatten", ctx.name(x), axis=1)
    return NotImplemented  # the reshape inside exports


@converter("Unflatten")
def _unflatten(ctx: ExportContext, node: Node) -> Any:
    x = _plain(node, nn.Unflatten)
    m = node.module
    if x is None or not x.shape or not isinstance(m.dim, int):
        return NotImplemented
    n = len(x.shape)
    d = m.dim % n
    sizes = [int(s) for s in m.unflattened_size]
    if 0 in sizes:
        return NotImplemented
    name = ctx.name(x)
    # leading sizes are copied (0), trailing ones taken from the input's shape
    head = ctx.ints([0] * d + sizes)
    if d + 1 == n:
        return ctx.op("Reshape", name, head)
    tail = ctx.op("Slice", ctx.shape(name), ctx.ints([d + 1]), ctx.ints([n]))
    return ctx.op("Reshape", name, ctx.op("Concat", head, tail, axis=0))


# -- losses --------------------------------------------------------------------------------------


def _reduce_loss(ctx: ExportContext, name: str, rank: int, reduction: str) -> str:
    if reduction == "none" or rank == 0:
        return name
    op = "ReduceMean" if reduction == "mean" else "ReduceSum"
    return ctx.reduce(op, name, list(range(rank)), False)


def _loss_inputs(node: Node, cls: type) -> tuple[Value, Value] | None:
    if _plain(node, cls, 2) is None:
        return None
    x, y = node.args
    if not _float(x) or not _float(y) or tuple(x.shape) != tuple(y.shape) or \
            x.dtype is not y.dtype:
        return None
    return x, y


@converter("MSELoss", "L1Loss")
def _mse_l1(ctx: ExportContext, node: Node) -> Any:
    pair = _loss_inputs(node, getattr(nn, node.op))
    if pair is None:
        return NotImplemented
    x, y = pair
    diff = ctx.op("Sub", ctx.name(x), ctx.name(y))
    each = ctx.op("Mul", diff, diff) if node.op == "MSELoss" else ctx.op("Abs", diff)
    return _reduce_loss(ctx, each, len(x.shape), node.module.reduction)


@converter("BCEWithLogitsLoss")
def _bce_logits(ctx: ExportContext, node: Node) -> Any:
    pair = _loss_inputs(node, nn.BCEWithLogitsLoss)
    if pair is None:
        return NotImplemented
    x, y = pair
    m = node.module
    xn, yn = ctx.name(x), ctx.name(y)
    one = ctx.scalar(1.0, x.dtype)
    # (1 - y) x + (1 + (pw - 1) y) (log(1 + exp(-|x|)) + max(-x, 0))
    log_term = ctx.op("Add", ctx.op("Softplus", ctx.op("Neg", ctx.op("Abs", xn))),
                      ctx.op("Relu", ctx.op("Neg", xn)))
    if m.pos_weight is not None:
        pw = ctx.param(m.pos_weight, f"{node.scope}.pos_weight")
        coef = ctx.op("Add", one, ctx.op("Mul", ctx.op("Sub", pw, one), yn))
        log_term = ctx.op("Mul", coef, log_term)
    loss = ctx.op("Add", ctx.op("Mul", ctx.op("Sub", one, yn), xn), log_term)
    if m.weight is not None:
        loss = ctx.op("Mul", loss, ctx.param(m.weight, f"{node.scope}.weight"))
    return _reduce_loss(ctx, loss, len(x.shape), m.reduction)


@converter("BCELoss")
def _bce(ctx: ExportContext, node: Node) -> Any:
    pair = _loss_inputs(node, nn.BCELoss)
    if pair is None:
        return NotImplemented
    x, y = pair
    m = node.module
    xn, yn = ctx.name(x), ctx.name(y)
    one, floor = ctx.scalar(1.0, x.dtype), ctx.scalar(-100.0, x.dtype)
    log_x = ctx.op("Max", ctx.op("Log", xn), floor)  # PyTorch clamps the logs at -100
    log_1x = ctx.op("Max", ctx.op("Log", ctx.op("Sub", one, xn)), floor)
    loss = ctx.op("Neg", ctx.op("Add", ctx.op("Mul", yn, log_x),
                                ctx.op("Mul", ctx.op("Sub", one, yn), log_1x)))
    if m.weight is not None:
        loss = ctx.op("Mul", loss, ctx.param(m.weight, f"{node.scope}.weight"))
    return _reduce_loss(ctx, loss, len(x.shape), m.reduction)


@converter("CrossEntropyLoss", "NLLLoss")
def _cross_entropy(ctx: ExportContext, node: Node) -> Any:
    cls = getattr(nn, node.op)
    if _plain(node, cls, 2) is None:
        return NotImplemented
    x, target = node.args
    m = node.module
    if not _float(x) or len(x.shape) < 2 or target.dtype not in (dt.int64, dt.int32) or \
            getattr(m, "label_smoothing", 0.0):
        return NotImplemented  # probabilities as targets, smoothing, unbatched: the ops
    name = ctx.name(x)
    if node.op == "CrossEntropyLoss":
        if len(x.shape) == 2:
            name = ctx.op("LogSoftmax", name, axis=1)
        else:  # LogSoftmax over dim 1 of (N, C, d1, ...)
            perm = [0] + list(range(2, len(x.shape))) + [1]
            back = [0, len(x.shape) - 1] + list(range(1, len(x.shape) - 1))
            name = ctx.op("Transpose", ctx.op("LogSoftmax", ctx.op("Transpose", name,
                                                                      perm=perm), axis=-1),
                          perm=back)
    weight = None if m.weight is None else ctx.param(m.weight, f"{node.scope}.weight")
    return ctx.op("NegativeLogLikelihoodLoss", name, ctx.name(target), weight,
                  reduction=m.reduction, ignore_index=int(m.ignore_index))


# -- recurrent layers ---------------------------------------------------------------------------

# ember (PyTorch) gate order -> ONNX gate order, as indices of the ember blocks
_GATE_ORDER = {"LSTM": [0, 3, 1, 2],     # i f g o -> i o f c
               "GRU": [1, 0, 2],         # r z n -> z r h
               "RNN_TANH": [0], "RNN_RELU": [0]}


def _gates(ctx: ExportContext, tensor: Any, name: str, order: list[int], hidden: int) -> Any:
    """A weight or bias with its gate blocks in ONNX's order (NumPy when constant)."""
    array = ctx.param_array(tensor)
    if array is not None:
        return np.concatenate([array[k * hidden:(k + 1) * hidden] for k in order])
    index = np.concatenate([np.arange(k * hidden, (k + 1) * hidden) for k in order])
    return ctx.op("Gather", ctx.param(tensor, name), ctx.ints(index), axis=0)


def _stack(ctx: ExportContext, parts: list, name: str) -> str:
    """Stack per-direction tensors along a new leading axis."""
    if all(isinstance(p, np.ndarray) for p in parts):
        return ctx.const(np.stack(parts), name=name)
    names = [ctx.unsqueeze(p if isinstance(p, str) else ctx.const(p), [0]) for p in parts]
    return names[0] if len(names) == 1 else ctx.op("Concat", *names, axis=0)


@converter("LSTM", "GRU", "RNN")
def _recurrent(ctx: ExportContext, node: Node) -> Any:
    cls = getattr(nn, node.op)
    m = node.module
    if not isinstance(m, cls) or type(m).forward is not cls.forward or not node.args:
        return NotImplemented
    x = node.args[0]
    hx = node.args[1] if len(node.args) > 1 else None
    if len(node.args) > 2 or not isinstance(x, Value) or len(x.shape) != 3 or \
            x.dtype is not dt.float32 or getattr(m, "proj_size", 0) or \
            (m.training and m.dropout and m.num_layers > 1):
        return NotImplemented
    lstm = m.mode == "LSTM"
    if lstm:
        if hx is not None and not (isinstance(hx, tuple) and len(hx) == 2 and
                                   all(isinstance(h, Value) for h in hx)):
            return NotImplemented
        if len(node.outputs) != 3:
            return NotImplemented
    elif (hx is not None and not isinstance(hx, Value)) or len(node.outputs) != 2:
        return NotImplemented
    h0, c0 = (hx if lstm else (hx, None)) if hx is not None else (None, None)
    directions = 2 if m.bidirectional else 1
    hidden = m.hidden_size
    order = _GATE_ORDER[m.mode]
    gates = len(order)
    op_type = {"LSTM": "LSTM", "GRU": "GRU"}.get(m.mode, "RNN")
    attrs: dict[str, Any] = {"hidden_size": hidden,
                             "direction": "bidirectional" if directions == 2 else "forward"}
    if m.mode == "GRU":
        attrs["linear_before_reset"] = 1
    if op_type == "RNN":
        attrs["activations"] = ["Tanh" if m.mode == "RNN_TANH" else "Relu"] * directions
    seq = ctx.name(x)
    if m.batch_first:
        seq = ctx.op("Transpose", seq, perm=[1, 0, 2])
    h_states, c_states = [], []
    for layer in range(m.num_layers):
        ws, rs, bs = [], [], []
        for d in range(directions):
            tag = f"l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh = getattr(m, "weight_ih_" + tag), getattr(m, "weight_hh_" + tag)
            ws.append(_gates(ctx, w_ih, f"{node.scope}.weight_ih_{tag}", order, hidden))
            rs.append(_gates(ctx, w_hh, f"{node.scope}.weight_hh_{tag}", order, hidden))
            if m.bias:
                b_ih = _gates(ctx, getattr(m, "bias_ih_" + tag), f"{node.scope}.bias_ih_{tag}",
                              order, hidden)
                b_hh = _gates(ctx, getattr(m, "bias_hh_" + tag), f"{node.scope}.bias_hh_{tag}",
                              order, hidden)
                if isinstance(b_ih, np.ndarray) and isinstance(b_hh, np.ndarray):
                    bs.append(np.concatenate([b_ih, b_hh]))
                else:
                    to_name = [b if isinstance(b, str) else ctx.const(b) for b in (b_ih, b_hh)]
                    bs.append(ctx.op("Concat", *to_name, axis=0))
        w = _stack(ctx, ws, f"{node.scope}.onnx_W_l{layer}")
        r = _stack(ctx, rs, f"{node.scope}.onnx_R_l{layer}")
        b = _stack(ctx, bs, f"{node.scope}.onnx_B_l{layer}") if bs else None
        span = (ctx.ints([layer * directions]), ctx.ints([(layer + 1) * directions]),
                ctx.ints([0]))
        init_h = None if h0 is None else ctx.op("Slice", ctx.name(h0), *span)
        init_c = None if c0 is None else ctx.op("Slice", ctx.name(c0), *span)
        inputs = [seq, w, r, b, None, init_h] + ([init_c] if lstm else [])
        outs = ctx.op(op_type, *inputs, outputs=3 if lstm else 2, **attrs)
        y = outs[0]  # (T, D, B, H) -> (T, B, D * H)
        seq = ctx.op("Reshape", ctx.op("Transpose", y, perm=[0, 2, 1, 3]),
                     ctx.ints([0, 0, -1]))
        h_states.append(outs[1])
        if lstm:
            c_states.append(outs[2])
    del gates
    output = ctx.op("Transpose", seq, perm=[1, 0, 2]) if m.batch_first else seq
    h_n = h_states[0] if len(h_states) == 1 else ctx.op("Concat", *h_states, axis=0)
    if not lstm:
        return [output, h_n]
    c_n = c_states[0] if len(c_states) == 1 else ctx.op("Concat", *c_states, axis=0)
    return [output, h_n, c_n]
