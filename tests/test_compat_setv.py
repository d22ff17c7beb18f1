"""What the set V programs (Whisper's encoder, GATv2, PointNet++, FPN + RoIAlign) found
ember doing differently from PyTorch: attention rows a mask takes out entirely, matmul's
grad_fn names, GELU's error message."""

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

NEG = float("-inf")


def _grad_fn_name(t) -> str:
    return type(t.grad_fn).__name__


@pytest.mark.parametrize("mask", ["bool", "float", "causal"])
def test_sdpa_fully_masked_row_is_zero_not_nan(mask: str) -> None:
    """PyTorch's math attention (its `_safe_softmax`) gives a row that attends to nothing
    zeros, and a zero gradient, where a plain softmax gives NaN."""
    outs = []
    for lib in (torch, ember):
        q = lib.ones(1, 2, 3, requires_grad=True)
        k = lib.ones(1, 2, 3)
        v = lib.arange(6.0).view(1, 2, 3)
        kwargs = {"bool": {"attn_mask": lib.tensor([[True, False], [False, False]])},
                  "float": {"attn_mask": lib.tensor([[0.0, NEG], [NEG, NEG]])},
                  "causal": {"is_causal": True}}[mask]
        if mask == "causal":  # more keys than queries: no row fully masked
            k, v = lib.ones(1, 3, 3), lib.arange(9.0).view(1, 3, 3)
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)
        out.sum().backward()
        outs.append((out.tolist(), q.grad.tolist()))
    assert outs[1] == outs[0]


@pytest.mark.parametrize("shapes", [((2,), (2,)), ((2,), (2, 2)), ((2, 2), (2,)),
                                    ((2, 2), (2, 2)), ((2,), (2, 2, 2)), ((2, 2, 2), (2,)),
                                    ((2, 2, 2), (2, 2)), ((2, 2), (2, 2, 2)),
                                    ((2, 2, 2), (2, 2, 2)), ((2, 2, 2, 2), (2, 2))])
@pytest.mark.parametrize("which", ["input", "other"])
def test_matmul_grad_fn_names(shapes, which: str) -> None:
    """matmul's node is the last step of PyTorch's folding: Dot/Mv/Mm for small operands,
    a squeeze (vector @ matrix), an _unsafe_view of the batched product, or a clone (a
    matrix @ a batch when the matrix needs its gradient)."""
    names = []
    for lib in (torch, ember):
        a, b = lib.ones(*shapes[0]), lib.ones(*shapes[1])
        (a if which == "input" else b).requires_grad_(True)
        names.append(_grad_fn_name(lib.matmul(a, b)))
    assert names[1] == names[0]


def test_bmm_mm_mv_keep_their_names() -> None:
    for lib in (torch, ember):
        a = lib.ones(2, 2, 2, requires_grad=True)
        got = [_grad_fn_name(f) for f in (lib.bmm(a, a), lib.mm(a[0], a[0]),
                                           lib.mv(a[0], a[0, 0]), a @ a)]
        assert got == ["BmmBackward0", "MmBackward0", "MvBackward0", "UnsafeViewBackward0"]


def test_gelu_bad_approximate_message() -> None:
    for lib in (torch, ember):
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.gelu(lib.ones(2), approximate="x")
        assert str(info.value).split("\n")[0] == \
            "approximate argument must be either none or tanh."


@pytest.mark.parametrize("size", [(2, 2), (2, 3), (3, 4), (4, 2)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_antialiased_interpolate_is_row_major(size, channels_last: bool) -> None:
    """interpolate(antialias=True) writes its result in the input's memory format, not
    the transposed view its height pass leaves."""
    got = []
    for lib in (torch, ember):
        x = lib.arange(96.0).view(2, 3, 4, 4)
        if channels_last:
            x = x.to(memory_format=lib.channels_last)
        out = lib.nn.functional.interpolate(x, size=size, mode="bilinear", antialias=True)
        got.append((out.stride(), out.flatten().tolist()))
    assert got[1][0] == got[0][0]
    assert got[1][1] == pytest.approx(got[0][1], rel=1e-5)


@pytest.mark.parametrize("reduce", ["max", "min"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_takes_legacy_max_min(reduce: str, include_self: bool) -> None:
    """scatter_reduce's kernel still takes "max"/"min" (amax/amin); its backward refuses
    them, with PyTorch's message."""
    got = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, 5.0, 2.0, 7.0, 3.0], requires_grad=True)
        index = lib.tensor([0, 1, 0, 1, 3])
        out = lib.full((4,), 2.0).scatter_reduce(0, index, x, reduce, include_self=include_self)
        with pytest.raises(RuntimeError) as info:
            out.sum().backward()
        got.append((out.tolist(), str(info.value).split("\n")[0]))
    assert got[1] == got[0]
    assert got[0][1] == (f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', "
                         f"'amin' but got {reduce}.")


def _stft_refusal(lib, case: int) -> str:
    x = lib.randn(1, 2, 40) if case == 1 else lib.randn(2, 40) if case == 4 else lib.randn(40)
    kwargs = [{"center": False}, {}, {"window": lib.ones(8)}, {"hop_length": 0},
              {"win_length": 20, "onesided": True, "normalized": True}][case]
    if case == 0:
        x = x[:5]
    if case == 3:
        x = x.double()
    with pytest.raises(RuntimeError) as info:
        lib.stft(x, 16, return_complex=case != 4, **kwargs)
    return str(info.value).split("\n")[0]


@pytest.mark.parametrize("case", range(5))
def test_stft_errors_name_the_call(case: int) -> None:
    """stft's argument checks answer with PyTorch's kernel's words: the padded signal's
    type and shape and every argument, then what was wrong."""
    # (ember names its own types ember.FloatTensor, torch's under `python -m ember.run`)
    assert _stft_refusal(ember, case).replace("ember.", "torch.") == \
        _stft_refusal(torch, case)


@pytest.mark.parametrize("op", ["scatter", "scatter_add", "scatter_reduce"])
@pytest.mark.parametrize("case", ["rank", "size"])
def test_scatter_shape_errors_word_for_word(op: str, case: str) -> None:
    """The scatter family's shape checks say PyTorch's words, ember's context in a note."""
    got = []
    for lib in (torch, ember):
        if case == "rank":
            base, index, src = lib.zeros(3, 2), lib.tensor([0, 1]), lib.ones(2, 2)
        else:
            base, index, src = lib.zeros(3, 1), lib.tensor([[0, 1], [0, 0]]), lib.ones(2, 2)
        args = ("sum",) if op == "scatter_reduce" else ()
        with pytest.raises(RuntimeError) as info:
            getattr(base, op)(0, index, src, *args)
        got.append(str(info.value).split("\n")[0])
    assert got[1] == got[0]


def test_sparse_to_dense_grad_fn() -> None:
    names = []
    for lib in (torch, ember):
        values = lib.tensor([1.0, 2.0], requires_grad=True)
        adj = lib.sparse_coo_tensor(lib.tensor([[0, 1], [1, 0]]), values, (2, 2))
        dense = adj.to_dense()
        dense.pow(2).sum().backward()
        names.append((type(dense.grad_fn).__name__, values.grad.tolist()))
    assert names[1] == names[0] == ("ToDenseBackward0", [2.0, 4.0])


def test_sparse_times_sparse_grad_fn() -> None:
    """sparse @ sparse: torch.sparse.mm's node is SparseSparseMatmulBackward0, mm's and
    matmul's MmBackward0; the values' gradient flows through both factors."""
    got = []
    for lib in (torch, ember):
        values = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        adj = lib.sparse_coo_tensor(lib.tensor([[0, 1, 1, 2], [2, 0, 0, 1]]), values, (3, 3))
        products = [lib.sparse.mm(adj, adj.t()), lib.mm(adj, adj.t()), adj @ adj]
        lib.sparse.sum(products[0]).backward()
        got.append(([type(p.grad_fn).__name__ for p in products],
                    [p.to_dense().tolist() for p in products], values.grad.tolist()))
    assert got[1] == got[0]
