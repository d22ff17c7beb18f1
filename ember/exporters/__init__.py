"""Exporters: turn a traced ember graph (`ember.jit`) into other formats.

- `ember.exporters.onnx`: ONNX models (public API: `ember.onnx.export`).
- `ember.exporters.cli`: the `ember export` command.
"""
