"""Known differences from PyTorch 2.13 (its CPU build is the oracle), closed: no-op shape
calls return new views ..."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(fn):
    """("ok", result) or (error type name, message) of `fn()`."""
    try:
        return "ok", fn()
    except Exception as err:  # noqa: BLE001 - the error is what is compared
        return type(err).__name__, str(err)


# == 1. no-op shape calls: a new view, or the tensor itself, as PyTorch ================

def _identity(lib, call, grad=True):
    """What `call(x)` is to `x`: itself, a view of it (its `_base`), a copy; its node."""
    x = lib.randn(2, 3, requires_grad=grad)
    y = call(x)
    y = y[0] if isinstance(y, (tuple, list)) else y
    node = type(y.grad_fn).__name__ if y.grad_fn is not None else None
    return y is x, y._base is x, node, y.data_ptr() == x.data_ptr(), tuple(y.shape)


NO_OP_CALLS = [  # (x: a (2, 3) tensor; m: the module, ember or torch)
    "x.reshape(x.shape)", "x.reshape(-1, 3)", "m.reshape(x, x.shape)", "x.view(x.shape)",
    "x.view_as(x)", "x.reshape_as(x)", "x.expand(x.shape)", "x.expand(-1, -1)",
    "x.expand_as(x)", "x.broadcast_to(x.shape)", "x.unflatten(1, (3,))", "x.flatten()",
    "x.flatten(1)", "x.flatten(0, 0)", "x.flatten(-1, 1)", "x.squeeze()", "x.squeeze(0)",
    "x.squeeze((0, 1))", "x.permute(0, 1)", "x.transpose(0, 0)", "x.movedim(0, 0)",
    "x.contiguous()", "x.to(x.dtype)", "x.to('cpu')", "x.to(x.dtype, copy=True)",
    "x.type_as(x)", "x.float()", "x.double()", "x.type(x.dtype)", "x.cpu()",
    "x.narrow(0, 0, 2)", "x.narrow(1, 1, 2)", "x[:]", "x[...]", "x.repeat(1, 1)",
    "x.tile((1, 1))", "x.conj_physical()", "x.conj()", "x.tensor_split(1)", "x.hsplit(1)",
    "x.chunk(1)", "x.rot90(0)", "x.rot90(4)", "x.rot90(1)", "m.atleast_2d(x)",
    "m.atleast_2d(x[0])", "m.atleast_3d(x)", "m.atleast_3d(x[0])",
    "m.broadcast_tensors(x, x[0])", "m.alias_copy(x)", "m.view_copy(x, (6,))",
    "m.expand_copy(x, (2, 3))", "m.squeeze_copy(x, 0)", "m.transpose_copy(x, 0, 1)",
    "x.narrow_copy(1, 0, 3)", "m.unbind_copy(x)",
]


@pytest.mark.parametrize("grad", [True, False])
@pytest.mark.parametrize("call", NO_OP_CALLS)
def test_no_op_shape_call_is_a_view_or_self_as_in_pytorch(call, grad):
    mine = _identity(ember, lambda x: eval(call, {"x": x, "m": ember}), grad=grad)
    assert mine == _identity(torch, lambda x: eval(call, {"x": x, "m": torch}), grad=grad)


def test_no_op_views_share_storage_and_writes():
    for lib in (ember, torch):
        x = lib.zeros(2, 3)
        x.reshape(2, 3).add_(1)
        x.view(2, 3)[0, 0] = 5
        x.expand(2, 3).mul_(2)
        y = x.repeat(1, 1)
        y.add_(100)  # a copy: x keeps its values
        assert x.tolist() == [[10.0, 2.0, 2.0], [2.0, 2.0, 2.0]]


def test_expand_with_repeats_still_refuses_writes():
    mine = _outcome(lambda: ember.zeros(1, 3).expand(2, 3).add_(1))
    theirs = _outcome(lambda: torch.zeros(1, 3).expand(2, 3).add_(1))
    assert mine[0] == theirs[0] == "RuntimeError"
    assert mine[1] == theirs[1]


def test_no_op_view_gradient_flows():
    x = ember.randn(2, 3, requires_grad=True)
    (x.reshape(2, 3) * 2 + x.expand(2, 3)).sum().backward()
    assert x.grad.tolist() == [[3.0] * 3] * 2
