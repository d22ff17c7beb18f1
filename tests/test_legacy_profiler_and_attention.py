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


def _sdp_switches(lib) -> tuple[bool, ...]:
    b = lib.backends.cuda
    return (b.flash_sdp_enabled(), b.mem_efficient_sdp_enabled(), b.math_sdp_enabled(),
            b.cudnn_sdp_enabled())


def test_sdpa_kernel_sets_torchs_switches_and_restores_them() -> None:
    for lib in (torch, ember):
        A = lib.nn.attention
        assert _sdp_switches(lib) == (True, True, True, True)
        with A.sdpa_kernel(A.SDPBackend.MATH) as bound:
            assert bound == {}
            assert _sdp_switches(lib) == (False, False, True, False)
            with A.sdpa_kernel([A.SDPBackend.FLASH_ATTENTION, A.SDPBackend.CUDNN_ATTENTION]):
                assert _sdp_switches(lib) == (True, False, False, True)
            assert _sdp_switches(lib) == (False, False, True, False)
        assert _sdp_switches(lib) == (True, True, True, True)
        lib.backends.cuda.enable_flash_sdp(False)
        lib.backends.cuda.enable_math_sdp(False)
        assert _sdp_switches(lib) == (False, True, False, True)
        lib.backends.cuda.enable_flash_sdp(True)
        lib.backends.cuda.enable_math_sdp(True)
        assert lib.backends.cuda.is_flash_attention_available() is False


def test_sdp_switch_errors_are_torchs() -> None:
    for name in ("flash", "mem_efficient", "math", "cudnn"):
        messages = []
        for lib in (torch, ember):
            with pytest.raises(RuntimeError) as info:
                getattr(lib.backends.cuda, f"enable_{name}_sdp")(1)
            messages.append(str(info.value))
        assert messages[1] == messages[0], name
    assert _sdp_switches(ember) == (True, True, True, True)


def test_deprecated_sdp_kernel_warns_and_switches_as_torch() -> None:
    seen = []
    for lib in (torch, ember):
        with pytest.warns(FutureWarning, match=r"backends\.cuda\.sdp_kernel\(\)` is deprecated"):
            context = lib.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False)
        with context as bound:
            seen.append((bound, _sdp_switches(lib)))
        seen.append(_sdp_switches(lib))
    assert seen[2:] == seen[:2] == [({}, (False, False, True, True)), (True, True, True, True)]


@pytest.mark.parametrize("kernels, dropout_p, v_dim", [
    ("math", 0.0, 4), ("flash", 0.0, 4), ("mem_efficient", 0.0, 4), ("cudnn", 0.0, 4),
    ("", 0.0, 4), ("flash", 0.5, 4), ("flash", 0.0, 8), ("math", 0.0, 8)])
def test_attention_refuses_as_torch_when_no_cpu_kernel_is_on(kernels, dropout_p, v_dim) -> None:
    import warnings

    outcomes = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        q = lib.randn(1, 2, 3, 4)
        v = lib.randn(1, 2, 3, v_dim)
        backends = [getattr(lib.nn.attention.SDPBackend, {
            "math": "MATH", "flash": "FLASH_ATTENTION", "mem_efficient": "EFFICIENT_ATTENTION",
            "cudnn": "CUDNN_ATTENTION"}[k]) for k in kernels.split()]
        with warnings.catch_warnings(record=True) as caught, \
                lib.nn.attention.sdpa_kernel(backends):
            warnings.simplefilter("always")
            try:
                out = lib.nn.functional.scaled_dot_product_attention(q, q, v, dropout_p=dropout_p)
                outcomes.append(("ok", tuple(out.shape)))
            except RuntimeError as err:
                outcomes.append((str(err), [str(w.message) for w in caught
                                            if w.category is UserWarning]))
    if outcomes[0][1] and outcomes[0][0] != "ok":  # torch also says where it was triggered
        outcomes[0] = (outcomes[0][0], [m.split(" (Triggered internally")[0]
                                        for m in outcomes[0][1]])
    assert outcomes[1] == outcomes[0]
    assert _sdp_switches(ember) == (True, True, True, True)
