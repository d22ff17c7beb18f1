"""Layers of `ember.nn` against PyTorch: the same module is built in both, torch's
weights are loaded into ember's through `load_state_dict`, and outputs, input gradients,
parameter gradients, buffers and reprs are compared (train and eval mode where they
differ). Behaviour torch cannot be compared on (random masks, init distributions) is
checked against its definition.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def to_ember(t) -> ember.Tensor:
    return ember.tensor(t.detach().numpy())


def compare_module(torch, make, shapes, *, dtype="float64", train=True, int_input=None,
                   rtol=None, atol=None, n_steps=1):
    """Build `make(torch.nn)` and `make(ember.nn)`, give them torch's state, run both on
    the same inputs and compare everything observable."""
    rtol = rtol if rtol is not None else (1e-9 if dtype == "float64" else 1e-5)
    atol = atol if atol is not None else (1e-9 if dtype == "float64" else 1e-5)
    tm, em = make(torch.nn), make(nn)
    if dtype == "float64":
        tm.double()
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    if dtype == "float64":
        em.double()
    tm.train(train)
    em.train(train)
    assert repr(em) == repr(tm)
    rng = np.random.default_rng(0)
    for _ in range(n_steps):
        if int_input is not None:
            t_in, e_in = [torch.from_numpy(int_input)], [ember.tensor(int_input)]
        else:
            arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
            t_in = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
            e_in = [ember.tensor(a).requires_grad_() for a in arrays]
        t_out, e_out = tm(*t_in), em(*e_in)
        if isinstance(t_out, tuple):
            t_out, e_out = t_out[0], e_out[0]
        assert e_out.dtype.name == str(t_out.dtype).replace("torch.", "")
        np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=rtol,
                                   atol=atol)
        grad = rng.standard_normal(tuple(t_out.shape)).astype(dtype)
        t_out.backward(torch.from_numpy(grad))
        e_out.backward(ember.tensor(grad))
        for t, e in zip(t_in, e_in):
            if t.requires_grad:
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=rtol,
                                           atol=atol)
    e_params = dict(em.named_parameters())
    for name, p in tm.named_parameters():
        if p.grad is None:
            assert e_params[name].grad is None, name
            continue
        np.testing.assert_allclose(e_params[name].grad.numpy(), p.grad.numpy(), rtol=rtol,
                                   atol=atol, err_msg=name)
    e_buffers = dict(em.named_buffers())
    for name, b in tm.named_buffers():
        np.testing.assert_allclose(e_buffers[name].numpy(), b.numpy(), rtol=rtol, atol=atol,
                                   err_msg=name)
    return tm, em


# (id, factory over an nn namespace, input shapes)
LAYERS = [
    ("linear", lambda n: n.Linear(3, 4), [(5, 3)]),
    ("linear_nobias_3d", lambda n: n.Linear(3, 4, bias=False), [(2, 5, 3)]),
    ("bilinear", lambda n: n.Bilinear(3, 2, 4), [(5, 3), (5, 2)]),
    ("identity", lambda n: n.Identity(7, unused=True), [(2, 3)]),
    ("flatten", lambda n: n.Flatten(), [(2, 3, 4, 2)]),
    ("flatten_range", lambda n: n.Flatten(0, 2), [(2, 3, 4, 2)]),
    ("unflatten", lambda n: n.Unflatten(1, (2, 3)), [(4, 6, 2)]),
    ("conv1d", lambda n: n.Conv1d(2, 4, 3, padding=1), [(2, 2, 7)]),
    ("conv1d_stride_dil", lambda n: n.Conv1d(2, 4, 3, stride=2, dilation=2, bias=False),
     [(2, 2, 11)]),
    ("conv1d_same_circular", lambda n: n.Conv1d(2, 3, 4, padding="same",
                                                padding_mode="circular"), [(2, 2, 9)]),
    ("conv2d_groups", lambda n: n.Conv2d(4, 6, 3, stride=2, padding=1, groups=2),
     [(2, 4, 7, 7)]),
    ("conv2d_same_reflect", lambda n: n.Conv2d(2, 3, (3, 2), padding="same",
                                               padding_mode="reflect"), [(2, 2, 6, 5)]),
    ("conv2d_replicate_dil", lambda n: n.Conv2d(2, 3, 3, padding=1, dilation=2,
                                                padding_mode="replicate"), [(2, 2, 6, 5)]),
    ("conv2d_valid_unbatched", lambda n: n.Conv2d(2, 3, 2, padding="valid"), [(2, 5, 4)]),
    ("conv_transpose2d", lambda n: n.ConvTranspose2d(4, 2, 3, stride=2, padding=1,
                                                     output_padding=1), [(2, 4, 4, 4)]),
    ("conv_transpose2d_groups", lambda n: n.ConvTranspose2d(4, 6, (2, 3), groups=2,
                                                            dilation=2, bias=False),
     [(1, 4, 3, 5)]),
    ("maxpool1d", lambda n: n.MaxPool1d(3, stride=2, padding=1), [(2, 3, 9)]),
    ("maxpool2d", lambda n: n.MaxPool2d(2), [(2, 3, 6, 6)]),
    ("maxpool2d_ceil", lambda n: n.MaxPool2d(3, stride=2, ceil_mode=True, dilation=1),
     [(1, 2, 8, 7)]),
    ("avgpool1d", lambda n: n.AvgPool1d(2), [(2, 3, 8)]),
    ("avgpool2d_pad", lambda n: n.AvgPool2d(3, stride=2, padding=1,
                                            count_include_pad=False), [(2, 3, 7, 7)]),
    ("avgpool2d_divisor", lambda n: n.AvgPool2d(2, divisor_override=3), [(1, 2, 4, 4)]),
    ("adaptive_avgpool2d", lambda n: n.AdaptiveAvgPool2d((3, 2)), [(2, 3, 7, 5)]),
    ("adaptive_avgpool1d", lambda n: n.AdaptiveAvgPool1d(3), [(2, 3, 7)]),
    ("layernorm", lambda n: n.LayerNorm(5), [(3, 4, 5)]),
    ("layernorm_2d_noaffine", lambda n: n.LayerNorm((4, 5), elementwise_affine=False),
     [(3, 4, 5)]),
    ("layernorm_nobias", lambda n: n.LayerNorm(5, bias=False), [(3, 5)]),
    ("groupnorm", lambda n: n.GroupNorm(2, 4), [(3, 4, 5, 2)]),
    ("groupnorm_3d", lambda n: n.GroupNorm(3, 6, eps=1e-3, affine=False), [(2, 6, 4)]),
    ("rmsnorm", lambda n: n.RMSNorm(5), [(3, 4, 5)]),
    ("instancenorm2d", lambda n: n.InstanceNorm2d(3, affine=True), [(2, 3, 4, 4)]),
    ("instancenorm1d_unbatched", lambda n: n.InstanceNorm1d(3), [(3, 6)]),
    ("prelu_channels", lambda n: n.PReLU(4), [(3, 4, 2)]),
    ("pixel_shuffle", lambda n: n.PixelShuffle(2), [(2, 8, 3, 3)]),
    ("pixel_unshuffle", lambda n: n.PixelUnshuffle(2), [(2, 3, 4, 6)]),
    ("zeropad2d", lambda n: n.ZeroPad2d((1, 2, 0, 1)), [(2, 3, 4)]),
    ("constantpad1d", lambda n: n.ConstantPad1d(2, 3.5), [(2, 3, 4)]),
    ("reflectionpad2d", lambda n: n.ReflectionPad2d(1), [(1, 2, 3, 4)]),
    ("replicationpad1d", lambda n: n.ReplicationPad1d((2, 1)), [(3, 4, 5)]),
    ("circularpad2d", lambda n: n.CircularPad2d((2, 1, 1, 0)), [(3, 4, 5)]),
    ("unfold", lambda n: n.Unfold(2, padding=1, stride=(1, 2)), [(2, 3, 4, 5)]),
    ("fold", lambda n: n.Fold((4, 5), 2), [(2, 12, 12)]),
    ("cosine_similarity", lambda n: n.CosineSimilarity(dim=1), [(3, 4), (3, 4)]),
    ("pairwise_distance", lambda n: n.PairwiseDistance(p=3.0, keepdim=True),
     [(3, 4), (3, 4)]),
]


@pytest.mark.parametrize("make,shapes", [c[1:] for c in LAYERS], ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(torch, make, shapes):
    compare_module(torch, make, shapes)


@pytest.mark.parametrize("make,shapes", [
    (lambda n: n.Linear(8, 6), [(4, 8)]),
    (lambda n: n.Conv2d(3, 4, 3, padding=1), [(2, 3, 6, 6)]),
    (lambda n: n.LayerNorm(8), [(4, 8)]),
    (lambda n: n.BatchNorm2d(3), [(4, 3, 3, 3)]),
], ids=["linear", "conv2d", "layernorm", "batchnorm2d"])
def test_layer_matches_torch_float32(torch, make, shapes):
    compare_module(torch, make, shapes, dtype="float32")


ACTIVATIONS = [
    ("relu", lambda n: n.ReLU()), ("leaky_relu", lambda n: n.LeakyReLU(0.2)),
    ("elu", lambda n: n.ELU(0.7)), ("gelu", lambda n: n.GELU()),
    ("gelu_tanh", lambda n: n.GELU("tanh")), ("silu", lambda n: n.SiLU()),
    ("sigmoid", lambda n: n.Sigmoid()), ("tanh", lambda n: n.Tanh()),
    ("softmax", lambda n: n.Softmax(dim=1)), ("log_softmax", lambda n: n.LogSoftmax(-1)),
    ("softmin", lambda n: n.Softmin(1)), ("softplus", lambda n: n.Softplus()),
    ("softplus_beta", lambda n: n.Softplus(2.0, 1.0)),
    ("hardtanh", lambda n: n.Hardtanh(-0.5, 0.7)), ("relu6", lambda n: n.ReLU6()),
    ("prelu", lambda n: n.PReLU()), ("selu", lambda n: n.SELU()),
    ("celu", lambda n: n.CELU(0.5)), ("mish", lambda n: n.Mish()),
    ("hardswish", lambda n: n.Hardswish()), ("hardsigmoid", lambda n: n.Hardsigmoid()),
    ("logsigmoid", lambda n: n.LogSigmoid()), ("softsign", lambda n: n.Softsign()),
    ("glu", lambda n: n.GLU(1)), ("threshold", lambda n: n.Threshold(0.1, 20.0)),
    ("tanhshrink", lambda n: n.Tanhshrink()), ("softshrink", lambda n: n.Softshrink()),
    ("hardshrink", lambda n: n.Hardshrink(0.3)),
]


@pytest.mark.parametrize("make", [c[1] for c in ACTIVATIONS], ids=[c[0] for c in ACTIVATIONS])
def test_activation_matches_torch(torch, make):
    # torch's hardsigmoid backward uses a float32 1/6 even in float64
    compare_module(torch, make, [(3, 4, 2, 2)], rtol=1e-7, atol=1e-7)


def test_activations_at_extremes_have_finite_gradients(torch):
    values = [-1000.0, -30.0, -3.0, -1.0, 0.0, 1.0, 3.0, 30.0, 1000.0]
    for name in ["elu", "selu", "celu", "softplus", "logsigmoid", "mish", "silu", "gelu",
                 "relu", "leaky_relu", "hardtanh", "hardswish", "sigmoid"]:
        e = ember.tensor(values, dtype=ember.float64, requires_grad=True)
        t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        eo, to = getattr(F, name)(e), getattr(torch.nn.functional, name)(t)
        eo.sum().backward()
        to.sum().backward()
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-7,
                                   atol=1e-7, err_msg=name)
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-7,
                                   err_msg=name)


@pytest.mark.parametrize("name,kwargs", [
    ("relu", {}), ("leaky_relu", {"negative_slope": 0.1}), ("elu", {}), ("hardtanh", {}),
    ("silu", {}), ("threshold", {"threshold": 0.2, "value": -1.0}),
])
def test_inplace_activation_on_non_leaf(torch, name, kwargs):
    x = np.linspace(-2, 2, 8)
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    eh, th = e * 3, t * 3
    eo = getattr(F, name)(eh, **kwargs, inplace=True)
    to = getattr(torch.nn.functional, name)(th, **kwargs, inplace=True)
    assert eo is eh
    (eo * eo).sum().backward()
    (to * to).sum().backward()
    np.testing.assert_allclose(eh.detach().numpy(), th.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_activation_reprs_and_defaults(torch):
    for _, make in ACTIVATIONS + [("relu_inplace", lambda n: n.ReLU(inplace=True)),
                                  ("lrelu_inplace", lambda n: n.LeakyReLU(inplace=True)),
                                  ("softmax_none", lambda n: n.Softmax())]:
        assert repr(make(nn)) == repr(make(torch.nn))


# -- batch norm -----------------------------------------------------------------------


@pytest.mark.parametrize("make,shape", [
    (lambda n: n.BatchNorm1d(3), (6, 3)),
    (lambda n: n.BatchNorm1d(3, momentum=0.3), (4, 3, 5)),
    (lambda n: n.BatchNorm2d(3, momentum=None), (4, 3, 2, 3)),
    (lambda n: n.BatchNorm2d(3, affine=False), (2, 3, 2, 2)),
    (lambda n: n.BatchNorm1d(3, track_running_stats=False), (5, 3)),
    (lambda n: n.BatchNorm1d(3, bias=False), (5, 3)),
], ids=["bn1d", "bn1d_3d_momentum", "bn2d_cumulative", "bn2d_noaffine", "bn1d_untracked",
        "bn1d_nobias"])
def test_batchnorm_train_then_eval_matches_torch(torch, make, shape):
    # several training steps update the running statistics; eval then uses them
    tm, em = compare_module(torch, make, [shape], train=True, n_steps=3)
    tm.eval()
    em.eval()
    x = np.random.default_rng(1).standard_normal(shape)
    np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(),
                               tm(torch.from_numpy(x)).detach().numpy(), rtol=1e-9, atol=1e-9)
    if em.num_batches_tracked is not None:
        assert em.num_batches_tracked.item() == 3


def test_batchnorm_checks():
    with pytest.raises(ValueError, match="expected 4D input \\(got 3D input\\)"):
        nn.BatchNorm2d(3)(ember.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when "
                                         "training, got input size ember.Size\\(\\[1, 3\\]\\)"):
        nn.BatchNorm1d(3)(ember.zeros(1, 3))
    bn = nn.BatchNorm1d(3).eval()  # a single sample is fine in eval mode
    assert bn(ember.ones(1, 3)).shape == (1, 3)


def test_batchnorm_running_stats_formula():
    bn = nn.BatchNorm1d(2, momentum=0.5)
    x = ember.tensor([[1.0, 2.0], [3.0, 6.0]])
    bn(x)
    # running = 0.5 * initial + 0.5 * batch statistic (unbiased variance)
    assert bn.running_mean.tolist() == [1.0, 2.0]
    assert bn.running_var.tolist() == [0.5 * 1 + 0.5 * 2.0, 0.5 * 1 + 0.5 * 8.0]


# -- dropout --------------------------------------------------------------------------


class TestDropout:
    def test_train_statistics_and_scaling(self):
        ember.manual_seed(0)
        x = ember.ones(200, 100)
        out = nn.Dropout(0.3)(x).numpy()
        kept = out != 0
        assert abs(kept.mean() - 0.7) < 0.01
        np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)

    def test_eval_and_edge_probabilities(self):
        x = ember.randn(4, 5)
        assert nn.Dropout(0.5).eval()(x) is x
        assert F.dropout(x, 0.0) is x
        assert F.dropout(x, 1.0).abs().sum().item() == 0.0
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, "
                                             "but got 1.5"):
            nn.Dropout(1.5)
        with pytest.raises(ValueError, match="but got -0.1"):
            F.dropout(x, -0.1)

    def test_gradient_uses_the_same_mask(self):
        ember.manual_seed(1)
        x = ember.ones(50, 20, requires_grad=True)
        out = F.dropout(x, 0.4)
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), out.detach().numpy())

    def test_dropout2d_zeroes_whole_channels(self):
        ember.manual_seed(2)
        out = nn.Dropout2d(0.5)(ember.ones(8, 16, 3, 3)).numpy()
        per_channel = out.reshape(8, 16, 9)
        assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
        assert 0 < (per_channel == 0).all(-1).mean() < 1
        # PyTorch warns (and drops per element) on 2-D input rather than raising
        with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d, which is "
                                             "deprecated"):
            F.dropout2d(ember.ones(2, 2))

    def test_inplace(self):
        ember.manual_seed(3)
        x = ember.ones(10, 10)
        out = nn.Dropout(0.5, inplace=True)(x)
        assert out is x and (x.numpy() == 0).any()


# -- embedding ------------------------------------------------------------------------


class TestEmbedding:
    def test_matches_torch(self, torch):
        idx = np.array([[1, 2, 3], [2, 9, 0]])
        compare_module(torch, lambda n: n.Embedding(10, 3), None, int_input=idx)
        compare_module(torch, lambda n: n.Embedding(10, 3, padding_idx=2), None, int_input=idx)
        compare_module(torch, lambda n: n.Embedding(10, 3, max_norm=1.0), None, int_input=idx)
        compare_module(torch, lambda n: n.Embedding(10, 3, scale_grad_by_freq=True), None,
                       int_input=np.array([[1, 2, 3], [2, 9, 2]]))

    def test_padding_idx_row_is_zero_and_gets_no_gradient(self):
        emb = nn.Embedding(5, 3, padding_idx=-1)
        assert emb.padding_idx == 4
        assert emb.weight[4].tolist() == [0.0, 0.0, 0.0]
        emb(ember.tensor([4, 1, 4])).sum().backward()
        assert emb.weight.grad[4].tolist() == [0.0, 0.0, 0.0]
        assert emb.weight.grad[1].tolist() == [1.0, 1.0, 1.0]

    def test_one_embedding_node_as_torch(self, torch):
        # the Word Embeddings tutorial prints `grad_fn=<EmbeddingBackward0>`: one node whose
        # only edge is the weight's; its gradient (padding, scaling) and double backward
        # are torch's (but for torch's double backward of a scaled gradient, which ignores
        # the scaling)
        idx = [[1, 2, 1], [4, 1, 0]]
        w0 = np.random.RandomState(0).randn(6, 3)
        for kw in ({}, {"padding_idx": 1}, {"scale_grad_by_freq": True},
                   {"padding_idx": -2, "scale_grad_by_freq": True}):
            got = []
            for lib in (torch, ember):
                w = lib.tensor(w0, requires_grad=True)
                y = lib.nn.functional.embedding(lib.tensor(idx), w, **kw)
                (g,) = lib.autograd.grad((y * y).sum(), w, create_graph=True)
                (gg,) = lib.autograd.grad(g.sum(), w)
                got.append((y.grad_fn.name(), len(y.grad_fn.next_functions),
                            type(y.grad_fn.next_functions[0][0]).__name__, tuple(y.shape),
                            g.tolist(), None if kw.get("scale_grad_by_freq") else gg.tolist()))
            assert got[0] == got[1], kw
        assert repr(nn.Embedding(3, 2)(ember.tensor(1))).endswith(
            "grad_fn=<EmbeddingBackward0>)")

    def test_from_pretrained_and_errors(self):
        w = ember.randn(4, 2)
        emb = nn.Embedding.from_pretrained(w)
        assert not emb.weight.requires_grad and emb.weight.shape == (4, 2)
        assert ember.equal(emb(ember.tensor([3])), w[3:4])
        assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad
        with pytest.raises(IndexError, match="index out of range in self"):
            emb(ember.tensor([4]))
        with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
            emb(ember.tensor([1.0]))
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            nn.Embedding(3, 2, padding_idx=3)

    def test_init_is_standard_normal(self):
        ember.manual_seed(0)
        w = nn.Embedding(200, 100).weight.detach().numpy()
        assert abs(w.mean()) < 0.02 and abs(w.std() - 1.0) < 0.02


# -- default initialisation -----------------------------------------------------------


@pytest.mark.parametrize("make,fan_in", [
    (lambda: nn.Linear(300, 200), 300),
    (lambda: nn.Conv2d(12, 200, 5), 12 * 25),
    (lambda: nn.Conv1d(6, 99, 5, groups=3), 2 * 5),
    (lambda: nn.ConvTranspose2d(40, 60, 3), 60 * 9),
], ids=["linear", "conv2d", "conv1d_groups", "conv_transpose2d"])
def test_default_init_is_kaiming_uniform_sqrt5(make, fan_in):
    ember.manual_seed(0)
    layer = make()
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)) == U(-1/sqrt(fan_in), ...)
    w = layer.weight.detach().numpy()
    assert np.abs(w).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound
    b = layer.bias.detach().numpy()
    assert np.abs(b).max() <= bound and b.std() > 0


def test_norm_layer_init():
    bn, ln, gn = nn.BatchNorm2d(3), nn.LayerNorm(4), nn.GroupNorm(2, 4)
    for m in (bn, ln, gn):
        assert m.weight.tolist() == [1.0] * m.weight.shape[0]
        assert m.bias.tolist() == [0.0] * m.bias.shape[0]
    assert bn.running_var.tolist() == [1.0] * 3
    assert bn.num_batches_tracked.dtype is ember.int64
    assert nn.PReLU(3).weight.tolist() == [0.25] * 3


def test_factory_kwargs():
    lin = nn.Linear(2, 3, dtype=ember.float64)
    assert lin.weight.dtype is ember.float64 and lin.bias.dtype is ember.float64
    assert nn.BatchNorm1d(2, dtype=ember.float64).running_mean.dtype is ember.float64
    assert nn.Conv2d(1, 1, 1, device="cpu").weight.device == ember.device("cpu")


# -- conv specifics -------------------------------------------------------------------


class TestConv:
    def test_constructor_errors(self):
        with pytest.raises(ValueError, match="Invalid padding string 'full'"):
            nn.Conv2d(1, 1, 3, padding="full")
        with pytest.raises(ValueError, match="padding='same' is not supported for strided "
                                             "convolutions"):
            nn.Conv2d(1, 1, 3, stride=2, padding="same")
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            nn.Conv2d(3, 4, 3, groups=2)
        with pytest.raises(ValueError, match="padding_mode must be one of"):
            nn.Conv1d(1, 1, 3, padding_mode="mirror")
        with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for '
                                             "ConvTranspose2d"):
            nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")

    def test_conv_transpose_output_size(self, torch):
        tm = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
        em = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
        em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
        x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
        out = em(ember.tensor(x), output_size=(8, 8))
        expected = tm(torch.from_numpy(x), output_size=(8, 8))
        assert out.shape == (1, 3, 8, 8)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        with pytest.raises(ValueError, match="requested an output size of \\[10, 10\\], but "
                                             "valid sizes range from \\[7, 7\\] to \\[8, 8\\]"):
            em(ember.tensor(x), output_size=[10, 10])


# -- functional extras ----------------------------------------------------------------


@pytest.mark.parametrize("mode,pad,shape", [
    ("constant", (1, 2), (2, 3, 4)), ("constant", (1, 0, 2, 1, 1, 1), (2, 3, 4)),
    ("constant", (-1, 1), (2, 3, 4)), ("reflect", (2, 1), (2, 3, 4)),
    ("reflect", (1, 1, 2, 0), (1, 2, 3, 4)), ("replicate", (3, 1), (2, 2, 4)),
    ("replicate", (1, 2, 2, 1), (1, 2, 3, 4)), ("circular", (2, 1, 1, 2), (1, 2, 3, 4)),
])
def test_pad_matches_torch(torch, mode, pad, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    kwargs = {"value": 1.5} if mode == "constant" else {}
    eo, to = F.pad(e, pad, mode, **kwargs), torch.nn.functional.pad(t, pad, mode, **kwargs)
    np.testing.assert_array_equal(eo.detach().numpy(), to.detach().numpy())
    g = np.random.default_rng(1).standard_normal(tuple(to.shape))
    eo.backward(ember.tensor(g))
    to.backward(torch.from_numpy(g))
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_pad_errors():
    x = ember.zeros(1, 2, 3)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding size should be less than the "
                                           "corresponding input dimension"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D"):
        F.pad(ember.zeros(1, 1, 2, 2), (1, 1), mode="replicate")


def test_one_hot():
    out = F.one_hot(ember.tensor([[0, 2], [1, 0]]))
    assert out.dtype is ember.int64 and out.shape == (2, 2, 3)
    assert out.tolist() == [[[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [1, 0, 0]]]
    assert F.one_hot(ember.tensor([1]), 4).tolist() == [[0, 1, 0, 0]]
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(ember.tensor([1, 5]), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(ember.tensor([-1]), 3)


def test_normalize_and_softmax_dim(torch):
    x = np.random.default_rng(0).standard_normal((3, 4))
    for p, dim in [(2.0, 1), (1.0, 0), (3.0, -1)]:
        np.testing.assert_allclose(
            F.normalize(ember.tensor(x), p, dim).numpy(),
            torch.nn.functional.normalize(torch.from_numpy(x), p, dim).numpy(), rtol=1e-10)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = F.softmax(ember.tensor(x))
    np.testing.assert_allclose(out.numpy().sum(1), 1.0)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(ember.zeros(1), approximate="fast")


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal"])
def test_scaled_dot_product_attention(torch, mask_kind):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 4, 5)) for _ in range(3))
    kwargs_e, kwargs_t = {}, {}
    if mask_kind == "bool":
        m = rng.random((4, 4)) > 0.3
        np.fill_diagonal(m, True)
        kwargs_e["attn_mask"], kwargs_t["attn_mask"] = ember.tensor(m), torch.from_numpy(m)
    elif mask_kind == "float":
        m = rng.standard_normal((4, 4))
        kwargs_e["attn_mask"], kwargs_t["attn_mask"] = ember.tensor(m), torch.from_numpy(m)
    elif mask_kind == "causal":
        kwargs_e["is_causal"] = kwargs_t["is_causal"] = True
    eq, ek, ev = (ember.tensor(a, requires_grad=True) for a in (q, k, v))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    eo = F.scaled_dot_product_attention(eq, ek, ev, scale=0.3, **kwargs_e)
    to = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, scale=0.3, **kwargs_t)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-9, atol=1e-12)
    eo.sum().backward()
    to.sum().backward()
    for a, b in ((eq, tq), (ek, tk), (ev, tv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_functional_linear_and_conv_are_core_ops(torch):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((3, 4)), rng.standard_normal((2, 4)), rng.standard_normal(2)
    np.testing.assert_allclose(
        F.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b)).numpy(),
        torch.nn.functional.linear(*(torch.from_numpy(a) for a in (x, w, b))).numpy(),
        rtol=1e-12)
    x = rng.standard_normal((1, 2, 5, 5))
    w = rng.standard_normal((3, 2, 3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = F.conv2d(ember.tensor(x), ember.tensor(w), padding="same")
        ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                         padding="same")
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-10, atol=1e-12)


def test_max_pool_return_indices_match_torch(torch):
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 5))
    for make, data in ((lambda n: n.MaxPool2d(2, return_indices=True), x),
                       (lambda n: n.MaxPool1d(3, 2, return_indices=True), x[0])):
        (eo, ei), (to, ti) = make(nn)(ember.tensor(data)), make(torch.nn)(torch.tensor(data))
        assert ei.dtype is ember.int64
        np.testing.assert_array_equal(ei.numpy(), ti.numpy())
        np.testing.assert_array_equal(eo.numpy(), to.numpy())


def test_functional_norms(torch):
    x = np.random.default_rng(0).standard_normal((4, 6, 3))
    tf = torch.nn.functional
    rm, rv = np.linspace(-1, 1, 6), np.linspace(0.5, 2, 6)
    # eval-mode batch norm normalises with the given running statistics
    np.testing.assert_allclose(
        F.batch_norm(ember.tensor(x), ember.tensor(rm), ember.tensor(rv), eps=1e-3).numpy(),
        tf.batch_norm(torch.tensor(x), torch.tensor(rm), torch.tensor(rv), eps=1e-3).numpy(),
        rtol=1e-10)
    # without running statistics the batch's own are used
    np.testing.assert_allclose(
        F.batch_norm(ember.tensor(x), None, None, training=True).numpy(),
        tf.batch_norm(torch.tensor(x), None, None, training=True).numpy(), rtol=1e-10)
    e_rm, t_rm = ember.tensor(rm), torch.tensor(rm)
    e_rv, t_rv = ember.tensor(rv), torch.tensor(rv)
    np.testing.assert_allclose(
        F.instance_norm(ember.tensor(x), e_rm, e_rv, momentum=0.2).numpy(),
        tf.instance_norm(torch.tensor(x), t_rm, t_rv, momentum=0.2).numpy(), rtol=1e-10)
    np.testing.assert_allclose(e_rm.numpy(), t_rm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(e_rv.numpy(), t_rv.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be "
                                           r"divisible by num_groups, but got input of shape "
                                           r"\[4, 6, 3\] and num_groups=4"):
        F.group_norm(ember.tensor(x), 4)
    with pytest.raises(ValueError, match=r"^num_channels \(6\) must be divisible by "
                                         r"num_groups \(4\)$"):
        nn.GroupNorm(4, 6)


def test_normalize_and_cosine_similarity_gradients_at_a_zero_row(torch):
    x = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 2.0]])
    other = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.0]])
    for name, args in (("normalize", ()), ("cosine_similarity", (other,))):
        e = ember.tensor(x, requires_grad=True)
        t = torch.tensor(x, requires_grad=True)
        eo = getattr(F, name)(e, *(ember.tensor(a) for a in args))
        to = getattr(torch.nn.functional, name)(t, *(torch.tensor(a) for a in args))
        (eo * eo).sum().backward()
        (to * to).sum().backward()
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10)
        assert np.isfinite(e.grad.numpy()).all()
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("shape,kwargs", [
    ((1, 2, 5), {"size": 8}),
    ((1, 2, 5), {"scale_factor": 2.5}),
    ((2, 3, 6, 6), {"scale_factor": 0.5}),
    ((1, 2, 5), {"size": 3, "mode": "nearest-exact"}),
    ((1, 2, 5), {"size": 9, "mode": "linear"}),
    ((1, 2, 5), {"size": 9, "mode": "linear", "align_corners": True}),
    ((2, 3, 4, 5), {"size": (7, 3), "mode": "bilinear"}),
    ((2, 3, 4, 5), {"scale_factor": (1.5, 2.0), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 4, 5), {"scale_factor": 1.7, "mode": "bilinear"}),
    ((2, 3, 4, 5), {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": True}),
    ((2, 3, 8, 6), {"size": (3, 2), "mode": "area"}),
    ((1, 1, 2, 3, 4), {"size": (3, 4, 5), "mode": "trilinear"}),
    ((2, 3, 5, 7), {"size": (9, 4), "mode": "bicubic"}),
    ((2, 3, 5, 7), {"scale_factor": 2, "mode": "bicubic", "align_corners": True}),
    ((1, 2, 6, 6), {"scale_factor": 0.5, "mode": "bicubic"}),
    ((1, 2, 4, 5), {"scale_factor": 1.7, "mode": "bicubic", "recompute_scale_factor": True}),
    ((1, 2, 4, 5), {"size": 1, "mode": "bicubic", "align_corners": True}),
])
def test_interpolate_matches_torch(torch, shape, kwargs):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    eo = F.interpolate(e, **kwargs)
    to = torch.nn.functional.interpolate(t, **kwargs)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    g = rng.standard_normal(tuple(to.shape))
    eo.backward(ember.tensor(g))
    to.backward(torch.from_numpy(g))
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_upsample_module(torch):
    for kwargs in ({"scale_factor": 2}, {"size": (3, 4), "mode": "bilinear"},
                   {"scale_factor": (2, 3), "mode": "nearest"}):
        assert repr(nn.Upsample(**kwargs)) == repr(torch.nn.Upsample(**kwargs))
    up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
    assert up(ember.zeros(1, 1, 2, 3)).shape == (1, 1, 4, 6)
    with pytest.raises(ValueError, match="align_corners option can only be set with the "
                                         "interpolating modes"):
        F.interpolate(ember.zeros(1, 1, 2), size=4, align_corners=True)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(ember.zeros(1, 1, 2), size=4, scale_factor=2)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D"):
        F.interpolate(ember.zeros(1, 1, 2), size=4, mode="bilinear")
    with pytest.raises(NotImplementedError) as t_err:
        torch.nn.functional.interpolate(torch.zeros(1, 1, 2, 2, 2), size=4, mode="bicubic")
    with pytest.raises(NotImplementedError) as e_err:
        F.interpolate(ember.zeros(1, 1, 2, 2, 2), size=4, mode="bicubic")
    assert str(e_err.value) == str(t_err.value)


@pytest.mark.parametrize("name,kwargs", [
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
    ("leaky_relu", {"negative_slope": 0.2}), ("elu", {"alpha": 0.7}), ("selu", {}),
    ("celu", {"alpha": 1.5}), ("softplus", {"beta": 2.0, "threshold": 3.0}),
    ("hardtanh", {"min_val": -0.5, "max_val": 1.0}), ("relu6", {})])
def test_activations_are_one_node_as_torch(torch, name, kwargs):
    # printed activations say grad_fn=<GeluBackward0> ...: one node with ATen's gradient,
    # its values (float64, float32, and bfloat16 computed in float32) and double backward
    x0 = np.random.default_rng(0).uniform(-4, 8, (4, 5))
    for dtype in ("float64", "float32", "bfloat16"):
        got = []
        for lib in (torch, ember):
            x = lib.tensor(x0, dtype=getattr(lib, dtype), requires_grad=True)
            y = getattr(lib.nn.functional, name)(x, **kwargs)
            (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=dtype == "float64")
            gg = lib.autograd.grad(g.sum(), x)[0].float() if dtype == "float64" else g
            got.append((y.grad_fn.name(), y.float().detach().numpy(),
                        g.float().detach().numpy(), gg.float().detach().numpy()))
        assert got[1][0] == got[0][0]
        tol = {"float64": 1e-12, "float32": 1e-6, "bfloat16": 1e-2}[dtype]
        for w, e in zip(got[0][1:], got[1][1:]):
            np.testing.assert_allclose(e, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("name, kwargs", [("upsample_nearest", {"scale_factor": 2}),
                                          ("upsample_bilinear", {"size": (3, 5)}),
                                          ("upsample_bilinear", {"scale_factor": 2})])
def test_deprecated_upsample_functions_match_torch(torch, name, kwargs):
    x = np.random.RandomState(0).rand(1, 2, 2, 3).astype(np.float32)
    outs = []
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match=f"`nn.functional.{name}` is deprecated"):
            outs.append(getattr(lib.nn.functional, name)(lib.tensor(x), **kwargs).numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name, args", [("selu_", ()), ("celu_", (0.5,))])
def test_inplace_selu_celu_match_torch(torch, name, args):
    x = np.array([-2.0, -0.5, 0.0, 1.5], dtype=np.float32)
    results = []
    for lib in (torch, ember):
        t = lib.tensor(x)
        out = getattr(lib.nn.functional, name)(t, *args)
        results.append((out is t, t.numpy().copy()))
    assert results[1][0] and results[0][0]
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_in_one_fused_kernel_matches_torch(torch, name, dtype):
    """The CPU's softmax and log_softmax run as one fused kernel (xp/fused.py): torch's
    values along each dim of a transposed input, rows holding NaN, +-inf and all -inf
    included, and its gradient."""
    from ember.backends.cpu.kernels import KERNELS
    assert name in KERNELS
    x = np.random.default_rng(1).standard_normal((4, 5, 3)).astype(dtype)
    x[0, 0, 0], x[1, 2, :], x[2, :, 1] = np.nan, np.inf, -np.inf
    x[3, 1, 2] = np.inf
    for dim in (0, 1, 2, -1):
        ours = getattr(F, name)(ember.tensor(x).transpose(0, 2), dim)
        theirs = getattr(torch.nn.functional, name)(torch.from_numpy(x).transpose(0, 2), dim)
        assert tuple(ours.stride()) == theirs.stride()
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)
    finite = ember.tensor(np.random.default_rng(2).standard_normal((3, 4)),
                          requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: getattr(F, name)(t, 1), (finite,))
