"""`Summary` protocol buffers (tensorboardX's classes) for each kind of data logged.

Imported by the writer once tensorboardX is known to be installed. Each function checks
and converts its input completely before building anything, so a bad value fails before
anything is written.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from google.protobuf import struct_pb2
from tensorboardX.proto.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName
from tensorboardX.proto.api_pb2 import Status as SessionStatus
from tensorboardX.proto.plugin_hparams_pb2 import (
    HParamsPluginData,
    SessionEndInfo,
    SessionStartInfo,
)
from tensorboardX.proto.plugin_text_pb2 import TextPluginData
from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboardX.proto.tensor_pb2 import TensorProto
from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboardX.summary import make_histogram

import ember

from ._convert import encode_png, to_float, to_hwc_uint8, to_values


def _check_tag(tag: Any, what: str) -> str:
    if not isinstance(tag, str):
        raise TypeError(f"{what}: tag must be a string; got {type(tag).__name__}")
    return tag


def scalar(tag: str, value: Any, new_style: bool = False,
           double_precision: bool = False) -> Summary:
    """One number: as ``simple_value``, or (new style) as a tensor for the scalars plugin."""
    tag = _check_tag(tag, "add_scalar")
    number = to_float(value, f"add_scalar({tag!r})")
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    if double_precision:
        proto = TensorProto(double_val=[number], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[number], dtype="DT_FLOAT")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=metadata)])


def histogram(tag: str, values: Any, bins: Any, max_bins: int | None = None) -> Summary:
    """The values' histogram (``bins`` as for ``numpy.histogram``)."""
    tag = _check_tag(tag, "add_histogram")
    array = to_values(values, f"add_histogram({tag!r})")
    return Summary(value=[Summary.Value(tag=tag, histo=make_histogram(array, bins, max_bins))])


def image(tag: str, img: Any, dataformats: str, what: str = "add_image") -> Summary:
    """One image (or a batch tiled into one), PNG-encoded."""
    tag = _check_tag(tag, what)
    hwc = to_hwc_uint8(img, dataformats, f"{what}({tag!r})")
    height, width, channels = hwc.shape
    encoded = Summary.Image(height=height, width=width, colorspace=channels,
                            encoded_image_string=encode_png(hwc))
    return Summary(value=[Summary.Value(tag=tag, image=encoded)])


def text(tag: str, text_string: str) -> Summary:
    """A string for the text plugin (shown as Markdown), under ``<tag>/text_summary``."""
    tag = _check_tag(tag, "add_text")
    if not isinstance(text_string, str):
        raise TypeError(f"add_text({tag!r}): text_string must be a string; got "
                        f"{type(text_string).__name__}")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                        tensor=proto)])


# -- hyperparameters (the hparams plugin) ----------------------------------------------------

_HPARAMS_PLUGIN = "hparams"


def _hparams_summary(tag: str, data: HParamsPluginData) -> Summary:
    data.version = 0
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name=_HPARAMS_PLUGIN, content=data.SerializeToString()))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata)])


def _hparam_kind(value: Any) -> str | None:
    # bool before numbers: True is an int to Python, but a bool to the hparams plugin
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (numbers.Real, ember.Tensor, np.ndarray)):
        return "number"
    return None


def hparams(hparam_dict: dict, metric_dict: dict,
            hparam_domain_discrete: dict | None = None) -> tuple[Summary, Summary, Summary]:
    """The experiment, session-start and session-end summaries of the hparams plugin."""
    if type(hparam_dict) is not dict or type(metric_dict) is not dict:
        raise TypeError("add_hparams: hparam_dict and metric_dict should be dictionaries")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("add_hparams: hparam_domain_discrete should be a dictionary")
    for name, choices in domains.items():
        if name not in hparam_dict or not isinstance(choices, list) or \
                not all(isinstance(c, type(hparam_dict[name])) for c in choices):
            raise TypeError(f"add_hparams: hparam_domain_discrete[{name!r}] should be a list "
                            f"of the same type as hparam_dict[{name!r}]")

    start, infos = SessionStartInfo(), []
    types = {"number": "DATA_TYPE_FLOAT64", "string": "DATA_TYPE_STRING",
             "bool": "DATA_TYPE_BOOL"}
    for name, value in hparam_dict.items():
        if value is None:
            continue
        kind = _hparam_kind(value)
        if kind is None:
            raise ValueError(f"add_hparams: hparam {name!r} should be an int, float, str, "
                             f"bool or one-element ember.Tensor; got {type(value).__name__}")
        if kind == "number":
            value = to_float(value, f"add_hparams: hparam {name!r}")
        elif kind == "bool":
            value = bool(value)
        setattr(start.hparams[name], f"{kind}_value", value)
        domain = None
        if name in domains:
            domain = struct_pb2.ListValue(values=[
                struct_pb2.Value(**{f"{kind}_value": c}) for c in domains[name]])
        infos.append(HParamInfo(name=name, type=DataType.Value(types[kind]),
                                domain_discrete=domain))
    metrics = [MetricInfo(name=MetricName(tag=name)) for name in metric_dict]
    experiment = Experiment(hparam_infos=infos, metric_infos=metrics)
    end = SessionEndInfo(status=SessionStatus.Value("STATUS_SUCCESS"))
    return (_hparams_summary("_hparams_/experiment", HParamsPluginData(experiment=experiment)),
            _hparams_summary("_hparams_/session_start_info",
                             HParamsPluginData(session_start_info=start)),
            _hparams_summary("_hparams_/session_end_info",
                             HParamsPluginData(session_end_info=end)))
