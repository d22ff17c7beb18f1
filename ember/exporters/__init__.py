"""Exporters: turn a traced ember graph (`ember.jit`) into other formats, and ONNX models
back into ember modules.

ONNX export (public API: `ember.onnx.export`):
  - `onnx`: the driver; `onnx_trace`: tracing and the dynamic-axes analysis,
  - `onnx_converters` and `onnx_modules`: the built-in converters (ops; `ember.nn` modules),
  - `onnx_context`: `ExportContext`, what an export converter works with.
ONNX import (public API: `ember.onnx.load`):
  - `onnx_import`: the driver and `OnnxModule`,
  - `onnx_import_context`: `ImportContext`, the import errors and dtypes,
  - `onnx_import_*`: the built-in converters, one module per family (math, cast, shape
    and control flow, nn, windows (any-rank convolution and pooling), rnn, attention,
    resize, grid, spectral, quant, sequence, training, ml),
  - `onnx_backend`: an `onnx.backend.base.Backend` for ONNX's backend test suite.
Both: `onnx_registry`, the tables converters enter and drivers read.
Commands: `cli` (`ember export`) and `onnx_run` (`ember onnx run`).
"""
