"""Start real MPI ranks from tests: `run_ranks(n, script, timeout)` runs a script (a path,
or Python source) under `ember run -n n` with this checkout's ember, and returns
(exit status, combined output of every rank).

    from distributed_util import needs_mpi, run_ranks

    @needs_mpi
    def test_x():
        code, out = run_ranks(2, "import ember.distributed as d; d.init_process_group()...")
        assert code == 0, out
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def mpi_missing() -> str | None:
    """Why real ranks cannot start here (no mpi4py or no mpiexec), or None."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install 'ember[mpi]')"
    try:
        from ember.distributed._mpi import mpiexec

        mpiexec()
    except RuntimeError as err:
        return str(err)
    return None


needs_mpi = pytest.mark.skipif(mpi_missing() is not None, reason=str(mpi_missing()))


def _script_path(script: str | os.PathLike, workdir: str) -> str:
    if isinstance(script, os.PathLike) or ("\n" not in script and script.endswith(".py")):
        return str(script)
    path = os.path.join(workdir, "rank_script.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(script))
    return path


def ember_run_command(n: int, script: str, args: Sequence[str] = (),
                      run_args: Sequence[str] = ()) -> list[str]:
    """The `ember run` command line (through this interpreter, so this checkout's ember
    is the one that runs)."""
    return [sys.executable, "-m", "ember.distributed.run", *run_args, "-n", str(n), script,
            *args]


def rank_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment ranks need: this checkout first on PYTHONPATH, one thread each."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.update(extra or {})
    return env


def run_ranks(n: int, script: str | os.PathLike, timeout: float = 60,
              args: Sequence[str] = (), env: dict[str, str] | None = None,
              run_args: Sequence[str] = ()) -> tuple[int, str]:
    """Run `script` (a path, or Python source) on `n` real ranks with `ember run`.

    Returns (exit status, the ranks' stdout and stderr together). Fails the test, after
    killing every process it started, if the ranks are not done within `timeout` s."""
    with tempfile.TemporaryDirectory(prefix="ember-ranks-") as workdir:
        path = _script_path(script, workdir)
        proc = subprocess.Popen(ember_run_command(n, path, args, run_args), cwd=workdir,
                                env=rank_env(env), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)  # ember run stops every rank on Ctrl-C
            try:
                out, _ = proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
            pytest.fail(f"{n} ranks of {script!r} were not done within {timeout} s; "
                        f"output:\n{out}")
        return proc.returncode, out


class RunningRanks:
    """`ember run` started in the background, its output collected by a thread, for tests
    that act on ranks while they run (kill one, press Ctrl-C). Use as a context manager:
    leaving it kills whatever is left."""

    def __init__(self, n: int, script: str | os.PathLike, args: Sequence[str] = (),
                 env: dict[str, str] | None = None) -> None:
        import threading

        self.proc = subprocess.Popen(ember_run_command(n, str(script), args),
                                     env=rank_env(env), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self._chunks: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._chunks.append(line)

    @property
    def output(self) -> str:
        return "".join(self._chunks)

    def wait_for(self, pattern: str, count: int, timeout: float) -> list[tuple[str, ...]]:
        """Wait until the output has `count` matches of regex `pattern`; returns them."""
        import re
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.findall(pattern, self.output)
            if len(found) >= count:
                return found
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        pytest.fail(f"expected {count} lines matching {pattern!r}; output:\n{self.output}")

    def wait(self, timeout: float) -> int:
        """Wait for `ember run` to end; returns its exit status."""
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code

    def __enter__(self) -> RunningRanks:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
