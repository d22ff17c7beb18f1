"""A training-like loop of all-reduces in which one rank fails, as argv says:
`faults.py MODE VICTIM TIMEOUT_S` with MODE raise | exit | sleep | wait (loop until
killed from outside). Every surviving rank must raise DistBackendError naming VICTIM."""

import os
import sys
import time
from datetime import timedelta

import ember
import ember.distributed as dist

mode, victim, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
dist.init_process_group("mpi", timeout=timedelta(seconds=timeout))
rank = dist.get_rank()
def say(line):  # one write: lines of several ranks do not interleave
    os.write(1, (line + "\n").encode())


say(f"rank {rank} pid {os.getpid()} ready")
w = ember.randn(64, 64)
start = time.monotonic()
try:
    for step in range(1_000_000):
        if rank == victim and step == 5:
            if mode == "raise":
                raise ValueError("boom at step 5")
            if mode == "exit":
                sys.exit(3)
            if mode == "sleep":
                time.sleep(2 * timeout + 1)
        grad = (w @ w).tanh()
        dist.all_reduce(grad)
        if mode == "wait":
            time.sleep(0.01)
except dist.DistBackendError as err:
    say(f"rank {rank} caught after {time.monotonic() - start:.2f} s: {err}")
    raise
