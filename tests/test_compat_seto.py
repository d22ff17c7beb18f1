"""PyTorch behaviours the set-O programs (KAN, RWKV, Decision Transformer, TD3/DDPG,
DETR-lite, xLSTM, AlphaZero-lite, a Trainer loop) needed, checked against torch itself."""

from __future__ import annotations

import decimal
import fractions
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(mod, dtype: str, key, value) -> tuple[str, object]:
    """What `t[key] = value` does to a zero tensor of `dtype`: its values, or its error."""
    t = mod.zeros(3, 2, dtype=getattr(mod, dtype))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t[key] = value
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err).replace("ember.", "torch.")
    return "ok", t.tolist()


class _Plain:  # a class written in Python: PyTorch names it without its module
    pass


@pytest.mark.parametrize("value", [
    np.float32(1.5), np.float16(2.0), np.bool_(True), np.longdouble(1.0), np.complex64(1),
    np.array(1.5), np.array([1.5, 2.0]), fractions.Fraction(1, 2), decimal.Decimal(1),
    _Plain(), None, [1.0, 2.0], "a",
    np.float64(2.5), np.int64(3), np.int32(-4), np.uint8(7), True, 2, 2.5, 1 + 2j,
    np.complex128(1 + 1j)], ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("key", [(0, 1), 0, slice(None)], ids=["int-int", "int", "slice"])
def test_setitem_takes_python_numbers_and_numpy_ints_only(key, value) -> None:
    """`t[key] = value` takes a Python bool/int/float/complex (np.float64 is a float) or a
    NumPy integer; a NumPy float or bool scalar, an array, a Fraction... raise PyTorch's
    TypeError naming the type as CPython's tp_name does. A complex number written into a
    real tensor loses its imaginary part without a word."""
    assert _outcome(ember, "float32", key, value) == _outcome(torch, "float32", key, value)


@pytest.mark.parametrize("dtype", ["int64", "float64", "bool", "float16"])
def test_setitem_numpy_float_names_the_legacy_type(dtype: str) -> None:
    assert _outcome(ember, dtype, 0, np.float32(1)) == _outcome(torch, dtype, 0, np.float32(1))
    assert _outcome(ember, dtype, 0, np.int64(1)) == _outcome(torch, dtype, 0, np.int64(1))


def _fill_outcome(mod, make) -> tuple[str, object]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (NumPy's ComplexWarning must not leak out)
            return "ok", make(mod).tolist()
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err)


@pytest.mark.parametrize("make", [
    lambda m: m.zeros(3).fill_(1 + 2j), lambda m: m.zeros(3).fill_(1 + 0j),
    lambda m: m.full((2,), 1 + 2j, dtype=m.float32),
    lambda m: m.full((2,), 1 + 0j, dtype=m.float32),
    lambda m: m.zeros(3, dtype=m.int64).fill_(2 + 0j),
    lambda m: m.zeros(3, dtype=m.bool).fill_(2 + 1j),
    lambda m: m.zeros(3).masked_fill(m.tensor([True, False, True]), 1 + 2j),
    lambda m: m.zeros(2, dtype=m.uint8).fill_(-1 + 0j),
], ids=["fill-imag", "fill-real", "full-imag", "full-real", "int64", "bool", "masked_fill",
        "uint8"])
def test_complex_number_into_real_tensor(make) -> None:
    """A complex number written into a real tensor: its real part when the imaginary part
    is zero, else PyTorch's overflow error (a bool tensor takes any number)."""
    assert _fill_outcome(ember, make) == _fill_outcome(torch, make)


def _call_outcome(mod, make) -> tuple[str, object]:
    """A call's result (its dtype, shape and values) or its error, torch's names kept."""
    try:
        out = make(mod)
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err).replace("ember.", "torch.")
    if isinstance(out, tuple):
        out = out[0]
    return str(out.dtype).split(".")[-1], tuple(out.shape), out.tolist()


_M = [[1.0, 2.0, 0.5], [0.0, -1.0, 3.0], [2.0, 1.0, 1.0]]


@pytest.mark.parametrize("equation,dtypes", [
    ("ij->k", ["float32"]), ("ij->ii", ["float32"]), ("i1->i", ["float32"]),
    ("ij->i1", ["float32"]), ("ij->j", ["float32", "float32"]), ("ij", ["float32"] * 2),
    ("ij,jk", ["float32"]), ("ij->i->j", ["float32"]), ("i.j->i", ["float32"]),
    ("ij->...", ["float32"]), ("...ij->j.", ["float32"]), ("i...j...->ij", ["float32"]),
    ("ij->iJ", ["float32"]), ("i j -> j i", ["float32"]),
    # contractions meet in a batched matmul: one dtype; products promote
    ("ij,jk->ik", ["float64", "float32"]), ("ij,jk->ik", ["float32", "complex64"]),
    ("ij,ij->", ["float32", "int32"]), ("ij,ij->ij", ["float32", "float64"]),
    ("ij,kl->ijkl", ["float32", "float64"]), ("ij,jk->ik", ["int32", "int32"]),
    ("ij->", ["int32"]), ("ij->j", ["uint8"]), ("ij->ji", ["int32"]),
])
def test_einsum_equation_checks_and_dtypes(equation: str, dtypes: list[str]) -> None:
    """einsum's parse errors, PyTorch's words and positions, and its result dtypes: a
    contraction between operands of two dtypes is refused, a lone integer operand summed
    over a subscript gives int64."""
    def make(m):
        return m.einsum(equation, *[m.tensor(_M).to(getattr(m, d)) for d in dtypes])
    assert _call_outcome(ember, make) == _call_outcome(torch, make)


@pytest.mark.parametrize("shapes,dtypes,driver", [
    (((5, 3), (5,)), ("float32", "float32"), None),
    (((2, 5, 3), (2, 5)), ("float32", "float32"), None),
    (((5, 3), (5, 2)), ("int32", "int32"), None),
    (((5, 3), (5, 2)), ("int32", "float32"), None),
    (((5, 3), ()), ("float32", "float32"), None),
    (((5, 3), (4,)), ("float32", "float32"), None),
    (((5, 3), (4, 2)), ("float32", "float32"), None),
    (((5, 3), (2, 5, 2)), ("float32", "float32"), None),
    (((2, 5, 3), (5, 1)), ("float32", "float32"), None),
    (((4, 1, 5, 3), (3, 5, 5)), ("float32", "float32"), None),
    (((2, 5, 3), (3, 5, 2)), ("float32", "float32"), None),
    (((2, 5, 3), (1, 5)), ("float32", "float32"), None),
    (((3,), (3,)), ("float32", "float32"), None),
    (((5, 3), (5, 2)), ("float32", "float32"), "foo"),
    (((5, 3), (5, 2)), ("int32", "int32"), "foo"),
    (((5, 3), (5, 2)), ("float16", "float16"), None),
    (((5, 3), (5, 2)), ("float64", "float32"), None),
])
def test_lstsq_checks(shapes, dtypes, driver) -> None:
    """linalg.lstsq's checks in PyTorch's order and words: B a vector when 1-D or shaped
    as A without its last dimension; a matrix B one dimension short broadcasts its rows
    against A's batch."""
    def make(m):
        a, b = (m.linspace(-1.0, 2.0, max(1, int(np.prod(s)))).reshape(s).sin()
                .to(getattr(m, d)) for s, d in zip(shapes, dtypes))
        return m.linalg.lstsq(a + m.eye(*a.shape[-2:]).to(a.dtype) if a.ndim >= 2 else a, b,
                              driver=driver)
    got, want = _call_outcome(ember, make), _call_outcome(torch, make)
    if want[0] == "float32":  # (a solution: the values within float32 rounding)
        assert got[:2] == want[:2]
        np.testing.assert_allclose(got[2], want[2], rtol=1e-4, atol=1e-5)
    else:
        assert got == want


@pytest.mark.parametrize("make", [
    lambda m: m.lerp(m.zeros(3, dtype=m.int64), m.ones(3, dtype=m.int64), 0.5),
    lambda m: m.lerp(m.zeros(3, dtype=m.uint8), m.ones(3, dtype=m.uint8), m.ones(3, dtype=m.uint8)),
    lambda m: m.lerp(m.zeros(3, dtype=m.int32), m.ones(3, dtype=m.int32), m.tensor(0.5)),
    lambda m: m.lerp(m.zeros(3, dtype=m.bool), m.ones(3, dtype=m.bool), 0.5),
    lambda m: m.zeros(3).lerp_(m.ones(3, dtype=m.float64), 0.5),
    lambda m: m.lerp(m.zeros(3), m.ones(3, dtype=m.int16), 0.5),
    lambda m: m.lerp(m.zeros(3, dtype=m.half), m.ones(3), 0.5),
    lambda m: m.lerp(m.zeros(3), m.ones(3, dtype=m.complex64), 0.5),
    lambda m: m.lerp(m.zeros(3), m.ones(3), m.ones(3, dtype=m.complex128)),
    lambda m: m.lerp(m.zeros(3), m.ones(3), m.tensor(0.25, dtype=m.float64)),
    lambda m: m.lerp(m.zeros(3), m.ones(3), m.tensor([0.25], dtype=m.float64)),
    lambda m: m.lerp(m.zeros(3), m.ones(2), m.ones(3)),
    lambda m: m.lerp(m.zeros(3), m.ones(1), m.ones(2)),
    lambda m: m.lerp(m.zeros(1), m.ones(2), 0.5),
    lambda m: m.lerp(m.zeros(3), m.ones(3), 2 + 1j),
    lambda m: m.lerp(m.zeros(3), m.ones(3), 2 + 0j),
])
def test_lerp_checks(make) -> None:
    """lerp's checks as PyTorch's: `end` (and a weight of one or more dimensions) of the
    input's dtype, broadcasting input with end then weight, no integer kernel (unless a
    float 0-d weight makes the computation float), a number weight that fits."""
    assert _call_outcome(ember, make) == _call_outcome(torch, make)


@pytest.mark.parametrize("norm_type", [0, 1, 2.0, 3, float("inf"), -float("inf")])
@pytest.mark.parametrize("grads", [[[3.0, 4.0, 0.0]], [[3.0, 0.0], [0.0, 0.0], [1e-3, 2.5]]],
                         ids=["one", "three"])
def test_clip_grad_norm_is_the_norm_of_the_norms(grads, norm_type) -> None:
    """clip_grad_norm_ returns the norm of the stacked per-tensor norms, for one tensor too
    (the 0-norm counts the tensors with a nonzero gradient), and scales as PyTorch."""
    def run(m):
        params = [m.nn.Parameter(m.zeros(len(g))) for g in grads]
        for p, g in zip(params, grads):
            p.grad = m.tensor(g)
        total = m.nn.utils.clip_grad_norm_(params, max_norm=1.0, norm_type=norm_type)
        return total.item(), [p.grad.tolist() for p in params]
    (got, got_grads), (want, want_grads) = run(ember), run(torch)
    assert got == pytest.approx(want, rel=1e-6)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_einsum_promoted_product_backward() -> None:
    """A product of float32 and float64 operands promotes, and its backward (a contraction
    of the float64 grad with the float32 operand) runs: each grad in its operand's dtype."""
    def run(m):
        a = m.ones(3, requires_grad=True)
        b = m.full((2,), 2.0, dtype=m.float64, requires_grad=True)
        y = m.einsum("i,j->ij", a, b)
        y.sum().backward()
        return str(y.dtype).split(".")[-1], a.grad.tolist(), str(a.grad.dtype), b.grad.tolist()
    got, want = run(ember), run(torch)
    assert got[:2] == want[:2] and got[3] == want[3]
    assert got[2].split(".")[-1] == want[2].split(".")[-1]


def test_jit_script_method_runs_eagerly() -> None:
    """RWKV's `MyModule = torch.jit.ScriptModule; MyFunction = torch.jit.script_method`
    idiom: the decorated method runs (eagerly in ember) after PyTorch's deprecation
    warning, and the module is an nn.Module that trains."""
    with pytest.warns(DeprecationWarning, match=r"`torch.jit.script_method` is deprecated"):
        class Mix(ember.jit.ScriptModule):
            def __init__(self) -> None:
                super().__init__()
                self.w = ember.nn.Parameter(ember.full((3,), 2.0))

            @ember.jit.script_method
            def forward(self, x):
                return x * self.w

    out = Mix()(ember.ones(3))
    out.sum().backward()
    assert out.tolist() == [2.0, 2.0, 2.0] and out.grad_fn.name() == "MulBackward0"
    assert isinstance(Mix(), ember.nn.Module) and repr(Mix()) == "Mix()"


@pytest.mark.parametrize("make", [
    lambda m: m.ones(2, 3).sum((0, 0)), lambda m: m.ones(2, 3).sum((1, -1)),
    lambda m: m.ones(2, 3).mean((0, -2)), lambda m: m.ones(2, 3).amax((1, 1)),
    lambda m: m.ones(2, 3).std((0, 0)), lambda m: m.ones(2, 3).logsumexp((1, 1)),
    lambda m: m.flip(m.ones(2, 3), [0, -2]), lambda m: m.ones(2, 3).flip(1, 1, 0),
    lambda m: m.ones(2, 3).any((0, 0)),
])
def test_repeated_dims_name_the_first_repeat(make) -> None:
    """A dim listed twice: PyTorch's message names the first repeat, wrapped ("dim 0")."""
    assert _call_outcome(ember, make) == _call_outcome(torch, make)


@pytest.mark.parametrize("make", [
    lambda m: m.ones(2, 3) @ m.ones(3).int(), lambda m: m.ones(2, 3).int() @ m.ones(3),
    lambda m: m.ones(2, 3).double() @ m.ones(3),
    lambda m: m.mv(m.ones(2, 3), m.ones(3).double()),
    lambda m: m.ones(4, 2, 3) @ m.ones(3).double(),
    lambda m: m.ones(3) @ m.ones(3, 2).double(), lambda m: m.ones(3) @ m.ones(3).double(),
    lambda m: m.ones(3) @ m.ones(4, 3, 2).double(),
])
def test_matmul_dtype_messages(make) -> None:
    """Operands of two dtypes: each matmul path's kernel words it (addmv lists its result,
    of the vector's dtype, then the matrix and the vector)."""
    assert _call_outcome(ember, make) == _call_outcome(torch, make)


def _qkv(m, **dtypes):
    m.manual_seed(0)
    x = m.randn(2, 4, 8)
    return [x.to(getattr(m, dtypes.get(name, "float32"))) for name in ("q", "k", "v")]


@pytest.mark.parametrize("make", [
    lambda m: m.nn.functional.scaled_dot_product_attention(
        *_qkv(m), attn_mask=m.ones(4, 4).int()),
    lambda m: m.nn.functional.scaled_dot_product_attention(
        *_qkv(m), attn_mask=m.ones(4, 4, dtype=m.int64)),
    lambda m: m.nn.functional.scaled_dot_product_attention(*_qkv(m, v="float64")),
    lambda m: m.nn.functional.scaled_dot_product_attention(*_qkv(m, k="float16")),
    lambda m: m.nn.functional.scaled_dot_product_attention(*[t[0, 0] for t in _qkv(m)]),
    lambda m: m.nn.functional.scaled_dot_product_attention(
        *_qkv(m, q="float64", k="float64", v="float64"), attn_mask=m.zeros(4, 4)),
])
def test_sdpa_input_checks(make) -> None:
    """scaled_dot_product_attention's input checks: PyTorch's words (its doubled spaces
    too); a float32 additive mask is taken with float64 queries."""
    got, want = _call_outcome(ember, make), _call_outcome(torch, make)
    if want[0] == "float64":
        assert got[:2] == want[:2]
        np.testing.assert_allclose(got[2], want[2], rtol=1e-6)
    else:
        assert got == want


@pytest.mark.parametrize("driver", [None, "gelsd", "gels"])
def test_lstsq_complex(driver) -> None:
    """linalg.lstsq takes complex operands: a complex solution, real residuals (|r|^2
    summed) and real singular values, as PyTorch's."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((6, 3)) + 1j * rng.standard_normal((6, 3))).astype(np.complex64)
    b = (rng.standard_normal((6, 2)) + 1j * rng.standard_normal((6, 2))).astype(np.complex64)
    got = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b), driver=driver)
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for g, w in zip(got, want):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("data", [
    [np.float64(1)], [np.float32(1), 2.0], [np.int32(1)], [np.float16(1)],
    [np.int32(1), 2.5], [np.int8(1), np.int16(2)], [[np.float64(1)], [2]], [np.uint8(3)],
    [np.array([1.0]), np.array([2.0])], [np.array([1, 2], dtype=np.int32), [3, 4]],
    [np.array([1.5, 2], dtype=np.float32), np.array([3, 4])],
], ids=lambda d: type(d[0]).__name__)
def test_tensor_from_list_of_numpy_keeps_their_dtypes(data) -> None:
    """`torch.tensor([...])` of NumPy scalars or arrays (an RL replay batch): their dtypes
    take part in the promotion, as a tensor's would (`[np.float64(1)]` is float64)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch's "list of numpy.ndarrays is slow")
        want = torch.tensor(data)
    got = ember.tensor(data)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.tolist() == want.tolist()
