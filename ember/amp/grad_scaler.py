"""GradScaler: loss scaling for float16 training, with PyTorch's algorithm and defaults.

Small float16 gradients underflow to zero. The scaler multiplies the loss by a large
factor before backward, divides the gradients by it before the optimizer steps, and
skips any step whose gradients overflowed (inf or NaN), halving the factor. After
`growth_interval` steps in a row without overflow it doubles the factor again.
"""

from __future__ import annotations

import enum
import warnings
from collections import abc, defaultdict
from typing import Any

from ember.core import dtype as dt
from ember.core import plugins
from ember.core.creation import full
from ember.core.dtype import float16, float32, int32
from ember.core.grad_mode import no_grad
from ember.core.placement import resolve
from ember.core.tensor import Tensor


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scale the loss, unscale the gradients and skip overflowing steps.

    Args:
        device: the device type of the gradients (``"cuda"``, ``"cpu"``, ...).
        init_scale: the starting scale factor (2**16).
        growth_factor: what the scale is multiplied by after `growth_interval`
            consecutive steps without inf/NaN gradients (2.0).
        backoff_factor: what it is multiplied by after a step with inf/NaN (0.5).
        growth_interval: see `growth_factor` (2000).
        enabled: False makes every method a pass-through.

    Example::

        scaler = ember.amp.GradScaler("cpu")
        for x, y in loader:
            optimizer.zero_grad()
            with ember.autocast("cpu", dtype=ember.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and not _available(device):
            # PyTorch's words for CUDA (whichever class was made); ember's for the others
            what = f"{dt.API_NAME}.{'cuda.' if device == 'cuda' else ''}amp.GradScaler"
            where = "CUDA" if device == "cuda" else device
            warnings.warn(f"{what} is enabled, but {where} is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:  # (PyTorch's checks: AssertionErrors)
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None  # made on the first scale(), on its device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: defaultdict = defaultdict(_fresh_state)

    # -- scaling ------------------------------------------------------------------------
    def scale(self, outputs: Any) -> Any:
        """Multiply `outputs` (a tensor, or an iterable of tensors) by the scale factor."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)

        def apply_scale(value: Any) -> Any:
            if isinstance(value, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(value.device)
                return value * self._scale.to(device=value.device)
            if isinstance(value, abc.Iterable):
                iterable = map(apply_scale, value)
                if isinstance(value, (list, tuple)):
                    return type(value)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of `optimizer`'s parameters by the scale factor, in place,
        noting whether any is inf or NaN. `step` does it when you have not (call it
        yourself to clip gradients before the step)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def _unscale_grads_(self, optimizer: Any, inv_scale: Tensor,
                        allow_fp16: bool) -> dict[str, Tensor]:
        by_device: dict[str, list[Tensor]] = defaultdict(list)
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if not allow_fp16 and grad.dtype is float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                if grad.is_sparse:  # (nn.Embedding(sparse=True)) its values, as PyTorch's
                    if grad.dtype is float16:  # summed first: the sums may overflow
                        param.grad = grad = grad.coalesce()
                    grad = grad._values()
                by_device[str(grad.device)].append(grad)
        found: dict[str, Tensor] = {}
        with no_grad():
            for device, grads in by_device.items():
                inv = inv_scale.to(device=device)
                flags = [grad.isfinite().logical_not().any() for grad in grads]
                for grad in grads:
                    grad.mul_(inv.to(grad.dtype))
                found[device] = full((), 0.0, dtype=float32, device=device)
                for flag in flags:
                    found[device].add_(flag.to(float32))
        return found

    # -- stepping -----------------------------------------------------------------------
    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale the gradients (unless `unscale_` did) and run `optimizer.step()` if
        none is inf or NaN; else skip it. Returns what `optimizer.step` returned."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            if not any(p.grad is not None for group in optimizer.param_groups
                       for p in group["params"]):  # checked first: nothing changes
                raise AssertionError("No inf checks were recorded for this optimizer. (None "
                                     "of its parameters has a gradient: call "
                                     "scaler.scale(loss).backward() before step().)")
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Update the scale factor after the iteration's steps (halve it after an
        overflow, grow it after `growth_interval` clean steps), or set `new_scale`."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element ember.FloatTensor "
                          "with requires_grad=False.")
                if not isinstance(new_scale, Tensor) or new_scale.numel() != 1 or \
                        new_scale.requires_grad or new_scale.dtype is not float32:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [found for state in self._per_optimizer_states.values()
                          for found in state["found_inf_per_device"].values()]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf = sum(f.item() for f in found_infs)
            self._update_scale(found_inf > 0)
        self._per_optimizer_states = defaultdict(_fresh_state)

    def _update_scale(self, found_inf: bool) -> None:
        """PyTorch's `_amp_update_scale_`."""
        tracker = int(self._growth_tracker.item())
        if found_inf:
            self._scale.mul_(self._backoff_factor)
            tracker = 0
        else:
            tracker += 1
            if tracker == self._growth_interval:
                grown = self._scale.item() * self._growth_factor
                if grown != float("inf"):
                    self._scale.fill_(grown)
                tracker = 0
        self._growth_tracker.fill_(tracker)

    # -- state ----------------------------------------------------------------------------
    def _lazy_init_scale_growth_tracker(self, device: Any) -> None:
        dev, _ = resolve(device)
        self._scale = full((), self._init_scale, dtype=float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=int32, device=dev)

    def _check_scale_growth_tracker(self, funcname: str) -> None:
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  {fix}")
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  {fix}")

    def get_scale(self) -> float:
        """The current scale factor (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else \
            int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker (empty
        when disabled), as PyTorch saves them."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])


def _available(device: str) -> bool:
    try:
        return plugins.get_backend(str(device).split(":")[0]).is_available()
    except RuntimeError:
        return False
