"""The `Optimizer` base class: parameter groups, per-parameter state, `zero_grad`, step
hooks, and `state_dict` / `load_state_dict` in PyTorch's layout.

Optimizers are written only against ember's public Tensor API (in-place ops under
`ember.no_grad()`), so the same update runs on every backend, third-party ones included.
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from ember.core.creation import tensor, zeros_like
from ember.core.dtype import float32, float64, get_default_dtype
from ember.core.grad_mode import enable_grad, no_grad
from ember.core.hooks import RemovableHandle
from ember.core.ops import foreach as fe
from ember.core.tensor import Tensor

__all__ = ["Optimizer", "required"]

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]
StateDict = dict[str, Any]


class _RequiredParameter:
    """Marks an optimizer argument that every parameter group must set."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

# Hooks registered on every optimizer (`register_optimizer_step_pre_hook` ...).
_global_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()


def _add_hook(hooks: OrderedDict, hook: Callable, prepend: bool = False) -> RemovableHandle:
    """Register `hook` in `hooks` (first of them when `prepend`) and return its handle."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register `hook(optimizer, args, kwargs)` to run before every optimizer's `step`."""
    handle = RemovableHandle(_global_step_pre_hooks)
    _global_step_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register `hook(optimizer, args, kwargs)` to run after every optimizer's `step`."""
    handle = RemovableHandle(_global_step_post_hooks)
    _global_step_post_hooks[handle.id] = hook
    return handle


def _hooked_step(step: Callable) -> Callable:
    """Wrap a subclass's `step`: mark the optimizer as stepped (the LR schedulers check the
    call order with it) and run the step hooks. The no-hook path adds one branch only."""

    @functools.wraps(step)
    def wrapper(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        self._opt_called = True
        # (PyTorch's attribute names: wrappers that skip __init__, as timm's Lookahead, set them)
        pre, post = self._optimizer_step_pre_hooks, self._optimizer_step_post_hooks
        if not (pre or post or _global_step_pre_hooks or _global_step_post_hooks) \
                or self._in_hooked_step:
            return step(self, *args, **kwargs)
        # A subclass step calling super().step() runs the hooks once, not twice.
        self._in_hooked_step = True
        try:
            for hook in chain(_global_step_pre_hooks.values(), pre.values()):
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"{hook} must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            out = step(self, *args, **kwargs)
            for hook in chain(post.values(), _global_step_post_hooks.values()):
                hook(self, args, kwargs)
            return out
        finally:
            self._in_hooked_step = False

    wrapper._ember_hooked = True  # type: ignore[attr-defined]
    return wrapper


# the optimizers whose update ember records for autograd when `differentiable=True`
_DIFFERENTIABLE = ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "ASGD", "Rprop",
                   "Adamax", "NAdam", "RAdam")
# PyTorch's device lists, as its messages print them (ember's list-op "fused" update runs
# on every device; a capturable step count lives on any device but the CPU)
_FUSED_DEVICES = ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]
_CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone", "xla"]


def _implementation_options(name: str, foreach: bool | None, **flags: bool | None
                            ) -> dict[str, bool | None]:
    """PyTorch's implementation switches of optimizer `name` (`capturable`,
    `differentiable`, `fused`, those it has), checked as PyTorch checks them, as the
    group options PyTorch keeps (they print in the optimizer's repr and its state_dict).

    `fused=True` runs ember's list ops (the fused kernels where the backend has them);
    `capturable=True` keeps the step count on the parameter's device and the update
    never reads it into Python; `differentiable=True` records the update for autograd
    (the optimizers in `_DIFFERENTIABLE`; the others refuse it)."""
    if flags.get("fused") and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if flags.get("fused") and flags.get("differentiable"):
        raise RuntimeError("`fused` does not support `differentiable`")
    if flags.get("differentiable") and name not in _DIFFERENTIABLE:
        raise NotImplementedError(f"{name}(differentiable=True): ember records the update "
                                  f"for autograd in {', '.join(_DIFFERENTIABLE)} only")
    return flags


def _use_foreach(group: dict[str, Any], *, autograd_refused: bool = True) -> bool:
    """Whether a group's update runs on the list ("foreach") ops: by default (`foreach`
    None or True); `foreach=False` asks for the per-tensor loop, and so does a
    differentiable group (list ops record no autograd). Asking for both raises
    PyTorch's error, where its optimizer refuses them (`autograd_refused`)."""
    if group.get("differentiable"):
        if autograd_refused and group.get("foreach"):
            raise AssertionError("_foreach ops don't support autograd")
        return False
    return group.get("foreach") is not False


def check_fused(p: Tensor) -> None:
    """PyTorch's check of a parameter in a ``fused=True`` group (at its first step)."""
    if not p.is_floating_point() or p.device.type == "meta":
        raise RuntimeError("`fused=True` requires all the params to be floating point "
                           f"Tensors of supported devices: {_FUSED_DEVICES} but {p.dtype} "
                           f"and {p.device.type}")


# how PyTorch's capturable error names an optimizer's tensors and devices, where it differs
_CAPTURABLE_WORDING = {
    "NAdam": ("params, mu_products and state_steps", _CAPTURABLE_DEVICES),
    "ASGD": ("params, mus, etas, and state_steps", _CAPTURABLE_DEVICES),
    "Adadelta": ("params and state_steps", ["cuda", "xpu", "hpu", "privateuseone"]),
}


def check_capturable(params: list[Tensor], steps: list[Tensor], optimizer: str = "") -> None:
    """PyTorch's check of a ``capturable=True`` group: each parameter and its step count
    on one device that is not the CPU (or meta); the error words it as `optimizer`'s."""
    what, devices = _CAPTURABLE_WORDING.get(optimizer, ("params and state_steps",
                                                        _CAPTURABLE_DEVICES))
    for p, step in zip(params, steps):
        kind = p.device.type
        if kind in ("cpu", "meta") or step.device.type != kind:
            raise AssertionError(f"If capturable=True, {what} must be on supported "
                                 f"devices: {devices}.")


def refuse_sparse(grad: Any, optimizer: str, hint: str = "") -> None:
    """PyTorch's error of an optimizer without a sparse path given a sparse gradient
    (`nn.Embedding(sparse=True)`'s): raised before the parameter's state changes."""
    if grad.is_sparse:
        raise RuntimeError(f"{optimizer} does not support sparse gradients{hint}")


def scalar_dtype() -> Any:
    """PyTorch's dtype of an optimizer's scalar state (``step``, NAdam's ``mu_product``,
    ASGD's ``eta`` and ``mu``): float64 under a float64 default dtype, else float32."""
    return float64 if get_default_dtype() is float64 else float32


def new_scalar(value: float, device: Any = None, *, fused: bool = False) -> Tensor:
    """A 0-d scalar-state tensor as PyTorch's optimizers make it (``tensor(0.)``): on the
    CPU, or on `device` (a parameter's, for ``capturable``/``fused`` groups and ASGD);
    always float32 in a ``fused`` group (PyTorch's ``_get_scalar_dtype(is_fused=True)``)."""
    return tensor(float(value), dtype=float32 if fused else scalar_dtype(), device=device)


def on_device(group: dict[str, Any]) -> bool:
    """Whether a group keeps its step counts on the parameters' device (PyTorch's
    ``capturable`` and ``fused`` groups); else they live on the CPU."""
    return bool(group.get("capturable") or group.get("fused"))


def count_steps(steps: list[Tensor], read: bool = True) -> list[float]:
    """Advance each step-count tensor by one in place (PyTorch's ``step_t += 1``, one list
    op for the group) and return the new counts as Python floats (its ``_get_value``);
    with `read` False (a capturable group's) they are not read back: returns []."""
    if len(steps) > 1 and all(s.device == steps[0].device and s.dtype is steps[0].dtype
                              for s in steps):
        fe._foreach_add_(steps, 1)
    else:
        for s in steps:
            s.add_(1)
    return [s.item() for s in steps] if read else []


def _advance(state: dict, group: dict[str, Any], buffers: tuple[str, ...],
             scalars: dict[str, float] | None = None, *, optimizer: str,
             read_steps: bool = True) -> tuple[list, list, list, list, list]:
    """One step's lists for a parameter group: the parameters that have a gradient, their
    gradients, one list per state buffer named in `buffers`, their step counts (Python
    floats, this step counted), and their state dicts. At a parameter's first step its
    state is made as PyTorch makes it: `step` a 0-d tensor 0., then `scalars` as 0-d
    tensors, then each buffer as zeros like the parameter (PyTorch's order of state keys).
    Each step tensor is advanced by one (and read back unless `read_steps` is False: the
    counts are then []). A sparse gradient raises `optimizer`'s error."""
    params, grads, steps, states = [], [], [], []
    for p in group["params"]:
        if p.grad is None:
            continue
        refuse_sparse(p.grad, optimizer)
        pstate = state[p]
        if not pstate:
            device = p.device if on_device(group) else None
            pstate["step"] = new_scalar(0.0, device)
            for name, value in (scalars or {}).items():
                pstate[name] = new_scalar(value, device)
            for name in buffers:
                pstate[name] = zeros_like(p)
        params.append(p)
        grads.append(p.grad)
        steps.append(pstate["step"])
        states.append(pstate)
    if group.get("capturable"):
        check_capturable(params, steps, optimizer)
    return (params, grads, [[s[name] for s in states] for name in buffers],
            count_steps(steps, read_steps), states)


def _buckets(*lists: list) -> list[tuple[list, ...]]:
    """Split parallel lists (the first holding the parameters) into runs whose parameters
    share one device and dtype, as the foreach ops need. Usually there is just one."""
    params = lists[0]
    device, dtype = params[0].device, params[0].dtype
    if all(p.device is device and p.dtype is dtype for p in params):
        return [lists]
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(params):
        groups.setdefault((p.device, p.dtype), []).append(i)
    return [tuple([lst[i] for i in idx] for lst in lists) for idx in groups.values()]


def _view_as_real(*lists: list) -> tuple[list, ...]:
    """The lists with each complex tensor replaced by its real view (`view_as_real`), as
    PyTorch's optimizers update a complex parameter: its real and imaginary parts as
    independent real parameters (the updates write through the views)."""
    from ember.core.ops.complex import view_as_real

    return tuple([view_as_real(t) if t is not None and t.is_complex() else t for t in lst]
                 for lst in lists)


def _per_step(steps: list[float], fn: Callable[[float], float]) -> float | list[float]:
    """`fn(step)` as one scalar when every tensor is at the same step (the usual case),
    else one scalar per tensor."""
    first = steps[0]
    if all(s == first for s in steps):
        return fn(first)
    return [fn(s) for s in steps]


def penalized_grad(p: Tensor, grad: Tensor, lr: float, weight_decay: float, maximize: bool,
                   decoupled: bool) -> Tensor:
    """One parameter's gradient negated for `maximize`, with L2 weight decay added, or
    the parameter itself decayed in place when `decoupled` (AdamW's): the per-tensor
    updates' common first lines, in PyTorch's order."""
    if maximize:
        grad = -grad
    if weight_decay != 0:
        if decoupled:
            p.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(p, alpha=weight_decay)
    return grad


def _foreach_penalized_grads(params: list[Tensor], grads: list[Tensor],
                             weight_decay: float, maximize: bool) -> list[Tensor]:
    """The gradients negated when maximizing, plus the L2 penalty ``weight_decay * p``,
    as new tensors when either applies (``p.grad`` itself is never written)."""
    if maximize:
        grads = fe._foreach_neg(grads)
    if weight_decay != 0:
        if maximize:
            fe._foreach_add_(grads, params, alpha=weight_decay)
        else:
            grads = fe._foreach_add(grads, params, alpha=weight_decay)
    return grads


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", "__builtin__") else f"{module}.{name}"


class Optimizer:
    r"""Base class for all optimizers.

    Args:
        params (iterable): an iterable of :class:`ember.Tensor` s, of ``(name, tensor)``
            pairs, or of dicts. Dicts define parameter groups: each has a ``"params"``
            entry and may override any of ``defaults`` for its parameters.
        defaults (dict): the default values of the optimization options, used by groups
            that do not set them.

    Subclasses implement :meth:`step`; per-parameter state lives in ``self.state[p]``.

    .. note::
        Parameters must be given in a deterministic order (a list, not a set), so that
        :meth:`state_dict` refers to them by stable integer indices.
    """

    _in_hooked_step = False
    _opt_called = False
    # the state entries PyTorch holds as 0-d tensors (an older checkpoint's numbers are
    # turned into them on load, as each PyTorch optimizer's __setstate__ does)
    _scalar_state: tuple[str, ...] = ("step",)
    _HOOK_DICTS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                   "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                   "_optimizer_load_state_dict_pre_hooks",
                   "_optimizer_load_state_dict_post_hooks")
    # options added to a subclass after its first version: a group unpickled from an older
    # optimizer gets these defaults (PyTorch's subclasses each override __setstate__ for it)
    _option_defaults: dict[str, Any] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        for name in self._HOOK_DICTS:
            setattr(self, name, OrderedDict())
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict[Tensor, Any] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # -- pickling and printing ----------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in self._HOOK_DICTS:
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for name, value in self._option_defaults.items():
                group.setdefault(name, value)
            for p in group["params"]:
                pstate = self.state.get(p)
                for name in self._scalar_state if pstate else ():
                    value = pstate.get(name)
                    if value is not None and not isinstance(value, Tensor):
                        pstate[name] = new_scalar(value, self._scalar_device(group, p),
                                                  fused=bool(group.get("fused")))

    def _scalar_device(self, group: dict[str, Any], p: Tensor) -> Any:
        """Where a parameter's scalar state lives: PyTorch's choice (the CPU, but the
        parameter's device in ``capturable`` and ``fused`` groups)."""
        return p.device if on_device(group) else None

    def __repr__(self) -> str:
        out = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            out += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    out += f"    {key}: {group[key]}\n"
        return out + ")"

    # -- parameter groups ---------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group to :attr:`param_groups`.

        Useful when fine-tuning: frozen layers can be made trainable and added as training
        goes on. Options the group does not set take the optimizer's defaults.

        Args:
            param_group (dict): the group's ``"params"`` (a tensor, or an ordered iterable
                of tensors or of ``(name, tensor)`` pairs) and its own options.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            param_group["param_names"] = names

        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            # (a differentiable optimizer updates non-leaf tensors: a clone of the weights)
            if not (self.defaults.get("differentiable") or param.is_leaf
                    or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        if len(tensors) != len(set(tensors)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        seen: set[Tensor] = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(tensors):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)

    # -- gradients ----------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors.

        Args:
            set_to_none (bool): set the grads to ``None`` instead of filling them with
                zeros (default). This frees memory, and an optimizer skips a parameter
                whose grad is ``None`` (a zero grad still moves it under momentum or
                weight decay).
        """
        for group in self.param_groups:
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                if set_to_none:
                    p._grad = None  # (the `grad` setter checks only a tensor it is given)
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    def _eval_closure(self, closure: Callable[[], Any] | None) -> Any:
        """Run `closure` (which recomputes the loss and its gradients) with grad enabled."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _update_mode(self) -> no_grad | enable_grad:
        """The grad mode a step's update runs in (PyTorch's `_use_grad_for_differentiable`):
        recorded by autograd in a ``differentiable=True`` optimizer, else not recorded."""
        return enable_grad() if self.defaults.get("differentiable") else no_grad()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step (update every parameter that has a grad).

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss;
                it runs with grad enabled before the update, and its loss is returned.
        """
        raise NotImplementedError

    # -- hooks --------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register `hook(optimizer, args, kwargs)` to run before this optimizer's `step`.

        It may return ``(new_args, new_kwargs)`` to replace the step's arguments.
        """
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register `hook(optimizer, args, kwargs)` to run after this optimizer's `step`."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False
                                     ) -> RemovableHandle:
        """Register `hook(optimizer)` to run before :meth:`state_dict` builds the dict.

        Args:
            hook (Callable): the hook.
            prepend (bool): run it before the hooks already registered (default: False).
        """
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False
                                      ) -> RemovableHandle:
        """Register `hook(optimizer, state_dict) -> state_dict or None` to run after
        :meth:`state_dict`: it may change the dict in place or return a new one."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False
                                          ) -> RemovableHandle:
        """Register `hook(optimizer, state_dict) -> state_dict or None` to run before
        :meth:`load_state_dict` (given a shallow copy of the dict; a returned dict is
        loaded instead)."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False
                                           ) -> RemovableHandle:
        """Register `hook(optimizer)` to run after :meth:`load_state_dict` has loaded."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- checkpoints --------------------------------------------------------------------
    def state_dict(self) -> StateDict:
        """The optimizer's state as a dict, in PyTorch's layout.

        ``{"state": {index: {name: value}}, "param_groups": [{..., "params": [index]}]}``:
        parameters are referred to by their position across all groups (0, 1, ...), so
        the dict can be loaded into a fresh optimizer built over the same parameters in
        the same order. State tensors are not copied (as in PyTorch): save or copy the
        dict before stepping again if you need a snapshot.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            mapping.update({id(p): i for i, p in enumerate(group["params"], start)
                            if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: StateDict) -> None:
        """Load a state produced by :meth:`state_dict` (of an optimizer of the same kind
        over parameters of the same shapes, in the same order and groups).

        As PyTorch: state tensors are moved to each parameter's device (floating-point ones
        in the parameter's dtype; a tensor already there is kept, not copied); a ``step``
        stays as saved, but becomes float32 on the parameter's device in ``capturable`` or
        ``fused`` groups; numbers an older checkpoint holds for ``step`` become tensors.

        .. warning::
            Construct LR schedulers *before* loading, since creating one resets the
            groups' ``lr``.
        """
        state_dict = state_dict.copy()  # shallow, as the module API's
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")

        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param: Tensor, value: Any, step_on_device: bool, key: Any = None) -> Any:
            if isinstance(value, Tensor):
                if key == "step":
                    return value.to(dtype=float32, device=param.device) if step_on_device \
                        else value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, step_on_device, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, step_on_device) for v in value)
            return value

        state: defaultdict[Any, Any] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                saved = next((g for g in state_dict["param_groups"] if k in g["params"]), {})
                state[id_map[k]] = cast(id_map[k], v, on_device(saved))
            else:
                state[k] = v

        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)
