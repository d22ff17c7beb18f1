"""Factories: tensors from data (`tensor`, `as_tensor`, `from_numpy`), filled (`zeros`,
`full`, `empty` ...), ranges (`arange`, `linspace`, `eye`), random (`rand`, `randn`,
`randint`, `randperm`), the `new_*` methods, and seeding.

`full`, `arange`, `rand`, `randn`, `randint` and `randperm` are the creation primitives:
kernels that take no tensor, only a shape, a dtype and a device index. The other
factories are written with them.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.core import costs, plugins
from ember.core import dtype as dt
from ember.core.backend import from_numpy_dtype, numpy_dtype
from ember.core.declare import composite, define, primitive
from ember.core.device import device as Device
from ember.core.dispatch import check_dtype, run_creation
from ember.core.host import dtype_arg, python_scalar
from ember.core.opdef import Kind, OutMeta
from ember.core.placement import DeviceLike, get_default_device, resolve, set_default_device
from ember.core.tensor import Tensor

__all__ = ["Generator", "default_generator", "get_default_device", "initial_seed", "seed",
           "manual_seed", "set_default_device"]


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


# -- the creation primitives ----------------------------------------------------------
# Each kernel takes only attributes: `kernel(**attrs, device=index)`.

def _filled(*, shape: tuple[int, ...], dtype: dt.dtype, device: int, **_: Any) -> OutMeta:
    return OutMeta(tuple(shape), dtype, None)


def _arange_rule(*, start: Any, end: Any, step: Any, dtype: dt.dtype, device: int) -> OutMeta:
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step "
                           f"sign (start={start}, end={end}, step={step})")
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


@primitive(variants="function", rule=_full_rule, creation=True, cost=costs.creation)
def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: DeviceLike = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of `size` filled with `fill_value`."""
    fill_value = fill_value.item() if isinstance(fill_value, Tensor) else \
        python_scalar(fill_value)
    d = dtype_arg(dtype) or dt.scalar_dtype(fill_value)
    dev, backend = resolve(device, _nbytes(size, d))
    t = run_creation("full", dev, backend, shape=_shape_arg("full", tuple(size)),
                     fill_value=fill_value, dtype=d)
    return _finish(t, requires_grad)


@primitive(variants="function", rule=_arange_rule, creation=True, cost=costs.creation)
def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None,
           device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """Values from `start` to `end` (exclusive) every `step`."""
    if end is None:
        start, end = 0, start
    start, end, step = (float(v) if isinstance(v, Tensor) and v.is_floating_point()
                        else (int(v) if isinstance(v, Tensor) else v) for v in (start, end, step))
    d = dtype_arg(dtype)
    if d is None:
        d = dt.int64 if all(isinstance(v, numbers.Integral) for v in (start, end, step)) \
            else dt.get_default_dtype()
    dev, backend = resolve(device)
    t = run_creation("arange", dev, backend, start=start, end=end, step=step, dtype=d)
    return _finish(t, requires_grad)


def _random(op: str, size: tuple, dtype: Any, device: DeviceLike, requires_grad: bool,
            **attrs: Any) -> Tensor:
    d = dtype_arg(dtype) or dt.get_default_dtype()
    if op in ("rand", "randn") and not d.is_floating_point:
        raise RuntimeError(f"{op}(): expected a floating-point dtype, got {d}")
    dev, backend = resolve(device, _nbytes(size, d))
    t = run_creation(op, dev, backend, shape=_shape_arg(op, size), dtype=d, **attrs)
    return _finish(t, requires_grad)


@primitive(variants="function", rule=_rand_rule, creation=True, cost=costs.creation)
def rand(*size: Any, dtype: Any = None, device: DeviceLike = None, requires_grad: bool = False,
         generator: Any = None) -> Tensor:
    """Uniform random numbers in [0, 1)."""
    if generator is not None:
        return generator._rand("rand", size, dtype, device, requires_grad)
    return _random("rand", size, dtype, device, requires_grad)


@primitive(variants="function", rule=_rand_rule, creation=True, cost=costs.creation)
def randn(*size: Any, dtype: Any = None, device: DeviceLike = None,
          requires_grad: bool = False, generator: Any = None) -> Tensor:
    """Standard normal random numbers."""
    if generator is not None:
        return generator._rand("randn", size, dtype, device, requires_grad)
    return _random("randn", size, dtype, device, requires_grad)


@primitive(variants="function", rule=_randint_rule, creation=True, cost=costs.creation)
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
    d = dtype_arg(dtype) or dt.int64
    if generator is not None:
        return generator._randint(low, high, tuple(size), d, device)
    return _random("randint", tuple(size), d, device, False, low=low, high=high)


@primitive(variants="function", rule=_randperm_rule, creation=True, cost=costs.creation)
def randperm(n: int, *, dtype: Any = None, device: DeviceLike = None,
             generator: Any = None) -> Tensor:
    """A random permutation of 0 .. n-1."""
    d = dtype_arg(dtype) or dt.int64
    if generator is not None:
        return generator._randperm(n, d, device)
    dev, backend = resolve(device)
    return run_creation("randperm", dev, backend, n=int(n), dtype=d)


# -- from data ------------------------------------------------------------------------


@composite(variants="function")
def tensor(data: Any, dtype: Any = None, device: DeviceLike = None,
           requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (a number, nested lists, or an array);
    `pin_memory=True` puts a CPU tensor in page-locked memory."""
    out = Tensor._from_data(data, dtype, device)
    if pin_memory:
        from ember.core import pinning

        out = pinning.pin_memory(out, message=pinning.NO_ALLOCATOR)
    return _finish(out, requires_grad)


@composite(variants="function")
def as_tensor(data: Any, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """Like `tensor`, but shares memory with `data` when no conversion is needed."""
    d = dtype_arg(dtype)
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


@composite(variants="function")
def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    d = from_numpy_dtype(array.dtype)
    dev, backend = resolve("cpu")
    return Tensor._make(array, d, dev, backend)


# -- filled ---------------------------------------------------------------------------


@composite(variants="function")
def zeros(*size: Any, dtype: Any = None, device: DeviceLike = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of zeros."""
    return full(_shape_arg("zeros", size), 0,
                dtype=dtype_arg(dtype) or dt.get_default_dtype(), device=device,
                requires_grad=requires_grad)


@composite(variants="function")
def ones(*size: Any, dtype: Any = None, device: DeviceLike = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return full(_shape_arg("ones", size), 1,
                dtype=dtype_arg(dtype) or dt.get_default_dtype(), device=device,
                requires_grad=requires_grad)


@composite(variants="function")
def empty(*size: Any, dtype: Any = None, device: DeviceLike = None,
          requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor."""
    d = dtype_arg(dtype) or dt.get_default_dtype()
    dev, backend = resolve(device, _nbytes(size, d))
    check_dtype("empty", backend, d, dev)
    buf = backend.empty(_shape_arg("empty", size), d, dev.index or 0)
    return _finish(Tensor._make(buf, d, dev, backend), requires_grad)


def _nbytes(size: Any, d: dt.dtype) -> int:
    """The bytes of a tensor of `size` (for `"auto"`; 0 when `size` is not plain ints)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    try:
        return math.prod(int(n) for n in size) * d.itemsize
    except (TypeError, ValueError):
        return 0


def _like(x: Tensor, dtype: Any, device: DeviceLike) -> tuple[dt.dtype, DeviceLike]:
    return (dtype_arg(dtype) or x.dtype), (device if device is not None else x.device)


@composite(variants="function")
def zeros_like(input: Tensor, *, dtype: Any = None, device: DeviceLike = None,
               requires_grad: bool = False) -> Tensor:
    """Zeros of `input`'s shape (and its dtype and device unless given)."""
    d, dev = _like(input, dtype, device)
    return full(input.shape, 0, dtype=d, device=dev, requires_grad=requires_grad)


@composite(variants="function")
def ones_like(input: Tensor, *, dtype: Any = None, device: DeviceLike = None,
              requires_grad: bool = False) -> Tensor:
    """Ones of `input`'s shape (and its dtype and device unless given)."""
    d, dev = _like(input, dtype, device)
    return full(input.shape, 1, dtype=d, device=dev, requires_grad=requires_grad)


@composite(variants="function")
def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: DeviceLike = None,
              requires_grad: bool = False) -> Tensor:
    """`fill_value` in `input`'s shape (and its dtype and device unless given)."""
    d, dev = _like(input, dtype, device)
    return full(input.shape, fill_value, dtype=d, device=dev, requires_grad=requires_grad)


@composite(variants="function")
def empty_like(input: Tensor, *, dtype: Any = None, device: DeviceLike = None,
               requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of `input`'s shape (and its dtype and device unless given)."""
    d, dev = _like(input, dtype, device)
    return empty(input.shape, dtype=d, device=dev, requires_grad=requires_grad)


@composite(variants="function")
def rand_like(input: Tensor, *, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """Uniform random numbers in [0, 1) of `input`'s shape."""
    d, dev = _like(input, dtype, device)
    return rand(input.shape, dtype=d, device=dev)


@composite(variants="function")
def randn_like(input: Tensor, *, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """Standard normal random numbers of `input`'s shape."""
    d, dev = _like(input, dtype, device)
    return randn(input.shape, dtype=d, device=dev)


@composite(variants="function")
def randint_like(input: Tensor, low: int, high: int | None = None, *, dtype: Any = None,
                 device: DeviceLike = None) -> Tensor:
    """Random integers in [low, high) of `input`'s shape."""
    d, dev = _like(input, dtype, device)
    return randint(low, high, input.shape, dtype=d, device=dev)


# -- the new_* methods: a new tensor with this one's dtype and device ---------------------


def _new(factory: Callable[..., Tensor], doc: str) -> Callable[..., Tensor]:
    def method(self: Tensor, *size: Any, dtype: Any = None, device: DeviceLike = None,
               requires_grad: bool = False) -> Tensor:
        return factory(*size, dtype=dtype or self.dtype, device=device or self.device,
                       requires_grad=requires_grad)
    method.__doc__ = doc
    return method


for _name, _factory in (("new_zeros", zeros), ("new_ones", ones), ("new_empty", empty)):
    define(_name, Kind.COMPOSITE, _new(_factory, f"`{_factory.__name__}` of `size`, with this "
                                                  "tensor's dtype and device unless given."),
           variants="method")


@composite(variants="method")
def new_full(self: Tensor, size: Sequence[int], fill_value: Any, *, dtype: Any = None,
             device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """`fill_value` in `size`, with this tensor's dtype and device unless given."""
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


@composite(variants="method")
def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: DeviceLike = None,
               requires_grad: bool = False) -> Tensor:
    """A copy of `data`, with this tensor's dtype and device unless given."""
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


# -- ranges ---------------------------------------------------------------------------


@composite(variants="function")
def linspace(start: float, end: float, steps: int, *, dtype: Any = None,
             device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced values from `start` to `end`, both included."""
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative (got {steps})")
    d = dtype_arg(dtype) or dt.get_default_dtype()
    if steps == 1:
        return full((1,), start, dtype=d, device=device, requires_grad=requires_grad)
    step = (end - start) / max(steps - 1, 1)
    # PyTorch fills the first half from `start` and the second half back from `end`
    idx = arange(steps, dtype=dt.float64, device=device)
    half = steps // 2
    lo = idx * step + start
    hi = end - (steps - 1 - idx) * step
    return _finish(lo.where(idx < half, hi).to(d), requires_grad)


@composite(variants="function")
def eye(n: int, m: int | None = None, *, dtype: Any = None, device: DeviceLike = None,
        requires_grad: bool = False) -> Tensor:
    """A 2-D tensor with ones on the diagonal."""
    m = n if m is None else m
    d = dtype_arg(dtype) or dt.get_default_dtype()
    rows = arange(n, device=device).reshape(n, 1)
    cols = arange(m, device=device).reshape(1, m)
    return _finish((rows == cols).to(d), requires_grad)


# -- seeding --------------------------------------------------------------------------

_seed: int | None = None  # None: the seed drawn at start-up (plugins.registry.startup_seed)


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


def seed() -> int:
    """Seed every generator from the OS, non-deterministically, and return the seed."""
    s = int.from_bytes(os.urandom(8), "little") >> 1
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed last given to `manual_seed`; before any, the seed drawn from the OS at
    start-up (different in every process, as PyTorch's)."""
    return plugins.registry.startup_seed if _seed is None else _seed


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
        d = dtype_arg(dtype) or dt.get_default_dtype()
        shape = _shape_arg(op, size)
        arr = self._rng.random(shape) if op == "rand" else self._rng.standard_normal(shape)
        return tensor(arr.astype(numpy_dtype(d)), device=device, requires_grad=requires_grad)

    def _randint(self, low: int, high: int, size: tuple, d: dt.dtype, device: DeviceLike):
        arr = self._rng.integers(low, high, size=size)
        return tensor(arr.astype(numpy_dtype(d)), device=device)

    def _randperm(self, n: int, d: dt.dtype, device: DeviceLike):
        return tensor(self._rng.permutation(n).astype(numpy_dtype(d)), device=device)


default_generator = Generator().manual_seed(plugins.registry.startup_seed)
"""The generator random ops use when none is given."""
