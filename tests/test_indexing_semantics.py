"""Indexing and error semantics as PyTorch's (issue 16's fuzz findings), each case run in
ember and in PyTorch (the oracle): the same values and dtypes, or the same exception type
and message (see torch_oracle.assert_same)."""

from __future__ import annotations

import math
import warnings

import pytest
from torch_oracle import DEVICES, assert_same

import ember

torch = pytest.importorskip("torch")


def _x(lib, T):
    return lib.arange(24, dtype=lib.float32).reshape(2, 3, 4) if T is None else \
        T(list(range(24)), dtype=lib.float32).reshape(2, 3, 4)


# -- 1. bool scalars in a key: a new dimension of size 1 (True) or 0 (False) ----------

BOOL_KEYS = {
    "true": lambda lib: True,
    "false": lambda lib: False,
    "tensor_true": lambda lib: lib.tensor(True),
    "tensor_false": lambda lib: lib.tensor(False),
    "uint8_scalar_one": lambda lib: lib.tensor(1, dtype=lib.uint8),
    "uint8_scalar_zero": lambda lib: lib.tensor(0, dtype=lib.uint8),
    "true_int": lambda lib: (True, 0),
    "int_true": lambda lib: (1, True),
    "ellipsis_true": lambda lib: (Ellipsis, True),
    "ellipsis_false": lambda lib: (Ellipsis, False),
    "none_true": lambda lib: (None, True),
    "true_none_slice": lambda lib: (True, None, slice(1, None)),
    "true_true": lambda lib: (True, True),
    "list_true": lambda lib: ([0, 1], True),
    "tensor_true_int": lambda lib: (lib.tensor([0, 1]), True, 1),
    "ints_then_true": lambda lib: (0, 1, 2, True),
    "true_ellipsis_false": lambda lib: (True, Ellipsis, False),
    "tensor_true_tensor": lambda lib: (lib.tensor(True), lib.tensor([0, 1])),
    "tensor_false_tensor": lambda lib: (lib.tensor(False), lib.tensor([0, 1])),
    "mask_true": lambda lib: (lib.tensor([True, False]), True),
    "slice_true_tensor": lambda lib: (slice(1, None), True, lib.tensor([0, 2])),
    "0d_int_tensor": lambda lib: (lib.tensor(1), True),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("key", list(BOOL_KEYS))
def test_getitem_with_bool_scalars(key, device):
    assert_same(lambda lib, T: _x(lib, T)[BOOL_KEYS[key](lib)], device)


@pytest.mark.parametrize("key", ["true", "false", "tensor_true", "true_true", "ellipsis_true",
                                 "none_true"])
def test_getitem_of_a_0d_tensor_with_bool_scalars(key):
    assert_same(lambda lib, T: T(5.0)[BOOL_KEYS[key](lib)])


def test_uint8_masks_index_as_bool_masks_with_pytorchs_warning(monkeypatch):
    assert_same(lambda lib, T: _x(lib, T)[T([1, 0], dtype=lib.uint8)])
    assert_same(lambda lib, T: _x(lib, T)[:, T([[1, 0, 1, 1]] * 3, dtype=lib.uint8)
                                          .bool()] * 2)
    from ember.core import errors

    monkeypatch.setattr(errors, "_warned", set())  # (PyTorch warns once a process; so does ember)
    with pytest.warns(UserWarning, match="indexing with dtype ember.uint8 is now deprecated"):
        ember.zeros(2)[ember.tensor([1, 0], dtype=ember.uint8)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.zeros(2)[ember.tensor([1, 0], dtype=ember.uint8)]


def _write(key, value, dtype="float32", shape=(2, 3, 4)):
    """A case writing `value(lib, T)` at `key(lib)` into arange(24) of `dtype`."""
    def case(lib, T):
        n = 1
        for s in shape:
            n *= s
        x = T(list(range(n)), dtype=getattr(lib, dtype)).reshape(shape)
        x[key(lib)] = value(lib, T)
        return x
    return case


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("key", ["true", "false", "tensor_true", "tensor_false", "true_int",
                                 "ellipsis_true", "none_true", "true_true", "list_true",
                                 "tensor_true_int", "mask_true", "slice_true_tensor",
                                 "ints_then_true"])
def test_setitem_with_bool_scalars(key, device):
    assert_same(_write(BOOL_KEYS[key], lambda lib, T: T(-1.0)), device)
    assert_same(_write(BOOL_KEYS[key], lambda lib, T: -7), device)


def test_setitem_with_python_false_writes_nothing_and_checks_nothing():
    assert_same(_write(lambda lib: False, lambda lib, T: T([1.0] * 7)))
    assert_same(_write(lambda lib: True, lambda lib, T: T([1.0] * 7)))  # True checks


def test_bool_scalar_indices_are_differentiable():
    def case(lib, T):
        w = T([1.0, 2.0, 3.0], requires_grad=True)
        v = T(5.0, requires_grad=True)
        x = w * 1
        x[..., True] = v * lib.ones(3, 1)
        y = w * 2
        y[True, 1] = v
        h = (w * 5)[True]
        ((x * 2).sum() + (y * lib.arange(3)).sum() + (h * h).sum()).backward()
        return x, y, h, w.grad, v.grad
    assert_same(case)


# -- 2. a value of another dtype: copied through basic indices, refused through tensor ones


DTYPE_WRITES = {
    # (key, value, destination dtype)
    "int_float": (lambda lib: 0, lambda lib, T: T(1.7), "int64"),
    "slice_float": (lambda lib: slice(1, 3), lambda lib, T: T([1.7, -2.6]), "int64"),
    "slice_nan_inf": (lambda lib: slice(1, 3), lambda lib, T: T([float("nan"), float("inf")]),
                      "int64"),
    "slice_float_into_uint8": (lambda lib: slice(1, 3), lambda lib, T: T([-1.7, 300.0]),
                               "uint8"),
    "slice_double_into_half": (lambda lib: slice(0, 2), lambda lib, T: T([1.0, 2.0],
                                                                          dtype=lib.float64),
                               "float16"),
    "none_float": (lambda lib: (None, 1), lambda lib, T: T(2.5), "int32"),
    "0d_index_float": (lambda lib: lib.tensor(1), lambda lib, T: T(2.5), "int64"),
    "leading_ones": (lambda lib: 0, lambda lib, T: T([[[2.5]]]), "int64"),
    "python_true_float": (lambda lib: True, lambda lib, T: T(2.5), "int64"),
    "tensor_float": (lambda lib: lib.tensor([1, 2]), lambda lib, T: T([1.7, -2.6]), "int64"),
    "list_float": (lambda lib: [1, 2], lambda lib, T: T([1.7, -2.6]), "int64"),
    "tensor_0d_float": (lambda lib: lib.tensor([1, 2]), lambda lib, T: T(1.5), "int64"),
    "tensor_int32": (lambda lib: lib.tensor([1, 2]), lambda lib, T: T([1, 2],
                                                                      dtype=lib.int32), "int64"),
    "tensor_bool": (lambda lib: lib.tensor([1, 2]), lambda lib, T: T([True, False]), "int64"),
    "tensor_double_into_float": (lambda lib: lib.tensor([1, 2]), lambda lib, T: T(
        [1.0, 2.0], dtype=lib.float64), "float32"),
    "tensor_float_into_double": (lambda lib: lib.tensor([1, 2]), lambda lib, T: T([1.5, 2.5]),
                                 "float64"),
    "tensor_int_into_float": (lambda lib: lib.tensor([1, 2]), lambda lib, T: T([1, 2]),
                              "float32"),
    "ellipsis_tensor_float": (lambda lib: (Ellipsis, lib.tensor([1, 2])),
                              lambda lib, T: T([1.7, -2.6]), "int64"),
    "none_tensor_float": (lambda lib: (None, lib.tensor([1, 2])),
                          lambda lib, T: T([1.7, -2.6]), "int64"),
    "tensor_true_float": (lambda lib: lib.tensor(True), lambda lib, T: T(1.7), "int64"),
    "true_tuple_float": (lambda lib: (True, slice(1, 3)), lambda lib, T: T([1.7, 2.6]),
                         "int64"),
    # one element through a single bool mask: PyTorch's masked_fill_ path, any dtype
    "mask_0d_float": (lambda lib: lib.tensor([False, True, True, False]),
                      lambda lib, T: T(1.5), "int64"),
    "mask_1elem_int_into_float": (lambda lib: lib.tensor([False, True, True, False]),
                                  lambda lib, T: T([2]), "float32"),
    "mask_0d_nan_into_int": (lambda lib: lib.tensor([False, True, True, False]),
                             lambda lib, T: T(float("nan")), "int64"),
    "mask_0d_overflow_uint8": (lambda lib: lib.tensor([False, True, True, False]),
                               lambda lib, T: T(300), "uint8"),
    "mask_0d_float_into_bool": (lambda lib: lib.tensor([False, True, True, False]),
                                lambda lib, T: T(2.5), "bool"),
    "mask_2elem_double": (lambda lib: lib.tensor([False, True, True, False]),
                          lambda lib, T: T([2.5, 1.0], dtype=lib.float64), "float32"),
    "mask_and_tensor": (lambda lib: (lib.tensor([False, True]), lib.tensor([0, 1])),
                        lambda lib, T: T(7, dtype=lib.int32), "float32"),
    "true_and_mask": (lambda lib: (True, lib.tensor([False, True])),
                      lambda lib, T: T(7, dtype=lib.int32), "float32"),
    "uint8_mask_scalar": (lambda lib: lib.tensor([0, 1], dtype=lib.uint8),
                          lambda lib, T: 5, "float32"),
    "python_float_tensor_index": (lambda lib: lib.tensor([1, 2]), lambda lib, T: 1.5, "int64"),
    "python_overflow": (lambda lib: lib.tensor([1, 2]), lambda lib, T: 1e20, "int64"),
    "list_value": (lambda lib: lib.tensor([1, 2]), lambda lib, T: [1.5, 2.5], "int64"),
    "list_value_basic": (lambda lib: slice(1, 3), lambda lib, T: [1.5, 2.5], "int64"),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(DTYPE_WRITES))
def test_setitem_value_dtypes_as_pytorch(case, device):
    key, value, dtype = DTYPE_WRITES[case]
    shape = (2, 2) if case in ("mask_and_tensor", "true_and_mask", "uint8_mask_scalar") \
        else (4,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # uint8 masks' deprecation
        assert_same(_write(key, value, dtype, shape), device,
                    match="can't assign a list to a" if case.startswith("list_value") else None)


INDEX_PUTS = {
    "mask_1elem_any_dtype": lambda lib, T, a: a.index_put_((T([False, True, True, False]),),
                                                           T([2])),
    "mask_0d_float_into_int": lambda lib, T, a: a.long().index_put_(
        (T([False, True, True, False]),), T(1.5)),
    "mask_accumulate_refuses": lambda lib, T, a: a.index_put_(
        (T([False, True, True, False]),), T([2]), accumulate=True),
    "tensor_index_refuses": lambda lib, T, a: a.index_put_((T([1, 2]),), T([1, 2])),
    "out_of_place": lambda lib, T, a: a.index_put((T([1, 2]),), T([1.0, 2.0])),
}


@pytest.mark.parametrize("case", list(INDEX_PUTS))
def test_index_put_dtypes_as_pytorch(case):
    assert_same(lambda lib, T: INDEX_PUTS[case](lib, T, lib.zeros(4)))


SAME_DTYPE_OPS = {
    "scatter": lambda lib, a, i, f: lib.scatter(a, 0, i, f),
    "scatter_": lambda lib, a, i, f: a.scatter_(0, i, f),
    "scatter_reduce_add": lambda lib, a, i, f: a.scatter(0, i, f, reduce="add"),
    "scatter_add": lambda lib, a, i, f: lib.scatter_add(a, 0, i, f),
    "scatter_add_": lambda lib, a, i, f: a.scatter_add_(0, i, f),
    "scatter_reduce": lambda lib, a, i, f: lib.scatter_reduce(a, 0, i, f, "sum"),
    "index_add": lambda lib, a, i, f: lib.index_add(a, 0, i, f),
    "index_add_": lambda lib, a, i, f: a.index_add_(0, i, f),
    "index_reduce": lambda lib, a, i, f: lib.index_reduce(a, 0, i, f, "prod"),
    "index_copy": lambda lib, a, i, f: lib.index_copy(a, 0, i, f),
    "masked_scatter": lambda lib, a, i, f: lib.masked_scatter(a, a > -1, f),
    "put_": lambda lib, a, i, f: a.put_(i, f),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", list(SAME_DTYPE_OPS))
@pytest.mark.parametrize("dtypes", [("int64", "float32"), ("float32", "float64")])
def test_index_writes_require_the_same_dtype(op, dtypes, device):
    def case(lib, T):
        a = T([0, 0, 0, 0], dtype=getattr(lib, dtypes[0]))
        return SAME_DTYPE_OPS[op](lib, a, T([1, 2]), T([1.5, 2.5], dtype=getattr(lib, dtypes[1])))
    assert_same(case, device)


def test_index_fill_takes_a_0d_tensor_of_any_dtype():
    assert_same(lambda lib, T: lib.index_fill(T([0, 0, 0]), 0, T([1]), T(1.5)))
    assert_same(lambda lib, T: lib.index_fill(T([0.0, 0.0]), 0, T([1]), T(2, dtype=lib.int32)))
    assert_same(lambda lib, T: lib.index_fill(T([0, 0]), 0, T([1]), T(float("nan"))))
    assert_same(lambda lib, T: lib.index_fill(T([0.0, 0.0]), 0, T([1]), T([1.0, 2.0])))


# -- 3. a convolution's operands on two devices: the device error, whatever the batch ----


@pytest.mark.skipif("opencl" not in DEVICES, reason="needs an OpenCL device")
@pytest.mark.parametrize("batch", [0, 2])
@pytest.mark.parametrize("op,x,w,b", [
    ("conv1d", (3, 5), (4, 3, 3), None), ("conv2d", (3, 5, 5), (4, 3, 3, 3), None),
    ("conv3d", (3, 4, 4, 4), (4, 3, 3, 3, 3), None),
    ("conv_transpose2d", (3, 5, 5), (3, 4, 3, 3), None),
    ("conv2d", (3, 5, 5), (4, 3, 3, 3), "bias")])
def test_conv_operands_on_two_devices_raise_the_device_error(op, x, w, b, batch):
    F = ember.nn.functional
    weight_device = "cpu" if b else "opencl"
    bias = ember.zeros(w[0] if "transpose" not in op else w[1], device="opencl") if b else None
    with pytest.raises(RuntimeError, match=r"^Expected all tensors to be on the same device, "
                                           r"but found at least two devices, cpu and "
                                           rf"opencl:0!\n{op}: "):
        getattr(F, op)(ember.zeros(batch, *x), ember.zeros(*w, device=weight_device), bias)


# -- 4. an allocation too large for memory: PyTorch's RuntimeError, naming the bytes -----


@pytest.mark.parametrize("make", [
    lambda lib: lib.empty(2 ** 48), lambda lib: lib.zeros(2 ** 24, 2 ** 24),
    lambda lib: lib.ones(2 ** 47, dtype=lib.float64), lambda lib: lib.arange(2 ** 48),
    lambda lib: lib.zeros(1, 2 ** 24).expand(2 ** 24, 2 ** 24).contiguous(),
    lambda lib: lib.zeros(2 ** 24, 1) * lib.zeros(1, 2 ** 24)])
def test_huge_allocations_raise_runtime_error_naming_the_bytes(make):
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=r"can't allocate memory: you tried to allocate "
                                               r"\d{15,} bytes"):
            make(lib)
    with pytest.raises(ember.OutOfMemoryError, match=r"CPU out of memory"):
        make(ember)


def test_zeros_of_more_elements_than_int64_holds_is_refused():
    assert_same(lambda lib, T: lib.zeros(2 ** 62))
    assert_same(lambda lib, T: lib.zeros(2 ** 31, 2 ** 31, 4))


@pytest.mark.skipif("opencl" not in DEVICES, reason="needs an OpenCL device")
def test_huge_opencl_allocations_raise_out_of_memory_naming_the_bytes():
    with pytest.raises(ember.OutOfMemoryError, match=r"OpenCL out of memory on opencl:0.*"
                                                     r"\(4398046511104 bytes\)"):
        ember.empty(2 ** 40, device="opencl")


# -- 5. indices outside the range: the error PyTorch raises, naming the first it meets ---

BAD_INDICES = [[-1, 5], [5, -1], [-7, 9], [9, -7], [1, -1], [-5, 0], [4, 7], [0, 3]]

INDEX_OPS = {
    "index_select_dim0": lambda lib, x, i: lib.index_select(x, 0, i),
    "index_select_dim1": lambda lib, x, i: lib.index_select(x.t().contiguous(), 1, i),
    "index_select_1d": lambda lib, x, i: lib.index_select(x[0], 0, i),
    "index_select_3d_last": lambda lib, x, i: lib.index_select(x.reshape(2, 2, 2), 2, i % 4),
    "take": lambda lib, x, i: lib.take(x, i * 2),
    "gather": lambda lib, x, i: lib.gather(x, 1, i.reshape(1, -1)),
    "gather_rows": lambda lib, x, i: lib.gather(x, 1, lib.stack([i.flip(0), i])),
    "scatter": lambda lib, x, i: lib.scatter(x, 1, i.reshape(1, -1), 1.0),
    "scatter_add": lambda lib, x, i: lib.scatter_add(x, 1, i.reshape(1, -1),
                                                     lib.ones(1, i.numel())),
    "scatter_reduce": lambda lib, x, i: lib.scatter_reduce(x, 1, i.reshape(1, -1),
                                                           lib.ones(1, i.numel()), "amax"),
    "index_add_2d": lambda lib, x, i: lib.index_add(x, 1, i, lib.ones(2, i.numel())),
    "index_add_1d": lambda lib, x, i: lib.index_add(x[0], 0, i, lib.ones(i.numel())),
    "index_copy": lambda lib, x, i: lib.index_copy(x, 1, i, lib.ones(2, i.numel())),
    "index_fill": lambda lib, x, i: lib.index_fill(x, 1, i, 1.0),
    "index_reduce": lambda lib, x, i: lib.index_reduce(x, 1, i, lib.ones(2, i.numel()),
                                                       "prod"),
    "put": lambda lib, x, i: x.put(i * 2, lib.ones(i.shape)),
    "getitem": lambda lib, x, i: x[:, i],
    "getitem_two_tensors": lambda lib, x, i: x.reshape(2, 2, 2)[i % 3, i],
    "setitem": lambda lib, x, i: x.index_put_((lib.tensor([0]), i), lib.tensor(1.0)),
    "take_along_dim": lambda lib, x, i: lib.take_along_dim(x, i.reshape(1, -1), 1),
    "take_along_dim_flat": lambda lib, x, i: lib.take_along_dim(x, i * 2),
    "embedding": lambda lib, x, i: lib.nn.functional.embedding(i, x.t()),
}


@pytest.mark.parametrize("op", list(INDEX_OPS))
@pytest.mark.parametrize("index", BAD_INDICES, ids=str)
def test_out_of_range_indices_raise_as_pytorch(op, index):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # index_reduce's "beta" warning in PyTorch
        assert_same(lambda lib, T: INDEX_OPS[op](lib, lib.arange(8.0).reshape(2, 4),
                                                 T(index)))


@pytest.mark.skipif("opencl" not in DEVICES, reason="needs an OpenCL device")
@pytest.mark.parametrize("op", ["gather", "scatter", "index_select_dim1", "getitem", "take"])
def test_out_of_range_indices_on_opencl(op):
    for index in ([-7, 9], [9, -7]):
        assert_same(lambda lib, T, index=index: INDEX_OPS[op](
            lib, T(list(range(8)), dtype=lib.float32).reshape(2, 4), T(index)), "opencl")


# -- 6. zero-size inputs: accepted where PyTorch accepts them, refused as it refuses -----

EMPTY_CASES = {
    "cat_legacy_empty": lambda lib, T: lib.cat([lib.zeros(0), lib.ones(2, 3)], 1),
    "cat_only_legacy_empty_any_dim": lambda lib, T: lib.cat([lib.zeros(0)], 1),
    # (a skipped legacy empty tensor still takes part in the result's dtype)
    "cat_legacy_empty_promotes": lambda lib, T: lib.cat([lib.tensor([]), lib.tensor([3])]),
    "cat_legacy_empty_f64_last": lambda lib, T: lib.cat([T([[3]]), lib.zeros(0).double()]),
    "cat_empty_rows": lambda lib, T: lib.cat([lib.zeros(0, 3), lib.ones(2, 3)]),
    "cat_empty_columns_mismatch": lambda lib, T: lib.cat([lib.zeros(2, 0), lib.ones(3, 3)], 1),
    "cat_empty_rank_mismatch": lambda lib, T: lib.cat([lib.zeros(2, 0, 3), lib.ones(2, 3)]),
    "cat_nothing": lambda lib, T: lib.cat([]),
    "softmax_empty": lambda lib, T: lib.softmax(lib.zeros(3, 0), 1),
    "softmax_empty_other_dim": lambda lib, T: lib.softmax(lib.zeros(3, 0), 0),
    "softmax_empty_int": lambda lib, T: lib.softmax(lib.zeros(0, dtype=lib.int64), 0),
    "log_softmax_empty_int": lambda lib, T: lib.log_softmax(lib.zeros(0, dtype=lib.int64), 0),
    "softmax_int_refused": lambda lib, T: lib.softmax(lib.zeros(2, dtype=lib.int64), 0),
    "softmax_empty_bad_dim": lambda lib, T: lib.log_softmax(lib.zeros(0, 2), 5),
    "repeat_empty": lambda lib, T: lib.zeros(2, 0).repeat(2, 3),
    "repeat_zero_times": lambda lib, T: lib.zeros(2, 3).repeat(0, 1),
    "repeat_negative": lambda lib, T: lib.zeros(0).repeat(-1),
    "repeat_nothing": lambda lib, T: lib.zeros(0).repeat(),
    "repeat_nothing_0d": lambda lib, T: lib.zeros(()).repeat(),
    "tile_int": lambda lib, T: lib.zeros(0).tile(2),
    "tile_int_values": lambda lib, T: T([1.0, 2.0]).tile(2),
    "scatter_empty_index_lower_rank": lambda lib, T: lib.zeros(2, 3).scatter(
        1, lib.zeros(0, dtype=lib.int64), lib.ones(0)),
    "scatter_empty_index_value": lambda lib, T: lib.zeros(2, 3).scatter(
        1, lib.zeros(0, dtype=lib.int64), 1.0),
    "scatter_empty_index_larger": lambda lib, T: lib.zeros(2, 3).scatter(
        1, lib.zeros(3, 0, dtype=lib.int64), lib.ones(1, 1)),
    "scatter_index_larger_than_src": lambda lib, T: lib.zeros(2, 3).scatter(
        1, lib.zeros(2, 5, dtype=lib.int64), lib.ones(0, 3)),
    "scatter_add_empty_index": lambda lib, T: lib.zeros(2, 3).scatter_add(
        1, lib.zeros(0, 5, dtype=lib.int64), lib.ones(0, 5)),
    "scatter_reduce_empty_index": lambda lib, T: lib.zeros(2, 3).scatter_reduce(
        1, lib.zeros(0, dtype=lib.int64), lib.ones(0), "sum"),
    "scatter_into_empty": lambda lib, T: lib.zeros(0, 3).scatter(
        1, lib.zeros(0, 3, dtype=lib.int64), lib.ones(0, 3)),
    "gather_empty_index": lambda lib, T: lib.zeros(2, 3).gather(1, lib.zeros(0, 5,
                                                                          dtype=lib.int64)),
    "gather_empty_index_lower_rank": lambda lib, T: lib.zeros(2, 3).gather(
        1, lib.zeros(0, dtype=lib.int64)),
    "gather_index_too_large": lambda lib, T: lib.zeros(2, 3).gather(
        1, lib.zeros(3, 1, dtype=lib.int64)),
    "gather_rank_mismatch": lambda lib, T: lib.zeros(2, 3).gather(1, lib.zeros(
        1, dtype=lib.int64)),
    "index_select_empty_dim": lambda lib, T: lib.zeros(2, 0).index_select(1, T([0])),
    "index_select_empty_index": lambda lib, T: lib.zeros(2, 0).index_select(
        1, lib.zeros(0, dtype=lib.int64)),
    "index_add_into_empty": lambda lib, T: lib.zeros(2, 0).index_add(1, T([5]), lib.ones(2, 1)),
    "index_add_into_empty_1d": lambda lib, T: lib.zeros(0).index_add(0, T([5]), lib.ones(1)),
    "take_from_empty": lambda lib, T: lib.take(lib.zeros(0), T([0])),
    "put_into_empty": lambda lib, T: lib.zeros(0).put(T([0]), lib.ones(1)),
    "getitem_empty_dim": lambda lib, T: lib.zeros(0, 3)[T([0])],
    "getitem_empty_dim_empty_index": lambda lib, T: lib.zeros(0, 3)[lib.zeros(0,
                                                                           dtype=lib.int64)],
    "max_of_nothing": lambda lib, T: lib.zeros(0).max(),
    "group_norm_empty_batch": lambda lib, T: lib.nn.functional.group_norm(lib.zeros(0, 4), 2),
    "max_pool_empty_channels": lambda lib, T: lib.nn.functional.max_pool1d(lib.zeros(1, 0, 4),
                                                                           2),
    "max_pool_empty_length": lambda lib, T: lib.nn.functional.max_pool2d(
        lib.zeros(1, 2, 0, 4), 2),
    "avg_pool_empty_channels": lambda lib, T: lib.nn.functional.avg_pool2d(
        lib.zeros(1, 0, 4, 4), 2),
    "max_pool_empty_batch": lambda lib, T: lib.nn.functional.max_pool1d(lib.zeros(0, 2, 4), 2),
    "reshape_ambiguous": lambda lib, T: lib.zeros(0).reshape(0, -1),
    "view_ambiguous": lambda lib, T: lib.zeros(0).view(-1, 0),
}


# where ember's message cannot be PyTorch's word for word ("torch.cat()", a kernel's name)
EMPTY_MATCH = {"cat_nothing": "cat(): expected a non-empty list of Tensors",
               "max_pool_empty_length": "tensor with optional 0 dim batch size",
               "avg_pool_empty_channels": "tensor with optional 0 dim batch size"}


@pytest.mark.parametrize("case", list(EMPTY_CASES))
def test_zero_size_inputs_as_pytorch(case):
    assert_same(EMPTY_CASES[case], match=EMPTY_MATCH.get(case))


def test_scatter_and_gather_with_empty_indices_stay_differentiable():
    x = ember.ones(2, 3, requires_grad=True)
    y = x.scatter(1, ember.zeros(0, dtype=ember.int64), ember.ones(0)) * 2
    g = x.gather(1, ember.zeros(2, 0, dtype=ember.int64))
    (y.sum() + g.sum()).backward()
    assert g.shape == (2, 0) and x.grad.tolist() == [[2.0] * 3] * 2


# -- the last names `ember compat` listed: against PyTorch -----------------------------

NEW_NAMES = {
    "put_function": lambda lib, T: lib.put(T([0.0, 0.0, 0.0]), T([2, -3]), T([5.0, 6.0])),
    "put_accumulate": lambda lib, T: lib.put(T([1.0, 1.0]), T([1, 1]), T([5.0, 6.0]),
                                             accumulate=True),
    "norm_except_dim_0": lambda lib, T: lib.norm_except_dim(_x(lib, T), 2, 0),
    "norm_except_dim_1": lambda lib, T: lib.norm_except_dim(_x(lib, T), 3, 1),
    "norm_except_dim_last": lambda lib, T: lib.norm_except_dim(_x(lib, T), 2, 2),
    "norm_except_dim_all": lambda lib, T: lib.norm_except_dim(_x(lib, T), 2, -1),
    "norm_except_dim_negative": lambda lib, T: lib.norm_except_dim(_x(lib, T), 2, -2),
    "norm_except_dim_bad_dim": lambda lib, T: lib.norm_except_dim(_x(lib, T), 2, 5),
    "slice_inverse": lambda lib, T: lib.slice_inverse(_x(lib, T)[:, 1:], _x(lib, T), 1, 1),
    "slice_inverse_too_small": lambda lib, T: lib.slice_inverse(
        _x(lib, T)[:, 1:], lib.zeros(2, 9, 4), 1, 1),
    "module_load": lambda lib, T: lib.zeros(3).module_load(T([1.0, 2.0, 3.0],
                                                             dtype=lib.float64)),
    "module_load_assign": lambda lib, T: lib.zeros(3).module_load(
        T([1.0, 2.0, 3.0], dtype=lib.float64), assign=True),
    "stft_needs_return_complex": lambda lib, T: lib.stft(lib.ones(20), 8),
    "stft_2d": lambda lib, T: lib.stft(_x(lib, T).reshape(2, 12), 4, hop_length=2,
                                       return_complex=False),
    "stft_hann": lambda lib, T: lib.stft(lib.arange(30.0).sin(), 8, window=0.5 - 0.5 * (
        lib.arange(8.0) * (math.pi / 4)).cos(), return_complex=False),
    "stft_not_centred": lambda lib, T: lib.stft(lib.arange(30.0).cos(), 8, center=False,
                                                return_complex=False),
    "stft_method_normalized": lambda lib, T: lib.arange(30.0).cos().stft(
        6, 3, normalized=True, onesided=False, return_complex=False),
    "stft_frame_longer_than_signal": lambda lib, T: lib.stft(lib.ones(5), 16, center=False,
                                                             return_complex=False),
    "istft_of_a_real_tensor": lambda lib, T: lib.istft(lib.ones(5, 3, 2), 8),
}


@pytest.mark.parametrize("case", list(NEW_NAMES))
def test_new_names_as_pytorch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # stft's return_complex=False deprecation
        assert_same(NEW_NAMES[case], rtol=1e-4, atol=1e-4,
                    match={"slice_inverse_too_small": "",
                           "stft_frame_longer_than_signal": "n_fft=16",
                           "norm_except_dim_bad_dim": "Dimension out of range"}.get(case))


def test_stft_warns_as_pytorch_and_is_differentiable():
    x = ember.arange(20.0, requires_grad=True)
    with pytest.warns(UserWarning, match="stft with return_complex=False is deprecated"):
        ember.stft(x, 8, return_complex=False).square().sum().backward()
    tx = torch.arange(20.0, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.stft(tx, 8, return_complex=False).square().sum().backward()
    assert x.grad.numpy() == pytest.approx(tx.grad.numpy(), rel=1e-4)


def _spd(lib, T, m=12, seed=0.5):
    x = (lib.arange(float(m * m), dtype=lib.float64).reshape(m, m) * seed).sin()
    return x @ x.T + lib.eye(m, dtype=lib.float64)


@pytest.mark.parametrize("kw", [dict(k=2), dict(k=3, largest=False), dict(n=3),
                                dict(k=2, B="B"), dict(k=5), dict(batch=True)], ids=str)
def test_lobpcg_eigenvalues_as_pytorch(kw):
    def case(lib, T):
        A, args = _spd(lib, T), dict(kw)
        if args.pop("batch", False):
            A = lib.stack([A, A * 2])
        if "B" in args:
            args["B"] = _spd(lib, T, seed=0.3) + 12 * lib.eye(12, dtype=lib.float64)
        values, vectors = lib.lobpcg(A, **args)
        return values, tuple(vectors.shape)
    assert_same(case, rtol=1e-6, atol=1e-8)


def test_native_norm_refuses_dense_tensors_as_pytorch():
    for lib in (torch, ember):
        with pytest.raises(NotImplementedError, match="native_norm"):
            lib.native_norm(lib.ones(3))


_INDEX_OPS = {  # name: the call, given (lib, x, 2-d index i, 1-d index v)
    "gather": lambda lib, x, i, v: lib.gather(x, 0, i),
    "scatter": lambda lib, x, i, v: lib.zeros(2, 3).scatter(0, i, x),
    "scatter_add": lambda lib, x, i, v: lib.zeros(2, 3).scatter_add(0, i, x),
    "scatter_reduce": lambda lib, x, i, v: lib.zeros(2, 3).scatter_reduce(0, i, x, "amax"),
    "index_select": lambda lib, x, i, v: x.index_select(1, v),
    "index_add": lambda lib, x, i, v: lib.zeros(2, 3).index_add(1, v, x[:, :2]),
    "index_copy": lambda lib, x, i, v: lib.zeros(2, 3).index_copy(1, v, x[:, :2]),
    "index_fill": lambda lib, x, i, v: x.index_fill(1, v, -1.0),
    "take": lambda lib, x, i, v: lib.take(x, v),
    "take_along_dim": lambda lib, x, i, v: lib.take_along_dim(x, i, 0),
    "put_": lambda lib, x, i, v: x.clone().put_(v, lib.tensor([9.0, 9.0])),
    "embedding": lambda lib, x, i, v: lib.nn.functional.embedding(v, x),
    "embedding_bag": lambda lib, x, i, v: lib.nn.functional.embedding_bag(v.view(1, 2), x),
    "getitem": lambda lib, x, i, v: x[:, v],
    "index_put_": lambda lib, x, i, v: x.clone().index_put_((v,), lib.tensor(0.0)),
    "one_hot": lambda lib, x, i, v: lib.nn.functional.one_hot(v, 3),
}


@pytest.mark.parametrize("dtype", ["int32", "int16", "float32"])
@pytest.mark.parametrize("op", list(_INDEX_OPS))
def test_index_tensors_of_each_dtype_as_torch(op, dtype):
    """int32 indices where PyTorch's kernels take them (gather, scatter, index_select,
    index_add, embedding, indexing), PyTorch's error type and message elsewhere."""
    def run(lib):
        x = lib.arange(6.0).reshape(2, 3)
        i = lib.tensor([[0, 1, 0], [1, 0, 1]]).to(getattr(lib, dtype))
        v = lib.tensor([0, 1]).to(getattr(lib, dtype))
        try:
            out = _INDEX_OPS[op](lib, x, i, v)
        except (RuntimeError, IndexError) as e:
            return type(e).__name__, str(e).replace(lib.__name__ + ".", "")
        return "ok", out.tolist()

    assert run(ember) == run(torch)
