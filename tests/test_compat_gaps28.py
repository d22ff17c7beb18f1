"""Known differences from PyTorch 2.13 (its CPU build is the oracle), closed: device
strings for a CUDA ember cannot use ..."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")

no_gpu = pytest.mark.skipif(ember.cuda.is_available() or torch.cuda.is_available(),
                            reason="a CUDA device is available here")


def _outcome(fn):
    """("ok", None) or (error type name, message) of `fn()`."""
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - the error is what is compared
        return type(err).__name__, str(err)
    return "ok", None


# == 1. devices this process cannot use =================================================

UNUSABLE_DEVICE_CALLS = [
    "m.zeros(2).to('cuda')", "m.zeros(2).to(m.device('cuda:0'))", "m.zeros(2).to(device='cuda')",
    "m.zeros(2, device='cuda')", "m.ones(2, device='cuda:1')", "m.tensor([1.0], device='cuda')",
    "m.randn(2, device='cuda')", "m.arange(2, device='cuda')", "m.empty(2, device='cuda')",
    "m.full((2,), 1.0, device='cuda')", "m.zeros_like(m.zeros(2), device='cuda')",
    "m.zeros(2).new_zeros(2, device='cuda')", "m.as_tensor([1.0], device='cuda')",
    "m.zeros(2).cuda()", "m.nn.Linear(2, 2).cuda()", "m.nn.Linear(2, 2).to('cuda')",
    "m.zeros(2).to('xpu')",
    "m.cuda.current_device()", "m.cuda.get_device_name()", "m.cuda.get_device_name(0)",
    "m.cuda.get_device_properties(0)", "m.cuda.get_device_capability()",
    "m.cuda.synchronize()", "m.cuda.init()", "m.cuda.mem_get_info()",
    "m.cuda.current_stream()", "m.cuda.Stream()", "m.cuda.Event()",
    "m.cuda.device(0).__enter__()",
]


@no_gpu
@pytest.mark.parametrize("call", UNUSABLE_DEVICE_CALLS)
def test_unusable_cuda_raises_torchs_cpu_build_error(call):
    try:
        mine = _outcome(lambda: eval(call, {"m": ember}))
        theirs = _outcome(lambda: eval(call, {"m": torch}))
    finally:
        ember.set_default_device(None)
        torch.set_default_device(None)
    assert mine[0] == theirs[0] != "ok"
    if theirs[0] == "AssertionError":
        assert mine == theirs


@no_gpu
def test_unusable_cuda_error_keeps_embers_reason_in_a_note():
    with pytest.raises(AssertionError) as info:
        ember.zeros(2, device="cuda")
    assert str(info.value) == "Torch not compiled with CUDA enabled"
    note = info.value.__notes__[0]
    assert note.startswith("device 'cuda' is not available: ") and "cpu: available" in note
    with pytest.raises(AssertionError) as info:
        ember.cuda.current_device()
    assert info.value.__notes__ and "CUDA" in info.value.__notes__[0] or "CuPy" in \
        info.value.__notes__[0]


def test_cuda_device_objects_need_no_gpu():
    for spec in ("cuda", "cuda:0", "cuda:3"):
        assert repr(ember.device(spec)) == repr(torch.device(spec))
    assert str(ember.device("cuda", 1)) == str(torch.device("cuda", 1)) == "cuda:1"


@no_gpu
def test_default_device_cuda_raises_at_the_first_factory():
    for m in (ember, torch):
        try:
            m.set_default_device("cuda")  # no error yet
            with pytest.raises(AssertionError) as info:
                m.zeros(2)
            assert str(info.value) == "Torch not compiled with CUDA enabled"
        finally:
            m.set_default_device(None)
    assert ember.zeros(1).device.type == "cpu"
