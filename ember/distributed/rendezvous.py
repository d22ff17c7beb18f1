"""PyTorch's rendezvous for processes that no MPI launcher started: `init_process_group(
"gloo", rank=r, world_size=n)` with MASTER_ADDR / MASTER_PORT in the environment
(env://) or `init_method="tcp://host:port"`, as the DDP tutorial's `mp.spawn` workers do.

Rank 0 starts a PMI server (pmi_server.py) on MASTER_ADDR:MASTER_PORT; every rank then
points its MPI library at it (`PMI_PORT` ...) before MPI is initialised, so the ranks'
`MPI_Init` forms one world of `world_size` ranks, with the same collectives, fault
reports and timeouts as a world that `ember run` (mpiexec) started.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from urllib.parse import urlparse

from ember.distributed.errors import DistError

# set by mpiexec (hydra, gforker), Open MPI's and PMIx launchers: MPI finds its world
_LAUNCHER_VARIABLES = ("PMI_FD", "PMI_PORT", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                       "HYDI_CONTROL_FD")


_SERVERS: list[subprocess.Popen] = []


class DistStoreError(DistError):
    """The rendezvous failed: the ranks did not all meet in time."""


def launched_by_mpi(env: os._Environ | dict = os.environ) -> bool:
    """Whether an MPI launcher started this process (then MPI knows the world)."""
    return any(name in env for name in _LAUNCHER_VARIABLES)


def _required(env: os._Environ | dict, name: str, how: str) -> str:
    value = env.get(name)
    if value is None:
        raise ValueError(f"Error initializing torch.distributed using {how} rendezvous: "
                         f"environment variable {name} expected, but not set")
    return value


def _rank_and_size(init_method: str | None, rank: int, world_size: int
                   ) -> tuple[int, int, str, int] | None:
    """(rank, world size, master host, master port) of a rendezvous, or None when this
    process needs none (world size unknown or 1)."""
    env = os.environ
    url = urlparse(init_method or "env://")
    how = f"{url.scheme}://"
    if world_size in (-1, None):
        if "WORLD_SIZE" not in env:
            return None  # no rendezvous asked for: MPI's own world (a singleton alone)
        world_size = int(env["WORLD_SIZE"])
    if world_size <= 1:
        return None
    if url.scheme == "env":
        if rank in (-1, None):
            rank = int(_required(env, "RANK", how))
        return (int(rank), int(world_size), _required(env, "MASTER_ADDR", how),
                int(_required(env, "MASTER_PORT", how)))
    if url.scheme == "tcp":
        if rank in (-1, None):
            raise ValueError(f"Error initializing torch.distributed using {how} rendezvous: "
                             "rank parameter missing")
        if not url.hostname or not url.port:
            raise ValueError(f"Error initializing torch.distributed using {how} rendezvous: "
                             f"port number missing in {init_method!r}")
        return int(rank), int(world_size), url.hostname, url.port
    raise ValueError(f"init_process_group: init_method {init_method!r} is not supported "
                     "(ember: 'env://' or 'tcp://host:port', or launch with `ember run`)")


def join(init_method: str | None, rank: int, world_size: int, timeout: float) -> None:
    """Prepare this process's MPI to join the rendezvous's world, when one is asked for
    and no MPI launcher started it. Call before MPI is initialised."""
    if launched_by_mpi() or "mpi4py.MPI" in sys.modules:
        return
    meeting = _rank_and_size(init_method, rank, world_size)
    if meeting is None:
        return
    rank, size, host, port = meeting
    if not 0 <= rank < size:
        raise ValueError(f"init_process_group: rank {rank} is not in a world of {size} ranks")
    if rank == 0:
        _start_server(host, port, size, timeout)
    else:
        _wait_for_server(host, port, timeout)
    os.environ.update(PMI_PORT=f"{host}:{port}", PMI_ID=str(rank), PMI_RANK=str(rank),
                      PMI_SIZE=str(size))


def _start_server(host: str, port: int, size: int, timeout: float) -> None:
    server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pmi_server.py")
    proc = subprocess.Popen([sys.executable, server, host, str(port), str(size),
                             repr(timeout)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True)
    line = proc.stdout.readline().strip()
    proc.stdout.close()
    _SERVERS.append(proc)  # it outlives init: held, so no "still running" warning
    if line != "ready":
        proc.wait()
        raise DistStoreError(f"init_process_group: rank 0 cannot serve the rendezvous at "
                             f"{host}:{port} ({line or 'the server exited'})")


def _wait_for_server(host: str, port: int, timeout: float) -> None:
    """Wait until rank 0's server accepts connections (MPI's PMI client gives up at the
    first refusal)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise DistStoreError(f"Timed out after {timeout:g} seconds waiting for rank 0 "
                                     f"at {host}:{port} (MASTER_ADDR:MASTER_PORT)") from None
            time.sleep(0.02)
