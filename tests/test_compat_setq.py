"""PyTorch behaviours the set-Q programs (DGCNN, Hyena, TabNet, N-BEATS, NTM, a sparse
autoencoder, Autoformer/Informer, an inline HuggingFace-style model) needed, checked
against torch itself."""

from __future__ import annotations

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


@pytest.mark.parametrize("op", ["add", "mul", "sub", "maximum", "lt", "div"])
def test_binary_result_takes_the_first_operands_memory_order(op: str) -> None:
    """An elementwise result is laid out as TensorIterator lays it: the first operand
    that orders two dims decides (NumPy would let row-major win a disagreement)."""
    for (ta, tb), (ea, eb) in zip(_operands(torch), _operands(ember)):
        want = getattr(torch, op)(ta, tb)
        got = getattr(ember, op)(ea, eb)
        assert got.stride() == want.stride(), (ta.stride(), tb.stride())
        assert got.is_contiguous() == want.is_contiguous()
        assert got.tolist() == want.tolist()


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
