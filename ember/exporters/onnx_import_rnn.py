"""ONNX import converters: the recurrent layers RNN, GRU and LSTM, unrolled over time with
ember ops (so autograd sees every step).

ONNX's gate orders differ from PyTorch's: LSTM is (input, output, forget, cell), GRU is
(update, reset, hidden); weights are (directions, gates * hidden, features).
"""

from __future__ import annotations

from typing import Any

import ember
from ember.exporters.onnx_import_context import ImportContext
from ember.exporters.onnx_registry import importer

_ACTIVATIONS = {"Sigmoid": ember.sigmoid, "Tanh": ember.tanh, "Relu": ember.relu}


def _activations(ctx: ImportContext, default: list[str], directions: int) -> list[Any]:
    names = ctx.attr("activations") or default * directions
    for name in names:
        if name not in _ACTIVATIONS:
            raise ctx.fail(f"activation {name!r} is not supported ({', '.join(_ACTIVATIONS)} "
                           "are)", NotImplementedError)
    return [_ACTIVATIONS[n] for n in names]


def _recurrent(ctx: ImportContext, x: Any, w: Any, r: Any, b: Any, lens: Any, h0: Any,
               gates: int, default_acts: list[str], step: Any, c0: Any = None,
               peepholes: Any = None) -> Any:
    if lens is not None and len(set(ctx.ints(lens))) > 1:
        raise ctx.fail("sequence_lens of different lengths are not supported",
                       NotImplementedError)
    layout = ctx.attr("layout", 0)
    if layout:  # (batch, seq, features) -> (seq, batch, features)
        x = x.transpose(0, 1)
        h0 = h0.transpose(0, 1) if h0 is not None else None
        c0 = c0.transpose(0, 1) if c0 is not None else None
    direction = ctx.attr("direction", "forward")
    nd = 2 if direction == "bidirectional" else 1
    hidden = r.shape[-1]
    acts = _activations(ctx, default_acts, nd)
    per = len(acts) // nd
    seq, batch = x.shape[0], x.shape[1]
    clip = ctx.attr("clip")
    ys, hs, cs = [], [], []
    for d in range(nd):
        wb = b[d, :gates * hidden] if b is not None else None
        rb = b[d, gates * hidden:] if b is not None else None
        h = h0[d] if h0 is not None else ember.zeros(batch, hidden, dtype=x.dtype,
                                                     device=x.device)
        c = None
        if c0 is not None or gates == 4:
            c = c0[d] if c0 is not None else ember.zeros_like(h)
        xw = ember.matmul(x, w[d].t())  # all time steps at once
        if wb is not None:
            xw = xw + wb
        reverse = direction == "reverse" or d == 1
        order = range(seq - 1, -1, -1) if reverse else range(seq)
        outs = [None] * seq
        for t in order:
            extra = {"peep": peepholes[d]} if peepholes is not None else {}
            h, c = step(ctx, xw[t], h, c, r[d], rb, hidden, acts[d * per:(d + 1) * per],
                        clip, **extra)
            outs[t] = h
        ys.append(ember.stack(outs, 0))
        hs.append(h)
        cs.append(c)
    y = ember.stack(ys, 1)  # (seq, directions, batch, hidden)
    yh = ember.stack(hs, 0)
    yc = ember.stack(cs, 0) if gates == 4 else None
    if layout:
        y = y.permute(2, 0, 1, 3)
        yh = yh.transpose(0, 1)
        yc = yc.transpose(0, 1) if yc is not None else None
    return (y, yh, yc) if gates == 4 else (y, yh)


def _clip(v: Any, clip: Any) -> Any:
    return ember.clamp(v, -clip, clip) if clip is not None else v


def _rnn_step(ctx, xw, h, c, r, rb, hidden, acts, clip):  # noqa: ANN001, ANN202
    pre = xw + ember.matmul(h, r.t())
    if rb is not None:
        pre = pre + rb
    return acts[0](_clip(pre, clip)), None


def _gru_step(ctx, xw, h, c, r, rb, hidden, acts, clip):  # noqa: ANN001, ANN202
    f, g = acts
    xz, xr, xh = xw[:, :hidden], xw[:, hidden:2 * hidden], xw[:, 2 * hidden:]
    rz, rr, rh = r[:hidden], r[hidden:2 * hidden], r[2 * hidden:]
    bz = br = bh = 0
    if rb is not None:
        bz, br, bh = rb[:hidden], rb[hidden:2 * hidden], rb[2 * hidden:]
    z = f(_clip(xz + ember.matmul(h, rz.t()) + bz, clip))
    rg = f(_clip(xr + ember.matmul(h, rr.t()) + br, clip))
    if ctx.attr("linear_before_reset", 0):
        cand = g(_clip(xh + rg * (ember.matmul(h, rh.t()) + bh), clip))
    else:
        cand = g(_clip(xh + ember.matmul(rg * h, rh.t()) + bh, clip))
    return (1 - z) * cand + z * h, None


def _lstm_step(ctx, xw, h, c, r, rb, hidden, acts, clip, peep=None):  # noqa: ANN001, ANN202
    f, g, hact = acts
    pre = xw + ember.matmul(h, r.t())
    if rb is not None:
        pre = pre + rb
    pre = _clip(pre, clip)
    i, o, fg, cand = (pre[:, k * hidden:(k + 1) * hidden] for k in range(4))
    if peep is not None:  # peepholes (input, output, forget) look at the cell state
        pi, po, pf = peep[:hidden], peep[hidden:2 * hidden], peep[2 * hidden:]
        i, fg = i + pi * c, fg + pf * c
    gate_i = f(i)
    gate_f = 1 - gate_i if ctx.attr("input_forget", 0) else f(fg)
    c = gate_f * c + gate_i * g(cand)
    if peep is not None:
        o = o + po * c
    return f(o) * hact(c), c


@importer("RNN", since=7)
def _rnn(ctx: ImportContext, x: Any, w: Any, r: Any, b: Any = None, lens: Any = None,
         h0: Any = None) -> Any:
    return _recurrent(ctx, x, w, r, b, lens, h0, 1, ["Tanh"], _rnn_step)


@importer("GRU", since=7)
def _gru(ctx: ImportContext, x: Any, w: Any, r: Any, b: Any = None, lens: Any = None,
         h0: Any = None) -> Any:
    return _recurrent(ctx, x, w, r, b, lens, h0, 3, ["Sigmoid", "Tanh"], _gru_step)


@importer("LSTM", since=7)
def _lstm(ctx: ImportContext, x: Any, w: Any, r: Any, b: Any = None, lens: Any = None,
          h0: Any = None, c0: Any = None, p: Any = None) -> Any:
    return _recurrent(ctx, x, w, r, b, lens, h0, 4, ["Sigmoid", "Tanh", "Tanh"], _lstm_step,
                      c0, p)
