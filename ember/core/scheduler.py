"""The scheduler behind `device="auto"`.

For now it picks the preferred available accelerator (highest `priority`), else the CPU.
The work-size-aware planner of ARCHITECTURE.md (`ember.plan`) builds on this module.
"""

from __future__ import annotations

import os

from ember.core import plugins
from ember.core.device import device as Device


def available_backends(accelerators_only: bool = False) -> list:
    """Loaded backends that can be used now, preferred first (the CPU last). With
    `accelerators_only`, only those `"auto"` may choose (and the CPU)."""
    plugins.registry.ensure_loaded()
    usable = [b for b in plugins.registry.backends.values()
              if (not accelerators_only or b.is_accelerator or b.name == "cpu")
              and plugins.safe_unavailable_reason(b) is None]
    if os.environ.get("EMBER_BACKENDS", "").strip():  # the user's order is the preference
        return usable
    return sorted(usable, key=lambda b: (b.name == "cpu", -b.priority))


def default_device() -> Device:
    """The device `"auto"` resolves to."""
    best = available_backends(accelerators_only=True)
    if not best or best[0].name == "cpu":
        return Device("cpu")
    return Device(best[0].name, 0)
