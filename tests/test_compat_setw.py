"""What the set W programs (DPO preference training, Conv-TasNet, neural spline flows,
EGNN) found ember doing differently from PyTorch."""

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402


def _grad_fn_name(t) -> str:
    return type(t.grad_fn).__name__


@pytest.mark.parametrize("slopes", [1, 3])
def test_prelu_node_name_and_gradients(slopes: int) -> None:
    """Conv-TasNet's PReLU: PyTorch's one `PreluKernelBackward0` node, its gradients."""
    outs = []
    for lib in (torch, ember):
        w = lib.tensor([0.25, 0.5, 0.1][:slopes], requires_grad=True)
        x = lib.tensor([[-2.0, 3.0, -1.0], [1.0, -4.0, 0.0]], requires_grad=True)
        ys = [lib.nn.functional.prelu(x, w), lib.prelu(x, w), x.prelu(w)]
        ys[0].pow(2).sum().backward()
        outs.append(([_grad_fn_name(y) for y in ys], ys[0].tolist(), x.grad.tolist(),
                     w.grad.tolist()))
    assert outs[1][0] == outs[0][0] == ["PreluKernelBackward0"] * 3
    assert outs[1][1:] == outs[0][1:]  # (float32 products of the same numbers)
