"""Tensor creation, attributes and conversions: the rules of PyTorch's Tensor API.

Values are checked against explicit expectations or PyTorch (an oracle only: each test
that needs it asks for it with `pytest.importorskip`).
"""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest

import ember


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def restore_defaults():
    """Put the default dtype and device back whatever a test does."""
    yield
    ember.set_default_dtype(ember.float32)
    ember.set_default_device(None)


def _tname(dtype) -> str:
    """ember.float32 -> 'float32' (the same spelling torch uses)."""
    return repr(dtype).removeprefix("ember.")


# -- ember.tensor ----------------------------------------------------------------------


class TestTensorFactory:
    def test_nested_lists(self):
        t = ember.tensor([[1, 2, 3], [4, 5, 6]])
        assert t.shape == (2, 3)
        assert t.dtype is ember.int64
        assert t.tolist() == [[1, 2, 3], [4, 5, 6]]

    @pytest.mark.parametrize("data, dtype", [
        ([1, 2], ember.int64),
        ([1.0, 2], ember.float32),
        ([True, False], ember.bool),
        ([True, 2], ember.int64),
        ([True, 2.5], ember.float32),
        (3, ember.int64),
        (3.5, ember.float32),
        (False, ember.bool),
        ([], ember.float32),
        ([[1], [2.0]], ember.float32),
    ])
    def test_dtype_inference(self, data, dtype):
        assert ember.tensor(data).dtype is dtype

    def test_dtype_inference_matches_torch(self, torch):
        for data in ([1, 2], [1.0, 2], [True, False], [True, 2], [[True], [1.5]], 7, 7.0, True,
                     [], [[]]):
            e, t = ember.tensor(data), torch.tensor(data)
            assert _tname(e.dtype) == str(t.dtype).removeprefix("torch."), data
            assert tuple(e.shape) == tuple(t.shape), data

    @pytest.mark.parametrize("np_dtype, dtype", [
        (np.float16, ember.float16), (np.float32, ember.float32),
        (np.float64, ember.float64), (np.int8, ember.int8), (np.int16, ember.int16),
        (np.int32, ember.int32), (np.int64, ember.int64), (np.uint8, ember.uint8),
        (np.bool_, ember.bool),
    ])
    def test_numpy_array_keeps_dtype(self, np_dtype, dtype):
        a = np.arange(6).reshape(2, 3).astype(np_dtype)
        t = ember.tensor(a)
        assert t.dtype is dtype
        assert t.shape == (2, 3)
        np.testing.assert_array_equal(t.numpy(), a)

    def test_explicit_dtype_converts(self):
        t = ember.tensor([1.7, -2.2], dtype=ember.int32)
        assert t.dtype is ember.int32
        assert t.tolist() == [1, -2]  # truncation toward zero, as torch does
        assert ember.tensor([1, 0], dtype=ember.bool).tolist() == [True, False]
        assert ember.tensor([1, 2], dtype=ember.float64).dtype is ember.float64

    def test_copies_numpy_input(self):
        a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
        t = ember.tensor(a)
        a[0] = 100.0
        assert t.tolist() == [1.0, 2.0, 3.0]
        t[1] = -1.0
        assert a[1] == 2.0

    def test_copies_list_input(self):
        data = [1.0, 2.0]
        t = ember.tensor(data)
        data[0] = 5.0
        assert t.tolist() == [1.0, 2.0]

    def test_copies_tensor_input(self):
        src = ember.tensor([1.0, 2.0])
        t = ember.tensor(src)
        src[0] = 9.0
        assert t.tolist() == [1.0, 2.0]

    @pytest.mark.parametrize("data", [[[1, 2], [3]], [[1, 2], 3], [[[1], [2, 3]]],
                                      [[1, 2], [3, 4, 5]], [[[1, 2], [3, 4]], [[1, 2], [3]]],
                                      [[1.0, 2.0], []], [(1, 2), [3]]])
    def test_ragged_raises_as_torch(self, data):
        # unpadded token lists: PyTorch's "expected sequence of length 2 at dim 1 (got 1)"
        torch = pytest.importorskip("torch")
        errors = []
        for lib in (torch, ember):
            with pytest.raises((ValueError, TypeError)) as info:
                lib.tensor(data)
            errors.append((info.type, str(info.value)))
        assert errors[1] == errors[0]

    def test_requires_grad(self):
        t = ember.tensor([1.0, 2.0], requires_grad=True)
        assert t.requires_grad and t.is_leaf and t.grad is None and t.grad_fn is None

    def test_list_of_zero_dim_tensors(self):
        t = ember.tensor([ember.tensor(1.5), ember.tensor(2.5)])
        assert t.tolist() == [1.5, 2.5]

    def test_tensor_class_call(self):
        t = ember.Tensor([1.0, 2.0])
        assert isinstance(t, ember.Tensor) and t.tolist() == [1.0, 2.0]
        assert ember.is_tensor(t) and not ember.is_tensor([1.0])


class TestSharedMemory:
    def test_from_numpy_shares(self):
        a = np.arange(4, dtype=np.float64)
        t = ember.from_numpy(a)
        assert t.dtype is ember.float64
        a[0] = 42.0
        assert t[0].item() == 42.0
        t[1] = -3.0
        assert a[1] == -3.0

    def test_frombuffer_shares_and_reads_as_torch(self):
        import array

        torch = pytest.importorskip("torch")
        buf = bytearray(b"hello world!")
        t = ember.frombuffer(buf, dtype=ember.uint8)
        t[0] = 72
        assert buf[:1] == b"H" and t.shape == (12,)
        for kwargs in (dict(dtype="int32"), dict(dtype="int16", count=2, offset=2),
                       dict(dtype="uint8", offset=11)):
            got = ember.frombuffer(buf, **{**kwargs, "dtype": getattr(ember, kwargs["dtype"])})
            want = torch.frombuffer(buf, **{**kwargs, "dtype": getattr(torch, kwargs["dtype"])})
            assert got.tolist() == want.tolist() and str(got.dtype)[6:] == str(want.dtype)[6:]
        floats = ember.frombuffer(array.array("f", [1, 2, 3]), dtype=ember.float32,
                                  requires_grad=True)
        assert floats.tolist() == [1.0, 2.0, 3.0] and floats.requires_grad
        for kwargs in (dict(offset=1, dtype="int32"), dict(offset=12), dict(count=20),
                       dict(count=0), dict(offset=-1, dtype="int64")):
            messages = []
            for lib, source in ((torch, bytearray(buf)), (ember, bytearray(buf))):
                with pytest.raises(ValueError) as info:
                    lib.frombuffer(source, **{**kwargs,
                                              "dtype": getattr(lib, kwargs.get("dtype", "uint8"))})
                messages.append(str(info.value))
            assert messages[1] == messages[0], kwargs
        with pytest.raises(ValueError, match="does not implement Python buffer protocol"):
            ember.frombuffer([1, 2], dtype=ember.uint8)

    def test_frombuffer_of_read_only_bytes_warns_and_copies(self, monkeypatch):
        import warnings

        from ember.core import errors

        data = b"abcd"
        monkeypatch.setattr(errors, "_warned", set())  # (warned once a process)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = ember.frombuffer(data, dtype=ember.uint8)
        assert any("The given buffer is not writable" in str(w.message) for w in caught)
        t.add_(1)  # its own memory: the bytes object stays as it was
        assert t.tolist() == [98, 99, 100, 101] and data == b"abcd"

    def test_as_tensor_shares_numpy(self):
        a = np.zeros(3, dtype=np.int32)
        t = ember.as_tensor(a)
        assert t.dtype is ember.int32
        a[2] = 7
        assert t.tolist() == [0, 0, 7]

    def test_tensor_of_a_tensor_warns_as_torch(self, torch):
        # Neural Transfer's Normalization calls torch.tensor(mean) on a tensor: torch warns,
        # at the caller's line, and copies (new_tensor says so in its own words)
        for lib in (torch, ember):
            src = lib.tensor([1.0, 2.0])
            with pytest.warns(UserWarning) as caught:
                copy_ = lib.tensor(src)
                new = src.new_tensor(src)
            assert [w.filename for w in caught] == [__file__, __file__]
            assert (copy_.tolist(), new.tolist()) == ([1.0, 2.0], [1.0, 2.0])
            src[0] = 5.0
            assert copy_[0].item() == new[0].item() == 1.0
            if lib is torch:
                want = [str(w.message) for w in caught]
        assert [str(w.message) for w in caught] == want
        assert "rather than torch.tensor(sourceTensor)." in want[0]

    def test_as_tensor_of_tensor_is_identity(self):
        t = ember.tensor([1.0, 2.0])
        assert ember.as_tensor(t) is t

    def test_as_tensor_with_other_dtype_copies(self):
        a = np.zeros(3, dtype=np.int32)
        t = ember.as_tensor(a, dtype=ember.float32)
        a[0] = 1
        assert t.dtype is ember.float32 and t.tolist() == [0.0, 0.0, 0.0]

    def test_numpy_shares_with_cpu_tensor(self):
        t = ember.zeros(3)
        a = t.numpy()
        a[0] = 5.0
        assert t[0].item() == 5.0


# -- factories ---------------------------------------------------------------------------


class TestFactories:
    @pytest.mark.parametrize("factory, fill", [(ember.zeros, 0.0), (ember.ones, 1.0)])
    def test_zeros_ones(self, factory, fill):
        for args in [(2, 3), ((2, 3),), ([2, 3],)]:
            t = factory(*args)
            assert t.shape == (2, 3) and t.dtype is ember.float32
            assert t.tolist() == [[fill] * 3] * 2
        assert factory(()).shape == () and factory(0).shape == (0,)
        assert factory(2, dtype=ember.int8).dtype is ember.int8

    def test_full(self, torch):
        for fill in (2, 2.5, True):
            e, t = ember.full((2, 2), fill), torch.full((2, 2), fill)
            assert _tname(e.dtype) == str(t.dtype).removeprefix("torch.")
            assert e.tolist() == t.tolist()
        assert ember.full((3,), 7, dtype=ember.float64).dtype is ember.float64

    def test_empty(self):
        t = ember.empty(2, 4, dtype=ember.int16)
        assert t.shape == (2, 4) and t.dtype is ember.int16

    def test_negative_size_raises(self):
        with pytest.raises(RuntimeError, match="negative dimension"):
            ember.ones(2, -1)
        with pytest.raises(RuntimeError, match="zeros: Dimension size must be non-negative"):
            ember.zeros(2, -1)

    @pytest.mark.parametrize("args", [(5,), (2, 7), (1, 2, 0.25), (0.0, 1.0, 0.3), (5, 0, -1),
                                      (-3, 3, 2), (0, 0)])
    def test_arange(self, torch, args):
        e, t = ember.arange(*args), torch.arange(*args)
        assert _tname(e.dtype) == str(t.dtype).removeprefix("torch.")
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)

    def test_arange_dtype(self):
        assert ember.arange(4, dtype=ember.float64).tolist() == [0.0, 1.0, 2.0, 3.0]

    @pytest.mark.parametrize("args", [(0, 1, 5), (-1, 1, 1), (2, 2, 3), (0, 10, 0), (3, -3, 7)])
    def test_linspace(self, torch, args):
        e, t = ember.linspace(*args), torch.linspace(*args)
        assert e.dtype is ember.float32 and tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)

    @pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
    def test_linspace_is_bit_exact(self, torch, dtype):
        """PyTorch's values to the bit (its fused multiply-adds in the dtype's precision):
        the middle of linspace(-1, 1, 7) in float64 is 5.55e-17, not 0."""
        import random

        rng = random.Random(0)
        cases = [(-1.0, 1.0, 7), (0.1, 0.7, 2), (-math.pi, math.pi, 2000)]
        cases += [(rng.uniform(-5, 5), rng.uniform(-5, 5), rng.randint(2, 40)) for _ in range(60)]
        for start, end, steps in cases:
            e = ember.linspace(start, end, steps, dtype=getattr(ember, dtype))
            t = torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
            assert e.tolist() == t.tolist(), (start, end, steps)
        with pytest.raises(RuntimeError, match="value cannot be converted to type float without "
                                               "overflow"):
            ember.linspace(1e300, -1e300, 5)
    @pytest.mark.parametrize("args,dtype", [
        ((0, 2, 3), None), ((0, 1, 7, 2.0), "float32"), ((-3, 3, 11), "float64"),
        ((0.1, 2.7, 9, 3.3), "float16"), ((0, 10, 6, 2), "int64"), ((1, 3, 5), "bfloat16"),
        ((2, 2, 1), None), ((0, 1, 0), None), ((5, 0, 8, 1.5), "float32"),
        ((0, 40, 41, 2), "int32"), ((-1, 1, 4, 0.5), "float64")])
    def test_logspace_bit_for_bit(self, torch, args, dtype):
        """PyTorch's CPU kernel's values exactly: exponents and powers in double from the
        dtype's start, end and step, the second half counted back from the end."""
        e = ember.logspace(*args, **({} if dtype is None else {"dtype": getattr(ember, dtype)}))
        t = torch.logspace(*args, **({} if dtype is None else {"dtype": getattr(torch, dtype)}))
        assert _tname(e.dtype) == str(t.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())
        with pytest.raises(RuntimeError, match="^number of steps must be non-negative$"):
            ember.logspace(0, 1, -1)

    def test_eye(self, torch):
        for args in [(3,), (2, 4), (4, 2), (0,)]:
            np.testing.assert_array_equal(ember.eye(*args).numpy(), torch.eye(*args).numpy())
        assert ember.eye(2, dtype=ember.int64).dtype is ember.int64

    def test_like_factories(self):
        x = ember.ones(2, 3, dtype=ember.float64)
        for fn, fill in ((ember.zeros_like, 0.0), (ember.ones_like, 1.0)):
            y = fn(x)
            assert y.shape == x.shape and y.dtype is ember.float64
            assert y.tolist() == [[fill] * 3] * 2
        f = ember.full_like(x, 4)
        assert f.dtype is ember.float64 and f.tolist() == [[4.0] * 3] * 2
        assert ember.empty_like(x).shape == (2, 3)
        assert ember.zeros_like(x, dtype=ember.int8).dtype is ember.int8
        r = ember.rand_like(x)
        assert r.shape == x.shape and r.dtype is ember.float64
        assert ember.randn_like(x).shape == (2, 3)
        ri = ember.randint_like(x, 5)
        assert ri.shape == (2, 3) and bool(((ri >= 0) & (ri < 5)).all())

    def test_like_factories_take_layout_and_memory_format_as_torch(self):
        torch = pytest.importorskip("torch")
        def results(lib):  # the strides PyTorch gives each format, and the values
            t = lib.ones(3, 4).t()
            x4 = lib.ones(2, 3, 4, 5)
            return [lib.zeros_like(t).stride(),
                    lib.ones_like(t, memory_format=lib.contiguous_format).stride(),
                    lib.full_like(x4, 7, memory_format=lib.channels_last).stride(),
                    lib.empty_like(x4, memory_format=lib.preserve_format).stride(),
                    lib.zeros_like(t, layout=lib.strided).tolist(),
                    lib.full_like(t, 2.5).tolist(),
                    lib.rand_like(t, requires_grad=True).requires_grad]
        assert results(ember) == results(torch)
        for name in ("zeros_like", "ones_like", "empty_like", "full_like"):
            args = (7,) if name == "full_like" else ()
            for kw, msg in (({"memory_format": 1}, "argument 'memory_format' must be "
                             r"\w+.memory_format, not int"),
                            ({"layout": "strided"}, r"argument 'layout' must be \w+.layout, "
                             "not str")):
                with pytest.raises(TypeError, match=f"{name}\\(\\): {msg}"):
                    getattr(ember, name)(ember.ones(2), *args, **kw)
            with pytest.raises(TypeError, match=name):
                getattr(torch, name)(torch.ones(2), *args, memory_format=1)
        for lib in (ember, torch):
            with pytest.raises(RuntimeError, match="required rank 4 tensor to use "
                                                   "channels_last format"):
                lib.zeros_like(lib.ones(2, 3), memory_format=lib.channels_last)

    def test_like_does_not_share_or_require_grad(self):
        x = ember.ones(3, requires_grad=True)
        y = ember.zeros_like(x)
        assert not y.requires_grad and y.is_leaf

    def test_rand_randn_ranges(self):
        ember.manual_seed(0)
        r = ember.rand(2000)
        assert r.dtype is ember.float32 and r.shape == (2000,)
        assert bool((r >= 0).all()) and bool((r < 1).all())
        assert 0.4 < r.mean().item() < 0.6
        n = ember.randn(4000, dtype=ember.float64)
        assert n.dtype is ember.float64
        assert abs(n.mean().item()) < 0.1 and 0.9 < n.std().item() < 1.1

    def test_randint(self):
        ember.manual_seed(1)
        r = ember.randint(3, 10, (1000,))
        assert r.dtype is ember.int64
        assert r.min().item() >= 3 and r.max().item() <= 9
        assert set(r.tolist()) == set(range(3, 10))
        r2 = ember.randint(4, (2, 2))
        assert r2.shape == (2, 2) and r2.max().item() < 4

    def test_randperm(self):
        ember.manual_seed(2)
        p = ember.randperm(50)
        assert p.dtype is ember.int64 and sorted(p.tolist()) == list(range(50))
        assert p.tolist() != list(range(50))

    def test_manual_seed_reproducible(self):
        results = []
        for _ in range(2):
            ember.manual_seed(1234)
            results.append((ember.rand(5).tolist(), ember.randn(3).tolist(),
                            ember.randint(0, 100, (4,)).tolist(), ember.randperm(6).tolist()))
        assert results[0] == results[1]
        ember.manual_seed(1235)
        assert ember.rand(5).tolist() != results[0][0]

    def test_initial_seed(self):
        ember.manual_seed(77)
        assert ember.initial_seed() == 77

    def test_requires_grad_kwarg(self):
        assert ember.zeros(2, requires_grad=True).requires_grad
        assert ember.randn(2, requires_grad=True).is_leaf


# -- defaults -----------------------------------------------------------------------------


class TestDefaults:
    def test_default_dtype(self, restore_defaults):
        assert ember.get_default_dtype() is ember.float32
        ember.set_default_dtype(ember.float64)
        assert ember.get_default_dtype() is ember.float64
        assert ember.tensor([1.5]).dtype is ember.float64
        assert ember.zeros(2).dtype is ember.float64
        assert ember.rand(2).dtype is ember.float64
        assert ember.arange(0.0, 1.0, 0.5).dtype is ember.float64
        assert ember.tensor([1]).dtype is ember.int64  # ints are not affected
        assert (ember.tensor([1, 2]) / 2).dtype is ember.float64
        ember.set_default_dtype(ember.float32)
        assert ember.tensor([1.5]).dtype is ember.float32

    def test_default_dtype_must_be_floating(self, restore_defaults):
        with pytest.raises(TypeError):
            ember.set_default_dtype(ember.int32)
        assert ember.get_default_dtype() is ember.float32

    def test_default_device(self, restore_defaults):
        assert ember.get_default_device() == ember.device("cpu")
        ember.set_default_device("countdev")
        assert ember.get_default_device().type == "countdev"
        for t in (ember.zeros(2), ember.tensor([1.0]), ember.arange(3), ember.randn(2),
                  ember.full((2,), 3.0), ember.eye(2)):
            assert t.device.type == "countdev", t
        assert ember.zeros(2, device="cpu").device == ember.device("cpu")
        ember.set_default_device("cpu")
        assert ember.get_default_device() == ember.device("cpu")
        assert ember.zeros(2).device.type == "cpu"

    def test_default_device_none_resets(self, restore_defaults):
        ember.set_default_device("countdev")
        ember.set_default_device(None)
        assert ember.get_default_device() == ember.device("cpu")


# -- attributes and conversions -----------------------------------------------------------


class TestAttributes:
    def test_basic_attributes(self):
        x = ember.zeros(2, 3, 4)
        assert x.shape == (2, 3, 4) and isinstance(x.shape, ember.Size)
        assert x.dtype is ember.float32
        assert x.device == ember.device("cpu") and x.device.type == "cpu"
        assert x.ndim == 3 and x.dim() == 3
        assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
        assert x.numel() == 24 and x.element_size() == 4
        assert not x.requires_grad and x.grad is None and x.is_leaf
        assert len(x) == 2

    def test_size_bad_dim(self):
        with pytest.raises(IndexError, match="Dimension out of range"):
            ember.zeros(2, 3).size(2)

    def test_size_repr(self, torch):
        assert repr(ember.Size([2, 3])) == "ember.Size([2, 3])"
        assert repr(ember.zeros(2, 3).shape) == "ember.Size([2, 3])"
        assert repr(ember.zeros(()).shape) == "ember.Size([])"
        assert repr(ember.zeros(2, 3).shape) == repr(torch.zeros(2, 3).shape).replace(
            "torch.", "ember.")
        s = ember.zeros(2, 3, 4).shape
        assert isinstance(s[1:], ember.Size) and s[1:] == (3, 4) and s[0] == 2
        assert s.numel() == 24
        assert s == (2, 3, 4) and s == ember.Size([2, 3, 4])

    @pytest.mark.parametrize("expr", [
        "S([2, 3]) + (4,)", "(4,) + S([2, 3])", "S([2, 3]) + S([1])", "S([2, 3]) * 2",
        "2 * S([2, 3])", "S([2, 3])[::-1]", "S([T(3), True])", "S(())", "S([-1])",
        "S([2.0])", "S('ab')", "S(3)", "S([2]) + [4]", "S([2]) + None", "S([2]) * 1.5",
    ])
    def test_size_operations_as_torch(self, torch, expr):
        """A Size stays a Size under +, * and slicing; it takes any ints (0-d integer
        tensors, bools) and refuses the rest with torch's errors."""
        def run(mod):
            try:
                out = eval(expr, {"S": mod.Size, "T": mod.tensor})
            except TypeError as e:
                return "TypeError", str(e).replace(mod.__name__ + ".", "")
            return type(out).__name__, repr(out).replace(mod.__name__ + ".", "")
        assert run(ember) == run(torch)

    def test_size_pickles_as_a_size(self):
        s = ember.zeros(2, 3).shape
        for back in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
            assert type(back) is ember.Size and back == (2, 3)

    def test_item(self):
        assert ember.tensor(2.5).item() == 2.5 and isinstance(ember.tensor(2.5).item(), float)
        assert ember.tensor([[7]]).item() == 7 and isinstance(ember.tensor([7]).item(), int)
        assert ember.tensor(True).item() is True
        with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted"):
            ember.tensor([1, 2]).item()

    def test_python_conversions(self):
        assert float(ember.tensor(1.5)) == 1.5
        assert int(ember.tensor(3)) == 3
        assert bool(ember.tensor([1.0])) is True
        with pytest.raises(RuntimeError, match="ambiguous"):
            bool(ember.tensor([1.0, 2.0]))
        assert [10, 20, 30][ember.tensor(1)] == 20  # __index__
        with pytest.raises(TypeError):
            len(ember.tensor(1.0))

    def test_tolist_and_numpy(self):
        x = ember.tensor([[1.5, 2.0], [3.0, 4.0]], dtype=ember.float64)
        assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]
        assert ember.tensor(3).tolist() == 3
        a = x.numpy()
        assert isinstance(a, np.ndarray) and a.dtype == np.float64
        np.testing.assert_array_equal(np.asarray(x), a)

    def test_numpy_refuses_requires_grad(self):
        x = ember.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires"
                                               r" grad"):
            x.numpy()
        assert x.detach().numpy().tolist() == [1.0, 1.0]

    def test_numpy_refuses_other_device(self):
        x = ember.ones(2, device="countdev")
        with pytest.raises(TypeError, match="countdev"):
            x.numpy()
        assert x.cpu().numpy().tolist() == [1.0, 1.0]

    def test_clone_is_a_copy(self):
        x = ember.tensor([1.0, 2.0])
        y = x.clone()
        y[0] = 5.0
        assert x.tolist() == [1.0, 2.0] and y.tolist() == [5.0, 2.0]

    def test_clone_is_differentiable(self):
        x = ember.tensor([1.0, 2.0], requires_grad=True)
        y = x.clone()
        assert y.requires_grad and not y.is_leaf
        (y * 3).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]

    def test_detach_shares_storage(self):
        x = ember.tensor([1.0, 2.0], requires_grad=True)
        d = x.detach()
        assert not d.requires_grad and d.is_leaf and d.grad_fn is None
        d[0] = 10.0
        assert x[0].item() == 10.0

    def test_contiguous(self):
        x = ember.arange(6.0).reshape(2, 3)
        assert x.is_contiguous()
        t = x.t()
        assert not t.is_contiguous()
        c = t.contiguous()
        assert c.is_contiguous() and c.tolist() == t.tolist()
        assert x.contiguous() is x  # already contiguous: the same tensor, as in torch

    def test_deepcopy_and_pickle(self):
        x = ember.tensor([1.0, 2.0], requires_grad=True)
        y = copy.deepcopy(x)
        assert y is not x and y.tolist() == [1.0, 2.0] and y.requires_grad
        z = pickle.loads(pickle.dumps(x))
        assert z.tolist() == [1.0, 2.0] and z.requires_grad and z.dtype is ember.float32


class TestTo:
    @pytest.mark.parametrize("method, dtype", [
        ("float", ember.float32), ("double", ember.float64), ("half", ember.float16),
        ("bfloat16", ember.bfloat16), ("long", ember.int64), ("int", ember.int32),
        ("short", ember.int16), ("bool", ember.bool),
    ])
    def test_dtype_methods(self, method, dtype):
        x = ember.tensor([0.0, 1.5, -2.7])
        y = getattr(x, method)()
        assert y.dtype is dtype and y.shape == (3,)

    def test_dtype_conversion_values(self, torch):
        vals = [0.0, 1.5, -2.7, 3.999, 300.25]
        for name in ("float", "double", "half", "bfloat16", "long", "int", "bool"):
            e = getattr(ember.tensor(vals), name)()
            t = getattr(torch.tensor(vals), name)()
            np.testing.assert_array_equal(np.asarray(e.float().tolist()),
                                          np.asarray(t.float().tolist()), err_msg=name)

    def test_to_dtype(self):
        x = ember.tensor([1.0, 2.0])
        assert x.to(ember.float64).dtype is ember.float64
        assert x.to(dtype=ember.int32).dtype is ember.int32
        assert x.to(ember.float32) is x  # nothing to do: the same tensor, as in torch
        assert x.float() is x

    def test_to_other(self):
        x = ember.tensor([1.0, 2.0])
        other = ember.zeros(1, dtype=ember.int16, device="countdev")
        y = x.to(other)
        assert y.dtype is ember.int16 and y.device.type == "countdev"

    def test_to_device_and_back(self):
        x = ember.tensor([1.0, 2.0, 3.0])
        y = x.to("countdev")
        assert y.device == ember.device("countdev:0") and y.dtype is ember.float32
        assert str(y.device) == "countdev:0"
        assert y.tolist() == [1.0, 2.0, 3.0]
        # device memory is its own: a write on one side is not seen on the other
        y[0] = 9.0
        assert x[0].item() == 1.0
        back = y.cpu()
        assert back.device == ember.device("cpu") and back.tolist() == [9.0, 2.0, 3.0]
        assert x.cpu() is x and x.to("cpu") is x

    def test_to_device_and_dtype(self):
        y = ember.tensor([1, 2]).to("countdev", ember.float64)
        assert y.device.type == "countdev" and y.dtype is ember.float64
        z = ember.tensor([1, 2]).to(device="countdev", dtype=ember.float16)
        assert z.device.type == "countdev" and z.dtype is ember.float16

    def test_to_is_differentiable(self):
        x = ember.tensor([1.0, 2.0], requires_grad=True)
        y = x.to("countdev").double()
        assert y.requires_grad and y.device.type == "countdev"
        (y * y).sum().backward()
        assert x.grad.device.type == "cpu" and x.grad.dtype is ember.float32
        assert x.grad.tolist() == [2.0, 4.0]


class TestDevice:
    def test_device_parse(self, torch):
        d = ember.device("cuda:1")
        assert repr(d) == "device(type='cuda', index=1)" == repr(torch.device("cuda:1"))
        assert str(d) == "cuda:1" and d.type == "cuda" and d.index == 1
        c = ember.device("cpu")
        assert repr(c) == repr(torch.device("cpu")) and str(c) == "cpu" and c.index is None
        assert ember.device("cuda", 2) == ember.device("cuda:2")
        # its repr is a call that rebuilds it (fx's generated code holds `device(type='cpu')`)
        for text in ("cpu", "cuda:1"):
            assert eval(repr(ember.device(text)), {"device": ember.device}) == ember.device(text)
        assert ember.device(type="cuda", index=1) == ember.device("cuda:1")
        with pytest.raises(TypeError) as want:
            torch.device("cpu", type="cpu")
        with pytest.raises(TypeError) as got:
            ember.device("cpu", type="cpu")
        assert type(got.value) is type(want.value)

    def test_device_eq_hash(self):
        assert ember.device("cuda:1") == ember.device("cuda:1")
        assert ember.device("cuda:1") != ember.device("cuda:0")
        assert ember.device("cuda") != ember.device("cuda:0")  # as in torch
        assert ember.device("cuda:1") == "cuda:1"
        assert len({ember.device("cpu"), ember.device("cpu")}) == 1
        assert ember.device(ember.device("cuda:3")) == ember.device("cuda:3")

    @pytest.mark.parametrize("bad", ["cuda:x", "cuda:-1", "", ":1"])
    def test_bad_device_string(self, bad):
        with pytest.raises((RuntimeError, ValueError)):
            ember.device(bad)

    def test_devices_lists_cpu(self):
        found = ember.devices()
        assert all(isinstance(d, ember.device) for d in found)
        assert ember.device("cpu") in found


def test_zero_size_tensor():
    x = ember.zeros(0, 3)
    assert x.numel() == 0 and x.shape == (0, 3)
    assert x.sum().item() == 0.0
    assert x.tolist() == []
    assert math.isnan(ember.zeros(0).mean().item())


def test_new_ones_and_new_zeros_match_torch():
    """new_ones/new_zeros on the tensor's own device take a short path (no device
    resolution): dtypes, sizes, requires_grad and errors as PyTorch's."""
    torch = pytest.importorskip("torch")
    for dtype in ("float32", "float64", "int64", "bool", "uint8"):
        e = ember.zeros(2, dtype=getattr(ember, dtype))
        t = torch.zeros(2, dtype=getattr(torch, dtype))
        for name in ("new_ones", "new_zeros"):
            for size, kw in ((((),), {}), ((3,), {}), (((2, 3),), {}), ((2, 0), {}),
                             ((2,), {"dtype": "float64"})):
                tkw = {k: getattr(torch, v) for k, v in kw.items()}
                ekw = {k: getattr(ember, v) for k, v in kw.items()}
                eo, to = getattr(e, name)(*size, **ekw), getattr(t, name)(*size, **tkw)
                assert str(eo.dtype)[6:] == str(to.dtype)[6:] and eo.shape == to.shape
                np.testing.assert_array_equal(eo.numpy(), to.numpy())
    g = ember.zeros(2).new_ones(2, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    with pytest.raises(TypeError, match="missing 1 required positional arguments"):
        ember.zeros(2).new_ones()
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.zeros(2).new_zeros(-1)


def test_tensor_new_is_the_legacy_constructor_of_its_dtype():
    """Old programs' `weight.new(n, h).zero_()`, `x.new(data)`: PyTorch's `Tensor.new`."""
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        x = lib.ones(2, dtype=lib.float64)
        assert tuple(x.new().shape) == (0,) and x.new().dtype is lib.float64
        assert tuple(x.new(2, 3).shape) == (2, 3) and tuple(x.new(lib.Size([4])).shape) == (4,)
        assert x.new([1, 2]).tolist() == [1.0, 2.0] and x.new([1, 2]).dtype is lib.float64
        assert x.new(np.array([3, 4])).tolist() == [3.0, 4.0]
        assert lib.ones(1, dtype=lib.int64).new([1.5, 2.7]).tolist() == [1, 2]
        y = lib.tensor([5.0, 6.0], dtype=lib.float64)
        z = x.new(y)
        assert z is not y and z.data_ptr() == y.data_ptr()
        with pytest.raises(TypeError, match="data must be a sequence"):
            x.new(2.5)
        with pytest.raises(TypeError):
            x.new(lib.ones(2))  # float32 into a float64 constructor
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(1).new(-1)
    with pytest.raises(RuntimeError) as ours:
        ember.ones(1).new(-1)
    assert str(ours.value) == str(theirs.value)


def test_cuda_legacy_types_exist_and_check_dtype_and_device():
    """Old programs' `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`."""
    torch = pytest.importorskip("torch")
    for name in ("FloatTensor", "LongTensor", "ByteTensor", "BoolTensor"):
        ours, theirs = getattr(ember.cuda, name), getattr(torch.cuda, name)
        assert repr(ours).replace("ember", "torch") == repr(theirs)
        assert not isinstance(ember.ones(1), ours) and not isinstance(torch.ones(1), theirs)
    assert ember.cuda.FloatTensor.dtype is ember.float32
    assert ember.ones(2).type(ember.LongTensor).dtype is ember.int64
    if not ember.cuda.is_available():
        with pytest.raises(TypeError) as refused:  # (PyTorch's words; ember's reason noted)
            ember.cuda.FloatTensor(2)
        assert str(refused.value) == ("type ember.cuda.FloatTensor not available. Torch not "
                                      "compiled with CUDA enabled.")
        assert "cuda" in refused.value.__notes__[0]
        with pytest.raises(AssertionError, match="cuda"):
            ember.ones(1).type(ember.cuda.FloatTensor)
    else:
        t = ember.cuda.FloatTensor(2, 3).fill_(1.0)
        assert t.device.type == "cuda" and isinstance(t, ember.cuda.FloatTensor)
        assert ember.ones(1).type(ember.cuda.DoubleTensor).type() == "ember.cuda.DoubleTensor"
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cuda"):
        ember.cuda.FloatTensor(2, device="cpu")


@pytest.mark.parametrize("make", [lambda L: L.empty(-1), lambda L: L.ones(3, -2),
                                  lambda L: L.rand(-1), lambda L: L.FloatTensor(-1),
                                  lambda L: L.zeros(1).new_zeros(-1),
                                  lambda L: L.full((-1,), 2.0)])
def test_negative_size_errors_are_torchs(make):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        make(torch)
    with pytest.raises(RuntimeError) as ours:
        make(ember)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn", "new_zeros",
                                  "new_ones", "new_empty"])
def test_each_factory_takes_size_by_keyword(name):
    """pyGAT's `torch.empty(size=(in_features, out_features))`: `size=` names the sizes;
    given both ways it is PyTorch's TypeError."""
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        make = getattr(lib.zeros(1), name) if name.startswith("new_") else getattr(lib, name)
        assert tuple(make(size=(2, 3)).shape) == (2, 3)
        assert tuple(make(size=[4]).shape) == (4,)
        assert tuple(make(size=lib.Size([1, 2]), dtype=lib.float64).shape) == (1, 2)
        assert make(size=(2,), dtype=lib.float64).dtype is lib.float64
    # (rand's and randn's generator overloads make PyTorch's parser list them instead)
    with pytest.raises(TypeError) as t_err:
        (getattr(torch.zeros(1), name) if name.startswith("new_") else getattr(torch, name))(
            2, size=(3,))
    with pytest.raises(TypeError) as e_err:
        (getattr(ember.zeros(1), name) if name.startswith("new_") else getattr(ember, name))(
            2, size=(3,))
    assert str(e_err.value) == str(t_err.value)
    if name.startswith("new_"):
        with pytest.raises(TypeError) as t_err:
            getattr(torch.zeros(1), name)()
        with pytest.raises(TypeError) as e_err:
            getattr(ember.zeros(1), name)()
        assert str(e_err.value) == str(t_err.value)


SIZE_KEYWORD_CASES = ["zeros(size=(2, 3))", "ones(size=[2], dtype=L.int64)",
                      "empty(size=L.Size([0, 2])).shape", "rand(size=(2, 3)).shape",
                      "randn(size=(4,), generator=None).shape", "zeros(1).new_zeros(size=(2,))",
                      "zeros(1).new_ones(size=(1, 2))", "zeros(1).new_empty(size=(3,)).shape",
                      "arange(end=3)", "arange(start=1, end=7, step=2)", "arange(1, end=3.5)"]
SIZE_KEYWORD_ERRORS = ["zeros(2, size=(2,))", "ones(size=2)", "zeros(1).new_ones(2, size=(2,))",
                       "zeros(1).new_zeros()", "empty()", "arange()"]


@pytest.mark.parametrize("case", SIZE_KEYWORD_CASES)
def test_factories_take_size_by_keyword_as_torch(case):
    # `torch.zeros(size=(in_features, out_features))` (pyGAT, many reference repositories)
    torch = pytest.importorskip("torch")
    got = eval("L." + case, {"L": ember})
    want = eval("L." + case, {"L": torch})
    assert str(got).replace("ember.", "torch.") == str(want)


@pytest.mark.parametrize("case", SIZE_KEYWORD_ERRORS)
def test_factory_size_errors_match_torch(case):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as want:
        eval("L." + case, {"L": torch})
    with pytest.raises(TypeError) as got:
        eval("L." + case, {"L": ember})
    # (for arange() PyTorch lists its overloads: the message's start is compared)
    assert str(got.value).split(" - ")[0][:40] == str(want.value).split(" - ")[0][:40]


def test_float_of_a_graph_tensor_warns_once_as_torch(monkeypatch):
    # PyTorch 2.6+: float(t) of a tensor requiring grad warns (once a process) while grad
    # mode is on; item(), int(), a detached tensor and no_grad do not
    import warnings

    from ember.core import errors
    monkeypatch.setattr(errors, "_warned", set())  # (warned once a process)
    x = ember.ones(1, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x.item(), int(x), float(x.detach())
        with ember.no_grad():
            float(x)
        assert not caught
        assert float(x * 2) == 2.0
        float(x)
    assert len(caught) == 1 and caught[0].category is UserWarning
    assert str(caught[0].message) == ("Converting a tensor with requires_grad=True to a scalar "
                                      "may lead to unexpected behavior.\nConsider using "
                                      "tensor.detach() first.")
    assert caught[0].filename == __file__


def test_lbfgs_converts_its_losses_outside_grad_mode(monkeypatch):
    import warnings

    from ember.core import errors
    monkeypatch.setattr(errors, "_warned", set())  # (warned once a process)
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.LBFGS([w], max_iter=3, line_search_fn=None)

    def closure():
        opt.zero_grad()
        loss = ((w - 3) ** 2).sum()
        loss.backward()
        return loss
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.step(closure)
    assert not caught


def test_negative_sizes_raise_each_factorys_own_message():
    torch = pytest.importorskip("torch")
    for make in ("zeros(1, 0, -1)", "zeros(-1, dtype=L.uint8)", "ones(3, -2)", "empty(-1)"):
        with pytest.raises(RuntimeError) as theirs:
            eval(make, {"L": torch}, {"zeros": torch.zeros, "ones": torch.ones,
                                      "empty": torch.empty})
        with pytest.raises(RuntimeError) as ours:
            eval(make, {"L": ember}, {"zeros": ember.zeros, "ones": ember.ones,
                                      "empty": ember.empty})
        assert str(ours.value) == str(theirs.value)
