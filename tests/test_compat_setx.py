"""What the set X programs (3D U-Net, Monodepth2, DeepAR, FT-Transformer with sparsemax)
found ember doing differently from PyTorch: `out=` of the quantiles, the resize warning's
full text."""

import warnings

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402


def _error(fn) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value).split("\n")[0]


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("out_shape", [(2,), (0,), (3,)])
def test_quantile_out(name: str, out_shape: tuple) -> None:
    """`out=` receives the quantiles (resized as PyTorch resizes) and is returned."""
    got = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, float("nan"), 3.0, 4.0, 0.5])
        out = lib.empty(out_shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = getattr(lib, name)(x, lib.tensor([0.2, 0.8]), out=out)
        assert result is out
        got.append(out.tolist())
    assert got[1] == pytest.approx(got[0], nan_ok=True)


def test_quantile_out_wrong_dtype() -> None:
    errors = [_error(lambda lib=lib: lib.quantile(lib.arange(4.0), 0.5,
                                                  out=lib.empty((), dtype=lib.float64)))
              for lib in (torch, ember)]
    assert errors[1] == errors[0]


def test_out_resize_warning_text() -> None:
    """The deprecation warning of a resized non-empty `out=` (its PyTorch text, without the
    C++ "Triggered internally at" note)."""
    texts = []
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.quantile(lib.arange(4.0), lib.tensor([0.2, 0.8]), out=lib.empty(3))
        texts.append(str(caught[0].message).split(" (Triggered internally")[0])
    assert texts[1] == texts[0]


@pytest.mark.parametrize("size", [(4, 5), (9, 7), (12, 20)])
def test_lanczos_interpolate(size: tuple) -> None:
    """mode="lanczos" (PyTorch 2.13: Lanczos-3, antialiased only): values, gradient and
    the node's name."""
    got = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        x = lib.randn(1, 2, 9, 11, requires_grad=True)
        y = lib.nn.functional.interpolate(x, size=size, mode="lanczos", antialias=True)
        (y * y).sum().backward()
        got.append((y.detach().numpy(), x.grad.numpy(), y.grad_fn.name()))
    assert got[1][2] == got[0][2] == "UpsampleLanczos2DAaBackward0"
    for e, t in zip(got[1][:2], got[0][:2]):
        assert e == pytest.approx(t, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("mode,antialias", [("bilinear", True), ("bicubic", True),
                                            ("bilinear", False)])
def test_interpolate_node_names_positional_mode(mode: str, antialias: bool) -> None:
    names = []
    for lib in (torch, ember):
        x = lib.ones(1, 1, 6, 6, requires_grad=True)
        y = lib.nn.functional.interpolate(x, (3, 4), None, mode, None, None, antialias)
        names.append(y.grad_fn.name())
    assert names[1] == names[0]


INTERPOLATE_ERRORS = [
    ((4,), {"size": 4, "mode": "lanczos"}),
    ((4,), {"size": 4, "mode": "lanczos", "antialias": True, "align_corners": True}),
    ((3,), {"size": 4, "mode": "lanczos", "antialias": True}),
    ((3,), {"size": 4, "mode": "lanczos"}),
    ((4,), {"size": 4, "mode": "foo"}),
    ((2,), {"size": 4}),
    ((5,), {"size": 4, "mode": "bilinear"}),
    ((5,), {"size": 4, "mode": "bicubic"}),
    ((4,), {"size": 4, "recompute_scale_factor": True}),
    ((4,), {"mode": "foo"}),
    ((4,), {"size": [1], "align_corners": True}),
    ((4,), {"size": 4, "antialias": True}),
]


@pytest.mark.parametrize("ndim,kwargs", INTERPOLATE_ERRORS)
def test_interpolate_errors_in_pytorch_order(ndim: tuple, kwargs: dict) -> None:
    errors = [_error(lambda lib=lib: lib.nn.functional.interpolate(
        lib.ones(*[2] * ndim[0]), **kwargs)) for lib in (torch, ember)]
    assert errors[1] == errors[0]
