"""A whole LSTM layer (one direction, every time step) as one CPU kernel pair.

``ember.nn.LSTM`` otherwise runs one ``lstm_cell`` kernel and a recurrent matmul per time
step through the dispatcher; over a sequence, that per-step bookkeeping costs more than
the arithmetic. Here the time loop is plain NumPy on preallocated buffers.

Two layout choices make each step's ops few and contiguous:

- **Transposed state.** The state is kept as ``(H, B)`` and a step's gates as
  ``(4H, B)``, so each gate is one contiguous block of rows and ``W_hh @ h`` writes it
  directly. The input projection of all steps is one batched matmul into ``(T, 4H, B)``.
- **Gate order o, i, f, g with halved sigmoid rows.** ``sigmoid(z) = (tanh(z/2) + 1)/2``:
  scaling the o, i, f rows of the weights and bias by 1/2 up front turns a step's four
  activations into one ``tanh`` over all gates plus two affine ops on the first three
  blocks. In the backward pass, o is multiplied by ``dh`` and i, f, g by ``dc``:
  contiguous again.

The backward pass computes each step's gate-gradient factors for all steps at once
before its time loop (they depend only on the forward pass), so the loop is the carry:
five small elementwise ops and one matmul per step. The weight gradients are then one
GEMM each over all steps. The recurrent matmuls go straight to BLAS with ``beta = 1``,
adding into the precomputed input projection (forward) and into the output gradient
(backward) instead of a matmul and an add.

Where numba is available (compiled.py), float32 layers instead run the whole time loop
inside one compiled call each way (numba_kernels.py: ``lstm_layer_forward``,
``lstm_layer_backward``), in PyTorch's own layout: rows are (step, sample) pairs, the gates
(i, f, g, o) side by side in a row, so the input projection is one GEMM with no copies
around it, each step calls NumPy's OpenBLAS ``sgemm`` from compiled code (with ``beta =
1`` into the step's gate rows) followed by one pass over the step's gates, and ``h_t`` is
written straight into the layer output. The forward pass keeps only what backward reads,
as PyTorch does: the activated gates and ``c`` of every step (``tanh(c)`` is recomputed);
the backward pass writes the gate gradients over the gates, then forms the weight
gradients as a few GEMMs over all steps (``W_hh``'s against the output itself, shifted by
one step). The NumPy path below stays for float64, ``EMBER_NUMBA=0`` and a missing numba.

PyTorch's gate order (i, f, g, o) is kept at the interface: inputs, outputs and
gradients are in PyTorch's layout, ``x`` and ``out`` are time-major ``(T * B, F)`` rows.

Half precision (float16, bfloat16: autocast's LSTM) runs the same loops in float32 and
returns results in the inputs' dtype: NumPy has no fast half-precision kernels, and
PyTorch's CPU kernels accumulate half-precision LSTMs in float32 as well.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backends.cpu import blas, compiled
from ember.core.backend import backward_retains_graph, bfloat16, float16, numpy_dtype

_HALF = (numpy_dtype(float16), numpy_dtype(bfloat16))

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS enums


class SavedState:
    """What a recurrent layer's forward pass keeps for its backward pass (the subclasses
    name the fields in ``__slots__``); opaque to core."""

    __slots__ = ()

    def __init__(self, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self, name, value)


class _Saved(SavedState):
    """The NumPy path's: the forward activations, in its layout."""

    __slots__ = ("x_in", "reverse", "w_ih", "w_hh", "perm", "acts", "hs", "cs", "tcs",
                 "low")  # the inputs' dtype when they were half precision, else None


class _SavedCompiled(SavedState):
    """The compiled path's: every step's activated gates and c (its own buffers), and
    references to the forward's inputs and output."""

    __slots__ = ("x", "w_ih", "w_hh", "h0", "acts", "cs", "out", "reverse", "low")


def _gate_order(hidden: int) -> np.ndarray:
    """Row indices of PyTorch's (i, f, g, o) weights in the kernel's (o, i, f, g) order."""
    h = hidden
    return np.concatenate([np.arange(3 * h, 4 * h), np.arange(0, 3 * h)])


def lstm_layer(x, w_ih, w_hh, bias, h0, c0, reverse=False, keep=True):
    """Run an LSTM layer over a padded, time-major sequence (last step first if
    ``reverse``).

    ``x`` (T*B, I), ``w_ih`` (4H, I), ``w_hh`` (4H, H), ``bias`` (4H,) or None (b_ih +
    b_hh), ``h0``/``c0`` (B, H). Returns ``(out (T*B, H), h_n, c_n, saved)``; ``saved``
    (None unless ``keep``) is opaque and only read by :func:`lstm_layer_backward`.
    """
    low = x.dtype if x.dtype in _HALF else None
    if low is not None:  # computed in float32, returned in the inputs' dtype
        x, w_ih, w_hh, bias, h0, c0 = (None if a is None else a.astype(np.float32)
                                       for a in (x, w_ih, w_hh, bias, h0, c0))
    compiled_layers = compiled.recurrent_layers(x.dtype)
    if compiled_layers is not None:
        out, h_n, c_n, saved = _compiled_forward(compiled_layers, x, w_ih, w_hh, bias, h0, c0,
                                                 reverse, keep, low)
    else:
        out, h_n, c_n, saved = _numpy_forward(x, w_ih, w_hh, bias, h0, c0, reverse, keep, low)
    results = out, h_n, c_n
    if low is not None:
        results = tuple(r.astype(low) for r in results)
    return (*results, saved)


def _compiled_forward(layers: tuple, x, w_ih, w_hh, bias, h0, c0, reverse, keep, low):
    """The forward pass as one compiled time loop (float32; see the module docstring)."""
    module, gemm, int_kind = layers
    batch, hidden = h0.shape
    steps = x.shape[0] // batch
    x = np.ascontiguousarray(x)
    w_hh = np.ascontiguousarray(w_hh)
    h0 = np.ascontiguousarray(h0)
    acts = np.matmul(x, w_ih.T)  # (T*B, 4H): every step's input projection, one GEMM
    if bias is None:
        bias = np.zeros(4 * hidden, x.dtype)
    cs = np.empty(((steps + 1) * batch, hidden), x.dtype)  # c0 in the slot before step 0
    c_first = slice(steps * batch, None) if reverse else slice(0, batch)
    cs[c_first] = c0
    out = np.empty((steps * batch, hidden), x.dtype)
    with blas.serial_gemms(2 * batch * 4 * hidden * hidden):  # each step's GEMM
        module.lstm_layer_forward(gemm, int_kind, np.ascontiguousarray(w_hh.T),
                                  np.ascontiguousarray(bias), h0, acts, cs, out, reverse)
    last = slice(0, batch) if reverse else slice(steps * batch, None)
    h_n = out[:batch] if reverse else out[(steps - 1) * batch:]
    saved = _SavedCompiled(x=x, w_ih=w_ih, w_hh=w_hh, h0=h0, acts=acts, cs=cs, out=out,
                           reverse=reverse, low=low) if keep else None
    return out, h_n.copy(), cs[last].copy(), saved


def _numpy_forward(x, w_ih, w_hh, bias, h0, c0, reverse, keep, low):
    """The forward pass on NumPy, time step by time step (see the module docstring)."""
    batch, hidden = h0.shape
    steps = x.shape[0] // batch
    dt = x.dtype  # (core passes every array in this dtype: the BLAS calls rely on it)
    perm = _gate_order(hidden)
    half = np.ones((4 * hidden, 1), dtype=dt)
    half[:3 * hidden] = 0.5  # the sigmoid gates o, i, f take z / 2
    w_hh_p = w_hh[perm]
    w_hh_s = w_hh_p * half
    xs = x.reshape(steps, batch, -1)
    if reverse:
        xs = xs[::-1]
    # (T, 4H, B): every step's input projection, each step one contiguous block. The bias
    # rides in the same batched matmul as a column of W_ih against a row of ones.
    w_in = w_ih if bias is None else np.concatenate([w_ih, bias[:, None]], axis=1)
    x_in = np.empty((steps, w_in.shape[1], batch), dtype=dt)
    x_in[:, :x.shape[1]] = xs.transpose(0, 2, 1)
    x_in[:, x.shape[1]:] = 1
    acts = np.matmul(w_in[perm] * half, x_in)
    hs = np.empty((steps + 1, hidden, batch), dtype=dt)
    cs = np.empty((steps + 1, hidden, batch), dtype=dt)
    tcs = np.empty((steps, hidden, batch), dtype=dt)
    hs[0], cs[0] = h0.T, c0.T
    tmp = np.empty((4 * hidden, batch), dtype=dt)
    ig = tmp[:hidden]
    h3 = 3 * hidden
    gemm = blas.gemm_fn(dt)
    # raw addresses for the BLAS calls (taking one from an array costs more than the add)
    p_w, p_h, p_a = w_hh_s.ctypes.data, hs.ctypes.data, acts.ctypes.data
    step_h, step_a = hs.strides[0], acts.strides[0]
    for t in range(steps):
        a = acts[t]
        if gemm is not None:  # a += W_hh @ h in one call (BLAS's beta = 1)
            gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, 4 * hidden, batch, hidden, 1.0, p_w,
                 hidden, p_h + t * step_h, batch, 1.0, p_a + t * step_a, batch)
        else:
            np.matmul(w_hh_s, hs[t], out=tmp)
            a += tmp
        np.tanh(a, out=a)
        sig = a[:h3]
        sig *= 0.5
        sig += 0.5
        o, i, f, g = a[:hidden], a[hidden:2 * hidden], a[2 * hidden:h3], a[h3:]
        c = cs[t + 1]
        np.multiply(f, cs[t], out=c)
        np.multiply(i, g, out=ig)
        c += ig
        np.tanh(c, out=tcs[t])
        np.multiply(o, tcs[t], out=hs[t + 1])
    outs = hs[1:].transpose(0, 2, 1)
    out = np.ascontiguousarray(outs[::-1] if reverse else outs).reshape(steps * batch, hidden)
    saved = _Saved(x_in=x_in, reverse=reverse, w_ih=w_ih, w_hh=w_hh_p, perm=perm,
                   acts=acts, hs=hs, cs=cs, tcs=tcs, low=low) if keep else None
    return out, np.ascontiguousarray(hs[-1].T), np.ascontiguousarray(cs[-1].T), saved


def _step_factors(s: _Saved, hidden: int) -> tuple[np.ndarray, np.ndarray]:
    """For all steps: P (T, 4H, B) with d(gates) = [dh, dc, dc, dc] * P, and K (T, H, B)
    with dc += dh * K."""
    h, h3 = hidden, 3 * hidden
    a = s.acts
    o, i, g = a[:, :h], a[:, h:2 * h], a[:, h3:]
    tc, c_prev = s.tcs, s.cs[:-1]
    p = np.empty_like(a)
    po, pi, pf, pg = p[:, :h], p[:, h:2 * h], p[:, 2 * h:h3], p[:, h3:]
    sig = p[:, :h3]             # s(1 - s) for the three sigmoid gates at once
    np.subtract(1, a[:, :h3], out=sig)
    sig *= a[:, :h3]
    po *= tc                    # o' = tanh(c) * o(1 - o)
    pi *= g                     # i' = g * i(1 - i)
    pf *= c_prev                # f' = c_prev * f(1 - f)
    np.multiply(g, g, out=pg)   # g' = i * (1 - g^2)
    np.subtract(1, pg, out=pg)
    pg *= i
    k = np.multiply(tc, tc)     # dc/dh = o * (1 - tanh(c)^2)
    np.subtract(1, k, out=k)
    k *= o
    return p, k


def lstm_layer_backward(saved, grad_out, grad_hn, grad_cn, needs=(True,) * 6):
    """Gradients of :func:`lstm_layer` for (x, w_ih, w_hh, bias, h0, c0), each None when
    ``needs`` says so; ``grad_out``/``grad_hn``/``grad_cn`` may be None (zero)."""
    s = saved
    if s.low is not None:  # the forward ran in float32
        grad_out, grad_hn, grad_cn = (None if g is None else g.astype(np.float32)
                                      for g in (grad_out, grad_hn, grad_cn))
    if isinstance(s, _SavedCompiled):
        grads = _compiled_backward(s, grad_out, grad_hn, grad_cn, needs)
    else:
        grads = _numpy_backward(s, grad_out, grad_hn, grad_cn, needs)
    if s.low is not None:
        grads = tuple(None if g is None else g.astype(s.low) for g in grads)
    return grads


def _compiled_backward(s: _SavedCompiled, grad_out, grad_hn, grad_cn, needs):
    """The backward pass as one compiled time loop, then the weight gradients as GEMMs over
    all steps. The gate gradients overwrite the saved gates (each step reads its own
    gates before writing their gradients), so `s` serves one backward pass, unless the
    graph is retained (then they overwrite a copy)."""
    if s.acts is None:
        raise RuntimeError("lstm_layer_backward: this layer's saved activations were freed by "
                           "an earlier backward pass")
    layers = compiled.recurrent_layers(s.acts.dtype)
    if layers is None:  # numba failed since the forward pass
        raise RuntimeError(f"lstm_layer_backward: the compiled LSTM kernels are no longer "
                           f"available ({compiled.unavailable})")
    module, gemm, int_kind = layers
    batch, hidden = s.h0.shape
    rows = s.out.shape[0]
    dt = s.acts.dtype
    grad_out = np.zeros((rows, hidden), dt) if grad_out is None else \
        np.ascontiguousarray(grad_out, dtype=dt)
    dh = np.zeros((batch, hidden), dt) if grad_hn is None else np.array(grad_hn, dtype=dt)
    dc = np.zeros((batch, hidden), dt) if grad_cn is None else np.array(grad_cn, dtype=dt)
    retained = backward_retains_graph()  # a later backward pass needs the saved gates
    dg = s.acts.copy() if retained else s.acts
    with blas.serial_gemms(2 * batch * 4 * hidden * hidden):  # each step's GEMM
        module.lstm_layer_backward(gemm, int_kind, s.w_hh, dg, s.cs, grad_out, dh, dc, s.reverse)
    if not retained:
        s.acts = s.cs = None
    dx = np.matmul(dg, s.w_ih) if needs[0] else None
    dw_ih = np.matmul(dg.T, s.x) if needs[1] else None
    dw_hh = recurrent_weight_grad(dg, s.out, s.h0, s.reverse) if needs[2] else None
    db = np.matmul(np.ones(rows, dt), dg) if needs[3] else None  # (a gemv: 2x the sum)
    return (dx, dw_ih, dw_hh, db, dh if needs[4] else None, dc if needs[5] else None)


def recurrent_weight_grad(d_rec: np.ndarray, out: np.ndarray, h0: np.ndarray,
                          reverse: bool) -> np.ndarray:
    """``W_hh``'s gradient, the sum over steps of ``d_rec[t]^T @ h_{t-1}``, from the
    recurrent pre-activations' gradients `d_rec` (T*B, G*H) and the layer output `out`
    (T*B, H): h_{t-1} is the output one step earlier (h0 for the first step), so it is two
    GEMMs over shifted row blocks and no copy."""
    batch = h0.shape[0]
    rows = out.shape[0]
    first = slice(rows - batch, None) if reverse else slice(0, batch)
    later = slice(0, rows - batch) if reverse else slice(batch, None)
    earlier = slice(batch, None) if reverse else slice(0, rows - batch)
    grad = np.matmul(d_rec[later].T, out[earlier])
    grad += np.matmul(d_rec[first].T, h0)
    return grad


def _numpy_backward(s: _Saved, grad_out, grad_hn, grad_cn, needs):
    """The backward pass on NumPy, time step by time step."""
    steps, four_h, batch = s.acts.shape
    hidden = four_h // 4
    dt = s.acts.dtype
    p, k = _step_factors(s, hidden)
    f = s.acts[:, 2 * hidden:3 * hidden]
    # (4H, T, B): step t writes column block t, and the weight gradients below read all
    # steps as one (4H, T*B) matrix without a transposing copy
    dgates = np.empty((four_h, steps, batch), dtype=dt)
    # dh_t, the gradient reaching step t's output: the layer output's gradient plus what
    # step t+1 sends back (W_hh^T @ its gate gradients, added by BLAS's beta = 1)
    if grad_out is None:
        dhs = np.zeros((steps, hidden, batch), dt)
    else:
        d_out = grad_out.reshape(steps, batch, hidden).transpose(0, 2, 1)
        # always a copy (the loop accumulates into it), even where the transpose is free
        dhs = np.array(d_out[::-1] if s.reverse else d_out, dtype=dt, order="C")
    if grad_hn is not None:
        dhs[-1] += grad_hn.T
    dc = np.zeros((hidden, batch), dt) if grad_cn is None else \
        np.array(grad_cn.T, dtype=dt, order="C")  # a copy: the loop writes into it
    w_t = s.w_hh.T
    gemm = blas.gemm_fn(dt)
    p_w, p_d, p_dh = s.w_hh.ctypes.data, dgates.ctypes.data, dhs.ctypes.data
    step_d, step_dh = dgates.strides[1], dhs.strides[0]
    tmp = np.empty((hidden, batch), dtype=dt)
    dh0 = np.empty((hidden, batch), dtype=dt)
    for t in range(steps - 1, -1, -1):
        d = dgates[:, t]  # (4H, B), rows T*B apart
        dh = dhs[t]
        np.multiply(dh, k[t], out=tmp)
        dc += tmp
        pt = p[t]
        np.multiply(pt[:hidden], dh, out=d[:hidden])
        np.multiply(pt[hidden:].reshape(3, hidden, batch), dc,
                    out=d[hidden:].reshape(3, hidden, batch))
        dc *= f[t]
        if t == 0:
            np.matmul(w_t, d, out=dh0)
        elif gemm is not None:
            gemm(_ROW_MAJOR, _TRANS, _NO_TRANS, hidden, batch, four_h, 1.0, p_w, hidden,
                 p_d + t * step_d, steps * batch, 1.0, p_dh + (t - 1) * step_dh, batch)
        else:
            dhs[t - 1] += w_t @ d
    # (4H, T*B): column t*B + n is step t, sample n, the row order of x
    dg = dgates.reshape(four_h, steps * batch)
    inverse = np.argsort(s.perm)
    dx = None
    if needs[0]:
        dx = np.matmul(dg.T, s.w_ih[s.perm]).reshape(steps, batch, -1)
        dx = np.ascontiguousarray(dx[::-1] if s.reverse else dx).reshape(steps * batch, -1)
    dw_ih = db = None
    if needs[1] or needs[3]:
        # the forward's [x, 1] columns as rows: the bias gradient is dg @ [x, 1]'s last column
        inputs = s.w_ih.shape[1]
        rows = s.x_in.transpose(0, 2, 1).reshape(steps * batch, -1)
        dw_in = np.matmul(dg, rows)[inverse]
        dw_ih = np.ascontiguousarray(dw_in[:, :inputs]) if needs[1] else None
        db = np.ascontiguousarray(dw_in[:, inputs]) if needs[3] else None
    dw_hh = None
    if needs[2]:
        h_prev = np.ascontiguousarray(s.hs[:-1].transpose(1, 0, 2)).reshape(hidden, -1)
        dw_hh = np.matmul(dg, h_prev.T)[inverse]
    dh0 = np.ascontiguousarray(dh0.T) if needs[4] else None
    dc0 = np.ascontiguousarray(dc.T) if needs[5] else None
    return dx, dw_ih, dw_hh, db, dh0, dc0


KERNELS = {"lstm_layer": lstm_layer, "lstm_layer_backward": lstm_layer_backward}
