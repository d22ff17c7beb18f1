"""DCP's planners. A plan decides which rank writes or reads which piece of each tensor;
with every rank holding whole tensors (data parallel) there is nothing to decide, so the
planners only carry their options."""

from __future__ import annotations

from typing import Any


class DefaultSavePlanner:
    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 dedup_replicated_tensors: bool | None = None,
                 dedup_save_to_lowest_rank: bool = False,
                 enable_plan_caching: bool = False) -> None:
        self.flatten_state_dict = flatten_state_dict


class DefaultLoadPlanner:
    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 allow_partial_load: bool = False, **kwargs: Any) -> None:
        self.flatten_state_dict = flatten_state_dict
        self.allow_partial_load = allow_partial_load
