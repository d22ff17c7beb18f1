"""The meta backend: tensors with a shape and a dtype but no data (`device="meta"`).

A buffer is a zero-strided NumPy view of one element, `np.broadcast_to(zero, shape)`: it
has the shape and the dtype, and costs no memory whatever its size. The kernels are the
shared NumPy kernels (backends/xp) run on those views, each result turned back into such a
view, so every op gives PyTorch's result shape and dtype without a separate shape function
per op. The values the kernels see are zeros and mean nothing: nothing ever reads them
(core refuses to copy a meta tensor out, see `Backend.shape_only`).

Core loads this module by name on the first use of the "meta" device (it is no plugin: it
is never listed among the devices, never chosen by `device="auto"`, and its name is
reserved). Importing it is cheap; NumPy and the kernel table load when it is created.
"""

from __future__ import annotations

from typing import Any

from ember.core.backend import Backend, DeviceInfo, dtype, numpy_dtype

# Kernels that write into their operands (list ops, optimizer steps): the meta table
# leaves them out, so core runs their decompositions, whose writes are the no-op `assign`.
_WRITING_PREFIXES = ("_foreach_", "_fused_")


class MetaBackend(Backend):
    """Shape-only tensors: every op gives its result's shape and dtype, and no data."""

    name = "meta"
    priority = -1
    shape_only = True

    def __init__(self) -> None:
        super().__init__()
        import numpy as np

        from ember.backends.xp import elementwise, make_kernels
        from ember.backends.xp.lib import ArrayLib, Hooks

        self._np = np
        table = make_kernels(np)
        self.kernels.update({op: _shape_only(np, k) for op, k in table.items()
                             if not op.startswith(_WRITING_PREFIXES)})
        # elementwise ops broadcast: they run on one element per operand (for the result's
        # dtype), so a huge meta tensor costs no time or memory either
        self.kernels.update({op: _broadcasting(np, k) for op, k in
                             elementwise.kernels(ArrayLib(np, Hooks())).items()})
        # in-place writes change no data: there is none
        self.kernels["assign"] = _no_write
        self.kernels["setitem"] = _no_write
        self.kernels["strided_view"] = self._strided_view
        self.kernels["view_dtype"] = self._view_dtype
        for op in ("rand", "randn"):
            self.kernels[op] = self._random(op)
        self.kernels["full"] = self._full
        # copies of one shape (a copy of a zero-strided view would allocate it all)
        for op in ("clone", "flip", "tril", "triu"):
            self.kernels[op] = self._same_shape
        self.kernels["reshape"] = self._reshape
        # products: their shapes are simple, and computing a big one on zeros is not
        self.kernels["matmul"] = self._matmul
        self.kernels["linear"] = self._linear
        self.kernels["linear_backward"] = self._linear_backward
        self.kernels["randint"] = self._randint
        self.kernels["randperm"] = self._randperm

    def device_count(self) -> int:
        return 1

    def device_info(self, index: int) -> DeviceInfo:
        return DeviceInfo(name="meta (shapes and dtypes only, no data)", memory_bytes=0)

    # -- memory: every buffer is a zero-strided view --------------------------------------
    def _view(self, shape: tuple[int, ...], np_dtype: Any) -> Any:
        np = self._np
        return np.broadcast_to(np.zeros((), np_dtype), tuple(int(s) for s in shape))

    def empty(self, shape: tuple[int, ...], dtype: dtype, device: int) -> Any:
        return self._view(shape, numpy_dtype(dtype))

    def from_numpy(self, array: Any, device: int) -> Any:
        return self._view(array.shape, array.dtype)

    def to_numpy(self, buffer: Any) -> Any:
        # zeros of the buffer's shape: only the CPU fallback of an op that has no meta
        # kernel reads them, and it turns its result back into a shape-only buffer
        return buffer

    def to_device(self, buffer: Any, device: int) -> Any:
        return buffer

    def strides(self, buffer: Any) -> tuple[int, ...]:
        # the strides of a dense tensor of this shape (the view's own are all zero)
        return Backend.strides(self, buffer)

    def _strided_view(self, x: Any, shape: Any, steps: Any, start: Any) -> Any:
        return self._view(tuple(shape), x.dtype)

    def _view_dtype(self, x: Any, dtype: Any) -> Any:
        np = self._np
        new = numpy_dtype(dtype)
        shape = list(x.shape)
        if shape and new.itemsize != x.dtype.itemsize:  # the last dimension rescales
            shape[-1] = shape[-1] * x.dtype.itemsize // new.itemsize
        return np.broadcast_to(np.zeros((), new), tuple(shape))

    def _random(self, op: str):
        def draw(shape: Any, dtype: Any, device: int = 0, **attrs: Any) -> Any:
            return self._view(tuple(shape), numpy_dtype(dtype))
        draw.__name__ = op
        return draw

    def _same_shape(self, x: Any, *args: Any, **attrs: Any) -> Any:
        return self._view(x.shape, x.dtype)

    def _reshape(self, x: Any, shape: Any, copy: bool = True) -> Any:
        shape = list(shape)
        if -1 in shape:  # (core passes sizes that fit; one may be left to infer)
            known = 1
            for s in shape:
                known *= s if s != -1 else 1
            shape[shape.index(-1)] = x.size // known if known else 0
        return self._view(tuple(shape), x.dtype)

    def _matmul(self, a: Any, b: Any) -> Any:
        if a.ndim == 1 and b.ndim == 1:
            shape: tuple[int, ...] = ()
        elif a.ndim == 1:
            shape = b.shape[:-2] + b.shape[-1:]
        elif b.ndim == 1:
            shape = a.shape[:-1]
        else:
            shape = self._np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + \
                (a.shape[-2], b.shape[-1])
        return self._view(shape, a.dtype)

    def _linear(self, x: Any, w: Any, b: Any = None) -> Any:
        return self._view(x.shape[:-1] + w.shape[:1], x.dtype)

    def _linear_backward(self, x: Any, w: Any, g: Any, needs: Any = (True, True, True)
                         ) -> Any:
        grads = (self._view(x.shape, g.dtype), self._view(w.shape, g.dtype),
                 self._view(w.shape[:1], g.dtype))
        return tuple(gr if i < len(needs) and needs[i] else None for i, gr in enumerate(grads))

    def _full(self, shape: Any, fill_value: Any, dtype: Any, device: int = 0) -> Any:
        return self._view(tuple(shape), numpy_dtype(dtype))

    def _randint(self, low: Any, high: Any, shape: Any, dtype: Any, device: int = 0,
                 **attrs: Any) -> Any:
        return self._view(tuple(shape), numpy_dtype(dtype))

    def _randperm(self, n: int, dtype: Any, device: int = 0, **attrs: Any) -> Any:
        return self._view((n,), numpy_dtype(dtype))


def _no_write(*buffers: Any, **attrs: Any) -> None:
    return None


def _shape_only(np: Any, kernel: Any) -> Any:
    """`kernel` run on shape-only views (zeros), its results reduced to shape-only views."""

    def reduce(out: Any) -> Any:
        if isinstance(out, np.ndarray):
            return np.broadcast_to(np.zeros((), out.dtype), out.shape)
        if isinstance(out, (tuple, list)):
            return type(out)(reduce(o) for o in out)
        return out

    def run(*buffers: Any, **attrs: Any) -> Any:
        with np.errstate(all="ignore"):  # arithmetic on zeros (0/0, log 0) means nothing
            return reduce(kernel(*buffers, **attrs))

    run.__name__ = getattr(kernel, "__name__", "kernel")
    return run


def _broadcasting(np: Any, kernel: Any) -> Any:
    """Elementwise `kernel` run on one-element stand-ins (ones: no division by zero) of its
    operands, for the result's dtype; the result has the operands' broadcast shape."""

    def run(*operands: Any, **attrs: Any) -> Any:
        arrays = [a for a in operands if isinstance(a, np.ndarray)]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        small = [np.ones(tuple(min(s, 1) for s in a.shape), a.dtype)
                 if isinstance(a, np.ndarray) else a for a in operands]
        with np.errstate(all="ignore"):
            out = kernel(*small, **attrs)
        return np.broadcast_to(np.zeros((), out.dtype), shape)

    run.__name__ = getattr(kernel, "__name__", "kernel")
    return run
