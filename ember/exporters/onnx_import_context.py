"""What an ONNX import converter works with: `ImportContext`, the import errors, dtypes.

An import converter is `fn(ctx, *inputs)`: `inputs` are the node's inputs as ember
tensors (None where an optional input is omitted; a Python list for an ONNX sequence; a
NumPy `object` array of `str` for an ONNX string tensor, see `onnx_import_strings`), and
it returns the node's output, or a tuple of its outputs, as ember tensors computed with
ember ops only, so that the imported model runs on every device and autograd sees every
step. `ctx` reads the node's attributes and turns small tensors (shapes, axes, pads) into
Python values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import ember

__all__ = ["ImportContext", "OnnxLoadError", "UnsupportedOnnxOpError", "ember_dtype",
           "from_array", "held_numpy", "MAX_IMPORT_OPSET"]

MAX_IMPORT_OPSET = 28
"""The newest opset of the default domain the converters were written against (onnx
1.23's). A model that asks for a newer one is refused: an op may have changed meaning."""


class OnnxLoadError(ValueError):
    """The ONNX model cannot be loaded: not ONNX, truncated, invalid, or too new."""


class UnsupportedOnnxOpError(OnnxLoadError):
    """A node of the model has no import converter for its (domain, op type, opset)."""


# ONNX TensorProto element type -> ember dtype name (the types ember has)
_ELEM_TYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64",
               9: "bool", 10: "float16", 11: "float64", 16: "bfloat16"}
# Types ember lacks are held in a wider one that holds every value exactly: uint16/32/64
# in int32/int64/int64 (uint64 below 2**63; wrap-around on overflow is not emulated),
# float8 and float4 in float32, 4- and 2-bit integers in int8/uint8. Casts to them round
# (or wrap) to the narrow type's values (`onnx_import_cast`).
_HELD = {4: "int32", 12: "int64", 13: "int64",  # UINT16, UINT32, UINT64
         17: "float32", 18: "float32", 19: "float32", 20: "float32",  # FLOAT8 E4M3FN ...
         23: "float32", 24: "float32",  # FLOAT4E2M1, FLOAT8E8M0
         21: "uint8", 22: "int8", 25: "uint8", 26: "int8"}  # UINT4, INT4, UINT2, INT2


def _held_numpy_types() -> dict:
    from onnx import helper

    return {np.dtype(helper.tensor_dtype_to_np_dtype(t)): np.dtype(name)
            for t, name in _HELD.items()}


def ember_dtype(elem_type: int, what: str = "a tensor") -> Any:
    """The ember dtype that holds an ONNX element type (its own, or the wider one that
    holds it: see `_HELD`); `TypeError` naming `what` if there is none."""
    name = _ELEM_TYPES.get(elem_type) or _HELD.get(elem_type)
    if name is None:
        from onnx import TensorProto

        raise TypeError(f"{what} has ONNX element type "
                        f"{TensorProto.DataType.Name(elem_type)}, which ember has no dtype for "
                        f"(it has {', '.join(sorted(set(_ELEM_TYPES.values())))}, and holds "
                        "uint16/32/64, float8, float4 and 4- and 2-bit integers in wider "
                        "ones)")
    return getattr(ember, name)


def held_numpy(elem_type: int) -> Any:
    """The NumPy dtype of ONNX element type `elem_type` when ember holds it in a wider one
    (uint16, float8, int4 ...: an output is handed back in it), else None."""
    from onnx import helper

    return helper.tensor_dtype_to_np_dtype(elem_type) if elem_type in _HELD else None


_NATIVE = {np.dtype(n) for n in ("bool", "uint8", "int8", "int16", "int32", "int64",
                                 "float16", "float32", "float64")}


def from_array(arr: Any) -> Any:
    """An ember tensor (on the CPU) of a NumPy array of ONNX data: a copy, C-ordered, in
    the dtype that holds it (narrow types widened, see `ember_dtype`)."""
    arr = np.array(arr, order="C")
    if arr.dtype not in _NATIVE:  # (bfloat16 is ember's own too: no entry, kept)
        wider = _held_numpy_types().get(arr.dtype)
        if wider is not None:
            arr = arr.astype(wider)
    return ember.from_numpy(arr)



class ImportContext:
    """One node's view for its converter: attributes, opset, device, and helpers.

    Attributes:
        node: the `onnx.NodeProto`.
        opset: the model's opset of the node's domain.
        device: the device the graph runs on (that of its inputs and parameters).
        run_graph: `run_graph(graph, inputs: list) -> list` runs a graph attribute (as
            `ctx.attr` gives it: the branch of an If, the body of a Loop) with the
            enclosing scope visible.
        input_types: the ONNX element types declared for the node's inputs (see
            `input_type`).
        recompute: `recompute(name, {input_name: tensor})` runs again the nodes before this
            one that compute the value `name`, with some of their inputs replaced
            (ai.onnx.preview.training's Gradient differentiates through it).
    """

    def __init__(self, node: Any, attrs: dict[str, Any], opset: int, device: Any,
                 run_graph: Callable[[Any, list], list],
                 input_types: list[int | None] | None = None,
                 recompute: Callable[[str, dict], Any] | None = None) -> None:
        self.node = node
        self.attrs = attrs
        self.opset = opset
        self.device = device
        self.run_graph = run_graph
        self.input_types = input_types or []
        self.recompute = recompute

    def input_type(self, i: int) -> int | None:
        """The ONNX element type the model declares for input `i` (a graph input, an
        initializer or a value_info), or None where it declares none: it tells types ember
        holds in wider ones (uint16 in int32) from those it has."""
        return self.input_types[i] if i < len(self.input_types) else None

    @property
    def n_outputs(self) -> int:
        """How many outputs the node has (optional trailing ones omitted)."""
        return len(self.node.output)

    def wants(self, i: int) -> bool:
        """Whether output `i` is used (named) by the node."""
        return i < len(self.node.output) and self.node.output[i] != ""

    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute `name` (ints, floats, strings decoded, tensors as NumPy arrays),
        or `default`."""
        return self.attrs.get(name, default)

    def ints(self, t: Any) -> list[int] | None:
        """The values of a small integer tensor (a shape, axes, pads) as Python ints."""
        if t is None:
            return None
        return [int(v) for v in np.asarray(t.tolist()).reshape(-1).tolist()]

    def scalar(self, t: Any, default: Any = None) -> Any:
        """The one value of a tensor as a Python number (or `default` if `t` is None)."""
        if t is None:
            return default
        return t.reshape(-1).tolist()[0] if t.numel() else default

    def tensor(self, data: Any, dtype: Any = None, device: Any = None) -> Any:
        """A new tensor from Python or NumPy data on the graph's device (or `device`)."""
        device = self.device if device is None else device
        if isinstance(data, np.ndarray):
            t = from_array(data)
            if dtype is not None:
                t = t.to(dtype)
            return t.to(device) if str(device) != "cpu" else t
        return ember.tensor(data, dtype=dtype, device=device)

    def host(self, values: list[int]) -> Any:
        """An int64 tensor of shape values kept on the CPU: shapes are read by Python
        (`ctx.ints`), so computing them on an accelerator would only add round trips."""
        return ember.tensor(values, dtype=ember.int64)

    def fail(self, reason: str, exc: type[Exception] = ValueError) -> Exception:
        """An error naming this node and its op type, to raise."""
        n = self.node
        return exc(f"ONNX {n.op_type} node {n.name or '(unnamed)'!r}: {reason}")
