"""`torch.library.get_ctx()` and the context a fake kernel gets from it.

PyTorch hands a fake kernel a `FakeImplCtx` under a FakeTensorMode, whose
`new_dynamic_size()` makes a symbolic size for a data-dependent output (``nonzero``'s
row count). ember has no FakeTensorMode and no symbolic sizes: a fake kernel runs on
``meta`` tensors, where PyTorch's `get_ctx()` raises (its meta-kernel error, kept
here), and under `opcheck`'s fake test, where `new_dynamic_size()` raises PyTorch's
`DynamicOutputShapeException` (as under a FakeTensorMode that allows no dynamic output
shapes) and the test leaves such an op's shapes unchecked. Outside a fake kernel
`get_ctx()` returns None, as PyTorch's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["DynamicOutputShapeException", "FakeImplCtx", "get_ctx"]


class DynamicOutputShapeException(RuntimeError):
    """A fake kernel asked for a data-dependent size where none can be made (PyTorch's
    ``torch._subclasses.fake_tensor.DynamicOutputShapeException``: its text is the op)."""


class FakeImplCtx:
    """The context of a fake kernel (PyTorch's ``torch._library.fake_impl.FakeImplCtx``)."""

    def __init__(self, op: str) -> None:
        self._op = op  # the overload's dotted name, ``mylib.nonzero.default``

    def new_dynamic_size(self, *, min: int = 0, max: int | None = None) -> Any:
        """A size only the data decide (PyTorch makes an unbacked SymInt): ember has no
        symbolic sizes, so this raises `DynamicOutputShapeException`."""
        raise DynamicOutputShapeException(self._op)

    def create_unbacked_symint(self, *, min: int = 2, max: int | None = None) -> Any:
        """The former name of `new_dynamic_size` (deprecated in PyTorch)."""
        return self.new_dynamic_size(min=min, max=max)


def _none() -> None:
    return None


_ctx_getter: Callable[[], Any] = _none


def get_ctx() -> FakeImplCtx | None:
    """The context of the fake kernel running now (see the module's notes); None outside
    one. Calling it from a fake kernel run on meta tensors raises, as in PyTorch."""
    return _ctx_getter()


@contextlib.contextmanager
def ctx_getter(getter: Callable[[], Any]) -> Iterator[None]:
    """Make `get_ctx()` call `getter` inside the block."""
    global _ctx_getter
    previous, _ctx_getter = _ctx_getter, getter
    try:
        yield
    finally:
        _ctx_getter = previous


_fake_mode = False
"""True inside `fake_mode()`: opcheck's stand-in for a FakeTensorMode."""


@contextlib.contextmanager
def fake_mode() -> Iterator[None]:
    """Fake kernels run inside get a `FakeImplCtx` (opcheck's fake test)."""
    global _fake_mode
    previous, _fake_mode = _fake_mode, True
    try:
        yield
    finally:
        _fake_mode = previous


def fake_kernel_ctx(qualname: str, dotted: str, source: str) -> Callable[[], Any]:
    """What `get_ctx()` returns in the fake kernel of op `qualname` (overload `dotted`,
    its fake kernel registered at `source`): a `FakeImplCtx` in `fake_mode()`, else (on
    meta tensors) PyTorch's meta-kernel error."""
    if _fake_mode:
        ctx = FakeImplCtx(dotted)
        return lambda: ctx

    def refuse() -> Any:
        raise RuntimeError(
            f"{qualname} ({source}): You're trying to run this operator with meta Tensors "
            "(as opposed to FakeTensors), but this operator may return an output Tensor "
            "with data-dependent shape. Meta Tensors don't support operators with outputs "
            "that have data-dependent shapes but FakeTensors do. If your operator does not "
            "return an output with data-dependent shape, make sure the FakeTensor and/or "
            "meta kernel does not call torch.library.get_ctx(). Otherwise, please use "
            "FakeTensors.")
    return refuse
