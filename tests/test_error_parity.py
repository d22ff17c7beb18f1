"""Errors word for word as PyTorch's: programs print `str(e)`, so each case below raises
the same exception type with the same message in ember as in PyTorch (the API name
printed as `ember.` reads `torch.` under `python -m ember.run`). What ember knows besides
(the op, the full shapes) rides in a PEP 678 note, checked for a sample of cases.

Each case is `case(lib)` with `lib` the `ember` or the `torch` module.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

import ember

torch = pytest.importorskip("torch")


def _nn(lib: Any) -> Any:
    return lib.nn


def _f(lib: Any) -> Any:
    return lib.nn.functional


def _backward_twice(lib: Any) -> None:
    y = (lib.ones(2, requires_grad=True) * 2).exp().sum()
    y.backward()
    y.backward()


def _setitem(key: Any, value_shape: tuple) -> Callable[[Any], None]:
    def case(lib: Any) -> None:
        x = lib.zeros(2, 3)
        x[key(lib) if callable(key) else key] = lib.ones(*value_shape)
    return case


CASES: dict[str, Callable[[Any], Any]] = {
    # nn modules and functionals
    "batchnorm_running_mean": lambda L: _nn(L).BatchNorm2d(3)(L.randn(2, 4, 5, 5)),
    "batch_norm_weight": lambda L: _f(L).batch_norm(L.randn(2, 4, 5), None, None,
                                                    L.ones(3), training=True),
    "batchnorm1d_batch_of_one": lambda L: _nn(L).BatchNorm1d(3)(L.randn(1, 3)),
    "layer_norm_shape": lambda L: _nn(L).LayerNorm(5)(L.randn(2, 4)),
    "group_norm_weight": lambda L: _f(L).group_norm(L.randn(2, 6, 3), 2, L.ones(4)),
    "group_norm_bias": lambda L: _f(L).group_norm(L.randn(2, 6, 3), 2, None, L.ones(4)),
    "groupnorm_init": lambda L: _nn(L).GroupNorm(4, 6),
    "max_pool2d_too_small": lambda L: _nn(L).MaxPool2d(3)(L.randn(1, 1, 2, 2)),
    "max_pool1d_too_small": lambda L: _f(L).max_pool1d(L.randn(1, 1, 2), 3),
    "max_pool1d_indices_too_small": lambda L: _f(L).max_pool1d(L.randn(1, 3, 2), 3,
                                                               return_indices=True),
    "avg_pool1d_too_small": lambda L: _f(L).avg_pool1d(L.randn(1, 1, 2), 3),
    "avg_pool3d_too_small": lambda L: _f(L).avg_pool3d(L.randn(1, 1, 2, 2, 2), 3),
    "max_pool3d_too_small": lambda L: _f(L).max_pool3d(L.randn(2, 1, 1, 2, 2), (1, 3, 3)),
    "max_pool2d_padding": lambda L: _f(L).max_pool2d(L.randn(1, 1, 5, 5), 3, padding=2),
    "max_pool1d_padding": lambda L: _f(L).max_pool1d(L.randn(1, 1, 2), 2, padding=2),
    "max_pool2d_dilated_padding": lambda L: _f(L).max_pool2d(L.randn(1, 3, 9, 9), 2,
                                                             padding=2, dilation=3),
    "conv2d_input_dims": lambda L: _nn(L).Conv2d(3, 4, 3)(L.randn(3, 5, 5, 5, 5)),
    "conv1d_input_dims": lambda L: _f(L).conv1d(L.randn(3, 3, 3, 3), L.randn(2, 3, 1)),
    "conv3d_unbatched_channels": lambda L: _nn(L).Conv3d(3, 4, 3)(L.randn(2, 3, 4, 4)),
    "conv2d_bias_dtype": lambda L: _nn(L).Conv2d(3, 4, 3)(L.randn(1, 3, 8, 8).double()),
    "conv2d_weight_dtype": lambda L: _f(L).conv2d(L.randn(1, 3, 8, 8).double(),
                                                  L.randn(4, 3, 3, 3)),
    "conv_transpose2d_dtype": lambda L: _f(L).conv_transpose2d(
        L.randn(1, 3, 8, 8).double(), L.randn(3, 4, 3, 3), L.randn(4)),
    "interpolate_size_length": lambda L: _f(L).interpolate(L.randn(1, 1, 4, 4), size=(2,)),
    "interpolate_scale_length": lambda L: _f(L).interpolate(L.randn(1, 1, 4, 4),
                                                            scale_factor=[2.0]),
    "softmax_long_lastdim": lambda L: _f(L).softmax(L.tensor([1, 2]), dim=0),
    "softmax_long_dim0": lambda L: _f(L).softmax(L.tensor([[1, 2]]), dim=0),
    "log_softmax_int": lambda L: _f(L).log_softmax(L.tensor([[1, 2]]).int(), dim=1),
    "label_smoothing": lambda L: _f(L).cross_entropy(L.randn(2, 3), L.tensor([0, 1]),
                                                     label_smoothing=2.0),
    "unflatten_sizes": lambda L: _nn(L).Unflatten(1, (2, 2))(L.randn(2, 3)),
    "unflatten_empty": lambda L: L.randn(2, 3).unflatten(1, ()),
    # indexing, shapes and views
    "too_many_indices": lambda L: L.randn(2, 3)[0, 0, 0],
    "float_index": lambda L: L.randn(2, 3)[1.5],
    "split_zero": lambda L: L.randn(2, 3).split(0),
    "split_negative": lambda L: L.randn(2, 3).split(-1),
    "chunk_zero": lambda L: L.randn(2, 3).chunk(0),
    "repeat_too_few": lambda L: L.randn(2, 3).repeat(2),
    "narrow_past_end": lambda L: L.randn(2, 3).narrow(1, 2, 3),
    "narrow_start": lambda L: L.randn(2, 3).narrow(1, -5, 1),
    "gather_bounds": lambda L: L.randn(2, 3).gather(1, L.tensor([[5]])),
    "scatter_bounds": lambda L: L.zeros(3).scatter_(0, L.tensor([3]), 1.0),
    "scatter_add_bounds": lambda L: L.zeros(3).scatter_add_(0, L.tensor([3]), L.ones(1)),
    "permute_duplicate": lambda L: L.randn(2, 3).permute(0, -2),
    "permute_length": lambda L: L.randn(2, 3).permute(0, 1, 2),
    "expand_too_few": lambda L: L.randn(2, 3).double().expand(3),
    "expand_leading_minus_one": lambda L: L.randn(2, 3).expand(-1, 2, 3),
    "setitem_basic_rank": _setitem(0, (2, 3)),
    "setitem_basic_size": _setitem(slice(0, 1), (2,)),
    "setitem_advanced": _setitem(lambda L: L.tensor([0, 1]), (4,)),
    "setitem_true": _setitem(True, (7,)),
    "reshape_bad_size": lambda L: L.ones(6).reshape(-1, -2, -5),
    "reshape_two_inferred": lambda L: L.ones(6).reshape(-1, -1, -2),
    "cat_nothing": lambda L: L.cat([]),
    "concat_nothing": lambda L: L.concat(()),
    # reductions, dtypes, devices
    "sum_dim_str": lambda L: L.randn(2, 3).sum(dim="x"),
    "mean_dim_float": lambda L: L.randn(2, 3).mean(dim=1.5),
    "amax_dim_str": lambda L: L.randn(2, 3).amax(dim="x"),
    "mean_dtype_long": lambda L: L.randn(2, 3).mean(dtype=L.int64),
    "mean_of_long": lambda L: L.randn(2).long().mean(),
    "add_float_into_long": lambda L: L.ones(2, dtype=L.long).add_(L.ones(2)),
    "div_into_long": lambda L: L.ones(2, dtype=L.long).div_(2),
    "unknown_device": lambda L: L.zeros(2, device="gpu"),
    "where_condition": lambda L: L.where(L.ones(2), L.ones(2), L.zeros(2)),
    "mm_vector": lambda L: L.mm(L.randn(2, 3), L.randn(2)),
    "bmm_batch1": lambda L: L.bmm(L.randn(2, 3), L.randn(2, 3, 4)),
    "bmm_sizes": lambda L: L.bmm(L.randn(2, 3, 4), L.randn(3, 4, 5)),
    "inplace_broadcast": lambda L: L.ones(2, 3).mul_(L.ones(4, 2, 3)),
    "masked_select_shapes": lambda L: L.randn(2, 3).masked_select(L.ones(3, 3, dtype=L.bool)),
    "clamp_nothing": lambda L: L.randn(2, 3).clamp(),
    "bce_target_dtype": lambda L: _f(L).binary_cross_entropy(L.rand(2), L.rand(2).double()),
    "gru_hidden_dtype": lambda L: _nn(L).GRU(4, 8)(L.randn(3, 2, 4), L.zeros(1, 2, 8).double()),
    "gather_dims": lambda L: L.randn(2, 3).gather(1, L.tensor([0])),
    "index_add_source_shape": lambda L: L.randn(2, 3).index_add_(0, L.tensor([0]),
                                                                 L.ones(1, 4)),
    "index_add_count": lambda L: L.randn(2, 3).index_add_(0, L.tensor([0]), L.ones(2, 3)),
    "masked_fill_value_dims": lambda L: L.randn(2, 3).masked_fill(
        L.zeros(2, 3, dtype=L.bool), L.ones(2)),
    "pad_sequence_sizes": lambda L: L.nn.utils.rnn.pad_sequence([L.ones(2, 3), L.ones(2, 4)]),
    "pad_sequence_broadcast": lambda L: L.nn.utils.rnn.pad_sequence([L.ones(2, 1),
                                                                     L.ones(2, 3)]),
    "from_numpy_list": lambda L: L.from_numpy([1, 2]),
    # tensor creation
    "linspace_negative": lambda L: L.linspace(0, 1, -1),
    "tensor_of_str": lambda L: L.tensor(["a"]),
    "tensor_str_leaf": lambda L: L.tensor([1, "a"]),
    "tensor_str_scalar": lambda L: L.tensor("a"),
    "tensor_of_none": lambda L: L.tensor([1, None]),
    "tensor_ragged": lambda L: L.tensor([[1, 2], [3]]),
    "tensor_int_then_list": lambda L: L.tensor([1, [2]]),
    "tensor_float_then_list": lambda L: L.tensor([1.0, [2]]),
    # autograd, conversions, optimizers and data (ember already agreed: kept so)
    "backward_twice": _backward_twice,
    "backward_non_scalar": lambda L: (L.ones(2, requires_grad=True) * 2).backward(),
    "backward_no_grad": lambda L: L.ones(2).sum().backward(),
    "inplace_on_leaf": lambda L: L.ones(2, requires_grad=True).add_(1),
    "long_requires_grad": lambda L: L.ones(2, dtype=L.long, requires_grad=True),
    "item_of_many": lambda L: L.randn(3).item(),
    "int_of_many": lambda L: int(L.randn(3)),
    "bool_of_many": lambda L: bool(L.randn(3)),
    "sgd_negative_lr": lambda L: L.optim.SGD([_nn(L).Parameter(L.ones(2))], lr=-0.1),
    "sgd_empty": lambda L: L.optim.SGD([], lr=0.1),
    "sgd_nesterov": lambda L: L.optim.SGD([_nn(L).Parameter(L.ones(2))], lr=0.1,
                                          nesterov=True),
    "adam_betas": lambda L: L.optim.Adam([_nn(L).Parameter(L.ones(2))], betas=(1.5, 0.9)),
    "dataloader_batch_zero": lambda L: L.utils.data.DataLoader(
        L.utils.data.TensorDataset(L.arange(4.0)), batch_size=0),
    "dataloader_sampler_shuffle": lambda L: L.utils.data.DataLoader(
        L.utils.data.TensorDataset(L.arange(4.0)), sampler=range(4), shuffle=True),
    "mha_heads": lambda L: _nn(L).MultiheadAttention(10, 3),
    "embedding_range": lambda L: _nn(L).Embedding(3, 2)(L.tensor([3])),
    "cross_entropy_target": lambda L: _nn(L).CrossEntropyLoss()(L.randn(2, 3),
                                                                L.tensor([0, 3])),
    "linear_shapes": lambda L: _nn(L).Linear(4, 3)(L.randn(2, 5)),
    "lstm_hidden": lambda L: _nn(L).LSTM(4, 8)(L.randn(3, 2, 4), (L.zeros(1, 2, 8),
                                                                 L.zeros(1, 3, 8))),
}


# PyTorch's words where running PyTorch is slow (its meta kernels load torch._refs: 5 s)
LITERAL: dict[str, tuple[Callable[[Any], Any], type, str]] = {
    "meta_and_cpu": (lambda L: L.tensor([1, 2]) + L.tensor([1.0], device="meta"),
                     RuntimeError, "Tensor on device meta is not on the expected device cpu!"),
    "cpu_and_meta": (lambda L: L.ones(2, device="meta") * L.ones(2),
                     RuntimeError, "Tensor on device cpu is not on the expected device meta!"),
}


def _raised(lib: Any, case: Callable[[Any], Any]) -> BaseException:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            case(lib)
        except Exception as exc:  # noqa: BLE001 - what it raised is the result
            return exc
    raise AssertionError(f"{lib.__name__} raised nothing")


@pytest.mark.parametrize("name", list(CASES))
def test_error_is_torchs_word_for_word(name):
    expected, got = _raised(torch, CASES[name]), _raised(ember, CASES[name])
    assert type(got).__name__ == type(expected).__name__, (got, expected)
    assert str(got).replace("ember.", "torch.") == str(expected)


@pytest.mark.parametrize("name", list(LITERAL))
def test_error_is_torchs_literal_text(name):
    case, kind, text = LITERAL[name]
    got = _raised(ember, case)
    assert type(got) is kind and str(got) == text


# ember's context rides in the note: (case, text the note holds)
NOTES = {
    "batchnorm_running_mean": "batch_norm: input of shape (2, 4, 5, 5) has 4 channels",
    "layer_norm_shape": "layer_norm: input of shape (2, 4)",
    "max_pool2d_too_small": "max_pool2d: input of shape (1, 1, 2, 2)",
    "conv2d_input_dims": "conv2d: weight of shape (4, 3, 3, 3)",
    "too_many_indices": "index: 3 indices for a tensor of shape (2, 3)",
    "gather_bounds": "gather: index of shape (1, 1)",
    "meta_and_cpu": "add: operands on cpu and meta",
    "add_float_into_long": "add_: a ember.float32 result into a ember.int64 tensor",
    "narrow_past_end": "narrow: dim 1 of shape (2, 3)",
    "unknown_device": "unknown device type 'gpu'",
    "softmax_long_lastdim": "softmax: a ember.int64 input",
    "bmm_sizes": "bmm: shapes",
}


@pytest.mark.parametrize("name", list(NOTES))
def test_note_keeps_embers_context(name):
    err = _raised(ember, CASES[name] if name in CASES else LITERAL[name][0])
    notes = getattr(err, "__notes__", [])
    assert any(NOTES[name] in note for note in notes), notes
    assert NOTES[name] not in str(err)


def test_transformer_encoder_warns_why_it_would_not_nest():
    def warned(lib: Any) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layer = lib.nn.TransformerEncoderLayer(8, 2)
            lib.nn.TransformerEncoder(layer, 2)
            lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, batch_first=True),
                                      1)
        return [str(w.message) for w in caught if "nested" in str(w.message)]
    assert warned(ember) == warned(torch)
    assert len(warned(ember)) == 1


def _sgd(lib: Any) -> Any:
    return lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=1.0)


WARNINGS: dict[str, Callable[[Any], Any]] = {
    "non_leaf_grad": lambda L: (L.ones(2, requires_grad=True) * 2).grad,
    "upsample": lambda L: _f(L).upsample(L.ones(1, 1, 2, 2), scale_factor=2),
    "scheduler_first": lambda L: L.optim.lr_scheduler.StepLR(_sgd(L), 1).step(),
    "softmax_implicit_dim": lambda L: _f(L).softmax(L.ones(2, 3)),
}


@pytest.mark.parametrize("name", list(WARNINGS))
def test_warning_is_torchs(name):
    def warned(lib: Any) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            WARNINGS[name](lib)
        # (PyTorch's C++ warnings end with where they were raised in its build)
        return [str(w.message).split(" (Triggered internally at")[0] for w in caught]
    got, expected = warned(ember), warned(torch)
    assert expected and got == expected
