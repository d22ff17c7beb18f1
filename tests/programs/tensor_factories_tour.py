"""Tensor creation as data-loading and model code does it: torch.tensor's dtype inference from
nested lists (bool/int/float/complex mixes, NumPy scalars, 0-d tensors inside lists) and its
errors for ragged lists; zeros/ones/full/empty and their _like forms with dtype=,
requires_grad= and out=; full's dtype from its fill value; arange's length rounding and
errors; linspace/logspace; eye; tril/triu_indices; empty_strided; memory formats;
from_numpy/as_tensor/asarray memory sharing; frombuffer; set_default_dtype; complex/polar;
meshgrid; cartesian_prod/combinations; bucketize/searchsorted; seeded random factories with
generators; new_* methods; result_type/promote_types/can_cast; iinfo/finfo."""

import numpy as np
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


def meta(t):
    return (f"{t.dtype} {tuple(t.shape)} stride={t.stride()} rg={t.requires_grad} "
            f"contig={t.is_contiguous()}")


def desc(name, fn):
    try:
        t = fn()
    except Exception as e:  # noqa: BLE001
        print(name, "error", type(e).__name__, str(e).splitlines()[0])
        return
    print(name, meta(t), t.tolist() if t.numel() <= 24 else t.sum().item())


print("section tensor inference")
for name, data in [
    ("ints", [1, 2, 3]), ("floats", [1.0, 2, 3]), ("bools", [True, False]),
    ("bool int", [True, 2]), ("bool float", [True, 2.5]), ("complex", [1, 2j]),
    ("complex float", [1.5, 1 + 1j]), ("nested", [[1, 2], [3, 4]]),
    ("nested mixed", [[1, 2.0], [3, 4]]), ("empty", []), ("empty nested", [[], []]),
    ("deep empty", [[[]]]), ("scalar int", 5), ("scalar float", 2.5), ("scalar bool", True),
    ("scalar complex", 1j), ("big int", [2 ** 40, 1]), ("tuple", (1, 2, 3)),
    ("nested tuple", ((1.0,), (2.0,))), ("nan inf", [nan, inf, -inf]),
    ("np int64", [np.int64(3), 4]), ("np float32 scalars", [np.float32(1.5), np.float32(2)]),
    ("np float64 scalar", np.float64(2.5)), ("np int32 scalar", np.int32(7)),
    ("np bool scalar", np.bool_(True)), ("np float16", [np.float16(1.5)]),
    ("np mixed", [np.int32(1), 2.5]), ("np array list", [np.array([1, 2]), np.array([3, 4])]),
    ("0-d tensors", [torch.tensor(1), torch.tensor(2)]),
    ("0-d float tensors", [torch.tensor(1.5), torch.tensor(2.5)]),
    ("0-d half tensors", [torch.tensor(1.5, dtype=torch.float16), 2]),
    ("0-d tensor and float", [torch.tensor(1), 2.5]),
    ("1-d tensors", [torch.tensor([1, 2]), torch.tensor([3, 4])]),
    ("np array f32", np.array([1, 2], dtype=np.float32)),
    ("np array 2d", np.arange(6).reshape(2, 3)),
]:
    desc(f"tensor {name}", lambda data=data: torch.tensor(data))
for name, data in [("ragged", [[1, 2], [3]]), ("ragged deep", [[[1]], [2]]),
                   ("ragged first", [1, [2]]), ("string", ["a"]), ("none", [None]),
                   ("dict", {"a": 1}), ("mixed types", [1, "2"]), ("ragged 2", [[1], [2, 3]]),
                   ("set", {1, 2}), ("too big int", [2 ** 64]),
                   ("multi-element tensor list", [torch.tensor([1, 2]), torch.tensor(3)])]:
    desc(f"tensor {name}", lambda data=data: torch.tensor(data))
desc("tensor dtype=", lambda: torch.tensor([1, 2], dtype=torch.float16))
desc("tensor dtype bool", lambda: torch.tensor([0, 2, -1], dtype=torch.bool))
desc("tensor float to int", lambda: torch.tensor([1.7, -1.7], dtype=torch.int32))
desc("tensor complex to float error", lambda: torch.tensor([1j], dtype=torch.float32))
desc("tensor uint8 overflow", lambda: torch.tensor([300, -1], dtype=torch.uint8))
desc("tensor int8 overflow", lambda: torch.tensor([200], dtype=torch.int8))
desc("tensor requires_grad", lambda: torch.tensor([1.0, 2.0], requires_grad=True))
desc("tensor requires_grad int", lambda: torch.tensor([1, 2], requires_grad=True))
desc("tensor of tensor", lambda: torch.tensor(torch.arange(3)))
show("tensor repr half", lambda: torch.tensor([1.0, 2.5], dtype=torch.float16))
show("tensor repr bf16", lambda: torch.tensor([1.0, 2.5], dtype=torch.bfloat16))
show("tensor repr complex", lambda: torch.tensor([1 + 2j, -0.5j]))
show("tensor repr 0-d", lambda: torch.tensor(3.25))
show("tensor repr empty", lambda: torch.tensor([]))
show("tensor repr empty 2d", lambda: torch.tensor([[], []]))
show("tensor repr big", lambda: torch.tensor([1e10, 1.0]))
show("tensor repr small", lambda: torch.tensor([1e-5, 1.0]))
show("tensor repr int64", lambda: torch.tensor([2 ** 40]))

print("section zeros ones full empty")
desc("zeros", lambda: torch.zeros(2, 3))
desc("zeros tuple", lambda: torch.zeros((2, 3)))
desc("zeros list", lambda: torch.zeros([2]))
desc("zeros size", lambda: torch.zeros(torch.Size([1, 2])))
desc("zeros 0-d", lambda: torch.zeros(()))
desc("zeros empty", lambda: torch.zeros(0, 3))
desc("zeros dtype int", lambda: torch.zeros(3, dtype=torch.int32))
desc("zeros bool", lambda: torch.zeros(2, dtype=torch.bool))
desc("zeros requires_grad", lambda: torch.zeros(2, requires_grad=True))
desc("zeros requires_grad int", lambda: torch.zeros(2, dtype=torch.long, requires_grad=True))
desc("zeros negative", lambda: torch.zeros(-1))
desc("zeros float size", lambda: torch.zeros(2.0))
desc("zeros mixed", lambda: torch.zeros((2,), 3))
desc("ones", lambda: torch.ones(2, 2, dtype=torch.float64))
desc("ones complex", lambda: torch.ones(2, dtype=torch.complex64))
desc("ones half", lambda: torch.ones(3, dtype=torch.float16))
out = torch.empty(5)
desc("zeros out", lambda: torch.zeros(2, 2, out=out))
desc("zeros out base", lambda: out)
desc("ones out int", lambda: torch.ones(3, out=torch.empty(0, dtype=torch.long)))
desc("full float", lambda: torch.full((2, 2), 1.5))
desc("full int", lambda: torch.full((2,), 7))
desc("full bool", lambda: torch.full((2,), True))
desc("full complex", lambda: torch.full((2,), 1 + 2j))
desc("full nan", lambda: torch.full((2,), nan))
desc("full inf int", lambda: torch.full((2,), inf, dtype=torch.long))
desc("full dtype", lambda: torch.full((2,), 7, dtype=torch.float16))
desc("full float to int dtype", lambda: torch.full((2,), 2.7, dtype=torch.int32))
desc("full tensor value", lambda: torch.full((2,), torch.tensor(3.5)))
desc("full 1-d tensor value", lambda: torch.full((2,), torch.tensor([3.5])))
desc("full np value", lambda: torch.full((2,), np.float32(2.5)))
desc("full requires_grad", lambda: torch.full((2,), 1.0, requires_grad=True))
desc("full overflow uint8", lambda: torch.full((2,), 300, dtype=torch.uint8))
desc("full int size", lambda: torch.full(3, 1.0))
desc("empty shape", lambda: torch.empty(2, 3).shape and torch.empty(2, 3).fill_(0))
desc("empty dtype", lambda: torch.empty(2, dtype=torch.int16).zero_())
base = torch.arange(6.0, requires_grad=True).reshape(2, 3)
desc("zeros_like", lambda: torch.zeros_like(base))
desc("ones_like dtype", lambda: torch.ones_like(base, dtype=torch.int64))
desc("full_like", lambda: torch.full_like(base, 4))
desc("full_like int from float", lambda: torch.full_like(torch.arange(3), 2.9))
desc("full_like requires_grad", lambda: torch.full_like(base, 1.0, requires_grad=True))
desc("empty_like", lambda: torch.empty_like(base).fill_(1))
desc("zeros_like noncontig", lambda: torch.zeros_like(base.detach().t()))
desc("zeros_like contiguous", lambda: torch.zeros_like(base.detach().t(),
                                                       memory_format=torch.contiguous_format))
desc("empty_like noncontig stride", lambda: torch.empty_like(base.detach()[:, ::2]).zero_())
x4 = torch.arange(24.0).reshape(1, 2, 3, 4)
desc("zeros_like channels_last", lambda: torch.zeros_like(x4, memory_format=torch.channels_last))
desc("channels_last preserved", lambda: torch.zeros_like(x4.to(memory_format=torch.channels_last)))
desc("ones_like preserve permuted", lambda: torch.ones_like(x4.permute(0, 3, 1, 2)))
desc("randn_like", lambda: torch.randn_like(base).shape and torch.zeros(1))
desc("rand_like int error", lambda: torch.rand_like(torch.arange(3)))
desc("randint_like", lambda: torch.randint_like(torch.zeros(4), 10))
desc("zeros_like bad format", lambda: torch.zeros_like(torch.zeros(3),
                                                       memory_format=torch.channels_last))

print("section arange")
for args, kw in [((5,), {}), ((1, 4), {}), ((0, 1, 0.1), {}), ((1.0, 2.0, 0.3), {}),
                 ((5, 0, -1), {}), ((5, 0, -1.5), {}), ((0, 10, 3), {}), ((0.5,), {}),
                 ((-3,), {}), ((0,), {}), ((3,), {"dtype": torch.float32}),
                 ((0, 1, 0.25), {"dtype": torch.int64}), ((1, 2.5, 0.5), {"dtype": torch.int32}),
                 ((0, 5), {"dtype": torch.float16}), ((10,), {"dtype": torch.uint8}),
                 ((0, 1, 0), {}), ((0, 5, -1), {}), ((0, inf), {}), ((0, nan), {}),
                 ((5,), {"requires_grad": True}), ((5,), {"dtype": torch.bool}),
                 ((0, 3, 1), {"dtype": torch.complex64}), ((torch.tensor(3),), {}),
                 ((torch.tensor(1.5), 4), {}), ((1, 10, 2.5), {}),
                 ((-1.0, 1.0, 0.5), {"dtype": torch.float64}), ((1e8, 1e8 + 5), {}),
                 ((0, 0.3, 0.1), {})]:
    desc(f"arange {args} {kw}", lambda args=args, kw=kw: torch.arange(*args, **kw))
desc("arange out", lambda: torch.arange(3, out=torch.empty(0, dtype=torch.long)))
desc("range", lambda: torch.range(0, 2, 0.5) if hasattr(torch, "range") else None)

print("section linspace logspace")
for args, kw in [((0, 1, 5), {}), ((0, 1, 1), {}), ((0, 1, 0), {}), ((1, 0, 4), {}),
                 ((0, 10, 4), {"dtype": torch.int64}), ((0, 10, 5), {"dtype": torch.int32}),
                 ((-1, 1, 5), {"dtype": torch.int16}), ((0, 1, 3), {"dtype": torch.float64}),
                 ((0, 1, -1), {}), ((0, 1, 3), {"dtype": torch.float16}),
                 ((0, 1, 3), {"requires_grad": True}), ((1j, 2 + 1j, 3), {}),
                 ((torch.tensor(0.0), torch.tensor(1.0), 3), {}), ((0, 1, 2.5), {}),
                 ((3, 3, 4), {}), ((0, 1, 7), {}), ((0, 100, 6), {"dtype": torch.uint8})]:
    desc(f"linspace {args} {kw}", lambda args=args, kw=kw: torch.linspace(*args, **kw))
for args, kw in [((0, 2, 3), {}), ((0, 2, 3), {"base": 2}), ((0, 1, 1), {}), ((0, 3, 4),
                 {"dtype": torch.int64}), ((-1, 1, 3), {"base": 10.0, "dtype": torch.float64}),
                 ((0, 2, 0), {}), ((2, 0, 3), {"base": 0.5}), ((0, 10, 3),
                                                                 {"dtype": torch.int32})]:
    desc(f"logspace {args} {kw}", lambda args=args, kw=kw: torch.logspace(*args, **kw))

print("section eye indices")
desc("eye", lambda: torch.eye(3))
desc("eye rect", lambda: torch.eye(2, 4))
desc("eye rect tall", lambda: torch.eye(3, 1, dtype=torch.int64))
desc("eye 0", lambda: torch.eye(0))
desc("eye bool", lambda: torch.eye(2, dtype=torch.bool))
desc("eye negative", lambda: torch.eye(-1))
desc("eye negative m", lambda: torch.eye(2, -1))
desc("eye requires_grad", lambda: torch.eye(2, requires_grad=True))
desc("eye out", lambda: torch.eye(2, out=torch.empty(7)))
desc("tril_indices", lambda: torch.tril_indices(3, 3))
desc("tril_indices offset", lambda: torch.tril_indices(3, 4, 1))
desc("tril_indices neg offset", lambda: torch.tril_indices(4, 3, -1))
desc("tril_indices big offset", lambda: torch.tril_indices(3, 3, 10))
desc("tril_indices very neg", lambda: torch.tril_indices(3, 3, -10))
desc("tril_indices 0", lambda: torch.tril_indices(0, 0))
desc("tril_indices dtype", lambda: torch.tril_indices(2, 2, dtype=torch.int32))
desc("tril_indices float dtype", lambda: torch.tril_indices(2, 2, dtype=torch.float32))
desc("triu_indices", lambda: torch.triu_indices(3, 3))
desc("triu_indices offset", lambda: torch.triu_indices(3, 4, 1))
desc("triu_indices neg", lambda: torch.triu_indices(4, 3, -2))
desc("triu_indices negative row", lambda: torch.triu_indices(-1, 3))
desc("empty_strided", lambda: torch.empty_strided((2, 3), (1, 2)).fill_(2))
desc("empty_strided dtype", lambda: torch.empty_strided((2, 2), (2, 1), dtype=torch.int8).zero_())
desc("empty_strided 0", lambda: torch.empty_strided((0, 3), (3, 1)))
desc("empty_strided mismatch", lambda: torch.empty_strided((2, 3), (1,)))
desc("empty_strided expanded", lambda: torch.empty_strided((2, 3), (0, 1)).zero_())

print("section legacy constructors")
desc("Tensor sizes", lambda: torch.Tensor(2, 3).zero_())
desc("Tensor list", lambda: torch.Tensor([1, 2]))
desc("Tensor empty", lambda: torch.Tensor())
desc("FloatTensor", lambda: torch.FloatTensor([1, 2]))
desc("LongTensor", lambda: torch.LongTensor([1.7, -2.2]))
desc("LongTensor size", lambda: torch.LongTensor(3).zero_())
desc("DoubleTensor", lambda: torch.DoubleTensor([[1], [2]]))
desc("BoolTensor", lambda: torch.BoolTensor([0, 1, 2]))
desc("ByteTensor", lambda: torch.ByteTensor([1, 255]))
desc("IntTensor from tensor", lambda: torch.IntTensor(torch.tensor([1, 2], dtype=torch.int32)))
desc("Tensor bad arg", lambda: torch.Tensor("abc"))
desc("FloatTensor wrong tensor", lambda: torch.FloatTensor(torch.tensor([1, 2])))
desc("scalar_tensor", lambda: torch.scalar_tensor(3))
desc("scalar_tensor dtype", lambda: torch.scalar_tensor(True, dtype=torch.bool))
desc("scalar_tensor complex", lambda: torch.scalar_tensor(1j))
show("type strings", lambda: (torch.zeros(1).type(), torch.zeros(1, dtype=torch.int8).type(),
                              torch.zeros(1, dtype=torch.bool).type()))
desc("type() convert", lambda: torch.zeros(2).type(torch.IntTensor))
desc("type() str convert", lambda: torch.zeros(2).type("torch.DoubleTensor"))

print("section item and python values")
for name, t in [("int", torch.tensor(3)), ("float", torch.tensor(2.5)),
                ("bool", torch.tensor(True)), ("half", torch.tensor(1.5, dtype=torch.float16)),
                ("complex", torch.tensor(1 + 2j)), ("uint8", torch.tensor(200, dtype=torch.uint8)),
                ("1-elem", torch.tensor([[7]]))]:
    v = t.item()
    print("item", name, type(v).__name__, v, int(t) if not t.is_complex() else "-",
          float(t) if not t.is_complex() else "-", bool(t))
show("item many error", lambda: torch.tensor([1, 2]).item())
show("item empty error", lambda: torch.tensor([]).item())
show("int() many error", lambda: int(torch.tensor([1, 2])))
show("bool() many error", lambda: bool(torch.tensor([1, 2])))
show("float() complex error", lambda: float(torch.tensor(1j)))
show("index()", lambda: [10, 20, 30][torch.tensor(1)])
show("index() float error", lambda: [10, 20, 30][torch.tensor(1.0)])
show("tolist 0-d", lambda: torch.tensor(2.5).tolist())
show("tolist nested", lambda: torch.arange(6).reshape(2, 3).tolist())
show("tolist bool", lambda: torch.tensor([True, False]).tolist())
show("tolist half", lambda: torch.tensor([0.1], dtype=torch.float16).tolist())
show("tolist bf16", lambda: torch.tensor([0.1], dtype=torch.bfloat16).tolist())
show("len", lambda: len(torch.zeros(4, 2)))
show("len 0-d error", lambda: len(torch.tensor(1)))
show("iter 0-d error", lambda: list(torch.tensor(1)))

print("section structured factories")
desc("vander", lambda: torch.vander(torch.tensor([1, 2, 3])))
desc("vander N", lambda: torch.vander(torch.tensor([1.0, 2.0]), N=4, increasing=True))
desc("diag", lambda: torch.diag(torch.tensor([1, 2, 3]), 1))
desc("diag_embed", lambda: torch.diag_embed(torch.tensor([[1.0, 2.0], [3.0, 4.0]])))
desc("diagflat", lambda: torch.diagflat(torch.tensor([[1, 2], [3, 4]]), -1))
desc("block_diag", lambda: torch.block_diag(torch.ones(2, 2), torch.tensor([[5]]),
                                            torch.tensor([7.0, 8.0])))
desc("block_diag int", lambda: torch.block_diag(torch.tensor([[1]]), torch.tensor([[2, 3]])))
desc("tril of ones", lambda: torch.ones(3, 4).tril(-1))
desc("triu of ones", lambda: torch.ones(3, 3, dtype=torch.int32).triu(1))
desc("atleast_2d", lambda: torch.atleast_2d(torch.tensor(5)))
desc("atleast_3d", lambda: torch.atleast_3d(torch.tensor([1, 2])))
desc("heaviside", lambda: torch.heaviside(torch.tensor([-1.0, 0.0, 2.0]), torch.tensor([0.5])))
desc("stack scalars", lambda: torch.stack([torch.tensor(1.0), torch.tensor(2.0)]))
desc("cat empty", lambda: torch.cat([torch.tensor([]), torch.tensor([1, 2])]))
desc("cat promote", lambda: torch.cat([torch.tensor([1]), torch.tensor([1.5])]))
desc("zeros from Size", lambda: torch.zeros(torch.ones(2, 3).shape))
desc("ones from size()", lambda: torch.ones(torch.ones(2, 3).size(1)))
desc("randn size kw", lambda: torch.randn(size=(2, 2)).zero_())
desc("rand generator kw", lambda: torch.rand(2, generator=torch.Generator().manual_seed(3)))
desc("empty strided layout", lambda: torch.empty(2, layout=torch.strided).zero_())
desc("zeros device", lambda: torch.zeros(2, device="cpu"))
desc("zeros device obj", lambda: torch.zeros(2, device=torch.device("cpu")))
desc("zeros bad device", lambda: torch.zeros(2, device="blah"))
desc("tensor device", lambda: torch.tensor([1, 2], device="cpu"))
desc("clone channels_last", lambda: x4.clone(memory_format=torch.channels_last))
desc("contiguous of t", lambda: base.detach().t().contiguous())

print("section creation errors")
for name, fn in [
        ("randint int8 range", lambda: torch.randint(0, 300, (3,), dtype=torch.int8)),
        ("randint int8 low", lambda: torch.randint(-200, 3, (3,), dtype=torch.int8)),
        ("randint uint8 257", lambda: torch.randint(0, 257, (3,), dtype=torch.uint8)),
        ("randint bool 3", lambda: torch.randint(0, 3, (3,), dtype=torch.bool)),
        ("randperm int8 129", lambda: torch.randperm(129, dtype=torch.int8)),
        ("randperm bool", lambda: torch.randperm(3, dtype=torch.bool)),
        ("asarray tuple copy=False", lambda: torch.asarray((1, 2), copy=False)),
        ("zeros bool size", lambda: torch.zeros(True)),
        ("zeros 1-d tensor size", lambda: torch.zeros(torch.tensor([2, 3]))),
        ("ones huge", lambda: torch.ones(2 ** 62, 4)),
        ("arange complex", lambda: torch.arange(1j, 3)),
        ("arange huge", lambda: torch.arange(0, 1e20, 1)),
        ("linspace bool", lambda: torch.linspace(0, 1, 3, dtype=torch.bool)),
        ("linspace int8 overflow", lambda: torch.linspace(0, 300, 3, dtype=torch.int8)),
        ("eye float", lambda: torch.eye(2.0)),
        ("eye float m", lambda: torch.eye(2, 3.5)),
        ("clamp complex bound", lambda: torch.ones(2).clamp(min=1j)),
        ("result_type str", lambda: torch.result_type("a", 1)),
        ("randperm float", lambda: torch.randperm(3.0)),
        ("searchsorted sorter range", lambda: torch.searchsorted(
            torch.tensor([3, 1]), torch.tensor([2]), sorter=torch.tensor([1, 5]))),
        ("bucketize bool", lambda: torch.bucketize(torch.tensor([True]),
                                                   torch.tensor([False, True]))),
        ("normal int size", lambda: torch.normal(0.0, 1.0, 2))]:
    show(name, fn)
desc("randint uint8 256", lambda: torch.randint(0, 256, (3,), dtype=torch.uint8).zero_())
desc("randperm int8 128", lambda: torch.randperm(128, dtype=torch.int8).sort().values[:4])
desc("ones 1-elem tensor size", lambda: torch.ones(torch.tensor([2])))
desc("arange complex real", lambda: torch.arange(1 + 0j, 3))
desc("linspace int64 negative", lambda: torch.linspace(-5, 5, 4, dtype=torch.int64))
show("logspace complex", lambda: torch.logspace(0, 1j, 3))

print("section numpy")
na = np.arange(6, dtype=np.float32).reshape(2, 3)
t = torch.from_numpy(na)
print("from_numpy", meta(t))
na[0, 0] = 100
print("from_numpy shares", t[0, 0].item())
t[1, 1] = -5
print("from_numpy back", na[1, 1])
for npd in (np.float64, np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_,
            np.complex64, np.complex128):
    desc(f"from_numpy {npd.__name__}", lambda npd=npd: torch.from_numpy(np.zeros(2, dtype=npd)))
desc("from_numpy uint16", lambda: torch.from_numpy(np.zeros(2, dtype=np.uint16)))
desc("from_numpy object error", lambda: torch.from_numpy(np.array([1, "a"], dtype=object)))
desc("from_numpy list error", lambda: torch.from_numpy([1, 2]))
desc("from_numpy transposed", lambda: torch.from_numpy(na.T))
desc("from_numpy sliced", lambda: torch.from_numpy(na[:, ::2]))
desc("from_numpy 0-d", lambda: torch.from_numpy(np.array(3.5)))
desc("from_numpy negative strides", lambda: torch.from_numpy(na[::-1]))
nb = np.array([1.0, 2.0])
ta = torch.as_tensor(nb)
nb[0] = 9
print("as_tensor shares", ta.tolist(), ta.dtype)
tb = torch.as_tensor(nb, dtype=torch.float32)
nb[1] = 7
print("as_tensor dtype copies", tb.tolist())
src = torch.tensor([1.0, 2.0])
print("as_tensor same tensor", torch.as_tensor(src) is src)
print("as_tensor tensor dtype", torch.as_tensor(src, dtype=torch.float64).dtype,
      torch.as_tensor(src, dtype=torch.float32) is src)
desc("as_tensor list", lambda: torch.as_tensor([1, 2.5]))
desc("as_tensor scalar", lambda: torch.as_tensor(3))
desc("as_tensor np scalar", lambda: torch.as_tensor(np.float32(1.5)))
nc = np.array([1, 2, 3], dtype=np.int32)
aa = torch.asarray(nc)
nc[0] = 42
print("asarray shares", aa.tolist(), aa.dtype)
desc("asarray copy", lambda: torch.asarray(nc, copy=True))
desc("asarray dtype", lambda: torch.asarray([1, 2], dtype=torch.float64))
desc("asarray list", lambda: torch.asarray([[1.5, 2], [3, 4]]))
desc("asarray requires_grad", lambda: torch.asarray([1.0, 2.0], requires_grad=True))
desc("asarray tensor copy", lambda: torch.asarray(src, copy=True))
print("asarray tensor same", torch.asarray(src) is src)
desc("asarray bool list", lambda: torch.asarray([True, False]))
desc("numpy roundtrip", lambda: torch.tensor(torch.arange(4).numpy()))
print("numpy dtypes", torch.zeros(1, dtype=torch.float16).numpy().dtype,
      torch.zeros(1, dtype=torch.bool).numpy().dtype, torch.arange(2).numpy().dtype)
show("numpy requires_grad error", lambda: torch.ones(2, requires_grad=True).numpy())
buf = bytearray(b"\x01\x00\x02\x00\x03\x00\x04\x00")
desc("frombuffer int16", lambda: torch.frombuffer(buf, dtype=torch.int16))
desc("frombuffer uint8 offset", lambda: torch.frombuffer(buf, dtype=torch.uint8, offset=2,
                                                         count=3))
desc("frombuffer int32", lambda: torch.frombuffer(buf, dtype=torch.int32))
desc("frombuffer bad size", lambda: torch.frombuffer(buf, dtype=torch.float64, offset=1))
desc("frombuffer count too big", lambda: torch.frombuffer(buf, dtype=torch.int16, count=10))
desc("frombuffer empty", lambda: torch.frombuffer(bytearray(), dtype=torch.int16))
fb = torch.frombuffer(buf, dtype=torch.uint8)
buf[0] = 77
print("frombuffer shares", fb[0].item())

print("section default dtype")
print("default", torch.get_default_dtype())
torch.set_default_dtype(torch.float64)
print("after set", torch.get_default_dtype())
desc("tensor float", lambda: torch.tensor([1.5]))
desc("tensor int", lambda: torch.tensor([1]))
desc("tensor complex", lambda: torch.tensor([1j]))
desc("zeros", lambda: torch.zeros(2))
desc("arange float", lambda: torch.arange(0, 1, 0.5))
desc("arange int", lambda: torch.arange(2))
desc("linspace", lambda: torch.linspace(0, 1, 3))
desc("full", lambda: torch.full((1,), 1.5))
desc("int + float scalar", lambda: torch.tensor([1, 2]) + 0.5)
desc("float32 + float scalar", lambda: torch.tensor([1.0], dtype=torch.float32) + 0.5)
desc("int / int", lambda: torch.tensor([1]) / torch.tensor([2]))
desc("rand", lambda: torch.rand(2).dtype and torch.zeros(0))
desc("int mean error", lambda: torch.tensor([1, 2]).mean())
desc("sqrt int", lambda: torch.sqrt(torch.tensor([4])))
torch.set_default_dtype(torch.float16)
desc("half default tensor", lambda: torch.tensor([1.5]))
desc("half default int + float", lambda: torch.tensor([1]) + 0.5)
torch.set_default_dtype(torch.bfloat16)
desc("bf16 default arange", lambda: torch.arange(0.0, 1.0, 0.25))
torch.set_default_dtype(torch.float32)
show("set int error", lambda: torch.set_default_dtype(torch.int64))
show("set complex error", lambda: torch.set_default_dtype(torch.complex64))
print("restored", torch.get_default_dtype())

print("section complex polar")
re_ = torch.tensor([1.0, -2.0, 0.0])
im_ = torch.tensor([0.5, 0.0, -1.0])
show("complex", lambda: torch.complex(re_, im_))
show("complex 64", lambda: torch.complex(re_.double(), im_.double()))
show("complex mismatch", lambda: torch.complex(re_, im_.double()))
show("complex int error", lambda: torch.complex(torch.tensor([1]), torch.tensor([2])))
show("complex broadcast", lambda: torch.complex(re_, torch.tensor(2.0)))
show("polar", lambda: torch.polar(torch.tensor([1.0, 2.0]), torch.tensor([0.0, torch.pi / 2])))
show("polar negative abs", lambda: torch.polar(torch.tensor([-1.0]), torch.tensor([0.0])))
show("view_as_complex", lambda: torch.view_as_complex(torch.tensor([[1.0, 2.0], [3.0, 4.0]])))
show("view_as_real", lambda: torch.view_as_real(torch.tensor([1 + 2j])))
cr = torch.tensor([1.0, 2.0], requires_grad=True)
ci = torch.tensor([3.0, -1.0], requires_grad=True)
z = torch.complex(cr, ci)
print("complex grad_fn", z.grad_fn.name())
(z * z.conj()).real.sum().backward()
print("complex grads", cr.grad, ci.grad)
pa = torch.tensor([2.0], requires_grad=True)
pt = torch.tensor([0.5], requires_grad=True)
pz = torch.polar(pa, pt)
print("polar grad_fn", pz.grad_fn.name())
(pz.real + 2 * pz.imag).sum().backward()
print("polar grads", pa.grad, pt.grad)

print("section meshgrid")
ma, mb = torch.tensor([1, 2, 3]), torch.tensor([4, 5])
for ix in ("ij", "xy"):
    g = torch.meshgrid(ma, mb, indexing=ix)
    print("meshgrid", ix, [tuple(t.shape) for t in g], [t.stride() for t in g],
          [t.tolist() for t in g])
g = torch.meshgrid([ma, mb, torch.tensor([7])], indexing="xy")
print("meshgrid 3 xy", [tuple(t.shape) for t in g])
show("meshgrid dtypes", lambda: torch.meshgrid(ma, mb.float(), indexing="ij"))
show("meshgrid bad", lambda: torch.meshgrid(ma, mb, indexing="ab"))
show("meshgrid 2d", lambda: torch.meshgrid(torch.ones(2, 2), ma, indexing="ij"))
show("meshgrid single", lambda: torch.meshgrid(ma, indexing="ij"))
show("meshgrid empty", lambda: [tuple(t.shape) for t in torch.meshgrid(ma, torch.tensor([]),
                                                                       indexing="ij")])
show("meshgrid 0-d", lambda: torch.meshgrid(torch.tensor(1), ma, indexing="ij"))
show("cartesian_prod", lambda: torch.cartesian_prod(ma, torch.tensor([8, 9])))
show("cartesian_prod one", lambda: torch.cartesian_prod(ma))
show("cartesian_prod three", lambda: torch.cartesian_prod(torch.tensor([0, 1]),
                                                          torch.tensor([0, 1]),
                                                          torch.tensor([5])))
show("cartesian_prod mixed", lambda: torch.cartesian_prod(ma, mb.float()))
show("combinations", lambda: torch.combinations(torch.tensor([1, 2, 3, 4])))
show("combinations r3", lambda: torch.combinations(torch.tensor([1, 2, 3, 4]), r=3))
show("combinations replacement", lambda: torch.combinations(torch.tensor([1, 2, 3]),
                                                            with_replacement=True))
show("combinations r0", lambda: torch.combinations(torch.tensor([1, 2, 3]), r=0))
show("combinations r too big", lambda: torch.combinations(torch.tensor([1, 2]), r=3))
show("combinations 2d error", lambda: torch.combinations(torch.ones(2, 2)))
show("combinations float", lambda: torch.combinations(torch.tensor([0.5, 1.5, 2.5]), 2))

print("section bucketize searchsorted")
bnd = torch.tensor([1, 3, 5, 7, 9])
vals = torch.tensor([[0, 1, 3], [6, 9, 10]])
show("bucketize", lambda: torch.bucketize(vals, bnd))
show("bucketize right", lambda: torch.bucketize(vals, bnd, right=True))
show("bucketize int32", lambda: torch.bucketize(vals, bnd, out_int32=True))
show("bucketize float", lambda: torch.bucketize(torch.tensor([2.5, nan, -inf]),
                                                torch.tensor([1.0, 2.0, 3.0])))
show("bucketize scalar", lambda: torch.bucketize(4, bnd))
show("bucketize 2d boundaries", lambda: torch.bucketize(vals, bnd.reshape(1, 5)))
show("bucketize empty", lambda: torch.bucketize(torch.tensor([]), bnd))
show("searchsorted", lambda: torch.searchsorted(bnd, torch.tensor([3, 6, 9])))
show("searchsorted right", lambda: torch.searchsorted(bnd, torch.tensor([3, 6, 9]), right=True))
show("searchsorted side", lambda: torch.searchsorted(bnd, torch.tensor([3, 6, 9]), side="right"))
show("searchsorted side conflict", lambda: torch.searchsorted(bnd, torch.tensor([3]), right=True,
                                                              side="left"))
show("searchsorted bad side", lambda: torch.searchsorted(bnd, torch.tensor([3]), side="up"))
show("searchsorted 2d", lambda: torch.searchsorted(torch.tensor([[1, 3, 5], [2, 4, 6]]),
                                                   torch.tensor([[3, 6], [1, 7]])))
show("searchsorted 2d mismatch", lambda: torch.searchsorted(torch.tensor([[1, 3, 5], [2, 4, 6]]),
                                                            torch.tensor([[3, 6]])))
show("searchsorted scalar", lambda: torch.searchsorted(bnd, 5))
show("searchsorted sorter", lambda: torch.searchsorted(torch.tensor([5, 1, 3]),
                                                       torch.tensor([2, 4]),
                                                       sorter=torch.tensor([1, 2, 0])))
show("searchsorted int32", lambda: torch.searchsorted(bnd, vals, out_int32=True).dtype)
so = torch.empty(0, dtype=torch.long)
show("searchsorted out", lambda: (torch.searchsorted(bnd, torch.tensor([3, 6]), out=so), so))
show("searchsorted float mix", lambda: torch.searchsorted(bnd, torch.tensor([2.5])))

print("section random")
torch.manual_seed(1234)
show("rand", lambda: torch.rand(3))
show("randn", lambda: torch.randn(2, 2))
show("randint", lambda: torch.randint(10, (5,)))
show("randint low high", lambda: torch.randint(-5, 5, (2, 3)))
show("randint dtype", lambda: torch.randint(0, 3, (4,), dtype=torch.int8))
show("randint float dtype", lambda: torch.randint(0, 3, (4,), dtype=torch.float32))
show("randint empty range", lambda: torch.randint(3, 3, (2,)))
show("randint bad range", lambda: torch.randint(5, 3, (2,)))
show("randperm", lambda: torch.randperm(8))
show("randperm dtype", lambda: torch.randperm(5, dtype=torch.float64))
show("randperm 0", lambda: torch.randperm(0))
show("randperm negative", lambda: torch.randperm(-1))
g = torch.Generator().manual_seed(42)
show("rand gen", lambda: torch.rand(3, generator=g))
show("randn gen", lambda: torch.randn(3, generator=g))
show("randint gen", lambda: torch.randint(100, (4,), generator=g))
show("randperm gen", lambda: torch.randperm(6, generator=g))
show("gen initial_seed", lambda: g.initial_seed())
state = g.get_state()
first = torch.rand(2, generator=g)
g.set_state(state)
print("gen state replay", torch.equal(first, torch.rand(2, generator=g)))
show("rand dtype", lambda: torch.rand(2, dtype=torch.float64))
show("rand half", lambda: torch.rand(2, dtype=torch.float16))
show("rand int error", lambda: torch.rand(2, dtype=torch.int64))
show("randn requires_grad", lambda: torch.randn(2, requires_grad=True).requires_grad)
show("rand out", lambda: torch.rand(2, out=torch.empty(3)))
show("normal", lambda: torch.normal(0.0, 1.0, (3,)))
show("normal tensor", lambda: torch.normal(torch.zeros(2), torch.ones(2)))
show("bernoulli", lambda: torch.bernoulli(torch.tensor([0.0, 1.0, 0.5, 0.5])))
show("multinomial", lambda: torch.multinomial(torch.tensor([0.1, 0.0, 0.9]), 4,
                                              replacement=True))
show("manual_seed repro", lambda: (torch.manual_seed(7), torch.rand(2))[1])
show("manual_seed repro 2", lambda: (torch.manual_seed(7), torch.rand(2))[1])
show("initial_seed", lambda: torch.initial_seed())

print("section new methods")
src = torch.tensor([[1.5, 2.5]], dtype=torch.float64, requires_grad=True)
desc("new_zeros", lambda: src.new_zeros(2, 2))
desc("new_zeros tuple", lambda: src.new_zeros((3,)))
desc("new_ones dtype", lambda: src.new_ones(2, dtype=torch.int32))
desc("new_full", lambda: src.new_full((2,), 7))
desc("new_full bool", lambda: src.new_full((2,), True))
desc("new_empty", lambda: src.new_empty(2).fill_(0))
desc("new_tensor", lambda: src.new_tensor([1, 2]))
desc("new_tensor float", lambda: src.new_tensor([1.5]))
desc("new_tensor dtype", lambda: src.new_tensor([1, 2], dtype=torch.int8))
desc("new_tensor requires_grad", lambda: src.new_tensor([1.0], requires_grad=True))
desc("new_tensor of int tensor", lambda: torch.tensor([1, 2]).new_tensor([0.5]))
desc("new_tensor from tensor", lambda: src.new_tensor(torch.tensor([3, 4])))
desc("new_zeros int src", lambda: torch.tensor([1]).new_zeros(2))
desc("new_full int src float", lambda: torch.tensor([1]).new_full((2,), 2.5))
desc("new_empty_strided", lambda: src.new_empty_strided((2, 2), (1, 2)).zero_())
desc("new_ones requires_grad", lambda: src.new_ones(1, requires_grad=True))

print("section promotion")
dts = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
       torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
       torch.complex128]
for a in dts:
    print("promote", str(a)[6:], " ".join(str(torch.promote_types(a, b))[6:] for b in dts))
for a in dts:
    print("can_cast", str(a)[6:], "".join("1" if torch.can_cast(a, b) else "0" for b in dts))
for args in [(torch.tensor([1]), 1.0), (torch.tensor([1]), True), (torch.tensor([True]), 2),
             (torch.tensor([1], dtype=torch.uint8), -1), (torch.tensor(1.0), torch.tensor([1])),
             (torch.tensor([1], dtype=torch.int8), torch.tensor(1000)),
             (torch.tensor([1.0], dtype=torch.float16), torch.tensor(1.0, dtype=torch.float64)),
             (torch.tensor([1], dtype=torch.int32), 1j), (1, 2.0), (True, False), (2, 3),
             (torch.tensor(1.0, dtype=torch.float64), torch.tensor(1, dtype=torch.int8)),
             (torch.tensor([1], dtype=torch.int16), np.float32(1.0))]:
    show(f"result_type {[a.dtype if torch.is_tensor(a) else type(a).__name__ for a in args]}",
         lambda args=args: torch.result_type(*args))
show("promote_types error", lambda: torch.promote_types(torch.int32, "float"))
show("can_cast error", lambda: torch.can_cast(1, torch.int32))

print("section iinfo finfo")
for d in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool):
    show(f"iinfo {d}", lambda d=d: (torch.iinfo(d).bits, torch.iinfo(d).min, torch.iinfo(d).max,
                                    torch.iinfo(d).dtype))
for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
          torch.complex128):
    show(f"finfo {d}", lambda d=d: (torch.finfo(d).bits, torch.finfo(d).eps, torch.finfo(d).max,
                                    torch.finfo(d).min, torch.finfo(d).tiny,
                                    torch.finfo(d).smallest_normal, torch.finfo(d).resolution,
                                    torch.finfo(d).dtype))
show("finfo default", lambda: torch.finfo().dtype)
show("iinfo float error", lambda: torch.iinfo(torch.float32))
show("finfo int error", lambda: torch.finfo(torch.int32))
show("iinfo repr", lambda: torch.iinfo(torch.int8))
show("finfo repr", lambda: torch.finfo(torch.float16))
show("dtype props", lambda: [(d.is_floating_point, d.is_complex, d.is_signed, d.itemsize)
                             for d in (torch.bool, torch.uint8, torch.int8, torch.float16,
                                       torch.complex64)])
show("dtype to_complex", lambda: (torch.float32.to_complex(), torch.float64.to_complex(),
                                  torch.complex64.to_real()))
print("done")
