"""`torch.autograd.graph`: hooks on the tensors autograd saves for backward
(`saved_tensors_hooks`, `save_on_cpu`, `disable_saved_tensors_hooks`) and the graph's
`Node` class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core import graph as _graph
from ember.core.graph import Node
from ember.core.tensor import Tensor

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    r"""Context manager: every tensor an op saves for backward inside it is kept as
    ``pack_hook(tensor)``, and given back to the backward pass as
    ``unpack_hook(packed)`` (which must return a tensor of the saved one's values).

    Args:
        pack_hook (Callable): tensor -> anything.
        unpack_hook (Callable): what ``pack_hook`` returned -> a tensor.

    Example::

        >>> with ember.autograd.graph.saved_tensors_hooks(lambda x: x * 1, lambda x: x):
        ...     y = a * b
    """

    def __init__(self, pack_hook: Callable[[Tensor], Any],
                 unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        if _disabled is not None:
            raise RuntimeError(_disabled)
        _graph.saved_tensors_hooks.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc: object) -> None:
        _graph.saved_tensors_hooks.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    r"""Context manager: tensors saved for backward are kept on the CPU (copied back to
    their device for the backward pass).

    Args:
        pin_memory (bool): keep the copies in page-locked memory.
        device_type (str): the accelerator whose tensors are moved (PyTorch's argument;
            every non-CPU tensor is moved here).
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(tensor: Tensor) -> tuple:
            if tensor.device.type == "cpu":
                return tensor.device, tensor
            cpu = tensor.to("cpu")
            return tensor.device, cpu.pin_memory() if pin_memory else cpu

        def unpack(packed: tuple) -> Tensor:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


_disabled: str | None = None


class disable_saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager: entering a `saved_tensors_hooks` inside it raises RuntimeError
    with `error_message`."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        global _disabled
        self.previous, _disabled = _disabled, self.error_message

    def __exit__(self, *exc: object) -> None:
        global _disabled
        _disabled = self.previous
