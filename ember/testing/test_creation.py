"""Creation ops on the device under test: tensor, full, zeros, ones, *_like, arange,
linspace, eye, and the random ones (rand, randn, randint, randperm, rand_like ...):
shape, dtype, range, rough moments, and reproducibility under `ember.manual_seed`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ember
from ember.testing import support as S


@S.prop()
@given(data=st.data())
def test_tensor_roundtrip(device: ember.device, data: st.DataObject) -> None:
    d = data.draw(S.dtypes(device, S.ALL_DTYPES), label="dtype")
    arr = data.draw(S.arrays(d, data.draw(S.shapes(max_dims=4, min_side=0)), -100, 100),
                    label="x")
    x = ember.tensor(arr, device=device)
    S.assert_matches(x, arr, device, dtype=d, what="tensor(ndarray)")
    if arr.size:  # nested lists cannot spell an empty shape like (0, 3)
        S.assert_matches(ember.tensor(arr.tolist(), dtype=d, device=device), arr, device,
                         dtype=d, what="tensor(list)")
    assert x.tolist() == arr.tolist()
    # the device holds its own copy: changing the source afterwards changes nothing
    if arr.size and device.type != "cpu":
        before = arr.copy()
        arr.flat[0] = arr.flat[0] + 1 if d is not ember.bool else not arr.flat[0]
        S.assert_matches(x, before, device, dtype=d, what="a copy of the source")


def test_tensor_dtype_inference(device: ember.device) -> None:
    assert ember.tensor([1, 2], device=device).dtype is ember.int64
    assert ember.tensor([1.0, 2], device=device).dtype is ember.get_default_dtype()
    assert ember.tensor([True, False], device=device).dtype is ember.bool
    assert ember.tensor(3.5, device=device).shape == ()
    assert ember.tensor([[1, 2]], dtype=ember.float16, device=device).dtype is ember.float16
    assert ember.tensor([1.0], device=device).device == device


@pytest.mark.parametrize("d", S.ALL_DTYPES, ids=str)
def test_full_zeros_ones(device: ember.device, d: ember.dtype) -> None:
    npd = S.np_dtype(d)
    S.assert_matches(ember.zeros(2, 3, dtype=d, device=device), np.zeros((2, 3), npd),
                     device, dtype=d)
    S.assert_matches(ember.ones((4,), dtype=d, device=device), np.ones(4, npd), device,
                     dtype=d)
    S.assert_matches(ember.full((2, 2), 1, dtype=d, device=device), np.full((2, 2), 1, npd),
                     device, dtype=d)
    like = ember.zeros(3, 1, dtype=d, device=device)
    S.assert_matches(ember.ones_like(like), np.ones((3, 1), npd), device, dtype=d)
    S.assert_matches(ember.zeros_like(like), np.zeros((3, 1), npd), device, dtype=d)
    S.assert_matches(ember.full_like(like, 1), np.ones((3, 1), npd), device, dtype=d)
    S.assert_matches(like.new_ones(2), np.ones(2, npd), device, dtype=d)
    S.assert_matches(like.new_zeros((1, 2)), np.zeros((1, 2), npd), device, dtype=d)
    S.assert_matches(like.new_full((2,), 1), np.ones(2, npd), device, dtype=d)
    assert ember.empty(2, 5, dtype=d, device=device).shape == (2, 5)
    assert ember.empty_like(like).device == device


def test_full_dtype_from_value(device: ember.device) -> None:
    assert ember.full((2,), 3, device=device).dtype is ember.int64
    assert ember.full((2,), 3.5, device=device).dtype is ember.get_default_dtype()
    assert ember.full((2,), True, device=device).dtype is ember.bool
    assert ember.zeros(2, device=device).dtype is ember.get_default_dtype()
    S.assert_matches(ember.full((), -2.5, device=device), -2.5, device)
    S.assert_matches(ember.zeros((0, 3), device=device), np.zeros((0, 3), np.float32), device)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.full((2, -1), 0.0, device=device)
    with pytest.raises(RuntimeError, match="zeros: Dimension size must be non-negative"):
        ember.zeros(2, -1, device=device)  # (zeros' own words, as PyTorch's)
    # scalar_tensor: a 0-d tensor of the default dtype whatever the number's type
    for value in (3, 2.5, True):
        S.assert_matches(ember.scalar_tensor(value, device=device), float(value), device,
                         dtype=ember.get_default_dtype())
    S.assert_matches(ember.scalar_tensor(2.7, dtype=ember.int64, device=device), 2, device,
                     dtype=ember.int64)


@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((2, 9), {}), ((1, 10, 3), {}), ((10, 1, -3), {}), ((0.0, 1.0, 0.1), {}),
    ((-1.5, 2.5, 0.5), {}), ((0, 5), {"dtype": ember.float64}), ((5,), {"dtype": ember.int8}),
    ((0,), {}), ((3, 3), {}),
], ids=lambda v: str(v))
def test_arange(device: ember.device, args: tuple, kwargs: dict) -> None:
    x = ember.arange(*args, device=device, **kwargs)
    ints = all(isinstance(a, int) for a in args)
    want = kwargs.get("dtype", ember.int64 if ints else ember.get_default_dtype())
    ref = np.arange(*args, dtype=np.float64)
    S.assert_matches(x, ref.astype(S.np_dtype(want)), device, dtype=want, atol=1e-6)


def test_arange_errors(device: ember.device) -> None:
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 5, 0, device=device)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        ember.arange(0, 5, -1, device=device)


@pytest.mark.parametrize("start, end, steps", [
    (0.0, 1.0, 5), (-3.0, 7.0, 11), (2.0, -2.0, 4), (0.0, 1.0, 1), (0.0, 1.0, 0),
    (-1.0, 1.0, 100),
])
def test_linspace(device: ember.device, start: float, end: float, steps: int) -> None:
    x = ember.linspace(start, end, steps, device=device)
    S.assert_matches(x, np.linspace(start, end, steps), device, dtype=ember.float32,
                     atol=1e-6)
    x64 = ember.linspace(start, end, steps, dtype=ember.float64, device=device)
    S.assert_matches(x64, np.linspace(start, end, steps), device, dtype=ember.float64)
    if steps > 1:  # both ends exactly, as torch
        assert x64[0].item() == start and x64[-1].item() == end


@pytest.mark.parametrize("start, end, steps, base", [
    (0.0, 2.0, 3, 10.0), (-3.0, 3.0, 7, 2.0), (1.0, -1.0, 5, 0.5), (0.0, 1.0, 1, 10.0),
    (0.0, 1.0, 0, 10.0), (-1.0, 3.0, 9, 10.0), (0.0, 1.0, 4, 2.0), (1.0, 0.0, 1, 10.0)])
def test_logspace(device: ember.device, start: float, end: float, steps: int,
                  base: float) -> None:
    want = np.logspace(start, end, steps, base=base)
    x = ember.logspace(start, end, steps, base, device=device)
    S.assert_matches(x, want, device, dtype=ember.float32, rtol=1e-6)
    x64 = ember.logspace(start, end, steps, base, dtype=ember.float64, device=device)
    S.assert_matches(x64, want, device, dtype=ember.float64, rtol=1e-14)


@pytest.mark.parametrize("n, m", [(1, None), (3, None), (2, 4), (4, 2), (0, 3)])
def test_eye(device: ember.device, n: int, m: int | None) -> None:
    S.assert_matches(ember.eye(n, m, device=device), np.eye(n, m), device,
                     dtype=ember.get_default_dtype())
    S.assert_matches(ember.eye(n, m, dtype=ember.int32, device=device),
                     np.eye(n, m, dtype=np.int32), device, dtype=ember.int32)


# -- random ---------------------------------------------------------------------------

_N = 20_000  # enough for moments to within a few percent, cheap on any device


def _moments(x: ember.Tensor) -> tuple[float, float]:
    a = S.host(x).astype(np.float64)
    return float(a.mean()), float(a.std())


@pytest.mark.parametrize("d", [ember.float32, ember.float64, ember.float16, ember.bfloat16],
                         ids=str)
def test_rand(device: ember.device, d: ember.dtype) -> None:
    x = ember.rand(_N, dtype=d, device=device)
    assert x.shape == (_N,) and x.dtype is d and x.device == device
    a = S.host(x).astype(np.float64)
    assert a.min() >= 0.0 and a.max() <= 1.0, "rand must lie in [0, 1)"
    if d in (ember.float32, ember.float64):
        assert a.max() < 1.0
    mean, std = _moments(x)
    assert abs(mean - 0.5) < 0.02 and abs(std - (1 / 12) ** 0.5) < 0.02, (mean, std)
    assert len(np.unique(a)) > 100
    assert ember.rand(2, 3, device=device).shape == (2, 3)
    assert ember.rand((2, 3), device=device).dtype is ember.get_default_dtype()


@pytest.mark.parametrize("d", [ember.float32, ember.float64], ids=str)
def test_randn(device: ember.device, d: ember.dtype) -> None:
    x = ember.randn(_N // 2, 2, dtype=d, device=device)
    assert x.shape == (_N // 2, 2) and x.dtype is d and x.device == device
    mean, std = _moments(x)
    assert abs(mean) < 0.05 and abs(std - 1.0) < 0.05, (mean, std)
    a = S.host(x).astype(np.float64)
    assert 0.6 < np.mean(np.abs(a) < 1.0) < 0.76  # about 68% within one sigma


def test_random_dtype_errors(device: ember.device) -> None:
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ember.rand(3, dtype=ember.int64, device=device)  # (PyTorch's uniform kernel's words)
    with pytest.raises(RuntimeError, match="low < high|expected low|from' to be less than"):
        ember.randint(5, 5, (2,), device=device)


@pytest.mark.parametrize("d", [ember.int64, ember.int32, ember.uint8, ember.float32],
                         ids=str)
def test_randint(device: ember.device, d: ember.dtype) -> None:
    x = ember.randint(-3 if d is not ember.uint8 else 0, 7, (_N,), dtype=d, device=device)
    assert x.dtype is d and x.shape == (_N,) and x.device == device
    a = S.host(x)
    lo = -3 if d is not ember.uint8 else 0
    assert set(np.unique(a).tolist()) == set(range(lo, 7)), "every value in [low, high)"
    counts = np.bincount(a.astype(np.int64) - lo)
    assert counts.min() > 0.8 * _N / (7 - lo)  # roughly uniform
    y = ember.randint(10, (3, 4), device=device)  # randint(high, size)
    assert y.shape == (3, 4) and y.dtype is ember.int64
    assert 0 <= int(y.min()) and int(y.max()) < 10


@pytest.mark.parametrize("n", [0, 1, 7, 100])
def test_randperm(device: ember.device, n: int) -> None:
    p = ember.randperm(n, device=device)
    assert p.dtype is ember.int64 and p.shape == (n,) and p.device == device
    assert sorted(S.host(p).tolist()) == list(range(n))
    if n == 100:
        assert S.host(p).tolist() != list(range(n))


@pytest.mark.parametrize("make", [
    lambda dev: ember.rand(5, 3, device=dev),
    lambda dev: ember.randn(4, dtype=ember.float64, device=dev),
    lambda dev: ember.randint(0, 100, (6,), device=dev),
    lambda dev: ember.randperm(20, device=dev),
    lambda dev: ember.rand_like(ember.zeros(3, device=dev)),
    lambda dev: ember.randn_like(ember.zeros(3, 2, device=dev)),
    lambda dev: ember.randint_like(ember.zeros(4, device=dev), 0, 9),
    lambda dev: ember.zeros(8, device=dev).uniform_(-2.0, 3.0),
    lambda dev: ember.zeros(8, device=dev).normal_(1.0, 0.5),
    lambda dev: ember.bernoulli(ember.full((16,), 0.5, device=dev)),
], ids=["rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
        "uniform_", "normal_", "bernoulli"])
def test_manual_seed_reproduces(device: ember.device, make) -> None:
    ember.manual_seed(1234)
    first = make(device)
    second_draw = make(device)
    ember.manual_seed(1234)
    again = make(device)
    assert first.device == device
    np.testing.assert_array_equal(S.host(first), S.host(again))
    assert not np.array_equal(S.host(first), S.host(second_draw)) or first.numel() < 2, \
        "two draws in a row must differ"


def test_generator_is_independent(device: ember.device) -> None:
    g = ember.Generator().manual_seed(7)
    a = ember.rand(5, generator=g, device=device)
    g.manual_seed(7)
    ember.manual_seed(99)  # the global seed does not affect a private generator
    b = ember.rand(5, generator=g, device=device)
    assert a.device == device
    np.testing.assert_array_equal(S.host(a), S.host(b))


def test_uniform_normal_ranges(device: ember.device) -> None:
    u = ember.empty(_N, device=device).uniform_(-2.0, 3.0)
    a = S.host(u)
    assert a.min() >= -2.0 and a.max() < 3.0 and abs(a.mean() - 0.5) < 0.1
    n = ember.empty(_N, dtype=ember.float64, device=device).normal_(1.0, 0.5)
    mean, std = _moments(n)
    assert abs(mean - 1.0) < 0.03 and abs(std - 0.5) < 0.03


def test_as_tensor_and_new_tensor(device: ember.device) -> None:
    arr = np.arange(6.0).reshape(2, 3)
    x = ember.as_tensor(arr, device=device)
    S.assert_matches(x, arr, device, dtype=ember.float64, what="as_tensor(ndarray)")
    assert ember.as_tensor(x) is x, "a tensor already of that dtype and device is returned"
    S.assert_matches(ember.as_tensor(x, dtype=ember.float32), arr, device, dtype=ember.float32,
                     what="as_tensor(tensor, dtype)")
    S.assert_matches(ember.as_tensor([[1, 2]], device=device), [[1, 2]], device,
                     dtype=ember.int64, what="as_tensor(list)")
    # new_tensor: the data's values, this tensor's dtype and device unless given
    S.assert_matches(x.new_tensor([1, 2]), [1.0, 2.0], device, dtype=ember.float64,
                     what="new_tensor")
    S.assert_matches(x.new_tensor(np.array([3, 4]), dtype=ember.int32), [3, 4], device,
                     dtype=ember.int32, what="new_tensor(dtype=)")
    e = x.new_empty(4, 1)
    assert e.shape == (4, 1) and e.dtype is ember.float64 and e.device == device
    assert x.new_empty((2,), dtype=ember.int8).dtype is ember.int8


def test_random_like_ranges(device: ember.device) -> None:
    like = ember.zeros(_N, dtype=ember.float64, device=device)
    u = S.host(ember.rand_like(like))
    assert u.dtype == np.float64 and 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.02
    n = ember.randn_like(like, dtype=ember.float32)
    assert n.dtype is ember.float32 and n.device == device
    mean, std = _moments(n)
    assert abs(mean) < 0.05 and abs(std - 1.0) < 0.05, (mean, std)
    r = ember.randint_like(like, 3, 7)
    assert r.dtype is ember.float64 and r.device == device  # the input's dtype, as torch
    assert set(np.unique(S.host(r)).tolist()) == {3.0, 4.0, 5.0, 6.0}
    assert set(np.unique(S.host(ember.randint_like(like, 2))).tolist()) == {0.0, 1.0}


def test_random_fills(device: ember.device) -> None:
    p = S.on(device, np.array([0.0, 1.0, 0.0, 1.0, 1.0]))
    S.assert_matches(ember.bernoulli(p), [0.0, 1.0, 0.0, 1.0, 1.0], device,
                     what="bernoulli of 0 and 1")
    b = S.host(ember.bernoulli(ember.full((_N,), 0.3, device=device)))
    assert set(np.unique(b).tolist()) == {0.0, 1.0} and abs(b.mean() - 0.3) < 0.02
    S.assert_matches(ember.zeros(3, dtype=ember.uint8, device=device).bernoulli_(1.0),
                     [1, 1, 1], device, dtype=ember.uint8, what="bernoulli_(1.0)")
    half = S.host(ember.zeros(_N, device=device).bernoulli_(0.5))
    assert abs(half.mean() - 0.5) < 0.02
    ex = ember.empty(_N, dtype=ember.float64, device=device)
    assert ex.exponential_(2.0) is ex
    mean, std = _moments(ex)
    assert S.host(ex).min() >= 0.0 and abs(mean - 0.5) < 0.02 and abs(std - 0.5) < 0.03
    r = ember.empty(_N, device=device).random_(-2, 3)
    assert set(np.unique(S.host(r)).tolist()) == {-2.0, -1.0, 0.0, 1.0, 2.0}
    big = S.host(ember.empty(1000, dtype=ember.int64, device=device).random_())
    assert big.min() >= 0 and len(np.unique(big)) > 900


def test_random_to_draws_below_to(device: ember.device) -> None:
    r = S.host(ember.zeros(1000, dtype=ember.int64, device=device).random_(5))
    assert set(np.unique(r).tolist()) == {0, 1, 2, 3, 4}


def test_random_without_bounds_is_not_negative(device: ember.device) -> None:
    for d in (ember.int8, ember.int16):
        assert S.host(ember.zeros(1000, dtype=d, device=device).random_()).min() >= 0


def test_multinomial_draws_only_weighted_categories(device: ember.device) -> None:
    w = S.on(device, np.array([[0.0, 1.0, 0.0, 3.0], [2.0, 0.0, 0.0, 0.0]], np.float32))
    drawn = S.host(ember.multinomial(w, 200, replacement=True))
    assert drawn.shape == (2, 200) and drawn.dtype == np.int64
    assert set(np.unique(drawn[0]).tolist()) == {1, 3} and (drawn[1] == 0).all()
    assert (drawn[0] == 3).mean() > 0.6  # weight 3/4
    once = S.host(w[0].multinomial(2))  # without replacement: both weighted ones
    assert sorted(once.tolist()) == [1, 3]


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

# -- nnmisc family (issue 16): Poisson and binomial draws -------------------------------


def test_poisson_and_binomial_draws(device: ember.device) -> None:
    """Integer-valued draws with the distributions' means and variances, exact at the
    degenerate parameters; both samplers' regimes (direct and rejection) run."""
    ember.manual_seed(0)
    rates = S.on(device, np.repeat([0.0, 2.5, 40.0], _N).astype(np.float32))
    x = S.host(ember.poisson(rates)).reshape(3, _N)
    assert (x == np.round(x)).all() and (x[0] == 0).all()
    for row, lam in ((x[1], 2.5), (x[2], 40.0)):
        assert abs(row.mean() - lam) < 0.05 * lam + 0.05 and abs(row.var() / lam - 1) < 0.15
    count = S.on(device, np.repeat([0.0, 8.0, 200.0, 6.0], _N).astype(np.float32))
    prob = S.on(device, np.repeat([0.5, 0.25, 0.7, 1.0], _N).astype(np.float32))
    b = S.host(ember.binomial(count, prob)).reshape(4, _N)
    assert (b == np.round(b)).all() and (b[0] == 0).all() and (b[3] == 6).all()
    for row, n, p in ((b[1], 8, 0.25), (b[2], 200, 0.7)):
        assert row.min() >= 0 and row.max() <= n
        assert abs(row.mean() - n * p) < 0.05 * n * p and \
            abs(row.var() / (n * p * (1 - p)) - 1) < 0.15


def test_more_distributions(device: ember.device) -> None:
    """`normal` (numbers and tensors), `cauchy_`, `log_normal_`, `geometric_`: shapes,
    dtypes and the distributions' defining properties; bad parameters refused."""
    x = ember.normal(2.0, 0.5, (_N,), device=device)
    mean, std = _moments(x)
    assert x.device == device and abs(mean - 2.0) < 0.03 and abs(std - 0.5) < 0.03
    means = ember.tensor([0.0, 100.0], device=device)
    y = ember.normal(means, 1.0)
    assert y.shape == (2,) and abs(S.host(y)[1] - 100.0) < 10
    c = S.host(ember.empty(_N, device=device).cauchy_(1.0, 2.0)).astype(np.float64)
    assert abs(np.median(c) - 1.0) < 0.1  # the median; the mean does not exist
    assert abs(np.median(np.abs(c - 1.0)) - 2.0) < 0.15  # half the mass within sigma
    ln = S.host(ember.empty(_N, device=device).log_normal_(0.0, 0.5)).astype(np.float64)
    assert ln.min() > 0 and abs(np.log(ln).mean()) < 0.03 and abs(np.log(ln).std() - 0.5) < 0.03
    g = S.host(ember.empty(_N, device=device).geometric_(0.25)).astype(np.float64)
    assert g.min() >= 1 and np.all(g == np.round(g)) and abs(g.mean() - 4.0) < 0.2
    with pytest.raises(RuntimeError, match="sigma > 0"):
        ember.empty(2, device=device).cauchy_(0.0, -1.0)
    with pytest.raises(RuntimeError, match=r"p to be in \(0, 1\)"):
        ember.empty(2, device=device).geometric_(1.5)


def test_strided_and_permuted_empties(device: ember.device) -> None:
    x = ember.empty_strided((2, 3), (1, 2), dtype=ember.float32, device=device)
    assert x.shape == (2, 3) and x.stride() == (1, 2) and x.device == device
    nhwc = ember.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1), device=device)
    assert nhwc.stride() == (60, 1, 15, 3) and nhwc.device == device
    like = ember.ones(1, dtype=ember.int32, device=device)
    y = like.new_empty_strided((4, 2), (1, 4))
    assert y.dtype is ember.int32 and y.stride() == (1, 4) and y.device == device
    y.fill_(7)  # the memory is really there
    S.assert_matches(y, np.full((4, 2), 7, np.int32), device, dtype=ember.int32)


def test_deprecated_range_is_inclusive(device: ember.device) -> None:
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        x = ember.range(1, 2, 0.25, device=device)
    S.assert_matches(x, np.array([1.0, 1.25, 1.5, 1.75, 2.0], np.float32), device,
                     dtype=ember.float32)


def test_tensors_over_existing_memory(device: ember.device, tmp_path) -> None:
    values = np.arange(6, dtype=np.float32)
    S.assert_matches(ember.asarray(values, device=device), values, device, dtype=ember.float32)
    S.assert_matches(ember.asarray([[1, 2]], dtype=ember.float32, device=device),
                     np.array([[1, 2]], np.float32), device, dtype=ember.float32)
    on_device = ember.ones(3, device=device)
    assert ember.asarray(on_device) is on_device  # no copy asked for, none made
    raw = bytearray(values.tobytes())
    S.assert_matches(ember.frombuffer(raw, dtype=ember.float32, count=2, offset=8).to(device),
                     values[2:4], device, dtype=ember.float32)
    path = tmp_path / "values.bin"
    values.tofile(path)
    S.assert_matches(ember.from_file(str(path), size=6, dtype=ember.float32, device=device),
                     values, device, dtype=ember.float32)


COVERS = {"tensor", "as_tensor", "full", "zeros", "ones", "empty", "full_like", "zeros_like",
          "ones_like", "empty_like", "new_full", "new_zeros", "new_ones", "new_empty",
          "new_tensor", "arange", "linspace", "logspace", "eye", "rand", "randn", "randint",
          "randperm", "rand_like", "randn_like", "randint_like", "uniform_", "normal_", "bernoulli",
          "bernoulli_", "exponential_", "random_", "multinomial",
          "poisson", "binomial",  # (nnmisc family, issue 16)
          "normal", "cauchy_", "log_normal_", "geometric_",
          "empty_strided", "empty_permuted", "new_empty_strided", "range", "asarray",
          "frombuffer", "from_file", "scalar_tensor"}
"""The declared ops whose values this module's tests check."""
