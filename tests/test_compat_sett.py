"""PyTorch behaviours the set-T31 programs (ShuffleNet/GhostNet, Inception-v3, HiFi-GAN,
PatchTST/DLinear, Temporal Fusion Transformer, an SSD box pipeline, Tacotron2, SchNet)
needed, checked against torch itself."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _grad_of(mod, fn, x: np.ndarray, upstream=None) -> np.ndarray:
    t = mod.tensor(x, requires_grad=True)
    out = fn(mod, t)
    out.backward(mod.ones_like(out) if upstream is None else upstream(mod, out))
    return np.asarray(t.grad.tolist())


@pytest.mark.parametrize("shape", [(20, 64, 8, 8), (2, 3, 9, 9)])
def test_overlapping_max_pool_backward_with_expanded_gradient(shape) -> None:
    """Inception's `F.max_pool2d(x, kernel_size=3, stride=2)` then `.sum().backward()`:
    the gradient arrives as an expanded view, which the compiled backward declines; the
    fallback must not assume tiling windows."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)

    def fn(m, t):
        return m.nn.functional.max_pool2d(t, kernel_size=3, stride=2).sum()

    np.testing.assert_array_equal(_grad_of(ember, fn, x), _grad_of(torch, fn, x))
