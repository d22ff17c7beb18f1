"""What the programs of set Z (library tours: torch.distributions, torch.linalg, torch.fft,
RNG and reproducibility) needed of ember, checked against PyTorch: values, random streams,
layouts, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_wishart_rsample_keeps_pytorchs_random_stream():
    """Wishart.rsample redraws the samples PyTorch's (inverted) singularity check flags and
    warns, so its draws and every later draw follow PyTorch's stream."""
    got = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        w = lib.distributions.Wishart(lib.tensor(4.0), covariance_matrix=lib.eye(2))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sample = w.sample((2,))
        got.append((sample.numpy(), lib.rand(3).numpy(),
                    [str(c.message) for c in caught]))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-5)
    np.testing.assert_array_equal(got[0][1], got[1][1])
    assert got[0][2] == got[1][2] == ["Singular sample detected."]
