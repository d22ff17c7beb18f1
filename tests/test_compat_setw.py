"""What the set W programs (DPO preference training, Conv-TasNet, neural spline flows,
EGNN) and the probes around them found ember doing differently from PyTorch: autograd node
names (PReLU, grouped convolutions, CPU flash attention, linalg decompositions, einsum and
other decomposed ops), fold/unfold's unbatched inputs and errors, float-only kernels taking
integer tensors, deepcopy of a non-leaf tensor, logsigmoid's layout."""

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402


def _grad_fn_name(t) -> str:
    return type(t.grad_fn).__name__


@pytest.mark.parametrize("slopes", [1, 3])
def test_prelu_node_name_and_gradients(slopes: int) -> None:
    """Conv-TasNet's PReLU: PyTorch's one `PreluKernelBackward0` node, its gradients."""
    outs = []
    for lib in (torch, ember):
        w = lib.tensor([0.25, 0.5, 0.1][:slopes], requires_grad=True)
        x = lib.tensor([[-2.0, 3.0, -1.0], [1.0, -4.0, 0.0]], requires_grad=True)
        ys = [lib.nn.functional.prelu(x, w), lib.prelu(x, w), x.prelu(w)]
        ys[0].pow(2).sum().backward()
        outs.append(([_grad_fn_name(y) for y in ys], ys[0].tolist(), x.grad.tolist(),
                     w.grad.tolist()))
    assert outs[1][0] == outs[0][0] == ["PreluKernelBackward0"] * 3
    assert outs[1][1:] == outs[0][1:]  # (float32 products of the same numbers)


@pytest.mark.parametrize("groups,unbatched", [(1, False), (3, False), (3, True)])
def test_grouped_conv_node_is_convolution_backward(groups: int, unbatched: bool) -> None:
    """Conv-TasNet's depthwise Conv1d (groups = channels): PyTorch's one
    `ConvolutionBackward0` node for any groups; an unbatched input ends in a squeeze."""
    names, grads = [], []
    for lib in (torch, ember):
        lib.manual_seed(0)
        x = lib.arange(2 * 3 * 10, dtype=lib.float32).view(2, 3, 10).sin()
        x = (x[0] if unbatched else x).requires_grad_()
        conv = lib.nn.Conv1d(3, 3, 3, groups=groups, dilation=2, padding=2)
        with lib.no_grad():
            conv.weight.copy_(lib.linspace(-1, 1, conv.weight.numel()).view(conv.weight.shape))
        y = conv(x)
        y.pow(2).sum().backward()
        names.append(_grad_fn_name(y))
        grads.append(x.grad.flatten().tolist())
    assert names[1] == names[0] == ("SqueezeBackward1" if unbatched else "ConvolutionBackward0")
    assert grads[1] == pytest.approx(grads[0], rel=1e-5, abs=1e-5)


def test_conv2d_depthwise_and_convolution_node_names() -> None:
    for lib in (torch, ember):
        x = lib.ones(1, 4, 5, 5, requires_grad=True)
        names = [_grad_fn_name(lib.nn.functional.conv2d(x, lib.ones(4, 1, 3, 3), groups=4,
                                                         padding="same")),
                 _grad_fn_name(lib.convolution(x, lib.ones(4, 2, 3, 3), None, [1, 1], [0, 0],
                                               [1, 1], False, [0, 0], 2))]
        assert names == ["ConvolutionBackward0"] * 2


def _sdpa_cases(lib):
    q = lib.ones(2, 2, 4, 8, requires_grad=True)
    kv = lib.ones(2, 2, 4, 8)
    F = lib.nn.functional
    return {
        "plain": F.scaled_dot_product_attention(q, kv, kv),
        "causal": F.scaled_dot_product_attention(q, kv, kv, is_causal=True),
        "bool mask": F.scaled_dot_product_attention(q, kv, kv,
                                                    attn_mask=lib.ones(4, 4, dtype=lib.bool)),
        "4-d mask": F.scaled_dot_product_attention(q, kv, kv, attn_mask=lib.zeros(2, 1, 4, 4)),
        "3-d mask": F.scaled_dot_product_attention(q, kv, kv, attn_mask=lib.zeros(2, 4, 4)),
        "mask needs grad": F.scaled_dot_product_attention(
            q, kv, kv, attn_mask=lib.zeros(4, 4, requires_grad=True)),
        "dropout": F.scaled_dot_product_attention(q, kv, kv, dropout_p=0.5),
        "3-d": F.scaled_dot_product_attention(q[0], kv[0], kv[0]),
        "gqa": F.scaled_dot_product_attention(q, kv[:, :1], kv[:, :1], enable_gqa=True),
        "broadcast heads": F.scaled_dot_product_attention(q, kv[:, :1], kv[:, :1]),
        "strided rows": F.scaled_dot_product_attention(q.transpose(-1, -2), kv.mT, kv.mT),
        "head sizes": F.scaled_dot_product_attention(q, kv, kv[..., :4]),
    }


def test_sdpa_node_is_cpu_flash_where_pytorch_picks_it() -> None:
    """`grad_fn=<ScaledDotProductFlashAttentionForCpuBackward0>` where PyTorch's CPU flash
    kernel takes the call; the math path's `UnsafeViewBackward0` elsewhere."""
    t = {k: _grad_fn_name(v) for k, v in _sdpa_cases(torch).items()}
    e = {k: _grad_fn_name(v) for k, v in _sdpa_cases(ember).items()}
    assert e == t
    assert t["plain"] == "ScaledDotProductFlashAttentionForCpuBackward0"


def _linalg_names(lib) -> dict:
    a = lib.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], requires_grad=True)
    b = lib.tensor([[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]])
    linalg = lib.linalg
    outs = {
        "qr": linalg.qr(a), "svd": linalg.svd(a), "svdvals": linalg.svdvals(a),
        "eigh": linalg.eigh(a), "eigvalsh": linalg.eigvalsh(a), "inv": linalg.inv(a),
        "inverse": a.inverse(), "inv_ex": linalg.inv_ex(a)[:1],
        "cholesky_ex": linalg.cholesky_ex(a)[:1], "slogdet": linalg.slogdet(a),
        "eig": linalg.eig(a), "lu_factor": linalg.lu_factor(a)[:1], "lu": linalg.lu(a)[1:],
        "lu_solve": linalg.lu_solve(*linalg.lu_factor(a), b), "pinv": linalg.pinv(a),
        "matrix_exp": linalg.matrix_exp(a), "lstsq": linalg.lstsq(a, b)[:1],
        "cholesky_inverse": lib.cholesky_inverse(linalg.cholesky(a)),
        "cross": linalg.cross(a, b[:, :1].expand(3, 3)), "torch.cross": a.cross(a, dim=1),
        "solve_ex": linalg.solve_ex(a, b)[:1],
    }
    return {k: [_grad_fn_name(t) for t in (v if isinstance(v, tuple) else (v,))]
            for k, v in outs.items()}


def test_linalg_results_show_pytorch_node_names() -> None:
    """Q and R of `linalg.qr` (and every output of the packed decompositions) show the
    decomposition's node (`LinalgQrBackward0`), not the view that unpacks it; the
    composites pinv, matrix_exp, lstsq, lu, lu_solve, cholesky_inverse, cross theirs."""
    assert _linalg_names(ember) == _linalg_names(torch)


def test_deprecated_and_conv_warnings_point_at_the_caller() -> None:
    import warnings
    for lib in (torch, ember):
        a = lib.tensor([[2.0, 1.0], [1.0, 3.0]])
        LU, piv = lib.linalg.lu_factor(a)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.lu_solve(lib.ones(2, 1), LU, piv)
            lib.nn.functional.conv1d(lib.ones(1, 1, 8), lib.ones(1, 1, 4), padding="same")
        files = {w.filename for w in caught}
        # (PyTorch warns once per process: a second run may warn nothing)
        assert files <= {__file__}, files


EINSUMS = {"bij,bkj->bik": ((2, 3, 4), (2, 5, 4)), "ij,jk": ((3, 4), (4, 5)),
           "i,i->": ((4,), (4,)), "i,j->ij": ((3,), (4,)), "ij,ij->ij": ((3, 4), (3, 4)),
           "ii->i": ((4, 4),), "ij->ji": ((3, 4),), "ij->j": ((3, 4),), "ii": ((3, 3),),
           "ij,k->k": ((3, 4), (5,)), "i,i,i->i": ((4,), (4,), (4,)),
           "...ij,...jk->...ik": ((2, 3, 4), (4, 5))}


@pytest.mark.parametrize("equation", list(EINSUMS))
def test_einsum_node_is_the_last_step_of_pytorch_einsum(equation: str) -> None:
    """EGNN/flow einsums: PyTorch's einsum is no node of its own; its result shows its last
    step: a bmm's view, a product, a lone operand's sum or permute."""
    names = []
    for lib in (torch, ember):
        ops = [lib.ones(*s, requires_grad=i == 0) for i, s in enumerate(EINSUMS[equation])]
        names.append(_grad_fn_name(lib.einsum(equation, *ops)))
    assert names[1] == names[0]


def test_diag_and_diag_embed_node_names() -> None:
    for lib in (torch, ember):
        a = lib.ones(3, 3, requires_grad=True)
        v = lib.ones(3, requires_grad=True)
        names = [_grad_fn_name(t) for t in (lib.diag(a), a.diag(1), lib.diag(v),
                                             lib.diag_embed(v), lib.diagflat(v))]
        assert names == ["DiagonalBackward0_copy"] * 2 + ["DiagEmbedBackward0"] * 3


def _named_results(lib) -> dict:
    m = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
    index = lib.tensor([[0, 2, 1], [1, 0, 2]])
    outs = {
        "logcumsumexp": m.logcumsumexp(1), "cummax": m.cummax(1)[0], "cummin": m.cummin(0)[0],
        "scatter value": m.scatter(1, index, 1.0), "scatter src": m.scatter(1, index, m * 2),
        "baddbmm": lib.baddbmm(m.mT[None] @ m[None], m.mT[None], m[None]),
        "sinc": m.sinc(), "sgn": m.sgn(),
        "nansum": m.nansum(), "renorm": m.renorm(2, 0, 1.0), "prod": m.prod(),
        "prod dim": m.prod(1), "block_diag": lib.block_diag(m, m),
        "masked_scatter": m.masked_scatter(m > 0, lib.ones(6)), "median": m.median(),
        "median dim": m.median(1)[0], "nanmedian dim": m.nanmedian(0)[0],
        "mode": m.mode(1)[0], "complex": lib.complex(m, m), "polar": lib.polar(m.abs(), m),
        "pairwise_distance": lib.nn.functional.pairwise_distance(m, m.flip(0)),
        "kron": lib.kron(m, m), "repeat_interleave": m.repeat_interleave(2, dim=0),
        "repeat_interleave tensor": m.repeat_interleave(lib.tensor([1, 2]), dim=0),
        "trapezoid": lib.trapezoid(m), "trapezoid x": lib.trapezoid(m, lib.arange(3.0)),
        "cumulative_trapezoid": lib.cumulative_trapezoid(m),
        "quantile": lib.quantile(m, 0.5, dim=1, keepdim=True),
    }
    return {k: _grad_fn_name(v) for k, v in outs.items()}


def test_composite_ops_show_pytorch_node_names() -> None:
    """Ops ember writes as decompositions show PyTorch's one node (`CummaxBackward0`,
    `SincBackward0`, ...), and the overloads PyTorch numbers apart (`ScatterBackward1` for a
    scalar value, `ProdBackward1` / `MedianBackward1` along a dim) theirs."""
    assert _named_results(ember) == _named_results(torch)


def test_logsigmoid_result_is_row_major() -> None:
    """DPO's F.logsigmoid: PyTorch's kernel returns a contiguous tensor whatever the
    input's layout (where elementwise ops keep it)."""
    for lib in (torch, ember):
        x = lib.arange(24.0).view(2, 3, 4).sub(12.0).requires_grad_()
        for t in (x.transpose(1, 2), x[:, :, ::2], x.permute(2, 0, 1)):
            y = lib.nn.functional.logsigmoid(t)
            assert y.is_contiguous() and _grad_fn_name(y) == "LogSigmoidBackward0"


def test_circular_pad_node_is_copy_slices() -> None:
    for lib in (torch, ember):
        x = lib.arange(10.0).view(1, 2, 5).requires_grad_()
        y = lib.nn.functional.pad(x, (1, 2), mode="circular")
        z = lib.nn.functional.pad(x.view(1, 1, 2, 5), (1, 1, 1, 0), mode="circular")
        assert [_grad_fn_name(y), _grad_fn_name(z)] == ["CopySlices"] * 2


def test_fold_unfold_unbatched_and_node_names() -> None:
    """Conv-TasNet's overlap-add by F.fold: PyTorch's fold/unfold take an unbatched
    (C*k, L) / (C, H, W) input too, one Col2Im/Im2Col node either way."""
    outs = []
    for lib in (torch, ember):
        F = lib.nn.functional
        x = lib.arange(18.0).view(2, 3, 3).requires_grad_()
        u = F.unfold(x, 2)
        f = F.fold(u, (3, 3), 2)
        f.sum().backward()
        outs.append((tuple(u.shape), tuple(f.shape), _grad_fn_name(u), _grad_fn_name(f),
                     f.flatten().tolist(), x.grad.flatten().tolist()))
    assert outs[1] == outs[0]


FOLD_ERRORS = [
    ("fold", (1, 4, 5), dict(output_size=(1, 10), kernel_size=(1, 4), stride=(1, 2))),
    ("fold", (2, 5, 4), dict(output_size=(1, 10), kernel_size=(1, 4), stride=(1, 2))),
    ("fold", (4,), dict(output_size=(1, 10), kernel_size=(1, 4))),
    ("fold", (1, 4, 0), dict(output_size=(1, 2), kernel_size=(1, 4))),
    ("fold", (1, 4, 1), dict(output_size=(1, 2), kernel_size=(1, 4))),
    ("fold", (1, 4, 4), dict(output_size=(1, 10), kernel_size=(1, 4), stride=0)),
    ("fold", (1, 4, 4), dict(output_size=(1, 10), kernel_size=(1, 4), padding=-1)),
    ("unfold", (1, 2, 3, 5), dict(kernel_size=(4, 2))),
    ("unfold", (4,), dict(kernel_size=2)),
    ("unfold", (0, 4), dict(kernel_size=2)),
    ("unfold", (2, 0, 3, 3), dict(kernel_size=2)),
    ("unfold", (2, 3, 3), dict(kernel_size=2, dilation=0)),
]


@pytest.mark.parametrize("fn,shape,kwargs", FOLD_ERRORS)
def test_fold_unfold_errors(fn: str, shape: tuple, kwargs: dict) -> None:
    errors = []
    for lib in (torch, ember):
        with pytest.raises(Exception) as info:
            getattr(lib.nn.functional, fn)(lib.zeros(shape), **kwargs)
        errors.append((type(info.value), str(info.value)))
    assert errors[1] == errors[0]


INTEGER_REFUSALS = {
    "logsigmoid": lambda F, x: F.logsigmoid(x), "softplus": lambda F, x: F.softplus(x),
    "silu": lambda F, x: F.silu(x), "gelu": lambda F, x: F.gelu(x), "elu": lambda F, x: F.elu(x),
    "selu": lambda F, x: F.selu(x), "celu": lambda F, x: F.celu(x),
    "mish": lambda F, x: F.mish(x), "hardswish": lambda F, x: F.hardswish(x),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x), "leaky_relu": lambda F, x: F.leaky_relu(x),
    "softshrink": lambda F, x: F.softshrink(x), "hardshrink": lambda F, x: F.hardshrink(x),
    "prelu": lambda F, x: F.prelu(x, x[:1]), "frac": lambda F, x: x.frac(),
    "hypot": lambda F, x: x.hypot(x), "logaddexp": lambda F, x: x.logaddexp(x),
    "logaddexp2": lambda F, x: x.logaddexp2(x),
}


@pytest.mark.parametrize("name", list(INTEGER_REFUSALS))
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_float_kernels_refuse_integer_tensors(name: str, dtype: str) -> None:
    """PyTorch's activations have no integer kernel: `"silu_cpu" not implemented for
    'Long'`, where ember computed them in float."""
    errors = []
    for lib in (torch, ember):
        x = lib.tensor([1, 0, 3]).to(getattr(lib, dtype))
        with pytest.raises(Exception) as info:
            INTEGER_REFUSALS[name](lib.nn.functional, x)
        errors.append((type(info.value).__name__, str(info.value)))
    assert errors[1] == errors[0]


def test_deepcopy_refuses_a_non_leaf_tensor() -> None:
    """DPO's `copy.deepcopy(policy)`: leaves copy (requires_grad kept); a tensor made by
    an op that records a graph raises PyTorch's error."""
    import copy
    errors = []
    for lib in (torch, ember):
        leaf = lib.ones(2, requires_grad=True)
        twin = copy.deepcopy(leaf)
        assert twin.requires_grad and twin.is_leaf and twin is not leaf
        with pytest.raises(RuntimeError) as info:
            copy.deepcopy(leaf * 2)
        errors.append(str(info.value))
    assert errors[1] == errors[0]
