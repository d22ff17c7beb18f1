"""Factories: tensors from data (`tensor`, `as_tensor`, `from_numpy`), filled (`zeros`,
`full`, `empty` ...), ranges (`arange`, `linspace`, `eye`), random (`rand`, `randn`,
`randint`, `randperm`), the `new_*` methods, and seeding.

`full`, `arange`, `rand`, `randn`, `randint` and `randperm` are the creation primitives:
kernels that take no tensor, only a shape, a dtype and a device index. The other
factories are written with them.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.core import costs, grad_mode, interpose, plugins, storage, tracing
from ember.core import cpu_random as streams
from ember.core import dtype as dt
from ember.core.backend import numpy_dtype
from ember.core.declare import composite, define, fused_kernel, primitive, write_out
from ember.core.device import device as Device
from ember.core.dispatch import (
    check_dtype,
    kernel_refuses,
    run_creation,
    run_inplace,
    user_stacklevel,
)
from ember.core.errors import invalid_combination, type_name, with_context
from ember.core.host import check_numpy_array, dtype_arg, python_scalar
from ember.core.memory_format import (
    check_format,
    contiguous_format,
    empty_in_format,
    in_order,
    like_layout,
    preserve_format,
)
from ember.core.mt19937 import DEFAULT_SEED, MT19937
from ember.core.opdef import Kind, OutMeta
from ember.core.placement import DeviceLike, get_default_device, resolve, set_default_device
from ember.core.tensor import Tensor, factory_requires_grad

__all__ = ["Generator", "default_generator", "get_default_device", "get_rng_state",
           "initial_seed", "seed", "manual_seed", "set_default_device", "set_rng_state"]


def _sizes_given(op: str, sizes: tuple, size: Any = None) -> tuple:
    """The sizes given positionally (`zeros(2, 3)`, `zeros((2, 3))`) or by keyword
    (`zeros(size=(2, 3))`), as PyTorch's argument parser takes them, with its TypeErrors:
    the sizes are required (`zeros(())` is 0-d), and given once."""
    if size is not None:
        if sizes:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        if not isinstance(size, (tuple, list)):  # (ember.Size is a tuple)
            raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not "
                            f"{type(size).__name__}")
        return (tuple(size),)
    if not sizes:
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
    return sizes


def _shape_arg(op: str, size: tuple, dtype: dt.dtype | None = None) -> tuple[int, ...]:
    """`size` (ints, or one sequence of them) checked as PyTorch checks it; with `dtype`,
    also that its storage's byte count fits in 64 bits."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    elif size and type(size[0]) is not int and (
            not isinstance(size[0], (numbers.Integral, Tensor)) or len(size) == 1 and (
                isinstance(size[0], bool) or isinstance(size[0], Tensor)
                and size[0].numel() != 1)):  # no sizes as ints (a lone bool is none)
        if len(size) > 1:
            raise TypeError(f"{op}() takes 1 positional argument but {len(size)} were given")
        raise TypeError(f"{op}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size[0]).__name__}")
    out = []
    for pos, s in enumerate(size):
        if type(s) is not int:  # (a plain int skips the slower checks of the others)
            if isinstance(s, Tensor):
                s = int(s)
            if not isinstance(s, numbers.Integral) or (isinstance(s, bool) and not pos):
                _bad_size_element(op, pos, s)
        if s < 0:  # PyTorch names no op here
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    if dtype is not None and math.prod(out) * dtype.itemsize >= 1 << 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={out}")
    return tuple(out)


def _bad_size_element(op: str, pos: int, element: Any) -> None:
    """PyTorch's argument parser's TypeError for a size element that is no int: the first
    decides whether the argument is a size at all (a bool there is not; later it is 0/1),
    a later one fails the unpacking (its position counted from 1)."""
    name = type(element).__name__
    if not pos:
        raise TypeError(f"{op}(): argument 'size' (position 1) must be tuple of ints, but "
                        f"found element of type {name} at pos 0")
    raise TypeError(f"{op}(): argument 'size' failed to unpack the object at pos {pos + 1} "
                    f"with error \"type must be tuple of ints,but got {name}\"")


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    return factory_requires_grad(t) if requires_grad else t


def _strided_only(op: str, layout: Any) -> None:
    """A factory's `layout=`: None or `strided`, the layout of ember's dense tensors."""
    if layout is not None and layout is not storage.strided:
        raise NotImplementedError(f"{op}(): layout={layout} is not supported; ember's dense "
                                  f"tensors are {storage.strided}")


def _accepts_out(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """PyTorch's `out=` on a factory (`torch.arange(0, n, out=torch.LongTensor(n))`, Tacotron
    2's `get_mask_from_lengths`): the values are made in `out`'s dtype (a `dtype=` must be
    it) on its device, `out` is resized to them (silently, but for arange's warning about
    a count it did not expect) and returned."""
    op = fn.__name__.removeprefix("_deprecated_")

    takes_layout = "layout" in inspect.signature(fn).parameters

    @functools.wraps(fn)
    def factory(*args: Any, out: Tensor | None = None, **kwargs: Any) -> Tensor:
        if not takes_layout and "layout" in kwargs:  # (PyTorch's factories all take it)
            _strided_only(op, kwargs.pop("layout"))
        if out is None:
            return fn(*args, **kwargs)
        if not isinstance(out, Tensor):
            raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
        d = dtype_arg(kwargs.get("dtype"), op)
        if d is not None and d is not out._dtype:
            raise RuntimeError(f"dtype {dt.SCALAR_TYPE_NAMES[d.name]} does not match dtype of "
                               f"out parameter ({dt.SCALAR_TYPE_NAMES[out._dtype.name]})")
        if out._requires_grad and grad_mode.state.enabled:
            raise RuntimeError(f"aten::{op}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires "
                               "grad.")
        kwargs.update(dtype=out._dtype, requires_grad=False,
                      device=kwargs.get("device") or out.device)
        result = fn(*args, **kwargs)
        if op == "arange" and out.numel() and out.numel() != result.numel():
            warnings.warn(f"The number of elements in the out tensor of shape "
                          f"{list(out.shape)} is {out.numel()} which does not match the "
                          f"computed number of elements {result.numel()}. Note that this may "
                          "occur as a result of rounding error. The out tensor will be resized "
                          f"to a tensor of shape ({result.numel()},).", UserWarning,
                          stacklevel=user_stacklevel())
        return write_out(op, out, result, warn_resize=False)
    return factory


# -- the creation primitives ----------------------------------------------------------
# Each kernel takes only attributes: `kernel(**attrs, device=index)`.

def _filled(*, shape: tuple[int, ...], dtype: dt.dtype, device: int, **_: Any) -> OutMeta:
    return OutMeta(tuple(shape), dtype, None)


def _arange_rule(*, start: Any, end: Any, step: Any, dtype: dt.dtype, device: int) -> OutMeta:
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise with_context(RuntimeError("upper bound and lower bound inconsistent with step "
                                        "sign"), f"arange: start={start}, end={end}, step={step}")
    return OutMeta((max(0, math.ceil((end - start) / step)),), dtype, None)


def _randperm_rule(*, n: int, dtype: dt.dtype, device: int) -> OutMeta:
    return OutMeta((n,), dtype, None)


def _full_rule(*, shape: tuple[int, ...], fill_value: Any, dtype: dt.dtype,
               device: int) -> OutMeta:
    return _filled(shape=shape, dtype=dtype, device=device)


def _rand_rule(*, shape: tuple[int, ...], dtype: dt.dtype, device: int) -> OutMeta:
    return _filled(shape=shape, dtype=dtype, device=device)


def _randint_rule(*, shape: tuple[int, ...], dtype: dt.dtype, low: int, high: int,
                  device: int) -> OutMeta:
    return _filled(shape=shape, dtype=dtype, device=device)


@primitive(complex=True, variants="function", rule=_full_rule, creation=True, cost=costs.creation)
@_accepts_out
def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: DeviceLike = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of `size` filled with `fill_value`."""
    if not isinstance(size, (tuple, list)):  # (ember.Size is a tuple)
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type_name(size)}")
    if isinstance(fill_value, Tensor) and fill_value.ndim:
        raise TypeError("full(): argument 'fill_value' (position 2) must be Number, not "
                        "Tensor")
    fill_value = fill_value.item() if isinstance(fill_value, Tensor) else \
        python_scalar(fill_value)
    if not isinstance(fill_value, numbers.Number):
        raise TypeError(f"full(): argument 'fill_value' (position 2) must be Number, not "
                        f"{type_name(fill_value)}")
    d = dtype_arg(dtype, "full") or dt.scalar_dtype(fill_value)
    shape = _shape_arg("full", (tuple(size),), d)
    fill_value = dt.fit_scalar(fill_value, d, single=math.prod(shape) == 1)
    dev, backend = resolve(device, _nbytes(size, d))
    t = run_creation("full", dev, backend, shape=shape, fill_value=fill_value, dtype=d)
    return _finish(t, requires_grad)


@composite(complex=True, variants="function", cost=costs.creation)
def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: DeviceLike = None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A 0-dimensional tensor holding the number `s`, of the default floating dtype
    unless `dtype` is given (PyTorch's `torch.scalar_tensor`)."""
    s = python_scalar(s)
    if isinstance(s, Tensor) and s.ndim == 0:
        s = s.item()
    if not isinstance(s, numbers.Number):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not "
                        f"{type(s).__name__}")
    d = dtype_arg(dtype, "scalar_tensor") or dt.get_default_dtype()
    if isinstance(s, complex) and not d.is_complex:
        if s.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {dt.c_name(d)} without "
                               "overflow")
        s = s.real
    return full((), s, dtype=d, device=device, requires_grad=requires_grad)


@primitive(variants="function", rule=_arange_rule, creation=True, cost=costs.creation)
@_accepts_out
def arange(start: Any = None, end: Any = None, step: Any = 1, *, dtype: Any = None,
           device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """Values from `start` (default 0) to `end` (exclusive) every `step`: `arange(end)`,
    `arange(start, end, step)`, or by keyword (`arange(end=n)`)."""
    if start is None:
        if end is None:
            raise TypeError("arange() received an invalid combination of arguments - got (), "
                            "but expected one of:\n * (Number end, *, dtype = None, device = "
                            "None, bool requires_grad = False)\n * (Number start, Number end, "
                            "Number step = 1, *, dtype = None, device = None, bool "
                            "requires_grad = False)")
        start = 0
    elif end is None:
        start, end = 0, start
    start, end, step = (float(v) if isinstance(v, Tensor) and v.is_floating_point()
                        else (int(v) if isinstance(v, Tensor) else v) for v in (start, end, step))
    for v in (start, end, step):
        if isinstance(v, complex) or isinstance(v, np.complexfloating):
            if v.imag != 0:
                raise RuntimeError("value cannot be converted to type double without overflow")
    start, end, step = (v.real if isinstance(v, (complex, np.complexfloating)) else v
                        for v in (start, end, step))
    if not all(math.isfinite(v) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {_cpp_scalar(start)} -> {_cpp_scalar(end)}")
    if step != 0 and math.isfinite(step) and \
            math.ceil((end - start) / step) > 9223372036854775807:
        raise RuntimeError("invalid size, possible overflow?")
    d = dtype_arg(dtype, "arange")
    if d is None:
        d = dt.int64 if all(isinstance(v, numbers.Integral) for v in (start, end, step)) \
            else dt.get_default_dtype()
    elif d is dt.int64 and not all(isinstance(v, numbers.Integral)
                                   for v in (start, end, step)):
        # int64 (only): PyTorch truncates the bounds and the step to integers first
        if step != 0 and int(step) == 0:
            raise ValueError("step must be nonzero")
        start, end, step = int(start), int(end), int(step)
    dev, backend = resolve(device)
    if d in dt.LIMITED_DTYPES or d is dt.bool_:  # (ATen's arange kernel has no bool,
        # uint16/32/64 variant)
        raise kernel_refuses(f"arange_{dev.type}", d)
    t = run_creation("arange", dev, backend, start=start, end=end, step=step, dtype=d)
    return _finish(t, requires_grad)


def _cpp_scalar(v: Any) -> str:
    """A number as PyTorch's messages print a C++ Scalar (`0`, `0.5`, `inf`)."""
    return f"{v:g}" if isinstance(v, float) else str(v)


def _deprecated_range(start: Any = 0, end: Any = None, step: Any = 1, *, dtype: Any = None,
                      device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """Deprecated: values from `start` to `end` *inclusive* every `step`, in the default
    dtype (use `arange`, whose `end` is exclusive)."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=user_stacklevel())
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise with_context(RuntimeError("upper bound and lower bound inconsistent with step "
                                        "sign"), f"arange: start={start}, end={end}, step={step}")
    d = dtype_arg(dtype, "range") or dt.get_default_dtype()
    count = int(math.floor((end - start) / step)) + 1
    # start + i * step in float64, as PyTorch's kernel accumulates, then cast
    values = arange(count, dtype=dt.float64, device=device) * step + start
    return _finish(values.to(d), requires_grad)


# `torch.range`, declared under its name without shadowing the builtin in this module
deprecated_range = define("range", Kind.COMPOSITE, _accepts_out(_deprecated_range),
                          variants="function")


@composite(complex=True, variants="function")
def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: Any = None,
                  layout: Any = None, device: DeviceLike = None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of `size` with the given `stride`s, over the smallest
    storage they reach."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality "
                           f"of strides ({len(stride)})")
    if any(st < 0 for st in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    elements = 0 if 0 in size else 1 + sum((n - 1) * st for n, st in zip(size, stride))
    d = dtype_arg(dtype, "empty_strided") or dt.get_default_dtype()
    flat = empty(elements, dtype=d, device=device)
    return _finish(flat.as_strided(size, stride), requires_grad)


@composite(complex=True, variants="function")
def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *, dtype: Any = None,
                   layout: Any = None, device: DeviceLike = None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of `size` whose dims lie in memory in the order
    `physical_layout` (outermost first): `empty_permuted(s, (0, 2, 3, 1))` is
    channels-last."""
    size, order = tuple(size), tuple(physical_layout)
    if len(size) != len(order):
        raise RuntimeError("Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    if sorted(order) != list(range(len(order))):
        raise RuntimeError("Duplicate dim not allowed")
    d = dtype_arg(dtype, "empty_permuted") or dt.get_default_dtype()
    laid = in_order(size, order, lambda s: empty(s, dtype=d, device=device))
    return _finish(laid, requires_grad)


def _random(op: str, size: tuple, dtype: Any, device: DeviceLike, requires_grad: bool,
            generator: Any, draw: Callable[[MT19937, int, np.dtype], np.ndarray],
            **attrs: Any) -> Tensor:
    """A random factory: on the CPU (or with a generator) PyTorch's stream from the host
    generator, `draw(engine, count, numpy dtype)`; elsewhere the device's own kernel."""
    d = dtype_arg(dtype, op) or dt.get_default_dtype()
    if op in ("rand", "randn") and d.is_complex:
        return _finish(_complex_random(op, size, d, device, generator, draw), requires_grad)
    if op in ("rand", "randn") and (not d.is_floating_point or d in dt.FLOAT8_DTYPES):
        kernel = "check_uniform_bounds" if op == "rand" else "normal_kernel_cpu"
        raise kernel_refuses(kernel, d)
    dev, backend = resolve(device, _nbytes(size, d))
    shape = _shape_arg(op, size, d)
    host = host_generator(generator, dev)
    if host is None:
        t = run_creation(op, dev, backend, shape=shape, dtype=d, **attrs)
    else:
        check_dtype(op, backend, d, dev)
        n, npd = math.prod(shape), numpy_dtype(d)
        t = host_random(op, shape, d, dev, lambda: draw(host._engine, n, npd), shape=shape,
                        **attrs)
    return _finish(t, requires_grad)


def _complex_random(op: str, size: tuple, d: dt.dtype, device: DeviceLike, generator: Any,
                    draw: Callable[[MT19937, int, np.dtype], np.ndarray]) -> Tensor:
    """`rand`/`randn` of a complex dtype, as PyTorch draws them: the real and imaginary
    parts are consecutive draws of the real dtype (PyTorch's stream), each of variance
    1/2 for `randn` (so that |z|'s expected square is 1)."""
    from ember.core.ops.complex import view_as_complex

    std = 1.0 / math.sqrt(2)  # (PyTorch's std / sqrt(2), to the last bit)
    host = host_generator(generator, resolve(device)[0]) is not None
    if op == "randn" and host:
        def draw(engine: MT19937, n: int, npd: np.dtype) -> np.ndarray:
            return streams.normal(engine, n, npd, std=std)
    parts = _random(op, _shape_arg(op, size, d) + (2,), d.to_real(), device, False,
                    generator, draw)
    if op == "randn" and not host:  # a device's own kernel: scaled after
        parts.mul_(std)
    return view_as_complex(parts)


def _overloads(*firsts: str) -> tuple[str, ...]:
    """A random factory's overloads as PyTorch's argument parser lists them: for each
    leading parameter list in `firsts`, with a generator and without."""
    return tuple(f"({first}, *, {gen}Tensor out = None, torch.dtype dtype = None, "
                 "torch.layout layout = None, torch.device device = None, "
                 "bool pin_memory = False, bool requires_grad = False)"
                 for first in firsts for gen in ("torch.Generator generator, ", ""))


_RANDOM_OVERLOADS = {"rand": _overloads("tuple of ints size"),
                     "randn": _overloads("tuple of ints size"),
                     "randint": _overloads("int high, tuple of ints size",
                                           "int low, int high, tuple of ints size"),
                     "randperm": _overloads("int n")}


def _no_overload(op: str, args: tuple, kwargs: dict) -> TypeError:
    """PyTorch's "invalid combination of arguments" for a random factory: its arguments'
    types, the keywords sorted (each followed by a comma when none is positional, as
    PyTorch prints them), then the overloads."""
    keywords = [f"{k}={type_name(kwargs[k])}" for k in sorted(kwargs)]
    got = ", ".join([type_name(a) for a in args] + keywords)
    if keywords and not args:
        got += ", "
    return invalid_combination(op, got, _RANDOM_OVERLOADS[op])


def _random_overloads(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """A random factory refusing, as PyTorch's parser does, the calls that match none of
    its overloads (a generator and a plain one each): an unknown keyword
    (`randn(2, 3, memory_format=...)`), a keyword of the wrong type (`requires_grad=1`,
    `dtype=5`, `generator=5`), sizes given twice or after a tuple, or no argument at all
    (`randn()`). Other refusals keep their own messages."""
    op = fn.__name__
    known = set(inspect.signature(fn).parameters) | {"out", "layout", "pin_memory"}
    sized = op in ("rand", "randn")

    @functools.wraps(fn)
    def factory(*args: Any, **kwargs: Any) -> Tensor:
        if not kwargs:  # (most calls: `randn(2, 3)`)
            if sized and (not args or len(args) > 1 and isinstance(args[0], (tuple, list))):
                raise _no_overload(op, args, kwargs)
            return fn(*args)
        if kwargs.keys() - known or (sized and args and (
                "size" in kwargs or len(args) > 1 and isinstance(args[0], (tuple, list)))) \
                or not _keywords_typed(kwargs):
            raise _no_overload(op, args, kwargs)
        layout, pin = None, False
        if "layout" in kwargs or "pin_memory" in kwargs:
            layout, pin = kwargs.pop("layout", None), kwargs.pop("pin_memory", False)
        if layout is not None and layout is not storage.strided:
            raise NotImplementedError(f"{op}(): layout={layout} is not supported; ember's "
                                      f"dense tensors are {storage.strided}")
        out = fn(*args, **kwargs)
        if pin:
            from ember.core import pinning

            out = pinning.pin_memory(out, message=pinning.NO_ALLOCATOR)
        return out
    return factory


def _keywords_typed(kwargs: dict) -> bool:
    """Whether the keywords the random factories share have the types their overloads
    take (`_KEYWORD_TYPES`; None passes but for the bools)."""
    for name, value in kwargs.items():
        kind = _KEYWORD_TYPES.get(name)
        if kind is bool:
            if value.__class__ is not bool:
                return False
        elif kind is not None and value is not None and not isinstance(value, kind):
            return False
    return True


@primitive(complex=True, variants="function", rule=_rand_rule, creation=True, cost=costs.creation)
@_random_overloads
@_accepts_out
def rand(*sizes: Any, size: Sequence[int] | None = None, dtype: Any = None,
         device: DeviceLike = None, requires_grad: bool = False,
         generator: Any = None) -> Tensor:
    """Uniform random numbers in [0, 1), of the sizes given (or `size=`)."""
    return _random("rand", _sizes_given("rand", sizes, size), dtype, device,
                   requires_grad, generator, streams.uniform)


@primitive(complex=True, variants="function", rule=_rand_rule, creation=True, cost=costs.creation)
@_random_overloads
@_accepts_out
def randn(*sizes: Any, size: Sequence[int] | None = None, dtype: Any = None,
          device: DeviceLike = None, requires_grad: bool = False,
          generator: Any = None) -> Tensor:
    """Standard normal random numbers, of the sizes given (or `size=`)."""
    return _random("randn", _sizes_given("randn", sizes, size), dtype, device,
                   requires_grad, generator, streams.normal)


def _is_size(value: Any) -> bool:
    return isinstance(value, (tuple, list)) or hasattr(value, "__len__")


def _randint_args(low: Any, high: Any, size: Any) -> tuple[int, int, tuple[int, ...]]:
    """PyTorch's overloads `(high, size)` and `(low, high, size)`, positional or keyword:
    `randint(5, (3,))`, `randint(high=5, size=(3,))`, `randint(5, size=(3,))`."""
    if size is None and high is not None and _is_size(high):
        low, high, size = None, low, high  # randint(high, size)
    given = [v for v in (low, high, size) if v is not None]
    if size is None and high is not None:  # randint(high, 3): the size overload's message
        raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, not "
                        f"{type(high).__name__}")
    if high is None:
        low, high = None, low
    if size is None or not _is_size(size) or high is None or (
            low is not None and any(isinstance(v, float) for v in (low, high))):
        raise invalid_combination("randint", ", ".join(type_name(v) for v in given),
                                  _RANDOM_OVERLOADS["randint"])
    if isinstance(high, float):
        raise TypeError("randint(): argument 'high' (position 1) must be int, not float")
    return int(low or 0), int(high), tuple(size)


# the dtypes whose `random_(from, to)` draws 64-bit words for ranges of 2**32 or more
WIDE_RANDOM = frozenset({"int64", "float64", "float32", "bfloat16"})


def _check_random_bounds(low: int, high: int, d: dt.dtype) -> None:
    """PyTorch's random_(from, to) check for an integer (or bool) dtype: both ends of
    [low, high - 1] within the dtype's range, named by its C++ type."""
    if d.is_floating_point or d.is_complex:
        return
    lo, hi = (0, 1) if d is dt.bool_ else (int(np.iinfo(numpy_dtype(d)).min),
                                           int(np.iinfo(numpy_dtype(d)).max))
    for name, v in (("from", low), ("to - 1", high - 1)):
        if not lo <= v <= hi:
            raise RuntimeError(f"{name} is out of bounds for {storage.cpp_type_name(d)}")


@primitive(variants="function", rule=_randint_rule, creation=True, cost=costs.creation)
@_random_overloads
@_accepts_out
def randint(low: int | None = None, high: int | None = None, size: Sequence[int] | None = None, *,
            dtype: Any = None, device: DeviceLike = None, generator: Any = None,
            requires_grad: bool = False) -> Tensor:
    """Random integers in [low, high): `randint(high, size)` or `randint(low, high, size)`
    (by position or keyword, as PyTorch's two overloads take them)."""
    low, high, size = _randint_args(low, high, size)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    d = dtype_arg(dtype, "randint") or dt.int64
    if d in dt.FLOAT8_DTYPES:  # (worded as PyTorch's kernel)
        raise kernel_refuses("random_update_from_to", d)
    _check_random_bounds(low, high, d)
    wide = d.name in WIDE_RANDOM

    def draw(engine: MT19937, n: int, npd: np.dtype) -> np.ndarray:
        return streams.integers(engine, n, low, high, wide).astype(npd)
    return _random("randint", tuple(size), d, device, requires_grad, generator, draw,
                   low=low, high=high)


fused_kernel("pytorch_randperm_shuffle", replaces="randperm", same_dtype=False,
             signature="pytorch_randperm_shuffle(draws, inside_out) -> permutation or None",
             doc="PyTorch's CPU Fisher-Yates shuffle of 0 .. n-1 (ember/core/cpu_random.py's "
                 "reference) from its int64 draws: forward swaps of i and i + draws[i] "
                 "(n - 1 draws), or inside-out (n draws); None where it does not run.")


@primitive(variants="function", rule=_randperm_rule, creation=True, cost=costs.creation,
           fused=("pytorch_randperm_shuffle",))
@_random_overloads
@_accepts_out
def randperm(n: int, *, dtype: Any = None, device: DeviceLike = None,
             generator: Any = None, requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1."""
    if isinstance(n, bool) or not isinstance(n, (numbers.Integral, Tensor)):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not "
                        f"{type_name(n)}")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    d = dtype_arg(dtype, "randperm") or dt.int64
    if d is dt.bool_:
        raise kernel_refuses("randperm", d)
    if not (d.is_floating_point or d.is_complex) and n > 0 and \
            n - 1 > int(np.iinfo(numpy_dtype(d)).max):
        raise RuntimeError(f"value cannot be converted to type {dt.c_name(d)} without overflow")
    dev, backend = resolve(device)
    host = host_generator(generator, dev)
    if host is None:
        return _finish(run_creation("randperm", dev, backend, n=n, dtype=d), requires_grad)
    t = host_random("randperm", (n,), d, dev, lambda: streams.randperm(host._engine, n), n=n)
    return _finish(t, requires_grad)


# -- from data ------------------------------------------------------------------------


def _warn_copy_construct(data: Any, spelling: str) -> None:
    """PyTorch's warning when a tensor is built from a tensor (`torch.tensor(t)`)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      f"{spelling}(sourceTensor).", UserWarning, stacklevel=user_stacklevel())


@composite(complex=True, variants="function")
def tensor(data: Any, dtype: Any = None, device: DeviceLike = None,
           requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (a number, nested lists, or an array);
    `pin_memory=True` puts a CPU tensor in page-locked memory."""
    _warn_copy_construct(data, "torch.tensor")
    out = Tensor._from_data(data, dtype, device)
    if pin_memory:
        from ember.core import pinning

        out = pinning.pin_memory(out, message=pinning.NO_ALLOCATOR)
    return _finish(out, requires_grad)


@composite(complex=True, variants="function")
def as_tensor(data: Any, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """Like `tensor`, but shares memory with `data` when no conversion is needed."""
    d = dtype_arg(dtype, "as_tensor")
    if isinstance(data, Tensor):
        out = data
        if d is not None and d is not data.dtype:
            out = out.to(d)
        if device is not None:
            out = out.to(device)
        return out
    if isinstance(data, np.ndarray) and (device is None or str(device) == "cpu"):
        if d is None or numpy_dtype(d) == data.dtype:
            return from_numpy(data)
    return tensor(data, dtype=d, device=device)


@composite(complex=True, variants="function")
def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    d = check_numpy_array(array)
    dev, backend = resolve("cpu")
    return Tensor._make(array, d, dev, backend)


# -- filled ---------------------------------------------------------------------------


@composite(complex=True, variants="function")
@_accepts_out
def zeros(*sizes: Any, size: Sequence[int] | None = None, dtype: Any = None,
          device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros, of the sizes given (or `size=`)."""
    size = _sizes_given("zeros", sizes, size)
    d = dtype_arg(dtype, "zeros") or dt.get_default_dtype()
    try:
        shape = _shape_arg("zeros", size, d)
    except RuntimeError as err:  # (zeros' own words in PyTorch; the others' are these)
        if "negative dimension" not in str(err):
            raise
        raise RuntimeError("zeros: Dimension size must be non-negative.") from None
    return full(shape, 0, dtype=d, device=device, requires_grad=requires_grad)


@composite(complex=True, variants="function")
@_accepts_out
def ones(*sizes: Any, size: Sequence[int] | None = None, dtype: Any = None,
         device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones, of the sizes given (or `size=`)."""
    size = _sizes_given("ones", sizes, size)
    d = dtype_arg(dtype, "ones") or dt.get_default_dtype()
    return full(_shape_arg("ones", size, d), 1, dtype=d, device=device,
                requires_grad=requires_grad)


@composite(complex=True, variants="function")
@_accepts_out
def empty(*sizes: Any, size: Sequence[int] | None = None, dtype: Any = None,
          device: DeviceLike = None, requires_grad: bool = False,
          memory_format: Any = None) -> Tensor:
    """An uninitialised tensor, of the sizes given (or `size=`), row-major or laid out in
    `memory_format` (`ember.channels_last`)."""
    size = _sizes_given("empty", sizes, size)
    d = dtype_arg(dtype, "empty") or dt.get_default_dtype()
    dev, backend = resolve(device, _nbytes(size, d))
    check_dtype("empty", backend, d, dev)
    shape = _shape_arg("empty", size, d)
    fmt = check_format("empty", memory_format)
    if memory_format is preserve_format:  # (a layout to keep needs a tensor to keep it of)
        raise RuntimeError("unsupported memory format Preserve")
    if fmt is not preserve_format and fmt is not contiguous_format:
        laid = empty_in_format(tuple(shape), fmt, lambda s: empty(s, dtype=d, device=dev))
        return _finish(laid, requires_grad)
    buf = backend.empty(shape, d, dev.index or 0)
    return _finish(Tensor._make(buf, d, dev, backend), requires_grad)


def _nbytes(size: Any, d: dt.dtype) -> int:
    """The bytes of a tensor of `size` (for `"auto"`; 0 when `size` is not plain ints)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    try:
        return math.prod(int(n) for n in size) * d.itemsize
    except (TypeError, ValueError):
        return 0


def _like(op: str, x: Tensor, dtype: Any, device: DeviceLike, layout: Any = None,
          memory_format: Any = None) -> tuple[dt.dtype, DeviceLike]:
    """The dtype and device of `op(x, ...)` (`x`'s unless given), its `layout` and
    `memory_format` checked as PyTorch's argument parser checks them."""
    if layout is not None:
        if not isinstance(layout, storage.layout):
            raise TypeError(f"{op}(): argument 'layout' must be {dt.API_NAME}.layout, not "
                            f"{type(layout).__name__}")
        if layout is not storage.strided:
            raise NotImplementedError(f"{op}(): layout={layout} is not supported; ember's "
                                      f"dense tensors are {storage.strided}")
    if memory_format is not None:
        check_format(op, memory_format)
    return (dtype_arg(dtype, op) or x.dtype), (device if device is not None else x.device)


def _empty_like(x: Tensor, d: dt.dtype, dev: DeviceLike, memory_format: Any = None) -> Tensor:
    """PyTorch's `empty_like(x, memory_format=...)`: strides kept for a permuted or
    channels-last `x` (preserve_format), or laid out in the format asked for. The `*_like`
    factories fill it, so random draws land where PyTorch's do. (`_like` has checked
    `memory_format`.)"""
    return like_layout(x, lambda shape: empty(shape, dtype=d, device=dev), memory_format)


def _full_like(op: str, input: Tensor, fill_value: Any, dtype: Any, device: DeviceLike,
               layout: Any, requires_grad: bool, memory_format: Any) -> Tensor:
    """`fill_value` in `input`'s shape, laid out as `input` (or in `memory_format`)."""
    d, dev = _like(op, input, dtype, device, layout, memory_format)
    if memory_format is None and input._backend.is_contiguous(input._data):  # (most calls)
        return full(input.shape, fill_value, dtype=d, device=dev, requires_grad=requires_grad)
    out = _empty_like(input, d, dev, memory_format)
    run_inplace("assign", out, full((), fill_value, dtype=d, device=dev))  # (not fill_: it
    return _finish(out, requires_grad)                                    # calls full_like)


@composite(complex=True, variants="function")
def zeros_like(input: Tensor, *, dtype: Any = None, layout: Any = None,
               device: DeviceLike = None, requires_grad: bool = False,
               memory_format: Any = None) -> Tensor:
    """Zeros of `input`'s shape (and its dtype and device unless given), laid out as
    `input` (or in `memory_format`)."""
    return _full_like("zeros_like", input, 0, dtype, device, layout, requires_grad,
                      memory_format)


@composite(complex=True, variants="function")
def ones_like(input: Tensor, *, dtype: Any = None, layout: Any = None,
              device: DeviceLike = None, requires_grad: bool = False,
              memory_format: Any = None) -> Tensor:
    """Ones of `input`'s shape (and its dtype and device unless given), laid out as
    `input` (or in `memory_format`)."""
    return _full_like("ones_like", input, 1, dtype, device, layout, requires_grad,
                      memory_format)


@composite(complex=True, variants="function")
def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, layout: Any = None,
              device: DeviceLike = None, requires_grad: bool = False,
              memory_format: Any = None) -> Tensor:
    """`fill_value` in `input`'s shape (and its dtype and device unless given), laid out as
    `input` (or in `memory_format`)."""
    return _full_like("full_like", input, fill_value, dtype, device, layout, requires_grad,
                      memory_format)


@composite(complex=True, variants="function")
def empty_like(input: Tensor, *, dtype: Any = None, layout: Any = None,
               device: DeviceLike = None, requires_grad: bool = False,
               memory_format: Any = None) -> Tensor:
    """An uninitialised tensor of `input`'s shape (and its dtype and device unless given),
    laid out as `input` (or in `memory_format`)."""
    d, dev = _like("empty_like", input, dtype, device, layout, memory_format)
    return _finish(_empty_like(input, d, dev, memory_format), requires_grad)


@composite(complex=True, variants="function")
def rand_like(input: Tensor, *, generator: Any = None, dtype: Any = None, layout: Any = None,
              device: DeviceLike = None, requires_grad: bool = False,
              memory_format: Any = None) -> Tensor:
    """Uniform random numbers in [0, 1) of `input`'s shape."""
    d, dev = _like("rand_like", input, dtype, device, layout, memory_format)
    if d.is_complex:  # (PyTorch's stream for complex: rand's)
        return rand(tuple(input.shape), dtype=d, device=dev, generator=generator,
                    requires_grad=requires_grad)
    out = _empty_like(input, d, dev, memory_format).uniform_(generator=generator)
    return _finish(out, requires_grad)


@composite(complex=True, variants="function")
def randn_like(input: Tensor, *, generator: Any = None, dtype: Any = None, layout: Any = None,
               device: DeviceLike = None, requires_grad: bool = False,
               memory_format: Any = None) -> Tensor:
    """Standard normal random numbers of `input`'s shape."""
    d, dev = _like("randn_like", input, dtype, device, layout, memory_format)
    if d.is_complex:  # (PyTorch's stream for complex: randn's)
        return randn(tuple(input.shape), dtype=d, device=dev, generator=generator,
                     requires_grad=requires_grad)
    out = _empty_like(input, d, dev, memory_format).normal_(generator=generator)
    return _finish(out, requires_grad)


@composite(variants="function")
def randint_like(input: Tensor, low: int, high: int | None = None, *, generator: Any = None,
                 dtype: Any = None, layout: Any = None, device: DeviceLike = None,
                 requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Random integers in [low, high) of `input`'s shape."""
    d, dev = _like("randint_like", input, dtype, device, layout, memory_format)
    low, high = (0, low) if high is None else (low, high)
    out = _empty_like(input, d, dev, memory_format).random_(low, high, generator=generator)
    return _finish(out, requires_grad)


# -- the new_* methods: a new tensor with this one's dtype and device ---------------------


def _new(factory: Callable[..., Tensor], doc: str, fill: int | None = None
         ) -> Callable[..., Tensor]:
    name = factory.__name__

    def method(self: Tensor, *sizes: Any, size: Sequence[int] | None = None, dtype: Any = None,
               device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
        size = _sizes_given("new_" + name, sizes, size)
        if fill is not None and device is None and interpose.active is None:
            # on this tensor's own device (backward's seed, zero gradients): `full` without
            # resolving the device again, which was most of the cost of `new_ones(())`
            d = dtype_arg(dtype, "new_" + name) or self._dtype
            t = run_creation("full", self._device, self._backend,
                             shape=_shape_arg(name, size, d), fill_value=dt.fit_scalar(fill, d),
                             dtype=d)  # (0 and 1 fit every dtype: no overflow to check)
            return _finish(t, requires_grad)
        return factory(*size, dtype=dtype or self.dtype, device=device or self.device,
                       requires_grad=requires_grad)
    method.__doc__ = doc
    return method


for _name, _factory, _fill in (("new_zeros", zeros, 0), ("new_ones", ones, 1),
                               ("new_empty", empty, None)):
    define(_name, Kind.COMPOSITE, _new(_factory, f"`{_factory.__name__}` of `size`, with this "
                                                  "tensor's dtype and device unless given.",
                                       _fill),
           variants="method", complex=True)


@composite(complex=True, variants="method")
def new_full(self: Tensor, size: Sequence[int], fill_value: Any, *, dtype: Any = None,
             device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """`fill_value` in `size`, with this tensor's dtype and device unless given."""
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


@composite(complex=True, variants="method")
def new_empty_strided(self: Tensor, size: Sequence[int], stride: Sequence[int], *,
                      dtype: Any = None, layout: Any = None, device: DeviceLike = None,
                      requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """`empty_strided(size, stride)`, with this tensor's dtype and device unless given."""
    return empty_strided(size, stride, dtype=dtype or self.dtype,
                         device=device or self.device, requires_grad=requires_grad)


@composite(complex=True, variants="method")
def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: DeviceLike = None,
               requires_grad: bool = False) -> Tensor:
    """A copy of `data`, with this tensor's dtype and device unless given."""
    _warn_copy_construct(data, "tensor.new_tensor")
    out = Tensor._from_data(data, dtype or self.dtype, device or self.device, "new_tensor")
    return _finish(out, requires_grad)


# -- ranges ---------------------------------------------------------------------------


def _check_scalar_bounds(op: str, start: Any, end: Any) -> None:
    """linspace/logspace take numbers or 0-d tensors for their bounds, as PyTorch."""
    dims = {name: v.ndim for name, v in (("start", start), ("end", end))
            if isinstance(v, Tensor)}
    if any(dims.values()):
        raise RuntimeError(f"{op} only supports 0-dimensional start and end tensors, but got "
                           + " and ".join(f"{k} with {n} dimension(s)" for k, n in dims.items())
                           + ".")


def _is_complex(v: Any) -> bool:
    return v.dtype.is_complex if isinstance(v, Tensor) else isinstance(python_scalar(v),
                                                                          complex)


def _complex_of(real: Tensor, imag: Tensor) -> Tensor:
    from ember.core.ops.complex import complex as complex_  # (ops import creation)

    return complex_(real, imag)


def _check_steps(op: str, start: Any, end: Any, steps: Any, dtype: Any, device: Any,
                 requires_grad: bool) -> None:
    """PyTorch's argument parser: `steps` is an int (a 0-d tensor converts; a float or a
    bool does not), else none of linspace's (logspace's) overloads matches."""
    if isinstance(steps, Tensor) or (isinstance(steps, numbers.Integral)
                                     and not isinstance(steps, bool)):
        return
    kwargs = {k: v for k, v in (("dtype", dtype), ("device", device)) if v is not None}
    if requires_grad:
        kwargs["requires_grad"] = requires_grad

    def name(a: Any) -> str:
        return "Tensor" if isinstance(a, Tensor) else type_name(a)
    got = ", ".join([name(a) for a in (start, end, steps)] +
                    [f"{k}={name(v)}" for k, v in kwargs.items()])
    base = " float base = 10.0," if op == "logspace" else ""
    rest = (f"int steps,{base} *, Tensor out = None, {dt.API_NAME}.dtype dtype = None, "
            f"{dt.API_NAME}.layout layout = None, {dt.API_NAME}.device device = None, "
            "bool pin_memory = False, bool requires_grad = False)")
    raise invalid_combination(op, got, [f"({a} start, {b} end, {rest}" for a, b in (
        ("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"),
        ("Number", "Number"))])


@composite(variants="function", complex=True)
@_accepts_out
def linspace(start: float, end: float, steps: int, *, dtype: Any = None,
             device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced values from `start` to `end`, both included."""
    _check_steps("linspace", start, end, steps, dtype, device, requires_grad)
    _check_scalar_bounds("linspace", start, end)
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    d = dtype_arg(dtype, "linspace")
    if _is_complex(start) or _is_complex(end):
        # real and imaginary parts spaced each on their own, as ATen's complex kernel does
        inferred = dt.get_default_dtype().to_complex()
        if d is not None and not d.is_complex:
            raise RuntimeError(f"torch.linspace(): inferred dtype "
                               f"{storage.cpp_type_name(inferred)} can't be safely cast to "
                               f"passed dtype {dt.SCALAR_TYPE_NAMES[d.name]}")
        d = d or inferred
        parts = [linspace(*(complex(python_scalar(v)).real if i == 0 else
                            complex(python_scalar(v)).imag for v in (start, end)),
                          steps, dtype=d.to_real(), device=device) for i in (0, 1)]
        return _finish(_complex_of(parts[0], parts[1]), requires_grad)
    d = d or dt.get_default_dtype()
    if d is dt.bool_:
        raise kernel_refuses("linspace_cpu", d)
    if not (d.is_floating_point or d.is_complex):  # bounds that fit the integer dtype
        # (c10's overflow check: an unsigned type takes negatives down to -max, wrapping)
        info = np.iinfo(numpy_dtype(d))
        low = info.min if info.min < 0 else -int(info.max)
        if any(not low <= float(python_scalar(v)) <= info.max for v in (start, end)):
            raise RuntimeError(f"value cannot be converted to type {dt.c_name(d)} without "
                               "overflow")
    if steps == 1:
        return full((1,), start, dtype=d, device=device, requires_grad=requires_grad)
    # PyTorch fills the first half as fma(step, i, start) and the second half back from
    # the end as fma(-step, steps - 1 - i, end), in the result's own precision (float32's
    # step is a float32; float16 and bfloat16 round the product, then the sum): the
    # products are formed exactly here, so every value is PyTorch's to the bit
    idx = arange(steps, dtype=dt.float64, device=device)
    half = steps // 2
    if d in _NARROW_FLOATS:
        start, end = _rounded(float(start), d), _rounded(float(end), d)
        step = _rounded(_rounded(end - start, d) / (steps - 1), d)
        # the index is a value of the dtype too; a narrow step times it is exact in float64
        lo, hi = idx.to(d).double() * step, (steps - 1 - idx).to(d).double() * -step
        if d is not dt.float32:
            lo, hi = lo.to(d).double(), hi.to(d).double()
        lo, hi = lo + start, hi + end
    else:
        step = (end - start) / (steps - 1)
        lo = _fma(idx, step, start)
        hi = _fma(steps - 1 - idx, -step, end)
    return _finish(lo.where(idx < half, hi).to(d), requires_grad)


_NARROW_FLOATS = {dt.float32: "float", dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16"}


def _rounded(x: float, d: dt.dtype) -> float:
    """`x` rounded to the floating dtype `d`; PyTorch's error where it overflows."""
    with np.errstate(over="ignore"):
        v = float(np.asarray(x, np.float64).astype(numpy_dtype(d)))
    if math.isinf(v) and math.isfinite(x):
        raise RuntimeError(f"value cannot be converted to type {_NARROW_FLOATS[d]} without "
                           "overflow")
    return v


def _fma(k: Tensor, step: float, c: float) -> Tensor:
    """`k * step + c` rounded once (a fused multiply-add) for float64 integers `k` below
    2**26: `step` split in two 26-bit halves (Veltkamp) makes both products exact, and the
    sum's rounding error is carried (Knuth's TwoSum) into the last addition."""
    big = step * 134217729.0
    step_hi = big - (big - step)
    p_hi, p_lo = k * step_hi, k * (step - step_hi)
    total = p_hi + c
    back = total - p_hi
    err = (p_hi - (total - back)) + (c - back)
    return total + (err + p_lo)


@composite(variants="function")
@_accepts_out
def eye(n: int, m: int | None = None, *, dtype: Any = None, device: DeviceLike = None,
        requires_grad: bool = False) -> Tensor:
    """A 2-D tensor with ones on the diagonal."""
    def is_int(v: Any) -> bool:
        return isinstance(v, numbers.Integral) and not isinstance(v, bool)
    if m is None and not is_int(n):
        raise TypeError(f"eye(): argument 'n' (position 1) must be int, not {type_name(n)}")
    if m is not None and not (is_int(n) and is_int(m)):
        kwargs = {k: v for k, v in (("dtype", dtype), ("device", device)) if v is not None}
        got = ", ".join([type_name(n), type_name(m)] +
                        [f"{k}={type_name(v)}" for k, v in kwargs.items()])
        rest = (f"*, Tensor out = None, {dt.API_NAME}.dtype dtype = None, {dt.API_NAME}.layout "
                f"layout = None, {dt.API_NAME}.device device = None, bool pin_memory = False, "
                "bool requires_grad = False)")
        raise invalid_combination("eye", got, (f"(int n, {rest}", f"(int n, int m, {rest}"))
    m = n if m is None else m
    for name, v in (("n", n), ("m", m)):
        if v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    d = dtype_arg(dtype, "eye") or dt.get_default_dtype()
    rows = arange(n, device=device).reshape(n, 1)
    cols = arange(m, device=device).reshape(1, m)
    return _finish((rows == cols).to(d), requires_grad)


@composite(variants="function", complex=True)
@_accepts_out
def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype: Any = None,
             device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """`steps` values from `base ** start` to `base ** end`, the exponents evenly spaced."""
    _check_steps("logspace", start, end, steps, dtype, device, requires_grad)
    _check_scalar_bounds("logspace", start, end)
    steps = int(steps)
    if _is_complex(start) or _is_complex(end):  # the exponents spaced as linspace's
        d = dtype_arg(dtype, "logspace") or dt.get_default_dtype().to_complex()
        exponents = linspace(start, end, steps, dtype=d, device=device)
        return _finish(float(base) ** exponents, requires_grad)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    d = dtype_arg(dtype, "logspace") or dt.get_default_dtype()
    if steps == 1:
        return full((1,), math.pow(base, start), dtype=d, device=device,
                    requires_grad=requires_grad)
    # PyTorch's CPU kernel: start and end in the result's dtype, the step in double from
    # their difference in that dtype, the exponents and the power in double (the first
    # half from start, the second back from end), then one rounding to the dtype
    kind = numpy_dtype(d).type
    lo_end, hi_end = kind(start), kind(end)
    step = float(kind(hi_end - lo_end)) / max(steps - 1, 1)
    idx = arange(steps, dtype=dt.float64, device=device)
    exponents = (idx * step + float(lo_end)).where(idx < steps // 2,
                                                   float(hi_end) - (steps - 1 - idx) * step)
    return _finish((float(base) ** exponents).to(d), requires_grad)


# -- seeding and generators --------------------------------------------------------------

def manual_seed(seed: int) -> Generator:
    """Seed the random number generators of every backend (and the default generator)."""
    seed = int(seed)
    if not -0x8000_0000_0000_0000 <= seed <= 0xFFFF_FFFF_FFFF_FFFF:
        raise ValueError("Overflow when unpacking long long")
    seed &= 0xFFFF_FFFF_FFFF_FFFF
    plugins.registry.ensure_loaded()
    for backend in plugins.registry.backends.values():
        try:
            backend.manual_seed(seed)
        except Exception:  # noqa: S110 - an unavailable backend has nothing to seed
            pass
    default_generator.manual_seed(seed)
    return default_generator


def seed() -> int:
    """Seed every generator from the OS, non-deterministically, and return the seed."""
    s = _os_seed()
    manual_seed(s)
    return s


def _os_seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


def initial_seed() -> int:
    """The default generator's seed: the one last given to `manual_seed` (or restored
    with its state by `set_rng_state`, as `fork_rng` does); before any, the seed drawn
    from the OS at start-up (different in every process, as PyTorch's)."""
    return default_generator.initial_seed()


@dt.printed_in_api("._C")
class Generator:
    """A random number generator with its own state, as `torch.Generator`.

    Its stream is PyTorch's CPU generator's, number for number: a Mersenne Twister
    seeded as PyTorch seeds it (ember.core.mt19937), transformed into uniforms, normals,
    integers and permutations as PyTorch's CPU kernels transform it
    (ember.core.cpu_random). So `ember.Generator().manual_seed(s)` and
    `torch.Generator().manual_seed(s)` give the same `rand`, `randn`, `randperm` ...;
    `get_state()` is PyTorch's 5056-byte state, interchangeable with torch's.

    A generator made for another device draws the same host stream and moves the result.
    """

    def __init__(self, device: DeviceLike = "cpu") -> None:
        self.device = Device(device) if not isinstance(device, Device) else device
        self._engine = MT19937(DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        """Seed this generator (PyTorch seeds its twister with the low 32 bits and
        keeps the whole seed for `initial_seed`)."""
        seed = int(seed)
        if not -0x8000_0000_0000_0000 <= seed <= 0xFFFF_FFFF_FFFF_FFFF:
            raise ValueError("Overflow when unpacking long long")
        self._engine.manual_seed(seed & 0xFFFF_FFFF_FFFF_FFFF)
        return self

    def seed(self) -> int:
        """Seed from the OS, non-deterministically; returns the seed."""
        s = _os_seed()
        self._engine.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._engine.initial_seed

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor of PyTorch's layout (5056 bytes)."""
        data = np.frombuffer(self._engine.get_state(), dtype=np.uint8).copy()
        return from_numpy(data)

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state from `get_state` (or from PyTorch's `get_state`)."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got "
                            f"{type(new_state).__name__}")
        if new_state.dtype is not dt.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        self._engine.set_state(bytes(new_state.detach().cpu().numpy().reshape(-1)))
        return self

    def clone_state(self) -> Generator:
        """A new generator in this one's state (`torch.Generator.clone_state`)."""
        twin = Generator(self.device)
        twin._engine.set_state(self._engine.get_state())
        return twin

    # Printed and named as PyTorch's class (`<torch._C.Generator object at 0x...>` under
    # the torch alias, `ember._C.Generator` otherwise): a pickle names this module's
    # rebuild function, never that printed path.
    def __reduce_ex__(self, protocol: int) -> tuple:
        return _rebuild_generator, (str(self.device), self._engine.get_state())

    def __getstate__(self) -> dict:
        return {"device": str(self.device), "state": self._engine.get_state()}

    def __setstate__(self, state: dict) -> None:
        self.device = Device(state["device"])
        self._engine = MT19937(DEFAULT_SEED)
        self._engine.set_state(state["state"])


# the types of the random factories' shared keywords (ember.core.creation._keywords_typed)
_KEYWORD_TYPES = {"requires_grad": bool, "pin_memory": bool, "generator": Generator,
                  "layout": storage.layout, "dtype": dt.dtype}


def _rebuild_generator(device: str, state: Any) -> Generator:
    """A pickled Generator: one on `device` in `state`."""
    generator = Generator(device)
    generator._engine.set_state(state)
    return generator


default_generator = Generator()
"""The generator random ops on the CPU use when none is given (`torch.default_generator`)."""
default_generator._engine.manual_seed(plugins.registry.startup_seed)


def get_rng_state() -> Tensor:
    """The default generator's state, a uint8 tensor of PyTorch's layout."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator's state from `get_rng_state`."""
    default_generator.set_state(new_state)


# the `randomness` of each `vmap` running, innermost last (ember.transforms.vmap): under
# "error" a random op refuses to draw, as PyTorch's batched random ops do
vmap_randomness: list[str] = []


def host_generator(generator: Any, device: Device) -> Generator | None:
    """The generator a random op on `device` draws from on the host: the one given, or
    the default generator on the CPU; None when the op should run on its device's own
    generator (a backend kernel)."""
    if vmap_randomness and vmap_randomness[-1] == "error":
        raise RuntimeError("vmap: called random operation while in randomness error mode. "
                           "Please either use the 'same' or 'different' randomness flags on "
                           "vmap or perform the randomness operation out of vmap")
    if generator is not None:
        if not isinstance(generator, Generator):
            raise TypeError(f"expected a Generator, but got {type(generator).__name__}")
        return generator
    return default_generator if device.type == "cpu" else None


def host_random(op: str, size: tuple[int, ...], d: dt.dtype, device: Device,
                draw: Callable[[], np.ndarray], **attrs: Any) -> Tensor:
    """A tensor of `size` on `device` holding `draw()` (a flat array of its values, in
    order, drawn from a host generator). Recorded like a kernel call, so a taped step
    (`ember.compile`) draws fresh numbers on every replay."""
    def kernel() -> np.ndarray:
        return np.ascontiguousarray(draw(), dtype=numpy_dtype(d)).reshape(size)

    dev, backend = resolve("cpu")
    buf = kernel()
    if tracing.tape is not None:
        tracing.tape.call(op, kernel, (), {}, buf)
    out = Tensor._make(buf, d, dev, backend)
    if tracing.active is not None:
        tracing.primitive(op, (), dict(attrs, dtype=d, device="cpu"), out)
    return out if device.type == "cpu" else out.to(device)
