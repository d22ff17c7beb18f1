"""Recurrent layers: `RNN`, `LSTM`, `GRU` (multi-layer, bidirectional) and the single-step
cells `RNNCell`, `LSTMCell`, `GRUCell`, with PyTorch's parameters, gate order and shapes.

How a layer runs (one direction of one layer):

* The input projection of every time step is ONE matmul, ``x @ W_ih^T + b`` over the
  whole sequence; each step then does only ``h @ W_hh^T`` and the gate math on one
  ``(B, gates * H)`` tensor, split with views.
* Padded input and a :class:`PackedSequence` share one code path: the sequence is a 2-D
  ``(rows, features)`` tensor whose step ``t`` is a block of rows (``B`` rows each when
  padded; ``batch_sizes[t]`` rows when packed, where a step updates only the first
  ``batch_sizes[t]`` rows of the state).
* Training does not record a graph node per op per step. The whole layer is one
  autograd :class:`~ember.autograd.Function` with hand-written backpropagation through
  time: the per-step factors of the backward pass are computed once for all steps, the
  per-step loop does a handful of ops, and the weight gradients are a few matmuls over the
  stacked per-step gate gradients.
* When that backward runs under ``create_graph=True`` (double backward), the layer is
  recomputed op by op with differentiable ops and differentiated with
  :func:`ember.autograd.grad`, so higher-order gradients are exact.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import ember
from ember import Tensor
from ember.autograd import Function
from ember.core import dtype as _dt
from ember.core import forward_ad as _fw
from ember.core.ops import nn as _nnops
from ember.core.ops.shape import named_view
from ember.nn import functional as F
from ember.nn import init
from ember.nn.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# -- the time-step layout ------------------------------------------------------------------


class _Steps:
    """Where each time step's rows are in a 2-D ``(rows, features)`` sequence tensor.

    Padded input ``(T, B, F)`` is viewed as ``(T * B, F)`` with ``B`` rows per step; a
    :class:`PackedSequence`'s ``data`` has ``batch_sizes[t]`` rows at step ``t`` (the
    sequences still running, longest first). Step ``t`` is rows
    ``offsets[t] : offsets[t] + sizes[t]``; the recurrent state always has ``batch`` rows,
    of which a step updates the first ``sizes[t]`` (the others keep their state: finished
    sequences their last one, sequences not yet started in the reverse direction their
    initial one).
    """

    __slots__ = ("sizes", "offsets", "batch", "count", "padded", "strided")

    def __init__(self, sizes: list[int]) -> None:
        # (strided: the first layer's input is PyTorch's transposed batch_first tensor of
        # half floats, whose projection it computes as a matmul, then the bias added)
        self.strided = False
        self.sizes = sizes
        self.offsets = []
        total = 0
        for size in sizes:
            self.offsets.append(total)
            total += size
        self.batch = sizes[0] if sizes else 0
        self.count = len(sizes)
        self.padded = all(size == self.batch for size in sizes)  # every step has B rows

    def rows(self, x: Tensor, t: int) -> Tensor:
        off = self.offsets[t]
        return x[off:off + self.sizes[t]]

    def order(self, reverse: bool) -> range:
        return range(self.count - 1, -1, -1) if reverse else range(self.count)


def _active(state: Tensor | None, size: int, batch: int) -> Tensor | None:
    """The rows of the state that a step with `size` rows updates."""
    return state if state is None or size == batch else state[:size]


def _merge(new: Tensor, state: Tensor, size: int, batch: int) -> Tensor:
    """The state after a step that updated its first `size` rows to `new`."""
    return new if size == batch else ember.cat([new, state[size:]])


# -- one step of each cell, with differentiable ops -------------------------------------
# Used by the cell modules and by the op-by-op recomputation for double backward.


def _lstm_cell(x_proj: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None,
               w_hr: Tensor | None) -> tuple[Tensor, Tensor]:
    gates = x_proj + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
    h = ember.sigmoid(o) * ember.tanh(c)
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _gru_cell(x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    gh = F.linear(h, w_hh, b_hh)
    xr, xz, xn = x_proj.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r = ember.sigmoid(xr + hr)
    z = ember.sigmoid(xz + hz)
    n = ember.tanh(xn + r * hn)
    return n + z * (h - n)


def _rnn_cell(x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None,
              relu: bool) -> Tensor:
    pre = x_proj + F.linear(h, w_hh, b_hh)
    return ember.relu(pre) if relu else ember.tanh(pre)


def _reference_layer(mode: str, reverse: bool, steps: _Steps, x: Tensor, h: Tensor,
                     c: Tensor | None, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                     b_hh: Tensor | None, w_hr: Tensor | None) -> tuple:
    """One direction of one layer, op by op (every op recorded by autograd)."""
    xp = ember.matmul(x, w_ih.t()) + b_ih if steps.strided and b_ih is not None else \
        F.linear(x, w_ih, b_ih)
    batch = steps.batch
    outs: list[Any] = [None] * steps.count
    for t in steps.order(reverse):
        size = steps.sizes[t]
        h_act = _active(h, size, batch)
        if mode == "LSTM":
            h_new, c_new = _lstm_cell(steps.rows(xp, t), h_act, _active(c, size, batch), w_hh,
                                      b_hh, w_hr)
            c = _merge(c_new, c, size, batch)
        elif mode == "GRU":
            h_new = _gru_cell(steps.rows(xp, t), h_act, w_hh, b_hh)
        else:
            h_new = _rnn_cell(steps.rows(xp, t), h_act, w_hh, b_hh, mode == "RNN_RELU")
        h = _merge(h_new, h, size, batch)
        outs[t] = h_new
    out = ember.cat(outs)
    return (out, h, c) if mode == "LSTM" else (out, h)


_HALF_FLOATS = (ember.float16, ember.bfloat16)


# -- fast forward passes (no graph), keeping what backward needs ------------------------
# `x` is the (rows, input) sequence of `steps`; outputs are (rows, hidden) in the same
# layout. Per-step tensors are kept in lists indexed by time step (whatever the direction)
# and joined with one `cat` when backward needs them for all steps at once.


def _bias_sum(a: Tensor | None, b: Tensor | None) -> Tensor | None:
    if a is None:
        return b
    return a if b is None else a + b


def _fused_lstm_kernels() -> tuple:
    """The backend-fusable LSTM cell ops of core (ember.core.ops.nn):

    ``_fused_lstm_cell(input_gates, hidden_gates, cx) -> (hy, cy, workspace)`` and
    ``_fused_lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace)
    -> (grad_gates, grad_cx)`` (``grad_cy`` may be None), with ``workspace`` the activated
    gates ``[i, f, g, o]``: one op each per time step instead of ~10.
    """
    return _nnops._fused_lstm_cell, _nnops._fused_lstm_cell_backward


class _FusedLayer:
    """What a backend's whole-layer LSTM or GRU kernel saved for backward (opaque here)."""

    __slots__ = ("state",)

    def __init__(self, state: Any) -> None:
        self.state = state


def _lstm_forward(steps: _Steps, x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None, b_hh: Tensor | None, w_hr: Tensor | None,
                  reverse: bool, keep: bool) -> tuple:
    if w_hr is None and steps.padded and steps.count and steps.batch:
        # the backend may run the whole layer in one kernel (see _fused_lstm_layer)
        layer = _nnops._fused_lstm_layer(x, h, c, w_ih, w_hh, _bias_sum(b_ih, b_hh),
                                        reverse, keep)
        if layer is not None:
            return (*layer[:3], _FusedLayer(layer[3]))
    hid = w_hh.shape[0] // 4
    batch = steps.batch
    xp = F.linear(x, w_ih, _bias_sum(b_ih, b_hh))
    whh_t = w_hh.t()
    whr_t = None if w_hr is None else w_hr.t()
    fused = _fused_lstm_kernels()
    n = steps.count
    outs: list[Any] = [None] * n
    # kept for backward: the states each step started from (h, c), and
    # without fused kernels: sigmoid of all four gate pre-activations (slot g unused),
    # tanh(g), c_t, tanh(c_t); with them: the kernel's workspace and c_t; and o*tanh(c_t)
    # when the output is projected
    h_prev: list[Any] = [None] * n
    c_prev: list[Any] = [None] * n
    sig: list[Any] = [None] * n
    tg: list[Any] = [None] * n
    cs: list[Any] = [None] * n
    tcs: list[Any] = [None] * n
    hpre: list[Any] = [None] * n
    for t in steps.order(reverse):
        size = steps.sizes[t]
        h_act, c_act = _active(h, size, batch), _active(c, size, batch)
        if fused is not None:
            h_new, c_new, ws = fused[0](steps.rows(xp, t), ember.matmul(h_act, whh_t), c_act)
            if keep:
                sig[t] = ws
        else:
            # (plain slicing: the cheapest view op; the gates are (B, 4H) in i, f, g, o order)
            gates = steps.rows(xp, t) + ember.matmul(h_act, whh_t)
            a = ember.sigmoid(gates)
            g = ember.tanh(gates[:, 2 * hid:3 * hid])
            c_new = ember.addcmul(a[:, hid:2 * hid] * c_act, a[:, :hid], g)
            tc = ember.tanh(c_new)
            h_new = a[:, 3 * hid:] * tc
            if keep:
                sig[t], tg[t], tcs[t] = a, g, tc
        if keep:
            h_prev[t], c_prev[t], cs[t] = h_act, c_act, c_new
        if whr_t is not None:
            if keep:
                hpre[t] = h_new
            h_new = ember.matmul(h_new, whr_t)
        outs[t] = h_new
        h, c = _merge(h_new, h, size, batch), _merge(c_new, c, size, batch)
    saved = (h_prev, c_prev, sig, tg, cs, tcs, hpre, fused is not None)
    return ember.cat(outs), h, c, saved


def _gru_forward(steps: _Steps, x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor,
                 b_ih: Tensor | None, b_hh: Tensor | None, reverse: bool, keep: bool) -> tuple:
    if steps.padded and steps.count and steps.batch:
        # the backend may run the whole layer in one kernel (see _fused_gru_layer)
        layer = _nnops._fused_gru_layer(x, h, w_ih, w_hh, b_ih, b_hh, reverse, keep)
        if layer is not None:
            return layer[0], layer[1], _FusedLayer(layer[2])
    hid = w_hh.shape[0] // 3
    batch = steps.batch
    # b_hh's r and z parts add to the input projection; its n part stays inside r * (.)
    if b_hh is not None:
        b_x = ember.cat([b_hh[:2 * hid], ember.zeros_like(b_hh[:hid])])
        b_x = b_x if b_ih is None else b_ih + b_x
        b_hn = b_hh[2 * hid:]
    else:
        b_x, b_hn = b_ih, None
    xp = F.linear(x, w_ih, b_x)
    whh_t = w_hh.t()
    n_steps = steps.count
    outs: list[Any] = [None] * n_steps
    h_prev: list[Any] = [None] * n_steps
    rzs: list[Any] = [None] * n_steps
    ns: list[Any] = [None] * n_steps
    hns: list[Any] = [None] * n_steps
    for t in steps.order(reverse):
        size = steps.sizes[t]
        h_act = _active(h, size, batch)
        xt = steps.rows(xp, t)
        gh = ember.matmul(h_act, whh_t)
        rz = ember.sigmoid(xt[:, :2 * hid] + gh[:, :2 * hid])
        hn = gh[:, 2 * hid:]
        if b_hn is not None:
            hn = hn + b_hn
        n = ember.tanh(ember.addcmul(xt[:, 2 * hid:], rz[:, :hid], hn))
        h_new = ember.addcmul(n, rz[:, hid:], h_act - n)
        if keep:
            h_prev[t], rzs[t], ns[t], hns[t] = h_act, rz, n, hn
        outs[t] = h_new
        h = _merge(h_new, h, size, batch)
    return ember.cat(outs), h, (h_prev, rzs, ns, hns)


def _rnn_forward(steps: _Steps, x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor,
                 b_ih: Tensor | None, b_hh: Tensor | None, relu: bool, reverse: bool,
                 keep: bool) -> tuple:
    batch = steps.batch
    xp = F.linear(x, w_ih, _bias_sum(b_ih, b_hh))
    whh_t = w_hh.t()
    act = ember.relu if relu else ember.tanh
    outs: list[Any] = [None] * steps.count
    h_prev: list[Any] = [None] * steps.count
    for t in steps.order(reverse):
        size = steps.sizes[t]
        h_act = _active(h, size, batch)
        h_new = act(steps.rows(xp, t) + ember.matmul(h_act, whh_t))
        if keep:
            h_prev[t] = h_act
        outs[t] = h_new
        h = _merge(h_new, h, size, batch)
    return ember.cat(outs), h, (h_prev,)


# -- backward through time ---------------------------------------------------------------


class _Carry:
    """The gradient flowing back into the full-batch recurrent state."""

    __slots__ = ("grad", "batch")

    def __init__(self, grad: Tensor | None, batch: int) -> None:
        self.grad, self.batch = grad, batch

    def take(self, size: int) -> Tensor | None:
        """The gradient of the rows a step updated."""
        return _active(self.grad, size, self.batch)

    def give(self, grad_prev: Tensor, size: int) -> None:
        """Set the gradient of the state the step started from."""
        if size == self.batch:
            self.grad = grad_prev
        elif self.grad is None:  # the rows the step did not touch get no gradient
            rest = ember.zeros(self.batch - size, *grad_prev.shape[1:], dtype=grad_prev.dtype,
                               device=grad_prev.device)
            self.grad = ember.cat([grad_prev, rest])
        else:
            self.grad = ember.cat([grad_prev, self.grad[size:]])


def _step_grad(steps: _Steps, t: int, d_out: Tensor | None, carry: _Carry,
               like: Tensor) -> Tensor:
    """The total gradient of a step's output: from the layer's output and from later steps."""
    dh = carry.take(steps.sizes[t])
    if d_out is not None:
        dh = steps.rows(d_out, t) if dh is None else steps.rows(d_out, t) + dh
    if dh is None:  # no gradient reaches h here (e.g. only c_n is used)
        dh = ember.zeros(steps.sizes[t], like.shape[1], dtype=like.dtype, device=like.device)
    return dh


def _weight_grads(needs: tuple, x: Tensor, w_ih: Tensor, d_in: Tensor, prev: Tensor,
                  d_rec: Tensor) -> tuple:
    """Gradients of x, W_ih, W_hh, b_ih, b_hh from the per-row gate gradients.

    ``d_in`` (rows, G) is the gradient of the input projection, ``d_rec`` that of
    ``h @ W_hh^T + b_hh``, ``prev`` the (rows, H) states each step started from.
    ``needs`` flags (x, w_ih, w_hh, b_ih, b_hh).
    """
    dx = ember.matmul(d_in, w_ih) if needs[0] else None
    dw_ih = ember.matmul(d_in.t(), x) if needs[1] else None
    dw_hh = ember.matmul(d_rec.t(), prev) if needs[2] else None
    db_ih = d_in.sum(0) if needs[3] else None
    db_hh = d_rec.sum(0) if needs[4] else None
    return dx, dw_ih, dw_hh, db_ih, db_hh


def _lstm_backward(ctx: Any, d_out: Tensor | None, d_hn: Tensor | None,
                   d_cn: Tensor | None) -> tuple:
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, out = ctx.saved_tensors
    needs = ctx.needs_input_grad
    if isinstance(ctx.saved_steps, _FusedLayer):
        dx, dw_ih, dw_hh, db, dh0, dc0 = _nnops._fused_lstm_layer_backward(
            x, ctx.saved_steps.state, d_out, d_hn, d_cn,
            (needs[3], needs[6], needs[7], needs[8] or needs[9], needs[4], needs[5]))
        return (None, None, None, dx, dh0, dc0, dw_ih, dw_hh, db if needs[8] else None,
                db if needs[9] else None, None)
    h_prev, c_prev, sig, tg, cs, tcs, hpre, was_fused = ctx.saved_steps
    steps, reverse = ctx.steps, ctx.reverse
    hid = w_hh.shape[0] // 4
    fused = _fused_lstm_kernels() if was_fused else None
    if fused is None:
        # every per-step factor of the backward pass, for all steps at once
        a, g, tc, cp = ember.cat(sig), ember.cat(tg), ember.cat(tcs), ember.cat(c_prev)
        i, f, o = a[:, :hid], a[:, hid:2 * hid], a[:, 3 * hid:]
        k = o * (1 - tc * tc)                              # dc += dh * k
        p = ember.cat([g * i * (1 - i), cp * f * (1 - f),  # d(gates) = [dc,dc,dc,dh] * p
                       i * (1 - g * g), tc * o * (1 - o)], 1)
    n = steps.count
    d_gates: list[Any] = [None] * n
    d_hs: list[Any] = [None] * n
    dh_carry, dc_carry = _Carry(d_hn, steps.batch), _Carry(d_cn, steps.batch)
    for t in steps.order(not reverse):
        size = steps.sizes[t]
        dh = _step_grad(steps, t, d_out, dh_carry, out)
        if w_hr is not None:
            d_hs[t] = dh
            dh = ember.matmul(dh, w_hr)
        dc_in = dc_carry.take(size)
        if fused is not None:
            dg, dc_prev = fused[1](dh, dc_in, c_prev[t], cs[t], sig[t])
        else:
            k_t = steps.rows(k, t)
            dc = dh * k_t if dc_in is None else ember.addcmul(dc_in, dh, k_t)
            dg = ember.cat([dc, dc, dc, dh], 1) * steps.rows(p, t)
            dc_prev = dc * steps.rows(f, t)
        dh_carry.give(ember.matmul(dg, w_hh), size)
        dc_carry.give(dc_prev, size)
        d_gates[t] = dg
    dgates = ember.cat(d_gates)
    dx, dw_ih, dw_hh, db_ih, db_hh = _weight_grads(
        (needs[3], needs[6], needs[7], needs[8], needs[9]), x, w_ih, dgates,
        ember.cat(h_prev), dgates)
    dw_hr = None
    if w_hr is not None and needs[10]:
        dw_hr = ember.matmul(ember.cat(d_hs).t(), ember.cat(hpre))
    return (None, None, None, dx, dh_carry.grad if needs[4] else None,
            dc_carry.grad if needs[5] else None, dw_ih, dw_hh, db_ih, db_hh, dw_hr)


def _gru_backward(ctx: Any, d_out: Tensor | None, d_hn: Tensor | None) -> tuple:
    x, h0, _, w_ih, w_hh, b_ih, b_hh, _, out = ctx.saved_tensors
    needs = ctx.needs_input_grad
    if isinstance(ctx.saved_steps, _FusedLayer):
        dx, dw_ih, dw_hh, db_ih, db_hh, dh0 = _nnops._fused_gru_layer_backward(
            x, ctx.saved_steps.state, d_out, d_hn,
            (needs[3], needs[6], needs[7], needs[8], needs[9], needs[4]))
        return None, None, None, dx, dh0, None, dw_ih, dw_hh, db_ih, db_hh, None
    h_prev, rzs, ns, hns = ctx.saved_steps
    steps, reverse = ctx.steps, ctx.reverse
    hid = w_hh.shape[0] // 3
    rz, n, hn, prev = ember.cat(rzs), ember.cat(ns), ember.cat(hns), ember.cat(h_prev)
    r, z = rz[:, :hid], rz[:, hid:]
    k_n = (1 - z) * (1 - n * n)          # d(n pre-activation) = dh * k_n
    k_z = (prev - n) * z * (1 - z)       # d(z pre-activation) = dh * k_z
    k_r = hn * r * (1 - r)               # d(r pre-activation) = d(n pre) * k_r
    d_in: list[Any] = [None] * steps.count
    d_rec: list[Any] = [None] * steps.count
    carry = _Carry(d_hn, steps.batch)
    for t in steps.order(not reverse):
        dh = _step_grad(steps, t, d_out, carry, out)
        dn = dh * steps.rows(k_n, t)
        dr = dn * steps.rows(k_r, t)
        dz = dh * steps.rows(k_z, t)
        d_in[t] = ember.cat([dr, dz, dn], 1)
        dgh = ember.cat([dr, dz, dn * steps.rows(r, t)], 1)
        d_rec[t] = dgh
        carry.give(ember.addcmul(ember.matmul(dgh, w_hh), dh, steps.rows(z, t)),
                   steps.sizes[t])
    dx, dw_ih, dw_hh, db_ih, db_hh = _weight_grads(
        (needs[3], needs[6], needs[7], needs[8], needs[9]), x, w_ih, ember.cat(d_in),
        prev, ember.cat(d_rec))
    return (None, None, None, dx, carry.grad if needs[4] else None, None,
            dw_ih, dw_hh, db_ih, db_hh, None)


def _rnn_backward(ctx: Any, d_out: Tensor | None, d_hn: Tensor | None) -> tuple:
    x, h0, _, w_ih, w_hh, b_ih, b_hh, _, out = ctx.saved_tensors
    (h_prev,) = ctx.saved_steps
    steps, reverse = ctx.steps, ctx.reverse
    deriv = (out > 0).to(out.dtype) if ctx.mode == "RNN_RELU" else 1 - out * out
    d_pre: list[Any] = [None] * steps.count
    carry = _Carry(d_hn, steps.batch)
    for t in steps.order(not reverse):
        dp = _step_grad(steps, t, d_out, carry, out) * steps.rows(deriv, t)
        carry.give(ember.matmul(dp, w_hh), steps.sizes[t])
        d_pre[t] = dp
    needs = ctx.needs_input_grad
    dp_all = ember.cat(d_pre)
    dx, dw_ih, dw_hh, db_ih, db_hh = _weight_grads(
        (needs[3], needs[6], needs[7], needs[8], needs[9]), x, w_ih, dp_all,
        ember.cat(h_prev), dp_all)
    return (None, None, None, dx, carry.grad if needs[4] else None, None,
            dw_ih, dw_hh, db_ih, db_hh, None)


def _forward_impl(mode: str, reverse: bool, steps: _Steps, x: Tensor, h0: Tensor,
                  c0: Tensor | None, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                  b_hh: Tensor | None, w_hr: Tensor | None, keep: bool) -> tuple:
    """((output, h_n[, c_n]), saved per-step tensors) of one direction of one layer."""
    if mode == "LSTM":
        out, h, c, saved = _lstm_forward(steps, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr,
                                         reverse, keep)
        return (out, h, c), saved
    if mode == "GRU":
        out, h, saved = _gru_forward(steps, x, h0, w_ih, w_hh, b_ih, b_hh, reverse, keep)
    else:
        out, h, saved = _rnn_forward(steps, x, h0, w_ih, w_hh, b_ih, b_hh,
                                     mode == "RNN_RELU", reverse, keep)
    return (out, h), saved


class _RecurrentLayer(Function):
    """One direction of one recurrent layer as a single autograd node.

    ``forward(ctx, mode, reverse, steps, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)`` with
    ``x`` the ``(rows, input)`` sequence laid out by ``steps``; returns ``(output, h_n)``
    or ``(output, h_n, c_n)``.
    """

    @staticmethod
    def forward(ctx: Any, mode: str, reverse: bool, steps: _Steps, x: Tensor, h0: Tensor,
                c0: Tensor | None, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                b_hh: Tensor | None, w_hr: Tensor | None) -> tuple:
        ctx.mode, ctx.reverse, ctx.steps = mode, reverse, steps
        ctx.set_materialize_grads(False)
        result, ctx.saved_steps = _forward_impl(mode, reverse, steps, x, h0, c0, w_ih, w_hh,
                                                b_ih, b_hh, w_hr, True)
        ctx._release_with_graph = ("saved_steps",)  # kept while the graph is retained
        # `out.detach()` shares storage and version counter: saving it keeps the in-place
        # check without a reference cycle through the output's own graph node
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, result[0].detach())
        return result

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple:
        if ember.is_grad_enabled():
            return _double_backward(ctx, grads)
        if ctx.mode == "LSTM":
            result = _lstm_backward(ctx, *grads)
        elif ctx.mode == "GRU":
            result = _gru_backward(ctx, *grads)
        else:
            result = _rnn_backward(ctx, *grads)
        return result


def _double_backward(ctx: Any, grads: tuple) -> tuple:
    """Backward under ``create_graph=True``: recompute the layer with recorded ops and
    differentiate that, so the returned gradients are themselves differentiable."""
    saved = ctx.saved_tensors[:8]
    needs = ctx.needs_input_grad[3:]
    with ember.enable_grad():
        outs = _reference_layer(ctx.mode, ctx.reverse, ctx.steps, *saved)
    pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o is not None]
    wrt = [t for t, need in zip(saved, needs) if need]
    result: list[Any] = [None] * 8
    if pairs and wrt:
        got = ember.autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs],
                                  create_graph=True, allow_unused=True)
        it = iter(got)
        for k, need in enumerate(needs):
            if need:
                result[k] = next(it)
    return (None, None, None, *result)


def _run_layer(mode: str, reverse: bool, steps: _Steps, x: Tensor, h0: Tensor,
               c0: Tensor | None, weights: tuple) -> tuple:
    args = (x, h0, c0) + weights
    if _fw.active and _fw.tangents_of(args) is not None or x.dtype in _HALF_FLOATS:
        # forward-mode AD: the layer op by op, each op giving its output's tangent (the
        # fused kernels' custom Function has no forward formula); half floats: op by op
        # too, each op rounded as PyTorch's CPU cells round it
        return _reference_layer(mode, reverse, steps, *args)
    if ember.is_grad_enabled() and any(t is not None and t.requires_grad for t in args):
        return _RecurrentLayer.apply(mode, reverse, steps, *args)
    with ember.no_grad():
        return _forward_impl(mode, reverse, steps, *args, False)[0]


# -- modules ------------------------------------------------------------------------------


def _run_layers(mode: str, weights: list[tuple], num_layers: int, num_directions: int,
                dropout: float, training: bool, steps: _Steps, x: Tensor, h0: Tensor,
                c0: Tensor | None) -> tuple:
    """Every layer and direction on the ``(rows, input_size)`` sequence laid out by
    `steps`, ``weights[layer * num_directions + direction]`` being (w_ih, w_hh, b_ih,
    b_hh, w_hr), any but the first two None; returns (output rows, h_n, c_n or None).
    nn's recurrent modules and the torch.lstm-style functions both run this."""
    h_n: list[Tensor] = []
    c_n: list[Tensor] = []
    for layer in range(num_layers):
        outs = []
        for direction in range(num_directions):
            k = layer * num_directions + direction
            result = _run_layer(mode, direction == 1, steps, x, h0[k],
                                None if c0 is None else c0[k], weights[k])
            outs.append(result[0])
            h_n.append(result[1])
            if c0 is not None:
                c_n.append(result[2])
        x = outs[0] if num_directions == 1 else ember.cat(outs, 1)
        steps.strided = False  # (later layers read the stacked, contiguous outputs)
        if dropout > 0 and training and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    return x, ember.stack(h_n), ember.stack(c_n) if c0 is not None else None


class RNNBase(Module):
    r"""Base class of :class:`RNN`, :class:`LSTM` and :class:`GRU`: the parameters of every
    layer and direction, their initialisation, input checks and the layer loop.

    Parameters are named as PyTorch names them (``weight_ih_l{k}``, ``weight_hh_l{k}``,
    ``bias_ih_l{k}``, ``bias_hh_l{k}``, ``weight_hr_l{k}`` for a projected LSTM, with the
    suffix ``_reverse`` for the backward direction), so ``state_dict`` keys match.

    Args:
        mode: ``'LSTM'``, ``'GRU'``, ``'RNN_TANH'`` or ``'RNN_RELU'``.
        input_size: the number of expected features in the input ``x``.
        hidden_size: the number of features in the hidden state ``h``.
        num_layers: number of stacked recurrent layers. Default: 1
        bias: if ``False``, the layers use no bias weights. Default: ``True``
        batch_first: if ``True``, input and output are ``(batch, seq, feature)`` instead
            of ``(seq, batch, feature)``. Default: ``False``
        dropout: if non-zero, a Dropout layer with this probability on the outputs of each
            layer except the last (in training). Default: 0
        bidirectional: if ``True``, each layer runs both ways. Default: ``False``
        proj_size: LSTM only: project the hidden state to this size. Default: 0
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1

        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: "
                            f"{type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size

        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else \
                    real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                params = [(f"weight_ih_l{layer}{suffix}", (gate_size, layer_input_size)),
                          (f"weight_hh_l{layer}{suffix}", (gate_size, real_hidden_size))]
                if bias:
                    params += [(f"bias_ih_l{layer}{suffix}", (gate_size,)),
                               (f"bias_hh_l{layer}{suffix}", (gate_size,))]
                if proj_size > 0:
                    params += [(f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size))]
                for name, shape in params:
                    setattr(self, name, Parameter(ember.empty(shape, device=device,
                                                              dtype=dtype)))
                names = [name for name, _ in params]
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        r"""The parameters of each layer and direction, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        r"""Kept for PyTorch compatibility (cuDNN's packed weights): a no-op in ember."""

    def reset_parameters(self) -> None:
        r"""Initialise every weight and bias from :math:`\mathcal{U}(-k, k)`,
        :math:`k = 1/\sqrt{\text{hidden\_size}}`."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        dtype = self._flat_weights[0].dtype
        if input.dtype != dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({dtype}). Convert input: input.to({dtype}), or convert model: "
                             f"model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got "
                               f"{input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor,
                                 batch_sizes: Tensor | None) -> tuple[int, int, int]:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor,
                           batch_sizes: Tensor | None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # -- the layer loop ---------------------------------------------------------------

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None) -> Tensor:
        r"""Reorder the batch of a hidden state (for a PackedSequence sorted by length)."""
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    def _run(self, steps: _Steps, x: Tensor, h0: Tensor, c0: Tensor | None) -> tuple:
        """Run every layer on the ``(rows, input_size)`` sequence laid out by `steps`;
        returns (output rows, h_n, c_n or None)."""
        num_directions = 2 if self.bidirectional else 1
        # by attribute, not from _parameters: a parametrization (orthogonal, weight_norm) or
        # a plain tensor set in a parameter's place (weight drop) is what the layer uses
        params = dict(zip(self._flat_weights_names, self._flat_weights))
        weights = []
        for layer in range(self.num_layers):
            for suffix in ("", "_reverse")[:num_directions]:
                tag = f"l{layer}{suffix}"
                weights.append((params["weight_ih_" + tag], params["weight_hh_" + tag],
                                params.get("bias_ih_" + tag), params.get("bias_hh_" + tag),
                                params.get("weight_hr_" + tag)))
        return _run_layers(self.mode, weights, self.num_layers, num_directions, self.dropout,
                           self.training, steps, x, h0, c0)

    def _run_padded(self, input: Tensor, h0: Tensor, c0: Tensor | None) -> tuple:
        """`_run` on a batched ``(T, B, F)`` (``(B, T, F)``) input tensor."""
        x = input.transpose(0, 1) if self.batch_first else input
        length, batch = x.shape[0], x.shape[1]
        rows = x.reshape(length * batch, x.shape[2])  # (not -1: the batch may be empty)
        steps = _Steps([batch] * length)
        steps.strided = self.batch_first and x.dtype in _HALF_FLOATS
        out, h_n, c_n = self._run(steps, rows, h0, c0)
        out = named_view(out, (length, batch, out.shape[1]), self._output_node(x))
        return (out.transpose(0, 1) if self.batch_first else out), h_n, c_n

    def _output_node(self, x: Tensor) -> str:
        """The name of the output's node in PyTorch on the CPU: the cat of the directions,
        oneDNN's LSTM layer (float32, no projections), or the stack of the steps."""
        if self.bidirectional:
            return "CatBackward0"
        if self.mode == "LSTM" and not self.proj_size and x.dtype is ember.float32 \
                and x.device.type == "cpu" and x.numel():
            return "MkldnnRnnLayerBackward0"
        return "StackBackward0"

    def _run_packed(self, input: PackedSequence, h0: Tensor, c0: Tensor | None) -> tuple:
        """`_run` on a PackedSequence (``h0``/``c0`` already in its sorted batch order)."""
        steps = _Steps([int(v) for v in input.batch_sizes.tolist()])
        out, h_n, c_n = self._run(steps, input.data, h0, c0)
        output = PackedSequence(out, input.batch_sizes, input.sorted_indices,
                                input.unsorted_indices)
        h_n = RNNBase.permute_hidden(self, h_n, input.unsorted_indices)
        if c_n is not None:
            c_n = RNNBase.permute_hidden(self, c_n, input.unsorted_indices)
        return output, h_n, c_n


class RNN(RNNBase):
    r"""A multi-layer Elman RNN with tanh or ReLU non-linearity:
    :math:`h_t = \tanh(x_t W_{ih}^T + b_{ih} + h_{t-1} W_{hh}^T + b_{hh})`.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional:
            as in :class:`RNNBase`.
        nonlinearity: ``'tanh'`` or ``'relu'``. Default: ``'tanh'``

    Inputs: ``input, hx`` -- ``input`` ``(L, N, H_in)`` (``(N, L, H_in)`` with
    ``batch_first``), unbatched ``(L, H_in)``, or a
    :class:`~ember.nn.utils.rnn.PackedSequence` of variable-length sequences; ``hx``
    ``(D * num_layers, N, H_out)`` or ``(D * num_layers, H_out)``, zeros if not given.

    Outputs: ``output, h_n`` -- ``(L, N, D * H_out)`` (a PackedSequence for packed input)
    and ``(D * num_layers, N, H_out)``: each sequence's state after its last step.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return _forward_single_state(self, input, hx, "RNN")


class GRU(RNNBase):
    r"""A multi-layer gated recurrent unit (GRU) RNN, PyTorch's formulation:

    .. math::
        r_t = \sigma(W_{ir} x_t + b_{ir} + W_{hr} h_{t-1} + b_{hr}) \\
        z_t = \sigma(W_{iz} x_t + b_{iz} + W_{hz} h_{t-1} + b_{hz}) \\
        n_t = \tanh(W_{in} x_t + b_{in} + r_t \odot (W_{hn} h_{t-1} + b_{hn})) \\
        h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}

    Gates are stacked in the order (r, z, n) in ``weight_ih_l{k}`` / ``weight_hh_l{k}``.
    Arguments, inputs and outputs as in :class:`RNN` (no ``nonlinearity``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return _forward_single_state(self, input, hx, "GRU")


def _forward_single_state(module: RNNBase, input: Tensor | PackedSequence, hx: Tensor | None,
                          name: str) -> tuple[Any, Tensor]:
    num_directions = 2 if module.bidirectional else 1
    if isinstance(input, PackedSequence):
        if hx is None:
            hx = ember.zeros(module.num_layers * num_directions, int(input.batch_sizes[0]),
                             module.hidden_size, dtype=input.data.dtype,
                             device=input.data.device)
        else:
            hx = module.permute_hidden(hx, input.sorted_indices)
        module.check_forward_args(input.data, hx, input.batch_sizes)
        output, h_n, _ = module._run_packed(input, hx, None)
        return output, h_n
    if input.dim() not in (2, 3):
        raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                         + ("tensor instead" if name == "RNN" else "instead"))
    is_batched = input.dim() == 3
    batch_dim = 0 if module.batch_first else 1
    if not is_batched:
        input = input.unsqueeze(batch_dim)
        if hx is not None:
            if hx.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{hx.dim()}-D tensor")
            hx = hx.unsqueeze(1)
    elif hx is not None and hx.dim() != 3:
        raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                           f"{hx.dim()}-D tensor")
    if hx is None:
        hx = ember.zeros(module.num_layers * num_directions, input.size(batch_dim),
                         module.hidden_size, dtype=input.dtype, device=input.device)
    module.check_forward_args(input, hx, None)
    if hx.dtype != input.dtype:  # PyTorch's cell multiplies hx by the weights first: its words
        names = _dt.SCALAR_TYPE_NAMES
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{names[hx.dtype.name]} and {names[input.dtype.name]}")
    output, h_n, _ = module._run_padded(input, hx, None)
    if not is_batched:
        output = output.squeeze(batch_dim)
        h_n = h_n.squeeze(1)
    return output, h_n


class LSTM(RNNBase):
    r"""A multi-layer long short-term memory (LSTM) RNN, PyTorch's formulation:

    .. math::
        i_t = \sigma(W_{ii} x_t + b_{ii} + W_{hi} h_{t-1} + b_{hi}) \\
        f_t = \sigma(W_{if} x_t + b_{if} + W_{hf} h_{t-1} + b_{hf}) \\
        g_t = \tanh(W_{ig} x_t + b_{ig} + W_{hg} h_{t-1} + b_{hg}) \\
        o_t = \sigma(W_{io} x_t + b_{io} + W_{ho} h_{t-1} + b_{ho}) \\
        c_t = f_t \odot c_{t-1} + i_t \odot g_t \\
        h_t = o_t \odot \tanh(c_t)

    Gates are stacked in the order (i, f, g, o). With ``proj_size > 0``,
    :math:`h_t = W_{hr}(o_t \odot \tanh(c_t))`.

    Inputs: ``input, (h_0, c_0)`` -- as in :class:`RNN`; ``c_0`` has ``hidden_size``
    features. Outputs: ``output, (h_n, c_n)``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor,
                               batch_sizes: Tensor | None) -> tuple[int, int, int]:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: tuple[Tensor, Tensor],  # type: ignore[override]
                           batch_sizes: Tensor | None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: tuple[Tensor, Tensor],  # type: ignore[override]
                       permutation: Tensor | None) -> tuple[Tensor, Tensor]:
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def _zero_state(self, batch: int, like: Tensor) -> tuple[Tensor, Tensor]:
        num_directions = 2 if self.bidirectional else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        h0 = ember.zeros(self.num_layers * num_directions, batch, real_hidden_size,
                         dtype=like.dtype, device=like.device)
        c0 = ember.zeros(self.num_layers * num_directions, batch, self.hidden_size,
                         dtype=like.dtype, device=like.device)
        return h0, c0

    def forward(self, input: Tensor | PackedSequence,  # type: ignore[override]
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Any, tuple[Tensor, Tensor]]:
        if isinstance(input, PackedSequence):
            if hx is None:
                hx = self._zero_state(int(input.batch_sizes[0]), input.data)
            else:
                hx = self.permute_hidden(hx, input.sorted_indices)
            self.check_forward_args(input.data, hx, input.batch_sizes)
            output, h_n, c_n = self._run_packed(input, hx[0], hx[1])
            return output, (h_n, c_n)
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        if hx is None:
            h0, c0 = self._zero_state(input.size(batch_dim), input)
        else:
            h0, c0 = hx[0], hx[1]  # (indexed, as PyTorch reads them: a tensor is rows)
            if is_batched:
                if h0.dim() != 3 or c0.dim() != 3:
                    raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D "
                                       f"but got ({h0.dim()}-D, {c0.dim()}-D) tensors")
            else:
                if h0.dim() != 2 or c0.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be "
                                       f"2-D but got ({h0.dim()}-D, {c0.dim()}-D) tensors")
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        self.check_forward_args(input, (h0, c0), None)
        output, h_n, c_n = self._run_padded(input, h0, c0)
        if not is_batched:
            output = output.squeeze(batch_dim)
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


# -- cells --------------------------------------------------------------------------------


class RNNCellBase(Module):
    r"""Base class of the single-step cells: ``weight_ih`` ``(chunks * hidden, input)``,
    ``weight_hh`` ``(chunks * hidden, hidden)``, ``bias_ih``/``bias_hh``
    ``(chunks * hidden)``, all from :math:`\mathcal{U}(-1/\sqrt{hidden}, 1/\sqrt{hidden})`.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(ember.empty((num_chunks * hidden_size, input_size),
                                               device=device, dtype=dtype))
        self.weight_hh = Parameter(ember.empty((num_chunks * hidden_size, hidden_size),
                                               device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ember.empty(num_chunks * hidden_size, device=device,
                                                 dtype=dtype))
            self.bias_hh = Parameter(ember.empty(num_chunks * hidden_size, device=device,
                                                 dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        r"""Initialise every weight and bias from :math:`\mathcal{U}(-k, k)`,
        :math:`k = 1/\sqrt{\text{hidden\_size}}`."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, name: str, input: Tensor, hx: Any) -> bool:
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        return input.dim() == 2

    def _zeros(self, input: Tensor) -> Tensor:
        return ember.zeros(input.size(0), self.hidden_size, dtype=input.dtype,
                           device=input.device)

    def _check(self, input: Tensor, *hxs: Tensor) -> None:
        """PyTorch's cell kernels' checks of the (batched) input and hidden states."""
        if input.size(1) != self.weight_ih.size(1):
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} "
                               f"expected {self.weight_ih.size(1)}")
        for label, hx in enumerate(hxs):
            if input.size(0) != hx.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden"
                                   f"{label} batch size {hx.size(0)}")
            if hx.size(1) != self.weight_hh.size(1):
                raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got "
                                   f"{hx.size(1)}, expected {self.weight_hh.size(1)}")


class RNNCell(RNNCellBase):
    r"""An Elman RNN cell: :math:`h' = \tanh(W_{ih} x + b_{ih} + W_{hh} h + b_{hh})`
    (ReLU with ``nonlinearity='relu'``).

    Inputs: ``input`` ``(N, H_in)`` or ``(H_in)``; ``hidden`` ``(N, H_out)`` or
    ``(H_out)``, zeros if not given. Output: ``h'`` of the hidden's shape.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        is_batched = self._batched("RNNCell", input, hx)
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D "
                             "instead")
        if not is_batched:
            input = input.unsqueeze(0)
        hx = self._zeros(input) if hx is None else (hx if is_batched else hx.unsqueeze(0))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._check(input, hx)
        ret = _rnn_cell(F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh,
                        self.bias_hh, self.nonlinearity == "relu")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    r"""A long short-term memory cell (gates i, f, g, o as in :class:`LSTM`).

    Inputs: ``input`` ``(N, H_in)`` or ``(H_in)``; ``(h_0, c_0)``, zeros if not given.
    Outputs: ``(h_1, c_1)``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        is_batched = self._batched("LSTMCell", input, hx)
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = self._zeros(input)
            hx = (zeros, zeros)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        self._check(input, hx[0], hx[1])
        h, c = _lstm_cell(F.linear(input, self.weight_ih, self.bias_ih), hx[0], hx[1],
                          self.weight_hh, self.bias_hh, None)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    r"""A gated recurrent unit cell (gates r, z, n as in :class:`GRU`).

    Inputs: ``input`` ``(N, H_in)`` or ``(H_in)``; ``hidden``, zeros if not given.
    Output: ``h'``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        is_batched = self._batched("GRUCell", input, hx)
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D "
                             "instead")
        if not is_batched:
            input = input.unsqueeze(0)
        hx = self._zeros(input) if hx is None else (hx if is_batched else hx.unsqueeze(0))
        self._check(input, hx)
        ret = _gru_cell(F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh,
                        self.bias_hh)
        return ret if is_batched else ret.squeeze(0)
