"""Round 35 of small PyTorch-compatibility gaps, each checked against torch."""

import pytest

import ember
from ember.core.dtype import API_NAME

torch = pytest.importorskip("torch")


def _outcome(fn):
    """The error (type, message) `fn` raises, or the dtype name and values it returns."""
    try:
        out = fn()
    except Exception as err:  # noqa: BLE001 - the error is what is compared
        return type(err), str(err).replace("torch.", API_NAME + ".")
    if hasattr(out, "dtype"):
        return str(out.dtype).split(".")[-1], tuple(out.shape), out.tolist()
    return out


def _same(call):
    """`call(lib)` behaves alike in torch and ember: the same error or the same result."""
    assert _outcome(lambda: call(ember)) == _outcome(lambda: call(torch))


# -- 1. a kernel's "not implemented for '<Dtype>'", in one place ------------------------

@pytest.mark.parametrize("call", [
    lambda lib: lib.logcumsumexp(lib.arange(3), 0),
    lambda lib: lib.arange(3).float().kthvalue(1) and lib.ones(3, dtype=lib.bool).kthvalue(1),
    lambda lib: lib.ones(2, 2, dtype=lib.bool).trace(),
    lambda lib: lib.bincount(lib.ones(3)),
    lambda lib: lib.histc(lib.arange(3)),
    lambda lib: lib.poisson(lib.ones(3, dtype=lib.int64)),
    lambda lib: lib.tril_indices(3, 3, dtype=lib.float32),
    lambda lib: lib.arange(4).round(decimals=1),
    lambda lib: lib.rand(2, dtype=lib.int64),
    lambda lib: lib.div(lib.ones(2, dtype=lib.bool), lib.ones(2, dtype=lib.bool),
                        rounding_mode="trunc"),
], ids=["logcumsumexp", "kthvalue", "trace", "bincount", "histc", "poisson", "tril_indices",
        "round", "rand", "div_trunc"])
def test_kernel_refusals(call):
    _same(call)


@pytest.mark.parametrize("shapes", [
    ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 2)), ((4, 2, 3), (3, 2)),
    ((4, 2, 3), (4, 3, 2)), ((3,), (4, 3, 2)), ((4, 2, 3), (3,)), ((2, 3), (4, 2)),
    ((0, 3), (3, 2)), ((2, 0), (0, 3)), ((0,), (0,)), ((3,), (3, 0)), ((2, 2, 0), (2, 0, 3)),
])
def test_matmul_of_bool_tensors(shapes):
    a, b = shapes
    _same(lambda lib: lib.ones(*a, dtype=lib.bool) @ lib.ones(*b, dtype=lib.bool))


# -- 2. NumPy has no bfloat16 or float8: numpy() and __array__ refuse them ---------------

@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2", "uint16",
                                   "float16"])
@pytest.mark.parametrize("form", ["numpy", "force", "array", "asarray", "astype", "0-d",
                                  "in a list"])
def test_numpy_of_dtypes_numpy_lacks(dtype, form):
    np = pytest.importorskip("numpy")
    calls = {"numpy": lambda x: x.numpy(), "force": lambda x: x.numpy(force=True),
             "array": np.array, "asarray": np.asarray,
             "astype": lambda x: np.array(x, dtype=np.float32), "0-d": lambda x: np.array(x[0]),
             "in a list": lambda x: np.array([x])}

    def outcome(lib):
        x = lib.zeros(3, dtype=getattr(lib, dtype))
        try:
            return str(calls[form](x).dtype)
        except TypeError as err:
            return str(err)
    assert outcome(ember) == outcome(torch)


def test_numpy_of_a_conjugate_and_a_grad_requiring_bfloat16_tensor():
    for lib in (ember, torch):
        c = lib.tensor([1 + 2j]).conj()
        with pytest.raises(RuntimeError, match=r"^Can't call numpy\(\) on Tensor that has "
                           r"conjugate bit set. Use tensor.resolve_conj\(\).numpy\(\) instead.$"):
            c.numpy()
        assert c.numpy(force=True).tolist() == [1 - 2j]
        assert c.resolve_conj().numpy().tolist() == [1 - 2j]
        x = lib.zeros(2, dtype=lib.bfloat16, requires_grad=True)
        with pytest.raises(RuntimeError, match="requires grad"):
            x.numpy()
        with pytest.raises(TypeError, match="^Got unsupported ScalarType BFloat16$"):
            x.numpy(force=True)


# -- 3. the conjugate bit: what it refuses ----------------------------------------------

@pytest.mark.parametrize("call", [
    lambda lib, x: lib.view_as_real(x.conj()),
    lambda lib, x: lib.view_as_real(x.conj()[1:]),
    lambda lib, x: lib.view_as_real(x.conj().resolve_conj()),
    lambda lib, x: lib.view_as_real(x.conj_physical()),
    lambda lib, x: x.conj().view(lib.float32),
    lambda lib, x: x.conj().view(lib.complex64),
    lambda lib, x: x.view(lib.float32),
    lambda lib, x: x.view(lib.float64),
    lambda lib, x: x.view(lib.int32),
    lambda lib, x: x.conj().real,
    lambda lib, x: x.conj().imag,
    lambda lib, x: x.conj()[0].imag,
], ids=["view_as_real", "view_as_real-of-a-view", "resolved", "physical", "view-float32",
        "view-complex64", "unconjugated-view-float32", "view-float64", "view-int32", "real",
        "imag", "imag-of-a-view"])
def test_conjugate_bit_refusals(call):
    _same(lambda lib: call(lib, lib.tensor([1 + 2j, 3 - 4j])))
