"""What the programs of set AG (printed forms; dtype semantics) needed of ember, checked
against PyTorch: grad_fn names of indexed writes, their errors, printing edge values."""

from __future__ import annotations

import warnings

import pytest

import ember

torch = pytest.importorskip("torch")

_WRITE_KEYS = [0, (0, 1), slice(1, 2), (slice(None), 1), (slice(None), [0]), (0, [1]), ([0], 1),
               ([0, 1],), (Ellipsis, 1), None, (None, 0), slice(None), Ellipsis,
               (slice(None), slice(None)), (slice(None), slice(0, 2)), True, (True, 0)]


@pytest.mark.parametrize("key", _WRITE_KEYS, ids=repr)
def test_indexed_write_names_pytorchs_node(key):
    """`y[key] = v` on a tensor in the graph: CopySlices when the indexing makes a view to
    write into, IndexPutBackward0 for tensor indices alone, FillBackward3 / CopyBackwards
    when the whole tensor is written; the gradient is the same whatever the name."""
    names, grads = [], []
    for lib in (torch, ember):
        w = lib.arange(12.0).reshape(3, 4).requires_grad_()
        row = []
        for value in (0.5, lib.tensor(0.5, requires_grad=True), lib.ones(4)):
            y = w * 1
            try:
                y[key] = value
            except RuntimeError as e:  # a shape the value cannot take: the same refusal
                row.append(str(e).replace("ember.", "torch."))
                continue
            row.append(type(y.grad_fn).__name__)
            (y * lib.arange(12.0).reshape(3, 4)).sum().backward()
        names.append(row)
        grads.append(w.grad.tolist())
    assert names[1] == names[0]
    assert grads[1] == grads[0]


def test_indexed_write_into_a_leaf_names_the_view():
    """A key that makes a view refuses a leaf that requires grad in the view's words."""
    for key, words in [(0, "a view of a leaf Variable"), (slice(0, 1), "a view of a leaf"),
                       ([0], "^a leaf Variable"), ((0, 0), "a view of a leaf")]:
        for lib in (torch, ember):
            w = lib.zeros(3, 2, requires_grad=True)
            with pytest.raises(RuntimeError, match=words):
                w[key] = 1.0
    w = ember.zeros(2, requires_grad=True)
    with ember.no_grad():
        w[0] = 1.0
    assert w.tolist() == [1.0, 0.0]


def test_index_fill_node_names():
    """index_fill records IndexFillBackward0 for a number, IndexFillBackward1 for a 0-d
    tensor, in place or not."""
    got = []
    for lib in (torch, ember):
        w = lib.randn(3, 2, requires_grad=True)
        idx = lib.tensor([0])
        y = w.clone()
        row = [type(y.index_fill(0, idx, 1.0).grad_fn).__name__,
               type(lib.index_fill(y, 1, idx, lib.tensor(2.0)).grad_fn).__name__,
               type(y.index_fill_(0, idx, lib.tensor(2.0)).grad_fn).__name__]
        got.append(row)
    assert got[1] == got[0] == ["IndexFillBackward0", "IndexFillBackward1",
                                "IndexFillBackward1"]


def test_printing_a_subnormal_warns_nothing():
    """A float64 subnormal beside 1.0: the ratio of magnitudes overflows to inf (scientific
    notation), with no numpy overflow warning."""
    values = [5e-324, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = str(ember.tensor(values, dtype=ember.float64))
    assert got.replace("ember.", "torch.") == str(torch.tensor(values, dtype=torch.float64))


def _outcome(fn, *args, **kwargs):
    """fn(*args, **kwargs)'s value as a list, or its error as (type name, message)."""
    try:
        return fn(*args, **kwargs).tolist()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e).replace("ember.", "torch.")


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64", "int8", "int64",
                                   "bool"])
@pytest.mark.parametrize("value", [-1, -129, -255, -256, -300, 255, 256, float("nan"), 3.7, -1.0],
                         ids=repr)
def test_tensor_of_python_numbers_into_integer_dtypes(dtype, value):
    """torch.tensor([v], dtype=...): a negative int down to -max wraps into uint8/16/32
    (-1 is 255), NaN overflows an integer dtype (and is true as a bool), uint64 takes no
    float and no negative int, in PyTorch's words."""
    got = _outcome(ember.tensor, [value], dtype=getattr(ember, dtype))
    want = _outcome(torch.tensor, [value], dtype=getattr(torch, dtype))
    assert got == want


def test_tensor_of_a_range_and_of_bigger_tensors():
    """A range is a sequence (`tensor(range(3))`, a list of ranges); a tensor of several
    elements inside a list fails as PyTorch reads a number of the dtype: __index__'s
    TypeError for an integer dtype, __float__'s ValueError for a floating one."""
    assert ember.tensor(range(3)).tolist() == torch.tensor(range(3)).tolist()
    assert ember.tensor([range(2), range(2)]).dtype == ember.int64
    for data, kw in [(lambda lib: [lib.tensor([1, 2]), 3], {}),
                     (lambda lib: [lib.tensor([1.5, 2]), 3], {}),
                     (lambda lib: [lib.tensor([1, 2]), 3], {"dtype": "float16"}),
                     (lambda lib: [lib.tensor([1, 2]), 3], {"dtype": "bool"})]:
        outcomes = []
        for lib in (torch, ember):
            extra = {k: getattr(lib, v) for k, v in kw.items()}
            outcomes.append(_outcome(lib.tensor, data(lib), **extra))
        assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_one_element_fill_of_half_types_is_unchecked(dtype):
    """PyTorch fills a single float16/bfloat16 element without its overflow check (1e5
    becomes inf) but checks a bigger fill; float32 is always checked."""
    for make in (lambda lib, v: lib.full((1,), v, dtype=getattr(lib, dtype)),
                 lambda lib, v: lib.full((2,), v, dtype=getattr(lib, dtype)),
                 lambda lib, v: lib.scalar_tensor(v, dtype=getattr(lib, dtype)),
                 lambda lib, v: lib.zeros(1, dtype=getattr(lib, dtype)).new_full((1,), v)):
        for value in (65519.0, 65520.0, 1e5, -1e39, 1e300):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                got = _outcome(make, ember, value)
            assert got == _outcome(make, torch, value), (value, make)


def test_bfloat16_promotes_with_complex_to_complex64():
    """bfloat16 has float32's range: with a complex operand its result is complex64."""
    x = ember.tensor([1.0, 2.0], dtype=ember.bfloat16)
    assert (x * 1j).dtype is ember.complex64
    assert (x * ember.tensor(1j)).dtype is ember.complex64
    assert ember.result_type(x, 1j) is ember.complex64
    assert ember.promote_types(ember.bfloat16, ember.complex64) is ember.complex64


_ARANGES = [(0, 5, 0.3), (0, 1, 0.1), (-3, 3, 0.7), (0.1, 50, 0.37), (-1, 1, 1 / 30),
            (0, 3000, 0.7), (-7, 7, 1 / 3), (3, -3, -0.29), (-5, 5, 0.0777)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_float_arange_is_pytorchs_to_the_bit(dtype):
    """arange in a floating dtype: PyTorch's CPU kernel's values bit for bit (a fused
    start + step * i in the accumulate type; its vector loop's elements as the vector's
    first element plus k * step), bfloat16 included (it was all zeros). (Each has fewer
    elements than PyTorch's grain size: one thread's range, whatever the thread count.)"""
    for args in _ARANGES:
        want = torch.arange(*args, dtype=getattr(torch, dtype)).double().numpy()
        got = ember.arange(*args, dtype=getattr(ember, dtype)).double().numpy()
        assert got.tobytes() == want.tobytes(), args


def _both(fn):
    """fn(torch) and fn(ember), each as its value (a list) or its error."""
    def run(lib):
        try:
            out = fn(lib)
            return out.tolist() if hasattr(out, "tolist") else out
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            return type(e).__name__, str(e).replace("ember.", "torch.")
    return run(torch), run(ember)


@pytest.mark.parametrize("value", [0.5, 1.5, -1.5, 2, True, 1j], ids=repr)
@pytest.mark.parametrize("op", ["addcmul", "addcmul_", "addcdiv"])
@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
def test_addcmul_value_takes_the_tensors_dtype(op, dtype, value):
    """addcmul's `value` takes no part in the promotion: an integer result truncates it
    (0.5 is 0), a complex one into a real result overflows; bool has no kernel."""
    def run(lib):
        d = getattr(lib, dtype)
        x, t1, t2 = (lib.tensor([v], dtype=d) for v in (1, 2, 3))
        if op == "addcmul_":
            return x.addcmul_(t1, t2, value=value)
        return getattr(lib, op)(x, t1, t2, value=value)
    want, got = _both(run)
    assert got == want


@pytest.mark.parametrize("alpha", [1j, 1 + 0j, 2.5, True, 2, False], ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "int64", "complex64", "bool"])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_add_alpha_refusals(op, dtype, alpha):
    """add/sub's alpha: a float or complex one refused for integer (and bool) results, a
    complex one for real results, in PyTorch's words."""
    def run(lib):
        t = lib.tensor([1], dtype=getattr(lib, dtype))
        return getattr(lib, op)(t, t, alpha=alpha)
    want, got = _both(run)
    assert got == want


def test_scalar_conversions_of_complex_tensors_and_number_operands():
    """float()/int() of a complex tensor: its real part when the imaginary part is zero,
    else PyTorch's overflow error; a complex tensor is no index; isclose/allclose take a
    tensor only; dist of integer tensors refuses in norm's words, of mixed ones promotes;
    three-argument pow is declined."""
    cases = [lambda lib: float(lib.tensor(1 + 0j)), lambda lib: float(lib.tensor(1 + 1j)),
             lambda lib: int(lib.tensor(2.7 + 0j)), lambda lib: int(lib.tensor(2.7 + 1j)),
             lambda lib: [1, 2][lib.tensor(1 + 0j)],
             lambda lib: lib.isclose(lib.tensor([1]), 1),
             lambda lib: lib.allclose(lib.tensor([1.0]), 1.0),
             lambda lib: lib.dist(lib.tensor([3]), lib.tensor([4])),
             lambda lib: lib.dist(lib.tensor([3.0]), lib.tensor([5])),
             lambda lib: pow(lib.tensor(2), 3, 5), lambda lib: pow(lib.tensor(2), 3)]
    for case in cases:
        want, got = _both(case)
        assert got == want


def test_storages_print_and_read_as_pytorchs():
    """`t.storage()` is a TypedStorage (an instance of the dtype's legacy class, as PyTorch
    checks it) printed as one; `t.untyped_storage()` holds, reads and prints bytes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = [ember.tensor([1.0, 2.5]).storage(), ember.tensor([1, 2]).storage()]
        want = [torch.tensor([1.0, 2.5]).storage(), torch.tensor([1, 2]).storage()]
        assert isinstance(got[0], ember.tensor([1.0]).storage_type())
        assert not isinstance(got[0], ember.tensor([1]).storage_type())
    for g, w in zip(got, want):
        assert repr(g).replace("ember.", "torch.") == repr(w)
        assert type(g).__name__ == type(w).__name__ == "TypedStorage"
    for make in (lambda lib: lib.tensor([1.0, 2.5]), lambda lib: lib.tensor([True, False]),
                 lambda lib: lib.tensor([1 + 2j]), lambda lib: lib.arange(6.0).reshape(2, 3).t()):
        g, w = make(ember).untyped_storage(), make(torch).untyped_storage()
        assert repr(g).replace("ember.", "torch.") == repr(w)
        assert g.tolist() == w.tolist() and g[1] == w[1] and len(g) == len(w)


def test_printing_with_no_edge_items():
    """set_printoptions(edgeitems=0): every non-empty tensor shows its size, a summarised
    one only "[...]", as PyTorch prints them."""
    try:
        for lib in (torch, ember):
            lib.set_printoptions(edgeitems=0, threshold=2)
        for make in (lambda lib: lib.tensor([1.5, -1e-3, 12345.0]),
                     lambda lib: lib.tensor([1.0, 2.0]),
                     lambda lib: lib.arange(20.0).reshape(4, 5), lambda lib: lib.tensor(0.5),
                     lambda lib: lib.tensor([1, 2, 3], dtype=lib.int8)):
            assert repr(make(ember)).replace("ember.", "torch.") == repr(make(torch))
    finally:
        for lib in (torch, ember):
            lib.set_printoptions(profile="default")


def test_whole_tensor_writes_into_the_graph():
    """`y.copy_(x)` of a leaf x: y's node is PyTorch's CopyBackwards and the gradient
    reaches x (it took x's place with no node before); zero_ / fill_ of a number / fill_
    of a tensor / copy_ of a constant name ZeroBackward0 / FillBackward2 / FillBackward3 /
    CopyBackwards, as printed."""
    got = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.zeros(2)
        y.copy_(x)
        (y * lib.tensor([3.0, 4.0])).sum().backward()
        names = [repr(y), type(y.grad_fn).__name__, x.grad.tolist()]
        for method, args in (("zero_", ()), ("fill_", (2.0,)), ("fill_", (lib.tensor(3.0),)),
                             ("copy_", (lib.ones(2),))):
            z = x * 1
            getattr(z, method)(*args)
            names.append(type(z.grad_fn).__name__)
        got.append([str(n).replace("ember", "torch") for n in names])
    assert got[1] == got[0]
