"""Dynamically quantized modules (`torch.ao.nn.quantized.dynamic`): qint8 weights, float
input and output; each call quantizes its input with qparams chosen from the input itself
(what `quantize_dynamic` puts in place of Linear and LSTM layers)."""

from __future__ import annotations

from typing import Any

import ember
from ember import nn
from ember.ao.nn.quantized import functional as qF
from ember.ao.nn.quantized.modules import Linear as _QuantizedLinear
from ember.ao.nn.quantized.modules import _quantize_weight
from ember.core.tensor import Tensor
from ember.nn.modules.rnn import RNNBase


class Linear(_QuantizedLinear):
    r"""A dynamically quantized linear layer: qint8 weight, float bias, float input and
    output (``DynamicQuantizedLinear`` in a printed model)."""

    _version = 4

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype: Any = ember.qint8) -> None:
        super().__init__(in_features, out_features, bias_, dtype=dtype)
        self.version = 4

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={self._packed_params.dtype}, qscheme={self.weight().qscheme()}")

    def forward(self, x: Tensor) -> Tensor:
        return qF.linear_dynamic(x, self.weight(), self.bias(), reduce_range=True)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Linear:
        """The dynamically quantized layer of a float linear layer (its weight observed by
        its qconfig's weight observer)."""
        weight_observer = mod.qconfig.weight()
        weight_observer(mod.weight)
        out = cls(mod.in_features, mod.out_features, dtype=weight_observer.dtype)
        out.set_weight_bias(_quantize_weight(mod.weight, weight_observer), mod.bias)
        return out


class LSTM(nn.Module):
    r"""A dynamically quantized LSTM (``DynamicQuantizedLSTM``): PyTorch's LSTM equations,
    each gate product a dynamically quantized linear with qint8 weights (the input
    projection over the whole sequence at once, the hidden one per step)."""

    _FLOAT_MODULE = nn.LSTM
    extra_repr = RNNBase.extra_repr

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype: Any = ember.qint8) -> None:
        super().__init__()
        if bidirectional:
            raise NotImplementedError("ember's DynamicQuantizedLSTM is unidirectional")
        self.mode = "LSTM"
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size, self.dtype = bidirectional, 0, dtype
        self._all_weight_values: list = []  # per layer: (w_ih, b_ih, w_hh, b_hh)

    def _get_name(self) -> str:
        return "DynamicQuantizedLSTM"

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        # PyTorch's keys (`_all_weight_values.0.param`, one per layer), each holding the
        # layer's (w_ih, b_ih, w_hh, b_hh) where PyTorch's holds its packed weights
        super()._save_to_state_dict(destination, prefix, keep_vars)
        for layer, values in enumerate(self._all_weight_values):
            destination[f"{prefix}_all_weight_values.{layer}.param"] = values

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        values = []
        for layer in range(self.num_layers):
            key = f"{prefix}_all_weight_values.{layer}.param"
            if key in state_dict:
                values.append(tuple(state_dict.pop(key)))
            else:
                missing_keys.append(key)
        if len(values) == self.num_layers:
            self._all_weight_values = values
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        x = input.transpose(0, 1) if self.batch_first else input
        unbatched = x.ndim == 2
        if unbatched:
            x = x.unsqueeze(1)
        steps, batch = x.shape[0], x.shape[1]
        if hx is None:
            zeros = ember.zeros(self.num_layers, batch, self.hidden_size, dtype=x.dtype,
                                device=x.device)
            hx = (zeros, zeros)
        elif unbatched:
            hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        h_n, c_n = [], []
        for layer, (w_ih, b_ih, w_hh, b_hh) in enumerate(self._all_weight_values):
            if layer and self.dropout and self.training:
                x = ember.nn.functional.dropout(x, self.dropout, True)
            gates_x = qF.linear_dynamic(x, w_ih, b_ih)
            h, c = hx[0][layer], hx[1][layer]
            outputs = []
            for t in range(steps):
                gates = gates_x[t] + qF.linear_dynamic(h, w_hh, b_hh)
                i, f, g, o = gates.chunk(4, 1)
                c = f.sigmoid() * c + i.sigmoid() * g.tanh()
                h = o.sigmoid() * c.tanh()
                outputs.append(h)
            x = ember.stack(outputs)
            h_n.append(h)
            c_n.append(c)
        h_n, c_n = ember.stack(h_n), ember.stack(c_n)
        if unbatched:
            x, h_n, c_n = x.squeeze(1), h_n.squeeze(1), c_n.squeeze(1)
        return (x.transpose(0, 1) if self.batch_first else x), (h_n, c_n)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> LSTM:
        """The dynamically quantized LSTM of a float one: each weight quantized per tensor
        by the qconfig's weight observer."""
        out = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
                  mod.dropout, mod.bidirectional)
        for layer in range(mod.num_layers):
            values = []
            for kind in ("ih", "hh"):
                weight = getattr(mod, f"weight_{kind}_l{layer}")
                observer = mod.qconfig.weight()
                observer(weight)
                bias = getattr(mod, f"bias_{kind}_l{layer}") if mod.bias else None
                values += [_quantize_weight(weight, observer),
                           None if bias is None else bias.detach().clone()]
            out._all_weight_values.append(tuple(values))
        return out
