"""One CuPy elementwise kernel for a chain of elementwise ops (`CUDABackend.
fuse_elementwise`, asked by `ember.compile` when it plans a recorded step; see
ember/jit/plan.py, and the CPU's and OpenCL's twins in their backends' fusion.py).

On a GPU a chain of small ops is launch-bound: k ops cost k launches and k - 1
intermediate arrays written and read back through device memory; fused, one launch reads
each input once. The kernel is a `cupy.ElementwiseKernel` whose body is generated from a
table of CUDA C expressions, one per op; CuPy broadcasts the inputs (a bias over rows, a
conv bias over (N, C, H, W)) and caches the compiled kernel on disk. The chain's scalars
are kernel parameters of the compute type, so a learning-rate change does not compile a
new kernel.

Semantics follow the backend's own kernels (xp/elementwise.py, cuda/kernels.py): NaN
propagates through `relu`, `maximum` and `minimum`; `relu_backward` passes the gradient
where the output is not <= 0 (NaN included, as PyTorch's threshold_backward). NVRTC
contracts a * b + c into one fused multiply-add, so a fused chain may differ from the
unfused ops by an ulp of its terms, as PyTorch's fused CUDA kernels do.

This module imports CuPy only when a chain is fused (importing the backend must not).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from ember.core.backend import ElementwiseChain, float32, float64, numpy_dtype

# op -> CUDA C expression of its operands {0}, {1}; Z and O are 0 and 1 of the type T
FORMULAS: dict[str, str] = {
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
    "neg": "(-{0})", "abs": "abs({0})", "sqrt": "sqrt({0})", "reciprocal": "(O / {0})",
    "rsqrt": "(O / sqrt({0}))", "exp": "exp({0})", "log": "log({0})", "tanh": "tanh({0})",
    # as xp/elementwise.py: e / (1 + e) with e = exp(-|x|), precise for very negative x
    "sigmoid": "(({0} >= Z ? O : exp(-abs({0}))) / (exp(-abs({0})) + O))",
    "relu": "(({0} > Z || isnan({0})) ? {0} : Z)",  # maximum(x, 0)
    "maximum": "(({0} > {1} || isnan({0})) ? {0} : {1})",
    "minimum": "(({0} < {1} || isnan({0})) ? {0} : {1})",
    "relu_backward": "({0} <= Z ? Z : {1})",
    "tanh_backward": "((O - {0} * {0}) * {1})",
    "sigmoid_backward": "((O - {0}) * {0} * {1})",
    "exp_backward": "({1} * {0})",
    "log_backward": "({1} / {0})",
}
FUSIBLE = frozenset(FORMULAS)


def body(chain: ElementwiseChain) -> str:
    """The kernel's body over inputs `a0`..., scalars `c0`... and the output `out`."""
    lines = ["const T Z = T(0); const T O = T(1);"]
    expressions = chain.expressions(FORMULAS, lambda i: f"a{i}", lambda k, _: f"c{k}")
    lines += [f"const T v{j} = {e};" for j, e in enumerate(expressions)]
    lines.append(f"out = v{len(chain.ops) - 1};")
    return "\n".join(lines)


def fuse(chain: ElementwiseChain) -> Callable[..., Any] | None:
    """`kernel(*buffers, out=None)` computing `chain` in one launch, or None where it does
    not apply: a dtype other than float32/float64, an op without a formula, a single op
    (the backend's own kernel already is one launch)."""
    if len(chain.ops) < 2 or chain.dtype not in (float32, float64) or any(
            op not in FORMULAS or d is not chain.dtype for op, _, d in chain.ops):
        return None
    if any(d is not chain.dtype for _, d in chain.inputs):
        return None
    numbers = [v for _, operands, _ in chain.ops for kind, v in operands if kind == "scalar"]
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in numbers):
        return None
    import cupy

    code = body(chain)
    params = ", ".join([f"T a{i}" for i in range(len(chain.inputs))] +
                       [f"T c{k}" for k in range(len(numbers))])
    name = "ember_fused_" + hashlib.sha256(code.encode()).hexdigest()[:16]
    elementwise = cupy.ElementwiseKernel(params, "T out", code, name)
    dtype = cupy.dtype(numpy_dtype(chain.dtype))
    scalars = [dtype.type(v) for v in numbers]
    shape = tuple(chain.shape)

    def kernel(*buffers: Any, out: Any = None) -> Any:
        target = out if out is not None and _writable_into(cupy, out, shape, dtype, buffers) \
            else cupy.empty(shape, dtype)
        elementwise(*buffers, *scalars, target)
        if out is not None and target is not out:
            out[...] = target
            return out
        return target
    return kernel


def _writable_into(cupy: Any, out: Any, shape: tuple[int, ...], dtype: Any,
                   buffers: tuple) -> bool:
    """Whether the kernel may write straight into `out`: contiguous, of the result's shape
    and dtype, and overlapping no input except one that is `out` itself."""
    if out.shape != shape or out.dtype != dtype or not out.flags.c_contiguous:
        return False
    return all(b is out or not cupy.may_share_memory(b, out) for b in buffers)
