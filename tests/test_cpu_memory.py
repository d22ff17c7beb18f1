"""ember/backends/cpu/memory.py: freed host memory stays in the process (glibc), so a
training step does not fault its memory back in every step; EMBER_CPU_MALLOC=system
turns that off. Checked by counting page faults in fresh processes."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# Allocate and touch 16 arrays of 1 MiB, free them all, 20 times over, as a training step
# does with its activations, and count the minor page faults that costs. (glibc's default
# gives the freed top of its heap back to the OS once more than 2x its mmap threshold is
# free, so every round faults it back in.)
SCRIPT = r"""
import json, resource
import numpy as np
import ember
policy = ember.zeros(1)._backend.malloc_policy
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def step():
    arrays = [np.ones(256 * 1024, np.float32) for _ in range(16)]
    del arrays
step()  # the first round faults its memory in: not counted
before = faults()
for _ in range(20):
    step()
print(json.dumps({"policy": policy, "faults": faults() - before}))
"""


def run(**env: str) -> dict:
    full = {k: v for k, v in os.environ.items() if k != "EMBER_CPU_MALLOC"}
    full.update(env)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=full, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not GLIBC, reason="the policy uses glibc's mallopt")
def test_freed_memory_is_reused_without_page_faults():
    kept = run()
    assert kept["policy"] == "cached"
    # a round touches 4096 pages: kept memory faults none of them again
    assert kept["faults"] < 4096, kept


@pytest.mark.skipif(not GLIBC, reason="the policy uses glibc's mallopt")
def test_system_setting_keeps_the_c_library_defaults():
    default = run(EMBER_CPU_MALLOC="system")
    assert default["policy"] == "system"
    assert default["faults"] > 20 * 2048, default  # every round faults its pages again


def test_import_ember_leaves_malloc_alone():
    # the policy is applied when the CPU backend is created, not on `import ember`
    code = ("import ember, json; from ember.backends.cpu import memory; "
            "print(json.dumps(memory._state))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) is None
