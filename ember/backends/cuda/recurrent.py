"""The LSTM on CUDA: a cell forward and backward as one kernel each, and a whole layer
with its time loop in the backend (the fused `lstm_layer` kernels, as the CPU has).

The shared xp kernels (ember/backends/xp/fused.py) run a cell as about 14 CuPy calls
forward and 22 backward; on a GPU each call costs a launch and CuPy's Python around it
(~8 us on the H200), so a 50-step sequence spent ~30 ms on the host for a few hundred
microseconds of arithmetic (bench_cuda.py's LSTM row). Here a cell is one
`cupy.ElementwiseKernel` over the (batch, hidden) cells that reads a cell's four gate
pre-activations from the (batch, 4 * hidden) rows in PyTorch's order (i, f, g, o) and
writes the activated gates, c and h, with the sigmoid written as the shared code writes
it (0.5 * tanh(x / 2) + 0.5), so the two agree to rounding.

The whole layer (`lstm_layer`, `lstm_layer_backward`) then takes ember's dispatch out of
the loop as well: the input projection of all steps is one GEMM, and each step is one
cuBLAS GEMM and one cell kernel, forward and backward, on buffers allocated once; the
backward writes each step's gate gradients over its saved gates, and the weight
gradients are a few GEMMs over all steps. Rows are (step, sample) pairs, time-major, as
the contract says (x and out are (T * B, features)).

Cells compute in float32 or float64; half-precision layers (autocast) run in float32 and
return their dtype (PyTorch accumulates them in float32 too), half-precision cells keep
the shared kernels.
"""

from __future__ import annotations

from typing import Any

import cupy

from ember.core.backend import backward_retains_graph

_FLOATS = (cupy.dtype(cupy.float32), cupy.dtype(cupy.float64))

_forward = cupy.ElementwiseKernel(
    "raw T ig, raw T hg, T cx, int64 H", "T hy, T cy, raw T ws",
    """
    const long long k = (i / H) * 4 * H + i % H;  // the cell's i gate in its (4H) row
    const T half = T(0.5);
    const T gi = half * tanh(half * (ig[k] + hg[k])) + half;
    const T gf = half * tanh(half * (ig[k + H] + hg[k + H])) + half;
    const T gg = tanh(ig[k + 2 * H] + hg[k + 2 * H]);
    const T go = half * tanh(half * (ig[k + 3 * H] + hg[k + 3 * H])) + half;
    ws[k] = gi; ws[k + H] = gf; ws[k + 2 * H] = gg; ws[k + 3 * H] = go;
    cy = gf * cx + gi * gg;
    hy = go * tanh(cy);
    """, "ember_lstm_cell")

_backward = cupy.ElementwiseKernel(
    "raw T ws, T ghy, T gcy, T cx, T cy, int64 H, bool has_gcy", "raw T grad, T gcx",
    """
    const long long k = (i / H) * 4 * H + i % H;
    const T one = T(1);
    const T gi = ws[k], gf = ws[k + H], gg = ws[k + 2 * H], go = ws[k + 3 * H];
    const T t = tanh(cy);
    T gc = ghy * go * (one - t * t);
    if (has_gcy) gc += gcy;
    grad[k] = gc * gg * (gi * (one - gi));
    grad[k + H] = gc * cx * (gf * (one - gf));
    grad[k + 2 * H] = gc * gi * (one - gg * gg);
    grad[k + 3 * H] = ghy * t * (go * (one - go));
    gcx = gc * gf;
    """, "ember_lstm_cell_backward")


# a layer's step: `gates` holds the step's input projection (bias included) on entry and
# its activated gates on exit; `hg` is h_{t-1} @ W_hh^T
_layer_forward = cupy.ElementwiseKernel(
    "raw T hg, T cx, int64 H", "T hy, T cy, raw T gates",
    """
    const long long k = (i / H) * 4 * H + i % H;
    const T half = T(0.5);
    const T gi = half * tanh(half * (gates[k] + hg[k])) + half;
    const T gf = half * tanh(half * (gates[k + H] + hg[k + H])) + half;
    const T gg = tanh(gates[k + 2 * H] + hg[k + 2 * H]);
    const T go = half * tanh(half * (gates[k + 3 * H] + hg[k + 3 * H])) + half;
    gates[k] = gi; gates[k + H] = gf; gates[k + 2 * H] = gg; gates[k + 3 * H] = go;
    cy = gf * cx + gi * gg;
    hy = go * tanh(cy);
    """, "ember_lstm_layer_step")

# its backward: the step's gates are replaced by their pre-activations' gradients, `dc`
# (the gradient reaching c_t on entry) by the one reaching c_{t-1}
_layer_backward = cupy.ElementwiseKernel(
    "T gout, T dh, T cx, T cy, int64 H", "raw T gates, T dc",
    """
    const long long k = (i / H) * 4 * H + i % H;
    const T one = T(1);
    const T gi = gates[k], gf = gates[k + H], gg = gates[k + 2 * H], go = gates[k + 3 * H];
    const T t = tanh(cy);
    const T d_h = gout + dh;
    const T d_c = dc + d_h * go * (one - t * t);
    gates[k] = d_c * gg * (gi * (one - gi));
    gates[k + H] = d_c * cx * (gf * (one - gf));
    gates[k + 2 * H] = d_c * gi * (one - gg * gg);
    gates[k + 3 * H] = d_h * t * (go * (one - go));
    dc = d_c * gf;
    """, "ember_lstm_layer_step_backward")


class SavedLayer:
    """What `lstm_layer` keeps for its backward (opaque to core): the inputs, every step's
    activated gates and c, and the output."""

    __slots__ = ("x", "w_ih", "w_hh", "h0", "acts", "cs", "out", "reverse", "low")

    def __init__(self, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self, name, value)


def _step_rows(step: int, steps: int, batch: int, reverse: bool) -> tuple[slice, slice, slice]:
    """The rows of time step `step` (in the loop's order) in x/out, and of c_{t-1} and c_t
    in the (T + 1) * B rows of c (c0 first, or last if `reverse`)."""
    t = steps - 1 - step if reverse else step
    prev, now = (t + 1, t) if reverse else (t, t + 1)
    return (slice(t * batch, (t + 1) * batch), slice(prev * batch, (prev + 1) * batch),
            slice(now * batch, (now + 1) * batch))


def lstm_layer(x: Any, w_ih: Any, w_hh: Any, bias: Any, h0: Any, c0: Any, reverse: bool = False,
               keep: bool = True) -> tuple:
    """The contract's `lstm_layer` (see ember/core/ops/nn.py): (out, h_n, c_n, saved)."""
    low = None if x.dtype in _FLOATS else x.dtype
    if low is not None:  # computed in float32, returned in the inputs' dtype
        x, w_ih, w_hh, bias, h0, c0 = (None if a is None else a.astype(cupy.float32)
                                       for a in (x, w_ih, w_hh, bias, h0, c0))
    batch, hidden = h0.shape
    steps = x.shape[0] // batch
    acts = cupy.matmul(x, w_ih.T)  # (T*B, 4H): every step's input projection
    if bias is not None:
        acts += bias
    cs = cupy.empty(((steps + 1) * batch, hidden), x.dtype)
    cs[slice(steps * batch, None) if reverse else slice(0, batch)] = c0
    out = cupy.empty((steps * batch, hidden), x.dtype)
    hg = cupy.empty((batch, 4 * hidden), x.dtype)
    w_hh_t = w_hh.T
    h = h0
    for step in range(steps):
        rows, c_prev, c_now = _step_rows(step, steps, batch, reverse)
        cupy.matmul(h, w_hh_t, out=hg)
        h = out[rows]
        _layer_forward(hg, cs[c_prev], hidden, h, cs[c_now], acts[rows])
    last = slice(0, batch) if reverse else slice(steps * batch, None)
    h_n = (out[:batch] if reverse else out[(steps - 1) * batch:]).copy()
    c_n = cs[last].copy()
    saved = SavedLayer(x=x, w_ih=w_ih, w_hh=w_hh, h0=h0, acts=acts, cs=cs, out=out,
                       reverse=reverse, low=low) if keep else None
    results = (out, h_n, c_n)
    if low is not None:
        results = tuple(r.astype(low) for r in results)
    return (*results, saved)


def lstm_layer_backward(saved: SavedLayer, grad_out: Any, grad_hn: Any, grad_cn: Any,
                        needs: tuple = (True,) * 6) -> tuple:
    """The contract's `lstm_layer_backward`: (dx, dw_ih, dw_hh, dbias, dh0, dc0), None
    where `needs` says so. The gate gradients overwrite the saved gates, unless the graph
    is retained (a later backward pass reads them again)."""
    s = saved
    if s.acts is None:
        raise RuntimeError("lstm_layer_backward: this layer's saved activations were freed by "
                           "an earlier backward pass")
    dt = s.acts.dtype
    batch, hidden = s.h0.shape
    rows_total = s.out.shape[0]
    steps = rows_total // batch

    def own(g: Any, shape: tuple) -> Any:
        return cupy.zeros(shape, dt) if g is None else cupy.array(g, dtype=dt)
    dh, dc = own(grad_hn, (batch, hidden)), own(grad_cn, (batch, hidden))
    zeros = cupy.zeros((batch, hidden), dt)
    retained = backward_retains_graph()
    dg = s.acts.copy() if retained else s.acts
    cs = s.cs  # (only read)
    if not retained:
        s.acts = s.cs = None
    for step in range(steps):
        rows, c_prev, c_now = _step_rows(steps - 1 - step, steps, batch, s.reverse)
        gout = zeros if grad_out is None else grad_out[rows]
        _layer_backward(gout, dh, cs[c_prev], cs[c_now], hidden, dg[rows], dc)
        cupy.matmul(dg[rows], s.w_hh, out=dh)  # the gradient reaching h_{t-1}
    dx = cupy.matmul(dg, s.w_ih) if needs[0] else None
    dw_ih = cupy.matmul(dg.T, s.x) if needs[1] else None
    dw_hh = None
    if needs[2]:  # sum over steps of d_t^T h_{t-1}: h_{t-1} is the output one step earlier
        first = slice(rows_total - batch, None) if s.reverse else slice(0, batch)
        later = slice(0, rows_total - batch) if s.reverse else slice(batch, None)
        earlier = slice(batch, None) if s.reverse else slice(0, rows_total - batch)
        dw_hh = cupy.matmul(dg[later].T, s.out[earlier])
        dw_hh += cupy.matmul(dg[first].T, s.h0)
    db = dg.sum(axis=0) if needs[3] else None
    grads = (dx, dw_ih, dw_hh, db, dh if needs[4] else None, dc if needs[5] else None)
    if s.low is not None:
        grads = tuple(None if g is None else g.astype(s.low) for g in grads)
    return grads


def kernels(shared: dict[str, Any]) -> dict[str, Any]:
    """`lstm_cell`, `lstm_cell_backward` (falling back to the `shared` ones for half
    precision), `lstm_layer` and `lstm_layer_backward` for the kernel table."""
    shared_forward, shared_backward = shared["lstm_cell"], shared["lstm_cell_backward"]

    def lstm_cell(input_gates: Any, hidden_gates: Any, cx: Any) -> Any:
        if cx.dtype not in _FLOATS or not input_gates.dtype == hidden_gates.dtype == cx.dtype:
            return shared_forward(input_gates, hidden_gates, cx)
        batch, hidden = cx.shape
        ig = cupy.ascontiguousarray(input_gates)
        hg = cupy.ascontiguousarray(hidden_gates)
        hy = cupy.empty((batch, hidden), cx.dtype)
        cy = cupy.empty((batch, hidden), cx.dtype)
        gates = cupy.empty((batch, 4 * hidden), cx.dtype)
        if hy.size:
            _forward(ig, hg, cx, hidden, hy, cy, gates)
        return hy, cy, gates

    def lstm_cell_backward(grad_hy: Any, grad_cy: Any, cx: Any, cy: Any, gates: Any) -> Any:
        if cx.dtype not in _FLOATS or any(a is not None and a.dtype != cx.dtype
                                          for a in (grad_hy, grad_cy, cy, gates)):
            return shared_backward(grad_hy, grad_cy, cx, cy, gates)
        batch, hidden = cx.shape
        grad = cupy.empty((batch, 4 * hidden), cx.dtype)
        grad_cx = cupy.empty((batch, hidden), cx.dtype)
        if grad_cx.size:
            _backward(cupy.ascontiguousarray(gates), grad_hy,
                      cy if grad_cy is None else grad_cy, cx, cy, hidden, grad_cy is not None,
                      grad, grad_cx)
        return grad, grad_cx

    return {"lstm_cell": lstm_cell, "lstm_cell_backward": lstm_cell_backward,
            "lstm_layer": lstm_layer, "lstm_layer_backward": lstm_layer_backward}
