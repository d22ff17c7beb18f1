"""PyTorch behaviours the set-U31 programs (Barlow Twins/VICReg, SwAV, a Dreamer RSSM,
IMPALA V-trace, DeepONet and Lagrangian NNs with torch.func, training utilities, DeepFM /
SASRec recommenders, score matching and flow matching with EMA) and the probes around
them needed, checked against torch itself."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _both(fn):
    """`fn(torch)` and `fn(ember)`; an exception is returned as (type name, message)."""
    out = []
    for lib in (torch, ember):
        try:
            out.append(fn(lib))
        except Exception as e:  # noqa: BLE001 - compared, not swallowed
            out.append((type(e).__name__, str(e)))
    return out


def _lists(values) -> list:
    return [v.tolist() if hasattr(v, "tolist") else v for v in values]


# -- list ("foreach") ops beyond the optimizers' own -------------------------------------

@pytest.mark.parametrize("call", [
    lambda m: m._foreach_exp([m.tensor([0.5, -1.0]), m.tensor(2.0)]),
    lambda m: m._foreach_sigmoid([m.tensor([0.5, -1.0])]),
    lambda m: m._foreach_sign([m.tensor([3, -2, 0])]),
    lambda m: m._foreach_reciprocal([m.tensor([2.0, 4.0])]),
    lambda m: m._foreach_pow(2.0, [m.tensor([1.0, 3.0])]),
    lambda m: m._foreach_pow([m.tensor([1.0, 3.0])], [m.tensor([2.0, 0.5])]),
    lambda m: m._foreach_max([m.tensor([1.0, 3.0]), m.tensor([[2.0]])]),
    lambda m: m._foreach_minimum([m.tensor([1.0, -3.0])], 0.5),
    lambda m: m._foreach_maximum([m.tensor([1.0, -3.0])], [m.tensor([0.0, 0.0])]),
    lambda m: m._foreach_clamp_min([m.tensor([1.0, -3.0])], [0.5]),
    lambda m: m._foreach_addcmul([m.ones(2)], [m.ones(2)], [m.full((2,), 2.0)], value=3),
    lambda m: m._foreach_addcdiv([m.ones(2)], [m.ones(2)], [m.full((2,), 4.0)]),
    lambda m: m._foreach_clone([m.tensor([1.0, 2.0])]),
], ids=["exp", "sigmoid", "sign-int", "reciprocal", "pow-scalar-base", "pow-lists", "max",
        "minimum-scalar", "maximum", "clamp_min", "addcmul", "addcdiv", "clone"])
def test_more_foreach_ops(call) -> None:
    """The rest of torch._foreach_*: a tuple of new tensors, each in its tensor's dtype."""
    want, got = _both(call)
    assert isinstance(got, tuple)
    assert [t.dtype for t in got] == [getattr(ember, str(t.dtype).split(".")[1]) for t in want]
    for w, g in zip(want, got):
        assert g.tolist() == pytest.approx(w.tolist(), rel=1e-6)


def test_foreach_in_place_ops() -> None:
    """In place the list given is written (and returned); a leaf that requires grad is
    refused as the tensor op refuses it; out of place the results record autograd."""
    def run(m):
        xs = [m.tensor([0.25, 4.0]), m.tensor([-1.0])]
        m._foreach_clamp_min_(xs, 0.5)
        m._foreach_log2_(xs)
        m._foreach_minimum_(xs, [m.tensor([0.0, 1.0]), m.tensor([3.0])])
        return _lists(xs)
    want, got = _both(run)
    assert got == want
    w = torch.ones(2, requires_grad=True)
    e = ember.ones(2, requires_grad=True)
    assert torch._foreach_exp([w])[0].requires_grad and ember._foreach_exp([e])[0].requires_grad
    want, got = _both(lambda m: m._foreach_exp_([m.ones(2, requires_grad=True)]))
    assert got == want


@pytest.mark.parametrize("call", [
    lambda m: m._foreach_exp([]),
    lambda m: m._foreach_exp(m.ones(2)),
    lambda m: m._foreach_maximum([m.ones(2)], [m.zeros(2), m.zeros(2)]),
    lambda m: m._foreach_add([m.ones(2)], [m.ones(2), m.ones(2)]),
], ids=["empty", "tensor-not-list", "lengths", "lengths-fused"])
def test_foreach_errors(call) -> None:
    want, got = _both(call)
    assert got == want


# -- vmap's randomness -------------------------------------------------------------------

def test_vmap_randomness_modes() -> None:
    """"error" (the default) refuses a random op inside vmap, "same" gives every sample
    the same numbers, "different" lets each draw its own; the stream goes on after."""
    def run(m):
        m.manual_seed(0)
        out = []
        for randomness in ("error", "same", "different"):
            try:
                y = m.func.vmap(lambda x: x + m.rand(()), randomness=randomness)(m.zeros(3))
                out.append((y.tolist(), m.rand(2).tolist()))
            except RuntimeError as e:
                out.append(str(e))
        dropped = m.func.vmap(lambda x: m.nn.functional.dropout(x, 0.5),
                              randomness="same")(m.ones(3, 4))
        out.append(dropped.tolist())
        return out
    want, got = _both(run)
    assert got == want
    assert got[0].startswith("vmap: called random operation while in randomness error mode")


# -- samplers --------------------------------------------------------------------------

def test_weighted_sampler_without_replacement_error() -> None:
    """More samples than non-zero weights without replacement: torch.multinomial's
    message word for word (ember's numbers go in a note)."""
    def run(m):
        return list(m.utils.data.WeightedRandomSampler([0.1, 0.9, 0.0], 5, replacement=False))
    want, got = _both(run)
    assert got == want


# -- losses: target dtypes -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss", "huber_loss"])
def test_regression_losses_take_a_bool_target(name: str) -> None:
    """PyTorch's mse / smooth L1 / Huber kernels promote a bool target (a mask)."""
    def run(m):
        x = m.tensor([0.3, 2.6], requires_grad=True)
        loss = getattr(m.nn.functional, name)(x, m.tensor([True, False]))
        if name != "huber_loss":  # (PyTorch's Huber backward refuses the bool target)
            loss.backward()
            return [round(loss.item(), 5), str(loss.dtype).split(".")[1],
                    [round(g, 5) for g in x.grad.tolist()]]
        return [round(loss.item(), 5), str(loss.dtype).split(".")[1]]
    want, got = _both(run)
    assert got == want


@pytest.mark.parametrize("name", ["huber_loss", "soft_margin_loss"])
def test_losses_keep_the_input_dtype(name: str) -> None:
    """Huber and soft-margin write into a tensor of the input's dtype: a float64 target
    gives a float32 loss for a float32 input, a float16 input a float16 loss."""
    def run(m):
        t = m.tensor([1.0, -1.0], dtype=m.float64)
        fn = getattr(m.nn.functional, name)
        a = fn(m.tensor([0.3, 2.6]), t)
        b = fn(m.tensor([0.3, 2.6]).half(), t, reduction="none")
        return str(a.dtype), round(a.item(), 5), str(b.dtype), b.tolist()
    want, got = _both(run)
    assert [str(x).replace("ember.", "torch.") for x in got] == [str(x) for x in want]


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.kl_div(m.tensor([0.3, 0.6]), m.tensor([0, 1]),
                                     reduction="sum"),
    lambda m: m.nn.functional.kl_div(m.tensor([0, 1]), m.tensor([0.3, 0.6]),
                                     reduction="sum"),
    lambda m: m.nn.functional.binary_cross_entropy_with_logits(m.tensor([0.3, 0.6]),
                                                               m.tensor([0, 1])),
    lambda m: m.nn.functional.binary_cross_entropy_with_logits(m.tensor([0.3, 0.6]).double(),
                                                               m.tensor([0, 1])),
    lambda m: m.nn.functional.binary_cross_entropy_with_logits(m.tensor([0.3, 0.6]),
                                                               m.tensor([False, True])),
], ids=["kl_div-int-target", "kl_div-int-input", "bce-logits-long", "bce-logits-long-f64",
        "bce-logits-bool"])
def test_loss_target_dtype_errors(call) -> None:
    want, got = _both(call)
    assert got == want
    assert isinstance(got, tuple) and got[0] == "RuntimeError"


# -- printed classes and torch.utils.hooks ---------------------------------------------------

def test_every_hook_handle_is_a_removable_handle() -> None:
    """Module, tensor, post-accumulate and optimizer hooks all return
    torch.utils.hooks.RemovableHandle (importable from there), and it removes its hook."""
    from ember.utils.hooks import RemovableHandle

    def run(m):
        from importlib import import_module
        handle_cls = import_module(f"{m.__name__}.utils.hooks").RemovableHandle
        lin = m.nn.Linear(1, 1)
        calls = []
        handles = [lin.register_forward_hook(lambda *a: calls.append("fwd")),
                   lin.weight.register_hook(lambda g: calls.append("grad")),
                   lin.weight.register_post_accumulate_grad_hook(lambda p: calls.append("acc"))]
        kinds = [isinstance(h, handle_cls) for h in handles]
        lin(m.ones(1, 1)).sum().backward()
        for h in handles:
            h.remove()
        lin(m.ones(1, 1)).sum().backward()
        return kinds, calls, type(handles[1]).__qualname__
    want, got = _both(run)
    assert got == want == ([True] * 3, ["fwd", "grad", "acc"], "RemovableHandle")
    assert ember.utils.hooks.RemovableHandle is RemovableHandle
    # (torch.optim's import is slow: the optimizer's handle is checked on ember only)
    opt = ember.optim.SGD([ember.nn.Parameter(ember.ones(1))], lr=0.1)
    assert isinstance(opt.register_step_pre_hook(lambda *a: None), RemovableHandle)


def test_size_prints_its_class_as_torch() -> None:
    """`type(x.shape)` prints <class 'torch.Size'> (ember's name outside the alias)."""
    assert repr(type(ember.ones(2).shape)) == "<class 'ember.Size'>"
    assert repr(type(torch.ones(2).shape)) == "<class 'torch.Size'>"


def test_typing_and_functional_modules() -> None:
    """torch.nn.common_types, torch.types and torch.functional import as in PyTorch."""
    from torch.nn.common_types import _size_2_t as torch_size_2_t

    from ember.nn.common_types import _ratio_2_t, _size_2_t
    from ember.types import Device, Number
    assert repr(_size_2_t).replace("ember", "torch") == repr(torch_size_2_t)
    assert _ratio_2_t is not None and Device is not None and Number == (int | float | bool)
    assert ember.functional.einsum("i,i->", ember.ones(3), ember.ones(3)).item() == 3.0
    assert [t.tolist() for t in ember.functional.split(ember.arange(4), 2)] == [[0, 1], [2, 3]]


def test_prelu_runs_in_low_precision_under_autocast() -> None:
    """prelu is on both devices' autocast low-precision lists (nn.PReLU included)."""
    def run(m):
        x = m.randn(2, 3)
        with m.autocast("cpu", dtype=m.bfloat16):
            return [str(m.nn.PReLU()(x).dtype), str(m.nn.functional.prelu(x, m.ones(3)).dtype),
                    str(m.prelu(x, m.ones(1)).dtype)]
    want, got = _both(run)
    assert [s.replace("ember", "torch") for s in got] == want == ["torch.bfloat16"] * 3


def test_cpu_autocast_float32_list_takes_bfloat16_inputs() -> None:
    """PyTorch's CPU autocast runs quantile, the FFTs, stft, polar, trace and the 3-d pools
    in float32, so bfloat16 inputs work there (ember refused some before)."""
    def run(m):
        x = m.linspace(-1, 1, 16).to(m.bfloat16)
        with m.autocast("cpu", dtype=m.bfloat16):
            outs = [m.quantile(x, 0.3), m.fft.rfft(x), m.polar(x.abs(), x),
                    m.stft(x, 8, window=m.ones(8), return_complex=True),
                    x.view(4, 4).trace(),
                    m.nn.functional.avg_pool3d(x.view(1, 1, 1, 4, 4), (1, 2, 2))]
        return [str(o.dtype).split(".")[1] for o in outs]
    want, got = _both(run)
    assert got == want == ["float32", "complex64", "complex64", "complex64", "float32",
                           "float32"]


def test_reflect_and_replicate_padding_run_in_float32_under_cpu_autocast() -> None:
    """reflection_pad1d/2d and replication_pad1d/2d/3d are on PyTorch's CPU autocast
    float32 list (reflection_pad3d, circular and constant padding are not)."""
    def run(m):
        F = m.nn.functional
        b = m.linspace(-1, 1, 32).view(1, 2, 4, 4).to(m.bfloat16)
        c = m.linspace(-1, 1, 27).view(1, 1, 3, 3, 3).to(m.bfloat16)
        with m.autocast("cpu", dtype=m.bfloat16):
            outs = [F.pad(b, (1, 1, 1, 1), mode="reflect"), F.pad(c, (1,) * 6, mode="reflect"),
                    F.pad(c, (1,) * 6, mode="replicate"), F.pad(b, (1,) * 4, mode="circular"),
                    F.pad(b, (1, 1)), m.nn.ReplicationPad1d(1)(b[0, :, 0])]
        return [str(o.dtype).split(".")[1] for o in outs]
    want, got = _both(run)
    assert got == want == ["float32", "bfloat16", "float32", "bfloat16", "bfloat16", "float32"]
