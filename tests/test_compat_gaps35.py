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


# -- 4. views' strides, size-1 and empty dims included ------------------------------------

def _view_step(x, r):
    """A random view op (name, args) that applies to tensor `x`."""
    s, n = list(x.shape), x.dim()
    if not n:
        return r.choice([("unsqueeze", (0,)), ("view", (1, 1)), ("expand", (2,))])
    d = r.randrange(n)
    perm = list(range(n))
    r.shuffle(perm)
    new = list(s)
    if r.random() < .4:
        new.insert(r.randrange(n + 1), 1)
    elif 1 in new and n > 1:
        new.remove(1)
    elif n >= 2:
        i = r.randrange(n - 1)
        new[i:i + 2] = [new[i] * new[i + 1]]
    steps = [("unsqueeze", (r.randrange(n + 1),)), ("transpose", (d, r.randrange(n))),
             ("permute", tuple(perm)), ("squeeze", ()), ("squeeze", (d,)),
             ("movedim", (d, r.randrange(n))), ("flatten", ()), ("view", tuple(new)),
             ("reshape", tuple(new)),
             ("expand", tuple([2] * (r.random() < .3) + [v if v != 1 else r.choice([1, 3])
                                                         for v in s]))]
    if s[d]:
        a = r.randrange(s[d])
        steps += [("select", (d, a)), ("narrow", (d, a, r.randrange(s[d] - a + 1))),
                  ("slice", (d, a, r.randrange(a, s[d] + 1), r.choice([1, 2])))]
    if s[d] in (2, 4, 6):
        steps.append(("unflatten", (d, (2, s[d] // 2))))
    if n <= 2:
        steps.append(("t", ()))
    return r.choice(steps)


def _apply_view(x, op, args):
    if op == "slice":
        d, lo, hi, step = args
        return x[(slice(None),) * d + (slice(lo, hi, step),)]
    return getattr(x, op)(*args)


def test_view_chains_keep_pytorchs_strides():
    import random

    shapes = [(3, 1, 4), (6,), (4, 1), (2, 3), (1,), (1, 1), (2, 1, 3, 1), (5, 2), (1, 4, 1),
              ()]
    for i in range(600):
        r = random.Random(i)
        shape = r.choice(shapes)
        e, t = ember.zeros(shape), torch.zeros(shape)
        chain = []
        for _ in range(r.randrange(1, 5)):
            op, args = _view_step(t, r)
            chain.append((op, args))
            try:
                t = _apply_view(t, op, args)
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    _apply_view(e, op, args)
                break
            e = _apply_view(e, op, args)
        assert (tuple(e.shape), e.stride(), e.storage_offset()) == \
            (tuple(t.shape), t.stride(), t.storage_offset()), chain


def test_strides_after_in_place_metadata_changes():
    for lib in (ember, torch):
        x = lib.zeros(2, 3).t()
        y = x.unsqueeze(2)
        assert y.stride() == (1, 3, 1)
        y.t_() if y.dim() == 2 else y.transpose_(0, 2)
        assert y.stride() == (1, 3, 1)[::-1]
    e = ember.zeros(2, 3).t().unsqueeze(2)
    for _ in range(40):  # a long chain of views: still PyTorch's strides where replayed
        e = e.unsqueeze(0).squeeze(0)
    assert e.stride() == (1, 3, 1)


# -- 5. empty tensors: which error comes first ---------------------------------------------

@pytest.mark.parametrize("call", [
    lambda lib: lib.empty(0, 3).amax(0), lambda lib: lib.empty(0, 3).amin(-2),
    lambda lib: lib.empty(0, 3).amax((1, 0)), lambda lib: lib.empty(0, 3).amax(),
    lambda lib: lib.empty(3, 0).amin(1, keepdim=True), lambda lib: lib.empty(0, 3).amax(1),
    lambda lib: lib.empty(0, 3).max(1).values, lambda lib: lib.empty(0).argmax(),
    lambda lib: lib.empty(3, 0).softmax(0), lambda lib: lib.empty(0).topk(1).values,
    lambda lib: lib.cat([lib.empty(0, 3), lib.empty(2, 4)]),
    lambda lib: lib.empty(0, 4) @ lib.empty(3, 0),
    lambda lib: lib.zeros(2, 3).select(0, 5), lambda lib: lib.select(lib.zeros(2, 3), 1, -4),
    lambda lib: lib.empty(0, 3).select(0, 0),
    lambda lib: lib.dot(lib.empty(2), lib.empty(3)),
    lambda lib: lib.vdot(lib.empty(2), lib.empty(3)),
    lambda lib: lib.dot(lib.ones(2, 2), lib.ones(2)),
])
def test_errors_on_empty_tensors(call):
    _same(call)


@pytest.mark.parametrize("shape, chunks, dim", [((0,), 2, 0), ((0, 3), 3, 0), ((3, 0), 2, 1),
                                                ((5,), 3, 0), ((1,), 3, 0)])
def test_chunk_of_an_empty_dim(shape, chunks, dim):
    got = [tuple(c.shape) for c in ember.empty(shape).chunk(chunks, dim)]
    assert got == [tuple(c.shape) for c in torch.empty(shape).chunk(chunks, dim)]


@pytest.mark.parametrize("call", [lambda x: x.view(), lambda x: x.reshape(),
                                  lambda x: x.view(()), lambda x: x.reshape(())])
def test_view_and_reshape_without_a_shape(call):
    _same(lambda lib: call(lib.zeros(1)))
