"""The default generator's seed: drawn from the OS at start-up, as PyTorch's is."""
from __future__ import annotations

import subprocess
import sys

import ember

SHOW = ("import ember; s = ember.initial_seed(); a = ember.rand(3).tolist(); "
        "ember.manual_seed(s); print(s, a, a == ember.rand(3).tolist())")


def test_every_process_starts_from_its_own_seed_and_can_replay_it() -> None:
    runs = [subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True,
                           check=True).stdout.split(" ", 1) for _ in range(2)]
    (seed_a, rest_a), (seed_b, rest_b) = runs
    assert seed_a != seed_b and rest_a != rest_b
    assert rest_a.strip().endswith("True") and rest_b.strip().endswith("True")
    assert 0 <= int(seed_a) < 2 ** 64


def test_seed_and_manual_seed_set_initial_seed() -> None:
    ember.manual_seed(1234)
    assert ember.initial_seed() == 1234
    s = ember.seed()
    assert ember.initial_seed() == s and s != 1234
    assert ember.Generator().initial_seed() == 67280421310721  # a new Generator, as torch's
    ember.manual_seed(0)
