"""mpi4py, imported on first use only (`import ember` never loads MPI), and the mpiexec of
the MPI that mpi4py runs on."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

INSTALL_HINT = ("ember.distributed needs mpi4py and an MPI library: pip install 'ember[mpi]' "
                "(mpi4py and the mpich wheel)")


def is_available() -> bool:
    """Whether mpi4py can be imported (without importing it when it is not loaded yet)."""
    if "mpi4py" in sys.modules:
        return True
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def mpi() -> Any:
    """The `mpi4py.MPI` module (initialising MPI on first call), or a RuntimeError that
    says what to install."""
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise RuntimeError(f"{INSTALL_HINT} ({err})") from None
    return MPI


def mpiexec() -> str:
    """The path of the mpiexec that goes with the installed MPI: the mpich wheel puts it
    beside the Python interpreter (the venv's bin); else the one on PATH."""
    import sysconfig

    for folder in (os.path.dirname(sys.executable), sysconfig.get_path("scripts")):
        here = os.path.join(folder, "mpiexec")
        if os.access(here, os.X_OK):
            return here
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError(f"no mpiexec found beside {sys.executable} or on PATH; "
                           f"{INSTALL_HINT}")
    return found
