"""What the set X programs (3D U-Net, Monodepth2, DeepAR, FT-Transformer with sparsemax)
found ember doing differently from PyTorch: `out=` of the quantiles, the resize warning's
full text."""

import math
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


def _sparsemax_classes(lib):
    """A sparsemax in the two styles of custom Function: ctx in forward, and PyTorch 2's
    ctx-less forward with setup_context (its default `dim` bound for setup_context)."""
    def threshold(x, dim):
        srt, _ = lib.sort(x, dim=dim, descending=True)
        cs = srt.cumsum(dim) - 1
        rho = lib.arange(1, x.shape[dim] + 1, dtype=x.dtype)
        support = (rho * srt > cs).sum(dim, keepdim=True)
        return cs.gather(dim, support - 1) / support.to(x.dtype)

    def gradient(ctx, g):
        out, = ctx.saved_tensors
        g = g * (out > 0)
        v = g.sum(ctx.dim, keepdim=True) / (out > 0).sum(ctx.dim, keepdim=True)
        return lib.where(out > 0, g - v, g), None

    class WithCtx(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, dim=-1):
            ctx.dim = dim
            out = lib.clamp(x - threshold(x, dim), min=0)
            ctx.save_for_backward(out)
            return out

        backward = staticmethod(gradient)

    class WithSetup(lib.autograd.Function):
        @staticmethod
        def forward(x, dim=-1):
            return lib.clamp(x - threshold(x, dim), min=0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.dim = inputs[1]
            ctx.save_for_backward(output)

        backward = staticmethod(gradient)

    class WithVjp(lib.autograd.Function):
        forward = WithCtx.forward
        vjp = staticmethod(gradient)

    return WithCtx, WithSetup, WithVjp


@pytest.mark.parametrize("style", [0, 1, 2])
def test_custom_function_styles(style: int) -> None:
    """forward(ctx, ...) + backward, forward(...) + setup_context, and `vjp` for backward."""
    got = []
    for lib in (torch, ember):
        fn = _sparsemax_classes(lib)[style]
        x = lib.tensor([[1.0, 0.8, 0.1, -1.0], [0.2, 0.2, 0.2, 0.2]], requires_grad=True)
        y = fn.apply(x)
        (y * lib.arange(4.0)).sum().backward()
        got.append((y.flatten().tolist(), x.grad.flatten().tolist(), type(y.grad_fn).__name__))
    assert got[1][2] == got[0][2]
    assert got[1][0] == pytest.approx(got[0][0]) and got[1][1] == pytest.approx(got[0][1])


def _function_errors(lib, case: str):
    x = lib.ones(2, requires_grad=True)

    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    if case == "too many":
        Twice.backward = staticmethod(lambda ctx, g: (g, g))
    elif case == "extra nones":
        Twice.backward = staticmethod(lambda ctx, g: (g, None, None))
    elif case == "both":
        Twice.backward = Twice.vjp = staticmethod(lambda ctx, g: g)
    elif case == "instance":
        with pytest.warns(DeprecationWarning, match="should not be instantiated"):
            return Twice()(x)
    Twice.apply(x).sum().backward()
    return x.grad.tolist()


@pytest.mark.parametrize("case", ["none", "too many", "extra nones", "both", "instance"])
def test_custom_function_errors(case: str) -> None:
    """A backward missing, returning too many gradients (trailing Nones are dropped),
    both backward and vjp, a Function instance called: PyTorch's errors."""
    outcomes = []
    for lib in (torch, ember):
        try:
            outcomes.append(_function_errors(lib, case))
        except Exception as e:  # noqa: BLE001 - the error is the result compared
            outcomes.append((type(e), str(e)))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("equation,shapes", [
    ("bf,fd->bfd", [(2, 3), (3, 5)]), ("bf,fd->dfb", [(2, 3), (3, 5)]),
    ("bf,fd->fbd", [(2, 3), (3, 5)]), ("fd,bf->bfd", [(3, 5), (2, 3)]),
    ("bij,bjk->bijk", [(2, 3, 4), (2, 4, 5)]), ("ij,j->ij", [(2, 3), (3,)]),
    ("j,ij->ji", [(3,), (2, 3)]), ("ab,cd->dbca", [(2, 3), (4, 5)]),
    ("abc,cba->bca", [(2, 3, 4), (4, 3, 2)]), ("ab,bc,cd->abcd", [(2, 3), (3, 4), (4, 5)]),
    ("ab,bc,cd->acd", [(2, 3), (3, 4), (4, 5)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
])
def test_einsum_product_layout(equation: str, shapes: list) -> None:
    """An einsum with nothing to contract in its last pair is PyTorch's elementwise
    product, laid out as its TensorIterator lays it out (FT-Transformer's
    `einsum("bf,fd->bfd", x, weight)` is row-major)."""
    got = []
    for lib in (torch, ember):
        out = lib.einsum(equation, *[lib.ones(*s) for s in shapes])
        got.append((tuple(out.shape), out.stride()))
    assert got[1] == got[0]


POOLS_3D = {
    "avg": lambda F, x: F.avg_pool3d(x, 2),
    "avg padded": lambda F, x: F.avg_pool3d(x, 3, 1, 1, count_include_pad=False),
    "adaptive avg": lambda F, x: F.adaptive_avg_pool3d(x, (3, 4, 5)),
    "adaptive avg to one": lambda F, x: F.adaptive_avg_pool3d(x, 1),
    "adaptive max": lambda F, x: F.adaptive_max_pool3d(x, 2, return_indices=True),
    "max": lambda F, x: F.max_pool3d(x, 2, return_indices=True),
    "lp": lambda F, x: F.lp_pool3d(x.abs(), 2, 2),
    "fractional": lambda F, x: F.fractional_max_pool3d(x, 2, output_size=2,
                                                       return_indices=True),
}


@pytest.mark.parametrize("pool", list(POOLS_3D))
def test_3d_pools_of_channels_last_input(pool: str) -> None:
    """PyTorch's CPU avg_pool3d and adaptive 3-d pools write a channels_last_3d input's
    result row-major (max_pool3d keeps the layout); node names, the pooled-to-one mean's
    as_strided included; the gradient channels-last."""
    got = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        x = lib.randn(2, 3, 4, 6, 6).to(memory_format=lib.channels_last_3d)
        x.requires_grad_()
        out = POOLS_3D[pool](lib.nn.functional, x)
        outs = out if isinstance(out, tuple) else (out,)
        outs[0].sum().backward()
        got.append(([o.stride() for o in outs], x.grad.stride(), outs[0].grad_fn.name()))
    assert got[1] == got[0]


@pytest.mark.parametrize("n", [2, 3])
def test_adaptive_avg_pool_to_one_node_names(n: int) -> None:
    names = []
    for lib in (torch, ember):
        x = lib.ones(*[2, 3, 4, 5, 6][:n + 2], requires_grad=True)
        cl = x.detach().to(memory_format=lib.channels_last if n == 2 else lib.channels_last_3d)
        pool = getattr(lib.nn.functional, f"adaptive_avg_pool{n}d")
        names.append([pool(t, 1).grad_fn.name() for t in (x, x[0], cl.requires_grad_())])
    assert names[1] == names[0]


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_node_name(n: int) -> None:
    names = []
    for lib in (torch, ember):
        x = lib.ones(*[1, 2, 6, 6, 6][:n + 2], requires_grad=True)
        pool = getattr(lib.nn.functional, f"fractional_max_pool{n}d")
        names.append([pool(t, 2, output_size=2).grad_fn.name() for t in (x, x[0])])
    assert names[1] == names[0]


@pytest.mark.parametrize("sequences,side", [("one", "middle"), ("none", "middle"),
                                            ("none", "left")])
def test_pad_sequence_refusals(sequences: str, side: str) -> None:
    """An empty list is refused first, then a bad padding_side (both RuntimeErrors)."""
    errors = []
    for lib in (torch, ember):
        seqs = [lib.ones(2)] if sequences == "one" else []
        errors.append(_error(lambda lib=lib, seqs=seqs: lib.nn.utils.rnn.pad_sequence(
            seqs, padding_side=side)))
    assert errors[1] == errors[0]


def test_broadcast_all_refusal_text() -> None:
    errors = [_error(lambda lib=lib: lib.distributions.utils.broadcast_all("a", lib.ones(1)))
              for lib in (torch, ember)]
    assert errors[1] == errors[0]


CONV_GRAD_CASES = {
    1: ((2, 4, 9), (6, 2, 3), {"stride": 2, "padding": 1, "groups": 2}),
    2: ((2, 3, 7, 8), (4, 3, 3, 2), {"stride": (2, 1), "padding": (1, 0), "dilation": 2}),
    3: ((1, 2, 5, 6, 5), (3, 2, 2, 3, 2), {"padding": 1}),
}


@pytest.mark.parametrize("n", [1, 2, 3])
def test_nn_grad_conv_input_and_weight(n: int) -> None:
    """torch.nn.grad (also F.grad) gives a convolution's input and weight gradients, as a
    custom Function's backward reuses them (the conv + batch-norm fusion tutorial)."""
    got = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        xs, ws, kw = CONV_GRAD_CASES[n]
        x, w = lib.randn(*xs, requires_grad=True), lib.randn(*ws, requires_grad=True)
        go = lib.randn(getattr(lib.nn.functional, f"conv{n}d")(x, w, None, **kw).shape)
        gi = getattr(lib.nn.grad, f"conv{n}d_input")(x.shape, w, go, **kw)
        gw = getattr(lib.nn.functional.grad, f"conv{n}d_weight")(x, w.shape, go, **kw)
        got.append((gi.detach().numpy(), gw.detach().numpy(), gi.requires_grad,
                    lib.nn.grad.conv1d_input((1, 1, 4), lib.ones(1, 1, 2),
                                             lib.ones(1, 1, 3)).requires_grad))
    assert got[1][2:] == got[0][2:]
    for e, t in zip(got[1][:2], got[0][:2]):
        assert e == pytest.approx(t, rel=1e-4, abs=1e-5)


def test_replace_all_batch_norm_modules_() -> None:
    got = []
    for lib in (torch, ember):
        m = lib.nn.Sequential(lib.nn.BatchNorm2d(2), lib.nn.Sequential(lib.nn.BatchNorm1d(3)))
        assert lib.func.replace_all_batch_norm_modules_(m) is m
        got.append((repr(m), list(m.state_dict()), m[0].running_var, m[1][0].num_batches_tracked))
    assert got[1] == got[0]


def test_small_autograd_and_functional_names() -> None:
    """torch.autograd.anomaly_mode, (set_/is_)multithreading_enabled and F's grid-sample
    mode tables."""
    for lib in (torch, ember):
        assert lib.autograd.anomaly_mode.detect_anomaly is lib.autograd.detect_anomaly
        with lib.autograd.set_multithreading_enabled(False):
            assert not lib.autograd.is_multithreading_enabled()
        assert lib.autograd.is_multithreading_enabled()
    F, G = torch.nn.functional, ember.nn.functional
    assert G.GRID_SAMPLE_INTERPOLATION_MODES == F.GRID_SAMPLE_INTERPOLATION_MODES
    assert G.GRID_SAMPLE_PADDING_MODES == F.GRID_SAMPLE_PADDING_MODES


@pytest.mark.parametrize("kwargs", [{}, {"batch_chunk_size": 4, "chunking_method": None},
                                    {"acc_policy": "x"}, {"chunking_method": "aspect_ratio:0"},
                                    {"chunking_method": "aspect_ratio:3"},
                                    {"batch_chunk_size": 0}, {"acc_dtype": "int32"}])
def test_linear_cross_entropy_options(kwargs: dict) -> None:
    """nn.LinearCrossEntropyOptions (PyTorch 2.13): its fields, repr and refusals; the
    loss it is given to is PyTorch's."""
    got = []
    for lib in (torch, ember):
        kw = {k: getattr(lib, v) if k == "acc_dtype" else v for k, v in kwargs.items()}
        try:
            options = lib.nn.LinearCrossEntropyOptions(**kw)
        except ValueError as e:
            got.append(str(e).replace("ember.", "torch."))
            continue
        lib.manual_seed(0)
        x, w, y = lib.randn(8, 4), lib.randn(10, 4), lib.randint(0, 10, (8,))
        # (PyTorch's chunked path takes seconds to load on its first call: its loss is
        # the reference path's, which it is compared with)
        loss = lib.nn.functional.linear_cross_entropy(
            x, w, y, options=options if lib is ember else None)
        got.append((repr(options), round(loss.item(), 5)))
    assert got[1] == got[0]


def _function_misuse(lib, case: str):
    x = lib.ones(2, requires_grad=True)

    class Fn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if case == "save int":
                ctx.save_for_backward(3)
            if case == "dirty leaf":
                x.mul_(2)
                ctx.mark_dirty(x)
                return x
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return "a" if case == "str grad" else g

    y = Fn.apply(x)
    if case == "metadata":
        y.grad_fn.metadata["tag"] = 1
        return y.grad_fn.metadata, (x * 2).grad_fn.metadata
    y.sum().backward()
    return x.grad.tolist()


@pytest.mark.parametrize("case", ["save int", "dirty leaf", "str grad", "metadata"])
def test_custom_function_misuse(case: str) -> None:
    """save_for_backward of a non-tensor, mark_dirty of a leaf that requires grad, a
    backward returning a non-tensor: PyTorch's errors; grad_fn.metadata is a kept dict."""
    outcomes = []
    for lib in (torch, ember):
        try:
            outcomes.append(_function_misuse(lib, case))
        except Exception as e:  # noqa: BLE001 - the error is the result compared
            outcomes.append((type(e), str(e)))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("case", ["append rows", "prepend rank", "prepend 1-d", "scalar",
                                  "dim 0", "long append"])
def test_diff_prepend_append_checks(case: str) -> None:
    """diff's prepend/append must have the input's rank and its sizes off `dim` (a 0-d
    one is refused too, as PyTorch 2.13 does)."""
    outcomes = []
    for lib in (torch, ember):
        x = lib.arange(15.0).view(3, 5)
        kw = {"append rows": {"append": lib.zeros(2, 1)},
              "prepend rank": {"prepend": lib.zeros(3, 1, 1)},
              "prepend 1-d": {"prepend": lib.zeros(5)}, "scalar": {"prepend": lib.tensor(1.0)},
              "dim 0": {"dim": 0, "append": lib.zeros(1, 4)},
              "long append": {"append": lib.ones(3, 2, dtype=lib.long)}}[case]
        try:
            outcomes.append(lib.diff(x, **kw).tolist())
        except RuntimeError as e:
            outcomes.append(str(e))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("case", ["no_grad", "grad", "front padding", "with mask",
                                  "fast path off", "norm_first"])
def test_transformer_encoder_nested_fast_path_padding(case: str) -> None:
    """PyTorch's TransformerEncoder in inference with a key padding mask runs on nested
    tensors and pads them back with zeros (before its final norm); where it does not take
    that path, the padded positions are computed."""
    got = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        nn = lib.nn
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                           norm_first=case == "norm_first")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8)).eval()
        x = lib.randn(2, 5, 8)
        pad = lib.tensor([[False] * 5, [False] * 3 + [True] * 2])
        if case == "front padding":
            pad = pad.flip(1)
        kw = {"mask": lib.zeros(5, 5, dtype=lib.bool)} if case == "with mask" else {}
        lib.backends.mha.set_fastpath_enabled(case != "fast path off")
        try:
            with warnings.catch_warnings(), lib.set_grad_enabled(case == "grad"):
                warnings.simplefilter("ignore")
                out = enc(x, src_key_padding_mask=pad, **kw)
        finally:
            lib.backends.mha.set_fastpath_enabled(True)
        got.append((enc.use_nested_tensor, out.detach().numpy()))
    assert got[1][0] == got[0][0]
    assert got[1][1] == pytest.approx(got[0][1], abs=1e-5)


@pytest.mark.parametrize("value", ["int32", "bool", "complex64", "float"])
def test_set_default_dtype_refusal_text(value: str) -> None:
    errors = []
    for lib in (torch, ember):
        d = getattr(lib, value) if value != "float" else "float"
        errors.append(_error(lambda lib=lib, d=d: lib.set_default_dtype(d)))
    assert errors[1] == errors[0]


@pytest.mark.parametrize("ndim", [1, 2, 4, 5])
@pytest.mark.parametrize("weight_shape", [(4,), (1, 3)])
def test_class_weight_checks_by_rank(ndim: int, weight_shape: tuple) -> None:
    """nll_loss/cross_entropy over more than 2 dims (PyTorch's nll_loss2d) check only the
    weight's element count, in other words than the 1-2 dim ones."""
    outcomes = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        x = lib.randn(*(2, 3, 2, 2, 2)[:ndim]) if ndim > 1 else lib.randn(3)
        y = lib.zeros(*(2, 2, 2, 2)[:ndim - 1], dtype=lib.long) if ndim > 1 else lib.tensor(1)
        w = lib.arange(1.0, 1.0 + math.prod(weight_shape)).reshape(weight_shape)
        try:
            outcomes.append(round(lib.nn.functional.cross_entropy(x, y, weight=w).item(), 5))
        except RuntimeError as e:
            outcomes.append(str(e))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("target,strict,what", [
    ("0.conv", False, "module"), ("0.new", False, "module"), ("0.new", True, "module"),
    ("", False, "module"), ("0.conv", False, "int"), ("0.conv.weight", False, "module"),
    ("0.conv.bias.x", False, "module"), ("1", False, "module")])
def test_module_set_submodule(target: str, strict: bool, what: str) -> None:
    """Module.set_submodule (used to swap layers, e.g. for quantization or LoRA)."""
    outcomes = []
    for lib in (torch, ember):
        nn = lib.nn
        inner = nn.Module()
        inner.conv = nn.Conv2d(1, 2, 3)
        root = nn.Sequential(inner, nn.ReLU())
        module = nn.Identity() if what == "module" else 3
        try:
            root.set_submodule(target, module, strict=strict)
            outcomes.append(repr(root))
        except (ValueError, AttributeError) as e:
            outcomes.append((type(e), str(e)))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("case", ["linear", "linear input grad", "relu", "conv", "sequential",
                                  "no bias", "zeroing"])
def test_module_register_backward_hook(case: str) -> None:
    """The deprecated non-full Module.register_backward_hook: the hook sees the gradients
    of the module's last autograd node (Linear's addmm: bias, input, weight.T)."""
    got = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        nn = lib.nn
        mod, x = {"linear": (nn.Linear(3, 2), lib.randn(4, 3)),
                  "linear input grad": (nn.Linear(3, 2), lib.randn(4, 3, requires_grad=True)),
                  "relu": (nn.ReLU(), lib.randn(4, 3, requires_grad=True)),
                  "conv": (nn.Conv2d(1, 2, 3), lib.randn(1, 1, 5, 5, requires_grad=True)),
                  "sequential": (nn.Sequential(nn.Linear(3, 3), nn.Tanh()),
                                 lib.randn(2, 3, requires_grad=True)),
                  "no bias": (nn.Linear(3, 2, bias=False), lib.randn(4, 3, requires_grad=True)),
                  "zeroing": (nn.Linear(3, 2), lib.randn(4, 3, requires_grad=True))}[case]
        seen = []

        def hook(m, gi, go, seen=seen):
            seen.append([None if g is None else g.detach().numpy().round(4).tolist()
                         for g in gi] + [len(go)])
            if case == "zeroing":
                return tuple(None if g is None else g * 0 for g in gi)

        mod.register_backward_hook(hook)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (mod(x) * lib.arange(1.0, 1.0 + mod(x).shape[-1])).sum().backward()
        grads = [p.grad.abs().sum().item() for p in mod.parameters()]
        got.append((seen, round(sum(grads), 4)))
    assert got[1] == got[0]


def test_backward_hook_kinds_do_not_mix() -> None:
    for lib in (torch, ember):
        m = lib.nn.Linear(2, 2)
        m.register_backward_hook(lambda *a: None)
        assert _error(lambda m=m: m.register_full_backward_hook(lambda *a: None)) == (
            RuntimeError, "Cannot use both regular backward hooks and full backward hooks on "
            "a single Module. Please use only one of them.")


def test_node_register_hook_handle() -> None:
    """grad_fn.register_hook returns a RemovableHandle whose remove() takes the hook off."""
    calls = []
    for lib in (torch, ember):
        x = lib.ones(2, requires_grad=True)
        y = (x * 2).sum()
        kept = y.grad_fn.register_hook(lambda gi, go, lib=lib: calls.append(lib.__name__))
        removed = y.grad_fn.register_hook(lambda gi, go: calls.append("removed"))
        assert type(kept).__name__ == "RemovableHandle"
        removed.remove()
        y.backward()
    assert calls == ["torch", "ember"]
