"""`DataParallel`: one process runs a module on several devices, each on a slice of the
batch, and gathers the outputs on one device.

Unlike PyTorch's, the devices may be of different backends (`["cpu", "opencl:0"]`), and
by default each gets a share of the batch proportional to its measured speed: the
module's forward is timed once per device and input shape (cached), and `plan()` shows
the resulting split.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import ember
from ember import Tensor
from ember.nn.module import Module
from ember.nn.parallel.replicate import replicate
from ember.nn.parallel.scatter_gather import gather, scatter, tensors_in

__all__ = ["DataParallel", "DataParallelPlan", "data_parallel"]

# timing runs per device when measuring its speed (after one warm-up run)
_TIMED_RUNS = 2


class DataParallelPlan:
    """How a batch is split over devices: per device, its measured forward time per sample
    (None when the split was given, not measured), its share and the rows it gets."""

    def __init__(self, devices: Sequence[ember.device], seconds_per_sample: Sequence[Any],
                 shares: Sequence[float], rows: Sequence[int], dim: int) -> None:
        self.devices = list(devices)
        self.seconds_per_sample = list(seconds_per_sample)
        self.shares = list(shares)
        self.rows = list(rows)
        self.dim = dim

    def __repr__(self) -> str:
        lines = [f"DataParallel plan: {sum(self.rows)} rows along dim {self.dim}",
                 f"  {'device':<12}{'ms/sample':>12}{'share':>9}{'rows':>8}"]
        for dev, sec, share, rows in zip(self.devices, self.seconds_per_sample, self.shares,
                                         self.rows):
            ms = "given" if sec is None else f"{sec * 1e3:.4f}"
            lines.append(f"  {str(dev):<12}{ms:>12}{share:>9.1%}{rows:>8}")
        return "\n".join(lines)


def _split(total: int, shares: Sequence[float]) -> list[int]:
    """`total` rows split by `shares` (largest remainders get the rounding)."""
    exact = [total * s for s in shares]
    rows = [int(e) for e in exact]
    for i in sorted(range(len(shares)), key=lambda i: exact[i] - rows[i], reverse=True):
        if sum(rows) == total:
            break
        rows[i] += 1
    return rows


def _first_tensor(obj: Any) -> Tensor | None:
    return next(iter(tensors_in(obj)), None)


def _wait(out: Any) -> None:
    # reading one element back waits for the device's queue (asynchronous backends)
    t = _first_tensor(out)
    if t is not None and t.numel():
        t.reshape(-1)[:1].tolist()


def _module_device(module: Module) -> ember.device | None:
    for t in module.parameters():
        return t.device
    for t in module.buffers():
        return t.device
    return None


def _as_device(d: Any, kind: str) -> ember.device:
    if isinstance(d, int):
        return ember.device(kind, d) if kind != "cpu" else ember.device("cpu")
    return ember.device(d)


class DataParallel(Module):
    r"""Implements data parallelism at the module level, in one process.

    Each forward splits the inputs along `dim` over `device_ids`, runs a replica of
    `module` on each device (the first device's replica is `module` itself), and gathers
    the outputs on `output_device`. Replicas' parameters are differentiable copies of the
    module's, so `backward` accumulates into the module's own `.grad`.

    The devices may belong to different backends, e.g. ``["cpu", "opencl:0"]``. By
    default the batch is split in proportion to each device's speed, measured by timing
    the module's forward once per device and input shape; `balance` gives fixed
    proportions instead (``[1, 1]`` splits evenly, as PyTorch does).

    Args:
        module (Module): module to be parallelized; its parameters and buffers must be on
            ``device_ids[0]``.
        device_ids (list of int, str or ember.device): devices to run on; ints are indices
            of the module's device type. Default: all devices of the module's device type.
        output_device (int, str or ember.device): device of the outputs.
            Default: ``device_ids[0]``.
        dim (int): dimension along which inputs are split. Default: 0.
        balance (sequence of float, optional): fixed shares of the batch per device.

    Example::

        >>> net = ember.nn.DataParallel(model, device_ids=["cpu", "opencl:0"])
        >>> out = net(x)          # x split over the CPU and the OpenCL device
        >>> print(net.plan(x))    # the split and the measured speeds
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0, *,
                 balance: Sequence[float] | None = None) -> None:
        super().__init__()
        home = _module_device(module)
        kind = home.type if home is not None else "cpu"
        if device_ids is None:
            device_ids = [d for d in ember.devices() if d.type == kind] or [ember.device(kind)]
        devices = [_as_device(d, kind) for d in device_ids]
        if not devices:
            raise ValueError("DataParallel: device_ids is empty")
        if home is not None and str(home) != str(devices[0]):
            raise RuntimeError(f"module must have its parameters and buffers on device "
                               f"{devices[0]} (device_ids[0]) but found one of them on "
                               f"device: {home}")
        if balance is not None:
            if len(balance) != len(devices) or any(b < 0 for b in balance) or not sum(balance):
                raise ValueError(f"DataParallel: balance must give one non-negative share per "
                                 f"device ({len(devices)}), not all zero; got {list(balance)}")
        self.module = module
        self.device_ids = devices
        self.output_device = devices[0] if output_device is None else \
            _as_device(output_device, kind)
        self.dim = dim
        self.balance = None if balance is None else [float(b) for b in balance]
        self._seconds_per_sample: dict[tuple, list[float]] = {}  # input shapes -> per device
        self._last_plan: DataParallelPlan | None = None

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if len(self.device_ids) == 1:
            return self.module(*inputs, **kwargs)
        plan = self.plan(*inputs, **kwargs)
        used = [i for i, rows in enumerate(plan.rows) if rows]
        devices = [self.device_ids[i] for i in used]
        sizes = [plan.rows[i] for i in used]
        in_pieces = scatter(tuple(inputs), sizes, devices, self.dim)
        kw_pieces = scatter(kwargs, sizes, devices, self.dim) if kwargs else [{}] * len(used)
        # accelerators first: their queues run on while the CPU computes its share
        order = sorted(range(len(devices)), key=lambda i: devices[i].type == "cpu")
        outputs: list[Any] = [None] * len(devices)
        for i in order:
            outputs[i] = self._replica(devices[i])(*in_pieces[i], **kw_pieces[i])
        return gather(outputs, self.output_device, self.dim)

    def plan(self, *inputs: Any, **kwargs: Any) -> DataParallelPlan:
        """The split of these inputs over the devices, measuring the devices' speeds on
        them first if this input shape has not been measured yet. Without inputs, the
        plan of the last forward."""
        if not inputs and not kwargs:
            if self._last_plan is None:
                raise RuntimeError("DataParallel.plan(): no forward has run yet; pass an "
                                   "example input to plan for it")
            return self._last_plan
        batch = self._batch_size(inputs, kwargs)
        if self.balance is not None:
            total = sum(self.balance)
            shares = [b / total for b in self.balance]
            per_sample = [None] * len(self.device_ids)
        else:
            per_sample = self._measure(batch, inputs, kwargs)
            speeds = [1.0 / max(s, 1e-12) for s in per_sample]
            shares = [s / sum(speeds) for s in speeds]
        plan = DataParallelPlan(self.device_ids, per_sample, shares, _split(batch, shares),
                                self.dim)
        self._last_plan = plan
        return plan

    def _batch_size(self, inputs: tuple, kwargs: dict) -> int:
        t = _first_tensor((inputs, kwargs))
        if t is None:
            raise ValueError("DataParallel: no tensor among the inputs to split over devices")
        return t.shape[self.dim]

    def _replica(self, device: ember.device) -> Module:
        return self.module if str(device) == str(self.device_ids[0]) else \
            replicate(self.module, device)

    def _measure(self, batch: int, inputs: tuple, kwargs: dict) -> list[float]:
        key = tuple(tuple(t.shape[:self.dim] + t.shape[self.dim + 1:]) + (str(t.dtype),)
                    for t in tensors_in((inputs, kwargs)))
        cached = self._seconds_per_sample.get(key)
        if cached is not None:
            return cached
        n = len(self.device_ids)
        rows = max(1, batch // n)  # every device times the same even slice
        sample = scatter((inputs, kwargs), [rows, batch - rows], [self.device_ids[0]] * 2,
                         self.dim)[0]
        times = []
        modes = [(m, m.training) for m in self.module.modules()]
        self.module.eval()  # no running-statistics updates while timing
        try:
            with ember.no_grad():
                for device in self.device_ids:
                    replica = self._replica(device)
                    args, kw = scatter(sample, [rows], [device], self.dim)[0]
                    _wait(replica(*args, **kw))  # warm-up: kernels built, caches filled
                    start = time.perf_counter()
                    for _ in range(_TIMED_RUNS):
                        _wait(replica(*args, **kw))
                    times.append((time.perf_counter() - start) / _TIMED_RUNS / rows)
        finally:
            for m, training in modes:
                m.training = training
        self._seconds_per_sample[key] = times
        return times



def data_parallel(module: Module, inputs: Any, device_ids: Sequence[Any] | None = None,
                  output_device: Any = None, dim: int = 0,
                  module_kwargs: dict | None = None) -> Any:
    r"""Evaluate `module(*inputs, **module_kwargs)` in parallel over `device_ids`: the
    functional form of :class:`DataParallel` (the batch is split evenly).

    Args:
        module (Module): the module to evaluate in parallel.
        inputs (Tensor or tuple): inputs to the module.
        device_ids (list): devices on which to replicate the module.
        output_device: device of the output. Default: ``device_ids[0]``.
        dim (int): dimension along which inputs are split. Default: 0.
        module_kwargs (dict, optional): keyword arguments of the module.
    """
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    dp = DataParallel(module, device_ids, output_device, dim,
                      balance=None if device_ids is None else [1.0] * len(device_ids))
    return dp(*inputs, **(module_kwargs or {}))
