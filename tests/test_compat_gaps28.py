"""Known differences from PyTorch 2.13 (its CPU build is the oracle), closed: device
strings for a CUDA ember cannot use ..."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")

no_gpu = pytest.mark.skipif(ember.cuda.is_available() or torch.cuda.is_available(),
                            reason="a CUDA device is available here")


def _outcome(fn):
    """("ok", None) or (error type name, message) of `fn()`."""
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - the error is what is compared
        return type(err).__name__, str(err)
    return "ok", None


# == 1. devices this process cannot use =================================================

UNUSABLE_DEVICE_CALLS = [
    "m.zeros(2).to('cuda')", "m.zeros(2).to(m.device('cuda:0'))", "m.zeros(2).to(device='cuda')",
    "m.zeros(2, device='cuda')", "m.ones(2, device='cuda:1')", "m.tensor([1.0], device='cuda')",
    "m.randn(2, device='cuda')", "m.arange(2, device='cuda')", "m.empty(2, device='cuda')",
    "m.full((2,), 1.0, device='cuda')", "m.zeros_like(m.zeros(2), device='cuda')",
    "m.zeros(2).new_zeros(2, device='cuda')", "m.as_tensor([1.0], device='cuda')",
    "m.zeros(2).cuda()", "m.nn.Linear(2, 2).cuda()", "m.nn.Linear(2, 2).to('cuda')",
    "m.zeros(2).to('xpu')", "m.zeros(2, device=0)", "m.zeros(2).to(0)",
    "m.cuda.current_device()", "m.cuda.get_device_name()", "m.cuda.get_device_name(0)",
    "m.cuda.get_device_properties(0)", "m.cuda.get_device_capability()",
    "m.cuda.synchronize()", "m.cuda.init()", "m.cuda.mem_get_info()",
    "m.cuda.current_stream()", "m.cuda.Stream()", "m.cuda.Event()",
    "m.cuda.device(0).__enter__()",
]


@no_gpu
@pytest.mark.parametrize("call", UNUSABLE_DEVICE_CALLS)
def test_unusable_cuda_raises_torchs_cpu_build_error(call):
    try:
        mine = _outcome(lambda: eval(call, {"m": ember}))
        theirs = _outcome(lambda: eval(call, {"m": torch}))
    finally:
        ember.set_default_device(None)
        torch.set_default_device(None)
    assert mine[0] == theirs[0] != "ok"
    if theirs[0] == "AssertionError" or "accelerator" in theirs[1]:
        assert mine == theirs


@no_gpu
def test_unusable_cuda_error_keeps_embers_reason_in_a_note():
    with pytest.raises(AssertionError) as info:
        ember.zeros(2, device="cuda")
    assert str(info.value) == "Torch not compiled with CUDA enabled"
    note = info.value.__notes__[0]
    assert note.startswith("device 'cuda' is not available: ") and "cpu: available" in note
    with pytest.raises(AssertionError) as info:
        ember.cuda.current_device()
    assert info.value.__notes__ and "CUDA" in info.value.__notes__[0] or "CuPy" in \
        info.value.__notes__[0]


def test_cuda_device_objects_need_no_gpu():
    for spec in ("cuda", "cuda:0", "cuda:3"):
        assert repr(ember.device(spec)) == repr(torch.device(spec))
    assert str(ember.device("cuda", 1)) == str(torch.device("cuda", 1)) == "cuda:1"


@no_gpu
def test_default_device_cuda_raises_at_the_first_factory():
    for m in (ember, torch):
        try:
            m.set_default_device("cuda")  # no error yet
            with pytest.raises(AssertionError) as info:
                m.zeros(2)
            assert str(info.value) == "Torch not compiled with CUDA enabled"
        finally:
            m.set_default_device(None)
    assert ember.zeros(1).device.type == "cpu"


# == 2. dtype= takes a dtype or a Python type, never a name ==============================

DTYPE_STRING_CALLS = [
    "m.zeros(3, dtype='float32')", "m.ones(3, dtype='float32')", "m.empty(3, dtype='float32')",
    "m.full((3,), 1, dtype='float32')", "m.tensor([1], dtype='float32')",
    "m.as_tensor([1], dtype='float32')", "m.zeros_like(x, dtype='float32')",
    "m.ones_like(x, dtype='float32')", "m.full_like(x, 2, dtype='float32')",
    "m.empty_like(x, dtype='float32')", "x.new_zeros(2, dtype='float32')",
    "x.new_tensor([1], dtype='float32')", "m.empty_strided((2,), (1,), dtype='float32')",
    "m.softmax(x, 0, dtype='float64')", "m.nn.functional.softmax(x, 0, dtype='float64')",
    "x.cumsum(0, dtype='float64')", "m.zeros(3, dtype=numpy.float32)",
    "m.zeros(3, dtype=numpy.dtype('float32'))", "m.zeros(3, dtype=3)",
    "m.nn.Linear(2, 2, dtype='float64')", "m.finfo('float32')", "m.iinfo('int32')",
    "m.can_cast('float32', m.float64)", "m.promote_types('float32', m.float64)",
    "m.promote_types(m.float64, 'float32')", "m.set_default_dtype('float64')",
]
DTYPE_STRING_TYPE_ONLY = [  # PyTorch's message lists its overloads: the type is compared
    "m.arange(3, dtype='float32')", "m.linspace(0, 1, 3, dtype='float32')",
    "m.randn(3, dtype='float32')", "m.rand(3, dtype='float32')", "m.eye(3, dtype='float32')",
    "m.randint(0, 3, (3,), dtype='int64')", "m.randperm(3, dtype='int64')",
    "x.to(dtype='float32')", "x.sum(dtype='float64')", "x.mean(dtype='float64')",
    "m.randn_like(x, dtype='float32')", "m.nn.Linear(2, 2).to(dtype='float64')",
]
PYTHON_TYPE_CALLS = [
    "m.zeros(3, dtype=float)", "m.zeros(3, dtype=int)", "m.zeros(3, dtype=bool)",
    "m.zeros(3, dtype=complex)", "m.tensor([1], dtype=float)", "x.to(float)", "x.to(int)",
    "x.to(dtype=float)", "x.new_ones(2, dtype=float)", "x.view(float)", "x.view(m.int32)",
    "x.type('torch.DoubleTensor')", "x.type(m.float64)", "m.arange(3, dtype=float)",
]
TYPE_ERRORS = [  # Tensor.type takes type names and dtypes, not Python types or dtype names
    "x.type('float32')", "x.type('torch.float32')", "x.type('torch.FooTensor')",
    "x.type(float)", "x.type(3)", "x.view('int32')",
    "x.to('float32')", "m.nn.Linear(2, 2).to('float64')",
    "m.device('cuda:x')", "m.device('')", "m.zeros(2).to('cpu:0:1')",
]


def _both(call):
    import numpy

    results = []
    for m in (ember, torch):
        x = m.ones(2)
        try:
            results.append(_outcome(lambda m=m, x=x: eval(call, {"m": m, "x": x, "numpy": numpy})))
        finally:
            m.set_default_dtype(m.float32)
    return results


@pytest.mark.parametrize("call", DTYPE_STRING_CALLS + TYPE_ERRORS)
def test_dtype_names_and_bad_types_raise_as_torch(call):
    mine, theirs = _both(call)
    assert theirs[0] != "ok"
    assert mine == theirs


@pytest.mark.parametrize("call", DTYPE_STRING_TYPE_ONLY)
def test_dtype_names_raise_torchs_type(call):
    mine, theirs = _both(call)
    assert mine[0] == theirs[0] == "TypeError"
    if "invalid combination of arguments" in mine[1]:  # (the random factories' listing)
        assert mine[1].splitlines()[0] == theirs[1].splitlines()[0]
    else:
        assert mine[1].endswith("argument 'dtype' must be torch.dtype, not str")


@pytest.mark.parametrize("call", PYTHON_TYPE_CALLS)
def test_python_types_are_dtypes_as_in_torch(call):
    import numpy

    got = []
    for m in (ember, torch):
        out = eval(call, {"m": m, "x": m.ones(2), "numpy": numpy})
        got.append(str(out.dtype).split(".")[-1])
    assert got[0] == got[1]


# == 3. capturable Adamax/NAdam/RAdam/ASGD, differentiable RAdam ==========================

def _opencl_or_skip():
    try:
        ember.zeros(1, device="opencl")
    except Exception as err:  # noqa: BLE001 - any reason it cannot run here
        pytest.skip(f"no OpenCL device (a capturable step count lives off the CPU): {err}")
    return "opencl"


def _train(m, name, device, gradients, **options):
    import numpy as np

    w = m.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), device=device,
                 requires_grad=True)
    opt = getattr(m.optim, name)([w], **options)
    for g in gradients:
        w.grad = m.tensor(g, device=device)
        opt.step()
    return w.detach().to("cpu").numpy(), opt.state_dict()["state"][0]


@pytest.mark.parametrize("name,options", [
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("ASGD", dict(lr=0.01, weight_decay=0.1, t0=3)),
])
def test_capturable_keeps_steps_on_the_device_and_never_reads_them(name, options,
                                                                   monkeypatch):
    import numpy as np

    device = _opencl_or_skip()
    rng = np.random.default_rng(0)
    gradients = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(7)]
    want, want_state = _train(torch, name, "cpu", gradients, **options)

    def refuse(self):
        raise AssertionError("a capturable update read a tensor into Python")
    monkeypatch.setattr(ember.Tensor, "item", refuse)
    got, got_state = _train(ember, name, device, gradients, capturable=True, **options)
    monkeypatch.undo()
    # (the step-dependent factors are float32 tensor ops, as in PyTorch's capturable path)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert list(got_state) == list(want_state)
    for key, value in want_state.items():
        if value.dim() == 0:
            assert got_state[key].device.type == device and got_state[key].dtype is ember.float32
            assert abs(got_state[key].item() - value.item()) <= 1e-6 * max(1, abs(value.item()))


def test_capturable_on_the_cpu_raises_torchs_error():
    for m in (ember, torch):
        w = m.zeros(2, requires_grad=True)
        w.grad = m.ones(2)
        with pytest.raises(AssertionError, match="If capturable=True, params and state_steps "
                                                 "must be on supported devices"):
            m.optim.RAdam([w], capturable=True).step()


def test_radam_differentiable_matches_torch():
    import numpy as np

    rng = np.random.default_rng(1)
    values = [rng.standard_normal(5) for _ in range(8)]
    results = []
    for m in (torch, ember):
        p0 = m.tensor(values[0], requires_grad=True)
        gs = [m.tensor(v, requires_grad=True) for v in values[1:]]
        p = p0.clone()
        opt = m.optim.RAdam([p], lr=0.01, weight_decay=0.1, differentiable=True)
        for g in gs:
            p.grad = g
            opt.step()
        (p * p).sum().backward()
        results.append([p.detach().numpy(), p0.grad.numpy(), gs[0].grad.numpy()])
    for mine, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)


# == 5. value-wise unary ops of sparse compressed tensors ================================

VALUE_WISE = ["sin", "abs", "neg", "sqrt", "tanh", "relu", "log1p", "expm1", "sgn", "sign",
              "ceil", "floor", "round", "trunc", "frac", "asin", "asinh", "atan", "atanh", "tan",
              "sinh", "erf", "erfinv", "deg2rad", "rad2deg", "isnan", "isinf", "signbit",
              "conj_physical", "angle"]
REFUSED = ["exp", "log", "cos", "exp2", "rsqrt", "reciprocal", "sigmoid"]


def _compressed(m, layout):
    x = m.tensor([[0.0, 0.5, 0.0, -0.25], [-1.0, 0.0, 4.0, 0.0]])
    return x.to_sparse_bsr(2) if layout == "bsr" else getattr(x, f"to_sparse_{layout}")()


@pytest.mark.parametrize("layout", ["csr", "csc", "bsr"])
def test_compressed_value_wise_unary_ops_match_torch(layout):
    import numpy as np

    xs = {m: _compressed(m, layout) for m in (ember, torch)}
    for name in VALUE_WISE:
        got, want = (getattr(m, name)(x) for m, x in xs.items())
        assert str(got.layout)[6:] == str(want.layout)[6:], name
        assert str(got.dtype)[6:] == str(want.dtype)[6:], name
        np.testing.assert_allclose(got.to_dense().numpy(), want.to_dense().numpy(),
                                   rtol=1e-6, atol=1e-7, err_msg=name)
    for name in REFUSED:
        mine, theirs = (_outcome(lambda m=m, x=x, name=name: getattr(m, name)(x))
                        for m, x in xs.items())
        assert mine == theirs == ("RuntimeError", "unsupported tensor layout: "
                                  f"Sparse{layout.capitalize()}"), name


def test_compressed_methods_and_in_place_forms_match_torch():
    import numpy as np

    for expr in ("x.sin()", "x.abs_()", "x.sin_()", "x.relu_()", "x.neg_()", "x.mul_(3)",
                 "m.nn.functional.relu(x)", "x * 2", "2 * x", "x.tanh()"):
        got, want = (eval(expr, {"m": m, "x": _compressed(m, "csr")}) for m in (ember, torch))
        assert str(got.layout)[6:] == str(want.layout)[6:] == "sparse_csr", expr
        np.testing.assert_allclose(got.to_dense().numpy(), want.to_dense().numpy(),
                                   rtol=1e-6, err_msg=expr)
    for expr in ("x / 2", "x - x", "x.pow(2)", "m.nn.functional.gelu(x)", "x.clamp(0, 1)"):
        mine, theirs = (_outcome(lambda m=m, expr=expr: eval(expr, {
            "m": m, "x": _compressed(m, "csr")})) for m in (ember, torch))
        assert mine == theirs, expr


# == 4. double backward through a node PyTorch cannot differentiate twice ================

@pytest.mark.parametrize("fn", [
    lambda m, a: m.cdist(a, a[:2]),
    lambda m, a: m.nn.functional.embedding_bag(m.tensor([0, 1, 2]), a, m.tensor([0])),
])
def test_double_backward_through_once_differentiable_nodes_raises_as_torch(fn):
    import numpy as np

    outcomes = []
    for m in (ember, torch):
        a = m.tensor(np.linspace(-1, 1, 20).reshape(4, 5), requires_grad=True)
        g, = m.autograd.grad((fn(m, a) ** 2).sum(), a, create_graph=True)
        assert g.requires_grad
        outcomes.append(_outcome(lambda g=g: g.sum().backward()))
        g2, = m.autograd.grad((fn(m, a) ** 2).sum(), a)  # without create_graph: no graph
        assert not g2.requires_grad
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == "NotImplementedError"


def test_double_backward_elsewhere_still_works():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    g, = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


# == 6. PyTorch's warnings ===============================================================

def _warnings_of(call, m):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        eval(call, {"m": m})
    return [(w.category.__name__, str(w.message)) for w in caught]


@no_gpu
@pytest.mark.parametrize("call", [
    "m.cuda.amp.autocast()", "m.amp.autocast('cuda')", "m.cuda.amp.GradScaler()",
    "m.amp.GradScaler('cuda')", "m.cuda.amp.custom_fwd(lambda x: x)",
    "m.cuda.amp.custom_bwd(lambda x: x)",
])
def test_amp_without_cuda_warns_as_torch(call):
    mine = _warnings_of(call, ember)
    theirs = _warnings_of(call, torch)
    # (API names follow the import: `ember.cuda.amp...` here, `torch.` under ember.run)
    assert [(c, t.replace("torch.", "ember.")) for c, t in theirs] == mine


def test_scheduler_epoch_warning_is_torchs():
    results = []
    for m in (ember, torch):
        opt = m.optim.SGD([m.zeros(1, requires_grad=True)], lr=0.1)
        sched = m.optim.lr_scheduler.StepLR(opt, 1)
        opt.step()
        with pytest.warns(UserWarning) as caught:
            sched.step(1)
        results.append([str(w.message) for w in caught])
    assert results[0] == results[1]


def test_grad_scaler_factor_checks_are_assertions():
    for kwargs in (dict(growth_factor=1.0), dict(backoff_factor=1.0)):
        for m in (ember, torch):
            with pytest.raises(AssertionError, match="factor must be"):
                m.amp.GradScaler("cpu", **kwargs)


def _wrong_backward(m):
    class Wrong(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x * 2).sum(0)

        @staticmethod
        def backward(ctx, g):
            return g.expand(3, 2) * 3
    return Wrong.apply


def test_gradcheck_mismatch_message_is_torchs():
    import numpy as np

    messages = []
    for m in (ember, torch):
        x = m.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
        with pytest.raises(RuntimeError) as info:  # (GradcheckError, as PyTorch's)
            m.autograd.gradcheck(_wrong_backward(m), (x,))
        messages.append(str(info.value))
        assert not m.autograd.gradcheck(_wrong_backward(m), (x,), raise_exception=False)
    assert messages[0] == messages[1].replace("torch.", "ember.")


def test_gradcheck_of_float32_warns_as_torch_and_checks():
    for m in (ember, torch):
        x = m.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match=r"^Input #0 requires gradient and is not a double "
                                             r"precision floating point or complex\. "):
            m.autograd.gradcheck(lambda t: t * 2, (x,), raise_exception=False)
