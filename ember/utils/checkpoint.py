"""Activation checkpointing with PyTorch's API (`torch.utils.checkpoint`).

ember runs the checkpointed function once, recording its graph as usual: programs that
checkpoint get the values and gradients they get under PyTorch (dropout included), but not
the memory saving. Recomputing in backward needs the generator's state saved and restored
around the recomputation, so that dropout draws the same mask; ember will recompute once
its CPU generator offers that state (`get_rng_state`/`set_rng_state`). PyTorch's argument
checks and warnings are kept, so a program sees the same messages.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import ember

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    r"""Checkpoint a model or part of the model (ember runs it once: see the module's notes).

    Args:
        function: describes what to run in the forward pass of the model or part of the
            model. It should also know how to handle the inputs passed as the tuple.
        args: tuple containing inputs to the :attr:`function`
        use_reentrant (bool): PyTorch's choice of variant; pass it explicitly, as PyTorch
            asks (a warning otherwise). Both give PyTorch's values and gradients (the
            reentrant one none when no input requires grad, as PyTorch's).
        preserve_rng_state (bool): PyTorch's flag; ember draws once, so dropout is
            always consistent.
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
    for name in ("context_fn", "determinism_check", "debug", "early_stop"):
        kwargs.pop(name, None)
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        if not any(isinstance(a, ember.Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
            # PyTorch's reentrant variant is an autograd Function run under no_grad: with
            # no input requiring grad its outputs do not either, and the parameters used
            # inside get no gradient
            with ember.no_grad():
                return function(*args)
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
    """
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
                           use_reentrant=use_reentrant, **kwargs)
    return run_function(end + 1, len(functions) - 1, functions)(input)
