"""Failure detection: every wait polls, so no rank hangs on a peer that raised, died, or
stopped answering.

Each rank keeps a `Monitor` over a control communicator (a duplicate of the world's, so
its messages never mix with the user's). A wait (`Monitor.wait`) tests its MPI requests
in a loop and, between tests:

- receives *failure notices*: a rank whose script raises sends one to every other rank
  before it exits (see hooks.py), and so does a rank that finds a peer dead;
- checks that the peers on its own host are still running (their pids, exchanged at
  init), at once when the launcher signals that a process ended (hydra's SIGUSR1 under
  `-disable-auto-cleanup`), else every few tenths of a second. A peer found gone gets a
  moment first: it may have finished its part and left, or its own notice may be on
  the way;
- answers *pings*: a rank whose wait times out asks its peers what they are doing, so
  its error says which ranks did not respond and which are waiting too.

Whatever it finds is raised as a DistBackendError that names the rank.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

from ember.distributed.errors import DistBackendError

NOTICE, PING, PONG = 101, 102, 103  # tags on the control communicator
_LIVENESS_EVERY = 0.25  # seconds between checks of the local peers' pids
_PROBE_EVERY = 0.002  # seconds between probes for notices and pings while waiting
_PING_WAIT = 1.0  # seconds a timed-out rank waits for its peers to answer
_NOTICE_GRACE = 0.2  # seconds to wait for a notice from a peer found dead


def _running(pid: int) -> bool:
    """Whether process `pid` (on this host) runs: exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return True  # no /proc: the kill(0) answer stands


class Monitor:
    """Watches the other ranks of one MPI world on its control communicator."""

    def __init__(self, ctl: Any, peers: list[tuple[str, int]]) -> None:
        from ember.distributed._mpi import mpi

        self.MPI = mpi()
        self.ctl = ctl
        self.rank = ctl.Get_rank()
        self.peers = peers  # (host, pid) of every rank, this one included
        self.host = socket.gethostname()
        self.local = [r for r, (h, _) in enumerate(peers) if h == self.host and r != self.rank]
        self.doing = "nothing"  # what this rank waits on, for pings
        self.failure: DistBackendError | None = None  # the first failure seen (sticky)
        self.signalled = False  # the launcher said a process ended
        self._next_liveness = 0.0
        self._next_probe = 0.0
        self._sends: list[Any] = []

    # -- what peers tell us ---------------------------------------------------------
    def check(self, now: float, requests: list[Any] = (), statuses: Any = None) -> bool:
        """Raise the failure of a peer if one is known; answer pings. Cheap when nothing
        is due. Returns True when `requests` completed while a peer found dead was given
        its grace (see `_peer_gone`)."""
        if self.failure is not None:
            raise self.failure
        if self.signalled or now >= self._next_probe:
            self._next_probe = now + _PROBE_EVERY
            self._drain()
        if self.signalled or now >= self._next_liveness:
            self._next_liveness = now + _LIVENESS_EVERY
            self.signalled = False
            dead = self._dead_peer()
            if dead is not None:
                return self._peer_gone(dead, list(requests), statuses)
        if self.failure is not None:
            raise self.failure
        return False

    def _drain(self) -> None:
        """Receive the notices and pings that have arrived (pongs are left to the
        timed-out wait that asked for them)."""
        MPI = self.MPI
        status = MPI.Status()
        for tag in (NOTICE, PING):
            while self.ctl.Iprobe(source=MPI.ANY_SOURCE, tag=tag, status=status):
                src = status.Get_source()
                msg = self.ctl.recv(source=src, tag=tag)  # already arrived: returns at once
                if tag == PING:
                    self._sends.append(self.ctl.isend(self.doing, dest=src, tag=PONG))
                elif self.failure is None:
                    via = f"reported by rank {src}; " if src != msg["rank"] else ""
                    self.failure = DistBackendError(
                        f"ember.distributed: rank {msg['rank']} failed: {msg['what']} "
                        f"({via}rank {self.rank} was in {self.doing})")
                    record_failure(self.rank, "consequence")
        self._sends = [r for r in self._sends if not r.Test()]

    def _dead_peer(self) -> int | None:
        """A rank on this host whose process no longer runs, or None."""
        return next((r for r in self.local if not _running(self.peers[r][1])), None)

    def _peer_gone(self, r: int, requests: list[Any], statuses: Any) -> bool:
        """Rank `r`'s process is gone. It may have finished its part and left (then our
        requests complete as MPI progresses), or have failed because another rank did
        (then its notice, naming that rank, is on its way): give both a moment. Else
        declare `r` failed, tell every rank, and raise."""
        deadline = time.monotonic() + _NOTICE_GRACE
        while time.monotonic() < deadline:
            if requests and self.MPI.Request.Testall(requests, statuses):
                return True
            self._drain()
            if self.failure is not None:
                raise self.failure
            time.sleep(0.001)
        host, pid = self.peers[r]
        what = (f"its process (pid {pid} on {host}) is no longer running: it was killed or "
                "exited without finishing its collectives")
        self.failure = DistBackendError(
            f"ember.distributed: rank {r} failed: {what} (found by rank {self.rank} while "
            f"in {self.doing})")
        self.local.remove(r)
        record_failure(self.rank, "consequence")
        self.notify(r, what, skip=(r,))
        raise self.failure

    # -- what we tell peers ---------------------------------------------------------
    def notify(self, rank: int, what: str, skip: tuple[int, ...] = ()) -> None:
        """Tell every other rank that `rank` failed, and why (best effort: waits at
        most a second for the messages to leave)."""
        reqs = [self.ctl.isend({"rank": rank, "what": what}, dest=r, tag=NOTICE)
                for r in range(len(self.peers)) if r != self.rank and r not in skip]
        deadline = time.monotonic() + 1.0
        while reqs and time.monotonic() < deadline:
            reqs = [r for r in reqs if not r.Test()]
            time.sleep(0.001)

    # -- waiting ----------------------------------------------------------------------
    def wait(self, requests: list[Any], what: str, ranks: list[int], timeout: float,
             statuses: list[Any] | None = None) -> None:
        """Wait for every MPI request, polling: raises DistBackendError when a peer fails
        or `timeout` seconds pass. `ranks`: the world ranks taking part (for messages);
        `statuses`: filled with the requests' statuses."""
        MPI = self.MPI
        if MPI.Request.Testall(requests, statuses):
            return
        before, self.doing = self.doing, what
        try:
            start = time.monotonic()
            deadline = start + timeout
            pause = 0.0
            while not MPI.Request.Testall(requests, statuses):
                now = time.monotonic()
                if self.check(now, requests, statuses):
                    return
                if now > deadline:
                    raise self._timed_out(what, ranks, timeout)
                if now - start > 0.0005:  # spin briefly, then back off to at most 1 ms
                    pause = min(max(pause * 1.5, 2e-5), 1e-3)
                    time.sleep(pause)
        finally:
            self.doing = before

    def _timed_out(self, what: str, ranks: list[int], timeout: float) -> DistBackendError:
        """Ask the other ranks what they are doing; name the ones that do not answer."""
        others = [r for r in ranks if r != self.rank]
        for r in others:
            self._sends.append(self.ctl.isend("ping", dest=r, tag=PING))
        answers: dict[int, str] = {}
        status = self.MPI.Status()
        deadline = time.monotonic() + _PING_WAIT
        while len(answers) < len(others) and time.monotonic() < deadline:
            if self.ctl.Iprobe(source=self.MPI.ANY_SOURCE, tag=PONG, status=status):
                src = status.Get_source()
                answers[src] = self.ctl.recv(source=src, tag=PONG)
            else:
                self._drain()
                time.sleep(0.001)
        silent = [r for r in others if r not in answers]
        waiting = "; ".join(f"rank {r} is in {a}" for r, a in sorted(answers.items()))
        msg = (f"ember.distributed: rank {self.rank} timed out after {timeout:g} s in {what}"
               f" (ranks {ranks})")
        if silent:
            msg += f"; ranks {silent} did not respond within the timeout"
        if waiting:
            msg += f"; {waiting}"
        return DistBackendError(msg)


def record_failure(rank: int, kind: str) -> None:
    """Note in `ember run`'s run directory that this rank failed now: "cause" (its own
    error) or "consequence" (another rank's failure reached it), so `ember run` ends
    with the status of the rank that caused the failure."""
    record(rank, "failure", f"{kind} {time.time()!r}\n")


def record(rank: int, name: str, text: str) -> None:
    """Write `rank<rank>.<name>` in `ember run`'s run directory, when there is one on this
    host (first write wins)."""
    run_dir = os.environ.get("EMBER_RUN_DIR")
    if not run_dir or not os.path.isdir(run_dir):
        return
    path = os.path.join(run_dir, f"rank{rank}.{name}")
    if os.path.exists(path):
        return
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError:
        pass


def describe_exception(exc: BaseException) -> str:
    """`raised ValueError: boom` (what a failure notice says about a rank's error)."""
    text = str(exc)
    return f"it raised {type(exc).__name__}" + (f": {text}" if text else "")


def stderr_line(text: str) -> None:
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a closed stderr must not hide the exit
        pass
