"""Dtype semantics, as numerical code depends on them: type promotion across tensors, 0-d
tensors and Python scalars (result_type, promote_types, can_cast, default dtypes), integer
division / floor_divide / remainder / fmod signs, div(rounding_mode=...), integer overflow
wraparound, bitwise ops and shifts, bool arithmetic, reduction result dtypes, clamp / where
with scalars, conversions of out-of-range floats, rounding of halves, dtype inference of
torch.tensor, arange / linspace lengths, in-place ops that would change dtype, comparisons
across dtypes and isclose / allclose with integers."""
import numpy as np
import torch

torch.manual_seed(0)


def attempt(title, fn):
    """Print fn()'s result, or the error PyTorch raises (type and message)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the error is the point
        print(f"{title}: {type(e).__name__}: {str(e).splitlines()[0]}")
    else:
        print(f"{title}: {out}")


def dtype_of(fn):
    try:
        return str(fn().dtype)
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}"


# --- type promotion
i8 = torch.tensor([1, 2], dtype=torch.int8)
u8 = torch.tensor([1, 2], dtype=torch.uint8)
i32 = torch.tensor([1, 2], dtype=torch.int32)
i64 = torch.tensor([1, 2])
f16 = torch.tensor([1.0, 2.0], dtype=torch.float16)
bf16 = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
f32 = torch.tensor([1.0, 2.0])
f64 = torch.tensor([1.0, 2.0], dtype=torch.float64)
c64 = torch.tensor([1 + 1j, 2.0])
b = torch.tensor([True, False])
tensors = {"b": b, "u8": u8, "i8": i8, "i32": i32, "i64": i64, "f16": f16, "bf16": bf16,
           "f32": f32, "f64": f64, "c64": c64}
for na, ta in tensors.items():
    print("promote", na, " ".join(f"{nb}:{str((ta + tb).dtype)[6:]}" for nb, tb in tensors.items()))
scalars = {"True": True, "3": 3, "2.5": 2.5, "1j": 1j}
# (float16 with a complex operand makes complex32, experimental in PyTorch: left out)
for na, ta in tensors.items():
    if na == "f16":
        scalars_here = {k: v for k, v in scalars.items() if k != "1j"}
        print("with scalar", na, " ".join(f"{ns}:{dtype_of(lambda: ta * s)[6:]}"
                                          for ns, s in scalars_here.items()))
        continue
    print("with scalar", na, " ".join(f"{ns}:{dtype_of(lambda: ta * s)[6:]}"
                                      for ns, s in scalars.items()))
zero_d = {"0d i64": torch.tensor(3), "0d f64": torch.tensor(2.5, dtype=torch.float64),
          "0d f16": torch.tensor(1.0, dtype=torch.float16), "0d b": torch.tensor(True),
          "0d c128": torch.tensor(1j, dtype=torch.complex128)}
for na, ta in tensors.items():
    print("with 0-d", na, " ".join(f"{nz}:{str((ta * z).dtype)[6:]}" for nz, z in zero_d.items()
                                   if not (na == "f16" and nz == "0d c128")))
print("0-d with 0-d", (torch.tensor(1, dtype=torch.int8) + torch.tensor(1000)).dtype,
      (torch.tensor(1.0, dtype=torch.float16) + torch.tensor(1.0)).dtype)
print("result_type", torch.result_type(i8, 5), torch.result_type(i8, 5.0),
      torch.result_type(u8, i8), torch.result_type(f16, torch.tensor(1.0)),
      torch.result_type(torch.tensor(1), 1.0), torch.result_type(b, True),
      torch.result_type(2, 3.0), torch.result_type(i32, 1j), torch.result_type(bf16, f16))
print("promote_types", torch.promote_types(torch.uint8, torch.int8),
      torch.promote_types(torch.bfloat16, torch.float16),
      torch.promote_types(torch.int64, torch.float16),
      torch.promote_types(torch.bool, torch.uint8),
      torch.promote_types(torch.complex64, torch.float64),
      torch.promote_types(torch.int32, torch.uint8))
print("can_cast", torch.can_cast(torch.float64, torch.int32), torch.can_cast(torch.int32,
      torch.float16), torch.can_cast(torch.int64, torch.bool), torch.can_cast(torch.bool,
      torch.int8), torch.can_cast(torch.complex64, torch.float64), torch.can_cast(
      torch.uint8, torch.int8), torch.can_cast(torch.float32, torch.float16))
print("default dtype", torch.get_default_dtype(), torch.tensor(1.0).dtype, torch.zeros(1).dtype,
      torch.arange(3.0).dtype, torch.tensor(1j).dtype)
torch.set_default_dtype(torch.float64)
print("float64 default", torch.get_default_dtype(), torch.tensor(1.5).dtype,
      torch.tensor([1, 2]).dtype, torch.ones(2).dtype, torch.tensor(1j).dtype,
      (torch.tensor([1, 2]) * 0.5).dtype, torch.arange(0, 1, 0.25).dtype,
      torch.linspace(0, 1, 3).dtype, torch.randn(1).dtype, torch.tensor(np.float32(1)).dtype)
torch.set_default_dtype(torch.float32)
print("restored", torch.get_default_dtype(), torch.tensor(1.5).dtype)
attempt("set_default_dtype int", lambda: torch.set_default_dtype(torch.int64))

# --- integer division and remainders: signs
a = torch.tensor([7, -7, 7, -7, 0])
d = torch.tensor([2, 2, -2, -2, 3])
print("true div", a / d, (a / d).dtype)
print("true div scalar", a / 2, torch.tensor(7) / 2)
print("floor_divide", torch.floor_divide(a, d), a // d, a // 2, (-a) // 3)
print("div trunc", torch.div(a, d, rounding_mode="trunc"), torch.div(a, 2, rounding_mode="trunc"))
print("div floor", torch.div(a, d, rounding_mode="floor"), a.div(d, rounding_mode="floor").dtype)
print("div floor float", torch.div(a.float(), d, rounding_mode="floor"),
      torch.div(torch.tensor([7.5, -7.5]), 2, rounding_mode="trunc"))
print("remainder", torch.remainder(a, d), a % d, a % 3, a % -3, torch.remainder(-7, d))
print("fmod", torch.fmod(a, d), torch.fmod(a, 3), torch.fmod(a, -3))
print("float remainder", torch.remainder(torch.tensor([5.5, -5.5]), 2),
      torch.fmod(torch.tensor([5.5, -5.5]), 2), torch.tensor([-0.0, 2.0]) % 2)
print("float div by zero", torch.tensor([1.0, -1.0, 0.0]) / 0, torch.tensor([1, 0]) / 0)
attempt("int floor_divide by zero", lambda: torch.tensor([1, 2]) // 0)
attempt("int remainder by zero", lambda: torch.tensor([1, 2]) % 0)
attempt("div bad rounding", lambda: torch.div(a, d, rounding_mode="round"))
print("int div dtypes", (i8 // 2).dtype, (u8 / 2).dtype, (i32 % 2).dtype,
      torch.div(i8, 2, rounding_mode="floor").dtype, (b / b).dtype)

# --- integer overflow wraps around
print("int8 add", torch.tensor([127, -128], dtype=torch.int8) + 1)
print("int8 mul", torch.tensor([100, -100], dtype=torch.int8) * 3)
print("uint8 add", torch.tensor([250, 5], dtype=torch.uint8) + 10)
print("uint8 sub", torch.tensor([3], dtype=torch.uint8) - 5)
print("uint8 neg", -torch.tensor([1, 0, 255], dtype=torch.uint8))
print("int32 mul", torch.tensor([2 ** 30], dtype=torch.int32) * 4)
print("int64 wrap", torch.tensor([2 ** 62]) * 4, torch.tensor([2 ** 63 - 1]) + 1)
print("uint8 sum", torch.tensor([200, 200], dtype=torch.uint8).sum(),
      torch.tensor([200, 200], dtype=torch.uint8).sum().dtype)
print("int8 cumsum", torch.tensor([100, 100], dtype=torch.int8).cumsum(0))
print("uint8 plus int8 tensor", (torch.tensor([200], dtype=torch.uint8) +
                                 torch.tensor([100], dtype=torch.int8)))
print("uint8 plus 300", dtype_of(lambda: torch.tensor([1], dtype=torch.uint8) + 300))
attempt("uint8 plus 300 value", lambda: torch.tensor([1], dtype=torch.uint8) + 300)
attempt("int8 tensor of 200", lambda: torch.tensor([200], dtype=torch.int8))
attempt("uint8 tensor of -1", lambda: torch.tensor([-1], dtype=torch.uint8))
attempt("int64 too big", lambda: torch.tensor([2 ** 64]))
print("abs of int min", torch.tensor([-128], dtype=torch.int8).abs(),
      torch.tensor([-2 ** 63]).abs())
print("pow ints", torch.tensor([2, 3]) ** 2, (torch.tensor([2]) ** 2).dtype,
      torch.tensor([2]) ** 0.5, torch.tensor([2, 4]) ** torch.tensor([3, 2]),
      2 ** torch.tensor([1, 2]), torch.tensor([10], dtype=torch.int8) ** 3)
attempt("int pow negative", lambda: torch.tensor([2, 3]) ** -1)
print("float pow negative", torch.tensor([2.0]) ** -1, 2.0 ** torch.tensor([-1]))

# --- bitwise and shifts
x = torch.tensor([12, -5, 0], dtype=torch.int32)
y = torch.tensor([10, 3, 7], dtype=torch.int32)
print("and or xor not", x & y, x | y, x ^ y, ~x, torch.bitwise_not(b), ~b)
print("shifts", x << 2, x >> 1, torch.tensor([1], dtype=torch.uint8) << 7,
      torch.tensor([1], dtype=torch.int8) << 7, torch.tensor([-16]) >> 2,
      torch.bitwise_left_shift(x, y), torch.bitwise_right_shift(y, 1))
print("shift large", torch.tensor([1]) << 63, torch.tensor([1]) << 64, torch.tensor([-1]) >> 70)
print("bool bitwise", b & torch.tensor([True, True]), b | False, b ^ True,
      (b & torch.tensor([1, 1])).dtype)
attempt("float and", lambda: f32 & f32)
attempt("float shift", lambda: f32 << 1)
attempt("invert float", lambda: ~f32)
print("logical", torch.logical_and(x, y), torch.logical_not(x), torch.logical_xor(f32, b),
      torch.logical_or(torch.tensor([0.0, 0.5]), torch.tensor([0, 0])))

# --- bool arithmetic
print("bool add", b + b, (b + b).dtype, b + 1, b * 2.5, b.sum(), b.sum().dtype)
print("bool mul", b * b, (b * b).dtype, b * torch.tensor([3, 4]))
attempt("bool sub", lambda: b - b)
attempt("bool neg", lambda: -b)
attempt("bool rsub", lambda: 1 - b)
attempt("bool sub int", lambda: b - 1)
attempt("int sub bool", lambda: torch.tensor([1, 2]) - b)
print("bool sub via int", b.int() - 1, torch.tensor([1, 2]) - b.long())
attempt("bool div", lambda: b / b)
print("bool mean float", b.float().mean(), b.any(), b.all(), b.any().dtype)
attempt("bool mean", lambda: b.mean())
print("bool max", b.max(), b.int().argmax(), b.int(), b.long().sum())
attempt("bool argmax", lambda: b.argmax())
print("bool cumsum", torch.tensor([True, True, False]).cumsum(0).dtype,
      torch.tensor([True, True]).prod().dtype)

# --- reductions: result dtypes
for name, t in [("u8", u8), ("i8", i8), ("i32", i32), ("i64", i64), ("b", b), ("f16", f16),
                ("bf16", bf16)]:
    print("reduce", name, dtype_of(lambda: t.sum()), dtype_of(lambda: t.prod()),
          dtype_of(lambda: t.cumsum(0)), dtype_of(lambda: t.cumprod(0)),
          dtype_of(lambda: t.max()), dtype_of(lambda: t.mean()),
          dtype_of(lambda: t.sum(dtype=torch.float64)), dtype_of(lambda: torch.nansum(t)),
          dtype_of(lambda: t.norm()), dtype_of(lambda: t.std()), dtype_of(lambda: t.var()),
          dtype_of(lambda: t.median()), dtype_of(lambda: t.argmax()),
          dtype_of(lambda: t.count_nonzero()), dtype_of(lambda: torch.trace(t.diag())))
attempt("mean int", lambda: i64.mean())
attempt("mean int dim", lambda: i64.mean(0))
print("mean with dtype", i64.mean(dtype=torch.float32), i64.float().mean())
attempt("std int", lambda: i64.std())
attempt("var int", lambda: i64.var())
attempt("norm int", lambda: i64.norm())
attempt("median bool", lambda: b.median())
print("sum with dtype int8", torch.tensor([100, 100], dtype=torch.int8).sum(dtype=torch.int8))
print("cumsum dtype", i32.cumsum(0, dtype=torch.float16))
print("mean half", f16.mean(), bf16.mean().dtype, f16.sum().dtype)
print("sum empty", torch.tensor([], dtype=torch.int32).sum(), torch.tensor([]).prod(),
      torch.tensor([], dtype=torch.bool).sum())
attempt("max empty", lambda: torch.tensor([]).max())
print("mean empty", torch.tensor([]).mean())

# --- where / clamp with scalars
cond = torch.tensor([True, False, True])
print("where scalars", torch.where(cond, 1, 0), torch.where(cond, 1.0, 0), torch.where(cond,
      1.5, 2.5).dtype, torch.where(cond, torch.tensor([1, 2, 3]), 0.5),
      torch.where(cond, torch.tensor([1, 2, 3], dtype=torch.int8), 100).dtype,
      torch.where(cond, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16), 1.0).dtype,
      torch.where(cond, True, False))
attempt("where int8 300", lambda: torch.where(cond, torch.tensor([1, 2, 3], dtype=torch.int8), 300))
print("where tensors", torch.where(cond, i64[:1].expand(3), f16[:1].expand(3)).dtype,
      torch.where(cond, torch.tensor(1), torch.tensor(2.0)).dtype)
print("where one arg", torch.where(torch.tensor([[0, 1], [1, 1]])))
ints = torch.tensor([-5, 0, 5, 10])
print("clamp int", ints.clamp(0, 6), ints.clamp(min=0).dtype)
print("clamp int float bounds", ints.clamp(0.5, 6.5), ints.clamp(0.5, 6.5).dtype,
      ints.clamp(min=-2.5).dtype)
print("clamp tensor bounds", ints.clamp(torch.tensor([0, 0, 0, 0]), torch.tensor([1.5])),
      torch.clamp(f16, max=torch.tensor(1.5)).dtype)
print("clamp uint8", torch.tensor([0, 200], dtype=torch.uint8).clamp(10, 100))
attempt("clamp none", lambda: ints.clamp())
print("clamp min>max", torch.tensor([1.0, 5.0]).clamp(4, 2), ints.clamp(4, 2))
print("clip nan", torch.tensor([float("nan"), 2.0]).clamp(0, 1),
      torch.tensor([0.5]).clamp(float("nan"), 1))
print("maximum", torch.maximum(i8, f16).dtype, torch.maximum(torch.tensor([1.0, float("nan")]),
      torch.tensor([2.0, 0.0])), torch.fmax(torch.tensor([1.0, float("nan")]),
      torch.tensor([2.0, 0.0])))

# --- conversions of out-of-range / nan floats to ints (what PyTorch prints on CPU)
vals = torch.tensor([0.0, 1.9, -1.9, 2.5, -2.5, 255.0, 256.0, -1.0, 300.7, 1e3])
for dt in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool):
    print("to", dt, vals.to(dt))
print("nan to int", torch.tensor([float("nan"), float("inf"), -float("inf")]).to(torch.int32),
      torch.tensor([float("nan"), float("inf")]).to(torch.bool))
print("big to int64", torch.tensor([1e18, -1e18, 9.3e18], dtype=torch.float64).long())
print("float to half overflow", torch.tensor([70000.0, -1e6, 1e-8]).half(),
      torch.tensor([1e39], dtype=torch.float64).float(), torch.tensor([1e39],
      dtype=torch.float64).bfloat16())
print("int to float rounding", torch.tensor([2 ** 24 + 1, 2 ** 53 + 1]).float(),
      torch.tensor([2 ** 53 + 1]).double(), torch.tensor([2049]).half())
print("int to narrower int", torch.tensor([256, 257, -1, 70000]).to(torch.uint8),
      torch.tensor([128, 255, 70000]).to(torch.int8), torch.tensor([2 ** 40]).int())
print("complex to real", dtype_of(lambda: c64.to(torch.float32)))
print("complex real", c64.real, c64.abs().dtype, c64.angle().dtype)
print("bool from float", torch.tensor([0.0, -0.0, 0.1, float("nan")]).bool())
print("type()", f32.type(torch.int32), f32.type("torch.DoubleTensor").dtype, f32.int().dtype,
      f32.long().dtype, f32.short().dtype, f32.char().dtype, f32.byte().dtype, f32.half().dtype,
      f32.bool().dtype, f32.bfloat16().dtype, f32.cfloat().dtype, f32.cdouble().dtype)
print("to with numpy", torch.tensor(np.array([1, 2], dtype=np.uint16)).dtype,
      torch.from_numpy(np.array([1.5], dtype=np.float16)).dtype,
      torch.tensor(np.array([1, 2], dtype=np.int32)).dtype, torch.as_tensor([1, 2],
      dtype=torch.float16))

# --- rounding halves
halves = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997])
print("round", torch.round(halves))
print("floor", torch.floor(halves), "ceil", torch.ceil(halves))
print("trunc", torch.trunc(halves), "fix", torch.fix(halves))
print("round decimals", torch.round(torch.tensor([1.2345, 2.675, -0.125]), decimals=2),
      torch.round(torch.tensor([1234.5]), decimals=-2))
print("round int", torch.round(torch.tensor([3, -3])), torch.floor(torch.tensor([3])).dtype,
      torch.tensor([7]).ceil().dtype)
print("round half", torch.round(torch.tensor([0.5, 1.5, 2.5], dtype=torch.float16)),
      torch.round(torch.tensor([2.5], dtype=torch.bfloat16)))
print("frac", torch.frac(torch.tensor([1.75, -1.75])), torch.sign(torch.tensor([-0.0, 3, -2])),
      torch.sgn(torch.tensor([3 + 4j])), torch.tensor([-3]).sign().dtype)
print("python round", round(torch.tensor(2.5).item()), int(torch.tensor(-2.7)),
      float(torch.tensor(3)), torch.tensor(2.5).round().item())

# --- torch.tensor dtype inference
samples = [
    [1, 2], [1, 2.0], [True, False], [True, 1], [True, 1.5], [1, 2j], [[1], [2.5]],
    [np.float32(1.5)], [np.int32(3)], [np.float64(1.0), 2], np.float16(1.0), np.int8(5),
    np.bool_(True), [np.uint8(1)], 3, 3.0, True, 1 + 0j, [[]], [], [np.float32(1), 2.0],
    [torch.tensor(1), 2], [torch.tensor(1.5, dtype=torch.float64)], (1, 2), range(3),
    [1.0, float("inf")], 2 ** 62,
]
for s in samples:
    t = torch.tensor(s)
    print("infer", repr(s) if not isinstance(s, range) else "range(3)", t.dtype, tuple(t.shape))
attempt("infer ragged", lambda: torch.tensor([[1, 2], [3]]))
attempt("infer str", lambda: torch.tensor(["a"]))
attempt("infer mixed tensor", lambda: torch.tensor([torch.tensor([1, 2]), 3]))
print("as_tensor keeps", torch.as_tensor(np.arange(3, dtype=np.int16)).dtype,
      torch.as_tensor(f16).dtype, torch.as_tensor(3.0).dtype)
print("full infer", torch.full((2,), 7).dtype, torch.full((2,), 7.0).dtype,
      torch.full((2,), True).dtype, torch.full((1,), 1j).dtype, torch.zeros_like(i8, dtype=
      torch.float32).dtype, torch.ones_like(b).dtype, torch.full_like(i64, 2.7))
print("scalar_tensor", torch.scalar_tensor(3).dtype, torch.scalar_tensor(True).dtype)

# --- arange / linspace dtypes and lengths
print("arange", torch.arange(5).dtype, torch.arange(5.0).dtype, torch.arange(0, 5, 1).dtype,
      torch.arange(0, 5, 0.5).dtype, torch.arange(0, 1, 0.1).shape, torch.arange(0, 1, 0.1))
print("arange tricky", len(torch.arange(1, 2.2, 0.3)), torch.arange(1, 2.2, 0.3),
      len(torch.arange(0, 0.3, 0.1)), len(torch.arange(-1, 1, 0.2)),
      torch.arange(10, 0, -3), torch.arange(0, 10, 3, dtype=torch.float32),
      torch.arange(0.5, 3, dtype=torch.int64))
print("arange tensors", torch.arange(torch.tensor(3)).dtype, torch.arange(torch.tensor(3.0)).dtype,
      torch.arange(2, dtype=torch.uint8), torch.arange(1.5, 4, dtype=torch.int32))
attempt("arange zero step", lambda: torch.arange(0, 1, 0))
attempt("arange wrong sign", lambda: torch.arange(0, 10, -1))
print("linspace", torch.linspace(0, 1, 5).dtype, torch.linspace(0, 10, 5, dtype=torch.int64),
      torch.linspace(0, 1, 1), torch.linspace(0, 1, 0), torch.linspace(-1, 1, 4))
print("linspace int steps", torch.linspace(0, 9, 4, dtype=torch.int32), torch.linspace(
      10, 0, 4, dtype=torch.int16), torch.linspace(0, 1, 3, dtype=torch.float64))
print("logspace", torch.logspace(0, 2, 3), torch.logspace(0, 3, 4, base=2),
      torch.logspace(0, 2, 3, dtype=torch.int64))
print("range deprecated dtype", torch.zeros(3).new_tensor([1, 2]).dtype,
      f16.new_zeros(2).dtype, i8.new_full((2,), 1.7), f32.new_ones(1, dtype=torch.int8).dtype)

# --- in-place ops that would change the dtype
it = torch.tensor([1, 2, 3])
attempt("int += float", lambda: it.add_(1.5))
attempt("int *= 0.5", lambda: it.mul_(torch.tensor([0.5, 0.5, 0.5])))
attempt("int /= 2", lambda: it.div_(2))
print("int //= 2", it.floor_divide_(2), "int div_ floor", it.clone().div_(2, rounding_mode="floor"))
ft = torch.tensor([1.0, 2.0])
print("float += int tensor", ft.add_(torch.tensor([1, 1])), ft.dtype)
print("float16 += float32", f16.clone().add_(f32), f16.clone().mul_(torch.tensor(3.0,
      dtype=torch.float64)).dtype)
attempt("float16 += complex", lambda: f16.clone().add_(c64))
attempt("bool += 1", lambda: b.clone().add_(1))
print("bool |= True", b.clone().bitwise_or_(True), b.clone().logical_and_(torch.tensor([1, 0])))
attempt("int8 += int64 tensor", lambda: i8.clone().add_(torch.tensor([1000, 1])))
print("int8 += 0-d int64", i8.clone().add_(torch.tensor(1000)))
attempt("uint8 -= 1.0", lambda: u8.clone().sub_(1.0))
print("copy_ converts", torch.zeros(2, dtype=torch.int32).copy_(torch.tensor([1.9, -1.9])),
      torch.zeros(2).copy_(torch.tensor([True, False])))
print("setitem converts", end=" ")
z = torch.zeros(3, dtype=torch.int64)
z[0] = 2.9
z[1:] = torch.tensor([1.5, -1.5])
print(z)
attempt("out= wrong dtype", lambda: torch.add(f32, f32, out=torch.empty(2, dtype=torch.int64)))
print("out= wider dtype", torch.add(i64, i64, out=torch.empty(2)))
print("clamp_ int int bound", ints.clone().clamp_(0, 2))
attempt("where out", lambda: torch.where(cond, torch.ones(3), 0.5 * torch.ones(3),
                                         out=torch.empty(3, dtype=torch.int64)))

# --- comparisons across dtypes
print("compare", i8 == f16, u8 < 1.5, b == 1, torch.tensor([1]) == torch.tensor([1.0]),
      (i8 > i64).dtype, torch.tensor([0.1]) == torch.tensor([0.1], dtype=torch.float64),
      torch.tensor([float("nan")]) == torch.tensor([float("nan")]))
print("compare uint8 -1", torch.tensor([255], dtype=torch.uint8) == -1,
      torch.tensor([0], dtype=torch.uint8) > -1)
print("eq / equal", torch.equal(torch.tensor([1, 2]), torch.tensor([1.0, 2.0])),
      torch.eq(i64, 1), torch.ne(f32, i64), i64.eq(torch.tensor(2.0)))
print("isclose ints", torch.isclose(torch.tensor([1, 2]), torch.tensor([1, 3])),
      torch.isclose(torch.tensor([100]), torch.tensor([101]), rtol=0.01, atol=0),
      torch.allclose(torch.tensor([1, 2]), torch.tensor([1, 2])))
attempt("isclose int float", lambda: torch.isclose(torch.tensor([1]), torch.tensor([1.0])))
attempt("allclose int float", lambda: torch.allclose(torch.tensor([1]), torch.tensor([1.0])))
print("isclose nan", torch.isclose(torch.tensor([float("nan"), 1.0]),
      torch.tensor([float("nan"), 1.0 + 1e-9]), equal_nan=True),
      torch.isclose(torch.tensor([float("inf")]), torch.tensor([float("inf")])))
print("isclose bool", torch.isclose(b, b), torch.allclose(f16, f16 + 1e-4))
print("sort mixed", torch.sort(torch.tensor([3, -1, 2], dtype=torch.int8)).values,
      torch.argsort(torch.tensor([float("nan"), 1.0, -float("inf")])))
print("topk uint8", torch.tensor([3, 200, 7], dtype=torch.uint8).topk(2))
print("minimum mixed", torch.minimum(u8, i8), torch.minimum(b, torch.tensor([0.5, 0.5])))
print("isin", torch.isin(torch.tensor([1, 2, 3]), torch.tensor([2.0, 3.5])))
print("numpy roundtrip", torch.tensor([1, 2], dtype=torch.int16).numpy().dtype,
      torch.from_numpy(np.array([1, 2], dtype=np.uint32)).dtype,
      bf16.float().numpy().dtype)
print("element_size", [t.element_size() for t in tensors.values()])
print("is_floating/complex/signed", [t.is_floating_point() for t in tensors.values()],
      [t.is_complex() for t in tensors.values()], [t.dtype.is_signed for t in tensors.values()])

# --- numbers that take no part in promotion: alpha, value; scalar conversions
print("addcmul int value", torch.addcmul(i64, i64, i64, value=0.5),
      torch.addcmul(i64, i64, i64, value=1.5), i64.clone().addcmul_(i64, i64, value=-1.5))
print("addcmul float value", torch.addcmul(f32, f32, f32, value=0.5),
      torch.addcdiv(f32, f32, f32, value=2))
attempt("addcmul complex value", lambda: torch.addcmul(f32, f32, f32, value=1j))
attempt("addcmul bool", lambda: torch.addcmul(b, b, b))
print("add alpha", torch.add(i64, i64, alpha=3), torch.sub(f32, f32, alpha=0.5),
      torch.add(b, b, alpha=True), torch.add(c64, c64, alpha=1j))
attempt("add int alpha float", lambda: torch.add(i64, i64, alpha=0.5))
attempt("add bool alpha float", lambda: torch.add(b, b, alpha=2.5))
attempt("add float alpha complex", lambda: torch.add(f32, f32, alpha=1j))
attempt("add int alpha bool", lambda: torch.add(i64, i64, alpha=True))
print("float/int of complex", float(torch.tensor(2.5 + 0j)), int(torch.tensor(-2.7 + 0j)),
      complex(torch.tensor(3)), float(torch.tensor(True)), int(torch.tensor(-3.9)))
attempt("float of complex", lambda: float(torch.tensor(1 + 1j)))
attempt("int of complex", lambda: int(torch.tensor(1 + 1j)))
attempt("index with complex", lambda: [1, 2][torch.tensor(1 + 0j)])
attempt("index with float", lambda: [1, 2][torch.tensor(1.0)])
print("index with int tensor", [1, 2][torch.tensor(1)], list(range(torch.tensor(3))))
attempt("isclose number", lambda: torch.isclose(f32, 1.0))
attempt("dist int", lambda: torch.dist(i64, i64 + 1))
print("dist mixed", torch.dist(f32, i64 + 1), torch.dist(f16, f16 * 2, p=1))
attempt("pow modulo", lambda: pow(torch.tensor(2), 3, 5))
print("pow builtin", pow(torch.tensor(2), 3), abs(torch.tensor(-2)),
      round(torch.tensor(2.567).item(), 2))
attempt("divmod", lambda: divmod(torch.tensor(7), 2))
print("done")
