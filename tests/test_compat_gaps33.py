"""Round 33 of small PyTorch-compatibility gaps, each checked against torch."""

import pytest

import ember
from ember.core.dtype import API_NAME

torch = pytest.importorskip("torch")


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def _outcome(fn):
    """The error (type, message) `fn` raises, or the dtype name and values it returns."""
    try:
        out = fn()
    except Exception as err:  # noqa: BLE001 - the error is what is compared
        return type(err), str(err).replace("torch.", API_NAME + ".")
    if hasattr(out, "dtype"):
        return str(out.dtype).split(".")[-1], out.tolist()
    return out


def _same(call):
    """`call(lib)` behaves alike in torch and ember: the same error or the same result."""
    assert _outcome(lambda: call(ember)) == _outcome(lambda: call(torch))


# -- 1. `~` of a floating or complex tensor ---------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "complex64"])
@pytest.mark.parametrize("form", ["operator", "function", "method"])
def test_invert_of_a_non_integer_tensor(dtype, form):
    calls = {"operator": lambda lib: ~lib.ones(3, dtype=getattr(lib, dtype)),
             "function": lambda lib: lib.bitwise_not(lib.ones(3, dtype=getattr(lib, dtype))),
             "method": lambda lib: lib.ones(3, dtype=getattr(lib, dtype)).bitwise_not()}
    kind, _ = _raised(lambda: calls[form](torch))
    assert kind is (TypeError if form == "operator" else NotImplementedError)
    _same(calls[form])


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool"])
def test_invert_of_an_integer_tensor(dtype):
    _same(lambda lib: ~lib.tensor([0, 1, 5], dtype=getattr(lib, dtype)))


# -- 2. the "barebones" unsigned dtypes: PyTorch's CPU kernels refuse most arithmetic ---

_UNSIGNED_CALLS = {
    "add": lambda a: a + 1, "add_tensor": lambda a: a + a, "sub": lambda a: a - a,
    "rsub": lambda a: 1 - a, "add_": lambda a: a.add_(a), "mul": lambda a: a * 2,
    "mul_tensor": lambda a: a * a, "div": lambda a: a / a, "floor_divide": lambda a: a // a,
    "div_trunc": lambda a: a.div(a, rounding_mode="trunc"), "remainder": lambda a: a % a,
    "fmod": lambda a: a.fmod(2), "pow": lambda a: a ** 2, "square": lambda a: a.square(),
    "neg": lambda a: -a, "abs": lambda a: a.abs(), "sign": lambda a: a.sign(),
    "invert": lambda a: ~a, "lshift": lambda a: a << 1, "rshift": lambda a: a >> 1,
    "bitwise_and": lambda a: a & a, "lt": lambda a: a < a, "gt": lambda a: a > 1,
    "le": lambda a: a <= a, "ge": lambda a: a >= 1, "eq": lambda a: a == 1,
    "ne": lambda a: a != a, "logical_not": lambda a: a.logical_not(),
    "logical_and": lambda a: a.logical_and(a), "maximum": lambda a: a.maximum(a),
    "clamp": lambda a: a.clamp(0, 1), "clamp_min": lambda a: a.clamp(min=0),
    "clamp_max": lambda a: a.clamp(max=0), "clamp_tensor": lambda a: a.clamp(a, a),
    "relu": lambda a: a.relu(), "sum": lambda a: a.sum(), "prod": lambda a: a.prod(),
    "cumsum": lambda a: a.cumsum(0), "max": lambda a: a.max(), "min": lambda a: a.min(),
    "max_dim": lambda a: a.max(0), "amax": lambda a: a.amax(), "amin": lambda a: a.amin(0),
    "aminmax": lambda a: a.aminmax(), "argmax": lambda a: a.argmax(),
    "argmin": lambda a: a.argmin(), "sort": lambda a: a.sort()[0], "flip": lambda a: a.flip(0),
    "tril": lambda a: a.view(3, 1).expand(3, 3).tril(), "dot": lambda a: a.dot(a),
    "mm": lambda a: a.view(3, 1) @ a.view(1, 3), "mv": lambda a: a.view(1, 3) @ a,
    "bmm": lambda a: a.view(1, 3, 1) @ a.view(1, 1, 3), "bincount": lambda a: a.bincount(),
    "addcmul": lambda a: a.addcmul(a, a), "signbit": lambda a: a.signbit(),
    "isclose": lambda a: a.isclose(a), "add_float": lambda a: a + 2.5,
    "cat": lambda a: a.new_ones(2).to(a.dtype), "where": lambda a: a.where(a == 1, a),
    "to_float": lambda a: a.float(),
    "topk": lambda a: a.topk(1)[0], "gather": lambda a: a.gather(0, a.new_zeros(1).long()),
    "scatter": lambda a: a.scatter(0, a.new_zeros(1).long(), a),
    "index_select": lambda a: a.index_select(0, a.new_zeros(1).long()),
    "masked_fill": lambda a: a.masked_fill(a == 1, 0), "median": lambda a: a.median(),
    "kthvalue": lambda a: a.kthvalue(1)[0], "cummax": lambda a: a.cummax(0)[0],
    "mode": lambda a: a.mode()[0], "isin": lambda a: a.isin(a),
    "count_nonzero": lambda a: a.count_nonzero(), "nonzero": lambda a: a.nonzero(),
    "trace": lambda a: a.view(3, 1).expand(3, 3).trace(), "unique": lambda a: a.unique(),
    "argsort": lambda a: a.argsort(), "roll": lambda a: a.roll(1),
}


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_unsigned_dtypes_refuse_as_pytorch_kernels_do(dtype):
    for name, call in _UNSIGNED_CALLS.items():
        got = _outcome(lambda c=call: c(ember.tensor([1, 2, 3], dtype=getattr(ember, dtype))))
        want = _outcome(lambda c=call: c(torch.tensor([1, 2, 3], dtype=getattr(torch, dtype))))
        assert got == want, name


@pytest.mark.parametrize("dtype", ["uint16", "uint64"])
def test_unsigned_arange_and_searchsorted(dtype):
    _same(lambda lib: lib.arange(3, dtype=getattr(lib, dtype)))
    _same(lambda lib: lib.searchsorted(lib.tensor([1, 2], dtype=getattr(lib, dtype)),
                                       lib.tensor([1], dtype=getattr(lib, dtype))))


def test_unsigned_refusal_leaves_other_dtypes_computing():
    for dtype in ("int64", "uint8", "float8_e4m3fn"):
        _same(lambda lib, d=dtype: lib.ones(3, dtype=getattr(lib, d)) + 1)


# -- 4. an `out=` view of another shape is resized within its storage -------------------

def _warned_resize(call):
    def run(lib):
        with pytest.warns(UserWarning, match="was resized since it had shape"):
            base, view = call(lib)
        return view.shape, view.stride(), view.storage_offset(), base.tolist(), view.tolist()
    return run


@pytest.mark.parametrize("call", [
    lambda m: (lambda c: (c, m.add(m.ones(3), m.ones(3), out=c[1:3])))(m.zeros(5)),
    lambda m: (lambda c: (c, m.add(m.ones(3), 1, out=c[:, 0])))(m.zeros(4, 4)),
    lambda m: (lambda c: (c, m.exp(m.zeros(2), out=c[::2])))(m.zeros(6)),
    lambda m: (lambda c: (c, m.sum(m.ones(3, 4), 0, out=c[:2])))(m.zeros(10)),
    lambda m: (lambda c: (c, m.amax(m.ones(3, 4), 0, out=c[1:3])))(m.zeros(6)),
    lambda m: (lambda c: (c, m.mm(m.ones(2, 3), m.ones(3, 2), out=c[:1])))(m.zeros(3, 3)),
    lambda m: (lambda c: (c, m.mm(m.ones(2, 3), m.ones(3, 2), out=c.t()[:2])))(m.zeros(3, 3)),
    lambda m: (lambda c: (c, m.matmul(m.ones(2, 3), m.ones(3, 2), out=c[:3])))(m.zeros(9)),
], ids=["add", "add_strided", "exp", "sum", "amax", "mm", "mm_transposed", "matmul"])
def test_out_view_of_another_shape_is_resized_in_place(call):
    got, want = _warned_resize(call)(ember), _warned_resize(call)(torch)
    assert got[0] == tuple(want[0]) and got[1:] == want[1:]


def test_out_view_that_needs_no_resize_keeps_its_strides():
    def call(m):
        c = m.zeros(4, 4)
        v = m.sum(m.ones(3, 4), 0, out=c[:, 0])
        return v.stride(), c.tolist()
    assert call(ember) == call(torch)


# -- 5. vmap of an autograd.Function in the forward(ctx, ...) style --------------------

def _old_style_function(lib):
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return Double


def test_vmap_refuses_a_function_without_setup_context():
    def call(lib):
        return lib.func.vmap(_old_style_function(lib).apply)(lib.ones(3, 2))
    assert _outcome(lambda: call(ember)) == _outcome(lambda: call(torch))
    assert _outcome(lambda: call(torch))[0] is RuntimeError


def test_function_without_setup_context_still_runs_outside_vmap():
    _same(lambda lib: _old_style_function(lib).apply(lib.ones(3)))


# -- 5. reading a sample's value into Python under vmap ---------------------------------

@pytest.mark.parametrize("body", [
    lambda lib, r: r.sum().item(),
    lambda lib, r: float(r.sum()),
    lambda lib, r: int(r[0]),
    lambda lib, r: r * 2 if r.sum() > 0 else r,
    lambda lib, r: r if (r > 100).any() else r * 2,
    lambda lib, r: r.tolist(),
    lambda lib, r: r if r.softmax(0)[0] > 0.5 else r,  # (a fused kernel's result)
    lambda lib, r: r if lib.nn.functional.relu(r - 1).sum() else r,
], ids=["item", "float", "int", "if", "any", "tolist", "softmax", "relu"])
def test_vmap_refuses_reading_a_sample_into_python(body):
    def call(lib):
        return lib.func.vmap(lambda r: body(lib, r))(lib.arange(6.0).view(3, 2))
    want = _outcome(lambda: call(torch))
    assert want[0] is RuntimeError
    assert _outcome(lambda: call(ember)) == want


@pytest.mark.parametrize("body", [
    lambda lib, r, c: r * c.item(),  # an input passed as it is (in_dims None)
    lambda lib, r, c: r * lib.tensor(2.0).item(),  # a constant
    lambda lib, r, c: r * 2 if r.shape[0] > 1 else r,  # shapes are the same for each sample
    lambda lib, r, c: r[lib.tensor([1, 0])] * 2,  # an op that checks its indices
], ids=["unmapped", "constant", "shape", "indexing"])
def test_vmap_reads_values_that_are_not_per_sample(body):
    def call(lib):
        return lib.func.vmap(lambda r, c: body(lib, r, c), in_dims=(0, None))(
            lib.arange(6.0).view(3, 2), lib.tensor(3.0))
    _same(call)


# -- 6. LAPACK results come column-major, as PyTorch returns them -----------------------

def _spd(lib, batch=()):
    a = lib.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    return a.expand(*batch, 3, 3).contiguous()


_LINALG_CALLS = {
    "inv": lambda lib, A, B: lib.linalg.inv(A),
    "inv_ex": lambda lib, A, B: lib.linalg.inv_ex(A),
    "inverse": lambda lib, A, B: lib.inverse(A),
    "solve": lambda lib, A, B: lib.linalg.solve(A, B),
    "cholesky": lambda lib, A, B: lib.linalg.cholesky(A),
    "qr": lambda lib, A, B: lib.linalg.qr(A),
    "svd": lambda lib, A, B: lib.linalg.svd(A),
    "torch_svd": lambda lib, A, B: lib.svd(A),
    "eigh": lambda lib, A, B: lib.linalg.eigh(A),
    "lu_factor": lambda lib, A, B: lib.linalg.lu_factor(A),
    "lstsq": lambda lib, A, B: (lib.linalg.lstsq(A, B).solution,),
    "solve_triangular": lambda lib, A, B: lib.linalg.solve_triangular(A, B, upper=False),
    "cholesky_solve": lambda lib, A, B: lib.cholesky_solve(B, lib.linalg.cholesky(A)),
    "geqrf": lambda lib, A, B: lib.geqrf(A),
    "slogdet": lambda lib, A, B: lib.linalg.slogdet(A),
    "lu": lambda lib, A, B: lib.linalg.lu(A),
    "pinv": lambda lib, A, B: lib.linalg.pinv(A),
}


@pytest.mark.parametrize("batch", [(), (2,)], ids=["matrix", "batch"])
@pytest.mark.parametrize("name", list(_LINALG_CALLS))
def test_linalg_results_have_pytorch_strides(name, batch):
    def layout(lib):
        A = _spd(lib, batch)
        out = _LINALG_CALLS[name](lib, A, A[..., :2])
        outs = out if isinstance(out, tuple) else (out,)
        return [(tuple(t.shape), t.stride(), t.is_contiguous()) for t in outs]

    def values(lib):
        out = _LINALG_CALLS[name](lib, _spd(lib, batch), _spd(lib, batch)[..., :2])
        return [t.tolist() for t in (out if isinstance(out, tuple) else (out,))]
    assert layout(ember) == layout(torch)
    for got, want in zip(values(ember), values(torch)):
        assert torch.allclose(torch.tensor(got), torch.tensor(want), atol=1e-5)


def test_column_major_results_view_and_copy_as_pytorch():
    def call(lib):
        X = lib.linalg.inv(_spd(lib))
        return _outcome(lambda: X.view(9)), X.contiguous().stride(), X.reshape(9).tolist()
    got, want = call(ember), call(torch)
    assert got[0] == want[0] and got[1] == want[1]
    assert torch.allclose(torch.tensor(got[2]), torch.tensor(want[2]))


def test_column_major_results_keep_their_node_names():
    def names(lib):
        A = _spd(lib).requires_grad_()
        return [lib.linalg.inv(A).grad_fn.name(), lib.linalg.cholesky(A).grad_fn.name(),
                lib.linalg.qr(A).Q.grad_fn.name(), lib.linalg.eigh(A).eigenvectors.grad_fn.name()]
    assert names(ember) == names(torch)


# -- 7. double-backward node names --------------------------------------------------------

_DOUBLE_BACKWARD = {
    "conv1d": (lambda F, x, w: F.conv1d(x, w), (1, 2, 5), (3, 2, 2)),
    "conv2d": (lambda F, x, w: F.conv2d(x, w, padding=1, stride=2), (1, 2, 5, 5), (3, 2, 3, 3)),
    "softmax": (lambda F, x: F.softmax(x, -1) ** 2, (4, 3)),
    "log_softmax": (lambda F, x: F.log_softmax(x, -1) ** 2, (4, 3)),
    "gelu": (lambda F, x: F.gelu(x), (4, 3)),
    "elu": (lambda F, x: F.elu(x), (4, 3)),
    "sigmoid": (lambda F, x: F.sigmoid(x), (4, 3)),
    "tanh": (lambda F, x: F.tanh(x), (4, 3)),
    "softplus": (lambda F, x: F.softplus(x), (4, 3)),
    "silu": (lambda F, x: F.silu(x), (4, 3)),
    "mse_loss": (lambda F, x, y: F.mse_loss(x, y), (4, 3), (4, 3)),
    "smooth_l1_loss": (lambda F, x, y: F.smooth_l1_loss(x, y), (4, 3), (4, 3)),
    "max_pool1d": (lambda F, x: F.max_pool1d(x, 2), (1, 1, 4)),
    "max_pool2d": (lambda F, x: F.max_pool2d(x, 2), (1, 1, 4, 4)),
}


@pytest.mark.parametrize("name", list(_DOUBLE_BACKWARD))
def test_double_backward_node_names(name):
    fn, *shapes = _DOUBLE_BACKWARD[name]

    def run(lib):
        gen = lib.Generator().manual_seed(0)
        xs = [lib.randn(*s, dtype=lib.float64, generator=gen).requires_grad_() for s in shapes]
        grads = lib.autograd.grad(fn(lib.nn.functional, *xs).sum(), xs, create_graph=True)
        names = [g.grad_fn.name() if g.grad_fn is not None else None for g in grads]
        again = lib.autograd.grad(sum(g.sum() for g in grads), xs, allow_unused=True)
        return names, [None if g is None else round(g.sum().item(), 6) for g in again]
    assert run(ember) == run(torch)


# -- 8. set_multithreading_enabled lives at torch.autograd.grad_mode --------------------

def test_set_multithreading_enabled_prints_at_grad_mode():
    def call(lib):
        cls = lib.autograd.set_multithreading_enabled
        assert cls is lib.autograd.grad_mode.set_multithreading_enabled
        prev = lib.autograd.is_multithreading_enabled()
        with cls(not prev) as bound:
            inside = lib.autograd.is_multithreading_enabled()

        @cls(False)
        def decorated():
            return lib.autograd.is_multithreading_enabled()
        cls(prev)
        out = (repr(cls).replace("torch.", API_NAME + "."), cls.__qualname__, bound, inside,
               decorated(), lib.autograd.is_multithreading_enabled() == prev)
        cls(prev)
        return out
    assert call(ember) == call(torch)
