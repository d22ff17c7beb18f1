"""`ember.backends.cuda.matmul`, as `torch.backends.cuda.matmul`: cuBLAS's switches that
scripts set. Plain Python state: reading or setting a flag never imports CuPy. The CUDA
kernels read `allow_tf32` at every float32 matmul; as in PyTorch, it is the same switch as
`ember.set_float32_matmul_precision` ("high" or "medium": TF32 allowed)."""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

from ember.core import backend as contract


class cuBLASModule:  # noqa: N801 - PyTorch's name
    """cuBLAS's flags. `allow_tf32` (default False) lets float32 matmuls use TF32 tensor
    cores; the reduced-precision reductions (default True) are cuBLAS's own default for
    float16 (CuPy accumulates float16 products in float32 either way)."""

    _DEFAULTS = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                 "allow_bf16_reduced_precision_reduction": True,
                 "allow_fp16_accumulation": False}

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._DEFAULTS))

    def __getattr__(self, name: str) -> Any:
        if name == "allow_tf32":  # the same switch as ember.set_float32_matmul_precision
            return contract.get_float32_matmul_precision() != "highest"
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._DEFAULTS:
            raise AttributeError("Unknown attribute " + name)
        if name == "allow_tf32":
            if not isinstance(value, bool):
                raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got "
                                   f"{type(value).__name__}")
            contract.set_float32_matmul_precision("high" if value else "highest")
            return
        if name.endswith("_reduction"):
            if isinstance(value, (list, tuple)) and value and isinstance(value[0], bool):
                value = value[0]
            elif not isinstance(value, bool):
                raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got "
                                f"{type(value)!r}")
        elif not isinstance(value, bool):
            raise TypeError(f"{name} expects a bool, but got {type(value)!r}")
        self._values[name] = value


matmul = cuBLASModule()


# -- scaled_dot_product_attention's kernels (the switches live in the contract) ---------
def flash_sdp_enabled() -> bool:
    """Whether scaled_dot_product_attention may use the flash attention kernel."""
    return contract.sdp_use("flash")


def enable_flash_sdp(enabled: bool) -> None:
    """Allow or forbid the flash attention kernel to scaled_dot_product_attention."""
    contract.set_sdp_use("flash", enabled)


def mem_efficient_sdp_enabled() -> bool:
    """Whether scaled_dot_product_attention may use the memory-efficient kernel."""
    return contract.sdp_use("mem_efficient")


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Allow or forbid the memory-efficient kernel to scaled_dot_product_attention."""
    contract.set_sdp_use("mem_efficient", enabled)


def math_sdp_enabled() -> bool:
    """Whether scaled_dot_product_attention may use the math (reference) kernel."""
    return contract.sdp_use("math")


def enable_math_sdp(enabled: bool) -> None:
    """Allow or forbid the math kernel to scaled_dot_product_attention."""
    contract.set_sdp_use("math", enabled)


def cudnn_sdp_enabled() -> bool:
    """Whether scaled_dot_product_attention may use the cuDNN kernel."""
    return contract.sdp_use("cudnn")


def enable_cudnn_sdp(enabled: bool) -> None:
    """Allow or forbid the cuDNN kernel to scaled_dot_product_attention."""
    contract.set_sdp_use("cudnn", enabled)


def is_flash_attention_available() -> bool:
    """Whether a CUDA flash attention kernel is built in (ember has none: its attention
    is the math one on every backend)."""
    return False


def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True,
               enable_cudnn: bool = True) -> contextlib.AbstractContextManager[dict]:
    """Deprecated context manager that allows only the chosen scaled_dot_product_attention
    kernels inside, restoring the switches on exit (`nn.attention.sdpa_kernel` is its
    successor). As PyTorch's, it warns when called."""
    api = contract.api_name()
    warnings.warn(f"`{api}.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  f"context manager will be removed. Please see `{api}.nn.attention."
                  "sdpa_kernel()` for the new context manager, with updated signature.",
                  FutureWarning, stacklevel=2)
    chosen = {"flash": enable_flash, "mem_efficient": enable_mem_efficient,
              "math": enable_math, "cudnn": enable_cudnn}
    return contract.sdp_kernels_only([k for k, on in chosen.items() if on])
