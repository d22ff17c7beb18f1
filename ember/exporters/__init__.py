"""Exporters: turn a traced ember graph (`ember.jit`) into other formats.

- `ember.exporters.onnx`: ONNX export's driver (public API: `ember.onnx.export`), on top of
  - `onnx_converters` and `onnx_modules`: the built-in converters (ops; `ember.nn` modules),
  - `onnx_registry`: the converter table they enter and the driver reads,
  - `onnx_context`: `ExportContext`, what a converter works with.
- `ember.exporters.cli`: the `ember export` command.
"""
