"""An ONNX model as the TensorFlow ``GraphDef`` that TensorBoard's graph dashboard draws.

ember records a model with its own tracer and ONNX exporter (`ember.onnx.export`); this
module turns the ONNX graph into tensorboardX's ``GraphDef`` protocol buffer. (tensorboardX's
``load_onnx_graph`` does the same but prints every node and leaves parameters and output
edges out.) ember's ONNX node names carry the module path (``features.0/Conv_1``); written
``features/0/Conv_1``, they make TensorBoard nest the nodes by module, as it does PyTorch's
graphs. Parameters join their module's group, and edges are labelled with the shapes
ONNX's shape inference finds.
"""

from __future__ import annotations

from typing import Any

from tensorboardX.proto.attr_value_pb2 import AttrValue
from tensorboardX.proto.graph_pb2 import GraphDef
from tensorboardX.proto.node_def_pb2 import NodeDef
from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboardX.proto.versions_pb2 import VersionDef

IO_OP = "IO Node"  # the op PyTorch's graphs give inputs and outputs
PARAM_OP = "Parameter"


def _shapes(model: Any) -> dict[str, TensorShapeProto]:
    import onnx

    try:  # shapes are labels only: a graph ONNX cannot infer is still drawn
        graph = onnx.shape_inference.infer_shapes(model).graph
    except Exception:
        graph = model.graph
    shapes = {}
    for info in [*graph.input, *graph.value_info, *graph.output]:
        dims = info.type.tensor_type.shape.dim
        shapes[info.name] = TensorShapeProto(dim=[
            TensorShapeProto.Dim(size=d.dim_value if d.HasField("dim_value") else -1)
            for d in dims])
    for init in graph.initializer:
        shapes[init.name] = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d)
                                                  for d in init.dims])
    return shapes


def _attribute_text(attribute: Any) -> str:
    import onnx

    value = onnx.helper.get_attribute_value(attribute)
    if isinstance(value, onnx.TensorProto):  # a Constant's value: its shape, not its data
        return f"tensor{list(value.dims)}"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _nested(name: str) -> str:
    # "features.0/Conv_1" -> "features/0/Conv_1": one group per module, nested like the
    # modules (TensorBoard groups by "/")
    scope, slash, leaf = name.rpartition("/")
    return scope.replace(".", "/") + slash + leaf


def onnx_to_graphdef(model: Any, num_inputs: int | None = None,
                     module_scopes: bool = False) -> GraphDef:
    """The ``GraphDef`` of ONNX ``model`` (an ``onnx.ModelProto``).

    Args:
        model: the ONNX model.
        num_inputs: how many of the graph's inputs are the model's inputs; the others are
            its parameters (ember exports them as inputs when they are not stored). Default:
            every input that is not an initializer.
        module_scopes: the names are ember's (module paths, ``features.0/Conv_1`` and
            ``features.0.weight``): nest them by module.
    """
    graph = model.graph
    shapes = _shapes(model)
    used: set[str] = set()

    def unique(name: str) -> str:
        name = name.replace(":", "_")  # ":" would read as an output index in an edge
        candidate, k = name, 1
        while candidate in used:
            candidate, k = f"{name}_{k}", k + 1
        used.add(candidate)
        return candidate

    def shape_attr(values: list[str]) -> dict[str, AttrValue]:
        known = [shapes[v] for v in values if v in shapes]
        if len(known) != len(values):
            return {}
        return {"_output_shapes": AttrValue(list=AttrValue.ListValue(shape=known))}

    nodes: list[NodeDef] = []
    source: dict[str, str] = {}  # ONNX value name -> the GraphDef node (":k") that makes it
    initializers = {init.name for init in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in initializers]
    model_inputs = inputs if num_inputs is None else inputs[:num_inputs]
    params = [name for name in inputs if name not in model_inputs] + \
        [init.name for init in graph.initializer]
    for name in model_inputs:
        source[name] = unique(f"input/{name}")
        nodes.append(NodeDef(name=source[name], op=IO_OP, attr=shape_attr([name])))
    for name in params:
        source[name] = unique(name.replace(".", "/") if module_scopes else name)
        nodes.append(NodeDef(name=source[name], op=PARAM_OP, attr=shape_attr([name])))

    for i, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{i}"
        name = unique(_nested(name) if module_scopes else name)
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
        attr = shape_attr(list(node.output))
        for attribute in node.attribute:
            attr[attribute.name] = AttrValue(s=_attribute_text(attribute).encode("utf-8"))
        nodes.append(NodeDef(name=name, op=op, attr=attr,
                             input=[source.get(v, v) for v in node.input if v]))
        for k, value in enumerate(node.output):
            source[value] = name if k == 0 else f"{name}:{k}"

    for output in graph.output:
        nodes.append(NodeDef(name=unique(f"output/{output.name}"), op=IO_OP,
                             input=[source.get(output.name, output.name)],
                             attr=shape_attr([output.name])))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
