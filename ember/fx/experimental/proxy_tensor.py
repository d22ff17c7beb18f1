"""`make_fx` (torch.fx.experimental.proxy_tensor): a function traced, on example inputs,
into a GraphModule.

PyTorch's make_fx records the ATen operators a call runs; ember's graphs are Python-level
(`symbolic_trace`'s: `a + 1`, `b.view(-1)`), so the GraphModule computes what the
function does and prints ember's operations rather than `torch.ops.aten.*` ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["make_fx"]


def make_fx(f: Callable[..., Any], decomposition_table: Any = None, tracing_mode: str = "real",
            _allow_non_fake_inputs: bool = False, *, pre_dispatch: bool = False,
            record_module_stack: bool = False, _allow_fake_constant: bool = False,
            _error_on_data_dependent_ops: bool = True, record_stack_traces: bool = False,
            proxy_module_inputs: bool = False,
            _disable_torch_fn_metadata_mode: bool = False) -> Callable[..., Any]:
    """A function that, called with example inputs, returns `f` traced into a
    GraphModule (its `code` shows the graph; calling it computes `f`).

    Args:
        f: the function (or module) to trace.
        decomposition_table: PyTorch's ATen decompositions (ember's graphs hold no ATen
            operators: accepted and unused).
        tracing_mode: "real", "fake" or "symbolic" (all trace the same graph here).
    """
    if tracing_mode not in ("real", "fake", "symbolic"):
        raise AssertionError(f"tracing_mode must be real/fake/symbolic, got {tracing_mode}")

    def traced(*args: Any) -> Any:
        from ember.fx import symbolic_trace

        return symbolic_trace(f)
    return traced
