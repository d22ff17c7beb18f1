"""Complex numbers: a complex tensor's parts (`real`, `imag`, `view_as_real`), its
conjugate, its polar form (`abs` is elementwise's, `angle`, `polar`), and complex tensors
made from real ones (`complex`, `view_as_complex`).

Views follow PyTorch: `view_as_real(z)` shares z's memory as a real tensor with a last
dimension of 2, and `z.real` / `z.imag` are views of it, so writing into them writes z.
ember conjugates eagerly: `conj` makes a new tensor (PyTorch's lazy conjugate bit is
never set, so `is_conj` is False and `resolve_conj` returns its input).

Kernels:

    view_as_real   kernel(x) -> a real view of complex x with a trailing dimension of 2
    conj_physical  kernel(x) -> the complex conjugate of x (a new buffer)
"""

from __future__ import annotations

import math
from typing import Any

from ember.core import costs
from ember.core import dtype as dt
from ember.core.apply import apply, record_grad
from ember.core.declare import composite, primitive
from ember.core.dispatch import run
from ember.core.grad_mode import no_grad
from ember.core.inplace import as_view
from ember.core.memory_format import like_layout, plain
from ember.core.opdef import OPS, Grad, OutMeta
from ember.core.opdef import Precision as P
from ember.core.ops.elementwise import atan2, to_dtype, where
from ember.core.ops.indexing import select
from ember.core.ops.shape import empty_of, in_iter_order, in_layout, stack
from ember.core.tensor import Tensor


def _view_as_real_rule(input):
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return OutMeta(tuple(input.shape) + (2,), input.dtype.to_real(), None)


@primitive(complex=True, variants="function", rule=_view_as_real_rule, view=True,
           cost=costs.view, grad=Grad(input=lambda grad: view_as_complex(grad.contiguous())))
def view_as_real(input: Tensor) -> Tensor:
    """A view of complex `input` as a real tensor whose last dimension (of size 2) holds
    each element's real and imaginary parts."""
    if input._conj_view and input.dtype.is_complex:  # (PyTorch's conjugate bit: its
        # memory holds the unconjugated values)
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To "
                           "resolve the conjugate tensor so you can view it as real, use "
                           "self.resolve_conj(); however, be warned that the resulting tensor "
                           "will NOT alias the original.")
    return _as_real(input)


def _as_real(input: Tensor) -> Tensor:
    """`view_as_real` for `real` and `imag`, which take conjugate views."""
    out = apply(OPS["view_as_real"], input)
    return as_view(out, input, _as_real)


def _check_view_as_complex(x: Tensor) -> None:
    """PyTorch's conditions for reading pairs of reals as complex numbers in place."""
    if x.dtype not in (dt.float32, dt.float64):
        if x.dtype is dt.float16:
            raise RuntimeError("view_as_complex: complex32 (ComplexHalf) is not supported "
                               "by ember")
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: "
                           f"{dt.SCALAR_TYPE_NAMES[x.dtype.name]}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if x.stride(-1) != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(x.stride(d) % 2 for d in range(x.ndim - 1)):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                           "dimension")
    if x.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")


@composite(complex=True, variants="function", cost=costs.view,
           grad=Grad("ViewAsComplexBackward0", input=lambda grad: view_as_real(grad)),
           cpu_precision=P.FLOAT32)  # (PyTorch's CPU autocast: float32)
def view_as_complex(input: Tensor) -> Tensor:
    """A view of `input` (float32 or float64, last dimension of size 2 and stride 1) as a
    complex tensor: each pair along the last dimension is one complex number."""
    _check_view_as_complex(input)
    with no_grad():
        pairs = run("view_dtype", input, dtype=input.dtype.to_complex())  # (..., 1)
        out = run("reshape", pairs, shape=tuple(input.shape[:-1]), copy=False)
    record_grad(OPS["view_as_complex"], (input,), {}, out)
    return as_view(out, input, view_as_complex)


@composite(complex=True, variants="function", cost=costs.view)
def real(input: Tensor) -> Tensor:
    """The real parts of `input`: a view of a complex tensor (writing into it writes
    `input`), or `input` itself when it is real."""
    if not input.dtype.is_complex:
        return input
    return select(_as_real(input), -1, 0)


@composite(complex=True, variants="function", cost=costs.view)
def imag(input: Tensor) -> Tensor:
    """The imaginary parts of complex `input`, as a view (writing into it writes
    `input`)."""
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return select(_as_real(input), -1, 1)


def _real_property(self: Tensor) -> Tensor:
    return real(self)


def _imag_property(self: Tensor) -> Tensor:
    return imag(self)


def _set_part(part: Any) -> Any:
    def setter(self: Tensor, value: Any) -> None:
        part(self).copy_(value if isinstance(value, Tensor) else
                         Tensor._from_data(value, device=self.device))
    return setter


Tensor.real = property(_real_property, _set_part(real), doc="The real parts (a view).")
Tensor.imag = property(_imag_property, _set_part(imag), doc="The imaginary parts (a view).")


def _conj_kernel(input: Tensor) -> Tensor:
    return apply(OPS["conj_physical"], input)


@primitive(complex=True, variants="function method inplace",
           rule=lambda input: OutMeta(input.shape, input.dtype, None), cost=costs.pointwise(1),
           grad=Grad("ConjPhysicalBackward0", input=lambda grad: grad.conj()))
def conj_physical(input: Tensor) -> Tensor:
    """The elementwise complex conjugate of `input`, computed now (a real tensor: itself,
    as PyTorch returns it)."""
    if not input.dtype.is_complex:
        return input
    return _conj_kernel(input)


@composite(complex=True, variants="function method", cost=costs.pointwise(1),
           node_label="ConjBackward0")
def conj(input: Tensor) -> Tensor:
    """The complex conjugate of `input` (a real tensor: itself). ember conjugates
    eagerly (writes into the result do not reach `input`), but the result, and its views,
    report PyTorch's conjugate bit: `is_conj()` is True until `resolve_conj()`."""
    if not input.dtype.is_complex:
        return input
    out = _conj_kernel(input)
    if not plain(input):  # PyTorch's conj is a view: laid out as `input`, as a clone is
        out = in_layout(out, like_layout(input, empty_of(out)))
    if not input._conj_view:  # (the conjugate of a conjugate view has no bit)
        out._conj_view = True
    return out


@composite(complex=True, variants="function method", cost=costs.view)
def resolve_conj(input: Tensor) -> Tensor:
    """`input` with its conjugate bit resolved: a copy without it where `input` has it
    (its values are already conjugated), else `input`."""
    return input.clone() if input._conj_view else input


@composite(complex=True, variants="function method", cost=costs.view)
def is_conj(input: Tensor) -> bool:
    """Whether `input` has the conjugate bit: a complex `conj()` result or a view of
    one."""
    return bool(input.dtype.is_complex and input._conj_view)


@composite(complex=True, variants="function method", cost=costs.view)
def is_complex(input: Tensor) -> bool:
    """Whether `input` has a complex dtype (complex64 or complex128)."""
    return input.dtype.is_complex


@composite(complex=True, variants="function method out", cost=costs.pointwise(16))
def angle(input: Tensor) -> Tensor:
    """The argument of each element, in radians: `atan2(imag, real)` for complex tensors;
    0 for non-negative and pi for negative real ones (NaN stays NaN)."""
    if input.dtype.is_complex:
        return atan2(imag(input), real(input))
    x = input if input.dtype.is_floating_point else to_dtype(input, dt.get_default_dtype())
    with no_grad():
        out = where(x < 0, math.pi, 0.0)
        out = where(x.isnan(), x, out)
    if x.requires_grad:  # PyTorch's angle_backward for real input: zero
        out = out + x * 0.0
    return out


def _same_real(op: str, a: Tensor, b: Tensor) -> None:
    if a.dtype not in (dt.float16, dt.float32, dt.float64) or \
            b.dtype not in (dt.float16, dt.float32, dt.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{dt.SCALAR_TYPE_NAMES[a.dtype.name]} and "
                           f"{dt.SCALAR_TYPE_NAMES[b.dtype.name]}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"Expected object of scalar type {dt.SCALAR_TYPE_NAMES[a.dtype.name]} "
                           f"but got scalar type {dt.SCALAR_TYPE_NAMES[b.dtype.name]} for second "
                           "argument")
    if a.dtype is dt.float16:
        raise RuntimeError(f"{op}: complex32 (ComplexHalf) is not supported by ember")


@composite(complex=True, variants="function out", cost=costs.pointwise(1),
           node_label="ComplexBackward0")
def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """The complex tensor `real + imag * 1j` (both float32, or both float64; they
    broadcast)."""
    _same_real("complex", real, imag)
    if real.shape != imag.shape:
        real, imag = real.broadcast_to(_broadcast(real, imag)), \
            imag.broadcast_to(_broadcast(real, imag))
    # (laid out as PyTorch's elementwise result of the two)
    return in_iter_order(view_as_complex(stack([real, imag], -1)), real, imag)


def _broadcast(a: Tensor, b: Tensor) -> tuple[int, ...]:
    from ember.core.shapes import broadcast_shapes

    return broadcast_shapes("complex", tuple(a.shape), tuple(b.shape))


@composite(complex=True, variants="function out", cost=costs.pointwise(16),
           node_label="PolarBackward0", cpu_precision=P.FLOAT32)  # (CPU autocast: float32)
def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002 - PyTorch's names
    """The complex tensor with magnitudes `abs` and arguments `angle` (radians):
    `abs * (cos(angle) + 1j * sin(angle))`."""
    _same_real("polar", abs, angle)
    return complex(abs * angle.cos(), abs * angle.sin())
