"""ONNX import converters: the tensor ops of the `ai.onnx.ml` domain that map onto ember
ops (Binarizer, ArrayFeatureExtractor). LabelEncoder runs on the host with the string ops
(`onnx_import_strings`); the tree ops have no converter."""

from __future__ import annotations

from typing import Any

import ember
from ember.exporters.onnx_import_context import ImportContext
from ember.exporters.onnx_registry import importer

ML = "ai.onnx.ml"


@importer("Binarizer", since=1, domain=ML)
def _binarizer(ctx: ImportContext, x: Any) -> Any:
    return (x > ctx.attr("threshold", 0.0)).to(x.dtype)


@importer("ArrayFeatureExtractor", since=1, domain=ML)
def _array_feature_extractor(ctx: ImportContext, x: Any, indices: Any) -> Any:
    index = indices.reshape(-1).to(ember.int64)
    picked = ember.index_select(x, x.ndim - 1, index)
    lead = [1] if x.ndim == 1 else list(x.shape[:-1])
    return picked.reshape(lead + [index.shape[0]])
