"""`torch.distributed.fsdp`: the names programs import from it.

ember does not shard parameters (it has no DTensor). What programs observe matches
PyTorch on the machines ember runs on without a GPU: the settings (`ShardingStrategy`,
`MixedPrecision`, `StateDictType` ... with PyTorch's fields, defaults and printed forms)
and the wrap policies work, and `FullyShardedDataParallel(model)` raises PyTorch's own
error there ("FSDP needs a non-CPU accelerator device ..."), so a program that imports
FSDP and trains with DDP or alone on a CPU runs unchanged. With an accelerator, and for
`fully_shard`, ember raises NotImplementedError: use `DistributedDataParallel`, which
computes the same gradients (sharding changes where parameters live, not the math).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from ember.distributed.fsdp import wrap

__all__ = ["BackwardPrefetch", "CPUOffload", "CPUOffloadPolicy", "FSDPModule",
           "FullOptimStateDictConfig", "FullStateDictConfig", "FullyShardedDataParallel",
           "LocalOptimStateDictConfig", "LocalStateDictConfig", "MixedPrecision",
           "MixedPrecisionPolicy", "OffloadPolicy", "OptimStateDictConfig",
           "OptimStateKeyType", "ShardedOptimStateDictConfig", "ShardedStateDictConfig",
           "ShardingStrategy", "StateDictConfig", "StateDictSettings", "StateDictType",
           "fully_shard", "wrap"]


class ShardingStrategy(enum.Enum):
    """How FSDP shards parameters, gradients and optimizer state across ranks."""

    FULL_SHARD = enum.auto()
    SHARD_GRAD_OP = enum.auto()
    NO_SHARD = enum.auto()
    HYBRID_SHARD = enum.auto()
    _HYBRID_SHARD_ZERO2 = enum.auto()


class BackwardPrefetch(enum.Enum):
    """When FSDP gathers the next parameters during backward."""

    BACKWARD_PRE = enum.auto()
    BACKWARD_POST = enum.auto()


class StateDictType(enum.Enum):
    """Which form `state_dict()` takes under FSDP."""

    FULL_STATE_DICT = enum.auto()
    LOCAL_STATE_DICT = enum.auto()
    SHARDED_STATE_DICT = enum.auto()


class OptimStateKeyType(enum.Enum):
    """How an optimizer state dict names its parameters."""

    PARAM_NAME = enum.auto()
    PARAM_ID = enum.auto()


@dataclasses.dataclass
class CPUOffload:
    """Whether parameters (and gradients) live on the CPU between uses."""

    offload_params: bool = False


def _batch_norm_classes() -> tuple:
    from ember.nn.modules.batchnorm import _BatchNorm

    return (_BatchNorm,)


@dataclasses.dataclass
class MixedPrecision:
    """The dtypes of parameters, gradient reduction and buffers during training."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    buffer_dtype: Any = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True
    _module_classes_to_ignore: Any = dataclasses.field(default_factory=_batch_norm_classes)


@dataclasses.dataclass
class StateDictConfig:
    """Settings of a model state dict under FSDP."""

    offload_to_cpu: bool = False


@dataclasses.dataclass
class FullStateDictConfig(StateDictConfig):
    rank0_only: bool = False


@dataclasses.dataclass
class LocalStateDictConfig(StateDictConfig):
    offload_to_cpu: bool = False


@dataclasses.dataclass
class ShardedStateDictConfig(StateDictConfig):
    _use_dtensor: bool = False


@dataclasses.dataclass
class OptimStateDictConfig:
    """Settings of an optimizer state dict under FSDP."""

    offload_to_cpu: bool = True


@dataclasses.dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    rank0_only: bool = False


@dataclasses.dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    offload_to_cpu: bool = False


@dataclasses.dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    _use_dtensor: bool = False


@dataclasses.dataclass
class StateDictSettings:
    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig


@dataclasses.dataclass
class MixedPrecisionPolicy:
    """`fully_shard`'s mixed precision settings."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclasses.dataclass
class OffloadPolicy:
    """`fully_shard`'s offload setting: none."""


@dataclasses.dataclass
class CPUOffloadPolicy(OffloadPolicy):
    pin_memory: bool = True


_NOT_SHARDED = ("ember does not shard parameters ({what}); DistributedDataParallel "
                "computes the same gradients with every parameter on every rank")


class FSDPModule:
    """The class `fully_shard` mixes into a module in PyTorch."""


class FullyShardedDataParallel:
    """`torch.distributed.fsdp.FullyShardedDataParallel`: see the module docstring."""

    def __init__(self, module: Any, process_group: Any = None, sharding_strategy: Any = None,
                 cpu_offload: Any = None, auto_wrap_policy: Any = None,
                 backward_prefetch: Any = BackwardPrefetch.BACKWARD_PRE,
                 mixed_precision: Any = None, ignored_modules: Any = None,
                 param_init_fn: Any = None, device_id: Any = None,
                 sync_module_states: bool = False, forward_prefetch: bool = False,
                 limit_all_gathers: bool = True, use_orig_params: bool = False,
                 ignored_states: Any = None, device_mesh: Any = None) -> None:
        from ember import accelerator

        if not accelerator.is_available():
            raise RuntimeError("FSDP needs a non-CPU accelerator device, but no accelerator "
                               "device is detected.")
        raise NotImplementedError(_NOT_SHARDED.format(what="FullyShardedDataParallel"))


def fully_shard(module: Any, **kwargs: Any) -> Any:
    """`fully_shard` (FSDP2): not built (ember has no DTensor); see the module docstring."""
    raise NotImplementedError(_NOT_SHARDED.format(what="fully_shard"))
