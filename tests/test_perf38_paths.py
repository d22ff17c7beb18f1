"""The fast paths of single ops added for speed in round 38 (fused kernels, NumPy kernels
in place of decompositions), against PyTorch, bit for bit where PyTorch's order of
rounding is known: edge values (NaN, infinities, signed zeros, ties, empty inputs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember.core import plugins

torch = pytest.importorskip("torch")


def _same(got: ember.Tensor, expected: torch.Tensor) -> None:
    assert str(got.dtype).split(".")[1] == str(expected.dtype).split(".")[1]
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8])
def test_bincount_fused_matches_torch(dtype: type) -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 60, 2000).astype(dtype)
    w = rng.standard_normal(2000) * 1e3
    w[[5, 17, 400]] = [np.nan, np.inf, -0.0]
    for args, kwargs in [((), {}), ((), {"minlength": 100}), ((w.astype(np.float32),), {}),
                         ((w,), {"minlength": 3}), ((np.arange(2000, dtype=np.int16),), {})]:
        _same(ember.bincount(ember.tensor(x), *map(ember.tensor, args), **kwargs),
              torch.bincount(torch.tensor(x), *map(torch.tensor, args), **kwargs))
    empty = np.zeros(0, dtype)
    _same(ember.bincount(ember.tensor(empty), minlength=4),
          torch.bincount(torch.tensor(empty), minlength=4))


def test_bincount_errors_and_gradient_as_torch() -> None:
    for args in [(np.array([1, -1]),), (np.array([1, -1]), np.ones(3, np.float32)),
                 (np.array([1, 2]), np.ones(3, np.float32)), (np.ones((2, 2), np.int64),)]:
        with pytest.raises(RuntimeError) as expected:
            torch.bincount(*map(torch.tensor, args))
        with pytest.raises(RuntimeError, match=str(expected.value)):
            ember.bincount(*map(ember.tensor, args))
    w = ember.ones(3, requires_grad=True)
    out = ember.bincount(ember.tensor([0, 2, 2]), w)
    assert out.requires_grad and type(out.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::bincount is not implemented"):
        out.sum().backward()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.bool_])
def test_unique_fused_matches_torch(dtype: type) -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(-4, 5, (30, 40)).astype(dtype)
    if x.dtype.kind == "f":
        x[[0, 3, 7], [1, 1, 2]] = [np.nan, np.nan, np.inf]
        x[5, :9] = -0.0  # (signed zeros: the first of equal elements is kept)
    no_nan = np.where(x != x, 9, x).astype(dtype)  # (the inverse of NaNs: PyTorch's differs)
    for a, kwargs in [(x, {}), (no_nan, {"return_inverse": True, "return_counts": True}),
                      (x, {"return_counts": True})]:
        got = ember.unique(ember.tensor(a), **kwargs)
        expected = torch.unique(torch.tensor(a), **kwargs)
        for g, e in zip(*((got, expected) if kwargs else ((got,), (expected,)))):
            _same(g, e)
            if g.dtype.is_floating_point:
                assert np.signbit(g.numpy()).tolist() == np.signbit(e.numpy()).tolist()
    _same(ember.unique(ember.tensor(x[:0]), return_inverse=True)[1],
          torch.unique(torch.tensor(x[:0]), return_inverse=True)[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.int8])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_partition_matches_a_stable_sort(dtype: type, largest: bool) -> None:
    # (large enough to skip the emulation of PyTorch's order of ties: the stable order)
    rng = np.random.default_rng(5)
    x = rng.integers(-3, 4, (120, 300)).astype(dtype)
    if x.dtype.kind == "f":
        x = np.where(rng.random(x.shape) < 0.5, rng.standard_normal(x.shape), x).astype(dtype)
        for value, share in [(np.nan, 0.1), (np.inf, 0.05), (-np.inf, 0.05), (-0.0, 0.1)]:
            x[rng.random(x.shape) < share] = value
        x[0, :] = np.nan  # (a NaN k-th element)
    else:
        x[1, :5] = np.iinfo(dtype).min
    for a in [x, np.where(x != x, 2.5, x).astype(dtype)]:  # (largest: NaNs sort fully)
        _check_topk(a, largest)


def _check_topk(x: np.ndarray, largest: bool) -> None:
    key = x.astype(np.float32) if x.dtype == np.float16 else x
    for dim, k in [(1, 1), (1, 7), (1, 75), (0, 3)]:
        got = ember.topk(ember.tensor(x), k, dim, largest=largest)
        n = x.shape[dim]
        order = np.argsort(np.flip(key, dim) if largest else key, axis=dim, kind="stable")
        if largest:
            order = n - 1 - np.flip(order, dim)
        expected = np.take(order, np.arange(k), axis=dim)
        np.testing.assert_array_equal(got.indices.numpy(), expected)
        np.testing.assert_array_equal(got.values.numpy(), np.take_along_axis(x, expected, dim))
        if x.dtype != np.uint8:
            values = torch.topk(torch.tensor(x), k, dim, largest=largest).values
            np.testing.assert_array_equal(got.values.numpy(), values.numpy())


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_slices_match_torch(mode: str) -> None:
    # (index_select copies slices along the last dim for 4096 elements or more)
    x = np.random.default_rng(6).standard_normal((4, 3, 20, 30)).astype(np.float32)
    x[0, 0, 0, :3] = [np.nan, -0.0, np.inf]
    for pads, shape in [((1, 1, 1, 1), x.shape), ((3, 0, 2, 5), x.shape),
                        ((0, 29, 0, 0), x.shape), ((5, 2), (12, 20, 30))]:
        a = ember.tensor(x.reshape(shape), requires_grad=True)
        b = torch.tensor(x.reshape(shape), requires_grad=True)
        ya = ember.nn.functional.pad(a, pads, mode=mode)
        yb = torch.nn.functional.pad(b, pads, mode=mode)
        _same(ya, yb)
        ya.sum().backward()
        yb.sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)


def test_index_select_last_dim_runs_match_torch() -> None:
    x = np.random.default_rng(7).standard_normal((70, 64)).astype(np.float32)
    for index in [[1, 0, 1, 2, 3, 2], [63, 62, 61, 0, 1, 2, 2, 2], [5, 9, 40, 0],
                  list(range(64))[::-1] + list(range(64))[:0], [0, 1, 2, 3, 4, 63]]:
        i = np.array(index, dtype=np.int64)
        _same(ember.index_select(ember.tensor(x), 1, ember.tensor(i)),
              torch.index_select(torch.tensor(x), 1, torch.tensor(i)))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_gather_last_dim_flat_path_matches_torch(dtype: type) -> None:
    # (from 4096 index elements along the last dim: one flat take)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((6, 7, 300)).astype(dtype)
    index = rng.integers(0, 300, (6, 7, 120))
    for src, idx in [(x, index), (x.transpose(1, 0, 2), index.transpose(1, 0, 2)),
                     (x, np.broadcast_to(index[:, :1], index.shape)),  # stride 0
                     (x[:, :3], index[:, :3, :]), (x, index[:5, :3]),
                     (x, index.astype(np.int32))]:
        _same(ember.gather(ember.tensor(src), 2, ember.tensor(np.ascontiguousarray(idx))),
              torch.gather(torch.tensor(src), 2, torch.tensor(np.ascontiguousarray(idx))))
    with pytest.raises(RuntimeError):
        torch.gather(torch.tensor(x), 2, torch.tensor(index - 1))
    with pytest.raises((RuntimeError, IndexError)):
        ember.gather(ember.tensor(x), 2, ember.tensor(index - 1))


def _without_kernel(name: str, run: Any) -> Any:
    """`run()` with the CPU backend's kernel `name` taken out (core's decomposition)."""
    kernels = plugins.get_backend("cpu").kernels
    kernel = kernels.pop(name)
    try:
        return run()
    finally:
        kernels[name] = kernel


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_fused_is_the_decomposition_and_torch(dtype: type, reduction: str) -> None:
    rng = np.random.default_rng(9)
    logp = rng.standard_normal((300, 40)).astype(dtype) * 4
    logp[5, :], logp[6, :] = np.nan, -np.inf  # (5 is ignored below: its NaN counts 0)
    target = rng.integers(0, 40, 300)
    target[[5, 17, 200]] = -100
    weight = rng.uniform(0.1, 2.0, 40).astype(dtype)
    for w in (None, weight):
        def run(lib: Any, w: np.ndarray | None = w) -> tuple:
            x = lib.tensor(logp, requires_grad=True)
            loss = lib.nn.functional.nll_loss(x, lib.tensor(target),
                                              None if w is None else lib.tensor(w),
                                              reduction=reduction)
            loss.backward(lib.ones_like(loss))
            return loss.detach().numpy(), x.grad.numpy()
        fused = run(ember)
        for got, expected in zip(fused, _without_kernel("nll_loss", lambda: run(ember))):
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_array_equal(got.reshape(-1).view(np.uint8),
                                          expected.reshape(-1).view(np.uint8))
        for got, expected in zip(fused, run(torch)):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(IndexError, match="Target 40 is out of bounds."):
        ember.nn.functional.nll_loss(ember.tensor(logp), ember.tensor(np.full(300, 40)))


@pytest.mark.parametrize("shape, size", [((4, 6, 32, 32), 7), ((2, 3, 4, 5), (9, 13)),
                                         ((2, 3, 10, 13), (3, 4)), ((2, 4, 6), 4),
                                         ((2, 3, 40, 9), (6, 5)),
                                         ((2, 2, 5, 6, 7), (3, 4, 5))])
def test_adaptive_avg_pool_stacked_windows_are_the_window_loop(
        shape: tuple, size: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from ember.core.ops import nn as nnops
    rng = np.random.default_rng(10)
    x = rng.standard_normal(shape).astype(np.float32)
    x.flat[::7], x.flat[::11], x.flat[::13] = np.nan, np.inf, -0.0
    x.reshape(-1)[:40] = -0.0  # (a window of -0.0 sums to -0.0)
    pool = {3: "adaptive_avg_pool1d", 4: "adaptive_avg_pool2d", 5: "adaptive_avg_pool3d"}
    grad = None

    def run(lib: Any) -> tuple:
        nonlocal grad
        a = lib.tensor(x, requires_grad=True)
        y = getattr(lib.nn.functional, pool[len(shape)])(a, size)
        if grad is None:
            grad = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        y.backward(lib.tensor(grad))
        return y.detach().numpy(), a.grad.numpy()
    stacked = run(ember)
    monkeypatch.setattr(nnops, "_STACKED_WIDTH", 0)  # (one narrow and sum per window)
    for got, expected in zip(stacked, run(ember)):
        np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
    for got, expected in zip(stacked, run(torch)):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
