"""A tour of indexing, scatter and gather as data-processing and model code drives them.

Basic and advanced indexing, __setitem__, index_put_/index_add_/index_copy_/index_fill_/
index_reduce_, scatter and scatter_reduce, gather, take, masked ops, nonzero, where, and
the gradients through each, with the error messages of the wrong calls.
"""

import torch

torch.manual_seed(0)
torch.set_printoptions(precision=4)


def show(label, fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001
        print(f"{label}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return None
    if isinstance(r, torch.Tensor):
        print(f"{label}: {tuple(r.shape)} {r.dtype}")
        print(r)
    elif isinstance(r, (tuple, list)):
        print(f"{label}: {type(r).__name__} of {len(r)}")
        for x in r:
            print(x)
    else:
        print(f"{label}: {r!r}")
    return r


def section(name):
    print()
    print(f"=== {name} ===")


x = torch.arange(24).reshape(2, 3, 4)
f = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
v = torch.arange(10)

section("basic indexing")
show("x[0]", lambda: x[0])
show("x[-1]", lambda: x[-1])
show("x[1, 2]", lambda: x[1, 2])
show("x[1, 2, 3]", lambda: x[1, 2, 3])
show("x[1, 2, 3].item()", lambda: x[1, 2, 3].item())
show("x[:, 1]", lambda: x[:, 1])
show("x[..., 1]", lambda: x[..., 1])
show("x[0, ..., 2]", lambda: x[0, ..., 2])
show("x[None]", lambda: x[None].shape)
show("x[:, None, :, None]", lambda: x[:, None, :, None].shape)
show("x[..., None]", lambda: x[..., None].shape)
show("x[None, ..., None, 0]", lambda: x[None, ..., None, 0])
show("v[::2]", lambda: v[::2])
show("v[1::3]", lambda: v[1::3])
show("v[-3:]", lambda: v[-3:])
show("v[:-3]", lambda: v[:-3])
show("v[-7:-2:2]", lambda: v[-7:-2:2])
show("v[5:2]", lambda: v[5:2])
show("v[100:]", lambda: v[100:])
show("v[-100:3]", lambda: v[-100:3])
show("v[2:100:4]", lambda: v[2:100:4])
show("x[:, ::2, 1::2]", lambda: x[:, ::2, 1::2])
show("x[True]", lambda: x[True].shape)
show("x[False]", lambda: x[False].shape)
show("x[()]", lambda: x[()].shape)
s = torch.tensor(3.5)
show("scalar[()]", lambda: s[()])
show("scalar[None]", lambda: s[None])
show("scalar[...]", lambda: s[...])
show("v[torch.tensor(3)]", lambda: v[torch.tensor(3)])
show("x[0][1][2]", lambda: x[0][1][2])
show("v[::-1]", lambda: v[::-1])
show("v[::0]", lambda: v[::0])
show("x[2]", lambda: x[2])
show("x[0, 0, 0, 0]", lambda: x[0, 0, 0, 0])
show("x[..., ...]", lambda: x[..., ...])
show("x[..., 0, ...]", lambda: x[..., 0, ...])
show("x[0, ..., ...]", lambda: x[0, ..., ...])
show("x[..., [0, 1], ...]", lambda: x[..., [0, 1], ...])
show("x[..., 0, ..., :]", lambda: x[..., 0, ..., :])
show("x[..., None, ...]", lambda: x[..., None, ...].shape)
show("x[..., 0, ..., None]", lambda: x[..., 0, ..., None])
show("x[b'x']", lambda: x[b"x"])
show("x[0, 'a']", lambda: x[0, "a"])
show("x[{}]", lambda: x[{}])
show("x[1.5]", lambda: x[1.5])
show("v[-11]", lambda: v[-11])
show("x[:, 5]", lambda: x[:, 5])
show("x['a']", lambda: x["a"])

section("advanced indexing")
show("v[[1, 3, 5]]", lambda: v[[1, 3, 5]])
show("v[[-1, -2]]", lambda: v[[-1, -2]])
show("v[tensor [[0,1],[2,3]]]", lambda: v[torch.tensor([[0, 1], [2, 3]])])
show("x[[0, 1], [1, 2]]", lambda: x[[0, 1], [1, 2]])
show("x[[0, 1], [1, 2], [3, 0]]", lambda: x[[0, 1], [1, 2], [3, 0]])
show("x[:, [0, 2]]", lambda: x[:, [0, 2]])
show("x[:, [0, 2], 1]", lambda: x[:, [0, 2], 1])
show("x[[1, 0], :, [2, 3]]", lambda: x[[1, 0], :, [2, 3]])
show("x[0, :, [1, 3]]", lambda: x[0, :, [1, 3]])
show("x[[0], :, [1, 3]]", lambda: x[[0], :, [1, 3]])
show("x[..., [1, 0]]", lambda: x[..., [1, 0]])
show("x[None, [1], None, 2]", lambda: x[None, [1], None, 2])
show("x[:, None, [2, 0]]", lambda: x[:, None, [2, 0]])
show("x[idx 2x1, idx 1x3]", lambda: x[0, torch.tensor([[0], [2]]), torch.tensor([[1, 2, 3]])])
show("x[1:, [0, 1, 2], 1:3]", lambda: x[1:, [0, 1, 2], 1:3])
show("v[[]]", lambda: v[[]])
show("v[empty long]", lambda: v[torch.tensor([], dtype=torch.long)])
show("v[[True]*5+[False]*5]", lambda: v[[True] * 5 + [False] * 5])
show("v[int32 idx]", lambda: v[torch.tensor([9, 0], dtype=torch.int32)])
show("v[uint8 idx]", lambda: v[torch.tensor([1, 0, 1, 0, 0, 0, 0, 0, 0, 1], dtype=torch.uint8)])
show("v[[10]]", lambda: v[[10]])
show("v[[-11]]", lambda: v[[-11]])
show("x[[0, 1], [0, 1, 2]]", lambda: x[[0, 1], [0, 1, 2]])
show("v[float idx]", lambda: v[torch.tensor([1.0, 2.0])])
show("v[[1, 2], [0]]", lambda: v[[1, 2], [0]])
show("x[(0, 1)]", lambda: x[(0, 1)])
show("x[[0, 1]] (list as advanced)", lambda: x[[0, 1]].shape)
show("x[tuple idx]", lambda: x[(torch.tensor([0, 1]), torch.tensor([2, 0]))])

section("boolean masks")
m = f > 10
show("f[mask]", lambda: f[m])
show("f[mask].shape", lambda: f[f < 0].shape)
row_mask = torch.tensor([True, False, True])
show("x[:, row_mask]", lambda: x[:, row_mask])
show("x[:, row_mask, 0]", lambda: x[:, row_mask, 0])
show("x[mask2d]", lambda: x[torch.tensor([[True, False, True], [False, True, False]])])
show("x[0, [True, False, True]]", lambda: x[0, [True, False, True]])
show("x[bad mask]", lambda: x[torch.tensor([True, False])])
show("x[:, bad mask]", lambda: x[:, torch.tensor([True, False, True, True])])
nanv = torch.tensor([1.0, float("nan"), -float("inf"), 2.0, float("inf")])
show("nan mask", lambda: nanv[~torch.isnan(nanv)])
show("finite", lambda: nanv[torch.isfinite(nanv)])
show("x[x % 5 == 0]", lambda: x[x % 5 == 0])

section("__setitem__")
a = torch.zeros(3, 4)
a[0] = 1
a[1, 2] = 5.5
a[:, -1] = torch.tensor([7, 8, 9])
a[2, :2] = torch.tensor([1.5, 2.5], dtype=torch.float64)
print(a)
b = torch.zeros(4, dtype=torch.int64)
b[1] = 3.9
b[torch.tensor([2, 3])] = torch.tensor([1, -2])
print(b)
show("set long from float tensor",
     lambda: b.__setitem__(torch.tensor([2, 3]), torch.tensor([1.7, -2.7])))
b[2:] = torch.tensor([1.7, -2.7])
print(b)
c = torch.zeros(2, 3)
c[...] = torch.tensor([1.0, 2.0, 3.0])
print(c)
c[c > 1] = -1
print(c)
c[c < 0] = torch.tensor([10.0, 20.0, 30.0, 40.0])
print(c)
d = torch.arange(12.0).reshape(3, 4)
d[[0, 2], [1, 3]] = torch.tensor([-1.0, -2.0])
d[:, [0]] = 100
print(d)
d[1] = d[0]
print(d)
d[:, 1:3] = torch.tensor([[0.5], [0.25], [0.125]])
print(d)
e = torch.zeros(5, dtype=torch.bool)
e[[1, 3]] = True
print(e)
h = torch.zeros(3, dtype=torch.float16)
h[1] = 1 / 3
print(h)
g = torch.arange(6.0)
g[g > 2] += 10
print(g)
g[[0, 0, 1]] += 1
print(g)
g[-1] = float("nan")
g[0] = float("inf")
print(g)
show("set wrong shape", lambda: torch.zeros(2, 3).__setitem__(0, torch.ones(2)))
show("set out of range", lambda: torch.zeros(3).__setitem__(3, 1.0))
show("set int from nan", lambda: torch.zeros(3, dtype=torch.long).__setitem__(0, 1.5))
show("set bad mask", lambda: torch.zeros(3).__setitem__(torch.tensor([True, False]), 1.0))
show("set too many values",
     lambda: torch.zeros(3).__setitem__(torch.tensor([True, False, True]), torch.ones(3)))
s0 = torch.tensor(1.0)
s0[()] = 5
s0[...] = s0 + 1
print(s0)

section("index_put_")
t = torch.zeros(5)
t.index_put_((torch.tensor([0, 2, 2]),), torch.tensor([1.0, 2.0, 3.0]), accumulate=True)
print(t)
t.index_put_((torch.tensor([1, 4]),), torch.tensor(9.0))
print(t)
t2 = torch.zeros(3, 3, dtype=torch.int32)
t2.index_put_((torch.tensor([0, 1, 0]), torch.tensor([0, 1, 0])), torch.tensor([1, 2, 3],
              dtype=torch.int32), accumulate=True)
print(t2)
show("index_put out-of-place", lambda: torch.zeros(2, 2).index_put(
    (torch.tensor([1]),), torch.tensor([5.0, 6.0])))
show("index_put bool", lambda: torch.zeros(4).index_put_(
    (torch.tensor([True, False, True, False]),), torch.tensor(2.0), accumulate=True))
show("index_put bad index", lambda: torch.zeros(3).index_put_((torch.tensor([3]),),
                                                               torch.tensor(1.0)))
show("index_put dtype mismatch", lambda: torch.zeros(3).index_put_(
    (torch.tensor([0]),), torch.tensor([1.0], dtype=torch.float64)))
show("index_put float index", lambda: torch.zeros(3).index_put_(
    (torch.tensor([0.0]),), torch.tensor(1.0)))

section("index_add_ / index_copy_ / index_fill_ / index_reduce_")
base = torch.ones(5, 3)
src = torch.arange(9.0).reshape(3, 3)
idx = torch.tensor([0, 4, 0])
show("index_add", lambda: base.index_add(0, idx, src))
show("index_add alpha", lambda: base.index_add(0, idx, src, alpha=-2))
show("index_add dim1", lambda: base.index_add(1, torch.tensor([2, 0, 2]), torch.ones(5, 3)))
show("index_add dim -1", lambda: base.index_add(-1, torch.tensor([1]), torch.ones(5, 1)))
show("index_add int", lambda: torch.zeros(4, dtype=torch.long).index_add_(
    0, torch.tensor([1, 1, 3]), torch.tensor([5, 6, 7])))
show("index_add bad shape", lambda: base.index_add(0, idx, torch.ones(2, 3)))
show("index_add out of range", lambda: base.index_add(0, torch.tensor([5]), torch.ones(1, 3)))
show("index_add dtype", lambda: base.index_add(0, idx, src.double()))
show("index_add 2d index", lambda: base.index_add(0, torch.tensor([[0]]), torch.ones(1, 3)))
show("index_add 2d float index", lambda: base.index_add(0, torch.tensor([[0.0]]),
                                                        torch.ones(1, 3)))
show("index_reduce 2d index", lambda: base.index_reduce(
    0, torch.tensor([[0]], dtype=torch.int32), torch.ones(1, 3), "amax"))
show("index_copy", lambda: base.index_copy(0, torch.tensor([4, 1, 2]), src))
show("index_copy dim1", lambda: base.index_copy(1, torch.tensor([2, 0]), torch.zeros(5, 2)))
show("index_copy bad shape", lambda: base.index_copy(0, torch.tensor([0]), torch.ones(2, 3)))
show("index_fill", lambda: base.index_fill(1, torch.tensor([0, 2]), -1))
show("index_fill tensor value", lambda: base.index_fill(0, torch.tensor([1]), torch.tensor(7.5)))
show("index_fill_ int", lambda: torch.arange(6).index_fill_(0, torch.tensor([0, 5]), 9))
show("index_fill bad value", lambda: base.index_fill(0, torch.tensor([1]), torch.ones(2)))
show("index_fill out of range", lambda: base.index_fill(0, torch.tensor([7]), 1.0))
for reduce in ["prod", "mean", "amax", "amin"]:
    for include_self in [True, False]:
        r = torch.full((4, 2), 2.0).index_reduce_(
            0, torch.tensor([0, 0, 2, 3, 3]),
            torch.tensor([[1.0, -1.0], [3.0, 5.0], [4.0, 0.5], [-2.0, 8.0], [6.0, 1.0]]),
            reduce, include_self=include_self)
        print(f"index_reduce {reduce} include_self={include_self}")
        print(r)
show("index_reduce int mean", lambda: torch.tensor([10, 20, 30]).index_reduce(
    0, torch.tensor([0, 0, 1]), torch.tensor([1, 2, 3]), "mean"))
show("index_reduce bad reduce", lambda: torch.ones(3).index_reduce(
    0, torch.tensor([0]), torch.ones(1), "sum"))

section("scatter / scatter_add / scatter_reduce")
z = torch.zeros(3, 5)
sidx = torch.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
ssrc = torch.arange(1.0, 11.0).reshape(2, 5)
show("scatter dim0", lambda: z.scatter(0, sidx, ssrc))
show("scatter dim1", lambda: z.scatter(1, torch.tensor([[0, 1], [4, 3]]), ssrc))
show("scatter value", lambda: z.scatter(1, torch.tensor([[1], [3], [0]]), 1.25))
show("scatter reduce=add", lambda: z.scatter(0, sidx, ssrc, reduce="add"))
show("scatter reduce=multiply", lambda: torch.ones(3, 5).scatter(0, sidx, ssrc,
                                                                 reduce="multiply"))
show("scatter_add", lambda: z.scatter_add(0, sidx, ssrc))
show("scatter_add smaller index", lambda: z.scatter_add(1, torch.tensor([[0, 0]]), ssrc))
show("one-hot via scatter_", lambda: torch.zeros(4, 3).scatter_(
    1, torch.tensor([2, 0, 1, 2]).unsqueeze(1), 1.0))
show("scatter int", lambda: torch.zeros(4, dtype=torch.int64).scatter_(
    0, torch.tensor([3, 1]), torch.tensor([7, 8])))
show("scatter neg dim", lambda: z.scatter(-1, torch.tensor([[4], [0]]), ssrc))
show("scatter bad index", lambda: z.scatter(0, torch.tensor([[3]]), ssrc))
show("scatter neg index", lambda: z.scatter(0, torch.tensor([[-1]]), ssrc))
show("scatter dims mismatch", lambda: z.scatter(0, torch.tensor([0, 1]), ssrc))
show("scatter index too big", lambda: z.scatter(0, torch.zeros(4, 5, dtype=torch.long), ssrc))
show("scatter float index", lambda: z.scatter(0, torch.zeros(1, 1), ssrc))
show("scatter dtype mismatch", lambda: z.scatter(0, sidx, ssrc.double()))
show("scatter bad reduce", lambda: z.scatter(0, sidx, ssrc, reduce="max"))
show("scatter_add dtype", lambda: z.scatter_add(0, sidx, ssrc.long()))
sr_src = torch.tensor([5.0, -1.0, 2.0, 7.0, 3.0, 0.5])
sr_idx = torch.tensor([0, 1, 0, 1, 2, 0])
for reduce in ["sum", "prod", "mean", "amax", "amin"]:
    for include_self in [True, False]:
        r = torch.tensor([1.0, 2.0, 3.0, 4.0]).scatter_reduce(
            0, sr_idx, sr_src, reduce, include_self=include_self)
        print(f"scatter_reduce {reduce} include_self={include_self}: {r}")
for reduce in ["sum", "prod", "mean", "amax", "amin"]:
    r = torch.tensor([10, 20, 30, 40]).scatter_reduce(
        0, sr_idx, torch.tensor([5, -1, 2, 7, 3, 1]), reduce, include_self=False)
    print(f"scatter_reduce int {reduce}: {r}")
show("scatter_reduce 2d amax", lambda: torch.zeros(2, 3).scatter_reduce(
    1, torch.tensor([[0, 0, 2], [1, 1, 1]]), torch.tensor([[1.0, 4.0, -2.0], [3.0, 9.0, 2.0]]),
    "amax", include_self=False))
show("scatter_reduce nan", lambda: torch.zeros(2).scatter_reduce(
    0, torch.tensor([0, 0, 1]), torch.tensor([float("nan"), 1.0, 2.0]), "amax"))
show("scatter_reduce bad", lambda: torch.zeros(2).scatter_reduce(
    0, torch.tensor([0]), torch.ones(1), "max"))

section("gather / take / take_along_dim / put_")
gsrc = torch.arange(12.0).reshape(3, 4)
show("gather dim1", lambda: torch.gather(gsrc, 1, torch.tensor([[0, 0], [3, 1], [2, 2]])))
show("gather dim0", lambda: gsrc.gather(0, torch.tensor([[2, 1, 0, 0]])))
show("gather neg dim", lambda: gsrc.gather(-1, torch.tensor([[3], [2], [1]])))
show("gather empty", lambda: gsrc.gather(1, torch.zeros(3, 0, dtype=torch.long)))
show("gather oob", lambda: gsrc.gather(1, torch.tensor([[4]])))
show("gather int32 idx", lambda: gsrc.gather(1, torch.tensor([[0]], dtype=torch.int32)))
show("gather dims", lambda: gsrc.gather(1, torch.tensor([0, 1])))
show("gather too big", lambda: gsrc.gather(1, torch.zeros(4, 1, dtype=torch.long)))
show("take", lambda: torch.take(gsrc, torch.tensor([[0, 11], [-1, 5]])))
show("take oob", lambda: torch.take(gsrc, torch.tensor([12])))
show("take_along_dim", lambda: torch.take_along_dim(gsrc, gsrc.argmax(1, keepdim=True), 1))
show("take_along_dim sort", lambda: gsrc.take_along_dim(
    torch.tensor([[3, 2, 1, 0]]), dim=1))
show("take_along_dim none", lambda: torch.take_along_dim(gsrc, torch.tensor([5, 0])))
p = torch.zeros(2, 3)
show("put_", lambda: p.clone().put_(torch.tensor([0, 5, -1]), torch.tensor([1.0, 2.0, 3.0])))
show("put_ accumulate", lambda: p.clone().put_(torch.tensor([1, 1, 4]), torch.tensor(
    [1.0, 2.0, 3.0]), accumulate=True))
show("put_ oob", lambda: p.clone().put_(torch.tensor([6]), torch.tensor([1.0])))
show("put_ size", lambda: p.clone().put_(torch.tensor([0, 1]), torch.tensor([1.0])))

section("masked ops")
mf = torch.arange(6.0).reshape(2, 3)
mm = torch.tensor([[True, False, True], [False, False, True]])
show("masked_fill", lambda: mf.masked_fill(mm, -1.5))
show("masked_fill -inf", lambda: mf.masked_fill(~mm, float("-inf")))
show("masked_fill bcast", lambda: mf.masked_fill(torch.tensor([True, False, False]), 0))
show("masked_fill tensor", lambda: mf.masked_fill(mm, torch.tensor(9.0)))
show("masked_fill int", lambda: torch.arange(4).masked_fill(torch.tensor([1, 0, 1, 0]).bool(),
                                                             -7))
show("masked_fill uint8 mask", lambda: mf.masked_fill(mm.to(torch.uint8), 0.0))
show("masked_fill bad value", lambda: mf.masked_fill(mm, torch.ones(2)))
show("masked_fill bcast mismatch", lambda: mf.masked_fill(torch.tensor([True, False]), 0))
show("masked_fill_ bad bcast", lambda: torch.zeros(3).masked_fill_(mm, 1.0))
show("masked_select", lambda: mf.masked_select(mm))
show("masked_select bcast", lambda: torch.masked_select(mf, torch.tensor([False, True, True])))
show("masked_select float mask", lambda: mf.masked_select(mm.float()))
show("masked_scatter", lambda: mf.masked_scatter(mm, torch.tensor([10.0, 20.0, 30.0, 40.0])))
show("masked_scatter bcast", lambda: torch.zeros(2, 3).masked_scatter(
    torch.tensor([False, True, False]), torch.arange(1.0, 7.0).reshape(2, 3)))
show("masked_scatter too few", lambda: mf.masked_scatter(mm, torch.tensor([1.0])))
attn = torch.zeros(3, 3).masked_fill(torch.ones(3, 3, dtype=torch.bool).triu(1), float("-inf"))
show("causal softmax", lambda: attn.softmax(-1))

section("nonzero / argwhere / where")
nz = torch.tensor([[0.0, 1.5, 0.0], [float("nan"), 0.0, -2.0]])
show("nonzero", lambda: nz.nonzero())
show("nonzero as_tuple", lambda: nz.nonzero(as_tuple=True))
show("torch.nonzero as_tuple", lambda: torch.nonzero(torch.tensor([0, 3, 0, 4]), as_tuple=True))
show("nonzero empty", lambda: torch.zeros(2, 2).nonzero())
show("nonzero 0-d", lambda: torch.tensor(5).nonzero())
show("nonzero 0-d tuple", lambda: torch.tensor(5).nonzero(as_tuple=True))
show("nonzero 0-d zero", lambda: torch.tensor(0.0).nonzero())
show("nonzero bool", lambda: torch.tensor([True, False, True]).nonzero())
show("argwhere", lambda: torch.argwhere(nz))
show("argwhere 1d", lambda: torch.tensor([0, 1, 1, 0]).argwhere())
show("where 1-arg", lambda: torch.where(nz != 0))
show("where 3-arg", lambda: torch.where(nz > 0, nz, torch.zeros(())))
show("where scalar other", lambda: torch.where(nz > 0, nz, -1.0))
show("where scalars", lambda: torch.where(torch.tensor([True, False]), 1, 0))
show("where scalar float", lambda: torch.where(torch.tensor([True, False]), 1.5, 0))
show("where int float", lambda: torch.where(torch.tensor([True, False]), torch.tensor([1, 2]),
                                            torch.tensor([0.5, 0.25])))
show("where bcast", lambda: torch.where(torch.tensor([[True], [False]]), torch.arange(3),
                                        torch.tensor(-1)))
show("Tensor.where", lambda: mf.where(mm, torch.tensor(0.0)))
show("where uint8 cond", lambda: torch.where(torch.tensor([1, 0], dtype=torch.uint8),
                                             torch.tensor([1.0, 2.0]), torch.tensor(0.0)))
show("where float cond", lambda: torch.where(torch.tensor([1.0, 0.0]), 1.0, 2.0))
show("where bad bcast", lambda: torch.where(torch.tensor([True, False, True]),
                                            torch.ones(2), torch.zeros(2)))
show("where half float", lambda: torch.where(torch.tensor([True]), torch.ones(1).half(),
                                             torch.zeros(1)))

section("index_select")
show("index_select 0", lambda: gsrc.index_select(0, torch.tensor([2, 0, 2])))
show("index_select 1", lambda: torch.index_select(gsrc, 1, torch.tensor([3, 1])))
show("index_select -1", lambda: gsrc.index_select(-1, torch.tensor([0])))
show("index_select empty", lambda: gsrc.index_select(0, torch.tensor([], dtype=torch.long)))
show("index_select 0-d", lambda: torch.tensor(4.0).index_select(0, torch.tensor([0])))
show("index_select 0-d idx", lambda: gsrc.index_select(0, torch.tensor(1)))
show("index_select oob", lambda: gsrc.index_select(0, torch.tensor([3])))
show("index_select 2d idx", lambda: gsrc.index_select(0, torch.tensor([[0]])))
show("index_select float idx", lambda: gsrc.index_select(0, torch.tensor([0.0])))
show("index_select bad dim", lambda: gsrc.index_select(2, torch.tensor([0])))

section("embedding-style lookups")
table = torch.arange(20.0).reshape(5, 4)
tokens = torch.tensor([[1, 4, 4], [0, 2, 1]])
show("table[tokens]", lambda: table[tokens])
show("F.embedding", lambda: torch.nn.functional.embedding(tokens, table))
show("one_hot", lambda: torch.nn.functional.one_hot(tokens, 5))
lens = torch.tensor([3, 1, 2])
show("pad mask", lambda: torch.arange(4)[None, :] < lens[:, None])
show("last valid", lambda: table[lens, torch.tensor([0, 1, 2])])
logits = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.5, 0.2]])
labels = torch.tensor([1, 0])
show("picked logits", lambda: logits[torch.arange(2), labels])
show("topk gather", lambda: logits.gather(1, logits.topk(2, dim=1).indices))
show("argsort reorder", lambda: table[torch.tensor([3.0, 1.0, 2.0, 0.0, 4.0]).argsort()])
show("bincount", lambda: torch.bincount(torch.tensor([0, 2, 2, 5])))
show("unique inverse", lambda: torch.unique(torch.tensor([3, 1, 3, 2]), return_inverse=True))

section("gradients")
w = torch.arange(12.0).reshape(3, 4).requires_grad_()
y = w[1:, ::2]
print(y)
y.sum().backward()
print(w.grad)
w.grad = None
y = w[[0, 0, 2], [1, 1, 3]]
print(y)
(y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
print(w.grad)
w.grad = None
y = w[w > 5]
print(y.grad_fn.name())
y.pow(2).sum().backward()
print(w.grad)
w.grad = None
y = w[:, None, [1, 2]]
print(y.shape, y.grad_fn.name())
y.sum().backward()
print(w.grad)
w.grad = None
y = w.index_select(1, torch.tensor([0, 0, 3]))
print(y.grad_fn.name())
y.sum().backward()
print(w.grad)
w.grad = None
y = w.gather(1, torch.tensor([[0, 0], [1, 3], [2, 2]]))
print(y.grad_fn.name())
y.sum().backward()
print(w.grad)
w.grad = None
y = torch.take(w, torch.tensor([0, 0, 11]))
print(y.grad_fn.name())
y.sum().backward()
print(w.grad)
w.grad = None
y = torch.take_along_dim(w, torch.tensor([[3], [0], [1]]), dim=1)
print(y.grad_fn.name())
y.sum().backward()
print(w.grad)
w.grad = None
y = w.masked_fill(w > 6, 0.0)
print(y.grad_fn.name())
y.sum().backward()
print(w.grad)
w.grad = None
y = w.masked_select(w < 3)
print(y.grad_fn.name())
(y * 2).sum().backward()
print(w.grad)
w.grad = None
y = torch.where(w > 4, w * 2, w ** 2)
print(y.grad_fn.name())
y.sum().backward()
print(w.grad)

src_g = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
base_g = torch.ones(4, 3, requires_grad=True)
out = base_g.index_add(0, torch.tensor([1, 1]), src_g, alpha=2.0)
print(out.grad_fn.name())
out.backward(torch.arange(12.0).reshape(4, 3))
print(base_g.grad, src_g.grad)
base_g.grad = None
src_g.grad = None
out = base_g.index_copy(0, torch.tensor([3, 0]), src_g)
print(out.grad_fn.name())
out.backward(torch.arange(12.0).reshape(4, 3))
print(base_g.grad, src_g.grad)
base_g.grad = None
out = base_g.index_fill(1, torch.tensor([0]), 5.0)
print(out.grad_fn.name())
out.sum().backward()
print(base_g.grad)
base_g.grad = None
src_g.grad = None
out = base_g.scatter(0, torch.tensor([[0, 1, 2], [3, 3, 3]]), src_g)
print(out.grad_fn.name())
out.backward(torch.arange(12.0).reshape(4, 3))
print(base_g.grad, src_g.grad)
base_g.grad = None
src_g.grad = None
out = base_g.scatter_add(0, torch.tensor([[0, 0, 0], [0, 1, 2]]), src_g)
print(out.grad_fn.name())
out.backward(torch.arange(12.0).reshape(4, 3))
print(base_g.grad, src_g.grad)
for reduce in ["sum", "prod", "mean", "amax", "amin"]:
    bg = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    sg = torch.tensor([4.0, -1.0, 2.0, 2.0, 0.5], requires_grad=True)
    out = bg.scatter_reduce(0, torch.tensor([0, 0, 1, 1, 2]), sg, reduce, include_self=True)
    out.backward(torch.tensor([1.0, 2.0, 3.0]))
    print(f"scatter_reduce grad {reduce}: {out.grad_fn.name()} {bg.grad} {sg.grad}")
mg = torch.zeros(2, 3, requires_grad=True)
ms = torch.arange(1.0, 7.0, requires_grad=True)
out = mg.masked_scatter(torch.tensor([[True, False, True], [False, True, False]]), ms)
print(out.grad_fn.name())
out.backward(torch.arange(6.0).reshape(2, 3) + 1)
print(mg.grad, ms.grad)
ip = torch.zeros(4, requires_grad=True)
iv = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = ip.index_put((torch.tensor([0, 0, 3]),), iv, accumulate=True)
print(out.grad_fn.name())
out.backward(torch.tensor([1.0, 10.0, 100.0, 1000.0]))
print(ip.grad, iv.grad)

section("setitem with autograd")
leaf = torch.zeros(3, requires_grad=True)
show("setitem leaf", lambda: leaf.__setitem__(0, 1.0))
h0 = leaf * 1
val = torch.tensor(2.0, requires_grad=True)
h0[1] = val * 3
print(h0, h0.grad_fn.name())
h0.sum().backward()
print(leaf.grad, val.grad)
h1 = torch.ones(2, 3, requires_grad=True).clone()
h1[:, 0] = 0
h1[h1 > 0] *= 2
print(h1)
emb = torch.nn.Embedding(5, 2)
with torch.no_grad():
    emb.weight[:] = torch.arange(10.0).reshape(5, 2)
    emb.weight[0].fill_(0)
out = emb(torch.tensor([0, 3, 3]))
out.sum().backward()
print(out)
print(emb.weight.grad)
print("done")
