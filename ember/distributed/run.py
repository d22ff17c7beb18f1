"""`ember run -n N [--hosts h1,h2 | --hostfile F] script.py args...` (also
`python -m ember.distributed.run`): start N ranks of a script through the mpiexec of the
installed MPI (the mpich wheel's), as torchrun starts workers.

- Every rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (and MASTER_ADDR,
  MASTER_PORT, harmless under MPI), set by `ember.distributed._rank` from hydra's
  variables.
- hydra runs with `-disable-auto-cleanup`, so when a rank fails the others live on long
  enough to raise an error naming it (faults.py) instead of being killed silently.
- Ctrl-C (SIGINT) or SIGTERM is passed to every rank as SIGINT (hydra forwards it);
  ranks still running after a grace period are interrupted again, then killed. The exit
  status is then 130 (143 for SIGTERM).
- A rank that ends with an error before init_process_group stops the run: the others
  would wait in MPI_Init forever.
- The exit status is otherwise the failing rank's: of the ranks that ended with a
  non-zero status, the first to end (128 + N for a rank killed by signal N); 0 when
  all pass.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from ember.distributed._mpi import mpiexec

GRACE_S = 5.0  # after Ctrl-C: how long ranks get to stop before they are forced


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--nproc", type=int, required=True, metavar="N",
                        help="number of ranks to start")
    hosts = parser.add_mutually_exclusive_group()
    hosts.add_argument("--hosts", default=None, help="comma-separated hosts to run on "
                       "(host or host:ranks), passed to mpiexec -hosts")
    hosts.add_argument("--hostfile", default=None, help="a file of hosts, one per line "
                       "(host[:ranks]), passed to mpiexec -f")
    parser.add_argument("--master-port", type=int, default=29500,
                        help="MASTER_PORT given to every rank (unused by MPI)")
    parser.add_argument("--mpiexec-arg", action="append", default=[], metavar="ARG",
                        help="an extra argument for mpiexec (repeatable), e.g. "
                        "--mpiexec-arg=-launcher-exec --mpiexec-arg=/path/to/launcher")
    parser.add_argument("-m", "--module", action="store_true", help="SCRIPT is a module "
                        "name, run as `python -m SCRIPT` (as torchrun's -m)")
    parser.add_argument("script", help="the Python script every rank runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")


def command(nproc: int, script: str, args: Sequence[str], hosts: str | None = None,
            hostfile: str | None = None, extra: Sequence[str] = (),
            master_port: int = 29500, module: bool = False) -> list[str]:
    """The mpiexec command line that starts `nproc` ranks of `script`."""
    if nproc < 1:
        raise ValueError(f"-n must be at least 1, got {nproc}")
    cmd = [mpiexec(), "-disable-auto-cleanup", "-n", str(nproc)]
    master = "127.0.0.1"
    if hosts:
        cmd += ["-hosts", hosts]
        master = hosts.split(",")[0].split(":")[0]
    elif hostfile:
        if not os.path.isfile(hostfile):
            raise FileNotFoundError(f"no hostfile {hostfile!r}")
        cmd += ["-f", hostfile]
        with open(hostfile) as f:
            first = next((ln.split("#")[0].strip() for ln in f if ln.split("#")[0].strip()),
                         master)
        master = first.split(":")[0]
    cmd += ["-genv", "MASTER_ADDR", master, "-genv", "MASTER_PORT", str(master_port)]
    cmd += list(extra)
    cmd += [sys.executable, os.path.join(os.path.dirname(__file__), "_rank.py"),
            *(["-m"] if module else []), script, *args]
    return cmd


def launch(nproc: int, script: str, args: Sequence[str] = (), hosts: str | None = None,
           hostfile: str | None = None, extra: Sequence[str] = (),
           master_port: int = 29500, grace: float = GRACE_S, module: bool = False) -> int:
    """Run the ranks to the end; returns the exit status (130 after Ctrl-C)."""
    if not module and not os.path.isfile(script):
        print(f"ember run: no script {script!r}", file=sys.stderr)
        return 2
    cmd = command(nproc, script, args, hosts, hostfile, extra, master_port, module)
    run_dir = tempfile.mkdtemp(prefix="ember-run-")
    env = dict(os.environ, EMBER_RUN_DIR=run_dir)
    interrupted: list[float] = []
    stop_status = [130]
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def on_stop(signum: int, frame: object) -> None:
        interrupted.append(time.monotonic())
        stop_status[0] = 128 + signum

    # our own session: a terminal's Ctrl-C reaches this process only, which forwards it
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    for sig in previous:  # SIGTERM (a batch system's, `timeout`'s) stops the ranks as well
        signal.signal(sig, on_stop)
    try:
        forwarded = 0
        doomed = None
        while True:
            try:
                code = proc.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                pass
            if doomed is None and not interrupted:
                doomed = _failed_before_init(run_dir)
                if doomed is not None:  # the others wait in MPI_Init forever: stop them
                    print(f"ember run: rank {doomed[0]} exited with status {doomed[1]} "
                          "before init_process_group; stopping the other ranks",
                          file=sys.stderr)
                    interrupted.append(time.monotonic() - grace)  # the short way
            if interrupted and forwarded == 0:
                proc.send_signal(signal.SIGINT)  # hydra passes it to every rank
                forwarded = 1
            elif forwarded == 1 and time.monotonic() - interrupted[0] > grace:
                proc.send_signal(signal.SIGINT)  # hydra: a second Ctrl-C forces the abort
                forwarded = 2
            elif forwarded == 2 and time.monotonic() - interrupted[0] > 2 * grace:
                _kill_ranks(run_dir)
                proc.kill()
                forwarded = 3
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _kill_ranks(run_dir)  # nothing should be left; make sure of it
        first_failure = _first_failure(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
    if doomed is not None:
        return doomed[1]
    if interrupted:
        how = "Ctrl-C" if stop_status[0] == 130 else "SIGTERM"
        print(f"ember run: interrupted ({how}); every rank was stopped", file=sys.stderr)
        return stop_status[0]
    return first_failure or (code if code >= 0 else 128 - code)


def _failed_before_init(run_dir: str) -> tuple[int, int] | None:
    """(rank, status) of a rank of this host that ended with an error before it got
    through init_process_group, or None. The others can then never finish MPI_Init,
    which blocks in C where no timeout can reach it."""
    try:
        names = set(os.listdir(run_dir))
    except OSError:
        return None
    for name in names:
        rank, _, kind = name.partition(".")
        if kind == "status" and f"{rank}.init" not in names:
            try:
                with open(os.path.join(run_dir, name)) as f:
                    code = int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            if code != 0:
                return int(rank.removeprefix("rank")), code
    return None


def _first_failure(run_dir: str) -> int:
    """The exit status of the rank that caused the failure, or 0 when none failed.

    _rank.py records each rank's status, and faults.py whether a failed rank failed on
    its own ("cause": it raised, or exited with an error) or because another did
    ("consequence"). The first cause wins; else (a killed rank records nothing) the
    first failed rank that is no consequence; else the first failed rank."""
    notes: dict[str, dict[str, list[str]]] = {}
    try:
        names = os.listdir(run_dir)
    except OSError:
        return 0
    for name in names:
        rank, _, kind = name.partition(".")
        if kind in ("status", "failure"):
            try:
                with open(os.path.join(run_dir, name)) as f:
                    notes.setdefault(rank, {})[kind] = f.read().split()
            except OSError:
                continue
    # a note cut short (its writer interrupted) counts as absent
    notes = {rank: {k: v for k, v in n.items() if len(v) == 2} for rank, n in notes.items()}
    failed = {rank: n for rank, n in notes.items()
              if "status" in n and int(n["status"][0]) != 0}
    if not failed:
        return 0

    def first(ranks: list[str], key: str) -> int:
        return int(failed[min(ranks, key=lambda r: float(failed[r][key][1]))]["status"][0])

    causes = [r for r, n in failed.items() if n.get("failure", [""])[0] == "cause"]
    if causes:
        return first(causes, "failure")
    unexplained = [r for r, n in failed.items() if "failure" not in n]
    return first(unexplained or list(failed), "status")


def _kill_ranks(run_dir: str) -> None:
    """SIGKILL the ranks of this host still running (their pids are in the run dir)."""
    try:
        names = os.listdir(run_dir)
    except OSError:
        return
    for name in names:
        if name.endswith(".pid"):
            try:
                with open(os.path.join(run_dir, name)) as f:
                    os.kill(int(f.read()), signal.SIGKILL)
            except (OSError, ValueError):
                pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember run", description="Start N ranks of a "
                                     "script through mpiexec (as torchrun does).")
    add_arguments(parser)
    ns = parser.parse_args(argv)
    return run_from_args(ns)


def run_from_args(ns: argparse.Namespace) -> int:
    try:
        return launch(ns.nproc, ns.script, ns.args, ns.hosts, ns.hostfile, ns.mpiexec_arg,
                      ns.master_port, module=ns.module)
    except (RuntimeError, ValueError, FileNotFoundError) as err:
        print(f"ember run: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
