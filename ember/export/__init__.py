"""`torch.export`: `export(module, args)` captures one call as an ATen-level graph
(an :class:`ExportedProgram`), `save`/`load` keep it in a `.pt2` archive, `Dim` marks the
dimensions that may vary. See ember.export._trace for how the capture works."""

from ember.export import graph_signature
from ember.export._trace import export
from ember.export.dynamic_shapes import Dim
from ember.export.exported_program import ExportedProgram
from ember.export.graph_signature import ExportGraphSignature
from ember.export.serialize import load, save

__all__ = ["Dim", "ExportGraphSignature", "ExportedProgram", "export", "graph_signature",
           "load", "save"]
