"""PyTorch programs that port unchanged (issue 16): topk, indexing with a `range`,
`format(tensor, spec)`, `out=` for the matrix products, `autograd.Variable`. PyTorch is
the oracle."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _pair(shape, seed=0):
    arr = np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape)
    arr = (arr / 4.0).astype(np.float32)
    return ember.tensor(arr), torch.tensor(arr)


# -- topk ---------------------------------------------------------------------------------


@pytest.mark.parametrize("k, dim, largest", [(2, -1, True), (3, 0, False), (0, 1, True),
                                             (4, 1, False), (1, -2, True)])
def test_topk_matches_torch(k, dim, largest):
    x, t = _pair((4, 5))
    got, want = ember.topk(x, k, dim, largest), torch.topk(t, k, dim, largest)
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    assert got.indices.dtype is ember.int64
    assert type(got).__name__ == "topk" and got.values is got[0] and got.indices is got[1]
    method = x.topk(k, dim=dim, largest=largest, sorted=True)
    np.testing.assert_array_equal(method.indices.numpy(), want.indices.numpy())


def test_topk_nan_is_largest_and_zero_dim():
    data = [1.0, float("nan"), 3.0]
    for largest in (True, False):
        got = ember.topk(ember.tensor(data), 2, largest=largest)
        want = torch.topk(torch.tensor(data), 2, largest=largest)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    got = ember.topk(ember.tensor(2.5), 1)
    assert got.values.shape == () and got.values.item() == 2.5 and got.indices.item() == 0


def test_topk_gradient_matches_torch():
    x, t = _pair((3, 6), seed=1)
    x.requires_grad_(True)
    t.requires_grad_(True)
    w = np.arange(9, dtype=np.float32).reshape(3, 3)
    (ember.topk(x, 3).values * ember.tensor(w)).sum().backward()
    (torch.topk(t, 3).values * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_topk_out():
    x, t = _pair((3, 4))
    v, i = ember.empty(0), ember.empty(0, dtype=ember.int64)
    r = ember.topk(x, 2, out=(v, i))
    want = torch.topk(t, 2)
    np.testing.assert_array_equal(v.numpy(), want.values.numpy())
    np.testing.assert_array_equal(i.numpy(), want.indices.numpy())
    assert r.values is v and r.indices is i
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 1"):
        ember.topk(x, 2, out=(v,))


def test_topk_errors_match_torch():
    x, t = _pair((3, 4))
    for call in (lambda m, a: m.topk(a, 5), lambda m, a: m.topk(a, -1)):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            call(torch, t)
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            call(ember, x)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.topk(x, 1, dim=2)
    with pytest.raises(TypeError, match="argument 'k' \\(position 2\\) must be int, not float"):
        ember.topk(x, 2.0)
    with pytest.raises(RuntimeError, match="topk does not support bool dtypes"):
        ember.topk(ember.tensor([True, False]), 1)


def test_topk_exports_to_onnx():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    x, _ = _pair((3, 5), seed=2)

    def fn(a):
        r = a.topk(2, 1)
        return r.values, r.indices, a.topk(1, 0, largest=False).values

    buf = io.BytesIO()
    ember.onnx.export(fn, (x,), buf)
    model = onnx.load_from_string(buf.getvalue())
    assert "TopK" in {n.op_type for n in model.graph.node}
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    for g, want in zip(got, fn(x)):
        np.testing.assert_array_equal(g, want.numpy())


# -- indexing with a range ----------------------------------------------------------------


@pytest.mark.parametrize("key", [range(2), range(0), (1, range(3, 0, -1)),
                                 (slice(None), range(1, 3)), (range(1, 3), range(2)),
                                 (range(-1, 1), Ellipsis)])
def test_range_index_reads_and_writes_as_torch(key):
    x, t = _pair((3, 4))
    np.testing.assert_array_equal(x[key].numpy(), t[key].numpy())
    x[key] = -1.0
    t[key] = -1.0
    np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_range_index_gradient():
    x = ember.ones(3, 4, requires_grad=True)
    x[range(0, 3, 2)].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[:, 0], [1.0, 0.0, 1.0])
    with pytest.raises(IndexError, match="is out of bounds for dimension 0 with size 3"):
        x[range(4, 6)]


# -- format(tensor, spec) -----------------------------------------------------------------


@pytest.mark.parametrize("value, dtype", [(1.23456, "float32"), (3, "int64"), (True, "bool"),
                                          (2.5, "float64"), ([1.5], "float32"),
                                          ([1.0, 2.0], "float32")])
@pytest.mark.parametrize("spec", [".4f", "", ">10", "d", "e"])
def test_format_matches_torch(value, dtype, spec):
    t = torch.tensor(value, dtype=getattr(torch, dtype))
    x = ember.tensor(value, dtype=getattr(ember, dtype))
    try:
        want = format(t, spec)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e), match=re.escape(str(e))):
            format(x, spec)
        return
    assert format(x, spec) == want


def test_format_of_a_loss_that_requires_grad():
    loss = (ember.tensor([0.5, 0.25], requires_grad=True) ** 2).sum()
    assert f"{loss:.4f}" == "0.3125" and f"loss={loss:8.3f}" == "loss=   0.312"


# -- out= for the matrix products ----------------------------------------------------------


@pytest.mark.parametrize("name, shapes", [("matmul", ((2, 3), (3, 4))), ("mm", ((2, 3), (3, 4))),
                                          ("bmm", ((2, 2, 3), (2, 3, 4))),
                                          ("matmul", ((2, 2, 3), (3,)))])
def test_matrix_products_write_out(name, shapes):
    (a, ta), (b, tb) = _pair(shapes[0], 3), _pair(shapes[1], 4)
    out = ember.empty(0)
    assert getattr(ember, name)(a, b, out=out) is out
    np.testing.assert_allclose(out.numpy(), getattr(torch, name)(ta, tb).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        getattr(ember, name)(a, b, out=ember.empty(0, dtype=ember.float64))


# -- autograd.Variable --------------------------------------------------------------------


def test_variable_returns_a_detached_tensor_as_torch():
    from torch.autograd import Variable as TorchVariable

    from ember.autograd import Variable
    for lib, V in ((ember, Variable), (torch, TorchVariable)):
        base = lib.ones(2, requires_grad=True) * 2
        v = V(base)
        assert type(v) is lib.Tensor and isinstance(base, V) and v is not base
        assert not v.requires_grad and v.grad_fn is None
        w = V(lib.ones(2), requires_grad=True)
        assert w.requires_grad and w.is_leaf
        v[0] = 5.0  # shares storage with its data
        assert base[0].item() == 5.0
        assert V().shape == (0,)
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            V([1.0, 2.0])
        with pytest.warns(UserWarning, match="volatile was removed"):
            V(lib.ones(2), volatile=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64"])
def test_topk_on_opencl_matches_the_cpu(dtype):
    pytest.importorskip("pyopencl")
    try:
        dev = ember.device("opencl")
        ember.zeros(1, device=dev)
    except Exception as e:  # no OpenCL platform here
        pytest.skip(f"no OpenCL device: {e}")
    arr = np.random.default_rng(5).integers(-4, 4, (4, 6, 5)).astype(dtype)
    if dtype.startswith("float"):
        arr[0, 1, 2] = arr[2, 3, 0] = np.nan
    x = ember.tensor(arr)
    y = x.to(dev)
    for dim in (0, 1, 2):
        for largest in (True, False):
            for a, b in ((x, y), (x[:, ::2], y[:, ::2])):
                want, got = a.topk(2, dim, largest), b.topk(2, dim, largest)
                # (equal keys: the CPU's in PyTorch's CPU order, OpenCL's in the stable one)
                stable = a.sort(dim=dim, descending=largest, stable=True).indices.narrow(dim, 0, 2)
                np.testing.assert_array_equal(got.indices.cpu().numpy(), stable.numpy())
                np.testing.assert_array_equal(got.values.cpu().numpy(), want.values.numpy())
