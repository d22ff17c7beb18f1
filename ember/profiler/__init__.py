"""`ember.profiler`: what a program spends its time (and memory) on, with PyTorch's API
(`torch.profiler`).

    with ember.profiler.profile(record_shapes=True, with_flops=True) as prof:
        with ember.profiler.record_function("forward"):
            loss = model(x).sum()
        loss.backward()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")     # chrome://tracing, Perfetto

Every declared op is an event (`ember::<op>`), nested as composite ops call other ops;
module calls (`nn.Module: <path>`), backward nodes (`MulBackward0`) and `record_function`
ranges hold the ops they run. Device kernels (OpenCL, CUDA) are timed on the device.
Nothing is installed while no profile records: each op then pays one global check.

Layout: profiler.py (`profile`: steps, schedule, results), schedule.py, recorder.py (the
hooks and the ranges they record), memory.py (`profile_memory`), events.py
(FunctionEvent, EventList, key_averages), table.py (the summary table), trace.py (the
Chrome trace, `tensorboard_trace_handler`), record_function.py, activity.py.
"""

from ember.profiler.activity import DeviceType, ProfilerActivity, supported_activities
from ember.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from ember.profiler.profiler import profile
from ember.profiler.record_function import record_function
from ember.profiler.schedule import ProfilerAction, ScheduleError, schedule
from ember.profiler.trace import tensorboard_trace_handler


def kineto_available() -> bool:
    """Whether the activity profiler (`profile` with activities and schedules) is
    available: always in ember, as in PyTorch's CPU builds (where it is Kineto)."""
    return True


__all__ = ["DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction",
           "ProfilerActivity", "ScheduleError", "kineto_available", "profile",
           "record_function", "schedule", "supported_activities", "tensorboard_trace_handler"]
