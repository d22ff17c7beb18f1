"""What the complex tests share: gradients of a real loss of complex input by finite
differences."""

from __future__ import annotations

import numpy as np


def fd_grad(f, z, h=1e-6):
    """dL/dRe z + i dL/dIm z of the real scalar `f(z)` by central differences (PyTorch's
    gradient convention for a real loss of complex input, as gradcheck checks it)."""
    g = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        for step, unit in ((h, 1.0), (h * 1j, 1j)):
            zp, zm = z.copy(), z.copy()
            zp[idx] += step
            zm[idx] -= step
            g[idx] += unit * (f(zp) - f(zm)) / (2 * h)
    return g
