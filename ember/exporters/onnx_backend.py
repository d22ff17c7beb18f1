"""An ONNX backend (`onnx.backend.base.Backend`) that runs models with `ember.onnx.load`,
so that ONNX's own backend test suite (`onnx.backend.test.BackendTest`) can test ember.

    import onnx.backend.test
    from ember.exporters.onnx_backend import EmberBackend
    tests = onnx.backend.test.BackendTest(EmberBackend.on("opencl"), __name__)

ONNX's "CPU" device maps to the ember device the class was made for (`on(device)`;
default "cpu"); ONNX's "CUDA" is supported when ember's "cuda" device is available.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx.backend.base as base

import ember
from ember.core.host import host_array
from ember.exporters.onnx_import import load
from ember.exporters.onnx_import_context import from_array, held_numpy
from ember.exporters.onnx_import_strings import host_strings, is_strings

__all__ = ["EmberBackend", "EmberRep"]


class EmberRep(base.BackendRep):
    """A loaded model, ready to run on NumPy inputs."""

    def __init__(self, module: Any, device: str) -> None:
        self.module = module
        self.device = device

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        """Run on `inputs` (a list in the graph's input order, or a dict by name); returns
        the outputs as NumPy arrays."""
        if isinstance(inputs, dict):
            given = {k: self._tensor(v) for k, v in inputs.items()}
            args: list = []
        else:
            inputs = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            args = [self._tensor(v) for v in inputs]
            given = {}
        with ember.no_grad():
            out = self.module(*args, **given)
        outs = out if isinstance(out, tuple) else (out,)
        arrays = [_numpy(o) for o in outs]
        for i, elem_type in enumerate(self.module.output_types[:len(arrays)]):
            held = held_numpy(elem_type) if elem_type is not None else None
            if held is not None:  # hand back the narrow type ember held in a wider one
                arrays[i] = arrays[i].astype(held)
        return tuple(arrays)

    def _tensor(self, value: Any) -> Any:
        if value is None or isinstance(value, list):  # an optional, a sequence
            return None if value is None else [self._tensor(v) for v in value]
        value = np.asarray(value)
        if is_strings(value):  # strings stay host values (`onnx_import_strings`)
            return host_strings(value)
        t = from_array(value)
        return t.to(self.device) if self.device != "cpu" else t


def _numpy(value: Any) -> Any:
    if isinstance(value, list):
        return [_numpy(v) for v in value]
    return host_array(value) if isinstance(value, ember.Tensor) else value


class EmberBackend(base.Backend):
    """Runs ONNX models with ember (see the module's docstring)."""

    ember_device = "cpu"

    @classmethod
    def on(cls, device: str) -> type[EmberBackend]:
        """This backend, running on the ember `device` ("cpu", "opencl", ...)."""
        return type(f"EmberBackend_{device.replace(':', '_')}", (cls,),
                    {"ember_device": device})

    @classmethod
    def _device(cls, device: str) -> str:
        return "cuda" if str(device).upper().startswith("CUDA") else cls.ember_device

    @classmethod
    def supports_device(cls, device: str) -> bool:
        if str(device).upper().startswith("CUDA"):
            try:
                return ember.cuda.is_available()
            except Exception:  # no CUDA backend at all
                return False
        return True

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> EmberRep:
        super().prepare(model, device, **kwargs)
        target = cls._device(device)
        return EmberRep(load(model, device=target), target)

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple:
        return cls.prepare(model, device, **kwargs).run(inputs)
