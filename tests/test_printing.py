"""`repr(tensor)` follows PyTorch's format exactly (with "ember." where torch says "torch.").

Each case is checked twice: against an explicit expected string (so the format is pinned
even without torch), and against torch's own repr of the same data.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

NAN, INF = float("nan"), float("inf")

# name -> (data, dtype name or None, the expected repr)
CASES = {
    "float_vector": ([1.0, 2.5], None, "tensor([1.0000, 2.5000])"),
    "integer_valued_floats": ([1.0, 2.0], None, "tensor([1., 2.])"),
    "negative_floats": ([-1.5, 2.25, 3.0], None, "tensor([-1.5000,  2.2500,  3.0000])"),
    "float_matrix": ([[1.5, -2.0], [3.25, 4.0]], None,
                     "tensor([[ 1.5000, -2.0000],\n        [ 3.2500,  4.0000]])"),
    "column": ([[1.5], [22.25], [-3.0]], None,
               "tensor([[ 1.5000],\n        [22.2500],\n        [-3.0000]])"),
    "ints": ([1, -20, 300], None, "tensor([  1, -20, 300])"),
    "int_matrix": ([[-1, 2], [300, -4000]], None,
                   "tensor([[   -1,     2],\n        [  300, -4000]])"),
    "big_ints": ([123456789012, -5], None, "tensor([123456789012,           -5])"),
    "bools": ([True, False], None, "tensor([ True, False])"),
    "bool_matrix": ([[True, False], [False, True]], None,
                    "tensor([[ True, False],\n        [False,  True]])"),
    "zero_dim_float": (3.5, None, "tensor(3.5000)"),
    "zero_dim_integer_valued": (2.0, None, "tensor(2.)"),
    "zero_dim_int": (7, None, "tensor(7)"),
    "zero_dim_bool": (True, None, "tensor(True)"),
    "zero_dim_sci": (1e-5, None, "tensor(1.0000e-05)"),
    "zero_dim_nan": (NAN, None, "tensor(nan)"),
    "zero_dim_big": (1e12, None, "tensor(1.0000e+12)"),
    "small_and_one": ([1e-5, 1.0], None, "tensor([1.0000e-05, 1.0000e+00])"),
    "big_and_one": ([1e10, 1.0], None, "tensor([1.0000e+10, 1.0000e+00])"),
    "tiny": ([1e-10], None, "tensor([1.0000e-10])"),
    "large_integer_valued": ([123456789.0], None, "tensor([1.2346e+08])"),
    "ratio_over_1000": ([0.5, 600.0], None, "tensor([5.0000e-01, 6.0000e+02])"),
    "ratio_under_1000": ([0.01, 9.5], None, "tensor([0.0100, 9.5000])"),
    "integer_valued_ratio_1000": ([1.0, 1000.0], None, "tensor([   1., 1000.])"),
    "integer_valued_ratio_over_1000": ([1.0, 1001.0], None, "tensor([1.0000e+00, 1.0010e+03])"),
    "integer_valued_1e8": ([1e8, 1.0], None, "tensor([1.0000e+08, 1.0000e+00])"),
    "negative_sci": ([-1e10, 1.0], None, "tensor([-1.0000e+10,  1.0000e+00])"),
    "small_negative": ([-0.001, 10.0], None, "tensor([-1.0000e-03,  1.0000e+01])"),
    "zero_and_tiny": ([0.0, 1e-9], None, "tensor([0.0000e+00, 1.0000e-09])"),
    "all_zeros": ([0.0, 0.0], None, "tensor([0., 0.])"),
    "nan_inf": ([NAN, 1.5, INF, -INF], None, "tensor([   nan, 1.5000,    inf,   -inf])"),
    "nan_with_integer_valued": ([NAN, 1.0, 2.0], None, "tensor([nan, 1., 2.])"),
    "inf_with_integer_valued": ([INF, 1.0, 2.0], None, "tensor([inf, 1., 2.])"),
    "negative_zero": ([-0.0, 1.5], None, "tensor([-0.0000, 1.5000])"),
    "thirds": ([1 / 3, 2 / 3], None, "tensor([0.3333, 0.6667])"),
    "float64": ([1.0, 0.0], "float64", "tensor([1., 0.], dtype=ember.float64)"),
    "float16": ([1.5, 2.0], "float16", "tensor([1.5000, 2.0000], dtype=ember.float16)"),
    "bfloat16": ([1.0, 0.0], "bfloat16", "tensor([1., 0.], dtype=ember.bfloat16)"),
    "int32": ([1, 0], "int32", "tensor([1, 0], dtype=ember.int32)"),
    "int8": ([1, 0], "int8", "tensor([1, 0], dtype=ember.int8)"),
    "uint8": ([1, 0], "uint8", "tensor([1, 0], dtype=ember.uint8)"),
    "int16": ([1, 0], "int16", "tensor([1, 0], dtype=ember.int16)"),
    "int64_has_no_suffix": ([1, 0], "int64", "tensor([1, 0])"),
    "bool_has_no_suffix": ([1, 0], "bool", "tensor([ True, False])"),
    "three_d": (np.arange(12.0).reshape(2, 3, 2).tolist(), None,
                "tensor([[[ 0.,  1.],\n         [ 2.,  3.],\n         [ 4.,  5.]],\n\n"
                "        [[ 6.,  7.],\n         [ 8.,  9.],\n         [10., 11.]]])"),
    "long_row_wraps": ((np.arange(30) * 1.5).tolist(), None,
                       "tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, "
                       "10.5000,\n        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, "
                       "21.0000, 22.5000,\n        24.0000, 25.5000, 27.0000, 28.5000, 30.0000, "
                       "31.5000, 33.0000, 34.5000,\n        36.0000, 37.5000, 39.0000, 40.5000, "
                       "42.0000, 43.5000])"),
}

def _make(data, dtype_name):
    return ember.tensor(data, dtype=None if dtype_name is None else getattr(ember, dtype_name))


@pytest.mark.parametrize("name", list(CASES))
def test_repr_expected(name):
    data, dtype_name, expected = CASES[name]
    assert repr(_make(data, dtype_name)) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_repr_matches_torch(name):
    torch = pytest.importorskip("torch")
    data, dtype_name, _ = CASES[name]
    t = torch.tensor(data, dtype=None if dtype_name is None else getattr(torch, dtype_name))
    assert repr(_make(data, dtype_name)) == repr(t).replace("torch.", "ember.")


def test_str_is_repr():
    x = ember.tensor([1.5, 2.0])
    assert str(x) == repr(x)
    assert f"{x}" == repr(x)


@pytest.mark.parametrize("shape, expected", [
    ((0,), "tensor([])"),
    ((2, 0), "tensor([], size=(2, 0))"),
    ((0, 3), "tensor([], size=(0, 3))"),
    ((1, 0, 2), "tensor([], size=(1, 0, 2))"),
])
def test_empty(shape, expected):
    assert repr(ember.zeros(shape)) == expected
    assert repr(ember.tensor([])) == "tensor([])"
    assert repr(ember.zeros(shape, dtype=ember.int32)) == expected[:-1] + ", dtype=ember.int32)"


# -- autograd suffixes ---------------------------------------------------------------------------


def test_requires_grad_and_grad_fn_suffixes():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(x.sum()) == "tensor(3., grad_fn=<SumBackward0>)"
    assert repr(x.exp()) == "tensor([2.7183, 7.3891], grad_fn=<ExpBackward0>)"
    assert repr(x[0]) == "tensor(1., grad_fn=<SelectBackward0>)"
    assert repr(x.double()) == "tensor([1., 2.], dtype=ember.float64, grad_fn=<ToCopyBackward0>)"
    assert repr(x.detach()) == "tensor([1., 2.])"
    assert repr(x[:1]) == "tensor([1.], grad_fn=<SliceBackward0>)"
    h = ember.tensor([1.5, 2.0], dtype=ember.float16, requires_grad=True)
    assert repr(h) == "tensor([1.5000, 2.0000], dtype=ember.float16, requires_grad=True)"
    with ember.no_grad():
        assert repr(x * 2) == "tensor([2., 4.])"


def test_autograd_suffixes_match_torch():
    torch = pytest.importorskip("torch")
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    for f in (lambda v: v, lambda v: v * 2, lambda v: v.sum(), lambda v: v.exp(),
              lambda v: v[0], lambda v: v.double(), lambda v: v + 1, lambda v: v.detach(),
              lambda v: v.half() * 3):
        assert repr(f(x)) == repr(f(tx)).replace("torch.", "ember.")


def test_long_suffixes_wrap_onto_their_own_lines_as_torch():
    """A suffix that would pass the line width starts a new line, indented."""
    torch = pytest.importorskip("torch")
    row = [-1.0, 0.2593, 0.4074, 0.0, -0.4074, -0.2593, 1.0]
    expected = ("tensor([-1.0000,  0.2593,  0.4074,  0.0000, -0.4074, -0.2593,  1.0000],\n"
                "       dtype=ember.float64, grad_fn=<MulBackward0>)")
    x = ember.tensor(row, dtype=ember.float64, requires_grad=True)
    assert repr(x * 1) == expected
    for make in (lambda L: L.tensor(row, dtype=L.float64),
                 lambda L: L.tensor(row, dtype=L.float64, requires_grad=True) * 1,
                 lambda L: L.tensor(row[:6], dtype=L.float16, requires_grad=True),
                 lambda L: L.arange(30, dtype=L.int16).reshape(3, 10),
                 lambda L: L.tensor([[1e-8, 2.0] * 5] * 2, dtype=L.float64,
                                    requires_grad=True) * 2):
        assert repr(make(ember)) == repr(make(torch)).replace("torch.", "ember.")


# -- default dtype and devices ------------------------------------------------------------------


def test_default_dtype_float64_prints_float32_suffix():
    try:
        ember.set_default_dtype(ember.float64)
        assert repr(ember.tensor([1.5])) == "tensor([1.5000])"
        assert repr(ember.tensor([1.5], dtype=ember.float32)) == \
            "tensor([1.5000], dtype=ember.float32)"
    finally:
        ember.set_default_dtype(ember.float32)
    assert repr(ember.tensor([1.5], dtype=ember.float64)) == \
        "tensor([1.5000], dtype=ember.float64)"


def test_device_suffix():
    assert repr(ember.tensor([1.5, 2.0], device="countdev")) == \
        "tensor([1.5000, 2.0000], device='countdev:0')"
    # torch's order: device, then dtype, then autograd
    assert repr(ember.tensor([1, 2], dtype=ember.int32, device="countdev")) == \
        "tensor([1, 2], device='countdev:0', dtype=ember.int32)"
    x = ember.tensor([1.0], device="countdev", requires_grad=True)
    assert repr(x) == "tensor([1.], device='countdev:0', requires_grad=True)"


# -- summarised tensors (more than 1000 elements) ------------------------------------------------


SUMMARY_SHAPES = [(2000,), (1001,), (100, 100), (3, 1000), (10, 10, 11)]


@pytest.mark.parametrize("shape", SUMMARY_SHAPES)
def test_summarised_matches_torch(shape):
    torch = pytest.importorskip("torch")
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 7
    assert repr(ember.tensor(a)) == repr(torch.tensor(a)).replace("torch.", "ember.")


def test_summarised_expected():
    assert repr(ember.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    assert repr(ember.arange(2000) % 3 == 0) == \
        "tensor([ True, False, False,  ..., False,  True, False])"
    s = repr(ember.zeros(100, 100))
    assert s == ("tensor([[0., 0., 0.,  ..., 0., 0., 0.],\n"
                 "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                 "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                 "        ...,\n"
                 "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                 "        [0., 0., 0.,  ..., 0., 0., 0.],\n"
                 "        [0., 0., 0.,  ..., 0., 0., 0.]])")


def test_not_summarised_at_1000():
    s = repr(ember.arange(1000))
    assert "..." not in s and s.count(",") == 999


def test_summary_format_uses_only_shown_values():
    """The hidden middle does not decide the format: torch looks at the edges only."""
    torch = pytest.importorskip("torch")
    a = np.ones(2001, dtype=np.float32)
    a[1000] = 1e-7  # hidden by the summary
    assert repr(ember.tensor(a)) == repr(torch.tensor(a)).replace("torch.", "ember.")
    assert repr(ember.tensor(a)).startswith("tensor([1., 1., 1.,")


@pytest.mark.parametrize("seed, shape", [(0, (3, 20)), (1, (4, 4)), (2, (2, 3, 4)), (3, (7,))])
def test_random_values_match_torch(seed, shape):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    assert repr(ember.tensor(a)) == repr(torch.tensor(a)).replace("torch.", "ember.")


def test_views_and_non_contiguous_print_their_values():
    x = ember.arange(6.0).reshape(2, 3)
    assert repr(x.t()) == "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]])"
    assert repr(x[:, 1]) == "tensor([1., 4.])"


@pytest.fixture
def print_options():
    """Restore the default print options after a test changes them (in both libraries)."""
    torch = pytest.importorskip("torch")
    yield torch
    ember.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


@pytest.mark.parametrize("options", [
    {"precision": 2}, {"precision": 6}, {"profile": "short"}, {"profile": "full"},
    {"sci_mode": True}, {"sci_mode": False}, {"threshold": 5, "edgeitems": 1},
    {"linewidth": 30}, {"profile": "short", "precision": 3}, {"profile": "bogus"},
])
def test_set_printoptions_prints_as_torch(print_options, options):
    torch = print_options
    values = [np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
              np.array([1e-5, 1.0, 3e5], dtype=np.float32),
              np.arange(2000, dtype=np.float32), np.array([1.5, 300.0], dtype=np.float32),
              # no nonzero finite value: `0.`, `-0.`, `nan` whatever sci_mode says
              np.array([0.0, -0.0, np.nan, -np.inf], np.float32), np.zeros((2, 2), np.float32)]
    ember.set_printoptions(**options)
    torch.set_printoptions(**options)
    for v in values:
        assert repr(ember.tensor(v)) == repr(torch.tensor(v))
    # options stay until changed; sci_mode returns to automatic when not given
    ember.set_printoptions(precision=3)
    torch.set_printoptions(precision=3)
    assert repr(ember.tensor(values[1])) == repr(torch.tensor(values[1]))


def test_named_results_print_as_torch_return_types():
    torch = pytest.importorskip("torch")
    data = np.array([[1.0, 5.0, 2.0], [3.0, 2.0, 0.5]], dtype=np.float32)
    e, t = ember.tensor(data), torch.tensor(data)
    for call in (lambda m, x: m.max(x, 1), lambda m, x: m.sort(x, descending=True),
                 lambda m, x: m.topk(x, 2), lambda m, x: x.min(dim=0, keepdim=True),
                 lambda m, x: m.median(x, 1), lambda m, x: m.cummax(x, 1),
                 lambda m, x: m.aminmax(x), lambda m, x: m.kthvalue(x, 2)):
        mine, theirs = call(ember, e), call(torch, t)
        assert repr(mine).replace("ember.", "torch.") == repr(theirs)
        assert type(mine).__name__ == type(theirs).__name__
        assert isinstance(mine, tuple) and len(mine) == len(theirs)


def test_indexing_nodes_are_named_as_torch():
    # "Build the Neural Network" prints `param[:2]`: grad_fn=<SliceBackward0>. A basic
    # index is named after the last view it applies (select, slice, unsqueeze; a whole
    # slice inside a tuple applies none, giving an alias), as PyTorch's indexing does
    torch = pytest.importorskip("torch")

    def names(lib):
        x = lib.ones(4, 5, 6, requires_grad=True)
        keys = [slice(0, 2), 1, -1, None, Ellipsis, slice(None), (slice(None), 1),
                (1, slice(0, 2)), (None, 1), (1, None), (slice(None), slice(None)),
                (slice(0, 4),), (slice(None, 10),), (slice(-4, None),), (slice(0, 4, 2),),
                (Ellipsis, None, slice(1, 2)), (lib.tensor(1),), (1, Ellipsis),
                (slice(0, 2), Ellipsis, slice(None)), ([0, 1],), (True,)]
        return [x[k].grad_fn.name() for k in keys]

    assert names(ember) == names(torch)
