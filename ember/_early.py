"""What must happen before NumPy loads: point NumPy's OpenBLAS at the kernels this CPU
can run (OpenBLAS reads OPENBLAS_CORETYPE once, when it loads; see
ember/backends/cpu/blas.py). ember/__init__ imports this module first. ember works in any
import order: when NumPy came first, large matrix products use a private copy of
OpenBLAS on the right kernels instead."""

from ember.backends.cpu import blas

STATUS = blas.configure_before_numpy()
"""What was done, for `ember devices --explain`."""
