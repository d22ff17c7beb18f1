"""PyTorch-compatibility gaps, round 37 (found by fuzzing): checked against PyTorch itself."""

import pytest

import ember
from ember.core.dtype import API_NAME

torch = pytest.importorskip("torch")
from torch_oracle import DEVICES  # noqa: E402


def _outcome(call, lib):
    """`call(lib)`'s result (a tensor or a tuple of them) as lists, or its exception's
    type and first line."""
    try:
        out = call(lib)
        return [t.tolist() for t in out] if isinstance(out, tuple) else out.tolist()
    except Exception as err:  # noqa: BLE001 (any error is compared with PyTorch's)
        return type(err).__name__, str(err).splitlines()[0]


@pytest.mark.parametrize("call", [
    lambda lib: lib.zeros(0, dtype=lib.uint8) // 0,
    lambda lib: lib.zeros(0, dtype=lib.int64) % 0,
    lambda lib: lib.floor_divide(lib.zeros(0, dtype=lib.int32), lib.tensor(0, dtype=lib.int32)),
    lambda lib: lib.remainder(lib.zeros(0, 3, dtype=lib.int64), lib.zeros(3, dtype=lib.int64)),
    lambda lib: lib.div(lib.zeros(0, dtype=lib.int64), 0, rounding_mode="floor"),
    lambda lib: lib.div(lib.zeros(0, dtype=lib.int64), 0, rounding_mode="trunc"),
    lambda lib: lib.fmod(lib.zeros(0, dtype=lib.int64), 0),
    lambda lib: lib.zeros(0, dtype=lib.int64).remainder_(0),
    lambda lib: lib.ones(2, dtype=lib.int64) // 0,
    lambda lib: lib.ones(2, dtype=lib.int64).fmod(lib.zeros(1, dtype=lib.int64)),
    lambda lib: lib.zeros(0, dtype=lib.int64).pow(-1),
], ids=range(11))
@pytest.mark.parametrize("device", DEVICES)
def test_integer_division_by_zero_only_where_a_divisor_is_read(call, device):
    """PyTorch's integer division kernels check the divisors they read: an empty result
    reads none, so `empty // 0` is empty (not "ZeroDivisionError")."""
    with ember.device(device):
        ours = _outcome(call, ember)
    assert ours == _outcome(call, torch)


@pytest.mark.parametrize("call", [
    lambda lib: lib.randn(2, 3, memory_format=lib.channels_last),
    lambda lib: lib.rand(2, 3, memory_format=lib.channels_last),
    lambda lib: lib.randint(5, (2, 3), memory_format=lib.channels_last),
    lambda lib: lib.randint(0, 5, (2, 3), foo=1),
    lambda lib: lib.randint(5, size=(2, 3), foo=1, bar=2),
    lambda lib: lib.randint(5, (2, 3), lib.int64),
    lambda lib: lib.randperm(5, foo=1),
    lambda lib: lib.randn(2, 3, foo=1, bar=2),
    lambda lib: lib.randn(size=(2, 3), foo=1),
    lambda lib: lib.randn(2, 3, size=(2,)),
    lambda lib: lib.rand((2, 3), 4),
    lambda lib: lib.randn(),
    lambda lib: lib.rand(dtype=lib.float32),
    lambda lib: lib.randn(2, 3, requires_grad=1),
    lambda lib: lib.randn(2, 3, dtype=5),
    lambda lib: lib.rand(2, 3, generator=5),
    lambda lib: lib.randn(2, layout=5),
    lambda lib: lib.randn(2, pin_memory=1),
    lambda lib: lib.zeros(2, 3, memory_format=lib.channels_last),
    lambda lib: lib.full((2, 3), 1.0, foo=1),
    lambda lib: lib.empty(2, 3, memory_format=lib.channels_last),
    lambda lib: lib.empty(2, 3, memory_format=lib.preserve_format),
    lambda lib: lib.zeros(2, 3, size=(2,)),
], ids=range(23))
def test_factory_arguments_refused_as_torch(call):
    """A factory call no overload takes: the random factories (whose generator overloads
    make PyTorch's parser list them) say "invalid combination of arguments", the others
    name the argument; the type and the first line as PyTorch's."""
    kind, text = _outcome(call, torch)
    assert _outcome(call, ember) == (kind, text.replace("torch.", f"{API_NAME}."))


def test_random_factories_take_layout_and_pin_memory_as_torch():
    generator = ember.Generator().manual_seed(0)
    ours = ember.randn(2, 3, dtype=ember.float32, generator=generator, out=None,
                       layout=ember.strided, device="cpu", pin_memory=False,
                       requires_grad=False)
    theirs = torch.randn(2, 3, dtype=torch.float32, generator=torch.Generator().manual_seed(0),
                         out=None, layout=torch.strided, device="cpu", pin_memory=False,
                         requires_grad=False)
    assert ours.tolist() == theirs.tolist()
    assert ember.randint(3, (4,), layout=ember.strided).shape == (4,)


@pytest.mark.parametrize("shape, dim", [((1, 2, 3), 1), ((2, 3), 1), ((3, 2), 0), ((4,), 0)])
@pytest.mark.parametrize("index, alpha", [([0, -1], 1), ([5], 2), (("int32", [5]), 1)])
@pytest.mark.parametrize("device", DEVICES)
def test_index_add_out_of_range_error_follows_torchs_kernel(shape, dim, index, alpha, device):
    """PyTorch's CPU index_add adds along the first or last dim through scatter_add (int64
    indices, alpha 1), which names the bad index (RuntimeError); otherwise slice by slice:
    "index out of range in self" (IndexError)."""
    dtype, values = index if isinstance(index[0], str) else ("int64", index)

    def call(lib):
        x = lib.zeros(shape)
        i = lib.tensor(values, dtype=getattr(lib, dtype))
        source = lib.ones(shape[:dim] + (len(values),) + shape[dim + 1:])
        return x.index_add(dim, i, source, alpha=alpha)
    with ember.device(device):
        ours = _outcome(call, ember)
    assert ours == _outcome(call, torch)


@pytest.mark.parametrize("call", [
    lambda lib: lib.zeros(0).repeat(-2),
    lambda lib: lib.zeros(0, 2).repeat(-2, 1),
    lambda lib: lib.zeros(0, 2).repeat(1, -2),
    lambda lib: lib.zeros(0).repeat(-2, 1),
    lambda lib: lib.zeros(2).repeat(-2),
    lambda lib: lib.zeros(0, 2).tile((-1, 2)),
    lambda lib: lib.zeros(0).narrow(0, 1, -1),
    lambda lib: lib.zeros(3).narrow(0, 5, -1),
    lambda lib: lib.zeros(3).narrow(3, 0, -1),
    lambda lib: lib.zeros(3).narrow(0, 5, 1),
    lambda lib: lib.zeros(()).narrow(0, 0, -1),
], ids=range(11))
def test_negative_repeats_and_lengths_checked_as_torch(call):
    """repeat checks the sizes it makes (a negative repeat of an empty dim is an empty
    dim), in PyTorch's words; narrow checks a negative length before the dim and start."""
    assert _outcome(call, ember) == _outcome(call, torch)


def test_negative_repeat_of_an_empty_dim_keeps_the_graph():
    x = ember.zeros(0, 2, requires_grad=True)
    out = x.repeat(-3, 2)
    assert out.shape == (0, 4) and out.grad_fn.name() == "RepeatBackward0"
    out.sum().backward()
    assert x.grad.shape == (0, 2)


@pytest.mark.parametrize("call", [
    lambda F, lib: F.max_pool2d(lib.zeros(0, 1, 1, 1), 2, None, 1, 1),
    lambda F, lib: F.max_pool2d(lib.zeros(0, 1, 3, 3), 2, None, 1, 1, return_indices=True),
    lambda F, lib: F.max_pool1d(lib.zeros(0, 1, 3), 2, 1, 1, return_indices=True),
    lambda F, lib: F.max_pool3d(lib.zeros(0, 1, 1, 1, 1), 2, None, 1),
    lambda F, lib: F.max_pool2d(lib.arange(-9, 0).reshape(1, 1, 3, 3), 2, None, 1,
                                return_indices=True),
    lambda F, lib: F.max_pool3d(lib.full((1, 1, 3, 3, 3), -2 ** 63), 2, None, 1,
                                return_indices=True),
    lambda F, lib: F.max_pool1d(lib.tensor([[[-5, -3, -7]]]), 2, None, 1,
                                return_indices=True),
    lambda F, lib: F.max_pool1d(lib.zeros(0, 1, 1, dtype=lib.int64), 2, None, 1),
    lambda F, lib: F.max_pool1d(lib.zeros(1, 3, dtype=lib.int32), 2),
    lambda F, lib: F.max_pool1d(lib.zeros(1, 1, 3, dtype=lib.bool), 2),
    lambda F, lib: F.max_pool1d(lib.zeros(1, 1, 3, dtype=lib.uint8), -1),
    lambda F, lib: lib.nn.MaxPool1d(2)(lib.zeros(1, 1, 4, dtype=lib.int64)),
], ids=range(12))
@pytest.mark.parametrize("device", DEVICES)
def test_max_pool_of_an_empty_batch_and_of_integers_as_torch(call, device):
    """An empty batch pools to an empty result; integer inputs pad with their least value
    (not -inf); max_pool1d without indices refuses integers (PyTorch's floating-only
    max_pool1d_impl kernel)."""
    def pool(lib):
        return call(lib.nn.functional, lib)
    with ember.device(device):
        ours = _outcome(pool, ember)
    assert ours == _outcome(pool, torch)



_FLOAT_ONLY = ["modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
               "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
               "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai", "erfcx", "ndtri",
               "spherical_bessel_j0", "log_ndtr"]


@pytest.mark.parametrize("name", _FLOAT_ONLY)
def test_special_functions_without_half_precision_kernels_refuse_it(name):
    """torch.special functions whose CPU kernels are built for float32 and float64 only
    refuse float16 and bfloat16 (NotImplementedError naming the kernel); i0, i0e, i1, i1e,
    ndtr and the rest compute them."""
    for dtype in ("float16", "bfloat16", "float32"):
        def call(lib, dtype=dtype):
            return getattr(lib.special, name)(lib.tensor([0.5, 2.0]).to(getattr(lib, dtype)))
        ours, theirs = _outcome(call, ember), _outcome(call, torch)
        if theirs[0] == "NotImplementedError":
            assert ours == theirs
        else:
            assert ours == pytest.approx(theirs, rel=1e-6, nan_ok=True)
