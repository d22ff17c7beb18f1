"""Neural-network ops: convolution, pooling, padding, linear, layer norm, softmax and
log-softmax, and the LSTM cell and layer kernels (the losses are the next family,
ember.core.ops.losses).

Convolution is im2col + one matmul (the backend contract's default decomposition), pooling is
im2col + a reduction; both primitives have CPU kernels and a backward (col2im / im2col).
Many of these composites have fused kernels a backend may supply (declared below each);
without them the decomposition runs. `ember.nn.functional` is written with these.

Kernels of the primitives (signatures of their rules):

    im2col        kernel(input, kernel_size=, dilation=, padding=, stride=) -> cols: input
                  is (N, C, *spatial), any number of spatial dims; cols is (N, C * prod(k),
                  L) in PyTorch's F.unfold layout (channel-major, then kernel offsets), zero
                  padding, L output positions in row-major order.
    col2im        kernel(cols, output_size=, kernel_size=, dilation=, padding=, stride=) ->
                  x: the adjoint of im2col (overlapping entries are summed; F.fold).
    constant_pad  kernel(input, pad=((before, after), ...) per dim, value=) -> y.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.core import costs, tracing
from ember.core import dtype as dt
from ember.core import forward_ad as fw
from ember.core.apply import DeclaredNode, apply, record_grad
from ember.core.backend import numpy_dtype
from ember.core.creation import arange, full, ones, tensor, zeros
from ember.core.declare import composite, fused_kernel, primitive
from ember.core.dispatch import (
    device_mismatch,
    kernel_refuses,
    run_fused,
    user_stacklevel,
    write_into,
)
from ember.core.errors import warn_once, with_context
from ember.core.function import Function, as_kernel
from ember.core.grad_mode import no_grad, state
from ember.core.graph import ShownNode, edge_of, record, shown_as
from ember.core.host import dtype_arg
from ember.core.memory_format import contiguous_format, row_major, tensor_format
from ember.core.opdef import OPS, Cost, Grad, OutMeta, metadata_rule
from ember.core.opdef import Precision as P
from ember.core.ops import reduction as R
from ember.core.ops.elementwise import abs as abs_
from ember.core.ops.elementwise import (
    activation_backward,
    add,
    clamp,
    conj,
    div,
    eq,
    erf,
    exp,
    expm1,
    floor,
    floor_divide,
    ge,
    isfinite,
    isnan,
    log1p,
    logical_and,
    lt,
    minimum,
    mul,
    refuse_complex_autograd,
    remainder,
    rsqrt,
    rsub,
    sigmoid,
    sub,
    tanh,
    to_dtype,
    trunc,
    where,
)
from ember.core.ops.elementwise import round as round_
from ember.core.ops.elementwise_math import shrink_passes
from ember.core.ops.indexing import (
    SCALAR_TYPE_NAMES,
    chunk,
    gather,
    getitem,
    index_add,
    index_select,
    narrow,
    scatter,
)
from ember.core.ops.linalg import matmul
from ember.core.ops.shape import (
    cat,
    expand,
    expanded_shape,
    in_format_of,
    in_memory_format,
    in_suggested_format,
    permute,
    reshape,
    squeeze,
    t,
    transpose,
    unsqueeze,
)
from ember.core.shapes import conv_out_size, fmt_shape, normalize_dim, window_count
from ember.core.storage import cpp_type_name, scalar_type_name
from ember.core.tensor import Tensor
from ember.core.threads import get_num_threads


def _tuple(value: Any, n: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise ValueError(f"expected {name} to be an int or a tuple of {n} ints, got {value}")
    return value


# -- im2col / col2im (F.unfold / F.fold) ----------------------------------------------


def _window_attrs(n: int, kernel_size: Any, dilation: Any, padding: Any,
                  stride: Any) -> dict:
    return dict(kernel_size=_tuple(kernel_size, n, "kernel_size"),
                dilation=_tuple(dilation, n, "dilation"),
                padding=_tuple(padding, n, "padding"), stride=_tuple(stride, n, "stride"))


@metadata_rule
def _im2col_rule(input, *, kernel_size, dilation, padding, stride):
    n = len(kernel_size)
    if input.ndim != n + 2:
        raise RuntimeError(f"im2col: expected a {n + 2}-D input (batch, channels, "
                           f"{n} spatial dims), got shape {fmt_shape(input.shape)}")
    outs = [conv_out_size("im2col", input.shape[2 + i], kernel_size[i], dilation[i],
                          padding[i], stride[i]) for i in range(n)]
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"im2col: the computed output size {outs} is too small for input "
                           f"{fmt_shape(input.shape)} and kernel {list(kernel_size)}")
    return OutMeta((input.shape[0], input.shape[1] * math.prod(kernel_size), math.prod(outs)),
                   input.dtype, None)


@metadata_rule
def _col2im_rule(input, *, output_size, kernel_size, dilation, padding, stride):
    n = len(kernel_size)
    k = math.prod(kernel_size)
    blocks = math.prod(conv_out_size("col2im", output_size[i], kernel_size[i], dilation[i],
                                     padding[i], stride[i]) for i in range(n))
    if input.ndim != 3 or input.shape[1] % k or input.shape[2] != blocks:
        raise RuntimeError(f"col2im: expected input of shape (N, C * {k}, {blocks}) for "
                           f"output size {list(output_size)}, got {fmt_shape(input.shape)}")
    return OutMeta((input.shape[0], input.shape[1] // k) + tuple(output_size), input.dtype,
                   None)


@primitive(variants="", rule=_im2col_rule, traced_as_node=True, cost=costs.movement,
           grad=Grad("Im2ColBackward0",
                     input=lambda grad, input_shape, kernel_size, dilation, padding, stride:
                     col2im(grad, input_shape[2:], kernel_size, dilation, padding, stride)))
def im2col(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Tensor:
    """Sliding local blocks of a batched (N, C, *spatial) tensor, as (N, C*prod(k), L)
    (`nn.functional.unfold`)."""
    attrs = _window_attrs(input.ndim - 2, kernel_size, dilation, padding, stride)
    return apply(OPS["im2col"], input, **attrs)


@primitive(variants="", rule=_col2im_rule, traced_as_node=True, cost=costs.movement,
           grad=Grad("Col2ImBackward0",
                     input=lambda grad, kernel_size, dilation, padding, stride:
                     im2col(grad, kernel_size, dilation, padding, stride)))
def col2im(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1,
           padding: Any = 0, stride: Any = 1) -> Tensor:
    """Sums sliding local blocks (N, C*prod(k), L) back into (N, C, *output_size)
    (`nn.functional.fold`)."""
    n = len(output_size) if not isinstance(output_size, int) else 2
    attrs = _window_attrs(n, kernel_size, dilation, padding, stride)
    size = _tuple(output_size, n, "output_size")
    return apply(OPS["col2im"], input, output_size=size, **attrs)


# -- padding --------------------------------------------------------------------------


@metadata_rule
def _constant_pad_rule(input, *, pad, value=0):
    # `pad`: a (before, after) pair per dimension, all non-negative (constant_pad_nd crops)
    return OutMeta(tuple(s + a + b for s, (a, b) in zip(input.shape, pad)), input.dtype, None)


def _unpad(grad, input_shape, pad):
    key = tuple(slice(a, a + s) for (a, _), s in zip(pad, input_shape))
    return getitem(grad, key)


@primitive(complex=True, variants="", rule=_constant_pad_rule, cost=costs.movement,
           grad=Grad("ConstantPadNdBackward0", input=_unpad))
def constant_pad(input: Tensor, pad: tuple, value: Any = 0) -> Tensor:
    """Pads with `value`: `pad` holds a non-negative (before, after) pair per dimension."""
    return apply(OPS["constant_pad"], input, pad=pad, value=value)


@composite(complex=True, variants="function", traced_as_node=True, cost=costs.movement)
def constant_pad_nd(input: Tensor, pad: Sequence[int], value: Any = 0.0) -> Tensor:
    """Pads with a constant; `pad` lists (left, right) pairs from the last dimension
    backwards, as `F.pad` does. Negative amounts crop."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(f"constant_pad_nd: padding length {len(pad)} must be even and at "
                           f"most twice the number of dimensions ({input.ndim})")
    pairs = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        pairs[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if any(s + min(a, 0) + min(b, 0) < 0 for (a, b), s in zip(pairs, input.shape)):
        raise RuntimeError("narrow(): length must be non-negative.")  # (PyTorch's crop)
    if any(a < 0 or b < 0 for a, b in pairs):  # crop first, then pad what is positive
        key = tuple(slice(-a if a < 0 else 0, s + b if b < 0 else s)
                    for (a, b), s in zip(pairs, input.shape))
        input = getitem(input, key)
        pairs = [(max(a, 0), max(b, 0)) for a, b in pairs]
    pairs = tuple(pairs)
    if not any(a or b for a, b in pairs):
        return input
    return in_suggested_format(constant_pad(input, pairs, value), input)


# -- linear ---------------------------------------------------------------------------


def _linear_grads(grad, input, weight, needs):
    g, x, w = grad, input, weight
    if w.ndim == 2:
        fused = run_fused("linear_backward", x, w, g, needs)
        if fused is not None:
            return fused
    gx = gw = gb = None
    x, w = conj(x), conj(w)  # (PyTorch's conjugate convention; real tensors unchanged)
    if w.ndim == 1:
        g = unsqueeze(g, -1)
        w2 = unsqueeze(w, 0)
    else:
        w2 = w
    if needs[0]:
        gx = matmul(g, w2)
        if w.ndim == 1:
            gx = reshape(gx, tuple(x.shape))
    if needs[1] or needs[2]:
        g2 = reshape(g, (-1, g.shape[-1]))
        if needs[1]:
            gw = matmul(t(g2), reshape(x, (-1, x.shape[-1])))
            if w.ndim == 1:
                gw = reshape(gw, tuple(w.shape))
        if needs[2]:
            gb = R.sum(g2, 0)
            if w.ndim == 1:
                gb = reshape(gb, ())
    return gx, gw, gb


def _linear_cost(input: Any, weight: Any, bias: Any = None) -> Cost:
    rows = math.prod(input.shape[:-1])
    out = rows * (weight.shape[0] if len(weight.shape) == 2 else 1)
    return Cost(2.0 * out * input.shape[-1] + (out if bias is not None else 0),
                costs.nbytes(input) + costs.nbytes(weight) + out * input.dtype.itemsize)


@composite(complex=True, variants="", traced_as_node=True, precision=P.LOWER,
           cpu_precision=P.LOWER, cost=_linear_cost, fused=("linear", "linear_backward"),
           grad=Grad("AddmmBackward0", each=_linear_grads,
                     operands=("input", "weight", "bias")))
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """`input @ weight.T + bias` (`nn.functional.linear`)."""
    x_shape, w_shape = input._data.shape, weight._data.shape  # (a layer's hot path)
    if not x_shape or not w_shape:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{len(x_shape)}D and {len(w_shape)}D")
    if len(w_shape) not in (1, 2):
        raise RuntimeError(f"linear: weight must be 1-D or 2-D, got shape "
                           f"{fmt_shape(w_shape)}")
    if x_shape[-1] != w_shape[-1]:
        raise with_context(RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({math.prod(x_shape[:-1])}x"
            f"{x_shape[-1]} and {w_shape[-1]}x{w_shape[0] if len(w_shape) == 2 else 1})"),
            f"linear: input of shape {fmt_shape(x_shape)}, weight of shape "
            f"{fmt_shape(w_shape)}")
    if input._dtype is not weight._dtype and bias is not None and len(w_shape) == 2:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{scalar_type_name(input._dtype)} and "
                           f"{scalar_type_name(weight._dtype)}")
    if bias is not None and len(w_shape) == 2 and bias._data.shape != w_shape[:1]:
        # PyTorch's addmm expands the bias to the flattened product (rows x out_features)
        expanded_shape(bias, (math.prod(x_shape[:-1]), w_shape[0]), "linear")
    # PyTorch fuses the bias into one addmm (a half float product rounded once with it)
    # for 2-D or contiguous inputs; a strided input of more dims is a matmul, then the bias
    # added (rounded twice)
    separate = bias is not None and len(x_shape) >= 3 and input._dtype in _HALF and \
        not input.is_contiguous()
    out = run_fused("linear", input, weight, bias) if len(w_shape) == 2 and not separate \
        else None
    if out is None:
        with no_grad():
            out = matmul(input, t(weight) if len(w_shape) == 2 else weight)
            if bias is not None:
                out = add(out, bias)
    if len(w_shape) == 2:
        record_grad(OPS["linear"], (input, weight, bias), {}, out,
                    label=_linear_label(len(x_shape), bias is not None))
        if out._node is not None:
            out._node.__class__ = _LinearNode  # (PyTorch's next_functions; same fields)
    else:
        record_grad(OPS["linear"], (input, weight, bias), {}, out)
    return out


_linear_shown: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _LinearNode(DeclaredNode):
    """linear's node, whose `next_functions` are PyTorch's graph of it: an addmm (or mm)
    of (bias, input, `TBackward0` of the weight), inside views for other input ranks, so
    `grad_fn.next_functions[0][0]` walks as in PyTorch. One node runs the backward."""

    __slots__ = ()

    @property
    def next_functions(self) -> tuple:
        shown = _linear_shown.get(self)
        if shown is None:
            shown = _linear_shown[self] = _shown_linear_edges(self.label, self.next_edges)
        return tuple((shown_as(e[0]), e[1]) if e is not None else (None, 0) for e in shown)

    def register_hook(self, hook: Any) -> Any:
        """A post hook sees PyTorch's addmm/mm gradients, (bias, input, weight.T) or
        (input, weight.T), rather than this node's (input, weight, bias)."""
        if self.label not in ("AddmmBackward0", "MmBackward0"):
            return super().register_hook(hook)
        addmm = self.label == "AddmmBackward0"

        def t_(g: Any) -> Any:
            return None if g is None else g.t()

        def shown(grad_inputs: tuple, grad_outputs: tuple) -> Any:
            x, w, b = (tuple(grad_inputs) + (None, None))[:3]
            new = hook((b, x, t_(w)) if addmm else (x, t_(w)), grad_outputs)
            if new is None:
                return None
            new = tuple(new)
            return (new[1], t_(new[2]), new[0]) if addmm else (new[0], t_(new[1]))
        return super().register_hook(shown)


def _shown_linear_edges(label: str, edges: tuple) -> tuple:
    x, w, b = (tuple(edges) + (None, None))[:3]

    def node(name: str, *inner: Any) -> tuple | None:
        return None if all(e is None for e in inner) else (ShownNode(name, inner), 0)

    weight_t = node("TBackward0", w)
    if label == "AddmmBackward0":
        return (b, x, weight_t)
    if label == "MmBackward0":
        return (x, weight_t)
    if label == "ViewBackward0":  # a bias, an input of another rank: a view of an addmm
        return (node("AddmmBackward0", b, node("ViewBackward0", x), weight_t),)
    inner = node("UnsqueezeBackward0" if label == "SqueezeBackward4" else "ViewBackward0", x)
    return (node("MmBackward0", inner, weight_t),)


def _linear_label(ndim: int, has_bias: bool) -> str:
    """PyTorch's name of linear's node: an addmm (mm without a bias) for a 2-D input, a
    view of one for other ranks (matmul's unsafe view, or a squeeze for 1-D, without)."""
    if ndim == 2:
        return "AddmmBackward0" if has_bias else "MmBackward0"
    if has_bias:
        return "ViewBackward0"
    return "SqueezeBackward4" if ndim == 1 else "UnsafeViewBackward0"


fused_kernel("linear", replaces="linear", signature="linear(x, w, b | None) -> y",
             doc="x @ w.T + b in one call, for a 2-D weight (the transpose a BLAS flag, not "
                 "a copy).")
fused_kernel("linear_backward", replaces="linear backward", backward=True,
             outputs=("like", "like", "like"),
             signature="linear_backward(x, w, grad, needs) -> (gx | None, gw | None, "
                       "gb | None)",
             doc="linear's gradients (grad @ w, grad2.T @ x2, grad2.sum(0), leading dims "
                 "flattened), None where `needs` is false.")


# -- activations: one node each, as PyTorch's kernels ---------------------------------

_HALF_FLOATS = (dt.float16, dt.bfloat16)


def _opmath(x: Tensor) -> Tensor:
    """float32 for half floats: PyTorch computes activations (and their gradients) in
    float32 and rounds once ("opmath")."""
    return to_dtype(x, dt.float32) if x._dtype in _HALF_FLOATS else x


_FLOAT_KERNELS = {"gelu": "GeluKernelImpl", "silu": "silu_{}", "leaky_relu": "leaky_relu_{}",
                  "elu": "elu_{}", "softplus": "softplus_{}", "softshrink": "softshrink_check"}
"""PyTorch's kernel names of the activations with floating (and complex) kernels only, as
its error for an integer or bool input names them ({} the device type)."""


def refuse_integer(kernel: str, input: Tensor) -> None:
    """PyTorch's error for an activation whose kernel takes no integer or bool tensor:
    `"silu_cpu" not implemented for 'Long'` (no silent cast to float)."""
    if not (input._dtype.is_floating_point or input._dtype.is_complex):
        raise NotImplementedError(f'"{kernel.format(input._device.type)}" not implemented '
                                  f"for '{scalar_type_name(input._dtype)}'")


def _activation(name: str, input: Tensor, compute: Any, attrs: dict,
                label: str | None = None) -> Tensor:
    """`compute(input)` (in opmath, rounded once) as one node with `name`'s gradient."""
    if name in _FLOAT_KERNELS:
        refuse_integer(_FLOAT_KERNELS[name], input)
    with no_grad():
        x = _opmath(input)
        out = compute(x)
        if x is not input:
            out = to_dtype(out, input._dtype)
    record_grad(OPS[name], (input,), attrs, out, label)
    return out


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_GELU_BETA = 2.0 / math.sqrt(math.pi) * _SQRT1_2 * 0.5  # ATen's kBeta: 1 / sqrt(2 pi)
_GELU_TANH_BETA = math.sqrt(2.0) * 2.0 / math.sqrt(math.pi) * 0.5  # sqrt(2 / pi)
_GELU_KAPPA = 0.044715


def _gelu_grad(grad: Tensor, input: Tensor, approximate: str) -> Tensor:
    """ATen's GeluBackward0: `cdf(x) + x pdf(x)` (or the tanh form's derivative)."""
    x = _opmath(input)
    if approximate == "tanh":
        inner = (x + x * x * x * _GELU_KAPPA) * _GELU_TANH_BETA
        t = tanh(inner)
        left = x * 0.5
        left_derivative = (t + 1.0) * 0.5
        inner_derivative = (x * x * (3.0 * _GELU_KAPPA) + 1.0) * _GELU_TANH_BETA
        d = left_derivative + left * (1.0 - t * t) * inner_derivative
    else:
        cdf = (erf(x * _SQRT1_2) + 1.0) * 0.5
        pdf = exp(x * x * -0.5) * _GELU_BETA
        d = cdf + x * pdf
    return _opmath(grad) * d


@composite(variants="", cost=costs.pointwise(12), grad=Grad("GeluBackward0", input=_gelu_grad))
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """GELU, `x Phi(x)` (`approximate="tanh"`: its tanh approximation), as one node."""
    # (ATen's order, x * 0.5 first: x * (1 + erf) would overflow near the float's largest)
    if approximate == "none":
        compute = lambda x: x * 0.5 * (erf(x * _SQRT1_2) + 1.0)  # noqa: E731
    elif approximate == "tanh":
        compute = lambda x: x * 0.5 * (tanh(  # noqa: E731
            (x + x * x * x * _GELU_KAPPA) * math.sqrt(2.0 / math.pi)) + 1.0)
    else:
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _activation("gelu", input, compute, {"approximate": approximate})


def _silu_grad(grad: Tensor, input: Tensor) -> Tensor:
    """ATen's SiluBackward0: `sigmoid(x) (1 + x (1 - sigmoid(x)))`."""
    x = _opmath(input)
    s = sigmoid(x)
    return _opmath(grad) * s * (x * (1.0 - s) + 1.0)


@composite(complex=True, variants="", cost=costs.pointwise(6),
           grad=Grad("SiluBackward0", input=_silu_grad))
def silu(input: Tensor) -> Tensor:
    """SiLU (swish), `x sigmoid(x)`, as one node (complex input: forward only, as
    PyTorch's)."""
    refuse_complex_autograd("silu", input._dtype, input)
    return _activation("silu", input, lambda x: x * sigmoid(x), {})


@composite(variants="", cost=costs.pointwise(2),
           grad=Grad("LeakyReluBackward0", input=lambda grad, input, negative_slope:
                     activation_backward(grad, input, input > 0, negative_slope,
                                         label="LeakyReluBackwardBackward0")))
def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """`x` where positive, else `negative_slope * x`, as one node."""
    return _activation("leaky_relu", input,
                       lambda x: where(x > 0, x, x * negative_slope),
                       {"negative_slope": negative_slope})


def _elu_grad(grad: Tensor, input: Tensor, alpha: float, scale: float,
              input_scale: float) -> Tensor:
    """ATen's elu_backward: `scale` where positive, else
    `input_scale * alpha * scale * exp(x * input_scale)`."""
    x = _opmath(input)
    g = _opmath(grad)
    neg = g * (exp(clamp(x, max=0.0) * input_scale) * (input_scale * alpha * scale))
    return where(x > 0, g * scale, neg)


@composite(variants="", cost=costs.pointwise(6), grad=Grad("EluBackward0", input=_elu_grad))
def elu(input: Tensor, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0,
        label: str = "EluBackward0") -> Tensor:
    """ATen's elu: `scale * x` where positive, else
    `scale * alpha * (exp(x * input_scale) - 1)` (ELU, SELU and CELU), as one node named
    `label` (CELU's is CeluBackward0)."""
    def compute(x: Tensor) -> Tensor:
        # the exp branch sees min(x, 0): exp of a large positive x would overflow
        out = where(x > 0, x, expm1(clamp(x, max=0.0) * input_scale) * alpha)
        return out * scale if scale != 1.0 else out
    return _activation("elu", input, compute,
                       {"alpha": alpha, "scale": scale, "input_scale": input_scale}, label)


def _softplus_grad(grad: Tensor, input: Tensor, beta: float, threshold: float) -> Tensor:
    """ATen's softplus_backward: 1 above the threshold, else `z / (z + 1)`, z = e^(beta x)."""
    x = _opmath(input)
    scaled = x * beta
    z = exp(clamp(scaled, max=threshold))
    g = _opmath(grad)
    return where(scaled > threshold, g, g * z / (z + 1.0))


@composite(variants="", cost=costs.pointwise(6), precision=P.FLOAT32,  # (CUDA's fp32 list)
           grad=Grad("SoftplusBackward0", input=_softplus_grad))
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """`log(1 + e^(beta x)) / beta`, `x` where `beta x > threshold`, as one node."""
    def compute(x: Tensor) -> Tensor:
        scaled = x * beta if beta != 1.0 else x
        # the log1p(exp) branch sees the input clamped at the threshold (no overflow)
        soft = log1p(exp(clamp(scaled, max=threshold)))
        if beta != 1.0:
            soft = soft / beta
        return where(scaled > threshold, x, soft)
    return _activation("softplus", input, compute, {"beta": beta, "threshold": threshold})


@composite(variants="", cost=costs.pointwise(2),
           grad=Grad("HardtanhBackward0", input=lambda grad, input, min_val, max_val:
                     activation_backward(grad, input,
                                         logical_and(input > min_val, input < max_val),
                                         label="HardtanhBackwardBackward0")))
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """Clamped to `[min_val, max_val]` (gradient 1 strictly inside), as one node."""
    return _activation("hardtanh", input, lambda x: clamp(x, min_val, max_val),
                       {"min_val": min_val, "max_val": max_val})


@composite(variants="", cost=costs.pointwise(2),
           grad=Grad("ThresholdBackward0", input=lambda grad, input, threshold:
                     activation_backward(grad, input, (input <= threshold).logical_not(),
                                         label="ThresholdBackwardBackward0")))
def threshold(input: Tensor, threshold: float, value: float,
              label: str = "ThresholdBackward0") -> Tensor:
    """`value` where `input <= threshold`, else `input` (NaN stays), as one node named
    `label` (the in-place form's is ThresholdBackward1)."""
    return _activation("threshold", input, lambda x: where(x <= threshold, value, x),
                       {"threshold": threshold}, label)


_SHRINK_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
               "float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}
"""The largest lambd softshrink takes for each floating dtype (its dtype's max)."""


@composite(variants="", cost=costs.pointwise(3),
           grad=Grad("SoftshrinkBackward0", input=lambda grad, input, lambd:
                     activation_backward(grad, input, shrink_passes(input, lambd),
                                         label="SoftshrinkBackwardBackward0")))
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """`x - lambd` above `lambd`, `x + lambd` below `-lambd`, else 0, as one node."""
    top = _SHRINK_MAX.get(input._dtype.name)
    if top is not None and not 0 <= lambd <= top:
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                           f"{scalar_type_name(input._dtype)}, but found {float(lambd):g}")
    return _activation("softshrink", input, lambda x: where(
        x > lambd, x - lambd, where(x < -lambd, x + lambd, x * 0.0)), {"lambd": lambd})



# -- embedding ------------------------------------------------------------------------


def _embedding_grad(grad, weight_shape, indices, padding_idx, scale_grad_by_freq):
    """ATen's embedding_dense_backward: each looked-up row's gradient summed into its row
    (none into `padding_idx`'s; scaled by 1 / the row's count in the batch if asked)."""
    flat = reshape(indices, (-1,))
    g = reshape(grad, (-1, weight_shape[1]))
    if padding_idx >= 0:
        g = where(unsqueeze(eq(flat, padding_idx), 1), 0.0, g)
    if scale_grad_by_freq:
        counts = index_add(zeros((weight_shape[0],), dtype=g.dtype, device=g.device), 0,
                           flat, ones(tuple(flat.shape), dtype=g.dtype, device=g.device))
        # (times the reciprocal, as ATen rounds it)
        g = mul(g, unsqueeze(div(1.0, index_select(counts, 0, flat)), 1))
    return index_add(zeros(tuple(weight_shape), dtype=g.dtype, device=g.device), 0, flat, g)


@composite(variants="", cost=costs.movement,
           grad=Grad("EmbeddingBackward0", weight=_embedding_grad))
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of `weight` at `indices` (checked by the caller: integers in range), shaped
    `(*indices.shape, weight.shape[1])`: one node, PyTorch's `EmbeddingBackward0`; with
    `sparse`, the weight's gradient is a sparse tensor of the looked-up rows."""
    with no_grad():
        out = reshape(index_select(weight, 0, reshape(indices, (-1,))),
                      (*indices.shape, weight.shape[1]))
    if sparse:  # a node of its own: the declared gradients are dense
        from ember.core.sparse_grad import embedding_backward

        num = weight.shape[0]
        record("EmbeddingBackward0", lambda node, g: embedding_backward(
            g, indices, num, padding_idx, scale_grad_by_freq), (weight,), out)
        return out
    record_grad(OPS["embedding"], (weight,),
                {"indices": indices, "padding_idx": padding_idx,
                 "scale_grad_by_freq": scale_grad_by_freq}, out)
    return out


# -- convolution ----------------------------------------------------------------------


def _same_device(op: str, input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """A convolution's operands on one device, checked first: a zero-size batch would
    otherwise reach a kernel, or an early return, with a weight it cannot read."""
    for other in (weight, bias):
        if isinstance(other, Tensor) and other._device is not input._device:
            raise device_mismatch(op, input, other)


def _conv_check(op: str, input: Tensor, weight: Tensor, groups: int, n: int) -> bool:
    """Validate shapes; returns True when `input` lacks the batch dimension."""
    if weight.ndim != n + 2:
        raise RuntimeError(f"{op}: expected weight to be {n + 2}-D, got shape "
                           f"{fmt_shape(tuple(weight.shape))}")
    if input.ndim not in (n + 1, n + 2):
        raise with_context(RuntimeError(
            f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {op}, but got "
            f"input of size: {list(input.shape)}"), f"{op}: weight of shape "
            f"{tuple(weight.shape)}")
    _conv_weight_groups(weight, groups)
    channels = input.shape[-n - 1]
    if channels != weight.shape[1] * groups:
        batched = list(input.shape) if input.ndim == n + 2 else [1, *input.shape]
        raise with_context(RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{batched} to have {weight.shape[1] * groups} channels, but got "
            f"{channels} channels instead"), f"{op}: input of shape {tuple(input.shape)}")
    return input.ndim == n + 1


def _conv_weight_groups(weight: Tensor, groups: int) -> None:
    """PyTorch's checks of the weight's dim 0 against `groups` (out channels of a
    convolution, in channels of a transposed one), before the input's channels; its
    second message does print the size in double brackets."""
    if weight.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{list(weight.shape)}] "
                           "instead")


def _conv_args_check(op: str, n: int, stride: Any, padding: Any, dilation: Any, groups: int,
                     output_padding: Any = None) -> None:
    """PyTorch's checks of a convolution's arguments, in its order, before the shapes'."""
    def refuse(message: str) -> None:
        raise with_context(RuntimeError(message), f"{op}: stride {stride}, padding {padding}, "
                           f"dilation {dilation}, groups {groups}")

    for name, value in (("stride", stride), ("padding", padding), ("dilation", dilation),
                        ("output_padding", output_padding)):
        if isinstance(value, (tuple, list)) and len(value) not in (1, n):
            raise RuntimeError(f"expected {name} to be a single integer value or a list of "
                               f"{n} values to match the convolution dimensions, but got "
                               f"{name}={[int(v) for v in value]}")
    if not isinstance(padding, str) and any(p < 0 for p in _tuple(padding, n, "padding")):
        refuse("negative padding is not supported")
    if output_padding is not None and any(p < 0 for p in
                                          _tuple(output_padding, n, "output_padding")):
        refuse("negative output_padding is not supported")
    if any(s <= 0 for s in _tuple(stride, n, "stride")):
        refuse("non-positive stride is not supported")
    if any(d <= 0 for d in _tuple(dilation, n, "dilation")):
        refuse(f"dilation should be greater than zero, but got "
               f"{list(_tuple(dilation, n, 'dilation'))}")
    if groups <= 0:
        refuse("non-positive groups is not supported")


def _conv_dtypes(op: str, input: Tensor, weight: Tensor, bias: Tensor | None,
                 window: tuple = ()) -> None:
    """PyTorch's refusal of operands of two dtypes: the bias's is checked first; a weight's
    in the words of the kernel PyTorch picks (`window`: stride, dilation, groups)."""
    if bias is not None and bias._dtype is not input._dtype:
        raise with_context(RuntimeError(
            f"Input type ({cpp_type_name(input._dtype)}) and bias type "
            f"({cpp_type_name(bias._dtype)}) should be the same"),
            f"{op}: input {input._dtype}, bias {bias._dtype}")
    if weight._dtype is not input._dtype:
        if window and _uses_mkldnn(input, weight, *window):
            message = (f"Input type ({input.type_name()}) and weight type "
                       f"({weight.type_name()}) should be the same or input should be a "
                       f"MKLDNN tensor and weight is a dense tensor")
        else:
            message = (f"expected scalar type {scalar_type_name(input._dtype)} but found "
                       f"{scalar_type_name(weight._dtype)}")
        raise with_context(RuntimeError(message),
                           f"{op}: input {input._dtype}, weight {weight._dtype}")


def _uses_mkldnn(input: Tensor, weight: Tensor, stride: Any, dilation: Any,
                 groups: int) -> bool:
    """Whether PyTorch's CPU convolution of a float32 `input` runs oneDNN (its
    ConvParams::use_mkldnn, a 1-D convolution seen as 2-D): not for a 1x1 kernel, unstrided
    and undilated, on a small batch and one thread; then only for groups, kernels over 3x3,
    a batch or a large input."""
    if input.device.type != "cpu" or input.dtype is not dt.float32:
        return False
    n = weight.ndim - 2
    shape = tuple(input.shape) if input.ndim == n + 2 else (1,) + tuple(input.shape)
    kernel = tuple(weight.shape[2:])
    if n == 1:
        shape, kernel = shape[:2] + (1,) + shape[2:], (1,) + kernel
    plain = all(v == 1 for v in _tuple(stride, n, "stride") + _tuple(dilation, n, "dilation"))
    return ((not plain or shape[0] >= 16 or kernel[-1] != 1 or kernel[-2] != 1
             or get_num_threads() > 1)
            and (groups > 1 or (kernel[-1] > 3 and kernel[-2] > 3) or shape[0] > 1
                 or math.prod(shape[:4]) > 20480))


def _same_padding(kernel: tuple, dilation: tuple) -> tuple[tuple, tuple]:
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return tuple(t // 2 for t in total), tuple(t - t // 2 for t in total)


def _conv(op: str, n: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
          padding: Any, dilation: Any, groups: int) -> Tensor:
    out = _conv_rounded(op, n, input, weight, bias, stride, padding, dilation, groups)
    half = input._dtype
    if bias is None or half not in dt.HALF_DTYPES or weight._dtype is not half or \
            bias._dtype is not half or tracing.active is not None or tracing.tape is not None:
        return out
    # PyTorch's CPU kernel adds the bias to the float32 sums and rounds once, where the
    # half-precision path rounds the product, then the sum: the values are made PyTorch's
    # here; the gradients stay the half-precision path's (PyTorch's)
    with no_grad():
        wide = [to_dtype(x, dt.float32) for x in (input, weight, bias)]
        exact = _conv_rounded(op, n, *wide, stride, padding, dilation, groups)
        write_into(out, to_dtype(exact, half))
    return out


def _conv_rounded(op: str, n: int, input: Tensor, weight: Tensor, bias: Tensor | None,
                  stride: Any, padding: Any, dilation: Any, groups: int) -> Tensor:
    _conv_args_check(op, n, stride, padding, dilation, groups)
    _same_device(op, input, weight, bias)
    unbatched = _conv_check(op, input, weight, groups, n)
    _conv_dtypes(op, input, weight, bias, (stride, dilation, groups))
    if unbatched:
        input = unsqueeze(input, 0)
    kernel = tuple(weight.shape[2:])
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise with_context(RuntimeError("padding='same' is not supported for strided "
                                                "convolutions"), f"{op}: stride {stride}")
            left, right = _same_padding(kernel, dilation)
            if left != right:  # uneven: pad the extra element on the right, as PyTorch does
                warn_once("Using padding='same' with even kernel lengths and odd dilation may "
                          "require a zero-padded copy of the input be created",
                          stacklevel=user_stacklevel())
                extra = []
                for a, b in reversed(list(zip(left, right))):
                    extra += [0, b - a]
                input = constant_pad_nd(input, extra)
            padding = left
        else:
            raise with_context(RuntimeError(f"Invalid padding string: '{padding}'"),
                               f"{op}: padding is 'valid', 'same' or sizes")
    padding = _tuple(padding, n, "padding")
    padded = [input.shape[2 + i] + 2 * padding[i] for i in range(n)]
    spans = [dilation[i] * (kernel[i] - 1) + 1 for i in range(n)]
    if any(p < s for p, s in zip(padded, spans)):
        raise with_context(RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, spans))}). Kernel size can't be greater than "
            f"actual input size"), f"{op}: input of shape {list(input.shape)}")
    batch = input.shape[0]
    outs = tuple(conv_out_size(op, input.shape[2 + i], kernel[i], dilation[i], padding[i],
                               stride[i]) for i in range(n))
    if groups == 1:
        out = _fused_convolution(input, weight, bias, stride, padding, dilation)
        if out is not None:
            return squeeze(out, 0) if unbatched else in_format_of(out, input, weight)
    cols = im2col(input, kernel, dilation, padding, stride)  # (N, C*K, L)
    out_ch = weight.shape[0]
    if groups == 1:
        out = matmul(reshape(weight, (out_ch, -1)), cols)  # (N, O, L)
    else:
        # explicit sizes: a -1 is ambiguous when the batch is empty
        cols_g = reshape(cols, (batch, groups, cols.shape[1] // groups, cols.shape[-1]))
        w_g = reshape(weight, (groups, out_ch // groups, -1))
        out = reshape(matmul(w_g, cols_g), (batch, out_ch, math.prod(outs)))
    out = reshape(out, (batch, out_ch) + outs)
    if bias is not None:
        out = add(out, reshape(bias, (out_ch,) + (1,) * n))
    return squeeze(out, 0) if unbatched else in_format_of(out, input, weight)


def kept_format(input: Tensor, result: Any) -> Any:
    """A pooling result (or its (values, indices)) in the memory format `input` suggests,
    as PyTorch's pooling kernels write it."""
    if isinstance(result, tuple):  # (a plain tuple or a return_types one)
        kept = [in_format_of(r, input) for r in result]
        return type(result)(*kept) if hasattr(result, "_fields") else tuple(kept)
    return in_format_of(result, input)


def row_major_result(result: Any) -> Any:
    """A pooling result (or its (values, indices)) row-major whatever its input's layout:
    PyTorch's CPU kernels of avg_pool3d and the adaptive 3-d pools write channels-last
    input's results that way (max_pool3d's keep the channels-last layout)."""
    if isinstance(result, tuple):
        kept = [in_memory_format(r, contiguous_format) for r in result]
        return type(result)(*kept) if hasattr(result, "_fields") else tuple(kept)
    return in_memory_format(result, contiguous_format)


def _convolution_grads(grad, input, weight, workspace, stride, padding, dilation, needs):
    g, x, w = grad, input, weight
    fused = run_fused("conv_backward", g, tuple(x.shape), w, workspace, stride, padding,
                      dilation, needs)
    if fused is not None:
        return fused
    # create_graph: the same gradients through differentiable ops
    with tracing.paused():
        n = x.ndim - 2
        gx = conv_transpose_nd(g, w, stride, padding, dilation, tuple(x.shape[2:])) \
            if needs[0] else None
        cols_t = im2col(x, tuple(w.shape[2:]), dilation, padding, stride)  # (N, CK, L)
        g_flat = reshape(g, (g.shape[0], g.shape[1], -1))  # (N, O, L)
        gw = reshape(R.sum(matmul(g_flat, transpose(cols_t, 1, 2)), 0),
                     tuple(w.shape)) if needs[1] else None
        gb = R.sum(g, (0,) + tuple(range(2, 2 + n))) if needs[2] else None
    return gx, gw, gb


def _conv_cost(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
               dilation: Any = 1, groups: int = 1) -> Cost:
    n = len(weight.shape) - 2
    spatial = tuple(input.shape[-n:])
    if isinstance(padding, str):
        outs = spatial if padding == "same" else tuple(
            s - d * (k - 1) for s, k, d in zip(spatial, weight.shape[2:],
                                                _tuple(dilation, n, "dilation")))
    else:
        outs = tuple(conv_out_size("conv", s, k, d, p, st) for s, k, d, p, st in zip(
            spatial, weight.shape[2:], _tuple(dilation, n, "dilation"),
            _tuple(padding, n, "padding"), _tuple(stride, n, "stride")))
    batch = input.shape[0] if len(input.shape) == n + 2 else 1
    out = batch * weight.shape[0] * math.prod(outs)
    macs = out * math.prod(weight.shape[1:])
    return Cost(2.0 * macs, costs.nbytes(input) + costs.nbytes(weight) +
                out * input.dtype.itemsize)


@composite(variants="", cost=_conv_cost, precision=P.LOWER, cpu_precision=P.LOWER,
           fused=("conv", "conv_backward"),
           grad=Grad("ConvolutionBackward0", each=_convolution_grads,
                     operands=("input", "weight", "bias")))
def _fused_convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: tuple,
                       padding: tuple, dilation: tuple) -> Tensor | None:
    """A batched convolution (groups=1) as the backend's fused `conv` kernel, one GEMM for
    the whole batch, and `conv_backward`; None when the backend has no `conv` kernel
    (conv1d/2d/3d then run im2col + matmul)."""
    fused = run_fused("conv", input, weight, bias, stride, padding, dilation)
    if fused is None:
        return None
    out, workspace = fused  # the kernel's im2col columns, kept for its backward
    record_grad(OPS["_fused_convolution"], (input, weight, bias),
                {"workspace": workspace, "stride": stride, "padding": padding,
                 "dilation": dilation}, out)
    return out


fused_kernel("conv", replaces="_fused_convolution", outputs=("like", "like"),
             signature="conv(x, w, b | None, stride, padding, dilation) -> (y, workspace)",
             doc="An N-d convolution (groups=1) of a batch as one GEMM, (O, C*K) @ (C*K, N*L); "
                 "`workspace` (its im2col columns) is handed back to `conv_backward`.")
fused_kernel("conv_backward", replaces="_fused_convolution backward", backward=True,
             outputs=("like", "like", "like"),
             signature="conv_backward(grad, x_shape, w, workspace, stride, padding, "
                       "dilation, needs) -> (gx | None, gw | None, gb | None)",
             doc="The convolution's gradients, each from one GEMM; None where `needs` is "
                 "false.")


def conv_transpose_nd(g: Tensor, w: Tensor, stride: tuple, padding: tuple, dilation: tuple,
                      size: tuple) -> Tensor:
    """The input gradient of a convolution (groups=1), differentiably: W^T @ g, folded."""
    batch, out_ch = g.shape[0], g.shape[1]
    g_flat = reshape(g, (batch, out_ch, -1))
    cols = matmul(t(reshape(w, (out_ch, -1))), g_flat)  # (N, CK, L)
    return col2im(cols, size, tuple(w.shape[2:]), dilation, padding, stride)


def _conv_label(input: Tensor, weight: Tensor, *args: Any, **kwargs: Any) -> str | None:
    """PyTorch's one `ConvolutionBackward0` node for a batched convolution of any groups
    (grouped ones here are im2col + matmul + bias); an unbatched one ends in a squeeze
    (`SqueezeBackward1`), which stays."""
    return "ConvolutionBackward0" if input.ndim == weight.ndim else None


@composite(variants="function", cost=_conv_cost, precision=P.LOWER, cpu_precision=P.LOWER,
           node_label=_conv_label)
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) over (N, C, L) inputs."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@composite(variants="function", traced_as_node=True, cost=_conv_cost, precision=P.LOWER,
           cpu_precision=P.LOWER, node_label=_conv_label)
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation) over (N, C, H, W) inputs."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@composite(variants="function", traced_as_node=True, cost=_conv_cost, precision=P.LOWER,
           cpu_precision=P.LOWER, node_label=_conv_label)
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-D convolution (cross-correlation) over (N, C, D, H, W) inputs."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _output_padding_message(output_padding: tuple, stride: tuple, dilation: tuple) -> str:
    """PyTorch's refusal of an output padding as large as both stride and dilation: each
    value named per dimension (a 1-d one as the 2-d kernel it runs: height 0, 1, 1)."""
    if len(stride) == 1:
        output_padding, stride, dilation = (0, *output_padding), (1, *stride), (1, *dilation)
    names = ("depth", "height", "width")[-len(stride):]
    parts = [f"{what}_{name}: {v}" for what, values in
             (("output_padding", output_padding), ("stride", stride), ("dilation", dilation))
             for name, v in zip(names, values)]
    return ("output padding must be smaller than either stride or dilation, but got "
            + " ".join(parts))


def _conv_transpose(op: str, n: int, input: Tensor, weight: Tensor, bias: Tensor | None,
                    stride: Any, padding: Any, output_padding: Any, groups: int,
                    dilation: Any) -> Tensor:
    """The gradient of an n-d convolution with respect to its input: W^T @ x per group,
    its columns folded back (col2im) into the output's spatial size."""
    _conv_args_check(op, n, stride, padding, dilation, groups, output_padding)
    _same_device(op, input, weight, bias)
    if weight.ndim != n + 2:
        raise RuntimeError(f"{op}: expected a {n + 2}-D weight, got shape "
                           f"{fmt_shape(tuple(weight.shape))}")
    if input.ndim not in (n + 1, n + 2):
        raise with_context(RuntimeError(
            f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {op}, but got "
            f"input of size: {list(input.shape)}"), f"{op}: weight of shape "
            f"{tuple(weight.shape)}")
    unbatched = input.ndim == n + 1
    if unbatched:
        input = unsqueeze(input, 0)
    _conv_weight_groups(weight, groups)
    if input.shape[1] != weight.shape[0]:
        raise with_context(RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected "
            f"input{list(input.shape)} to have {weight.shape[0]} channels, but got "
            f"{input.shape[1]} channels instead"), f"{op}: input of shape "
            f"{tuple(input.shape)}")
    # (PyTorch's transposed kernels: the weight's)
    _conv_dtypes(op, input, weight, None, (stride, dilation, groups))
    stride, padding = _tuple(stride, n, "stride"), _tuple(padding, n, "padding")
    dilation = _tuple(dilation, n, "dilation")
    output_padding = _tuple(output_padding, n, "output_padding")
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
        raise with_context(RuntimeError(_output_padding_message(output_padding, stride,
                                                                dilation)),
                           f"{op}: input of shape {tuple(input.shape)}")
    batch, in_ch = input.shape[0], input.shape[1]
    spatial = tuple(input.shape[2:])
    kernel = tuple(weight.shape[2:])
    out_ch = weight.shape[1] * groups
    size = tuple((i - 1) * s - 2 * p + d * (k - 1) + op_ + 1 for i, s, p, d, k, op_ in
                 zip(spatial, stride, padding, dilation, kernel, output_padding))
    if any(o <= 0 for o in size):
        raise RuntimeError(f"{op}: the computed output size {list(size)} is too small for "
                           f"input {fmt_shape(tuple(input.shape))}")
    length = math.prod(spatial)
    x = reshape(input, (batch, groups, in_ch // groups, length))
    wg = reshape(weight, (groups, in_ch // groups, -1))  # (G, Cin/G, Cout/G*K)
    cols = matmul(transpose(wg, 1, 2), x)  # (N, G, Cout/G*K, L)
    cols = reshape(cols, (batch, out_ch * math.prod(kernel), length))
    out = col2im(cols, size, kernel, dilation, padding, stride)
    if bias is not None:
        out = add(out, reshape(bias, (out_ch,) + (1,) * n))
    return squeeze(out, 0) if unbatched else in_format_of(out, input, weight)


@composite(node_label="ConvolutionBackward0",
           variants="function", traced_as_node=True, precision=P.LOWER,
           cpu_precision=P.LOWER)
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """1-D transposed convolution: the gradient of conv1d with respect to its input."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@composite(node_label="ConvolutionBackward0",
           variants="function", traced_as_node=True, precision=P.LOWER,
           cpu_precision=P.LOWER)
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-D transposed convolution: the gradient of conv2d with respect to its input."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@composite(node_label="ConvolutionBackward0",
           variants="function", traced_as_node=True, precision=P.LOWER,
           cpu_precision=P.LOWER)
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """3-D transposed convolution: the gradient of conv3d with respect to its input."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@composite(variants="function", traced_as_node=True, precision=P.LOWER,  # (not on the CPU)
           node_label=_conv_label)
def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], transposed: bool,
                output_padding: Sequence[int], groups: int) -> Tensor:
    """An N-d convolution (1 to 3 spatial dims, from the weight's rank), or with
    `transposed` a transposed one: every argument given, as ATen's `convolution`."""
    n = weight.ndim - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight, got shape "
                           f"{fmt_shape(tuple(weight.shape))}")
    if transposed:
        return _conv_transpose("convolution", n, input, weight, bias, stride, padding,
                               output_padding, groups, dilation)
    return _conv("convolution", n, input, weight, bias, stride, padding, dilation, groups)


@composite(variants="function", precision=P.LOWER, cpu_precision=P.LOWER)
def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution in the (time, batch, channels) layout: weight is
    (kernel width, in channels, out channels)."""
    if input.ndim != 3 or weight.ndim != 3 or bias.ndim != 1:
        raise RuntimeError(f"conv_tbc: expected a 3-D input and weight and a 1-D bias, got "
                           f"{fmt_shape(tuple(input.shape))}, {fmt_shape(tuple(weight.shape))}"
                           f" and {fmt_shape(tuple(bias.shape))}")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError(f"conv_tbc: Input dim 2 (input channels) is not == dim 1 in the "
                           f"weight tensor ({input.shape[2]} != {weight.shape[1]})")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError(f"conv_tbc: Bias has incorrect size in dim 0 ({bias.shape[0]} != "
                           f"{weight.shape[2]})")
    out = _conv("conv_tbc", 1, permute(input, (1, 2, 0)), permute(weight, (2, 1, 0)), bias,
                1, pad, 1, 1)
    return permute(out, (2, 0, 1))


# -- pooling --------------------------------------------------------------------------


def _pool_windows(op: str, n: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
                  dilation: Any, ceil_mode: bool, fill: float):
    """im2col of the input padded with `fill`: (N, C, K, L) windows and the output size."""
    kernel, stride, padding, dilation, extra, outs = _pool_geometry(
        op, n, input, kernel_size, stride, padding, dilation, ceil_mode)
    pad = []
    for p, e in reversed(list(zip(padding, extra))):
        pad += [p, p + e]
    padded = constant_pad_nd(input, pad, fill)
    cols = im2col(padded, kernel, dilation, 0, stride)
    batch, channels = input.shape[0], input.shape[1]
    windows = reshape(cols, (batch, channels, math.prod(kernel), math.prod(outs)))
    return windows, outs, (kernel, stride, padding, dilation, extra)


def _rank_error(op: str, n: int, input: Tensor) -> Exception:
    """PyTorch's error for a pooling `op` over `n` dims given an input of the wrong rank:
    each of its kernels words its own check."""
    shape = list(input.shape)
    lo, hi = n + 1, n + 2
    if op == "max_pool1d_with_indices":  # max_pool1d's checked arguments
        return RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                            f"tensor for argument #1 'self' (while checking arguments for "
                            f"max_pool1d)")
    if op == "max_pool1d":
        return RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional "
                            f"0 dim batch size for input, but got:{shape}")
    if op in ("max_pool2d", "max_pool3d", "avg_pool3d"):
        return RuntimeError(f"non-empty {lo}D or {hi}D (batch mode) tensor expected for input")
    if op == "avg_pool2d":
        if input.ndim < lo:  # its Python-side size reads index the input from the end
            return IndexError(f"Dimension out of range (expected to be in range of "
                              f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got -3)")
        return RuntimeError(f"Expected {lo}D or {hi}D (batch mode) tensor with optional 0 dim "
                            f"batch size for input, but got:{shape}")
    if op.startswith("adaptive_max_pool"):
        return RuntimeError(f"{op}(): Expected {lo}D or {hi}D tensor, but got: {shape}")
    if op.startswith("adaptive_avg_pool"):
        return RuntimeError(f"{op}(): Expected {lo}D or {hi}D tensor, but got {shape}")
    return RuntimeError(f"{op}: Expected {lo}D or {hi}D input, got shape "
                        f"{fmt_shape(tuple(input.shape))}")


def _batched(input: Tensor, n: int, op: str) -> tuple[Tensor, bool]:
    if input.ndim == n + 1:
        return unsqueeze(input, 0), True
    if input.ndim != n + 2:
        raise _rank_error(op, n, input)
    return input, False


def _features_present(op: str, n: int, input: Tensor) -> None:
    """PyTorch's pools take an empty batch, not an empty channel or spatial dimension (the
    adaptive ones check their own)."""
    if not op.startswith("adaptive") and input.ndim in (n + 1, n + 2) and \
            not all(input.shape[-(n + 1):]):
        if n == 3:  # pool3d_shape_check's words (it prints the empty size, not its index)
            name = "max_pool3d_with_indices_out_cpu_template" if op == "max_pool3d" else op
            raise RuntimeError(f"{name}(): Expected input's non-batch dimensions to have "
                               f"positive length, but input has a shape of "
                               f"{list(input.shape)} and non-batch dimension 0 has length "
                               f"zero!")
        prefix = "max_pool1d: " if op == "max_pool1d" else ""
        if op == "max_pool1d_with_indices":  # (checked by max_pool2d, unsqueezed)
            shape = list(input.shape)
            raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim "
                               f"batch size for input, but got:{shape[:-1] + [1] + shape[-1:]}")
        raise RuntimeError(f"{prefix}Expected {n + 1}D or {n + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got:"
                           f"{list(input.shape)}")


def _adaptive_nonempty(op: str, input: Tensor, first: int = 1) -> None:
    """PyTorch's adaptive pools: every dimension from `first` on is non-empty."""
    for i in range(first, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")


def _max_pool(op: str, n: int, input: Tensor, kernel_size, stride, padding, dilation,
              ceil_mode, return_indices):
    if return_indices and op == "max_pool1d":  # PyTorch's own kernel (and words) for it
        op = "max_pool1d_with_indices"
    _features_present(op, n, input)
    x, unbatched = _batched(input, n, op)
    if op == "max_pool1d" and not x._dtype.is_floating_point:
        # PyTorch's max_pool1d without indices runs a floating-only kernel (after its
        # argument checks); with indices it runs max_pool2d's, which takes integers
        _pool_geometry(op, n, x, kernel_size, stride, padding, dilation, ceil_mode)
        raise kernel_refuses("max_pool1d_impl", x._dtype)
    fused = max_pool_with_indices(op, n, x, kernel_size, stride, padding, dilation, ceil_mode,
                                  return_indices)
    if fused is not None:
        values, indices = fused
        if n == 1 and isinstance(values._node, DeclaredNode):
            _as_pool2d_node(values._node, unbatched)
        if unbatched:
            values = squeeze(values, 0)
        if not return_indices:
            return values
        return values, (squeeze(indices, 0) if unbatched else indices)
    windows, outs, geom = _pool_windows(op, n, x, kernel_size, stride, padding, dilation,
                                        ceil_mode, float("-inf"))
    result = R.max(windows, 2)
    values = reshape(result.values, tuple(x.shape[:2]) + outs)
    if unbatched:
        values = squeeze(values, 0)
    if not return_indices:
        return values
    indices = _pool_indices(result.indices, x, outs, geom)
    return values, (squeeze(indices, 0) if unbatched else indices)


_graphs_shown: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SHOWING_CLASSES: dict[type, type] = {}


def _showing_class(cls: type) -> type:
    """`cls` with the `next_functions` of PyTorch's graph kept for each node in
    `_graphs_shown` (one subclass per node class, no slots of its own)."""
    shown = _SHOWING_CLASSES.get(cls)
    if shown is None:
        def next_functions(self: Any) -> tuple:
            return tuple((shown_as(e[0]), e[1]) if e is not None else (None, 0)
                         for e in _graphs_shown[self])
        shown = _SHOWING_CLASSES[cls] = type(cls.__name__, (cls,), {
            "__slots__": (), "next_functions": property(next_functions)})
    return shown


def show_instance_norm_graph(out: Tensor, input: Tensor, weight: Tensor | None,
                             bias: Tensor | None) -> Tensor:
    """`out`, instance_norm's decomposed result, its node shown as PyTorch's graph of
    instance_norm: a view of a batch norm of a view of `input`, `weight` and `bias` each
    repeated over the batch (`ViewBackward0 -> NativeBatchNormBackward0 -> ...`). The
    decomposition's nodes still run the backward."""
    node = out._node
    if node is None or not hasattr(node, "label") or node is input._node:
        return out

    def shown(name: str, t: Tensor | None) -> tuple | None:
        edge = None if t is None else edge_of(t)
        return None if edge is None else (ShownNode(name, (edge,)), 0)
    norm = ShownNode("NativeBatchNormBackward0", (
        shown("ViewBackward0", input), shown("RepeatBackward0", weight),
        shown("RepeatBackward0", bias)))
    node.label = "ViewBackward0"
    node.__class__ = _showing_class(type(node))
    _graphs_shown[node] = ((norm, 0),)
    return out


_pool1d_shown: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Pool1dNode(DeclaredNode):
    """A batched 1-D max pool's node, shown as PyTorch's graph of it: a squeeze of a 2-D
    pool of the unsqueezed input (`next_functions` walks SqueezeBackward1 ->
    MaxPool2DWithIndicesBackward0 -> UnsqueezeBackward0). The one node runs the backward."""

    __slots__ = ()

    def runs_as(self) -> str:
        return "MaxPool2DWithIndicesBackward0"

    @property
    def next_functions(self) -> tuple:
        shown = _pool1d_shown.get(self)
        if shown is None:
            unsqueezed = (ShownNode("UnsqueezeBackward0", self.next_edges), 0)
            shown = _pool1d_shown[self] = (
                (ShownNode("MaxPool2DWithIndicesBackward0", (unsqueezed,)), 0),)
        return tuple((shown_as(e[0]), e[1]) for e in shown)


def _as_pool2d_node(node: DeclaredNode, unbatched: bool) -> None:
    """max_pool1d's node named as PyTorch's, whose 1-D pools with grad run as 2-D ones of
    height 1: an unbatched input's pool, between the squeeze and unsqueeze it has here
    too, is the 2-D pool's node; a batched one's is the squeeze around it."""
    if unbatched:
        node.label = "MaxPool2DWithIndicesBackward0"
    else:
        node.label = "SqueezeBackward1"
        node.__class__ = _Pool1dNode


def _pool_padding_error(op: str, kernel: tuple, padding: tuple, dilation: tuple, k: int,
                        p: int, d: int) -> RuntimeError:
    """PyTorch's words for a padding over half the kernel (max_pool1d and a dilated
    max_pool2d have their own)."""
    if op == "max_pool1d":
        msg = (f"max_pool1d() padding should be at most half of kernel size, but got "
               f"padding={p} and kernel_size={k}")
    elif op.startswith("max_pool2d") and p <= ((k - 1) * d + 1) // 2:
        msg = (f"pad should be smaller than or equal to half of kernel size, but got "
               f"padW = {padding[1]}, padH = {padding[0]}, kW = {kernel[1]}, kH = {kernel[0]}")
    else:
        msg = (f"pad should be at most half of effective kernel size, but got pad={p}, "
               f"kernel_size={k} and dilation={d}")
    return with_context(RuntimeError(msg), f"{op}: kernel_size={kernel}, padding={padding}")


def _pool_output_error(op: str, x: Tensor, spatial: tuple, outs: tuple) -> RuntimeError:
    """PyTorch's words for a kernel that does not fit: max_pool1d's own, else the 2-D/3-D
    kernels' (1-D pools run as 2-D ones of height 1 there)."""
    if op == "max_pool1d":
        msg = f"max_pool1d() Invalid computed output size: {outs[0]}"
    else:
        lead = (x.shape[1], 1) if len(spatial) == 1 else (x.shape[1],)
        msg = (f"Given input size: ({'x'.join(map(str, lead + spatial))}). Calculated output "
               f"size: ({'x'.join(map(str, lead + outs))}). Output size is too small")
    return with_context(RuntimeError(msg), f"{op}: input of shape {tuple(x.shape)} gives "
                                           f"output size {outs}")


def _pool_geometry(op: str, n: int, x: Tensor, kernel_size, stride, padding, dilation,
                   ceil_mode) -> tuple:
    """Checked (kernel, stride, padding, dilation, extra right padding, output sizes); the
    extra right padding lets ceil_mode windows fit."""
    kernel = _tuple(kernel_size, n, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else \
        _tuple(stride, n, "stride")
    padding, dilation = _tuple(padding, n, "padding"), _tuple(dilation, n, "dilation")
    # PyTorch's checks, in its order
    where = f"{op}: kernel_size={kernel}, stride={stride}, padding={padding}, " \
            f"dilation={dilation}"
    if op == "max_pool1d":  # PyTorch's own checks and words for it, in its order
        checks = (("kernel_size", kernel[0] > 0, "must be greater than zero"),
                  ("stride", stride[0] > 0, "must be greater than zero"),
                  ("padding", padding[0] >= 0, "must be non-negative"))
        for name, ok, rule in checks:
            if not ok:
                value = {"kernel_size": kernel, "stride": stride, "padding": padding}[name]
                raise with_context(RuntimeError(f"max_pool1d() {name} {rule}, but got "
                                                f"{value[0]}"), where)
        if padding[0] > kernel[0] // 2:
            raise _pool_padding_error(op, kernel, padding, dilation, kernel[0], padding[0],
                                      dilation[0])
        if dilation[0] <= 0:
            raise with_context(RuntimeError(f"max_pool1d() dilation must be greater than "
                                            f"zero, but got {dilation[0]}"), where)
    if any(s == 0 for s in stride):
        raise with_context(RuntimeError("stride should not be zero"), where)
    if any(p < 0 for p in padding):
        raise with_context(RuntimeError(f"pad must be non-negative, but got pad: "
                                        f"{next(p for p in padding if p < 0)}"), where)
    for k, p, d in zip(kernel, padding, dilation):
        if p > int(k / 2):  # (C's division: a negative kernel is refused just below)
            raise _pool_padding_error(op, kernel, padding, dilation, k, p, d)
    axes = "THW"[-n:]  # PyTorch's labels: kT kH kW, dT dH dW, dilationT ...
    for what, label, values in (("kernel size", "k", kernel), ("stride", "d", stride),
                                ("dilation", "dilation", dilation)):
        if any(v <= 0 for v in values):
            got = " ".join(f"{label}{a}: {v}" for a, v in zip(axes, values))
            raise with_context(RuntimeError(f"{what} should be greater than zero, but got "
                                            f"{got}"), where)
    spatial = tuple(x.shape[2:])
    if op == "avg_pool3d" and any(size < k for size, k in zip(spatial, kernel)):
        raise with_context(RuntimeError(
            "input image (T: {} H: {} W: {}) smaller than kernel size (kT: {} kH: {} kW: {})"
            .format(*spatial, *kernel)), f"{op}: input of shape {tuple(x.shape)}")
    outs = tuple(window_count(spatial[i], kernel[i], dilation[i], padding[i], stride[i],
                              ceil_mode) for i in range(n))
    if any(o <= 0 for o in outs):
        raise _pool_output_error(op, x, spatial, outs)
    extra = tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - (size + 2 * p))
                  for o, s, d, k, size, p in zip(outs, stride, dilation, kernel, spatial,
                                                 padding))
    return kernel, stride, padding, dilation, extra, outs


def _max_pool_grad(grad, input_shape, indices, x, values, output_version, kernel_size,
                   stride, padding, dilation, extra):
    attrs = dict(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                 extra=extra)
    if indices is None:  # the positions are recovered from the input and the values...
        counter, version = output_version
        if counter[0] == version:  # ...unless an in-place op has changed the values since
            out = run_fused("max_pool_backward", grad, x, values, None, input_shape, **attrs)
            if out is not None:
                return out
        _, indices = run_fused("max_pool", x, need_indices=True, **attrs)
    else:
        out = run_fused("max_pool_backward", grad, None, None, indices, input_shape, **attrs)
        if out is not None:
            return out
    # in ember ops (differentiable): scatter into window slots, then fold with col2im
    k = math.prod(kernel_size)
    g = grad
    flat_g = reshape(g, tuple(g.shape[:2]) + (-1, 1))
    flat_k = reshape(indices, tuple(indices.shape[:2]) + (-1, 1))
    slots = scatter(zeros(tuple(flat_g.shape[:3]) + (k,), dtype=g.dtype, device=g.device),
                    3, flat_k, flat_g)
    cols = reshape(permute(slots, (0, 1, 3, 2)), (g.shape[0], g.shape[1] * k, -1))
    padded = tuple(s + 2 * p + e for s, p, e in zip(input_shape[2:], padding, extra))
    grad_padded = col2im(cols, padded, kernel_size, dilation, 0, stride)
    key = (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in
                                             zip(padding, input_shape[2:]))
    return getitem(grad_padded, key)


@composite(variants="", cost=costs.reduction(1), fused=("max_pool", "max_pool_backward"),
           grad=Grad(input=_max_pool_grad))
def max_pool_with_indices(op: str, n: int, input: Tensor, kernel_size: Any, stride: Any,
                          padding: Any, dilation: Any, ceil_mode: bool,
                          return_indices: bool) -> tuple | None:
    """Batched max pooling through the backend's fused `max_pool` kernel: (values, flat
    input indices or None); None when the backend has no such kernel (max_pool1d/2d/3d then
    take the maximum of im2col windows)."""
    kernel, stride, padding, dilation, extra, outs = _pool_geometry(
        op, n, input, kernel_size, stride, padding, dilation, ceil_mode)
    attrs = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                 extra=extra)
    fused = run_fused("max_pool", input, need_indices=return_indices, **attrs)
    if fused is None:
        return None
    values, k_index = fused
    if state.enabled and input._requires_grad or fw.active:
        # without indices, the backward recovers the positions from input and values (a
        # tensor of its own on the values' buffer, so that an in-place op on the output,
        # such as relu_, does not make backward raise; the backward then recomputes them)
        own = Tensor._make(values._data, values._dtype, values._device, values._backend)
        recovered = dict(indices=None, x=input, values=own,
                         output_version=(values._vc, values._vc[0])) if k_index is None \
            else dict(indices=k_index, x=None, values=None, output_version=None)
        record_grad(OPS["max_pool_with_indices"], (input,), {**attrs, **recovered}, values,
                    f"MaxPool{n}DWithIndicesBackward0")
    if not return_indices:
        return values, None
    flat_k = reshape(k_index, tuple(k_index.shape[:2]) + (math.prod(outs),))
    return values, _pool_indices(flat_k, input, outs, (kernel, stride, padding, dilation,
                                                       extra))


fused_kernel("max_pool", replaces="max_pool_with_indices", outputs=("like", "int64"),
             signature="max_pool(x, *, kernel_size, stride, padding, dilation, extra, "
                       "need_indices) -> (values, window-local argmax | None)",
             doc="Max pooling over 1 to 3 spatial dims, `extra` right padding for ceil_mode; "
                 "the indices may be None when not asked for (the backward then recovers "
                 "them).")
fused_kernel("max_pool_backward", replaces="max_pool_with_indices backward", backward=True,
             same_dtype=False,
             signature="max_pool_backward(grad, x | None, values | None, indices | None, "
                       "input_shape, *, kernel_size, stride, padding, dilation, extra) -> gx",
             doc="Sends each output's gradient to the input element its window picked (the "
                 "first maximum), from the indices or from x and the values.")


def _pool_indices(k_index: Tensor, x: Tensor, outs: tuple, geom: tuple) -> Tensor:
    """Flat input positions (PyTorch's return_indices) of the chosen window elements.

    Along dim i, output o's window starts at o * stride - padding, and the chosen kernel
    offset adds offset * dilation; the flat index is row-major over the input's dims.
    """
    kernel, stride, padding, dilation, _ = geom
    n = len(kernel)
    k = reshape(k_index, tuple(k_index.shape[:2]) + outs)
    flat = None
    for i in range(n):
        offset = remainder(floor_divide(k, math.prod(kernel[i + 1:])), kernel[i])
        shape = [1] * (2 + n)
        shape[2 + i] = outs[i]
        start = reshape(sub(mul(arange(outs[i], device=x.device), stride[i]),
                                padding[i]), tuple(shape))
        coord = add(start, mul(offset, dilation[i]))
        flat = coord if flat is None else add(mul(flat, x.shape[2 + i]), coord)
    return flat


@composite(variants="function", traced_as_node=True, cost=costs.reduction(1))
def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False):
    """1-D max pooling over (N, C, L) inputs."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


@composite(variants="function", traced_as_node=True, cost=costs.reduction(1))
def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False):
    """2-D max pooling over (N, C, H, W) inputs."""
    return kept_format(input, _max_pool("max_pool2d", 2, input, kernel_size, stride,
                                        padding, dilation, ceil_mode, return_indices))


@composite(variants="function", traced_as_node=True, cost=costs.reduction(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False):
    """3-D max pooling over (N, C, D, H, W) inputs."""
    return kept_format(input, _max_pool("max_pool3d", 3, input, kernel_size, stride,
                                        padding, dilation, ceil_mode, return_indices))


@composite(variants="function", cost=costs.reduction(1))
def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = (),
                            padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """1-D max pooling over (N, C, L) inputs: (values, flat input indices)."""
    return _max_pool("max_pool1d_with_indices", 1, input, kernel_size, stride, padding,
                     dilation, ceil_mode, True)


def _avg_pool(op: str, n: int, input: Tensor, kernel_size, stride, padding, ceil_mode,
              count_include_pad, divisor_override=None):
    if input._dtype in _HALF:  # PyTorch's: summed and divided in float32, rounded once
        return R.in_float32(lambda x: _avg_pool(op, n, x, kernel_size, stride, padding,
                                                ceil_mode, count_include_pad,
                                                divisor_override), input)
    _features_present(op, n, input)
    x, unbatched = _batched(input, n, op)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    integral = not x.dtype.is_floating_point
    if integral and x.dtype is not dt.int64:  # PyTorch's CPU kernels: int64 and floats
        kernel = "avg_pool3d_out_frame" if n == 3 else "avg_pool2d"
        if n == 2 and tensor_format(x) is not contiguous_format:
            kernel += "_channels_last"
        raise kernel_refuses(kernel, x.dtype)
    windows, outs, geom = _pool_windows(op, n, x, kernel_size, stride, padding, 1, ceil_mode,
                                        0.0)
    kernel, stride_, padding_, _, extra = geom
    total = R.sum(windows, 2)
    # an integer mean stays an integer, rounded toward zero (C's division), as PyTorch's
    divide = functools.partial(div, rounding_mode="trunc") if integral else div
    if divisor_override:
        out = divide(total, divisor_override)
    elif not any(padding_) and not any(extra):
        out = divide(total, math.prod(kernel))
    else:
        # count what each window covers: the input, plus the explicit padding if included
        with no_grad():
            inside = ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype, device=x.device)
            if count_include_pad:
                pad = []
                for p in reversed(padding_):
                    pad += [p, p]
                inside = constant_pad_nd(inside, pad, 1.0)
                rest = []
                for e in reversed(extra):
                    rest += [0, e]
                covered = constant_pad_nd(inside, rest, 0.0)
            else:
                pad = []
                for p, e in reversed(list(zip(padding_, extra))):
                    pad += [p, p + e]
                covered = constant_pad_nd(inside, pad, 0.0)
            counts = R.sum(reshape(im2col(covered, kernel, 1, 0, stride_),
                                     (1, 1, math.prod(kernel), -1)), 2)
        out = divide(total, counts)
    out = reshape(out, tuple(x.shape[:2]) + outs)
    return squeeze(out, 0) if unbatched else out


@composite(variants="function", traced_as_node=True, cost=costs.reduction(1))
def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """1-D average pooling over (N, C, L) inputs: PyTorch's, 2-D pooling of `input`
    unsqueezed to (N, C, 1, L) (so a channels-last-like input gives a channels-last-like
    result, and a gradient taken with `create_graph=True` stays tied to the input)."""
    k, s, p = _args_1d("avg_pool1d", input, kernel_size=kernel_size,
                       stride=kernel_size if stride is None or stride == () else stride,
                       padding=padding)
    return squeeze(avg_pool2d(unsqueeze(input, -2), (1, k), (1, s), (0, p), ceil_mode,
                              count_include_pad), -2)


def _args_1d(op: str, input: Tensor, **args: Any) -> list[int]:
    """The one int of each argument of a 1-D pooling `op` that PyTorch computes by its 2-D
    one, after PyTorch's checks of `input`'s rank and the arguments' lengths."""
    if not 2 <= input.ndim <= 3:
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for "
                           f"{op})")
    out = []
    for name, value in args.items():
        value = (value,) if isinstance(value, int) else tuple(value)
        if len(value) != 1:
            raise RuntimeError(f"{op}() argument '{name}' should contain one int (got "
                               f"{len(value)})")
        out.append(value[0])
    return out


@composite(node_label="AvgPool2DBackward0",
           variants="", traced_as_node=True, cost=costs.reduction(1))
def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """2-D average pooling over (N, C, H, W) inputs."""
    return kept_format(input, _avg_pool("avg_pool2d", 2, input, kernel_size, stride,
                                        padding, ceil_mode, count_include_pad,
                                        divisor_override))


@composite(node_label="AvgPool3DBackward0",
           variants="", traced_as_node=True, cost=costs.reduction(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """3-D average pooling over (N, C, D, H, W) inputs."""
    return row_major_result(_avg_pool("avg_pool3d", 3, input, kernel_size, stride,
                                      padding, ceil_mode, count_include_pad,
                                      divisor_override))


def _refuse_adaptive_avg_dtype(n: int, x: Tensor, outs: tuple) -> None:
    """PyTorch's refusal of a non-floating input to adaptive average pooling: pooled to one
    element it is a mean (which names the dtype it cannot average); to any other size, the
    CPU kernel's NotImplementedError."""
    name = SCALAR_TYPE_NAMES.get(x.dtype.name, x.dtype)
    if all(o == 1 for o in outs):
        if not x.dtype.is_complex:
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: {name}")
        return
    kernel = "adaptive_avg_pool3d_cpu" if n == 3 else "adaptive_avg_pool2d"
    if n == 2 and tensor_format(x) is not contiguous_format:
        kernel += "_channels_last"
    raise kernel_refuses(kernel, x.dtype)


def _adaptive_avg_pool(op: str, n: int, input: Tensor, output_size: Any) -> Tensor:
    if _to_one(n, output_size):  # PyTorch's: a mean over the last n dims, of any rank
        return R.mean(input, (-1, -2, -3)[:n], keepdim=True)
    if input._dtype in _HALF:  # (as _avg_pool: in float32, rounded once)
        return R.in_float32(lambda x: _adaptive_avg_pool(op, n, x, output_size), input)
    if n == 3 and not _to_one(n, output_size):  # (3-d: checked before the rank)
        _adaptive_nonempty(op, input)
    x, unbatched = _batched(input, n, op)
    spatial = tuple(x.shape[2:])
    outs = tuple(s if o is None else o for s, o in
                 zip(spatial, _tuple(output_size, n, "output_size")
                     if not isinstance(output_size, (tuple, list)) or None not in output_size
                     else output_size))
    if not x.dtype.is_floating_point:
        _refuse_adaptive_avg_dtype(n, x, outs)
    if n == 2:  # (2-d: its spatial dims only)
        _adaptive_nonempty(op, input, input.ndim - 2)
    if all(s % o == 0 for s, o in zip(spatial, outs)):
        k = tuple(s // o for s, o in zip(spatial, outs))
        out = _avg_pool(op, n, x, k, k, 0, False, True)
    else:  # PyTorch's windows: [floor(i*S/O), ceil((i+1)*S/O)); its `sum / kh / kw`
        out, counts = x, []
        for dim in range(n):
            size, o = spatial[dim], outs[dim]
            windows = [((i * size) // o, -(-((i + 1) * size) // o)) for i in range(o)]
            out = _window_sums(out, 2 + dim, windows)
            counts.append(tensor([hi - lo for lo, hi in windows], dtype=x.dtype,
                                 device=x.device).reshape((-1,) + (1,) * (n - 1 - dim)))
        for count in counts:  # (divided dim by dim, as PyTorch's kernel)
            out = div(out, count)
    return squeeze(out, 0) if unbatched else out


_STACKED_WIDTH = 8
"""Adaptive windows of up to this many elements are summed stacked (NumPy's reduce adds
fewer than 8 elements after the first one by one: a -0.0 after them changes nothing)."""


def _window_sums(x: Tensor, axis: int, windows: list) -> Tensor:
    """The sum of `x` over each [lo, hi) window along `axis`, in the windows' order along
    it. Narrow windows of a row-major `x` are summed at once: gathered by one
    index_select, each padded to the widest with a -0.0 (x + -0.0 is x, bit for bit),
    then one sum (the same sums, and gradients where no element is in 3 windows). Else
    one narrow and sum each (as many ops as windows)."""
    width, size = max(hi - lo for lo, hi in windows), x.shape[axis]
    # (more windows than elements: an element's gradient sums 3 or more windows' parts,
    # which the two paths add in different orders)
    if width > _STACKED_WIDTH or len(windows) > size or not x.is_contiguous():
        return cat([R.sum(narrow(x, axis, lo, hi - lo), axis, keepdim=True)
                    for lo, hi in windows], axis)
    shape = tuple(x.shape)
    if any(hi - lo < width for lo, hi in windows):
        x = cat([x, full(shape[:axis] + (1,) + shape[axis + 1:], -0.0, dtype=x.dtype,
                         device=x.device)], axis)
    index = [lo + j if lo + j < hi else size for lo, hi in windows for j in range(width)]
    stacked = index_select(x, axis, tensor(index, dtype=dt.int64, device=x.device))
    stacked = reshape(stacked, shape[:axis] + (len(windows), width) + shape[axis + 1:])
    return R.sum(stacked, axis + 1)


@composite(variants="function", traced_as_node=True, cost=costs.reduction(1))
def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, L) inputs to a fixed output size (PyTorch's: 2-D pooling
    of `input` unsqueezed to (N, C, 1, L); see `avg_pool1d`)."""
    size, = _args_1d("adaptive_avg_pool1d", input, output_size=output_size)
    return squeeze(adaptive_avg_pool2d(unsqueeze(input, -2), (1, size)), -2)


def _to_one(n: int, output_size: Any) -> bool:
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * n
    return all(size == 1 for size in sizes)


def _adaptive_avg_pool_label(n: int) -> Any:
    def label(input: Tensor, output_size: Any) -> str:
        # PyTorch averages to a single element with a mean, made channels-last (by an
        # as_strided) for a channels-last input
        if not _to_one(n, output_size):
            return f"AdaptiveAvgPool{n}DBackward0"
        channels_last = input.ndim == n + 2 and tensor_format(input) is not contiguous_format
        return "AsStridedBackward1" if channels_last else "MeanBackward1"
    return label


@composite(node_label=_adaptive_avg_pool_label(2), variants="", traced_as_node=True,
           cost=costs.reduction(1))
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, H, W) inputs to a fixed output size."""
    return kept_format(input, _adaptive_avg_pool("adaptive_avg_pool2d", 2, input,
                                                 output_size))


@composite(node_label=_adaptive_avg_pool_label(3), variants="", traced_as_node=True,
           cost=costs.reduction(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, D, H, W) inputs to a fixed output size."""
    out = _adaptive_avg_pool("adaptive_avg_pool3d", 3, input, output_size)
    return kept_format(input, out) if _to_one(3, output_size) else row_major_result(out)


# -- pooling over windows given as a table of input positions --------------------------
# Adaptive and fractional max pooling have windows of uneven sizes or random starts: a
# table of each window's flat input positions (an uneven window repeats its last position,
# which changes neither its maximum nor which element comes first), one gather and one max.


def _output_sizes(op: str, n: int, spatial: tuple, output_size: Any) -> tuple[int, ...]:
    if isinstance(output_size, (tuple, list)):
        sizes = tuple(output_size)
        if len(sizes) == 1:
            sizes = sizes * n
    else:
        sizes = (output_size,) * n
    if len(sizes) != n:
        raise RuntimeError(f"{op}: output_size must have {n} elements, got {list(sizes)}")
    sizes = tuple(s if o is None else int(o) for s, o in zip(spatial, sizes))
    if any(o < 0 for o in sizes):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to "
                           f"0 but received {list(sizes)}")
    return sizes


def _windows_max(op: str, x: Tensor, table: Tensor, outs: tuple) -> tuple[Tensor, Tensor]:
    """Max over windows of x (N, C, *spatial): `table` (N or 1, C or 1, L, K) holds the
    flat input position of each window's K elements. Returns (values, flat indices), each
    (N, C, *outs)."""
    batch, channels = x.shape[0], x.shape[1]
    length, k = table.shape[-2], table.shape[-1]
    shape = (batch, channels) + tuple(outs)
    if batch * channels * length == 0:  # nothing to reduce (still connected to x)
        empty = narrow(reshape(x, (batch, channels, math.prod(x.shape[2:]))), 2, 0, 0)
        return (reshape(empty, shape), zeros(shape, dtype=dt.int64, device=x.device))
    table = expand(table, (batch, channels, length, k))
    flat = reshape(x, (batch, channels, math.prod(x.shape[2:])))
    picked = reshape(gather(flat, 2, reshape(table, (batch, channels, length * k))),
                     (batch, channels, length, k))
    result = R.max(picked, 3)
    indices = squeeze(gather(table, 3, unsqueeze(result.indices, 3)), 3)
    return reshape(result.values, shape), reshape(indices, shape)


def _adaptive_table(spatial: tuple, outs: tuple, device: Any) -> Tensor:
    """(1, 1, L, K) flat input positions of PyTorch's adaptive windows, along each dim
    [floor(i*S/O), ceil((i+1)*S/O))."""
    flat = np.zeros((1,) * (2 * len(spatial)), dtype=np.int64)
    for d, (size, o) in enumerate(zip(spatial, outs)):
        starts = np.array([(i * size) // o for i in range(o)], dtype=np.int64)
        ends = np.array([-(-((i + 1) * size) // o) for i in range(o)], dtype=np.int64)
        k = int((ends - starts).max())
        pos = np.minimum(starts[:, None] + np.arange(k)[None, :], ends[:, None] - 1)
        shape = [1] * (2 * len(spatial))
        shape[d], shape[len(spatial) + d] = o, k
        flat = flat * size + pos.reshape(shape)
    table = flat.reshape(math.prod(outs), -1)
    return reshape(tensor(table, device=device), (1, 1) + table.shape)


def _adaptive_max_pool(op: str, n: int, input: Tensor, output_size: Any) -> tuple:
    x, unbatched = _batched(input, n, op)
    spatial = tuple(x.shape[2:])
    _adaptive_nonempty(op, input)
    outs = _output_sizes(op, n, spatial, output_size)
    table = _adaptive_table(spatial, outs, x.device) if all(outs) else \
        zeros((1, 1, 0, 1), dtype=dt.int64, device=x.device)
    values, indices = _windows_max(op, x, table, outs)
    if unbatched:
        values, indices = squeeze(values, 0), squeeze(indices, 0)
    return values, indices


@composite(variants="function", cost=costs.reduction(1))
def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """Max pooling of (N, C, L) inputs to a fixed output length: (values, indices)
    (PyTorch's: 2-D pooling of `input` unsqueezed to (N, C, 1, L); see `avg_pool1d`)."""
    size, = _args_1d("adaptive_max_pool1d", input, output_size=output_size)
    for d in range(1, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(f"adaptive_max_pool1d(): Expected input to have non-zero "
                               f"size for non-batch dimensions, but input has sizes "
                               f"{list(input.shape)} with dimension {d} being empty")
    values, indices = adaptive_max_pool2d(unsqueeze(input, -2), (1, size))
    return squeeze(values, -2), squeeze(indices, -2)


@composite(node_label="AdaptiveMaxPool2DBackward0", variants="", cost=costs.reduction(1))
def adaptive_max_pool2d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """Max pooling of (N, C, H, W) inputs to a fixed output size: (values, indices)."""
    return kept_format(input, _adaptive_max_pool("adaptive_max_pool2d", 2, input,
                                                 output_size))


@composite(variants="", cost=costs.reduction(1),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def adaptive_max_pool3d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """Max pooling of (N, C, D, H, W) inputs to a fixed output size: (values, indices)."""
    return row_major_result(_adaptive_max_pool("adaptive_max_pool3d", 3, input,
                                               output_size))


def _fractional_starts(samples: Tensor, size: int, out: int, pool: int) -> Tensor:
    """(N, C, out) window starts along one dim, PyTorch's pseudo-random intervals: with
    alpha = (size - pool) / (out - 1) in the input's dtype, start i is
    int((i + u) * alpha) - int(u * alpha), and the last window ends at the input's end."""
    last = full(tuple(samples.shape) + (1,), size - pool, dtype=dt.int64,
                device=samples.device)
    if out == 1:
        return last
    host = numpy_dtype(samples.dtype)
    alpha = float(np.asarray(size - pool, dtype=host) / np.asarray(out - 1, dtype=host))
    steps = arange(out - 1, dtype=samples.dtype, device=samples.device)
    u = unsqueeze(samples, -1)
    starts = sub(trunc(mul(add(u, steps), alpha)), trunc(mul(u, alpha)))
    return cat([to_dtype(starts, dt.int64), last], -1)


def fractional_max_pool(op: str, n: int, input: Tensor, kernel_size: Any, output_size: Any,
                        samples: Tensor) -> tuple[Tensor, Tensor]:
    """Fractional max pooling (Graham, 2014) of (N, C, *spatial) or unbatched input over
    `n` dims: windows of `kernel_size` at the pseudo-random starts `samples` (N, C, n) in
    [0, 1) give; sample 0 drives the last dim for 2-d pooling and the first for 3-d, as
    PyTorch's kernels read them. Returns (values, flat input indices)."""
    x, unbatched = _batched(input, n, op)
    if samples.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): expected _random_samples of dtype {x.dtype}, got "
                           f"{samples.dtype}")
    if any(s == 0 for s in x.shape[1:]):
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but got input with sizes {list(input.shape)}")
    kernel = _tuple(kernel_size, n, "kernel_size")
    outs = _tuple(output_size, n, "output_size")
    spatial = tuple(x.shape[2:])
    batch, channels = x.shape[0], x.shape[1]
    names = ("height", "width") if n == 2 else ("time", "height", "width")
    for o, k, size, name in zip(outs, kernel, spatial, names):
        if o <= 0 or k <= 0:
            raise RuntimeError(f"{op}(): output_size and kernel_size must be greater than 0, "
                               f"got {list(outs)} and {list(kernel)}")
        if o + k - 1 > size:
            raise RuntimeError(f"{op}(): pool {name} {k} too large relative to input {name} "
                               f"{size}")
    if tuple(samples.shape) != (batch, channels, n):
        raise RuntimeError(f"{op}(): expected _random_samples of shape "
                           f"{[batch, channels, n]}, got {list(samples.shape)}")
    order = list(range(n)) if n == 3 else list(reversed(range(n)))
    flat = None
    # positions laid out (N, C, O1, K1, ..., On, Kn), then permuted to (N, C, *O, *K)
    for d in range(n):
        starts = _fractional_starts(getitem(samples, (slice(None), slice(None), order[d])),
                                    spatial[d], outs[d], kernel[d])
        offsets = arange(kernel[d], device=x.device)
        pos = add(unsqueeze(starts, -1), offsets)  # (N, C, O, K)
        shape = [batch, channels] + [1] * (2 * n)
        shape[2 + 2 * d], shape[3 + 2 * d] = outs[d], kernel[d]
        pos = reshape(pos, tuple(shape))
        flat = pos if flat is None else add(mul(flat, spatial[d]), pos)
    dims = (0, 1) + tuple(2 + 2 * d for d in range(n)) + tuple(3 + 2 * d for d in range(n))
    table = reshape(permute(flat, dims), (batch, channels, math.prod(outs), math.prod(kernel)))
    values, indices = _windows_max(op, x, table, outs)
    if unbatched:
        values, indices = squeeze(values, 0), squeeze(indices, 0)
    return values, indices


# -- sampling grids (spatial transformers) --------------------------------------------
# affine_grid_generator maps a base grid of normalised output coordinates through a batch
# of affine matrices; grid_sampler reads the input at those coordinates (x along the last
# spatial dim) with one gather per interpolation tap, so the input's gradient is the
# gather's and the grid's comes from the taps' weights.


def _base_grid(size: tuple, align_corners: bool, dtype: Any, device: Any) -> Tensor:
    """(prod(spatial), n + 1) rows [x, y, (z,) 1] of PyTorch's normalised coordinates."""
    axes = []
    for steps in reversed(size[2:]):  # x runs along the last dim
        if steps <= 1:
            axes.append(np.zeros(max(steps, 0)))
        else:
            line = np.linspace(-1.0, 1.0, steps)
            axes.append(line if align_corners else line * (steps - 1) / steps)
    mesh = np.meshgrid(*reversed(axes), indexing="ij")  # each (D, H, W) or (H, W)
    cols = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(math.prod(size[2:]))]
    return tensor(np.stack(cols, 1).astype(numpy_dtype(dtype)), device=device)


@composite(variants="function", cost=costs.reduction(4),
           node_label="AffineGridGeneratorBackward0")
def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """The (N, *spatial, n) sampling grid of the affine maps `theta` (N, n, n + 1) over
    an output of `size` (N, C, *spatial) (`nn.functional.affine_grid` checks arguments)."""
    size = tuple(int(s) for s in size)
    n = len(size) - 2
    if n not in (2, 3) or theta.ndim != 3 or tuple(theta.shape[1:]) != (n, n + 1) or \
            theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid_generator: expected theta of shape (N, {n}, {n + 1})"
                           f" with N = size[0] for size {list(size)}, got "
                           f"{fmt_shape(tuple(theta.shape))}")
    base = _base_grid(size, bool(align_corners), theta.dtype, theta.device)
    grid = matmul(base, transpose(theta, 1, 2))  # (N, L, n)
    return reshape(grid, size[:1] + size[2:] + (n,))


# PyTorch computes 2-d sampling with a vectorized CPU kernel and 3-d with a scalar one,
# whose arithmetic differs where it matters for extreme coordinates (overflow, NaN, the
# reflection of a huge one); each is followed (ATen's GridSamplerKernel.cpp and
# GridSampler.h).


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return mul(add(coord, 1.0), (size - 1) / 2)
    return div(sub(mul(add(coord, 1.0), size), 1.0), 2)


def _unnormalize_2d(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """The vectorized kernel's: (x + 1) * (size / 2) - 0.5 (no overflow of (x + 1) * size
    for x near the largest float)."""
    if align_corners:
        return mul(add(coord, 1.0), (size - 1) / 2)
    return sub(mul(add(coord, 1.0), size / 2), 0.5)


def _reflect_2d(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """The vectorized kernel's reflection: |x - low| folded into twice the span by a
    truncated quotient, then the nearer of it and twice the span less it."""
    if align_corners and size <= 1:
        return mul(coord, 0.0)
    low, twice_span = (0.0, 2.0 * (size - 1)) if align_corners else (-0.5, 2.0 * size)
    distance = abs_(sub(coord, low))
    extra = sub(distance, mul(trunc(div(distance, twice_span)), twice_span))
    return add(minimum(extra, rsub(extra, twice_span)), low)


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """`coord` reflected off the bounds [twice_low / 2, twice_high / 2] until inside."""
    if twice_low == twice_high:
        return mul(coord, 0.0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = abs_(sub(coord, low))
    extra = remainder(distance, span)
    flips = floor(div(distance, span))
    even = eq(remainder(flips, 2), 0)
    return where(even, add(extra, low), add(rsub(extra, span), low))


def _padded_coordinate(coord: Tensor, size: int, padding_mode: int, align_corners: bool,
                       two_d: bool) -> Tensor:
    """Source coordinate after the padding mode: border clamps, reflection reflects
    then clamps, zeros leaves it (out-of-range taps then read 0). The clamp takes a NaN
    (a NaN coordinate, or an infinite one reflected) where PyTorch's does: to 0 in its
    vectorized 2-d kernel, to size - 1 in its scalar 3-d one (std::min(size - 1,
    std::max(NaN, 0)) is size - 1)."""
    if padding_mode == 2 and two_d:
        coord = _reflect_2d(coord, size, align_corners)
    elif padding_mode == 2:
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else \
            _reflect(coord, -1, 2 * size - 1)
    if padding_mode in (1, 2):
        coord = where(isnan(coord), 0.0 if two_d else size - 1.0,
                      clamp(coord, 0, size - 1))
    return coord


def _tap(flat: Tensor, sizes: tuple, indices: list, weight: Tensor) -> Tensor:
    """Input values (N, C, L) at integer coordinates `indices` (each (N, L)) times
    `weight` (N, L). Out of range: in 2-d, PyTorch's vectorized kernel reads a 0 there
    (its weight still multiplies it: NaN * 0 is NaN); in 3-d its scalar kernel skips the
    tap (an inf beside the border times its weight 0 adds nothing)."""
    inside, position = None, None
    for idx, size in zip(indices, sizes):
        ok = logical_and(ge(idx, 0), lt(idx, size))
        inside = ok if inside is None else logical_and(inside, ok)
        clamped = clamp(idx, 0, size - 1)
        position = clamped if position is None else add(mul(position, size), clamped)
    batch, channels, length = flat.shape[0], flat.shape[1], position.shape[1]
    values = gather(flat, 2, expand(unsqueeze(position, 1), (batch, channels, length)))
    inside = unsqueeze(inside, 1)
    if len(sizes) == 2:
        return mul(where(inside, values, 0.0), unsqueeze(weight, 1))
    return where(inside, mul(values, unsqueeze(weight, 1)), 0.0)


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """The four cubic-convolution weights (A = -0.75) of taps at -1, 0, 1, 2 from t."""
    a = -0.75

    def near(x):  # |x| <= 1
        return add(mul(mul(sub(mul(x, a + 2), a + 3), x), x), 1.0)

    def far(x):  # 1 < |x| < 2
        return sub(mul(add(mul(sub(mul(x, a), 5 * a), x), 8 * a), x), 4 * a)

    u = rsub(t, 1.0)
    return [far(add(t, 1.0)), near(t), near(u), far(add(u, 1.0))]


def _grid_sample(op: str, input: Tensor, grid: Tensor, interpolation_mode: int,
                 padding_mode: int, align_corners: bool) -> Tensor:
    n = input.ndim - 2
    if grid.ndim != input.ndim or n not in (2, 3):
        raise RuntimeError(f"{op}(): expected 4D or 5D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"{op}(): expected grid and input to have same batch size, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != n:
        raise RuntimeError(f"{op}(): expected grid to have size {n} in last dimension, but "
                           f"got grid with sizes {list(grid.shape)}")
    for i, s in enumerate(input.shape[2:]):
        if s == 0:
            raise RuntimeError(f"{op}(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i + 2} being empty")
    # (the CPU kernel's own refusals, after the shape checks: its dtype dispatch, then its
    # read of the grid as the input's scalar type)
    if not input.dtype.is_floating_point:
        kernel = "grid_sampler_2d_cpu_kernel_impl" if n == 2 else "grid_sampler3d_cpu"
        raise kernel_refuses(kernel, input.dtype)
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_TYPE_NAMES[input.dtype.name]} but "
                           f"found {SCALAR_TYPE_NAMES[grid.dtype.name]}")
    if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
        raise RuntimeError(f"{op}(): unknown interpolation mode {interpolation_mode} or "
                           f"padding mode {padding_mode}")
    if interpolation_mode == 2 and n != 2:
        raise RuntimeError(f"{op}(): bicubic interpolation only supports 4D input")
    batch, channels = input.shape[0], input.shape[1]
    sizes = tuple(input.shape[2:])
    outs = tuple(grid.shape[1:-1])
    flat = reshape(input, (batch, channels, math.prod(sizes)))
    points = reshape(grid, (batch, math.prod(outs), n))
    # the source coordinate along each spatial dim (D, H, W order; the grid holds x first)
    unnormalize = _unnormalize_2d if n == 2 else _unnormalize
    coords = [unnormalize(getitem(points, (slice(None), slice(None), n - 1 - d)),
                          sizes[d], align_corners) for d in range(n)]
    if interpolation_mode == 2:  # bicubic: the padding applies to each of the 4x4 taps
        base = [floor(c) for c in coords]
        weights = [_cubic_weights(sub(c, b)) for c, b in zip(coords, base)]
        # PyTorch's order of the sums: each row of 4 taps along x, then the rows along y
        out = None
        for i in range(4):
            row = None
            for j in range(4):
                taps = [_padded_coordinate(add(base[0], i - 1.0), sizes[0], padding_mode,
                                           align_corners, True),
                        _padded_coordinate(add(base[1], j - 1.0), sizes[1], padding_mode,
                                           align_corners, True)]
                taps = [to_dtype(trunc(t_), dt.int64) for t_ in taps]
                term = _tap(flat, sizes, taps, weights[1][j])
                row = term if row is None else add(row, term)
            row = mul(row, unsqueeze(weights[0][i], 1))
            out = row if out is None else add(out, row)
        return reshape(out, (batch, channels) + outs)
    coords = [_padded_coordinate(c, s, padding_mode, align_corners, n == 2)
              for c, s in zip(coords, sizes)]
    if interpolation_mode == 1:  # nearest, halves to even
        # weight 1, written with the grid so that the grid's gradient is zeros (PyTorch's)
        # rather than absent
        one = where(isfinite(coords[0]), add(mul(coords[0], 0.0), 1.0), 1.0)
        out = _tap(flat, sizes, [to_dtype(round_(c), dt.int64) for c in coords], one)
        return reshape(out, (batch, channels) + outs)
    base = [floor(c) for c in coords]
    fracs = [sub(c, b) for c, b in zip(coords, base)]
    base = [to_dtype(b, dt.int64) for b in base]
    out = None
    for corner in range(2 ** n):
        offsets = [(corner >> (n - 1 - d)) & 1 for d in range(n)]
        weight = None
        for f, o in zip(fracs, offsets):
            w = f if o else rsub(f, 1.0)
            weight = w if weight is None else mul(weight, w)
        term = _tap(flat, sizes, [add(b, o) for b, o in zip(base, offsets)], weight)
        out = term if out is None else add(out, term)
    return reshape(out, (batch, channels) + outs)


def _grid_sampler_label(input: Tensor, *args: Any) -> str:
    # PyTorch's grid_sampler runs its 2-D or its 3-D kernel, one node each
    return f"GridSampler{input.ndim - 2}DBackward0"


@composite(variants="function", traced_as_node=True, cost=costs.reduction(8),
           node_label=_grid_sampler_label,
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """Samples `input` (N, C, *spatial) at the normalised coordinates `grid` (N, *out, n):
    interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2
    reflection (`nn.functional.grid_sample` names them)."""
    return _grid_sample("grid_sampler", input, grid, interpolation_mode, padding_mode,
                        align_corners)


@composite(variants="function", traced_as_node=True, cost=costs.reduction(8),
           node_label="GridSampler2DBackward0")
def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """`grid_sampler` of a 4-D input."""
    if input.ndim != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, got sizes "
                           f"{list(input.shape)}")
    return _grid_sample("grid_sampler_2d", input, grid, interpolation_mode, padding_mode,
                        align_corners)


@composite(variants="function", traced_as_node=True, cost=costs.reduction(8),
           node_label="GridSampler3DBackward0")
def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """`grid_sampler` of a 5-D input."""
    if input.ndim != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, got sizes "
                           f"{list(input.shape)}")
    return _grid_sample("grid_sampler_3d", input, grid, interpolation_mode, padding_mode,
                        align_corners)


# -- softmax --------------------------------------------------------------------------


_HALF = (dt.float16, dt.bfloat16)


def _row_major(input: Tensor) -> Tensor:
    """`input`'s values row-major, outside autograd: PyTorch's CPU softmax, log_softmax and
    layer_norm read a contiguous copy and return row-major results (what a later
    dropout's mask or `view` sees)."""
    if row_major(input):
        return input
    with no_grad():
        return input.contiguous()


def _softmax_input(op: str, input: Tensor, dim: int, dtype: Any) -> tuple[Tensor, int]:
    if dtype is not None:
        input = input.to(dtype=dtype_arg(dtype, op))
    d = normalize_dim(op, dim, input.ndim)
    if not input._dtype.is_floating_point and input.numel():  # (nothing to compute: kept)
        # named as PyTorch's CPU kernel is: its own for the last dim
        kernel = f"{op}_lastdim_kernel_impl" if d == input.ndim - 1 or not input.ndim \
            else f"{op}_kernel_impl"
        raise with_context(kernel_refuses(kernel, input._dtype),
            f"{op}: a {input._dtype} input (pass dtype= for a floating-point result)")
    return input, d


def _log_softmax_grad(grad: Tensor, result: Tensor, dim: int) -> Tensor:
    """`grad - exp(result) * sum(grad, dim)`; of half-precision tensors in float32, rounded
    once (PyTorch's CPU backward kernel)."""
    if grad._dtype in _HALF:
        return _log_softmax_grad(grad.to(dtype=dt.float32), result.to(dtype=dt.float32),
                                 dim).to(dtype=grad._dtype)
    return grad - result.exp() * R.sum(grad, dim, keepdim=True)


def _softmax_grad(grad: Tensor, result: Tensor, dim: int) -> Tensor:
    """`result * (grad - sum(grad * result, dim))`; of half-precision tensors in float32,
    rounded once (PyTorch's CPU backward kernel)."""
    if grad._dtype in _HALF:
        return _softmax_grad(grad.to(dtype=dt.float32), result.to(dtype=dt.float32),
                             dim).to(dtype=grad._dtype)
    return result * (grad - R.sum(grad * result, dim, keepdim=True))


@composite(traced_as_node=True, precision=P.FLOAT32, cost=costs.reduction(10),
           fused="softmax", grad=Grad(input=_softmax_grad))
def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """`exp(x) / sum(exp(x), dim)`, computed stably."""
    input, d = _softmax_input("softmax", input, dim, dtype)
    if not input.ndim:  # as PyTorch: the one element, as a 1-element vector
        return reshape(softmax(reshape(input, (1,)), 0), ())
    if not input.numel():
        return input.clone()
    src = _row_major(input)
    if input._dtype in _HALF:  # (its backward reads the rounded result)
        out = _half_softmax(src, d)
    else:
        out = run_fused("softmax", src, dim=d)
    if out is None:
        with no_grad():
            e = (src - R.amax(src, d, keepdim=True)).exp()
            out = e / R.sum(e, d, keepdim=True)
    record_grad(OPS["softmax"], (input,), {"dim": d}, out)
    return out


@composite(traced_as_node=True, precision=P.FLOAT32, cost=costs.reduction(10),
           fused="log_softmax", grad=Grad(input=_log_softmax_grad))
def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """`x - logsumexp(x, dim)`, computed stably."""
    input, d = _softmax_input("log_softmax", input, dim, dtype)
    if not input.ndim:  # as PyTorch: the one element, as a 1-element vector
        return reshape(log_softmax(reshape(input, (1,)), 0), ())
    if not input.numel():
        return input.clone()
    src = _row_major(input)
    out = _half_log_softmax(src, d) if input._dtype in _HALF else \
        run_fused("log_softmax", src, dim=d)
    if out is None:
        with no_grad():
            shifted = src - R.amax(src, d, keepdim=True)
            out = shifted - R.sum(shifted.exp(), d, keepdim=True).log()
    record_grad(OPS["log_softmax"], (input,), {"dim": d}, out)
    return out


def _half_softmax(input: Tensor, dim: int) -> Tensor:
    """softmax of a float16/bfloat16 `input` (row-major) as PyTorch's CPU kernels round it:
    computed in float32 and rounded once along the last dim. Along another (even before
    size-1 dims) its kernel runs across the positions after `dim` in vectors (of the
    backend's `half_vector_lanes`), rounding once; the positions past the last whole
    vector (all of them when there are fewer) keep their exponentials in the output's
    dtype, each rounded before its division by the float32 sum. (On one thread: more split
    the positions among themselves, each share with its own tail.)"""
    half = input._dtype
    with no_grad():
        x = input.to(dtype=dt.float32)
        if dim == input.ndim - 1:
            return softmax(x, dim).to(dtype=half)
        e = (x - R.amax(x, dim, keepdim=True)).exp()
        total = R.sum(e, dim, keepdim=True)
        once = (e / total).to(dtype=half)
        inner = math.prod(input.shape[dim + 1:])
        lanes = input._backend.half_vector_lanes
        vectorised = inner if lanes is None else inner // lanes() * lanes()
        if vectorised == inner:
            return once
        tail = (e.to(dtype=half).to(dtype=dt.float32) / total).to(dtype=half)
        position = reshape(arange(inner, device=input.device), input.shape[dim + 1:])
        return where(position < vectorised, once, tail)


def _half_log_softmax(input: Tensor, dim: int) -> Tensor:
    """log_softmax of a float16/bfloat16 `input` (row-major) as PyTorch's CPU kernels round
    it: computed in float32; along the last dim (not another before size-1 dims), its
    kernel keeps each row's sum of exponentials, and that sum's log, in the input's dtype
    (its buffers' type), so both are rounded to it before `x - max - log(sum)`."""
    half = input._dtype
    with no_grad():
        x = input.to(dtype=dt.float32)
        if dim != input.ndim - 1:  # along another dim: rounded once
            return log_softmax(x, dim).to(dtype=half)
        shifted = x - R.amax(x, dim, keepdim=True)
        total = R.sum(shifted.exp(), dim, keepdim=True).to(dtype=half).to(dtype=dt.float32)
        log_total = total.log().to(dtype=half).to(dtype=dt.float32)
        return (shifted - log_total).to(dtype=half)


fused_kernel("softmax", replaces="softmax", signature="softmax(x, *, dim) -> y",
             doc="softmax along `dim` in one kernel.")
fused_kernel("log_softmax", replaces="log_softmax", signature="log_softmax(x, *, dim) -> y",
             doc="log-softmax along `dim` in one kernel.")


# -- normalization --------------------------------------------------------------------


@composite(node_label="NativeLayerNormBackward0",
           variants="function", traced_as_node=True, precision=P.FLOAT32,
           cost=costs.reduction(8))
def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalizes over the trailing `normalized_shape` dims, then scales and shifts."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise with_context(RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"),
            f"layer_norm: input of shape {tuple(input.shape)} does not end in "
            f"normalized_shape {shape}")
    if input._dtype in _HALF and all(p is None or p._dtype is input._dtype
                                     for p in (weight, bias)):
        return _HalfLayerNorm.apply(input, weight, bias, shape, eps)
    if input._dtype in _HALF:
        # PyTorch computes in float32 and rounds once to the input's dtype (the weights
        # may be float32, as under autocast)
        out = layer_norm(input.to(dtype=dt.float32), shape,
                         None if weight is None else weight.to(dtype=dt.float32),
                         None if bias is None else bias.to(dtype=dt.float32), eps)
        return out.to(dtype=input._dtype)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    mean = R.mean(input, dims, keepdim=True)
    centered = sub(input, mean)
    var = R.mean(mul(centered, centered), dims, keepdim=True)
    out = mul(centered, rsqrt(add(var, eps)))
    if weight is not None:
        out = mul(out, weight)
    if bias is not None:
        out = add(out, bias)
    return out if row_major(out) else out.contiguous()  # (PyTorch's is row-major)


def _layer_norm_stats(x: Tensor, dims: tuple) -> tuple[Tensor, Tensor, Tensor]:
    """`(x - mean, mean, biased variance)` of float32 `x` over `dims`, computed in the
    order of `layer_norm`'s own float32 steps."""
    mean = R.mean(x, dims, keepdim=True)
    centered = sub(x, mean)
    return centered, mean, R.mean(mul(centered, centered), dims, keepdim=True)


def _through_normalization(v: Tensor, xhat: Tensor, rstd: Tensor, dims: tuple) -> Tensor:
    """`v` through the Jacobian of `(x - mean) * rstd` over `dims` (symmetric, so one
    formula serves the backward and the forward-mode tangent): `rstd * (v - mean(v) -
    xhat * mean(v * xhat))`."""
    return mul(rstd, sub(sub(v, R.mean(v, dims, keepdim=True)),
                         mul(xhat, R.mean(mul(v, xhat), dims, keepdim=True))))


@as_kernel("NativeLayerNormBackward0", 3)
class _HalfLayerNorm(Function):
    """layer_norm of float16/bfloat16 tensors (weight and bias of the same dtype) as
    PyTorch's CPU kernel computes it: normalised in float32 and rounded once; the mean and
    1/std it keeps for backward rounded to the dtype, and the input gradient computed from
    those in float32, rounded once. (Its weight and bias gradients, summed over the rows
    in the dtype and so by thread, are summed here in float32.)"""

    @staticmethod
    def forward(ctx: Any, input: Tensor, weight: Tensor | None, bias: Tensor | None,
                shape: tuple, eps: float) -> Tensor:
        half = input._dtype
        dims = tuple(range(input.ndim - len(shape), input.ndim))
        centered, mean, var = _layer_norm_stats(input.to(dtype=dt.float32), dims)
        rstd = rsqrt(add(var, eps))
        out = mul(centered, rstd)
        if weight is not None:
            out = mul(out, weight.to(dtype=dt.float32))
        if bias is not None:
            out = add(out, bias.to(dtype=dt.float32))
        ctx.save_for_backward(input, weight, mean.to(dtype=half), rstd.to(dtype=half))
        ctx.dims, ctx.jvp_inputs = dims, (input, weight, eps)  # (references, no copies)
        out = out.to(dtype=half)
        return out if row_major(out) else out.contiguous()

    @staticmethod
    def jvp(ctx: Any, dx: Tensor | None, dw: Tensor | None, db: Tensor | None,
            *settings: Any) -> Tensor:
        """The tangent of the output, in float32 from the unrounded statistics, rounded."""
        input, weight, eps = ctx.jvp_inputs
        dims = ctx.dims
        centered, _, var = _layer_norm_stats(input.to(dtype=dt.float32), dims)
        rstd = rsqrt(add(var, eps))
        xhat = mul(centered, rstd)
        out = mul(xhat, 0.0) if dx is None else \
            _through_normalization(dx.to(dtype=dt.float32), xhat, rstd, dims)
        if weight is not None:
            out = mul(out, weight.to(dtype=dt.float32))
        if dw is not None:
            out = add(out, mul(xhat, dw.to(dtype=dt.float32)))
        if db is not None:
            out = add(out, db.to(dtype=dt.float32))
        return out.to(dtype=input._dtype)

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple:
        input, weight, mean, rstd = ctx.saved_tensors
        half, dims = input._dtype, ctx.dims
        rstd = rstd.to(dtype=dt.float32)
        xhat = mul(sub(input.to(dtype=dt.float32), mean.to(dtype=dt.float32)), rstd)
        dy = grad_out.to(dtype=half).to(dtype=dt.float32)
        dy_w = dy if weight is None else mul(dy, weight.to(dtype=dt.float32))
        dx = _through_normalization(dy_w, xhat, rstd, dims)
        rows = tuple(range(input.ndim - len(dims)))

        def over_rows(t: Tensor) -> Tensor:
            return (R.sum(t, rows) if rows else t).to(dtype=half)

        need_w, need_b = ctx.needs_input_grad[1:3]
        dw = over_rows(mul(dy, xhat)) if need_w else None
        db = over_rows(dy) if need_b else None
        return dx.to(dtype=half), dw, db, None, None


# -- recurrent cells ------------------------------------------------------------------
# Not differentiable themselves: ember.nn's LSTM runs its own backpropagation through
# time on them.


@composite(variants="", cost=costs.pointwise(20), precision=P.LOWER, fused="lstm_cell")
def _fused_lstm_cell(input_gates: Tensor, hidden_gates: Tensor,
                     cx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One LSTM step from precomputed gate pre-activations (PyTorch's gate order i, f, g,
    o): returns (hy, cy, workspace), the workspace holding the activated gates for
    `_fused_lstm_cell_backward`."""
    fused = run_fused("lstm_cell", input_gates, hidden_gates, cx)
    if fused is not None:
        return fused
    with no_grad():
        gates = add(input_gates, hidden_gates)
        i, f, g, o = chunk(gates, 4, 1)
        i, f, g, o = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
        cy = add(mul(f, cx), mul(i, g))
        hy = mul(o, tanh(cy))
        return hy, cy, cat([i, f, g, o], 1)


@composite(variants="", cost=costs.pointwise(30), fused="lstm_cell_backward")
def _fused_lstm_cell_backward(grad_hy: Tensor, grad_cy: Tensor | None, cx: Tensor,
                              cy: Tensor, workspace: Tensor) -> tuple[Tensor, Tensor]:
    """Gradients of `_fused_lstm_cell` with respect to its gate pre-activations (the same
    for input and hidden gates) and to cx."""
    fused = run_fused("lstm_cell_backward", grad_hy, grad_cy, cx, cy, workspace)
    if fused is not None:
        return fused
    with no_grad():
        i, f, g, o = chunk(workspace, 4, 1)
        t = tanh(cy)
        gc = mul(mul(grad_hy, o), rsub(mul(t, t), 1.0))
        if grad_cy is not None:
            gc = add(gc, grad_cy)
        grad_gates = cat([mul(mul(gc, g), mul(i, rsub(i, 1.0))),
                          mul(mul(gc, cx), mul(f, rsub(f, 1.0))),
                          mul(mul(gc, i), rsub(mul(g, g), 1.0)),
                          mul(mul(grad_hy, t), mul(o, rsub(o, 1.0)))], 1)
        return grad_gates, mul(gc, f)


def _lstm_layer_cost(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, bias: Any = None,
                     *args: Any) -> Cost:
    """Both gate GEMMs of every step and ~12 elementwise ops a gate value; bytes: the
    input, the weights and the (T*B, H) output."""
    rows, gates = x.shape[0], w_ih.shape[0]
    hidden = w_hh.shape[1]
    flops = 2.0 * rows * gates * (w_ih.shape[1] + hidden) + 12.0 * rows * gates
    return Cost(flops, costs.nbytes(x) + costs.nbytes(w_ih) + costs.nbytes(w_hh) +
                rows * hidden * x.dtype.itemsize)


@composite(variants="", precision=P.LOWER, cpu_precision=P.LOWER, fused="lstm_layer",
           cost=_lstm_layer_cost)
def _fused_lstm_layer(x: Tensor, h0: Tensor, c0: Tensor, w_ih: Tensor, w_hh: Tensor,
                      bias: Tensor | None, reverse: bool, keep: bool) -> tuple | None:
    """A whole LSTM layer (one direction, padded time-major input ``x`` of (T*B, I) rows,
    last step first if `reverse`) in one backend kernel: ``(out, h_n, c_n, saved)``,
    ``saved`` opaque to core and only passed to `_fused_lstm_layer_backward`. None when
    the backend has no `lstm_layer` kernel, the tensors' dtypes or devices differ (the
    per-step path promotes or raises as the ops do), or a trace records: nn's LSTM then
    runs per step."""
    if not x._dtype.is_floating_point:
        return None
    return run_fused("lstm_layer", x, w_ih, w_hh, bias, h0, c0, reverse, keep)


@composite(variants="", fused="lstm_layer_backward")
def _fused_lstm_layer_backward(like: Tensor, saved: Any, grad_out: Tensor | None,
                               grad_hn: Tensor | None, grad_cn: Tensor | None,
                               needs: tuple) -> tuple:
    """Gradients of `_fused_lstm_layer` for (x, w_ih, w_hh, bias, h0, c0), None where
    ``needs`` is false; `like` is a tensor of the layer's dtype and device."""
    grads = run_fused("lstm_layer_backward", saved, grad_out, grad_hn, grad_cn, needs)
    if grads is None:
        raise RuntimeError(f"_fused_lstm_layer_backward: backend {like._backend.name!r} ran "
                           "lstm_layer but cannot run its backward now (no output gradient, "
                           "or a trace is recording)")
    return grads


def _gru_layer_cost(x: Any, h0: Any, w_ih: Any, w_hh: Any, *args: Any) -> Cost:
    """Both gate GEMMs of every step and ~10 elementwise ops a gate value; bytes: the
    input, the weights and the (T*B, H) output."""
    rows, gates = x.shape[0], w_ih.shape[0]
    hidden = w_hh.shape[1]
    flops = 2.0 * rows * gates * (w_ih.shape[1] + hidden) + 10.0 * rows * gates
    return Cost(flops, costs.nbytes(x) + costs.nbytes(w_ih) + costs.nbytes(w_hh) +
                rows * hidden * x.dtype.itemsize)


# no autocast precision class: PyTorch's CPU GRU keeps float32 under autocast, unlike its LSTM
@composite(variants="", fused="gru_layer", cost=_gru_layer_cost)
def _fused_gru_layer(x: Tensor, h0: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                     b_hh: Tensor | None, reverse: bool, keep: bool) -> tuple | None:
    """A whole GRU layer (one direction, padded time-major input ``x`` of (T*B, I) rows,
    last step first if `reverse`) in one backend kernel: ``(out, h_n, saved)``, ``saved``
    opaque to core and only passed to `_fused_gru_layer_backward`. None when the backend
    has no `gru_layer` kernel or it does not run this call (it returns Nones: the CPU's
    for dtypes it has no compiled kernel for), the tensors' dtypes or devices differ, or a
    trace records: nn's GRU then runs per step."""
    if not x._dtype.is_floating_point:
        return None
    layer = run_fused("gru_layer", x, w_ih, w_hh, b_ih, b_hh, h0, reverse, keep)
    return None if layer is None or layer[0] is None else layer


@composite(variants="", fused="gru_layer_backward")
def _fused_gru_layer_backward(like: Tensor, saved: Any, grad_out: Tensor | None,
                              grad_hn: Tensor | None, needs: tuple) -> tuple:
    """Gradients of `_fused_gru_layer` for (x, w_ih, w_hh, b_ih, b_hh, h0), None where
    ``needs`` is false; `like` is a tensor of the layer's dtype and device."""
    grads = run_fused("gru_layer_backward", saved, grad_out, grad_hn, needs)
    if grads is None:
        raise RuntimeError(f"_fused_gru_layer_backward: backend {like._backend.name!r} ran "
                           "gru_layer but cannot run its backward now (no output gradient, "
                           "or a trace is recording)")
    return grads


fused_kernel("lstm_cell", replaces="_fused_lstm_cell", outputs=("like", "like", "like"),
             signature="lstm_cell(input_gates, hidden_gates, cx) -> (hy, cy, workspace)",
             doc="One LSTM step (gates i, f, g, o): the ~12 elementwise ops in one kernel.")
fused_kernel("lstm_cell_backward", replaces="_fused_lstm_cell_backward",
             outputs=("like", "like"),
             signature="lstm_cell_backward(grad_hy, grad_cy | None, cx, cy, workspace) -> "
                       "(grad_gates, grad_cx)",
             doc="The gradients of one LSTM step from its saved gates.")
fused_kernel("lstm_layer", replaces="_fused_lstm_layer",
             outputs=("like", "like", "like", "opaque"),
             signature="lstm_layer(x, w_ih, w_hh, bias | None, h0, c0, reverse, keep) -> "
                       "(out, h_n, c_n, saved)",
             doc="A whole LSTM layer direction over a padded sequence, the time loop inside "
                 "the backend, in any floating dtype the backend holds; `saved` is opaque "
                 "to core.")
fused_kernel("lstm_layer_backward", replaces="_fused_lstm_layer_backward",
             outputs=("like",) * 6,
             signature="lstm_layer_backward(saved, grad_out | None, grad_hn | None, "
                       "grad_cn | None, needs) -> (gx, gw_ih, gw_hh, gbias, gh0, gc0)",
             doc="The whole layer's gradients, None where `needs` is false.")
fused_kernel("gru_layer", replaces="_fused_gru_layer",
             outputs=("like", "like", "opaque"),
             signature="gru_layer(x, w_ih, w_hh, b_ih | None, b_hh | None, h0, reverse, keep) "
                       "-> (out, h_n, saved)",
             doc="A whole GRU layer direction over a padded sequence, the time loop inside "
                 "the backend; `saved` is opaque to core. Nones where the backend does not "
                 "run this call (the layer then runs per step).")
fused_kernel("gru_layer_backward", replaces="_fused_gru_layer_backward",
             outputs=("like",) * 6,
             signature="gru_layer_backward(saved, grad_out | None, grad_hn | None, needs) -> "
                       "(gx, gw_ih, gw_hh, gb_ih, gb_hh, gh0)",
             doc="The whole layer's gradients, None where `needs` is false.")
