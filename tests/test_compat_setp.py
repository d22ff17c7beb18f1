"""PyTorch behaviours the set-P programs (Glow, GraphSAGE, an audio classifier, an EBM, a
mixture density network, TransE, RAFT-lite, C3D) needed, checked against torch itself."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(fn, mod) -> tuple[str, object]:
    """What `fn(mod)` gives: its value (lists for tensors), or its error's type and text."""
    try:
        out = fn(mod)
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err).replace("ember.", "torch.")
    if isinstance(out, (torch.Tensor, ember.Tensor)):
        return "ok", np.asarray(out.tolist()).ravel().tolist()
    return "ok", out


def _view_flags(mod, mode: str) -> list[bool]:
    p = mod.nn.Parameter(mod.ones(2, 3))
    with getattr(mod, mode)():
        views = [p[0], p.view(-1), p.t(), p.flatten()[:2], p.unbind(0)[1], p.expand(2, 2, 3),
                 p.detach()[0], p.data[0], p.clone(), p.reshape(6), p.T.contiguous(),
                 p[1].detach()[0], p[0][1:]]
    flags = [v.requires_grad for v in views] + [views[0].is_leaf, views[0].grad_fn is None]
    p.requires_grad_(False)
    return flags + [views[0].requires_grad]


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_view_made_with_grad_off_requires_grad_while_its_base_does(mode: str) -> None:
    """A view of a parameter taken under no_grad (printing `w[0, :5]`) still says
    requires_grad=True, as PyTorch's differentiable views do; detach/.data/copies do not."""
    assert _view_flags(ember, mode) == _view_flags(torch, mode)
    with ember.no_grad():
        row = ember.nn.Parameter(ember.ones(2, 2))[0]
    assert repr(row) == "tensor([1., 1.], requires_grad=True)"


def _inplace_through_view(mod, mode: str, op: str) -> object:
    x = mod.ones(3, requires_grad=True)
    y = x * 1
    with getattr(mod, mode)():
        v, w = x[:2], y[:2]
    ops = {"mul_": lambda t: t.mul_(2), "setitem": lambda t: t.__setitem__(0, 5.0),
           "zero_": lambda t: t.zero_(), "exp_": lambda t: t.exp_(),
           "add_alpha": lambda t: t.add_(1, alpha=2)}
    return [_outcome(lambda _, t=t: ops[op](t), mod) for t in (v, w)]


@pytest.mark.parametrize("op", ["mul_", "setitem", "zero_", "exp_", "add_alpha"])
@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_inplace_through_view_made_with_grad_off_is_refused(mode: str, op: str) -> None:
    got, want = _inplace_through_view(ember, mode, op), _inplace_through_view(torch, mode, op)
    assert [o[0] for o in got] == [o[0] for o in want]
    if op != "setitem":  # (PyTorch's setitem writes through a view of the view: its message
        # starts "Output 0 of Select is a view of a view which was created in ...")
        assert [o[1] for o in got if o[0] != "ok"] == [o[1] for o in want if o[0] != "ok"]


def test_inplace_through_no_grad_view_inside_no_grad_is_allowed() -> None:
    for mod in (ember, torch):
        x = mod.ones(3, requires_grad=True)
        with mod.no_grad():
            x[:2].mul_(2)
        d = x.detach()[:2]
        d.mul_(2)  # a view of a detached tensor is no differentiable view
        assert x.tolist() == [4.0, 4.0, 1.0]


@pytest.mark.parametrize("args, kwargs", [
    ((5, (3,)), {}), ((), {"high": 2, "size": (3,)}), ((0,), {"high": 2, "size": (3,)}),
    ((), {"low": 1, "high": 3, "size": (2,)}), ((2, 5, (2,)), {}),
    ((), {"size": (2,), "high": 4}), ((5,), {"size": (2,)}), ((5, [2]), {}),
    ((5,), {}), ((5, 3), {}), ((2, 5, 3), {}), ((), {}), ((2.5, (2,)), {}),
    ((0, 2.5, (2,)), {})])
def test_randint_overloads(args: tuple, kwargs: dict) -> None:
    """`randint(high, size)` and `randint(low, high, size)`, by position or by keyword
    (`torch.randint(high=2, size=(n,))` in TransE's negative sampler), with PyTorch's
    errors for the calls neither overload takes."""
    def draw(mod):
        mod.manual_seed(0)
        return mod.randint(*args, **kwargs)
    got, want = _outcome(draw, ember), _outcome(draw, torch)
    assert got[0] == want[0]
    if got[0] != "ok":
        assert got == want


@pytest.mark.parametrize("kwargs", [
    {"p": "nuc"}, {"p": "nuc", "keepdim": True}, {"p": "nuc", "dim": 1},
    {"p": "nuc", "dim": (1, 0)}, {"p": "abc"}])
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
def test_norm_nuc(kwargs: dict, shape: tuple) -> None:
    """`torch.norm(A, p="nuc")`: the nuclear norm over `dim` (all dimensions when None, so
    only a matrix takes it), with linalg.matrix_norm's errors."""
    def nuc(mod):
        a = mod.tensor([[2.0, 1, 0], [0, 3, 1], [1, 0, 4]]).expand(*shape)
        return mod.norm(a, **kwargs)
    got, want = _outcome(nuc, ember), _outcome(nuc, torch)
    assert got[0] == want[0]
    assert got[1] == (pytest.approx(want[1], rel=1e-5) if got[0] == "ok" else want[1])


def test_norm_nuc_gradient() -> None:
    grads = []
    for mod in (ember, torch):
        a = mod.tensor([[2.0, 1, 0], [0, 3, 1], [1, 0, 4]], requires_grad=True)
        mod.norm(a, p="nuc").backward()
        grads.append(a.grad.tolist())
    assert np.allclose(*grads, atol=1e-5)


def _renorm(mod, case: int) -> object:
    w = mod.ones(3, 2) * 3
    cases = [
        lambda: mod.embedding_renorm_(w, mod.tensor([[0, 0]]), 1.0, 1.0) is w and w,
        lambda: mod.embedding_renorm_(w, mod.tensor([-1], dtype=mod.int32), 2.0, 2.0),
        lambda: mod.embedding_renorm_(mod.ones(3, 2, requires_grad=True), mod.tensor([0]),
                                      1.0, 2.0),
        lambda: mod.embedding_renorm_(w, mod.tensor([0.0]), 1.0, 2.0),
        lambda: mod.embedding_renorm_(w, mod.tensor([5]), 1.0, 2.0)]
    return _outcome(lambda _: cases[case](), mod)


@pytest.mark.parametrize("case", range(5))
def test_embedding_renorm_(case: int) -> None:
    """`torch.embedding_renorm_(weight, indices, max_norm, norm_type)`, in place, with
    PyTorch's errors for a leaf that requires grad, float indices, an index out of range."""
    got, want = _renorm(ember, case), _renorm(torch, case)
    assert got[0] == want[0]
    assert got[1] == (pytest.approx(want[1], rel=1e-6) if got[0] == "ok" else want[1])


@pytest.mark.parametrize("shape, pad", [
    ((1, 1, 3), (3, 0)), ((1, 1, 3, 3), (3, 0, 0, 0)), ((1, 1, 3, 3), (0, 0, 0, 3)),
    ((1, 1, 2, 3, 3), (0, 0, 0, 0, 2, 0)), ((1, 3), (3, 0))])
def test_reflect_pad_too_big_names_the_argument(shape: tuple, pad: tuple) -> None:
    def padded(mod):
        return mod.nn.functional.pad(mod.ones(shape), pad, mode="reflect")
    assert _outcome(padded, ember) == _outcome(padded, torch)


def test_instance_norm_without_affine_warns_of_other_channel_count() -> None:
    """num_features is unused without affine: a mismatch only warns (the audio front end
    normalises (B, mels, frames) with InstanceNorm1d(frames))."""
    caught = []
    for mod in (ember, torch):
        with pytest.warns(UserWarning) as record:
            out = mod.nn.InstanceNorm1d(3)(mod.ones(2, 4, 5))
        caught.append(([str(w.message) for w in record], tuple(out.shape)))
    assert caught[0] == caught[1]


@pytest.mark.parametrize("op", ["linspace", "logspace"])
@pytest.mark.parametrize("bounds", [((0,), ()), (None, (2,)), ((1, 1), None), ((), ())])
def test_space_bounds_must_be_0d(op: str, bounds: tuple) -> None:
    def spaced(mod):
        start, end = (0.0 if b is None else mod.zeros(b) + i for i, b in enumerate(bounds))
        return getattr(mod, op)(start, end, 3)
    assert _outcome(spaced, ember) == _outcome(spaced, torch)


@pytest.mark.parametrize("window", ["hann_window", "hamming_window", "blackman_window",
                                    "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "uint16", "float64"])
def test_window_of_integer_dtype_names_its_options(window: str, dtype: str) -> None:
    def make(mod):
        return getattr(mod, window)(4, dtype=getattr(mod, dtype))
    assert _outcome(make, ember) == _outcome(make, torch)


def test_sum_and_cumsum_of_opposite_infinities_do_not_warn() -> None:
    """inf + -inf is NaN without a word (NumPy's np.sum would warn from its own module).
    In a fresh interpreter that shows every warning: the CPU backend's filter is global
    state, which pytest's per-test `catch_warnings` would undo here."""
    code = ("import ember\n"
            "x = ember.tensor([float('inf'), -float('inf')])\n"
            "print([x.sum(), x.mean(), x.prod(), x.cumsum(0), x.nansum(),\n"
            "       ember.distributions.Categorical(probs=ember.tensor([0.5, -0.5]),\n"
            "                                       validate_args=False).probs])\n")
    run = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert run.stdout.strip() == str([
        torch.tensor([float("inf"), -float("inf")]).sum(), torch.tensor(float("nan")),
        torch.tensor(-float("inf")), torch.tensor([float("inf"), float("nan")]),
        torch.tensor(float("nan")), torch.tensor([float("inf"), -float("inf")])]).replace(
        "torch", "ember")


def test_grad_mode_reprs_name_torch_autograd_grad_mode() -> None:
    def reprs(mod):
        out = [repr(mod.set_grad_enabled(True)), type(mod.no_grad()).__module__,
               mod.autograd.grad_mode.no_grad is mod.no_grad]
        from_module = mod.autograd.grad_mode.set_grad_enabled(False)
        mod.set_grad_enabled(True)
        return [*out, type(from_module).__name__]
    assert [str(r).replace("ember.", "torch.") for r in reprs(ember)] == \
        [str(r) for r in reprs(torch)]


@pytest.mark.parametrize("value", [1, 0, None, 1.0, "tensor", np.bool_(True), True])
def test_requires_grad_takes_a_bool_only(value) -> None:
    def set_attr(mod):
        t = mod.ones(1)
        t.requires_grad = mod.tensor(True) if isinstance(value, str) else value
        return t.requires_grad

    def set_method(mod):
        t = mod.ones(1)
        return t.requires_grad_(mod.tensor(True) if isinstance(value, str) else value) \
            .requires_grad
    for fn in (set_attr, set_method):
        assert _outcome(fn, ember) == _outcome(fn, torch)


@pytest.mark.parametrize("make", [
    lambda m: m.randn_like(m.ones(2, dtype=m.long)), lambda m: m.ones(2, dtype=m.long).normal_(),
    lambda m: m.randn(2, dtype=m.long), lambda m: m.rand(2, dtype=m.int8),
    lambda m: m.rand_like(m.ones(2, dtype=m.int32)), lambda m: m.ones(2, dtype=m.int32).uniform_(),
    lambda m: m.ones(2, dtype=m.bool).normal_(), lambda m: m.normal(m.zeros(2, dtype=m.long), 1.0),
    lambda m: m.ones(2, dtype=m.long).exponential_(),
    lambda m: m.ones(2, dtype=m.long).log_normal_(), lambda m: m.ones(2, dtype=m.long).cauchy_()])
def test_continuous_draws_refuse_integer_dtypes(make) -> None:
    """`torch.randn_like(long_tensor)` and the continuous in-place fills of an integer
    tensor raise their kernels' errors (the EBM's noise must be made float)."""
    assert _outcome(make, ember) == _outcome(make, torch)


def _batched(mod) -> list:
    mod.manual_seed(0)
    x = mod.randn(3, 2, requires_grad=True)
    w = mod.randn(2, requires_grad=True)
    y = (x * w).sum(0)
    a = mod.autograd.grad(y, x, mod.eye(2), is_grads_batched=True, retain_graph=True)
    b = mod.autograd.grad([y, (x ** 2).sum(0)], [x, w], [mod.eye(2), mod.ones(2, 2)],
                          is_grads_batched=True, retain_graph=True)
    (c,) = mod.autograd.grad(y, w, mod.eye(2), is_grads_batched=True, create_graph=True)
    return [t.tolist() for t in (*a, *b, c)] + [c.requires_grad]


def test_grad_is_grads_batched() -> None:
    """`autograd.grad(..., is_grads_batched=True)`: one vector-Jacobian product per row of
    grad_outputs (a Jacobian from the identity), stacked."""
    got, want = _batched(ember), _batched(torch)
    assert got[-1] == want[-1]
    for g, w in zip(got[:-1], want[:-1]):
        assert np.allclose(g, w, atol=1e-6)

    def mismatched(mod):
        x = mod.ones(3, 2, requires_grad=True)
        y = x.sum(0)
        return mod.autograd.grad([y, y], x, [mod.eye(2), mod.ones(3, 2)], is_grads_batched=True)
    assert _outcome(mismatched, ember) == _outcome(mismatched, torch)


@pytest.mark.parametrize("size", [(2, 5), [2, 5], ((2, "a"), 5), (2, 5.0), 10, "ab"])
def test_unflatten_size_errors(size) -> None:
    def make(mod):
        return mod.nn.Unflatten(1, size).unflattened_size
    assert _outcome(make, ember) == _outcome(make, torch)


def test_reshape_of_nothing_into_an_ambiguous_shape() -> None:
    for op in ("view", "reshape"):
        def make(mod, op=op):
            return getattr(mod.ones(0, 3), op)(-1, 0)
        assert _outcome(make, ember) == _outcome(make, torch)


@pytest.mark.parametrize("op", ["abs", "floor", "ceil", "trunc", "round", "fix", "relu", "neg",
                                "sign", "positive"])
def test_unary_ops_of_bool_tensors(op: str) -> None:
    def run(mod):
        return getattr(mod, op)(mod.tensor([True, False]))
    assert _outcome(run, ember) == _outcome(run, torch)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float32"])
@pytest.mark.parametrize("decimals", [None, 1, -1])
def test_round_decimals_takes_floats_only(dtype: str, decimals) -> None:
    def run(mod):
        t = mod.tensor([15], dtype=getattr(mod, dtype))
        return t.round() if decimals is None else t.round(decimals=decimals)
    assert _outcome(run, ember) == _outcome(run, torch)


@pytest.mark.parametrize("call", [
    lambda m: m.tensor([1.0]).var(), lambda m: m.tensor([1.0]).std(),
    lambda m: m.ones(2, 1).std(1), lambda m: m.ones(3).var(correction=3),
    lambda m: m.std_mean(m.ones(1)), lambda m: m.var_mean(m.ones(1)),
    lambda m: m.ones(3).var(correction=2)])
def test_variance_without_degrees_of_freedom_warns(call) -> None:
    said = []
    for mod in (ember, torch):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            out = call(mod)
        said.append(([str(w.message).partition(" (Triggered")[0] for w in record],
                     str(out).replace("ember.", "torch.")))
    assert said[0] == said[1]


@pytest.mark.parametrize("data", [
    lambda m: [m.ones(2), m.ones(2)], lambda m: [m.ones(1), m.ones(1)],
    lambda m: [[m.ones(1)]], lambda m: [m.tensor(1.0), 2.0], lambda m: [m.ones(1, 1)],
    lambda m: [m.tensor(1), m.tensor(2.5)],
    lambda m: [[m.tensor(1), m.tensor(2)], [m.tensor(3), m.tensor(4)]]])
def test_tensor_of_a_list_of_tensors_reads_their_numbers(data) -> None:
    """`torch.tensor([t1, t2])` reads each (one-element) tensor as a number: shape (2,)
    for two tensors of shape (1,), an error for longer ones."""
    def make(mod):
        out = mod.tensor(data(mod))
        return [list(out.shape), str(out.dtype).replace("ember.", "torch."), out.tolist()]
    assert _outcome(make, ember) == _outcome(make, torch)


@pytest.mark.parametrize("call", [
    lambda m: m.tensor([True]) - m.tensor([True]), lambda m: m.tensor([True]) - 1,
    lambda m: 1 - m.tensor([True]), lambda m: m.tensor([1.0]) - m.tensor([True]),
    lambda m: m.tensor([True]).sub_(m.tensor([True])), lambda m: m.tensor([True]) - True,
    lambda m: m.arange(4)[::-1], lambda m: m.arange(4)[::0]])
def test_bool_subtraction_and_slice_step_errors(call) -> None:
    assert _outcome(call, ember) == _outcome(call, torch)


@pytest.mark.parametrize("call", [
    lambda m: m.tensor([1, 2]).broadcast_to(2, 2), lambda m: m.tensor([1, 2]).broadcast_to([3, 2]),
    lambda m: m.tensor([1, 2]).broadcast_to(size=(2, 2)),
    lambda m: m.broadcast_to(m.tensor([1, 2]), (2, 2)), lambda m: m.tensor([1, 2]).broadcast_to()])
def test_broadcast_to_method_takes_unpacked_sizes(call) -> None:
    assert _outcome(call, ember) == _outcome(call, torch)
