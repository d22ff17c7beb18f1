"""Faults on real ranks: a rank that raises, exits with an error, is SIGKILLed, or stops
answering makes every other rank raise DistBackendError naming it, within the timeout
given to init_process_group; Ctrl-C on `ember run` stops every rank. Each test is
bounded: none may hang."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from distributed_util import RunningRanks, needs_mpi, run_ranks

SCRIPT = Path(__file__).parent / "dist_scripts" / "faults.py"
pytestmark = needs_mpi
READY = r"rank (\d+) pid (\d+) ready"


def caught(out: str) -> dict[int, str]:
    """rank -> the DistBackendError it caught (from the fault script's output)."""
    return {int(r): msg for r, msg in re.findall(r"rank (\d+) caught after [\d.]+ s: (.*)",
                                                 out)}


def test_a_rank_that_raises_is_named_by_every_other_rank():
    start = time.monotonic()
    code, out = run_ranks(4, SCRIPT, args=["raise", "2", "30"], timeout=60)
    assert time.monotonic() - start < 20, out
    assert code == 1, out
    assert "ValueError: boom at step 5" in out  # the failing rank's own traceback
    errors = caught(out)
    assert sorted(errors) == [0, 1, 3], out
    for msg in errors.values():
        assert "rank 2 failed: it raised ValueError: boom at step 5" in msg, msg


def test_a_rank_exiting_with_an_error_status_ends_the_run_with_it():
    code, out = run_ranks(2, SCRIPT, args=["exit", "1", "30"], timeout=60)
    assert code == 3, out
    assert "rank 1 failed: it exited with status 3" in caught(out)[0], out


def test_a_sigkilled_rank_is_named_within_the_timeout():
    """Rank 3 of 4 is killed from outside while every rank is in its training loop."""
    timeout = 20
    with RunningRanks(4, SCRIPT, ["wait", "-1", str(timeout)]) as ranks:
        pids = {int(r): int(p) for r, p in ranks.wait_for(READY, 4, timeout=60)}
        time.sleep(0.3)  # mid-loop
        killed = time.monotonic()
        os.kill(pids[3], signal.SIGKILL)
        code = ranks.wait(timeout=timeout + 15)
        elapsed = time.monotonic() - killed
        out = ranks.output
    assert elapsed < timeout, out
    assert code != 0, out
    errors = caught(out)
    assert sorted(errors) == [0, 1, 2], out
    for msg in errors.values():
        assert f"rank 3 failed: its process (pid {pids[3]}" in msg and \
            "no longer running" in msg, out
    for pid in pids.values():  # nothing left behind
        assert not _running(pid), f"rank process {pid} still runs"


def test_a_silent_rank_is_named_when_the_timeout_fires():
    """Rank 2 of 3 stops answering (sleeps past the 1.5 s timeout): ranks 0 and 1 time
    out, say rank 2 did not respond, and that the other waits in the same all_reduce."""
    start = time.monotonic()
    code, out = run_ranks(3, SCRIPT, args=["sleep", "2", "1.5"], timeout=60)
    assert time.monotonic() - start < 15, out
    assert code != 0, out
    errors = caught(out)
    assert 0 in errors and 1 in errors, out
    for r, other in ((0, 1), (1, 0)):
        msg = errors[r]
        assert "timed out after 1.5 s in all_reduce #6 of default_pg" in msg, msg
        assert "ranks [2] did not respond within the timeout" in msg, msg
        assert f"rank {other} is in all_reduce #6" in msg, msg


def test_ctrl_c_stops_every_rank_promptly():
    with RunningRanks(2, SCRIPT, ["wait", "-1", "60"]) as ranks:
        pids = {int(r): int(p) for r, p in ranks.wait_for(READY, 2, timeout=60)}
        time.sleep(0.3)
        sent = time.monotonic()
        ranks.proc.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends `ember run`
        code = ranks.wait(timeout=20)
        elapsed = time.monotonic() - sent
        out = ranks.output
    assert code == 130, out
    assert "interrupted (Ctrl-C); every rank was stopped" in out
    assert elapsed < 5, (elapsed, out)
    for pid in pids.values():
        assert not _running(pid), f"rank process {pid} still runs after Ctrl-C"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_rank_failing_before_init_stops_the_run():
    """Rank 1 raises before init_process_group: rank 0 would wait in MPI_Init (C code no
    timeout reaches) forever; ember run stops it and ends with rank 1's status."""
    script = ("import os\nimport ember.distributed as dist\n"
              "if os.environ['RANK'] == '1':\n    raise ImportError('missing module')\n"
              "dist.init_process_group()\n")
    start = time.monotonic()
    code, out = run_ranks(2, script, timeout=60)
    assert time.monotonic() - start < 20, out
    assert code == 1, out
    assert "ImportError: missing module" in out
    assert "rank 1 exited with status 1 before init_process_group; stopping the other " \
        "ranks" in out


@pytest.mark.skipif(not os.environ.get("EMBER_DIST_SOAK"),
                    reason="soak run: set EMBER_DIST_SOAK=N to repeat each fault N times")
def test_soak_every_fault_repeatedly():
    for _ in range(int(os.environ.get("EMBER_DIST_SOAK", "0"))):
        test_a_rank_that_raises_is_named_by_every_other_rank()
        test_a_rank_exiting_with_an_error_status_ends_the_run_with_it()
        test_a_sigkilled_rank_is_named_within_the_timeout()
        test_ctrl_c_stops_every_rank_promptly()
