"""Profiling schedules: which steps of a training loop a profile records
(`torch.profiler.schedule` and `ProfilerAction`)."""

from __future__ import annotations

import enum
import warnings
from collections.abc import Callable


class ProfilerAction(enum.Enum):
    """What the profile does during one step."""

    NONE = 0             # nothing recorded
    WARMUP = 1           # getting ready: nothing recorded yet
    RECORD = 2           # recording
    RECORD_AND_SAVE = 3  # recording; the cycle's results are ready at the end of the step


class ScheduleError(ValueError, AssertionError):
    """A schedule with a negative count (or no active step). A ValueError, and an
    AssertionError as PyTorch's `schedule` raises, so either `except` catches it."""


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """A schedule for `profile(schedule=...)`: skip the first `skip_first` steps, then
    repeat cycles of `wait` steps doing nothing, `warmup` steps getting ready and `active`
    steps recording, `repeat` times (0: until the profile ends). The results of a cycle
    are ready (`on_trace_ready` runs) at the end of its last active step. With
    `skip_first_wait`, the first cycle starts without its `wait` steps.

    Raises:
        ScheduleError (a ValueError and an AssertionError): a negative count, or
            ``active`` < 1. Nothing else changes.

    Example::

        # steps 0: wait, 1: warmup, 2-3: record (trace ready after step 3), then again
        sched = ember.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ScheduleError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise ScheduleError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:  # the first cycle starts at its warmup
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else \
            ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def default_schedule(step: int) -> ProfilerAction:
    """Without a schedule: record every step, from start to stop."""
    return ProfilerAction.RECORD
