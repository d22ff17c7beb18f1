"""The gradient reducer of DistributedDataParallel: buckets of parameters whose gradients
are all-reduced, each as soon as it is complete, while backward goes on.

Parameters go into buckets in reverse registration order (backward meets the last layers
first), at most `bucket_cap_mb` each, the first one small (1 MiB, PyTorch's default,
unless a cap is given) so the first all-reduce starts early. A post-accumulate-grad hook
on every parameter counts the gradients a bucket still waits for; a complete bucket is
flattened, divided by the world size and handed to a non-blocking all-reduce, in bucket
order (every rank must issue its collectives in the same order). A final callback of the
backward pass waits for the all-reduces and copies the averaged gradients back into `.grad`.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import ember
from ember import Tensor
from ember.autograd import queue_callback
from ember.nn.parallel.scatter_gather import tensors_in

FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES


def assign_buckets(params: Sequence[Tensor], cap_bytes: int,
                   first_cap_bytes: int = FIRST_BUCKET_BYTES) -> list[list[int]]:
    """Indices into `params`, grouped in buckets: reverse order, one dtype and device per
    bucket, a bucket closed once it reaches its cap (the first one's is `first_cap_bytes`)."""
    buckets: list[list[int]] = []
    current: list[int] = []
    size, key = 0, None
    for i in reversed(range(len(params))):
        p = params[i]
        p_key = (p.dtype, str(p.device))
        if current and p_key != key:
            buckets.append(current)
            current, size = [], 0
        current.append(i)
        key = p_key
        size += p.numel() * p.element_size()
        if size >= (first_cap_bytes if not buckets else cap_bytes):
            buckets.append(current)
            current, size = [], 0
    if current:
        buckets.append(current)
    return buckets


class _Bucket:
    """One bucket's flat buffer, kept from step to step, and each parameter's view of it;
    plus this iteration's state."""

    __slots__ = ("indices", "flat", "views", "pending", "work")

    def __init__(self, indices: list[int], params: Sequence[Tensor]) -> None:
        self.indices = indices
        first = params[indices[0]]
        sizes = [params[i].numel() for i in indices]
        self.flat = first.new_zeros((sum(sizes),))
        self.views = [v.view(params[i].shape) for v, i in zip(self.flat.split(sizes), indices)]
        self.pending = len(indices)
        self.work: Any = None

    def reset(self) -> None:
        self.pending = len(self.indices)
        self.work = None


class Reducer:
    """Averages the gradients of `params` over the ranks of `group` during backward."""

    def __init__(self, params: Sequence[Tensor], names: Sequence[str], cap_bytes: int,
                 first_cap_bytes: int, group: Any, find_unused_parameters: bool,
                 gradient_as_bucket_view: bool = False) -> None:
        from ember import distributed as dist

        self._dist = dist
        self.params = list(params)
        self.names = list(names)
        self.group = group
        self.world_size = dist.get_world_size(group)
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.bucket_indices = assign_buckets(self.params, cap_bytes, first_cap_bytes)
        self._bucket_of = {i: b for b, idx in enumerate(self.bucket_indices) for i in idx}
        self._index = {id(p): i for i, p in enumerate(self.params)}
        self._buckets = [_Bucket(idx, self.params) for idx in self.bucket_indices]
        self._ready: list[bool] = []  # gradient counted in its bucket
        self._used: list[bool] = []  # gradient produced by this rank's backward
        self._next = 0  # the next bucket to launch: buckets start in order on every rank
        self.armed = False  # set by a forward that expects this backward to synchronize
        self._finalizing = False
        # the hooks hold the reducer weakly: a dropped DDP wrapper leaves only a no-op behind
        this = weakref.ref(self)

        def on_grad(param: Tensor) -> None:
            reducer = this()
            if reducer is not None:
                reducer._on_grad(param)

        self._handles = [p.register_post_accumulate_grad_hook(on_grad) for p in self.params]

    # -- per iteration ----------------------------------------------------------------
    def prepare(self, outputs: Any) -> None:
        """Arm the reducer for the backward of `outputs` (called by each synchronizing
        forward); with `find_unused_parameters`, parameters the outputs do not depend on
        are ready at once."""
        for bucket in self._buckets:
            if bucket.work is not None:
                # started by an iteration whose backward did not finish (it raised):
                # the buffer must not be reused while MPI may still write it
                bucket.work.wait()
            bucket.reset()
        self._ready = [False] * len(self.params)
        self._used = [False] * len(self.params)
        self._next = 0
        self._finalizing = False
        self.armed = True
        if self.find_unused_parameters:
            used = _reachable_leaves(outputs)
            for i, p in enumerate(self.params):
                if id(p) not in used:
                    self._mark_ready(i, in_backward=False)

    def _on_grad(self, param: Tensor) -> None:
        if not self.armed:
            return
        i = self._index[id(param)]
        if self._ready[i]:
            raise RuntimeError(
                f"DistributedDataParallel: parameter {self.names[i]} received its gradient "
                "twice in one iteration (a second backward through the same forward, or "
                "reentrant backward); call forward again before each backward")
        self._used[i] = True
        self._mark_ready(i, in_backward=True)
        self._progress()

    def _mark_ready(self, i: int, in_backward: bool) -> None:
        self._ready[i] = True
        self._buckets[self._bucket_of[i]].pending -= 1
        if not in_backward:
            # (unused parameters, marked at forward time) all-reduces start only in
            # backward: a forward whose backward never runs must start none, or the ranks
            # would disagree on how many collectives they have issued
            return
        if not self._finalizing:
            self._finalizing = True
            queue_callback(self._finalize)
        while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
            self._launch(self._buckets[self._next])
            self._next += 1

    def _launch(self, bucket: _Bucket) -> None:
        # each gradient goes into its view of the bucket, divided by the world size on
        # the way (one pass); a gradient that already is that view is divided in place
        scale = 1.0 / self.world_size
        with ember.no_grad():
            for i, view in zip(bucket.indices, bucket.views):
                g = self.params[i].grad
                if g is None:
                    view.zero_()
                elif g is view:
                    if scale != 1.0:
                        view.mul_(scale)
                else:
                    ember.mul(g, scale, out=view)
        bucket.work = self._dist.all_reduce(bucket.flat, group=self.group, async_op=True)

    def _progress(self) -> None:
        # polling a started all-reduce lets MPI move its data while backward computes
        for bucket in self._buckets[:self._next]:
            if bucket.work is not None:
                bucket.work.is_completed()

    def _finalize(self) -> None:
        """End of backward: wait for every bucket's all-reduce, write the averages back."""
        self.armed = False
        for bucket in self._buckets[:self._next]:
            if bucket.work is not None:
                bucket.work.wait()
        missing = [self.names[i] for i, r in enumerate(self._ready) if not r]
        if missing:
            raise RuntimeError(
                "DistributedDataParallel: expected every parameter to receive a gradient in "
                "this backward, but these did not (the loss does not depend on them): "
                f"{', '.join(missing)}. Pass find_unused_parameters=True to "
                "DistributedDataParallel if some parameters may go unused.")
        globally_used = self._globally_used() if self.find_unused_parameters else None
        with ember.no_grad():
            for bucket in self._buckets:
                for i, avg in zip(bucket.indices, bucket.views):
                    p = self.params[i]
                    if globally_used is not None and not globally_used[i]:
                        continue  # no rank used it: its .grad stays as it was
                    if p.grad is avg:
                        continue  # the gradient is the bucket's view: nothing to copy
                    if self.gradient_as_bucket_view:
                        p.grad = avg
                    elif p.grad is None:
                        p.grad = avg.clone()
                    else:
                        p.grad.copy_(avg)
                bucket.work = None

    def _globally_used(self) -> list[bool]:
        """Which parameters some rank used (one all-reduce of the usage flags)."""
        used = ember.tensor([1.0 if u else 0.0 for u in self._used])
        self._dist.all_reduce(used, group=self.group)
        return [v > 0 for v in used.tolist()]

    def remove_hooks(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []


def _reachable_leaves(outputs: Any) -> set[int]:
    """ids of the leaf tensors the autograd graph of `outputs` reaches."""
    stack = [t.grad_fn for t in tensors_in(outputs) if t.grad_fn is not None]
    seen, leaves = set(), set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            leaves.add(id(variable))
        stack.extend(nxt for nxt, _ in node.next_functions)
    return leaves

