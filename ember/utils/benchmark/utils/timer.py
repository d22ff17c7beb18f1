"""`Timer`: PyTorch's `timeit.Timer` with warm-up, a fixed thread count, accelerator
synchronization and replicates (`torch.utils.benchmark.utils.timer`)."""

from __future__ import annotations

import enum
import textwrap
import timeit
from collections.abc import Callable
from typing import Any

import ember
from ember.utils.benchmark.utils import common

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """`timeit.default_timer`, after waiting for the accelerator (when there is one) so
    that its queued work is counted."""
    if ember.accelerator.is_available():
        ember.accelerator.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class Timer:
    """Helper class for measuring execution time of PyTorch statements.

    Based on `timeit.Timer` (which it uses), but: it warms up first, runs with
    `num_threads` threads, synchronizes the accelerator, and measures replicates
    (`blocked_autorange`, `adaptive_autorange`) so that the median and the spread are
    known. `label`, `sub_label`, `description` and `env` name the measurement in its
    printed form and in `Compare`'s table.

    Args:
        stmt: the code timed, run in a loop.
        setup: code run once before, defining what `stmt` uses.
        global_setup: C++ only (not supported by ember).
        timer: returns the current time (default: synchronizes the accelerator first).
        globals: the global variables `stmt` sees (`torch` is there unless given).
        label: what `stmt` computes, for display ("ReLU(x + 1)").
        sub_label: tells measurements of one label apart ("float", "int").
        description: the column of `Compare`'s table (an input size, say).
        env: the environment (Compare keeps otherwise equal tasks of two envs apart).
        num_threads: the intra-op thread count while timing (default 1).
        language: "python" (C++ statements are not supported by ember).
    """

    _timer_cls = timeit.Timer

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict[str, Any] | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("Timer(language='cpp'): C++ statements are not "
                                      "supported by ember (it has no C++ API)")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                             "this code can simply be moved to `setup`.")
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", ember)  # stmt names torch, as PyTorch's Timer
        self._language = Language.PYTHON
        stmt = _clean(stmt)
        setup = _clean(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer,
                                      globals=self._globals)
        self._task_spec = common.TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                          label=label, sub_label=sub_label,
                                          description=description, env=env,
                                          num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        # a timer that returns 0 would make statistics divide by zero
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Run `stmt` `number` times (after a warm-up of `number // 100`): one replicate,
        as `timeit.Timer.timeit`."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))  # warm-up
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], Any] | None = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _measurement_loop(self, number: int, stop_hook: Callable[[list[float]], bool],
                          min_run_time: float, max_run_time: float | None = None,
                          callback: Callable[[int, float], Any] | None = None,
                          ) -> list[float]:
        total_time = 0.0
        can_stop = False
        times: list[float] = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while total_time < min_run_time or not can_stop:
                time_spent = self._timeit(number)
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """Runs per replicate: grown tenfold until the timer's own overhead is below
        1e-4 of a replicate's time (and that is at least min_run_time / 1000)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            empty = sorted(self._timeit(0) for _ in range(5))
            overhead = empty[2]
            number = 1
            while True:
                time_taken = self._timeit(number)
                if overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> common.Measurement:
        """Measure replicates of `block_size` runs each until `min_run_time` seconds are
        spent; the block size is chosen by a warm-up so that the timer's overhead is
        negligible.

        Returns:
            A `Measurement` of the replicates (median, mean, IQR ...).
        """
        number = self._estimate_block_size(min_run_time)
        times = self._measurement_loop(number, lambda times: True, min_run_time,
                                       callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None,
                           ) -> common.Measurement:
        """As `blocked_autorange`, but measuring until the IQR is below `threshold` times
        the median (with more than 3 replicates and `min_run_time` spent), or
        `max_run_time` is spent.

        Returns:
            A `Measurement` of the replicates.
        """
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times: list[float]) -> bool:
            if len(times) > 3:
                return common.Measurement(number_per_run=number, raw_times=times,
                                          task_spec=self._task_spec,
                                          ).meets_confidence(threshold=threshold)
            return False
        times = self._measurement_loop(number, stop_hook, min_run_time, max_run_time,
                                       callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def collect_callgrind(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("Timer.collect_callgrind: Callgrind instruction counts "
                                  "are not supported by ember")


def _clean(code: str) -> str:
    """Dedented, without a leading newline or trailing space (as PyTorch keeps it)."""
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()
