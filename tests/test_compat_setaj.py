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


# -- functional_variants.py -------------------------------------------------------------

F_CASES = {
    "pad-mode": lambda m: m.nn.functional.pad(m.ones(1, 1, 3), (1, 1), mode="wrap"),
    "pad-crop-too-much": lambda m: m.nn.functional.pad(m.ones(1, 3), (-2, -2)),
    "pad-crop-left": lambda m: m.nn.functional.pad(m.ones(1, 1, 3), (-4, 0)),
    "interp-negative-scale": lambda m: m.nn.functional.interpolate(m.ones(1, 2, 5, 7),
                                                                   scale_factor=-1.0),
    "interp-zero-1d": lambda m: m.nn.functional.interpolate(m.ones(1, 1, 4), size=0),
    "interp-zero-3d": lambda m: m.nn.functional.interpolate(m.ones(1, 1, 4, 4, 4),
                                                            size=(0, 1, 2)),
    "interp-empty-input": lambda m: m.nn.functional.interpolate(m.ones(1, 1, 0, 4),
                                                                size=(2, 1)),
    "interp-zero-antialias": lambda m: m.nn.functional.interpolate(
        m.ones(1, 1, 4, 4), size=(0, 1), mode="bicubic", antialias=True),
    "ce-probs-ignore": lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), m.ones(2, 3) / 3,
                                                               ignore_index=0),
    "ce-int-logits": lambda m: m.nn.functional.cross_entropy(m.ones(2, 3, dtype=m.long),
                                                             m.tensor([0, 1])),
    "ce-int-logits-kdim": lambda m: m.nn.functional.cross_entropy(
        m.ones(2, 3, 2, dtype=m.long), m.zeros(2, 2, dtype=m.long)),
    "mse-int": lambda m: m.nn.functional.mse_loss(m.ones(2, dtype=m.long),
                                                  m.ones(2, dtype=m.long)),
    "mse-bool": lambda m: m.nn.functional.mse_loss(m.ones(2, dtype=m.bool),
                                                   m.ones(2, dtype=m.bool)),
    "smooth-l1-int": lambda m: m.nn.functional.smooth_l1_loss(m.ones(2, dtype=m.int32),
                                                              m.ones(2, dtype=m.int32)),
    "smooth-l1-int-beta0": lambda m: m.nn.functional.smooth_l1_loss(
        m.ones(2, dtype=m.long), m.ones(2, dtype=m.long), beta=0.0),
    "huber-int": lambda m: m.nn.functional.huber_loss(m.ones(2, dtype=m.long),
                                                      m.ones(2, dtype=m.long)),
    "huber-int-float": lambda m: m.nn.functional.huber_loss(m.ones(2, dtype=m.long),
                                                            m.zeros(2)),
    "triplet-dims": lambda m: m.nn.functional.triplet_margin_loss(m.ones(3), m.ones(2, 3),
                                                                  m.ones(2, 3)),
    "cosine-embedding-1d-target": lambda m: m.nn.functional.cosine_embedding_loss(
        m.ones(1, 4, 5), m.ones(1, 4, 5), m.ones(4)),
    "cosine-embedding-0d-target": lambda m: m.nn.functional.cosine_embedding_loss(
        m.ones(2, 3), m.ones(3), m.tensor(1.0)),
    "cosine-embedding-2d-target": lambda m: m.nn.functional.cosine_embedding_loss(
        m.ones(2, 3), m.ones(2, 3), m.ones(2, 1)),
    "cosine-similarity-int": lambda m: m.nn.functional.cosine_similarity(
        m.ones(3, dtype=m.long), m.ones(3, dtype=m.long), dim=0),
    "cosine-similarity-bool": lambda m: m.nn.functional.cosine_similarity(
        m.ones(3, dtype=m.bool), m.ones(3, dtype=m.bool), dim=0),
    "dropout-int": lambda m: m.nn.functional.dropout(m.ones(4, dtype=m.long), 0.5),
    "dropout2d-int": lambda m: m.nn.functional.dropout2d(m.ones(1, 2, 2, 2, dtype=m.long), 0.5),
    "alpha-dropout-int": lambda m: m.nn.functional.alpha_dropout(m.ones(4, dtype=m.long), 0.5,
                                                                 True),
}


@pytest.mark.parametrize("name", list(F_CASES))
def test_functional_errors(name: str) -> None:
    _same_error(F_CASES[name])


def test_dropout_refusal_draws_the_noise_first() -> None:
    """PyTorch draws the noise before refusing an integer input: the stream moves on."""
    results = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        with pytest.raises(RuntimeError):
            lib.nn.functional.dropout(lib.ones(5, dtype=lib.long), 0.5)
        results.append(lib.rand(4).tolist())
    assert results[0] == results[1]


@pytest.mark.parametrize("fn", [
    lambda m: m.nn.functional.dropout(m.ones(2, dtype=m.long), 1.0),
    lambda m: m.nn.functional.dropout(m.ones(2, dtype=m.bool), 1.0),
    lambda m: m.nn.functional.alpha_dropout(m.ones(2, dtype=m.long), 1.0, True),
    lambda m: m.nn.functional.dropout2d(m.ones(1, 2, 2, 2, dtype=m.long), 1.0),
], ids=["int", "bool", "alpha", "2d"])
def test_dropout_everything_keeps_the_dtype(fn) -> None:
    want, got = fn(torch), fn(ember)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.tolist() == want.tolist()


def test_gaussian_nll_gradient_flows_through_the_clamp() -> None:
    """PyTorch clamps var in place under no_grad: a var below eps still gets a gradient."""
    grads = []
    for lib in (torch, ember):
        var = lib.tensor([[0.5, 1e-8], [2.0, 1.0]], requires_grad=True)
        mu = lib.tensor([[0.1, 1.0], [2.0, -1.0]], requires_grad=True)
        loss = lib.nn.functional.gaussian_nll_loss(mu, lib.zeros(2, 2), var, full=True)
        loss.backward()
        grads.append([loss.item(), *var.grad.flatten().tolist(), *mu.grad.flatten().tolist()])
    assert grads[1] == pytest.approx(grads[0], rel=1e-5)


def _warnings(fn, lib) -> list[tuple[str, str]]:
    """The (file, message) of each warning `fn(lib)` gives, every time (PyTorch's own
    "Triggered internally" suffix left out)."""
    import warnings
    lib.set_warn_always(True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(lib)
    finally:
        lib.set_warn_always(False)
    return [(w.filename, str(w.message).split(" (Triggered")[0]) for w in caught]


@pytest.mark.parametrize("fn", [
    lambda m: m.searchsorted(m.arange(10.0)[::2], m.tensor([3.0])),
    lambda m: m.searchsorted(m.arange(5.0), m.tensor([[1.0, 2.0], [3.0, 4.0]]).t()),
    lambda m: m.searchsorted(m.tensor([3.0, 1.0, 2.0]), m.tensor([2.0]),
                             sorter=m.tensor([1, 9, 2, 9, 0])[::2]),
    lambda m: m.bucketize(m.tensor([1.0]), m.arange(10.0)[::2]),
    lambda m: m.nn.functional.upsample(m.ones(1, 1, 2), scale_factor=2),
], ids=["boundary", "values", "sorter", "bucketize", "upsample"])
def test_warnings_point_at_the_caller(fn) -> None:
    got, want = _warnings(fn, ember), _warnings(fn, torch)
    assert got == want and want and want[0][0] == __file__


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([1 + 1j, 2 - 1j]).sort(),
    lambda m: m.tensor([1 + 1j, 2 - 1j]).sort(stable=True),
    lambda m: m.tensor([1 + 1j, 2 - 1j]).argsort(),
    lambda m: m.tensor([1 + 1j, 2 - 1j]).msort(),
    lambda m: m.tensor([1 + 1j, 2 - 1j]).topk(1),
    lambda m: m.tensor([1 + 1j, 2 - 1j]).unique(),
    lambda m: m.tensor([1 + 1j, 2 - 1j]).median(),
], ids=["sort", "sort-stable", "argsort", "msort", "topk", "unique", "median"])
def test_complex_refusals_in_the_kernels_words(fn) -> None:
    _same_error(fn)


def test_copy_slices_node_names_itself_as_pytorch() -> None:
    """name() is the C++ path, the class and the repr the bare name (circular F.pad's node
    and any write through a view)."""
    for lib in (torch, ember):
        x = lib.ones(1, 1, 3, 3, requires_grad=True)
        nodes = [lib.nn.functional.pad(x, (1, 1, 1, 1), mode="circular").grad_fn]
        y = x * 1
        y[0, 0, 0].mul_(2)
        nodes.append(y.grad_fn)
        for node in nodes:
            assert node.name() == f"{lib.__name__}::autograd::CopySlices"
            assert type(node).__name__ == "CopySlices"
            assert repr(node).startswith("<CopySlices object at 0x")
        assert repr(y).endswith("grad_fn=<CopySlices>)")
