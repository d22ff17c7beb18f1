"""What `ember run` starts on every rank (run by path, so that it loads nothing but the
standard library): sets torchrun's environment variables from the launcher's, then forks.

- The child is the rank: it runs the script as `__main__`, as `python script.py` would.
  A script that ends with a non-zero `sys.exit` status after init_process_group tells
  the other ranks, so they raise instead of waiting for it.
- The parent stays as the process hydra launched: it ignores the signals hydra sends
  to the process group (the child gets them itself) and, when the child ends, exits
  *normally* with its status (128 + N when the child was killed by signal N). hydra
  tears the whole job down, killing the surviving ranks before they can report, when a
  process it launched dies of a signal; this way a SIGKILLed rank is only a failed exit
  status, and the others name it (faults.py).
  The parent records the status in the run directory, for `ember run`'s exit status.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import time

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP)


def set_torchrun_env(env: os._Environ | dict) -> None:
    """RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE from hydra's PMI variables, and
    torchrun's TORCHELASTIC_* run variables."""
    for ours, theirs in (("RANK", "PMI_RANK"), ("WORLD_SIZE", "PMI_SIZE"),
                         ("LOCAL_RANK", "MPI_LOCALRANKID"),
                         ("LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS")):
        if theirs in env:
            env[ours] = env[theirs]
    # torchrun's own (is_torchelastic_launched() reads the run id): one run, no restarts
    for name, value in (("TORCHELASTIC_RUN_ID", "none"), ("TORCHELASTIC_RESTART_COUNT", "0"),
                        ("TORCHELASTIC_MAX_RESTARTS", "0")):
        env.setdefault(name, value)


def _record(name: str, text: str) -> None:
    run_dir = os.environ.get("EMBER_RUN_DIR")
    if run_dir and os.path.isdir(run_dir):  # on another host it may not exist
        with open(os.path.join(run_dir, f"rank{os.environ.get('RANK', '0')}.{name}"), "w") as f:
            f.write(text)


def run_script(argv: list[str]) -> None:
    """Run the script (or, after `-m`, the module) as __main__ in this process (the
    rank), as `python script.py args` (`python -m module args`) would."""
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as done:
        code = done.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        hooks = sys.modules.get("ember.distributed.hooks")
        if status != 0 and hooks is not None and hooks.active():
            if not isinstance(code, int):
                print(code, file=sys.stderr)
            hooks.exit_failed(status, f"it exited with status {status}")
        raise


def supervise(child: int) -> int:
    """Wait for the rank; its exit status. hydra signals the whole process group (Ctrl-C,
    SIGUSR1), which the rank shares: the rank gets each signal itself, and this process
    ignores them, so it outlives the rank to report its status."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def main(argv: list[str]) -> int:
    if not argv or argv == ["-m"]:
        print("usage: python _rank.py (script.py | -m module) [args...]", file=sys.stderr)
        return 2
    set_torchrun_env(os.environ)
    sys.stdout.flush()
    child = os.fork()
    if child == 0:
        _record("pid", f"{os.getpid()}\n")
        run_script(argv)
        return 0
    code = supervise(child)
    _record("status", f"{code} {time.time()!r}\n")
    return code


if __name__ == "__main__":
    del sys.path[0]  # this file's folder: its module names must not shadow the script's
    sys.exit(main(sys.argv[1:]))
