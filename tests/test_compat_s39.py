"""Session 39's own fixes outside the third-party libraries: fills into tensors whose
elements share memory (PyTorch writes them, and refuses other in-place ops there), and
softmax, log_softmax and cross_entropy equal to their decompositions bit for bit (what a
capture, a trace or torch.compile's first call runs)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.fx._capture import Capture  # noqa: E402
from ember.jit.backends import dynamo_target  # noqa: E402


@pytest.mark.parametrize("make", [
    lambda m: (m.zeros(5), lambda b: b.expand(3, 5)),
    lambda m: (m.arange(6.0), lambda b: b[1:4].as_strided((2, 3), (0, 1), 2)),
    lambda m: (m.zeros(4, 3), lambda b: b[:, 1].expand(2, 4)),
])
@pytest.mark.parametrize("write", ["fill_", "zero_"])
def test_fills_write_into_shared_elements(make, write):
    got = []
    for m in (torch, ember):
        base, view = make(m)
        v = view(base)
        getattr(v, write)(*([7.0] if write == "fill_" else []))
        got.append((base.tolist(), v.tolist()))
        with pytest.raises(RuntimeError, match="more than one element of the written-to"):
            v.add_(1)
    assert got[0] == got[1]
    e = ember.empty_strided((2, 3), (0, 1)).zero_()
    assert e.tolist() == [[0.0] * 3] * 2 and e.stride() == (0, 1)


def _captured(fn, *tensors):
    capture = Capture(dynamo_target, breaks=True, variable_names=True)
    for i, t in enumerate(tensors):
        capture.lift(t, f"L_a{i}_", type(t))
    return capture.run(fn, *tensors)


@pytest.mark.parametrize("shape", [(4, 4), (4, 10), (64, 10), (8, 1000), (300, 200)])
def test_softmax_family_equals_its_decomposition(shape):
    ember.manual_seed(0)
    x = ember.randn(*shape)
    y = ember.randint(0, shape[1], (shape[0],))
    ember.randn(4096).exp()  # (with the compiled exp loaded too)
    for fn, args in ((lambda a: a.softmax(-1), (x,)), (lambda a: F.log_softmax(a, 1), (x,)),
                     (lambda a, b: F.cross_entropy(a, b), (x, y)),
                     (lambda a, b: F.cross_entropy(a, b, reduction="sum"), (x, y)),
                     (lambda a, b: F.cross_entropy(a, b, reduction="none"), (x, y))):
        assert ember.equal(fn(*args), _captured(fn, *args))
