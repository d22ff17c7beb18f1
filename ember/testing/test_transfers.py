"""Moving tensors between devices: `Tensor.cpu()`, `Tensor.to(device)` and `Tensor.cuda()`
from and to the device under test, and `ember.from_numpy` (a CPU tensor over a NumPy
array's memory, whatever the device under test).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import support as S
from ember.testing.plugin import available_devices


def test_cpu_and_back(device: ember.device) -> None:
    arr = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = S.on(device, arr)
    h = x.cpu()
    S.assert_matches(h, arr, "cpu", dtype=ember.int32, what="cpu()")
    if device.type == "cpu":
        assert h is x, "cpu() of a CPU tensor is the tensor itself"
    back = h.to(device)
    S.assert_matches(back, arr, device, dtype=ember.int32, what="to(device)")
    S.assert_matches(x.t().cpu(), arr.T, "cpu", what="cpu() of a strided view")
    both = x.to("cpu", ember.float64)  # device and dtype at once
    S.assert_matches(both, arr, "cpu", dtype=ember.float64, what="to('cpu', float64)")
    # the gradient comes back to the device (opinfo's `to_device` entry checks the values)
    w = S.on(device, np.array([1.0, -2.0]), requires_grad=True)
    (w.cpu() * 3).sum().backward()
    S.assert_matches(w.grad, [3.0, 3.0], device, what="gradient through cpu()")


def test_cuda_moves_or_says_why() -> None:
    """`Tensor.cuda()`: onto cuda:0 where a CUDA device is available, else PyTorch's CPU
    build's error, with why in a note (not a silent CPU tensor)."""
    x = ember.tensor([1.5, -2.0])
    if any(d.type == "cuda" for d in available_devices()):
        y = x.cuda()
        S.assert_matches(y, [1.5, -2.0], ember.device("cuda", 0), what="cuda()")
        assert y.cuda() is y
    else:
        with pytest.raises(AssertionError) as info:
            x.cuda()
        assert str(info.value) == "Torch not compiled with CUDA enabled"
        assert "cuda" in info.value.__notes__[0]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int64", "int32", "int16",
                                   "int8", "uint8", "bool"])
def test_from_numpy_shares_memory(dtype: str) -> None:
    arr = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    t = ember.from_numpy(arr)
    S.assert_matches(t, arr, "cpu", dtype=getattr(ember, dtype), what="from_numpy")
    arr[0, 1] = arr[0, 0]
    assert t[0, 1].item() == arr[0, 0].item(), "a write to the array shows in the tensor"
    t[1, 2] = 1
    assert arr[1, 2] == 1, "a write to the tensor shows in the array"


def test_from_numpy_of_a_strided_array() -> None:
    arr = np.arange(12.0).reshape(3, 4)
    S.assert_matches(ember.from_numpy(arr.T), arr.T, "cpu", what="transposed")
    S.assert_matches(ember.from_numpy(arr[::2, 1:]), arr[::2, 1:], "cpu", what="sliced")


def test_from_dlpack_shares_memory() -> None:
    """`ember.from_dlpack` of a NumPy array: a CPU tensor over its memory, and back."""
    arr = np.arange(6.0).reshape(2, 3)
    t = ember.from_dlpack(arr)
    S.assert_matches(t, arr, "cpu", dtype=ember.float64, what="from_dlpack")
    arr[0, 1] = 9
    assert t[0, 1].item() == 9, "a write to the array shows in the tensor"
    back = np.from_dlpack(t)
    back[1, 2] = -1
    assert t[1, 2].item() == -1 and arr[1, 2] == -1, "the tensor exports its own memory"
    assert ember.from_dlpack(t) is t


def test_dlpack_round_trip(device: ember.device) -> None:
    """A tensor of the device under test through a DLPack capsule and back: the same values
    (on its own device for CPU and CUDA memory; other memory is host memory to DLPack)."""
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = S.on(device, arr)
    try:
        capsule = ember.utils.dlpack.to_dlpack(x)
    except BufferError as err:
        pytest.skip(f"{device.type} tensors do not export DLPack ({err})")
    y = ember.utils.dlpack.from_dlpack(capsule)
    expected = x.device if device.type in ("cpu", "cuda") else y.device
    S.assert_matches(y, arr, expected, dtype=ember.float32, what="DLPack round trip")


# -- what this module checks (ember.testing.test_coverage reads it) ---------------------

# `cuda`, `from_numpy` and `from_dlpack` do not depend on the device under test: they run
# once
COVERS = {"cpu", "cuda", "to", "to_device", "from_numpy", "from_dlpack"}
"""The declared ops whose values this module's tests check."""
