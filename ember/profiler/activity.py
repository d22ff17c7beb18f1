"""What a profile can record (`ProfilerActivity`), where an event ran (`DeviceType`), and
which backend's device timing serves which activity.

PyTorch's activities are CPU (the ops, on the host) and one per device kind (CUDA, XPU,
...). ember adds OPENCL for its OpenCL backend; a third-party backend's devices are
`PrivateUse1`, as PyTorch names out-of-tree devices. An activity whose devices are absent
or unused records nothing, as in PyTorch.
"""

from __future__ import annotations

import enum


class ProfilerActivity(enum.Enum):
    """An activity group a profile records (`torch.profiler.ProfilerActivity`)."""

    CPU = 0          # the ops, ranges and module calls on the host
    XPU = 1          # accepted for PyTorch scripts; ember has no XPU backend
    MTIA = 2
    CUDA = 3         # kernels on CUDA devices (the cuda backend)
    HPU = 4
    PrivateUse1 = 5  # kernels on a third-party backend's devices
    OPENCL = 6       # kernels on OpenCL devices (ember's own)


class DeviceType(enum.Enum):
    """Where an event ran (`torch.autograd.DeviceType`): host events are CPU."""

    CPU = "cpu"
    CUDA = "cuda"
    OPENCL = "opencl"
    PrivateUse1 = "privateuse1"


DEVICE_ACTIVITIES = frozenset(a for a in ProfilerActivity if a is not ProfilerActivity.CPU)


def activity_of(backend_name: str) -> ProfilerActivity:
    """The activity that times a backend's devices."""
    if backend_name == "cpu":
        return ProfilerActivity.CPU
    return {"cuda": ProfilerActivity.CUDA,
            "opencl": ProfilerActivity.OPENCL}.get(backend_name, ProfilerActivity.PrivateUse1)


def device_type_of(backend_name: str) -> DeviceType:
    """The DeviceType of events that ran on a backend's devices."""
    return {"cpu": DeviceType.CPU, "cuda": DeviceType.CUDA,
            "opencl": DeviceType.OPENCL}.get(backend_name, DeviceType.PrivateUse1)


def supported_activities() -> set[ProfilerActivity]:
    """The activities this machine can record: CPU, and the device activity of every
    available backend other than the CPU (`torch.profiler.supported_activities`).

    This asks every backend whether it is available (pyopencl or CuPy may be imported);
    `profile(activities=None)` does not: it times every device kind, and the ones not in
    use record nothing.
    """
    from ember.core import scheduler

    found = {ProfilerActivity.CPU}
    for backend in scheduler.available_backends():
        found.add(activity_of(backend.name))
    return found
