"""PyTorch behaviours the set-Q programs (DGCNN, Hyena, TabNet, N-BEATS, NTM, a sparse
autoencoder, Autoformer/Informer, an inline HuggingFace-style model) needed, checked
against torch itself."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _operands(mod):
    """Operand pairs whose layouts disagree: a transposed first operand with a row-major,
    a broadcast or a scalar-like second one (Autoformer's conv output plus positional
    encodings), and the other way round."""
    g = mod.arange(1, 4 * 16 * 24 + 1, dtype=mod.float32)
    t = g.reshape(4, 16, 24).transpose(1, 2)  # (4, 24, 16), strides (384, 1, 24)
    c = g.reshape(4, 24, 16) * 0.5
    pe = mod.zeros(1, 50, 16)[:, :24]
    row = mod.ones(16)
    col = mod.ones(4, 24, 1)
    w = g[:12].reshape(3, 4)
    return [(t, c), (c, t), (t, pe), (pe, t), (t, pe[0]), (t, row), (t, col), (col, t),
            (t, t), (t, t.contiguous()), (w.t(), mod.ones(4, 3)), (mod.ones(4, 3), w.t()),
            (w.t()[:, :2], mod.ones(4, 2)), (t[:, ::2], c[:, ::2].int())]


@pytest.mark.parametrize("op", ["add", "mul", "sub", "maximum", "lt", "div", "pow", "fmod",
                                "remainder", "floor_divide", "atan2", "logical_and"])
def test_binary_result_takes_the_first_operands_memory_order(op: str) -> None:
    """An elementwise result is laid out as TensorIterator lays it: the first operand
    that orders two dims decides (NumPy would let row-major win a disagreement)."""
    for (ta, tb), (ea, eb) in zip(_operands(torch), _operands(ember)):
        want = getattr(torch, op)(ta, tb)
        got = getattr(ember, op)(ea, eb)
        assert got.stride() == want.stride(), (ta.stride(), tb.stride())
        assert got.is_contiguous() == want.is_contiguous()
        np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want.tolist()),
                                   rtol=1e-6, equal_nan=True)


def test_where_takes_the_conditions_memory_order() -> None:
    """where iterates (condition, input, other): a row-major condition makes a row-major
    result, a transposed one a transposed result."""
    for cond_t in (False, True):
        strides = []
        for mod in (torch, ember):
            t = mod.arange(24.0).reshape(2, 3, 4).transpose(1, 2)
            cond = t > 5
            cond = cond.transpose(1, 2).contiguous().transpose(1, 2) if cond_t \
                else cond.contiguous()
            strides.append((mod.where(cond, t, 0.0 * t.contiguous()).stride(),
                            mod.where(cond, t.contiguous(), t).stride()))
        assert strides[0] == strides[1]


@pytest.mark.parametrize("fn", [
    lambda m, t: m.softmax(t, -1), lambda m, t: m.log_softmax(t, 1),
    lambda m, t: m.nn.functional.layer_norm(t, (3,)), lambda m, t: 2 ** t,
    lambda m, t: t ** 2, lambda m, t: m.sigmoid(t)],
    ids=["softmax", "log_softmax", "layer_norm", "rpow", "pow_scalar", "sigmoid"])
def test_unary_like_result_layouts(fn) -> None:
    """softmax, log_softmax and layer_norm answer row-major for a transposed input (their
    CPU kernels read a contiguous copy), as does a number raised to a tensor; pointwise
    ops keep the input's order."""
    out = []
    for mod in (torch, ember):
        t = mod.arange(1.0, 25.0).reshape(2, 3, 4).transpose(1, 2)
        t.requires_grad_()
        r = fn(mod, t)
        r.sum().backward()
        out.append((r.stride(), r.detach().tolist(), t.grad.tolist()))
    assert out[1][0] == out[0][0]
    np.testing.assert_allclose(np.asarray(out[1][1]), np.asarray(out[0][1]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out[1][2]), np.asarray(out[0][2]), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda m, t: m.cat([t, t], 0), lambda m, t: m.cat([t, t], 2), lambda m, t: m.stack([t, t]),
    lambda m, t: t.sum(0), lambda m, t: t.amax(1), lambda m, t: t.var(0),
    lambda m, t: t.logsumexp(0), lambda m, t: t.cumsum(1), lambda m, t: t.cumprod(2),
    lambda m, t: t.argmax(0), lambda m, t: t.masked_fill(t > 3, 0.0),
    lambda m, t: m.nn.functional.batch_norm(t, None, None, training=True),
    lambda m, t: m.nn.functional.instance_norm(t)],
    ids=["cat0", "cat2", "stack", "sum", "amax", "var", "logsumexp", "cumsum", "cumprod",
         "argmax", "masked_fill", "batch_norm", "instance_norm"])
def test_row_major_results_of_transposed_inputs(fn) -> None:
    """Reductions, scans, cat and stack, masked_fill and the batch/instance norms answer
    row-major for a transposed input in PyTorch, so that `.view` of them works."""
    out = []
    for mod in (torch, ember):
        t = mod.arange(1.0, 25.0).reshape(2, 3, 4).transpose(1, 2)
        r = fn(mod, t)
        out.append((r.stride(), r.view(-1).tolist()))
    assert out[1][0] == out[0][0]
    np.testing.assert_allclose(np.asarray(out[1][1]), np.asarray(out[0][1]), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize(("equation", "shapes"), [
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bhqk,bkhd->bqhd", [(2, 3, 4, 6), (2, 6, 3, 5)]),
    ("bij,jk->bik", [(2, 4, 3), (3, 2)]), ("ij,jk->ki", [(6, 4), (4, 2)]),
    ("bij,bjk->ikb", [(3, 6, 4), (3, 4, 2)]), ("bi,bj->jib", [(2, 3), (2, 4)]),
    ("nchw,oc->nohw", [(2, 3, 4, 5), (6, 3)]), ("bhqk,bkhd->dqbh", [(2, 3, 4, 4), (2, 4, 3, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]), ("i,j->ij", [(3,), (4,)]),
    ("ijk,ikl,ilm->ijm", [(2, 3, 4), (2, 4, 5), (2, 5, 6)]), ("ij->ji", [(3, 4)])])
def test_einsum_result_layout(equation: str, shapes) -> None:
    """einsum's result lies in memory as PyTorch's last bmm leaves it, so `.view` of an
    attention einsum works (NumPy's einsum answers transposed layouts)."""
    strides = []
    for mod in (torch, ember):
        operands = [mod.ones(s) for s in shapes]
        strides.append(mod.einsum(equation, *operands).stride())
    assert strides[1] == strides[0]


def test_cat_keeps_channels_last() -> None:
    for mod in (torch, ember):
        x = mod.ones(2, 3, 4, 5).to(memory_format=mod.channels_last)
        assert mod.cat([x, x], 1).is_contiguous(memory_format=mod.channels_last)
        assert mod.cat([x, x.contiguous()], 1).is_contiguous()


def test_dropout_after_transposed_add_draws_as_torch() -> None:
    """The mask dropout draws follows the result's layout, so the layout decides which
    elements are dropped (Autoformer's DataEmbedding: conv(x).transpose(1, 2) + pe)."""
    outs = []
    for mod in (torch, ember):
        mod.manual_seed(5)
        x = mod.randn(4, 16, 24).transpose(1, 2) + mod.zeros(1, 24, 16)
        outs.append(mod.nn.functional.dropout(x, 0.3).tolist())
    assert outs[0] == outs[1]


def test_view_of_transposed_sum_refuses_as_torch() -> None:
    """`(x.t() + y).view(-1)` is not a view in PyTorch: the sum keeps x's column order."""
    for mod in (torch, ember):
        x = mod.ones(3, 4)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            (x.t() + mod.ones(4, 3)).view(-1)
        assert (mod.ones(4, 3) + x.t()).view(-1).shape == (12,)


def _error(fn) -> tuple[str, str]:
    try:
        fn()
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err)
    return "ok", ""


@pytest.mark.parametrize(("shape", "pad"), [
    ((1, 3), (3, 0)), ((1, 1, 3), (0, 3)), ((1, 3, 3), (1, 1, 3, 1)),
    ((1, 1, 3, 3), (3, 1, 1, 1)), ((1, 1, 3, 3), (1, 1, 1, 3)),
    ((1, 1, 2, 3, 3), (1, 1, 1, 1, 2, 0)), ((1, 1, 2, 3, 3), (1, 1, 3, 1, 0, 0))])
def test_reflect_pad_too_wide_names_the_argument(shape, pad) -> None:
    """PyTorch's reflection_pad kernels name the offending pair: Argument #4, #6, #8."""
    def run(mod):
        return _error(lambda: mod.nn.functional.pad(mod.ones(shape), pad, mode="reflect"))
    assert run(ember) == run(torch)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_value_in_non_constant_mode(mode: str) -> None:
    """A fill value is a RuntimeError outside constant mode (0 is allowed)."""
    def run(mod, value):
        x = mod.ones(1, 1, 3)
        return _error(lambda: mod.nn.functional.pad(x, (1, 1), mode=mode, value=value))
    for value in (1.0, 0.0):
        assert run(ember, value) == run(torch, value)


def test_index_select_matrix_index_error() -> None:
    def run(mod):
        return _error(lambda: mod.ones(3, 2).index_select(0, mod.tensor([[0]])))
    assert run(ember) == run(torch)


def test_multinomial_without_replacement_of_transposed_weights() -> None:
    """The exponential race draws into `empty_like(weights)`: in a transposed matrix's
    memory order, as PyTorch's."""
    picks = []
    for mod in (torch, ember):
        mod.manual_seed(0)
        weights = mod.ones(3, 5).t()
        picks.append((mod.multinomial(weights, 3).tolist(), mod.multinomial(weights, 1).tolist()))
    assert picks[1] == picks[0]
