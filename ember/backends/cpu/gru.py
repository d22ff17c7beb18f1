"""A whole GRU layer (one direction, every time step) as one compiled CPU kernel pair.

The GRU counterpart of lstm.py's compiled path (see its docstring): rows are (step,
sample) pairs in the sequence's own order, gates (r, z, n) side by side; the input
projection is one GEMM; each step is one ``sgemm`` (``h @ W_hh^T``) called from compiled
code plus one pass over its gates (numba_kernels.py: ``gru_layer_forward``,
``gru_layer_backward``). Saved for backward, as PyTorch's GRU does: r, z, n and
``h W_hn^T + b_hn`` of every step; the backward pass writes its gate gradients over them
and forms the weight gradients as GEMMs over all steps.

Only float32 (and half precision, computed in float32) runs here: elsewhere, or without
numba, the kernel returns Nones and ``ember.nn.GRU`` runs step by step on the dispatcher.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu import blas, compiled
from ember.backends.cpu.lstm import SavedState, recurrent_weight_grad
from ember.core.backend import backward_retains_graph, bfloat16, float16, numpy_dtype

_HALF = (numpy_dtype(float16), numpy_dtype(bfloat16))
_F32 = np.dtype(np.float32)


class _Saved(SavedState):
    """What the backward pass reads: every step's r, z, n and ``h W_hn^T + b_hn`` (the
    kernel's own buffers), and references to the forward's inputs and output."""

    __slots__ = ("x", "w_ih", "w_hh", "h0", "acts", "hns", "out", "reverse", "low")


def gru_layer(x, w_ih, w_hh, b_ih, b_hh, h0, reverse=False, keep=True):
    """Run a GRU layer over a padded, time-major sequence (last step first if
    ``reverse``): ``x`` (T*B, I), ``w_ih`` (3H, I), ``w_hh`` (3H, H), ``b_ih``/``b_hh``
    (3H,) or None, ``h0`` (B, H). Returns ``(out (T*B, H), h_n, saved)``, ``saved`` (None
    unless ``keep``) read only by :func:`gru_layer_backward`; or ``(None, None, None)``
    where the compiled kernels do not run (the caller then runs the layer step by step)."""
    low = x.dtype if x.dtype in _HALF else None
    layers = compiled.recurrent_layers(_F32 if low is not None else x.dtype)
    if layers is None:
        return None, None, None
    if low is not None:  # computed in float32, returned in the inputs' dtype
        x, w_ih, w_hh, b_ih, b_hh, h0 = (None if a is None else a.astype(_F32)
                                         for a in (x, w_ih, w_hh, b_ih, b_hh, h0))
    module, gemm, int_kind = layers
    batch, hidden = h0.shape
    dt = x.dtype
    x = np.ascontiguousarray(x)
    w_hh = np.ascontiguousarray(w_hh)
    zeros = np.zeros(3 * hidden, dt)
    acts = np.matmul(x, w_ih.T)  # (T*B, 3H): every step's input projection, one GEMM
    hns = np.empty((x.shape[0], hidden), dt)
    out = np.empty((x.shape[0], hidden), dt)
    h = np.array(h0, dtype=dt)  # the state, updated in place: h_n at the end
    with blas.serial_gemms(2 * batch * 3 * hidden * hidden):  # each step's GEMM
        module.gru_layer_forward(gemm, int_kind, np.ascontiguousarray(w_hh.T),
                                 zeros if b_ih is None else np.ascontiguousarray(b_ih),
                                 zeros if b_hh is None else np.ascontiguousarray(b_hh),
                                 h, np.empty((batch, 3 * hidden), dt), acts, hns, out, reverse)
    saved = _Saved(x=x, w_ih=w_ih, w_hh=w_hh, h0=np.ascontiguousarray(h0, dtype=dt),
                   acts=acts, hns=hns, out=out, reverse=reverse, low=low) if keep else None
    if low is not None:
        out, h = out.astype(low), h.astype(low)
    return out, h, saved


def gru_layer_backward(saved, grad_out, grad_hn, needs=(True,) * 6):
    """Gradients of :func:`gru_layer` for (x, w_ih, w_hh, b_ih, b_hh, h0), each None where
    ``needs`` says so; ``grad_out``/``grad_hn`` may be None (zero). The gate gradients
    overwrite the saved activations, so `saved` serves one backward pass, unless the graph
    is retained."""
    s = saved
    if s.acts is None:
        raise RuntimeError("gru_layer_backward: this layer's saved activations were freed by "
                           "an earlier backward pass")
    layers = compiled.recurrent_layers(_F32)
    if layers is None:  # numba failed since the forward pass
        raise RuntimeError(f"gru_layer_backward: the compiled GRU kernels are no longer "
                           f"available ({compiled.unavailable})")
    module, gemm, int_kind = layers
    batch, hidden = s.h0.shape
    dt = s.acts.dtype
    grad_out = np.zeros(s.out.shape, dt) if grad_out is None else \
        np.ascontiguousarray(grad_out, dtype=dt)
    dh = np.zeros((batch, hidden), dt) if grad_hn is None else np.array(grad_hn, dtype=dt)
    # r, z and h W_hn^T's gradients, and the input's n part, over the saved activations
    # (over a copy while the graph is retained: a later backward pass needs them)
    if backward_retains_graph():
        d_rec, d_in_n = s.acts.copy(), s.hns.copy()
    else:
        d_rec, s.acts = s.acts, None
        d_in_n, s.hns = s.hns, None
    with blas.serial_gemms(2 * batch * 3 * hidden * hidden):  # each step's GEMM
        module.gru_layer_backward(gemm, int_kind, s.w_hh, s.h0, d_rec, d_in_n, s.out, grad_out,
                                  dh, s.reverse)
    h2 = 2 * hidden
    dx = None
    if needs[0]:
        dx = np.matmul(d_rec[:, :h2], s.w_ih[:h2])
        dx += np.matmul(d_in_n, s.w_ih[h2:])
    dw_ih = None
    if needs[1]:
        dw_ih = np.empty(s.w_ih.shape, dt)
        np.matmul(d_rec[:, :h2].T, s.x, out=dw_ih[:h2])
        np.matmul(d_in_n.T, s.x, out=dw_ih[h2:])
    dw_hh = recurrent_weight_grad(d_rec, s.out, s.h0, s.reverse) if needs[2] else None
    db_ih = np.concatenate([d_rec[:, :h2].sum(axis=0), d_in_n.sum(axis=0)]) \
        if needs[3] else None
    db_hh = d_rec.sum(axis=0) if needs[4] else None
    grads = dx, dw_ih, dw_hh, db_ih, db_hh, dh if needs[5] else None
    if s.low is not None:
        grads = tuple(None if g is None else g.astype(s.low) for g in grads)
    return grads


KERNELS = {"gru_layer": gru_layer, "gru_layer_backward": gru_layer_backward}
