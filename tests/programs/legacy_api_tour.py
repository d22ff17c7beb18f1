"""Code from before PyTorch 1.0 that still runs on PyTorch 2.x.

Legacy tensor types (torch.FloatTensor(2, 3), x.type(...)), Variable, .data writes,
set_default_tensor_type, storages (FloatStorage, x.storage(), untyped_storage(),
TypedStorage), x.new(...), resize_, old-style checkpoints, the deprecated functional
aliases and loss arguments, the un-underscored nn.init functions and clip_grad_norm,
and Tensor.add's old overloads. Warnings are printed as a user would see them.
"""
import io
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

torch.manual_seed(0)


def err(label, fn):
    try:
        out = fn()
        print(f"{label}: no error", "" if out is None else out)
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"{label}: {type(e).__name__}: {msg}")


def caught(label, fn):
    """Run fn, printing its result and the warnings it raised (category, first line)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            out = fn()
        except Exception as e:  # noqa: BLE001
            out = f"{type(e).__name__}: {str(e).splitlines()[0]}"
    print(f"{label}: {out}")
    for w in rec:  # (without the path of the C++ source in PyTorch's build)
        first = str(w.message).splitlines()[0].split(" (Triggered internally at")[0]
        print(f"  warning {w.category.__name__}: {first}")


def desc(t):
    return f"{t.type()} {tuple(t.shape)} {t.dtype}"


# ---------------------------------------------------------------- legacy constructors
print("== legacy constructors")
f = torch.FloatTensor(2, 3)
print("FloatTensor(2, 3):", desc(f))
f.zero_()
print(f)
print("FloatTensor([1, 2]):", torch.FloatTensor([1, 2]))
print("FloatTensor([[1, 2], [3, 4]]):", torch.FloatTensor([[1, 2], [3, 4]]))
print("FloatTensor():", torch.FloatTensor(), desc(torch.FloatTensor()))
print("LongTensor([1, 2]):", torch.LongTensor([1, 2]))
print("LongTensor(3).shape:", torch.LongTensor(3).shape, torch.LongTensor(3).dtype)
print("IntTensor([1, -2]):", torch.IntTensor([1, -2]))
print("ByteTensor([1, 255]):", torch.ByteTensor([1, 255]))
print("CharTensor([-1, 2]):", torch.CharTensor([-1, 2]))
print("ShortTensor([3]):", torch.ShortTensor([3]))
print("DoubleTensor([1.5]):", torch.DoubleTensor([1.5]))
print("HalfTensor([1.5]):", torch.HalfTensor([1.5]))
print("BoolTensor([1, 0]):", torch.BoolTensor([True, False]))
print("BFloat16Tensor([1.5]):", torch.BFloat16Tensor([1.5]))
print("Tensor(2, 2):", desc(torch.Tensor(2, 2)))
print("Tensor([1, 2]):", torch.Tensor([1, 2]))
print("Tensor(torch.Size([2, 1])):", desc(torch.Tensor(torch.Size([2, 1]))))
print("Tensor():", torch.Tensor(), torch.Tensor().shape)
print("Tensor(0):", torch.Tensor(0).shape)
print("FloatTensor(torch.Size([3])):", desc(torch.FloatTensor(torch.Size([3]))))
print("FloatTensor((2, 2)) (a tuple is data):", torch.FloatTensor((2, 2)))
t = torch.tensor([1.0, 2.0])
print("FloatTensor(tensor) shares:", torch.FloatTensor(t).data_ptr() == t.data_ptr())
print("Tensor(tensor) shares:", torch.Tensor(t).data_ptr() == t.data_ptr())
err("LongTensor(float tensor)", lambda: torch.LongTensor(t))
err("FloatTensor('a')", lambda: torch.FloatTensor("a"))
err("FloatTensor(2, 'a')", lambda: torch.FloatTensor(2, "a"))
err("FloatTensor(-1)", lambda: torch.FloatTensor(-1))
err("Tensor([1], dtype=)", lambda: torch.Tensor([1], dtype=torch.int64))
print("isinstance FloatTensor:", isinstance(torch.zeros(2), torch.FloatTensor),
      isinstance(torch.zeros(2, dtype=torch.int64), torch.FloatTensor),
      isinstance(torch.zeros(2, dtype=torch.int64), torch.LongTensor))
print("isinstance Tensor:", isinstance(torch.FloatTensor(1), torch.Tensor))
print("type(FloatTensor(1)):", type(torch.FloatTensor(1)))
print("FloatTensor.dtype:", torch.FloatTensor.dtype, torch.LongTensor.dtype,
      torch.DoubleTensor.is_sparse)
print("repr(torch.FloatTensor):", repr(torch.FloatTensor), repr(torch.LongTensor))

# ---------------------------------------------------------------- type()
print("== x.type()")
x = torch.tensor([1.7, -2.3, 3.0])
for v in [x, x.long(), x.int(), x.double(), x.half(), x.bool(), x.byte(), x.char(),
          x.short(), x.bfloat16(), torch.tensor(1.0), torch.zeros(0)]:
    print(v.dtype, "->", v.type())
print("type(DoubleTensor):", x.type(torch.DoubleTensor))
print("type('torch.IntTensor'):", x.type("torch.IntTensor"))
print("type(torch.int64):", x.type(torch.int64))
print("type(torch.LongTensor).type():", x.type(torch.LongTensor).type())
print("same type returns self:", x.type(torch.FloatTensor) is x, x.type("torch.FloatTensor") is x)
err("type('float')", lambda: x.type("float"))
err("type('torch.Foo')", lambda: x.type("torch.Foo"))
err("type(int)", lambda: x.type(int))
print("type_as:", x.type_as(torch.zeros(1, dtype=torch.int32)),
      x.type_as(torch.zeros(1, dtype=torch.float64)).dtype)
print("long().type_as(float):", torch.tensor([1, 2]).type_as(x))
print("non_blocking type:", x.type(torch.DoubleTensor, non_blocking=True).dtype)
print("torch.typename:", torch.typename(x), torch.typename(x.long()), torch.typename(1))

# ---------------------------------------------------------------- Variable
print("== Variable")
v = Variable(torch.ones(2, 2), requires_grad=True)
print("Variable:", type(v).__name__, v.requires_grad, v.is_leaf)
print(v)
w = Variable(torch.tensor([1.0, 2.0]))
print("Variable default requires_grad:", w.requires_grad)
y = (v * 3).sum()
y.backward()
print("v.grad:", v.grad)
print("v.data:", v.data, v.data.requires_grad)
print("isinstance(v, Variable):", isinstance(v, Variable), isinstance(torch.ones(1), Variable))
vol = Variable(torch.ones(1), volatile=True) if False else None
err("Variable(list)", lambda: Variable([1.0, 2.0]))
err("Variable(int tensor, grad)", lambda: Variable(torch.tensor([1, 2]), requires_grad=True))
print("Variable(..., requires_grad=False):", Variable(torch.ones(1), requires_grad=False))
vv = Variable(v.data)
print("Variable(v.data) is leaf, shares:", vv.is_leaf, vv.data_ptr() == v.data_ptr())

# .data writes
p = torch.ones(3, requires_grad=True)
loss = (p * p).sum()
loss.backward()
p.data -= 0.1 * p.grad.data
print("SGD via .data:", p, p.is_leaf, p.requires_grad)
p.data.add_(1)
print(".data.add_:", p)
p.data = torch.zeros(3)
print(".data = zeros:", p, p.requires_grad)
p.data = torch.zeros(2, dtype=torch.float64)
print(".data = new shape/dtype:", p, p.shape, p.dtype)
p.grad.data.zero_()
print("grad.data.zero_:", p.grad)
q = torch.ones(2, requires_grad=True)
y = q * q
q.data.mul_(5)
y.sum().backward()
print(".data write skips the version check:", q.grad)
print("data.requires_grad:", q.data.requires_grad, q.data.is_leaf, q.data.grad_fn)
err(".data = list", lambda: setattr(q, "data", [1.0]))
err(".data = int", lambda: setattr(q, "data", 3))
print("detach vs data:", q.detach().requires_grad, q.data._version == q._version)

# ---------------------------------------------------------------- default tensor type
print("== set_default_tensor_type")
caught("set_default_tensor_type(DoubleTensor)",
       lambda: torch.set_default_tensor_type(torch.DoubleTensor))
print("default dtype:", torch.get_default_dtype(), torch.tensor([1.0]).dtype,
      torch.Tensor(2).type(), torch.zeros(1).dtype)
print("FloatTensor still float:", torch.FloatTensor(1).dtype)
caught("set_default_tensor_type('torch.FloatTensor')",
       lambda: torch.set_default_tensor_type("torch.FloatTensor"))
print("default dtype:", torch.get_default_dtype(), torch.Tensor(1).type())
caught("set_default_tensor_type(LongTensor)",
       lambda: torch.set_default_tensor_type(torch.LongTensor))
caught("set_default_tensor_type('foo')", lambda: torch.set_default_tensor_type("foo"))
caught("set_default_tensor_type('torch.Foo')",
       lambda: torch.set_default_tensor_type("torch.Foo"))
caught("set_default_tensor_type(float)", lambda: torch.set_default_tensor_type(float))
print("default dtype:", torch.get_default_dtype())
torch.set_default_dtype(torch.float64)
print("set_default_dtype(float64):", torch.Tensor(1).type(), torch.tensor(1.5).dtype)
torch.set_default_dtype(torch.float32)
err("set_default_dtype(int64)", lambda: torch.set_default_dtype(torch.int64))

# ---------------------------------------------------------------- storages
print("== storages")
x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    s = x.storage()
print("x.storage() warnings:", [w.category.__name__ for w in rec])
for w in rec:
    print("  ", str(w.message).splitlines()[0])
print("storage type:", type(s).__name__, s.dtype, s.size(), len(s))
print("storage tolist:", s.tolist())
print("element_size:", s.element_size(), "nbytes:", s.nbytes())
print("data_ptr same:", s.data_ptr() == x.data_ptr())
print("storage[2]:", s[2], type(s[2]).__name__)
print("device:", s.device, "is_cuda:", s.is_cuda, "is_shared:", s.is_shared())
print(s)
u = x.untyped_storage()
print("untyped:", type(u).__name__, u.size(), u.nbytes(), len(u), u.data_ptr() == x.data_ptr())
print("untyped[0:4]:", [u[i] for i in range(4)])
print("view shares storage:", x[1].untyped_storage().data_ptr() == u.data_ptr(),
      x[1].data_ptr() - x.data_ptr(), x[1].storage_offset())
xt = x.t()
print("t() storage size:", xt.untyped_storage().nbytes(), xt.is_contiguous())
print("contiguous() storage new:", xt.contiguous().untyped_storage().data_ptr() != u.data_ptr())
print("int64 storage:", torch.tensor([1, 2], dtype=torch.int64).untyped_storage().nbytes())
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    fs = torch.FloatStorage(4)
    print("FloatStorage(4):", type(fs).__name__, fs.size(), fs.dtype)
    fs2 = torch.FloatStorage([1, 2, 3])
    print("FloatStorage([1, 2, 3]):", fs2.tolist(), fs2.dtype)
    ls = torch.LongStorage([5, 6])
    print("LongStorage:", ls.tolist(), ls.element_size(), ls.dtype)
    ds = torch.DoubleStorage(2).fill_(1.5)
    print("DoubleStorage fill_:", ds.tolist())
    ft = torch.FloatTensor(fs2)
    print("FloatTensor(storage):", ft, ft.data_ptr() == fs2.data_ptr())
    ft[0] = 10
    print("write through tensor:", fs2.tolist())
    ts = torch.TypedStorage([1.0, 2.0], dtype=torch.float64)
    print("TypedStorage:", ts.tolist(), ts.dtype, ts.size(), type(ts).__name__)
    err("FloatTensor(double storage)", lambda: torch.FloatTensor(ts))
    print("DoubleTensor(double storage):", torch.DoubleTensor(ts))
    err("float set_(double storage)", lambda: torch.empty(0).set_(ts))
    e = torch.empty(0, dtype=torch.float64).set_(ts)
    print("set_(storage):", e, e.dtype)
    print("is_storage:", torch.is_storage(fs), torch.is_storage(u), torch.is_storage(x),
          torch.is_storage([1]))
    cs = fs2.clone()
    cs[1] = -1
    print("storage clone:", cs.tolist(), fs2.tolist())
    print("storage copy_:", torch.FloatStorage(3).copy_(fs2).tolist())
    print("storage float/double:", ls.float().tolist(), ls.double().dtype)
    print("storage type():", fs.type(), ls.type())
    rs = torch.FloatStorage([1, 2])
    print("storage resize_ returns:", rs.resize_(4), rs.size(), rs.tolist()[:2])
    ust = torch.UntypedStorage(8)
    print("UntypedStorage(8):", ust.nbytes(), ust.size())
    print("storage from buffer:", torch.FloatStorage.from_buffer(
        b"\x00\x00\x80\x3f\x00\x00\x00\x40", "little").tolist())
    print("_untyped_storage shares:", fs2._untyped_storage.data_ptr() == fs2.data_ptr())
    err("storage index out of range", lambda: fs2[10])
    print("tensor.storage().size() of view:", x[1:].storage().size(), x[1:].storage_offset())

# ---------------------------------------------------------------- new and new_*
print("== x.new and new_*")
d = torch.tensor([1, 2], dtype=torch.float64)
print("new():", d.new(), d.new().dtype)
print("new(2, 3):", d.new(2, 3).shape, d.new(2, 3).dtype)
print("new([1, 2]):", d.new([1, 2]), d.new([1, 2]).dtype)
print("new(torch.Size([2])):", d.new(torch.Size([2])).shape)
print("new(tensor):", d.new(torch.tensor([1.0, 2.0], dtype=torch.float64)))
print("new_zeros:", d.new_zeros(2), d.new_zeros((1, 2)).shape)
print("new_ones:", d.new_ones(3, dtype=torch.int32))
print("new_full:", d.new_full((2,), 7))
print("new_empty:", d.new_empty(4).shape, d.new_empty(4).dtype)
print("new_tensor:", d.new_tensor([1, 2]), d.new_tensor([True]).dtype)
li = torch.tensor([1, 2])
print("long new([1.5]):", li.new([1.5]) if False else li.new_tensor([1.5]))
print("new_zeros requires_grad:", d.new_zeros(1, requires_grad=True).requires_grad)
err("new(2.5)", lambda: d.new(2.5))
err("new(dtype=)", lambda: d.new(2, dtype=torch.int64))
print("int new(3):", li.new(3).dtype, li.new(3).shape)
print("half new_ones:", torch.zeros(1, dtype=torch.half).new_ones(2))

# ---------------------------------------------------------------- predicates
print("== is_tensor/is_floating_point/numel")
for obj in [torch.ones(2), torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.half),
            torch.ones(2, dtype=torch.bool), torch.ones(2, dtype=torch.complex64), 3, [1.0],
            torch.nn.Parameter(torch.ones(1))]:
    is_t = torch.is_tensor(obj)
    flt = torch.is_floating_point(obj) if is_t else "-"
    cpx = torch.is_complex(obj) if is_t else "-"
    n = torch.numel(obj) if is_t else "-"
    print(type(obj).__name__, is_t, flt, cpx, n)
err("is_floating_point(list)", lambda: torch.is_floating_point([1.0]))
err("numel(list)", lambda: torch.numel([1.0]))
print("nelement:", torch.ones(2, 3).nelement(), torch.zeros(0, 3).numel(), torch.tensor(5).numel())
print("dim/ndimension:", torch.ones(2, 3).dim(), torch.ones(2, 3).ndimension(),
      torch.ones(2, 3).ndim)
print("size():", torch.ones(2, 3).size(), torch.ones(2, 3).size(1), torch.ones(2, 3).size(-1))
print("is_signed:", torch.ones(1).is_signed(), torch.ones(1, dtype=torch.uint8).is_signed())
print("is_contiguous:", torch.ones(2, 3).t().is_contiguous())

# ---------------------------------------------------------------- resize_
print("== resize_")
r = torch.arange(6.0)
r.resize_(2, 3)
print("resize_(2, 3):", r)
r.resize_(3)
print("resize_(3):", r, r.data_ptr() == r.untyped_storage().data_ptr())
r.resize_(2, 2)
print("resize_(2, 2) keeps start:", r.view(-1)[:3])
r2 = torch.tensor([1.0, 2.0])
r2.resize_(4)
print("resize_(4) grows:", r2.shape, r2[:2])
r3 = torch.ones(3)
r3.resize_as_(torch.zeros(1, 3))
print("resize_as_:", r3)
r4 = torch.ones(0)
r4.resize_(0)
print("resize_(0):", r4, r4.shape)
err("resize_ of grad leaf", lambda: torch.ones(2, requires_grad=True).resize_(3))
err("resize_(-1)", lambda: torch.ones(2).resize_(-1))
rv = torch.arange(4.0)
print("resize_ view same size ok:", rv[1:].resize_(3))
print("resize_ returns self:", r3.resize_(2) is r3)

# ---------------------------------------------------------------- indexing and cat
print("== indexing and cat with empties")
m = torch.arange(12).reshape(3, 4)
print("m[1]:", m[1], "m[:, 1]:", m[:, 1])
print("index_select:", m.index_select(0, torch.LongTensor([0, 2])))
print("m[LongTensor]:", m[torch.LongTensor([2, 0])])
print("m[ByteTensor mask]:", m[torch.ByteTensor([1, 0, 1]).bool()])
with warnings.catch_warnings(record=True) as rec:
    warnings.simplefilter("always")
    try:
        print("uint8 mask:", m[torch.ByteTensor([1, 0, 1])])
    except Exception as e:  # noqa: BLE001
        print("uint8 mask:", type(e).__name__, str(e).splitlines()[0])
print("  warnings:", [(w.category.__name__, str(w.message).split(" (Triggered internally")[0])
                     for w in rec])
print("masked_select:", m.masked_select(m > 8))
print("gather:", m.gather(1, torch.LongTensor([[0], [1], [2]])))
print("m.narrow:", m.narrow(1, 1, 2))
print("m.select:", m.select(0, -1))
empty = torch.Tensor()
print("cat([empty, a]):", torch.cat([empty, torch.tensor([1.0, 2.0])]))
print("cat([a, empty, b]):", torch.cat([torch.ones(2), torch.zeros(0), torch.ones(1) * 3]))
print("cat 2-d with (0,):", torch.cat([torch.zeros(0), torch.ones(2, 2)]).shape)
print("cat 2-d with (0,) dim=1:", torch.cat([torch.ones(2, 2), torch.zeros(0)], dim=1).shape)
print("cat empties:", torch.cat([torch.zeros(0), torch.zeros(0)]).shape)
print("cat int + empty float:", torch.cat([torch.tensor([1, 2]), torch.zeros(0)]).dtype)
print("cat list of LongTensor:", torch.cat([torch.LongTensor([1]), torch.LongTensor([2, 3])]))
print("cat tuple:", torch.cat((torch.ones(1), torch.zeros(1))))
err("cat empty list", lambda: torch.cat([]))
err("cat mismatched", lambda: torch.cat([torch.ones(2, 2), torch.ones(2, 3)]))
err("cat (0, 1) with (2, 2)", lambda: torch.cat([torch.zeros(0, 1), torch.ones(2, 2)]))
print("stack:", torch.stack([torch.ones(2), torch.zeros(2)]))
acc = torch.Tensor()
for i in range(3):
    acc = torch.cat([acc, torch.FloatTensor([i])])
print("accumulate by cat:", acc)

# ---------------------------------------------------------------- numpy
print("== numpy")
g = torch.ones(2, requires_grad=True) * 2
print("x.data.numpy():", g.data.numpy(), g.data.numpy().dtype)
print("x.cpu().numpy() on detached:", g.detach().cpu().numpy())
err("x.numpy() with grad", lambda: g.numpy())
err("x.cpu().numpy() with grad", lambda: g.cpu().numpy())
print("numpy(force=True):", g.numpy(force=True))
arr = torch.FloatTensor([1, 2]).numpy()
print("FloatTensor numpy dtype:", arr.dtype, torch.LongTensor([1]).numpy().dtype)
print("half numpy:", torch.HalfTensor([1.5]).numpy().dtype)
print("from_numpy type:", torch.from_numpy(arr).type())

# ---------------------------------------------------------------- save and load
print("== save and load")
buf = io.BytesIO()
state = {"epoch": 3, "weights": torch.FloatTensor([[1, 2], [3, 4]]),
         "ids": torch.LongTensor([7, 8, 9]), "name": "model", "lr": 0.1,
         "nested": {"bias": torch.zeros(2), "list": [torch.ones(1), 5]}}
torch.save(state, buf)
buf.seek(0)
loaded = torch.load(buf)
print("keys:", sorted(loaded))
print("weights:", loaded["weights"], loaded["weights"].type())
print("ids:", loaded["ids"], "epoch:", loaded["epoch"], "lr:", loaded["lr"])
print("nested:", loaded["nested"])
shared = torch.arange(4.0)
buf = io.BytesIO()
torch.save({"a": shared, "b": shared[1:3], "c": shared.view(2, 2)}, buf)
buf.seek(0)
ld = torch.load(buf)
ld["a"][1] = 100
print("views share after load:", ld["b"], ld["c"])
print("offset kept:", ld["b"].storage_offset())
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    st = torch.FloatStorage([1, 2, 3])
    buf = io.BytesIO()
    torch.save({"storage": st, "t": torch.FloatTensor(st)}, buf)
    buf.seek(0)
    ls2 = torch.load(buf)
    print("storage loaded:", type(ls2["storage"]).__name__, ls2["storage"].tolist())
    ls2["t"][0] = 50
    print("tensor and storage share after load:", ls2["storage"].tolist())
buf = io.BytesIO()
torch.save([torch.ones(2, requires_grad=True), nn.Parameter(torch.zeros(1))], buf)
buf.seek(0)
a1, a2 = torch.load(buf)
print("requires_grad kept:", a1.requires_grad, type(a2).__name__, a2.requires_grad)
buf = io.BytesIO()
lin = nn.Linear(2, 2)
torch.save(lin.state_dict(), buf)
buf.seek(0)
sd = torch.load(buf, map_location="cpu")
print("state_dict keys:", list(sd), type(sd).__name__)
buf.seek(0)
sd = torch.load(buf, map_location=lambda storage, loc: storage)
print("map_location lambda:", list(sd))
buf.seek(0)
sd = torch.load(buf, weights_only=True)
print("weights_only:", list(sd))
buf = io.BytesIO()
torch.save({"x": torch.ones(1), "obj": io}, buf) if False else None

# ---------------------------------------------------------------- modules, cuda guard
print("== modules")
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
if torch.cuda.is_available():
    model = model.cuda()
print("cuda available:", torch.cuda.is_available(), "device:", next(model.parameters()).device)
use_cuda = torch.cuda.is_available()
device = torch.device("cuda" if use_cuda else "cpu")
model.to(device)
print("device:", device, torch.cuda.device_count())
model.float()
print("float():", next(model.parameters()).dtype)
model.double()
print("double():", next(model.parameters()).dtype)
model.float()
out = model(Variable(torch.randn(2, 3)))
print("forward:", out.shape, type(out.grad_fn).__name__)
print("model.type(DoubleTensor):", next(model.type(torch.DoubleTensor).parameters()).dtype)
model.type(torch.FloatTensor)

# deprecated functional aliases
print("== deprecated aliases")
xx = torch.tensor([-1.0, 0.0, 2.0])
caught("F.sigmoid", lambda: F.sigmoid(xx))
caught("F.tanh", lambda: F.tanh(xx))
caught("torch.sigmoid", lambda: torch.sigmoid(xx))
caught("F.upsample", lambda: F.upsample(torch.ones(1, 1, 2), scale_factor=2).shape)
caught("F.upsample_nearest", lambda: F.upsample_nearest(torch.ones(1, 1, 2), scale_factor=2).shape)
caught("F.upsample_bilinear", lambda: F.upsample_bilinear(torch.ones(1, 1, 2, 2),
                                                          scale_factor=2).shape)
caught("F.softmax no dim", lambda: F.softmax(torch.tensor([[1.0, 2.0]])))
caught("F.log_softmax no dim", lambda: F.log_softmax(torch.tensor([1.0, 2.0])))
caught("F.softmin no dim", lambda: F.softmin(torch.tensor([1.0, 2.0])))
caught("nn.Softmax() no dim", lambda: nn.Softmax()(torch.tensor([[1.0, 2.0]])))
caught("nn.NLLLoss2d", lambda: nn.NLLLoss2d()(torch.zeros(1, 3, 2, 2).log_softmax(1),
                                              torch.zeros(1, 2, 2, dtype=torch.long)))
caught("F.grid_sample without align_corners",
       lambda: F.grid_sample(torch.arange(4.0).view(1, 1, 2, 2), torch.zeros(1, 1, 1, 2)))
caught("F.affine_grid without align_corners",
       lambda: F.affine_grid(torch.eye(2, 3).unsqueeze(0), (1, 1, 2, 2))[0, 0])
caught("torch.where uint8 condition",
       lambda: torch.where(torch.ByteTensor([1, 0]), torch.ones(2), torch.zeros(2)))
caught("masked_select uint8 mask",
       lambda: torch.masked_select(torch.ones(2), torch.ByteTensor([1, 0])))
caught("torch.ger", lambda: torch.ger(torch.ones(2), torch.arange(2.0)))
caught("nn.UpsamplingBilinear2d",
       lambda: nn.UpsamplingBilinear2d(scale_factor=2)(torch.arange(4.0).view(1, 1, 2, 2)))

# losses with size_average / reduce
print("== size_average / reduce")
pred = torch.tensor([[0.5, 1.5], [2.0, -1.0]])
target = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
for kwargs in [dict(size_average=False), dict(size_average=True), dict(reduce=False),
               dict(reduce=True), dict(size_average=False, reduce=True),
               dict(size_average=True, reduce=False), dict(reduce=False, reduction="sum")]:
    caught(f"F.mse_loss {kwargs}", lambda: F.mse_loss(pred, target, **kwargs))
caught("nn.MSELoss(size_average=False)", lambda: nn.MSELoss(size_average=False).reduction)
caught("nn.L1Loss(reduce=False)", lambda: nn.L1Loss(reduce=False).reduction)
caught("nn.CrossEntropyLoss(size_average=False)",
       lambda: nn.CrossEntropyLoss(size_average=False)(pred, torch.tensor([0, 1])))
caught("nn.NLLLoss(reduce=False)",
       lambda: nn.NLLLoss(reduce=False)(pred.log_softmax(1), torch.tensor([0, 1])))
caught("F.binary_cross_entropy size_average",
       lambda: F.binary_cross_entropy(pred.sigmoid(), target, size_average=False))
caught("F.smooth_l1_loss reduce", lambda: F.smooth_l1_loss(pred, target, reduce=False))
caught("F.kl_div reduction='mean'", lambda: F.kl_div(pred.log_softmax(1), target.softmax(1)))
caught("F.kl_div batchmean", lambda: F.kl_div(pred.log_softmax(1), target.softmax(1),
                                               reduction="batchmean"))
caught("nn.BCELoss(size_average=True)", lambda: nn.BCELoss(size_average=True)(pred.sigmoid(),
                                                                               target))
caught("bad reduction", lambda: F.mse_loss(pred, target, reduction="avg"))
caught("mse_loss size mismatch", lambda: F.mse_loss(pred, torch.ones(2)))
print("loss.data[0]-style:", F.mse_loss(pred, target).item(), F.mse_loss(pred, target).data)
err("0-d indexing [0]", lambda: F.mse_loss(pred, target)[0])

# nn.init deprecated names
print("== nn.init")
wt = torch.empty(3, 4)
caught("xavier_uniform", lambda: nn.init.xavier_uniform(wt).shape)
caught("xavier_uniform_", lambda: nn.init.xavier_uniform_(wt).shape)
caught("xavier_normal", lambda: nn.init.xavier_normal(wt).shape)
caught("kaiming_uniform", lambda: nn.init.kaiming_uniform(wt).shape)
caught("kaiming_normal", lambda: nn.init.kaiming_normal(wt).shape)
caught("uniform", lambda: nn.init.uniform(wt, -1, 1).shape)
caught("normal", lambda: nn.init.normal(wt).shape)
caught("constant", lambda: nn.init.constant(wt, 0.5)[0, 0].item())
caught("constant_", lambda: nn.init.constant_(wt, 0.25)[0, 0].item())
caught("eye", lambda: nn.init.eye(torch.empty(2, 2)))
caught("orthogonal", lambda: nn.init.orthogonal(wt).shape)
caught("sparse", lambda: nn.init.sparse(torch.empty(4, 2), 0.5).shape)
caught("calculate_gain", lambda: nn.init.calculate_gain("leaky_relu", 0.2))
caught("xavier_uniform of 1-d", lambda: nn.init.xavier_uniform_(torch.empty(3)))
torch.manual_seed(1)
a = nn.init.xavier_uniform_(torch.empty(2, 3))
torch.manual_seed(1)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    b = nn.init.xavier_uniform(torch.empty(2, 3))
print("same values:", torch.equal(a, b))
print(a)

# clip_grad_norm
print("== clip_grad_norm")
lin = nn.Linear(3, 2)
with torch.no_grad():
    lin.weight.copy_(torch.arange(6.0).reshape(2, 3) / 10)
    lin.bias.fill_(0.5)
lin(torch.ones(4, 3)).pow(2).sum().backward()
print("grad norm before:", torch.cat([p.grad.flatten() for p in lin.parameters()]).norm())
caught("clip_grad_norm", lambda: nn.utils.clip_grad_norm(lin.parameters(), 1.0))
print("grad norm after:", torch.cat([p.grad.flatten() for p in lin.parameters()]).norm())
caught("clip_grad_norm_ inf", lambda: nn.utils.clip_grad_norm_(lin.parameters(), 0.5,
                                                               norm_type=float("inf")))
caught("clip_grad_value_", lambda: nn.utils.clip_grad_value_(lin.parameters(), 0.01))
print("after clip value:", lin.bias.grad)
caught("clip_grad_norm_ no grads", lambda: nn.utils.clip_grad_norm_([nn.Parameter(
    torch.ones(1))], 1.0))

# ---------------------------------------------------------------- add overloads
print("== add overloads")
base = torch.tensor([1.0, 2.0])
other = torch.tensor([10.0, 20.0])
print("add(other, alpha=2):", base.add(other, alpha=2))
print("torch.add(a, b, alpha=0.5):", torch.add(base, other, alpha=0.5))
print("sub(other, alpha=2):", base.sub(other, alpha=2))
caught("add(scalar, tensor)", lambda: base.add(2, other))
caught("torch.add(a, scalar, tensor)", lambda: torch.add(base, 2, other))
caught("add_(scalar, tensor)", lambda: base.clone().add_(2, other))
caught("sub_(scalar, tensor)", lambda: base.clone().sub_(2, other))
caught("addcmul(t, value, t1, t2)", lambda: torch.addcmul(base, 2, other, other))
caught("addcmul_(value, t1, t2)", lambda: base.clone().addcmul_(0.5, other, other))
caught("addcdiv_(value, t1, t2)", lambda: base.clone().addcdiv_(0.5, other, other))
caught("addcmul value=", lambda: torch.addcmul(base, other, other, value=2))
caught("add(scalar, other=)", lambda: base.add(3, other=other))
m22 = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
v2 = torch.tensor([1.0, -1.0])
b122 = m22.unsqueeze(0)
caught("torch.addmm(beta, M, alpha, m1, m2)", lambda: torch.addmm(0.5, m22, 2, m22, m22))
caught("torch.addmm(beta, M, m1, m2)", lambda: torch.addmm(0.5, m22, m22, m22))
caught("M.addmm(beta, alpha, m1, m2)", lambda: m22.addmm(2, 3, m22, m22))
caught("M.addmm_(beta, m1, m2)", lambda: m22.clone().addmm_(0, m22, m22))
caught("torch.addmv(beta, v, alpha, M, v)", lambda: torch.addmv(1, v2, 2, m22, v2))
caught("v.addmv_(beta, M, v)", lambda: v2.clone().addmv_(2, m22, v2))
caught("M.addr(beta, alpha, v, v)", lambda: m22.addr(1, 2, v2, v2))
caught("torch.baddbmm(beta, b, alpha, b, b)", lambda: torch.baddbmm(1, b122, 2, b122, b122))
caught("torch.addbmm(beta, M, b, b)", lambda: torch.addbmm(0.5, m22, b122, b122))
caught("addmm bool beta", lambda: torch.addmm(True, m22, m22, m22))
caught("add(other, 2)", lambda: base.add(other, 2))
caught("int add float alpha", lambda: torch.tensor([1, 2]).add(torch.tensor([1, 1]), alpha=0.5))
caught("bool alpha", lambda: torch.tensor([True]).add(torch.tensor([True]), alpha=2))
caught("add_ alpha int into float", lambda: base.clone().add_(other, alpha=3))
caught("add_ float into int", lambda: torch.tensor([1, 2]).add_(torch.tensor([0.5, 0.5])))
caught("add(other=, alpha=)", lambda: torch.add(input=base, other=other, alpha=-1))
caught("add_ out-of-shape", lambda: base.clone().add_(torch.ones(2, 2)))
caught("torch.add out=", lambda: torch.add(base, other, out=torch.empty(2)))
caught("x.add(1)", lambda: base.add(1))
caught("x.mul(2).div(4)", lambda: base.mul(2).div(4))
caught("div_ integer", lambda: torch.tensor([5, 6]).div_(2))
caught("torch.div rounding", lambda: torch.div(torch.tensor([5, -7]), 2, rounding_mode="floor"))
caught("floor_divide", lambda: torch.floor_divide(torch.tensor([5, -7]), 2))
caught("x.sub(True)", lambda: base.sub(True))
caught("bool sub", lambda: torch.tensor([True]) - torch.tensor([False]))

# ---------------------------------------------------------------- other old idioms
print("== other old idioms")
caught("x.view(-1, 1).squeeze(1)", lambda: torch.ones(3).view(-1, 1).squeeze(1).shape)
caught("torch.range", lambda: torch.range(0, 3))
caught("torch.range step", lambda: torch.range(1, 2, 0.5))
caught("x.expand_as", lambda: torch.ones(1, 3).expand_as(torch.ones(2, 3)).shape)
caught("torch.norm dim", lambda: torch.norm(torch.ones(2, 2), 2, 1))
caught("x.norm(p=1)", lambda: torch.tensor([3.0, -4.0]).norm(p=1))
caught("torch.max(a, 1)[0]", lambda: torch.max(torch.tensor([[1.0, 3.0], [4.0, 2.0]]), 1)[0])
caught("torch.max(a, b)", lambda: torch.max(torch.ones(2), torch.zeros(2)))
caught("x.max(1, keepdim=True)", lambda: torch.tensor([[1.0, 3.0]]).max(1, keepdim=True))
caught("x.sum(0, True)", lambda: torch.ones(2, 2).sum(0, True))
caught("x.mean(dim=0)", lambda: torch.ones(2, 2).mean(dim=0))
caught("torch.gels", lambda: torch.gels(torch.ones(2, 2), torch.ones(2, 2)))
caught("x.index_add_", lambda: torch.zeros(3).index_add_(0, torch.LongTensor([0, 0]),
                                                         torch.ones(2)))
caught("x.masked_fill_ byte mask", lambda: torch.zeros(3).masked_fill_(
    torch.ByteTensor([1, 0, 1]), 1.0))
caught("torch.nonzero", lambda: torch.nonzero(torch.tensor([0, 1, 2])))
caught("torch.nonzero as_tuple", lambda: torch.nonzero(torch.tensor([0, 1, 2]), as_tuple=True))
caught("x.chunk", lambda: [t.shape for t in torch.arange(5).chunk(2)])
caught("torch.symeig", lambda: torch.symeig(torch.eye(2)))
caught("torch.eig", lambda: torch.eig(torch.eye(2)))
caught("torch.matrix_rank", lambda: torch.matrix_rank(torch.eye(2)))
caught("torch.solve", lambda: torch.solve(torch.eye(2), torch.eye(2)))
caught("torch.lstsq", lambda: torch.lstsq(torch.eye(2), torch.eye(2)))
caught("torch.chain_matmul", lambda: torch.chain_matmul(torch.eye(2), torch.ones(2, 2)))
caught("torch.qr", lambda: [t.shape for t in torch.qr(torch.eye(2))])
caught("torch.lu", lambda: [t.shape for t in torch.lu(torch.eye(2))])
caught("x.T on 3-d", lambda: torch.ones(2, 3, 4).T.shape)
caught("torch.cholesky", lambda: torch.cholesky(torch.eye(2)))
caught("torch.set_printoptions", lambda: torch.set_printoptions(precision=4))
print(torch.tensor([1.0 / 3]))
torch.set_printoptions(profile="default")
print(torch.tensor([1.0 / 3]))
caught("torch.autograd.Variable._execution_engine", lambda: hasattr(Variable,
                                                                    "_execution_engine"))
caught("Tensor.is_leaf of data", lambda: torch.ones(1, requires_grad=True).data.is_leaf)
caught("volatile kwarg", lambda: Variable(torch.ones(1), volatile=True))
caught("Variable(x, foo=1)", lambda: Variable(torch.ones(1), foo=1))
caught("Variable(x, True, False, 1)", lambda: Variable(torch.ones(1), True, False, 1))
caught("Variable(data=x, requires_grad=True)",
       lambda: Variable(data=torch.ones(1), requires_grad=True))
caught("Variable()", lambda: Variable())
caught("Variable(requires_grad=True)", lambda: Variable(requires_grad=True).requires_grad)
caught("type(Variable)", lambda: type(Variable).__name__)
caught("issubclass(Tensor, Variable)", lambda: issubclass(torch.Tensor, Variable))
caught("x.volatile", lambda: torch.ones(1).volatile)
print("done")
