"""The device dispatch table: every kernel runs through this module.

`run` checks that the operands share one device, applies the op's shape/dtype rule from
its declaration (which raises on bad input before any kernel runs), checks that the
backend holds the result's dtype, casts operands to the compute dtype, finds the kernel
of the operands' backend, and wraps the result. A backend without the kernel falls back
to the CPU backend, with one warning per (backend, op), or an error under EMBER_STRICT=1.

`run_fused` runs an optional fused kernel (ember.core.opdef.FusedKernel) when the
operands' backend has it; the device, dtype and tracing checks every fused kernel needs
are made here, once.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ember.core import dtype as _dt
from ember.core import float8, plugins, tracing, unsigned
from ember.core.backend import OVERLAP, Backend
from ember.core.device import device as Device
from ember.core.errors import warn_once, with_context
from ember.core.grad_mode import check_writable
from ember.core.grad_mode import state as _grad_state
from ember.core.opdef import FUSED, OPS
from ember.core.shapes import fmt_shape
from ember.core.tensor import Tensor


class FallbackWarning(UserWarning):
    """An op ran on the CPU because its backend has no kernel for it."""


def strict() -> bool:
    return os.environ.get("EMBER_STRICT", "0") not in ("", "0")


def device_mismatch(op: str, a: Tensor, b: Tensor) -> RuntimeError:
    """PyTorch's error for operands `a` (the op's device) and `b` on two devices: its
    meta kernels word it their own way."""
    if "meta" in (a._device.type, b._device.type):
        msg = f"Tensor on device {b._device} is not on the expected device {a._device}!"
    else:
        msg = (f"Expected all tensors to be on the same device, but found at least two "
               f"devices, {a._device} and {b._device}!")
    return with_context(RuntimeError(msg), f"{op}: operands on {a._device} and {b._device}")


def common_device(op: str, args: tuple) -> Tensor | None:
    """The first tensor operand, after checking that every tensor shares its device."""
    first = None
    for a in args:
        if isinstance(a, Tensor):
            if first is None:
                first = a
            elif a._device is not first._device:
                raise device_mismatch(op, first, a)
    return first


def check_dtype(op: str, backend: Backend, d: _dt.dtype, device: Device) -> None:
    """A backend holds only the dtypes it declares (`Backend.dtypes`)."""
    if d not in backend.dtypes:
        if d._category == _dt.QUANTIZED:  # a quantized operand: its own ops answer (declare)
            raise NotImplementedError(f"Could not run 'aten::{op}' with arguments from the "
                                      f"'Quantized{device.type.upper()}' backend")
        held = ", ".join(x.name for x in _dt.EVERY_DTYPE if x in backend.dtypes)
        raise RuntimeError(f"{op}: device {device} cannot hold {d} tensors (it holds {held})")


# PyTorch's kernel names where they are not the op's (its "not implemented for" messages
# name the kernel, with the device's suffix: "div_floor_cpu"); None: the kernel is named
# without a device suffix (pow's message says "pow")
KERNEL_NAMES: dict[str, str | None] = {
    "floor_divide": "div_floor", "bitwise_left_shift": "lshift",
    "bitwise_right_shift": "rshift", "pow": None, "unique": None}

# the CPU kernels that refuse a complex tensor in their own words (a RuntimeError), not
# with the dispatch macro's "not implemented for"
COMPLEX_REFUSALS: dict[str, str | tuple[type, str]] = {
    "sort": " Sort does not support complex dtypes on CPU",
    "topk": " topk does not support complex dtypes on CPU"}
COMPLEX_REFUSALS.update(argsort=COMPLEX_REFUSALS["sort"], msort=COMPLEX_REFUSALS["sort"])
# (on every device: checks ATen makes before it dispatches; a type given where it is not a
# RuntimeError)
COMPLEX_REFUSALS.update(
    {op: (NotImplementedError, f"{op} is not supported for complex inputs")
     for op in ("floor", "ceil", "trunc")},
    clamp=(NotImplementedError, "clamp is not supported for complex types"),
    signbit=(NotImplementedError, "signbit is not implemented for complex tensors."),
    heaviside="heaviside is not yet implemented for complex tensors.",
    frexp="torch.frexp() only supports floating-point dtypes",
    **{op: f"{op} not implemented for complex tensors."
       for op in ("maximum", "minimum", "fmax", "fmin")},
    **{op: f"{op} is not supported for complex tensors." for op in ("rad2deg", "deg2rad")},
    **{op: f"{op} does not support complex inputs." for op in ("isposinf", "isneginf")})
# the CPU kernels PyTorch's messages name otherwise than `{op}_cpu`: the vectorised (VML)
# ones, the `ember.special` ops' (named without the prefix), and composites that fail in
# the kernel of an op they call (ndtr in erf's, mvlgamma in arange's)
CPU_KERNEL_NAMES: dict[str, str | None] = {
    **{op: f"{op}_vml" for op in ("erf", "erfc", "erfinv", "i0", "lgamma", "floor", "ceil",
                                  "trunc", "round")},
    "digamma": None, "special_ndtr": "erf_vml", "mvlgamma": "arange"}


_CPU_WORDS = frozenset({"sort", "topk", "argsort", "msort"})


def kernel_name(op: str, device: str = "cpu") -> str:
    """The name PyTorch's messages give op `op`'s kernel on `device` (`"div_floor_cpu"`
    for floor_divide, `"pow"` for pow; KERNEL_NAMES)."""
    if device == "cpu" and op in CPU_KERNEL_NAMES:
        name = CPU_KERNEL_NAMES[op]
    else:
        name = KERNEL_NAMES.get(op, op.removeprefix("special_"))
    return op if name is None else f"{name}_{device}"


def not_implemented_for(op: str, x: Any, dtype: Any = None) -> RuntimeError:
    """PyTorch's error for a dtype an op's kernel lacks: `"clamp_cpu" not implemented for
    'ComplexFloat'` (a NotImplementedError, which is a RuntimeError's kin in PyTorch;
    COMPLEX_REFUSALS: a kernel's own words for a complex tensor on the CPU);
    `dtype`: the dtype named, when not tensor `x`'s; `x` a number: the CPU's kernel."""
    device = x._device.type if isinstance(x, Tensor) else "cpu"
    d = dtype or x._dtype
    if d.is_complex and op in COMPLEX_REFUSALS and (device == "cpu" or op not in _CPU_WORDS):
        words = COMPLEX_REFUSALS[op]
        return words[0](words[1]) if isinstance(words, tuple) else RuntimeError(words)
    return kernel_refuses(kernel_name(op, device), d)


def kernel_refuses(kernel: str, d: _dt.dtype) -> NotImplementedError:
    """PyTorch's words for its kernel `kernel` (named as its message names it) lacking
    dtype `d`: `"add_stub" not implemented for 'Float8_e4m3fn'`."""
    return NotImplementedError(f'"{kernel}" not implemented for '
                               f"'{_dt.SCALAR_TYPE_NAMES[d.name]}'")


_FLOAT8 = frozenset(_dt.FLOAT8_DTYPES)
# the dtypes most of PyTorch's CPU kernels are not built for: float8 and uint16/32/64
_LIMITED = frozenset(_dt.LIMITED_DTYPES)
_BAREBONES = _FLOAT8 | _LIMITED


def refuse_barebones(op: str, args: tuple, attrs: dict | None = None,
                     meta: Any = None) -> None:
    """Raise PyTorch's error when its CPU kernel for primitive `op` refuses the float8 or
    unsigned (uint16/32/64) operand among `args` (ember.core.float8.REFUSING_KERNELS,
    ember.core.unsigned.REFUSING_KERNELS); asked only when the rule runs (its answer,
    `meta`, is kept), so other dtypes pay one set lookup there."""
    d = next(a._dtype for a in args if isinstance(a, Tensor) and a._dtype in _BAREBONES)
    if d in _FLOAT8:
        kernel = float8.refusing_kernel(op, args)
    else:
        kernel = unsigned.refuses(op, args, attrs or {}, getattr(meta, "compute", None))
    if kernel is not None:
        raise kernel_refuses(kernel, d)


def refuse_unsigned(kernel: str, x: Tensor) -> None:
    """Raise PyTorch's error when tensor `x` is uint16/32/64, which its CPU kernel
    `kernel` (named as its message names it) refuses: for a composite op whose parts
    would refuse under other names, or compute."""
    if x._dtype in _LIMITED:
        raise kernel_refuses(kernel, x._dtype)


def refuse_complex(op: str, args: Any) -> None:
    """Raise when a tensor among `args` (or in a list among them) is complex: the op
    `op` was not declared to take complex tensors (`Op.complex`)."""
    for a in args:
        if isinstance(a, Tensor):
            if a._dtype.is_complex:
                raise not_implemented_for(op, a)
        elif type(a) in (list, tuple):
            refuse_complex(op, a)


def run(op: str, *args: Any, **attrs: Any) -> Tensor:
    """Run primitive `op` on tensor (or scalar) operands; returns the output tensor."""
    first = common_device(op, args)
    traced_args = args
    decl = OPS[op]
    if not decl.complex:
        for a in args:  # (refuse_complex, inline: every primitive call passes here)
            if isinstance(a, Tensor) and a._dtype.is_complex:
                raise not_implemented_for(op, a)
    answers = decl.rule_answers
    if answers is None:
        meta = decl.rule(*args, **attrs)
        if first._dtype in _BAREBONES:
            refuse_barebones(op, args, attrs, meta)
    else:
        key = rule_key(args, attrs)
        meta = answers.get(key) if key is not None else None
        if meta is None:
            meta = decl.rule(*args, **attrs)
            if first._dtype in _BAREBONES:  # (a rule's answer is kept: checked once)
                refuse_barebones(op, args, attrs, meta)
            if key is not None and meta is not None:
                if len(answers) > 1024:  # many distinct calls: start afresh
                    answers.clear()
                answers[key] = meta
    backend = first._backend
    if meta is not None and meta.compute is not None and meta.compute.is_complex and \
            not decl.complex:  # a real tensor with a Python complex (`x < 1j`)
        raise not_implemented_for(op, first, meta.compute)
    if meta is not None:
        if meta.dtype not in backend.dtypes:
            check_dtype(op, backend, meta.dtype, first._device)
        if meta.compute is not None:
            compute, keep = meta.compute, decl.uncast
            args = tuple(a if i in keep else
                         (cast(a, compute) if isinstance(a, Tensor) and a._dtype is not compute
                          else (_wrap_int(a, compute) if type(a) is int else a))
                         for i, a in enumerate(args))
    elif backend.shape_only:
        raise NotImplementedError(f"{op}: the result's shape depends on the values, which "
                                  f"tensors on the {first._device} device do not have")
    bufs = [a._data if isinstance(a, Tensor) else a for a in args]
    kernel = backend.kernels.get(op)
    if kernel is None:
        out = _fallback(backend, op, first, args, attrs)
    else:
        out = kernel(*bufs, **attrs)
    if tracing.tape is not None:
        if meta is None:
            tracing.refuse_tape(f"{op} makes a shape that depends on the data")
        tracing.tape.call(op, kernel, args, attrs, out)
    # meta None: a data-dependent shape (nonzero), whose dtype is int64
    result = Tensor._make(out, _dt.int64 if meta is None else meta.dtype, first._device,
                          backend)
    if tracing.active is not None:
        tracing.primitive(op, traced_args, attrs, result)
    return result


def run_view(op: str, x: Tensor, **attrs: Any) -> Tensor:
    """`run` for a view kernel of one tensor whose attributes the caller has checked
    (reshape to an inferred shape, a permutation it built): the result keeps `x`'s dtype
    and device, so outside traces and compiled recordings (which record every primitive)
    the kernel runs without the rule's lookup."""
    if tracing.active is None and tracing.tape is None:
        kernel = x._backend.kernels.get(op)
        if kernel is not None:
            return Tensor._make(kernel(x._data, **attrs), x._dtype, x._device, x._backend)
    return run(op, x, **attrs)


_SCALARS = (int, float, bool, complex, type(None))
_UNKEYED = object()  # what `_attr_key` gives for an attribute `rule_key` cannot key


def _attr_key(value: Any) -> Any:
    """An attribute's part of `rule_key`, or `_UNKEYED`."""
    kind = type(value)
    if kind in _SCALARS:
        return kind, value  # (2 and 2.0, True and 1 are equal, but not the same attribute)
    if kind is str or kind is _dt.dtype:
        return value
    if kind is tuple or kind is list:
        parts = tuple([_attr_key(v) for v in value])
        return _UNKEYED if any(p is _UNKEYED for p in parts) else parts
    if isinstance(value, Tensor):
        return value._data.shape, value._dtype
    return _UNKEYED  # another kind of object


def rule_key(args: tuple, attrs: dict) -> tuple | None:
    """What a `metadata_rule`'s answer depends on for this call (see opdef.metadata_rule):
    each tensor operand's shape and dtype, each scalar's type and value, the attributes,
    the default dtype. None when an argument or attribute is of another kind: the rule
    then runs."""
    key: list = [_dt._default_float]
    for a in args:
        if isinstance(a, Tensor):
            key.append(a._data.shape)
            key.append(a._dtype)
        elif type(a) in _SCALARS:
            key.append(type(a))
            key.append(a)
        else:
            return None
    for name, value in attrs.items():
        part = _attr_key(value)
        if part is _UNKEYED:
            return None
        key.append(name)
        key.append(part)
    return tuple(key)


_binary_meta: dict[tuple, Any] = {}

same_dtype_results: dict[tuple, tuple] = {}
"""(op, dtype, backend) -> (kernel, result dtype, compute dtype or None) of a binary
elementwise op on two tensors
of that dtype and one shape (at least 1-d) that its kernel takes as they are: the rule's
answer for them depends on nothing else, so ember.core.ops.elementwise.binary calls the
kernel directly once `run_binary` has found it (and while the backend keeps that kernel)."""


def run_binary(op: str, a: Any, b: Any, out: Tensor | None = None) -> Tensor:
    """`run` for binary elementwise ops (the hottest path): the rule's answer is cached
    per (op, shapes, dtypes, default dtype, backend), so a repeated op skips straight to
    its kernel.

    With `out`, the result is written into that tensor (an in-place op; no autograd).
    """
    if out is a and isinstance(b, Tensor) and b._dtype is a._dtype and \
            b._data.shape == a._data.shape and b._device is a._device and \
            tracing.active is None and tracing.tape is None:
        # `a.add_(b)` of one shape and dtype (gradient accumulation, optimizers): the
        # result's dtype is known (see same_dtype_results), the kernel writes into a
        check_writable(a)
        backend = a._backend
        entry = same_dtype_results.get((op, a._dtype, backend))
        if entry is not None and entry[1] is a._dtype and entry[2] is a._dtype and \
                backend.supports_out and backend.kernels.get(op) is entry[0]:
            entry[0](a._data, b._data, out=a._data)
            a._vc[0] += 1
            return a
    if isinstance(a, Tensor):
        first = a
        if isinstance(b, Tensor):
            if b._device is not a._device:
                raise device_mismatch(op, a, b)
            key = (op, a._data.shape, a._dtype, b._data.shape, b._dtype, _dt._default_float,
                   a._backend)
        else:
            key = (op, a._data.shape, a._dtype, type(b), _dt._default_float, a._backend)
    else:
        first = b
        key = (op, type(a), _dt._default_float, b._data.shape, b._dtype, b._backend)
    backend = first._backend
    meta = _binary_meta.get(key)
    if meta is None:
        if not OPS[op].complex:
            refuse_complex(op, (a, b))
        meta = OPS[op].rule(a, b)
        if first._dtype in _BAREBONES:
            refuse_barebones(op, (a, b), None, meta)
        if meta.compute is not None and meta.compute.is_complex and not OPS[op].complex:
            raise not_implemented_for(op, first, meta.compute)  # a Python complex scalar
        check_dtype(op, backend, meta.dtype, first._device)
        if len(_binary_meta) > 4096:  # many distinct shapes: start afresh
            _binary_meta.clear()
        _binary_meta[key] = meta
        if isinstance(a, Tensor) and isinstance(b, Tensor) and a._dtype is b._dtype and \
                a._data.shape == b._data.shape and a._data.shape and \
                meta.compute in (None, a._dtype) and meta.dtype in (a._dtype, _dt.bool_):
            kernel = backend.kernels.get(op)
            if kernel is not None:
                same_dtype_results[(op, a._dtype, backend)] = (kernel, meta.dtype, meta.compute)
    kernel = backend.kernels.get(op)
    if tracing.active is not None or tracing.tape is not None:  # the general path records
        if out is not None:
            check_out(op + "_", out, meta.shape, meta.dtype)
            return write_into(out, run(op, a, b))
        return run(op, a, b)
    if out is not None:
        check_writable(out)
        check_out(op + "_", out, meta.shape, meta.dtype)
        if kernel is None or not backend.supports_out or meta.dtype is not out._dtype \
                or meta.compute is not out._dtype:
            return write_into(out, run_binary(op, a, b))
    if kernel is None:  # the general path knows how to fall back to the CPU
        return run(op, a, b)
    compute = meta.compute
    if isinstance(a, Tensor):
        a = a._data if a._dtype is compute else cast(a, compute)._data
    elif type(a) is int:
        a = _wrap_int(a, compute)
    if isinstance(b, Tensor):
        b = b._data if b._dtype is compute else cast(b, compute)._data
    elif type(b) is int:
        b = _wrap_int(b, compute)
    if out is not None:
        kernel(a, b, out=out._data)
        out._vc[0] += 1
        return out
    return Tensor._make(kernel(a, b), meta.dtype, first._device, backend)


def run_unary_into(op: str, x: Tensor) -> Tensor:
    """Unary elementwise `op` written into `x` itself (an in-place op; no autograd)."""
    if x._dtype.is_complex and not OPS[op].complex:
        raise not_implemented_for(op, x)
    check_writable(x)
    meta = OPS[op].rule(x)
    check_out(op + "_", x, meta.shape, meta.dtype)
    kernel = x._backend.kernels.get(op)
    if kernel is None or not x._backend.supports_out or meta.compute not in (None, x._dtype) \
            or meta.dtype is not x._dtype or tracing.active is not None \
            or tracing.tape is not None:
        return write_into(x, run(op, x))
    kernel(x._data, out=x._data)
    x._vc[0] += 1
    return x


def check_castable(op: str, src: Any, dst: Any) -> None:
    """PyTorch's rule for in-place and `out=` results: never into a lower category."""
    if src._category > dst._category:
        names = _dt.SCALAR_TYPE_NAMES
        raise with_context(RuntimeError(
            f"result type {names.get(src.name, src)} can't be cast to the desired output type "
            f"{names.get(dst.name, dst)}"), f"{op}: a {src} result into a {dst} tensor")


def check_out(op: str, out: Tensor, shape: Any, dtype: Any) -> None:
    """A result of `shape` and `dtype` written in place (op `op`, e.g. "add_") must keep
    the destination's shape and fit its dtype."""
    if tuple(shape) != out._data.shape:
        raise with_context(RuntimeError(
            f"output with shape {fmt_shape(out._data.shape)} doesn't match the broadcast "
            f"shape {fmt_shape(tuple(shape))}"), f"{op}: written in place")
    check_castable(op, dtype, out._dtype)


def write_into(dst: Tensor, src: Tensor, overlapping: bool = False) -> Tensor:
    """Copy `src` (same shape; castable dtype) into `dst`'s storage and bump its version;
    `overlapping` lets it into elements that share memory (a fill, as PyTorch allows)."""
    check_writable(dst)
    if src._dtype is not dst._dtype:
        src = cast(src, dst._dtype)
    assign = dst._backend.kernels["assign"]
    attrs: dict = {}
    try:
        assign(dst._data, src._data)
    except RuntimeError as err:  # shared elements: a fill may go on (a backend that can
        if not overlapping or str(err) != OVERLAP:  # says so by the keyword; the
            raise  # contract's `assign(dst, src)` needs nothing more)
        attrs = {"overlapping": True}
        assign(dst._data, src._data, **attrs)
    if tracing.tape is not None:
        tracing.tape.call("assign", assign, (dst, src), attrs, None)
    dst._vc[0] += 1
    if tracing.active is not None:
        tracing.primitive("assign", (dst, src), {}, dst)
    return dst


def run_inplace(op: str, target: Tensor, *args: Any, **attrs: Any) -> None:
    """Run an in-place primitive (`assign`, `setitem`) that writes into `target`."""
    check_writable(target)
    common_device(op, (target,) + args)
    if not OPS[op].complex:
        refuse_complex(op, (target,) + args)
    OPS[op].rule(target, *args, **attrs)
    backend = target._backend
    bufs = [a._data if isinstance(a, Tensor) else a for a in args]
    kernel = backend.kernels.get(op)
    if kernel is None:  # required kernels are checked at plugin load; be explicit anyway
        raise RuntimeError(f"{op}: backend {backend.name!r} has no kernel for this in-place op")
    kernel(target._data, *bufs, **attrs)
    if tracing.tape is not None:
        tracing.tape.call(op, kernel, (target,) + args, attrs, None)
    if tracing.active is not None:
        tracing.primitive(op, (target,) + args, attrs, target)


def run_creation(op: str, device: Device, backend: Backend, **attrs: Any) -> Tensor:
    """Run a creation op (`full`, `arange`, `rand` ...) on `device`."""
    meta = OPS[op].rule(**attrs, device=device.index or 0)
    if meta.dtype.is_complex and not OPS[op].complex:
        raise NotImplementedError(f'"{op}_{device.type}" not implemented for '
                                  f"'{_dt.SCALAR_TYPE_NAMES[meta.dtype.name]}'")
    check_dtype(op, backend, meta.dtype, device)
    kernel = backend.kernels.get(op)
    if kernel is None:
        cpu = plugins.get_backend("cpu")
        if not backend.shape_only:  # (shape-only buffers cost nothing to make on the CPU)
            _warn_fallback(backend, op)
        host = cpu.kernels[op](**attrs, device=0)
        out = backend.from_numpy(cpu.to_numpy(host), device.index or 0)
    else:
        out = kernel(**attrs, device=device.index or 0)
        if tracing.tape is not None:
            tracing.tape.call(op, kernel, (), dict(attrs, device=device.index or 0), out)
    result = Tensor._make(out, meta.dtype, device, backend)
    if tracing.active is not None:
        tracing.primitive(op, (), dict(attrs, device=str(device)), result)
    return result


# Fused kernels withheld per thread (thread id -> names): while the scheduler records the
# ops another backend would run, that thread sees only that backend's fused kernels. Empty
# almost always, so run_fused pays one truth test.
_withheld: dict[int, frozenset[str]] = {}


@contextlib.contextmanager
def withholding_fused(names: frozenset[str]) -> Iterator[None]:
    """In this thread, `run_fused` declines the fused kernels `names` (their composites
    run their decompositions); other threads are unaffected."""
    me = threading.get_ident()
    before = _withheld.get(me)
    _withheld[me] = names | (before or frozenset())
    try:
        yield
    finally:
        if before is None:
            del _withheld[me]
        else:
            _withheld[me] = before


def run_fused(name: str, *args: Any, **attrs: Any) -> Any:
    """Run fused kernel `name` on the backend of the first tensor argument.

    Returns None when it does not run: the backend has no such kernel, a trace is
    recording or an fx graph capture runs (either keeps the decomposition, so it can be
    replayed and exported), the
    kernel computes a gradient while the backward pass is itself recorded, or a tensor
    argument is on another device or (for `same_dtype` kernels) of another dtype. Else
    its outputs as the declaration says: none `()`, one tensor, or a tuple. Arguments may
    be tensors, lists of tensors (list ops; entries may be None), None, or plain values.
    """
    decl = FUSED[name]
    if tracing.active is not None and tracing.replaying() or \
            tracing.value_read is not None or (decl.backward and _grad_state.enabled):
        return None  # (a trace or a graph capture records the decomposition)
    if _withheld and name in _withheld.get(threading.get_ident(), ()):
        return None
    same = decl.same_dtype
    first = device = dtype = None
    bufs = []
    for a in args:  # one pass: find the first tensor, check the others against it
        if isinstance(a, Tensor):
            if first is None:
                first, device, dtype = a, a._device, a._dtype
            elif a._device is not device or (same and a._dtype is not dtype):
                return None
            bufs.append(a._data)
        elif type(a) is list:  # a list of tensors (entries may be None), or of values
            datas = []
            for t in a:
                if t is None:
                    datas.append(None)
                    continue
                if not isinstance(t, Tensor):
                    datas = a  # a list of plain values: passed as it is
                    break
                if first is None:
                    first, device, dtype = t, t._device, t._dtype
                elif t._device is not device or (same and t._dtype is not dtype):
                    return None
                datas.append(t._data)
            bufs.append(datas)
        else:
            bufs.append(a)
    if first is None or dtype.is_complex:  # (fused kernels compute real formulas only)
        return None
    if dtype in _BAREBONES:  # (PyTorch's softmax kernel refuses them: so would its parts)
        refuse_barebones(name, args, attrs)
    kernel = first._backend.kernels.get(name)
    if kernel is None:
        return None
    out = kernel(*bufs, **attrs)
    if tracing.tape is not None:
        tracing.tape.call(name, kernel, args, attrs, out)
    if decl.writes:
        for i in decl.writes:
            for t in (args[i] if type(args[i]) is list else (args[i],)):
                if isinstance(t, Tensor):
                    t._vc[0] += 1
    if decl.one_like:  # the common case: one output of the first tensor's dtype (or None)
        result = None if out is None else \
            Tensor._make(out, first._dtype, first._device, first._backend)
    elif decl.all_like:  # several (gradients ...), some possibly None
        d, dev, backend = first._dtype, first._device, first._backend
        result = tuple([None if b is None else Tensor._make(b, d, dev, backend) for b in out])
    else:
        result = _wrap_fused(decl.outputs, out, first, args)
    if tracing.active is not None:  # (a recorder that keeps the eager computation: vmap's)
        tracing.primitive(name, args, attrs, result)
    return result


def _has_tensor(a: list) -> bool:
    """Whether a list argument is a list of tensors (list ops): entries tensors or None."""
    for t in a:
        if isinstance(t, Tensor):
            return True
        if t is not None:
            return False
    return False


def _wrap_fused(kinds: tuple[str, ...], out: Any, first: Tensor, args: tuple) -> Any:
    if not kinds:
        return ()
    outs = (out,) if len(kinds) == 1 else out
    wrapped = []
    for kind, buf in zip(kinds, outs):
        if buf is None or kind == "opaque":
            wrapped.append(buf)
        elif kind == "each":  # a list, element i like element i of the first list argument
            like = next(a for a in args if type(a) is list and _has_tensor(a))
            wrapped.append([Tensor._make(b, t._dtype, t._device, t._backend)
                            for b, t in zip(buf, like)])
        else:
            d = _dt.int64 if kind == "int64" else first._dtype
            wrapped.append(Tensor._make(buf, d, first._device, first._backend))
    return wrapped[0] if len(kinds) == 1 else tuple(wrapped)


_TWO_63 = 1 << 63


def _wrap_int(value: int, dtype: Any) -> Any:
    """A Python int as the integer `dtype` holds it (wrapping, as a C cast does: 2**63
    into int64 is -2**63); one PyTorch's parser refuses raises (_dt.check_int_arg)."""
    if not -_TWO_63 <= value < _TWO_63:
        _dt.check_int_arg(value)
    if not dtype.is_floating_point and dtype.itemsize <= 8 and dtype.name != "bool":
        bits = 8 * dtype.itemsize
        value &= (1 << bits) - 1
        if dtype.is_signed and value >= 1 << (bits - 1):
            value -= 1 << bits
    return value


def cast(x: Tensor, dtype: Any) -> Tensor:
    """`x` converted to `dtype` (not differentiable here: see Tensor.to)."""
    return run("cast", x, dtype=dtype)


def _warn_fallback(backend: Backend, op: str) -> None:
    tracing.refuse_tape(f"{op} has no kernel on {backend.name} and runs on the CPU")
    if strict():
        raise RuntimeError(f"{op}: backend {backend.name!r} has no kernel for this op, and "
                           "EMBER_STRICT=1 forbids running it on the CPU instead")
    warn_once(f"{op}: backend {backend.name!r} has no kernel for this op; it runs on the CPU "
              "backend instead (copying its operands). Set EMBER_STRICT=1 to make this an "
              "error.", FallbackWarning, stacklevel=user_stacklevel())


_EMBER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_stacklevel() -> int:
    """The `stacklevel` that makes a warning point at the first frame outside ember."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_EMBER_ROOT):
        frame, level = frame.f_back, level + 1
    return level


def _fallback(backend: Backend, op: str, first: Tensor, args: tuple, attrs: dict) -> Any:
    if not backend.shape_only:  # the meta device computes shapes only, on the CPU's kernels
        _warn_fallback(backend, op)
    cpu = plugins.get_backend("cpu")
    host = [cpu.from_numpy(backend.to_numpy(a._data), 0) if isinstance(a, Tensor) else a
            for a in args]
    out = cpu.kernels[op](*host, **attrs)
    index = backend.buffer_device(first._data)
    if isinstance(out, tuple):
        return tuple(backend.from_numpy(cpu.to_numpy(o), index) for o in out)
    return backend.from_numpy(cpu.to_numpy(out), index)
