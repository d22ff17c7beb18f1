"""ember behaviours the set-AF36 programs (classic ML in torch, seeded data loading) needed,
each checked against torch."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402
from ember.utils import data as edata  # noqa: E402


def _raises(make: Any, *args: Any) -> tuple[type, str]:
    """The type and message of the error `make(*args)` raises."""
    with pytest.raises(Exception) as info:
        make(*args)
    return type(info.value), str(info.value)


class _Batched:
    """A dataset that only answers batched fetches (and counts them)."""

    def __init__(self) -> None:
        self.calls = 0

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> int:
        raise AssertionError("fetched one by one")

    def __getitems__(self, indices: list) -> list:
        self.calls += 1
        return [i * 10 for i in indices]


@pytest.mark.parametrize("mod", ["torch", "ember"])
def test_stack_dataset_getitems(mod: str) -> None:
    data = torch.utils.data if mod == "torch" else edata
    make = torch.arange if mod == "torch" else ember.arange
    as_list = (lambda x: x.tolist() if hasattr(x, "tolist") else x)
    tup = data.StackDataset(make(4), _Batched())
    got = tup.__getitems__([0, 2])
    assert [(as_list(a), b) for a, b in got] == [(0, 0), (2, 20)]
    batched = _Batched()
    dct = data.StackDataset(x=make(4), y=batched)
    got = dct.__getitems__([1, 3])
    assert [(as_list(d["x"]), d["y"]) for d in got] == [(1, 10), (3, 30)]
    assert batched.calls == 1
    # the DataLoader fetches a batch through it
    batches = list(data.DataLoader(data.StackDataset(x=make(4), y=_Batched()), batch_size=3))
    assert [(b["x"].tolist(), b["y"].tolist()) for b in batches] == [([0, 1, 2], [0, 10, 20]),
                                                                      ([3], [30])]


def test_stack_dataset_errors_match_torch() -> None:
    for make in (lambda d: d.StackDataset(range(2), a=range(2)),
                 lambda d: d.StackDataset(range(2), range(3)),
                 lambda d: d.StackDataset()):
        assert _raises(make, edata) == _raises(make, torch.utils.data)

    class Short(_Batched):
        def __getitems__(self, indices: list) -> list:
            return [0]

    for data in (torch.utils.data, edata):
        assert _raises(data.StackDataset(Short()).__getitems__, [0, 1]) == (
            ValueError, "Nested dataset's output size mismatch. Expected 2, got 1")


def test_concat_dataset_index_error_matches_torch() -> None:
    for idx in (3, 7):
        want = _raises(torch.utils.data.ConcatDataset([range(2), range(1)]).__getitem__, idx)
        assert _raises(edata.ConcatDataset([range(2), range(1)]).__getitem__, idx) == want
    assert want == (IndexError, "list index out of range")
    # iterating by the __getitem__ protocol still stops at the end
    assert list(edata.ConcatDataset([range(2), range(1)])) == [0, 1, 0]


def test_subset_subclass_without_getitems_is_refused() -> None:
    def subclass(base: type, with_getitems: bool) -> type:
        body: dict[str, Any] = {"__getitem__": lambda self, i: -1}
        if with_getitems:
            body["__getitems__"] = lambda self, idx: [-1 for _ in idx]
        return type("MySubset", (base,), body)

    want = _raises(lambda: subclass(torch.utils.data.Subset, False)(range(3), [0]))
    assert want[0] is NotImplementedError
    assert _raises(lambda: subclass(edata.Subset, False)(range(3), [0])) == want
    ok = subclass(edata.Subset, True)(range(3), [0, 1])
    assert [b.tolist() for b in edata.DataLoader(ok, batch_size=2)] == [[-1, -1]]


def _both(make: Any) -> None:
    """`make(torch)` and `make(ember)` raise the same error, word for word."""
    assert _raises(make, ember) == _raises(make, torch)


@pytest.mark.parametrize("make", [
    lambda m: m.ones(2, 3).cov(fweights=m.ones(1, 3, dtype=m.long)),
    lambda m: m.cov(m.ones(2, 3), fweights=m.ones(3)),
    lambda m: m.cov(m.ones(2, 3), fweights=m.ones(3, dtype=m.bool)),
    lambda m: m.cov(m.ones(2, 3), aweights=m.ones(1, 3)),
    lambda m: m.cov(m.ones(2, 3), aweights=m.ones(3, dtype=m.long)),
    lambda m: m.cov(m.ones(2, 3), fweights=m.tensor([1, -1, 1])),
    lambda m: m.zeros(3).fill_diagonal_(1),
    lambda m: m.zeros(2, 3, 2).fill_diagonal_(1),
], ids=["fw-2d", "fw-float", "fw-bool", "aw-2d", "aw-long", "fw-negative",
        "fill-1d", "fill-unequal"])
def test_cov_weights_and_fill_diagonal_errors_match_torch(make: Any) -> None:
    _both(make)


def test_cov_integer_weights_still_accepted() -> None:
    x = [[1.0, 2.0, 4.0], [0.0, 1.0, 1.0]]
    for dtype in ("uint8", "int32", "int64"):
        got = ember.cov(ember.tensor(x), fweights=ember.tensor([1, 2, 1],
                                                                 dtype=getattr(ember, dtype)))
        want = torch.cov(torch.tensor(x), fweights=torch.tensor([1, 2, 1],
                                                                 dtype=getattr(torch, dtype)))
        assert got.flatten().tolist() == pytest.approx(want.flatten().tolist())


def test_cdist_bad_compute_mode_is_a_value_error() -> None:
    _both(lambda m: m.cdist(m.ones(2, 3), m.ones(2, 3), compute_mode="foo"))


class _LongStream:
    """An iterable dataset that yields more samples than its __len__ says."""

    def __init__(self, base: type) -> None:
        self.base = base

    def make(self) -> Any:
        cls = type("Stream", (self.base,), {"__iter__": lambda self: iter(range(3)),
                                            "__len__": lambda self: 2})
        return cls()


@pytest.mark.parametrize("workers", [0, 1])
def test_iterable_length_warning_matches_torch(workers: int) -> None:
    messages = []
    for data in (torch.utils.data, edata):
        dataset = _LongStream(data.IterableDataset).make()
        loader = data.DataLoader(dataset, batch_size=None, num_workers=workers)
        assert len(loader) == 2
        with pytest.warns(UserWarning) as record:
            list(loader)
        messages.append([str(w.message).replace(repr(dataset), "<ds>") for w in record
                         if "Length of IterableDataset" in str(w.message)])
    assert messages[1] == messages[0] and len(messages[0]) == 1


def test_excess_workers_warn_at_construction_and_each_start(monkeypatch: Any) -> None:
    from ember.utils.data import dataloader as eloader

    monkeypatch.setattr(eloader, "_cpu_count", lambda: 1)
    with pytest.warns(UserWarning, match="create 2 worker processes") as built:
        loader = edata.DataLoader(range(4), batch_size=2, num_workers=2)
    assert built[0].filename == __file__
    with pytest.warns(UserWarning, match="suggested max number of worker in current system "
                                         "is 1") as started:
        iter(loader)._shutdown_workers()
    assert started[0].filename == __file__


def test_sampler_base_takes_no_data_source() -> None:
    def make(m: Any) -> Any:
        class Reversed(m.utils.data.Sampler):
            def __init__(self, n: int) -> None:
                super().__init__(range(n))  # the pre-2.13 idiom

        return Reversed(3)

    _both(lambda m: m.utils.data.Sampler(range(3)))
    _both(make)
    assert list(edata.BatchSampler(edata.SequentialSampler(range(3)), 2, False)) == [[0, 1], [2]]


@pytest.mark.parametrize("make", [
    lambda m: m.topk(m.ones(3)),
    lambda m: m.gather(m.ones(3)),
    lambda m: m.ones(3).logsumexp(),
    lambda m: m.cumsum(m.ones(3)),
    lambda m: m.multinomial(m.ones(3)),
    lambda m: m.ones(3).fill_diagonal_(),
    lambda m: m.scatter_add(m.ones(3), 0),
    lambda m: m.ones(3).index_add(0),
    lambda m: m.cov(),
    lambda m: m.cdist(m.ones(2, 2)),  # (a Python function in PyTorch: Python's words)
], ids=["topk", "gather", "logsumexp-method", "cumsum", "multinomial", "fill_diagonal_",
        "scatter_add", "index_add-method", "cov", "cdist"])
def test_missing_arguments_in_the_argument_parsers_words(make: Any) -> None:
    _both(make)


def test_a_missing_argument_error_inside_an_op_stays_its_own() -> None:
    # (an op whose body raises Python's missing-argument TypeError keeps it)
    from ember.core.declare import _missing_arguments

    def op(input: Any, dim: int) -> None:
        raise AssertionError

    err = TypeError("op() missing 1 required positional argument: 'dim'")
    assert _missing_arguments("op", op, err, (1, 2), {}) is None
    assert str(_missing_arguments("op", op, err, (1,), {})) == (
        'op() missing 1 required positional arguments: "dim"')


_LINALG_DTYPE_CASES = {
    "eigh": lambda m, a: m.linalg.eigh(a), "eigvalsh": lambda m, a: m.linalg.eigvalsh(a),
    "cholesky": lambda m, a: m.linalg.cholesky(a), "svd": lambda m, a: m.linalg.svd(a),
    "svdvals": lambda m, a: m.linalg.svdvals(a), "qr": lambda m, a: m.linalg.qr(a),
    "det": lambda m, a: m.linalg.det(a), "lu_factor": lambda m, a: m.linalg.lu_factor(a),
    "lu": lambda m, a: m.linalg.lu(a), "geqrf": lambda m, a: m.geqrf(a),
    "cond": lambda m, a: m.linalg.cond(a), "svd-legacy": lambda m, a: m.svd(a),
    "inv": lambda m, a: m.linalg.inv(a), "slogdet": lambda m, a: m.linalg.slogdet(a),
    "matrix_norm-2": lambda m, a: m.linalg.matrix_norm(a, 2),
    "matrix_norm-nuc": lambda m, a: m.linalg.norm(a, "nuc"),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64", "bool"])
@pytest.mark.parametrize("case", sorted(_LINALG_DTYPE_CASES))
def test_linalg_dtype_refusals_match_torch(case: str, dtype: str) -> None:
    run = _LINALG_DTYPE_CASES[case]
    if case.startswith("matrix_norm") and dtype in ("int64", "bool"):
        pytest.skip("(checked elsewhere)")
    _both(lambda m: run(m, m.eye(2).to(getattr(m, dtype))))


def test_kernel_refusal_comes_after_the_shape_checks() -> None:
    _both(lambda m: m.linalg.eigh(m.ones(2, 3, dtype=m.long)))
    _both(lambda m: m.linalg.cholesky(m.ones(2, 3).half()))
    _both(lambda m: m.linalg.lu_factor(m.ones(2, 3, dtype=m.long)))


@pytest.mark.parametrize("make", [
    lambda m: m.cdist(m.ones(2, 3).half(), m.ones(2, 3).half()),
    lambda m: m.cdist(m.ones(2, 3).half(), m.ones(2, 3)),
    lambda m: m.cdist(m.ones(30, 3).bfloat16(), m.ones(30, 3).bfloat16(), p=1),
    lambda m: m.cdist(m.ones(2, 3).bfloat16(), m.ones(2, 4).bfloat16()),
    lambda m: m.pdist(m.ones(2, 3).half()),
], ids=["half", "half-float", "bf16-p1", "bf16-columns", "pdist-half"])
def test_cdist_pdist_low_precision_refusals_match_torch(make: Any) -> None:
    _both(make)
