"""The arithmetic PyTorch's CPU kernels refuse for its "barebones" unsigned dtypes.

PyTorch holds, casts, copies, views, indexes, prints, sums, multiplies, divides and
compares for equality uint16, uint32 and uint64 tensors, but most of its CPU kernels are
not built for them: `x + 1` is NotImplementedError('"add_stub" not implemented for
'UInt16''). Below, the kernel each ember primitive meets there, by the name PyTorch's
message gives. An operand promoted to another compute dtype (`x + 2.5`, a float) computes.
"""

from __future__ import annotations

from typing import Any

_CPU = ("neg", "abs", "sign", "lt", "le", "gt", "ge", "maximum", "minimum", "remainder",
        "fmod", "logical_not", "logical_and", "logical_or", "logical_xor", "bitwise_not",
        "argmax", "argmin", "flip", "gcd")
REFUSING_KERNELS: dict[str, str] = {
    **{op: f"{op}_cpu" for op in _CPU},
    "add": "add_stub", "sub": "add_stub", "floor_divide": "div_floor_cpu", "pow": "pow",
    "bitwise_left_shift": "lshift_cpu", "bitwise_right_shift": "rshift_cpu",
    "relu": "clamp_min_scalar_cpu", "tril": "tril", "triu": "triu", "fmax": "maximum_cpu",
    "fmin": "minimum_cpu", "addcmul": "addcmul_cpu_out",
}
# matmul by the operands' dimensions (more than two: a batched product)
_MATMUL_KERNELS = {(1, 1): "dot", (2, 1): "addmv_impl_cpu", (1, 2): "addmm_impl_cpu_",
                   (2, 2): "addmm_impl_cpu_"}
# clamp by which bounds it has: (min given, max given)
_CLAMP_KERNELS = {(True, True): "clamp_scalar_cpu", (True, False): "clamp_min_scalar_cpu",
                  (False, True): "clamp_max_scalar_cpu"}


def refusing_kernel(op: str, args: tuple, attrs: dict) -> str | None:
    """The name of PyTorch's CPU kernel that refuses the unsigned operand of ember
    primitive `op` run on `args` with `attrs`, or None when PyTorch computes it."""
    if op == "matmul":
        dims = tuple(getattr(a, "ndim", 0) for a in args[:2])
        return _MATMUL_KERNELS.get(dims, "bmm")
    if op in ("max", "min"):  # the whole tensor, or over some dimensions (amax)
        return f"{op}_all" if attrs.get("dims") is None else f"{op}_values_cpu"
    if op == "clamp":
        tensors = any(hasattr(attrs.get(k), "_dtype") for k in ("min", "max"))
        return "clamp_cpu" if tensors else _CLAMP_KERNELS.get(
            (attrs.get("min") is not None, attrs.get("max") is not None))
    return REFUSING_KERNELS.get(op)


def refuses(op: str, args: tuple, attrs: dict, compute: Any) -> str | None:
    """`refusing_kernel`, unless the rule promoted the operands to `compute`, another
    dtype (None: the operand's own)."""
    if compute is not None and compute.name not in ("uint16", "uint32", "uint64"):
        return None
    return refusing_kernel(op, args, attrs)
