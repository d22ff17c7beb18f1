"""`python -m ember.run script.py [args ...]`: run a PyTorch program unchanged on ember.

`import torch` (and every `torch.X`) inside the script imports ember (see
ember.torch_alias); the script runs as `__main__` with `sys.argv` set as Python would.
`python -m ember.run -m package.module [args ...]` runs a module instead.
"""

from __future__ import annotations

import builtins
import os
import runpy
import sys
import types
import zipfile

from ember import torch_alias

_USAGE = "usage: python -m ember.run (script.py | -m module) [args ...]"


def main(argv: list[str] | None = None) -> None:
    """Install the torch alias, then run the script (or `-m module`) as `__main__`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(_USAGE, file=sys.stderr)
        raise SystemExit(0 if argv and argv[0] in ("-h", "--help") else 2)
    torch_alias.install()
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        path = os.path.abspath(argv[0])
        sys.path[0] = os.path.dirname(path)  # as `python script.py`
        if os.path.isfile(path) and not zipfile.is_zipfile(path):
            _run_script(path)
        else:  # a directory or zip with a __main__.py
            runpy.run_path(argv[0], run_name="__main__")


def _run_script(path: str) -> None:
    """Run a script file as `python script.py` does: as the process's `__main__` module
    (so pickles and worker processes find what it defines), `__file__` absolute (Python
    3.9+), `sys.argv[0]` as typed (runpy.run_path would set it to `__file__`)."""
    main = types.ModuleType("__main__")
    main.__file__, main.__cached__, main.__builtins__ = path, None, builtins
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


if __name__ == "__main__":
    main()
