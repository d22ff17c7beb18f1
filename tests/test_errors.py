"""Errors: the right exception type, a message that names the op and what is wrong, and no
half-done work (a failing in-place op leaves its target's values and version unchanged).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


# -- shapes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "eq", "pow", "atan2"])
def test_broadcast_error_is_torchs_with_op_and_shapes_in_a_note(op):
    """The message is PyTorch's word for word (programs print it); the op and the shapes
    are in a note, which tracebacks print under it."""
    a, b = ember.ones(2, 3), ember.ones(4)
    with pytest.raises(RuntimeError, match=rf"{op}: shapes \[2, 3\] and \[4\]") as info:
        getattr(ember, op)(a, b)
    assert str(info.value) == ("The size of tensor a (3) must match the size of tensor b (4) "
                               "at non-singleton dimension 1")
    assert info.value.__notes__ == [f"{op}: shapes [2, 3] and [4] cannot be broadcast"]


def test_broadcast_error_from_operators_and_torch_agrees(torch):
    with pytest.raises(RuntimeError, match=r"\[2, 3\] and \[3, 2\]"):
        ember.ones(2, 3) * ember.ones(3, 2)
    sentence = (r"(?m)^The size of tensor a \(3\) must match the size of tensor b \(2\) at "
                r"non-singleton dimension 1$")
    with pytest.raises(RuntimeError, match=sentence):
        torch.ones(2, 3) * torch.ones(3, 2)
    with pytest.raises(RuntimeError, match=sentence):
        ember.ones(2, 3) * ember.ones(3, 2)


def test_where_broadcast_error():
    with pytest.raises(RuntimeError, match=r"where: .*\[4\]"):
        ember.where(ember.ones(2, 3) > 0, ember.ones(3), ember.ones(4))


def test_in_place_broadcast_to_larger_shape():
    x = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"^output with shape \[2, 3\] doesn't match the "
                                           r"broadcast shape \[2, 2, 3\]\nadd_: "):
        x.add_(ember.ones(2, 1, 3))


@pytest.mark.parametrize("a, b", [((2, 3), (2, 3)), ((3,), (4,)), ((5, 2, 3), (5, 4, 2)),
                                  ((2, 3), (4,)), ((3,), (4, 2)), ((4, 2, 3), (4, 2)),
                                  ((2, 3), (5, 4, 2)), ((2, 2, 3), (4,))])
def test_matmul_shape_errors_are_torchs_path_by_path(torch, a, b):
    """torch.matmul words the error by the kernel it reaches (dot, mv, mm, bmm): each as
    PyTorch's, the full shapes in a note."""
    with pytest.raises(RuntimeError) as want:
        torch.ones(*a) @ torch.ones(*b)
    with pytest.raises(RuntimeError) as got:
        ember.ones(*a) @ ember.ones(*b)
    assert str(got.value) == str(want.value)
    assert got.value.__notes__ == [f"matmul: shapes {list(a)} and {list(b)}"]


@pytest.mark.parametrize("a, b", [((2, 3), (3, 2)), ((3,), (3,)), ((2, 3), (2, 3, 2)),
                                  ((3,), (3, 2))])
def test_matmul_dtype_errors_are_torchs(torch, a, b):
    with pytest.raises(RuntimeError) as want:
        torch.ones(*a, dtype=torch.float64) @ torch.ones(*b)
    with pytest.raises(RuntimeError) as got:
        ember.ones(*a, dtype=ember.float64) @ ember.ones(*b)
    assert str(got.value) == str(want.value)


def test_linear_errors_are_torchs(torch):
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=r"(?m)^mat1 and mat2 shapes cannot be multiplied "
                                               r"\(2x3 and 4x2\)$"):
            lib.nn.Linear(4, 2)(lib.ones(2, 3))
        with pytest.raises(RuntimeError, match="(?m)^mat1 and mat2 must have the same dtype, but "
                                               "got Double and Float$"):
            lib.nn.Linear(3, 2)(lib.ones(2, 3, dtype=lib.float64))


def test_mm_bmm_checks():
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(3x2 and 3x2\)"):
        ember.mm(ember.ones(3, 2), ember.ones(3, 2))
    with pytest.raises(RuntimeError, match=r"^Expected size for first two dimensions of "
                                           r"batch2 tensor to be: \[2, 2\] but got: \[2, 3\]\.\n"
                                           r"bmm: "):
        ember.bmm(ember.ones(2, 3, 2), ember.ones(2, 3, 2))


@pytest.mark.parametrize("fn, msg", [
    (lambda: ember.zeros(3, 4).reshape(5), r"^shape '\[5\]' is invalid for input of "
                                           r"size 12\nreshape$"),
    (lambda: ember.zeros(3, 4).expand(2, 4), r"^The expanded size of the tensor \(2\) "
                                             r"must match the existing size \(3\) at "
                                             r"non-singleton dimension 0"),
    (lambda: ember.zeros(3, 4).permute(0, 0), "permute: "),
    (lambda: ember.zeros(3, 4).sum((0, 0)), "appears multiple times"),
    (lambda: ember.cat([ember.zeros(2, 3), ember.zeros(3, 3)], dim=1),
     r"^Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 "
     r"for tensor number 1 in the list.\ncat: shapes \[2, 3\] and \[3, 3\]$"),
    (lambda: ember.stack([ember.zeros(2), ember.zeros(3)]), "stack"),
])
def test_shape_op_errors(fn, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn()


# -- dtypes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn, msg", [
    (lambda: ember.ones(2) & ember.ones(2), r"bitwise_and: .*float32"),
    (lambda: ember.ones(2) | ember.ones(2), r"bitwise_or: .*float32"),
    (lambda: ember.ones(2) ^ ember.ones(2), r"bitwise_xor: .*float32"),
    (lambda: ember.bitwise_not(ember.ones(2)), r"bitwise_not: .*float32"),  # (`~`: TypeError)
    (lambda: ember.ones(2, dtype=ember.int32).mean(), r"mean\(\): could not infer output dtype. "
                                                      r"Input dtype must be either a floating "
                                                      r"point or complex dtype. Got: Int$"),
    (lambda: -ember.tensor([True]), r"^Negation, the `-` operator, on a bool tensor"),
    (lambda: ember.where(ember.ones(2), ember.ones(2), ember.ones(2)),
     r"^where expected condition to be a boolean tensor, but got a tensor with dtype Float$"),
])
def test_dtype_errors(fn, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn()


def test_dtype_errors_match_torch_kind(torch):
    """torch refuses the same operands (its NotImplementedError is a RuntimeError)."""
    for fn in (lambda: torch.ones(2) & torch.ones(2),
               lambda: torch.ones(2, dtype=torch.int32).mean()):
        with pytest.raises(RuntimeError):
            fn()


def test_integer_division_by_zero():
    with pytest.raises((RuntimeError, ZeroDivisionError), match="(?i)division by zero|"
                                                                "ZeroDivisionError"):
        ember.tensor([1, 2]) // ember.tensor([1, 0])
    # float division by zero is IEEE: inf, not an error
    assert ember.tensor([1.0]).div(0.0).item() == float("inf")


# -- devices -------------------------------------------------------------------------------------


def test_two_devices_in_one_op():
    a = ember.ones(2, device="countdev")
    b = ember.ones(2)
    msg = (r"^Expected all tensors to be on the same device, but found at least two devices, "
           r"(countdev:0 and cpu|cpu and countdev:0)")
    for fn in (lambda: a + b, lambda: b * a, lambda: a @ b, lambda: ember.cat([a, b]),
               lambda: ember.where(b > 0, a, b), lambda: a.add_(b)):
        with pytest.raises(RuntimeError, match=msg):
            fn()
    assert a.cpu().tolist() == [1.0, 1.0]


def test_unknown_device_lists_available():
    with pytest.raises(RuntimeError, match=r"(?s)unknown device type 'nope'.*cpu: available.*"
                                           r"countdev: available"):
        ember.zeros(2, device="nope")
    with pytest.raises(RuntimeError, match="(?s)unknown device type 'nope'.*cpu"):
        ember.ones(2).to("nope")


def test_device_index_out_of_range():
    with pytest.raises(RuntimeError, match=r"device 'countdev:3' does not exist: countdev has 1 "
                                           r"device\(s\)"):
        ember.zeros(2, device="countdev:3")
    with pytest.raises(RuntimeError, match="cpu:1"):
        ember.zeros(2, device="cpu:1")


def test_unavailable_device_says_why():
    import ember.core.plugins as plugins

    try:
        backend = plugins.get_backend("cuda")
        reason = plugins.safe_unavailable_reason(backend)
    except Exception:  # noqa: BLE001 - a missing built-in is a different error, tested below
        reason = "missing"
    if reason is None:
        pytest.skip("a CUDA device is available here")
    with pytest.raises(AssertionError, match=r"(?s)device 'cuda' is not available: .+Devices:.*"
                                           r"cpu: available"):
        ember.zeros(2, device="cuda")


# -- autograd ------------------------------------------------------------------------------------


def test_backward_non_scalar_without_gradient():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        (x * 2).backward()
    assert x.grad is None


def test_backward_twice_through_freed_graph():
    x = ember.ones(3, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    g = x.grad.clone()
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second "
                                           r"time \(or directly access saved tensors after they "
                                           r"have already been freed\)"):
        y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), g.numpy())


# -- indexing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("key, msg", [
    (2, r"index 2 is out of bounds for dimension 0 with size 2"),
    (-3, r"index -3 is out of bounds for dimension 0 with size 2"),
    ((1, 3), r"index 3 is out of bounds for dimension 1 with size 3"),
    ((slice(None), -4), r"index -4 is out of bounds for dimension 1 with size 3"),
    # (a tensor index is named by its place among the key's tensor indices, as PyTorch's
    # index kernel names it: here the first, "dimension 0")
    ((slice(None), [0, 3]), r"index 3 is out of bounds for dimension 0 with size 3"),
])
def test_index_out_of_range(torch, key, msg):
    with pytest.raises(IndexError, match=msg):
        ember.zeros(2, 3)[key]
    with pytest.raises(IndexError, match=msg):
        torch.zeros(2, 3)[key]


def test_too_many_indices(torch):
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        ember.zeros(2, 3)[0, 0, 0]
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):  # as PyTorch
        ember.tensor(1.0)[0]
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        torch.tensor(1.0)[0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        torch.zeros(2, 3)[0, 0, 0]


@pytest.mark.parametrize("fn, msg", [
    (lambda x: x.sum(2), r"\(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda x: x.sum(-3), r"but got -3"),
    (lambda x: x.softmax(5), r"but got 5"),
    (lambda x: x.transpose(0, 2), r"but got 2"),
    (lambda x: x.unsqueeze(3), r"\[-3, 2\], but got 3"),
    (lambda x: x.size(2), r"but got 2"),
    (lambda x: ember.cat([x, x], dim=2), r"but got 2"),
    (lambda x: x.argmax(2), r"but got 2"),
    (lambda x: x.narrow(2, 0, 1), r"but got 2"),
    (lambda x: x.flatten(0, 4), r"but got 4"),
    (lambda x: x.cumsum(-3), r"but got -3"),
])
def test_bad_dim_is_index_error(fn, msg):
    with pytest.raises(IndexError, match="Dimension out of range.*" + msg):
        fn(ember.zeros(2, 3))


# -- nothing is left half-changed ----------------------------------------------------------------


def _snapshot(x):
    return x.detach().cpu().numpy().copy(), x._version


def _assert_unchanged(x, snap):
    values, version = snap
    np.testing.assert_array_equal(x.detach().cpu().numpy(), values)
    assert x._version == version


FAILING_INPLACE = {
    "add_bad_shape": (lambda x: x.add_(ember.ones(5)), RuntimeError),
    "add_grows_shape": (lambda x: x.add_(ember.ones(2, 3, 4)), RuntimeError),
    "mul_float_into_int": (lambda x: x.long().mul_(1.5), RuntimeError),
    "setitem_bad_value_shape": (lambda x: x.__setitem__(slice(0, 2), ember.ones(3)),
                                RuntimeError),
    "setitem_index_partly_out_of_range": (
        lambda x: x.__setitem__((ember.tensor([0, 1]), ember.tensor([0, 9])), 5.0), IndexError),
    "setitem_mask_wrong_shape": (
        lambda x: x.__setitem__(ember.tensor([True, False, True]), 5.0), IndexError),
    "setitem_float_into_int_tensor": (
        lambda x: x.__setitem__(ember.tensor([0]), ember.tensor([1.5])), RuntimeError),
    "copy_bad_shape": (lambda x: x.copy_(ember.ones(4, 4)), RuntimeError),
    "copy_other_bad_shape": (lambda x: x.copy_(ember.ones(3)), RuntimeError),
    "fill_non_scalar": (lambda x: x.fill_(ember.ones(2)), RuntimeError),
    "other_device": (lambda x: x.add_(ember.ones(2, 4, device="countdev")), RuntimeError),
    "int_floor_div_by_zero": (lambda x: x.__ifloordiv__(ember.tensor(0)),
                              (RuntimeError, ZeroDivisionError)),
}


@pytest.mark.parametrize("case", list(FAILING_INPLACE))
def test_failing_in_place_leaves_target_unchanged(case):
    fn, exc = FAILING_INPLACE[case]
    x = ember.arange(8, dtype=(ember.int64 if case in ("setitem_float_into_int_tensor",
                                                       "int_floor_div_by_zero")
                               else ember.float32)).reshape(2, 4)
    if case == "mul_float_into_int":
        x = ember.arange(8).reshape(2, 4)
        snap = _snapshot(x)
        with pytest.raises(exc):
            x.mul_(1.5)
        _assert_unchanged(x, snap)
        return
    snap = _snapshot(x)
    with pytest.raises(exc):
        fn(x)
    _assert_unchanged(x, snap)


def test_failing_in_place_on_view_leaves_base_unchanged():
    x = ember.arange(8.0).reshape(2, 4)
    v = x[:, 1:3]
    snap = _snapshot(x)
    with pytest.raises(RuntimeError):
        v.add_(ember.ones(3))
    with pytest.raises(RuntimeError):
        v[0] = ember.ones(4)
    _assert_unchanged(x, snap)
    assert v._version == snap[1]


def test_failing_in_place_keeps_graph():
    """A failing in-place op on a non-leaf must not rewire its grad_fn."""
    w = ember.ones(2, 3, requires_grad=True)
    y = w * 2
    node, snap = y.grad_fn, _snapshot(y)
    with pytest.raises(RuntimeError):
        y.add_(ember.ones(4))
    with pytest.raises(RuntimeError):
        y[0] = ember.ones(5, requires_grad=True)
    with pytest.raises(RuntimeError):
        y[:, 0:2].mul_(ember.ones(3))
    assert y.grad_fn is node
    _assert_unchanged(y, snap)
    y.sum().backward()
    assert w.grad.tolist() == [[2.0] * 3] * 2


def test_failing_in_place_on_leaf_requiring_grad_changes_nothing():
    x = ember.ones(3, requires_grad=True)
    snap = _snapshot(x)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.mul_(2)
    _assert_unchanged(x, snap)
    assert x.is_leaf and x.grad_fn is None


def test_failing_op_does_not_record_graph():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        x + ember.ones(4)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# -- misc argument errors -----------------------------------------------------------------------


def test_item_and_bool_errors():
    with pytest.raises(RuntimeError, match="a Tensor with 3 elements cannot be converted to "
                                           "Scalar"):
        ember.ones(3).item()
    torch = pytest.importorskip("torch")
    for make, exc in ((lambda L: bool(L.ones(3)), RuntimeError),
                      (lambda L: bool(L.ones(0)), RuntimeError),
                      (lambda L: float(L.ones(2)), ValueError),
                      (lambda L: int(L.ones(0, dtype=L.int64)), ValueError),
                      (lambda L: [1, 2][L.tensor([1, 0])], TypeError)):
        with pytest.raises(exc) as theirs:
            make(torch)
        with pytest.raises(exc) as ours:
            make(ember)
        assert str(ours.value) == str(theirs.value)
    assert float(ember.tensor([[2.5]])) == 2.5 and int(ember.tensor([7])) == 7


def test_factory_argument_errors():
    with pytest.raises(TypeError, match=r"\(position 1\) must be tuple of ints, not float"):
        ember.zeros(2.5)
    with pytest.raises(RuntimeError, match="negative dimension -2"):
        ember.ones(3, -2)
    with pytest.raises((TypeError, ValueError)):
        ember.device(3.5)


# -- autograd's messages, word for word -----------------------------------------------------


def _inplace_after_save(lib, case):
    v = lib.ones(2, requires_grad=True)
    if case == "own output":  # sigmoid saves its output; the write bumps its version
        u = v.sigmoid()
        u.mul_(2)
        return u.sum()
    if case == "input":  # mul saves its input, which exp made
        u = v.exp()
        w = u * 1
        u.add_(1)
        return w.sum()
    loss = (v * v).sum()  # a leaf written under no_grad (an optimizer step in between)
    with lib.no_grad():
        v.add_(1)
    return loss


@pytest.mark.parametrize("case", ["own output", "input", "leaf"])
def test_inplace_modified_saved_tensor_error_is_torchs(torch, case):
    def message(lib):
        with pytest.raises(RuntimeError) as info:
            _inplace_after_save(lib, case).backward()
        return str(info.value).replace(lib.__name__ + ".", "")
    assert message(ember) == message(torch)


def _set_requires_grad(lib):
    lib.ones(2, dtype=lib.int64).requires_grad = True


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor([1, 2], requires_grad=True),
    lambda lib: lib.arange(3, requires_grad=True),
    lambda lib: lib.ones(2, dtype=lib.int64).requires_grad_(),
    _set_requires_grad,
    lambda lib: lib.nn.Parameter(lib.ones(2, dtype=lib.int64)),
])
def test_integer_tensors_refuse_grad_with_torchs_messages(torch, make):
    messages = []
    for lib in (torch, ember):
        with pytest.raises(RuntimeError) as info:
            make(lib)
        messages.append(str(info.value))
    # (torch's setter says "Only" on its first use in a process, "only" after: ember "only")
    if make is _set_requires_grad:
        messages[0] = "o" + messages[0][1:]
    assert messages[0] == messages[1]


def test_backward_checks_requires_grad_before_the_output_shape(torch):
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="^element 0 of tensors does not require grad "
                                               "and does not have a grad_fn$"):
            lib.ones(2, 2).backward()
        a = lib.ones(2, requires_grad=True).sum()
        with pytest.raises(RuntimeError, match="^element 1 of tensors does not require grad"):
            lib.autograd.backward([a, lib.ones(2).sum()])
        with pytest.raises(RuntimeError, match="(?m)^grad can be implicitly created only for "
                                               "scalar outputs$"):
            (lib.ones(2, requires_grad=True) * 2).backward()
