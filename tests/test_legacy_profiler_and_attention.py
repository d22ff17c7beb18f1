"""`ember.autograd.profiler` (PyTorch's older profiler API) and `ember.nn.attention`
(`sdpa_kernel`, `SDPBackend`) against torch."""
from __future__ import annotations

import pytest

import ember
from ember.nn.attention import SDPBackend, sdpa_kernel

torch = pytest.importorskip("torch")


def test_the_older_profiler_records_ops_and_ranges() -> None:
    model = ember.nn.Linear(4, 2)
    x = ember.randn(3, 4)
    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        with ember.autograd.profiler.record_function("forward_pass"):
            model(x)
    table = prof.key_averages().table(sort_by="self_cpu_time_total")
    assert "forward_pass" in table and "ember::linear" in table
    assert prof.table(sort_by="cpu_time_total") == \
        prof.key_averages().table(sort_by="cpu_time_total")
    names = {e.name for e in prof.function_events}
    assert {"forward_pass", "ember::linear"} <= names
    assert prof.self_cpu_time_total > 0
    assert prof.total_average().count == len(prof.function_events)


def test_a_disabled_older_profiler_records_nothing() -> None:
    errors = []
    for lib in (ember, torch):
        with lib.autograd.profiler.profile(enabled=False) as prof:
            lib.ones(2) + 1
        with pytest.raises(AttributeError) as info:
            _ = prof.function_events
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_sdpa_backends_are_torchs() -> None:
    from torch.nn.attention import SDPBackend as TorchBackend

    assert [(m.name, int(m)) for m in SDPBackend] == \
        [(m.name, int(m)) for m in TorchBackend.__members__.values()]
    assert str(SDPBackend.MATH) == str(TorchBackend.MATH)
    assert repr(SDPBackend.FLASH_ATTENTION) == repr(TorchBackend.FLASH_ATTENTION)


def test_sdpa_kernel_runs_attention_and_checks_its_argument() -> None:
    q = ember.randn(1, 2, 3, 4)
    with sdpa_kernel(SDPBackend.MATH):
        inside = ember.nn.functional.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
        pass
    assert ember.equal(inside, ember.nn.functional.scaled_dot_product_attention(q, q, q))
    messages = []
    for lib in (ember, torch):
        with pytest.raises(AssertionError) as info:
            with lib.nn.attention.sdpa_kernel("math"):
                pass
        messages.append(str(info.value))
    assert messages[0] == messages[1]
