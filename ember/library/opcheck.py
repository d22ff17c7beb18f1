"""`torch.library.opcheck`: PyTorch's basic checks of a custom operator's registrations,
run on example arguments: mutation matches the schema, the fake kernel agrees with the
real one, and autograd (when an input requires grad) runs through."""

from __future__ import annotations

from typing import Any

from ember.core.tensor import Tensor
from ember.library.fake_impl import DynamicOutputShapeException, fake_mode
from ember.library.operator import Operator
from ember.library.registry import lookup

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                      "test_aot_dispatch_dynamic")


class OpCheckError(Exception):
    """A check of `opcheck` failed."""


def _operator(op: Any) -> Operator:
    if isinstance(op, str):
        return lookup(op)
    if isinstance(getattr(op, "_op", None), Operator):  # a CustomOpDef or an OpOverload
        return op._op
    if hasattr(op, "_qualified_op_name"):
        return lookup(op._qualified_op_name)
    raise ValueError(f"opcheck(op, ...): op must be a custom op or an OpOverload, got {op!r}")


def _map(x: Any, fn: Any) -> Any:
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_map(v, fn) for v in x)
    if isinstance(x, dict):
        return {k: _map(v, fn) for k, v in x.items()}
    return x


def _clone(t: Tensor) -> Tensor:
    out = t.detach().clone()
    return out.requires_grad_(t.requires_grad) if t.is_leaf else out


def _outputs(out: Any) -> list[Tensor]:
    return [o for o in (out if isinstance(out, (tuple, list)) else (out,))
            if isinstance(o, Tensor)]


def _test_schema(op: Operator, args: tuple, kwargs: dict) -> None:
    before = _map((args, kwargs), lambda t: t.detach().clone())
    op(*args, **kwargs)
    mutable = {a.name for a in op.schema.arguments if a.is_mutable}
    names = [a.name for a in op.schema.arguments]
    values = list(args) + [kwargs.get(n) for n in names[len(args):]]
    old = list(before[0]) + [before[1].get(n) for n in names[len(args):]]
    for name, new, was in zip(names, values, old):
        if isinstance(new, Tensor) and name not in mutable and new.device.type != "meta" \
                and not bool((new.detach() == was).all() | (new.isnan() & was.isnan()).all()):
            raise AssertionError(f"Argument {name} is not defined as mutable but was mutated")


def _test_autograd_registration(op: Operator, args: tuple, kwargs: dict) -> None:
    needs = any(t.requires_grad for t in _outputs(list(args) + list(kwargs.values())))
    if needs and not op.custom and op.implicit is None and op.autograd_kernel is None \
            and op.backward is None:
        raise AssertionError(f"{op.qualname}: at least one input tensor requires grad but "
                             "the operator has no autograd registration")


def _test_faketensor(op: Operator, args: tuple, kwargs: dict) -> None:
    real = _outputs(op(*_map(args, _clone), **_map(kwargs, _clone)))
    try:
        with fake_mode():
            fake = _outputs(op.run_kernel(*_bound_meta(op, args, kwargs)))
    except DynamicOutputShapeException:
        return  # a data-dependent output shape (ctx.new_dynamic_size()): nothing to compare
    for r, f in zip(real, fake):
        if tuple(r.shape) != tuple(f.shape):
            raise AssertionError(
                f"When comparing the output of {op.dotted} on FakeTensor and concrete "
                f"Tensors, found mismatched tensor metadata: Shapes {r.shape} and "
                f"{f.shape} are not equal!")
        if r.dtype != f.dtype:
            raise AssertionError(
                f"When comparing the output of {op.dotted} on FakeTensor and concrete "
                f"Tensors, found mismatched tensor metadata: Dtypes {r.dtype} and "
                f"{f.dtype} are not equal!")


def _bound_meta(op: Operator, args: tuple, kwargs: dict) -> tuple[list, dict]:
    from ember.library.schema import bind

    meta = _map((args, kwargs), lambda t: t.detach().to("meta"))
    return bind(op.schema, meta[0], meta[1])


def _test_aot_dispatch_dynamic(op: Operator, args: tuple, kwargs: dict) -> None:
    args, kwargs = _map(args, _clone), _map(kwargs, _clone)
    outs = [o for o in _outputs(op(*args, **kwargs)) if o.requires_grad]
    if outs:
        import ember

        ember.autograd.backward(outs, [ember.ones_like(o) for o in outs])


_TESTS = {"test_schema": _test_schema,
          "test_autograd_registration": _test_autograd_registration,
          "test_faketensor": _test_faketensor,
          "test_aot_dispatch_dynamic": _test_aot_dispatch_dynamic}


def opcheck(op: Any, args: tuple, kwargs: dict | None = None, *,
            test_utils: str | tuple[str, ...] = DEFAULT_TEST_UTILS,
            raise_exception: bool = True, atol: float | None = None,
            rtol: float | None = None) -> dict[str, str]:
    """Check that a custom operator is registered right, on example `args`/`kwargs`.

    Returns ``{test name: "SUCCESS" or the exception}``; with `raise_exception` a failed
    test raises `OpCheckError` naming it."""
    target = _operator(op)
    kwargs = kwargs or {}
    names = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    results: dict[str, Any] = {}
    for name in names:
        if name not in _TESTS:
            raise ValueError(f"test_utils={name!r} is not one of {sorted(_TESTS)}")
        try:
            _TESTS[name](target, args, kwargs)
        except Exception as exc:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {exc} (scroll up "
                                   "for stack trace)") from exc
            results[name] = exc
        else:
            results[name] = "SUCCESS"
    return results
