"""Feeding the scheduler's history (`ember.core.costmodel.History`) from the profiler.

    with ember.profiler.profile(record_shapes=True) as prof:
        for _ in range(5):
            train_step()
    ember.scheduling.learn(prof)     # measured op times replace the formula's from now on

Each op event that ran as one kernel (no op inside it) gives one sample for its (op,
operand shapes and dtypes, device); a device's own clock is used where the profiler has
one (the longer of host and device time: an op costs the program whichever is longer).
"""

from __future__ import annotations

from typing import Any

from ember.core.costmodel import History, signature_of

OP_PREFIX = "ember::"


def learn(prof: Any, history: History | None = None, save: bool = True) -> History:
    """Add the op times of a finished `ember.profiler.profile` (made with
    `record_shapes=True`) to `history` (default: the saved one), and save it.

    Returns:
        History: the history with the new samples.
    """
    history = History.load() if history is None else history
    for event in prof.events():
        name = event.name
        if not name.startswith(OP_PREFIX) or event.device is None \
                or event.input_shapes is None:
            continue
        if any(c.name.startswith(OP_PREFIX) for c in event.cpu_children):
            continue  # a composite: its ops are samples of their own
        seconds = max(event.cpu_time_total, event.device_time_total) / 1e6
        history.record(name[len(OP_PREFIX):], signature_of(event.input_shapes,
                                                          event.input_dtypes),
                       str(event.device), seconds)
    if save:
        history.save()
    return history
