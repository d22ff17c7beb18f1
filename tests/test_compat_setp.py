"""PyTorch behaviours the set-P programs (Glow, GraphSAGE, an audio classifier, an EBM, a
mixture density network, TransE, RAFT-lite, C3D) needed, checked against torch itself."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(fn, mod) -> tuple[str, object]:
    """What `fn(mod)` gives: its value (lists for tensors), or its error's type and text."""
    try:
        out = fn(mod)
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err).replace("ember.", "torch.")
    return "ok", out.tolist() if isinstance(out, (torch.Tensor, ember.Tensor)) else out


def _view_flags(mod, mode: str) -> list[bool]:
    p = mod.nn.Parameter(mod.ones(2, 3))
    with getattr(mod, mode)():
        views = [p[0], p.view(-1), p.t(), p.flatten()[:2], p.unbind(0)[1], p.expand(2, 2, 3),
                 p.detach()[0], p.data[0], p.clone(), p.reshape(6), p.T.contiguous()]
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
    return [_outcome(lambda _: ops[op](t), mod) for t in (v, w)]


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
