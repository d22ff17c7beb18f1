"""Factories (`tensor`, `zeros`, `arange`, `rand` ...), device resolution, and seeding."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.core import dtype as dt
from ember.core import plugins
from ember.core.backend import Backend, from_numpy_dtype, numpy_dtype
from ember.core.device import device as Device
from ember.core.tensor import Tensor

DeviceLike = str | Device | int | None

_default_device: Device | None = None


def set_default_device(device: DeviceLike) -> None:
    """Make factories create tensors on `device` when none is given (None: the CPU)."""
    global _default_device
    _default_device = None if device is None else resolve(device)[0]


def get_default_device() -> Device:
    return _default_device or Device("cpu")


def resolve(device: DeviceLike) -> tuple[Device, Backend]:
    """A device-like value -> (the normalised device, its backend), or a clear error that
    lists what is available and why the rest is not."""
    if device is None:
        device = _default_device or "cpu"
    if isinstance(device, int):
        device = Device("cuda", device)
    if not isinstance(device, Device):
        device = Device(device)
    if device.type == "auto":
        from ember.core import scheduler

        device = scheduler.default_device()
    backend = plugins.get_backend(device.type)
    reason = plugins.safe_unavailable_reason(backend)
    if reason is not None:
        raise RuntimeError(f"device {str(device)!r} is not available: {reason}\n"
                           f"{plugins.registry.summary()}")
    if backend.name == "cpu":
        if device.index not in (None, 0):
            raise RuntimeError(f"device 'cpu:{device.index}' does not exist: the CPU backend "
                               "has one device, 'cpu'")
        return Device("cpu"), backend
    index = device.index or 0
    count = backend.device_count()
    if index >= count:
        raise RuntimeError(f"device '{backend.name}:{index}' does not exist: {backend.name} "
                           f"has {count} device(s)")
    return Device(backend.name, index), backend


def _shape_arg(op: str, size: tuple) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s)
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found "
                            f"element of type {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    return tuple(out)


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def _dtype_arg(dtype: Any) -> dt.dtype | None:
    if dtype is None or isinstance(dtype, dt.dtype):
        return dtype
    if isinstance(dtype, str):
        return dt.from_name(dtype)
    if dtype in (float, int, bool):
        return {float: dt.get_default_dtype(), int: dt.int64, bool: dt.bool_}[dtype]
    try:
        return from_numpy_dtype(np.dtype(dtype))
    except TypeError:
        raise TypeError(f"dtype must be an ember.dtype, got {dtype!r}") from None


# -- from data ------------------------------------------------------------------------

def _infer_dtype(data: Any) -> dt.dtype:
    """PyTorch's dtype for nested Python data: bool, else int64, else the default float."""
    kinds = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, Tensor):
            kinds.add(item.dtype)
        elif isinstance(item, bool) or isinstance(item, np.bool_):
            kinds.add(dt.bool_)
        elif isinstance(item, numbers.Integral):
            kinds.add(dt.int64)
        elif isinstance(item, numbers.Real):
            kinds.add(dt.get_default_dtype())
        elif isinstance(item, numbers.Number):
            raise TypeError(f"complex numbers are not supported (got {item!r})")
        else:
            raise TypeError(f"tensor(): could not infer dtype of {type(item).__name__}")
    if not kinds:
        return dt.get_default_dtype()
    out = kinds.pop()
    for k in kinds:
        out = dt.promote_types(out, k)
    return out


def _to_host(data: Any, dtype: dt.dtype | None) -> tuple[np.ndarray, dt.dtype]:
    if isinstance(data, Tensor):
        arr = data.detach().cpu().numpy()
        dtype = dtype or data.dtype
    elif isinstance(data, np.ndarray) or isinstance(data, np.generic):
        arr = np.asarray(data)
        dtype = dtype or from_numpy_dtype(arr.dtype)
    else:
        if hasattr(data, "__array__") and not isinstance(data, (list, tuple)):
            return _to_host(np.asarray(data), dtype)
        dtype = dtype or _infer_dtype(data)
        if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
            data = [x.detach().cpu().numpy() if isinstance(x, Tensor) else x for x in data]
        try:
            arr = np.array(data, dtype=numpy_dtype(dtype) if dtype is not dt.bfloat16
                           else np.float32)
        except ValueError as err:
            raise ValueError(f"tensor(): expected sequences of equal length: {err}") from None
    return np.array(arr, dtype=numpy_dtype(dtype), order="C", copy=True), dtype


def tensor(data: Any, dtype: Any = None, device: DeviceLike = None,
           requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (a number, nested lists, or an array)."""
    arr, d = _to_host(data, _dtype_arg(dtype))
    dev, backend = resolve(device)
    t = Tensor._make(backend.from_numpy(arr, dev.index or 0), d, dev, backend)
    return _finish(t, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """Like `tensor`, but shares memory with `data` when no conversion is needed."""
    d = _dtype_arg(dtype)
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


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    d = from_numpy_dtype(array.dtype)
    dev, backend = resolve("cpu")
    return Tensor._make(array, d, dev, backend)


def rebuild_tensor(array: np.ndarray, device: str, requires_grad: bool) -> Tensor:
    """Unpickling support (pickling is never used for ember.save; this is for copy/mp)."""
    return tensor(array, device=device, requires_grad=requires_grad)


# -- filled ---------------------------------------------------------------------------

def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: DeviceLike = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of `size` filled with `fill_value`."""
    d = _dtype_arg(dtype) or dt.scalar_dtype(
        fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dev, backend = resolve(device)
    from ember.core.dispatch import run_creation
    t = run_creation("full", dev, backend, shape=_shape_arg("full", tuple(size)),
                     fill_value=fill_value, dtype=d)
    return _finish(t, requires_grad)


def zeros(*size: Any, dtype: Any = None, device: DeviceLike = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of zeros."""
    return full(_shape_arg("zeros", size), 0,
                dtype=_dtype_arg(dtype) or dt.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def ones(*size: Any, dtype: Any = None, device: DeviceLike = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return full(_shape_arg("ones", size), 1,
                dtype=_dtype_arg(dtype) or dt.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def empty(*size: Any, dtype: Any = None, device: DeviceLike = None,
          requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor."""
    d = _dtype_arg(dtype) or dt.get_default_dtype()
    dev, backend = resolve(device)
    buf = backend.empty(_shape_arg("empty", size), d, dev.index or 0)
    return _finish(Tensor._make(buf, d, dev, backend), requires_grad)


def _like(x: Tensor, dtype: Any, device: DeviceLike) -> tuple[dt.dtype, DeviceLike]:
    return (_dtype_arg(dtype) or x.dtype), (device if device is not None else x.device)


def zeros_like(x: Tensor, *, dtype: Any = None, device: DeviceLike = None,
               requires_grad: bool = False) -> Tensor:
    d, dev = _like(x, dtype, device)
    return full(x.shape, 0, dtype=d, device=dev, requires_grad=requires_grad)


def ones_like(x: Tensor, *, dtype: Any = None, device: DeviceLike = None,
              requires_grad: bool = False) -> Tensor:
    d, dev = _like(x, dtype, device)
    return full(x.shape, 1, dtype=d, device=dev, requires_grad=requires_grad)


def full_like(x: Tensor, fill_value: Any, *, dtype: Any = None, device: DeviceLike = None,
              requires_grad: bool = False) -> Tensor:
    d, dev = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=d, device=dev, requires_grad=requires_grad)


def empty_like(x: Tensor, *, dtype: Any = None, device: DeviceLike = None,
               requires_grad: bool = False) -> Tensor:
    d, dev = _like(x, dtype, device)
    return empty(x.shape, dtype=d, device=dev, requires_grad=requires_grad)


def zeros_meta(meta: tuple) -> Tensor:
    """Zeros of a (shape, dtype, device) triple: the gradient of an unused output."""
    shape, d, dev = meta
    return full(shape, 0, dtype=d, device=dev)


# -- ranges ---------------------------------------------------------------------------

def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None,
           device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """Values from `start` to `end` (exclusive) every `step`."""
    if end is None:
        start, end = 0, start
    start, end, step = (float(v) if isinstance(v, Tensor) and v.is_floating_point()
                        else (int(v) if isinstance(v, Tensor) else v) for v in (start, end, step))
    d = _dtype_arg(dtype)
    if d is None:
        d = dt.int64 if all(isinstance(v, numbers.Integral) for v in (start, end, step)) \
            else dt.get_default_dtype()
    dev, backend = resolve(device)
    from ember.core.dispatch import run_creation
    t = run_creation("arange", dev, backend, start=start, end=end, step=step, dtype=d)
    return _finish(t, requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: Any = None,
             device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced values from `start` to `end`, both included."""
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative (got {steps})")
    d = _dtype_arg(dtype) or dt.get_default_dtype()
    if steps == 1:
        return full((1,), start, dtype=d, device=device, requires_grad=requires_grad)
    step = (end - start) / max(steps - 1, 1)
    # PyTorch fills the first half from `start` and the second half back from `end`
    idx = arange(steps, dtype=dt.float64, device=device)
    half = steps // 2
    from ember.core import functions as F
    lo = idx * step + start
    hi = end - (steps - 1 - idx) * step
    out = F.where(idx < half, lo, hi).to(d)
    return _finish(out, requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: DeviceLike = None,
        requires_grad: bool = False) -> Tensor:
    """A 2-D tensor with ones on the diagonal."""
    m = n if m is None else m
    d = _dtype_arg(dtype) or dt.get_default_dtype()
    rows = arange(n, device=device).reshape(n, 1)
    cols = arange(m, device=device).reshape(1, m)
    return _finish((rows == cols).to(d), requires_grad)


# -- random ---------------------------------------------------------------------------

def _random(op: str, size: tuple, dtype: Any, device: DeviceLike, requires_grad: bool,
            **attrs: Any) -> Tensor:
    d = _dtype_arg(dtype) or dt.get_default_dtype()
    if op in ("rand", "randn") and not d.is_floating_point:
        raise RuntimeError(f"{op}(): expected a floating-point dtype, got {d}")
    dev, backend = resolve(device)
    from ember.core.dispatch import run_creation
    t = run_creation(op, dev, backend, shape=_shape_arg(op, size), dtype=d, **attrs)
    return _finish(t, requires_grad)


def rand(*size: Any, dtype: Any = None, device: DeviceLike = None, requires_grad: bool = False,
         generator: Any = None) -> Tensor:
    """Uniform random numbers in [0, 1)."""
    if generator is not None:
        return generator._rand("rand", size, dtype, device, requires_grad)
    return _random("rand", size, dtype, device, requires_grad)


def randn(*size: Any, dtype: Any = None, device: DeviceLike = None,
          requires_grad: bool = False, generator: Any = None) -> Tensor:
    """Standard normal random numbers."""
    if generator is not None:
        return generator._rand("randn", size, dtype, device, requires_grad)
    return _random("randn", size, dtype, device, requires_grad)


def randint(low: int, high: int | None = None, size: Sequence[int] = (), *,
            dtype: Any = None, device: DeviceLike = None, generator: Any = None) -> Tensor:
    """Random integers in [low, high)."""
    if high is None:
        low, high = 0, low
    elif isinstance(high, (tuple, list)) or hasattr(high, "__len__"):
        low, high, size = 0, low, high  # randint(high, size), as PyTorch allows
    if low >= high:
        raise RuntimeError(f"randint(): expected low < high, but got low={low} and "
                           f"high={high}")
    d = _dtype_arg(dtype) or dt.int64
    if generator is not None:
        return generator._randint(low, high, tuple(size), d, device)
    return _random("randint", tuple(size), d, device, False, low=low, high=high)


def randperm(n: int, *, dtype: Any = None, device: DeviceLike = None,
             generator: Any = None) -> Tensor:
    """A random permutation of 0 .. n-1."""
    d = _dtype_arg(dtype) or dt.int64
    if generator is not None:
        return generator._randperm(n, d, device)
    dev, backend = resolve(device)
    from ember.core.dispatch import run_creation
    return run_creation("randperm", dev, backend, n=int(n), dtype=d)


def rand_like(x: Tensor, *, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    d, dev = _like(x, dtype, device)
    return rand(x.shape, dtype=d, device=dev)


def randn_like(x: Tensor, *, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    d, dev = _like(x, dtype, device)
    return randn(x.shape, dtype=d, device=dev)


def randint_like(x: Tensor, low: int, high: int | None = None, *, dtype: Any = None,
                 device: DeviceLike = None) -> Tensor:
    d, dev = _like(x, dtype, device)
    return randint(low, high, x.shape, dtype=d, device=dev)


_seed = 0


def manual_seed(seed: int) -> Generator:
    """Seed the random number generators of every backend (and the default generator)."""
    global _seed
    _seed = int(seed)
    plugins.registry.ensure_loaded()
    for backend in plugins.registry.backends.values():
        try:
            backend.manual_seed(_seed)
        except Exception:  # noqa: S110 - an unavailable backend has nothing to seed
            pass
    default_generator.manual_seed(_seed)
    return default_generator


def initial_seed() -> int:
    return _seed


class Generator:
    """A random number generator with its own state (host-side, PCG64), as
    `torch.Generator`: used for reproducible shuffling and sampling."""

    def __init__(self, device: DeviceLike = "cpu") -> None:
        self.device = Device(device) if not isinstance(device, Device) else device
        self._seed = 67280421310721
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed: int) -> Generator:
        self._seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy) % (2 ** 63)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        state = self._rng.bit_generator.state
        raw = [state["state"]["state"], state["state"]["inc"], state["has_uint32"],
               state["uinteger"]]
        data = np.frombuffer(b"".join(int(v).to_bytes(16, "little") for v in raw),
                             dtype=np.uint8).copy()
        return from_numpy(data)

    def set_state(self, state: Tensor) -> Generator:
        raw = bytes(state.numpy().astype(np.uint8))
        vals = [int.from_bytes(raw[i:i + 16], "little") for i in range(0, 64, 16)]
        self._rng.bit_generator.state = {
            "bit_generator": "PCG64", "state": {"state": vals[0], "inc": vals[1]},
            "has_uint32": vals[2], "uinteger": vals[3]}
        return self

    def _rand(self, op: str, size: tuple, dtype: Any, device: DeviceLike, requires_grad: bool):
        d = _dtype_arg(dtype) or dt.get_default_dtype()
        shape = _shape_arg(op, size)
        arr = self._rng.random(shape) if op == "rand" else self._rng.standard_normal(shape)
        return tensor(arr.astype(numpy_dtype(d)), device=device, requires_grad=requires_grad)

    def _randint(self, low: int, high: int, size: tuple, d: dt.dtype, device: DeviceLike):
        arr = self._rng.integers(low, high, size=size)
        return tensor(arr.astype(numpy_dtype(d)), device=device)

    def _randperm(self, n: int, d: dt.dtype, device: DeviceLike):
        return tensor(self._rng.permutation(n).astype(numpy_dtype(d)), device=device)


default_generator = Generator()
