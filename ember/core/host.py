"""Host data in and out: Python numbers, nested lists and NumPy arrays to a host array of
an ember dtype, and a tensor's values back as a NumPy array.

Works on tensors by duck typing (their `_backend`, `_data`, `_dtype`), so it sits below
the Tensor class, which builds tensors from data through it.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ember.core import dtype as dt
from ember.core.backend import from_numpy_dtype, numpy_dtype
from ember.core.graph import is_tensor


def python_scalar(x: Any) -> Any:
    """A NumPy scalar (`np.float32(2)`, `np.bool_(True)`) as the Python number it holds,
    as PyTorch takes one; anything else as it is."""
    return x.item() if isinstance(x, np.generic) else x


_NUMPY_TYPES = ("float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
                "uint64, uint32, uint16, uint8, and bool")


def check_numpy_array(arr: np.ndarray) -> dt.dtype:
    """The ember dtype of a NumPy array a tensor is made from, after PyTorch's checks
    (tensor_numpy.cpp): no negative stride, the native byte order, a supported dtype."""
    if arr.size and any(s < 0 for s in arr.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not currently supported. (You can probably work around "
            "this by making a copy of your array  with array.copy().) ")
    if not arr.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte "
                         "order. Conversion between byte orders is currently not supported.")
    try:
        return from_numpy_dtype(arr.dtype)
    except TypeError:
        kind = arr.dtype.type
        raise TypeError(f"can't convert np.ndarray of type {kind.__module__}.{kind.__name__}. "
                        f"The only supported types are: {_NUMPY_TYPES}.") from None


def host_array(x: Any) -> np.ndarray:
    """A tensor's values as a NumPy array (shared with the tensor on the CPU)."""
    if x._backend.shape_only:
        raise no_data()
    arr = x._backend.to_numpy(x._data)
    want = numpy_dtype(x._dtype)
    return arr if arr.dtype is want or arr.dtype == want else arr.astype(want)


def no_data() -> NotImplementedError:
    """PyTorch's error for reading the values of a meta tensor, which has none."""
    return NotImplementedError("Cannot copy out of meta tensor; no data!")


# The Python types PyTorch takes as a dtype: `float` is float64 whatever the default
# dtype (a Python float is a C double), as in `torch.zeros(2, dtype=float)`.
_PYTHON_TYPES = {float: dt.float64, int: dt.int64, bool: dt.bool_, complex: dt.complex128}


def dtype_arg(dtype: Any, op: str) -> dt.dtype | None:
    """What a user passed as `dtype=` to `op` -> an ember dtype, or None. As PyTorch: an
    ember dtype or a Python type (`float`, `int`, `bool`, `complex`); a name
    (`"float32"`) or a NumPy dtype is refused with PyTorch's TypeError."""
    if dtype is None or isinstance(dtype, dt.dtype):
        return dtype
    d = _PYTHON_TYPES.get(dtype) if isinstance(dtype, type) else None
    if d is None:
        raise dt.not_a_dtype(dtype, op)
    return d


def infer_dtype(data: Any) -> dt.dtype:
    """PyTorch's dtype for nested Python data: bool, else int64, else the default float,
    else (a Python complex among them) the default complex dtype, promoted with the dtypes
    of the tensors, NumPy arrays and NumPy scalars among them."""
    first = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if isinstance(first, str) and first is not data:  # PyTorch reads a str as a sequence
        raise ValueError("too many dimensions 'str'")
    kinds = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif is_tensor(item):
            kinds.add(item.dtype)
        elif isinstance(item, np.ndarray) or (isinstance(item, np.generic)
                                              and not isinstance(item, np.bool_)):
            # NumPy data keeps its dtype (`[np.float64(1)]` is float64), as a tensor would
            kinds.add(from_numpy_dtype(item.dtype))
        elif isinstance(item, bool) or isinstance(item, np.bool_):
            kinds.add(dt.bool_)
        elif isinstance(item, numbers.Integral):
            kinds.add(dt.int64)
        elif isinstance(item, numbers.Real):
            kinds.add(dt.get_default_dtype())
        elif isinstance(item, numbers.Complex):
            kinds.add(dt.default_complex_dtype())
        elif isinstance(item, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(item).__name__}'")
        else:
            raise RuntimeError(f"Could not infer dtype of {type(item).__name__}")
    if not kinds:
        return dt.get_default_dtype()
    out = kinds.pop()
    for k in kinds:
        out = dt.promote_types(out, k)
    return out


_SEQUENCES = (list, tuple, np.ndarray)


def _ragged(data: Any, dtype: dt.dtype) -> Exception | None:
    """PyTorch's error for nested sequences that are not a grid: the shape is read down
    the first elements, then every sequence must match it, depth first ("expected
    sequence of length 2 at dim 1 (got 1)"); None if the fault lies elsewhere."""
    shape = []
    x = data
    while isinstance(x, _SEQUENCES) and not isinstance(x, np.ndarray) or \
            isinstance(x, np.ndarray) and x.ndim:
        shape.append(len(x))
        if not len(x):
            break
        x = x[0]

    def walk(x: Any, dim: int) -> Exception | None:
        if dim == len(shape):
            if not isinstance(x, (list, tuple)):
                return None
            if dtype.is_floating_point:  # a sequence where a number must be: Python's words
                return TypeError(f"must be real number, not {type(x).__name__}")
            return TypeError(f"'{type(x).__name__}' object cannot be interpreted as an integer")
        if not isinstance(x, _SEQUENCES) or isinstance(x, np.ndarray) and not x.ndim:
            return TypeError("not a sequence")
        if len(x) != shape[dim]:
            return ValueError(f"expected sequence of length {shape[dim]} at dim {dim} "
                              f"(got {len(x)})")
        for item in x:
            found = walk(item, dim + 1)
            if found is not None:
                return found
        return None
    return walk(data, 0)


def _tensor_scalars(data: Any, dtype: dt.dtype) -> Any:
    """Nested sequences with each tensor in them read as the number it holds, as PyTorch
    reads them (`tensor([t1, t2])` of one-element tensors is 1-D, whatever their shape).
    A bigger tensor fails as PyTorch's reading of a `dtype` number fails: `__index__`'s
    TypeError for an integer (or bool) dtype, `__float__`'s ValueError otherwise."""
    if is_tensor(data):
        if data.numel() != 1:
            if dtype.is_floating_point or dtype.is_complex:
                raise ValueError("only one element tensors can be converted to Python "
                                 "scalars")
            raise TypeError("only integer tensors of a single element can be converted to "
                            "an index")
        return host_array(data).reshape(())
    if isinstance(data, (list, tuple)):
        return [_tensor_scalars(x, dtype) for x in data]
    return data


def _python_numbers(data: Any, kind: type) -> Any:
    """The Python numbers of `kind` (int: not bools) in nested sequences."""
    if isinstance(data, (list, tuple)):
        for x in data:
            yield from _python_numbers(x, kind)
    elif isinstance(data, kind) and not isinstance(data, bool):
        yield data


def _python_ints(data: Any) -> Any:
    return _python_numbers(data, int)


def _check_integral_data(data: Any, dtype: dt.dtype) -> Any:
    """PyTorch's reading of Python numbers into an integer dtype: NaN (or an infinity)
    overflows; uint64 takes no float and no negative int; a negative int down to -max
    wraps into uint8/16/32 (-1 is 255), as `checked_convert` lets it. Returns the data as
    NumPy can convert it (wrapped ints as their int64 array) or None to convert as is."""
    floats = list(_python_numbers(data, float))
    if dtype is dt.uint64:
        if floats:
            raise TypeError("an integer is required")
        if any(v < 0 for v in _python_ints(data)):
            raise OverflowError("can't convert negative int to unsigned")
        return None
    if dtype is dt.bool_:  # (NaN is true)
        return None
    if any(not math.isfinite(v) for v in floats):
        raise _overflow(data, dtype)
    if dtype.is_signed:
        return None
    top = (1 << (8 * dtype.itemsize)) - 1
    ints = list(_python_ints(data))
    if not any(v < 0 for v in ints) or any(v < -top or v > top for v in ints):
        return None  # (nothing to wrap, or NumPy's OverflowError words it next)
    return np.array(data, dtype=np.int64)


def _overflow(data: Any, dtype: dt.dtype) -> Exception:
    """PyTorch's error for a number that does not fit `dtype`: a Python int beyond int64
    fails as it is unpacked (uint64 unpacks unsigned), before any dtype's range check."""
    if dtype is dt.uint64:
        if any(not 0 <= v < 2 ** 64 for v in _python_ints(data)):
            return OverflowError("int too big to convert")
    elif not (dtype.is_floating_point or dtype.is_complex) and any(
            not -2 ** 63 <= v < 2 ** 63 for v in _python_ints(data)):
        return ValueError("Overflow when unpacking long long")
    return RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")


def _ranges_as_lists(data: Any) -> Any:
    """`range`s read as the sequences they are (`tensor(range(3))`, a list of ranges), as
    PyTorch reads any Python sequence."""
    if isinstance(data, range):
        return list(data)
    if isinstance(data, (list, tuple)) and data and isinstance(data[0], range):
        return [_ranges_as_lists(x) for x in data]
    return data


def _complex_into_real(err: TypeError, dtype: dt.dtype) -> TypeError:
    """A complex number into a real dtype: Python's own words, as PyTorch's conversion
    raises them (others: the error as it is)."""
    if "'complex'" not in str(err):
        return err
    return TypeError("must be real number, not complex" if dtype.is_floating_point
                     else "'complex' object cannot be interpreted as an integer")


def to_host(data: Any, dtype: dt.dtype | None) -> tuple[np.ndarray, dt.dtype]:
    """`data` as a new C-contiguous host array of `dtype` (inferred when None)."""
    if is_tensor(data):
        arr = host_array(data)
        dtype = dtype or data.dtype
    elif isinstance(data, np.ndarray) or isinstance(data, np.generic):
        arr = np.asarray(data)
        source = check_numpy_array(arr)
        dtype = dtype or source
    else:
        if hasattr(data, "__array__") and not isinstance(data, (list, tuple)):
            return to_host(np.asarray(data), dtype)
        data = _ranges_as_lists(data)
        dtype = dtype or infer_dtype(data)
        if isinstance(data, (list, tuple)) and data and (
                any(is_tensor(x) for x in data) or isinstance(data[0], (list, tuple))
                and any(is_tensor(x) for x in data[0])):
            data = _tensor_scalars(data, dtype)
        if not (dtype.is_floating_point or dtype.is_complex):
            try:
                wrapped = _check_integral_data(data, dtype)
            except TypeError as err:
                raise _complex_into_real(err, dtype) from None
            if wrapped is not None:
                return wrapped.astype(numpy_dtype(dtype)), dtype
        try:
            with np.errstate(over="ignore"):  # (1e40 into float16: inf, as in PyTorch)
                arr = np.array(data, dtype=np.float32 if dtype is dt.bfloat16 else
                               np.float64 if dtype in dt.FLOAT8_DTYPES else numpy_dtype(dtype))
        except TypeError as err:
            raise _complex_into_real(err, dtype) from None
        except ValueError as err:
            raise _ragged(data, dtype) or ValueError(
                f"tensor(): expected sequences of equal length: {err}") from None
        except OverflowError:  # PyTorch's errors (NumPy raises OverflowError)
            raise _overflow(data, dtype) from None
    if dtype in dt.FLOAT8_DTYPES and arr.dtype != numpy_dtype(dtype):
        from ember.core.float8 import to_float8  # (PyTorch's rounding and saturation)

        if arr.dtype.kind == "c":
            arr = arr.real
        return to_float8(arr, dtype.name), dtype
    return np.array(arr, dtype=numpy_dtype(dtype), order="C", copy=True), dtype
