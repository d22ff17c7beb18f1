"""Tensor.register_post_accumulate_grad_hook and the engine's final callbacks
(ember.autograd.queue_callback), against PyTorch."""

import pytest

import ember
from ember.autograd import queue_callback

torch = pytest.importorskip("torch")


def _run(lib, queue):
    """Two leaves, one used twice; per backward pass, what each hook saw (sorted: the order
    of independent leaves is the engine's) and then what the final callback saw."""
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([0.5, -1.0], requires_grad=True)
    passes, posts = [], []

    def finish():
        passes.append((sorted(posts), w.grad.tolist(), b.grad.tolist()))
        posts.clear()

    def hook(t):
        if not posts:
            queue(finish)
        posts.append(("w" if t is w else "b", t.grad.tolist()))

    handles = [w.register_post_accumulate_grad_hook(hook),
               b.register_post_accumulate_grad_hook(hook)]
    ((w * w + b) * 3).sum().backward()
    ((w * w + b) * 3).sum().backward()  # a second pass accumulates: the hooks see the sums
    handles[1].remove()
    (w * b).sum().backward()
    return passes


def test_hooks_and_callbacks_see_what_torchs_see():
    ours = _run(ember, queue_callback)
    assert ours == _run(torch, torch.autograd.Variable._execution_engine.queue_callback)
    assert len(ours) == 3 and ours[2][0] == [("w", [12.5, 23.0])]


def test_callbacks_run_in_order_and_may_queue_more():
    x = ember.ones(2, requires_grad=True)
    order = []

    def first():
        order.append(1)
        queue_callback(lambda: order.append(3))

    x.register_post_accumulate_grad_hook(lambda t: (queue_callback(first),
                                                    queue_callback(lambda: order.append(2))))
    x.sum().backward()
    assert order == [1, 2, 3]


def test_autograd_grad_runs_no_post_accumulate_hook():
    x = ember.ones(2, requires_grad=True)
    calls = []
    x.register_post_accumulate_grad_hook(calls.append)
    ember.autograd.grad(x.sum(), x)
    assert calls == [] and x.grad is None
    x.sum().backward(inputs=[x])
    assert calls == [x]


def test_errors_are_torchs():
    with pytest.raises(RuntimeError, match="non-leaf"):
        (ember.ones(2, requires_grad=True) * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ember.ones(2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError,
                       match="Final callbacks can only be installed during backward pass."):
        queue_callback(print)
