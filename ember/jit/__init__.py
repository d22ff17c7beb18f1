"""Tracing: record what a forward call does into a small graph IR, and replay it.

    traced = ember.jit.trace(model, example_input)
    traced.graph.print()        # the recorded ops
    traced(new_input)           # replays the graph; the model's Python code does not run

The graph has three kinds of nodes:

- primitive: one op of the dispatch table (`add`, `matmul`, `reshape` ...);
- composite: a core composite op (`conv2d`, `linear`, `softmax` ...) with the primitives it
  ran as children;
- module: a call of an `ember.nn` module (`Conv2d`, `LSTM` ...) with the ops it ran as
  children, and its module path (`encoder.layers.2.attn`).

Exporters (ember.exporters) map the outermost node they know and descend into the
children of the rest, so every traced model can be exported op by op.
Data-dependent Python control flow is recorded as the path taken; reading a tensor's
value into Python (`.item()`, `bool(t)`) during a trace warns, as PyTorch's tracer does.
`traced.code` prints the recorded forward as Python.

`ember.jit.script` and TorchScript's other names run the code eagerly:
ember has no TorchScript compiler, and eager code gives the scripted results.
"""

from ember.jit.graph import Graph, Node, Value  # noqa: F401
from ember.jit.script import (  # noqa: F401
    Attribute,
    Error,
    Final,
    Future,
    RecursiveScriptModule,
    ScriptFunction,
    ScriptModule,
    ScriptWarning,
    annotate,
    enable_onednn_fusion,
    export,
    fork,
    freeze,
    fuser,
    ignore,
    interface,
    is_scripting,
    is_tracing,
    load,
    onednn_fusion_enabled,
    optimize_for_inference,
    optimized_execution,
    save,
    script,
    script_if_tracing,
    script_method,
    set_fusion_strategy,
    unused,
    wait,
)
from ember.jit.script import jit_isinstance as isinstance  # noqa: F401, A004 - PyTorch's name
from ember.jit.tracer import TracedModule, TracerWarning, trace  # noqa: F401
