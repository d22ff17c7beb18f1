"""PyTorch behaviours the set-T31 programs (ShuffleNet/GhostNet, Inception-v3, HiFi-GAN,
PatchTST/DLinear, Temporal Fusion Transformer, an SSD box pipeline, Tacotron2, SchNet)
needed, checked against torch itself."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _grad_of(mod, fn, x: np.ndarray, upstream=None) -> np.ndarray:
    t = mod.tensor(x, requires_grad=True)
    out = fn(mod, t)
    out.backward(mod.ones_like(out) if upstream is None else upstream(mod, out))
    return np.asarray(t.grad.tolist())


@pytest.mark.parametrize("shape", [(20, 64, 8, 8), (2, 3, 9, 9)])
def test_overlapping_max_pool_backward_with_expanded_gradient(shape) -> None:
    """Inception's `F.max_pool2d(x, kernel_size=3, stride=2)` then `.sum().backward()`:
    the gradient arrives as an expanded view, which the compiled backward declines; the
    fallback must not assume tiling windows."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)

    def fn(m, t):
        return m.nn.functional.max_pool2d(t, kernel_size=3, stride=2).sum()

    np.testing.assert_array_equal(_grad_of(ember, fn, x), _grad_of(torch, fn, x))


_FACTORIES = {
    "arange": lambda m, **k: m.arange(0, 6, **k), "zeros": lambda m, **k: m.zeros(2, 3, **k),
    "ones": lambda m, **k: m.ones(2, 3, **k), "full": lambda m, **k: m.full((2, 3), 7, **k),
    "linspace": lambda m, **k: m.linspace(0, 1, 6, **k),
    "logspace": lambda m, **k: m.logspace(0, 1, 6, **k), "eye": lambda m, **k: m.eye(2, 3, **k),
    "randint": lambda m, **k: m.randint(0, 4, (2, 3), **k),
    "randperm": lambda m, **k: m.randperm(6, **k), "rand": lambda m, **k: m.rand(2, 3, **k),
    "randn": lambda m, **k: m.randn(2, 3, **k),
}


@pytest.mark.parametrize("name", sorted(_FACTORIES))
@pytest.mark.parametrize("out_dtype", ["int64", "float64"])
def test_factory_out_takes_its_dtype_and_shape(name: str, out_dtype: str) -> None:
    """`torch.arange(0, max_len, out=torch.LongTensor(max_len))` (Tacotron 2): a factory's
    `out=` gives the values its dtype, is resized silently and returned."""
    fn = _FACTORIES[name]
    got = []
    for m in (torch, ember):
        m.manual_seed(0)
        out = m.empty(0 if name == "arange" else 4, dtype=getattr(m, out_dtype))
        try:
            r = fn(m, out=out)
        except NotImplementedError as err:  # rand/randn into an integer tensor
            got.append(str(err))
            continue
        assert r is out
        got.append((str(r.dtype).split(".")[-1], tuple(r.shape), r.tolist()))
    assert got[1] == got[0]


def test_factory_out_errors_and_arange_warning() -> None:
    for m in (torch, ember):
        with pytest.raises(RuntimeError, match=r"^dtype Int does not match dtype of out "
                                               r"parameter \(Float\)$"):
            m.zeros(3, dtype=m.int32, out=m.empty(3))
        with pytest.raises(RuntimeError, match=r"^aten::arange\(\): functions with out=\.\.\. "
                                               "arguments don't support automatic"):
            m.arange(3.0, out=m.empty(3, requires_grad=True))
        with pytest.warns(UserWarning, match=r"The number of elements in the out tensor of "
                          r"shape \[3\] is 3 which does not match the computed number of "
                          r"elements 5\. .* resized to a tensor of shape \(5,\)"):
            r = m.arange(5, out=m.zeros(3))
        assert r.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            assert m.range(0, 2, out=m.empty(3, dtype=m.int64)).tolist() == [0, 1, 2]


def test_legacy_constructor_takes_one_element_integer_tensors_as_sizes() -> None:
    """Tacotron 2's collate: `torch.LongTensor(len(batch), max_input_len)` where
    `max_input_len = input_lengths[0]` is a 0-d tensor."""
    for m in (torch, ember):
        assert tuple(m.LongTensor(2, m.tensor(3)).shape) == (2, 3)
        assert tuple(m.FloatTensor(2, m.tensor([3], dtype=m.int32)).shape) == (2, 3)
        assert tuple(m.zeros(1).new(2, m.tensor(3)).shape) == (2, 3)
        assert tuple(m.FloatTensor(2, True).shape) == (2, 1)
        for bad, name in ((m.tensor(3.0), "Tensor"), (3.0, "float")):
            with pytest.raises(TypeError, match=r"^new\(\): argument 'size' failed to unpack "
                               rf'the object at pos 2 with error "type must be tuple of '
                               rf'ints,but got {name}"$'):
                m.FloatTensor(2, bad)


def test_data_has_its_own_version_counter() -> None:
    """`outputs[0].data.masked_fill_(mask, 0.0)` after the outputs fed a convolution
    (Tacotron 2's parse_output): writes through `.data` are not seen by autograd, while
    writes through `.detach()` are."""
    for m in (torch, ember):
        x = m.arange(6.0, requires_grad=True)
        y = (x * 2).view(2, 3).transpose(0, 1)
        z = (y * y).sum()
        d = y.data
        d.masked_fill_(m.ones(3, 2, dtype=m.bool), 0.0)
        assert (y._version, d._version) == (0, 1)
        z.backward()
        assert x.grad.tolist() == [0.0] * 6
        w = x.sigmoid()
        w.detach().zero_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            w.sum().backward()


def test_old_weight_norm_checkpoint_loads_into_parametrization() -> None:
    """A HiFi-GAN checkpoint saved with `nn.utils.weight_norm` (`weight_g`, `weight_v`)
    loads into a module wrapped by `nn.utils.parametrizations.weight_norm`."""
    for m in (torch, ember):
        m.manual_seed(0)
        old = m.nn.utils.weight_norm(m.nn.Conv1d(2, 3, 3))
        new = m.nn.utils.parametrizations.weight_norm(m.nn.Conv1d(2, 3, 3))
        result = new.load_state_dict(old.state_dict())
        assert not result.missing_keys and not result.unexpected_keys
        assert sorted(new.state_dict()) == ["bias", "parametrizations.weight.original0",
                                            "parametrizations.weight.original1"]
        assert m.equal(new.weight, old.weight)


def test_private_load_state_dict_pre_hook() -> None:
    """`module._register_load_state_dict_pre_hook(hook)` (PyTorch's private form, used by
    libraries for renamed keys): the hook is called without the module, unless
    `with_module=True`."""
    for m in (torch, ember):
        _check_private_pre_hook(m)


def _check_private_pre_hook(m) -> None:
    calls = []
    lin = m.nn.Linear(2, 2)

    def rename(state_dict, prefix, *rest):
        calls.append(len(rest))
        if prefix + "w" in state_dict:
            state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")

    lin._register_load_state_dict_pre_hook(rename)
    lin._register_load_state_dict_pre_hook(
        lambda mod, *a: calls.append(type(mod).__name__), with_module=True)
    lin.load_state_dict({"w": m.ones(2, 2), "bias": m.zeros(2)})
    assert calls == [5, "Linear"] and lin.weight.sum().item() == 4.0


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("periodic", [True, False])
def test_bartlett_window_rounds_as_pytorch(dtype: str, periodic: bool) -> None:
    """The ramp `n * step` with the step in the dtype, reflected as `2 - ramp`: the same
    bits as PyTorch's window (a triangle's rise and fall differ in the last place)."""
    for n in (0, 1, 2, 5, 6, 11):
        want = torch.bartlett_window(n, periodic=periodic, dtype=getattr(torch, dtype))
        got = ember.bartlett_window(n, periodic=periodic, dtype=getattr(ember, dtype))
        assert got.tolist() == want.tolist()


@pytest.mark.parametrize("mode", ["replicate", "reflect", "circular"])
@pytest.mark.parametrize("pad", [(-1, 2), (2, -1), (-2, -1), (1, -1, -1, 1)])
def test_negative_padding_crops_in_every_mode(mode: str, pad: tuple) -> None:
    """`F.pad(x, (-1, 2), mode="replicate")` crops one side and pads the other (reflection
    and replication read the uncropped input; circular padding wraps what remains), with
    the gradient of both."""
    x = np.arange(24, dtype=np.float32).reshape((1, 2, 3, 4) if len(pad) == 4 else (2, 3, 4))

    def fn(m, t):
        return m.nn.functional.pad(t, pad, mode=mode).pow(2)

    want = fn(torch, torch.tensor(x))
    assert fn(ember, ember.tensor(x)).tolist() == want.tolist()
    np.testing.assert_array_equal(_grad_of(ember, fn, x), _grad_of(torch, fn, x))


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "uint8"])
def test_arange_of_an_integer_dtype_with_float_arguments(dtype: str) -> None:
    """`torch.arange(0.5, 3.7, 1.5, dtype=torch.long)`: int64 truncates the bounds and the
    step first; the narrower integer dtypes count from the numbers as given and step from
    the truncated start by the truncated step."""
    cases = [(0, 3, 1.5), (0.5, 3.7, 1.5), (0.7, 3), (2.5,), (-1.5, 2.2, 1.7),
             (3.9, -2.2, -1.3), (0, 1, 0.25)]
    for args in cases:
        outs = []
        for m in (torch, ember):
            try:
                outs.append(m.arange(*args, dtype=getattr(m, dtype)).tolist())
            except ValueError as err:  # int64 with a step truncated to 0
                outs.append(str(err))
        assert outs[1] == outs[0], args


def test_sizes_given_as_one_element_tensors() -> None:
    """`torch.Tensor(2, lengths[0])` and `x.split(n)` with `n` a 0-d tensor, as old data
    pipelines pass a length straight from a tensor."""
    for m in (torch, ember):
        assert tuple(m.Tensor(2, m.tensor(3)).shape) == (2, 3)
        parts = m.arange(4.0).split(m.tensor(3))
        assert [p.tolist() for p in parts] == [[0.0, 1.0, 2.0], [3.0]]
