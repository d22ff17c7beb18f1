"""`ember.testing.assert_close` (torch.testing.assert_close): whether two tensors, numbers,
or sequences and mappings of them are close, with PyTorch's default tolerances per dtype,
its attribute checks (shape, device, dtype, layout, strides) and its failure messages
word for word, so that a program's test output reads as under PyTorch.
"""

from __future__ import annotations

import cmath
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ember.core import dtype as dt
from ember.core.tensor import Tensor

__all__ = ["assert_close"]

# (rtol, atol) by dtype, PyTorch's; other dtypes compare exactly
_DTYPE_PRECISIONS = {dt.float16: (0.001, 1e-5), dt.bfloat16: (0.016, 1e-5),
                     dt.float32: (1.3e-6, 1e-5), dt.float64: (1e-7, 1e-7),
                     dt.complex64: (1.3e-6, 1e-5), dt.complex128: (1e-7, 1e-7)}
# Python numbers compare with their dtype's (complex128's are float64's, 1e-7 and 1e-7)
_NUMBER_DTYPES = {bool: dt.bool_, int: dt.int64, float: dt.float64, complex: dt.float64}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise and its message."""

    def __init__(self, kind: type, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message
        self.path: list = []  # the item's keys and indices, outermost first


def _tolerances(*dtypes: Any, rtol: float | None, atol: float | None) -> tuple[float, float]:
    if (rtol is None) ^ (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    pairs = [_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes]
    return max(r for r, _ in pairs), max(a for _, a in pairs)


def _mismatch_message(*, identifier: str, extra: str | None, abs_diff: Any, abs_idx: Any,
                      atol: float, rel_diff: Any, rel_idx: Any, rtol: float) -> str:
    equality = rtol == 0 and atol == 0

    def diff(kind: str, value: Any, idx: Any, tol: float) -> str:
        text = f"{kind.title()} difference: {value}" if idx is None else \
            f"Greatest {kind} difference: {value} at index {idx}"
        return text + ("" if equality else f" (up to {tol} allowed)") + "\n"
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff("absolute", abs_diff, abs_idx, atol) + diff("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_message(actual: Any, expected: Any, *, rtol: float, atol: float,
                    identifier: str) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_message(identifier=identifier, extra=f"Expected {expected} but got {actual}.",
                             abs_diff=abs_diff, abs_idx=None, atol=atol, rel_diff=rel_diff,
                             rel_idx=None, rtol=rtol)


def _compare_numbers(actual: Any, expected: Any, *, rtol: float | None, atol: float | None,
                     equal_nan: bool, check_dtype: bool) -> None:
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError,
                        f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    rtol, atol = _tolerances(_NUMBER_DTYPES[type(actual)], _NUMBER_DTYPES[type(expected)],
                             rtol=rtol, atol=atol)
    if actual == expected:
        return
    if cmath.isnan(actual) and cmath.isnan(expected) and equal_nan:
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol=rtol, atol=atol,
                                                    identifier="Scalars"))


def _unravel(flat: int, shape: tuple) -> tuple:
    index = []
    for size in reversed(shape):
        flat, mod = divmod(flat, size)
        index.append(mod)
    return tuple(reversed(index))


def _compare_tensors(actual: Tensor, expected: Tensor, *, rtol: float | None,
                     atol: float | None, equal_nan: bool, check_device: bool,
                     check_dtype: bool, check_layout: bool, check_stride: bool) -> None:
    def attribute(name: str, a: Any, e: Any) -> None:
        raise _Mismatch(AssertionError,
                        f"The values for attribute '{name}' do not match: {a} != {e}.")
    if actual.shape != expected.shape:
        attribute("shape", actual.shape, expected.shape)
    if check_layout and actual.layout != expected.layout:
        attribute("layout", actual.layout, expected.layout)
    elif check_stride and actual.stride() != expected.stride():
        attribute("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        attribute("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        attribute("dtype", actual.dtype, expected.dtype)
    rtol, atol = _tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol)
    actual, expected = actual.detach().cpu(), expected.detach().cpu()
    if actual.dtype != expected.dtype:
        common = dt.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    matches = actual.isclose(expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(matches.all()):
        return
    if actual.shape == ():
        raise _Mismatch(AssertionError, _scalar_message(
            actual.item(), expected.item(), rtol=rtol, atol=atol, identifier="Scalars"))
    total = matches.numel()
    mismatches = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    a, e, m = actual.flatten(), expected.flatten(), matches.flatten()
    if not a.dtype.is_floating_point and not a.dtype.is_complex:
        a, e = a.to(dt.int64), e.to(dt.int64)
    abs_diff = (a - e).abs()
    abs_diff[m] = 0
    max_abs, abs_at = abs_diff.max(0)
    rel_diff = abs_diff / e.abs()
    rel_diff[m] = 0
    max_rel, rel_at = rel_diff.max(0)
    raise _Mismatch(AssertionError, _mismatch_message(
        identifier="Tensor-likes", extra=extra, abs_diff=max_abs.item(),
        abs_idx=_unravel(int(abs_at), tuple(matches.shape)), atol=atol,
        rel_diff=max_rel.item(), rel_idx=_unravel(int(rel_at), tuple(matches.shape)),
        rtol=rtol))


def _is_number(x: Any) -> bool:
    return isinstance(x, (bool, int, float, complex))


def _compare(actual: Any, expected: Any, **options: Any) -> None:
    tensor_options = {k: v for k, v in options.items() if k != "allow_subclasses"}
    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        # two NumPy arrays compare as tensors (PyTorch's TensorLikePair takes them)
        actual, expected = Tensor._from_data(actual), Tensor._from_data(expected)
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if not options.get("allow_subclasses", True) and type(actual) is not type(expected):
            raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of "
                                       f"type {type(actual)} and {type(expected)}.")
        _compare_tensors(actual, expected, **tensor_options)
        return
    if _is_number(actual) and _is_number(expected):
        _compare_numbers(actual, expected, rtol=options["rtol"], atol=options["atol"],
                         equal_nan=options["equal_nan"], check_dtype=options["check_dtype"])
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            missing = sorted(set(expected) - set(actual), key=repr)
            extra = sorted(set(actual) - set(expected), key=repr)
            raise _Mismatch(AssertionError,
                            "The keys of the mappings do not match:\n"
                            + (f"Missing keys in the actual mapping: {missing}\n" if missing
                               else "")
                            + (f"Additional keys in the actual mapping: {extra}" if extra else ""))
        for key in expected:
            _nested(actual[key], expected[key], key, options)
        return
    if isinstance(actual, Sequence) and not isinstance(actual, str) and \
            isinstance(expected, Sequence) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: "
                                            f"{len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _nested(a, e, i, options)
        return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type "
                               f"{type(actual)} and {type(expected)}.")


def _nested(actual: Any, expected: Any, key: Any, options: dict) -> None:
    try:
        _compare(actual, expected, **options)
    except _Mismatch as err:
        err.path.insert(0, key)
        raise


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: float | None = None, atol: float | None = None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg: str | Callable[[str], str] | None = None
                 ) -> None:
    r"""Asserts that ``actual`` and ``expected`` are close.

    Tensors (and 0-d tensors) are close where ``|actual - expected| <= atol + rtol *
    |expected|`` elementwise, after their shape, layout, device and dtype (and strides
    with ``check_stride``) agree; numbers likewise; sequences and mappings item by item.
    Without ``rtol`` and ``atol`` the dtype's defaults apply (float32: 1.3e-6 and 1e-5,
    float64: 1e-7 and 1e-7, float16: 1e-3 and 1e-5, bfloat16: 1.6e-2 and 1e-5; exact
    otherwise). ``msg`` replaces the message, or, if callable, rewrites it.
    """
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                   equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    try:
        _compare(actual, expected, **options)
    except _Mismatch as err:
        message = err.message
        if err.path:
            message += "\n\nThe failure occurred for item " + \
                "".join(f"[{key!r}]" for key in err.path)
        if msg is not None:
            message = msg(message) if callable(msg) else msg
        raise err.kind(message) from None



_ALLCLOSE_PRECISIONS = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5),
                        "float64": (1e-5, 1e-8)}


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None, equal_nan: bool = True, msg: str = "") -> None:
    r"""Deprecated form of :func:`assert_close` (torch.testing's, kept for old programs):
    dtypes need not agree, NaNs compare equal, and the default tolerances are looser
    (float32: rtol 1e-4, atol 1e-5)."""
    import ember

    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    if not isinstance(actual, ember.Tensor):
        actual = ember.tensor(actual)
    if not isinstance(expected, ember.Tensor):
        expected = ember.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        tolerances = [_ALLCLOSE_PRECISIONS.get(str(t.dtype).split(".")[-1], (0.0, 0.0))
                      for t in (actual, expected)]
        rtol, atol = max(t[0] for t in tolerances), max(t[1] for t in tolerances)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)
