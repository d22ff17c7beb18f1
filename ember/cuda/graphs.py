"""`torch.cuda.graphs`: CUDA graph capture, which ember does not do.

ember's CUDA backend launches CuPy kernels one by one; it has no capture of a stream
into a replayable graph. The names are here for the code that mentions them (type hints,
capture checks), and constructing a graph refuses as PyTorch's builds without CUDA
graphs refuse: `CUDAGraph()` raises RuntimeError.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "make_graphed_callables"]


def is_current_stream_capturing() -> bool:
    """Whether the current CUDA stream is capturing a graph: never, in ember. Without
    CUDA it raises RuntimeError, as PyTorch's builds without CUDA do."""
    from ember.cuda import is_available

    if not is_available():
        raise RuntimeError("Tried to instantiate dummy base class _cuda_isCurrentStreamCapturing")
    return False


def graph_pool_handle() -> Any:
    """A memory-pool handle for graph capture; ember captures no graphs."""
    raise RuntimeError("graph_pool_handle: ember does not capture CUDA graphs")


class CUDAGraph:
    """A captured CUDA graph (PyTorch's `torch.cuda.CUDAGraph`). ember has none: making
    one raises RuntimeError, as in PyTorch builds without CUDA graphs."""

    def __new__(cls, keep_graph: bool = False) -> CUDAGraph:
        raise RuntimeError("Tried to instantiate dummy base class CUDAGraph")


class graph:  # noqa: N801 - PyTorch's spelling
    """`with ember.cuda.graph(g):` captures the work inside into `g`; as no
    :class:`CUDAGraph` can be made, there is nothing to capture into."""

    def __init__(self, cuda_graph: CUDAGraph, pool: Any = None, stream: Any = None,
                 capture_error_mode: str = "global") -> None:
        raise RuntimeError("ember.cuda.graph: ember does not capture CUDA graphs")


def make_graphed_callables(callables: Any, sample_args: Any, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool: Any = None) -> Any:
    """Graph-captured versions of `callables`: they need a :class:`CUDAGraph`, which
    ember cannot make."""
    return CUDAGraph()
