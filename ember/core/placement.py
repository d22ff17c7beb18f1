"""Which backend serves a device: `resolve("cuda:1")`, and the default device that
factories use when none is given (`ember.set_default_device`)."""

from __future__ import annotations

from typing import Any

from ember.core import plugins, scheduler
from ember.core.backend import Backend
from ember.core.device import device as Device
from ember.core.errors import with_context

DeviceLike = str | Device | int | None

_default_device: Device | None = None


def set_default_device(device: DeviceLike) -> None:
    """Make factories create tensors on `device` when none is given (None: the CPU).
    `"auto"` stays `"auto"`: each factory call asks the scheduler (which agrees with its
    recorded choice once there is one)."""
    global _default_device
    if isinstance(device, (str, Device)) and Device(device).type == "auto":
        _default_device = Device("auto")
        return
    if device is None:
        _default_device = None
        return
    try:
        _default_device = resolve(device)[0]
    except AssertionError:  # CUDA unusable: PyTorch raises on the first factory call only
        _default_device = Device(device)


_pushed: list[Device | None] = []  # the defaults that `with device(...)` blocks replaced


def push_default_device(device: DeviceLike) -> None:
    """Make `device` the default until the matching `pop_default_device` (the
    `with ember.device(...)` block)."""
    _pushed.append(_default_device)
    set_default_device(device)


def pop_default_device() -> None:
    """Restore the default device that the last `push_default_device` replaced."""
    global _default_device
    _default_device = _pushed.pop()


def get_default_device() -> Device:
    """The device factories use when none is given (under `"auto"`: its choice so far,
    the CPU before any)."""
    if _default_device is not None and _default_device.type == "auto":
        return scheduler.chosen() or Device("cpu")
    return _default_device or Device("cpu")


# The accelerators PyTorch's CPU build names: asked for one, it raises
# `AssertionError: Torch not compiled with CUDA enabled`. ember raises the same where it
# cannot use the device (no CuPy, no GPU, no driver), so programs that catch it still run.
_NOT_COMPILED = {"cuda": "CUDA", "xpu": "XPU"}


def not_compiled_error(device_type: str, reason: str, index_only: bool = False
                       ) -> AssertionError | RuntimeError:
    """PyTorch's error for an accelerator it cannot use, with ember's `reason` as a note
    (`index_only`: the device was given as a bare index, `zeros(2, device=0)`)."""
    if index_only:
        return with_context(RuntimeError(
            "Cannot access accelerator device when none is available."), reason)
    return with_context(AssertionError(
        f"Torch not compiled with {_NOT_COMPILED[device_type]} enabled"), reason)


_CPU_DEVICE = Device("cpu")
# the CPU's resolution, kept with the plugin registry it came from (the CPU backend is
# always available; a new registry, after plugins.reset(), looks it up again)
_cpu_resolved: tuple[Any, Any] = (None, None)


def resolve(device: Any, nbytes: int = 0) -> tuple[Device, Backend]:
    """A device-like value -> (the normalised device, its backend), or a clear error that
    lists what is available and why the rest is not. `nbytes`: the size of the tensor
    about to be made there, the work `"auto"` judges when it has no choice yet."""
    global _cpu_resolved
    if device is None:
        device = _default_device or "cpu"
    if (device == "cpu" if type(device) is str else device is _CPU_DEVICE) and \
            _cpu_resolved[0] is plugins.registry:  # the common case, once looked up
        return _cpu_resolved[1]
    index_only = isinstance(device, int)  # an accelerator's index: CUDA's, in ember
    if index_only:
        device = Device("cuda", device)
    if not isinstance(device, Device):
        device = Device(device)
    if device.type == "auto":
        device = scheduler.default_device(nbytes)
    try:
        backend = plugins.get_backend(device.type)
    except RuntimeError as err:
        if device.type in _NOT_COMPILED:
            raise not_compiled_error(device.type, str(err), index_only) from None
        raise
    reason = plugins.safe_unavailable_reason(backend)
    if reason is not None:
        context = (f"device {str(device)!r} is not available: {reason}\n"
                   f"{plugins.registry.summary()}")
        if device.type in _NOT_COMPILED:
            raise not_compiled_error(device.type, context, index_only)
        raise RuntimeError(context)
    if backend.name == "cpu":
        if device.index not in (None, 0):
            raise RuntimeError(f"device 'cpu:{device.index}' does not exist: the CPU backend "
                               "has one device, 'cpu'")
        _cpu_resolved = (plugins.registry, (_CPU_DEVICE, backend))
        return _cpu_resolved[1]
    if backend.shape_only:  # the meta device: one, written without an index
        return Device(backend.name), backend
    index = backend.current_device() if device.index is None else device.index
    count = backend.device_count()
    if index >= count:
        raise RuntimeError(f"device '{backend.name}:{index}' does not exist: {backend.name} "
                           f"has {count} device(s)")
    return Device(backend.name, index), backend
