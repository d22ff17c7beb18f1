"""How an ember tensor crosses a process boundary (`multiprocessing`'s ForkingPickler,
which pickles a spawned process's arguments and everything put on a queue)."""

from __future__ import annotations

from multiprocessing.reduction import DupFd, ForkingPickler
from typing import Any

from ember.core import dtype as dt
from ember.core.tensor import Tensor

_NON_LEAF = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
             "autograd does not support crossing process boundaries.  If you just want to "
             "transfer the data, call detach() on the tensor before serializing (e.g., "
             "putting it on the queue).")


def reduce_tensor(t: Tensor) -> tuple:
    """A CPU tensor goes as a descriptor of its shared memory (moved there first, as
    PyTorch moves it); any other as its values."""
    if t._requires_grad and t._node is not None:
        raise RuntimeError(_NON_LEAF)
    if t._device.type != "cpu":
        return t.__reduce_ex__(2)
    from ember.backends.cpu import shared_memory

    t.share_memory_()
    block, offset = shared_memory.block_of(t._data)
    a = t._data
    return (rebuild_shared_tensor, (DupFd(block.fd), len(block), t._dtype.name, a.shape,
                                    a.strides, offset, t._requires_grad))


def rebuild_shared_tensor(fd: Any, size: int, dtype_name: str, shape: tuple[int, ...],
                          strides: tuple[int, ...], offset: int,
                          requires_grad: bool) -> Tensor:
    """The tensor on the shared memory behind `fd`, in the receiving process."""
    from ember.backends.cpu import shared_memory
    from ember.core import plugins
    from ember.core.backend import numpy_dtype
    from ember.core.device import device

    d = getattr(dt, dtype_name)
    block = shared_memory.attach(fd.detach(), size)
    array = shared_memory.array_in(block, numpy_dtype(d), shape, strides, offset)
    t = Tensor._make(array, d, device("cpu"), plugins.get_backend("cpu"))
    t._shared = True
    t._requires_grad = requires_grad
    return t


def reduce_parameter(p: Any) -> tuple:
    """A Parameter pickles as its detached data; its own storage moves to shared memory
    first, so the sender's parameter is the memory the receiver writes (as in PyTorch)."""
    if p._device.type == "cpu":
        p.share_memory_()
    return p.__reduce_ex__(2)


def init_reductions() -> None:
    """Register the tensor reductions with multiprocessing's pickler (done on import)."""
    from ember.nn.parameter import Parameter

    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_parameter)
