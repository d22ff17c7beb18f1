"""PyTorch numerics that session 38 matched (against PyTorch itself)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("target", ["half", "bfloat16"])
def test_float64_to_half_rounds_through_float_as_pytorch(target: str) -> None:
    """c10::Half and c10::BFloat16 are made from a float: a double is rounded twice, which
    differs from one rounding next to a halfway point (1.8842773134353976 is just below
    float16's halfway point 1.88427734375, and becomes it as a float)."""
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(100000) * np.exp(rng.uniform(-12, 12, 100000)),
                             [1.8842773134353976, 65519.99, -65520.0, 6e-8, np.nan, np.inf]])
    ours = getattr(ember.tensor(values, dtype=ember.float64), target)()
    theirs = getattr(torch.tensor(values, dtype=torch.float64), target)()
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


def test_half_std_mean_rounds_its_double_result_as_pytorch() -> None:
    data = (np.random.default_rng(33).standard_normal((7, 300)) * 3).astype(np.float32)
    for lib in (ember, torch):
        t = lib.tensor(data).half()
        std, mean = lib.std_mean(t, 0)
        if lib is ember:
            ours = (std.float().numpy(), mean.float().numpy())
        else:
            theirs = (std.float().numpy(), mean.float().numpy())
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])
