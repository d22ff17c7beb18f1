"""Process groups: the default (world) group made by `init_process_group`, the groups of
`new_group`, and the questions about them (`get_rank`, `get_world_size` ...).

A ProcessGroup holds an MPI communicator of its own (a duplicate, so user traffic never
mixes with the control messages of faults.py) and its members' world ranks.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from typing import Any

import numpy as np

from ember.distributed import _mpi, rendezvous
from ember.distributed.errors import NOT_INITIALIZED
from ember.distributed.faults import Monitor

_BACKENDS = {"mpi": "mpi", "gloo": "mpi", "nccl": "nccl"}  # gloo: PyTorch's CPU backend
DEFAULT_TIMEOUT = timedelta(minutes=30)


class Backend(str):
    """A backend's name (`Backend.MPI == "mpi"`), as torch.distributed.Backend."""

    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"

    def __new__(cls, name: str) -> Backend:
        if not isinstance(name, str) or name.lower() not in _BACKENDS:
            raise ValueError(f"Invalid backend: '{name}'")
        return super().__new__(cls, name.lower())


class ProcessGroup:
    """A set of ranks that run collectives together.

    `rank()` and `size()` are this process's rank in the group and the group's size."""

    def __init__(self, comm: Any, ranks: list[int], backend: str, timeout: float,
                 name: str) -> None:
        self.comm = comm
        self.ranks = ranks  # world ranks, in group-rank order
        self.backend = backend
        self.timeout = timeout
        self.name = name
        self.seq = 0  # collectives started on this group (names them in errors)

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return len(self.ranks)

    def __repr__(self) -> str:
        return f"<ember.distributed.ProcessGroup {self.name!r} ranks={self.ranks}>"


class _World:
    """The state of this process's default group (None: not initialized)."""

    def __init__(self) -> None:
        self.default: ProcessGroup | None = None
        self.monitor: Monitor | None = None
        self.groups: list[ProcessGroup] = []


WORLD = _World()


class _GroupNamespace:
    """`ember.distributed.group.WORLD`: the default group, as in torch."""

    @property
    def WORLD(self) -> ProcessGroup | None:  # noqa: N802 - PyTorch's name
        return WORLD.default


group = _GroupNamespace()


def is_available() -> bool:
    """Whether ember.distributed can run: mpi4py (with an MPI library) is installed."""
    return _mpi.is_available()


def is_initialized() -> bool:
    """Whether the default process group has been initialized."""
    return WORLD.default is not None


def is_mpi_available() -> bool:
    return _mpi.is_available()


def is_nccl_available() -> bool:
    return False


def is_gloo_available() -> bool:
    """Whether "gloo" groups can run: ember runs them on MPI, as its CPU backend."""
    return _mpi.is_available()


def is_ucc_available() -> bool:
    return False


def is_xccl_available() -> bool:
    return False


def is_backend_available(backend: str) -> bool:
    """Whether init_process_group can take `backend` ("gloo", "mpi", "nccl" ...)."""
    name = str(backend).lower()
    check = {"mpi": is_mpi_available, "gloo": is_gloo_available, "nccl": is_nccl_available}
    return check[name]() if name in check else False


def get_default_backend_for_device(device: Any) -> str:
    """The backend PyTorch picks for a device type: "gloo" for the CPU, "nccl" for CUDA."""
    kind = device if isinstance(device, str) else getattr(device, "type", str(device))
    kind = kind.split(":")[0].lower()
    defaults = {"cpu": "gloo", "cuda": "nccl"}
    if kind not in defaults:
        raise ValueError(f"Default backend not registered for device : {kind}")
    return defaults[kind]


def is_torchelastic_launched() -> bool:
    """Whether this process was started by a launcher (torchrun, or `ember run`, which
    sets torchrun's TORCHELASTIC_RUN_ID)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def get_pg_count() -> int:
    """How many process groups exist: the default group and those `new_group` made."""
    return (WORLD.default is not None) + len(WORLD.groups)


def default_group() -> ProcessGroup:
    if WORLD.default is None:
        raise ValueError(NOT_INITIALIZED)
    return WORLD.default


def resolve(group: ProcessGroup | None) -> ProcessGroup:
    """`group`, or the default group when None (which must exist)."""
    world = default_group()
    if group is None or group is world:
        return world
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be an ember.distributed.ProcessGroup or None, got "
                        f"{type(group).__name__}")
    return group


def monitor() -> Monitor:
    default_group()
    assert WORLD.monitor is not None
    return WORLD.monitor


def _seconds(timeout: timedelta | float | None, default: float) -> float:
    if timeout is None:
        return default
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if seconds <= 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    return seconds


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Initialize the default process group.

    Args:
        backend: ``"mpi"`` (the default; ``"gloo"`` is taken as MPI too, so PyTorch
            scripts run unchanged) or ``"nccl"`` (CUDA devices).
        init_method: ``"env://"`` (the default) or ``"tcp://host:port"``. Under a
            launcher (``ember run``, ``mpiexec``) MPI finds its peers itself; processes
            started otherwise (``torch.multiprocessing.spawn``) meet at MASTER_ADDR /
            MASTER_PORT (or the tcp:// address), where rank 0 serves MPI's rendezvous.
        timeout: how long any collective may wait for the other ranks before raising
            DistBackendError (default 30 minutes).
        world_size, rank: if given, must match what MPI reports.

    Rank and world size come from MPI: no environment variables are needed under
    ``ember run`` or ``mpiexec``; a script started alone is rank 0 of 1. Without a
    launcher, ``rank`` and ``world_size`` (or RANK / WORLD_SIZE) make the world, as
    PyTorch's gloo rendezvous does.
    """
    if WORLD.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend or "mpi")
    if _BACKENDS[name] == "nccl":
        _refuse_nccl()
    seconds = _seconds(timeout, DEFAULT_TIMEOUT.total_seconds())
    rendezvous.join(init_method, rank, world_size, seconds)  # mp.spawn'ed ranks
    MPI = _mpi.mpi()
    world = MPI.COMM_WORLD
    size, me = world.Get_size(), world.Get_rank()
    if world_size not in (-1, None) and world_size != size:
        raise ValueError(f"init_process_group: world_size={world_size}, but MPI started "
                         f"{size} ranks (launch with `ember run -n {world_size}`)")
    if rank not in (-1, None) and rank != me:
        raise ValueError(f"init_process_group: rank={rank}, but MPI says this process is "
                         f"rank {me}")
    env_size = os.environ.get("WORLD_SIZE")
    if env_size is not None and env_size.isdigit() and int(env_size) != size:
        # e.g. started by torchrun: every process would be an MPI world of its own
        raise RuntimeError(f"init_process_group: WORLD_SIZE={env_size} in the environment, "
                           f"but MPI started {size} rank(s) together; launch with "
                           f"`ember run -n {env_size} script.py` (or mpiexec)")
    ctl, req = world.Idup()
    _bounded_wait([req], seconds, "init_process_group (duplicating MPI_COMM_WORLD)")
    peers = _exchange_identities(world, seconds)
    mon = Monitor(ctl, peers)
    data, req = world.Idup()
    mon.wait([req], "init_process_group", list(range(size)), seconds)
    WORLD.monitor = mon
    WORLD.default = ProcessGroup(data, list(range(size)), "mpi", seconds,
                                 group_name or "default_pg")
    from ember.distributed import hooks
    from ember.distributed.faults import record

    hooks.install(mon, seconds)
    record(me, "init", "")  # `ember run`: this rank got past init


def _bounded_wait(requests: list[Any], seconds: float, what: str) -> None:
    """A polled wait before the monitor exists (init): only the timeout can end it."""
    import time

    MPI = _mpi.mpi()
    deadline = time.monotonic() + seconds
    while not MPI.Request.Testall(requests):
        if time.monotonic() > deadline:
            from ember.distributed.errors import DistBackendError

            raise DistBackendError(f"ember.distributed: {what} timed out after {seconds:g} "
                                   "s: not every rank called init_process_group")
        time.sleep(0.001)


def _exchange_identities(world: Any, seconds: float) -> list[tuple[str, int]]:
    """Every rank's (host name, pid), gathered with a polled all-gather."""
    mine = np.zeros(264, np.uint8)
    host = socket.gethostname().encode()[:255]
    mine[:len(host)] = np.frombuffer(host, np.uint8)
    mine[256:] = np.frombuffer(np.int64(os.getpid()).tobytes(), np.uint8)
    everyone = np.zeros((world.Get_size(), 264), np.uint8)
    _bounded_wait([world.Iallgather(mine, everyone)], seconds, "init_process_group")
    return [(bytes(row[:256]).rstrip(b"\0").decode(errors="replace"),
             int(row[256:].view(np.int64)[0])) for row in everyone]


def _refuse_nccl() -> None:
    """The NCCL backend runs through the cuda backend's collectives capability; say
    clearly why it cannot run here (as torch does without CUDA)."""
    from ember.core import plugins

    try:
        cuda = plugins.get_backend("cuda")
        reason = plugins.safe_unavailable_reason(cuda)
    except Exception as err:  # noqa: BLE001 - a missing or broken plugin: say why
        cuda, reason = None, str(err)
    if reason is not None:
        raise RuntimeError(f"init_process_group(backend='nccl') needs CUDA devices, and "
                           f"ember's cuda backend is unavailable: {reason}. Use "
                           "backend='mpi' (any device: tensors are staged through host "
                           "memory).")
    if cuda.collectives() is None:
        raise RuntimeError("init_process_group(backend='nccl'): ember's cuda backend does "
                           "not provide NCCL collectives yet; use backend='mpi' (cuda "
                           "tensors are staged through host memory).")
    raise RuntimeError("init_process_group(backend='nccl'): the NCCL process group is not "
                       "built yet; use backend='mpi'.")


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Destroy `group`, or every group and the default one when None."""
    if WORLD.default is None:
        raise AssertionError("Process group cannot be None")  # PyTorch's error
    if group is None or group is WORLD.default:
        for g in WORLD.groups:
            g.comm.Free()
        WORLD.groups.clear()
        WORLD.default.comm.Free()
        WORLD.default = None  # the monitor stays: the exit barrier and notices use it
        return
    if group in WORLD.groups:
        WORLD.groups.remove(group)
        group.comm.Free()


def new_group(ranks: list[int] | None = None, timeout: timedelta | None = None,
              backend: str | None = None, pg_options: Any = None,
              use_local_synchronization: bool = False, group_desc: str | None = None,
              device_id: Any = None) -> ProcessGroup | int:
    """A new group of the world ranks `ranks` (all ranks when None). As in PyTorch,
    every rank must call it, members or not; a non-member gets
    `GroupMember.NON_GROUP_MEMBER`."""
    world = default_group()
    size = world.size()
    members = sorted(set(range(size) if ranks is None else (int(r) for r in ranks)))
    bad = [r for r in members if not 0 <= r < size]
    if bad:
        raise ValueError(f"new_group: ranks {bad} are not in the world of {size} ranks")
    seconds = _seconds(timeout, world.timeout)
    MPI = _mpi.mpi()
    mon = monitor()
    # every rank takes part, so a polled barrier first: a failed rank is found here,
    # not inside the (blocking) communicator creation below
    mon.wait([world.comm.Ibarrier()], "new_group", world.ranks, seconds)
    me = world.comm.Get_rank()
    color = 0 if me in members else MPI.UNDEFINED
    comm = world.comm.Split(color, me)
    if comm == MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, members, world.backend, seconds,
                      group_desc or f"group{len(WORLD.groups) + 1}")
    WORLD.groups.append(pg)
    return pg


class _WorldMeta(type):
    @property
    def WORLD(cls) -> ProcessGroup | None:  # noqa: N802 - PyTorch's name
        return WORLD.default


class GroupMember(metaclass=_WorldMeta):
    """`GroupMember.WORLD` (the default group, None before init) and `NON_GROUP_MEMBER`,
    as in torch."""

    NON_GROUP_MEMBER = -100


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its node: `LOCAL_RANK` (set by `ember run`), else
    `fallback_rank`."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device "
        "context and want the code to run locally instead.")


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in `group` (the default group when None); -1 if not a
    member."""
    if group == GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of ranks in `group` (the default group when None); -1 if not a
    member."""
    if group == GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group).size()


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend of `group` (the default group when None): ``"mpi"``."""
    return Backend(resolve(group).backend)


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    """The world ranks of `group`'s members, in group-rank order."""
    return list(resolve(group).ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The world rank of `group`'s rank `group_rank`."""
    g = resolve(group)
    if not 0 <= group_rank < g.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {g.ranks}")
    return g.ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """`group`'s rank of the world rank `global_rank`."""
    g = resolve(group)
    if global_rank not in g.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {g.ranks}")
    return g.ranks.index(global_rank)
