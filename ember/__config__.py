"""`torch.__config__`: how this ember is built and how it runs in parallel, as text
(programs print `torch.__config__.show()` in their logs). ember describes itself
honestly: its array library and BLAS, not PyTorch's MKL/OpenMP build."""

from __future__ import annotations

import os
import platform

__all__ = ["parallel_info", "show"]


def show() -> str:
    """Return a human-readable string with descriptions of the configuration of ember."""
    import numpy as np

    from ember import __version__

    lines = ["ember built with:",
             f"  - Python {platform.python_version()} ({platform.python_implementation()})",
             f"  - NumPy {np.__version__}"]
    lines += [f"  - BLAS: {name}" for name in _blas_names(np)]
    lines.append(f"  - CPU: {platform.machine()}")
    lines.append(f"  - Build settings: EMBER_VERSION={__version__}, ")
    return "\n".join(lines) + "\n"


def parallel_info() -> str:
    r"""Returns detailed string with parallelization settings"""
    from ember.core.threads import get_num_interop_threads, get_num_threads

    env = "\n".join(f"\t{name} : {os.environ.get(name, '[not set]')}"
                    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"))
    return (f"ember/Parallel:\n\tember.get_num_threads() : {get_num_threads()}\n"
            f"\tember.get_num_interop_threads() : {get_num_interop_threads()}\n"
            f"os.cpu_count() : {os.cpu_count()}\nEnvironment variables:\n{env}\n")


def _cxx_flags() -> str:
    """The C++ flags PyTorch was built with (`torch.utils.benchmark` reads them): ember
    is Python, so none."""
    return ""


def _blas_names(np: object) -> list[str]:
    """The BLAS libraries NumPy reports (its build configuration), or an empty list."""
    try:
        config = np.show_config(mode="dicts")  # NumPy >= 1.26
    except (TypeError, AttributeError):
        return []
    blas = config.get("Build Dependencies", {}).get("blas", {})
    name = blas.get("name")
    return [f"{name} {blas.get('version', '')}".strip()] if name else []
