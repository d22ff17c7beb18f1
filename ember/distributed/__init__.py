"""ember.distributed: PyTorch's torch.distributed on MPI.

    import ember.distributed as dist
    dist.init_process_group("mpi")          # rank and size from MPI (ember run / mpiexec)
    t = ember.ones(3) * dist.get_rank()
    dist.all_reduce(t)                      # in place, on every rank

Collectives stage tensors through host memory (any device), run as non-blocking MPI
operations, and wait by polling, so a rank that raises, dies or stops answering makes
the others raise DistBackendError naming it, within the group's timeout. mpi4py is
imported on first use only; `pip install 'ember[mpi]'` brings it and an MPI (mpich).
Launch N ranks with `ember run -n N script.py`.
"""

from __future__ import annotations

from ember.distributed.collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    monitored_barrier,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from ember.distributed.debug import (
    DebugLevel,
    get_debug_level,
    set_debug_level,
    set_debug_level_from_env,
)
from ember.distributed.errors import DistBackendError, DistError
from ember.distributed.objects import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    scatter_object_list,
)
from ember.distributed.p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from ember.distributed.process_group import DEFAULT_TIMEOUT as default_pg_timeout
from ember.distributed.process_group import (
    Backend,
    GroupMember,
    ProcessGroup,
    destroy_process_group,
    get_backend,
    get_default_backend_for_device,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_pg_count,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_backend_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    is_ucc_available,
    is_xccl_available,
    new_group,
)
from ember.distributed.reduce_op import ReduceOp, supports_complex
from ember.distributed.rendezvous import DistStoreError
from ember.distributed.work import Work

__all__ = [
    "is_available", "is_initialized", "is_mpi_available", "is_nccl_available",
    "is_gloo_available", "is_ucc_available", "is_xccl_available", "is_backend_available",
    "get_default_backend_for_device", "is_torchelastic_launched", "get_pg_count",
    "supports_complex", "default_pg_timeout", "DebugLevel", "get_debug_level",
    "set_debug_level", "set_debug_level_from_env",
    "init_process_group", "destroy_process_group", "new_group", "get_rank",
    "get_world_size", "get_backend", "get_process_group_ranks", "get_global_rank",
    "get_group_rank", "get_node_local_rank", "group", "GroupMember", "ProcessGroup",
    "Backend", "ReduceOp", "Work",
    "DistError", "DistBackendError", "DistStoreError",
    "barrier", "monitored_barrier", "all_reduce", "broadcast", "reduce", "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter_tensor", "reduce_scatter", "all_to_all_single", "all_to_all", "gather",
    "scatter", "send", "recv", "isend", "irecv", "P2POp", "batch_isend_irecv",
    "all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list",
]
