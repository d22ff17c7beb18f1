"""`DistributedDataParallel`: one process per rank, each running the whole module on its
share of the batch; gradients are averaged over the ranks during backward (see
`reducer`), so every rank takes the same optimizer step."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import ember
from ember import Tensor
from ember.nn.module import Module
from ember.nn.parallel.reducer import FIRST_BUCKET_BYTES, Reducer

__all__ = ["DDP", "DistributedDataParallel"]

_DEFAULT_BUCKET_CAP_MB = 25


def _unique(tensors: Iterator[tuple[str, Tensor]]) -> tuple[list[str], list[Tensor]]:
    names, seen, out = [], set(), []
    for name, t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            names.append(name)
            out.append(t)
    return names, out


def broadcast_coalesced(tensors: Sequence[Tensor], src: int = 0, group: Any = None) -> None:
    """Overwrite `tensors` in place with rank `src`'s values: one broadcast per dtype and
    device, of all those tensors flattened together."""
    from ember import distributed as dist

    groups: dict[tuple, list[Tensor]] = {}
    for t in tensors:
        groups.setdefault((t.dtype, str(t.device)), []).append(t)
    with ember.no_grad():
        for same in groups.values():
            flat = ember.cat([t.reshape(-1) for t in same])
            dist.broadcast(flat, src, group=group)
            offset = 0
            for t in same:
                t.copy_(flat[offset:offset + t.numel()].view(t.shape))
                offset += t.numel()


class DistributedDataParallel(Module):
    r"""Implements distributed data parallelism at the module level.

    Every rank (one process each, started by ``ember run -n N``) wraps the same model;
    at construction rank 0's parameters and buffers are broadcast to all. During
    backward, gradients are gathered into buckets (``bucket_cap_mb`` each, parameters in
    reverse order) and each bucket's non-blocking all-reduce starts as soon as its last
    gradient is accumulated, overlapping the rest of backward. When backward returns,
    ``.grad`` holds the gradient averaged over the ranks.

    Args:
        module (Module): module to be parallelized.
        device_ids (list, optional): ``None`` or the one device the module is on.
        output_device (optional): accepted for PyTorch compatibility; must be ``None`` or
            that same device.
        dim (int): accepted for PyTorch compatibility (inputs are not split). Default: 0.
        broadcast_buffers (bool): broadcast rank 0's buffers at each forward.
            Default: ``True``.
        init_sync (bool): broadcast rank 0's parameters and buffers at construction.
            Default: ``True``.
        process_group (optional): the group whose ranks average gradients. Default: the
            default group.
        bucket_cap_mb (float, optional): bucket size in MiB. Default: 25.
        find_unused_parameters (bool): traverse the autograd graph of each forward's
            outputs and count the parameters it does not reach as ready (their gradient
            counts as zero on this rank). Default: ``False``.
        gradient_as_bucket_view (bool): make each ``.grad`` a view of its bucket's flat
            buffer, saving the copy back after the all-reduce (as PyTorch's: ``.grad``
            then changes with the next iteration's reduction). Default: ``False``.
        check_reduction, static_graph: accepted for PyTorch compatibility; they change
            nothing here.

    Example::

        >>> ember.distributed.init_process_group("mpi")
        >>> model = DistributedDataParallel(Net())
        >>> loss_fn(model(x), y).backward()   # grads averaged over the ranks
        >>> optimizer.step()
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0, broadcast_buffers: bool | None = True,
                 init_sync: bool = True, process_group: Any = None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False) -> None:
        super().__init__()
        from ember import distributed as dist

        if not dist.is_initialized():
            raise ValueError("Default process group has not been initialized, please make "
                             "sure to call init_process_group.")
        names, params = _unique((n, p) for n, p in module.named_parameters()
                                if p.requires_grad)
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        devices = {str(t.device) for t in module.parameters()}
        if device_ids is not None:
            if len(device_ids) != 1:
                raise ValueError("device_ids can only be None or contain a single element.")
            want = str(ember.device(device_ids[0]))
            if devices != {want} or (output_device is not None and
                                     str(ember.device(output_device)) != want):
                raise ValueError(
                    "DistributedDataParallel device_ids and output_device arguments only work "
                    "with single-device modules on that device, but got device_ids "
                    f"{list(device_ids)}, output_device {output_device}, and module "
                    f"parameters {{{', '.join(sorted(devices))}}}.")
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers is not False
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        cap_mb = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * 1024 * 1024)
        self._world_size = dist.get_world_size(process_group)
        if init_sync and self._world_size > 1:
            broadcast_coalesced(params + self._module_buffers(), 0, process_group)
        # as PyTorch: a small first bucket by default, all buckets alike when a cap is given
        first_cap = FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self.reducer = Reducer(params, names, self.bucket_bytes_cap, first_cap, process_group,
                               find_unused_parameters, gradient_as_bucket_view)

    def _module_buffers(self) -> list[Tensor]:
        # read at each use: a module may replace its buffer tensors
        return [b for b in self.module.buffers() if b is not None]

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self.broadcast_buffers and self._world_size > 1:
            buffers = self._module_buffers()
            if buffers:
                broadcast_coalesced(buffers, 0, self.process_group)
        outputs = self.module(*inputs, **kwargs)
        if ember.is_grad_enabled():  # a forward under no_grad leaves the reducer alone
            if self.require_backward_grad_sync:
                self.reducer.prepare(outputs)
            else:
                self.reducer.armed = False  # no_sync: this backward only accumulates
        return outputs

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        r"""A context manager that disables gradient synchronization across ranks: the
        backward of a forward run inside it only accumulates `.grad` locally; the first
        forward-backward outside it synchronizes the accumulated gradients.

        Example::

            >>> with ddp.no_sync():
            ...     for x in micro_batches[:-1]:
            ...         ddp(x).sum().backward()    # no communication
            >>> ddp(micro_batches[-1]).sum().backward()  # all-reduce of the sums
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


DDP = DistributedDataParallel
