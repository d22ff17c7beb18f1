"""Session 39 (ak): indexing and views as PyTorch has them, each checked against torch."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).splitlines()[0]
    return None


def both(fn):
    """fn(torch) and fn(ember): their results' lists (or error type and first line)."""
    out = []
    for mod in (torch, ember):
        try:
            r = fn(mod)
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e).splitlines()[0]))
            continue
        if isinstance(r, (torch.Tensor, ember.Tensor)):
            r = (tuple(r.shape), str(r.dtype).split(".")[-1], r.tolist())
        out.append(r)
    return out


def same(fn):
    t, e = both(fn)
    assert e == t


@pytest.mark.parametrize("key", [
    (Ellipsis, Ellipsis), (Ellipsis, 0, Ellipsis), (0, Ellipsis, Ellipsis),
    (Ellipsis, [0, 1], Ellipsis), (Ellipsis, 0, Ellipsis, slice(None)),
    (Ellipsis, None, Ellipsis), (Ellipsis, 0, Ellipsis, None)])
def test_several_ellipses(key):
    same(lambda m: m.arange(24).reshape(2, 3, 4)[key])


def test_setitem_several_ellipses():
    def fn(m):
        x = m.arange(24).reshape(2, 3, 4)
        x[..., 0, ...] = -1
        x[..., ...] += 1
        return x
    same(fn)


@pytest.mark.parametrize("key", ["a", b"x", (0, "a"), (0, 1, "a")])
def test_str_key_is_type_error(key):
    same(lambda m: m.arange(6)[key])
    same(lambda m: m.arange(6).reshape(2, 3)[key])


def test_index_add_and_reduce_refuse_2d_index():
    same(lambda m: m.ones(5, 3).index_add(0, m.tensor([[0]]), m.ones(1, 3)))
    same(lambda m: m.ones(5, 3).index_add(0, m.tensor([[0.0]]), m.ones(1, 3)))
    same(lambda m: m.ones(3).index_reduce(0, m.tensor([[0]], dtype=m.int32), m.ones(1),
                                          "prod"))


def test_index_copy_and_index_put_node_names():
    for m in (torch, ember):
        b = m.ones(4, 3, requires_grad=True)
        s = m.ones(2, 3, requires_grad=True)
        assert b.index_copy(0, m.tensor([3, 0]), s).grad_fn.name() == "IndexCopyBackward0"
        out = b.index_put((m.tensor([0, 0]),), s, accumulate=True)
        assert out.grad_fn.name() == "IndexPutBackward0"
        out.sum().backward()
        assert s.grad.tolist() == [[1.0] * 3] * 2


def test_view_after_inplace_is_as_strided():
    got = []
    for m in (torch, ember):
        a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = a * 1
        v = h[:2]
        w = h.view(3, 1)
        h.mul_(2)  # through the base: the views' nodes are taken again on access
        u = h[1:]
        u.add_(1)  # through a view: it too
        got.append((v.grad_fn.name(), w.grad_fn.name(), u.grad_fn.name(),
                    h.grad_fn.name().rpartition("::")[2]))
        (v.sum() + w.sum()).backward()
        got.append(a.grad.tolist())
    assert got[2:] == got[:2]
    assert got[0][0] == "AsStridedBackward0"


@pytest.mark.parametrize("args", [(4.0,), (4.0, 6), (4, 6.5), ((4.0, 6),), ([4, 6.0],),
                                  (True, 6)])
@pytest.mark.parametrize("op", ["view", "reshape", "expand", "repeat", "permute"])
def test_sizes_that_are_no_ints(op, args):
    def fn(m):
        x = m.zeros(4, 6)
        return getattr(x[:1] if op == "expand" else x, op)(*args)
    same(fn)


def test_sizes_of_int_like_objects():
    import numpy as np
    same(lambda m: m.zeros(4, 6).view(np.int64(6), 4))
    same(lambda m: m.zeros(4, 6).reshape(m.tensor(2), -1))


@pytest.mark.parametrize("src,dst", [((0, 0), (1, 2)), ((0, 1), (2,)), ((0, 1), (2, 2)),
                                     ((-1, 2), (0, 1)), ((5, 0), (1,))])
def test_movedim_errors(src, dst):
    same(lambda m: m.zeros(2, 3, 4).movedim(src, dst))


def test_unflatten_two_inferred():
    same(lambda m: m.zeros(2, 3, 4).unflatten(2, (-1, -1)))


@pytest.mark.parametrize("arg", [0, -1, [4, 2], [2, 10], [5, 1, 3]])
def test_tensor_split_pieces_and_errors(arg):
    def fn(m):
        return [(p.tolist(), p.storage_offset())
                for p in m.arange(7).tensor_split(arg)]
    same(fn)


def test_tensor_split_tensor_checks():
    same(lambda m: m.zeros(4).tensor_split(m.tensor([[1]])))
    same(lambda m: m.zeros(4).tensor_split(m.tensor([1.0])))
    same(lambda m: [p.tolist() for p in m.arange(7).tensor_split(m.tensor([2, 10]))])


def test_conj_keeps_layout():
    for make in (lambda m: m.tensor([[1 + 2j, 3 - 1j]]).mH,
                 lambda m: m.tensor([[1 + 2j, 3 - 1j], [2j, 1]]).mT.conj(),
                 lambda m: m.tensor([[1 + 1j, 2]]).adjoint()):
        t, e = make(torch), make(ember)
        assert e.stride() == t.stride()
        assert e.tolist() == t.tolist()
        assert e.is_conj() == t.is_conj()


def test_strided_views_strides_when_empty():
    for make in (lambda m: m.zeros(3, 3).diagonal(5),
                 lambda m: m.zeros(2, 3, 4).diagonal(4, 1, 2),
                 lambda m: m.zeros(2, 3, 4).diagonal(-7, 0, 2),
                 lambda m: m.arange(10.0).unfold(0, 4, 3),
                 lambda m: m.tensor(1.0).unfold(0, 1, 1)):
        t, e = make(torch), make(ember)
        assert (e.shape, e.stride(), e.storage_offset()) == \
            (t.shape, t.stride(), t.storage_offset())


OVERLAPS = [
    lambda m: m.zeros(4).as_strided((3,), (0,)).add_(m.ones(3)),
    lambda m: m.zeros(4).as_strided((3,), (0,)).mul_(2),
    lambda m: m.zeros(1, 3).expand(2, 3).add_(1),
]


@pytest.mark.parametrize("i", range(len(OVERLAPS)))
def test_internal_overlap(i):
    same(OVERLAPS[i])


def test_partial_overlap():
    def copy(m):
        y = m.arange(6.0)
        return y[1:].copy_(y[:-1])

    def add_(m):
        y = m.arange(6.0)
        return y[1:].add_(y[:-1])

    def out(m):
        y = m.arange(6.0)
        return m.add(y[:-1], 1, out=y[1:])

    def full(m):
        y = m.arange(6.0)
        y.add_(y[:])
        return y.copy_(y)

    def strides(m):
        y = m.arange(4.0).reshape(2, 2)
        return y.copy_(y.t())

    def disjoint(m):
        y = m.arange(6.0)
        y[:3].copy_(y[3:])
        return y

    def with_grad(m):
        y = m.arange(6.0, requires_grad=True) * 1
        return y[1:].mul_(y[:-1])
    for fn in (copy, add_, out, full, strides, disjoint, with_grad):
        t, e = both(fn)
        assert e == t, fn.__name__

