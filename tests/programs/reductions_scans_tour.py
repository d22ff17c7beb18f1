"""Reductions, scans, sorting and counting as data and metrics code uses them (torchmetrics,
pandas-style feature code, ranking metrics): cumsum/cumprod with dtype=, cummax/cummin,
logcumsumexp, stable sorts and argsort, topk/kthvalue/median/nanmedian/quantile/mode,
unique/unique_consecutive, histc/histogram/bincount, searchsorted/bucketize, aminmax,
std_mean/var_mean, nansum/nanmean, logsumexp, count_nonzero, all/any, max/min namedtuples,
diff, trapezoid, renorm, norms, integer reduction dtypes, and the errors PyTorch raises;
on float, int, bool and half inputs with NaN/inf, ties, empty and 0-d inputs."""

import torch

torch.manual_seed(0)
nan, inf = float("nan"), float("inf")


def show(name, fn):
    """Print a result, or the error PyTorch raises (type and message)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the point is to print the error
        print(name, "error", type(e).__name__, str(e).splitlines()[0])
        return
    print(name, out)


x = torch.tensor([[3.0, 1.0, 2.0, 1.0], [nan, 0.5, -inf, 4.0], [2.0, 2.0, 2.0, 0.0]])
xi = torch.tensor([[3, 1, 2, 1], [5, 0, -2, 4], [2, 2, 2, 0]])
xb = torch.tensor([[True, False, True], [False, False, True]])
xh = torch.tensor([1.5, -2.0, 0.25, 65504.0], dtype=torch.float16)
e = torch.empty(0)
s = torch.tensor(2.5)

# scans
print("section scans")
show("cumsum", lambda: x.cumsum(1))
show("cumsum int", lambda: xi.cumsum(0))
show("cumsum int dtype", lambda: xi.cumsum(1).dtype)
show("cumsum bool", lambda: xb.cumsum(1))
show("cumsum dtype=", lambda: xi.cumsum(1, dtype=torch.float32))
show("cumsum half", lambda: torch.cumsum(xh, 0))
show("cumprod", lambda: torch.cumprod(x, 1))
show("cumprod int8", lambda: torch.tensor([2, 3, 4], dtype=torch.int8).cumprod(0))
show("cumprod dtype=", lambda: torch.cumprod(xi, 0, dtype=torch.float64))
show("cumsum empty", lambda: torch.cumsum(e, 0))
show("cumsum 0-d", lambda: torch.cumsum(s, 0))
show("cummax", lambda: torch.cummax(x, 1))
show("cummin", lambda: torch.cummin(x, 1))
show("cummax int", lambda: torch.cummax(xi, 0))
show("cummax ties", lambda: torch.tensor([1.0, 1.0, 0.0, 1.0]).cummax(0))
show("cummin bool", lambda: xb.cummin(1))
show("logcumsumexp", lambda: torch.logcumsumexp(x, 1))
show("logcumsumexp -inf", lambda: torch.logcumsumexp(torch.tensor([-inf, -inf, 0.0]), 0))
show("logcumsumexp int", lambda: torch.logcumsumexp(xi, 1))

# sorting
print("section sort")
v = torch.tensor([2.0, nan, 1.0, 2.0, -inf, 1.0, inf, 0.0])
show("sort", lambda: torch.sort(v))
show("sort desc", lambda: torch.sort(v, descending=True))
show("sort stable", lambda: torch.sort(v, stable=True))
show("sort stable desc", lambda: torch.sort(v, stable=True, descending=True))
show("sort int rows", lambda: xi.sort(dim=1, stable=True))
show("sort bool", lambda: torch.sort(xb, dim=1, stable=True))
show("sort half", lambda: xh.sort(descending=True))
show("sort dim0", lambda: x.sort(0, stable=True))
show("argsort", lambda: torch.argsort(v, stable=True))
show("argsort desc", lambda: v.argsort(descending=True, stable=True))
show("argsort int", lambda: xi.argsort(dim=0, stable=True))
show("sort empty", lambda: torch.sort(e))
show("sort 0-d", lambda: torch.sort(s))
show("msort", lambda: torch.msort(xi))

# selection
print("section select")
show("topk", lambda: torch.topk(v.nan_to_num(0.5), 3))
show("topk smallest", lambda: torch.topk(xi, 2, dim=1, largest=False))
show("topk unsorted", lambda: torch.topk(torch.tensor([5, 1, 4, 2, 3]), 3, sorted=True))
show("topk nan", lambda: torch.topk(v, 2))
show("topk k=0", lambda: torch.topk(x, 0))
show("topk too big", lambda: torch.topk(x, 5))
show("kthvalue", lambda: torch.kthvalue(xi, 2, dim=1))
show("kthvalue keepdim", lambda: torch.kthvalue(x[2], 3, keepdim=True))
show("kthvalue float", lambda: torch.tensor([3.0, 1.0, 2.0, 5.0]).kthvalue(2))
show("kthvalue bad", lambda: torch.kthvalue(xi, 9, dim=1))
show("median", lambda: torch.median(torch.tensor([4.0, 1.0, 3.0, 2.0])))
show("median dim", lambda: xi.median(dim=1))
show("median nan", lambda: x.median(dim=1))
show("median all nan", lambda: x.median())
show("nanmedian", lambda: x.nanmedian())
show("nanmedian dim", lambda: torch.nanmedian(x, dim=1, keepdim=True))
show("median empty", lambda: torch.median(e))
show("median int", lambda: torch.tensor([7, 1, 3, 5]).median())
q = torch.tensor([0.0, 0.25, 0.5, 0.9, 1.0])
d = torch.tensor([1.0, 3.0, 2.0, 10.0, 7.0])
for interp in ("linear", "lower", "higher", "midpoint", "nearest"):
    show(f"quantile {interp}", lambda i=interp: torch.quantile(d, q, interpolation=i))
    show(
        f"nanquantile {interp}", lambda i=interp: torch.nanquantile(x, 0.4, dim=1, interpolation=i)
    )
show("quantile nan", lambda: torch.quantile(x, 0.5, dim=1, keepdim=True))
show("quantile dim0", lambda: torch.quantile(x[[0, 2]], q[:2], dim=0))
show("quantile int", lambda: torch.quantile(xi, 0.5))
show("quantile bad q", lambda: torch.quantile(d, 1.5))
show("quantile bad interp", lambda: torch.quantile(d, 0.5, interpolation="cubic"))
show("quantile 0-d", lambda: torch.quantile(s, 0.3))
show("mode", lambda: torch.mode(torch.tensor([3, 1, 3, 2, 1, 1, 3])))
show("mode dim", lambda: xi.mode(dim=1))
show("mode float", lambda: torch.mode(torch.tensor([[1.0, 2.0, 2.0], [0.5, 0.5, 1.0]]), 1))

# counting
print("section count")
t = torch.tensor([3, 1, 2, 3, 3, 0, 1, 7])
show("unique", lambda: torch.unique(t))
show("unique unsorted count", lambda: torch.unique(t, sorted=True, return_counts=True))
show("unique inverse", lambda: torch.unique(t, return_inverse=True))
show("unique all", lambda: t.unique(return_inverse=True, return_counts=True))
m2 = torch.tensor([[1, 0, 1], [0, 1, 0], [1, 0, 1], [2, 2, 2]])
show("unique dim0", lambda: torch.unique(m2, dim=0, return_inverse=True, return_counts=True))
show("unique dim1", lambda: torch.unique(m2, dim=1, return_counts=True))
show("unique float nan", lambda: torch.unique(torch.tensor([1.0, nan, 1.0, 0.5])))
show("unique bool", lambda: torch.unique(xb, return_counts=True))
show("unique empty", lambda: torch.unique(torch.tensor([], dtype=torch.long), return_counts=True))
show("unique_consecutive", lambda: torch.unique_consecutive(t))
show(
    "unique_consecutive all",
    lambda: torch.unique_consecutive(
        torch.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True, return_counts=True
    ),
)
show(
    "unique_consecutive dim",
    lambda: torch.unique_consecutive(
        torch.tensor([[1, 1], [1, 1], [2, 0], [1, 1]]), dim=0, return_counts=True
    ),
)
h = torch.tensor([0.5, 1.5, 1.5, 2.5, 9.0, -1.0, 3.0])
show("histc", lambda: torch.histc(h, bins=4, min=0, max=3))
show("histc auto", lambda: torch.histc(h, bins=5))
show("histc int", lambda: torch.histc(torch.tensor([1, 2, 2]), bins=3))
show("histogram", lambda: torch.histogram(h, bins=4))
show("histogram range", lambda: torch.histogram(h, bins=3, range=(0.0, 3.0)))
show("histogram tensor bins", lambda: torch.histogram(h, torch.tensor([0.0, 1.0, 2.0, 4.0])))
show(
    "histogram weight",
    lambda: torch.histogram(h, bins=3, range=(0.0, 3.0), weight=torch.arange(7.0)),
)
show(
    "histogram density",
    lambda: torch.histogram(h, bins=torch.tensor([-1.0, 0.0, 2.0, 9.0]), density=True),
)
show("bincount", lambda: torch.bincount(t))
show("bincount minlength", lambda: torch.bincount(t, minlength=10))
show("bincount weights", lambda: torch.bincount(t, weights=torch.linspace(0, 1, 8)))
show("bincount weights f64", lambda: t.bincount(torch.ones(8, dtype=torch.float64)).dtype)
show("bincount empty", lambda: torch.bincount(torch.tensor([], dtype=torch.long)))
show("bincount negative", lambda: torch.bincount(torch.tensor([1, -1])))
show("bincount float", lambda: torch.bincount(torch.tensor([1.0, 2.0])))
edges = torch.tensor([0.0, 1.0, 1.0, 2.0, 5.0])
vals = torch.tensor([[1.0, -3.0, 5.0], [2.0, 1.5, 9.0]])
show("searchsorted", lambda: torch.searchsorted(edges, vals))
show("searchsorted right", lambda: torch.searchsorted(edges, vals, right=True))
show("searchsorted side", lambda: torch.searchsorted(edges, vals, side="right"))
unsorted = torch.tensor([5.0, 1.0, 2.0, 0.0, 1.0])
order = torch.argsort(unsorted, stable=True)
show("searchsorted sorter", lambda: torch.searchsorted(unsorted, vals, sorter=order))
show(
    "searchsorted rows",
    lambda: torch.searchsorted(torch.tensor([[0, 2, 4], [1, 3, 5]]), torch.tensor([[3], [3]])),
)
show("searchsorted scalar", lambda: torch.searchsorted(edges, 1.0))
show("searchsorted conflict", lambda: torch.searchsorted(edges, vals, right=False, side="right"))
show("bucketize", lambda: torch.bucketize(vals, edges))
show("bucketize right", lambda: torch.bucketize(vals, edges, right=True, out_int32=True))
show("bucketize int", lambda: torch.bucketize(torch.tensor([0, 3, 6]), torch.tensor([1, 3, 5])))
show("bucketize 0-d", lambda: torch.bucketize(s, edges))

# basic reductions
print("section reduce")
show("aminmax", lambda: torch.aminmax(x))
show("aminmax dim", lambda: torch.aminmax(xi, dim=1, keepdim=True))
show("aminmax bool", lambda: torch.aminmax(xb, dim=0))
show("aminmax empty", lambda: torch.aminmax(e))
y = torch.tensor([[1.0, 2.0, 4.0, 7.0], [0.0, 0.0, 1.0, -1.0]])
show("std_mean", lambda: torch.std_mean(y))
show("std_mean dim", lambda: torch.std_mean(y, dim=1, correction=0))
show("var_mean", lambda: torch.var_mean(y, 1, keepdim=True))
show("var_mean corr2", lambda: torch.var_mean(y, dim=(0, 1), correction=2))
show("var unbiased", lambda: y.var(1, unbiased=False))
show("std one", lambda: torch.tensor([3.0]).std())
show("var int", lambda: xi.var())
show("nansum", lambda: torch.nansum(x))
show("nansum dim", lambda: torch.nansum(x, dim=1))
show("nansum int", lambda: torch.nansum(xi, 0))
show("nanmean", lambda: torch.nanmean(x, dim=1))
show("nanmean all nan", lambda: torch.nanmean(torch.tensor([nan, nan])))
lse = torch.tensor([[-inf, -inf, -inf], [0.0, -inf, 1.0], [inf, 0.0, 1.0]])
show("logsumexp", lambda: torch.logsumexp(lse, dim=1))
show("logsumexp keepdim", lambda: lse.logsumexp(0, keepdim=True))
show("logsumexp int", lambda: torch.logsumexp(xi, 1))
show("logsumexp empty", lambda: torch.logsumexp(torch.empty(2, 0), 1))
show("count_nonzero", lambda: torch.count_nonzero(x))
show("count_nonzero dims", lambda: torch.count_nonzero(xi, dim=(0, 1)))
show("count_nonzero dim", lambda: xb.count_nonzero(1))
u8 = torch.tensor([[0, 3], [1, 1]], dtype=torch.uint8)
show("all uint8", lambda: torch.all(u8))
show("any uint8 dim", lambda: u8.any(1))
show("all float", lambda: x.all(1))
show("any dims", lambda: torch.any(xb, dim=(0, 1)))
show("all empty", lambda: torch.all(e))
show("any empty", lambda: torch.any(e))
show("max dim", lambda: torch.max(x, 1))
show("min dim", lambda: torch.min(xi, dim=0, keepdim=True))
mx = torch.max(xi, 1)
print("max fields", mx.values, mx.indices, type(mx).__name__, mx[0].dtype, len(mx))
show("max ties", lambda: torch.tensor([[1, 3, 3], [2, 2, 1]]).max(1))
show("min ties", lambda: torch.tensor([[1.0, 1.0, 3.0]]).min(dim=1))
show("max bool", lambda: xb.max(1))
show("max half", lambda: xh.max())
show("max binary", lambda: torch.max(x, torch.zeros(4)))
show("max empty", lambda: torch.max(e))
show("max empty dim", lambda: torch.empty(0, 3).max(1))
show("amax dims", lambda: torch.amax(x, dim=(0, 1)))
show("amax keep", lambda: torch.amin(torch.arange(24.0).reshape(2, 3, 4), dim=(0, 2), keepdim=True))
show("amax neg dims", lambda: torch.arange(24).reshape(2, 3, 4).amax((-1, 0)))
show("argmax", lambda: torch.argmax(x, 1))
show("argmin ties", lambda: torch.tensor([2, 0, 0, 1]).argmin())
show("argmax keepdim", lambda: xi.argmax(dim=0, keepdim=True))

# differences and integrals
print("section calculus")
w = torch.tensor([1.0, 4.0, 9.0, 16.0, 25.0])
show("diff", lambda: torch.diff(w))
show("diff n=2", lambda: torch.diff(w, n=2))
show(
    "diff prepend",
    lambda: torch.diff(w, prepend=torch.tensor([0.0]), append=torch.tensor([30.0, 31.0])),
)
show("diff 2d", lambda: torch.diff(xi, dim=0))
show("diff bool", lambda: torch.diff(torch.tensor([True, False, False, True])))
show("diff int n=3", lambda: xi.diff(n=3))
show("trapezoid", lambda: torch.trapezoid(w))
show("trapezoid dx", lambda: torch.trapezoid(w, dx=0.5))
show("trapezoid x", lambda: torch.trapezoid(w, x=torch.tensor([0.0, 1.0, 3.0, 4.0, 6.0])))
show("trapezoid 2d", lambda: torch.trapezoid(y, dim=0))
show("trapz", lambda: torch.trapz(w, dx=2.0))
show("trapezoid int", lambda: torch.trapezoid(torch.tensor([1, 2, 4])))
show("cumulative_trapezoid", lambda: torch.cumulative_trapezoid(w))
show(
    "cumulative_trapezoid x",
    lambda: torch.cumulative_trapezoid(w, x=torch.tensor([0.0, 1.0, 3.0, 4.0, 6.0])),
)
show("cumulative_trapezoid 2d", lambda: torch.cumulative_trapezoid(y, dx=2.0, dim=1))

# norms
print("section norms")
r = torch.tensor([[3.0, 4.0, 0.0], [-1.0, 2.0, -2.0], [10.0, 0.0, 0.0]])
show("renorm", lambda: torch.renorm(r, p=2, dim=0, maxnorm=3.0))
show("renorm p1 dim1", lambda: r.renorm(1, 1, 5.0))
show("norm", lambda: torch.norm(r))
show("norm p1 dim", lambda: torch.norm(r, p=1, dim=1))
show("norm inf", lambda: r.norm(p=inf, dim=0))
show("norm fro", lambda: torch.norm(r, p="fro", dim=(0, 1)))
show("norm nuc", lambda: torch.norm(r, p="nuc"))
show("norm keepdim", lambda: torch.norm(r, 3, 1, keepdim=True))
for o in (2, 1, inf, -inf, 0, 3.5, -1):
    show(f"vector_norm ord={o}", lambda o=o: torch.linalg.vector_norm(r, ord=o, dim=1))
show("vector_norm dtype", lambda: torch.linalg.vector_norm(r.half(), dtype=torch.float32))
show("vector_norm dims", lambda: torch.linalg.vector_norm(r, dim=(0, 1), keepdim=True))
show("vector_norm int", lambda: torch.linalg.vector_norm(xi))
show("vector_norm empty inf", lambda: torch.linalg.vector_norm(e, ord=inf))
show("vector_norm empty", lambda: torch.linalg.vector_norm(e))
show("matrix_norm", lambda: torch.linalg.matrix_norm(r, ord=1))
show("norm half", lambda: xh.norm())

# dtypes of reductions
print("section dtypes")
i8 = torch.tensor([100, 100, 100], dtype=torch.int8)
show("sum int8", lambda: i8.sum())
show("sum int8 dtype", lambda: i8.sum(dtype=torch.int8))
show("sum bool", lambda: xb.sum())
show("sum uint8", lambda: u8.sum(0))
show("sum half", lambda: xh.sum())
show("prod int8", lambda: i8.prod())
show("prod bool", lambda: xb.prod(1))
show("mean int", lambda: xi.mean())
show("mean int dtype", lambda: xi.mean(dtype=torch.float32))
show("mean bool", lambda: xb.mean())
show("mean empty", lambda: torch.mean(e))
show("sum empty", lambda: torch.sum(torch.empty(0, dtype=torch.int32)))
show("prod empty", lambda: torch.prod(e))
show("cumsum int16", lambda: torch.tensor([1, 2], dtype=torch.int16).cumsum(0).dtype)
show("cumprod bool", lambda: xb.cumprod(1))
show("std int", lambda: xi.std())
show("nanmean int", lambda: torch.nanmean(xi))
show("median bool", lambda: xb.median())
show("sum dim list", lambda: xi.sum([0, 1]))
show("sum bad dim", lambda: xi.sum(2))
show("sort bad dim", lambda: torch.sort(x, dim=3))
show("mode empty", lambda: torch.mode(e))
show("kthvalue empty", lambda: torch.kthvalue(e, 1))
show("logcumsumexp half", lambda: torch.logcumsumexp(xh, 0))
show("histc bad bins", lambda: torch.histc(h, bins=0))
show("quantile empty", lambda: torch.quantile(e, 0.5))
show("quantile q int", lambda: torch.quantile(xi.float(), torch.tensor([1, 2])))
show("diff 0-d", lambda: torch.diff(s))
show("unique dim bad", lambda: torch.unique(m2, dim=2))

# gradients through scans, selections and norms (ties, zeros, NaN, -inf)
print("section grads")


def grad(name, f, *shapes_or_tensors):
    ts = [t.clone().requires_grad_(True) for t in shapes_or_tensors]
    try:
        out = f(*ts)
        out.backward(torch.ones_like(out) if out.dim() else None)
        print(name, "grad", [t.grad for t in ts])
    except Exception as e:  # noqa: BLE001
        print(name, "error", type(e).__name__, str(e).splitlines()[0])


a = torch.tensor([[3.0, 1.0, 2.0, 1.0], [0.5, 0.5, -1.0, 4.0]])
grad("cumsum", lambda t: t.cumsum(1) * torch.arange(4.0), a)
grad("cumprod", lambda t: t.cumprod(1), a)
grad("cumprod zero", lambda t: t.cumprod(0), torch.tensor([2.0, 0.0, 3.0, 0.0, 5.0]))
grad("cummax", lambda t: t.cummax(1).values, a)
grad("cummin", lambda t: t.cummin(1)[0] * 2, a)
grad("logcumsumexp", lambda t: t.logcumsumexp(1), a)
grad("sort", lambda t: t.sort(1, descending=True).values * torch.arange(4.0), a)
grad("topk", lambda t: t.topk(2, 1).values, a)
grad("kthvalue", lambda t: t.kthvalue(2, 1).values, a)
grad("median", lambda t: t.median(), a)
grad("median dim", lambda t: t.median(1).values, a)
grad("nanmedian", lambda t: t.nanmedian(), torch.tensor([nan, 1.0, 2.0, 3.0]))
grad("quantile", lambda t: torch.quantile(t, torch.tensor([0.3, 0.8]), dim=1), a)
grad("quantile mid", lambda t: torch.quantile(t, 0.5, interpolation="midpoint"), a)
grad("nanquantile", lambda t: torch.nanquantile(t, 0.5), torch.tensor([nan, 1.0, 2.0, 3.0]))
grad("mode", lambda t: t.mode(1).values, torch.tensor([[1.0, 2.0, 2.0], [3.0, 3.0, 1.0]]))
grad("amax ties", lambda t: t.amax(1), torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
grad("max ties", lambda t: t.max(), torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
grad("max dim ties", lambda t: t.max(1).values, torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
grad("aminmax", lambda t: sum(torch.aminmax(t, dim=1)), a)
grad("std_mean", lambda t: sum(torch.std_mean(t, 1)), a)
grad("var_mean", lambda t: torch.var_mean(t, correction=0)[0], a)
grad("nansum", lambda t: t.nansum(), torch.tensor([nan, 1.0, 2.0]))
grad("nanmean", lambda t: t.nanmean(), torch.tensor([nan, 1.0, 2.0]))
grad("logsumexp -inf", lambda t: t.logsumexp(1), torch.tensor([[-inf, -inf], [0.0, -inf]]))
grad("logsumexp inf", lambda t: t.logsumexp(1), torch.tensor([[inf, 0.0], [1.0, 2.0]]))
grad("diff", lambda t: t.diff(n=2) ** 2, torch.tensor([1.0, 4.0, 9.0, 16.0]))
grad("trapezoid", lambda t: torch.trapezoid(t, dx=0.5), torch.tensor([1.0, 4.0, 9.0]))
grad(
    "trapezoid x",
    lambda y, x: torch.trapezoid(y, x),
    torch.tensor([1.0, 4.0, 9.0]),
    torch.tensor([0.0, 1.0, 3.0]),
)
grad("cumulative_trapezoid", lambda t: torch.cumulative_trapezoid(t), torch.tensor([1.0, 4.0, 9.0]))
grad("renorm", lambda t: t.renorm(2, 0, 1.0), a)
grad("norm zero", lambda t: t.norm(), torch.zeros(3))
grad("norm inf", lambda t: torch.linalg.vector_norm(t, inf), torch.tensor([1.0, -3.0, 3.0]))
grad("norm 0", lambda t: torch.linalg.vector_norm(t, 0), torch.tensor([1.0, -3.0, 0.0]))
grad("norm 1", lambda t: torch.linalg.vector_norm(t, 1), torch.tensor([1.0, -3.0, 0.0]))
grad("norm 3", lambda t: torch.linalg.vector_norm(t, 3), torch.tensor([1.0, -3.0, 0.0]))
grad("norm -inf", lambda t: torch.linalg.vector_norm(t, -inf), torch.tensor([1.0, -3.0, 1.0]))
grad("prod zero", lambda t: t.prod(), torch.tensor([2.0, 0.0, 3.0]))
grad("prod two zeros", lambda t: t.prod(), torch.tensor([2.0, 0.0, 0.0]))
grad("prod dim", lambda t: t.prod(1), torch.tensor([[2.0, 0.0, 3.0], [1.0, 2.0, 3.0]]))
grad("count via sum", lambda t: (t > 1).sum() * t.sum(), a)
grad("half cumsum", lambda t: t.cumsum(0), torch.tensor([1.0, 2.0], dtype=torch.float16))
grad("sum dtype", lambda t: t.sum(dtype=torch.float64), a)
grad("cumsum dtype", lambda t: t.cumsum(1, dtype=torch.float64), a)
grad("std one", lambda t: t.std(), torch.tensor([3.0]))
# strides and contiguity of results
big = torch.randn(3, 4, 5)
nc = big.transpose(0, 2)
print("section layouts")
print("cumsum nc stride", nc.cumsum(1).stride(), nc.cumsum(1).is_contiguous())
print("sort nc stride", nc.sort(1).values.stride(), nc.sort(1).indices.stride())
print("topk nc stride", nc.topk(2, 1).values.stride())
print("sum keepdim stride", nc.sum(1, keepdim=True).stride())
print("amax nc", torch.allclose(nc.amax((0, 2)), nc.contiguous().amax((0, 2))))
print("cummax nc stride", nc.cummax(2).values.stride())
cl = torch.randn(2, 3, 4, 4).to(memory_format=torch.channels_last)
print("cl sum keepdim", cl.sum(1, keepdim=True).stride(), cl.mean((2, 3), keepdim=True).stride())
print("cl cumsum", cl.cumsum(1).stride(), cl.softmax(1).stride())
print("cl sort", cl.sort(1).values.stride())
print("cl amax", cl.amax(1, keepdim=True).stride(), cl.max(1, keepdim=True).values.stride())
print("cl std", cl.std(1, keepdim=True).stride(), cl.norm(dim=1, keepdim=True).stride())
# out= variants
o = torch.empty(2)
torch.sum(a, 1, out=o)
print("sum out", o)
vals, idx = torch.empty(0), torch.empty(0, dtype=torch.long)
torch.sort(a, 1, out=(vals, idx))
print("sort out", vals, idx)
torch.cumsum(a, 1, out=torch.empty(0))
print("cumsum out ok")
r = torch.max(a, 1, out=(torch.empty(0), torch.empty(0, dtype=torch.long)))
print("max out", r)
# bfloat16 / half
bf = torch.tensor([1.5, 2.25, -3.0, 100.0], dtype=torch.bfloat16)
show("bf sum", lambda: bf.sum())
show("bf cumsum", lambda: bf.cumsum(0))
show("bf mean", lambda: bf.mean())
show("bf sort", lambda: bf.sort())
show("bf median", lambda: bf.median())
show("bf var", lambda: bf.var())
show("half quantile", lambda: torch.quantile(bf.half(), 0.5))
show("half std_mean", lambda: torch.std_mean(bf.half()))
show("half logsumexp", lambda: bf.half().logsumexp(0))
show("half topk", lambda: bf.half().topk(2))
show("half unique", lambda: bf.half().unique(return_counts=True))
show("half histc", lambda: torch.histc(bf.half(), bins=3))
show("half cumprod", lambda: bf.half().cumprod(0))
show("half prod", lambda: bf.half().prod())
show("half nanmean", lambda: torch.nanmean(bf.half()))
show("half norm inf", lambda: torch.linalg.vector_norm(bf.half(), inf))
show("half mode", lambda: torch.mode(bf.half()))
show(
    "half bincount w",
    lambda: torch.bincount(torch.tensor([0, 1, 1]), weights=torch.ones(3, dtype=torch.float16)),
)
show("half searchsorted", lambda: torch.searchsorted(bf.half().sort().values, torch.tensor([0.0])))
show("int32 cumsum", lambda: torch.tensor([1, 2], dtype=torch.int32).cumsum(0))
show("uint8 sum", lambda: torch.tensor([200, 100], dtype=torch.uint8).sum())
show("uint8 cumsum", lambda: torch.tensor([200, 100], dtype=torch.uint8).cumsum(0))
show("bool cumprod dtype", lambda: torch.tensor([True, False]).cumprod(0).dtype)
show("int argmax", lambda: torch.tensor([[1, 5], [5, 1]]).argmax())
show("std_mean int", lambda: torch.std_mean(torch.tensor([1, 2])))
show("var_mean bool", lambda: torch.var_mean(torch.tensor([True, False])))
show(
    "count_nonzero half nan",
    lambda: torch.count_nonzero(torch.tensor([nan, 0.0, -0.0], dtype=torch.half)),
)
show("all int dtype", lambda: torch.tensor([1, 2]).all().dtype)
show("any keepdim", lambda: torch.tensor([[0, 2]], dtype=torch.uint8).any(1, keepdim=True))
show("all dim uint8", lambda: torch.tensor([[0, 2]], dtype=torch.uint8).all(dim=0))
show("sum list bool", lambda: torch.tensor([[True, True]]).sum(dim=1, keepdim=True))
show(
    "mean dim half",
    lambda: torch.tensor([[1.0, 2.0]], dtype=torch.half).mean(1, dtype=torch.float32),
)
show("nansum half", lambda: torch.tensor([nan, 1.0], dtype=torch.half).nansum())
show(
    "topk sorted False",
    lambda: torch.topk(torch.arange(10.0), 3, sorted=False).values.sort().values,
)
show("sort stable kw only", lambda: torch.sort(torch.tensor([2, 1]), 0, True, stable=True))
show("argsort stable pos", lambda: torch.argsort(torch.tensor([2, 1, 1]), 0, False, stable=True))
show(
    "unique return_inverse dim",
    lambda: torch.tensor([[2, 1], [2, 1], [0, 0]]).unique(dim=0, return_inverse=True),
)
show(
    "unique sorted False", lambda: torch.unique(torch.tensor([3, 1, 3]), sorted=False).sort().values
)
show(
    "Tensor.unique_consecutive",
    lambda: torch.tensor([1, 1, 2]).unique_consecutive(return_counts=True),
)
show(
    "histogramdd",
    lambda: torch.histogramdd(torch.tensor([[0.0, 1.0], [1.0, 0.5], [0.2, 0.2]]), bins=[2, 2]),
)
show(
    "histogram out of range",
    lambda: torch.histogram(torch.tensor([1.0, 2.0]), bins=2, range=(3.0, 1.0)),
)
show("bincount 2d", lambda: torch.bincount(torch.tensor([[1]])))
show("bincount weight len", lambda: torch.bincount(torch.tensor([1, 2]), weights=torch.ones(3)))
show(
    "searchsorted non-cont",
    lambda: torch.searchsorted(torch.arange(10.0)[::2], torch.tensor([3.0])),
)
show(
    "searchsorted dims mismatch",
    lambda: torch.searchsorted(torch.tensor([[0, 2]]), torch.tensor([[1], [2]])),
)
show("cummax empty", lambda: torch.cummax(torch.empty(0), 0))
show("cummax 0-d", lambda: torch.cummax(torch.tensor(3.0), 0))
show("logsumexp 0-d", lambda: torch.logsumexp(torch.tensor(3.0), 0))
show("median 0-d dim", lambda: torch.tensor(3.0).median(0))
show("topk 0-d", lambda: torch.tensor(3.0).topk(1))
show("kthvalue 0-d", lambda: torch.tensor(3.0).kthvalue(1))
show("mode 0-d", lambda: torch.tensor(3).mode())
show("unique 0-d", lambda: torch.tensor(3).unique(return_counts=True))
show("aminmax 0-d", lambda: torch.tensor(3).aminmax())
show("argsort 0-d", lambda: torch.tensor(3).argsort())
show("amax empty dims", lambda: torch.empty(0, 3).amax(1))
show("amax empty bad", lambda: torch.empty(0, 3).amax(0))
show("sum dims dup", lambda: torch.ones(2, 3).sum((0, 0)))
show("std bad correction", lambda: torch.ones(3).std(correction=4))
show("var_mean unbiased kw", lambda: torch.var_mean(torch.tensor([1.0, 2.0, 4.0]), unbiased=False))
show("vector_norm ord bad", lambda: torch.linalg.vector_norm(torch.ones(2), ord="fro"))
show("norm dim int p0", lambda: torch.tensor([[1.0, 0.0], [0.0, 0.0]]).norm(0, 1))
show("renorm bad", lambda: torch.ones(3).renorm(2, 0, 1.0))
show("renorm neg", lambda: torch.ones(2, 2).renorm(-1, 0, 1.0))
show("diff append 2d", lambda: torch.diff(torch.ones(2, 2), dim=1, append=torch.zeros(2, 1)))
show("diff prepend bad", lambda: torch.diff(torch.ones(2, 2), prepend=torch.zeros(3)))
show("diff n=0", lambda: torch.diff(torch.tensor([1, 2]), n=0))
show("diff n large", lambda: torch.diff(torch.tensor([1, 2]), n=5))
show("trapezoid empty", lambda: torch.trapezoid(torch.empty(0)))
show("cumulative_trapezoid empty", lambda: torch.cumulative_trapezoid(torch.empty(0)))
show("cumulative_trapezoid one", lambda: torch.cumulative_trapezoid(torch.tensor([3.0])))
show("trapezoid both", lambda: torch.trapezoid(torch.ones(3), x=torch.ones(3), dx=1.0))
print("section errors")
show("renorm p0", lambda: torch.ones(2, 2).renorm(0, 0, 1.0))
show("renorm 0d", lambda: torch.tensor(1.0).renorm(2, 0, 1.0))
show("renorm maxnorm neg", lambda: torch.ones(2, 2).renorm(2, 0, -1.0))
show("renorm int", lambda: torch.ones(2, 2, dtype=torch.long).renorm(2, 0, 1.0))
show("renorm dim", lambda: torch.ones(2, 2).renorm(2, 5, 1.0))
for f in [
    lambda t: t.norm(0),
    lambda t: t.norm(p=0, dim=0),
    lambda t: torch.linalg.norm(t, 0),
    lambda t: torch.linalg.vector_norm(t, 0, dim=0),
]:
    t = torch.tensor([1.0, 0.0, 2.0], requires_grad=True)
    o = f(t)
    print("norm 0", o, o.grad_fn.name() if o.grad_fn else None)
    o.backward()
    print("norm 0 grad", t.grad)
show("vn ord None", lambda: torch.linalg.vector_norm(torch.ones(2), ord=None))
show("vn ord list", lambda: torch.linalg.vector_norm(torch.ones(2), ord=[1]))
show("vn ord str kw", lambda: torch.linalg.vector_norm(torch.ones(2), "fro"))
show("vn ord bool", lambda: torch.linalg.vector_norm(torch.ones(2), ord=True))
show("hist rev", lambda: torch.histogram(torch.tensor([1.0, 2.0]), bins=2, range=(3.0, 1.0)))
show("histc rev", lambda: torch.histc(torch.tensor([1.0, 2.0]), bins=2, min=3, max=1))
show(
    "hist nan range",
    lambda: torch.histogram(torch.tensor([1.0, 2.0]), bins=2, range=(float("nan"), 1.0)),
)
show("hist inf data", lambda: torch.histogram(torch.tensor([1.0, float("inf")]), bins=2))
show("histc inf data", lambda: torch.histc(torch.tensor([1.0, float("inf")]), bins=2))
show("trap both", lambda: torch.trapezoid(torch.ones(3), x=torch.ones(3), dx=1.0))
show("trap both pos", lambda: torch.trapezoid(torch.ones(3), torch.ones(3), dx=1.0))
show("ctrap both", lambda: torch.cumulative_trapezoid(torch.ones(3), x=torch.ones(3), dx=1.0))
show("trapz both", lambda: torch.trapz(torch.ones(3), x=torch.ones(3), dx=1.0))
show("trap dx tensor", lambda: torch.trapezoid(torch.ones(3), dx=torch.tensor(2.0)))
show("trap x scalar", lambda: torch.trapezoid(torch.ones(3), 2.0))

# NaN, signed zeros and ties where data code meets them
print("section nan and ties")
z = torch.tensor([0.0, -0.0, 1.0, nan, nan, -inf, 1.0])
show("unique zeros nan", lambda: torch.unique(z, return_counts=True, return_inverse=True))
show("unique_consecutive nan", lambda: torch.unique_consecutive(z, return_counts=True))
show("unique dim nan", lambda: torch.unique(torch.tensor([[nan, 1.0], [nan, 1.0]]), dim=0))
show("histc nan", lambda: torch.histc(torch.tensor([1.0, nan, 2.0]), bins=2, min=0, max=3))
show(
    "histogram nan",
    lambda: torch.histogram(torch.tensor([1.0, nan, 2.0]), bins=2, range=(0.0, 3.0)),
)
show("bincount bool", lambda: torch.bincount(torch.tensor([True, False, True])))
show("bincount uint8", lambda: torch.bincount(torch.tensor([1, 3], dtype=torch.uint8)))
show(
    "bincount int weights",
    lambda: torch.bincount(torch.tensor([1, 3]), weights=torch.tensor([2, 5])),
)
show("mode nan", lambda: torch.mode(torch.tensor([nan, nan, 1.0])))
show("kthvalue nan", lambda: torch.kthvalue(torch.tensor([nan, 2.0, 1.0]), 3))
show("nanmedian all nan rows", lambda: torch.nanmedian(torch.tensor([[nan, nan], [1.0, nan]]), 1))
show("quantile nan q", lambda: torch.quantile(torch.tensor([1.0, 2.0]), torch.tensor([nan])))
show("cummax nan", lambda: torch.cummax(torch.tensor([1.0, nan, 3.0, nan]), 0))
show("cummin nan", lambda: torch.cummin(torch.tensor([1.0, nan, 0.0]), 0))
show("logcumsumexp inf", lambda: torch.logcumsumexp(torch.tensor([inf, 0.0, -inf, inf]), 0))
show("logcumsumexp nan", lambda: torch.logcumsumexp(torch.tensor([0.0, nan, 1.0]), 0))
show("argmax nan", lambda: torch.argmax(torch.tensor([1.0, nan, 3.0, nan])))
show("argmin nan", lambda: torch.tensor([[1.0, nan], [0.0, -1.0]]).argmin(1))
show("max nan dim", lambda: torch.tensor([[1.0, nan], [0.0, -1.0]]).max(1))
show("aminmax nan", lambda: torch.aminmax(torch.tensor([1.0, nan, -1.0])))
show("amax nan", lambda: torch.amax(torch.tensor([[1.0, nan], [2.0, 3.0]]), 0))
t = torch.tensor([[1.0, nan, 3.0], [3.0, 3.0, 1.0]], requires_grad=True)
t.amax(1).sum().backward()
show("amax grad nan", lambda: t.grad)
t2 = torch.tensor([[1.0, nan, 3.0], [3.0, 3.0, 1.0]], requires_grad=True)
t2.max(1).values.sum().backward()
show("max grad nan", lambda: t2.grad)
show("var_mean corr float", lambda: torch.var_mean(torch.tensor([1.0, 2.0, 4.0]), correction=0.5))
show("std dim one", lambda: torch.tensor([[1.0], [2.0]]).std(1))
show(
    "std_mean keepdim",
    lambda: torch.std_mean(torch.tensor([[1.0, 2.0], [3.0, 5.0]]), 0, keepdim=True, correction=0),
)
show("var complex", lambda: torch.tensor([1 + 1j, 2 - 1j]).var())
show("sort complex", lambda: torch.tensor([1 + 1j, 2 - 1j]).sort())
show("cumsum complex", lambda: torch.tensor([1 + 1j, 2 - 1j]).cumsum(0))
show("cumprod complex", lambda: torch.tensor([1 + 1j, 2 - 1j]).cumprod(0))
show("median half nan", lambda: torch.tensor([1.0, nan, 2.0], dtype=torch.half).median())
show(
    "sort bf16 nan",
    lambda: torch.tensor([1.0, nan, -2.0], dtype=torch.bfloat16).sort(descending=True),
)
show("topk int largest False", lambda: torch.tensor([5, 1, 5, 1, 3]).topk(3, largest=False))
show("topk ties order", lambda: torch.tensor([1.0, 2.0, 2.0, 2.0, 0.0]).topk(2))
show("kthvalue ties", lambda: torch.tensor([2.0, 1.0, 2.0, 1.0]).kthvalue(2))
show("median ties index", lambda: torch.tensor([[2.0, 1.0, 2.0, 1.0]]).median(1))
show("mode ties", lambda: torch.tensor([2, 1, 2, 1]).mode())
show("count_nonzero empty", lambda: torch.count_nonzero(torch.empty(0, 3), 0))
show(
    "logsumexp all -inf keepdim",
    lambda: torch.logsumexp(torch.full((2, 2), -inf), (0, 1), keepdim=True),
)
show(
    "logsumexp half", lambda: torch.logsumexp(torch.tensor([60000.0, 60000.0], dtype=torch.half), 0)
)
show("logsumexp bool", lambda: torch.logsumexp(torch.tensor([True, False]), 0))
show("cumsum out dtype", lambda: torch.cumsum(torch.tensor([1, 2]), 0, out=torch.empty(2)))
show(
    "searchsorted nan",
    lambda: torch.searchsorted(torch.tensor([1.0, 2.0, nan]), torch.tensor([nan, 3.0])),
)
show("bucketize nan", lambda: torch.bucketize(torch.tensor([nan, 1.5]), torch.tensor([1.0, 2.0])))
show("diff n prepend", lambda: torch.diff(torch.tensor([1, 4, 9]), n=2, prepend=torch.tensor([0])))
show(
    "diff float prepend int",
    lambda: torch.diff(torch.tensor([1.0, 4.0]), prepend=torch.tensor([0])),
)
show("renorm zero", lambda: torch.zeros(2, 2).renorm(2, 0, 1.0))
show("renorm inf", lambda: torch.tensor([[3.0, -4.0], [0.1, 0.2]]).renorm(float("inf"), 0, 1.0))
show("norm empty", lambda: torch.empty(0).norm())
show("norm dim empty", lambda: torch.empty(0, 3).norm(dim=0))
show("vector_norm dtype lower", lambda: torch.linalg.vector_norm(torch.ones(2), dtype=torch.half))
show("vector_norm dtype int", lambda: torch.linalg.vector_norm(torch.ones(2), dtype=torch.long))
show("vector_norm out", lambda: torch.linalg.vector_norm(torch.ones(2), out=torch.empty(())))
show("nansum bool", lambda: torch.nansum(torch.tensor([True, True])))
show("nansum dtype", lambda: torch.nansum(torch.tensor([1.0, nan]), dtype=torch.float64))
show("nanmean dtype", lambda: torch.nanmean(torch.tensor([1.0, nan]), dtype=torch.float64))
show("nanmean keep", lambda: torch.nanmean(torch.tensor([[1.0, nan]]), 1, keepdim=True))
show("all int8 dim", lambda: torch.tensor([[1, 0]], dtype=torch.int8).all(1))
show("any float", lambda: torch.tensor([0.0, nan]).any())
show("all nan", lambda: torch.tensor([nan]).all())
show("prod int dtype", lambda: torch.tensor([2, 3], dtype=torch.int16).prod(dtype=torch.int8))
show("sum bool dtype", lambda: torch.tensor([True]).sum(dtype=torch.bool))
show("mean half keep", lambda: torch.tensor([[65504.0, 65504.0]], dtype=torch.half).mean(1))
show("sum half overflow", lambda: torch.tensor([65504.0, 65504.0], dtype=torch.half).sum())
show("cumsum half overflow", lambda: torch.tensor([65504.0, 65504.0], dtype=torch.half).cumsum(0))
