"""Round 31b of small PyTorch-compatibility gaps, each checked against torch."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


# -- 1. keepdim (and topk's flags) given an int where PyTorch wants a bool ---------------

_BOOL_CALLS = {
    "sum": lambda m, x: x.sum(0, 1),
    "mean": lambda m, x: x.mean(0, 1),
    "amax": lambda m, x: x.amax(0, 1),
    "amin": lambda m, x: x.amin(0, 1),
    "prod": lambda m, x: x.prod(0, 1),
    "logsumexp": lambda m, x: x.logsumexp(0, 1.0),
    "argmax": lambda m, x: x.argmax(0, 1),
    "argmin": lambda m, x: x.argmin(None, 1),
    "max": lambda m, x: x.max(0, 1),
    "min": lambda m, x: x.min(0, None),
    "nansum": lambda m, x: x.nansum(0, 1),
    "nanmean": lambda m, x: x.nanmean(0, 1),
    "norm": lambda m, x: x.norm(2, 0, 1),
    "kthvalue": lambda m, x: x.kthvalue(1, 0, 1),
    "median": lambda m, x: x.median(0, 1),
    "nanmedian": lambda m, x: x.nanmedian(0, 1),
    "mode": lambda m, x: x.mode(0, 1),
    "topk_largest": lambda m, x: x.topk(2, 0, 1),
    "topk_sorted": lambda m, x: x.topk(2, 0, True, 1),
}


@pytest.mark.parametrize("case", sorted(_BOOL_CALLS))
def test_bool_argument_refuses_int(case):
    call = _BOOL_CALLS[case]
    data = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    want = _raised(lambda: call(torch, torch.tensor(data)))
    assert want[0] is TypeError
    assert _raised(lambda: call(ember, ember.tensor(data))) == want


def test_bool_argument_keeps_bools():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.sum(0, True).shape == (1, 2)
    assert x.max(1, False).values.tolist() == [2.0, 4.0]


# -- 2. in-place writes into the views an op returned several of --------------------------

_MULTI_VIEW_WRITES = {
    "split": lambda m, y: y.split(2)[0].add_(1),
    "split_sizes": lambda m, y: y.split([1, 3])[1].mul_(2),
    "split_with_sizes": lambda m, y: y.split_with_sizes([1, 3])[0].add_(1),
    "torch_split": lambda m, y: m.split(y, 2, 1)[0].zero_(),
    "chunk": lambda m, y: y.chunk(2)[1].add_(1),
    "unbind": lambda m, y: y.unbind(0)[2].add_(1),
    "view_of_piece": lambda m, y: y.split(2)[0][0].add_(1),
    "reshaped_piece": lambda m, y: y.split(2)[1].view(-1).add_(1),
    "copy_": lambda m, y: y.split(2)[0].copy_(m.ones(2, 3)),
}


@pytest.mark.parametrize("case", sorted(_MULTI_VIEW_WRITES))
def test_inplace_into_multi_output_view(case):
    write = _MULTI_VIEW_WRITES[case]
    got = [_raised(lambda m=m: write(m, m.ones(4, 3, requires_grad=True) * 1))
           for m in (torch, ember)]
    assert got[0][0] is RuntimeError
    assert got[1] == got[0]


def test_inplace_into_multi_output_view_of_leaf():
    w = ember.ones(4, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^Output 0 of Split is a view"):
        w.split(2)[0].add_(1)


def test_multi_output_views_writable_without_grad():
    w = ember.ones(4, 3, requires_grad=True)
    y = w * 1
    with ember.no_grad():
        y.split(2)[1].add_(1)
    y.detach().chunk(2)[0].mul_(3)
    y.unsafe_split(2)[0].add_(1)
    assert y.tolist() == [[4.0] * 3] * 2 + [[2.0] * 3] * 2
    assert w.split(2)[0].grad_fn.name() == "SplitBackward0"


# -- 3. div with a rounding mode: one DivBackward2 node, a zero gradient ---------------------

@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize("by_tensor", [False, True])
def test_rounded_div_node_and_gradient(mode, by_tensor):
    got = []
    for m in (torch, ember):
        x = m.tensor([1.5, -2.5, 3.0], requires_grad=True)
        o = m.tensor([[2.0], [-4.0]], requires_grad=True) if by_tensor else 2
        y = x.div(o, rounding_mode=mode)
        y.sum().backward(retain_graph=True)
        y.sum().backward()  # (nothing saved to free)
        grads = (x.grad.tolist(), o.grad.tolist() if by_tensor else None)
        got.append((y.grad_fn.name(), y.tolist(), grads,
                    [f is None for f, _ in y.grad_fn.next_functions]))
    assert got[1] == got[0]


# -- 4. soft_margin_loss: one SoftMarginLossBackward0 node ---------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_soft_margin_loss_node(reduction):
    got = []
    for m in (torch, ember):
        x = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = m.nn.functional.soft_margin_loss(x, m.tensor([1.0, -1.0, 1.0]), reduction=reduction)
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        got.append((y.grad_fn.name(), [type(f).__name__ for f, _ in y.grad_fn.next_functions],
                    [*y.reshape(-1).tolist(), *g.tolist(), *gg.tolist()]))
    assert got[1][:2] == got[0][:2]
    assert got[1][2] == pytest.approx(got[0][2])


def test_soft_margin_loss_refuses_target_requiring_grad():
    want = _raised(lambda: torch.nn.functional.soft_margin_loss(
        torch.zeros(2), torch.ones(2, requires_grad=True)))
    assert want[0] is RuntimeError
    assert _raised(lambda: ember.nn.functional.soft_margin_loss(
        ember.zeros(2), ember.ones(2, requires_grad=True))) == want
