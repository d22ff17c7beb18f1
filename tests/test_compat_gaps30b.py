"""Small PyTorch-compatibility gaps (round 30b): each case is checked against torch."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _raised(fn) -> tuple[type, str]:
    """The type and message `fn` raises (it must raise)."""
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def _same_error(ember_fn, torch_fn) -> None:
    ours, theirs = _raised(ember_fn), _raised(torch_fn)
    theirs = theirs[0], theirs[1].replace("torch.", f"{ember.core.dtype.API_NAME}.")
    assert ours[0].__name__ == theirs[0].__name__ and ours[1] == theirs[1], (ours, theirs)


def test_known_device_types_still_parse() -> None:
    for text in ("cpu", "cuda:0", "opencl", "meta", "privateuseone", "cpu:0"):
        assert str(ember.device(text)) == str(torch.device(text))


@pytest.mark.parametrize("call", [
    "kaiser_window(5, beta=8.0)", "kaiser_window(5, 8.0)", "kaiser_window(5, 1)",
    "hamming_window(5, alpha=0.5)", "hamming_window(5, 0.5)", "hamming_window(5, True, beta=0.3)",
])
def test_window_overloads_refused_as_pytorch(call: str) -> None:
    _same_error(lambda: eval(f"ember.{call}"), lambda: eval(f"torch.{call}"))


@pytest.mark.parametrize("call", [
    "kaiser_window(5, True, 8.0)", "kaiser_window(5, False, beta=8.0)", "kaiser_window(5)",
    "kaiser_window(5, periodic=False, beta=8.0)", "hamming_window(5, True, alpha=0.5)",
    "hamming_window(5, True, 0.5, 0.3)", "hamming_window(5, False)", "hann_window(5, False)",
    "blackman_window(5)", "bartlett_window(5, periodic=False)",
])
def test_window_overloads_accepted(call: str) -> None:
    ours, theirs = eval(f"ember.{call}"), eval(f"torch.{call}")
    assert ours.dtype.__repr__().split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.tolist() == pytest.approx(theirs.tolist(), abs=1e-6)


@pytest.mark.parametrize("call", [
    "b ** True", "b ** False", "torch.pow(b, True)", "torch.pow(b, False)", "b.pow(True)",
    "b.clone().pow_(True)", "b.clone().pow_(False)", "b ** 1", "b ** 0",
])
def test_bool_tensor_to_bool_power(call: str) -> None:
    results = []
    for lib in (ember, torch):
        b = lib.tensor([True, False, True])
        r = eval(call, {"torch": lib, "b": b})
        results.append((r.tolist(), str(r.dtype).split(".")[-1]))
    assert results[0] == results[1]


def test_bool_tensor_ipow_bool() -> None:
    b = ember.tensor([True, False])
    b **= False
    assert b.tolist() == [True, True] and b.dtype == ember.bool


def test_foreach_neg_in_place_returns_the_list() -> None:
    results = []
    for lib in (ember, torch):
        xs = [lib.tensor([1.0, -2.0]), lib.tensor([3])]
        out = lib._foreach_neg_(xs)
        assert out is xs and out[0] is xs[0]
        results.append([(x.tolist(), str(x.dtype).split(".")[-1]) for x in xs])
    assert results[0] == results[1]


@pytest.mark.parametrize("name", ["_foreach_neg_", "_foreach_neg"])
def test_foreach_neg_of_bool_is_pytorchs_error(name: str) -> None:
    _same_error(lambda: getattr(ember, name)([ember.tensor([True])]),
                lambda: getattr(torch, name)([torch.tensor([True])]))


@pytest.mark.parametrize("mode", ["replicate", "reflect", "circular"])
@pytest.mark.parametrize("shape", [(0, 4), (2, 0), (1, 0, 4), (0, 2, 4), (0, 4, 4), (2, 0, 4, 4),
                                   (1, 2, 4, 0), (1, 1, 0, 4, 4), (0, 2, 4, 4, 4)])
def test_non_constant_pad_of_empty_dims(mode: str, shape: tuple) -> None:
    pad = (1, 1) * max(len(shape) - 2, 1)
    if len(shape) == 3 and shape[0] == 0 and shape[1:] == (4, 4):
        pad = (1, 1, 1, 1)  # a non-batch 3-D input with no channels
    try:
        expected = tuple(torch.nn.functional.pad(torch.zeros(shape), pad, mode=mode).shape)
    except RuntimeError:
        _same_error(lambda: ember.nn.functional.pad(ember.zeros(shape), pad, mode=mode),
                    lambda: torch.nn.functional.pad(torch.zeros(shape), pad, mode=mode))
        return
    got = ember.nn.functional.pad(ember.zeros(shape), pad, mode=mode)
    assert tuple(got.shape) == expected


_SORT_REFUSED = ["x.sort(0, stable=True)", "torch.sort(x, 0, stable=True)",
                 "x.sort(0, True, stable=True)", "torch.sort(x, 0, True, stable=True)",
                 "x.sort(0, descending=True, stable=True)", "x.sort(0, stable=None)",
                 "torch.argsort(x, 0, stable=True)", "x.argsort(0, stable=True)",
                 "x.argsort(0, True, stable=True)", "torch.argsort(x, 0, True, True)",
                 "torch.sort(x, 0, True, True)", "x.sort(0, True, True)", "x.sort(True)",
                 "torch.sort(x, True)", "x.argsort(True)", "torch.argsort(x, False)"]
_SORT_ACCEPTED = ["x.sort(stable=True)", "torch.sort(x, stable=True, dim=0)",
                  "torch.sort(x, stable=True, descending=True)", "torch.sort(x, stable=None)",
                  "x.sort(dim=0, stable=False)", "x.sort(1, True)",
                  "torch.argsort(x, stable=True, dim=0)", "x.argsort(1, True)"]


@pytest.mark.parametrize("call", _SORT_REFUSED)
def test_sort_overloads_refused_as_pytorch(call: str) -> None:
    _same_error(lambda: eval(call, {"torch": ember, "x": ember.tensor([[3, 1, 2], [1, 1, 0]])}),
                lambda: eval(call, {"torch": torch, "x": torch.tensor([[3, 1, 2], [1, 1, 0]])}))


@pytest.mark.parametrize("call", _SORT_ACCEPTED)
def test_sort_overloads_accepted(call: str) -> None:
    ours = eval(call, {"torch": ember, "x": ember.tensor([[3, 1, 2], [1, 1, 0]])})
    theirs = eval(call, {"torch": torch, "x": torch.tensor([[3, 1, 2], [1, 1, 0]])})
    if isinstance(theirs, torch.Tensor):
        assert ours.tolist() == theirs.tolist()
    else:
        assert [t.tolist() for t in ours] == [t.tolist() for t in theirs]
