"""ONNX import converters: the `ai.onnx.preview.training` domain. Gradient differentiates
with ember's autograd; the optimizer updates (Adagrad, Adam, Momentum) take the learning
rate R, the step count T, then groups of tensors (parameters, gradients, state), and
return the updated parameters and states, as onnx's reference does."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.exporters.onnx_import_context import ImportContext
from ember.exporters.onnx_registry import importer

TRAINING = "ai.onnx.preview.training"


def _groups(tensors: tuple, n_per: int) -> list[tuple]:
    n = len(tensors) // n_per
    return [tuple(tensors[i + k * n] for k in range(n_per)) for i in range(n)]


def _regroup(results: list[tuple]) -> tuple:
    return tuple(r[k] for k in range(len(results[0])) for r in results)


@importer("Adagrad", since=1, domain=TRAINING)
def _adagrad(ctx: ImportContext, r: Any, t: Any, *tensors: Any) -> Any:
    rate, step = float(ctx.scalar(r)), float(ctx.scalar(t))
    decay, eps = ctx.attr("decay_factor", 0.0), ctx.attr("epsilon", 0.0)
    norm = ctx.attr("norm_coefficient", 0.0)
    lr = rate / (1 + step * decay)
    out = []
    for x, g, h in _groups(tensors, 3):
        g = norm * x + g
        h = h + g * g
        out.append((x - lr * g / (ember.sqrt(h) + eps), h))
    return _regroup(out)


@importer("Adam", since=1, domain=TRAINING)
def _adam(ctx: ImportContext, r: Any, t: Any, *tensors: Any) -> Any:
    rate, step = float(ctx.scalar(r)), float(ctx.scalar(t))
    alpha, beta = ctx.attr("alpha", 0.9), ctx.attr("beta", 0.999)
    eps = ctx.attr("epsilon", 0.0)
    norm, post = ctx.attr("norm_coefficient", 0.0), ctx.attr("norm_coefficient_post", 0.0)
    lr = rate * math.sqrt(1 - beta ** step) / (1 - alpha ** step) if step > 0 else rate
    out = []
    for x, g, v, h in _groups(tensors, 4):
        g = norm * x + g
        v = alpha * v + (1 - alpha) * g
        h = beta * h + (1 - beta) * g * g
        out.append(((1 - post) * (x - lr * v / (ember.sqrt(h) + eps)), v, h))
    return _regroup(out)


@importer("Momentum", since=1, domain=TRAINING)
def _momentum(ctx: ImportContext, r: Any, t: Any, *tensors: Any) -> Any:
    rate, step = float(ctx.scalar(r)), float(ctx.scalar(t))
    alpha, beta = ctx.attr("alpha"), ctx.attr("beta")
    norm = ctx.attr("norm_coefficient")
    nesterov = ctx.attr("mode", "standard") == "nesterov"
    beta = beta if step > 0 else 1
    out = []
    for x, g, v in _groups(tensors, 3):
        g = norm * x + g
        v = alpha * v + beta * g
        out.append((x - rate * ((g + alpha * v) if nesterov else v), v))
    return _regroup(out)


@importer("Gradient", since=1, domain=TRAINING)
def _gradient(ctx: ImportContext, *xs: Any) -> Any:
    """d y / d xs: the nodes that compute `y` run again from fresh leaves for `xs`, and
    ember's autograd differentiates them."""
    names, target = ctx.attr("xs"), ctx.attr("y")
    with ember.enable_grad():
        leaves = {n: x.detach().requires_grad_() for n, x in zip(names, xs)}
        y = ctx.recompute(target, leaves)
        grads = ember.autograd.grad(y, list(leaves.values()), ember.ones_like(y),
                                    allow_unused=True)
    return tuple(ember.zeros_like(x) if g is None else g for g, x in zip(grads, xs))
