"""`ember.nn.init` (gains, bounds and the statistics of every scheme, generators) and
`ember.nn.utils` (gradient clipping, parameter/vector conversion)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import init
from ember.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def values(t: ember.Tensor) -> np.ndarray:
    return t.detach().numpy().astype(np.float64)


# -- gains and fans -------------------------------------------------------------------


@pytest.mark.parametrize("nonlinearity,param", [
    ("linear", None), ("conv2d", None), ("conv_transpose3d", None), ("sigmoid", None),
    ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
    ("leaky_relu", 1), ("selu", None),
])
def test_calculate_gain_matches_torch(torch, nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == \
        torch.nn.init.calculate_gain(nonlinearity, param)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity swish"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


def test_fan_errors():
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor "
                                         "with fewer than 2 dimensions"):
        init.xavier_uniform_(ember.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_normal_(ember.empty(3, 3), mode="fan_avg")


# -- distributions --------------------------------------------------------------------

SHAPE = (256, 128, 3)  # 98k samples: the std is estimated to ~0.5 %
FAN_IN, FAN_OUT = 128 * 3, 256 * 3


def check_uniform(t: ember.Tensor, bound: float) -> None:
    v = values(t)
    assert np.abs(v).max() <= bound * (1 + 1e-6)
    assert np.abs(v).max() > 0.99 * bound  # the whole interval is used
    assert abs(v.mean()) < 0.01 * bound
    assert v.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)


def check_normal(t: ember.Tensor, std: float, mean: float = 0.0) -> None:
    v = values(t)
    assert v.mean() == pytest.approx(mean, abs=0.01 * std)
    assert v.std() == pytest.approx(std, rel=0.02)


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(1234)


def test_uniform_and_normal():
    check_uniform(init.uniform_(ember.empty(SHAPE), -0.3, 0.3), 0.3)
    v = values(init.uniform_(ember.empty(1000), 2.0, 5.0))
    assert v.min() >= 2.0 and v.max() < 5.0
    check_normal(init.normal_(ember.empty(SHAPE), 1.5, 0.2), 0.2, 1.5)


def test_constant_ones_zeros_eye_dirac(torch):
    t = ember.empty(2, 3)
    assert init.constant_(t, 0.5) is t and t.tolist() == [[0.5] * 3] * 2
    assert init.ones_(ember.empty(2)).tolist() == [1.0, 1.0]
    assert init.zeros_(ember.empty(2)).tolist() == [0.0, 0.0]
    assert np.array_equal(values(init.eye_(ember.empty(3, 5))), np.eye(3, 5))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ember.empty(3))
    for shape, groups in [((4, 2, 3), 1), ((6, 2, 3, 3), 2), ((2, 4, 3, 5, 3), 2)]:
        ours = values(init.dirac_(ember.empty(shape), groups))
        theirs = torch.nn.init.dirac_(torch.empty(shape), groups).numpy()
        assert np.array_equal(ours, theirs)


@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_xavier(gain):
    std = gain * math.sqrt(2.0 / (FAN_IN + FAN_OUT))
    check_uniform(init.xavier_uniform_(ember.empty(SHAPE), gain), math.sqrt(3) * std)
    check_normal(init.xavier_normal_(ember.empty(SHAPE), gain), std)


@pytest.mark.parametrize("a,mode,nonlinearity", [
    (0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"),
    (0, "fan_out", "relu"), (0.1, "fan_out", "tanh"),
])
def test_kaiming(a, mode, nonlinearity):
    fan = FAN_IN if mode == "fan_in" else FAN_OUT
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    check_uniform(init.kaiming_uniform_(ember.empty(SHAPE), a, mode, nonlinearity),
                  math.sqrt(3) * std)
    check_normal(init.kaiming_normal_(ember.empty(SHAPE), a, mode, nonlinearity), std)


def test_kaiming_zero_element_tensor_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(ember.empty(0, 3))


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.5, 0.2, 0.0, 1.0),
                                          (0.0, 1.0, 1.5, 3.0)])
def test_trunc_normal(mean, std, a, b):
    v = values(init.trunc_normal_(ember.empty(40000), mean, std, a, b))
    assert v.min() >= a and v.max() <= b
    # the moments of the truncated normal distribution
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2
    z = cdf(beta) - cdf(alpha)
    t_mean = mean + std * (pdf(alpha) - pdf(beta)) / z
    t_var = std ** 2 * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z -
                        ((pdf(alpha) - pdf(beta)) / z) ** 2)
    assert v.mean() == pytest.approx(t_mean, abs=0.02 * std)
    assert v.std() == pytest.approx(math.sqrt(t_var), rel=0.03)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (3, 2, 2)])
def test_orthogonal(shape):
    t = init.orthogonal_(ember.empty(shape), gain=2.0)
    m = values(t).reshape(shape[0], -1)
    rows, cols = m.shape
    gram = m.T @ m if rows >= cols else m @ m.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(ember.empty(3))


def test_orthogonal_is_not_biased_to_a_sign():
    diag = np.array([values(init.orthogonal_(ember.empty(3, 3)))[0, 0] for _ in range(40)])
    assert (diag > 0).any() and (diag < 0).any()


def test_sparse():
    t = init.sparse_(ember.empty(10, 6), sparsity=0.3, std=0.5)
    zeros_per_column = (values(t) == 0).sum(0)
    assert (zeros_per_column == 3).all()


def test_generator_makes_draws_reproducible():
    g1, g2 = ember.Generator().manual_seed(7), ember.Generator().manual_seed(7)
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_,
               init.orthogonal_, init.trunc_normal_):
        a = fn(ember.empty(4, 5), generator=g1)
        b = fn(ember.empty(4, 5), generator=g2)
        assert ember.equal(a, b), fn.__name__
    c = init.normal_(ember.empty(4, 5), generator=ember.Generator().manual_seed(8))
    assert not ember.equal(c, init.normal_(ember.empty(4, 5),
                                           generator=ember.Generator().manual_seed(7)))


def test_init_works_on_parameters_without_recording():
    p = nn.Parameter(ember.empty(3, 4))
    for fn in (init.uniform_, init.kaiming_uniform_, init.orthogonal_, init.zeros_,
               init.trunc_normal_, init.eye_):
        out = fn(p)
        assert out is p and p.is_leaf and p.requires_grad and p.grad_fn is None


def test_deprecated_aliases():
    with pytest.warns(FutureWarning, match="`nn.init.uniform` is now deprecated in favor of "
                                           "`nn.init.uniform_`"):
        init.uniform(ember.empty(2))


# -- gradient clipping ----------------------------------------------------------------


def _grads_pair(torch):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) * 3 for s in ((3, 4), (4,), (2, 2, 2))]
    eps = [nn.Parameter(ember.tensor(a)) for a in arrays]
    tps = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    for e, t, a in zip(eps, tps, arrays):
        e.grad = ember.tensor(a * 0.5)
        t.grad = torch.tensor(a * 0.5)
    return eps, tps


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1000.0])
def test_clip_grad_norm_matches_torch(torch, norm_type, max_norm):
    eps, tps = _grads_pair(torch)
    e_total = clip_grad_norm_(eps, max_norm, norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type)
    assert e_total.item() == pytest.approx(t_total.item(), rel=1e-12)
    for e, t in zip(eps, tps):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_edge_cases():
    p = nn.Parameter(ember.zeros(2))
    assert clip_grad_norm_([p], 1.0).item() == 0.0  # no gradients at all
    p.grad = ember.tensor([3.0, 4.0])
    assert clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)  # a single tensor
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    p.grad = ember.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                                           "`parameters` is non-finite"):
        clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert get_total_norm([ember.tensor([3.0, 4.0]), ember.tensor([12.0])]).item() == 13.0


def test_clip_grad_value(torch):
    eps, tps = _grads_pair(torch)
    clip_grad_value_(eps, 0.7)
    torch.nn.utils.clip_grad_value_(tps, 0.7)
    for e, t in zip(eps, tps):
        np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


def test_clip_grads_with_norm_from_nn_utils_as_torch(torch):
    """The two-step clipping of PyTorch 2.6+ (FSDP and timm write it): the total norm
    from get_total_norm, then nn.utils.clip_grads_with_norm_ scales by it."""
    eps, tps = _grads_pair(torch)
    e_total = ember.nn.utils.get_total_norm([p.grad for p in eps])
    t_total = torch.nn.utils.get_total_norm([p.grad for p in tps])
    assert ember.nn.utils.clip_grads_with_norm_(eps, 0.5, e_total) is None
    torch.nn.utils.clip_grads_with_norm_(tps, 0.5, t_total)
    for e, t in zip(eps, tps):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_parameters_vector_round_trip():
    net = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    params = list(net.parameters())
    vec = parameters_to_vector(params)
    assert vec.shape == (sum(p.numel() for p in params),)
    expected = np.concatenate([values(p).ravel() for p in params])
    np.testing.assert_allclose(values(vec), expected)
    w = net[0].weight
    vector_to_parameters(ember.arange(vec.shape[0], dtype=ember.float32), params)
    assert net[0].weight is w  # the same Parameter object, new values
    assert w.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert net[1].bias.tolist() == [10.0]
    with pytest.raises(TypeError, match="expected ember.Tensor, but got: list"):
        vector_to_parameters([1.0], params)
    with pytest.raises(TypeError, match="expected ember.Tensor, but got: numpy.ndarray"):
        vector_to_parameters(np.ones(2), params)


def test_parameters_to_vector_views_as_torch(torch):
    """PyTorch's `param.view(-1)`: a channels_last weight cannot be flattened by a view,
    and the message is the view's."""
    messages = []
    for mod in (torch, ember):
        conv = mod.nn.Conv2d(3, 4, 3).to(memory_format=mod.channels_last)
        with pytest.raises(RuntimeError) as info:
            mod.nn.utils.parameters_to_vector(conv.parameters())
        messages.append(str(info.value))
    assert messages[1] == messages[0]


# -- variable-length sequences (nn.utils.rnn) -----------------------------------------


def _sequences(torch, lens):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, 3)) for n in lens]
    return ([ember.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(torch, batch_first, side):
    from ember.nn.utils.rnn import pad_sequence

    es, ts = _sequences(torch, [2, 5, 3])
    a = pad_sequence(es, batch_first, -1.0, side)
    b = torch.nn.utils.rnn.pad_sequence(ts, batch_first, -1.0, side)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_unpack_match_torch(torch, batch_first):
    from ember.nn.utils import rnn

    es, ts = _sequences(torch, [2, 5, 3, 1])
    ep = rnn.pack_sequence(es, enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_sequence(ts, enforce_sorted=False)
    np.testing.assert_array_equal(ep.data.detach().numpy(), tp.data.detach().numpy())
    assert ep.batch_sizes.tolist() == tp.batch_sizes.tolist() == [4, 3, 2, 1, 1]
    assert ep.batch_sizes.dtype is ember.int64 and ep.batch_sizes.device.type == "cpu"
    assert ep.sorted_indices.tolist() == tp.sorted_indices.tolist()
    assert ep.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    a, a_len = rnn.pad_packed_sequence(ep, batch_first, padding_value=9.0, total_length=6)
    b, b_len = torch.nn.utils.rnn.pad_packed_sequence(tp, batch_first, padding_value=9.0,
                                                      total_length=6)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert a_len.tolist() == b_len.tolist() == [2, 5, 3, 1]
    g = np.random.default_rng(1).standard_normal(tuple(b.shape))
    a.backward(ember.tensor(g))
    b.backward(torch.from_numpy(g))
    for e, t in zip(es, ts):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy())
    assert [tuple(s.shape) for s in rnn.unpack_sequence(ep)] == [(2, 3), (5, 3), (3, 3),
                                                                 (1, 3)]


def test_pack_padded_sequence_errors():
    from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    x = ember.zeros(4, 3, 2)
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing "
                                           "order when `enforce_sorted` is True"):
        pack_padded_sequence(x, [2, 4, 1])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [4, 2, 0])
    with pytest.raises(RuntimeError, match="Expected `len\\(lengths\\)` to be equal to "
                                           "batch_size, but got 2 \\(batch_size=3\\)"):
        pack_padded_sequence(x, [4, 2])
    packed = pack_padded_sequence(x, ember.tensor([4, 2, 1]))
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of "
                                         "the longest sequence"):
        pad_packed_sequence(packed, total_length=3)
