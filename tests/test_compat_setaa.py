"""The ember behaviours that program set AA (session 33: memory-saving training, sparse
embeddings, Transformer-XL, sliding-window attention) needed, checked against PyTorch."""

from __future__ import annotations

import functools
import warnings

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402
from ember.utils import checkpoint as ecp  # noqa: E402


def _error(fn) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


# -- torch.utils.checkpoint ------------------------------------------------------------

def test_checkpoint_determinism_check_is_validated() -> None:
    lin_t, lin_e = torch.nn.Linear(2, 2), ember.nn.Linear(2, 2)
    t = _error(lambda: torch.utils.checkpoint.checkpoint(
        lin_t, torch.ones(1, 2), use_reentrant=False, determinism_check="bad"))
    e = _error(lambda: ecp.checkpoint(lin_e, ember.ones(1, 2), use_reentrant=False,
                                      determinism_check="bad"))
    assert e == t and t[0] is ValueError


def test_checkpoint_sequential_warns_and_checks_keywords() -> None:
    seq_e = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU(), ember.nn.Linear(2, 2))
    x = ember.randn(3, 2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ecp.checkpoint_sequential(seq_e, 2, x)
    assert any("checkpoint_sequential: the use_reentrant parameter should be passed"
               in str(w.message) for w in caught)
    seq_t = torch.nn.Sequential(torch.nn.Linear(2, 2))
    t = _error(lambda: torch.utils.checkpoint.checkpoint_sequential(
        seq_t, 1, torch.ones(1, 2), use_reentrant=False, scale=2))
    e = _error(lambda: ecp.checkpoint_sequential(seq_e, 1, x, use_reentrant=False, scale=2))
    assert e == t
    # preserve_rng_state is taken, not passed on
    out = ecp.checkpoint_sequential(seq_e, 2, x, use_reentrant=False, preserve_rng_state=False)
    out.sum().backward()
    assert x.grad.shape == (3, 2)


def test_selective_checkpoint_contexts_give_plain_gradients() -> None:
    assert [p.name for p in ecp.CheckpointPolicy] == [p.name for p in
                                                      torch.utils.checkpoint.CheckpointPolicy]
    assert ecp.CheckpointPolicy.MUST_SAVE.value == 0

    def policy(ctx, op, *args, **kwargs):
        return ecp.CheckpointPolicy.MUST_SAVE

    ember.manual_seed(0)
    seq = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 1))
    x = ember.randn(5, 3, requires_grad=True)
    seq(x).sum().backward()
    plain = [p.grad.clone() for p in seq.parameters()] + [x.grad.clone()]
    seq.zero_grad()
    x.grad = None
    for context in (functools.partial(ecp.create_selective_checkpoint_contexts, policy),
                    functools.partial(ecp.create_selective_checkpoint_contexts,
                                      [ember.ops.aten.mm.default])):
        ecp.checkpoint(seq, x, use_reentrant=False, context_fn=context).sum().backward()
        got = [p.grad for p in seq.parameters()] + [x.grad]
        assert all(ember.equal(a, b)
                   for a, b in zip(got, plain))
        seq.zero_grad()
        x.grad = None
    t = _error(lambda: torch.utils.checkpoint.create_selective_checkpoint_contexts(3))
    e = _error(lambda: ecp.create_selective_checkpoint_contexts(3))
    assert e == t and t[0] is TypeError


# -- grad_fn._raw_saved_<name>.register_hooks --------------------------------------------

def _raw_saved_story(lib) -> list:
    log = []
    x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.pow(2)
    raw = y.grad_fn._raw_saved_self
    log.append(type(raw).__name__)
    raw.register_hooks(lambda t: (log.append(("pack", tuple(t.shape))), t * 4)[1],
                       lambda t: (log.append("unpack"), t / 4)[1])
    for call in (lambda: raw.register_hooks(lambda t: t, lambda t: t),
                 lambda: y.grad_fn._raw_saved_exponent,
                 lambda: raw.register_hooks(1, 2)):
        kind, msg = _error(call)
        log.append((kind, msg.split("\n\nInvoked")[0].replace("ember.", "torch.")))
    y.sum().backward()
    log.append(x.grad.tolist())
    log.append(_error(lambda: y.grad_fn._raw_saved_self.register_hooks(lambda t: t,
                                                                       lambda t: t)))
    z = x.exp()
    log.append(type(z.grad_fn._raw_saved_result).__name__)
    log.append(_error(lambda: lib.cat([x, x]).grad_fn._raw_saved_tensors))
    return log


def test_raw_saved_tensor_register_hooks() -> None:
    assert _raw_saved_story(ember) == _raw_saved_story(torch)
    x = ember.ones(2, requires_grad=True)
    assert repr((x * x).grad_fn._raw_saved_self).startswith(
        f"<{ember.core.dtype.API_NAME}._C._autograd.SavedTensor object at 0x")


# -- sparse gradients and EmbeddingBag -------------------------------------------------

def _sparse_add_story(lib) -> list:
    def sp(ix, vals, coalesced=None):
        return lib.sparse_coo_tensor(lib.tensor([ix]), vals, (6, 2), is_coalesced=coalesced)

    def expanded(n):
        return lib.ones(1, 2).expand(n, 2)

    def dense(n):
        return lib.arange(1.0, 2 * n + 1).view(n, 2)

    cases = [(sp([1, 3, 1], dense(3)), sp([0], expanded(1))),   # contiguous: merged
             (sp([1, 3, 1], expanded(3)), sp([0], dense(1))),   # not: concatenated
             (sp([1, 3], dense(2), True), sp([0, 2], expanded(2), True)),
             (sp([1, 3, 1], dense(3)), sp([1, 3, 1], expanded(3))),
             (sp([1, 3, 1, 2, 0, 4, 5], dense(7)), sp([0, 2, 4, 1, 3, 5], expanded(6))),
             (sp([], lib.zeros(0, 2)), sp([2, 1], expanded(2)))]
    log = []
    for a, b in cases:
        for r in (a + b, a.add(b, alpha=2), a - b):
            log.append((r._indices().tolist(), r._values().tolist(), r.is_coalesced(),
                        r._values().is_contiguous()))
    return log


def test_sparse_add_concatenates_non_contiguous_values() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's sparse-invariants notice
        assert _sparse_add_story(ember) == _sparse_add_story(torch)


def _embedding_accumulation(lib) -> list:
    lib.manual_seed(0)
    emb = lib.nn.Embedding(6, 2, sparse=True)
    log = []
    for step in range(6):  # the gradient of a sum is expanded: entries concatenate
        emb(lib.tensor([step % 6, 5 - step % 6, 1])).sum().backward()
        g = emb.weight.grad
        log.append((g._indices().tolist(), g.is_coalesced()))
    emb(lib.tensor([2, 0])).pow(2).sum().backward()  # contiguous: merged
    log.append(emb.weight.grad._indices().tolist())
    return log


def test_sparse_embedding_gradient_accumulation_order() -> None:
    assert _embedding_accumulation(ember) == _embedding_accumulation(torch)


def test_embedding_bag_first_offset_message() -> None:
    def call(lib):
        return lib.nn.functional.embedding_bag(lib.tensor([0, 1, 2]), lib.ones(5, 3),
                                               lib.tensor([1, 2]), mode="sum")

    t, e = _error(lambda: call(torch)), _error(lambda: call(ember))
    assert e[0] is t[0] is RuntimeError
    assert e[1].replace("ember.", "torch.") == t[1]


# -- byte masks (Transformer-XL's `torch.triu(...).byte()`) and size arguments ----------

def _byte_mask_story(lib) -> list:
    scores = lib.arange(6.0).view(2, 3)
    mask = lib.triu(lib.ones(2, 3), diagonal=1).byte()
    log = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = lib.where(mask, lib.tensor(-1.0), scores)
        log.append((out.tolist(), str(out.dtype)))
        for call in (lambda: scores.masked_select(mask),
                     lambda: scores.masked_scatter(mask, lib.zeros(6)),
                     lambda: scores.masked_fill(mask, 0.0)):
            log.append(_error(call))
    # (where's warning is PyTorch's TORCH_WARN_ONCE: an earlier test may have had it)
    log.append([str(w.message).split(" (Triggered")[0] for w in caught
                if "masked_scatter" in str(w.message)])
    return log


def test_byte_masks_in_where_masked_select_masked_scatter() -> None:
    assert str(_byte_mask_story(ember)).replace("ember.", "torch.") == \
        str(_byte_mask_story(torch))


@pytest.mark.parametrize("call", [
    lambda L: L.empty((4.0, 8)), lambda L: L.zeros([2, 1.5]), lambda L: L.zeros(2, 3, 1.5),
    lambda L: L.ones(2, "3"), lambda L: L.ones(1.5), lambda L: L.ones(1.5, 2),
    lambda L: L.full((2.0,), 1.0), lambda L: L.zeros(size=(2, 1.5)),
    lambda L: L.zeros((True, 2)), lambda L: L.zeros(size={3}), lambda L: L.rand(3, None)])
def test_size_argument_type_errors(call) -> None:
    assert _error(lambda: call(ember)) == _error(lambda: call(torch))
    assert ember.zeros((2, True)).shape == torch.zeros((2, True)).shape  # a later bool is 1


# -- two numbers to add/sub/mul/div (HF's `torch.div(seq_len, w, rounding_mode="trunc")`) --

@pytest.mark.parametrize("call", [
    lambda L: L.div(8, 4, rounding_mode="trunc"), lambda L: L.div(-7, 2, rounding_mode="trunc"),
    lambda L: L.div(7, 2), lambda L: L.div(7.5, 2, rounding_mode="floor"),
    lambda L: L.floor_divide(-7, 2.0), lambda L: L.true_divide(7, 2), lambda L: L.add(1, 2),
    lambda L: L.add(1, 2, alpha=3), lambda L: L.sub(1.5, 2, alpha=2), lambda L: L.mul(2, 3.5),
    lambda L: L.multiply(2, 3), lambda L: L.add(True, True), lambda L: L.mul(1j, 2),
    lambda L: L.div(True, 2), lambda L: L.div(2 ** 40, 3, rounding_mode="trunc")])
def test_binary_ops_take_two_numbers(call) -> None:
    t, e = call(torch), call(ember)
    assert isinstance(e, ember.Tensor) and e.ndim == 0
    assert (e.item(), str(e.dtype).split(".")[1]) == (t.item(), str(t.dtype).split(".")[1])


def test_two_numbers_stay_refused_elsewhere() -> None:
    for name in ("remainder", "fmod", "pow", "eq"):
        with pytest.raises(TypeError):
            getattr(ember, name)(7, 2)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.div(7, 0, rounding_mode="trunc")


def test_checkpoint_helpers_of_hand_written_checkpoints() -> None:
    """detach_variable / get_device_states / set_device_states (Megatron-style and
    reversible-network code) and set_checkpoint_debug_enabled."""
    def story(lib, cp):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        d = cp.detach_variable((a, 3, a * 2))
        log = [[type(x).__name__ for x in d], d[0].requires_grad, d[2].requires_grad,
               d[2].grad_fn, d[0] is a, _error(lambda: cp.detach_variable([a])),
               cp.get_device_states(a, 3, lib.ones(2))]
        cp.set_device_states([], [])
        with cp.set_checkpoint_debug_enabled(True):
            log.append(_error(lambda: cp.checkpoint(lib.sin, a, use_reentrant=False,
                                                    context_fn=cp.noop_context_fn.__call__)))
            log.append(tuple(cp.checkpoint(lib.sin, a, use_reentrant=False).shape))
        return log

    assert story(ember, ecp) == story(torch, torch.utils.checkpoint)


# -- the order saved-tensor hooks see (the "Hooks for saved tensors" tutorial's a * b) --

def _rounded(t) -> list:
    return [round(v, 4) for v in t.flatten().tolist()]  # (exp may differ in its last bit)


def _pack_order(lib) -> dict:
    a = lib.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
    b = lib.tensor([[2.0, 1.0], [-1.0, 4.0]], requires_grad=True)
    ops = {"mul": lambda: a * b, "div": lambda: a / b, "mm": lambda: a @ b,
           "pow": lambda: a.detach().abs().requires_grad_() ** b,
           "maximum": lambda: lib.maximum(a, b), "atan2": lambda: lib.atan2(a, b),
           "addcmul": lambda: lib.addcmul(a, a, b), "exp": lambda: a.exp()}
    def hooks(log: list) -> tuple:
        return (lambda t: (log.append(("pack", _rounded(t))), t)[1],
                lambda t: (log.append(("unpack", _rounded(t))), t)[1])

    seen = {}
    for name, make in ops.items():
        seen[name] = []
        with lib.autograd.graph.saved_tensors_hooks(*hooks(seen[name])):
            out = make()
        out.sum().backward()
    return seen


def test_saved_tensors_are_packed_in_pytorchs_order() -> None:
    """PyTorch saves a node's inputs sorted by its names (`other` before `self`, `mat2`
    before `self`), then its result; backward unpacks them in that order."""
    assert _pack_order(ember) == _pack_order(torch)


@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((3, 4), (2, 5)), ((2, 3, 4), (3,)),
                                    ((4,), (3,)), ((3, 4), (3, 1)), ((3, 4), ())])
def test_linear_bias_shape_errors(shapes) -> None:
    x, b = shapes

    def call(lib):
        return tuple(lib.nn.functional.linear(lib.ones(x), lib.ones(5, 4), lib.ones(b)).shape)

    try:
        expected = call(torch)
    except RuntimeError as err:
        assert _error(lambda: call(ember)) == (RuntimeError, str(err))
    else:
        assert call(ember) == expected


@pytest.mark.parametrize("dims", [(0, 3, (4,)), (3, 0, (2,)), (3, 2, (0,)), (0, 3, (2, 2))])
def test_linear_backward_with_zero_size_features(dims) -> None:
    """AdaptiveLogSoftmaxWithLoss(div_value=4) makes a tail Linear(8 // 16 = 0, n)."""
    def run(lib):
        in_f, out_f, lead = dims
        layer = lib.nn.Linear(in_f, out_f)
        x = lib.ones(*lead, in_f, requires_grad=True)
        out = layer(x)
        out.sum().backward()
        return (tuple(out.shape), tuple(layer.weight.grad.shape), tuple(x.grad.shape),
                layer.bias.grad.tolist())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Initializing zero-element tensors is a no-op"
        assert run(ember) == run(torch)
