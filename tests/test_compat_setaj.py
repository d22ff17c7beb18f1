"""PyTorch behaviours the set AJ38 programs (reductions_scans_tour.py, functional_variants.py)
needed, each checked against torch: errors word for word, gradients, dtypes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402


def _error(fn, lib):
    """The (type name, message) `fn(lib)` raises."""
    with pytest.raises(Exception) as info:  # noqa: PT011 - compared with torch's below
        fn(lib)
    return type(info.value).__name__, str(info.value)


def _same_error(fn) -> None:
    assert _error(fn, ember) == _error(fn, torch)


@pytest.mark.parametrize("fn", [
    lambda m: m.ones(2, 2).renorm(0, 0, 1.0),
    lambda m: m.ones(2, 2).renorm(-1, 0, 1.0),
    lambda m: m.ones(3).renorm(2, 0, 1.0),
    lambda m: m.tensor(1.0).renorm(2, 0, 1.0),
    lambda m: m.ones(2, 2).renorm(2, 0, -1.0),
], ids=["p0", "p-1", "1d", "0d", "maxnorm"])
def test_renorm_errors(fn) -> None:
    _same_error(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.histogram(m.tensor([1.0, 2.0]), bins=2, range=(3.0, 1.0)),
    lambda m: m.histogram(m.tensor([1.0, 2.0]), bins=2, range=(float("nan"), 1.0)),
    lambda m: m.histogram(m.tensor([1.0, float("inf")]), bins=2),
    lambda m: m.histogramdd(m.tensor([[1.0, 2.0]]), bins=[2, 2], range=[0.0, 1.0, 3.0, 1.0]),
    lambda m: m.histc(m.tensor([1.0, 2.0]), bins=2, min=3, max=1),
    lambda m: m.histc(m.tensor([1.0, float("inf")]), bins=2),
], ids=["hist-rev", "hist-nan", "hist-inf", "dd-rev", "histc-rev", "histc-inf"])
def test_histogram_range_errors(fn) -> None:
    _same_error(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.linalg.vector_norm(m.ones(2), ord=None),
    lambda m: m.linalg.vector_norm(m.ones(2), ord=[1]),
    lambda m: m.linalg.vector_norm(m.ones(2), "fro"),
], ids=["none", "list", "str-positional"])
def test_vector_norm_ord_type_errors(fn) -> None:
    _same_error(fn)


def test_vector_norm_bool_ord_is_a_number() -> None:
    assert ember.linalg.vector_norm(ember.ones(2), ord=True).item() == 2.0


@pytest.mark.parametrize("fn", [
    lambda m, t: t.norm(0), lambda m, t: t.norm(p=0, dim=0),
    lambda m, t: m.linalg.norm(t, 0), lambda m, t: m.linalg.vector_norm(t, 0, dim=0),
], ids=["norm", "norm-dim", "linalg-norm", "vector-norm"])
def test_zero_norm_records_a_node_without_gradient(fn) -> None:
    for lib in (torch, ember):
        t = lib.tensor([1.0, 0.0, 2.0], requires_grad=True)
        out = fn(lib, t)
        assert out.item() == 2.0
        assert out.grad_fn.name() == "LinalgVectorNormBackward0"
        out.backward()
        assert t.grad is None


@pytest.mark.parametrize("fn", [
    lambda m: m.trapezoid(m.ones(3), x=m.ones(3), dx=1.0),
    lambda m: m.trapezoid(m.ones(3), dx=1.0, x=m.ones(3)),
    lambda m: m.trapezoid(m.ones(3), m.ones(3), dx=1.0),
    lambda m: m.trapezoid(m.ones(3), 2.0),
    lambda m: m.trapezoid(m.ones(3), None),
    lambda m: m.trapezoid(m.ones(3), dx=None),
    lambda m: m.cumulative_trapezoid(m.ones(3), m.ones(3), dx=2),
    lambda m: m.trapz(m.ones(3), x=m.ones(3), dx=1.0),
    lambda m: m.trapz(m.ones(3), 2.0),
], ids=["kw", "kw-reversed", "positional", "float-x", "none-x", "none-dx", "cumulative",
        "trapz", "trapz-float"])
def test_trapezoid_overload_errors(fn) -> None:
    _same_error(fn)


def test_trapezoid_still_takes_x_or_dx() -> None:
    y, x = [1.0, 4.0, 9.0], [0.0, 1.0, 3.0]
    for fn in (lambda m: m.trapezoid(m.tensor(y), m.tensor(x)),
               lambda m: m.trapezoid(m.tensor(y), x=m.tensor(x), dim=0),
               lambda m: m.trapezoid(m.tensor(y), dx=m.tensor(2.0)),
               lambda m: m.cumulative_trapezoid(m.tensor(y), dx=0.5),
               lambda m: m.trapz(m.tensor(y), m.tensor(x))):
        assert fn(ember).tolist() == fn(torch).tolist()
