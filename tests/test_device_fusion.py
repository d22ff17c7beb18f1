"""The OpenCL and CUDA backends' fused elementwise kernels (`Backend.fuse_elementwise`:
ember/backends/opencl/fusion.py, ember/backends/cuda/fusion.py), which ember.compile asks
for chains of elementwise ops: values against the backend's own op-by-op kernels (bit for
bit on OpenCL, where contraction is off in both; to an ulp or two on CUDA, whose compiler
fuses multiply-adds), broadcasting, NaN and infinities, writing into a given buffer, and a
compiled step that uses them. The CPU's are tested in test_cpu_fusion.py; CUDA's run where
a GPU is (the device machine), and skip elsewhere."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.core.backend import ElementwiseChain, float32, float64
from ember.core.tensor import Tensor


class _Fusion:
    """One device's side of the tests: its fuse_elementwise, and how exact it is."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.backend = ember.zeros(1, device=device)._backend
        self.FUSIBLE = self.backend.fusible_ops

    def fuse(self, chain: ElementwiseChain):
        return self.backend.fuse_elementwise(chain)

    def check(self, got: np.ndarray, expected: np.ndarray, what: str = "") -> None:
        if self.device == "opencl":
            np.testing.assert_array_equal(got, expected, err_msg=what)
        else:
            # a fused multiply-add rounds once where the unfused ops round twice: where
            # the sum cancels (x * 0.1 + 0.1 near 0), the difference is an ulp of the
            # terms, not of the result
            eps = np.finfo(got.dtype).eps
            finite = np.abs(expected[np.isfinite(expected)])
            scale = float(finite.max()) if finite.size else 1.0
            np.testing.assert_allclose(got, expected, rtol=4 * eps, atol=4 * eps * scale,
                                       err_msg=what)

    def has_float64(self) -> bool:
        if self.device != "opencl":
            return True
        from ember.backends.opencl import runtime

        return runtime.device(0).fp64


@pytest.fixture(scope="module", params=["opencl", "cuda"])
def fusion(request):
    device = request.param
    pytest.importorskip("pyopencl" if device == "opencl" else "cupy")
    try:
        ember.zeros(1, device=device)
    except (RuntimeError, AssertionError) as err:  # AssertionError: CUDA unusable
        pytest.skip(f"no {device} device: {err}")
    return _Fusion(device)


def _chain(ops, inputs, shape, dtype=float32) -> ElementwiseChain:
    return ElementwiseChain(tuple((op, tuple(args), dtype) for op, args in ops),
                            tuple((s, dtype) for s in inputs), shape, dtype)


def _run(kernel, *tensors: Tensor, out: Tensor | None = None) -> np.ndarray:
    like = tensors[0]
    result = kernel(*[t._data for t in tensors], out=None if out is None else out._data)
    return Tensor._make(result, like._dtype, like._device, like._backend).cpu().numpy()


def test_the_chain_runs_in_one_launch_and_equals_the_ops_one_by_one(fusion) -> None:
    """A linear layer's bias, ReLU and a scaling: x + b (b over rows), relu, * 0.5."""
    chain = _chain([("add", [("input", 0), ("input", 1)]), ("relu", [("op", 0)]),
                    ("mul", [("op", 1), ("scalar", 0.5)])], [(64, 48), (48,)], (64, 48))
    x, b = ember.randn(64, 48, device=fusion.device), ember.randn(48, device=fusion.device)
    got = _run(fusion.fuse(chain), x, b)
    fusion.check(got, (ember.relu(x + b) * 0.5).cpu().numpy())
    if fusion.device == "opencl":
        from ember.backends.opencl.fusion import source

        program = source(chain, *chain.loop_dims())
        assert program.count("__kernel") == 1 and "(g % 48)" in program


@pytest.mark.parametrize("dtype", [float32, float64])
def test_every_formula_equals_the_backends_own_kernel(fusion, dtype) -> None:
    """Each op after an `add` (so that every chain has two ops), NaN, +-inf and zeros in
    the inputs: the fused result equals the unfused ops' bit for bit (NaN where NaN)."""
    if dtype is float64 and not fusion.has_float64():
        pytest.skip("the OpenCL device has no float64")
    edtype = ember.float32 if dtype is float32 else ember.float64
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 88.0, -88.0]
    a_np = np.concatenate([special, np.random.default_rng(0).standard_normal(246)])
    b_np = np.concatenate([special[::-1], np.random.default_rng(1).standard_normal(246)])
    a = ember.tensor(a_np, dtype=edtype, device=fusion.device)
    b = ember.tensor(b_np, dtype=edtype, device=fusion.device)
    c = ember.tensor(np.abs(b_np) + 0.25, dtype=edtype, device=fusion.device)  # positive
    unary = {"neg": ember.neg, "abs": ember.abs, "sqrt": ember.sqrt,
             "reciprocal": ember.reciprocal, "rsqrt": ember.rsqrt, "exp": ember.exp,
             "log": ember.log, "tanh": ember.tanh, "sigmoid": ember.sigmoid,
             "relu": ember.relu}
    binary = {"add": ember.add, "sub": ember.sub, "mul": ember.mul, "div": ember.div,
              "maximum": ember.maximum, "minimum": ember.minimum}
    backward = ("relu_backward", "tanh_backward", "sigmoid_backward", "exp_backward",
                "log_backward")
    assert set(unary) | set(binary) | set(backward) == fusion.FUSIBLE
    kernels = a._backend.kernels
    with ember.no_grad():
        first = a + c
        for op, fn in unary.items():
            chain = _chain([("add", [("input", 0), ("input", 1)]), (op, [("op", 0)])],
                           [(256,), (256,)], (256,), dtype)
            fusion.check(_run(fusion.fuse(chain), a, c), fn(first).cpu().numpy(), op)
        for op, fn in binary.items():
            chain = _chain([("add", [("input", 0), ("input", 1)]),
                            (op, [("op", 0), ("input", 2)])], [(256,)] * 3, (256,), dtype)
            fusion.check(_run(fusion.fuse(chain), a, c, b), fn(first, b).cpu().numpy(), op)
        for op in backward:
            chain = _chain([("add", [("input", 0), ("input", 1)]),
                            (op, [("op", 0), ("input", 2)])], [(256,)] * 3, (256,), dtype)
            expected = Tensor._make(kernels[op](first._data, b._data), a._dtype, a._device,
                                    a._backend)
            fusion.check(_run(fusion.fuse(chain), a, c, b), expected.cpu().numpy(), op)


def test_scalars_are_exact_constants_infinities_and_nan_included(fusion) -> None:
    x = ember.randn(40, 30, device=fusion.device)
    for value in (0.1, -3.0e38, 1e-45, math.inf, -math.inf, math.nan, 7):
        # (an add, then a multiply: no multiply-add for CUDA's compiler to contract, which
        # would also keep x * -3e38 from overflowing before the add)
        chain = _chain([("add", [("input", 0), ("scalar", value)]),
                        ("mul", [("op", 0), ("scalar", value)])], [(40, 30)], (40, 30))
        with ember.no_grad():
            expected = ((x + value) * value).cpu().numpy()
        fusion.check(_run(fusion.fuse(chain), x), expected, str(value))


def test_broadcast_inputs_read_at_their_own_index(fusion) -> None:
    """A conv bias (C, 1, 1) over (N, C, H, W), a row (W,), a 0-d tensor and a column."""
    shape = (4, 6, 5, 7)
    x = ember.randn(*shape, device=fusion.device)
    bias = ember.randn(6, 1, 1, device=fusion.device)
    row = ember.randn(7, device=fusion.device)
    scalar = ember.randn((), device=fusion.device)
    column = ember.randn(4, 1, 1, 1, device=fusion.device)
    chain = _chain([("add", [("input", 0), ("input", 1)]), ("mul", [("op", 0), ("input", 2)]),
                    ("sub", [("op", 1), ("input", 3)]), ("maximum", [("op", 2), ("input", 4)])],
                   [shape, (6, 1, 1), (7,), (), (4, 1, 1, 1)], shape)
    got = _run(fusion.fuse(chain), x, bias, row, scalar, column)
    with ember.no_grad():
        expected = ember.maximum((x + bias) * row - scalar, column).cpu().numpy()
    fusion.check(got, expected)


def test_a_non_contiguous_input_and_an_offset_view(fusion) -> None:
    base = ember.randn(10, 32, device=fusion.device)
    transposed = ember.randn(32, 8, device=fusion.device).t()  # (8, 32), strided
    view = base[2:]  # an offset into its memory
    chain = _chain([("mul", [("input", 0), ("input", 1)]), ("tanh", [("op", 0)])],
                   [(8, 32), (8, 32)], (8, 32))
    got = _run(fusion.fuse(chain), transposed, view)
    with ember.no_grad():
        fusion.check(got, (transposed * view).tanh().cpu().numpy())


def test_out_is_written_in_place_or_through_a_copy_when_it_overlaps_an_input(fusion) -> None:
    chain = _chain([("mul", [("input", 0), ("scalar", 2.0)]), ("add", [("op", 0), ("input", 1)])],
                   [(16, 16), (16, 16)], (16, 16))
    kernel = fusion.fuse(chain)
    x, y = ember.randn(16, 16, device=fusion.device), ember.randn(16, 16, device=fusion.device)
    expected = (x * 2.0 + y).cpu().numpy()
    # out is the first input itself: read at the index it is written, before the write
    target = x.clone()
    result = kernel(target._data, y._data, out=target._data)
    assert result is target._data
    fusion.check(target.cpu().numpy(), expected)
    # out overlaps an input shifted by one row: the result goes through a fresh buffer
    big = ember.randn(17, 16, device=fusion.device)
    first, second = big[:16], big[1:]
    expected = (first * 2.0 + y).cpu().numpy()
    kernel(first._data, y._data, out=second._data)
    fusion.check(big[1:].cpu().numpy(), expected)


def test_what_it_declines(fusion) -> None:
    one_op = _chain([("relu", [("input", 0)])], [(64,)], (64,))
    assert fusion.fuse(one_op) is None  # the backend's own kernel is faster
    unknown = _chain([("add", [("input", 0), ("input", 0)]), ("erf", [("op", 0)])], [(64,)],
                     (64,))
    assert fusion.fuse(unknown) is None
    half = ElementwiseChain((("add", (("input", 0), ("input", 0)), ember.float16),
                             ("relu", (("op", 0),), ember.float16)),
                            (((64,), ember.float16),), (64,), ember.float16)
    assert fusion.fuse(half) is None


def test_a_compiled_step_fuses_its_chains_and_equals_eager(fusion) -> None:
    """Chains forward and backward (a bias over rows, tanh, sigmoid) and a hand-written
    SGD update (`p.sub_(lr * g)`, written into the parameter): values, parameters and
    the profiler's kernel names."""
    def params():
        ember.manual_seed(3)
        return [ember.randn(32, 48, device=fusion.device).requires_grad_(),
                ember.randn(48, device=fusion.device).requires_grad_()]

    def make_step(ps):
        w, b = ps

        def step(x):
            h = x @ w + b
            a = (h * 0.5).tanh() * 2.0 - h.sigmoid()
            loss = (a * a).mean()
            loss.backward()
            with ember.no_grad():
                for p in (w, b):
                    p.sub_(p.grad * 0.1)
                    p.grad = None
            return loss, a
        return step

    mine, theirs = params(), params()
    compiled, eager = ember.compile(make_step(mine)), make_step(theirs)
    for _ in range(5):
        x = ember.randn(64, 32, device=fusion.device)
        (loss, a), (eloss, ea) = compiled(x), eager(x)
        assert ember.allclose(loss.cpu(), eloss.cpu(), rtol=1e-5, atol=1e-6)
        assert ember.allclose(a.cpu(), ea.cpu(), rtol=1e-5, atol=1e-5)
        for p, q in zip(mine, theirs):
            assert ember.allclose(p.cpu(), q.cpu(), rtol=1e-5, atol=1e-5)
    explain = compiled.explain()
    chains = int(explain.split(" fused chains")[0].rsplit(" ", 1)[-1])
    assert chains >= 3, explain
    with ember.profiler.profile() as prof:
        compiled(ember.randn(64, 32, device=fusion.device))
    names = {e.key for e in prof.key_averages()}
    assert any(n.startswith("compiled::fused[") and "tanh" in n for n in names), names
