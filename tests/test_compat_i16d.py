"""Issue 16 slice: multinomial, the legacy tensor types, saving NumPy arrays, and
ember.hub / ember.utils.model_zoo — each against PyTorch as the oracle."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _chi_square_p(counts: np.ndarray, probs: np.ndarray) -> float:
    from math import erfc, sqrt
    expected = probs / probs.sum() * counts.sum()
    keep = expected > 0
    assert counts[~keep].sum() == 0, "a zero-weight category was drawn"
    stat = float((((counts - expected) ** 2)[keep] / expected[keep]).sum())
    dof = int(keep.sum()) - 1
    if dof == 0:  # one possible category, and nothing else was drawn
        return 1.0
    # Wilson–Hilferty: the chi-square tail as a normal tail
    z = ((stat / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / sqrt(2 / (9 * dof))
    return 0.5 * erfc(z / sqrt(2))


# -- multinomial ----------------------------------------------------------------------


def test_multinomial_with_replacement_follows_the_weights() -> None:
    ember.manual_seed(0)
    weights = np.array([1.0, 0.0, 3.0, 2.0, 4.0])
    draws = ember.multinomial(ember.tensor(weights), 20000, replacement=True)
    assert draws.dtype is ember.int64 and tuple(draws.shape) == (20000,)
    assert _chi_square_p(np.bincount(draws.numpy(), minlength=5), weights) > 1e-3


def test_multinomial_rows_draw_independently() -> None:
    ember.manual_seed(1)
    weights = np.array([[0.2, 0.8, 0.0], [0.0, 0.0, 5.0], [1.0, 1.0, 1.0]])
    draws = ember.tensor(weights).multinomial(6000, True).numpy()
    assert draws.shape == (3, 6000) and draws.dtype == np.int64
    for row, w in zip(draws, weights):
        assert _chi_square_p(np.bincount(row, minlength=3), w) > 1e-3


def test_multinomial_without_replacement_never_repeats() -> None:
    ember.manual_seed(2)
    draws = ember.multinomial(ember.rand(50, 7) + 0.01, 7).numpy()
    assert (np.sort(draws, 1) == np.arange(7)).all()
    # zero weights come last, as in torch: [1, 0, 0] draws 0 first
    assert ember.multinomial(ember.tensor([1.0, 0.0, 0.0]), 2)[0].item() == 0


def test_multinomial_first_draw_without_replacement_follows_the_weights() -> None:
    ember.manual_seed(3)
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    first = ember.multinomial(ember.tensor(weights).expand(8000, 4), 2)[:, 0].numpy()
    assert _chi_square_p(np.bincount(first, minlength=4), weights) > 1e-3
    # the second draw of [1, 3] is always the other one
    both = ember.multinomial(ember.tensor([1.0, 3.0]).expand(100, 2), 2).numpy()
    assert (both.sum(1) == 1).all()


def test_multinomial_is_reproducible_with_a_generator() -> None:
    a = ember.multinomial(ember.ones(10), 5, generator=ember.Generator().manual_seed(7))
    b = ember.multinomial(ember.ones(10), 5, generator=ember.Generator().manual_seed(7))
    assert a.tolist() == b.tolist()


def test_multinomial_empty_rows_and_half() -> None:
    e = ember.multinomial(ember.ones(0, 3), 2)
    assert tuple(e.shape) == (0, 2) and e.dtype is ember.int64
    h = ember.multinomial(ember.tensor([0.0, 1.0], dtype=ember.float16), 3, True)
    assert h.tolist() == [1, 1, 1]


@pytest.mark.parametrize("make", [
    lambda lib: lib.multinomial(lib.tensor([-1.0, 2.0]), 1),
    lambda lib: lib.multinomial(lib.tensor([float("inf"), 2.0]), 1),
    lambda lib: lib.multinomial(lib.tensor([float("nan"), 2.0]), 1),
    lambda lib: lib.multinomial(lib.tensor([[1.0, 2.0], [0.0, 0.0]]), 1),
    lambda lib: lib.multinomial(lib.tensor([1.0, 2.0]), 3),
    lambda lib: lib.multinomial(lib.zeros(1, 1, 2), 1),
    lambda lib: lib.multinomial(lib.tensor([1.0, 2.0]), 0, True),
    lambda lib: lib.multinomial(lib.tensor([1, 2]), 1),
], ids=["negative", "inf", "nan", "zero-sum", "too-many", "3-d", "zero-samples", "int"])
def test_multinomial_errors_match_torch(make) -> None:
    with pytest.raises(RuntimeError) as expected:
        make(torch)
    with pytest.raises(RuntimeError) as got:
        make(ember)
    assert str(got.value) == str(expected.value)


# -- legacy tensor types --------------------------------------------------------------

LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
          "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_constructors_match_torch(name: str) -> None:
    ours, theirs = getattr(ember, name), getattr(torch, name)
    for args in [(2, 3), (ember.Size([4]),), ()]:
        targs = tuple(torch.Size(a) if isinstance(a, ember.Size) else a for a in args)
        t, e = theirs(*targs), ours(*args)
        assert tuple(e.shape) == tuple(t.shape) and str(e.dtype)[6:] == str(t.dtype)[6:]
    data = [[1, 0], [3, 1]] if name == "BoolTensor" else [[1.7, -0.2], [3.0, 100.0]]
    if name == "ByteTensor":
        data = [[1.7, 0.2], [3.0, 100.0]]
    e, t = ours(data), theirs(data)
    assert str(e.dtype)[6:] == str(t.dtype)[6:]
    np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())
    assert e.type() == f"ember.{name}" and t.type() == f"torch.{name}"
    assert isinstance(e, ours) and isinstance(e, ember.Tensor) and type(e) is ember.Tensor
    other = "LongTensor" if name != "LongTensor" else "FloatTensor"
    assert not isinstance(e, getattr(ember, other)) and not isinstance(1, ours)
    assert ours(e) is e  # a tensor of the type is returned as is, as in torch


def test_legacy_types_convert_and_reject_bad_arguments() -> None:
    x = ember.tensor([1.5, -2.5])
    assert x.type(ember.LongTensor).tolist() == torch.tensor([1.5, -2.5]).type(
        torch.LongTensor).tolist()
    assert repr(ember.FloatTensor) == "<class 'ember.FloatTensor'>"
    for args in [(2.5,), (True,)]:
        with pytest.raises(TypeError) as expected:
            torch.FloatTensor(*args)
        with pytest.raises(TypeError) as got:
            ember.FloatTensor(*args)
        assert str(got.value) == str(expected.value)
    with pytest.raises(TypeError) as expected:  # (PyTorch's words: both TensorOptions)
        torch.FloatTensor(torch.zeros(2, dtype=torch.int64))
    with pytest.raises(TypeError) as got:
        ember.FloatTensor(ember.zeros(2, dtype=ember.int64))
    assert str(got.value) == str(expected.value)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu "
                       "but device type: meta was passed"):
        ember.FloatTensor(2, device="meta")
    with pytest.raises(TypeError) as expected:  # (PyTorch's words)
        torch.FloatTensor(2, "a")
    with pytest.raises(TypeError) as got:
        ember.FloatTensor(2, "a")
    assert str(got.value) == str(expected.value)


# -- saving NumPy arrays --------------------------------------------------------------


def test_numpy_arrays_and_scalars_are_pickled_as_torch_save_pickles_them(tmp_path) -> None:
    obj = {"a": np.arange(6.0).reshape(2, 3).T, "b": np.float32(2.5), "c": np.int64(-3),
           "d": np.array([1, 2], np.uint8), "e": np.bool_(True), "u": np.zeros(2, np.uint16),
           "t": ember.ones(2)}
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    ember.save(obj, tmp_path / "ours" / "np.pt")
    torch.save(obj | {"t": torch.ones(2)}, tmp_path / "theirs" / "np.pt")
    ours_bytes = (tmp_path / "ours" / "np.pt").read_bytes()
    assert ours_bytes == (tmp_path / "theirs" / "np.pt").read_bytes()
    with pytest.raises(pickle.UnpicklingError, match=r"(?s)Weights only load failed.*GLOBAL "
                                                     r"numpy\._core\.multiarray\._reconstruct"):
        ember.load(tmp_path / "ours" / "np.pt")  # as torch.load refuses NumPy by default
    ours = ember.load(tmp_path / "ours" / "np.pt", weights_only=False)
    theirs = torch.load(tmp_path / "ours" / "np.pt", weights_only=False)
    for key in "abcdeu":
        assert type(ours[key]) is type(theirs[key]), key
        np.testing.assert_array_equal(ours[key], theirs[key])
        assert np.asarray(ours[key]).dtype == np.asarray(theirs[key]).dtype
    ours["a"][0, 0] = 7.0  # writable, as an unpickled array
    assert isinstance(ours["t"], ember.Tensor) and ours["t"].tolist() == [1.0, 1.0]


# -- ember.hub / ember.utils.model_zoo ------------------------------------------------


def _published(tmp_path, name: str = "weights.ckpt"):
    src = tmp_path / "server" / name
    src.parent.mkdir()
    ember.save({"fc.weight": ember.arange(6.0).reshape(2, 3), "fc.bias": ember.zeros(2)}, src)
    return src


def test_load_state_dict_from_url_downloads_once_then_uses_the_cache(tmp_path,
                                                                     capsys) -> None:
    import ember.utils.model_zoo
    src = _published(tmp_path)
    cache = tmp_path / "cache"
    sd = ember.hub.load_state_dict_from_url(src.as_uri(), model_dir=str(cache))
    assert sd["fc.weight"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert (cache / "weights.ckpt").read_bytes() == src.read_bytes()
    assert "Downloading" in capsys.readouterr().err
    src.unlink()  # from now on only the cached copy can answer
    again = ember.utils.model_zoo.load_url(src.as_uri(), model_dir=str(cache),
                                           progress=False, file_name=None)
    assert again["fc.bias"].tolist() == [0.0, 0.0] and capsys.readouterr().err == ""
    assert ember.utils.model_zoo.load_url is ember.hub.load_state_dict_from_url


def test_load_state_dict_from_url_defaults_to_the_hub_cache(tmp_path, monkeypatch) -> None:
    src = _published(tmp_path)
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "home"))
    assert ember.hub.get_dir() == str(tmp_path / "home" / "hub")
    sd = ember.hub.load_state_dict_from_url(src.as_uri(), progress=False, file_name="w.ckpt",
                                            map_location="cpu")
    assert (tmp_path / "home" / "hub" / "checkpoints" / "w.ckpt").exists()
    assert sorted(sd) == ["fc.bias", "fc.weight"]


def test_check_hash_verifies_the_sha256_prefix(tmp_path) -> None:
    import hashlib
    digest = hashlib.sha256(_published(tmp_path).read_bytes()).hexdigest()
    good = tmp_path / "server" / f"net-{digest[:8]}.ckpt"
    (tmp_path / "server" / "weights.ckpt").rename(good)
    sd = ember.hub.load_state_dict_from_url(good.as_uri(), model_dir=str(tmp_path / "c"),
                                            check_hash=True, progress=False)
    assert "fc.weight" in sd
    bad = tmp_path / "server" / "net-0000beef.ckpt"
    good.rename(bad)
    with pytest.raises(RuntimeError, match=f'invalid hash value \\(expected "0000beef", got '
                       f'"{digest}"\\)'):
        ember.hub.load_state_dict_from_url(bad.as_uri(), model_dir=str(tmp_path / "c"),
                                           check_hash=True, progress=False)
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [good.name]  # no partial


def test_hub_signatures_match_torch() -> None:
    import inspect
    for name in ("load_state_dict_from_url", "download_url_to_file"):
        ours = inspect.signature(getattr(ember.hub, name)).parameters
        theirs = inspect.signature(getattr(torch.hub, name)).parameters
        assert [(p.name, p.default) for p in ours.values()] == \
            [(p.name, p.default) for p in theirs.values()]
