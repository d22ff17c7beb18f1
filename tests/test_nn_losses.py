"""Losses of `ember.nn` (functional and modules) against PyTorch: values and gradients
for every reduction, class weights, ignore_index, label smoothing, probability targets,
and torch's error types and messages."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 4))
Y = RNG.standard_normal((5, 4))
PROB = 1 / (1 + np.exp(-X))
TARGET01 = RNG.random((5, 4))
CLASSES = np.array([1, 0, -100, 3, 2])  # one ignored target
CLASS_W = RNG.random(4) + 0.5
SOFT = np.abs(RNG.standard_normal((5, 4)))
SOFT /= SOFT.sum(1, keepdims=True)
X4 = RNG.standard_normal((2, 3, 4, 5))
T4 = RNG.integers(0, 3, (2, 4, 5))
T4[1, 2, 3] = 7
LOGP = np.log(PROB / PROB.sum(1, keepdims=True))
Q = TARGET01 / TARGET01.sum(1, keepdims=True)
Q[0, 0] = 0.0  # 0 * log 0 = 0
SIGNS = np.sign(Y)
LOGITS = X * 10
LOGITS[0, 0], LOGITS[1, 1] = 0.0, 200.0  # exact zero and a huge logit
D_EDGE = np.zeros((5, 4))  # shifts the target so that x - y is -0.5 and 0.5 somewhere
D_EDGE[0, 0], D_EDGE[1, 1] = X[0, 0] - Y[0, 0] + 0.5, X[1, 1] - Y[1, 1] - 0.5


def run_both(torch, name, inputs, kwargs, grads):
    """Call F.<name> in both libraries on the same arrays; `grads[i]` says whether input
    i requires grad. Returns the (ember, torch) outputs and inputs."""
    e_in = [ember.tensor(a, requires_grad=g) for a, g in zip(inputs, grads)]
    t_in = [torch.tensor(a, requires_grad=g) for a, g in zip(inputs, grads)]
    # array-valued keyword arguments (weight=, pos_weight=) become each library's tensor
    e_kw = {k: ember.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    t_kw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eo = getattr(F, name)(*e_in, **e_kw)
        to = getattr(torch.nn.functional, name)(*t_in, **t_kw)
    return eo, to, e_in, t_in


CASES = [
    ("mse_loss", [X, Y], {}, [True, True]),
    ("mse_loss", [X, Y], {"weight": np.abs(Y)}, [True, True]),  # torch 2.x weight=
    ("l1_loss", [X, Y], {"weight": np.abs(Y)}, [True, True]),
    ("huber_loss", [X, Y], {"weight": np.abs(Y), "delta": 0.5}, [True, True]),
    ("l1_loss", [X, Y], {}, [True, True]),
    ("smooth_l1_loss", [X, Y], {}, [True, True]),
    ("smooth_l1_loss", [X, Y], {"beta": 0.5}, [True, True]),
    ("smooth_l1_loss", [X, Y], {"beta": 0.0}, [True, True]),
    ("huber_loss", [X, Y], {}, [True, True]),
    ("huber_loss", [X, Y], {"delta": 0.3}, [True, True]),
    ("cross_entropy", [X, CLASSES], {}, [True, False]),
    ("cross_entropy", [X, CLASSES, CLASS_W], {}, [True, False, False]),
    ("cross_entropy", [X, CLASSES], {"label_smoothing": 0.2}, [True, False]),
    ("cross_entropy", [X, CLASSES, CLASS_W], {"label_smoothing": 0.2}, [True, False, False]),
    ("cross_entropy", [X, SOFT], {}, [True, True]),
    ("cross_entropy", [X, SOFT, CLASS_W], {"label_smoothing": 0.1}, [True, False, False]),
    ("cross_entropy", [X4, T4], {"ignore_index": 7, "label_smoothing": 0.1}, [True, False]),
    ("cross_entropy", [X[0], np.array(2)], {}, [True, False]),
    ("nll_loss", [LOGP, CLASSES], {}, [True, False]),
    ("nll_loss", [LOGP, CLASSES, CLASS_W], {}, [True, False, False]),
    ("nll_loss", [X4, T4], {"ignore_index": 7}, [True, False]),
    ("binary_cross_entropy", [PROB, TARGET01], {}, [True, True]),
    ("binary_cross_entropy", [PROB, TARGET01, TARGET01[0]], {}, [True, False, False]),
    ("binary_cross_entropy_with_logits", [LOGITS, TARGET01], {}, [True, True]),
    ("binary_cross_entropy_with_logits", [LOGITS, TARGET01, CLASS_W],
     {"pos_weight": CLASS_W[::-1].copy()}, [True, True, False]),
    ("kl_div", [LOGP, Q], {}, [True, False]),  # Q has a 0: d/dq of q log q is -inf there
    ("kl_div", [LOGP, SOFT], {}, [True, True]),
    ("kl_div", [LOGP, np.log(TARGET01)], {"log_target": True}, [True, True]),
    ("soft_margin_loss", [X, SIGNS], {}, [True, False]),
    ("hinge_embedding_loss", [X, SIGNS], {"margin": 0.5}, [True, False]),
    ("poisson_nll_loss", [X, np.abs(Y) * 3], {"full": True}, [True, False]),
    ("poisson_nll_loss", [np.abs(X), np.abs(Y) * 3], {"log_input": False}, [True, False]),
    ("multilabel_soft_margin_loss", [X, (Y > 0).astype(float)], {}, [True, False]),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,inputs,kwargs,grads", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_loss_matches_torch(torch, name, inputs, kwargs, grads, reduction):
    eo, to, e_in, t_in = run_both(torch, name, inputs, {**kwargs, "reduction": reduction},
                                  grads)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    g = RNG.standard_normal(tuple(to.shape))
    eo.backward(ember.tensor(g))
    to.backward(torch.from_numpy(g))
    for e, t in zip(e_in, t_in):
        if t.requires_grad:
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_are_one_node_as_torch(torch, reduction):
    # the 60 Minute Blitz prints `loss.grad_fn` (MseLossBackward0) and walks
    # `next_functions`; gradients and double backward through the one node are torch's
    def run(lib):
        x, y = lib.tensor(X, requires_grad=True), lib.tensor(Y, requires_grad=True)
        mse = lib.nn.functional.mse_loss(x, y, reduction=reduction)
        logp = lib.tensor(LOGP, requires_grad=True)
        nll = lib.nn.functional.nll_loss(logp, lib.tensor(CLASSES), lib.tensor(CLASS_W),
                                         reduction=reduction)
        x4 = lib.tensor(X4, requires_grad=True)
        nll4 = lib.nn.functional.nll_loss(x4, lib.tensor(np.where(T4 > 2, 0, T4)),
                                          reduction=reduction)
        # (the "Automatic Differentiation" tutorial prints this one's grad_fn)
        t01 = lib.tensor(TARGET01, requires_grad=True)
        bce = lib.nn.functional.binary_cross_entropy_with_logits(
            x, t01, lib.tensor(TARGET01[0]), reduction=reduction,
            pos_weight=lib.tensor(CLASS_W))
        # (boundary points |d| = beta, delta on purpose: PyTorch's second derivative is 0)
        smooth = lib.nn.functional.smooth_l1_loss(x, y + lib.tensor(D_EDGE), beta=0.5,
                                                  reduction=reduction)
        huber = lib.nn.functional.huber_loss(x, y + lib.tensor(D_EDGE), delta=0.5,
                                             reduction=reduction)
        prob = lib.tensor(PROB, requires_grad=True)
        bce_p = lib.nn.functional.binary_cross_entropy(prob, t01, lib.tensor(SOFT),
                                                       reduction=reduction)
        losses = (mse, nll, nll4, bce, smooth, huber, bce_p)
        names = [(t.grad_fn.name(), [f.name().split("::")[-1] if f else None
                                     for f, _ in t.grad_fn.next_functions]) for t in losses]
        ins = (x, y, logp, x4, t01, prob)
        g = lib.autograd.grad(sum(t.sum() for t in losses) + mse.sum() * 0.5, ins,
                              create_graph=True)
        gg = lib.autograd.grad(sum((a * a * b).sum() for a, b in zip(g, ins)), ins)
        return names, [v.detach().numpy() for v in (*losses, *g, *gg)]

    (want_names, want), (got_names, got) = run(torch), run(ember)
    assert got_names == want_names
    for w, e in zip(want, got):
        np.testing.assert_allclose(e, w, rtol=1e-9, atol=1e-12)  # (summation orders)
    # an ignored target's row of the gradient is +0, as torch's (printing shows the sign)
    assert not np.signbit(got[9][2]).any()


def test_kl_div_batchmean(torch):
    for log_target, target in ((False, Q), (True, np.log(TARGET01))):
        eo, to, _, _ = run_both(torch, "kl_div", [LOGP, target],
                                {"reduction": "batchmean", "log_target": log_target},
                                [True, False])
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10)
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both"):
        F.kl_div(ember.tensor(LOGP), ember.tensor(Q))


def test_three_input_losses(torch):
    a, b = X, Y[::-1].copy()
    for name, extra, kw in [("margin_ranking_loss", SIGNS, {"margin": 0.2}),
                            ("cosine_embedding_loss", SIGNS[:, 0], {"margin": 0.1}),
                            ("triplet_margin_loss", X[::-1].copy(), {"swap": True}),
                            ("gaussian_nll_loss", np.abs(Y), {"full": True})]:
        grads = [True, True, name in ("triplet_margin_loss", "gaussian_nll_loss")]
        eo, to, e_in, t_in = run_both(torch, name, [a, b, extra], kw, grads)
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10,
                                   err_msg=name)
        eo.backward()
        to.backward()
        for e, t in zip(e_in, t_in):
            if t.requires_grad:
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9,
                                           atol=1e-12, err_msg=name)


def test_cross_entropy_all_ignored_is_nan(torch):
    t = np.full(5, -100)
    eo, to, _, _ = run_both(torch, "cross_entropy", [X, t], {}, [True, False])
    assert np.isnan(eo.item()) and np.isnan(to.item())


# -- modules --------------------------------------------------------------------------


MODULES = [
    ("MSELoss", {}, [X, Y]), ("L1Loss", {"reduction": "sum"}, [X, Y]),
    ("SmoothL1Loss", {"beta": 0.5}, [X, Y]), ("HuberLoss", {"delta": 0.5}, [X, Y]),
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "ignore_index": -100}, [X, CLASSES]),
    ("NLLLoss", {"reduction": "none"}, [LOGP, CLASSES]), ("BCELoss", {}, [PROB, TARGET01]),
    ("BCEWithLogitsLoss", {}, [LOGITS, TARGET01]),
    ("KLDivLoss", {"reduction": "batchmean"}, [LOGP, Q]),
    ("SoftMarginLoss", {}, [X, SIGNS]), ("HingeEmbeddingLoss", {}, [X, SIGNS]),
    ("PoissonNLLLoss", {}, [X, np.abs(Y)]),
    ("MultiLabelSoftMarginLoss", {}, [X, (Y > 0).astype(float)]),
]


@pytest.mark.parametrize("cls,kwargs,inputs", MODULES, ids=[m[0] for m in MODULES])
def test_loss_module_matches_torch(torch, cls, kwargs, inputs):
    em, tm = getattr(nn, cls)(**kwargs), getattr(torch.nn, cls)(**kwargs)
    assert repr(em) == repr(tm)
    e_x = ember.tensor(inputs[0], requires_grad=True)
    t_x = torch.tensor(inputs[0], requires_grad=True)
    eo, to = em(e_x, ember.tensor(inputs[1])), tm(t_x, torch.tensor(inputs[1]))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10)
    eo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(e_x.grad.numpy(), t_x.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_weighted_loss_modules_register_weight_buffers(torch):
    w = ember.tensor(CLASS_W)
    ce = nn.CrossEntropyLoss(weight=w)
    assert ce.weight is w and list(ce.state_dict()) == ["weight"]
    assert list(ce.state_dict()) == list(
        torch.nn.CrossEntropyLoss(weight=torch.from_numpy(CLASS_W)).state_dict())
    bce = nn.BCEWithLogitsLoss(pos_weight=w)
    assert [n for n, _ in bce.named_buffers()] == ["pos_weight"]
    ce.to(ember.float32)
    assert ce.weight.dtype is ember.float32  # buffers move and cast with the module
    assert list(nn.MSELoss().state_dict()) == []


def test_legacy_size_average_and_reduce(torch):
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, "
                                         "please use reduction='sum' instead."):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning):
        assert nn.L1Loss(reduce=False).reduction == "none"
    with pytest.warns(UserWarning):
        out = F.mse_loss(ember.tensor(X), ember.tensor(Y), size_average=True)
    assert out.item() == pytest.approx(float(((X - Y) ** 2).mean()))


# -- errors ---------------------------------------------------------------------------


class TestErrors:
    def test_reduction(self):
        with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
            F.mse_loss(ember.tensor(X), ember.tensor(Y), reduction="foo")
        with pytest.raises(ValueError, match="bar is not a valid value for reduction"):
            F.cross_entropy(ember.tensor(X), ember.tensor(CLASSES), reduction="bar")

    def test_nll_shapes_and_targets(self, torch):
        x = ember.tensor(X)
        with pytest.raises(ValueError, match=r"Expected input batch_size \(5\) to match "
                                             r"target batch_size \(2\)."):
            F.nll_loss(x, ember.tensor([0, 1]))
        with pytest.raises(IndexError, match="Target 7 is out of bounds."):
            F.cross_entropy(x, ember.tensor([0, 1, 7, 0, 0]))
        with pytest.raises(IndexError, match="Target -3 is out of bounds."):
            F.nll_loss(x, ember.tensor([0, 1, -3, 0, 0]))
        with pytest.raises(RuntimeError, match=r"only batches of spatial targets supported "
                                               r"\(3D tensors\) but got targets of dimension: 2"):
            F.nll_loss(ember.tensor(X4), ember.zeros(2, 4, dtype=ember.int64))
        with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, "
                                               "multi-target not supported"):
            F.cross_entropy(x, ember.zeros(5, 5))
        with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but "
                                               "got Float"):
            F.nll_loss(x, ember.zeros(5))

    def test_target_size_checks(self):
        with pytest.raises(ValueError, match=r"Using a target size \(ember.Size\(\[2\]\)\) "
                                             r"that is different to the input size"):
            F.binary_cross_entropy(ember.rand(3), ember.rand(2))
        with pytest.raises(ValueError, match="must be the same as input size"):
            F.binary_cross_entropy_with_logits(ember.rand(3), ember.rand(2))
        with pytest.warns(UserWarning, match="Using a target size"):
            F.mse_loss(ember.rand(3, 1), ember.rand(3))
        with pytest.raises(ValueError, match="Weights and input must have the same size."):
            F.mse_loss(ember.rand(3), ember.rand(3), weight=ember.rand(2))


# -- the CPU's cross-entropy kernels (ember/backends/cpu/losses.py): each path ----------

CE_CASES = [  # (rows, classes, ignore_index, which targets are set to ignore_index)
    (4, 8, -100, ()),  # short batch: NumPy's row reductions
    (40, 10, -100, ()),  # narrow rows: the transposed row max, the BLAS row sums
    (40, 10, -100, (3, 7)),  # ignored targets: the shared masking kernels
    (40, 10, 2, ()),  # ignore_index a class no target names
    (40, 10, 2, (0, 5)),  # ... and one that some do
    (40, 10, 12, ()),  # ignore_index past the classes
    (24, 70, -100, ()),  # wide rows
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows,classes,ignore,ignored", CE_CASES)
def test_cpu_cross_entropy_kernels_match_torch(torch, rows, classes, ignore, ignored,
                                               reduction, dtype):
    rng = np.random.default_rng(rows * classes)
    x = (rng.standard_normal((rows, classes)) * 4).astype(dtype)
    x[1] += 500.0  # a row far above the others: each row needs its own shift
    target = rng.integers(0, classes, rows)
    if ignore in range(classes):
        target[target == ignore] = (ignore + 1) % classes
    target[list(ignored)] = ignore
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    eo = F.cross_entropy(ex, ember.tensor(target), ignore_index=ignore, reduction=reduction)
    to = torch.nn.functional.cross_entropy(tx, torch.tensor(target), ignore_index=ignore,
                                           reduction=reduction)
    assert eo.dtype == getattr(ember, dtype) and tuple(eo.shape) == tuple(to.shape)
    tol = dict(rtol=2e-6, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), **tol)
    g = rng.standard_normal(tuple(to.shape)).astype(dtype)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), **tol)


def test_cross_entropy_target_out_of_bounds_raises_as_torch(torch):
    x = np.zeros((3, 4), np.float32)
    for bad in (4, -1, -100):  # -100 is only allowed as the ignore_index
        target = np.array([0, bad, 1])
        kw = {"ignore_index": 2} if bad == -100 else {}
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
            torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(target), **kw)
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
            F.cross_entropy(ember.tensor(x), ember.tensor(target), **kw)


# (input shape, target values, target dtype): class-index targets of every dtype and shape
# PyTorch's nll_loss/cross_entropy check, in its order of checks
_TARGET_CASES = [
    ((2, 3), [0, 1], "float32"), ((2, 3), [0, 1], "int32"), ((2, 3), [0, 1], "uint8"),
    ((2, 3), [0, 1], "bool"), ((2, 3), [0, 1], "int16"), ((2, 3), [0, 1], "int8"),
    ((2, 3, 4), [[0, 1, 1, 2], [0, 0, 0, 0]], "float32"),
    ((2, 3, 4), [[0, 1, 1, 2], [0, 0, 0, 0]], "uint8"),
    ((2, 3, 4), [[0, 1, 1, 2], [0, 0, 0, 0]], "int32"),
    ((2, 3), [[0.5] * 4] * 2, "float32"), ((3,), [0, 1], "int64"), ((3,), [1], "int64"),
    ((3,), [[1]], "int64"), ((3,), [0.5, 0.5], "float32"), ((2, 3), 1, "int64"),
    ((2, 3), [0, 1, 1], "int64"), ((2, 3, 4), [[[0.5] * 5] * 3] * 2, "float32"),
]


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("case", range(len(_TARGET_CASES)))
def test_class_index_targets_as_torch(name, case):
    """Accepted targets give torch's loss; refused ones torch's error type and message."""
    torch = pytest.importorskip("torch")
    shape, values, dtype = _TARGET_CASES[case]
    x = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)

    def run(lib):
        try:
            out = getattr(lib.nn.functional, name)(lib.tensor(x), lib.tensor(values).to(
                getattr(lib, dtype)))
        except (RuntimeError, ValueError, IndexError) as e:
            return type(e).__name__, str(e)
        return "ok", round(float(out), 5)

    assert run(ember) == run(torch)
