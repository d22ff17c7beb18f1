"""ember's dtypes and PyTorch's type-promotion rules.

A dtype is a small immutable object (`ember.float32`); backends map it to their own
array dtype by `name`. Promotion follows PyTorch: categories bool < integer < floating < complex,
and a Python scalar or a 0-dim tensor only lifts the result's *category*, never its width
within the category of a dimensioned tensor (`int8_tensor + 1000` stays int8,
`float16_tensor + 1.5` stays float16, `int_tensor + 1.5` becomes the default float).
Complex is the top category, and its width follows the real one it meets: a complex
result is at least as wide as a floating operand (`float64 * complex64` is complex128,
`float32_tensor * 1j` complex64), and a Python complex scalar with an integer tensor takes
the default complex dtype (complex128 when the default float is float64).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from types import ModuleType

from ember.core.errors import type_name, with_context

API_NAME = "ember"
"""The package name printed forms show (`ember.float32`, `ember.Size([2])`); ember.torch_alias
sets it to "torch", so a PyTorch program run unchanged prints what it prints under PyTorch."""


_PRINTED_CLASSES: list[tuple[type, str]] = []  # (class, its module below the package)


def set_api_name(name: str) -> None:
    """Set the package name that reprs of dtypes, sizes, tensor types and the classes of
    `printed_in_api` show."""
    global API_NAME
    API_NAME = name
    for cls, submodule in _PRINTED_CLASSES:
        cls.__module__ = name + submodule


def printed_in_api(submodule: str = "") -> Callable[[type], type]:
    """Class decorator: name the class's module as the API does (`ember` or, under the
    torch alias, `torch`, then `submodule`), so `type(t)` prints `<class 'torch.Tensor'>`
    as under PyTorch.

    Only for classes whose instances pickle through `__reduce_ex__` (a function of their
    own module): `__module__` is then a printed name only, never a pickled path."""
    def register(cls: type) -> type:
        _PRINTED_CLASSES.append((cls, submodule))
        cls.__module__ = API_NAME + submodule
        return cls
    return register


def place_in(module: ModuleType, *classes: type) -> None:
    """Put `classes` in ember's `module` (PyTorch's module for them:
    `ember.nn.modules.container` for `Sequential`) and name it as their module, as the
    API prints it (`torch.nn.modules.container` under the alias, which serves ember's
    modules as torch's): they print as PyTorch's do and pickle by that path."""
    submodule = module.__name__[len("ember"):]
    for cls in classes:
        setattr(module, cls.__name__, cls)
        _PRINTED_CLASSES.append((cls, submodule))
        cls.__module__ = API_NAME + submodule


@printed_in_api()  # <class 'torch.dtype'> under the alias
class dtype:  # noqa: N801 - PyTorch's spelling
    """The element type of a tensor (`ember.float32`, `ember.int64`, ...)."""

    __slots__ = ("name", "itemsize", "is_floating_point", "is_complex", "is_signed",
                 "_category", "_rank", "_differentiable")

    def __init__(self, name: str, itemsize: int, category: int, rank: int,
                 signed: bool | None):
        self.name = name
        self.itemsize = itemsize
        self.is_floating_point = category == FLOAT
        self.is_complex = category == COMPLEX  # (a slot, not a property: dispatch reads it)
        if signed is not None:  # (None: the bits dtypes, whose class answers)
            self.is_signed = signed
        self._category = category  # BOOL < INT < FLOAT < COMPLEX
        self._rank = rank  # order within the promotion lattice
        # may require grad: floating and complex (not the quantized dtypes above them)
        self._differentiable = FLOAT <= category <= COMPLEX

    def __repr__(self) -> str:
        return f"{API_NAME}.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self) -> dtype:
        """The dtype of a complex dtype's real and imaginary parts; others: themselves."""
        return _REAL_OF.get(self.name, self)

    def to_complex(self) -> dtype:
        """The complex dtype whose parts are this floating dtype (complex dtypes: themselves);
        PyTorch's `toComplexType`."""
        if self.is_complex:
            return self
        if self.name in ("float64",):
            return complex128
        if self.name in ("float32", "bfloat16"):  # (bfloat16 has float32's range)
            return complex64
        raise TypeError(f"{self.name} has no complex counterpart in ember (no backend holds "
                        "complex32, PyTorch's chalf)")


BOOL, INT, FLOAT, COMPLEX, QUANTIZED = 0, 1, 2, 3, 4

SCALAR_TYPE_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                     "uint8": "Byte", "bool": "Bool", "float32": "Float", "float64": "Double",
                     "float16": "Half", "bfloat16": "BFloat16", "complex64": "ComplexFloat",
                     "complex128": "ComplexDouble"}
"""PyTorch's ScalarType names by dtype name, as its error messages print them."""

LEGACY_TYPE_NAMES = {d: f"{name}Tensor" for d, name in SCALAR_TYPE_NAMES.items()
                     if not d.startswith("complex")}
"""PyTorch's legacy tensor types by dtype name (`float32` -> `FloatTensor`): the
constructors of ember.core.legacy_types, ember.cuda and ember.sparse, and `x.type()`."""

bool_ = dtype("bool", 1, BOOL, 0, False)
uint8 = dtype("uint8", 1, INT, 1, False)
int8 = dtype("int8", 1, INT, 1, True)
int16 = dtype("int16", 2, INT, 2, True)
int32 = dtype("int32", 4, INT, 3, True)
int64 = dtype("int64", 8, INT, 4, True)
float16 = dtype("float16", 2, FLOAT, 5, True)
bfloat16 = dtype("bfloat16", 2, FLOAT, 5, True)
float32 = dtype("float32", 4, FLOAT, 6, True)
float64 = dtype("float64", 8, FLOAT, 7, True)
complex64 = dtype("complex64", 8, COMPLEX, 8, True)
complex128 = dtype("complex128", 16, COMPLEX, 9, True)

ALL_DTYPES: tuple[dtype, ...] = (
    bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
)
"""The real dtypes, which every backend holds."""
COMPLEX_DTYPES: tuple[dtype, ...] = (complex64, complex128)
"""The complex dtypes, which a backend holds only when it says so (`Backend.dtypes`)."""
EVERY_DTYPE: tuple[dtype, ...] = ALL_DTYPES + COMPLEX_DTYPES
FLOATING_DTYPES = (float16, bfloat16, float32, float64)
HALF_DTYPES = (float16, bfloat16)
"""The half-precision dtypes, which PyTorch's CPU kernels compute in float32 ("opmath")."""
_REAL_OF = {"complex64": float32, "complex128": float64, "complex32": float16}
_NAMES = {d.name: d for d in EVERY_DTYPE}
# PyTorch's aliases
_NAMES.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64,
              cfloat=complex64, cdouble=complex128)

# The quantized dtypes: what a quantized tensor (ember.core.quantized) reports as its dtype.
# No backend holds them: a quantized tensor keeps its integer values in a tensor of the
# storage dtype below (`int_repr()`), so they are outside every promotion.
qint8 = dtype("qint8", 1, QUANTIZED, 10, True)
quint8 = dtype("quint8", 1, QUANTIZED, 10, False)
qint32 = dtype("qint32", 4, QUANTIZED, 10, True)
quint4x2 = dtype("quint4x2", 1, QUANTIZED, 10, False)
QUANTIZED_DTYPES: tuple[dtype, ...] = (qint8, quint8, qint32, quint4x2)
STORAGE_OF = {"qint8": int8, "quint8": uint8, "qint32": int32, "quint4x2": uint8}
"""The dtype of a quantized tensor's integer values (`int_repr()`), by quantized dtype."""
QUANTIZED_RANGE = {"qint8": (-128, 127), "quint8": (0, 255), "qint32": (-(1 << 31), (1 << 31) - 1),
                   "quint4x2": (0, 15)}
"""The integers each quantized dtype holds (PyTorch's `quant_min`/`quant_max` defaults)."""
_NAMES.update((d.name, d) for d in QUANTIZED_DTYPES)
SCALAR_TYPE_NAMES.update(qint8="QInt8", quint8="QUInt8", qint32="QInt32", quint4x2="QUInt4x2")

# PyTorch's "shell" unsigned dtypes: tensors hold them (hash_tensor's uint64 results,
# NumPy arrays of them), few kernels take them, and they promote with no other integer
# dtype. The CPU backend holds them; they are in no list of dtypes the conformance suite
# draws from.
uint16 = dtype("uint16", 2, INT, 2, False)
uint32 = dtype("uint32", 4, INT, 3, False)
uint64 = dtype("uint64", 8, INT, 4, False)
LIMITED_DTYPES: tuple[dtype, ...] = (uint16, uint32, uint64)
_NAMES.update((d.name, d) for d in LIMITED_DTYPES)
SCALAR_TYPE_NAMES.update(uint16="UInt16", uint32="UInt32", uint64="UInt64")

# PyTorch's float8 dtypes, held on the host as ml_dtypes' types: tensors of them are made,
# cast (with PyTorch's rounding: ember.core.float8), copied, viewed and printed; PyTorch
# computes nothing in them, and they promote with no other dtype.
float8_e4m3fn = dtype("float8_e4m3fn", 1, FLOAT, 5, True)
float8_e5m2 = dtype("float8_e5m2", 1, FLOAT, 5, True)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", 1, FLOAT, 5, True)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", 1, FLOAT, 5, True)
float8_e8m0fnu = dtype("float8_e8m0fnu", 1, FLOAT, 5, False)
FLOAT8_DTYPES: tuple[dtype, ...] = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,
                                    float8_e5m2fnuz, float8_e8m0fnu)
_NAMES.update((d.name, d) for d in FLOAT8_DTYPES)
SCALAR_TYPE_NAMES.update((d.name, "Float8" + d.name[6:]) for d in FLOAT8_DTYPES)
LEGACY_TYPE_NAMES.update((d.name, f"Float8{d.name[6:]}Tensor") for d in FLOAT8_DTYPES)


class _BitsDtype(dtype):
    """PyTorch's bits dtypes (`bits8`, `bits4x2` ...): opaque bytes, neither signed nor
    unsigned."""

    __slots__ = ()

    @property
    def is_signed(self) -> bool:  # type: ignore[override]
        raise RuntimeError("Bits types are undefined")


# dtypes PyTorch names but no ember backend holds (nor PyTorch's kernels compute in):
# complex32 (ComplexHalf), the 1- to 7-bit integers, the bits types and float4, there for
# programs that name them (dtype tables, checks); a tensor of one is refused
complex32 = dtype("complex32", 4, COMPLEX, 7, True)
SUB_BYTE_INTS: tuple[dtype, ...] = tuple(
    dtype(f"{kind}{bits}", 1, INT, 1, kind == "int") for kind in ("uint", "int")
    for bits in range(1, 8))
BITS_DTYPES: tuple[dtype, ...] = tuple(_BitsDtype(name, size, INT, 1, None) for name, size in
                                       (("bits1x8", 1), ("bits2x4", 1), ("bits4x2", 1),
                                        ("bits8", 1), ("bits16", 2)))
float4_e2m1fn_x2 = dtype("float4_e2m1fn_x2", 1, FLOAT, 5, True)
UNHELD_DTYPES: tuple[dtype, ...] = (complex32, *SUB_BYTE_INTS, *BITS_DTYPES, float4_e2m1fn_x2)
_NAMES.update((d.name, d) for d in UNHELD_DTYPES)
_NAMES.update(chalf=complex32)
SCALAR_TYPE_NAMES.update(complex32="ComplexHalf", float4_e2m1fn_x2="Float4_e2m1fn_x2")
SCALAR_TYPE_NAMES.update((d.name, d.name[0].upper() + d.name[1:]) for d in BITS_DTYPES)
SCALAR_TYPE_NAMES.update((d.name, ("UInt" if d.name[0] == "u" else "Int") + d.name[-1])
                         for d in SUB_BYTE_INTS)


def _by_name(name: str) -> dtype:
    return _NAMES[name]


def from_name(name: str) -> dtype:
    """`"float32"` (or an alias such as `"long"`) -> `ember.float32`."""
    try:
        return _NAMES[name]
    except KeyError:
        raise TypeError(f"unknown dtype {name!r}; known: {', '.join(sorted(_NAMES))}") from None


_default_float = float32


def get_default_dtype() -> dtype:
    """The dtype of floating tensors created from Python floats (float32 unless changed)."""
    return _default_float


def default_complex_dtype() -> dtype:
    """The dtype of complex tensors made from Python complex numbers: complex128 when the
    default float is float64, else complex64 (PyTorch's `get_default_complex_dtype`)."""
    return complex128 if _default_float is float64 else complex64


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype, as `torch.set_default_dtype` does."""
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        # (PyTorch's words: "invalid dtype object: " only for what is not a dtype)
        prefix = "" if isinstance(d, dtype) else "invalid dtype object: "
        raise with_context(TypeError(f"{prefix}only floating-point types are supported as "
                                     "the default type"), f"set_default_dtype: got {d!r}")
    _default_float = d


@functools.cache  # the argument check runs on a cache miss only: free on the hot path
def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both `a` and `b` convert to without losing their category."""
    _dtypes_only("promote_types", ("type1", a), ("type2", b))
    if a is b:
        return a
    if a in FLOAT8_DTYPES or b in FLOAT8_DTYPES:
        raise RuntimeError("Promotion for Float8 Types is not supported, attempted to "
                           f"promote {SCALAR_TYPE_NAMES[a.name]} and "
                           f"{SCALAR_TYPE_NAMES[b.name]}")
    if (a in LIMITED_DTYPES or a in SUB_BYTE_INTS or b in LIMITED_DTYPES or
            b in SUB_BYTE_INTS) and a._category <= INT and b._category <= INT:
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {SCALAR_TYPE_NAMES[a.name]} and "
                           f"{SCALAR_TYPE_NAMES[b.name]}")
    if a._category == COMPLEX or b._category == COMPLEX:
        c, other = (a, b) if a._category == COMPLEX else (b, a)
        if other._category == COMPLEX:
            return a if a._rank >= b._rank else b
        if other._category == FLOAT:  # a float wider than the complex's parts widens it
            real = promote_types(c.to_real(), other)
            return complex32 if real is float16 else real.to_complex()
        return c
    if a._category != b._category:
        return a if a._category > b._category else b
    if {a, b} == {float16, bfloat16}:
        return float32
    if {a, b} == {uint8, int8}:
        return int16
    if a is uint8 or b is uint8:  # uint8 with a wider signed int
        other = b if a is uint8 else a
        return other if other.itemsize > 1 else int16
    return a if a._rank >= b._rank else b


def scalar_dtype(value: object) -> dtype:
    """The dtype a Python scalar would have as a tensor (its category matters most)."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return _default_float
    if isinstance(value, complex):
        return default_complex_dtype()
    raise TypeError(f"expected a number, got {type(value).__name__}")


# operand tiers for promotion: a dimensioned tensor, a 0-dim tensor, a Python scalar
DIMMED, ZERO_DIM, SCALAR = 0, 1, 2


@functools.cache
def result_type(*operands: tuple[dtype, int]) -> dtype:
    """PyTorch's promotion of `(dtype, tier)` operands.

    Dimensioned tensors decide the result; a 0-dim tensor, then a Python scalar, only
    replaces it when it belongs to a higher category (int over bool, float over int). A
    complex one over a floating result keeps the result's width (PyTorch's
    `combine_categories`: `float64_tensor * 1j` is complex128, `float32_tensor * 1j`
    complex64).
    """
    result: dtype | None = None
    for tier in (DIMMED, ZERO_DIM, SCALAR):
        in_tier = [d for d, t in operands if t == tier]
        if not in_tier:
            continue
        tier_dtype = functools.reduce(promote_types, in_tier)
        if result is None:
            result = tier_dtype
        elif tier_dtype._category > result._category:
            result = result.to_complex() if tier_dtype._category == COMPLEX and \
                result._category == FLOAT else tier_dtype
    assert result is not None, "result_type needs at least one operand"
    return result


def not_a_dtype(value: object, op: str, arg: str = "dtype", position: int | None = None
                ) -> TypeError:
    """PyTorch's error for a dtype argument that is not one (`dtype="float32"`)."""
    where = "" if position is None else f" (position {position})"
    return TypeError(f"{op}(): argument '{arg}'{where} must be torch.dtype, not "
                     f"{type_name(value)}")


def _dtypes_only(op: str, *args: tuple[str, object]) -> None:
    for position, (arg, value) in enumerate(args, 1):
        if not isinstance(value, dtype):
            raise not_a_dtype(value, op, arg, position)


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether PyTorch's casting rules allow `from_` into `to` in an in-place or `out=` op:
    never to a lower category (float -> int, int -> bool)."""
    _dtypes_only("can_cast", ("from_", from_), ("to", to))
    return from_._category <= to._category


# PyTorch's C++ names of the dtypes, as its overflow errors print them
_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "float32": "float", "float64": "double", "uint16": "uint16_t", "uint32": "uint32_t",
            "uint64": "uint64_t"}
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
              "float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}


def c_name(d: dtype) -> str:
    """The C++ type PyTorch's messages name for a dtype (`float`, `int64_t` ...)."""
    return _C_NAMES.get(d.name, d.name)


def check_int_arg(value: int) -> int:
    """`value`, a Python int given as a number argument, when PyTorch's argument parser
    takes it: from -2**63 up to (not including) 2**64, the top half read as a uint64 (which
    an int64 computation then wraps). Beyond, its OverflowError, as CPython words it."""
    if -_TWO_63 <= value < _TWO_64:
        return value
    raise OverflowError("can't convert negative int to unsigned" if value < 0 else
                        "int too big to convert")


_TWO_63, _TWO_64 = 1 << 63, 1 << 64
# the magnitudes from which a number rounds to an infinity (max + half an ulp)
_ROUNDS_TO_INF = {float16: 65520.0, bfloat16: (2 - 2 ** -8) * 2.0 ** 127}


def fit_scalar(value: object, to: dtype, single: bool = False) -> object:
    """A Python number written into a tensor of dtype `to` (`fill_`, `full`, `x[i] = v`,
    `masked_fill`), checked as PyTorch's `checked_convert` does: a value outside the
    dtype's range (NaN or an infinity into an integer dtype, 1000 into int8, 1e300 into
    float32) raises instead of wrapping. As in PyTorch, a negative integer down to
    -max wraps into an unsigned dtype (-1 into uint8 is 255), and NaN and the infinities
    fit every floating dtype. A complex number fits a real dtype when its imaginary part
    is zero (its real part is written). `single`: the value fills one element, which
    PyTorch writes into float16 and bfloat16 unchecked (1e5 is inf). Returns the value to
    write."""
    if isinstance(value, complex) and not to.is_complex and to is not bool_:
        if value.imag:
            raise RuntimeError(f"value cannot be converted to type {_C_NAMES[to.name]} "
                               f"without overflow")
        value = value.real
    if type(value) is int and not -_TWO_63 <= value < _TWO_64:
        check_int_arg(value)
    if to is bool_ or isinstance(value, bool) or not isinstance(value, (int, float)) or \
            to.is_complex:
        return value
    if to in FLOAT8_DTYPES:  # no overflow check: PyTorch rounds (and saturates) it
        from ember.core.float8 import round_scalar

        return round_scalar(value, to.name)
    if to in UNHELD_DTYPES:  # (no tensor holds one: the backend refuses it next)
        return value
    if to.is_floating_point:
        if single and to in _ROUNDS_TO_INF:  # (written as the inf it rounds to)
            return math.copysign(math.inf, value) if abs(value) >= _ROUNDS_TO_INF[to] \
                else value
        top = _FLOAT_MAX[to.name]
        fits = math.isinf(value) or math.isnan(value) or -top <= value <= top
    else:
        bits = 8 * to.itemsize
        half = 1 << (bits - 1)
        lo, hi = (-half, half - 1) if to.is_signed else (0, 2 * half - 1)
        if not to.is_signed and isinstance(value, int) and -hi <= value < 0:
            return value + 2 * half
        fits = not math.isnan(value) and lo <= value <= hi
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {c_name(to)} without "
                           f"overflow")
    return value
