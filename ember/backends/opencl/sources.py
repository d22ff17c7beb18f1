"""OpenCL C sources of the kernels, generated from a few templates.

Every dtype has a *storage* type (how it lies in memory) and a *compute* type (what a
kernel computes in): float16 and bfloat16 are stored as 16 bits and computed in float
(read and written with vload_half/vstore_half_rte and bit operations, so they need no
cl_khr_fp16), bool is stored as one byte holding 0 or 1. A kernel family (unary,
binary, compare, cast, ...) is ONE kernel per dtype that selects the op with a runtime
switch: a device compiles one kernel for all twenty binary ops of float32, not twenty
kernels (PoCL spends ~0.2-0.4 s generating each kernel's work-group function).

Index arithmetic is in `long`. Per-call metadata (sizes, shape, strides, offsets, the op
code) travels as one struct passed by value, so a launch sets a handful of arguments.
"""

from __future__ import annotations

from typing import NamedTuple


class CType(NamedTuple):
    name: str  # ember dtype name
    store: str  # C storage type
    comp: str  # C compute type
    kind: str  # "b" bool, "u" unsigned, "i" signed int, "f" float/double, "h" 16-bit float
    pack: str  # struct format char of a compute-type scalar
    size: int
    code: int  # the dtype's number in kernels that switch over dtypes


TYPES: dict[str, CType] = {t.name: t for t in (
    CType("bool", "uchar", "uchar", "b", "B", 1, 0),
    CType("uint8", "uchar", "uchar", "u", "B", 1, 1),
    CType("int8", "char", "char", "i", "b", 1, 2),
    CType("int16", "short", "short", "i", "h", 2, 3),
    CType("int32", "int", "int", "i", "i", 4, 4),
    CType("int64", "long", "long", "i", "q", 8, 5),
    CType("float16", "half", "float", "h", "f", 2, 6),
    CType("bfloat16", "ushort", "float", "h", "f", 2, 7),
    CType("float32", "float", "float", "f", "f", 4, 8),
    CType("float64", "double", "double", "f", "d", 8, 9),
)}

UNSIGNED_OF = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong",
               "uchar": "uchar"}
ITEM_TYPES = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}  # raw data movement

MAXD = 8  # dims of a kernel's view after merging; bigger views use MAXD_BIG
MAXD_BIG = 32


def header(fp64: bool, atomics64: bool = False) -> str:
    # no contraction of a * b + c into fma: elementwise results round as NumPy's do
    lines = ["#pragma OPENCL FP_CONTRACT OFF"]
    if fp64:
        lines.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if atomics64:
        lines.append("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable")
    lines.append(r"""
inline float bf2f(ushort b) { return as_float(((uint)b) << 16); }
inline ushort f2bf(float f) {
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}
""")
    return "\n".join(lines)


def load(t: CType, ptr: str, idx: str) -> str:
    """A C expression: element `idx` of `ptr` as the compute type."""
    if t.name == "float16":
        return f"vload_half({idx}, {ptr})"
    if t.name == "bfloat16":
        return f"bf2f({ptr}[{idx}])"
    return f"{ptr}[{idx}]"


def store(t: CType, ptr: str, idx: str, value: str, wide: bool = False) -> str:
    """A C statement: write compute-type `value` into element `idx` of `ptr` (`wide`: the
    value is a double, which float16 rounds directly, once)."""
    if t.name == "float16":
        return f"vstore_half_rte(({'double' if wide else 'float'})({value}), {idx}, {ptr});"
    if t.name == "bfloat16":
        return f"{ptr}[{idx}] = f2bf((float)({value}));"
    if t.name == "bool":
        return f"{ptr}[{idx}] = (uchar)(({value}) != 0);"
    return f"{ptr}[{idx}] = ({t.store})({value});"


def convert(src: CType, dst: CType, value: str) -> str:
    """`value` (in src's compute type) converted to dst's compute type, as NumPy's astype
    does (floats to narrow integers go through long, so they wrap as on x86)."""
    if dst.kind == "b":
        return f"(uchar)(({value}) != 0)"
    if src.kind in "fh" and dst.kind in "ui" and dst.size < 4:
        return f"({dst.comp})(long)({value})"
    return f"({dst.comp})({value})"


def store_any_function(name: str, comp: str, fp64: bool) -> str:
    """`void name(__global uchar* out, long i, long dt, comp v)`: store v as dtype `dt`."""
    cases = []
    src = CType("src", comp, comp, "f" if comp in ("float", "double") else "i", "", 0, 0)
    for t in TYPES.values():
        if t.name == "float64" and not fp64:
            continue
        ptr = f"((__global {t.store}*)out)"
        v = convert(src, t, "v") if t.kind != "h" else "v"
        cases.append(f"    case {t.code}: {store(t, ptr, 'i', v, wide=comp == 'double')} "
                     "break;")
    body = "\n".join(cases)
    return f"""
inline void {name}(__global uchar* out, long i, long dt, {comp} v) {{
  switch (dt) {{
{body}
  }}
}}
"""


# -- the strided elementwise template ---------------------------------------------------

def structs(maxd: int, fp64: bool) -> str:
    """The by-value argument structs of every kernel (all fields 8 bytes wide, so the
    host's struct.pack layout matches the device's without padding rules)."""
    ew = "".join(
        f"typedef struct {{ long n, nd, op, flags, cs, aux0, aux1, aux2; long off[{narr}]; "
        f"long shape[{maxd}]; long st[{narr * maxd}]; }} P{narr};\n"
        for narr in (2, 3, 4))
    f = "double" if fp64 else "float"
    m = maxd
    return ew + f"""
typedef struct {{ long n, nd, adv0, adv1, k, np, xoff, voff, ioff;
  long shape[{m}]; long xst[{m}]; long vst[{m}]; long ast[{m}]; long asz[{m}]; }} TP;
typedef struct {{ long n, nd, dim, xoff, ioff, soff, dimsize, pad;
  long shape[{m}]; long xst[{m}]; long ist[{m}]; long sst[{m}]; }} GP;
typedef struct {{ long M, K, G, chunk, op, outdt, haveidx, off, ndk, ndr;
  long kshape[{m}]; long kst[{m}]; long rshape[{m}]; long rst[{m}]; }} RP;
typedef struct {{ long rows, L, inner, nd, off, st_dim; long shape[{m}]; long st[{m}]; }} CP;
typedef struct {{ long M, N, K, nb, aoff, boff, ars, acs, brs, bcs, hasbias, biasoff, biasst;
  long bshape[{m}]; long bast[{m}]; long bbst[{m}]; }} MP;
typedef struct {{ long mtiles, ntiles, apb, bpb; }} MQ;
typedef struct {{ long rows, L, inner, nd, off, st_dim, log; long shape[{m}]; long st[{m}]; }} SP;
typedef struct {{ long n, nd, off, chunk; long shape[{m}]; long st[{m}]; }} NZ;
typedef struct {{ long rows, L, inner, nd, off, st_dim, k, largest; long shape[{m}];
  long st[{m}]; }} KP;
typedef struct {{ ulong key, ctr; long n, mode, dt, lo; ulong range; }} RG;
typedef struct {{ long n, nsp, C, K, L, xoff, xs0, xs1, xs2;
  long size[{m}]; long ks[{m}]; long outs[{m}]; long stride[{m}]; long pad[{m}]; long dil[{m}];
  long xst[{m}]; }} IM;
typedef struct {{ long n, nsp, C, K, L, cs, xoff, xs0, xs1, sp;
  long size[{m}]; long ks[{m}]; long outs[{m}]; long stride[{m}]; long pad[{m}]; long dil[{m}];
  long xst[{m}]; }} PL;
typedef struct {{ long N, C, xoff, xs0, xs1, toff, tst, ignore, goff, gst, mode; }} CE;
typedef struct {{ long n, cs, poff, goff, boff, flags; }} SG;
typedef struct {{ long N, H, hasgcy; long off[5]; long s0[5]; long s1[5]; }} LC;
typedef struct {{ long n, dt, start, step; }} AL;
typedef struct {{ long n, dt; {f} start, step; }} AF;
"""


def ew_offsets(narr: int, maxd: int) -> str:
    """C code computing o0..o{narr-1}: the element offsets of work-item i in each array
    (array 0 is the output), from the merged shape and the per-array strides."""
    init = " ".join(f"long o{k} = p.off[{k}];" for k in range(narr))
    one = " ".join(f"o{k} += i * p.st[{k * maxd}];" for k in range(narr))
    many = " ".join(f"o{k} += c * p.st[{k * maxd} + d];" for k in range(narr))
    return f"""  {init}
  if (p.flags & 256) {{ o0 += i; {" ".join(f"o{k} += i * p.st[{k * maxd}];"
                                            for k in range(1, narr))} }}
  else if (p.nd == 1) {{ {one} }}
  else {{
    long r = i;
    for (int d = (int)p.nd - 1; d >= 0; d--) {{
      long sz = p.shape[d]; long c = r % sz; r /= sz; {many}
    }}
  }}
"""


def elementwise(name: str, out_t: CType | None, in_ts: list[CType], ops: list[str],
                maxd: int, extra: str = "", out_generic: bool = False) -> str:
    """A kernel applying one of `ops` (C statements that store into the output using
    a, b, c: the loaded inputs, s0..s2: scalars) selected by p.op.

    flags bit k: input k is the scalar s_k; bit 8: p.nd == 1 and the output's stride is
    1, so o0 == p.off[0] + i (the commonest case: a fresh output merged to 1 dim); bit 9:
    besides, every array input's stride is 1 (one vectorisable loop per op)."""
    narr = len(in_ts) + 1
    comps = [t.comp for t in in_ts] + [in_ts[0].comp] * (3 - len(in_ts))
    out_decl = ("__global uchar* out" if out_generic else f"__global {out_t.store}* out")
    ins = ", ".join(f"__global const {t.store}* in{k}" for k, t in enumerate(in_ts))
    scal = ", ".join(f"const {c} s{k}" for k, c in enumerate(comps))
    names = "abc"
    loads = "\n".join(
        f"  const {t.comp} {names[k]} = (p.flags & {1 << k}) ? s{k} : "
        f"{load(t, f'in{k}', f'o{k + 1}')};" for k, t in enumerate(in_ts))
    cases = "\n".join(f"    case {j}: {{ {stmt} }} break;" for j, stmt in enumerate(ops))
    # the contiguous case: one loop per op, so that the loop is a plain run over memory
    # that LLVM vectorises (PoCL ran the generic loop, a switch per element, ~40x slower)
    offs = " ".join(f"const long o{k} = p.off[{k}] + i;" for k in range(narr))
    runs = "\n".join(f"    case {j}: for (long i = i0; i < i1; i++) {{ {offs}\n{loads}\n"
                     f"      {stmt} }} break;" for j, stmt in enumerate(ops))
    return f"""{extra}
__kernel void {name}({out_decl}, {ins}, const P{narr} p, {scal}) {{
  /* work-item g handles elements [g * cs, (g + 1) * cs): cs is 1 on GPUs, a long run on
     CPUs (PoCL pays per work-item, and a CPU core likes contiguous runs) */
  const long i0 = (long)get_global_id(0) * p.cs;
  const long i1 = min(p.n, i0 + p.cs);
  if (p.flags & 512) {{  /* every array operand (and the output) contiguous: o_k = off_k + i */
  switch (p.op) {{
{runs}
  }}
  return;
  }}
  for (long i = i0; i < i1; i++) {{
{ew_offsets(narr, maxd)}
{loads}
  switch (p.op) {{
{cases}
  }}
  }}
}}
"""


# -- op tables: C statements per family and dtype kind ---------------------------------------

def _st(out_t: CType, value: str) -> str:
    return store(out_t, "out", "o0", value)


def _maxnan(c: str, x: str, y: str) -> str:
    return f"(({x} > {y} || isnan({x})) ? {x} : {y})"


def _minnan(c: str, x: str, y: str) -> str:
    return f"(({x} < {y} || isnan({x})) ? {x} : {y})"


def _wrap(t: CType, op: str) -> str:
    """a op b with wrap-around for int and long (signed overflow is undefined in C)."""
    if t.comp in ("int", "long"):
        u = UNSIGNED_OF[t.comp]
        return f"({t.comp})(({u})a {op} ({u})b)"
    return f"(a {op} b)"


UNARY_OPS = ("copy", "neg", "abs", "sign", "floor", "ceil", "round", "trunc", "relu",
             "bitwise_not", "clamp", "tril", "triu",
             "exp", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
             "tanh", "sigmoid", "erf", "asin", "acos", "atan", "reciprocal",
             # elementwise math (issue 16): OpenCL C's own functions
             "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "log10", "erfc", "lgamma")
UNARY_FLOAT_OPS = UNARY_OPS[UNARY_OPS.index("exp"):]


def unary_source(t: CType, maxd: int) -> str:
    c = t.comp
    floaty = t.kind in "fh"
    signed = t.kind == "i"
    stmts = {}
    stmts["copy"] = _st(t, "a")
    stmts["neg"] = _st(t, f"({c})(-a)" if not floaty else "-a")
    stmts["abs"] = _st(t, "fabs(a)" if floaty else (f"({c})(a < 0 ? -a : a)" if signed
                                                     else "a"))
    if floaty:
        stmts["sign"] = _st(t, f"(a > 0 ? ({c})1 : (a < 0 ? ({c})-1 : ({c})0))")  # 0 at NaN
    elif signed:
        stmts["sign"] = _st(t, f"({c})((a > 0) - (a < 0))")
    else:
        stmts["sign"] = _st(t, f"({c})(a > 0)")
    for op, fn in (("floor", "floor"), ("ceil", "ceil"), ("round", "rint"),
                   ("trunc", "trunc")):
        stmts[op] = _st(t, f"{fn}(a)" if floaty else "a")
    stmts["relu"] = _st(t, f"(a < 0 ? ({c})0 : a)" if (floaty or signed) else "a")
    stmts["bitwise_not"] = _st(t, "(uchar)(a == 0)" if t.kind == "b" else
                               ("~a" if not floaty else "a"))
    if floaty:
        lo, hi = _maxnan(c, "v", "s1"), _minnan(c, "v", "s2")
    else:
        lo, hi = "max(v, s1)", "min(v, s2)"
    stmts["clamp"] = (f"{c} v = a; if (p.flags & 2) v = {lo}; if (p.flags & 4) v = {hi}; "
                      + _st(t, "v"))
    diag = "((i % p.aux1) - ((i / p.aux1) % p.aux2))"
    stmts["tril"] = _st(t, f"({diag} <= p.aux0) ? a : ({c})0")
    stmts["triu"] = _st(t, f"({diag} >= p.aux0) ? a : ({c})0")
    if floaty:
        # sigmoid as e / (1 + e), e = exp(-|a|): relative precision kept for very negative a
        sigmoid = f"(a >= 0 ? ({c})1 : exp(a)) / (({c})1 + exp(-fabs(a)))"
        for op in UNARY_FLOAT_OPS:
            expr = {"rsqrt": f"({c})1 / sqrt(a)", "reciprocal": f"({c})1 / a",
                    "sigmoid": sigmoid}.get(op, f"{op}(a)")
            stmts[op] = _st(t, expr)
    else:
        for op in UNARY_FLOAT_OPS:
            stmts[op] = _st(t, "a")  # never dispatched: core casts integers to float first
    ops = [stmts[op] for op in UNARY_OPS]
    return elementwise("unary", t, [t], ops, maxd)


PRED_OPS = ("logical_not", "isnan", "isinf", "isfinite", "signbit")


def pred_source(t: CType, maxd: int) -> str:
    out = TYPES["bool"]
    floaty = t.kind in "fh"
    ops = [_st(out, "a == 0"),
           _st(out, "isnan(a)" if floaty else "0"),
           _st(out, "isinf(a)" if floaty else "0"),
           _st(out, "isfinite(a)" if floaty else "1"),
           _st(out, "signbit(a)" if floaty else "0")]  # (core sends floats only)
    return elementwise("pred", out, [t], ops, maxd)


BINARY_OPS = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "remainder",
              "floor_divide", "atan2", "bitwise_and", "bitwise_or", "bitwise_xor",
              # fused backwards of unary ops, (v, grad) -> grad_in, v the saved input/output
              "tanh_backward", "sigmoid_backward", "relu_backward", "exp_backward",
              "log_backward",
              # a + b * s2 (s2: the third scalar argument), for add/sub with alpha
              "axpy",
              # elementwise math (issue 16)
              "fmod", "hypot")
BACKWARD_OPS = BINARY_OPS[BINARY_OPS.index("tanh_backward"):BINARY_OPS.index("axpy")]


def _binary_helpers(t: CType) -> str:
    c = t.comp
    if t.kind in "fh":
        return f"""
inline {c} py_divmod_{c}({c} a, {c} b, {c}* modulus) {{
  /* PyTorch's div_floor and remainder: the remainder has the sign of b (a zero keeps
     fmod's sign), the quotient is floored */
  {c} mod = fmod(a, b);
  if (b == 0) {{ *modulus = mod; return a / b; }}
  {c} div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) {{ mod += b; div -= ({c})1; }}
  {c} floordiv;
  if (div != 0) {{
    floordiv = floor(div);
    if (div - floordiv > ({c})0.5) floordiv += ({c})1;
  }} else {{
    floordiv = copysign(({c})0, a / b);
  }}
  *modulus = mod;
  return floordiv;
}}
inline {c} py_rem_{c}({c} a, {c} b) {{
  {c} m; if (b == 0) return fmod(a, b); py_divmod_{c}(a, b, &m); return m;
}}
inline {c} py_fdiv_{c}({c} a, {c} b) {{
  {c} m; if (b == 0) return a / b; return py_divmod_{c}(a, b, &m);
}}
"""
    if t.kind == "b":
        return ""
    signed = t.kind == "i"
    u = UNSIGNED_OF.get(c, c)
    # b == 0 is refused on the host before launch; the guards keep a bad launch from
    # trapping (x86 raises SIGFPE on x / 0 and on INT_MIN / -1)
    neg1 = (f"if (b == ({c})-1) return ({c})(-({u})a);" if signed and t.size >= 4 else "")
    if signed:
        rem = f"{c} r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? ({c})(r + b) : r;"
        fdiv = (f"{c} q = a / b; {c} r = a % b; "
                f"return (r != 0 && ((r < 0) != (b < 0))) ? ({c})(q - 1) : q;")
    else:
        rem, fdiv = "return a % b;", "return a / b;"
    return f"""
inline {c} py_rem_{c}({c} a, {c} b) {{
  if (b == 0) return 0; {"if (b == -1) return 0;" if signed else ""}
  {rem}
}}
inline {c} py_fdiv_{c}({c} a, {c} b) {{
  if (b == 0) return 0; {neg1}
  {fdiv}
}}
inline {c} ipow_{c}({c} a, {c} b) {{
  if (b < 0) return (a == 1) ? ({c})1 : ((a == ({c})-1) ? ((b & 1) ? a : ({c})1) : ({c})0);
  {u} r = 1, x = ({u})a; {u} e = ({u})b;
  while (e) {{ if (e & 1) r *= x; x *= x; e >>= 1; }}
  return ({c})r;
}}
"""


def binary_source(t: CType, maxd: int) -> str:
    c = t.comp
    floaty = t.kind in "fh"
    stmts = {
        "add": _st(t, _wrap(t, "+")), "sub": _st(t, _wrap(t, "-")),
        "mul": _st(t, _wrap(t, "*")),
        "div": _st(t, "a / b"),
        "maximum": _st(t, _maxnan(c, "a", "b") if floaty else "max(a, b)"),
        "minimum": _st(t, _minnan(c, "a", "b") if floaty else "min(a, b)"),
        "atan2": _st(t, "atan2(a, b)" if floaty else "a"),
    }
    if t.kind == "b":
        for op in ("pow", "remainder", "floor_divide"):
            stmts[op] = _st(t, "a")  # refused by core for bool operands
    else:
        stmts["pow"] = _st(t, "pow(a, b)" if floaty else f"ipow_{c}(a, b)")
        stmts["remainder"] = _st(t, f"py_rem_{c}(a, b)")
        stmts["floor_divide"] = _st(t, f"py_fdiv_{c}(a, b)")
    for op, sym in (("bitwise_and", "&"), ("bitwise_or", "|"), ("bitwise_xor", "^")):
        stmts[op] = _st(t, f"(a {sym} b)" if not floaty else "a")
    one = f"({c})1"
    backward = {"tanh_backward": f"({one} - a * a) * b", "sigmoid_backward": f"({one} - a) * a * b",
                "relu_backward": f"(a <= 0) ? ({c})0 : b", "exp_backward": "b * a",
                "log_backward": "b / a"}
    for op, expr in backward.items():
        stmts[op] = _st(t, expr if floaty else "a")  # gradients are floating only
    if floaty or t.comp not in ("int", "long"):
        stmts["axpy"] = _st(t, "a + b * s2")
    else:  # wrap around without signed overflow
        u = UNSIGNED_OF[t.comp]
        stmts["axpy"] = _st(t, f"({t.comp})(({u})a + ({u})b * ({u})s2)")
    # elementwise math (issue 16): C's fmod (integer division by zero is refused on the
    # host; the guard keeps a bad launch from trapping), hypot for floats only
    if floaty:
        stmts["fmod"], stmts["hypot"] = _st(t, "fmod(a, b)"), _st(t, "hypot(a, b)")
    elif t.kind == "b":
        stmts["fmod"] = stmts["hypot"] = _st(t, "a")  # refused by core for bool operands
    else:
        guard = f"(b == 0 || b == ({c})-1) ? ({c})0 : " if t.kind == "i" else "(b == 0) ? 0 : "
        stmts["fmod"] = _st(t, f"{guard}({c})(a % b)")
        stmts["hypot"] = _st(t, "a")  # refused by core for integer operands
    ops = [stmts[op] for op in BINARY_OPS]
    return elementwise("binary", t, [t, t], ops, maxd, extra=_binary_helpers(t))


COMPARE_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor")


def compare_source(t: CType, maxd: int) -> str:
    out = TYPES["bool"]
    exprs = ["a == b", "a != b", "a < b", "a <= b", "a > b", "a >= b",
             "(a != 0) && (b != 0)", "(a != 0) || (b != 0)", "(a != 0) != (b != 0)"]
    return elementwise("compare", out, [t, t], [_st(out, e) for e in exprs], maxd)


TERNARY_OPS = ("addcmul", "addcdiv", "lerp")


def ternary_source(t: CType, maxd: int) -> str:
    """(a, b, c) -> a + s0 * (b * c), a + s0 * (b / c), a + c * (b - a): the optimizer
    updates (s0 is free for `value`: a tensor operand never reads its scalar slot)."""
    if t.kind in "fh":
        ops = [_st(t, "a + (b * c) * s0"), _st(t, "a + (b / c) * s0"),
               _st(t, "a + c * (b - a)")]
    else:  # optimizer math is floating; integer x / 0 would trap
        ops = [_st(t, "a")] * 3
    return elementwise("ternary", t, [t, t, t], ops, maxd)


def where_source(t: CType, maxd: int) -> str:
    return elementwise("where", t, [TYPES["bool"], t, t], [_st(t, "a ? b : c")], maxd)


def cast_source(src: CType, fp64: bool, maxd: int) -> str:
    """One kernel converting `src` to any dtype: p.op is the target's dtype code."""
    ops = []
    for dst in TYPES.values():
        if dst.name == "float64" and not fp64:
            ops.append("")
            continue
        ptr = f"((__global {dst.store}*)out)"
        if dst.kind == "h" and src.comp == "double":
            ops.append(store(dst, ptr, "o0", "a", wide=True))  # one rounding, as NumPy
        else:
            ops.append(store(dst, ptr, "o0", convert(src, dst, "a")))
    return elementwise("cast", None, [src], ops, maxd, out_generic=True)


def copy_source(itemsize: int, maxd: int) -> str:
    """Raw strided copy of `itemsize`-byte elements (clone, assign, cat, flip ...)."""
    u = ITEM_TYPES[itemsize]
    t = CType(u, u, u, "u", "", itemsize, 0)
    return elementwise("copy", t, [t], [_st(t, "a")], maxd)


# -- atomics --------------------------------------------------------------------------------

def atomic_add_function(t: CType) -> str:
    """`void atomic_add_elem(__global T* p, C v)`: *p += v atomically, for every dtype
    (8- and 16-bit elements by a compare-and-swap on the aligned 32-bit word that holds
    them; buffers are allocated in multiples of 8 bytes so that word exists)."""
    if t.name == "int32":
        return _atomic_native(t, "add", "atomic_add((volatile __global int*)p, v);")
    if t.name == "int64":
        return _atomic_native(t, "add", "atom_add((volatile __global long*)p, v);")
    return atomic_update_function(t, "add", "{a} + {v}", bool_update="(cur != 0 || v != 0)")


def scatter_reduction(op: str, floating: bool) -> tuple[str, str]:
    """scatter_reduce's `op` as (expr of `{a}` the element and `{v}` the value, the rule
    for bool elements from `cur` and `v`). NaN propagates through max and min, as in
    PyTorch."""
    if op == "prod":
        return "{a} * {v}", "(cur != 0 && v != 0)"
    cmp = ">" if op == "amax" else "<"
    if floating:
        expr = (f"isnan({{a}}) ? ({{a}}) : "
                f"((isnan({{v}}) || ({{v}}) {cmp} ({{a}})) ? ({{v}}) : ({{a}}))")
    else:
        expr = f"(({{v}}) {cmp} ({{a}})) ? ({{v}}) : ({{a}})"
    return expr, "(cur != 0 || v != 0)" if op == "amax" else "(cur != 0 && v != 0)"


def _atomic_native(t: CType, op: str, body: str) -> str:
    return f"""
inline void atomic_{op}_elem(__global {t.store}* p, {t.comp} v) {{
  {body}
}}
"""


def atomic_update_function(t: CType, op: str, expr: str, bool_update: str) -> str:
    """`void atomic_<op>_elem(__global T* p, C v)`: *p = expr(*p, v) atomically, by a
    compare-and-swap loop (on the aligned 32-bit word that holds 8- and 16-bit
    elements). `expr` combines `{a}` (the element) and `{v}`; `bool_update` is the rule
    for bool elements, from `cur` and `v`."""
    c, s = t.comp, t.store
    if t.size in (4, 8) and t.name != "bool":
        word, cas = ("uint", "atomic_cmpxchg") if t.size == 4 else ("ulong", "atom_cmpxchg")
        return f"""
inline void atomic_{op}_elem(__global {s}* p, {c} v) {{
  union {{ {word} u; {s} f; }} o, n;
  do {{ o.f = *p; n.f = ({s})({expr.format(a="o.f", v="v")}); }}
  while ({cas}((volatile __global {word}*)p, o.u, n.u) != o.u);
}}
"""
    mask = "0xffu" if t.size == 1 else "0xffffu"
    if t.name == "float16":
        update = ("ushort hb = (ushort)cur; "
                  "float a = vload_half(0, (const __private half*)&hb); "
                  f"float f = {expr.format(a='a', v='v')}; "
                  "vstore_half_rte(f, 0, (__private half*)&hb); uint nv = hb;")
    elif t.name == "bfloat16":
        update = (f"float a = bf2f((ushort)cur); "
                  f"uint nv = f2bf({expr.format(a='a', v='v')});")
    elif t.name == "bool":
        update = f"uint nv = {bool_update} ? 1u : 0u;"
    else:
        update = (f"{s} a = ({s})cur; "
                  f"uint nv = ({UNSIGNED_OF.get(s, s)})(({s})({expr.format(a='a', v='v')}));")
    return f"""
inline void atomic_{op}_elem(__global {s}* p, {c} v) {{
  size_t addr = (size_t)p;
  volatile __global uint* w = (volatile __global uint*)(addr & ~(size_t)3);
  uint shift = (uint)(addr & 3) * 8u;
  uint mask = {mask} << shift;
  uint old, nw;
  do {{
    old = *w;
    uint cur = (old & mask) >> shift;
    {update}
    nw = (old & ~mask) | ((nv << shift) & mask);
  }} while (atomic_cmpxchg(w, old, nw) != old);
}}
"""


# -- indexing -------------------------------------------------------------------------------

_TAKE_INDEX = """
  long r = i, ox = p.xoff, ov = p.voff, pp = 0, mul = 1;
  for (int d = (int)p.nd - 1; d >= 0; d--) {
    long sz = p.shape[d]; long c = r % sz; r /= sz;
    ov += c * p.vst[d];
    if (d >= p.adv0 && d < p.adv1) { pp += c * mul; mul *= sz; } else ox += c * p.xst[d];
  }
  for (int j = 0; j < (int)p.k; j++) {
    long v = idx[p.ioff + j * p.np + pp];
    if (v < 0) v += p.asz[j];
    if (v < 0 || v >= p.asz[j]) { err[0] = 1; return; }  /* reported at the next sync */
    ox += v * p.ast[j];
  }
"""


def take_source(itemsize: int) -> str:
    """Advanced indexing by itemsize: `take` reads x at the indexed positions into a
    contiguous output; `put` writes a (broadcast) value there."""
    u = ITEM_TYPES[itemsize]
    return f"""
__kernel void take(__global {u}* out, __global const {u}* x, __global const long* idx,
                   const TP p, __global int* err) {{
  const long i = get_global_id(0);
  if (i >= p.n) return;
{_TAKE_INDEX}
  out[i] = x[ox];
}}
__kernel void put(__global {u}* x, __global const {u}* val, __global const long* idx,
                  const TP p, __global int* err) {{
  const long i = get_global_id(0);
  if (i >= p.n) return;
{_TAKE_INDEX}
  x[ox] = val[ov];
}}
"""


def put_add_source(t: CType) -> str:
    return f"""
__kernel void put_add(__global {t.store}* x, __global const {t.store}* val,
                      __global const long* idx, const TP p, __global int* err) {{
  const long i = get_global_id(0);
  if (i >= p.n) return;
{_TAKE_INDEX}
  atomic_add_elem(x + ox, {load(t, "val", "ov")});
}}
"""


_GATHER_INDEX = """
  long r = i, ox = p.xoff, oi = p.ioff, os = p.soff, cd = 0;
  for (int d = (int)p.nd - 1; d >= 0; d--) {
    long sz = p.shape[d]; long c = r % sz; r /= sz;
    oi += c * p.ist[d]; os += c * p.sst[d];
    if (d != p.dim) ox += c * p.xst[d];
  }
  long v = idx[oi];
  if (v < 0) v += p.dimsize;
  if (v < 0 || v >= p.dimsize) { err[0] = 2; return; }  /* reported at the next sync */
  ox += v * p.xst[p.dim];
"""


def gather_source(itemsize: int) -> str:
    """gather (out[i] = x[... index[i] ...]) and scatter (x[... index[i] ...] = src[i]),
    iterating over the index tensor's shape."""
    u = ITEM_TYPES[itemsize]
    return f"""
__kernel void gather(__global {u}* out, __global const {u}* x, __global const long* idx,
                     const GP p, __global int* err) {{
  const long i = get_global_id(0);
  if (i >= p.n) return;
{_GATHER_INDEX}
  out[i] = x[ox];
}}
__kernel void scatter(__global {u}* x, __global const {u}* src, __global const long* idx,
                      const GP p, __global int* err) {{
  const long i = get_global_id(0);
  if (i >= p.n) return;
{_GATHER_INDEX}
  x[ox] = src[os];
}}
"""


def scatter_add_source(t: CType, op: str = "add") -> str:
    """scatter_<op>: each src value taken into x at its index with atomic_<op>_elem."""
    return f"""
__kernel void scatter_{op}(__global {t.store}* x, __global const {t.store}* src,
                          __global const long* idx, const GP p, __global int* err) {{
  const long i = get_global_id(0);
  if (i >= p.n) return;
{_GATHER_INDEX}
  atomic_{op}_elem(x + ox, {load(t, "src", "os")});
}}
"""


def scatter_reduce_sources(t: CType) -> list[str]:
    """scatter_prod, scatter_amax and scatter_amin (scatter_reduce's kernels)."""
    parts = []
    for op in ("prod", "amax", "amin"):
        expr, bool_update = scatter_reduction(op, t.kind in "fh")
        parts += [atomic_update_function(t, op, expr, bool_update), scatter_add_source(t, op)]
    return parts


# -- reductions -----------------------------------------------------------------------------

REDUCE_OPS = ("sum", "prod", "max", "min", "all", "any", "argmax", "argmin")
ACC_OF = {"bool": "long", "uint8": "long", "int8": "long", "int16": "long", "int32": "long",
          "int64": "long", "float16": "float", "bfloat16": "float", "float32": "float",
          "float64": "double"}
ACC_DTYPE = {"long": "int64", "float": "float32", "double": "float64"}


def _reduce_comb(a: str) -> str:
    floaty = a in ("float", "double")
    lo = "-INFINITY" if floaty else "LONG_MIN"
    hi = "INFINITY" if floaty else "LONG_MAX"
    if floaty:
        mx = "*v = (w > *v || isnan(w)) ? w : *v;"
        mn = "*v = (w < *v || isnan(w)) ? w : *v;"
        amx = "take = isnan(w) ? (!isnan(*v) || wi < *vi) : (w > *v || (w == *v && wi < *vi));"
        amn = "take = isnan(w) ? (!isnan(*v) || wi < *vi) : (w < *v || (w == *v && wi < *vi));"
    else:
        mx, mn = "*v = max(*v, w);", "*v = min(*v, w);"
        amx = "take = w > *v || (w == *v && wi < *vi);"
        amn = "take = w < *v || (w == *v && wi < *vi);"
    return f"""
inline {a} red_init(long op) {{
  switch (op) {{
    case 1: case 4: return ({a})1;
    case 2: case 6: return {lo};
    case 3: case 7: return {hi};
    default: return ({a})0;
  }}
}}
inline void comb(long op, {a}* v, long* vi, {a} w, long wi) {{
  int take = 0;
  switch (op) {{
    case 0: *v += w; break;
    case 1: *v *= w; break;
    case 2: {mx} break;
    case 3: {mn} break;
    case 4: *v = (*v != 0 && w != 0) ? ({a})1 : ({a})0; break;
    case 5: *v = (*v != 0 || w != 0) ? ({a})1 : ({a})0; break;
    case 6: {amx} break;
    case 7: {amn} break;
  }}
  if (take) {{ *v = w; *vi = wi; }}
}}
"""


def reduce_source(t: CType, ls: int, cpu: bool = False) -> str:
    """A work-group tree reduction: group g reduces chunk g % G of output g / G's
    elements (each work-item a strided share, then a tree in local memory). With G > 1
    it writes partial values and indices (p.outdt < 0) that a second launch reduces.
    `cpu`: each work-item's share is a contiguous run instead (PoCL runs the work-items
    one after another, so interleaved shares read every cache line `ls` times)."""
    a = ACC_OF[t.name]
    share = ("const long per = (k1 - k0 + {ls} - 1) / {ls}; "
             "const long ka = k0 + l * per, kb = min(k1, ka + per);" if cpu else
             "const long ka = k0 + l, kb = k1;").format(ls=ls)
    stride = 1 if cpu else ls
    # a sum over one strided dim, on a CPU: 8 partial sums (one running sum waits out
    # the add's latency at every element: ~1 ns an element)
    acc8 = " ".join(f"s{u} += ({a})({load(t, 'in', f'base + (k + {u}) * st')});"
                    for u in range(8))
    sum_run = ("if (p.ndr == 1) { const long st = p.rst[0]; long k = ka; "
               + " ".join(f"{a} s{u} = 0;" for u in range(8))
               + f" for (; k + 8 <= kb; k += 8) {{ {acc8} }} "
               f"for (; k < kb; k++) s0 += ({a})({load(t, 'in', 'base + k * st')}); "
               "v = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)); break; }"
               if cpu else "")
    sum_rows = sum_run.replace("= ka;", "= 0;").replace("<= kb", "<= p.K").replace(
        "< kb", "< p.K")
    return f"""{_reduce_comb(a)}
__kernel __attribute__((reqd_work_group_size({ls}, 1, 1)))
void reduce(__global uchar* out, __global long* out_idx, __global const {t.store}* in,
            __global const long* in_idx, const RP p) {{
  __local {a} lv[{ls}];
  __local long li[{ls}];
  const long g = get_group_id(0);
  const int l = get_local_id(0);
  const long m = g / p.G, c = g % p.G;
  long base = p.off;
  {{ long r = m; for (int d = (int)p.ndk - 1; d >= 0; d--) {{
      long sz = p.kshape[d]; base += (r % sz) * p.kst[d]; r /= sz; }} }}
  const long k0 = c * p.chunk;
  const long k1 = min(p.K, k0 + p.chunk);
  {a} v = red_init(p.op);
  long vi = LONG_MAX;
  {share}
  /* the op switch sits outside the loops: sum and prod run as plain loops */
#define RED_LOOP(BODY) \
  for (long k = ka; k < kb; k += {stride}) {{ \
    long o = base; \
    if (p.ndr == 1) o += k * p.rst[0]; \
    else {{ long r = k; for (int d = (int)p.ndr - 1; d >= 0; d--) {{ \
        long sz = p.rshape[d]; o += (r % sz) * p.rst[d]; r /= sz; }} }} \
    const {a} w = ({a})({load(t, "in", "o")}); \
    BODY \
  }}
  switch (p.op) {{
    case 0: {sum_run} RED_LOOP(v += w;) break;
    case 1: RED_LOOP(v *= w;) break;
    default: RED_LOOP(comb(p.op, &v, &vi, w, p.haveidx ? in_idx[o] : k);) break;
  }}
#undef RED_LOOP
  lv[l] = v; li[l] = vi;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = {ls} / 2; s > 0; s >>= 1) {{
    if (l < s) {{
      {a} x = lv[l]; long xi = li[l];
      comb(p.op, &x, &xi, lv[l + s], li[l + s]);
      lv[l] = x; li[l] = xi;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  if (l == 0) {{
    if (p.outdt < 0) {{ ((__global {a}*)out)[g] = lv[0]; out_idx[g] = li[0]; }}
    else if (p.op >= 6) ((__global long*)out)[m] = li[0];
    else store_any_{a}(out, m, p.outdt, lv[0]);
  }}
}}
/* the same reduction without local memory or barriers, one output per work-item (the
   elements in ascending order), for CPU devices when there are many outputs: PoCL runs
   the barrier-free loop far faster than a work-group tree per output */
__kernel void reduce_rows(__global uchar* out, __global long* out_idx,
                          __global const {t.store}* in, __global const long* in_idx,
                          const RP p) {{
  const long m = get_global_id(0);
  if (m >= p.M) return;
  long base = p.off;
  {{ long r = m; for (int d = (int)p.ndk - 1; d >= 0; d--) {{
      long sz = p.kshape[d]; base += (r % sz) * p.kst[d]; r /= sz; }} }}
  {a} v = red_init(p.op);
  long vi = LONG_MAX;
#define RED_LOOP(BODY) \
  for (long k = 0; k < p.K; k++) {{ \
    long o = base; \
    if (p.ndr == 1) o += k * p.rst[0]; \
    else {{ long r = k; for (int d = (int)p.ndr - 1; d >= 0; d--) {{ \
        long sz = p.rshape[d]; o += (r % sz) * p.rst[d]; r /= sz; }} }} \
    const {a} w = ({a})({load(t, "in", "o")}); \
    BODY \
  }}
  switch (p.op) {{
    case 0: {sum_rows} RED_LOOP(v += w;) break;
    case 1: RED_LOOP(v *= w;) break;
    default: RED_LOOP(comb(p.op, &v, &vi, w, p.haveidx ? in_idx[o] : k);) break;
  }}
#undef RED_LOOP
  if (p.op >= 6) ((__global long*)out)[m] = vi;
  else store_any_{a}(out, m, p.outdt, v);
}}
"""


def cumsum_source(t: CType, ls: int) -> str:
    """Inclusive scan of each row along one dim: a work-group per row, chunks of LS
    elements scanned in local memory (Hillis-Steele) with a running carry."""
    a = ACC_OF[t.name] if t.kind in "fh" else t.comp
    return f"""
__kernel __attribute__((reqd_work_group_size({ls}, 1, 1)))
void cumsum(__global {t.store}* out, __global const {t.store}* in, const CP p) {{
  __local {a} buf[{ls}];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  long base = p.off;
  {{ long r = row; for (int d = (int)p.nd - 1; d >= 0; d--) {{
      long sz = p.shape[d]; base += (r % sz) * p.st[d]; r /= sz; }} }}
  const long obase = (row / p.inner) * p.L * p.inner + row % p.inner;
  {a} carry = 0;
  for (long j0 = 0; j0 < p.L; j0 += {ls}) {{
    const long j = j0 + l;
    buf[l] = (j < p.L) ? ({a})({load(t, "in", "base + j * p.st_dim")}) : ({a})0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 1; s < {ls}; s <<= 1) {{
      {a} x = (l >= s) ? buf[l - s] : ({a})0;
      barrier(CLK_LOCAL_MEM_FENCE);
      buf[l] += x;
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (j < p.L) {{ {store(t, "out", "obase + j * p.inner", "carry + buf[l]")} }}
    carry += buf[{ls} - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
}}
"""


def topk_source(t: CType, ls: int) -> str:
    """The indices of the k largest (smallest) of each row along one dim, in order: a
    work-group per row, each work-item ranks its elements by counting those that come
    before them (larger, or equal at a lower index; NaN is larger than any number) and
    writes the index at its rank when that is below k. O(L^2 / ls) a row: for the small k
    and rows of models, not for sorting long rows."""
    a = ACC_OF[t.name] if t.kind in "fh" else t.comp
    nan = """const int vn = isnan(v), wn = isnan(w);
  if (vn || wn) return (vn && wn) ? j < i : (largest ? vn : wn);""" if t.kind in "fh" else ""
    return f"""
inline int topk_before_{t.name}({a} v, long j, {a} w, long i, long largest) {{
  {nan}
  if (v == w) return j < i;
  return largest ? v > w : v < w;
}}
__kernel __attribute__((reqd_work_group_size({ls}, 1, 1)))
void topk(__global long* out, __global const {t.store}* in, const KP p) {{
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  long base = p.off;
  {{ long r = row; for (int d = (int)p.nd - 1; d >= 0; d--) {{
      long sz = p.shape[d]; base += (r % sz) * p.st[d]; r /= sz; }} }}
  const long obase = (row / p.inner) * p.k * p.inner + row % p.inner;
  for (long i = l; i < p.L; i += {ls}) {{
    const {a} w = ({a})({load(t, "in", "base + i * p.st_dim")});
    long rank = 0;
    for (long j = 0; j < p.L && rank < p.k; j++) {{
      const {a} v = ({a})({load(t, "in", "base + j * p.st_dim")});
      rank += topk_before_{t.name}(v, j, w, i, p.largest);
    }}
    if (rank < p.k) out[obase + rank * p.inner] = i;
  }}
}}
"""


# -- matmul ---------------------------------------------------------------------------------

def matmul_acc(t: CType) -> str:
    if t.kind in "fh":
        return ACC_OF[t.name]
    return "ulong" if t.size == 8 else "uint"  # integers wrap, as NumPy's do


def matmul_source(t: CType) -> str:
    """C = A @ B (+ bias) for a batch of matrices: 64x64 output tiles per 16x16
    work-group, each work-item a 4x4 block; A and B read through any strides, tiles of
    16 along K staged in local memory. Batch dims are broadcast by zero strides."""
    a = matmul_acc(t)
    ld_a = load(t, "A", "ao + gr * p.ars + gk * p.acs")
    ld_b = load(t, "B", "bo + gk2 * p.brs + gc * p.bcs")
    ld_bias = load(t, "bias", "p.biasoff + (p.hasbias == 2 ? row : col) * p.biasst")
    return f"""
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void matmul(__global {t.store}* C, __global const {t.store}* A,
            __global const {t.store}* B, __global const {t.store}* bias, const MP p) {{
  __local {a} As[16][65];
  __local {a} Bs[16][65];
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int tid = ty * 16 + tx;
  const long col0 = (long)get_group_id(0) * 64, row0 = (long)get_group_id(1) * 64;
  const long batch = get_group_id(2);
  long ao = p.aoff, bo = p.boff;
  {{ long r = batch; for (int d = (int)p.nb - 1; d >= 0; d--) {{
      long sz = p.bshape[d]; long c = r % sz; r /= sz;
      ao += c * p.bast[d]; bo += c * p.bbst[d]; }} }}
  {a} acc[4][4];
  for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) acc[i][j] = 0;
  for (long k0 = 0; k0 < p.K; k0 += 16) {{
    for (int t = 0; t < 4; t++) {{
      const int e = tid + t * 256;
      const int mm = e / 16, kk = e % 16;
      const long gr = row0 + mm, gk = k0 + kk;
      As[kk][mm] = (gr < p.M && gk < p.K) ? ({a})({ld_a}) : ({a})0;
      const int kb = e / 64, nn = e % 64;
      const long gk2 = k0 + kb, gc = col0 + nn;
      Bs[kb][nn] = (gk2 < p.K && gc < p.N) ? ({a})({ld_b}) : ({a})0;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < 16; kk++) {{
      {a} av[4], bv[4];
      for (int i = 0; i < 4; i++) av[i] = As[kk][ty + 16 * i];
      for (int j = 0; j < 4; j++) bv[j] = Bs[kk][tx + 16 * j];
      for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) acc[i][j] += av[i] * bv[j];
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  const long cbase = batch * p.M * p.N;
  for (int i = 0; i < 4; i++) {{
    const long row = row0 + ty + 16 * i;
    if (row >= p.M) continue;
    for (int j = 0; j < 4; j++) {{
      const long col = col0 + tx + 16 * j;
      if (col >= p.N) continue;
      {a} v = acc[i][j];
      if (p.hasbias) v += ({a})({ld_bias});
      {store(t, "C", "cbase + row * p.N + col", "v")}
    }}
  }}
}}
"""


def matmul_rows_source(t: CType) -> str:
    """C = A @ B (+ bias) without local memory, for CPU devices: each work-item computes
    4 adjacent outputs of one row, reading A and B through their strides (a CPU's caches
    do what the tiles do on a GPU, and PoCL runs barrier-free work-groups far faster)."""
    a = matmul_acc(t)
    ld_a = load(t, "A", "arow + k * p.acs")
    ld_b = [load(t, "B", f"brow + (j0 + {j}) * p.bcs") for j in range(4)]
    ld_bias = load(t, "bias", "p.biasoff + (p.hasbias == 2 ? row : j) * p.biasst")
    return f"""
__kernel void matmul_rows(__global {t.store}* C, __global const {t.store}* A,
                          __global const {t.store}* B, __global const {t.store}* bias,
                          const MP p) {{
  const long j0 = (long)get_global_id(0) * 4, row = get_global_id(1);
  const long batch = get_global_id(2);
  if (row >= p.M || j0 >= p.N) return;
  long ao = p.aoff, bo = p.boff;
  {{ long r = batch; for (int d = (int)p.nb - 1; d >= 0; d--) {{
      long sz = p.bshape[d]; long c = r % sz; r /= sz;
      ao += c * p.bast[d]; bo += c * p.bbst[d]; }} }}
  const long arow0 = ao + row * p.ars;
  {a} acc[4] = {{0, 0, 0, 0}};
  if (j0 + 3 < p.N) {{
    for (long k = 0; k < p.K; k++) {{
      const long arow = arow0, brow = bo + k * p.brs;
      const {a} av = ({a})({ld_a.replace("arow + k", "arow0 + k")});
      acc[0] += av * ({a})({ld_b[0]}); acc[1] += av * ({a})({ld_b[1]});
      acc[2] += av * ({a})({ld_b[2]}); acc[3] += av * ({a})({ld_b[3]});
    }}
  }} else {{
    for (long k = 0; k < p.K; k++) {{
      const long brow = bo + k * p.brs;
      const {a} av = ({a})({ld_a.replace("arow + k", "arow0 + k")});
      for (int q = 0; q < 4 && j0 + q < p.N; q++)
        acc[q] += av * ({a})({load(t, "B", "brow + (j0 + q) * p.bcs")});
    }}
  }}
  const long cbase = batch * p.M * p.N + row * p.N;
  for (int q = 0; q < 4 && j0 + q < p.N; q++) {{
    const long j = j0 + q;
    {a} v = acc[q];
    if (p.hasbias) v += ({a})({ld_bias});
    {store(t, "C", "cbase + j", "v")}
  }}
}}
"""


# the register tile of the packed matmul per accumulator type: MR rows x NR columns, the
# columns as NR / VW vectors of VW lanes (VW * size = 32 bytes, one AVX2 register). 6x16
# floats are 12 accumulator registers + 2 of B + 1 broadcast of A: 15 of AVX2's 16.
PACKED_TILE = {"float": (6, 16, 8), "double": (6, 8, 4), "uint": (6, 16, 8),
               "ulong": (6, 8, 4)}


def matmul_tile(t: CType) -> tuple[int, int, int]:
    """(MR, NR, VW) of dtype t's packed matmul."""
    return PACKED_TILE[matmul_acc(t)]


def matmul_packed_source(t: CType) -> str:
    """C = A @ B (+ bias) for CPU devices, in two steps. `mm_pack_a` / `mm_pack_b` copy A's
    panels of MR rows and B's panels of NR columns (read through any strides, converted
    to the accumulator type, zero padded at the edges) into tile order: panel-major, then
    k, then the MR (NR) values of that k contiguous. `mm_micro` then gives each
    work-item one MR x NR tile of C held in MR * NR / VW vector registers, and its K loop
    reads both panels contiguously: a broadcast of A and NR / VW vector loads of B per
    row of FMAs (the shape of BLIS's AVX2 micro-kernel), so LLVM emits packed FMAs.

    MQ: the tile counts, and the panels' batch strides in panels (0 where an operand is
    broadcast over the whole batch and packed once). Written with plain operators and
    casts, not fma()/vload: PoCL compiles those builtins as out-of-line calls, which
    spill every accumulator on each use."""
    a = matmul_acc(t)
    mr, nr, vw = matmul_tile(t)
    v = f"{a}{vw}"
    nv = nr // vw
    lda = load(t, "A", "ao + (m0 + r) * p.ars + k * p.acs")
    ldb = load(t, "B", "bo + k * p.brs + (n0 + j) * p.bcs")
    batch_off = """long ao = p.aoff, bo = p.boff;
  { long r = batch; for (int d = (int)p.nb - 1; d >= 0; d--) {
      long sz = p.bshape[d]; long c = r % sz; r /= sz;
      ao += c * p.bast[d]; bo += c * p.bbst[d]; } }"""

    def pack(name: str, side: str, w: int, tiles: str, bound: str, ld: str, x: str) -> str:
        # x: the loop variable across the panel (r: A's rows, j: B's columns)
        first = "m0" if side == "A" else "n0"
        return f"""
__kernel void {name}(__global {a}* dst, __global const {t.store}* {side}, const MP p,
                     const MQ q) {{
  const long tile = get_global_id(0), batch = get_global_id(1);
  if (tile >= q.{tiles}) return;
  {batch_off}
  const long {first} = tile * {w};
  __global {a}* out = dst + (batch * q.{tiles} + tile) * p.K * {w};
  if ({first} + {w} <= p.{bound}) {{
    for (long k = 0; k < p.K; k++)
      for (int {x} = 0; {x} < {w}; {x}++) out[k * {w} + {x}] = ({a})({ld});
  }} else {{
    for (long k = 0; k < p.K; k++)
      for (int {x} = 0; {x} < {w}; {x}++)
        out[k * {w} + {x}] = ({first} + {x} < p.{bound}) ? ({a})({ld}) : ({a})0;
  }}
}}"""

    pa = pack("mm_pack_a", "A", mr, "mtiles", "M", lda, "r")
    pb = pack("mm_pack_b", "B", nr, "ntiles", "N", ldb, "j")
    mac = "{c} += av * b{q};"
    decl = " ".join(f"{v} c{r}_{q} = ({v})(0);" for r in range(mr) for q in range(nv))

    def step(u: int) -> str:
        loads = " ".join(f"const {v} b{q} = ((__global const {v}*)bp)[{u * nv + q}];"
                         for q in range(nv))
        rows = " ".join(f"{{ const {v} av = ({v})(ap[{u * mr + r}]); "
                        + " ".join(mac.format(c=f"c{r}_{q}", q=q) for q in range(nv)) + " }"
                        for r in range(mr))
        return f"{{ {loads}\n        {rows} }}"

    ldbias = load(t, "bias", "p.biasoff + (p.hasbias == 2 ? m0 + R : n0 + j) * p.biasst")
    stores = []
    for r in range(mr):
        bias_r = ldbias.replace("R", str(r))
        for q in range(nv):
            stores.append(
                f"if (m0 + {r} < p.M) {{ const {v} x = c{r}_{q}; "
                f"for (int e = 0; e < {vw}; e++) {{ const long j = {q * vw} + e; "
                f"if (n0 + j < p.N) {{ {a} y = x[e]; if (p.hasbias) y += ({a})({bias_r}); "
                f"{store(t, 'C', f'cb + {r} * p.N + n0 + j', 'y')} }} }} }}")
    stores_s = "\n  ".join(stores)
    # a whole tile inside C: unconditional stores of each vector's lanes, which LLVM's
    # SLP pass merges into vector stores (the checked path above stores lane by lane)
    whole = {0: [], 1: [], 2: []}
    for r in range(mr):
        for q in range(nv):
            for e in range(vw):
                j = q * vw + e
                lane = f"c{r}_{q}.s{e:x}"
                at = f"cb + {r} * p.N + n0 + {j}"
                col_bias = load(t, "bias", f"p.biasoff + (n0 + {j}) * p.biasst")
                row_bias = load(t, "bias", f"p.biasoff + (m0 + {r}) * p.biasst")
                whole[0].append(store(t, "C", at, lane))
                whole[1].append(store(t, "C", at, f"{lane} + ({a})({col_bias})"))
                whole[2].append(store(t, "C", at, f"{lane} + ({a})({row_bias})"))
    whole_s = "\n    ".join(f"{'if' if k == 0 else 'else if'} (p.hasbias == {k}) {{ "
                            + " ".join(whole[k]) + " }" for k in (0, 1, 2))
    return f"""{pa}{pb}
__kernel void mm_micro(__global {t.store}* C, __global const {a}* Ap,
                       __global const {a}* Bp, __global const {t.store}* bias, const MP p,
                       const MQ q) {{
  /* contract a * b + c into one fma here only (the header turns contraction off for
     elementwise kernels, whose results must round as NumPy's do) */
  #pragma OPENCL FP_CONTRACT ON
  const long nt = get_global_id(0), mt = get_global_id(1), batch = get_global_id(2);
  if (nt >= q.ntiles || mt >= q.mtiles) return;
  const long m0 = mt * {mr}, n0 = nt * {nr};
  __global const {a}* ap = Ap + (batch * q.apb + mt) * p.K * {mr};
  __global const {a}* bp = Bp + (batch * q.bpb + nt) * p.K * {nr};
  {decl}
  long k = 0;
  for (; k + 2 <= p.K; k += 2, ap += {2 * mr}, bp += {2 * nr}) {{
      {step(0)}
      {step(1)}
  }}
  if (k < p.K) {{
      {step(0)}
  }}
  const long cb = batch * p.M * p.N + m0 * p.N;
  if (m0 + {mr} <= p.M && n0 + {nr} <= p.N) {{
    {whole_s}
    return;
  }}
  {stores_s}
}}
"""


# -- fused training ops ---------------------------------------------------------------------

def cross_entropy_source(t: CType, ls: int) -> str:
    """Cross entropy of (N, C) logits: a work-group per row computes the softmax (saved
    for backward), the row's loss (0 where the target is ignore_index) and whether it
    counts; and the backward, (probs - onehot) * scale, in one pass."""
    a = ACC_OF[t.name]
    x = load(t, "x", "base + j * p.xs1")
    return f"""
__kernel __attribute__((reqd_work_group_size({ls}, 1, 1)))
void ce_rows(__global {t.store}* probs, __global {t.store}* losses,
             __global {t.store}* validf, __global const {t.store}* x,
             __global const long* target, const CE p, __global int* err) {{
  __local {a} buf[{ls}];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  const long base = p.xoff + row * p.xs0;
  {a} m = -INFINITY;
  for (long j = l; j < p.C; j += {ls}) {{ {a} v = {x}; m = (v > m || isnan(v)) ? v : m; }}
  buf[l] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = {ls} / 2; s > 0; s >>= 1) {{
    if (l < s) {{ {a} o = buf[l + s]; buf[l] = (o > buf[l] || isnan(o)) ? o : buf[l]; }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  m = buf[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  {a} sum = 0;
  for (long j = l; j < p.C; j += {ls}) sum += exp({x} - m);
  buf[l] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = {ls} / 2; s > 0; s >>= 1) {{
    if (l < s) buf[l] += buf[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  sum = buf[0];
  for (long j = l; j < p.C; j += {ls}) {{
    {store(t, "probs", "row * p.C + j", f"exp({x} - m) / sum")}
  }}
  if (l == 0) {{
    const long tg = target[p.toff + row * p.tst];
    const int valid = tg != p.ignore;
    const int inside = tg >= 0 && tg < p.C;
    if (valid && !inside) err[0] = 3;  /* reported at the next sync; the loss is NaN */
    const {a} picked = valid ? (inside ? ({a})({load(t, "x", "base + tg * p.xs1")}) - m
                                       : ({a})NAN) : ({a})0;
    {store(t, "losses", "row", "valid ? log(sum) - picked : 0")}
    {store(t, "validf", "row", "valid")}
  }}
}}
__kernel void ce_backward(__global {t.store}* grad, __global const {t.store}* probs,
                          __global const long* target, __global const {t.store}* g,
                          __global const long* count, const CE p) {{
  const long i = get_global_id(0);
  if (i >= p.N * p.C) return;
  const long row = i / p.C, j = i % p.C;
  const long tg = target[p.toff + row * p.tst];
  {a} v = 0;
  if (tg != p.ignore) {{
    v = ({a})({load(t, "probs", "p.xoff + row * p.xs0 + j * p.xs1")}) - (j == tg ? 1 : 0);
    if (p.mode == 0) v *= ({a})({load(t, "g", "p.goff + row * p.gst")});
    else if (p.mode == 1) v *= ({a})({load(t, "g", "p.goff")});
    else v *= ({a})({load(t, "g", "p.goff")}) / ({a})max(count[0], 1L);
  }}
  {store(t, "grad", "i", "v")}
}}
"""


def sgd_source(t: CType) -> str:
    """SGD's whole update of one parameter in one pass (`_fused_sgd_`): p, its gradient and
    its momentum buffer, contiguous from their offsets, over the elements [i0, i1) of a
    work-item. Flags: 1 maximize, 2 weight decay, 4 momentum, 8 nesterov. The arithmetic
    is the CPU's, operation by operation: g (+ p * wd), buf = m * buf + (1 - d) * g,
    g (+ buf * m) or buf, p + g * (-lr)."""
    c = t.comp
    ld = {x: load(t, x, "i") for x in ("P", "G", "B")}
    return f"""
__kernel void sgd_step(__global {t.store}* P, __global const {t.store}* G,
                       __global {t.store}* B, const SG q, const {c} neglr, const {c} m,
                       const {c} damp1, const {c} wd) {{
  const long i0 = (long)get_global_id(0) * q.cs;
  const long i1 = min(q.n, i0 + q.cs);
  P += q.poff; G += q.goff; B += q.boff;
  if (q.flags == 4) {{  /* plain momentum: one loop LLVM vectorises */
    for (long i = i0; i < i1; i++) {{
      const {c} b = m * ({ld["B"]}) + damp1 * ({ld["G"]});
      {store(t, "B", "i", "b")}
      {store(t, "P", "i", f"({ld['P']}) + b * neglr")}
    }}
    return;
  }}
  for (long i = i0; i < i1; i++) {{
    const {c} p = {ld["P"]};
    {c} g = {ld["G"]};
    if (q.flags & 1) g = -g;
    if (q.flags & 2) g = g + p * wd;
    if (q.flags & 4) {{
      const {c} b = m * ({ld["B"]}) + damp1 * g;
      {store(t, "B", "i", "b")}
      g = (q.flags & 8) ? g + b * m : b;
    }}
    {store(t, "P", "i", "p + g * neglr")}
  }}
}}
"""


def lstm_source(t: CType) -> str:
    """One LSTM step from gate pre-activations (gates i, f, g, o; sigmoid written as
    0.5 * tanh(x / 2) + 0.5, as the CPU does), and its backward, elementwise over (N, H).
    Arrays are 2-D, read through (offset, stride0, stride1) in p.off/s0/s1."""
    a = ACC_OF[t.name]

    def ld(k: int, ptr: str, col: str) -> str:
        return f"({a})({load(t, ptr, f'p.off[{k}] + n * p.s0[{k}] + ({col}) * p.s1[{k}]')})"

    def sig(v: str) -> str:
        return f"(({a})0.5 * tanh(({a})0.5 * ({v})) + ({a})0.5)"

    gate = [f"{ld(0, 'ig', f'{k} * p.H + h')} + {ld(1, 'hg', f'{k} * p.H + h')}"
            for k in range(4)]
    return f"""
__kernel void lstm_cell(__global {t.store}* hy, __global {t.store}* cy,
                        __global {t.store}* gates, __global const {t.store}* ig,
                        __global const {t.store}* hg, __global const {t.store}* cx,
                        const LC p) {{
  const long e = get_global_id(0);
  if (e >= p.N * p.H) return;
  const long n = e / p.H, h = e % p.H;
  const {a} i = {sig(gate[0])}, f = {sig(gate[1])};
  const {a} g = tanh({gate[2]}), o = {sig(gate[3])};
  const {a} c = f * {ld(2, 'cx', 'h')} + i * g;
  {store(t, "gates", "n * 4 * p.H + h", "i")}
  {store(t, "gates", "n * 4 * p.H + p.H + h", "f")}
  {store(t, "gates", "n * 4 * p.H + 2 * p.H + h", "g")}
  {store(t, "gates", "n * 4 * p.H + 3 * p.H + h", "o")}
  {store(t, "cy", "e", "c")}
  {store(t, "hy", "e", "o * tanh(c)")}
}}
__kernel void lstm_cell_backward(__global {t.store}* grad, __global {t.store}* gcx,
                                 __global const {t.store}* ghy,
                                 __global const {t.store}* gcy,
                                 __global const {t.store}* cx, __global const {t.store}* cy,
                                 __global const {t.store}* gates, const LC p) {{
  const long e = get_global_id(0);
  if (e >= p.N * p.H) return;
  const long n = e / p.H, h = e % p.H;
  const {a} i = {ld(4, 'gates', 'h')}, f = {ld(4, 'gates', 'p.H + h')};
  const {a} g = {ld(4, 'gates', '2 * p.H + h')}, o = {ld(4, 'gates', '3 * p.H + h')};
  const {a} gh = {ld(0, 'ghy', 'h')};
  const {a} tc = tanh({ld(3, 'cy', 'h')});
  {a} gc = (({a})1 - tc * tc) * o * gh;
  if (p.hasgcy) gc += {ld(1, 'gcy', 'h')};
  const long r = n * 4 * p.H;
  {store(t, "grad", "r + h", f"(({a})1 - i) * i * g * gc")}
  {store(t, "grad", "r + p.H + h", f"(({a})1 - f) * f * {ld(2, 'cx', 'h')} * gc")}
  {store(t, "grad", "r + 2 * p.H + h", f"(({a})1 - g * g) * i * gc")}
  {store(t, "grad", "r + 3 * p.H + h", f"(({a})1 - o) * o * tc * gh")}
  {store(t, "gcx", "e", "gc * f")}
}}
"""


# -- nonzero --------------------------------------------------------------------------------

def nonzero_source(ls: int) -> str:
    """Two passes over a bool tensor: `nz_count` counts each group's chunk, the host
    turns the counts into offsets, `nz_write` writes the coordinates in order."""
    offset = """long o = p.off; { long r = j; for (int d = (int)p.nd - 1; d >= 0; d--) {
        long sz = p.shape[d]; o += (r % sz) * p.st[d]; r /= sz; } }"""
    return f"""
__kernel __attribute__((reqd_work_group_size({ls}, 1, 1)))
void nz_count(__global long* counts, __global const uchar* in, const NZ p) {{
  __local long sc[{ls}];
  const long g = get_group_id(0); const int l = get_local_id(0);
  const long end = min(p.n, (g + 1) * p.chunk);
  long cnt = 0;
  for (long j = g * p.chunk + l; j < end; j += {ls}) {{
    {offset}
    cnt += in[o] != 0;
  }}
  sc[l] = cnt;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = {ls} / 2; s > 0; s >>= 1) {{
    if (l < s) sc[l] += sc[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  if (l == 0) counts[g] = sc[0];
}}
__kernel __attribute__((reqd_work_group_size({ls}, 1, 1)))
void nz_write(__global long* out, __global const uchar* in, __global const long* starts,
              const NZ p) {{
  __local long sc[{ls}];
  const long g = get_group_id(0); const int l = get_local_id(0);
  const long end = min(p.n, (g + 1) * p.chunk);
  long pos = starts[g];
  for (long j0 = g * p.chunk; j0 < end; j0 += {ls}) {{
    const long j = j0 + l;
    int flag = 0;
    if (j < end) {{ {offset} flag = in[o] != 0; }}
    sc[l] = flag;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 1; s < {ls}; s <<= 1) {{
      long x = (l >= s) ? sc[l - s] : 0;
      barrier(CLK_LOCAL_MEM_FENCE);
      sc[l] += x;
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (flag) {{
      long dst = (pos + sc[l] - 1) * p.nd;
      long r = j;
      for (int d = (int)p.nd - 1; d >= 0; d--) {{
        long sz = p.shape[d]; out[dst + d] = r % sz; r /= sz; }}
    }}
    pos += sc[{ls} - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
}}
"""


# -- random numbers -------------------------------------------------------------------------

PHILOX = r"""
/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) */
inline uint4 philox(uint4 c, uint2 k) {
  for (int round = 0; round < 10; round++) {
    if (round) { k.x += 0x9E3779B9u; k.y += 0xBB67AE85u; }
    uint hi0 = mul_hi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    uint hi1 = mul_hi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
  }
  return c;
}
inline uint4 philox_at(ulong key, ulong ctr) {
  return philox((uint4)((uint)ctr, (uint)(ctr >> 32), 0u, 0u),
                (uint2)((uint)key, (uint)(key >> 32)));
}
"""

RNG_MODES = {"uniform": 0, "uniform_half": 1, "uniform_bf16": 2, "uniform_double": 3,
             "normal": 4, "normal_double": 5, "randint": 6}
RNG_PER_CTR = {0: 4, 1: 4, 2: 4, 3: 2, 4: 4, 5: 2, 6: 2}  # outputs per 128-bit block


def rng_source(fp64: bool) -> str:
    """Counter-based random numbers: work-item i uses Philox block (p.ctr + i) under the
    seed and writes RNG_PER_CTR[mode] outputs, converted to dtype p.dt."""
    dbl = ""
    if fp64:
        dbl = r"""
    case 3: case 5: {
      double u[2];
      for (int h = 0; h < 2; h++) {
        uint x = h ? r.z : r.x, y = h ? r.w : r.y;
        u[h] = ((double)(x >> 5) * 67108864.0 + (double)(y >> 6)) * (1.0 / 9007199254740992.0);
      }
      if (p.mode == 3) {
        for (int h = 0; h < 2; h++) if (base + h < p.n) store_any_double(out, base + h, p.dt, u[h]);
      } else {
        double rad = sqrt(-2.0 * log(1.0 - u[0])), th = 6.283185307179586 * u[1];
        if (base < p.n) store_any_double(out, base, p.dt, rad * cos(th));
        if (base + 1 < p.n) store_any_double(out, base + 1, p.dt, rad * sin(th));
      }
    } break;"""
    return f"""{PHILOX}
__kernel void rng(__global uchar* out, const RG p) {{
  const long i = get_global_id(0);
  const uint4 r = philox_at(p.key, p.ctr + (ulong)i);
  const uint w[4] = {{r.x, r.y, r.z, r.w}};
  const long per = (p.mode == 3 || p.mode == 5 || p.mode == 6) ? 2 : 4;
  const long base = i * per;
  switch (p.mode) {{
    case 0: case 1: case 2: {{
      const int sh = p.mode == 0 ? 8 : (p.mode == 1 ? 21 : 24);
      const float sc = p.mode == 0 ? 5.9604644775390625e-8f :
                       (p.mode == 1 ? 4.8828125e-4f : 3.90625e-3f);
      for (int h = 0; h < 4; h++)
        if (base + h < p.n) store_any_float(out, base + h, p.dt, (float)(w[h] >> sh) * sc);
    }} break;
    case 4: {{
      for (int h = 0; h < 2; h++) {{
        float u1 = (float)((w[2 * h] >> 8) + 1u) * 5.9604644775390625e-8f;
        float u2 = (float)(w[2 * h + 1] >> 8) * 5.9604644775390625e-8f;
        float rad = sqrt(-2.0f * log(u1)), th = 6.2831853071795865f * u2;
        if (base + 2 * h < p.n) store_any_float(out, base + 2 * h, p.dt, rad * cos(th));
        if (base + 2 * h + 1 < p.n) store_any_float(out, base + 2 * h + 1, p.dt, rad * sin(th));
      }}
    }} break;{dbl}
    case 6: {{
      for (int h = 0; h < 2; h++) {{
        ulong x = ((ulong)w[2 * h + 1] << 32) | (ulong)w[2 * h];
        /* range 0 stands for 2**64: every 64-bit value */
        if (base + h < p.n)
          store_any_long(out, base + h, p.dt, p.lo + (long)(p.range ? x % p.range : x));
      }}
    }} break;
  }}
}}
__kernel void perm_keys(__global ulong* keys, __global long* idx, const RG p) {{
  const long i = get_global_id(0);
  const uint4 r = philox_at(p.key, p.ctr + (ulong)i);
  keys[i] = (i < p.n) ? (((ulong)r.y << 32) | (ulong)r.x) : ULONG_MAX;
  idx[i] = i;
}}
__kernel void bitonic(__global ulong* keys, __global long* idx, const long j, const long k) {{
  const long i = get_global_id(0);
  const long l = i ^ j;
  if (l > i) {{
    ulong ki = keys[i], kl = keys[l];
    long ii = idx[i], il = idx[l];
    int gt = (ki > kl) || (ki == kl && ii > il);
    if (((i & k) == 0) ? gt : !gt) {{ keys[i] = kl; keys[l] = ki; idx[i] = il; idx[l] = ii; }}
  }}
}}
"""


# -- fused softmax --------------------------------------------------------------------------

def softmax_source(t: CType, ls: int) -> str:
    """softmax / log_softmax along one dim, a work-group per row: the max, the sum of
    exp(x - max), then the outputs (the same formulas as core's decomposition)."""
    a = ACC_OF[t.name]
    x = load(t, "in", "base + j * p.st_dim")
    return f"""
__kernel __attribute__((reqd_work_group_size({ls}, 1, 1)))
void softmax(__global {t.store}* out, __global const {t.store}* in, const SP p) {{
  __local {a} buf[{ls}];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  long base = p.off;
  {{ long r = row; for (int d = (int)p.nd - 1; d >= 0; d--) {{
      long sz = p.shape[d]; base += (r % sz) * p.st[d]; r /= sz; }} }}
  const long obase = (row / p.inner) * p.L * p.inner + row % p.inner;
  {a} m = -INFINITY;
  for (long j = l; j < p.L; j += {ls}) {{ {a} v = {x}; m = (v > m || isnan(v)) ? v : m; }}
  buf[l] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = {ls} / 2; s > 0; s >>= 1) {{
    if (l < s) {{ {a} o = buf[l + s]; buf[l] = (o > buf[l] || isnan(o)) ? o : buf[l]; }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  m = buf[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  {a} sum = 0;
  for (long j = l; j < p.L; j += {ls}) sum += exp({x} - m);
  buf[l] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = {ls} / 2; s > 0; s >>= 1) {{
    if (l < s) buf[l] += buf[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  sum = buf[0];
  const {a} lse = log(sum);
  for (long j = l; j < p.L; j += {ls}) {{
    {a} v = {x} - m;
    {store(t, "out", "obase + j * p.inner", "p.log ? v - lse : exp(v) / sum")}
  }}
}}
"""


def arange_source(fp64: bool) -> str:
    """start + i * step: in long for integral start/step (exact, as NumPy's integer
    arange), else in double (float without cl_khr_fp64), then stored as p.dt."""
    f = "double" if fp64 else "float"
    return f"""
__kernel void arange_l(__global uchar* out, const AL p) {{
  const long i = get_global_id(0);
  if (i < p.n) store_any_long(out, i, p.dt, p.start + i * p.step);
}}
__kernel void arange_f(__global uchar* out, const AF p) {{
  const long i = get_global_id(0);
  if (i < p.n) store_any_{f}(out, i, p.dt, p.start + ({f})i * p.step);
}}
"""


# -- programs: kernels bundled so that a device compiles few programs ----------------------

def dtype_program(t: CType, fp64: bool, atomics64: bool, maxd: int, ls: int,
                  cpu: bool = False) -> str:
    """Every kernel whose C types depend on dtype `t`: elementwise families, cast from
    t, reductions, cumsum, topk, matmul, softmax and the atomic scatters (the latter only where
    the device has the atomics t needs)."""
    parts = [header(fp64, atomics64), structs(maxd, fp64)]
    acc = ACC_OF[t.name]
    parts.append(store_any_function(f"store_any_{acc}", acc, fp64))
    parts += [unary_source(t, maxd), pred_source(t, maxd), binary_source(t, maxd),
              compare_source(t, maxd), where_source(t, maxd), cast_source(t, fp64, maxd),
              ternary_source(t, maxd),
              reduce_source(t, ls, cpu), cumsum_source(t, ls), topk_source(t, ls),
              matmul_source(t),
              matmul_rows_source(t), matmul_packed_source(t), col2im_source(t),
              col2im_rows_source(t), max_pool_source(t)]
    if t.kind in "fh":
        parts += [softmax_source(t, ls), cross_entropy_source(t, ls), lstm_source(t),
                  sgd_source(t)]
    if t.size < 8 or atomics64:
        parts += [atomic_add_function(t), put_add_source(t), scatter_add_source(t),
                  *scatter_reduce_sources(t)]
    return "\n".join(parts)


def im2col_source(itemsize: int) -> str:
    """Sliding blocks of an (N, C, *size) input as (N, C * prod(ks), prod(outs)); positions
    in the padding read 0."""
    u = ITEM_TYPES[itemsize]
    return f"""
__kernel void im2col(__global {u}* out, __global const {u}* x, const IM p) {{
  const long i = get_global_id(0);
  if (i >= p.n) return;
  long l = i % p.L, r = i / p.L;
  long kk = r % p.K; r /= p.K;
  long c = r % p.C, nb = r / p.C;
  long o = p.xoff + nb * p.xs0 + c * p.xs1;
  int inside = 1;
  for (int d = (int)p.nsp - 1; d >= 0; d--) {{
    long od = l % p.outs[d]; l /= p.outs[d];
    long kd = kk % p.ks[d]; kk /= p.ks[d];
    long pos = od * p.stride[d] - p.pad[d] + kd * p.dil[d];
    if (pos < 0 || pos >= p.size[d]) inside = 0;
    o += pos * p.xst[d];
  }}
  out[i] = inside ? x[o] : ({u})0;
}}
/* the same for CPU devices: a work-item per output row (nb, c, kk), walking the L output
   positions with an odometer instead of divisions (up to 8 spatial dims) */
__kernel void im2col_rows(__global {u}* out, __global const {u}* x, const IM p) {{
  const long row = get_global_id(0);
  if (row >= p.n / p.L) return;
  long kk = row % p.K, r = row / p.K;
  const long c = r % p.C, nb = r / p.C;
  const long o0 = p.xoff + nb * p.xs0 + c * p.xs1;
  long kb[8], od[8];
  for (int d = (int)p.nsp - 1; d >= 0; d--) {{
    kb[d] = (kk % p.ks[d]) * p.dil[d] - p.pad[d]; kk /= p.ks[d]; od[d] = 0; }}
  __global {u}* dst = out + row * p.L;
  for (long l = 0; l < p.L; l++) {{
    long o = o0; int inside = 1;
    for (int d = 0; d < (int)p.nsp; d++) {{
      const long pos = od[d] * p.stride[d] + kb[d];
      inside &= (pos >= 0) & (pos < p.size[d]);
      o += pos * p.xst[d];
    }}
    dst[l] = inside ? x[o] : ({u})0;
    for (int d = (int)p.nsp - 1; d >= 0; d--) {{ if (++od[d] < p.outs[d]) break; od[d] = 0; }}
  }}
}}
/* im2col in the layout (C * K, N * L) that the convolution's single GEMM takes (row
   (c, kk), column (nb, l)): a work-item per run of p.xs2 columns of one row (a whole
   (row, nb) block of L on a CPU, one element on a GPU) */
__kernel void im2col_cn(__global {u}* out, __global const {u}* x, const IM p) {{
  const long i0 = (long)get_global_id(0) * p.xs2;
  if (i0 >= p.n) return;
  const long i1 = min(p.n, i0 + p.xs2);
  const long NL = p.n / (p.C * p.K), N = NL / p.L;
  long ck = i0 / NL, col = i0 % NL;
  long nb = col / p.L, l = col % p.L;
  long kb[8], od[8], o0 = 0;
  for (long i = i0; i < i1; ) {{
    {{ long kk = ck % p.K, r = l;
      o0 = p.xoff + nb * p.xs0 + (ck / p.K) * p.xs1;
      for (int d = (int)p.nsp - 1; d >= 0; d--) {{
        kb[d] = (kk % p.ks[d]) * p.dil[d] - p.pad[d]; kk /= p.ks[d];
        od[d] = r % p.outs[d]; r /= p.outs[d]; }} }}
    /* the rest of this (row, nb) block: an odometer over the output positions */
    const long stop = min(i1, i + (p.L - l));
    for (; i < stop; i++) {{
      long o = o0; int inside = 1;
      for (int d = 0; d < (int)p.nsp; d++) {{
        const long pos = od[d] * p.stride[d] + kb[d];
        inside &= (pos >= 0) & (pos < p.size[d]);
        o += pos * p.xst[d];
      }}
      out[i] = inside ? x[o] : ({u})0;
      for (int d = (int)p.nsp - 1; d >= 0; d--) {{ if (++od[d] < p.outs[d]) break; od[d] = 0; }}
    }}
    l = 0;
    if (++nb == N) {{ nb = 0; ck++; }}
  }}
}}
/* im2col_cn for CPU devices: a work-item per (row, sample) block of L columns, the last
   spatial dim an inner loop whose in-bounds range is computed once (no per-element tests) */
__kernel void im2col_cn_rows(__global {u}* out, __global const {u}* x, const IM p) {{
  const long blk = get_global_id(0);
  const long N = p.n / (p.C * p.K * p.L);
  if (blk >= p.C * p.K * N) return;
  const long ck = blk / N, nb = blk % N;
  long kk = ck % p.K;
  const long o0 = p.xoff + nb * p.xs0 + (ck / p.K) * p.xs1;
  long kb[8], od[8];
  for (int d = (int)p.nsp - 1; d >= 0; d--) {{
    kb[d] = (kk % p.ks[d]) * p.dil[d] - p.pad[d]; kk /= p.ks[d]; od[d] = 0; }}
  const int last = (int)p.nsp - 1;
  const long S = p.stride[last], kl = kb[last], W = p.outs[last];
  const long xl = p.xst[last], step = S * xl;
  long lo = kl >= 0 ? 0 : (-kl + S - 1) / S;
  long hi = p.size[last] - kl > 0 ? (p.size[last] - kl + S - 1) / S : 0;
  hi = min(hi, W); lo = min(lo, hi);
  __global {u}* dst = out + blk * p.L;
  for (long rows = p.L / W; rows > 0; rows--, dst += W) {{
    long o = o0 + kl * xl; int inside = 1;
    for (int d = 0; d < last; d++) {{
      const long pos = od[d] * p.stride[d] + kb[d];
      inside &= (pos >= 0) & (pos < p.size[d]);
      o += pos * p.xst[d];
    }}
    if (inside) {{
      long w = 0;
      for (; w < lo; w++) dst[w] = 0;
      __global const {u}* src = x + o;
      for (; w < hi; w++) dst[w] = src[w * step];
      for (; w < W; w++) dst[w] = 0;
    }} else {{
      for (long w = 0; w < W; w++) dst[w] = 0;
    }}
    for (int d = last - 1; d >= 0; d--) {{ if (++od[d] < p.outs[d]) break; od[d] = 0; }}
  }}
}}
"""


def col2im_source(t: CType) -> str:
    """The adjoint of im2col: each output element sums the columns that read it (a
    gather over kernel offsets, in ascending order: deterministic, no atomics)."""
    a = ACC_OF[t.name] if t.kind in "fh" else t.comp
    xi = "p.xoff + nb * p.xs0 + (c * p.K + kk) * p.xs1 + l * p.xs2"
    return f"""
__kernel void col2im(__global {t.store}* out, __global const {t.store}* x, const IM p) {{
  const long i = get_global_id(0);
  if (i >= p.n) return;
  long sp = 1;
  for (int d = 0; d < (int)p.nsp; d++) sp *= p.size[d];
  const long s = i % sp, nc = i / sp;
  const long c = nc % p.C, nb = nc / p.C;
  {a} acc = 0;
  for (long kk = 0; kk < p.K; kk++) {{
    long rem_k = kk, rem_s = s, l = 0, lmul = 1;
    int ok = 1;
    for (int d = (int)p.nsp - 1; d >= 0; d--) {{
      long kd = rem_k % p.ks[d]; rem_k /= p.ks[d];
      long pd = rem_s % p.size[d]; rem_s /= p.size[d];
      long tpos = pd + p.pad[d] - kd * p.dil[d];
      if (tpos < 0 || tpos % p.stride[d] != 0 || tpos / p.stride[d] >= p.outs[d]) ok = 0;
      l += (ok ? tpos / p.stride[d] : 0) * lmul;
      lmul *= p.outs[d];
    }}
    if (ok) acc += ({a})({load(t, "x", xi)});
  }}
  {store(t, "out", "i", "acc")}
}}
"""


def col2im_rows_source(t: CType) -> str:
    """col2im for CPU devices and dtypes computed in their storage type: a work-item per
    (nb, c) plane adds the columns into it, kernel offsets in ascending order (each
    element sums its terms in the same order as col2im's gather: the same results); the
    last spatial dim is an inner loop over its in-bounds range, computed once per row."""
    if t.kind in "hb":  # 16-bit floats accumulate in float, bool in int: col2im only
        return ""
    return f"""
__kernel void col2im_rows(__global {t.store}* out, __global const {t.store}* x,
                          const IM p) {{
  const long nc = get_global_id(0);
  long sp = 1;
  for (int d = 0; d < (int)p.nsp; d++) sp *= p.size[d];
  if (nc >= p.n / sp) return;
  const long c = nc % p.C, nb = nc / p.C;
  __global {t.store}* dst = out + nc * sp;
  for (long s = 0; s < sp; s++) dst[s] = 0;
  const int last = (int)p.nsp - 1;
  const long S = p.stride[last], W = p.outs[last];
  for (long kk = 0; kk < p.K; kk++) {{
    long kb[8], od[8];
    {{ long rk = kk; for (int d = (int)p.nsp - 1; d >= 0; d--) {{
        kb[d] = (rk % p.ks[d]) * p.dil[d] - p.pad[d]; rk /= p.ks[d]; od[d] = 0; }} }}
    const long kl = kb[last];
    long lo = kl >= 0 ? 0 : (-kl + S - 1) / S;
    long hi = p.size[last] - kl > 0 ? (p.size[last] - kl + S - 1) / S : 0;
    hi = min(hi, W); lo = min(lo, hi);
    __global const {t.store}* src = x + p.xoff + nb * p.xs0 + (c * p.K + kk) * p.xs1;
    for (long l = 0; l < p.L; l += W, src += W * p.xs2) {{
      long s = 0; int inside = 1;
      for (int d = 0; d < last; d++) {{
        const long pos = od[d] * p.stride[d] + kb[d];
        inside &= (pos >= 0) & (pos < p.size[d]);
        s = s * p.size[d] + pos;
      }}
      if (inside) {{
        __global {t.store}* row = dst + s * p.size[last] + kl;
        for (long w = lo; w < hi; w++) row[w * S] += src[w * p.xs2];
      }}
      for (int d = last - 1; d >= 0; d--) {{ if (++od[d] < p.outs[d]) break; od[d] = 0; }}
    }}
  }}
}}
"""


def _odometer(var: str, bound: str, nsp: int, carry: str) -> str:
    """C code stepping the unrolled counters var0..var{nsp-1} (row-major, each below
    bound[d]) to the next position; `carry` runs when the last one wraps around."""
    code = carry
    for d in range(nsp):
        code = f"if (++{var}{d} == p.{bound}[{d}]) {{ {var}{d} = 0; {code} }}"
    return code


def max_pool_source(t: CType) -> str:
    """Max pooling over 1 to 3 spatial dims (struct PL), the loops over dims unrolled per
    dim count (kernels named ..._1, _2, _3). `max_pool_fw_`: a work-item per run of p.cs
    outputs writes each window's maximum and its window-local index (row-major over the
    kernel offsets; the first maximum, a NaN beating any number and the first NaN kept,
    as NumPy's argmax; positions in the padding are skipped, as PyTorch does).
    `max_pool_bw_scatter_` adds each output's gradient to the input element it chose, a
    work-item per run of outputs, into a zeroed gradient: race-free only where windows
    never overlap (the host checks). `max_pool_bw_gather_`, for overlapping windows: a
    work-item per run of input elements sums the outputs that chose it, kernel offsets in
    ascending order (deterministic, no atomics)."""
    return "\n".join([*(_max_pool_kernels(t, nsp) for nsp in (1, 2, 3)),
                      *(_max_pool_window(t, kh, kw) for kh, kw in POOL_WINDOWS)])


# 2-d windows with a kernel of their own (the usual CNN pools), for windows wholly inside
# the input (no padding, dilation 1): the window unrolled, no bounds checks
POOL_WINDOWS = ((2, 2), (3, 3))


def _max_pool_window(t: CType, kh: int, kw: int) -> str:
    """`max_pool2d_{kh}x{kw}`: a work-item per output row (n, c, oh), each window's
    kh * kw loads unrolled, keeping the generic kernel's choice (the first maximum; a NaN
    beats any number and a later NaN the earlier one, as in PyTorch's CPU kernel). The
    generic kernel (bounds-checked loops over the window, a branch per load) took ~20 ns
    an output on PoCL."""
    a = ACC_OF[t.name] if t.kind in "fh" else t.comp
    floaty = t.kind in "fh"
    # selects, not branches (on random data a branch per load mispredicts half the
    # time), and NaN tests as x != x (PoCL calls an out-of-line isnan)
    better = "(v > best || v != v)" if floaty else "v > best"
    steps = []
    for k0 in range(kh):
        for k1 in range(kw):
            at = f"r + {k0} * p.xst[0] + {k1} * p.xst[1]"
            if k0 == 0 and k1 == 0:
                steps.append(f"{a} best = ({a})({load(t, 'x', at)}); long bi = 0;")
            else:
                steps.append(f"{{ const {a} v = ({a})({load(t, 'x', at)}); "
                             f"const int take = {better}; best = take ? v : best; "
                             f"bi = take ? {k0 * kw + k1} : bi; }}")
    body = "\n      ".join(steps)
    return f"""
__kernel void max_pool2d_{kh}x{kw}(__global {t.store}* out, __global long* oidx,
                                 __global const {t.store}* x, const PL p) {{
  const long row = get_global_id(0);
  const long W = p.outs[1];
  if (row * W >= p.n) return;
  const long oh = row % p.outs[0], nc = row / p.outs[0];
  const long c = nc % p.C, nb = nc / p.C;
  const long r0 = p.xoff + nb * p.xs0 + c * p.xs1 + oh * p.stride[0] * p.xst[0];
  for (long ow = 0; ow < W; ow++) {{
      const long r = r0 + ow * p.stride[1] * p.xst[1];
      {body}
      {store(t, "out", "row * W + ow", "best")}
      oidx[row * W + ow] = bi;
  }}
}}
/* its backward into a zeroed gradient, for disjoint windows (as max_pool_bw_scatter_2):
   the chosen offset decoded by constant divisors (the generic kernel's 64-bit divisions
   by p.ks cost ~20 ns an output) */
__kernel void max_pool2d_bw_{kh}x{kw}(__global {t.store}* grad, __global const {t.store}* g,
                                    __global const long* idx, const PL p) {{
  const long row = get_global_id(0);
  const long W = p.outs[1];
  if (row * W >= p.n) return;
  const long oh = row % p.outs[0], nc = row / p.outs[0];
  const long Wi = p.size[1];
  const long base = nc * p.sp + oh * p.stride[0] * Wi;
  for (long ow = 0; ow < W; ow++) {{
    const long i = row * W + ow;
    const long kk = idx[i];
    if (kk >= 0 && kk < {kh * kw}) {{
      const long e = base + (kk / {kw}) * Wi + ow * p.stride[1] + kk % {kw};
      const {a} v = ({a})({load(t, "grad", "e")}) + ({a})({load(t, "g", "i")});
      {store(t, "grad", "e", "v")}
    }}
  }}
}}
"""


def _max_pool_kernels(t: CType, nsp: int) -> str:
    a = ACC_OF[t.name] if t.kind in "fh" else t.comp
    floaty = t.kind in "fh"
    better = "(v > best || isnan(v))" if floaty else "v > best"
    dims = range(nsp)
    rev = range(nsp - 1, -1, -1)
    decode_out = " ".join(f"long od{d} = r % p.outs[{d}]; r /= p.outs[{d}];" for d in rev)
    decode_in = " ".join(f"long pd{d} = r % p.size[{d}]; r /= p.size[{d}];" for d in rev)
    # forward: nested loops over the kernel offsets, the padding skipped per dim
    open_fw = ""
    for d in dims:
        prev = f"o{d - 1}" if d else "base"
        open_fw += (f"for (long k{d} = 0; k{d} < p.ks[{d}]; k{d}++) {{ "
                    f"const long q{d} = s{d} + k{d} * p.dil[{d}]; "
                    f"if (q{d} < 0 || q{d} >= p.size[{d}]) continue; "
                    f"const long o{d} = {prev} + q{d} * p.xst[{d}];\n")
    kk = " + ".join(f"k{d} * {'*'.join(f'p.ks[{e}]' for e in range(d + 1, nsp)) or '1'}"
                    for d in dims)
    starts = " ".join(f"const long s{d} = od{d} * p.stride[{d}] - p.pad[{d}];" for d in dims)
    fw = f"""
__kernel void max_pool_fw_{nsp}(__global {t.store}* out, __global long* oidx,
                                __global const {t.store}* x, const PL p) {{
  const long i0 = (long)get_global_id(0) * p.cs;
  if (i0 >= p.n) return;
  const long i1 = min(p.n, i0 + p.cs);
  long r = i0 % p.L, nc = i0 / p.L;
  {decode_out}
  long c = nc % p.C, nb = nc / p.C;
  long base = p.xoff + nb * p.xs0 + c * p.xs1;
  for (long i = i0; i < i1; i++) {{
    {a} best = {"-INFINITY" if floaty else "0"};  /* a window all in the padding: -inf */
    long bi = 0;
    int have = 0;
    {starts}
    {open_fw}
      const {a} v = ({a})({load(t, "x", f"o{nsp - 1}")});
      if (!have || {better}) {{ best = v; bi = {kk}; have = 1; }}
    {"}" * nsp}
    {store(t, "out", "i", "best")}
    oidx[i] = bi;
    {_odometer("od", "outs", nsp, "if (++c == p.C) { c = 0; nb++; } "
               "base = p.xoff + nb * p.xs0 + c * p.xs1;")}
  }}
}}
"""
    # backward by outputs: the chosen offset decoded per dim
    dec_k = " ".join(f"const long k{d} = kk % p.ks[{d}]; kk /= p.ks[{d}];" for d in rev)
    pos = " ".join(f"const long q{d} = od{d} * p.stride[{d}] - p.pad[{d}] + k{d} * p.dil[{d}];"
                   for d in dims)
    inside = " && ".join(f"q{d} >= 0 && q{d} < p.size[{d}]" for d in dims)
    flat = "q0"
    for d in range(1, nsp):
        flat = f"({flat}) * p.size[{d}] + q{d}"
    scatter = f"""
__kernel void max_pool_bw_scatter_{nsp}(__global {t.store}* grad, __global const {t.store}* g,
                                        __global const long* idx, const PL p) {{
  const long i0 = (long)get_global_id(0) * p.cs;
  if (i0 >= p.n) return;
  const long i1 = min(p.n, i0 + p.cs);
  long r = i0 % p.L, nc = i0 / p.L;
  {decode_out}
  for (long i = i0; i < i1; i++) {{
    long kk = idx[i];
    if (kk >= 0 && kk < p.K) {{
      {dec_k}
      {pos}
      if ({inside}) {{
        const long e = nc * p.sp + {flat};
        const {a} v = ({a})({load(t, "grad", "e")}) + ({a})({load(t, "g", "i")});
        {store(t, "grad", "e", "v")}
      }}
    }}
    {_odometer("od", "outs", nsp, "nc++;")}
  }}
}}
"""
    # backward by inputs: the outputs whose window holds this element, offsets ascending
    open_g = ""
    for d in dims:
        prev = f"l{d - 1} * p.outs[{d}]" if d else "0"
        open_g += (f"for (long k{d} = 0; k{d} < p.ks[{d}]; k{d}++) {{ "
                   f"const long t{d} = pd{d} + p.pad[{d}] - k{d} * p.dil[{d}]; "
                   f"if (t{d} < 0) break; const long u{d} = t{d} / p.stride[{d}]; "
                   f"if (u{d} * p.stride[{d}] != t{d} || u{d} >= p.outs[{d}]) continue; "
                   f"const long l{d} = {prev} + u{d};\n")
    gather = f"""
__kernel void max_pool_bw_gather_{nsp}(__global {t.store}* grad, __global const {t.store}* g,
                                       __global const long* idx, const PL p) {{
  const long i0 = (long)get_global_id(0) * p.cs;
  if (i0 >= p.n) return;
  const long i1 = min(p.n, i0 + p.cs);
  long r = i0 % p.sp, nc = i0 / p.sp;
  {decode_in}
  for (long i = i0; i < i1; i++) {{
    {a} acc = 0;
    const long ob = nc * p.L;
    {open_g}
      if (idx[ob + l{nsp - 1}] == {kk}) acc += ({a})({load(t, "g", f"ob + l{nsp - 1}")});
    {"}" * nsp}
    {store(t, "grad", "i", "acc")}
    {_odometer("pd", "size", nsp, "nc++;")}
  }}
}}
"""
    return fw + scatter + gather


def item_program(itemsize: int, maxd: int) -> str:
    """Data movement by element size: strided copy, advanced-index take/put, gather and
    scatter (the same kernels serve every dtype of that size)."""
    return "\n".join([structs(maxd, False), copy_source(itemsize, maxd),
                      take_source(itemsize), gather_source(itemsize),
                      im2col_source(itemsize)])


def misc_program(fp64: bool, maxd: int, ls: int) -> str:
    """nonzero, random numbers and arange."""
    parts = [header(fp64), structs(maxd, fp64)]
    for comp in ("long", "float") + (("double",) if fp64 else ()):
        parts.append(store_any_function(f"store_any_{comp}", comp, fp64))
    parts += [nonzero_source(ls), rng_source(fp64), arange_source(fp64)]
    return "\n".join(parts)
