"""Complex tensors against PyTorch: dtypes and promotion, creation and conversion, printed
forms, the declared complex ops' values and gradients (PyTorch's conjugate convention),
and the refusal of every op not declared to take complex operands."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.core.errors

torch = pytest.importorskip("torch")


def _t(values, dtype=np.complex64):
    return np.asarray(values, dtype=dtype)


def both(values, requires_grad=False):
    """The same values as an ember tensor and a torch tensor."""
    arr = np.asarray(values)
    e = ember.tensor(arr, requires_grad=requires_grad)
    t = torch.tensor(arr, requires_grad=requires_grad)
    return e, t


def close(e, t, tol=1e-5):
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], (e.dtype, t.dtype)
    np.testing.assert_allclose(e.detach().resolve_conj().numpy(),
                               t.detach().resolve_conj().numpy(), rtol=tol, atol=tol)


# -- dtypes and promotion -------------------------------------------------------------


def test_dtype_objects_and_aliases():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert ember.complex64.is_complex and not ember.complex64.is_floating_point
    assert not ember.float32.is_complex
    assert ember.complex64.itemsize == 8 and ember.complex128.itemsize == 16
    assert repr(ember.complex128) == "ember.complex128"
    assert pickle.loads(pickle.dumps(ember.complex64)) is ember.complex64
    # complex32 (chalf) is a dtype object, as PyTorch's, that no backend holds
    with pytest.raises(RuntimeError, match="cannot hold ember.complex32 tensors"):
        ember.zeros(2, dtype=ember.complex32)


PROMOTIONS = [("float64", "complex64"), ("float32", "complex128"), ("float16", "complex64"),
              ("int64", "complex64"), ("bool", "complex128"), ("complex64", "complex128"),
              ("bfloat16", "complex64")]


@pytest.mark.parametrize("a,b", PROMOTIONS)
def test_promote_types_as_torch(a, b):
    got = ember.promote_types(getattr(ember, a), getattr(ember, b))
    want = torch.promote_types(getattr(torch, a), getattr(torch, b))
    assert got.name == str(want).split(".")[1]


@pytest.mark.parametrize("make", [
    lambda m: m.ones(2) * 1j,
    lambda m: m.ones(2, dtype=m.float64) * 1j,
    lambda m: m.ones(2, dtype=m.int32) * 1j,
    lambda m: m.tensor([True]) * (1 + 1j),
    lambda m: m.ones(2, dtype=m.float64) * m.ones(2, dtype=m.complex64),
    lambda m: m.ones(2) * m.tensor(1j, dtype=m.complex128),
    lambda m: m.ones(2, dtype=m.complex64) * m.tensor(1.0, dtype=m.float64),
    lambda m: m.ones(2, dtype=m.int64) + m.tensor(1j),
    lambda m: m.tensor([1 + 2j]),
    lambda m: m.tensor([1, 2.5, 3j]),
])
def test_result_dtypes_as_torch(make):
    got, want = make(ember), make(torch)
    assert got.dtype.name == str(want.dtype).split(".")[1]
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_default_complex_follows_the_default_float():
    before = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.tensor([1 + 2j]).dtype is ember.complex128
        assert (ember.ones(2, dtype=ember.int32) * 1j).dtype is ember.complex128
        assert ember.get_default_dtype() is ember.float64
        assert repr(ember.tensor([1 + 2j])) == "tensor([1.+2.j])"
        assert repr(ember.tensor([1 + 2j], dtype=ember.cfloat)) == \
            "tensor([1.+2.j], dtype=ember.complex64)"
    finally:
        ember.set_default_dtype(before)
    assert ember.tensor([1 + 2j]).dtype is ember.complex64


def test_finfo_of_complex_is_its_parts():
    assert ember.finfo(ember.complex64) == ember.finfo(ember.float32)
    assert ember.finfo(ember.cdouble).eps == torch.finfo(torch.cdouble).eps
    assert repr(ember.finfo(ember.complex64)) == repr(torch.finfo(torch.complex64))


def test_is_complex_everywhere():
    z = ember.tensor([1j])
    assert z.is_complex() and ember.is_complex(z) and not ember.is_complex(ember.ones(1))
    assert not z.is_floating_point() and not z.is_conj() and z.resolve_conj() is z


# -- creation and conversion ----------------------------------------------------------


def test_data_in_and_out():
    arr = np.array([[1 + 2j, -3.5j], [0, 4]], np.complex128)
    z = ember.tensor(arr)
    assert z.dtype is ember.complex128
    np.testing.assert_array_equal(z.numpy(), arr)
    assert ember.from_numpy(arr).dtype is ember.complex128
    assert ember.from_numpy(arr.astype(np.complex64)).dtype is ember.complex64
    assert z.tolist() == torch.tensor(arr).tolist()
    item = z[0, 0].item()
    assert isinstance(item, complex) and item == 1 + 2j
    assert ember.tensor(2 - 1j).item() == 2 - 1j


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_factories(name):
    e = getattr(ember, name)(2, 3, dtype=ember.cfloat)
    t = getattr(torch, name)(2, 3, dtype=torch.cfloat)
    assert e.dtype is ember.complex64 and tuple(e.shape) == tuple(t.shape)
    if name != "empty":
        close(e, t)
    like = getattr(ember, name + "_like")(e)
    assert like.dtype is ember.complex64


def test_full_and_like():
    close(ember.full((2,), 1 + 2j), torch.full((2,), 1 + 2j))
    z = ember.tensor([1j, 2])
    close(ember.full_like(z, 3j), torch.full_like(torch.tensor([1j, 2]), 3j))
    assert z.new_zeros(3).dtype is ember.complex64
    assert ember.randn_like(z).dtype is ember.complex64
    assert ember.rand_like(z).dtype is ember.complex64


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", ["randn", "rand"])
def test_random_streams_match_torch(op, dtype):
    ember.manual_seed(3)
    torch.manual_seed(3)
    e = getattr(ember, op)(5, 7, dtype=getattr(ember, dtype))
    t = getattr(torch, op)(5, 7, dtype=getattr(torch, dtype))
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_randn_parts_have_variance_one_half():
    ember.manual_seed(0)
    z = ember.randn(20000, dtype=ember.cfloat)
    assert abs(z.real.numpy().var() - 0.5) < 0.03
    assert abs(z.imag.numpy().var() - 0.5) < 0.03


def test_casts():
    z = ember.tensor([1 + 2j, 3 - 4j])
    assert z.to(ember.complex128).dtype is ember.complex128
    close(ember.tensor([1.0, 2.0]).to(ember.cfloat), torch.tensor([1.0, 2.0]).to(torch.cfloat))
    close(ember.tensor([1, 2]).to(ember.cdouble), torch.tensor([1, 2]).to(torch.cdouble))
    ember.core.errors._warned.discard("Casting complex values to real discards the imaginary "
                                      "part")  # (PyTorch warns once a process)
    with pytest.warns(UserWarning, match="Casting complex values to real discards the "
                                         "imaginary part"):
        real = z.float()
    np.testing.assert_array_equal(real.numpy(), [1.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert z.long().tolist() == [1, 3]  # (warned already)
    assert z.type_as(ember.ones(1, dtype=ember.cdouble)).dtype is ember.complex128
    assert ember.tensor([1j, 0, 2]).bool().tolist() == [True, False, True]  # either part


def test_in_place_into_real_refuses():
    x = ember.ones(2)
    with pytest.raises(RuntimeError, match="result type ComplexFloat can't be cast|"
                                           "can't be cast to the desired output type"):
        x.add_(ember.tensor([1j, 1j]))
    assert x.tolist() == [1.0, 1.0]


def test_save_and_load(tmp_path):
    z = ember.tensor([[1 + 2j, 3], [0, -1j]], dtype=ember.cdouble)
    state = {"w": z, "r": ember.ones(2)}
    ember.save(state, tmp_path / "s.pt")
    back = ember.load(tmp_path / "s.pt")
    assert back["w"].dtype is ember.complex128
    np.testing.assert_array_equal(back["w"].numpy(), z.numpy())


def test_torch_checkpoint_with_complex_weights(tmp_path):
    w = torch.randn(3, 2, dtype=torch.cfloat)
    torch.save({"w": w}, tmp_path / "c.pt")
    back = ember.load(tmp_path / "c.pt")
    assert back["w"].dtype is ember.complex64
    np.testing.assert_array_equal(back["w"].numpy(), w.numpy())


# -- printing -------------------------------------------------------------------------

PRINTED = [
    "[1+2j, 3-4j]", "[1.5+3j, 4.5-6j]", "[1e-5+2j, 100+0j]", "1+2j", "[[1+2j, 3], [0, -1j]]",
    "[complex(1.5, math.nan), complex(math.inf, -2)]", "[complex(0.0, -0.0)]",
    "[123456789.0+1j]", "[0.1234567+1e-9j, -3j]", "[]",
]


@pytest.mark.parametrize("expr", PRINTED)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_printed_as_torch(expr, dtype):
    data = eval(expr)
    got = repr(ember.tensor(data, dtype=getattr(ember, dtype)))
    want = repr(torch.tensor(data, dtype=getattr(torch, dtype)))
    assert got.replace("ember.", "torch.") == want


def test_printed_summarised_and_wide():
    for make in (lambda m: m.arange(2000.0).reshape(2, 1000) * 1j,
                 lambda m: m.tensor(np.arange(30).reshape(5, 6) * (1 + 0.37j)),
                 lambda m: m.zeros(0, 3, dtype=m.cfloat),
                 lambda m: m.tensor([1 + 1j], requires_grad=True)):
        assert repr(make(ember)).replace("ember.", "torch.") == repr(make(torch))


# -- the refusal ----------------------------------------------------------------------


@pytest.mark.parametrize("call,op", [
    (lambda z: z < z, "lt"),
    (lambda z: ember.relu(z), "relu"),
    (lambda z: ember.softmax(z, 0), "softmax"),
    (lambda z: z.max(), "max"),
])
def test_undeclared_ops_refuse_complex(call, op):
    z = ember.tensor([1 + 1j, 2])
    with pytest.raises(NotImplementedError, match=f'"{op}_cpu" not implemented for '
                                                  "'ComplexFloat'"):
        call(z)


@pytest.mark.parametrize("call", [
    lambda lib, z: lib.clamp(z, 0, 1),
    lambda lib, z: z.erf(),
    lambda lib, z: lib.maximum(z, z),
    lambda lib, z: z.floor(),
    lambda lib, z: lib.ones(2) + lib.lgamma(z),
])
def test_complex_refusals_in_torchs_words(call):
    # PyTorch's vectorised kernels ("erf_vml_cpu") and its ops' own checks ("floor is not
    # supported for complex inputs")
    errors = []
    for lib in (ember, torch):
        with pytest.raises(RuntimeError) as caught:
            call(lib, lib.tensor([1 + 1j, 2]))
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("call", [
    lambda lib: lib.ones(2) < 1j,
    lambda lib: lib.maximum(lib.ones(2), lib.tensor(1j)),
    lambda lib: lib.ones(2).clamp(min=1j),
])
def test_a_python_complex_makes_a_real_op_refuse(call):
    errors = []
    for lib in (ember, torch):
        with pytest.raises(RuntimeError) as caught:
            call(lib)
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]


def test_in_place_abs_of_complex_refuses_as_torch():
    z = ember.tensor([1j, 3 - 4j])
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex "
                                           "tensors."):
        z.abs_()
    assert z.tolist() == [1j, 3 - 4j]
    x = ember.tensor([-1.0, 2.0])
    assert x.abs_().tolist() == [1.0, 2.0]
    close(ember.abs(z, out=ember.empty(0)), torch.abs(torch.tensor([1j, 3 - 4j])))


def test_refusal_names_complex_double():
    with pytest.raises(RuntimeError, match="'ComplexDouble'"):
        ember.tensor([1j], dtype=ember.cdouble).erf()


def test_refusal_is_declared_not_listed():
    from ember.core.opdef import OPS

    assert OPS["mul"].complex and OPS["matmul"].complex and not OPS["clamp"].complex
    assert not OPS["sign"].complex  # (torch.sign refuses complex too: sgn takes it)


def test_backward_of_a_complex_output_needs_a_gradient():
    z = ember.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real "
                                           "scalar outputs but got ember.complex64"):
        (z * 2).sum().backward()


# -- values and gradients against torch ----------------------------------------------

_Z = [[1 + 1j, 2 - 1j, -0.5 + 2j], [0.3 - 0.7j, -1.5 - 0.2j, 0.8 + 0.1j]]
_W = [[0.5 + 2j, 1j, -1 + 0.5j], [2 - 0.3j, 0.2 + 0.2j, -0.7 - 1j]]

UNARY = {
    "abs": lambda m, z: z.abs(), "angle": lambda m, z: z.angle(),
    "sgn": lambda m, z: z.sgn(), "real": lambda m, z: z.real, "imag": lambda m, z: z.imag,
    "conj": lambda m, z: z.conj(), "conj_physical": lambda m, z: m.conj_physical(z),
    "neg": lambda m, z: -z, "reciprocal": lambda m, z: z.reciprocal(),
    "square": lambda m, z: z.square(), "pow2": lambda m, z: z ** 2,
    "pow_half": lambda m, z: z.pow(0.5), "exp": lambda m, z: z.exp(),
    "log": lambda m, z: z.log(), "sqrt": lambda m, z: z.sqrt(),
    "sum": lambda m, z: z.sum(0), "mean": lambda m, z: z.mean(),
    "view_as_real": lambda m, z: m.view_as_real(z),
    "shapes": lambda m, z: m.cat([z.t().reshape(-1, 2).flip(0), z.view(3, 2).roll(1, 0)]),
    "stack_index": lambda m, z: m.stack([z, z * 2])[:, 1, m.tensor([2, 0])],
    "expand": lambda m, z: z[:, :1].expand(2, 4).unsqueeze(0).squeeze(0).transpose(0, 1),
    "chunk_split": lambda m, z: z.chunk(3, 1)[1] + z.split(1, 0)[0].permute(1, 0).flatten(),
    "where": lambda m, z: m.where(z.abs() > 1, z, 0),
    "masked_fill": lambda m, z: z.masked_fill(z.real < 0, 2j),
    "clone": lambda m, z: z.clone().contiguous().detach() + z,
    "adjoint": lambda m, z: z.mH @ z + z.adjoint() @ z.conj() + z.H @ z,
    "to128": lambda m, z: z.to(m.complex128) * 2,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_and_gradients(name):
    fn = UNARY[name]
    e, t = both(np.array(_Z, np.complex64), requires_grad=True)
    ye, yt = fn(ember, e), fn(torch, t)
    close(ye, yt)
    # a real loss of the result: its gradient follows PyTorch's conjugate convention
    le = (ye.abs() ** 2).sum() + (ye.real * 0.3).sum() if ye.is_complex() else (ye * ye).sum()
    lt = (yt.abs() ** 2).sum() + (yt.real * 0.3).sum() if yt.is_complex() else (yt * yt).sum()
    le.backward()
    lt.backward()
    close(e.grad, t.grad, 1e-4)


BINARY = {
    "add": lambda m, a, b: a + b, "sub": lambda m, a, b: a - b * 2,
    "mul": lambda m, a, b: a * b, "div": lambda m, a, b: a / b,
    "matmul": lambda m, a, b: a @ b.t(), "mm": lambda m, a, b: m.mm(a.t(), b),
    "bmm": lambda m, a, b: m.bmm(a.unsqueeze(0), b.t().unsqueeze(0)),
    "einsum": lambda m, a, b: m.einsum("ij,kj->ik", a, b),
    "dot": lambda m, a, b: a[0] @ b[1],
    "pow": lambda m, a, b: a ** b,
    "polar_like": lambda m, a, b: a * m.polar(b.abs(), b.angle()),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_and_gradients(name):
    fn = BINARY[name]
    a_e, a_t = both(np.array(_Z, np.complex64), requires_grad=True)
    b_e, b_t = both(np.array(_W, np.complex64), requires_grad=True)
    ye, yt = fn(ember, a_e, b_e), fn(torch, a_t, b_t)
    close(ye, yt, 1e-4)
    (ye.abs().sum() + ye.imag.sum()).backward()
    (yt.abs().sum() + yt.imag.sum()).backward()
    close(a_e.grad, a_t.grad, 1e-4)
    close(b_e.grad, b_t.grad, 1e-4)


def test_real_operand_of_a_complex_result_gets_a_real_gradient():
    x_e, x_t = both(np.array([1.0, -2.0, 0.5], np.float32), requires_grad=True)
    w = np.array([0.5 + 2j, 1j, 3], np.complex64)
    (x_e * ember.tensor(w)).abs().sum().backward()
    (x_t * torch.tensor(w)).abs().sum().backward()
    assert x_e.grad.dtype is ember.float32
    close(x_e.grad, x_t.grad)


def test_polar_and_complex_gradients():
    r_e, r_t = both(np.array([1.0, 2.0, 0.5], np.float32), requires_grad=True)
    th_e, th_t = both(np.array([0.3, -1.0, 2.5], np.float32), requires_grad=True)
    ze, zt = ember.polar(r_e, th_e), torch.polar(r_t, th_t)
    close(ze, zt)
    w = np.array([1 - 1j, 2j, 0.5], np.complex64)
    (ze * ember.tensor(w)).real.sum().backward()
    (zt * torch.tensor(w)).real.sum().backward()
    close(r_e.grad, r_t.grad)
    close(th_e.grad, th_t.grad)
    a_e, a_t = both(np.array([1.0, 2.0], np.float64), requires_grad=True)
    b_e, b_t = both(np.array([-1.0, 0.5], np.float64), requires_grad=True)
    ce, ct = ember.complex(a_e, b_e), torch.complex(a_t, b_t)
    close(ce, ct)
    (ce * ce).imag.sum().backward()
    (ct * ct).imag.sum().backward()
    close(a_e.grad, a_t.grad)
    close(b_e.grad, b_t.grad)


def test_predicates_and_comparisons():
    vals = [complex(1, math.nan), complex(math.inf, 0), 1j, complex(-math.inf, math.inf)]
    e, t = both(np.array(vals, np.complex64))
    for fn in (lambda x: x.isnan(), lambda x: x.isinf(), lambda x: x.isfinite(),
               lambda x: x == x, lambda x: x != x):
        assert fn(e).tolist() == fn(t).tolist()
    a, b = ember.tensor([1 + 1j, 2]), ember.tensor([1 + 1.000001j, 2.1])
    ta, tb = torch.tensor([1 + 1j, 2]), torch.tensor([1 + 1.000001j, 2.1])
    assert ember.isclose(a, b).tolist() == torch.isclose(ta, tb).tolist()
    assert ember.allclose(a, a) and not ember.allclose(a, b)


# -- views ----------------------------------------------------------------------------


def test_real_and_imag_are_writable_views():
    z = ember.tensor([1 + 2j, 3 - 4j])
    z.real.mul_(10)
    z.imag[1] = 7
    np.testing.assert_array_equal(z.numpy(), [10 + 2j, 30 + 7j])
    r = ember.view_as_real(z)
    r[0, 1] = -1
    assert z[0].item() == 10 - 1j
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes"):
        _ = ember.ones(2).imag
    x = ember.ones(2)
    assert x.real is x


def test_view_as_real_of_strided_input():
    z = ember.tensor(np.arange(12).reshape(3, 4) * (1 - 0.5j)).t()
    t = torch.tensor(np.arange(12).reshape(3, 4) * (1 - 0.5j)).t()
    close(ember.view_as_real(z), torch.view_as_real(t))


@pytest.mark.parametrize("make,message", [
    (lambda m: m.ones(3), "Tensor must have a last dimension of size 2"),
    (lambda m: m.ones(3, 2).t(), "Tensor must have a last dimension of size 2"),
    (lambda m: m.ones(2, 3)[:, :2].t().contiguous().t().t(), None),
    (lambda m: m.ones(4, 2).t().t()[:, :], None),
    (lambda m: m.ones(3, 2, dtype=m.long), "view_as_complex is only supported for half, "
                                          "float and double tensors, but got a tensor of "
                                          "scalar type: Long"),
    (lambda m: m.ones(8)[1:7].view(3, 2), "Tensor must have a storage_offset divisible by 2"),
    (lambda m: m.ones(2, 4)[:, 1:3], "Tensor must have a stride divisible by 2|"
                                     "storage_offset divisible by 2"),
    (lambda m: m.ones(0), "Tensor must have a last dimension of size 2"),
    (lambda m: m.ones(2, 2).t(), "Tensor must have a last dimension with stride 1"),
])
def test_view_as_complex_errors_as_torch(make, message):
    if message is None:
        close(ember.view_as_complex(make(ember)), torch.view_as_complex(make(torch)))
        return
    with pytest.raises(RuntimeError) as want:
        torch.view_as_complex(make(torch))
    with pytest.raises(RuntimeError, match=message) as got:
        ember.view_as_complex(make(ember))
    assert str(got.value) == str(want.value).split("\n")[0]


def test_view_as_complex_shares_memory():
    x = ember.zeros(3, 2)
    z = ember.view_as_complex(x)
    z[1] = 1 + 2j
    assert x[1].tolist() == [1.0, 2.0]


def test_complex_and_polar_errors_as_torch():
    for make in (lambda m: m.complex(m.ones(2), m.ones(2, dtype=m.float64)),
                 lambda m: m.complex(m.ones(2, dtype=m.long), m.ones(2, dtype=m.long)),
                 lambda m: m.polar(m.ones(2), m.ones(2, dtype=m.float64))):
        with pytest.raises(RuntimeError) as want:
            make(torch)
        with pytest.raises(RuntimeError) as got:
            make(ember)
        assert str(got.value) == str(want.value)


def test_angle_of_real_tensors():
    e, t = both(np.array([1.0, -2.0, 0.0, np.nan], np.float32))
    close(ember.angle(e), torch.angle(t))
    close(ember.angle(ember.tensor([1, -2])), torch.angle(torch.tensor([1, -2])))


# -- hypothesis: shapes incl. 0-d and zero-size, NaN/inf components -------------------

# finite parts kept well inside float32 (near its overflow, NumPy's and PyTorch's complex
# products round differently), plus NaN and the infinities
_parts = st.floats(-1e6, 1e6, width=32) | st.sampled_from([math.nan, math.inf, -math.inf])


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(0, 3), min_size=0, max_size=3),
       data=st.data())
def test_hypothesis_arithmetic_matches_torch(shape, data):
    n = math.prod(shape)
    re = data.draw(st.lists(_parts, min_size=n, max_size=n))
    im = data.draw(st.lists(_parts, min_size=n, max_size=n))
    arr = (np.array(re, np.float32) + 1j * np.array(im, np.float32)).astype(np.complex64)
    arr = arr.reshape(shape)
    e, t = ember.tensor(arr), torch.tensor(arr)
    # arithmetic on infinite parts: NaN or inf by the formula (PyTorch's own paths differ
    # there: its 0-d `z + z` multiplies by alpha, inf * 0 making the imaginary part NaN),
    # so arithmetic is compared on the finite elements
    finite = np.isfinite(arr)
    fe, ft = ember.tensor(np.where(finite, arr, 0)), torch.tensor(np.where(finite, arr, 0))
    np.testing.assert_allclose((fe * fe + fe).numpy(), (ft * ft + ft).numpy(), rtol=1e-5)
    for fn in (lambda m, z: z.abs(), lambda m, z: z.conj() - 1j,
               lambda m, z: m.view_as_real(z), lambda m, z: z.isnan(),
               lambda m, z: z.sum(), lambda m, z: z == z):
        got, want = fn(ember, e).numpy(), fn(torch, t).resolve_conj().numpy()
        if np.iscomplexobj(got):  # (part by part: an infinite real part would make NumPy
            got, want = [np.stack([a.real, a.imag]) for a in (got, want)]  # compare exactly)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert repr(e).replace("ember.", "torch.") == repr(t)


def test_python_complex_and_the_refused_complex32():
    assert complex(ember.tensor(1 + 2j)) == 1 + 2j
    assert ember.chalf is ember.complex32
    with pytest.raises(RuntimeError, match="cannot hold ember.complex32 tensors"):
        ember.ones(2).chalf()


def test_import_torch_fft_under_the_alias(tmp_path):
    import os
    import subprocess
    import sys

    script = tmp_path / "prog.py"
    script.write_text("import torch\nimport torch.fft\nfrom torch.fft import rfft\n"
                      "print(torch.fft.irfft(rfft(torch.ones(8)), n=8).tolist(), "
                      "torch.tensor([1j]).dtype)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-m", "ember.run", str(script)], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=root), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{[1.0] * 8} torch.complex64"


def test_norms_and_gradient_clipping_of_complex_tensors():
    z = np.array([[1 + 2j, -3j], [0.5, 2 - 1j]], np.complex64)
    for f in (lambda m, x: m.norm(x), lambda m, x: x.norm(p=1),
              lambda m, x: m.linalg.vector_norm(x, 3, dim=1)):
        e, t = both(z, requires_grad=True)
        ye, yt = f(ember, e), f(torch, t)
        close(ye, yt)
        ye.sum().backward()
        yt.sum().backward()
        close(e.grad, t.grad)
    p = ember.nn.Parameter(ember.tensor([3 + 4j, 0, 1j]))
    p.grad = ember.tensor([3 + 4j, 0, 1j])
    tp = torch.nn.Parameter(torch.tensor([3 + 4j, 0, 1j]))
    tp.grad = torch.tensor([3 + 4j, 0, 1j])
    close(ember.nn.utils.clip_grad_norm_([p], 0.1), torch.nn.utils.clip_grad_norm_([tp], 0.1))
    close(p.grad, tp.grad)


def test_isclose_equal_nan_on_complex():
    for m in (ember, torch):
        a = m.tensor([complex(math.nan, 1), 1j])
        assert m.isclose(a, a, equal_nan=True).tolist() == [True, True]
        assert m.isclose(a, a).tolist() == [False, True]


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.5, foreach=False)), ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01, foreach=False)), ("AdamW", dict(lr=0.01))])
def test_optimizers_update_complex_parameters_as_torch(name, kw):
    rng = np.random.default_rng(0)
    w0 = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    x0 = rng.standard_normal((5, 3)).astype(np.float32)
    results = []
    for m in (ember, torch):
        w, x = m.nn.Parameter(m.tensor(w0)), m.tensor(x0)
        opt = getattr(m.optim, name)([w], **kw)
        for _ in range(3):
            loss = (x.to(m.cfloat) @ w).abs().pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        results.append(w.detach())
    close(*results)
