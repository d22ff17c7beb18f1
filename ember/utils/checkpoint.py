"""Activation checkpointing with PyTorch's API (`torch.utils.checkpoint`): both variants
free the checkpointed function's activations after forward and rerun it in backward, as
PyTorch's do.

The non-reentrant variant (``use_reentrant=False``) runs the function once in forward under
`saved_tensors_hooks` whose pack hook keeps only a numbered holder per tensor the graph
saves; the first unpack in backward runs the function again, collecting what it saves, in
order, and each holder hands back its recomputed tensor. The recomputation must save as
many tensors, of the same shapes, dtypes and devices, as the forward did (a
`CheckpointError` otherwise, as in PyTorch). The reentrant variant (`CheckpointFunction`)
runs the function under no_grad in forward; its backward reruns it on detached inputs and
backpropagates through that graph. Either recomputation replays the forward's CPU
generator state (so dropout draws the same mask) and autocast state. Accelerator backends
keep their own generators, which are not replayed. PyTorch's argument checks, warnings
and messages are kept.
"""

from __future__ import annotations

import contextlib
import enum
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import ember

__all__ = ["CheckpointError", "CheckpointFunction", "CheckpointPolicy",
           "SelectiveCheckpointContext", "checkpoint", "checkpoint_sequential",
           "create_selective_checkpoint_contexts", "detach_variable", "get_device_states",
           "noop_context_fn", "set_checkpoint_debug_enabled", "set_checkpoint_early_stop",
           "set_device_states"]

_DEBUG_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint\u2011debug mode globally.

If this error occurs under torch.compile with automatic_dynamic_shapes enabled,
it may be because the recomputation selected a different compiled graph than the
forward pass (e.g., a dynamic graph instead of the original static graph).
To fix this, either:
  - Use torch._dynamo.mark_dynamic() to explicitly mark varying dimensions as
    dynamic upfront, avoiding the static-to-dynamic transition.
  - Call torch._C._dynamo.eval_frame._set_lru_cache(False) to disable LRU cache
    reordering, which can change which graph is checked first between forward
    and recompute.
See https://github.com/pytorch/pytorch/issues/166926 for more details and
workaround examples.
"""


_early_stop: bool | None = None  # set_checkpoint_early_stop's setting (None: none set)


class _StopRecomputation(Exception):
    """Raised by the recomputation's pack hook once it has every tensor backward needs."""


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    """Context manager: whether non-reentrant checkpoints made inside it stop recomputing
    once every tensor the backward needs is recomputed (overriding their ``early_stop=``,
    as in PyTorch)."""
    global _early_stop
    outer, _early_stop = _early_stop, enable
    try:
        yield
    finally:
        _early_stop = outer


_checkpoint_debug_enabled: bool | None = None  # set_checkpoint_debug_enabled's setting


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    """Context manager that sets whether checkpoint should print additional debug
    information when running (overriding the ``debug`` flag of every call; ``None``
    defers to it). ember's checkpoint errors carry no operator trace either way."""
    global _checkpoint_debug_enabled
    outer, _checkpoint_debug_enabled = _checkpoint_debug_enabled, enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = outer


def detach_variable(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """The tensors of `inputs` detached, each keeping its ``requires_grad`` (other values
    as they are): the inputs a hand-written checkpoint reruns its function on."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if isinstance(inp, ember.Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


def get_device_states(*args: Any) -> tuple[list[int], list[Any]]:
    """The accelerator devices of the tensors among `args` and their generators' states,
    for `set_device_states` (reversible networks replay dropout with them). CPU tensors
    add none (the CPU generator is `torch.get_rng_state`'s), and ember's accelerator
    backends keep generators that cannot be saved, so none is listed."""
    return [], []


def set_device_states(devices: list[int], states: list[Any], *,
                      device_type: str | None = None) -> None:
    """Restores what `get_device_states` returned (nothing on ember, see there)."""


def noop_context_fn() -> tuple[Any, Any]:
    """`checkpoint`'s default `context_fn`: no context around the forward run, none around
    the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


class CheckpointPolicy(enum.Enum):
    """Whether selective checkpointing saves an op's output or recomputes it in backward
    (``MUST_*`` over ``PREFER_*``: not to be overridden by `torch.compile`)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


class SelectiveCheckpointContext:
    """Context passed to a selective-checkpointing policy function."""

    def __init__(self, *, is_recompute: bool, op_output: Any = None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


def create_selective_checkpoint_contexts(policy_fn_or_list: Callable | list,
                                         allow_cache_entry_mutation: bool = False
                                         ) -> tuple[Any, Any]:
    """Helper to avoid recomputing certain ops during activation checkpointing: the
    ``context_fn`` of a non-reentrant `checkpoint`.

    Args:
        policy_fn_or_list (Callable or List): a function of (`SelectiveCheckpointContext`,
            op, args, kwargs) returning a `CheckpointPolicy`, or a list of ops to save.
        allow_cache_entry_mutation (bool, optional): allow mutating cached tensors.

    Returns:
        A tuple of two context managers.

    ember has no dispatch below autograd to intercept single ops, so every op is
    recomputed (what a policy of ``PREFER_RECOMPUTE`` everywhere does): values and
    gradients are PyTorch's; only the memory the saved ops would have kept differs.
    """
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not callable(op):
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} "
                                 f"of type {type(op)}. ")
    elif not callable(policy_fn_or_list):
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    return contextlib.nullcontext(), contextlib.nullcontext()


class CheckpointError(RuntimeError):
    """The recomputation in backward did not save what the checkpointed forward saved."""


class _Holder:
    """What the graph keeps for one tensor saved inside a checkpoint: its position."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _metadata(t: Any) -> dict:
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


class _ForwardState:
    """What a recomputation must replay of the forward it repeats: the CPU generator's
    state (when `preserve_rng_state`) and autocast's state on the devices involved."""

    def __init__(self, args: tuple, preserve_rng_state: bool) -> None:
        self.rng_state = ember.get_rng_state() if preserve_rng_state else None
        from ember.amp import autocast_mode as amp  # (amp sits beside utils)
        devices = {"cpu"} | {a.device.type for a in args if isinstance(a, ember.Tensor)}
        self.autocast = [(d, amp.is_autocast_enabled(d), amp.get_autocast_dtype(d))
                         for d in sorted(devices) if amp.is_autocast_available(d)]

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        """Grad mode on, the forward's autocast state, and its generator state (the
        current one restored on leaving)."""
        from ember.amp import autocast
        state = ember.get_rng_state() if self.rng_state is not None else None
        try:
            if state is not None:
                ember.set_rng_state(self.rng_state)
            with contextlib.ExitStack() as stack:
                for device, enabled, dtype in self.autocast:
                    stack.enter_context(autocast(device, dtype=dtype, enabled=enabled))
                stack.enter_context(ember.enable_grad())
                yield
        finally:
            if state is not None:
                ember.set_rng_state(state)


class CheckpointFunction(ember.autograd.Function):
    """The reentrant variant (PyTorch's CheckpointFunction): the function runs under
    no_grad in forward; backward reruns it on detached inputs and backpropagates through
    that graph (a backward inside the backward), handing on the inputs' gradients."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool,
                *args: Any) -> Any:
        ctx.run_function = run_function
        ctx.forward_state = _ForwardState(args, preserve_rng_state)
        ctx.inputs = [None if isinstance(a, ember.Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, ember.Tensor)]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
        with ember.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        if not ember.autograd._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                "or passing an `inputs` parameter to .backward(). To resolve this error, you "
                "can either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = tensor.detach().requires_grad_(tensor.requires_grad)
        with ctx.forward_state.replay():
            outputs = ctx.run_function(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(out, grad) for out, grad in zip(outputs, grads)
                 if isinstance(out, ember.Tensor) and out.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        ember.autograd.backward([out for out, _ in pairs], [grad for _, grad in pairs])
        return (None, None, *[a.grad if isinstance(a, ember.Tensor) else None
                              for a in inputs])


class _Frame:
    """One non-reentrant checkpointed call: how to rerun it exactly as the forward ran it,
    what its forward saved (metadata only), and the recomputed tensors not yet unpacked."""

    def __init__(self, function: Callable, args: tuple, kwargs: dict,
                 preserve_rng_state: bool, check_metadata: bool,
                 recompute_context: Any, early_stop: bool) -> None:
        self.function, self.args, self.kwargs = function, args, kwargs
        self.early_stop = early_stop
        self.check_metadata, self.recompute_context = check_metadata, recompute_context
        self.forward_state = _ForwardState(args, preserve_rng_state)
        self.saved_meta: list[dict] = []
        self.recomputed: dict[int, Any] = {}

    def pack(self, tensor: Any) -> _Holder:
        self.saved_meta.append(_metadata(tensor))
        return _Holder(len(self.saved_meta) - 1)

    def unpack(self, holder: _Holder) -> Any:
        if holder.index not in self.recomputed:  # first unpack of this backward
            self.recompute()
        return self.recomputed.pop(holder.index)

    def recompute(self) -> None:
        saved: list = []

        def pack(tensor: Any) -> Any:
            if len(saved) >= len(self.saved_meta):
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during "
                    "recomputation than during the original forward pass.\n" + _DEBUG_TIP)
            saved.append(tensor.detach() if tensor.requires_grad else tensor)
            if self.early_stop and len(saved) == len(self.saved_meta):
                raise _StopRecomputation  # (the rest of the function is not rerun)
            return tensor

        from ember.autograd.graph import saved_tensors_hooks
        try:
            with self.forward_state.replay(), saved_tensors_hooks(pack, lambda t: t), \
                    self.recompute_context:
                self.function(*self.args, **self.kwargs)
        except _StopRecomputation:
            pass
        if len(saved) != len(self.saved_meta):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.saved_meta)}\n"
                f"Number of tensors saved during recomputation: {len(saved)}.\n{_DEBUG_TIP}")
        mismatched = "".join(
            f"tensor at position {i}:\nsaved metadata: {want}\n"
            f"recomputed metadata: {_metadata(t)}\n"
            for i, (want, t) in enumerate(zip(self.saved_meta, saved))
            if self.check_metadata and _metadata(t) != want)
        if mismatched:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{mismatched}.\n{_DEBUG_TIP}")
        self.recomputed = dict(enumerate(saved))


# the values `determinism_check` takes ("default": shapes, dtypes and devices must match)
_DETERMINISM_CHECKS = ("default", "none")


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    r"""Checkpoint a model or part of the model: with ``use_reentrant=False`` its activations
    are not kept but recomputed in backward (see the module's notes).

    Args:
        function: describes what to run in the forward pass of the model or part of the
            model. It should also know how to handle the inputs passed as the tuple.
        args: tuple containing inputs to the :attr:`function`
        use_reentrant (bool): PyTorch's choice of variant; pass it explicitly, as PyTorch
            asks (a warning otherwise). Both give PyTorch's values and gradients (the
            reentrant one none when no input requires grad, as PyTorch's).
        preserve_rng_state (bool): rerun the function in backward with the CPU generator's
            state of the forward, so dropout draws the same mask. Default: ``True``
        context_fn (Callable, optional): returns two context managers, entered around the
            forward run and around the recomputation (``use_reentrant=False`` only).
        early_stop (bool): stop the recomputation once every tensor the backward needs is
            recomputed (default ``True``; see `set_checkpoint_early_stop`).
        determinism_check (str): ``"default"`` checks that the recomputation saves tensors
            of the forward's shapes, dtypes and devices; ``"none"`` does not.
        kwargs: keyword arguments of :attr:`function` (``use_reentrant=False`` only, as in
            PyTorch).

    Returns:
        Output of running :attr:`function` on :attr:`*args`
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for "
            "more details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    determinism_check = kwargs.pop("determinism_check", "default")
    context_fn = kwargs.pop("context_fn", noop_context_fn)
    debug = kwargs.pop("debug", False)
    early_stop = kwargs.pop("early_stop", True)
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        if not any(isinstance(a, ember.Tensor) and a.requires_grad for a in args):
            # (its outputs then require no grad: the parameters inside get no gradient)
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    debugging = _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug
    if debugging and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, "
                         f"but got {determinism_check}")
    if not ember.is_grad_enabled():  # nothing is saved: nothing to recompute
        return function(*args, **kwargs)
    from ember.autograd.graph import saved_tensors_hooks
    forward_context, recompute_context = context_fn()
    frame = _Frame(function, args, kwargs, preserve_rng_state, determinism_check != "none",
                   recompute_context, early_stop if _early_stop is None else _early_stop)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs: Any):
    r"""Checkpoint a sequential model in `segments` chunks; the last chunk runs normally.

    Args:
        functions: A :class:`torch.nn.Sequential` or the list of modules or functions
            (comprising the model) to run sequentially.
        segments: Number of chunks to create in the model
        input: A Tensor that is input to :attr:`functions`
        use_reentrant (bool): as in :func:`checkpoint`.
        preserve_rng_state (bool, optional): as in :func:`checkpoint`. Default: ``True``
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve "
            "the current default behavior, you can pass use_reentrant=True. Refer to docs for "
            "more details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:  # PyTorch passes no keyword arguments on to the modules
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, ember.nn.Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
