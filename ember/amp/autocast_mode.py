"""Autocast: ops run in lower precision where that is safe, with PyTorch's semantics.

Each op's declaration carries its autocast class (`ember.core.opdef.Precision`, from
PyTorch's lists: `precision` on accelerators, `cpu_precision` on the CPU). While an
autocast region is enabled for a device type, an op-entry hook (ember.core.interpose)
casts the floating tensor arguments on that device type before the op runs:

- LOWER: to the region's dtype (bfloat16 by default on the CPU, float16 on CUDA, the
  backend's `autocast_dtype` elsewhere); float64 tensors are left alone;
- FLOAT32: to float32 (ops that lose accuracy in half precision: softmax, losses, sums);
- PROMOTE: to the widest floating dtype among the arguments (float64 ignored);
- KEEP: nothing.

As in PyTorch, the ops a cast op runs inside are not cast again, float32 leaves that
require grad (the weights) are cast once per outermost region and cached, and the state
is per device type, so CPU and CUDA regions nest independently.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from ember.core import dtype as dt
from ember.core import interpose, plugins
from ember.core.host import dtype_arg
from ember.core.opdef import Precision
from ember.core.tensor import Tensor

_HOOK_ORDER = 10  # inside the profiler's hook (0), so a profile shows the casts

_enabled: dict[str, bool] = {}  # device type -> autocast on
_dtype: dict[str, dt.dtype] = {}  # device type -> the region's low-precision dtype
_cache_enabled = True
_depth = 0  # autocast regions entered and not yet left (the cache lives as long)
_cache: dict[int, tuple[Tensor, int, Tensor]] = {}  # id(leaf) -> (leaf, version, cast)
_inside_cast_op = False  # a declared op is running: the ops it calls are left alone


def default_dtype(device_type: str) -> dt.dtype:
    """The dtype autocast lowers to on `device_type` when none is given."""
    if device_type == "cuda":  # also where no CUDA backend loaded (autocast then warns)
        return dt.float16
    return _backend(device_type).autocast_dtype or dt.float16


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports `device_type` (a device type ember has a backend for)."""
    if device_type in ("cpu", "cuda"):
        return True
    try:
        _backend(device_type)
    except RuntimeError:
        return False
    return True


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for `device_type` (CUDA's when None, as in PyTorch)."""
    return _enabled.get("cuda" if device_type is None else device_type, False)


def get_autocast_dtype(device_type: str) -> dt.dtype:
    """The low-precision dtype of autocast on `device_type` (its default when off)."""
    if not is_autocast_available(device_type):
        raise RuntimeError(f"User specified an unsupported autocast device_type "
                           f"'{device_type}'")
    return _dtype.get(device_type) or default_dtype(device_type)


def state_key() -> tuple:
    """The autocast state that decides what ops run: the devices it is on for, and their
    dtypes (ember.compile keys its replays by it)."""
    if True not in _enabled.values():  # off everywhere: the usual case, no sort
        return ()
    return tuple(sorted((d, _dtype.get(d)) for d, on in _enabled.items() if on))


def is_autocast_cache_enabled() -> bool:
    return _cache_enabled


def clear_autocast_cache() -> None:
    """Forget the weights cast in this region (they are cast again when next used)."""
    _cache.clear()


# -- PyTorch's low-level state setters (torch.set_autocast_enabled & co), which `autocast`
# regions save and restore around them

def set_autocast_enabled(device_type: str | bool, enabled: bool | None = None) -> None:
    """Turn autocast on or off for `device_type` outside any region;
    `set_autocast_enabled(enabled)` (one argument) is CUDA's, as in PyTorch."""
    if enabled is None:
        device_type, enabled, position = "cuda", device_type, 1
    else:
        position = 2
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position {position}) "
                        f"must be bool, not {type(enabled).__name__}")
    _device_type_arg(device_type)
    _enabled[device_type] = enabled
    _update_hook()


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """The low-precision dtype autocast lowers to on `device_type` from now on."""
    _device_type_arg(device_type)
    _dtype[device_type] = _as_dtype(dtype)


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Whether autocast casts each float32 weight once per outermost region."""
    global _cache_enabled
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_cache_enabled(): argument 'enabled' (position 1) must "
                        f"be bool, not {type(enabled).__name__}")
    _cache_enabled = enabled


def autocast_increment_nesting() -> int:
    """Count one more autocast region entered; the new depth."""
    global _depth
    _depth += 1
    return _depth


def autocast_decrement_nesting() -> int:
    """Count an autocast region left (the cast-weight cache empties at depth 0); the new
    depth."""
    global _depth
    _depth -= 1
    if _depth == 0:
        _cache.clear()
    return _depth


# the device types PyTorch's parser knows, in its order (its message lists them)
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                       "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu",
                       "mtia", "privateuseone")


def _device_type_arg(device_type: Any) -> None:
    """Refuse what is neither one of PyTorch's device types nor a loaded ember backend's,
    with PyTorch's message."""
    if not isinstance(device_type, str):
        raise TypeError(f"expected a device type string, got {type(device_type).__name__}")
    if device_type not in _TORCH_DEVICE_TYPES and not is_autocast_available(device_type):
        raise RuntimeError(f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type at "
                           f"start of device string: {device_type}")


class autocast:  # noqa: N801 - PyTorch's name
    """Run the ops of a region in mixed precision (a context manager and a decorator).

    Args:
        device_type: the device type whose ops are cast (``"cpu"``, ``"cuda"``,
            ``"opencl"``, or a plugin's).
        dtype: the low-precision dtype: ``ember.bfloat16`` or ``ember.float16``
            (default: bfloat16 on the CPU, float16 on CUDA, the backend's otherwise).
        enabled: False turns autocast off inside the region (regions nest).
        cache_enabled: cast float32 weights once per outermost region (default True).

    Example::

        with ember.autocast("cpu"):
            y = model(x)            # linear and conv run in bfloat16
            loss = loss_fn(y, t)    # cross_entropy runs in float32
        loss.backward()             # backward ops run in the forward's dtypes
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self.device = device_type
        self.fast_dtype = default_dtype(device_type) if dtype is None else _as_dtype(dtype)
        self._enabled = bool(enabled)
        self._cache_enabled = _cache_enabled if cache_enabled is None else bool(cache_enabled)
        if self._enabled and not _device_available(device_type):
            if device_type == "cuda":  # PyTorch's words
                message = "CUDA is not available or torch_xla is imported. Disabling autocast."
            else:
                message = (f"User provided device_type of '{device_type}', but {device_type} "
                           "is not available. Disabling")
            warnings.warn(message, stacklevel=2)
            self._enabled = False
        if self._enabled and not _supported(device_type, self.fast_dtype):
            supported = ", ".join(f"ember.{d.name}" for d in _supported_dtypes(device_type))
            where = device_type.upper() if device_type in ("cpu", "cuda") else device_type
            warnings.warn(f"In {where} autocast, but the target dtype is not supported. "
                          f"Disabling "
                          f"autocast.\n{device_type} autocast only supports dtypes of "
                          f"{supported} currently.", stacklevel=2)
            self._enabled = False
        self._saved: list[tuple[bool, dt.dtype | None, bool]] = []

    def __enter__(self) -> autocast:
        global _cache_enabled, _depth
        self._saved.append((_enabled.get(self.device, False), _dtype.get(self.device),
                            _cache_enabled))
        _enabled[self.device] = self._enabled
        _dtype[self.device] = self.fast_dtype
        _cache_enabled = self._cache_enabled
        _depth += 1
        _update_hook()
        return self

    def __exit__(self, *exc: Any) -> bool:
        global _cache_enabled, _depth
        enabled, dtype, cache_enabled = self._saved.pop()
        _enabled[self.device] = enabled
        if dtype is None:
            _dtype.pop(self.device, None)
        else:
            _dtype[self.device] = dtype
        _cache_enabled = cache_enabled
        _depth -= 1
        if _depth == 0:
            _cache.clear()
        _update_hook()
        return False

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


# -- the hook ---------------------------------------------------------------------------


def _update_hook() -> None:
    on = any(_enabled.values())
    installed = _cast_inputs in (h for _, h in interpose._hooks)
    if on and not installed:
        interpose.install(_cast_inputs, _HOOK_ORDER)
    elif installed and not on:
        interpose.remove(_cast_inputs)


def _cast_inputs(op: Any, name: str, call: Callable, args: tuple, kwargs: dict) -> Any:
    """The op-entry hook: cast the arguments by the op's class, then run the op with the
    ops it calls left alone. (PyTorch casts at its dispatcher, once per aten op: `dot`
    and `mv` are single kernels there, which ember writes with `matmul`.)"""
    global _inside_cast_op
    if _inside_cast_op:
        return call(args, kwargs)
    device_type = _device_type(args, kwargs)
    if device_type is None or not _enabled.get(device_type, False):
        return call(args, kwargs)
    cls = op.cpu_precision if device_type == "cpu" else op.precision
    if cls is Precision.FLOAT32 and kwargs.get("dtype") is not None:
        cls = Precision.KEEP  # an explicit output dtype wins (PyTorch's fp32_set_opt_dtype)
    if cls is not Precision.KEEP:
        lower = _dtype[device_type]
        if cls is Precision.LOWER:
            target = lower
        elif cls is Precision.FLOAT32:
            target = dt.float32
        else:
            target = _widest(lower, device_type, args, kwargs)
        args = tuple(_cast(a, target, device_type) for a in args)
        kwargs = {k: _cast(v, target, device_type) for k, v in kwargs.items()}
    _inside_cast_op = True
    try:
        return call(args, kwargs)
    finally:
        _inside_cast_op = False


def _tensors(args: tuple, kwargs: dict):
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, Tensor))


def _device_type(args: tuple, kwargs: dict) -> str | None:
    for t in _tensors(args, kwargs):
        return t._device.type
    return None


def _eligible(t: Tensor, device_type: str) -> bool:
    """PyTorch's rule: floating tensors on the region's device type, but never float64."""
    return t._dtype.is_floating_point and t._dtype is not dt.float64 and \
        t._device.type == device_type


def _widest(lower: dt.dtype, device_type: str, args: tuple, kwargs: dict) -> dt.dtype:
    """The PROMOTE class's dtype (PyTorch's `promote_type`): float32 if any eligible
    argument is float32 (or of another half dtype), else `lower`."""
    for t in _tensors(args, kwargs):
        if _eligible(t, device_type) and t._dtype is not lower:
            return dt.float32
    return lower


def _cast(value: Any, target: dt.dtype, device_type: str) -> Any:
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, target, device_type) for v in value)
    if not isinstance(value, Tensor) or not _eligible(value, device_type) or \
            value._dtype is target:
        return value
    cacheable = (_cache_enabled and target is _dtype[device_type] and
                 value._dtype is dt.float32 and value._requires_grad and
                 value._node is None and value._base is None)
    if not cacheable:
        return value.to(target)
    hit = _cache.get(id(value))
    if hit is not None and hit[0] is value and hit[1] == value._vc[0]:
        return hit[2]
    cast = value.to(target)
    _cache[id(value)] = (value, value._vc[0], cast)
    return cast


# -- checks ---------------------------------------------------------------------------


def _backend(device_type: str) -> Any:
    return plugins.get_backend(device_type)


def _device_available(device_type: str) -> bool:
    try:
        return _backend(device_type).is_available()
    except RuntimeError:
        return False


def _supported_dtypes(device_type: str) -> tuple[dt.dtype, ...]:
    if device_type in ("cpu", "cuda"):
        return (dt.bfloat16, dt.float16)
    try:
        held = _backend(device_type).dtypes
    except RuntimeError:
        held = (dt.float16,)
    return tuple(d for d in (dt.bfloat16, dt.float16) if d in held)


def _supported(device_type: str, dtype: dt.dtype) -> bool:
    return dtype in _supported_dtypes(device_type)


def _as_dtype(dtype: Any) -> dt.dtype:
    try:
        d = dtype_arg(dtype, "autocast")
    except (TypeError, ValueError, KeyError, AttributeError) as err:
        raise TypeError(f"autocast: dtype must be an ember dtype such as ember.bfloat16 or "
                        f"ember.float16, got {dtype!r}") from err
    if d is None:
        raise TypeError(f"autocast: dtype must be an ember dtype such as ember.bfloat16 or "
                        f"ember.float16, got {dtype!r}")
    return d
