"""`ember.onnx`: export models to ONNX, as `torch.onnx` does, and load ONNX models back
as ember modules (`ember.onnx.load`), to run or fine-tune on any ember device.

    import ember
    model = MyModel().eval()
    ember.onnx.export(model, ember.randn(1, 3, 32, 32), "model.onnx",
                      input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})

The model is traced with `ember.jit.trace` and each recorded op is mapped to ONNX
operators (see `ember.exporters.onnx` for how, and `ember.exporters.onnx_context` for
writing converters). The file is checked with `onnx.checker.check_model(full_check=True)`
before it is written, and written atomically: a failed export leaves no file behind.

Converters for a plugin's own ops come from the plugin's `ember_onnx_converters` hook;
`register_converter` adds one in-process. A converter is `fn(ctx, node)`: it emits ONNX
nodes with `ctx.op(op_type, *inputs, **attributes)` (inputs are ONNX names from
`ctx.name(value)` for the node's tensor arguments) and returns the ONNX names of
`node.outputs`.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from typing import IO, Any

from ember.exporters.onnx import (
    DEFAULT_OPSET,
    MAX_OPSET,
    MIN_OPSET,
    ExportContext,
    SymDim,
    UnsupportedOperatorError,
    is_exporting,
    register_converter,
    unregister_converter,
)
from ember.exporters.onnx import export as _export
from ember.exporters.onnx_import import OnnxModule, load
from ember.exporters.onnx_import_context import (
    MAX_IMPORT_OPSET,
    ImportContext,
    OnnxLoadError,
    UnsupportedOnnxOpError,
)
from ember.exporters.onnx_registry import register_importer, unregister_importer

__all__ = ["export", "register_converter", "unregister_converter", "UnsupportedOperatorError",
           "ExportContext", "SymDim", "DEFAULT_OPSET", "MIN_OPSET", "MAX_OPSET",
           "load", "OnnxModule", "register_importer", "unregister_importer", "ImportContext",
           "OnnxLoadError", "UnsupportedOnnxOpError", "MAX_IMPORT_OPSET", "TrainingMode",
           "OperatorExportTypes", "is_in_onnx_export"]


class TrainingMode(enum.Enum):
    """The mode :func:`export` traces a module in (``training=``)."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.Enum):
    """How PyTorch's TorchScript exporter writes ops with no ONNX form (``ONNX`` only in
    ember: an op without a converter raises :class:`UnsupportedOperatorError`)."""

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3



def is_in_onnx_export() -> bool:
    """Whether :func:`export` is tracing a model now: a model can take an export-friendly
    path in its ``forward`` (``if torch.onnx.is_in_onnx_export(): ...``)."""
    return is_exporting()


def export(model: Any, args: Any = (), f: str | os.PathLike | IO[bytes] | None = None, *,
           kwargs: dict[str, Any] | None = None, verbose: bool | None = None,
           input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None,
           opset_version: int | None = None, dynamo: bool = True, external_data: bool = True,
           dynamic_shapes: Any = None, custom_translation_table: Any = None,
           report: bool = False, optimize: bool = True, verify: bool = False,
           profile: bool = False, dump_exported_program: bool = False,
           artifacts_dir: str | os.PathLike = ".", export_params: bool = True,
           keep_initializers_as_inputs: bool = False,
           dynamic_axes: dict[str, dict[int, str] | list[int]] | None = None,
           training: TrainingMode = TrainingMode.EVAL,
           operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX,
           do_constant_folding: bool = True, custom_opsets: dict[str, int] | None = None,
           export_modules_as_functions: bool | Any = False,
           autograd_inlining: bool = True) -> Any:
    r"""Export a model (an ``ember.nn.Module`` or a function of tensors) to ONNX.

    The model is traced once on ``args`` in eval mode (its modules' training flags are
    restored afterwards); what its ``forward`` does with Python values (control flow,
    ``.item()``) is recorded as the path taken on these inputs.

    Args:
        model: the module or function to export.
        args: the example input: a tensor or a tuple of tensors (positional arguments).
        f: a file path, or a binary file object with a ``write`` method.
        input_names: names of the graph inputs, in order. Default: ``input_0``, ...
        output_names: names of the graph outputs (the flattened return value), in order.
            Default: ``output_0``, ...
        dynamic_axes: axes whose size may change, per input or output name: a dict
            ``{axis: "name"}`` or a list of axes (named ``<tensor>_dynamic_axes_<k>``).
            Axes that share a name must have the same size. Example:
            ``{"input_0": {0: "batch"}, "output_0": {0: "batch"}}``.
        opset_version: the ONNX opset to write, from ``MIN_OPSET`` (14) to ``MAX_OPSET``
            (23). Default: ``DEFAULT_OPSET`` (17).
        export_params: store parameters and buffers as initializers (named by their
            ``state_dict`` names); if ``False`` they become extra graph inputs.
        do_constant_folding: evaluate at export time the ops whose inputs are all
            constants (weight reshapes, transposes, masks ...).
        verbose: print the exported graph.
        training: :class:`TrainingMode` ``EVAL`` (default), ``TRAINING`` or ``PRESERVE``:
            the mode the modules are traced in (restored afterwards).
        keep_initializers_as_inputs: list the initializers among the graph inputs too.

    PyTorch's other arguments are accepted for its programs' sake: ember has one exporter
    (``dynamo`` chooses between PyTorch's two), which checks the model itself (``verify``,
    ``report``, ``optimize``, ``profile``, ``dump_exported_program``, ``artifacts_dir``,
    ``autograd_inlining`` change nothing). ``opset_version`` 7 to 13 is written as opset
    14 (ember's converters start there), with a warning. ``kwargs``, ``dynamic_shapes``,
    ``custom_translation_table``, ``custom_opsets``, ``export_modules_as_functions`` and an
    ``operator_export_type`` other than ``ONNX`` raise :class:`NotImplementedError`.

    Returns:
        the ``onnx.ModelProto`` that was written.

    Raises:
        UnsupportedOperatorError: an op has no ONNX converter; the message names the op and
            the module path where it was called. No file is written.
        ValueError: a bad argument (opset, names, dynamic axes).

    Models whose initializers exceed ``ember.exporters.onnx.EXTERNAL_DATA_THRESHOLD``
    bytes (about 2 GB, protobuf's limit) are written in ONNX's external-data format: the
    tensors go to ``<f>.data`` next to the model (``f`` must then be a path).
    """
    unsupported = {"kwargs": kwargs, "dynamic_shapes": dynamic_shapes,
                   "custom_translation_table": custom_translation_table,
                   "custom_opsets": custom_opsets,
                   "export_modules_as_functions": export_modules_as_functions,
                   "operator_export_type": operator_export_type != OperatorExportTypes.ONNX}
    for name, value in unsupported.items():
        if value:
            raise NotImplementedError(f"ember.onnx.export: {name}= is not supported (ember "
                                      f"traces positional tensor inputs and writes standard "
                                      f"ONNX operators)")
    if f is None:
        raise ValueError("ember.onnx.export: f, the file to write, is required")
    mode = {TrainingMode.EVAL: "eval", TrainingMode.TRAINING: "train",
            TrainingMode.PRESERVE: "preserve"}[TrainingMode(training)]
    return _export(model, args, f, input_names=input_names, output_names=output_names,
                   dynamic_axes=dynamic_axes, opset_version=opset_version,
                   export_params=export_params, do_constant_folding=do_constant_folding,
                   verbose=bool(verbose), training=mode,
                   keep_initializers_as_inputs=keep_initializers_as_inputs)
