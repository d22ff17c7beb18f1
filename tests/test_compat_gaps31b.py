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
