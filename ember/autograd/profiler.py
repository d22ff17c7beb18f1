"""`ember.autograd.profiler` (torch.autograd.profiler): PyTorch's older profiler API, which
programs and tutorials still use, on ember.profiler's recorder.

    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        with ember.autograd.profiler.record_function("forward"):
            model(x)
    print(prof.key_averages().table(sort_by="self_cpu_time_total"))
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ember.profiler import profile as _profile
from ember.profiler import record_function
from ember.profiler.activity import ProfilerActivity
from ember.profiler.events import EventList, FunctionEventAvg

__all__ = ["emit_nvtx", "profile", "record_function"]


class profile(_profile):  # noqa: N801 - PyTorch's name
    """Records the ops a block runs, as ember.profiler.profile does; the arguments are
    the older API's (`use_cuda` / `use_device` add the device's kernels, `enabled=False`
    records nothing)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 use_device: str | None = None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None,
                 acc_events: bool = False, custom_trace_id_callback: Any = None,
                 **_ignored: Any) -> None:
        activities = [ProfilerActivity.CPU] if use_cpu else []
        if use_cuda or use_device == "cuda":
            activities.append(ProfilerActivity.CUDA)
        self.enabled = enabled
        super().__init__(activities=activities, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config, acc_events=acc_events)

    def __enter__(self) -> profile:
        if self.enabled:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self.stop()

    @property
    def function_events(self) -> EventList:
        """Every recorded event (a profile that was not enabled has none to give, and
        raises as PyTorch's does)."""
        if not self.enabled:
            raise AttributeError("'NoneType' object has no attribute 'function_events'")
        return self.events()

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        """The summary table of the events averaged by name."""
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def total_average(self) -> FunctionEventAvg:
        """All events averaged into one."""
        return self.events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self CPU time, in microseconds."""
        return sum(e.self_cpu_time_total for e in self.events())


@contextlib.contextmanager
def emit_nvtx(enabled: bool = True, record_shapes: bool = False) -> Iterator[None]:
    """NVTX ranges for NVIDIA's profilers: ember emits none (its CUDA kernels are CuPy's).
    As PyTorch's, it synchronises the GPU on entry and exit (and so needs one)."""
    if enabled:
        import ember.cuda

        ember.cuda.synchronize()
    yield
    if enabled:
        ember.cuda.synchronize()
