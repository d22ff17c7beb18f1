"""float32/float64 sums and means in PyTorch's CPU order of additions
(ember/backends/cpu/cascade_sum.py and numba_sum.py), bit for bit against PyTorch, on the
NumPy reference path and on the compiled one."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from ember.backends.cpu import cascade_sum, compiled

torch = pytest.importorskip("torch")

if cascade_sum.vector_bytes() != {"AVX2": 32, "AVX512": 64}.get(
        torch.backends.cpu.get_cpu_capability(), 0):
    pytest.skip("PyTorch runs other vector kernels here than ember assumes",
                allow_module_level=True)

_SHAPES = [(1,), (3,), (7,), (8,), (9,), (33,), (100,), (257,), (1000,), (4097,), (30000,),
           (5, 8), (8, 5), (3, 100), (100, 3), (64, 128), (7, 33), (1, 50), (50, 1), (31, 40),
           (2, 3, 4), (8, 3, 32, 32), (4, 5, 6, 7), (16, 1, 9), (3, 40, 5), (6, 2, 33, 3)]


def _cases():
    for shape in _SHAPES:
        nd = len(shape)
        for r in range(nd + 1):
            for dims in itertools.combinations(range(nd), r):
                if r == 0 and nd > 1:
                    continue  # (the whole-tensor sum: once per shape)
                yield shape, dims or None


@pytest.fixture(params=["numpy", "compiled"])
def path(request, monkeypatch):
    """The NumPy reference (numba kept out) or numba_sum's kernels (at every size)."""
    if request.param == "numpy":
        monkeypatch.setattr(compiled, "sum_kernels", lambda size: None)
    else:
        if compiled.kernels() is None:
            pytest.skip(f"numba is unavailable: {compiled.unavailable}")
        monkeypatch.setattr(compiled, "_FIRST_USE", 0)
    return request.param


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sums_are_pytorchs_bit_for_bit(path: str, dtype: str) -> None:
    rng = np.random.default_rng(0)
    for shape, dims in _cases():
        x = (rng.standard_normal(shape) * rng.choice([1.0, 1e3, 1e-3])).astype(dtype)
        ours = ember.tensor(x).sum() if dims is None else ember.tensor(x).sum(dim=dims)
        theirs = torch.from_numpy(x).sum() if dims is None else \
            torch.from_numpy(x).sum(dim=dims)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=f"{shape} {dims}")


def test_edge_values_and_signed_zeros(path: str) -> None:
    rng = np.random.default_rng(1)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-45], np.float32)
    for trial in range(120):
        shape = tuple(int(v) for v in rng.integers(1, 12, size=rng.integers(1, 4)))
        x = rng.standard_normal(shape).astype(np.float32)
        if trial % 3 == 1:
            x.flat[rng.integers(0, x.size, 3)] = rng.choice(edges, 3)
        elif trial % 3 == 2:
            x[...] = -0.0
        dims = tuple(sorted({int(d) for d in rng.integers(0, x.ndim, 2)}))
        ours = ember.tensor(x).sum(dim=dims, keepdim=bool(trial % 2)).numpy()
        theirs = torch.from_numpy(x).sum(dim=dims, keepdim=bool(trial % 2)).numpy()
        assert ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


def test_means_and_other_layouts() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 24, 5)).astype(np.float32)
    for dims in (None, 0, 1, (0, 2), -1):
        ours = ember.tensor(x).mean() if dims is None else ember.tensor(x).mean(dims)
        theirs = torch.from_numpy(x).mean() if dims is None else torch.from_numpy(x).mean(dims)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # a transposed input keeps NumPy's sum (PyTorch's order follows its strides): close
    t = ember.tensor(x).transpose(0, 2)
    np.testing.assert_allclose(t.sum(1).numpy(), torch.from_numpy(x).transpose(0, 2).sum(1)
                               .numpy(), rtol=1e-5, atol=1e-5)


def test_vector_width_follows_aten_cpu_capability(monkeypatch) -> None:
    for value, width in (("avx2", 32), ("AVX512", 64)):
        monkeypatch.setenv("ATEN_CPU_CAPABILITY", value)
        monkeypatch.setattr(cascade_sum, "_vector_bytes", None)
        assert cascade_sum.vector_bytes() == width
    monkeypatch.setattr(cascade_sum, "_vector_bytes", None)  # (detected again afterwards)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_large_totals_follow_pytorchs_split_among_threads(threads: int) -> None:
    pytest.importorskip("threadpoolctl")  # (ember.set_num_threads sets NumPy's BLAS by it)
    before = torch.get_num_threads(), ember.get_num_threads()
    rng = np.random.default_rng(threads)
    try:
        torch.set_num_threads(threads)
        ember.set_num_threads(threads)
        for n in (32768, 40000, 100000):
            for dtype in ("float32", "float64"):
                x = rng.standard_normal(n).astype(dtype)
                np.testing.assert_array_equal(ember.tensor(x).sum().numpy(),
                                              torch.from_numpy(x).sum().numpy())
                np.testing.assert_array_equal(ember.tensor(x).view(-1, 8).mean().numpy(),
                                              torch.from_numpy(x).view(-1, 8).mean().numpy())
    finally:
        torch.set_num_threads(before[0])
        ember.set_num_threads(before[1])


@pytest.mark.parametrize("dtype", ["float32", "complex64", "float64"])
def test_cumsum_runs_in_double_as_pytorchs_cpu_kernel(dtype: str) -> None:
    rng = np.random.default_rng(4)
    for shape, dim in (((64, 10), 0), ((5, 300), 1), ((3, 4, 50), 2), ((7,), 0)):
        x = rng.standard_normal(shape) * 100
        if dtype == "complex64":
            x = x + 1j * rng.standard_normal(shape)
        x = x.astype(dtype)
        ours, theirs = ember.tensor(x).cumsum(dim), torch.from_numpy(x).cumsum(dim)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert ours.dtype == getattr(ember, dtype) and ours.is_contiguous()
