"""Elementwise ops: unary math, binary arithmetic with broadcasting and PyTorch's type
promotion, comparisons, `where`, `clamp`, and dtype and device moves.

Each op is declared once below; its kernel has the signature of its rule:

    unary     kernel(x) -> y, same shape (float ops receive floating x)
    binary    kernel(x, y) -> z, NumPy broadcasting; x and y already share the compute
              dtype, or one of them is a Python scalar of its kind. Comparisons and
              logical ops return bool. With `Backend.supports_out`, unary and binary
              kernels also take `out=buffer` and write into it (one kernel in-place ops).
    where     kernel(condition, input, other) -> z, broadcasting.
    clamp     kernel(input, min=, max=) -> y; min and max are Python numbers or None.
    cast      kernel(input, dtype=) -> y.
"""

from __future__ import annotations

import cmath
import functools
import math
import numbers
from typing import Any

from ember.core import costs, grad_mode, tracing
from ember.core import dtype as dt
from ember.core import forward_ad as fw
from ember.core.apply import apply, apply_labelled, record_grad
from ember.core.creation import ones_like, zeros_like
from ember.core.declare import alias, check_tensor, composite, define, fused_kernel, primitive
from ember.core.dispatch import (
    check_dtype,
    kernel_name,
    kernel_refuses,
    not_implemented_for,
    refuse_unsigned,
    run_binary,
    run_fused,
    run_unary_into,
    same_dtype_results,
    user_stacklevel,
)
from ember.core.errors import (
    ArgumentTypeError,
    invalid_combination,
    type_name,
    warn_once,
    with_context,
)
from ember.core.grad_mode import new_version, no_grad, state
from ember.core.graph import record, relabel
from ember.core.host import dtype_arg, no_data, python_scalar
from ember.core.inplace import apply_inplace, check_overlap, tracked
from ember.core.memory_format import check_format, preserve_format, tensor_format
from ember.core.opdef import OPS, Grad, Kind, OutMeta, metadata_rule
from ember.core.opdef import Precision as P
from ember.core.ops.shape import in_iter_order
from ember.core.placement import resolve
from ember.core.shapes import broadcast_shapes
from ember.core.storage import cpp_type_name
from ember.core.tensor import Tensor

_Number = (int, float, bool, complex)


def _shape(x: Any) -> tuple[int, ...]:
    return x.shape if hasattr(x, "shape") else ()


def operand_tier(x: Any) -> tuple[dt.dtype, int]:
    """(dtype, promotion tier) of a tensor or a Python scalar."""
    x = python_scalar(x)
    if hasattr(x, "dtype"):
        return x.dtype, (dt.DIMMED if x.shape else dt.ZERO_DIM)
    return dt.scalar_dtype(x), dt.SCALAR


def _require(op: str, x: dt.dtype, ok: Any, what: str, *operands: Any) -> None:
    """PyTorch's NotImplementedError for a dtype `x` op's kernel lacks (`"bitwise_and_cpu"
    not implemented for 'Float'`, on the first tensor among `operands`' device), with
    what it takes in a note."""
    if not ok(x):
        like = next((a for a in operands if isinstance(a, Tensor)), None)
        raise with_context(not_implemented_for(op, like, x),
                           f"{op}: not implemented for dtype {x} (takes {what})")


def as_operand(x: Any, like: Tensor) -> Any:
    """A Python number stays as is; an array-like becomes a tensor on `like`'s device."""
    if isinstance(x, Tensor):
        return x
    x = python_scalar(x)
    if isinstance(x, _Number):
        return x
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, numbers.Complex):
        return complex(x)
    if hasattr(x, "__array__") or isinstance(x, (list, tuple)):
        return Tensor._from_data(x, device=like.device)
    raise TypeError(f"unsupported operand type {type(x).__name__} for a tensor op")


# -- rules ----------------------------------------------------------------------------


_VML_KERNELS = frozenset({"floor", "ceil", "trunc", "round"})  # ATen's vectorised kernels


def bool_negation_error() -> RuntimeError:
    """PyTorch's refusal of `-mask` (also `_foreach_neg` of a bool tensor)."""
    return RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                        "are trying to invert a mask, use the `~` or `logical_not()` operator "
                        "instead.")


def _same_dtype_rule(op: str):
    @metadata_rule
    def rule(input):
        if input.dtype is dt.bool_:  # (PyTorch's words: its kernels' names for the rest)
            if op == "neg":
                raise bool_negation_error()
            if op == "relu":
                raise RuntimeError("Boolean inputs not supported for relu")
            if op != "sign":
                kernel = f"{op}_vml_cpu" if op in _VML_KERNELS else f"{op}_cpu"
                raise kernel_refuses(kernel, dt.bool_)
        return OutMeta(input.shape, input.dtype, None)
    return rule


@metadata_rule
def _float_rule(input):
    out = input.dtype if input.dtype._differentiable else dt.get_default_dtype()
    return OutMeta(input.shape, out, out)


@metadata_rule
def _abs_rule(input):
    """abs: the input's dtype; a complex input's magnitude is of its real dtype."""
    if input.dtype.is_complex:
        return OutMeta(input.shape, input.dtype.to_real(), None)
    return _same_dtype_rule("abs")(input)


@metadata_rule
def _predicate_rule(input):
    return OutMeta(input.shape, dt.bool_, None)


@metadata_rule
def _bitwise_not_rule(input):
    _require("bitwise_not", input.dtype, lambda d: not d.is_floating_point, "integer or bool",
             input)
    return OutMeta(input.shape, input.dtype, None)


# the arithmetic whose PyTorch CPU kernels refuse two bool operands
_BOOL_REFUSING = frozenset({"pow", "remainder", "floor_divide", "fmod"})


def bool_operands_refused(op: str) -> NotImplementedError:
    """PyTorch's error for arithmetic `op` on two bool operands, in its kernel's words
    (`"remainder_cpu" not implemented for 'Bool'`, by dispatch.KERNEL_NAMES); ember's
    advice goes in a note."""
    return with_context(kernel_refuses(kernel_name(op), dt.bool_),
        f"{op}: not implemented for two bool operands; convert one to an integer dtype first")


def _binary_rule(op: str, kind: str):
    @metadata_rule
    def rule(input, other):
        shape = broadcast_shapes(op, _shape(input), _shape(other))
        common = dt.result_type(operand_tier(input), operand_tier(other))
        if kind == "arith":
            if op == "sub":
                _no_bool_sub(operand_tier(input)[0], operand_tier(other)[0])
            if common is dt.bool_ and op in _BOOL_REFUSING:
                raise bool_operands_refused(op)
            return OutMeta(shape, common, common)
        if kind == "float":
            out = common if common._differentiable else dt.get_default_dtype()
            return OutMeta(shape, out, out)
        if kind == "bitwise":
            _require(op, common, lambda d: not d.is_floating_point, "integer or bool",
                     input, other)
            return OutMeta(shape, common, common)
        return OutMeta(shape, dt.bool_, common)  # compare / logical
    return rule


def _no_bool_sub(a: dt.dtype, b: dt.dtype) -> None:
    if a is dt.bool_ and b is dt.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if dt.bool_ in (a, b):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")


@metadata_rule
def _where_rule(condition, input, other):
    if condition.dtype is not dt.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                           f"tensor with dtype {dt.SCALAR_TYPE_NAMES.get(condition.dtype.name)}")
    shape = broadcast_shapes("where", broadcast_shapes("where", condition.shape, _shape(input)),
                             _shape(other))
    common = dt.result_type(operand_tier(input), operand_tier(other))
    return OutMeta(shape, common, common)


@metadata_rule
def _clamp_rule(input, *, min=None, max=None):  # noqa: A002 - PyTorch's names
    if min is None and max is None:
        raise RuntimeError(f"{dt.API_NAME}.clamp: At least one of 'min' or 'max' must not be "
                           f"None")
    tiers = [operand_tier(input)] + [operand_tier(v) for v in (min, max) if v is not None]
    out = dt.result_type(*tiers)
    return OutMeta(input.shape, out, out)


@metadata_rule
def _cast_rule(input, *, dtype):
    return OutMeta(input.shape, dtype, None)


# -- unary ops ------------------------------------------------------------------------


def _fusable(kernel: str, reads: str, formula: Any) -> Any:
    """A gradient formula that a backend's fused kernel `kernel(v, grad)` may replace
    (`v`: the input or the output, whichever `reads` names)."""
    def on_result(grad, result):
        out = run_fused(kernel, result, grad)
        return formula(grad, result) if out is None else out

    def on_input(grad, input):
        out = run_fused(kernel, input, grad)
        return formula(grad, input) if out is None else out
    return on_result if reads == "result" else on_input


def _unary_inplace(name: str, fn: Any) -> Any:
    """`x.exp_()`: one kernel writing into x when autograd does not record."""
    def method(self: Tensor) -> Tensor:
        if tracked(self):
            return apply_inplace(self, fn, op=name + "_")
        return run_unary_into(name, self)
    if name == "abs":  # a complex tensor's magnitudes are real: PyTorch refuses abs_
        plain = method

        def method(self: Tensor) -> Tensor:
            if self._dtype.is_complex:
                raise RuntimeError("In-place abs is not supported for complex tensors.")
            return plain(self)
    method.__name__ = name + "_"
    return method


def _zero_grad(grad):
    return grad * 0.0


def _full_float_rule(op: str):
    """"float" for an op whose PyTorch CPU kernel is built for float32 and float64 only
    (torch.special's Bessel functions, erfcx, ndtri): half precision refused, in its
    words."""
    kernel = op.removeprefix("special_") + "_cpu"

    @metadata_rule
    def rule(input):
        meta = _float_rule(input)
        if meta.dtype in (dt.float16, dt.bfloat16):
            raise kernel_refuses(kernel, meta.dtype)
        return meta
    return rule


_RULES = {"float": _float_rule, "predicate": _predicate_rule, "bitwise": _bitwise_not_rule,
          "abs": _abs_rule}
UNARY_BY_RULE: dict[str, list[str]] = {"same": [], "float": [], "predicate": [], "bitwise": []}
"""The unary primitives of each rule (exporters convert each family alike)."""


def _unary(name: str, rule: str, grad: Any, doc: str, *, precision: P = P.KEEP,
           flops: float = 1, fused_backward: str | None = None, inplace: bool = True,
           out: bool = True, variants: str | None = None, label: str | None = None,
           **fields: Any) -> Any:
    """Declare unary elementwise primitive `name`: `rule` is "same" (the input's dtype),
    "float" (floating result), "full float" (floating, half precision refused),
    "predicate" (bool result) or "bitwise"; `grad` is the
    formula for the input's gradient (None: not differentiable); with `fused_backward`,
    a backend's `<name>_backward(v, grad)` kernel may replace the formula, `v` being what
    the formula reads ("input" or "result"). `variants`, when given, replaces the
    function, method, in-place and out= variants `inplace` and `out` make. `label`: the
    node's name where PyTorch's differs from the default (Log1PBackward0)."""
    full_float = rule == "full float"  # (a "float" op refusing half precision)
    rule = "float" if full_float else rule
    UNARY_BY_RULE["same" if rule == "abs" else rule].append(name)  # (abs: "same" on reals)
    if grad is not None and fused_backward is not None:
        fields["fused"] = (name + "_backward",)
        grad = _fusable(name + "_backward", fused_backward, grad)
        fused_kernel(name + "_backward", replaces=f"{name} backward", backward=True,
                     signature=f"{name}_backward(v, grad) -> grad_input",
                     doc=f"The gradient of {name} from `grad` and `v`, the {fused_backward} "
                         "its formula reads.")

    op = None  # the declaration, made below (fn reads it when called)

    def fn(input: Tensor) -> Tensor:
        return apply(op, input)
    public = define(name, Kind.PRIMITIVE, fn, rule=_full_float_rule(name) if full_float else
                    _RULES.get(rule) or _same_dtype_rule(name),
                    grad=None if grad is None else Grad(label, input=grad),
                    precision=precision,
                    cost=costs.pointwise(flops), doc=doc,
                    variants=variants if variants is not None else "function method" +
                    (" inplace" if inplace else "") + (" out" if out else ""),
                    exact_out="found" if rule in ("same", "bitwise", "abs") else False,
                    inplace_method=_unary_inplace(name, fn), **fields)
    op = OPS[name]
    return public


def conj(x: Any) -> Any:
    """`x.conj()` for a complex tensor or number, else `x` itself: PyTorch's gradient
    formulas for complex operands multiply by conjugates (`mul`'s input gradient is
    `grad * other.conj()`), and a real operand keeps today's exact path."""
    if isinstance(x, Tensor):
        return x.conj() if x._dtype.is_complex else x
    return x.conjugate() if isinstance(x, complex) else x


def refuse_complex_autograd(op: str, output_dtype: dt.dtype, *operands: Any) -> None:
    """PyTorch's refusal to record `op` for a complex output when an operand requires a
    gradient (its derivatives.yaml marks the op real-only)."""
    if output_dtype.is_complex and state.enabled and any(
            isinstance(x, Tensor) and x.requires_grad for x in operands):
        raise RuntimeError(f"{op} does not support automatic differentiation for outputs "
                           "with complex dtype.")


def _abs_grad(grad, input):
    # PyTorch's abs_backward: grad * sgn(input) (the sign, for real input)
    return grad * (input.sgn() if input._dtype.is_complex else input.sign())


_SQRT_PI = 2.0 / math.sqrt(math.pi)
_LN2 = math.log(2.0)

neg = _unary("neg", "same", lambda grad: -grad, aliases="negative", operators="__neg__",
             complex=True,
             doc="Returns a new tensor with the negative of the elements of `input`.")
abs = _unary("abs", "abs", _abs_grad, aliases="absolute", operators="__abs__",  # noqa: A001
             complex=True,
             doc="Computes the absolute value of each element in `input`.")
floor = _unary("floor", "same", _zero_grad,
               doc="Returns the largest integer less than or equal to each element.")
ceil = _unary("ceil", "same", _zero_grad,
              doc="Returns the smallest integer greater than or equal to each element.")
trunc = _unary("trunc", "same", _zero_grad, aliases="fix",
               doc="Returns the integer part of each element, rounding toward zero.")
relu = _unary("relu", "same",
              lambda grad, result: activation_backward(grad, result, (result <= 0).logical_not(),
                                                       label="ThresholdBackwardBackward0"),
              fused_backward="result", out=False,
              doc="Applies the rectified linear unit function element-wise: max(0, x).")
exp = _unary("exp", "float", lambda grad, result: grad * conj(result), precision=P.FLOAT32,
             flops=8, fused_backward="result", complex=True,
             doc="Returns a new tensor with the exponential of the elements of `input`.")
log = _unary("log", "float", lambda grad, input: grad / conj(input), precision=P.FLOAT32,
             flops=8, fused_backward="input", complex=True,
             doc="Returns a new tensor with the natural logarithm of the elements of `input`.")
log2 = _unary("log2", "float", lambda grad, input: grad / (conj(input) * _LN2),
              precision=P.FLOAT32, flops=8, complex=True,
              doc="Returns a new tensor with the base-2 logarithm of the elements.")
log1p = _unary("log1p", "float", lambda grad, input: grad / (conj(input) + 1.0),
               precision=P.FLOAT32, flops=8, label="Log1PBackward0", complex=True,
               doc="Returns the natural logarithm of (1 + `input`), accurate for small values.")
expm1 = _unary("expm1", "float", lambda grad, result: grad * (conj(result) + 1.0),
               precision=P.FLOAT32, flops=8, complex=True,
               doc="Returns exp(x) - 1 of each element, accurate for small values.")
sqrt = _unary("sqrt", "float", lambda grad, result: grad / (conj(result) * 2.0), flops=4,
              complex=True,
              doc="Returns the square root of each element.")
rsqrt = _unary("rsqrt", "float", lambda grad, result: grad * (conj(result.pow(3)) * -0.5),
               precision=P.FLOAT32, flops=4, complex=True,
               doc="Returns the reciprocal of the square root of each element.")
sin = _unary("sin", "float", lambda grad, input: grad * conj(input.cos()), flops=8,
             complex=True,
             doc="Returns the sine of each element.")
cos = _unary("cos", "float", lambda grad, input: grad * -conj(input.sin()), flops=8,
             complex=True,
             doc="Returns the cosine of each element.")
tan = _unary("tan", "float", lambda grad, result: grad * (conj(result * result) + 1.0),
             precision=P.FLOAT32, flops=8, complex=True,
             doc="Returns the tangent of each element.")
tanh = _unary("tanh", "float", lambda grad, result: grad * (1.0 - conj(result * result)),
              flops=8, fused_backward="result", complex=True,
              doc="Returns the hyperbolic tangent of each element.")
sigmoid = _unary("sigmoid", "float",
                 lambda grad, result: grad * conj(result * (1.0 - result)),
                 flops=8, fused_backward="result", complex=True,
                 doc="Returns the logistic sigmoid 1 / (1 + exp(-x)) of each element.")
erf = _unary("erf", "float", lambda grad, input: grad * ((-(input * input)).exp() * _SQRT_PI),
             flops=16, doc="Computes the error function of each element.")
asin = _unary("asin", "float", lambda grad, input: grad / conj((1.0 - input * input).sqrt()),
              precision=P.FLOAT32, flops=8, aliases="arcsin", complex=True,
              doc="Returns the arcsine of each element.")
acos = _unary("acos", "float",
              lambda grad, input: -(grad / conj((1.0 - input * input).sqrt())),
              precision=P.FLOAT32, flops=8, aliases="arccos", complex=True,
              doc="Returns the arccosine of each element.")
atan = _unary("atan", "float", lambda grad, input: grad / (conj(input * input) + 1.0),
              flops=8, aliases="arctan", complex=True,
              doc="Returns the arctangent of each element.")
reciprocal = _unary("reciprocal", "float",
                    lambda grad, result: -(grad * conj(result * result)), complex=True,
                    precision=P.FLOAT32, doc="Returns the reciprocal 1 / x of each element.")
logical_not = _unary("logical_not", "predicate", None,
                     doc="Computes the logical NOT of each element (nonzero is True).")
isnan = _unary("isnan", "predicate", None, inplace=False, out=False, complex=True,
               doc="Tests each element for NaN.")
isinf = _unary("isinf", "predicate", None, inplace=False, out=False, complex=True,
               doc="Tests each element for positive or negative infinity.")
isfinite = _unary("isfinite", "predicate", None, inplace=False, out=False, complex=True,
                  doc="Tests each element for being finite (neither NaN nor infinite).")


def _invert(input: Tensor) -> Tensor:
    """`~t`: PyTorch's operator refuses a floating or complex tensor itself, a TypeError
    in its own words, before bitwise_not's kernel would (`torch.bitwise_not` raises the
    kernel's NotImplementedError)."""
    if input._dtype.is_floating_point or input._dtype.is_complex:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return apply(OPS["bitwise_not"], input)


bitwise_not = _unary("bitwise_not", "bitwise", None, operators="__invert__",
                     operator_impl=_invert,
                     doc="Computes the bitwise NOT of an integer tensor (logical NOT of a "
                         "bool one).")


def _no_complex_sign(x: Tensor) -> None:
    if x._dtype.is_complex:  # PyTorch's words, which name the op to use instead
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support "
                                  "complex numbers. Please use torch.sgn instead.")


def _sign(input: Tensor) -> Tensor:
    _no_complex_sign(input)
    return input.clone() if input._dtype is dt.bool_ else apply(OPS["sign"], input)


_sign_kernel_ = _unary_inplace("sign", _sign)


def _sign_(self: Tensor) -> Tensor:
    _no_complex_sign(self)
    if self._dtype is dt.bool_:  # its own sign: nothing to write
        self._vc[0] += 1
        return self
    return _sign_kernel_(self)


UNARY_BY_RULE["same"] += ["sign", "round"]
sign = define("sign", Kind.PRIMITIVE, _sign, variants="function method inplace",
              rule=_same_dtype_rule("sign"), grad=Grad(input=_zero_grad),
              cost=costs.pointwise(1), inplace_method=_sign_,
              doc="Returns -1, 0 or 1 by the sign of each element (a bool tensor is its own "
                  "sign).")


def _round(input: Tensor) -> Tensor:
    return apply(OPS["round"], input)


@primitive(variants="function method inplace", rule=_same_dtype_rule("round"),
           grad=Grad(input=_zero_grad), cost=costs.pointwise(1))
def round(input: Tensor, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """Rounds each element to the nearest integer, halves to even as PyTorch does;
    `decimals` shifts the rounding position."""
    if decimals == 0:
        return _round(input)
    if not input.dtype._differentiable:  # (PyTorch's overload with decimals: floats only)
        raise kernel_refuses("round_cpu", input.dtype)
    # as PyTorch: divide by a power of ten for negative decimals (10 ** -3 is inexact)
    # (a power past the double range is inf, as C's pow makes it: the result is NaN)
    places = -decimals if decimals < 0 else decimals
    scale = 10.0 ** places if places <= 308 else math.inf
    if decimals < 0:
        return relabel(_round(input / scale) * scale, "RoundBackward1", (input,))
    return relabel(_round(input * scale) / scale, "RoundBackward1", (input,))


@composite(complex=True, variants="function method", operators="__pos__")
def positive(input: Tensor) -> Tensor:
    """Returns `input` itself (`+x`)."""
    if input.dtype is dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# -- binary ops -----------------------------------------------------------------------


# the binary ops whose PyTorch signatures show a Tensor `other` only (their Scalar
# overloads are hidden from its argument parser's messages): `t.add(array)` is its
# "argument 'other' (position 1) must be Tensor" (the operators decline an array: NumPy
# computes `t + array`)
_TENSOR_OPERANDS = frozenset({"add", "sub", "mul", "div", "maximum", "minimum", "atan2"})
# the binary ops PyTorch declares for two tensors only (`x.atan2_(2.0)` is its TypeError)
_TENSORS_ONLY = frozenset({"maximum", "minimum", "atan2", "hypot", "nextafter", "igamma",
                           "igammac"})


def binary(name: str, a: Any, b: Any) -> Tensor:
    """Run binary elementwise primitive `name` (the operators' fast path)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        # the common case first: one shape, dtype and device, nothing recording kernels,
        # and a result dtype the general path has already found for this op and dtype
        x, y, dtype = a._data, b._data, a._dtype
        if dtype is b._dtype and x.shape == y.shape and a._device is b._device \
                and tracing.active is None and tracing.tape is None:
            backend = a._backend
            entry = same_dtype_results.get((name, dtype, backend))
            if entry is not None and backend.kernels.get(name) is entry[0]:
                out = _new(Tensor)  # Tensor._make, inline: this is the hottest path
                out._data, out._dtype, out._device, out._backend = \
                    entry[0](x, y), entry[1], a._device, backend
                out._requires_grad, out._node = False, None
                out._vc = new_version() if grad_mode.inference_entered else [0]
            else:
                out = run_binary(name, a, b)
        else:
            out = run_binary(name, a, b)
        if (a._requires_grad or b._requires_grad) and state.enabled:
            op = OPS[name]
            if op.grad is not None:
                record_grad(op, (a, b), _NO_ATTRS, out, _TENSORS_LABELS.get(name),
                            (a._requires_grad, b._requires_grad))
        elif fw.active:  # a dual level: the output's tangent
            record_grad(OPS[name], (a, b), _NO_ATTRS, out)
        return out
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if not ta and not tb:
        if name not in _NUMBERS_AS_TENSORS or not (_is_number(a) and _is_number(b)):
            raise TypeError(f"{name}(): expected at least one tensor operand, got "
                            f"{type(a).__name__} and {type(b).__name__}")
        # PyTorch's parser makes the first number a tensor for these ops (so
        # `torch.div(seq_len, w, rounding_mode="trunc")` is a 0-d tensor)
        a, ta = Tensor._from_data(a), True
    # PyTorch's node for each overload: `tensor % tensor` RemainderBackward1, `2 % t` ...
    label = _TENSORS_LABELS.get(name) if ta and tb else \
        _NUMBER_FIRST_LABELS.get(name) if tb else None
    if not ta:
        given, a = a, as_operand(a, b)
        ta = isinstance(a, Tensor)
        if ta and name in _TENSOR_OPERANDS:  # an array or a list made a tensor
            raise ArgumentTypeError(name, "input", 0, "Tensor", given)
    if not tb:
        given, b = b, as_operand(b, a)
        tb = isinstance(b, Tensor)
        if tb and name in _TENSOR_OPERANDS:
            raise ArgumentTypeError(name, "other", 1, "Tensor", given)
    out = run_binary(name, a, b)
    if state.enabled and ((ta and a._requires_grad) or (tb and b._requires_grad)) or \
            fw.active:
        op = OPS[name]
        if op.grad is not None:
            record_grad(op, (a, b), _NO_ATTRS, out, label)
    return out


# the ops whose operands PyTorch's argument parser takes as numbers too (its
# should_allow_numbers_as_tensors): two numbers give a 0-d tensor
_NUMBERS_AS_TENSORS = frozenset({"add", "sub", "mul", "div", "true_divide", "floor_divide"})


def _is_number(x: Any) -> bool:
    return isinstance(x, (bool, int, float, complex)) or isinstance(x, numbers.Number)


# PyTorch's node names where its overloads differ from the op's default (`<Op>Backward0`,
# its overload with a number `other`): two tensors, and a number first (no derivative:
# PyTorch's NotImplemented node, whose backward raises; see _no_derivative)
_TENSORS_LABELS = {"remainder": "RemainderBackward1", "fmod": "FmodBackward1",
                   "pow": "PowBackward1"}
_NUMBER_FIRST_LABELS = {"remainder": "NotImplemented", "pow": "PowBackward2"}


def _no_derivative(op: str) -> Any:
    """A gradient formula for PyTorch's NotImplemented node: backward raises its error."""
    def formula(grad: Tensor) -> Tensor:
        raise RuntimeError(f"derivative for aten::{op} is not implemented")
    return formula


_new = object.__new__
_NO_ATTRS: dict = {}  # a binary op has no attributes (read only)


def _binary_fn(name: str) -> Any:
    def fn(input: Any, other: Any) -> Tensor:
        return binary(name, input, other)
    return fn


def check_tensors(op: str, input: Any, other: Any, name: str = "other") -> None:
    """PyTorch's refusal of a non-tensor operand of an op of `(Tensor input, Tensor
    other)` (`torch.atan2(x, 2.0)`), `name` its second parameter's name."""
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        check_tensor(op, "input", input, 0)
        check_tensor(op, name, other, 1)


def _tensors_binary_fn(name: str) -> Any:
    """The op of PyTorch's `(Tensor input, Tensor other)`, refusing a number (`maximum`);
    ember's own code calls the `_binary_fn` it checks (`maximum_of`)."""
    def fn(input: Any, other: Any) -> Tensor:
        if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
            check_tensors(name, input, other)
        return binary(name, input, other)
    return fn


def _binary_inplace(name: str, fn: Any) -> Any:
    """`x.mul_(y)`: one kernel writing into x when autograd does not record."""
    def method(self: Tensor, other: Any, **kwargs: Any) -> Tensor:
        if kwargs or fw.active or (state.enabled and (
                self._requires_grad or self._view_mode is not None or (
                    isinstance(other, Tensor) and other._requires_grad))):  # autograd records
            return apply_inplace(self, lambda old: fn(old, other, **kwargs), other,
                                 op=name + "_")
        if not isinstance(other, Tensor):
            given, other = other, as_operand(other, self)
            if name in _TENSORS_ONLY or isinstance(other, Tensor) and name in _TENSOR_OPERANDS:
                raise ArgumentTypeError(name, "other", 1, "Tensor", given)
        elif other._vc is self._vc and other is not self:  # (a view of one storage)
            check_overlap(name + "_", self, (other,))
        return run_binary(name, self, other, out=self)
    method.__name__ = name + "_"
    return method


def _scaled(name: str, input: Any, other: Any, alpha: Any) -> Any:
    """`alpha * other`, the operand `add`/`sub` take with an `alpha`, after PyTorch's
    checks of alpha's type against the operands' (a number stays a number)."""
    other, alpha = python_scalar(other), python_scalar(alpha)
    if not isinstance(other, (Tensor, numbers.Number)):  # `t.add(array, alpha=2)`
        raise ArgumentTypeError(name, "other", 1, "Tensor", other)
    a, b = operand_tier(input), operand_tier(other)
    if name == "sub":
        _no_bool_sub(a[0], b[0])
    common = dt.result_type(a, b)
    if isinstance(alpha, (float, complex)) and not common._differentiable:  # (bool too)
        raise RuntimeError("For integral input tensors, argument alpha must not be a "
                           "floating point number.")
    if isinstance(alpha, complex) and not common.is_complex:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a "
                           "complex number.")
    if common is dt.bool_:
        alpha = alpha != 0  # alpha takes the result's dtype
    elif isinstance(alpha, bool):
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, int) and not common._differentiable:
        dt.fit_scalar(alpha, common)  # (converted into the integer result's dtype, checked)
    if isinstance(other, numbers.Number) and not isinstance(other, Tensor):
        return other * alpha
    if other.dtype is not common and common._differentiable:
        # PyTorch scales `other` in the result's dtype: a bfloat16 update added to a
        # float32 parameter (`p.add_(u, alpha=-lr)`) is not rounded to bfloat16 first
        other = other.to(common)
    return mul(other, alpha)


# PyTorch's rounding of add(alpha=), addcmul, addcdiv and lerp (half floats and float32
# computed in float32 and rounded once, multiply-adds fused): the backends' `opmath_*`
# kernels, written once in ember/backends/xp/opmath.py
for _name, _signature, _doc in (
        ("axpy", "opmath_axpy(x, y, alpha)", "`x + alpha * y` (add's and sub's alpha)"),
        ("addcmul", "opmath_addcmul(x, t1, t2, value)", "`x + value * t1 * t2`"),
        ("addcdiv", "opmath_addcdiv(x, t1, t2, value)", "`x + value * t1 / t2`"),
        ("lerp", "opmath_lerp(x, end, weight)", "`x + weight * (end - x)`, weight a number "
                                                "or a tensor")):
    fused_kernel("opmath_" + _name, replaces="add" if _name == "axpy" else _name,
                 signature=_signature + " -> result",
                 doc=_doc + " of same-dtype floating tensors, rounded as PyTorch's CPU "
                     "kernels round it (float16/bfloat16/float32 in float32, once).")


def _opmath_value(kernel: str, *args: Any) -> Tensor | None:
    """Fused kernel `kernel` on `args` (a floating tensor first, then tensors of its dtype
    and real numbers: a number operand is taken in that dtype, as PyTorch's wrapped
    numbers), outside autograd; None where the backend has no such kernel or the
    arguments are other."""
    first = args[0]
    if not isinstance(first, Tensor) or not first._dtype.is_floating_point:
        return None
    for a in args:
        if not isinstance(a, Tensor) and (isinstance(a, bool) or
                                          not isinstance(a, (int, float))):
            return None
    return run_fused(kernel, *args)


def _opmath(kernel: str, decomposed: Any, *args: Any) -> Tensor:
    """PyTorch's value of opmath kernel `kernel` on `args` where the backend has it (see
    `_opmath_value`), else `decomposed()`. Where autograd records, the decomposition
    supplies the graph (the backward formulas) and the kernel the value: PyTorch's
    forward rounds the same with grad as without."""
    value = _opmath_value(kernel, *args)
    if value is None:
        return decomposed()
    if not fw.active and not (state.enabled and any(
            isinstance(a, Tensor) and a._requires_grad for a in args)):
        return value
    out = decomposed()
    out._data = value._data
    return out


def _opmath_inplace(self: Tensor, kernel: str, *args: Any) -> Tensor | None:
    """`self` overwritten with opmath kernel `kernel`'s value on `(self, *args)`; None
    (nothing written) where that does not apply or the result would not fit `self`."""
    value = _opmath_value(kernel, self, *args)
    if value is None or tuple(value.shape) != tuple(self.shape):
        return None
    return self.copy_(value)


def _plain(alpha: Any) -> bool:
    """Whether `alpha` is the default (the int 1: True and 1.0 get checked)."""
    return type(alpha) is int and alpha == 1


def _signed(name: str, input: Any, alpha: Any) -> Any:
    """add's alpha, or sub's negated (`x - a * y` is `x + (-a) * y`); None if no number.
    Raises PyTorch's error for an alpha beyond `input`'s floating dtype."""
    alpha = python_scalar(alpha)
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
        return None
    if isinstance(input, Tensor) and input._dtype.is_floating_point:
        dt.fit_scalar(alpha, input._dtype)
    return alpha if name == "add" else -alpha


def _scaled_inplace(name: str) -> Any:
    """`x.add_(y, alpha=a)` / `x.sub_(y, alpha=a)`: one kernel unless autograd records."""
    fast = _binary_inplace(name, _binary_fn(name))

    def method(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        if not _plain(alpha):
            if tracked(self, other):
                fn = OPS[name].fn
                return apply_inplace(self, lambda old: fn(old, other, alpha=alpha), other,
                                     op=name + "_")
            done = _opmath_inplace(self, "opmath_axpy", other, _signed(name, self, alpha))
            if done is not None:
                return done
            other = _scaled(name, self, other, alpha)
        return fast(self, other)
    method.__name__ = name + "_"
    return method


def _pow_grad_input(grad, input, other):
    """PyTorch's pow_backward: 0 wherever the exponent is 0 (even at a zero base)."""
    if not isinstance(other, Tensor):
        return grad * 0.0 if other == 0 else grad * conj(input ** (other - 1) * other)
    return grad * conj((input ** (other - 1) * other).masked_fill(other == 0, 0.0))


def _pow_grad_exponent(grad, input, other, result):
    """PyTorch's pow_backward_exponent: `result * log(input)`, but 0 where a zero base
    meets an exponent >= 0 (where log(0) would make it NaN)."""
    if not isinstance(input, Tensor):
        if isinstance(input, complex) and input != 0:  # a complex base: its principal log
            return grad * conj(result * cmath.log(input))
        log = math.log(input) if input > 0 else (-math.inf if input == 0 else math.nan)
        if input == 0:
            return grad * (result * log).masked_fill(other >= 0, 0.0)
        return grad * conj(result * log)
    if result._dtype.is_complex:  # (no zero-base mask: a complex exponent has no sign)
        return grad * conj(result * input.log())
    return grad * (result * input.log()).masked_fill((input == 0).logical_and(other >= 0),
                                                     0.0)


def _share(a: Any, b: Any, like: Tensor, op: str) -> Tensor:
    """maximum/minimum: 1 where `a` wins, 1/2 at ties, 0 where `b` wins."""
    wins = (a > b) if op == "maximum" else (a < b)
    return wins.to(like.dtype) + (a == b).to(like.dtype) * 0.5


_ARITH = "function method inplace out"

@primitive(complex=True,
           variants=_ARITH, rule=_binary_rule("add", "arith"), cost=costs.pointwise(1),
           grad=Grad(input=lambda grad: grad, other=lambda grad: grad),
           operators="__add__ __radd__ __iadd__",
           operator_impl=functools.partial(binary, "add"), inplace_method=_scaled_inplace("add"),
           fused=("opmath_axpy",))
def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """Adds `other`, scaled by `alpha`, to `input`: `input + alpha * other`, with
    broadcasting and type promotion."""
    if not _plain(alpha):
        return _opmath("opmath_axpy", lambda: binary("add", input, _scaled(
            "add", input, other, alpha)), input, other, _signed("add", input, alpha))
    return binary("add", input, other)


@primitive(complex=True,
           variants=_ARITH, rule=_binary_rule("sub", "arith"), cost=costs.pointwise(1),
           grad=Grad(input=lambda grad: grad, other=lambda grad: -grad),
           operators="__sub__ __rsub__ __isub__",
           operator_impl=functools.partial(binary, "sub"), inplace_method=_scaled_inplace("sub"),
           aliases="subtract", fused=("opmath_axpy",))
def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """Subtracts `other`, scaled by `alpha`, from `input`: `input - alpha * other`."""
    if not _plain(alpha):
        return _opmath("opmath_axpy", lambda: binary("sub", input, _scaled(
            "sub", input, other, alpha)), input, other, _signed("sub", input, alpha))
    return binary("sub", input, other)


@composite(complex=True, variants="function")
def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """`other - alpha * input`."""
    return sub(other, input, alpha=alpha)


def _compare_inplace(name: str, fn: Any) -> Any:
    """`x.eq_(y)`: the comparison's bools written into x as its own dtype (1 and 0)."""
    def method(self: Tensor, other: Any) -> Tensor:
        return apply_inplace(self, lambda old: fn(old, other), other, op=name + "_")
    method.__name__ = name + "_"
    return method


def _remainder_other_grad(grad: Tensor, input: Any, other: Tensor) -> Tensor:
    """`-grad * floor(input / other)`; `number % t` has no derivative in PyTorch."""
    if not isinstance(input, Tensor):
        _no_derivative("remainder")(grad)
    with no_grad():  # (floor_divide has no derivative: the quotient is a constant)
        quotient = input.floor_divide(other)
    return -(grad * quotient)


def _declare_binary(name: str, kind: str, doc: str, *, grad: Grad | None = None,
                    precision: P = P.KEEP,
                    operators: str = "", aliases: str = "", flops: float = 1,
                    variants: str = _ARITH, tensors: bool = False, **fields: Any) -> Any:
    """A binary op; `tensors`: PyTorch's takes only tensors (no number for `other`)."""
    fn = (_tensors_binary_fn if tensors else _binary_fn)(name)
    inplace = None
    if "inplace" in variants:
        inplace = (_compare_inplace if kind == "compare" else _binary_inplace)(name, fn)
    return define(name, Kind.PRIMITIVE, fn, variants=variants, rule=_binary_rule(name, kind),
                  grad=grad, precision=precision, cost=costs.pointwise(flops),
                  doc=doc, operators=operators, aliases=aliases,
                  operator_impl=functools.partial(binary, name) if operators else None,
                  inplace_method=inplace, **fields)


mul = _declare_binary("mul", "arith", "Multiplies `input` by `other`, with broadcasting.",
                      operators="__mul__ __rmul__ __imul__", aliases="multiply", complex=True,
                      grad=Grad(input=lambda grad, other: grad * conj(other),
                                other=lambda grad, input: grad * conj(input),
                                wrapped=("other",)))
floor_divide = _declare_binary(
    "floor_divide", "arith", "Divides `input` by `other` and rounds the quotient down.",
    operators="__floordiv__ __rfloordiv__ __ifloordiv__",
    grad=Grad("NotImplemented", input=_no_derivative("floor_divide"),
              other=_no_derivative("floor_divide")))
remainder = _declare_binary(
    "remainder", "arith", "Python's modulus: the remainder has the sign of the divisor.",
    operators="__mod__ __rmod__ __imod__",
    grad=Grad(input=lambda grad: grad, other=_remainder_other_grad))
def _bool_power(input: Any, exponent: Any) -> bool:
    """A bool tensor to a bool exponent: PyTorch's pow(Tensor, Scalar) answers the
    exponents 1 and 0 with a copy and ones before choosing a kernel (none takes bool)."""
    return isinstance(exponent, bool) and isinstance(input, Tensor) and input._dtype is dt.bool_


def _stepwise_power(input: Any, exponent: Any) -> bool:
    """A bfloat16 tensor to the number 3 or -2: PyTorch's CPU kernel multiplies in
    bfloat16 there (`x * x * x`, `1 / (x * x)`), rounding after each step; any other
    exponent (a tensor too) it takes to the power in float32, rounded once."""
    return type(exponent) in (int, float) and (exponent == 3 or exponent == -2) and \
        isinstance(input, Tensor) and input._dtype is dt.bfloat16


def _pow_stepwise(input: Tensor, exponent: Any) -> Tensor:
    with no_grad():
        square = mul(input, input)
        out = mul(square, input) if exponent == 3 else reciprocal(square)
    record_grad(OPS["pow"], (input, exponent), {}, out)
    return out


def _pow(input: Any, exponent: Any) -> Tensor:
    if _bool_power(input, exponent):  # `b ** True`, `torch.pow(b, False)`
        return input.clone() if exponent else ones_like(input)
    if type(exponent) in (int, float) and (exponent == 3 or exponent == -2) and \
            _stepwise_power(input, exponent):  # (inline first: other powers pay no call)
        return _pow_stepwise(input, exponent)
    if isinstance(exponent, int) and isinstance(input, Tensor) and \
            not input._dtype.is_floating_point:  # PyTorch converts it to input's dtype
        exponent = dt.fit_scalar(exponent, input._dtype)
    return binary("pow", input, exponent)


_pow_kernel_inplace = _binary_inplace("pow", _pow)


def _pow_inplace(self: Tensor, exponent: Any) -> Tensor:
    """`x.pow_(y)`; `b.pow_(True)` through `_pow` (no kernel takes bool)."""
    if _bool_power(self, exponent) or type(exponent) in (int, float) and (
            exponent == 3 or exponent == -2) and _stepwise_power(self, exponent):
        return apply_inplace(self, lambda old: _pow(old, exponent), exponent, op="pow_")
    return _pow_kernel_inplace(self, exponent)


_pow_inplace.__name__ = "pow_"
pow = define("pow", Kind.PRIMITIVE, _pow, variants=_ARITH, complex=True,  # noqa: A001
             rule=_binary_rule("pow", "arith"), precision=P.FLOAT32,
             grad=Grad(input=_pow_grad_input, other=_pow_grad_exponent),
             cost=costs.pointwise(8), operators="__pow__ __rpow__ __ipow__",
             operator_impl=_pow, inplace_method=_pow_inplace,
             doc="Takes the power of each element of `input` with `exponent` (a number or "
                 "a tensor).")
maximum = _declare_binary(  # (PyTorch has no maximum_)
    "maximum", "arith", "The elementwise maximum (NaN propagates).", variants="function method out",
    tensors=True,
    grad=Grad(input=lambda grad, input, other: grad * _share(input, other, grad, "maximum"),
              other=lambda grad, input, other: grad * (1.0 - _share(input, other, grad,
                                                                    "maximum"))))
minimum = _declare_binary(
    "minimum", "arith", "The elementwise minimum (NaN propagates).", variants="function method out",
    tensors=True,
    grad=Grad(input=lambda grad, input, other: grad * _share(input, other, grad, "minimum"),
              other=lambda grad, input, other: grad * (1.0 - _share(input, other, grad,
                                                                    "minimum"))))
# maximum/minimum with a number allowed, for ember's own code (`maximum_of(k, 10.0)`):
# the public ops refuse one, as PyTorch's do
maximum_of = _binary_fn("maximum")
minimum_of = _binary_fn("minimum")
atan2 = _declare_binary(
    "atan2", "float", "Element-wise arctangent of `input / other`, in the quadrant given by "
    "the signs of both.", precision=P.PROMOTE, flops=16, aliases="arctan2", tensors=True,
    grad=Grad(input=lambda grad, input, other: grad * other / (input * input + other * other),
              other=lambda grad, input, other: -(grad * input / (input * input + other * other))))


def _div_fn(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is None:
        return binary("div", input, other)
    with no_grad():
        out = _rounded_div(input, other, rounding_mode)
    # PyTorch's one node for a rounded division (div.Tensor_mode), its gradient zero
    shapes = [tuple(t.shape) if isinstance(t, Tensor) else None for t in (input, other)]
    record("DivBackward2", lambda node, g: tuple(
        None if shape is None else g.new_zeros(shape) for shape in shapes), (input, other), out)
    return out


def _rounded_div(input: Any, other: Any, rounding_mode: str) -> Tensor:
    """`input / other` rounded down (`"floor"`) or toward zero (`"trunc"`)."""
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        common = dt.result_type(operand_tier(input), operand_tier(other))
        if common.is_floating_point:
            return binary("div", input, other).trunc()
        if common is dt.bool_ or common in dt.LIMITED_DTYPES:
            raise not_implemented_for("div_trunc", input, common)
        # integers, exactly (not through a float quotient): the floor, moved up by one
        # where the quotient is negative and inexact
        q = floor_divide(input, other)
        return q + (q < 0).logical_and(q * other != input).to(q.dtype)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


_div_fn.__doc__ = ("Divides `input` by `other` (true division); `rounding_mode=\"floor\"` "
                   "or `\"trunc\"` rounds the quotient.")
def _rtruediv(other: Any, input: Tensor) -> Tensor:
    """PyTorch's `number / tensor`: `tensor.reciprocal() * number` (rounded twice, as its
    `Tensor.__rtruediv__`); a tensor numerator divides."""
    if isinstance(other, Tensor):
        return binary("div", other, input)
    if not isinstance(other, numbers.Number):  # a NumPy array: NumPy multiplies (`__rmul__`)
        return reciprocal(input) * other
    return mul(reciprocal(input), other)


div = define("div", Kind.PRIMITIVE, _div_fn, variants=_ARITH, rule=_binary_rule("div", "float"),
             cost=costs.pointwise(1), complex=True,
             grad=Grad(input=lambda grad, other: grad / conj(other),
                       other=lambda grad, input, other: -(grad * conj(input / (other * other))),
                       wrapped=("other",)),
             operators="__truediv__ __rtruediv__ __itruediv__",
             operator_impl=functools.partial(binary, "div"), reflected_impl=_rtruediv,
             aliases="divide true_divide",
             inplace_method=_binary_inplace("div", _div_fn))
# aliases: function objects of their own, named as called (torch.fx prints the name)
true_divide, divide = alias(div, "true_divide"), alias(div, "divide")
subtract = alias(sub, "subtract")
multiply = alias(mul, "multiply")
negative, absolute, fix = alias(neg, "negative"), alias(abs, "absolute"), alias(trunc, "fix")
arcsin, arccos, arctan = alias(asin, "arcsin"), alias(acos, "arccos"), alias(atan, "arctan")
arctan2 = alias(atan2, "arctan2")

# comparisons and logical ops: bool results, no gradient
_COMPARE = "function method inplace out"
_LOGICAL = "function method inplace out"
eq = _declare_binary("eq", "compare", "Computes `input == other` element-wise.",
                     operators="__eq__", variants=_COMPARE, complex=True)
ne = _declare_binary("ne", "compare", "Computes `input != other` element-wise.",
                     operators="__ne__", variants=_COMPARE, aliases="not_equal", complex=True)
lt = _declare_binary("lt", "compare", "Computes `input < other` element-wise.",
                     operators="__lt__", variants=_COMPARE, aliases="less")
le = _declare_binary("le", "compare", "Computes `input <= other` element-wise.",
                     operators="__le__", variants=_COMPARE, aliases="less_equal")
gt = _declare_binary("gt", "compare", "Computes `input > other` element-wise.",
                     operators="__gt__", variants=_COMPARE, aliases="greater")
ge = _declare_binary("ge", "compare", "Computes `input >= other` element-wise.",
                     operators="__ge__", variants=_COMPARE, aliases="greater_equal")
logical_and = _declare_binary("logical_and", "logical", "The element-wise logical AND "
                              "(nonzero is True).", variants=_LOGICAL,
                              tensors=True)
logical_or = _declare_binary("logical_or", "logical", "The element-wise logical OR "
                             "(nonzero is True).", variants=_LOGICAL,
                             tensors=True)
logical_xor = _declare_binary("logical_xor", "logical", "The element-wise logical XOR "
                              "(nonzero is True).", variants=_LOGICAL,
                              tensors=True)
bitwise_and = _declare_binary("bitwise_and", "bitwise", "The bitwise AND of integer or bool "
                              "tensors.", operators="__and__ __rand__ __iand__",
                              variants=_LOGICAL)
bitwise_or = _declare_binary("bitwise_or", "bitwise", "The bitwise OR of integer or bool "
                             "tensors.", operators="__or__ __ror__ __ior__", variants=_LOGICAL)
bitwise_xor = _declare_binary("bitwise_xor", "bitwise", "The bitwise XOR of integer or bool "
                              "tensors.", operators="__xor__ __rxor__ __ixor__",
                              variants=_LOGICAL)
not_equal, less, less_equal = alias(ne, "not_equal"), alias(lt, "less"), alias(le, "less_equal")
greater, greater_equal = alias(gt, "greater"), alias(ge, "greater_equal")


@composite(complex=True, variants="function")
def result_type(tensor1: Any, tensor2: Any) -> dt.dtype:
    """The dtype an arithmetic op on these operands (tensors or numbers) would produce."""
    operands = (tensor1, tensor2)
    if not all(isinstance(v, Tensor) or _is_number(python_scalar(v)) for v in operands):
        got = ", ".join(type_name(v) for v in operands)
        marks = ", ".join(f"!{type_name(v)}!" for v in operands)
        why = f"      didn't match because some of the arguments have invalid types: ({marks})\n"
        raise TypeError(
            f"result_type() received an invalid combination of arguments - got ({got}), but "
            "expected one of:\n * (Tensor tensor, Tensor other)\n" + why +
            " * (Number scalar, Tensor tensor)\n" + why + " * (Tensor tensor, Number other)\n"
            + why + " * (Number scalar1, Number scalar2)\n" + why)
    return dt.result_type(operand_tier(tensor1), operand_tier(tensor2))


@composite(complex=True, variants="function method")
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8,
            equal_nan: bool = False) -> Tensor:
    """Whether each element of `input` is close to `other`:
    `|input - other| <= atol + rtol * |other|`; an infinity is close only to itself, and
    NaN to NaN only with `equal_nan`. With zero tolerances it is `input == other`; bool
    tensors are compared as the default float dtype (PyTorch's rules)."""
    if not isinstance(other, Tensor):  # (a number: no overload takes one)
        raise ArgumentTypeError("isclose", "other", 1, "Tensor", other)
    if input.dtype != other.dtype:
        names = dt.SCALAR_TYPE_NAMES
        raise RuntimeError(f"{names.get(input.dtype.name, input.dtype.name)} did not match "
                           f"{names.get(other.dtype.name, other.dtype.name)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    close = input == other
    if equal_nan and input.dtype._differentiable:  # (floating or complex: NaN exists)
        close = close.logical_or(input.isnan().logical_and(other.isnan()))
    if rtol == 0 and atol == 0:
        return close
    if input.dtype == dt.bool_:
        input = to_dtype(input, dt.get_default_dtype())
    if other.dtype == dt.bool_:
        other = to_dtype(other, dt.get_default_dtype())
    if input.dtype in dt.LIMITED_DTYPES:  # (PyTorch computes; ember's sub would refuse)
        input, other = to_dtype(input, dt.float64), to_dtype(other, dt.float64)
    error = (input - other).abs()
    return close.logical_or(error.isfinite().logical_and(error <= other.abs() * rtol + atol))


@composite(complex=True, variants="function method")
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8,
             equal_nan: bool = False) -> bool:
    """Whether every element of `input` is close to `other` (see `isclose`)."""
    if not isinstance(other, Tensor):
        raise ArgumentTypeError("allclose", "other", 1, "Tensor", other)
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@composite(variants="function method")
def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and elements."""
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all())


# -- where and clamp ------------------------------------------------------------------


def _first_tensor(*xs: Any) -> Tensor:
    for x in xs:
        if isinstance(x, Tensor):
            return x
    raise TypeError("expected at least one tensor operand")


def _where_method(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    return where(condition, self, other)


@primitive(complex=True,
           rule=_where_rule, uncast=(0,), variants="function method out", exact_out="where",
           method=_where_method, cost=costs.pointwise(1),
           grad=Grad(input=lambda grad, condition: where(condition, grad, 0.0),
                     other=lambda grad, condition: where(condition, 0.0, grad)))
def where(condition: Tensor, input: Any = None, other: Any = None) -> Tensor:
    """`input` where `condition` holds, else `other` (broadcasting); with only a condition,
    the indices of its true elements, like `nonzero(as_tuple=True)`."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    t = _first_tensor(condition, input, other)
    if not isinstance(condition, Tensor):
        condition = Tensor._from_data(condition, device=t.device)
    elif condition.dtype is dt.uint8:  # PyTorch still takes a byte mask, with a warning
        warn_once("where received a uint8 condition tensor. This behavior is deprecated and "
                  "will be removed in a future version of PyTorch. Use a boolean condition "
                  "instead.", stacklevel=user_stacklevel())
        condition = condition.bool()
    input, other = as_operand(input, t), as_operand(other, t)
    common = dt.result_type(operand_tier(input), operand_tier(other))
    if not common.is_floating_point:  # a number outside an integer result's range raises
        input, other = _fit_numbers(common, input, other)
    return apply(OPS["where"], condition, input, other)


def _kept_grad(grad: Tensor, keep: Tensor, negative_slope: float) -> Tensor:
    return where(keep, grad, grad * negative_slope if negative_slope else 0.0)


@composite(variants="", cost=costs.pointwise(1),
           grad=Grad(grad_output=_kept_grad, input=lambda grad: zeros_like(grad)))
def activation_backward(grad_output: Tensor, input: Tensor, keep: Tensor,
                        negative_slope: float = 0.0, label: str | None = None) -> Tensor:
    """The gradient of a piecewise-linear activation (ReLU's threshold_backward, hardtanh's
    and leaky_relu's backward): `grad_output` where `keep`, else `grad_output *
    negative_slope` (0). One node that reads `input` too, with a zero gradient, as PyTorch's
    does: a gradient taken with `create_graph=True` stays connected to the input (a
    Laplacian through a ReLU net is zeros, not an unused-tensor error), named `label`."""
    with no_grad():
        out = _kept_grad(grad_output, keep, negative_slope)
    record_grad(OPS["activation_backward"], (grad_output, input),
                {"keep": keep, "negative_slope": negative_slope}, out, label)
    return out


def _fit_numbers(to: dt.dtype, *values: Any) -> list[Any]:
    """Python numbers among `values` converted to dtype `to` as PyTorch checks them (1000
    into int8 raises; -1 into uint8 is 255); tensors and None as they are."""
    return [v if v is None or isinstance(v, Tensor) else dt.fit_scalar(v, to) for v in values]


def _clamp_bounds(input: Tensor, min: Any, max: Any) -> list[Any]:  # noqa: A002
    """clamp's Python-number bounds, checked against its result's dtype."""
    min, max = python_scalar(min), python_scalar(max)  # noqa: A001
    if not input.dtype.is_complex and any(isinstance(v, complex) and v.imag
                                          for v in (min, max)):
        # (PyTorch reads a number bound as a double first)
        raise RuntimeError("value cannot be converted to type double without overflow")
    tiers = [operand_tier(input)] + [operand_tier(v) for v in (min, max) if v is not None]
    return _fit_numbers(dt.result_type(*tiers), min, max)


def _clamp_grad(grad, input, min, max):  # noqa: A002
    keep = None
    if min is not None:
        keep = input >= min
    if max is not None:
        keep = input <= max if keep is None else keep.logical_and(input <= max)
    return grad.where(keep, 0.0)


def _clamp_inplace_of(fn: Any, name: str) -> Any:
    """`x.clamp_(min, max)` (clamp_min_, clamp_max_): with number bounds, PyTorch's
    check names the destination's C++ type ("can't be cast to the desired output type
    long int"), unlike other in-place ops."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        bounds = [python_scalar(v) for v in (*args, *kwargs.values())]
        if not any(isinstance(v, Tensor) for v in bounds):
            tiers = [operand_tier(self)] + [operand_tier(v) for v in bounds if v is not None]
            d = dt.result_type(*tiers)
            if d._category > self._dtype._category:
                raise RuntimeError(f"result type {dt.SCALAR_TYPE_NAMES[d.name]} can't be cast "
                                   f"to the desired output type {cpp_type_name(self._dtype)}")
        return apply_inplace(self, lambda old: fn(old, *args, **kwargs), *args,
                             *kwargs.values(), op=name)
    method.__name__ = name
    return method


@primitive(rule=_clamp_rule, variants="function method inplace out", aliases="clip",
           exact_out="found", inplace_method=_clamp_inplace_of(lambda *a, **k: clamp(*a, **k),
                                                               "clamp_"),
           grad=Grad("ClampBackward1", input=_clamp_grad), cost=costs.pointwise(2))
def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Clamps every element into [min, max]; either bound may be None or a tensor."""
    if isinstance(min, Tensor) != isinstance(max, Tensor) and min is not None \
            and max is not None and all(v.ndim == 0 for v in (min, max)
                                        if isinstance(v, Tensor)):
        # a 0-d tensor with a number: PyTorch's parser reads it as a number (Number overload)
        min, max = (v.item() if isinstance(v, Tensor) else v for v in (min, max))  # noqa: A001
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        if not all(v is None or isinstance(v, Tensor) for v in (min, max)):
            # (one overload takes tensor bounds, the other numbers: none takes both)
            got = ", ".join("Tensor" if isinstance(v, Tensor) else type_name(v)
                            for v in (input, min, max) if v is not None)
            raise invalid_combination("clamp", got, (
                "(Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)",
                "(Tensor input, Number min = None, Number max = None, *, Tensor out = None)"))
        refuse_unsigned("clamp_cpu", input)
        return _clamp_tensors(input, min, max)
    min, max = _clamp_bounds(input, min, max)  # noqa: A001
    return apply(OPS["clamp"], input, min=min, max=max)


def _clamp_min_grad(grad, input, min, max):  # noqa: A002
    below = input < min
    return grad.where(below if max is None else below.logical_and(min < max), 0.0)


def _clamp_max_grad(grad, input, min, max):  # noqa: A002
    above = input > max
    return grad.where(above if min is None else above.logical_or(max < min), 0.0)


@composite(variants="", cost=costs.pointwise(2),
           grad=Grad("ClampBackward0", input=_clamp_grad, min=_clamp_min_grad,
                     max=_clamp_max_grad))
def _clamp_tensors(input: Tensor, min: Any, max: Any) -> Tensor:  # noqa: A002
    """clamp with tensor bounds: `minimum(maximum(input, min), max)`, whose gradient goes
    where PyTorch sends it (to `input` when it is inside the bounds, ties included)."""
    with no_grad():
        out = input
        if min is not None:
            out = maximum_of(out, min)
        if max is not None:
            out = minimum_of(out, max)
        if out is input:
            out = input.clone()
    record_grad(OPS["_clamp_tensors"], (input, min, max), {}, out)
    return out


clip = clamp


@composite(variants="function method inplace",
           inplace_method=_clamp_inplace_of(lambda *a, **k: clamp_min(*a, **k), "clamp_min_"))
def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    """Clamps every element to at least `min`."""
    if isinstance(min, Tensor):
        return clamp(input, min=min)
    return apply_labelled(OPS["clamp"], "ClampMinBackward0", input,
                          min=_clamp_bounds(input, min, None)[0], max=None)


@composite(variants="function method inplace",
           inplace_method=_clamp_inplace_of(lambda *a, **k: clamp_max(*a, **k), "clamp_max_"))
def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    """Clamps every element to at most `max`."""
    if isinstance(max, Tensor):
        return clamp(input, max=max)
    return apply_labelled(OPS["clamp"], "ClampMaxBackward0", input, min=None,
                          max=_clamp_bounds(input, None, max)[1])


# -- composites of the arithmetic ------------------------------------------------------


def _lerp_label(input: Any, end: Any, weight: Any) -> str:
    return "LerpBackward1" if isinstance(weight, Tensor) else "LerpBackward0"


def _check_lerp(input: Tensor, end: Any, weight: Any) -> Any:
    """PyTorch's checks of lerp's operands, in its order and words: `end` (and a weight
    tensor of one or more dimensions) of `input`'s dtype, shapes that broadcast, a
    floating or complex dtype (its kernels have no integer variant), a number weight that
    fits the dtype. Returns the weight (a complex number with no imaginary part as its
    real part, for a real dtype)."""
    if isinstance(end, Tensor) and end._dtype is not input._dtype:
        raise RuntimeError(f"expected dtype {cpp_type_name(input._dtype)} for `end` but got "
                           f"dtype {cpp_type_name(end._dtype)}")
    tensor_weight = isinstance(weight, Tensor)
    if tensor_weight and weight.ndim and weight._dtype is not input._dtype:
        raise RuntimeError(f"expected dtype {cpp_type_name(input._dtype)} for `weight` but "
                           f"got dtype {cpp_type_name(weight._dtype)}")
    if isinstance(end, Tensor):  # (as PyTorch's iterator: input with end, then weight)
        shape = broadcast_shapes("lerp", tuple(input.shape), tuple(end.shape))
        if tensor_weight:
            broadcast_shapes("lerp", shape, tuple(weight.shape))
    def floating(d: dt.dtype) -> bool:
        return d.is_floating_point or d.is_complex

    # (a 0-d weight tensor takes part in the type promotion: a float one makes it float)
    if not floating(input._dtype) and not (tensor_weight and not weight.ndim
                                           and floating(weight._dtype)):
        kernel = "lerp_kernel_tensor" if tensor_weight else "lerp_kernel_scalar"
        raise kernel_refuses(kernel, input._dtype)
    if not tensor_weight:
        weight = dt.fit_scalar(python_scalar(weight), input._dtype)
    return weight


@composite(complex=True,
           node_label=_lerp_label, variants="function method inplace", cost=costs.pointwise(3),
           fused=("opmath_lerp",))
def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """Linear interpolation: `input + weight * (end - input)`, or `end - (end - input) *
    (1 - weight)` where `|weight| >= 0.5` (PyTorch's formula: exact at weight 1, and the
    same infinities and NaNs)."""
    weight = _check_lerp(input, end, weight)
    return in_iter_order(_lerp(input, end, weight), input, end, weight)


def _lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    return _opmath("opmath_lerp", lambda: _lerp_decomposed(input, end, weight), input, end,
                   weight)


def _lerp_decomposed(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    diff = sub(end, input)
    if not isinstance(weight, Tensor):
        return add(input, mul(diff, weight)) if -0.5 < weight < 0.5 else \
            sub(end, mul(diff, 1 - weight))
    return where(abs(weight) < 0.5, add(input, mul(diff, weight)),
                 sub(end, mul(diff, rsub(weight, 1))))


def _addc_value(op: str, input: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Any:
    """PyTorch's `value` of addcmul/addcdiv: no part of the promotion, but a number of the
    tensors' common dtype, checked as written into it (an integer result truncates 0.5 to
    0; a complex value into a real one raises). A bool result has no kernel."""
    common = dt.result_type(operand_tier(input), operand_tier(tensor1), operand_tier(tensor2))
    if common is dt.bool_:
        raise kernel_refuses(f"{op}_cpu_out", common)
    value = dt.fit_scalar(python_scalar(value), common)
    if isinstance(value, complex) and not common.is_complex:
        value = value.real
    return int(value) if not (common.is_floating_point or common.is_complex) else value


def _addcmul_inplace(self: Tensor, tensor1: Tensor, tensor2: Tensor, *,
                     value: Any = 1) -> Tensor:
    value = _addc_value("addcmul", self, tensor1, tensor2, value)
    if tracked(self, tensor1, tensor2):
        return apply_inplace(self, lambda old: addcmul(old, tensor1, tensor2, value=value),
                             tensor1, tensor2, op="addcmul_")
    done = _opmath_inplace(self, "opmath_addcmul", tensor1, tensor2, python_scalar(value))
    if done is not None:
        return done
    prod_ = mul(tensor1, tensor2)
    return run_binary("add", self, mul(prod_, value) if value != 1 else prod_, out=self)


def _addcdiv_inplace(self: Tensor, tensor1: Tensor, tensor2: Tensor, *,
                     value: Any = 1) -> Tensor:
    if tracked(self, tensor1, tensor2):
        return apply_inplace(self, lambda old: addcdiv(old, tensor1, tensor2, value=value),
                             tensor1, tensor2, op="addcdiv_")
    _no_integer_addcdiv(tensor1, tensor2)
    value = _addc_value("addcdiv", self, tensor1, tensor2, value)
    done = _opmath_inplace(self, "opmath_addcdiv", tensor1, tensor2, python_scalar(value))
    if done is not None:
        return done
    # PyTorch's kernel: `self + value * tensor1 / tensor2`, the product first
    q = div(mul(tensor1, value), tensor2) if value != 1 else div(tensor1, tensor2)
    return run_binary("add", self, q, out=self)


@composite(complex=True,
           node_label="AddcmulBackward0", variants="function method inplace", precision=P.PROMOTE,
           inplace_method=_addcmul_inplace, cost=costs.pointwise(3), fused=("opmath_addcmul",))
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """`input + value * tensor1 * tensor2`."""
    refuse_unsigned("addcmul_cpu_out", input)
    value = _addc_value("addcmul", input, tensor1, tensor2, value)
    # (tensor2 * tensor1: the product's node then saves tensor1 first, PyTorch's order)
    return _opmath("opmath_addcmul", lambda: add(input, mul(mul(tensor2, tensor1), value)),
                   input, tensor1, tensor2, python_scalar(value))


@composite(complex=True, node_label="AddcdivBackward0", variants="function method inplace",
           precision=P.PROMOTE, inplace_method=_addcdiv_inplace, cost=costs.pointwise(3),
           fused=("opmath_addcdiv",))
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """`input + value * tensor1 / tensor2`."""
    _no_integer_addcdiv(tensor1, tensor2)
    value = _addc_value("addcdiv", input, tensor1, tensor2, value)
    # PyTorch's kernel: `input + value * tensor1 / tensor2`, the product first
    return _opmath("opmath_addcdiv", lambda: add(input, div(mul(tensor1, value), tensor2)
                                                 if value != 1 else div(tensor1, tensor2)),
                   input, tensor1, tensor2, python_scalar(value))


def _no_integer_addcdiv(tensor1: Tensor, tensor2: Tensor) -> None:
    if not (tensor1.dtype._differentiable or tensor2.dtype._differentiable):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future  release addcdiv will perform a true division of tensor1 "
                           "and tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                           "for integer inputs and as (input + value * tensor1 / tensor2) for "
                           "float inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all "
                           "dtypes.")


@composite(complex=True, node_label="PowBackward0",
           variants="function method inplace out", cost=costs.pointwise(1))
def square(input: Tensor) -> Tensor:
    """Returns the square of each element (of a bool tensor: as int64, like `pow(x, 2)`)."""
    if input.dtype is dt.bool_:
        input = to_dtype(input, dt.int64)
    refuse_unsigned("pow", input)  # (PyTorch squares by pow's kernel)
    if input.is_sparse:  # a COO tensor's pow: of its coalesced values (x * x keeps entries)
        return input.pow(2)
    return mul(input, input)


def _opmath_operands(input: Any, other: Any, common: dt.dtype) -> tuple[Any, Any]:
    """The operands of a half-precision (float16, bfloat16) op as float32 tensors, the
    way ATen computes them; others as they are."""
    if common not in (dt.float16, dt.bfloat16):
        return input, other
    return tuple(to_dtype(x, dt.float32) if isinstance(x, Tensor) else x
                 for x in (input, other))


def _logaddexp_grad(grad: Tensor, mine: Tensor, theirs: Tensor, result: Tensor) -> Tensor:
    if mine.dtype.is_complex or theirs.dtype.is_complex:  # derivatives.yaml's, conjugated
        return grad / conj((theirs - mine).exp() + 1.0)
    return grad * (mine - result).exp()


def _complex_logaddexp(a: Tensor, b: Tensor) -> Tensor:
    """ATen's complex logaddexp: `log1p(exp(min - max)) + max`, the operands ordered by
    their real parts; NaN (either part) where either has one; an operand itself where
    both real parts are -inf, `log(exp(x) + exp(y))` where both are +inf."""
    a_nan = a.real.isnan().logical_or(a.imag.isnan())
    b_nan = b.real.isnan().logical_or(b.imag.isnan())
    a_first = (a.real < b.real).logical_and(b_nan.logical_not())
    lo, hi = where(a_first, a, b), where(a_first, b, a)
    out = log1p((lo - hi).exp()) + hi
    same_inf = lo.real.isinf().logical_and(lo.real == hi.real)
    both_pos = log(lo.exp() + hi.exp())
    out = where(same_inf, where(lo.real < 0, lo, both_pos), out)
    return where(a_nan.logical_or(b_nan), complex(math.nan, math.nan), out)


@composite(variants="function method out", cost=costs.pointwise(6), complex=True, grad=Grad(
    input=lambda grad, input, other, result: _logaddexp_grad(grad, input, other, result),
    other=lambda grad, input, other, result: _logaddexp_grad(grad, other, input, result)))
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """`log(exp(input) + exp(other))`, computed without overflow or underflow."""
    check_tensors("logaddexp", input, other)
    common = dt.result_type(operand_tier(input), operand_tier(other))
    if common.is_complex:
        with no_grad():
            out = _complex_logaddexp(to_dtype(input, common), to_dtype(other, common))
        record_grad(OPS["logaddexp"], (input, other), {}, out)
        return out
    if not common.is_floating_point:
        raise not_implemented_for("logaddexp", input if isinstance(input, Tensor) else other,
                                  common)
    with no_grad():
        # (half precision: computed in float32 and rounded once, as ATen's opmath does)
        a, b = _opmath_operands(input, other, common)
        larger = maximum_of(a, b)
        out = larger + (-(a - b).abs()).exp().log1p()
        # equal infinities: their own value (inf - inf would make the formula NaN)
        out = where(larger.isinf().logical_and(a == b), larger, out)
        if out.dtype is not common:
            out = to_dtype(out, common)
    record_grad(OPS["logaddexp"], (input, other), {}, out)
    return out


# -- dtype and device moves -----------------------------------------------------------


def _cast(input: Tensor, dtype: dt.dtype) -> Tensor:
    if input._dtype is dtype:
        return input
    if input._dtype.is_complex and not dtype.is_complex and dtype is not dt.bool_:
        # (PyTorch's TORCH_WARN_ONCE for a complex tensor cast to a real dtype)
        warn_once("Casting complex values to real discards the imaginary part", UserWarning,
                  stacklevel=user_stacklevel())
    return apply(OPS["cast"], input, dtype=dtype)


to_dtype = define("cast", Kind.PRIMITIVE, _cast, rule=_cast_rule, cost=costs.movement,
                  complex=True, grad=Grad("ToCopyBackward0", input=lambda grad: grad),
                  doc="`input` as `dtype`; differentiable between floating dtypes (users "
                      "write `x.to(dtype)`).")


@composite(complex=True, variants="", cost=costs.movement,
           grad=Grad("ToCopyBackward0", input=lambda grad, source: to_device(grad, source)))
def to_device(input: Tensor, device: Any, non_blocking: bool = False) -> Tensor:
    """`input` on another device; differentiable (the gradient moves back). Written with
    the backends' memory functions: a direct transfer when the source backend offers one
    (`Backend.export_to`), else through host memory."""
    dev, backend = resolve(device, math.prod(input.shape) * input._dtype.itemsize)
    if dev is input._device:
        return input
    check_dtype("to", backend, input._dtype, dev)
    tracing.refuse_tape(f"it moves a tensor from {input._device} to {dev}")
    src = input._backend
    if src.shape_only and not backend.shape_only:
        raise no_data()
    if backend is src:
        buf = src.to_device(input._data, dev.index or 0)
    else:
        buf = src.export_to(input._data, backend, dev.index or 0)
        if buf is None:
            host = src.to_numpy(input._data)
            if non_blocking:  # from pinned memory the copy overlaps the host's work
                buf = backend.from_host_async(host, dev.index or 0)
            if buf is None:
                buf = backend.from_numpy(host, dev.index or 0)
    out = Tensor._make(buf, input._dtype, dev, backend)
    record_grad(OPS["to_device"], (input,), {"source": input._device}, out)
    if tracing.active is not None:
        tracing.primitive("to_device", (input,), {"device": str(dev)}, out)
    return out


_TO_SIGNATURES = (
    " * ({0}.device device = None, {0}.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, {0}.memory_format memory_format = None)\n"
    " * ({0}.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "{0}.memory_format memory_format = None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "{0}.memory_format memory_format = None)\n")


def _check_to_positionals(args: tuple) -> None:
    """PyTorch's parse of `to`'s positional forms: (device, dtype, non_blocking, copy),
    (dtype, non_blocking, copy) or (tensor, non_blocking, copy); e.g. `to("cpu", "cpu")`
    is refused as its argument parser does."""
    if len(args) < 2:
        return
    if len(args) > 4:
        raise TypeError(f"to() takes from 0 to 4 positional arguments but {len(args)} were "
                        "given")
    first = args[0]
    is_dtype = isinstance(first, (dt.dtype, type))
    rest = args[1:] if is_dtype or isinstance(first, Tensor) else args[2:]
    fits = len(rest) <= 2 and all(isinstance(a, bool) for a in rest)
    if not (is_dtype or isinstance(first, Tensor)):  # a device: then a dtype (or None)
        fits = fits and (args[1] is None or isinstance(args[1], (dt.dtype, type)))
    if not fits:
        api = dt.API_NAME
        got = ", ".join("Tensor" if isinstance(a, Tensor) else
                        f"{api}.dtype" if isinstance(a, dt.dtype) else
                        f"{api}.device" if type(a).__name__ == "device" else type(a).__name__
                        for a in args)
        raise TypeError(f"to() received an invalid combination of arguments - got ({got}), "
                        f"but expected one of:\n{_TO_SIGNATURES.format(api)}")


def to_arguments(args: tuple, kwargs: dict) -> tuple[Any, Any, bool, bool]:
    """`x.to(...)`'s arguments, in any of its forms, as (device, dtype, non_blocking,
    copy); device and dtype None where not given."""
    kwargs = dict(kwargs)
    device = kwargs.pop("device", None)
    d = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    non_blocking = bool(kwargs.pop("non_blocking", False))
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    _check_to_positionals(args)
    for a in args:
        if isinstance(a, Tensor):
            device, d = a.device, a.dtype
        elif isinstance(a, (dt.dtype, type)):  # to(float64) or to(float)
            d = a
        elif isinstance(a, bool):  # to(device, dtype, non_blocking) positionally
            non_blocking = a
        elif a is not None:
            device = a
    return device, (None if d is None else dtype_arg(d, "to")), non_blocking, copy


@composite(complex=True, variants="method")
def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """`x.to(device)`, `x.to(dtype)`, `x.to(device, dtype)` or `x.to(other)`: this tensor
    on another device or as another dtype (itself when nothing changes); with
    `memory_format=`, laid out in that format (`ember.channels_last`)."""
    fmt = check_format("to", kwargs.pop("memory_format", None))
    device, d, non_blocking, copy = to_arguments(args, kwargs)
    out = self
    if device is not None:
        out = to_device(out, device, non_blocking)
    if d is not None:
        out = to_dtype(out, d)
    if fmt is not preserve_format and tensor_format(out) is not fmt:
        out = out.clone(memory_format=fmt)  # (a copy even when `out` is contiguous in
    if copy and out is self:                # fmt too, as PyTorch's: N1HW in NHWC strides)
        out = out.clone()
    # a copy made here is PyTorch's _to_copy, whatever made it
    return relabel(out, "ToCopyBackward0", (self,)) if out._node is not None else out


@composite(complex=True, variants="method")
def cpu(self: Tensor) -> Tensor:
    """This tensor in CPU memory (itself if it is there)."""
    return to_device(self, "cpu")


@composite(complex=True, variants="method")
def cuda(self: Tensor, device: Any = None, non_blocking: bool = False) -> Tensor:
    """This tensor on a CUDA device (`cuda:0` unless given)."""
    return to_device(self, "cuda" if device is None else
                     (f"cuda:{device}" if isinstance(device, int) else device), non_blocking)


def _type(self: Tensor, dtype: Any = None, non_blocking: bool = False) -> Any:
    """With no argument, the tensor's type name (`ember.FloatTensor`); else this tensor as
    `dtype` (an ember dtype, or a type name such as `"ember.DoubleTensor"`); `non_blocking`
    is accepted as PyTorch's (a host copy here is synchronous anyway)."""
    if dtype is None:  # PyTorch's names: "torch.FloatTensor", "torch.cuda.FloatTensor"
        kind = "" if self.device.type == "cpu" else f"{self.device.type}."
        return f"{dt.API_NAME}.{kind}{_TYPE_NAMES[self.dtype.name]}"
    if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), dt.dtype):
        # a legacy type: t.type(ember.LongTensor), t.type(ember.cuda.FloatTensor)
        kind = getattr(dtype, "device_type", "cpu")
        return _to_type_name(self, f"ember.{kind}.{_TYPE_NAMES[dtype.dtype.name]}")
    if isinstance(dtype, str):
        return _to_type_name(self, dtype)
    if isinstance(dtype, type):  # PyTorch takes no Python type here (`to(float)` does)
        raise ValueError(f"invalid type: {dtype.__name__!r}")
    if not isinstance(dtype, dt.dtype):
        raise TypeError("dtype must be a type, str, or dtype object")
    return to(self, dtype=dtype)


def _to_type_name(self: Tensor, name: str) -> Tensor:
    """`x.type("torch.cuda.FloatTensor")`: a PyTorch type name (`ember.` or `torch.`, with
    a device kind or not; "torch." too: a PyTorch program run unchanged) -> this tensor as
    that dtype, on that kind of device."""
    by_name = {v: k for k, v in _TYPE_NAMES.items()}
    parts = name.split(".")
    if len(parts) not in (2, 3) or parts[0] not in ("ember", "torch") or \
            parts[-1] not in by_name:
        raise ValueError(f"invalid type: {name!r}")
    out = to(self, dtype=dt.from_name(by_name[parts[-1]]))
    if len(parts) == 3 and parts[1] != self.device.type:
        out = to_device(out, parts[1])
    return out


# declared by name: a module-level `type` would hide the builtin from this module's code
define("type", Kind.COMPOSITE, _type, variants="method", complex=True)
_TYPE_NAMES = dt.LEGACY_TYPE_NAMES


def _as_dtype(d: dt.dtype) -> Any:
    def method(self: Tensor, memory_format: Any = None) -> Tensor:
        return to_dtype(self, d)
    method.__doc__ = f"This tensor as {d!r} (itself if it is one)."
    return method


for _name, _d in (("float", dt.float32), ("double", dt.float64), ("half", dt.float16),
                  ("bfloat16", dt.bfloat16), ("long", dt.int64), ("int", dt.int32),
                  ("short", dt.int16), ("char", dt.int8), ("byte", dt.uint8),
                  ("bool", dt.bool_), ("cfloat", dt.complex64), ("cdouble", dt.complex128),
                  ("chalf", dt.complex32)):
    define(_name, Kind.COMPOSITE, _as_dtype(_d), variants="method", complex=True)
