"""Views share storage with their base; indexing follows PyTorch's (and NumPy's) rules.

Basic indexing (ints, slices, None, Ellipsis) and the view ops return tensors that share
storage: a write through one is seen by the other. Advanced indexing (integer tensors,
lists, bool masks) copies, and its result's shape follows NumPy's placement rule.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def base(lib, shape=(2, 3, 4, 5)):
    """Distinct integer-valued float64 entries, so every selection is identifiable."""
    n = int(np.prod(shape))
    return lib.arange(n, dtype=lib.float64).reshape(*shape)


# -- views share storage ----------------------------------------------------------------------


VIEW_CASES = {
    "slice": lambda x: x[1:3],
    "step_slice": lambda x: x[::2],
    "int": lambda x: x[1],
    "negative_int": lambda x: x[-1],
    "none": lambda x: x[None],
    "ellipsis": lambda x: x[..., 1],
    "negative_slice": lambda x: x[-3:-1, 1:],
    "column": lambda x: x[:, 2],
    "view": lambda x: x.view(-1),
    "view_shape": lambda x: x.view(2, 2, 3),
    "t": lambda x: x.t(),
    "T": lambda x: x.T,
    "transpose": lambda x: x.transpose(0, 1),
    "permute": lambda x: x.permute(1, 0),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(1, 0),
    "unsqueeze": lambda x: x.unsqueeze(0),
    "squeeze": lambda x: x.unsqueeze(1).squeeze(1),
    "flatten": lambda x: x.flatten(),
    "reshape_contiguous": lambda x: x.reshape(3, 4),
    "unflatten": lambda x: x.unflatten(1, (3, 1)),
    "detach": lambda x: x.detach(),
    "view_as": lambda x: x.view_as(ember.zeros(12)),
    "chained": lambda x: x.t()[1:][:, ::2],
    "split": lambda x: x.split(2, dim=0)[1],
    "chunk": lambda x: x.chunk(3, dim=1)[0],
    "unbind": lambda x: x.unbind(0)[2],
    "movedim": lambda x: x.movedim(0, 1),
    "mT": lambda x: x.mT,
}


@pytest.mark.parametrize("case", list(VIEW_CASES))
def test_write_through_view_is_seen_by_base(case):
    x = ember.arange(12, dtype=ember.float32).reshape(4, 3)
    before = x.numpy().copy()
    v = VIEW_CASES[case](x)
    assert v.numel() > 0
    v.fill_(-1.0)
    after = x.numpy()
    # every element the view covers is now -1, and nothing else changed
    assert (after == -1).sum() == v.numel()
    untouched = after != -1
    np.testing.assert_array_equal(after[untouched], before[untouched])


@pytest.mark.parametrize("case", list(VIEW_CASES))
def test_write_to_base_is_seen_by_view(case):
    x = ember.arange(12, dtype=ember.float32).reshape(4, 3)
    v = VIEW_CASES[case](x)
    expected = v.numpy().copy() + 100
    x.add_(100)
    np.testing.assert_array_equal(v.numpy(), expected)


def test_view_cases_match_torch_values(torch):
    for case, fn in VIEW_CASES.items():
        if case == "view_as":
            continue
        e = fn(ember.arange(12, dtype=ember.float32).reshape(4, 3))
        t = fn(torch.arange(12, dtype=torch.float32).reshape(4, 3))
        assert tuple(e.shape) == tuple(t.shape), case
        np.testing.assert_array_equal(e.numpy(), t.numpy(), err_msg=case)


def test_expand_shares_storage_for_reads():
    x = ember.tensor([[1.0], [2.0]])
    e = x.expand(2, 3)
    assert e.shape == (2, 3)
    x[1, 0] = 7.0
    assert e.tolist() == [[1.0, 1.0, 1.0], [7.0, 7.0, 7.0]]
    e2 = ember.tensor([5.0]).expand(4)
    assert e2.tolist() == [5.0] * 4
    assert x.expand(-1, 2).shape == (2, 2)


def test_zero_d_views():
    x = ember.tensor([1.0, 2.0])
    s = x[1]
    assert s.shape == () and s.item() == 2.0
    s.fill_(9.0)
    assert x.tolist() == [1.0, 9.0]
    x[0].add_(1)
    assert x.tolist() == [2.0, 9.0]


def test_matrix_transposes_of_vectors_and_scalars_as_torch(torch):
    """`.mT` / `.mH` refuse a vector with PyTorch's RuntimeError and give a 0-D tensor
    back itself (a Kalman filter's `v.mT` of a vector is the classic slip)."""
    for attr in ("mT", "mH"):
        for lib in (torch, ember):
            with pytest.raises(RuntimeError, match=rf"^tensor\.{attr} is only supported on "
                                                   r"matrices or batches of matrices\. Got "
                                                   r"1-D tensor\.$"):
                getattr(lib.ones(3), attr)
            scalar = lib.tensor(2.0, requires_grad=True)
            assert getattr(scalar, attr) is scalar
        assert ember.ones(2, 3, 4).mT.shape == (2, 4, 3)


def test_in_place_on_view_of_view_reaches_root():
    x = ember.zeros(4, 4)
    x[1:3][:, 1:3][0, 0] = 5.0
    x.t()[3].fill_(1.0)
    assert x[1, 1].item() == 5.0
    assert x[:, 3].tolist() == [1.0] * 4
    assert x.sum().item() == 9.0


def test_views_keep_version_with_base():
    x = ember.zeros(4)
    v = x.view(2, 2)
    v[0, 0] = 1.0
    assert x._version == 1 and v._version == 1


def test_view_base_attribute():
    x = ember.zeros(4)
    v = x[1:]
    assert v._base is x
    assert v[1:]._base is x  # a view of a view points at the root, as in torch
    assert x._base is None


# -- view vs reshape --------------------------------------------------------------------------


class TestViewReshape:
    def test_view_on_non_contiguous_raises(self, torch):
        x = ember.arange(6.0).reshape(2, 3).t()
        with pytest.raises(RuntimeError, match=r"view size is not compatible with input "
                                               r"tensor's size and stride \(at least one "
                                               r"dimension spans across two contiguous "
                                               r"subspaces\).* Use \.reshape\(\.\.\.\) "
                                               r"instead\."):
            x.view(6)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            torch.arange(6.0).reshape(2, 3).t().view(6)

    def test_reshape_copies_when_it_must(self):
        x = ember.arange(6.0).reshape(2, 3)
        r = x.t().reshape(6)
        assert r.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        r[0] = 100.0
        assert x[0, 0].item() == 0.0  # a copy: the base is unchanged

    def test_reshape_views_when_it_can(self):
        x = ember.arange(6.0)
        r = x.reshape(2, 3)
        r[1, 1] = -1.0
        assert x[4].item() == -1.0

    def test_view_that_is_possible_on_non_contiguous(self, torch):
        """Splitting or merging only contiguous runs of dims is a view even when the
        tensor as a whole is not contiguous."""
        x = ember.arange(24.0).reshape(2, 3, 4).permute(1, 0, 2)  # (3, 2, 4)
        assert not x.is_contiguous()
        v = x.view(3, 2, 2, 2)
        tv = torch.arange(24.0).reshape(2, 3, 4).permute(1, 0, 2).view(3, 2, 2, 2)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        v[0, 0, 0, 0] = -5.0
        assert x[0, 0, 0].item() == -5.0

    @pytest.mark.parametrize("shape, msg", [((4,), r"shape '\[4\]' is invalid for input of "
                                                   r"size 6"),
                                            ((-1, -1), "only one dimension can be inferred"),
                                            ((-1, 4), r"shape '\[-1, 4\]' is invalid for input "
                                                      r"of size 6")])
    def test_bad_shapes(self, shape, msg):
        x = ember.arange(6.0)
        with pytest.raises(RuntimeError, match=msg):
            x.view(*shape)
        with pytest.raises(RuntimeError, match=msg):
            x.reshape(*shape)

    def test_contiguous_copy_is_independent(self):
        x = ember.arange(6.0).reshape(2, 3)
        c = x.t().contiguous()
        c[0, 0] = 42.0
        assert x[0, 0].item() == 0.0


# -- advanced indexing --------------------------------------------------------------------------


def _keys(lib):
    """Index expressions, built for `lib` (ember or torch), over a (2, 3, 4, 5) tensor."""
    t = lambda v: lib.tensor(v)  # noqa: E731
    x = base(lib)
    return {
        "int_tensor": (t([1, 0, 1]),),
        "list": ([1, 0],),
        "nested_list": ([[0, 1], [1, 1]],),
        "negative_tensor": (t([-1, -2]),),
        "tensor_after_slice": (slice(None), t([0, 2])),
        "adjacent_pair": (slice(None), t([0, 2]), t([1, 3])),
        "non_adjacent_pair": (t([0, 1]), slice(None), t([1, 3])),
        "non_adjacent_int_tensor": (1, slice(None), t([0, 3])),
        "adjacent_int_tensor": (slice(None), 1, t([0, 3])),
        "broadcast_indices": (t([[0], [1]]), slice(None), t([0, 2, 3])),
        "ellipsis_tensor": (Ellipsis, t([0, 4])),
        "none_tensor": (None, t([1, 0])),
        "tensor_none_tensor": (t([0, 1]), None, t([1, 2])),
        "2d_index": (t([[0, 1, 1], [1, 0, 0]]),),
        "empty_index": (lib.tensor([], dtype=lib.int64),),
        "step_slice_tensor": (slice(None, None, 2), slice(1, None, 2), t([0, 0, 3])),
        "bool_mask_1d": (t([True, False]),),
        "bool_mask_dim1": (slice(None), t([True, False, True])),
        "bool_mask_2d": (x[:, :, 0, 0] > 30,),
        "bool_mask_full": (x > 100,),
        "bool_mask_and_tensor": (t([True, True]), slice(None), t([1, 2])),
        "bool_all_false": (t([False, False]),),
        "int_tensor_scalar": (t(1), slice(None), t([0, 1])),
        "three_advanced": (t([0, 1]), t([1, 2]), t([3, 0])),
        "int32_index": (lib.tensor([1, 0], dtype=lib.int32),),
    }


@pytest.mark.parametrize("name", list(_keys(ember)))
def test_advanced_indexing_matches_torch(torch, name):
    e = base(ember)[_keys(ember)[name]]
    t = base(torch)[_keys(torch)[name]]
    assert tuple(e.shape) == tuple(t.shape), name
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("key", [
    (1, slice(None), 2), (slice(None, None, 3),), (Ellipsis, slice(1, 4, 2)), (-1, -1, -1, -1),
    (None, 0, None, slice(1, None)), (slice(5, 1),), (slice(-100, 100),), (Ellipsis,),
    (0, Ellipsis, 0), (slice(None), None, 1, Ellipsis, None),
])
def test_basic_indexing_matches_torch(torch, key):
    e, t = base(ember)[key], base(torch)[key]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_non_adjacent_advanced_indices_go_first():
    """NumPy's rule: separated advanced indices put the broadcast index dims in front."""
    x = ember.zeros(2, 3, 4, 5)
    assert x[ember.tensor([0, 1]), :, ember.tensor([1, 2])].shape == (2, 3, 5)
    assert x[:, ember.tensor([0, 1]), ember.tensor([1, 2])].shape == (2, 2, 5)
    assert x[:, ember.tensor([0, 1]), :, ember.tensor([1, 2])].shape == (2, 2, 4)
    # PyTorch (unlike NumPy) applies a Python int as a basic index first: what is left is
    # one advanced index, which stays in place
    assert x[1, :, ember.tensor([0, 3])].shape == (3, 2, 5)
    assert x[:, 1, :, [0, 1]].shape == (2, 4, 2)


def test_advanced_indexing_copies():
    x = ember.arange(5.0)
    y = x[ember.tensor([0, 1])]
    y[0] = 100.0
    assert x[0].item() == 0.0
    m = x[x > 2]
    m.fill_(0.0)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_indexing_with_numpy_array_and_tensor_index():
    x = ember.arange(10.0)
    assert x[np.array([1, 3])].tolist() == [1.0, 3.0]
    assert x[ember.tensor(4)].item() == 4.0
    assert x[np.int64(2)].item() == 2.0


def test_index_out_of_range_in_tensor():
    x = ember.zeros(3, 4)
    # (named by its place among the tensor indices, as PyTorch names it)
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        x[:, ember.tensor([0, 4])]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with "
                                         "size 3"):
        x[[-4]]


def test_bad_index_types():
    x = ember.zeros(3)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or "
                                         "bool tensors"):
        x[ember.tensor([1.0])]
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        x["a"]  # (PyTorch reads a str as a sequence to make a tensor of)
    with pytest.raises(IndexError, match="only integers, slices"):
        x[1.5]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    assert x[..., ...].shape == (3,)  # (PyTorch: the later ellipsis stands for no dims)


def test_bool_mask_shape_mismatch():
    x = ember.zeros(3, 4)
    with pytest.raises(IndexError, match=r"The shape of the mask \[2\] at index 0 does not "
                                         r"match the shape of the indexed tensor \[3, 4\]"):
        x[ember.tensor([True, False])]


# -- assignment ----------------------------------------------------------------------------------


def _set_cases(lib):
    t = lambda v, **k: lib.tensor(v, **k)  # noqa: E731
    x = base(lib, (3, 4, 5))
    return {
        "int_scalar": ((1,), 7.0),
        "slice_scalar": ((slice(0, 2), slice(None, None, 2)), -1.0),
        "broadcast_row": ((slice(None), 1), t([1.0, 2.0, 3.0, 4.0, 5.0], dtype=lib.float64)),
        "broadcast_column": ((slice(None), slice(None), 0), t([[1.0], [2.0], [3.0]],
                                                              dtype=lib.float64)),
        "tensor_index": ((t([0, 2]),), t(9.0, dtype=lib.float64)),
        "tensor_index_values": ((t([2, 0]), slice(None), 3), t([[1.0, 2.0, 3.0, 4.0],
                                                                 [5.0, 6.0, 7.0, 8.0]],
                                                                dtype=lib.float64)),
        "non_adjacent": ((t([0, 1]), slice(None), t([1, 2])), t([[10.0], [20.0]],
                                                                 dtype=lib.float64)),
        "bool_mask_scalar": ((x > 40,), 0.0),
        "bool_mask_values": ((x[:, 0, 0] > 10,), t([5.0], dtype=lib.float64)),
        "bool_mask_tensor_values": ((x < 3,), t([7.0, 8.0, 9.0], dtype=lib.float64)),
        "ellipsis": ((Ellipsis, 4), 1.5),
        "none": ((None, 0, 0), 2.0),
        "int_value_into_float": ((0, 0), 3),
        "int_tensor_value": ((0,), t([1, 2, 3, 4, 5])),
        "whole": ((slice(None),), 0.5),
        "int_between_slices": ((1, slice(None), 2), t([1.0, 2.0, 3.0, 4.0], dtype=lib.float64)),
        "int_then_tensor": ((0, t([1, 3])), t([[1.0], [2.0]], dtype=lib.float64)),
        "list_index": (([0, 2], 1), t([-1.0, -2.0, -3.0, -4.0, -5.0], dtype=lib.float64)),
    }


@pytest.mark.parametrize("name", list(_set_cases(ember)))
def test_setitem_matches_torch(torch, name):
    e = base(ember, (3, 4, 5))
    t = base(torch, (3, 4, 5))
    ekey, evalue = _set_cases(ember)[name]
    tkey, tvalue = _set_cases(torch)[name]
    e[ekey] = evalue
    t[tkey] = tvalue
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert e._version == 1


def test_setitem_casts_value_to_target_dtype():
    x = ember.zeros(3, dtype=ember.int32)
    x[0] = 5
    x[1:] = ember.tensor([True, False])
    assert x.dtype is ember.int32 and x.tolist() == [5, 1, 0]
    x[0] = ember.tensor(-2.7)  # through basic indices a tensor is copied as copy_ does
    assert x.tolist() == [-2, 1, 0]
    with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
        x[ember.tensor([0])] = ember.tensor([1.5])  # through tensor indices: same dtype only
    assert x.tolist() == [-2, 1, 0]


def test_setitem_shape_mismatch():
    x = ember.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(4\) must match "
                                           r"the existing size \(3\) at non-singleton dimension "
                                           r"1.  Target sizes: \[2, 4\].  Tensor sizes: \[3\]"):
        x[:2] = ember.ones(3)  # basic indices: PyTorch copies, with expand's words
    with pytest.raises(RuntimeError, match=r"^shape mismatch: value tensor of shape \[3\] cannot "
                                           r"be broadcast to indexing result of shape \[2, 4\]"):
        x[ember.tensor([0, 1])] = ember.ones(3)
    assert x.sum().item() == 0.0 and x._version == 0


def test_setitem_from_a_view_of_itself(torch):
    e = ember.arange(6.0)
    e[1:] = e[:-1].clone()
    t = torch.arange(6.0)
    t[1:] = t[:-1].clone()
    assert e.tolist() == t.tolist()


def test_setitem_on_other_device_tensor():
    x = ember.zeros(3, device="countdev")
    x[1] = 4.0
    x[ember.tensor([0, 2], device="countdev")] = ember.tensor([1.0, 2.0], device="countdev")
    assert x.cpu().tolist() == [1.0, 4.0, 2.0]
    # a CPU index tensor is accepted for a tensor on another device, as in torch for cuda
    x[ember.tensor([0])] = 0.0
    assert x.cpu().tolist() == [0.0, 4.0, 2.0]


# -- gradients of indexing -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["int_tensor", "nested_list", "non_adjacent_pair",
                                  "broadcast_indices", "bool_mask_2d", "ellipsis_tensor",
                                  "three_advanced", "step_slice_tensor"])
def test_indexing_gradients_match_torch(torch, name):
    """Repeated indices accumulate; unselected entries get zero."""
    e = base(ember).requires_grad_()
    t = base(torch).requires_grad_()
    ey = e[_keys(ember)[name]]
    ty = t[_keys(torch)[name]]
    w = np.arange(ty.numel(), dtype=np.float64).reshape(tuple(ty.shape)) + 1
    (ey * ember.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


def test_duplicate_index_gradient_accumulates():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[ember.tensor([0, 0, 2, 0])].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


@pytest.mark.parametrize("case", [c for c in VIEW_CASES if c not in ("view_as", "detach")])
def test_view_gradients(torch, case):
    e = ember.arange(12, dtype=ember.float64).reshape(4, 3).requires_grad_()
    t = torch.arange(12, dtype=torch.float64).reshape(4, 3).requires_grad_()
    ey, ty = VIEW_CASES[case](e), VIEW_CASES[case](t)
    w = np.arange(ty.numel(), dtype=np.float64).reshape(tuple(ty.shape)) + 1
    (ey * ember.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("write", ["through_a_sibling_view", "through_the_base",
                                   "under_no_grad"])
def test_a_view_written_through_another_sees_the_write_in_backward(write):
    """A view whose storage another view (or the base) wrote in place takes its graph node
    from the base again, as PyTorch regenerates a view's grad_fn: the overwritten elements
    pass no gradient to what they held."""
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (torch, ember):
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        v = lib.tensor(5.0, requires_grad=True)
        base = w * 3
        z = base[None]  # a view of base
        zz = z[0]  # another view of base, through z
        if write == "through_a_sibling_view":
            zz[0] = v * 2
        elif write == "through_the_base":
            base[1] = v
        else:
            with lib.no_grad():
                base.mul_(2)
        (zz.sum() * 7 + (z * lib.arange(3.0)).sum()).backward()
        grads.append((w.grad.tolist(), None if v.grad is None else v.grad.item()))
    assert grads[0] == grads[1]


BASIC_KEYS = ["[:3]", "[1]", "[1:3, 2]", "[:, 1]", "[..., 1:]", "[None]", "[:, None]",
              "[...]", "[:, :]", "[0:5, 0:4]", "[0:5]", "[::1]", "[:, ::1]", "[:, 0:100]",
              "[:, -4:]", "[:, -4:4]", "[1:3, None, ...]", "[..., 0:4]", "[1, ...]",
              "[(slice(None),)]", "[lib.tensor(1)]", "[:, lib.tensor(1)]", "[[0, 1]]"]


@pytest.mark.parametrize("key", BASIC_KEYS)
def test_indexing_grad_fn_names_match_torch(torch, key):
    # PyTorch names a basic index after the last view op it applied (a full slice inside a
    # tuple key applies none): printed tensors show it, e.g. grad_fn=<SliceBackward0>
    names = []
    for lib in (torch, ember):
        a = lib.ones(5, 4, requires_grad=True)
        names.append(eval(f"a{key}", {"a": a, "lib": lib}).grad_fn.name())
    assert names[1] == names[0]
