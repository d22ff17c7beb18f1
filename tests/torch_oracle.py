"""Run one piece of code in ember and in PyTorch and compare what comes out, for the
fuzz tests (test_fuzz_divergences.py, test_fuzz_ops.py).

A case is a function `case(lib, T)`: `lib` is `ember` or `torch`, `T(values, **kw)` makes
a tensor (on the device under test for ember). It returns a tensor, a tuple of them, or a
plain value; or it raises.

    from torch_oracle import DEVICES, outcomes, assert_same

    @pytest.mark.parametrize("device", DEVICES)
    def test_x(device):
        assert_same(lambda lib, T: T([1.0, 2.0]).sigmoid(), device)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember.core import plugins


def _opencl_usable() -> bool:
    try:
        import pyopencl  # noqa: F401
    except ImportError:
        return False
    backend = plugins.get_backend("opencl")
    return backend is not None and plugins.safe_unavailable_reason(backend) is None


DEVICES = ["cpu"] + (["opencl"] if _opencl_usable() else [])
"""The devices the fuzz tests run ember on: the CPU, and OpenCL (PoCL in CI) if usable."""


class Raised:
    """What a case raised: the exception's type name and its message."""

    def __init__(self, exc: BaseException) -> None:
        # (torch.linalg.LinAlgError's class is torch._C._LinAlgError)
        self.type = type(exc).__name__.lstrip("_")
        # (with ember's notes: the op and shapes it adds beside PyTorch's message)
        self.message = "\n".join([str(exc), *getattr(exc, "__notes__", ())])
        self.exc = exc

    def __repr__(self) -> str:
        return f"{self.type}({self.message[:200]!r})"


def _maker(lib: Any, device: str) -> Callable[..., Any]:
    def make(values: Any, **kw: Any) -> Any:
        if lib is ember:
            return ember.tensor(values, device=device, **kw)
        return lib.tensor(values, **kw)
    return make


def run(lib: Any, case: Callable[..., Any], device: str = "cpu") -> Any:
    """The case's result in `lib`, or a Raised."""
    try:
        return case(lib, _maker(lib, device))
    except Exception as exc:  # noqa: BLE001 - what it raised is the result
        return Raised(exc)


def outcomes(case: Callable[..., Any], device: str = "cpu") -> tuple[Any, Any]:
    """(ember's result, torch's result) of one case."""
    import torch
    return run(ember, case, device), run(torch, case)


def host(t: Any) -> np.ndarray:
    """A tensor of either library as a NumPy array (bfloat16 as float32)."""
    if isinstance(t, ember.Tensor):
        t = t.detach().cpu()
        if t.dtype is ember.bfloat16:
            t = t.float()
        return t.numpy()
    t = t.detach()
    if str(t.dtype) == "torch.bfloat16":
        t = t.float()
    return t.numpy()


def dtype_name(d: Any) -> str:
    return str(d).split(".")[-1]


def assert_values(e: Any, t: Any, rtol: float = 1e-5, atol: float = 1e-6,
                  what: str = "") -> None:
    """Same shape, dtype and values (NaN where torch has NaN; infinities equal)."""
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(e) == len(t), f"{what}: {e!r} vs {t!r}"
        for i, (a, b) in enumerate(zip(e, t)):
            assert_values(a, b, rtol, atol, f"{what}[{i}]")
        return
    if not hasattr(t, "dtype"):  # a plain value: shapes, dtypes, numbers
        if isinstance(t, float) and np.isnan(t):
            assert isinstance(e, float) and np.isnan(e), f"{what}: {e!r} vs nan"
        else:
            assert str(e).replace("ember.", "").replace("torch.", "") == \
                str(t).replace("ember.", "").replace("torch.", ""), f"{what}: {e!r} vs {t!r}"
        return
    assert isinstance(e, ember.Tensor), f"{what}: ember gave {e!r}, torch a tensor {t!r}"
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} vs {tuple(t.shape)}"
    assert dtype_name(e.dtype) == dtype_name(t.dtype), f"{what}: dtype {e.dtype} vs {t.dtype}"
    a, b = host(e), host(t)
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True, err_msg=what)


def assert_same(case: Callable[..., Any], device: str = "cpu", *, rtol: float = 1e-5,
                atol: float = 1e-6, match: str | None = None) -> Any:
    """ember and torch agree on `case`: the same values (see assert_values), or the same
    exception type; `match`, a substring ember's message must hold when both raise (by
    default torch's message). Returns ember's result."""
    e, t = outcomes(case, device)
    if isinstance(t, Raised) or isinstance(e, Raised):
        assert isinstance(e, Raised) and isinstance(t, Raised), f"ember: {e!r}; torch: {t!r}"
        assert e.type == t.type, f"ember raised {e!r}, torch {t!r}"
        expected = t.message if match is None else match
        assert expected in e.message, f"ember's message {e.message!r} lacks {expected!r}"
        return e
    assert_values(e, t, rtol, atol, f"on {device}")
    return e
