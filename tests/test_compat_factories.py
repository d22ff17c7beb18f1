"""Factories and helpers of torch's namespace checked against PyTorch: tensors over existing
memory (`asarray`, `frombuffer`, `from_file`), strided and permuted `empty`s, the
deprecated `range`, `Tensor.dim_order`, `typename`, `is_storage`,
`set_default_tensor_type` and the numeric constants."""

import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _same(e, t):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())


def _raises_alike(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(te.type) as ee:
        fe()
    # ember's API name where PyTorch says torch (`python -m ember.run` says torch)
    assert str(ee.value) == str(te.value).replace("torch.", "ember.")


def test_numeric_constants_are_torchs():
    for name in ("pi", "e", "inf"):
        assert getattr(ember, name) == getattr(torch, name)
    assert math.isnan(ember.nan) and ember.newaxis is None
    x = ember.arange(3.0)
    assert tuple(x[:, ember.newaxis].shape) == (3, 1)
    assert ember.full((2,), -ember.inf).tolist() == [-math.inf] * 2


@pytest.mark.parametrize("size,stride", [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((), ()),
                                         ((4, 1, 2), (2, 100, 1))])
def test_empty_strided_has_the_strides_and_storage_of_torchs(size, stride):
    e = ember.empty_strided(size, stride, dtype=ember.float64)
    t = torch.empty_strided(size, stride, dtype=torch.float64)
    assert e.stride() == t.stride() and tuple(e.shape) == tuple(t.shape)
    assert e.untyped_storage().nbytes() == t.untyped_storage().nbytes()
    n = ember.ones(1, dtype=ember.int8).new_empty_strided(size, stride)
    assert n.dtype is ember.int8 and n.stride() == t.stride()


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (0, 2, 3, 1), (3, 2, 1, 0), (1, 0, 3, 2)])
def test_empty_permuted_lays_dims_out_in_the_order_given(order):
    e = ember.empty_permuted((2, 3, 5, 7), order)
    assert e.stride() == torch.empty_permuted((2, 3, 5, 7), order).stride()


@pytest.mark.parametrize("call", [
    lambda lib: lib.empty_permuted((2, 3), (0, 0)),
    lambda lib: lib.empty_permuted((2, 3), (0,)),
    lambda lib: lib.empty_strided((2, 3), (1,)),
    lambda lib: lib.empty_strided((2, 3), (1, -1)),
])
def test_bad_strided_and_permuted_sizes_raise_torchs_errors(call):
    _raises_alike(lambda: call(ember), lambda: call(torch))


@pytest.mark.parametrize("args", [(1, 4), (1, 4, 0.5), (0, 3), (4, 1, -1), (0.5, 2.2, 0.3)])
def test_range_is_inclusive_and_warns_as_deprecated(args):
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        e = ember.range(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.range(*args)
    _same(e, t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(ember.range(0, 3, dtype=ember.int64), torch.range(0, 3, dtype=torch.int64))


def test_frombuffer_shares_the_buffer_and_checks_its_bounds():
    raw = bytearray(np.arange(4, dtype=np.int32).tobytes())
    e = ember.frombuffer(raw, dtype=ember.int32)
    raw[0] = 9
    assert e.tolist() == [9, 1, 2, 3]
    e[1] = 7
    assert np.frombuffer(raw, dtype=np.int32)[1] == 7
    _same(ember.frombuffer(raw, dtype=ember.int16, count=3, offset=2),
          torch.frombuffer(bytearray(raw), dtype=torch.int16, count=3, offset=2))
    for kw in (dict(offset=3), dict(count=5), dict(offset=16), dict(count=0)):
        _raises_alike(lambda kw=kw: ember.frombuffer(raw, dtype=ember.int32, **kw),
                      lambda kw=kw: torch.frombuffer(bytearray(raw), dtype=torch.int32, **kw))
    _raises_alike(lambda: ember.frombuffer(bytearray(), dtype=ember.int32),
                  lambda: torch.frombuffer(bytearray(), dtype=torch.int32))


def test_frombuffer_of_immutable_bytes_warns_and_reads_them(monkeypatch):
    from ember.core import errors

    monkeypatch.setattr(errors, "_warned", set())  # (warned once a process)
    with pytest.warns(UserWarning, match="buffer is not writable"):
        e = ember.frombuffer(b"abcd", dtype=ember.uint8)
    assert e.tolist() == [97, 98, 99, 100]


def test_asarray_shares_memory_and_converts_as_torch_does():
    n = np.array([1, 2, 3])
    e = ember.asarray(n)
    n[0] = 9
    assert e.tolist() == [9, 2, 3] and e.dtype is ember.int64
    assert ember.asarray(n, copy=True).tolist() == [9, 2, 3]
    n[1] = 8
    _same(ember.asarray([1, 2.5]), torch.asarray([1, 2.5]))
    _same(ember.asarray(np.float64(2.0)), torch.asarray(np.float64(2.0)))
    _same(ember.asarray(n, dtype=ember.float32), torch.asarray(n, dtype=torch.float32))
    _raises_alike(lambda: ember.asarray(n, dtype=ember.float32, copy=False),
                  lambda: torch.asarray(n, dtype=torch.float32, copy=False))
    t = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="unspecified requires_grad"):
        assert ember.asarray(t) is t
    detached = ember.asarray(t, requires_grad=False)
    assert not detached.requires_grad
    detached[0] = 5.0  # an alias of t's memory
    assert t.tolist()[0] == 5.0
    assert ember.asarray([1, 2], dtype=ember.float32, requires_grad=True).requires_grad


def test_from_file_maps_the_file_privately_or_shared(tmp_path):
    path = tmp_path / "values.bin"
    np.arange(10, dtype=np.float32).tofile(path)
    private = ember.from_file(str(path), shared=False, size=10, dtype=ember.float32)
    private[0] = 100.0
    assert np.fromfile(path, dtype=np.float32)[0] == 0.0
    shared = ember.from_file(str(path), shared=True, size=4, dtype=ember.float32)
    shared[1] = 7.0
    assert np.fromfile(path, dtype=np.float32)[1] == 7.0
    assert ember.from_file(str(path)).numel() == 0
    _raises_alike(lambda: ember.from_file(str(path), size=20),
                  lambda: torch.from_file(str(path), size=20))
    _raises_alike(lambda: ember.from_file(str(path) + "x", size=2),
                  lambda: torch.from_file(str(path) + "x", size=2))


@pytest.mark.parametrize("make", [
    lambda lib: lib.empty(2, 3, 5, 7),
    lambda lib: lib.empty(2, 3, 5, 7).permute(0, 2, 3, 1),
    lambda lib: lib.empty(2, 3, 5, 7).to(memory_format=lib.channels_last),
    lambda lib: lib.empty(2, 1, 3),
    lambda lib: lib.empty(4, 5).t(),
    lambda lib: lib.empty(2, 3, 4)[:, ::2].transpose(0, 2),
    lambda lib: lib.empty(3, 1, 4, 1).expand(3, 2, 4, 5),
    lambda lib: lib.empty(()),
])
@pytest.mark.parametrize("check", [False, True, "formats"])
def test_dim_order_and_its_ambiguity_check_are_torchs(make, check):
    def call(lib):
        arg = [lib.contiguous_format, lib.channels_last] if check == "formats" else check
        return make(lib).dim_order(ambiguity_check=arg)
    try:
        want = call(torch)
    except RuntimeError as err:
        with pytest.raises(RuntimeError, match="unique dim order"):
            call(ember)
        assert "unique dim order" in str(err)
        return
    assert call(ember) == want


def test_typename_is_storage_and_flush_denormal():
    for obj in (ember.tensor([1]), ember.tensor([1.0], dtype=ember.float64), 3, "s", len):
        other = torch.tensor(obj.tolist(), dtype=getattr(torch, str(obj.dtype).split(".")[1])) \
            if isinstance(obj, ember.Tensor) else obj
        # ember's API name where PyTorch says torch (`python -m ember.run` says torch)
        assert ember.typename(obj) == torch.typename(other).replace("torch.", "ember.")
    assert ember.typename(ember.nn.Linear) == "ember.nn.modules.linear.Linear"
    assert ember.is_storage(ember.tensor([1]).untyped_storage())
    assert ember.is_storage(ember.tensor([1.0]).storage())
    assert not ember.is_storage(ember.tensor([1]))
    assert ember.set_flush_denormal(True) is False


def test_set_default_tensor_type_sets_the_default_dtype():
    # (PyTorch warns once a process, TORCH_WARN_ONCE: set_warn_always makes it warn here)
    ember.set_warn_always(True)
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
            ember.set_default_tensor_type(ember.DoubleTensor)
        assert ember.get_default_dtype() is ember.float64
        assert ember.tensor([1.5]).dtype is ember.float64
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ember.set_default_tensor_type("torch.HalfTensor")
            assert ember.get_default_dtype() is ember.float16
            with pytest.raises(TypeError, match="only floating-point types"):
                ember.set_default_tensor_type("torch.LongTensor")
            with pytest.raises(AttributeError, match="has no attribute 'FooTensor'"):
                ember.set_default_tensor_type("torch.FooTensor")
    finally:
        ember.set_default_dtype(ember.float32)
        ember.set_warn_always(False)


@pytest.mark.parametrize("kwargs", [
    dict(dtype="float32"), dict(dtype="float64", low=-1, high=1), dict(dtype="int64", low=-2),
    dict(dtype="bool"), dict(dtype="uint8", exclude_zero=True), dict(dtype="complex64"),
    dict(dtype="float32", noncontiguous=True), dict(dtype="float32", low=-math.inf),
    dict(dtype="int8", high=1000),
])
def test_make_tensor_draws_torchs_values(kwargs):
    def make(lib):
        lib.manual_seed(0)
        kw = dict(kwargs, dtype=getattr(lib, kwargs["dtype"]))
        return lib.testing.make_tensor(3, 4, device="cpu", **kw)
    e, t = make(ember), make(torch)
    _same(e, t)
    assert e.stride() == t.stride()


@pytest.mark.parametrize("kwargs", [dict(low=5, high=1), dict(low=math.nan),
                                    dict(requires_grad=True), dict(low=300)])
def test_make_tensor_refuses_bad_bounds_as_torch_does(kwargs):
    _raises_alike(lambda: ember.testing.make_tensor(2, dtype=ember.uint8, device="cpu", **kwargs),
                  lambda: torch.testing.make_tensor(2, dtype=torch.uint8, device="cpu", **kwargs))


def test_assert_close_compares_numpy_arrays():
    ember.testing.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    with pytest.raises(AssertionError, match="Tensor-likes are not close"):
        ember.testing.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.1]))


def test_func_linearize_is_jvp_at_the_primals():
    results = []
    for lib in (ember, torch):
        x = lib.arange(4.0)
        out, jvp_fn = lib.func.linearize(lambda t: t.sin() * t, x)
        results.append((out, jvp_fn(lib.ones(4)), jvp_fn(lib.arange(4.0))))
    for e, t in zip(*results):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6)


def test_convert_conv_weight_memory_format_and_skip_init():
    def convert(lib):
        model = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3),
                                  lib.nn.Sequential(lib.nn.ConvTranspose2d(4, 2, 3)),
                                  lib.nn.Linear(2, 2), lib.nn.Conv3d(1, 1, 1))
        out = lib.nn.utils.convert_conv2d_weight_memory_format(model, lib.channels_last)
        assert out is model
        lib.nn.utils.convert_conv3d_weight_memory_format(model, lib.channels_last_3d)
        return [m.weight.stride() for m in (model[0], model[1][0], model[2], model[3])]
    assert convert(ember) == convert(torch)
    skipped = ember.nn.utils.skip_init(ember.nn.Linear, 5, 1)
    assert skipped.weight.device.type == "cpu" and tuple(skipped.weight.shape) == (1, 5)
    assert isinstance(skipped.weight, ember.nn.Parameter)
    _raises_alike(lambda: ember.nn.utils.skip_init(int), lambda: torch.nn.utils.skip_init(int))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_output_node_is_named_as_torchs(mode):
    names = []
    for lib in (ember, torch):
        bag = lib.nn.EmbeddingBag(10, 3, mode=mode)
        names.append(bag(lib.tensor([1, 2, 4, 5, 4, 3, 2, 9]), lib.tensor([0, 4])).grad_fn.name())
    assert names[0] == names[1] == "EmbeddingBagBackward0"


def test_torch_range_does_not_shadow_the_builtin_inside_ember():
    """`ember.range` is torch.range; ember's own code that counts with `range` (the device
    list) must still get Python's."""
    assert all(d.index is None or type(d.index) is int for d in ember.devices())


def test_assert_close_without_subclasses_refuses_a_parameter_against_a_tensor():
    actual = ember.tensor([1.0, 2.0])
    ember.testing.assert_close(ember.nn.Parameter(actual), actual.clone())
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type"):
        ember.testing.assert_close(ember.nn.Parameter(actual), actual.clone(),
                                   allow_subclasses=False)
