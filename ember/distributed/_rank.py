"""What `ember run` starts on every rank: sets torchrun's environment variables from the
launcher's, records this process in the run directory, and runs the script as
`__main__` (as `python script.py` would).

A script that ends with a non-zero `sys.exit` status after init_process_group tells the
other ranks, so they raise instead of waiting for it, and the run ends with that
status."""

from __future__ import annotations

import os
import runpy
import sys


def set_torchrun_env(env: dict[str, str]) -> None:
    """RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE from hydra's PMI variables."""
    for ours, theirs in (("RANK", "PMI_RANK"), ("WORLD_SIZE", "PMI_SIZE"),
                         ("LOCAL_RANK", "MPI_LOCALRANKID"),
                         ("LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS")):
        if theirs in env:
            env[ours] = env[theirs]


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m ember.distributed._rank script.py [args...]")
    set_torchrun_env(os.environ)
    run_dir = os.environ.get("EMBER_RUN_DIR")
    if run_dir and os.path.isdir(run_dir):
        with open(os.path.join(run_dir, f"rank{os.environ.get('RANK', '0')}.pid"), "w") as f:
            f.write(f"{os.getpid()}\n")
    script = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as done:
        code = done.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        hooks = sys.modules.get("ember.distributed.hooks")
        if status != 0 and hooks is not None and hooks.active():
            if not isinstance(code, int):
                print(code, file=sys.stderr)
            hooks.exit_failed(status, f"it exited with status {status}")
        raise


if __name__ == "__main__":
    main(sys.argv[1:])
