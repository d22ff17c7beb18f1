"""Auto-scheduling above core: `ember.plan` (a model's step on every device, and the
choice), the workload a step records, and placing a module with `"auto"`.

Core holds the parts every `"auto"` needs (ember.core.traits, costmodel, scheduler);
this package holds what needs a model: running a step to see its ops.
"""

from ember.scheduling.history import learn  # noqa: F401
from ember.scheduling.plan import Plan, place_module, plan  # noqa: F401
