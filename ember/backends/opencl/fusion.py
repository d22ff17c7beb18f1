"""One generated OpenCL kernel for a chain of elementwise ops (`OpenCLBackend.
fuse_elementwise`, asked by `ember.compile` when it plans a recorded step; see
ember/jit/plan.py and, for the CPU's numba twin, ember/backends/cpu/fusion.py).

A chain of k ops run one by one costs k launches and k - 1 intermediate buffers written
and read back; fused, it is one launch that reads each input once and writes the result
once. The kernel's source is generated from a table of C expressions, one per op, with
the chain's sizes and scalars written in as constants (a plan is made per shape, so a
kernel is specialised to it), and compiled once per device (PoCL keeps the binary in
ember's OpenCL cache across processes).

Each work-item runs over a contiguous run of the result, as the backend's own elementwise
kernels do (one element on a GPU, a long run on a CPU device, `Device.chunk`). The loop
runs over the result's elements in order; an input that is broadcast (a bias over rows, a
conv bias over (N, C, H, W)) is read at the index of the dimensions it has, after the
dimensions that every input has or lacks alike are merged (`ElementwiseChain.loop_dims`).
Inputs that are not contiguous are copied first.

Semantics are the backend's own kernels' (sources.py), with contraction off: the fused
chain rounds as the unfused ops do.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core.backend import ElementwiseChain, float32, float64

MAX_DIMS = 4  # loop nests deeper than this (after merging dims) are not generated

# op -> C expression of its operands {0}, {1}; Z and O are 0 and 1 of the compute type
FORMULAS: dict[str, str] = {
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
    "neg": "(-{0})", "abs": "fabs({0})", "sqrt": "sqrt({0})", "reciprocal": "(O / {0})",
    "rsqrt": "(O / sqrt({0}))", "exp": "exp({0})", "log": "log({0})", "tanh": "tanh({0})",
    # as sources.py: e / (1 + e) with e = exp(-|x|), precise for very negative x
    "sigmoid": "(({0} >= Z ? O : exp({0})) / (O + exp(-fabs({0}))))",
    "relu": "({0} < Z ? Z : {0})",
    "maximum": "(({0} > {1} || isnan({0})) ? {0} : {1})",
    "minimum": "(({0} < {1} || isnan({0})) ? {0} : {1})",
    "relu_backward": "({0} <= Z ? Z : {1})",
    "tanh_backward": "((O - {0} * {0}) * {1})",
    "sigmoid_backward": "((O - {0}) * {0} * {1})",
    "exp_backward": "({1} * {0})",
    "log_backward": "({1} / {0})",
}
FUSIBLE = frozenset(FORMULAS)

_C_TYPES = {float32: ("float", np.float32), float64: ("double", np.float64)}


def _literal(value: float, c_type: str, np_type: type) -> str:
    """A scalar as an exact C constant of the compute type."""
    v = float(np_type(value))
    if math.isnan(v):
        return f"(({c_type})NAN)"
    if math.isinf(v):
        return f"(({c_type})INFINITY)" if v > 0 else f"(-({c_type})INFINITY)"
    return f"(({c_type}){v.hex()}{'f' if c_type == 'float' else ''})"


def _index(pattern: tuple[bool, ...], dims: tuple[int, ...]) -> str:
    """The flat index into an input with `pattern` (which merged dims it has) of the
    result's element `g`."""
    if all(pattern):
        return "g"
    terms = []
    inner = 1  # the input's own stride of dim d: its kept dims after d
    for d in range(len(dims) - 1, -1, -1):
        if pattern[d]:
            after = math.prod(dims[d + 1:])
            digit = f"(g / {after})" if after > 1 else "g"
            if d > 0:
                digit = f"({digit} % {dims[d]})"
            terms.append(digit if inner == 1 else f"{digit} * {inner}")
            inner *= dims[d]
    return " + ".join(terms) or "0"


def source(chain: ElementwiseChain, dims: tuple[int, ...],
           patterns: list[tuple[bool, ...]]) -> str:
    """The OpenCL C program of `chain` (kernel `chain`; see the module doc)."""
    c_type, np_type = _C_TYPES[chain.dtype]
    n_in = len(chain.inputs)
    params = [f"__global {c_type}* out"] + \
        [f"__global const {c_type}* a{i}" for i in range(n_in)] + \
        ["const long off_out"] + [f"const long off{i}" for i in range(n_in)] + \
        ["const long cs"]
    body = [f"    const {c_type} x{i} = a{i}[off{i} + {_index(p, dims)}];"
            for i, p in enumerate(patterns)]
    expressions = chain.expressions(FORMULAS, lambda i: f"x{i}",
                                    lambda _, v: _literal(v, c_type, np_type))
    body += [f"    const {c_type} v{j} = {e};" for j, e in enumerate(expressions)]
    body.append(f"    out[off_out + g] = v{len(chain.ops) - 1};")
    header = "#pragma OPENCL FP_CONTRACT OFF\n"
    if c_type == "double":
        header += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    n = math.prod(chain.shape)
    return (f"{header}#define Z (({c_type})0)\n#define O (({c_type})1)\n"
            f"__kernel void chain({', '.join(params)}) {{\n"
            f"  const long i0 = (long)get_global_id(0) * cs;\n"
            f"  const long i1 = min((long){n}, i0 + cs);\n"
            f"  for (long g = i0; g < i1; g++) {{\n" + "\n".join(body) + "\n  }\n}\n")


def fuse(chain: ElementwiseChain) -> Callable[..., Any] | None:
    """`kernel(*buffers, out=None)` computing `chain` in one launch, or None where it does
    not apply (a dtype other than float32/float64, an op without a formula) or would not
    pay: a single op runs faster as the backend's own kernel, whose contiguous loops PoCL
    vectorises (measured: the benchmark CNN's replay 14.6 -> 16.0 ms with its ReLUs
    generated one by one)."""
    if len(chain.ops) < 2 or chain.dtype not in _C_TYPES or any(
            op not in FORMULAS or d is not chain.dtype for op, _, d in chain.ops):
        return None
    if any(d is not chain.dtype for _, d in chain.inputs):
        return None
    merged = chain.loop_dims()
    if merged is None or len(merged[0]) > MAX_DIMS:
        return None
    numbers = [v for _, operands, _ in chain.ops for kind, v in operands if kind == "scalar"]
    if any(not isinstance(v, (int, float, np.floating)) or isinstance(v, bool)
           for v in numbers):
        return None
    program = source(chain, *merged)
    key = ("fused", hashlib.sha256(program.encode()).hexdigest()[:24])
    return _kernel(program, key, tuple(chain.shape), chain.dtype)


def _kernel(program: str, key: tuple, shape: tuple[int, ...], dtype: Any
            ) -> Callable[..., Any]:
    from ember.backends.opencl import kernels as K  # (pyopencl: loaded with the backend)

    size = math.prod(shape)

    def kernel(*buffers: Any, out: Any = None) -> Any:
        dev = buffers[0].dev
        inputs = [K.contiguous(b) for b in buffers]
        target = out if out is not None and _writable_into(out, shape, dtype, inputs) \
            else K.empty(dev, shape, dtype, "fused")
        if size:
            launch = dev.kernel(key, lambda: program, "chain")
            cs = dev.chunk(size)
            launch.set_args(target.mem, *[b.mem for b in inputs], np.int64(target.offset),
                            *[np.int64(b.offset) for b in inputs], np.int64(cs))
            items = -(-size // cs)
            dev.launch(launch, (-(-items // dev.ls) * dev.ls,), dev.ls_tuple)
        if out is not None and target is not out:
            K._copy_into(out, target)
            return out
        return target
    return kernel


def _writable_into(out: Any, shape: tuple[int, ...], dtype: Any, inputs: list) -> bool:
    """Whether the kernel may write straight into `out`: contiguous, of the result's shape
    and dtype, and sharing memory with no input except one that is the same view (read
    at the index it is written, before the write)."""
    if tuple(out.shape) != shape or out.dtype is not dtype or not out.is_contiguous():
        return False
    return all(b.mem is not out.mem or (b.offset == out.offset and b.shape == out.shape)
               for b in inputs)
