"""Elementwise math and tensor creation, compared with PyTorch (session 39, helper al):
each test pins one behaviour the special_math_tour / tensor_factories_tour programs found
different."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _error(lib, fn):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e).splitlines()[0].replace("ember.", "torch.")
    raise AssertionError("no error")


def _same_error(fn):
    assert _error(ember, fn) == _error(torch, fn)


def _values(t):
    return t.detach().double().tolist() if not t.is_complex() else t.detach().tolist()


# -- elementwise math ---------------------------------------------------------------------


def test_ndtr_is_one_plus_erf_halved():
    # PyTorch's (1 + erf(x / sqrt 2)) / 2: exactly 0 far in the lower tail, in float64 too
    for lib in (ember, torch):
        x = lib.tensor([-40.0, -10.0, -1.0, 0.0, 1.0, 10.0], dtype=lib.float64)
        assert lib.special.ndtr(x)[1].item() == 0.0
    x = [-3.0, -0.5, 0.0, 2.0]
    assert ember.special.ndtr(ember.tensor(x)).tolist() == \
        torch.special.ndtr(torch.tensor(x)).tolist()


@pytest.mark.parametrize("fn, label", [
    (lambda lib, x: lib.special.ndtr(x), "MulBackward1"),
    (lambda lib, x: lib.special.log_ndtr(x), "SpecialLogNdtrBackward0"),
    (lambda lib, x: lib.special.multigammaln(x + 2, 2), "MvlgammaBackward0"),
    (lambda lib, x: lib.addcdiv(x, x, x + 3, value=2), "AddcdivBackward0"),
    (lambda lib, x: lib.ldexp(x, lib.tensor([1, -1])), "LdexpBackward0"),
])
def test_grad_fn_names(fn, label):
    for lib in (ember, torch):
        x = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        y = fn(lib, x)
        assert y.grad_fn.name() == label
        y.sum().backward()
    want = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    got = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    fn(torch, want).sum().backward()
    fn(ember, got).sum().backward()
    assert got.grad.tolist() == pytest.approx(want.grad.tolist(), rel=1e-12)


def test_ldexp_gradient_uses_an_integer_power_of_two():
    # derivatives.yaml: grad * 2 ** other: an int `other` makes 2**-1 an integer 0
    for int_dtype in ("int64", "int32"):
        grads = []
        for lib in (ember, torch):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            lib.ldexp(x, lib.tensor([3, -1], dtype=getattr(lib, int_dtype))).sum().backward()
            grads.append(x.grad.tolist())
        assert grads[0] == grads[1] == [8.0, 0.0]
    grads = []
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, -1.0], requires_grad=True)
        lib.ldexp(x, y).sum().backward()
        grads.append((x.grad.tolist(), y.grad.tolist()))
    assert grads[0][0] == grads[1][0]
    assert grads[0][1] == pytest.approx(grads[1][1], rel=1e-6)


def test_float_power_of_complex_is_complex128():
    for args in [(lambda lib: lib.tensor([1 + 1j]), 2), (lambda lib: lib.tensor([2.0]), 1j)]:
        outs = [lib.float_power(args[0](lib), args[1]) for lib in (ember, torch)]
        assert str(outs[0].dtype) == str(outs[1].dtype).replace("torch", "ember")
        assert np.allclose(outs[0].tolist(), outs[1].tolist())
    _same_error(lambda lib: lib.tensor([1 + 1j]).float_power_(2))
    _same_error(lambda lib: lib.tensor([1.0], dtype=lib.float64).float_power_(1j))


def test_logaddexp_half_is_computed_in_float32():
    for dtype in ("float16", "bfloat16"):
        vals = [-2.0, -0.5, 0.0, 0.25, 3.0]
        outs = [lib.logaddexp(lib.tensor(vals, dtype=getattr(lib, dtype)),
                              lib.tensor(vals, dtype=getattr(lib, dtype))).float().tolist()
                for lib in (ember, torch)]
        assert outs[0] == outs[1]


@pytest.mark.parametrize("fn", [
    lambda lib: lib.logical_xor(lib.ones(2), 1),
    lambda lib: lib.logical_and(1, lib.ones(2)),
    lambda lib: lib.ones(2).logical_or(True),
    lambda lib: lib.clamp(lib.ones(3), lib.zeros(3), 1.0),
    lambda lib: lib.clamp(lib.ones(3), 0, lib.ones(3)),
    lambda lib: lib.arange(3).clamp_(0.5, 2.5),
    lambda lib: lib.arange(3).clamp_min_(0.5),
    lambda lib: lib.arange(3).clamp_max_(1.5),
    lambda lib: lib.arange(3).clamp_(lib.tensor(0.5)),
    lambda lib: lib.isclose(lib.ones(1), lib.ones(1), rtol=-1.0),
    lambda lib: lib.isclose(lib.ones(1), lib.ones(1), atol=-1e-5),
    lambda lib: lib.frexp(lib.arange(3)),
])
def test_errors(fn):
    _same_error(fn)


def test_clamp_with_tensor_bound_and_none_still_works():
    for lib in (ember, torch):
        x = lib.tensor([-2.0, 0.5, 3.0])
        assert lib.clamp(x, None, lib.tensor(1.0)).tolist() == [-2.0, 0.5, 1.0]
        assert lib.arange(3).clamp_(0, 1).tolist() == [0, 1, 1]


# -- creation -----------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [
    lambda lib: lib.tensor([1j], dtype=lib.float32),
    lambda lib: lib.tensor([[1j]], dtype=lib.int64),
    lambda lib: lib.tensor(1j, dtype=lib.float64),
    lambda lib: lib.full(3, 1.0),
    lambda lib: lib.full((2,), lib.tensor([1.0])),
    lambda lib: lib.full((2,), "a"),
    lambda lib: lib.full((2,), None),
    lambda lib: lib.arange(0, math.inf),
    lambda lib: lib.arange(0.5, math.inf),
    lambda lib: lib.arange(0, -math.inf, -1),
    lambda lib: lib.arange(math.nan),
    lambda lib: lib.arange(5, dtype=lib.bool),
    lambda lib: lib.linspace(0, 1, 2.5),
    lambda lib: lib.linspace(0, 1, True),
    lambda lib: lib.linspace(0, 1, 2.5, dtype=lib.float64),
    lambda lib: lib.logspace(0, 1, 2.5),
    lambda lib: lib.linspace(1j, 2, 3, dtype=lib.float32),
    lambda lib: lib.eye(-1),
    lambda lib: lib.eye(2, -3),
])
def test_creation_errors(fn):
    _same_error(fn)


def test_full_takes_a_0d_tensor_and_a_list_size():
    for lib in (ember, torch):
        assert lib.full([2], lib.tensor(3.5)).tolist() == [3.5, 3.5]
        assert lib.full(lib.Size([1, 2]), 7).dtype == lib.int64


@pytest.mark.parametrize("args, kwargs", [
    ((1j, 2 + 1j, 4), {}), ((0, 1j, 1), {}), ((1j, 2 + 1j, 3), {"dtype": "complex128"}),
    ((0, 1, 3), {"dtype": "complex64"}), ((-1 - 1j, 1 + 3j, 5), {}),
])
def test_linspace_complex(args, kwargs):
    outs = []
    for lib in (ember, torch):
        kw = {k: getattr(lib, v) for k, v in kwargs.items()}
        outs.append(lib.linspace(*args, **kw))
    assert str(outs[0].dtype)[6:] == str(outs[1].dtype)[6:]
    assert np.allclose(outs[0].tolist(), outs[1].tolist(), rtol=1e-6)


def test_linspace_complex_tensor_bound_and_int_tensor_steps():
    a = ember.linspace(ember.tensor(1j), 2, ember.tensor(3))
    b = torch.linspace(torch.tensor(1j), 2, torch.tensor(3))
    assert a.tolist() == b.tolist()


# -- complex inputs ------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [
    lambda lib: lib.erf(lib.tensor([1j])),
    lambda lib: lib.erfinv(lib.tensor([1j])),
    lambda lib: lib.lgamma(lib.tensor([1j])),
    lambda lib: lib.special.gammaln(lib.tensor([1j])),
    lambda lib: lib.digamma(lib.tensor([1j])),
    lambda lib: lib.special.polygamma(1, lib.tensor([1j])),
    lambda lib: lib.special.polygamma(3, lib.tensor([1j])),
    lambda lib: lib.i0(lib.tensor([1j])),
    lambda lib: lib.special.i0e(lib.tensor([1j])),
    lambda lib: lib.special.ndtri(lib.tensor([1j])),
    lambda lib: lib.special.ndtr(lib.tensor([1j])),
    lambda lib: lib.special.bessel_j0(lib.tensor([1j])),
    lambda lib: lib.special.zeta(lib.tensor([1j]), lib.tensor([1j])),
    lambda lib: lib.special.xlog1py(lib.tensor([1j]), lib.tensor([1j])),
    lambda lib: lib.mvlgamma(lib.tensor([1j]), 1),
    lambda lib: lib.floor(lib.tensor([1j])),
    lambda lib: lib.round(lib.tensor([1j])),
    lambda lib: lib.clamp(lib.tensor([1j]), 0, 1),
    lambda lib: lib.signbit(lib.tensor([1j])),
    lambda lib: lib.heaviside(lib.tensor([1j]), lib.tensor([1j])),
    lambda lib: lib.fmin(lib.tensor([1j]), lib.tensor([1j])),
    lambda lib: lib.maximum(lib.tensor([1j]), lib.tensor([1j])),
    lambda lib: lib.deg2rad(lib.tensor([1j])),
    lambda lib: lib.isneginf(lib.tensor([1j])),
    lambda lib: lib.frexp(lib.tensor([1j])),
    lambda lib: lib.float_power(lib.tensor([1j]), 2, out=lib.empty(1, dtype=lib.float64)),
    lambda lib: lib.float_power(lib.tensor([1, 2]), 2, out=lib.empty(2)),
    lambda lib: lib.special.zeta(lib.tensor([2.0], requires_grad=True),
                                 lib.tensor([1.0])).sum().backward(),
])
def test_complex_and_out_errors(fn):
    _same_error(fn)


def test_sinc_and_ldexp_of_complex():
    outs = []
    for lib in (ember, torch):
        z = lib.tensor([0j, 1 + 1j, 0.5 - 2j], requires_grad=True)
        y = lib.sinc(z)
        (y * lib.tensor([1 + 2j, 3 - 1j, 0.5j])).real.sum().backward()
        w = lib.tensor([1 + 2j, -2j], requires_grad=True)
        v = lib.ldexp(w, lib.tensor([3, -1]))
        v.real.sum().backward()
        outs.append((y.tolist(), z.grad.tolist(), v.tolist(), w.grad.tolist(),
                     lib.ldexp(lib.tensor([1.0]), lib.tensor([1j])).tolist()))
    for a, b in zip(*outs):
        assert np.allclose(a, b, rtol=1e-6)


# -- legacy constructors and layouts -------------------------------------------------------


@pytest.mark.parametrize("fn", [
    lambda lib: lib.Tensor("abc"),
    lambda lib: lib.FloatTensor("a"),
    lambda lib: lib.FloatTensor(lib.tensor([1, 2])),
    lambda lib: lib.DoubleTensor(lib.tensor([1.0])),
    lambda lib: lib.LongTensor(lib.tensor([True])),
])
def test_legacy_constructor_errors(fn):
    _same_error(fn)


@pytest.mark.parametrize("make", [
    lambda lib: lib.empty(2, layout=lib.strided).zero_(),
    lambda lib: lib.zeros(2, 3, layout=lib.strided),
    lambda lib: lib.ones((2,), dtype=lib.int8, layout=lib.strided),
    lambda lib: lib.full((2,), 3, layout=lib.strided),
    lambda lib: lib.arange(3, layout=lib.strided),
    lambda lib: lib.linspace(0, 1, 3, layout=lib.strided),
    lambda lib: lib.eye(2, layout=lib.strided),
])
def test_factories_take_a_strided_layout(make):
    a, b = make(ember), make(torch)
    assert a.tolist() == b.tolist()
    assert str(a.dtype)[6:] == str(b.dtype)[6:]


# -- complex pow, reciprocal and logaddexp ------------------------------------------------


def _bits(t):
    return [(complex(v).real, complex(v).imag) for v in t.reshape(-1).tolist()]


def _same_bits(a, b):
    for (ar, ai), (br, bi) in zip(_bits(a), _bits(b)):
        for x, y in ((ar, br), (ai, bi)):
            assert (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) ==
                                                         math.copysign(1, y)), (a, b)


@pytest.mark.parametrize("exponent", [
    lambda lib: lib.tensor([2 + 0j, 0.5 + 0j, 2 + 0j, 1 - 1j]),
    lambda lib: lib.tensor([2, 3, 1, -1]),
    lambda lib: 4, lambda lib: 2.5, lambda lib: 0.5, lambda lib: -0.5, lambda lib: -1,
    lambda lib: -2, lambda lib: 2, lambda lib: 3, lambda lib: 1j, lambda lib: 0, lambda lib: 1,
])
def test_complex_pow_is_cpow_but_for_special_exponents(exponent):
    want = torch.pow(torch.tensor([1 + 1j, -2 + 0.5j, 0j, 3 - 4j]), exponent(torch))
    got = ember.pow(ember.tensor([1 + 1j, -2 + 0.5j, 0j, 3 - 4j]), exponent(ember))
    _same_bits(got, want)


def test_complex_reciprocal_of_zero_and_scalar_base():
    _same_bits(ember.reciprocal(ember.tensor([0j, 1 + 1j, complex(math.inf, 0)])),
               torch.reciprocal(torch.tensor([0j, 1 + 1j, complex(math.inf, 0)])))
    _same_bits(2 ** ember.tensor([1 + 1j, 0.5j]), 2 ** torch.tensor([1 + 1j, 0.5j]))


def test_logaddexp_complex_values_and_grads():
    nan, inf = math.nan, math.inf
    a_vals = [1 + 1j, -2 + 0.5j, complex(-inf, 1), complex(inf, 0), complex(nan, 0), 0j,
              100 + 3j]
    b_vals = [0.5 + 2j, -2 + 0.5j, complex(-inf, 2), complex(inf, 1), 1j, 1e-8 + 0j,
              -100 + 1j]
    outs = []
    for lib in (ember, torch):
        a = lib.tensor(a_vals, requires_grad=True)
        b = lib.tensor(b_vals, requires_grad=True)
        y = lib.logaddexp(a, b)
        assert y.grad_fn.name() == "LogaddexpBackward0"
        y[[0, 1, 5, 6]].real.sum().backward()
        outs.append((y.detach(), a.grad, b.grad))
    for got, want in zip(*outs):
        assert np.allclose(np.array(got.tolist()), np.array(want.tolist()), rtol=1e-6,
                           equal_nan=True)


def test_round_decimals_past_double_range_and_number_pairs():
    for lib in (ember, torch):
        assert math.isnan(lib.round(lib.tensor([1.5]), decimals=400).item())
        assert math.isnan(lib.round(lib.tensor([1.5]), decimals=-400).item())
    for fn in (lambda lib: lib.special.xlog1py(1, 2), lambda lib: lib.special.zeta(2, 1),
               lambda lib: lib.xlogy(1, 2), lambda lib: lib.float_power(2, 3),
               lambda lib: lib.polygamma(1.0, lib.ones(1))):
        _same_error(fn)


def test_trigamma_at_its_poles_is_atens_reflection():
    # sin(pi * x) is not quite 0 at a negative integer: a huge finite value (inf at 0)
    for dtype in ("float32", "float64"):
        x = [-3.0, -1.0, 0.0, -0.0, -2.0, 1.0, 2.5, -0.5]
        want = torch.polygamma(1, torch.tensor(x, dtype=getattr(torch, dtype))).tolist()
        got = ember.polygamma(1, ember.tensor(x, dtype=getattr(ember, dtype))).tolist()
        assert got == pytest.approx(want, rel=1e-6)
    assert ember.polygamma(1, ember.tensor([-1, 0, 2])).tolist() == pytest.approx(
        torch.polygamma(1, torch.tensor([-1, 0, 2])).tolist(), rel=1e-6)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.randint(0, 300, (3,), dtype=lib.int8),
    lambda lib: lib.randint(-200, 3, (3,), dtype=lib.int8),
    lambda lib: lib.randint(0, 257, (3,), dtype=lib.uint8),
    lambda lib: lib.randint(0, 2 ** 40, (3,), dtype=lib.int32),
    lambda lib: lib.randint(-2 ** 40, 3, (3,), dtype=lib.int16),
    lambda lib: lib.randint(0, 3, (3,), dtype=lib.bool),
    lambda lib: lib.randperm(129, dtype=lib.int8),
    lambda lib: lib.randperm(3, dtype=lib.bool),
    lambda lib: lib.asarray((1, 2), copy=False),
    lambda lib: lib.asarray(5, copy=False),
    lambda lib: lib.zeros(True),
    lambda lib: lib.zeros(lib.tensor([2, 3])),
    lambda lib: lib.ones(2 ** 62, 4),
    lambda lib: lib.arange(1j, 3),
    lambda lib: lib.arange(0, 1e20, 1),
    lambda lib: lib.linspace(0, 1, 3, dtype=lib.bool),
    lambda lib: lib.linspace(0, 300, 3, dtype=lib.int8),
    lambda lib: lib.linspace(-256, 3, 3, dtype=lib.uint8),
    lambda lib: lib.eye(2.0),
    lambda lib: lib.eye(2, 3.5),
    lambda lib: lib.ones(2).clamp(min=1j),
])
def test_more_creation_errors(fn):
    _same_error(fn)


def test_creation_that_works():
    for make in (lambda lib: lib.randint(0, 256, (3,), dtype=lib.uint8).dtype,
                 lambda lib: lib.randint(0, 2, (3,), dtype=lib.bool).dtype,
                 lambda lib: lib.randperm(128, dtype=lib.int8).sort().values.tolist(),
                 lambda lib: lib.ones(lib.tensor([2])).tolist(),
                 lambda lib: lib.arange(1 + 0j, 3).tolist(),
                 lambda lib: lib.linspace(-5, 5, 4, dtype=lib.int64).tolist()):
        assert str(make(ember)).replace("ember", "torch") == str(make(torch))
    a, b = ember.logspace(0, 1j, 3), torch.logspace(0, 1j, 3)
    assert str(a.dtype)[6:] == str(b.dtype)[6:]
    assert np.allclose(a.tolist(), b.tolist(), rtol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.result_type("a", 1),
    lambda lib: lib.randperm(3.0),
    lambda lib: lib.randperm(True),
    lambda lib: lib.searchsorted(lib.tensor([3, 1]), lib.tensor([2]), sorter=lib.tensor([1, 5])),
    lambda lib: lib.searchsorted(lib.tensor([3, 1]), lib.tensor([2]), sorter=lib.tensor([-1, 0])),
    lambda lib: lib.bucketize(lib.tensor([True]), lib.tensor([False, True])),
    lambda lib: lib.normal(0.0, 1.0, 2),
])
def test_search_and_random_argument_errors(fn):
    errors = [_error(lib, fn) for lib in (ember, torch)]
    assert errors[0] == errors[1]


def test_searchsorted_and_bucketize_take_out():
    for lib in (ember, torch):
        out = lib.empty(0, dtype=lib.int64)
        r = lib.searchsorted(lib.tensor([1, 3, 5]), lib.tensor([3, 6]), out=out)
        assert r is out and out.tolist() == [1, 3]
        out = lib.empty(2, dtype=lib.int64)
        lib.bucketize(lib.tensor([1.5, 3.0]), lib.tensor([1.0, 2.0]), out=out)
        assert out.tolist() == [1, 2]


def test_clamp_reads_a_0d_tensor_bound_with_a_number_as_a_number():
    for lib in (ember, torch):
        t = lib.tensor([1.0, -2.0, 3.0])
        assert lib.clamp(t, lib.tensor(0.0), 2.0).tolist() == [1.0, 0.0, 2.0]
        assert lib.clamp(t, min=-1.0, max=lib.tensor(0.5)).tolist() == [0.5, -1.0, 0.5]
    _same_error(lambda lib: lib.clamp(lib.ones(3), lib.zeros(3), 2.0))


def test_tensor_of_complex_into_real_keeps_integer_overflow_words():
    _same_error(lambda lib: lib.tensor([-1], dtype=lib.uint64))
    _same_error(lambda lib: lib.tensor([1j], dtype=lib.uint8))
