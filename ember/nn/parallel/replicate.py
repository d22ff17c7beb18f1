"""Copies of a module on other devices whose parameters are differentiable copies of the
original's, so a backward through a replica accumulates into the original `.grad`."""

from __future__ import annotations

import ember
from ember.nn.module import Module


def replicate(module: Module, device: ember.device) -> Module:
    """A shallow copy of `module`'s tree on `device`: parameters are `p.to(device)` (graph
    nodes leading back to `p`), buffers are copies. Submodules shared in the original
    stay shared in the copy."""
    copies: dict[int, Module] = {}
    params: dict[int, ember.Tensor] = {}

    def copy(m: Module) -> Module:
        if id(m) in copies:
            return copies[id(m)]
        r = m.__new__(type(m))
        r.__dict__ = m.__dict__.copy()
        copies[id(m)] = r
        r._parameters = {}
        for name, p in m._parameters.items():
            if p is not None and id(p) not in params:
                params[id(p)] = p.to(device)
            r._parameters[name] = None if p is None else params[id(p)]
        r._buffers = {name: None if b is None else b.detach().to(device)
                      for name, b in m._buffers.items()}
        r._modules = {name: None if c is None else copy(c) for name, c in m._modules.items()}
        return r

    return copy(module)
