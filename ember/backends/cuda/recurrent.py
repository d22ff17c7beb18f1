"""The LSTM cell forward and backward as one CUDA kernel each (ember.nn.LSTM's step).

The shared xp kernels (ember/backends/xp/fused.py) run a cell as about 14 CuPy calls
forward and 22 backward; on a GPU each call costs a launch and CuPy's Python around it
(~8 us on the H200), so a 50-step sequence spent ~30 ms on the host for a few hundred
microseconds of arithmetic (bench_cuda.py's LSTM row). Here each is one
`cupy.ElementwiseKernel` over the (batch, hidden) cells that reads a cell's four gate
pre-activations from the (batch, 4 * hidden) rows in PyTorch's order (i, f, g, o) and
writes the activated gates, c and h, with the sigmoid written as the shared code writes
it (0.5 * tanh(x / 2) + 0.5), so the two agree to rounding.

float32 and float64 only: half-precision cells (autocast) keep the shared kernels.
"""

from __future__ import annotations

from typing import Any

import cupy

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


def kernels(shared: dict[str, Any]) -> dict[str, Any]:
    """`lstm_cell` and `lstm_cell_backward` for the kernel table, falling back to the
    `shared` ones for other dtypes."""
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

    return {"lstm_cell": lstm_cell, "lstm_cell_backward": lstm_cell_backward}
