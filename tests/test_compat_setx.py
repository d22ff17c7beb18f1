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
