"""PyTorch behaviours the set-R programs (CenterNet, DeepLabV3/PSPNet, growing NCA,
SegFormer, ResNeXt-SE, stacked hourglass, prototypical networks, Deep SVDD) needed, or
that probing around them showed ember getting wrong, checked against torch itself."""

from __future__ import annotations

import types

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _error(fn, mod):
    """(type name, message) of what fn(mod) raises; None when it returns."""
    try:
        fn(mod)
    except Exception as err:  # noqa: BLE001 - any error, compared with PyTorch's
        return type(err).__name__, str(err)
    return None


def _same_error(fn, kind: type[Exception] = RuntimeError) -> None:
    want, got = _error(fn, torch), _error(fn, ember)
    assert want is not None and want[0] == kind.__name__
    assert got is not None and got[1] == want[1], (got, want)
    with pytest.raises(kind):
        fn(ember)


def test_nn_modules_has_pytorchs_submodules() -> None:
    """`nn.modules.batchnorm._BatchNorm` (torchvision's set_weight_decay), and every other
    submodule PyTorch's nn.modules holds, reachable as attributes without an import."""
    def submodules(mod):
        return {k for k, v in vars(mod.nn.modules).items()
                if isinstance(v, types.ModuleType) and not k.startswith("_")}

    assert submodules(torch) - {"linear_cross_entropy_options"} <= submodules(ember)
    m = ember.nn.modules
    assert m.batchnorm._BatchNorm is ember.nn.BatchNorm2d.__mro__[1]
    assert isinstance(ember.nn.InstanceNorm2d(3), m.instancenorm._InstanceNorm)
    assert m.upsampling.Upsample is ember.nn.Upsample
    assert m.pixelshuffle.PixelShuffle is ember.nn.PixelShuffle
    assert m.container.Sequential is ember.nn.Sequential
    assert sorted(m.upsampling.__all__) == sorted(torch.nn.modules.upsampling.__all__)
    assert sorted(m.instancenorm.__all__) == sorted(torch.nn.modules.instancenorm.__all__)


def _conv(lib_fn, x, w, **kw):
    return lambda m: getattr(m.nn.functional, lib_fn)(m.randn(*x), m.randn(*w), **kw)


@pytest.mark.parametrize("fn", [
    _conv("conv2d", (1, 16, 3, 3), (0, 16, 1, 1)),  # ResNeXt's width rounded to 0
    _conv("conv2d", (1, 6, 3, 3), (2, 2, 1, 1), groups=3),
    _conv("conv2d", (1, 6, 3, 3), (4, 2, 1, 1), groups=3),
    _conv("conv2d", (1, 5, 3, 3), (4, 2, 1, 1), groups=3),
    _conv("conv1d", (1, 6, 3), (4, 2, 1), groups=3),
    _conv("conv2d", (6, 3, 3), (4, 2, 1, 1), groups=3),
    _conv("conv2d", (1, 5, 3, 3), (4, 2, 1, 1), groups=0),
    _conv("conv2d", (1, 4, 5, 5), (4, 4, 3, 3), padding=-1),
    _conv("conv2d", (1, 4, 5, 5), (4, 4, 3, 3), stride=0),
    _conv("conv2d", (1, 4, 5, 5), (4, 4, 3, 3), dilation=0),
    _conv("conv2d", (1, 5, 3, 3), (4, 3, 1, 1), groups=2),
    _conv("conv_transpose2d", (1, 4, 3, 3), (4, 2, 1, 1), groups=3),
    _conv("conv_transpose2d", (1, 2, 3, 3), (2, 2, 1, 1), groups=3),
    _conv("conv_transpose2d", (1, 0, 3, 3), (0, 2, 1, 1)),
    _conv("conv_transpose2d", (1, 5, 3, 3), (6, 2, 1, 1), groups=3),
    _conv("conv_transpose2d", (1, 5, 3, 3), (6, 2, 1, 1), groups=0),
    _conv("conv_transpose2d", (1, 4, 5, 5), (4, 4, 3, 3), padding=-1),
    _conv("conv_transpose2d", (1, 4, 5, 5), (4, 4, 3, 3), stride=0),
    _conv("conv_transpose2d", (1, 4, 5, 5), (4, 4, 3, 3), output_padding=-1),
    _conv("conv_transpose2d", (1, 4, 5, 5, 5), (4, 4, 3, 3)),
    _conv("conv_transpose1d", (1, 4, 5, 5), (4, 4, 3)),
    _conv("conv_transpose2d", (1, 4, 5, 5), (4, 4, 3, 3), output_padding=2, stride=2),
    _conv("conv_transpose1d", (1, 4, 5), (4, 4, 3), output_padding=2, stride=2),
    _conv("conv_transpose3d", (1, 4, 3, 3, 3), (4, 4, 1, 1, 1), output_padding=(1, 2, 1),
          stride=2),
])
def test_convolution_argument_errors_as_torch(fn) -> None:
    """Convolutions refuse bad groups, paddings, strides and ranks with PyTorch's messages
    and in its order (the groups of the weight before the input's channels)."""
    _same_error(fn)


def test_convolution_groups_divide_the_weight_before_the_input_channels() -> None:
    """A ResNeXt block whose width rounds to zero channels fails in its first conv, as in
    PyTorch, not later with an empty tensor."""
    conv = ember.nn.Conv2d(16, 0, 1)
    with pytest.raises(RuntimeError, match=r"expected weight to be at least 1 at dimension 0"):
        conv(ember.randn(1, 16, 3, 3))


@pytest.mark.parametrize("fn", [
    lambda m: m.nn.functional.cross_entropy(m.randn(2, 3, 4, 4), m.zeros(2, 4, 5).long()),
    lambda m: m.nn.functional.nll_loss(m.randn(2, 3, 4, 4), m.zeros(2, 4, 5).long()),
    lambda m: m.nn.functional.cross_entropy(m.randn(2, 3, 4, 4), m.zeros(2, 4).long()),
    lambda m: m.nn.functional.cross_entropy(m.randn(2, 3, 4, 4), m.zeros(2, 4, 4, 1).long()),
    lambda m: m.nn.functional.nll_loss(m.randn(2, 3, 4), m.zeros(2, 5).long()),
    lambda m: m.nn.functional.nll_loss(m.randn(2, 3, 4, 4, 2), m.zeros(2, 4, 4, 3).long()),
])
def test_spatial_target_shape_errors_as_torch(fn) -> None:
    """A segmentation target of the wrong size: PyTorch's nll_loss2d messages for 4-D
    inputs, its generic one for the other ranks."""
    _same_error(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.randperm(-1),
    lambda m: m.randperm(-3, dtype=m.int32),
    lambda m: m.div(m.tensor([5.0]), 2, rounding_mode="bad"),
    lambda m: m.tensor([5.0]).div_(2, rounding_mode="x"),
    lambda m: m.tensor([5]).div(m.tensor([0]), rounding_mode="floor"),
    lambda m: m.tensor([5]).div(m.tensor([0]), rounding_mode="trunc"),
    lambda m: m.tensor([5]).fmod(0),
    lambda m: m.tensor([5, -5]) // 0,
    lambda m: m.tensor([5]).remainder(m.tensor([0])),
])
def test_creation_and_division_errors_as_torch(fn) -> None:
    """randperm of a negative n, an unknown rounding mode and integer division by zero:
    RuntimeErrors with PyTorch's words (the op that refused is in a note)."""
    _same_error(fn)


def test_integer_division_by_zero_is_also_pythons_error() -> None:
    with pytest.raises(ZeroDivisionError) as err:
        ember.tensor([3]) // ember.tensor([0])
    assert str(err.value) == "ZeroDivisionError"
    assert "floor_divide: integer division by zero" in err.value.__notes__


class _TensorBatches:
    """Prototypical networks' episode sampler: yields index tensors, not lists."""

    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        yield from self.batches

    def __len__(self):
        return len(self.batches)


@pytest.mark.parametrize("subset", [False, True])
def test_batch_sampler_may_yield_index_tensors(subset: bool) -> None:
    """A batch sampler of LongTensors over a TensorDataset (or a Subset of one) loads the
    samples at those indices, as PyTorch's per-sample fetch does."""
    def batches(mod):
        data = mod.utils.data.TensorDataset(mod.arange(20.0).view(10, 2), mod.arange(10))
        if subset:
            data = mod.utils.data.Subset(data, [9, 8, 7, 6, 5, 4, 3, 2])
        sampler = _TensorBatches([mod.tensor([3, 1, 4]), mod.tensor([0, 5])])
        loader = mod.utils.data.DataLoader(data, batch_sampler=sampler)
        return [[t.tolist() for t in batch] for batch in loader]

    assert batches(ember) == batches(torch)


def _layouts(mod):
    """Inputs whose layouts PyTorch's kernels treat apart: channels-last, a transposed
    3-d tensor and a transposed matrix."""
    return [mod.arange(288.0).view(2, 6, 6, 4).permute(0, 3, 1, 2),
            mod.arange(60.0).view(4, 3, 5).transpose(0, 2),
            mod.arange(12.0).view(3, 4).t()]


@pytest.mark.parametrize("fn", [
    lambda m, a: m.nn.functional.pad(a, (1, 1, 1, 1)),
    lambda m, a: m.nn.functional.pad(a, (1, 1)),
    lambda m, a: m.nn.functional.pad(a, (-1, 1)),
    lambda m, a: m.nn.functional.pad(a, (1, 1, 1, 1), mode="reflect"),
    lambda m, a: m.nn.functional.pad(a, (1, 1, 1, 1), mode="replicate"),
    lambda m, a: m.nn.functional.pad(a, (1, 1, 1, 1), mode="circular"),
    lambda m, a: a.flip(-1),
    lambda m, a: m.fliplr(a),
    lambda m, a: m.nn.functional.conv_transpose2d(a, m.ones(a.shape[1], 2, 2, 2)),
    lambda m, a: m.nn.functional.group_norm(a, 1),
    lambda m, a: m.nn.functional.instance_norm(a),
    lambda m, a: m.nn.InstanceNorm2d(a.shape[1], affine=True)(a),
], ids=["pad", "pad1", "crop", "reflect", "replicate", "circular", "flip", "fliplr",
        "conv_transpose2d", "group_norm", "instance_norm", "InstanceNorm2d"])
def test_results_laid_out_as_torch(fn) -> None:
    """A UNet/SegFormer in channels_last: padding, flips, transposed convolutions and group
    norm keep the channels-last format (a flip keeps any permuted order), instance norm
    and the paddings of a transposed tensor are row-major, as PyTorch's kernels write them
    (a later `.view` works or fails as there)."""
    for t_in, e_in in zip(_layouts(torch), _layouts(ember)):
        try:
            want = fn(torch, t_in)
        except (RuntimeError, NotImplementedError, ValueError):
            continue  # (a rank the op refuses)
        got = fn(ember, e_in)
        assert got.stride() == want.stride(), (tuple(t_in.shape), t_in.stride())
        np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want.tolist()),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([True, False]) ** m.tensor([True, True]),
    lambda m: m.tensor([True, False]).remainder(m.tensor([True, True])),
    lambda m: m.floor_divide(m.tensor([True]), m.tensor([True])),
    lambda m: m.div(m.tensor([True]), m.tensor([True]), rounding_mode="floor"),
    lambda m: m.fmod(m.tensor([True]), m.tensor([True])),
    lambda m: m.tensor([True]) // True,
], ids=["pow", "remainder", "floor_divide", "div_floor", "fmod", "floordiv_scalar"])
def test_bool_arithmetic_refused_in_torchs_words(fn) -> None:
    """Two bool operands: PyTorch's kernel-named NotImplementedError."""
    _same_error(fn, NotImplementedError)


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([1, 2]).var(),
    lambda m: m.tensor([1, 2]).std(0, keepdim=True),
    lambda m: m.var_mean(m.tensor([1, 2])),
    lambda m: m.std_mean(m.tensor([True, False]), 0),
])
def test_variance_of_integers_refused_in_torchs_words(fn) -> None:
    _same_error(fn)


def _grads(mod, fn, *values):
    xs = [mod.tensor(v, requires_grad=True) for v in values]
    out = fn(mod, *xs)
    out.backward(mod.ones_like(out))
    return [x.grad.tolist() for x in xs]


@pytest.mark.parametrize("fn, values", [
    (lambda m, a, b: m.cdist(a, b, p=float("inf")),
     ([[0.0, 1.0], [1.0, 1.0]], [[0.0, 3.0], [2.0, 2.0]])),
    (lambda m, a: m.cdist(a, a, p=float("inf")), ([[0.0, 1.0], [1.0, 2.0], [3.0, 0.0]],)),
    (lambda m, a: a.std(), ([1.0, 1.0],)),
    (lambda m, a: a.std(1), ([[1.0, 1.0], [1.0, 3.0]],)),
    (lambda m, a: m.std_mean(a, 0)[0], ([[2.0, 1.0], [2.0, 3.0]],)),
], ids=["cdist_inf_ties", "cdist_inf_self", "std_constant", "std_rows", "std_mean"])
def test_gradients_at_ties_and_zero_spread_as_torch(fn, values) -> None:
    """cdist's inf-norm gives every tied coordinate the whole gradient; the std of a
    constant row has gradient 0 (PyTorch masks it), not NaN."""
    assert _grads(ember, fn, *values) == _grads(torch, fn, *values)


@pytest.mark.parametrize("fn", [
    lambda m, a: m.sort(a, dim=1).values,
    lambda m, a: m.sort(a, dim=0, stable=True).indices,
    lambda m, a: a.argsort(-1, descending=True),
    lambda m, a: a.msort(),
])
def test_sort_results_keep_the_inputs_order(fn) -> None:
    """Deep SVDD's argsort of scores, on permuted inputs: PyTorch's sort writes values and
    indices into empty_like(input), so a channels-last or transposed order stays."""
    for t_in, e_in in zip(_layouts(torch)[:2], _layouts(ember)[:2]):
        want, got = fn(torch, t_in), fn(ember, e_in)
        assert got.stride() == want.stride()
        assert got.tolist() == want.tolist()
