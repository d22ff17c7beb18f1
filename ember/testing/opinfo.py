"""The table of differentiable ops the gradient and PyTorch-parity tests run.

Each entry's `fn(lib, *inputs)` is written once against the API that ember and PyTorch
share, so the same function runs with `lib=ember` (on the device under test) and with
`lib=torch` (the oracle). Inputs are float arrays drawn from a fixed seed inside each
op's domain (away from kinks and poles, where finite differences mean nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class DiffOp:
    """One differentiable op, and how to draw its inputs.

    Attributes:
        name: the test id.
        fn: `fn(lib, *inputs)` -> a tensor or a tuple of tensors.
        shapes: one shape per input tensor.
        low, high: the uniform range of the inputs.
        make: `make(rng)` -> list of float64 arrays, for inputs a range cannot describe.
        ops: the declared ops (`ember.core.opdef.OPS`, primitives and composites) whose
            values and gradients this entry checks; empty: the op named `name`, if there
            is one. ember.testing.test_coverage reads it: every declared op must be
            exercised by some test, and every op that declares a gradient by a DiffOp.
        gradgrad: also check second derivatives.
        torch: `fn` runs on torch too (the same spelling means the same thing there).
        eps: the finite-difference step (larger for ops that round through float32).
        complex: it computes with complex tensors in between (real inputs and outputs):
            skipped on a device that holds no complex dtype.
    """

    name: str
    fn: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...] = ((3, 4),)
    low: float = -2.0
    high: float = 2.0
    make: Callable[[np.random.Generator], list[np.ndarray]] | None = None
    ops: tuple[str, ...] = ()
    gradgrad: bool = False
    torch: bool = True
    eps: float = 1e-6
    complex: bool = False

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        if self.make is not None:
            return [np.asarray(a, dtype=np.float64) for a in self.make(rng)]
        return [rng.uniform(self.low, self.high, s) for s in self.shapes]


def _away_from_zero(shape: tuple[int, ...], lo: float = 0.3, hi: float = 2.0):
    def make(rng: np.random.Generator) -> list[np.ndarray]:
        return [rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)]
    return make


def _off_grid(rng: np.random.Generator) -> list[np.ndarray]:
    """Values k + u with u in (0.1, 0.4) or (0.6, 0.9): away from the integers and the
    halves where floor/ceil/round/trunc/sign jump."""
    k = rng.integers(-3, 3, (3, 4))
    u = rng.uniform(0.1, 0.4, (3, 4)) + rng.choice([0.0, 0.5], (3, 4))
    return [k + u]


def _idx(lib: Any, x: Any, values: Any) -> Any:
    """An int64 index tensor on `x`'s device."""
    return lib.tensor(values, dtype=lib.int64, device=x.device)


def _setitem(lib: Any, x: Any, v: Any, key: Any) -> Any:
    y = x.clone()
    y[key] = v
    return y


def _written(x: Any, write: Callable[[Any], Any]) -> Any:
    """A copy of `x` after `write(copy)` changed it in place (through a view, maybe)."""
    y = x.clone()
    write(y)
    return y


def _mask(lib: Any, x: Any) -> Any:
    return lib.tensor([[True, False, True, False], [False, False, True, True],
                       [True, True, False, False]], device=x.device)


_UNARY: list[DiffOp] = [
    DiffOp("neg", lambda lib, x: lib.neg(x)),
    DiffOp("abs", lambda lib, x: lib.abs(x), make=_away_from_zero((3, 4))),
    DiffOp("sign", lambda lib, x: lib.sign(x) * x, make=_off_grid),
    DiffOp("floor", lambda lib, x: lib.floor(x) * x, make=_off_grid),
    DiffOp("ceil", lambda lib, x: lib.ceil(x) * x, make=_off_grid),
    DiffOp("round", lambda lib, x: lib.round(x) * x, make=_off_grid),
    DiffOp("trunc", lambda lib, x: lib.trunc(x) * x, make=_off_grid),
    # (PyTorch declares no derivative for floor_divide: its backward raises, and so does
    # ember's (its NotImplemented node); the quotient enters here as a constant)
    DiffOp("floor_divide", lambda lib, x: lib.floor_divide(x.detach(), 1.0) * x,
           make=_off_grid),
    DiffOp("relu", lambda lib, x: lib.relu(x), make=_away_from_zero((3, 4))),
    DiffOp("exp", lambda lib, x: lib.exp(x), gradgrad=True),
    DiffOp("log", lambda lib, x: lib.log(x), low=0.2, high=3.0,
           gradgrad=True),
    DiffOp("log2", lambda lib, x: lib.log2(x), low=0.2, high=3.0),
    DiffOp("log1p", lambda lib, x: lib.log1p(x), low=-0.5, high=3.0),
    DiffOp("expm1", lambda lib, x: lib.expm1(x)),
    DiffOp("sqrt", lambda lib, x: lib.sqrt(x), low=0.2, high=3.0,
           gradgrad=True),
    DiffOp("rsqrt", lambda lib, x: lib.rsqrt(x), low=0.2, high=3.0),
    DiffOp("sin", lambda lib, x: lib.sin(x), gradgrad=True),
    DiffOp("cos", lambda lib, x: lib.cos(x)),
    DiffOp("tan", lambda lib, x: lib.tan(x), low=-1.0, high=1.0),
    DiffOp("tanh", lambda lib, x: lib.tanh(x), gradgrad=True),
    DiffOp("sigmoid", lambda lib, x: lib.sigmoid(x), gradgrad=True),
    DiffOp("erf", lambda lib, x: lib.erf(x)),
    DiffOp("asin", lambda lib, x: lib.asin(x), low=-0.9, high=0.9),
    DiffOp("acos", lambda lib, x: lib.acos(x), low=-0.9, high=0.9),
    DiffOp("atan", lambda lib, x: lib.atan(x)),
    DiffOp("reciprocal", lambda lib, x: lib.reciprocal(x), make=_away_from_zero((3, 4)),
           gradgrad=True),
    DiffOp("square", lambda lib, x: lib.square(x), ops=("square", "mul")),
    DiffOp("positive", lambda lib, x: lib.positive(x) * x),
]

# broadcasting pairs: (same), (row), (column x row), (0-dim), (leading dims)
_PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((3, 4), ()),
          ((2, 1, 4), (3, 1))]


def _binary(name: str, f: Callable[..., Any], ops: tuple[str, ...], gradgrad: bool = False,
            make_b: Callable[[np.random.Generator, tuple], np.ndarray] | None = None,
            make_a: Callable[[np.random.Generator, tuple], np.ndarray] | None = None,
            ) -> list[DiffOp]:
    entries = []
    for sa, sb in _PAIRS:
        def make(rng, sa=sa, sb=sb):
            a = make_a(rng, sa) if make_a else rng.uniform(-2, 2, sa)
            b = make_b(rng, sb) if make_b else rng.uniform(-2, 2, sb)
            return [a, b]
        label = f"{name}{list(sa)}{list(sb)}".replace(" ", "")
        entries.append(DiffOp(label, f, shapes=(sa, sb), make=make, ops=ops,
                              gradgrad=gradgrad and sa == sb))
    return entries


def _nonzero(rng: np.random.Generator, s: tuple) -> np.ndarray:
    return rng.uniform(0.5, 2.0, s) * rng.choice([-1.0, 1.0], s)


def _positive(rng: np.random.Generator, s: tuple) -> np.ndarray:
    return rng.uniform(0.5, 2.0, s)


_BINARY: list[DiffOp] = [
    *_binary("add", lambda lib, a, b: lib.add(a, b), ("add",)),
    *_binary("sub", lambda lib, a, b: a - b, ("sub",)),
    *_binary("mul", lambda lib, a, b: a * b, ("mul",), gradgrad=True),
    *_binary("div", lambda lib, a, b: a / b, ("div",), gradgrad=True, make_b=_nonzero),
    *_binary("pow", lambda lib, a, b: lib.pow(a, b), ("pow",), gradgrad=True,
             make_a=_positive),
    *_binary("maximum", lambda lib, a, b: lib.maximum(a, b), ("maximum",)),
    *_binary("minimum", lambda lib, a, b: lib.minimum(a, b), ("minimum",)),
    *_binary("atan2", lambda lib, a, b: lib.atan2(a, b), ("atan2",), make_b=_nonzero),
    *_binary("remainder", lambda lib, a, b: lib.remainder(a, b), ("remainder",),
             make_b=_nonzero),
    *_binary("logaddexp", lambda lib, a, b: lib.logaddexp(a, b), ("logaddexp",),
             gradgrad=True),
    DiffOp("add_alpha", lambda lib, a, b: lib.add(a, b, alpha=-0.5), shapes=((3, 4), (4,)),
           ops=("add", "mul")),
    DiffOp("sub_alpha", lambda lib, a, b: lib.sub(a, b, alpha=2.0), shapes=((3, 4), (3, 4)),
           ops=("sub", "mul")),
    DiffOp("scalar_ops", lambda lib, x: (2.5 - x) * -1.5 + 3.0 / (x + 3.0) - x / 4.0,
           low=-1.0, high=1.0, ops=("sub", "mul", "add", "div")),
    DiffOp("pow_scalar_exponent", lambda lib, x: x ** 2 + x ** 3.0 + lib.pow(x, 0.5),
           low=0.2, high=2.0, ops=("pow",), gradgrad=True),
    DiffOp("pow_scalar_base", lambda lib, x: 2.0 ** x, ops=("pow",)),
    DiffOp("lerp", lambda lib, a, b, w: lib.lerp(a, b, w), shapes=((3, 4), (3, 4), (4,)),
           ops=("lerp", "add", "sub", "mul")),
    DiffOp("lerp_scalar", lambda lib, a, b: a.lerp(b, 0.3), shapes=((3, 4), (1, 4)),
           ops=("lerp",)),
    DiffOp("rsub", lambda lib, a, b: lib.rsub(a, b, alpha=2.0), shapes=((3, 4), (4,))),
    DiffOp("rsub_scalar", lambda lib, x: lib.rsub(x, 1.5), ops=("rsub",)),
    DiffOp("addcmul", lambda lib, a, b, c: lib.addcmul(a, b, c, value=0.5),
           shapes=((3, 4), (3, 1), (4,))),
    DiffOp("addcdiv", lambda lib, a, b, c: lib.addcdiv(a, b, c, value=-2.0),
           make=lambda rng: [rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4)),
                             _nonzero(rng, (4,))]),
    DiffOp("where", lambda lib, a, b: lib.where(a > 0, a, b), shapes=((3, 4), (4,)),
           ops=("where", "gt")),
    DiffOp("where_scalar", lambda lib, a: lib.where(a > 0.5, a * a, 0.0), ops=("where",)),
    DiffOp("clamp", lambda lib, x: lib.clamp(x, -1.0, 1.0)),
    DiffOp("clamp_min", lambda lib, x: x.clamp_min(0.5), ops=("clamp_min", "clamp")),
    DiffOp("clamp_max", lambda lib, x: lib.clamp_max(x, 0.0) + x.clamp(max=0.5),
           ops=("clamp_max", "clamp")),
    DiffOp("clamp_tensor", lambda lib, x, lo, hi: lib.clamp(x, lo, hi),
           make=lambda rng: [rng.uniform(-2, 2, (3, 4)), rng.uniform(-1.5, -0.5, (4,)),
                             rng.uniform(0.5, 1.5, (3, 1))],
           ops=("maximum", "minimum", "_clamp_tensors")),
    DiffOp("cast", lambda lib, x: (x.to(lib.float32) * 2).to(lib.float64), eps=1e-2,
           low=-1.0, high=1.0, ops=("cast", "to")),
    DiffOp("cast_methods", lambda lib, x: (x.float() * 2).double() + x.type(lib.float64),
           eps=1e-2, low=-1.0, high=1.0, ops=("float", "double", "type", "cast")),
    # off the CPU, to_device records the moves and sends the gradient back to the device
    DiffOp("to_device", lambda lib, x: (x.cpu() * x.cpu()).to(x.device) * x,
           ops=("to_device", "cpu", "to")),
]

_REDUCTIONS: list[DiffOp] = [
    DiffOp("sum", lambda lib, x: x.sum()),
    DiffOp("sum_dim", lambda lib, x: x.sum(1), shapes=((2, 3, 4),), ops=("sum",)),
    DiffOp("sum_dims_keepdim", lambda lib, x: lib.sum(x, (0, 2), keepdim=True),
           shapes=((2, 3, 4),), ops=("sum",)),
    DiffOp("mean", lambda lib, x: x.mean(), ops=("mean", "sum", "div")),
    DiffOp("mean_dim", lambda lib, x: x.mean(-1, keepdim=True), ops=("mean",)),
    DiffOp("prod", lambda lib, x: x.prod(), low=0.5, high=1.5),
    DiffOp("prod_dim", lambda lib, x: lib.prod(x, 0), ops=("prod",), gradgrad=False),
    DiffOp("prod_one_zero", lambda lib, x: x.prod(1),
           make=lambda rng: [np.where(np.eye(3, 4) > 0, 0.0, rng.uniform(0.5, 1.5, (3, 4)))],
           ops=("prod",)),
    DiffOp("amax", lambda lib, x: lib.amax(x, 1), ops=("amax", "max")),
    DiffOp("amin_dims", lambda lib, x: lib.amin(x, (0, 1)), shapes=((2, 3, 4),),
           ops=("amin", "min")),
    DiffOp("max_all", lambda lib, x: x.max(), ops=("max",)),
    DiffOp("min_all", lambda lib, x: x.min(), ops=("min",)),
    DiffOp("max_dim", lambda lib, x: lib.max(x, 1).values, ops=("max", "argmax", "gather")),
    DiffOp("min_dim_keepdim", lambda lib, x: x.min(0, keepdim=True)[0],
           ops=("min", "argmin", "gather")),
    DiffOp("topk", lambda lib, x: lib.topk(x, 2, 0, largest=False).values,
           ops=("topk", "gather")),
    DiffOp("var", lambda lib, x: x.var(1), ops=("var", "sum", "sub", "mul")),
    DiffOp("var_biased", lambda lib, x: lib.var(x, 0, unbiased=False, keepdim=True),
           ops=("var",)),
    DiffOp("std", lambda lib, x: x.std(), ops=("std", "sqrt")),
    DiffOp("std_dim", lambda lib, x: lib.std(x, (0, 1), correction=0), shapes=((2, 3, 4),),
           ops=("std",)),
    DiffOp("std_mean", lambda lib, x: lib.std_mean(x, 1)),
    DiffOp("var_mean", lambda lib, x: lib.var_mean(x, (0, 1), keepdim=True, correction=0),
           shapes=((2, 3, 4),)),
    DiffOp("logsumexp", lambda lib, x: lib.logsumexp(x, 1),
           ops=("logsumexp", "exp", "log", "max"), gradgrad=True),
    DiffOp("logsumexp_dims", lambda lib, x: x.logsumexp((0, 2), keepdim=True),
           shapes=((2, 3, 4),), ops=("logsumexp",)),
    DiffOp("norm", lambda lib, x: x.norm(), ops=("norm", "sqrt")),
    DiffOp("norm_p1_dim", lambda lib, x: lib.norm(x, 1, 1), make=_away_from_zero((3, 4)),
           ops=("norm",)),
    DiffOp("norm_inf", lambda lib, x: lib.norm(x, float("inf"), 0),
           make=_away_from_zero((3, 4)), ops=("norm",)),
    DiffOp("norm_p3", lambda lib, x: lib.norm(x, 3, -1, keepdim=True),
           make=_away_from_zero((3, 4)), ops=("norm",)),
    DiffOp("sum_to_size", lambda lib, x: x.sum_to_size(1, 4) * x.sum_to_size((3, 1))),
    DiffOp("cumsum", lambda lib, x: x.cumsum(1)),
    DiffOp("cumsum_dim0", lambda lib, x: lib.cumsum(x, -3), shapes=((2, 3, 4),),
           ops=("cumsum",)),
    DiffOp("softmax", lambda lib, x: lib.softmax(x, 1), gradgrad=True),
    DiffOp("softmax_dim0", lambda lib, x: x.softmax(0), shapes=((2, 3, 4),),
           ops=("softmax",)),
    DiffOp("log_softmax", lambda lib, x: lib.log_softmax(x, -1), gradgrad=True),
    DiffOp("log_softmax_dim1", lambda lib, x: x.log_softmax(1), shapes=((2, 3, 4),),
           ops=("log_softmax",)),
]

_SHAPES: list[DiffOp] = [
    DiffOp("reshape", lambda lib, x: x.reshape(2, -1, 2) * 2),
    DiffOp("reshape_copy", lambda lib, x: x.t().reshape(12), ops=("reshape",)),
    DiffOp("view", lambda lib, x: x.view(4, 3), ops=("view", "reshape")),
    DiffOp("reshape_as_view_as", lambda lib, x, y: x.reshape_as(y) + x.view_as(y),
           shapes=((3, 4), (2, 6)), ops=("reshape_as", "view_as")),
    DiffOp("unflatten", lambda lib, x: x.unflatten(1, (2, 2))),
    DiffOp("permute", lambda lib, x: x.permute(2, 0, 1), shapes=((2, 3, 4),)),
    DiffOp("transpose", lambda lib, x: x.transpose(0, 2), shapes=((2, 3, 4),)),
    DiffOp("t", lambda lib, x: x.t() * x.T.sum(0)),
    DiffOp("movedim", lambda lib, x: lib.movedim(x, 0, -1), shapes=((2, 3, 4),)),
    DiffOp("expand", lambda lib, x: x.expand(2, 3, 4), shapes=((3, 1),)),
    DiffOp("broadcast_to", lambda lib, x: lib.broadcast_to(x, (3, 2, 4)), shapes=((4,),)),
    DiffOp("expand_as", lambda lib, x, y: x.expand_as(y) * y, shapes=((3, 1), (3, 4))),
    DiffOp("broadcast_tensors", lambda lib, a, b: lib.broadcast_tensors(a, b),
           shapes=((3, 1), (4,))),
    DiffOp("squeeze", lambda lib, x: x.squeeze(1), shapes=((3, 1, 4),)),
    DiffOp("squeeze_all", lambda lib, x: lib.squeeze(x), shapes=((1, 3, 1),),
           ops=("squeeze",)),
    DiffOp("unsqueeze", lambda lib, x: x.unsqueeze(-1), shapes=((3, 4),)),
    DiffOp("flatten", lambda lib, x: lib.flatten(x, 1), shapes=((2, 3, 2),)),
    DiffOp("narrow", lambda lib, x: x.narrow(1, 1, 2), ops=("narrow", "getitem")),
    DiffOp("select", lambda lib, x: lib.select(x, 1, -1) * x.select(0, 2)[:3]),
    DiffOp("split", lambda lib, x: x.split([1, 3], 1)),
    DiffOp("chunk", lambda lib, x: lib.chunk(x, 2, 0), shapes=((4, 3),)),
    DiffOp("unbind", lambda lib, x: x.unbind(1), shapes=((2, 3),)),
    DiffOp("tensor_split", lambda lib, x: lib.tensor_split(x, 3, 1)),
    DiffOp("cat", lambda lib, a, b: lib.cat([a, b, a], 1), shapes=((2, 3), (2, 1))),
    DiffOp("cat_dim0", lambda lib, a, b: lib.cat((a, b), 0), shapes=((2, 3), (1, 3)),
           ops=("cat",)),
    DiffOp("stack", lambda lib, a, b: lib.stack([a, b], 1), shapes=((2, 3), (2, 3))),
    DiffOp("hstack", lambda lib, a, b: lib.hstack([a, b, a]), shapes=((2, 3), (2, 1))),
    DiffOp("vstack", lambda lib, a, b: lib.vstack((a, b)), shapes=((3,), (2, 3))),
    DiffOp("flip", lambda lib, x: x.flip((0, 1)) * x),
    DiffOp("tril", lambda lib, x: lib.tril(x, -1)),
    DiffOp("triu", lambda lib, x: x.triu(1), shapes=((4, 4),)),
    DiffOp("repeat", lambda lib, x: x.repeat(2, 1, 3), shapes=((2, 3),)),
    DiffOp("tile", lambda lib, x: lib.tile(x, (2,)), shapes=((3,),)),
    DiffOp("clone", lambda lib, x: x.clone() * 1.5),
    DiffOp("contiguous", lambda lib, x: x.t().contiguous() * x.t()),
]

_INDEXING: list[DiffOp] = [
    DiffOp("getitem_slices", lambda lib, x: x[1:3, ::2], ops=("getitem",)),
    DiffOp("getitem_int", lambda lib, x: x[1] * x[-1], gradgrad=True, ops=("getitem",)),
    DiffOp("getitem_none_ellipsis", lambda lib, x: x[None, ..., 1:], shapes=((2, 3, 4),),
           ops=("getitem",)),
    DiffOp("getitem_tensor_repeats", lambda lib, x: x[_idx(lib, x, [0, 2, 0, 1])],
           gradgrad=True, ops=("getitem",)),
    DiffOp("getitem_two_tensors", lambda lib, x: x[_idx(lib, x, [[0], [2]]),
                                                 _idx(lib, x, [1, 3, 1])], ops=("getitem",)),
    DiffOp("getitem_mask", lambda lib, x: x[_mask(lib, x)], ops=("getitem",)),
    DiffOp("getitem_slice_tensor", lambda lib, x: x[:, _idx(lib, x, [3, 0])],
           ops=("getitem",)),
    DiffOp("setitem_slice",
           lambda lib, x, v: _setitem(lib, x, v, (slice(1, 3), slice(None, None, 2))),
           shapes=((3, 4), (2, 2)), ops=("setitem",)),
    DiffOp("setitem_broadcast", lambda lib, x, v: _setitem(lib, x, v, (slice(None), 0)),
           shapes=((3, 4), (1,)), ops=("setitem",)),
    DiffOp("setitem_tensor",
           lambda lib, x, v: _setitem(lib, x, v, _idx(lib, x, [2, 0])) * x,
           shapes=((3, 4), (2, 4)), ops=("setitem",)),
    DiffOp("setitem_mask", lambda lib, x, v: _setitem(lib, x, v, _mask(lib, x)),
           shapes=((3, 4), (6,)), ops=("setitem",)),
    # in-place writes into a copy: the overwritten elements get no gradient, and copy_
    # and a tensor fill_ pass theirs to the source
    DiffOp("copy_", lambda lib, x, s: _written(x, lambda y: y[1:].copy_(s)) * x,
           shapes=((3, 4), (4,))),
    DiffOp("fill_", lambda lib, x, v: _written(x, lambda y: y[:, 1].fill_(v)) * x,
           shapes=((3, 4), ())),
    DiffOp("zero_", lambda lib, x: _written(x, lambda y: y[0].zero_()) * x,
           ops=("zero_", "fill_")),
    # out of place: `x` gets zeros through the fill, the 0-d value the sum
    DiffOp("fill", lambda lib, x, v: lib.fill(x, v) * x, shapes=((3, 4), ())),
    DiffOp("fill_diagonal_", lambda lib, x: _written(x, lambda y: y.fill_diagonal_(0.5)) * x),
    DiffOp("gather", lambda lib, x: lib.gather(x, 1, _idx(lib, x, [[0, 0], [3, 1],
                                                                  [2, 2]]))),
    DiffOp("gather_dim0", lambda lib, x: x.gather(0, _idx(lib, x, [[2, 1, 0, 0]])),
           ops=("gather",)),
    DiffOp("take_along_dim",
           lambda lib, x: lib.take_along_dim(x, _idx(lib, x, [[0, 3], [1, 1], [2, 0]]), 1)),
    DiffOp("scatter", lambda lib, x, s: lib.scatter(x, 1, _idx(lib, x, [[2, 0], [1, 3],
                                                                       [0, 1]]), s),
           shapes=((3, 4), (3, 2))),
    # src larger than index: torch's own backward rejects this case, so ember only
    DiffOp("scatter_large_src", lambda lib, x, s: lib.scatter(x, 1, _idx(lib, x, [[2, 0],
                                                                                 [1, 3]]), s),
           shapes=((3, 4), (3, 3)), torch=False, ops=("scatter",)),
    DiffOp("scatter_add", lambda lib, x, s: x.scatter_add(0, _idx(lib, x, [[0, 1, 0, 2],
                                                                          [0, 0, 0, 2]]), s),
           shapes=((3, 4), (2, 4))),
    DiffOp("index_select", lambda lib, x: lib.index_select(x, 1, _idx(lib, x, [3, 0, 3]))),
    DiffOp("index_add", lambda lib, x, s: lib.index_add(x, 0, _idx(lib, x, [2, 0, 2]), s,
                                                        alpha=2.0),
           shapes=((3, 4), (3, 4))),
    DiffOp("index_fill", lambda lib, x: lib.index_fill(x, 1, _idx(lib, x, [0, 2]), -1.5) * x),
    DiffOp("masked_fill", lambda lib, x: x.masked_fill(_mask(lib, x), -1.0) * x,
           ops=("masked_fill", "where")),
    DiffOp("masked_select", lambda lib, x: lib.masked_select(x, _mask(lib, x))),
]

_LINALG: list[DiffOp] = [
    DiffOp("matmul", lambda lib, a, b: a @ b, shapes=((3, 4), (4, 2)),
           gradgrad=True),
    DiffOp("matmul_vec_mat", lambda lib, a, b: lib.matmul(a, b), shapes=((4,), (4, 2)),
           ops=("matmul",)),
    DiffOp("matmul_mat_vec", lambda lib, a, b: lib.matmul(a, b), shapes=((3, 4), (4,)),
           ops=("matmul",)),
    DiffOp("matmul_vec_vec", lambda lib, a, b: a @ b, shapes=((4,), (4,)), ops=("matmul",)),
    DiffOp("matmul_batched_broadcast", lambda lib, a, b: a @ b,
           shapes=((2, 1, 3, 4), (3, 4, 2)), gradgrad=True, ops=("matmul",)),
    DiffOp("matmul_batch_vec", lambda lib, a, b: a @ b, shapes=((2, 3, 4), (4,)),
           ops=("matmul",)),
    DiffOp("mm", lambda lib, a, b: lib.mm(a, b), shapes=((2, 3), (3, 4))),
    DiffOp("bmm", lambda lib, a, b: a.bmm(b), shapes=((2, 3, 4), (2, 4, 1))),
    DiffOp("mv", lambda lib, a, b: lib.mv(a, b), shapes=((3, 4), (4,))),
    DiffOp("dot", lambda lib, a, b: a.dot(b), shapes=((5,), (5,))),
    DiffOp("outer", lambda lib, a, b: lib.outer(a, b), shapes=((3,), (4,))),
    DiffOp("addmm", lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2.0),
           shapes=((4,), (3, 2), (2, 4))),
    DiffOp("einsum_mm", lambda lib, a, b: lib.einsum("ij,jk->ik", a, b),
           shapes=((3, 4), (4, 2)), ops=("einsum",), gradgrad=True),
    DiffOp("einsum_bmm", lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b),
           shapes=((2, 3, 4), (2, 4, 2)), ops=("einsum",)),
    DiffOp("einsum_outer", lambda lib, a, b: lib.einsum("i,j->ij", a, b),
           shapes=((3,), (4,)), ops=("einsum",)),
    DiffOp("einsum_sum", lambda lib, a: lib.einsum("ij->", a), ops=("einsum",)),
    DiffOp("einsum_rowdot", lambda lib, a, b: lib.einsum("ij,ij->i", a, b),
           shapes=((3, 4), (3, 4)), ops=("einsum",)),
    DiffOp("einsum_permute", lambda lib, a: lib.einsum("ijk->kji", a), shapes=((2, 3, 4),),
           ops=("einsum",)),
    DiffOp("einsum_attention", lambda lib, q, k: lib.einsum("bhqd,bhkd->bhqk", q, k),
           shapes=((1, 2, 3, 4), (1, 2, 2, 4)), ops=("einsum",)),
    DiffOp("einsum_chain", lambda lib, a, b, c: lib.einsum("ij,jk,kl->il", a, b, c),
           shapes=((2, 3), (3, 4), (4, 2)), ops=("einsum",)),
]


def nnf(lib: Any) -> Any:
    """`lib.nn.functional` (imported on first use: ember.nn is not part of `import ember`)."""
    import importlib

    return importlib.import_module(lib.__name__ + ".nn.functional")


def _classes(rng: np.random.Generator) -> list[np.ndarray]:
    """(4, 5) logits; the targets are fixed in `_cross_entropy`."""
    return [rng.uniform(-2, 2, (4, 5))]


def _cross_entropy(reduction: str) -> Callable[..., Any]:
    # class indices with one ignored row (-100, the default ignore_index)
    return lambda lib, x: nnf(lib).cross_entropy(x, _idx(lib, x, [1, -100, 4, 1]),
                                                 reduction=reduction)


# `_fused_convolution` and `max_pool_with_indices` are the fused paths of conv1d/2d/3d (groups=1)
# and of max pooling: they run where the backend has the `conv` / `max_pool` kernels (else
# the decomposition does), so these entries check them there
_NN: list[DiffOp] = [
    DiffOp("gelu", lambda lib, x: nnf(lib).gelu(x), gradgrad=True),
    DiffOp("gelu_tanh", lambda lib, x: nnf(lib).gelu(x, approximate="tanh"), gradgrad=True,
           ops=("gelu",)),
    DiffOp("silu", lambda lib, x: nnf(lib).silu(x), gradgrad=True),
    DiffOp("leaky_relu", lambda lib, x: nnf(lib).leaky_relu(x, 0.2),
           make=_away_from_zero((3, 4))),
    DiffOp("elu", lambda lib, x: nnf(lib).elu(x, 0.7), make=_away_from_zero((3, 4)),
           gradgrad=True),
    DiffOp("selu", lambda lib, x: nnf(lib).selu(x), make=_away_from_zero((3, 4)),
           ops=("elu",)),
    DiffOp("softplus", lambda lib, x: nnf(lib).softplus(x, 2.0, 3.0), gradgrad=True,
           make=lambda rng: [rng.uniform(-2, 2, (3, 4)) + np.where(
               rng.uniform(size=(3, 4)) < 0.3, 2.5, 0.0)]),
    DiffOp("hardtanh", lambda lib, x: nnf(lib).hardtanh(x, -0.5, 1.0),
           make=lambda rng: [rng.choice([-1.0, 0.0, 0.5, 1.5], (3, 4))
                             + rng.uniform(-0.2, 0.2, (3, 4))]),
    DiffOp("threshold", lambda lib, x: nnf(lib).threshold(x, 0.1, -2.0),
           make=_away_from_zero((3, 4))),
    DiffOp("softshrink", lambda lib, x: nnf(lib).softshrink(x, 0.2),
           make=_away_from_zero((3, 4))),
    # the first gradient of each piecewise-linear activation, differentiated again: the
    # output gradient's coefficient, and a zero (but connected) gradient for the input
    DiffOp("relu_backward", lambda lib, g, x: lib.autograd.grad(
        lib.relu(x), x, g, create_graph=True)[0], make=lambda rng: [
            rng.uniform(-1, 1, (3, 4)), _away_from_zero((3, 4))(rng)[0]],
        ops=("activation_backward",), gradgrad=True),
    DiffOp("leaky_relu_backward", lambda lib, g, x: lib.autograd.grad(
        nnf(lib).leaky_relu(x, 0.2), x, g, create_graph=True)[0], make=lambda rng: [
            rng.uniform(-1, 1, (3, 4)), _away_from_zero((3, 4))(rng)[0]],
        ops=("activation_backward",)),
    DiffOp("hardtanh_backward", lambda lib, g, x: lib.autograd.grad(
        nnf(lib).hardtanh(x, -0.5, 1.0), x, g, create_graph=True)[0], make=lambda rng: [
            rng.uniform(-1, 1, (3, 4)), rng.choice([-1.0, 0.0, 0.5, 1.5], (3, 4))
            + rng.uniform(-0.2, 0.2, (3, 4))], ops=("activation_backward",)),
    DiffOp("embedding", lambda lib, w: nnf(lib).embedding(_idx(lib, w, [[1, 2, 1], [0, 1, 3]]), w),
           shapes=((4, 3),), gradgrad=True),
    DiffOp("linear", lambda lib, x, w, b: nnf(lib).linear(x, w, b),
           shapes=((2, 3, 4), (5, 4), (5,)), gradgrad=True),
    DiffOp("linear_no_bias", lambda lib, x, w: nnf(lib).linear(x, w), shapes=((3, 4), (2, 4)),
           ops=("linear",)),
    DiffOp("unfold", lambda lib, x: nnf(lib).unfold(x, (2, 3), padding=1, stride=(1, 2)),
           shapes=((1, 2, 4, 4),), ops=("im2col",)),
    DiffOp("unfold_dilated", lambda lib, x: nnf(lib).unfold(x, 2, dilation=2),
           shapes=((2, 1, 4, 5),), ops=("im2col",)),
    DiffOp("fold", lambda lib, x: nnf(lib).fold(x, (3, 4), 2), shapes=((1, 8, 6),),
           ops=("col2im",)),
    DiffOp("fold_strided", lambda lib, x: nnf(lib).fold(x, (5, 5), 3, padding=1, stride=2),
           shapes=((2, 9, 9),), ops=("col2im",)),
    DiffOp("pad", lambda lib, x: nnf(lib).pad(x, (1, 2), value=0.5), shapes=((2, 3),),
           ops=("constant_pad_nd", "constant_pad")),
    DiffOp("pad_2d_crop", lambda lib, x: nnf(lib).pad(x, (-1, 1, 2, 0)),
           shapes=((2, 3, 4),), ops=("constant_pad_nd",)),
    DiffOp("conv1d", lambda lib, x, w, b: nnf(lib).conv1d(x, w, b, stride=2, padding=1),
           shapes=((2, 3, 7), (4, 3, 3), (4,)),
           ops=("conv1d", "_fused_convolution", "im2col", "matmul")),
    DiffOp("conv2d", lambda lib, x, w, b: nnf(lib).conv2d(x, w, b, stride=(2, 1), padding=1),
           shapes=((1, 2, 5, 4), (3, 2, 3, 3), (3,)), ops=("conv2d", "_fused_convolution")),
    DiffOp("conv2d_groups_dilation",
           lambda lib, x, w: nnf(lib).conv2d(x, w, groups=2, dilation=2),
           shapes=((2, 4, 5, 5), (4, 2, 2, 2)), ops=("conv2d",)),
    DiffOp("conv2d_same", lambda lib, x, w: nnf(lib).conv2d(x, w, padding="same"),
           shapes=((1, 2, 4, 4), (2, 2, 2, 3)), ops=("conv2d", "constant_pad_nd")),
    DiffOp("conv_transpose2d",
           lambda lib, x, w, b: nnf(lib).conv_transpose2d(x, w, b, stride=2,
                                                            output_padding=1),
           shapes=((1, 2, 3, 3), (2, 3, 2, 2), (3,)), ops=("conv_transpose2d", "col2im")),
    DiffOp("max_pool2d", lambda lib, x: nnf(lib).max_pool2d(x, 2), shapes=((1, 2, 4, 4),),
           ops=("max_pool2d", "max_pool_with_indices")),
    DiffOp("max_pool2d_padded", lambda lib, x: nnf(lib).max_pool2d(x, 3, 2, 1),
           shapes=((2, 1, 5, 5),), ops=("max_pool2d",)),
    # with return_indices the backward reads the saved indices (without, it recovers them)
    DiffOp("max_pool2d_indices",
           lambda lib, x: nnf(lib).max_pool2d(x, 2, 1, return_indices=True)[0],
           shapes=((1, 2, 3, 4),), ops=("max_pool2d", "max_pool_with_indices")),
    DiffOp("max_pool1d", lambda lib, x: nnf(lib).max_pool1d(x, 3, 2), shapes=((2, 3, 7),),
           ops=("max_pool1d", "max_pool_with_indices")),
    DiffOp("avg_pool2d", lambda lib, x: nnf(lib).avg_pool2d(x, 2, 1, 1),
           shapes=((1, 2, 3, 4),)),
    DiffOp("avg_pool2d_ceil_exclude_pad",
           lambda lib, x: nnf(lib).avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                              count_include_pad=False),
           shapes=((1, 2, 5, 6),), ops=("avg_pool2d",)),
    DiffOp("avg_pool1d", lambda lib, x: nnf(lib).avg_pool1d(x, 2), shapes=((2, 2, 5),)),
    DiffOp("adaptive_avg_pool2d", lambda lib, x: nnf(lib).adaptive_avg_pool2d(x, (2, 3)),
           shapes=((1, 2, 5, 5),)),
    # the core op (F.adaptive_avg_pool1d goes through the 2-D one): uneven windows, and even
    DiffOp("adaptive_avg_pool1d",
           lambda lib, x: lib.adaptive_avg_pool1d(x, 3) * lib.adaptive_avg_pool1d(x, 7)[..., ::3],
           shapes=((2, 3, 7),)),
    DiffOp("layer_norm", lambda lib, x, w, b: nnf(lib).layer_norm(x, (4,), w, b),
           shapes=((2, 3, 4), (4,), (4,)), gradgrad=True),
    DiffOp("layer_norm_2d", lambda lib, x: nnf(lib).layer_norm(x, (3, 4)),
           shapes=((2, 3, 4),), ops=("layer_norm",)),
    DiffOp("cross_entropy", _cross_entropy("mean"), make=_classes),
    DiffOp("cross_entropy_sum", _cross_entropy("sum"), make=_classes, ops=("cross_entropy",)),
    DiffOp("cross_entropy_none", _cross_entropy("none"), make=_classes,
           ops=("cross_entropy",)),
]

# -- convolutions, pooling and resampling in 1 to 3 dims (nnconv) ----------------------
_NN += [
    DiffOp("conv3d", lambda lib, x, w, b: nnf(lib).conv3d(x, w, b, stride=(1, 2, 1),
                                                          padding=(1, 0, 1)),
           shapes=((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (2,)), ops=("conv3d", "_fused_convolution")),
    DiffOp("conv3d_groups", lambda lib, x, w: nnf(lib).conv3d(x, w, groups=2, dilation=(1, 2, 1)),
           shapes=((1, 4, 3, 4, 3), (2, 2, 2, 2, 2)), ops=("conv3d",)),
    DiffOp("conv_transpose1d",
           lambda lib, x, w, b: nnf(lib).conv_transpose1d(x, w, b, stride=2, padding=1,
                                                            output_padding=1, groups=2),
           shapes=((2, 4, 3), (4, 1, 3), (2,)), ops=("conv_transpose1d", "col2im")),
    DiffOp("conv_transpose3d",
           lambda lib, x, w, b: nnf(lib).conv_transpose3d(x, w, b, stride=(1, 2, 1),
                                                            dilation=(2, 1, 1)),
           shapes=((1, 2, 2, 2, 2), (2, 2, 2, 2, 2), (2,)), ops=("conv_transpose3d",)),
    DiffOp("convolution",
           lambda lib, x, w, b: lib.convolution(x, w, b, (2, 1), (1, 0), (1, 2), False, (0, 0), 1)
           + lib.convolution(x[:, :, :2, :2], w.transpose(0, 1), None, (2, 1), (0, 1), (1, 1),
                             True, (1, 0), 1)[:, :, :3, :2],
           shapes=((1, 2, 5, 6), (2, 2, 2, 3), (2,)), ops=("convolution",)),
    DiffOp("conv_tbc", lambda lib, x, w, b: lib.conv_tbc(x, w, b, 1),
           shapes=((4, 2, 3), (3, 3, 2), (2,))),
    DiffOp("max_pool3d", lambda lib, x: nnf(lib).max_pool3d(x, 2, (1, 2, 1), (1, 0, 1)),
           shapes=((1, 2, 3, 4, 3),), ops=("max_pool3d", "max_pool_with_indices")),
    DiffOp("max_pool1d_with_indices",
           lambda lib, x: lib.max_pool1d_with_indices(x, 3, 2, 1)[0], shapes=((2, 3, 7),)),
    DiffOp("avg_pool3d", lambda lib, x: nnf(lib).avg_pool3d(x, 3, 2, 1, ceil_mode=True,
                                                            count_include_pad=False),
           shapes=((1, 2, 4, 5, 4),)),
    DiffOp("avg_pool3d_divisor", lambda lib, x: nnf(lib).avg_pool3d(x, 2, divisor_override=3),
           shapes=((1, 1, 4, 4, 2),), ops=("avg_pool3d",)),
    DiffOp("adaptive_avg_pool3d", lambda lib, x: nnf(lib).adaptive_avg_pool3d(x, (2, 3, None)),
           shapes=((1, 2, 3, 5, 2),)),
    DiffOp("adaptive_max_pool1d", lambda lib, x: lib.adaptive_max_pool1d(x, 3)[0],
           shapes=((2, 3, 7),)),
    DiffOp("adaptive_max_pool2d", lambda lib, x: nnf(lib).adaptive_max_pool2d(x, (2, 3)),
           shapes=((2, 2, 5, 4),)),
    DiffOp("adaptive_max_pool3d", lambda lib, x: nnf(lib).adaptive_max_pool3d(x, (2, 1, 3)),
           shapes=((1, 2, 3, 2, 5),)),
    # grid coordinates in [-1.2, 1.2]: some taps fall outside the input
    DiffOp("grid_sampler", lambda lib, x, g: nnf(lib).grid_sample(x, g, align_corners=False),
           shapes=((1, 2, 3, 4), (1, 2, 3, 2)), low=-1.2, high=1.2),
    DiffOp("grid_sampler_2d", lambda lib, x, g: lib.grid_sampler_2d(x, g, 2, 2, True),
           shapes=((2, 1, 4, 3), (2, 3, 2, 2)), low=-1.2, high=1.2),
    DiffOp("grid_sampler_3d", lambda lib, x, g: lib.grid_sampler_3d(x, g, 0, 1, False),
           shapes=((1, 2, 2, 3, 3), (1, 2, 1, 3, 3)), low=-1.2, high=1.2),
    DiffOp("affine_grid_generator",
           lambda lib, t: nnf(lib).affine_grid(t, (2, 1, 3, 4), align_corners=False),
           shapes=((2, 2, 3),)),
]

# -- losses: their gradients (their values: ember.testing.test_losses) ------------------


def _const(lib: Any, x: Any, values: Any) -> Any:
    """A constant (no gradient) of `x`'s dtype on its device: targets and weights."""
    return lib.tensor(values, dtype=x.dtype, device=x.device)


_SIGNS = [[1.0, -1.0, 1.0, -1.0], [-1.0, -1.0, 1.0, 1.0], [1.0, 1.0, -1.0, -1.0]]
_LABELS = [[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]]
_SOFT_LABELS = [[0.9, 0.1, 0.5, 0.0], [0.3, 1.0, 0.7, 0.2], [0.6, 0.4, 0.0, 1.0]]
_COUNTS = [[0.0, 1.0, 3.0, 0.5], [2.0, 4.0, 1.5, 0.0], [1.0, 0.2, 6.0, 2.5]]
_CLASS_W = [0.5, 1.5, 1.0, 0.8, 1.2]
_SPATIAL = [[0, 4, 2], [1, -100, 3]]


def _apart(rng: np.random.Generator) -> list[np.ndarray]:
    """Two (3, 4) arrays at least 0.4 apart elementwise: away from the kinks of |a - b|
    and of the margin losses (margins below 0.3)."""
    a = rng.uniform(-2, 2, (3, 4))
    return [a, a + rng.uniform(0.4, 2.0, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))]


def _probabilities(rng: np.random.Generator) -> list[np.ndarray]:
    """(4, 5) logits and (4, 5) class probabilities."""
    e = np.exp(rng.uniform(-2, 2, (4, 5)))
    return [rng.uniform(-2, 2, (4, 5)), e / e.sum(1, keepdims=True)]


def _near(rng: np.random.Generator) -> list[np.ndarray]:
    """(3, 4) anchors, close positives and farther negatives (triplets with a loss)."""
    a = rng.uniform(-2, 2, (3, 4))
    return [a, a + 0.2 * rng.uniform(-1, 1, (3, 4)), a + 0.6 * rng.uniform(-1, 1, (3, 4))]


_LOSSES: list[DiffOp] = [
    DiffOp("mse_loss", lambda lib, x, y: nnf(lib).mse_loss(x, y), shapes=((3, 4), (3, 4))),
    DiffOp("mse_loss_weight", lambda lib, x, y: nnf(lib).mse_loss(
        x, y, reduction="sum", weight=_const(lib, x, _COUNTS)), shapes=((3, 4), (3, 4)),
        ops=("mse_loss",)),
    DiffOp("l1_loss", lambda lib, x, y: nnf(lib).l1_loss(x, y, reduction="sum"), make=_apart),
    DiffOp("smooth_l1_loss", lambda lib, x, y: nnf(lib).smooth_l1_loss(x, y, beta=0.5),
           shapes=((3, 4), (3, 4))),
    DiffOp("huber_loss", lambda lib, x, y: nnf(lib).huber_loss(x, y, reduction="none",
                                                               delta=0.7),
           shapes=((3, 4), (3, 4))),
    DiffOp("nll_loss", lambda lib, x: nnf(lib).nll_loss(
        x, _idx(lib, x, [1, -100, 4, 1]), weight=_const(lib, x, _CLASS_W)), make=_classes),
    DiffOp("nll_loss_spatial", lambda lib, x: nnf(lib).nll_loss(
        x, _idx(lib, x, _SPATIAL), reduction="sum"), shapes=((2, 5, 3),), ops=("nll_loss",)),
    DiffOp("cross_entropy_weight_smoothing", lambda lib, x: nnf(lib).cross_entropy(
        x, _idx(lib, x, [1, -100, 4, 1]), weight=_const(lib, x, _CLASS_W),
        label_smoothing=0.2), make=_classes, ops=("cross_entropy", "nll_loss")),
    DiffOp("cross_entropy_probabilities", lambda lib, x, t: nnf(lib).cross_entropy(
        x, t, label_smoothing=0.1), make=_probabilities, ops=("cross_entropy",)),
    DiffOp("cross_entropy_spatial", lambda lib, x: nnf(lib).cross_entropy(
        x, _idx(lib, x, _SPATIAL), reduction="none"), shapes=((2, 5, 3),),
        ops=("cross_entropy", "nll_loss")),
    DiffOp("binary_cross_entropy", lambda lib, x: nnf(lib).binary_cross_entropy(
        x, _const(lib, x, _SOFT_LABELS), weight=_const(lib, x, _COUNTS[0])), low=0.1,
        high=0.9),
    DiffOp("binary_cross_entropy_with_logits",
           lambda lib, x: nnf(lib).binary_cross_entropy_with_logits(
               x, _const(lib, x, _SOFT_LABELS), weight=_const(lib, x, _COUNTS),
               pos_weight=_const(lib, x, [2.0, 0.5, 1.0, 3.0])), low=-3.0, high=3.0),
    DiffOp("binary_cross_entropy_with_logits_target",
           lambda lib, x, t: nnf(lib).binary_cross_entropy_with_logits(
               x, t, pos_weight=_const(lib, x, [2.0, 0.5, 1.0, 3.0]), reduction="sum"),
           shapes=((3, 4), (3, 4)), low=-3.0, high=3.0, gradgrad=True,
           ops=("binary_cross_entropy_with_logits",)),
    DiffOp("kl_div", lambda lib, x, t: nnf(lib).kl_div(x, t, reduction="batchmean"),
           make=lambda rng: [rng.uniform(-3, 0, (3, 4)), rng.uniform(0.1, 1.0, (3, 4))]),
    DiffOp("kl_div_log_target", lambda lib, x, t: nnf(lib).kl_div(
        x, t, reduction="sum", log_target=True), shapes=((3, 4), (3, 4)), ops=("kl_div",)),
    DiffOp("soft_margin_loss", lambda lib, x: nnf(lib).soft_margin_loss(
        x, _const(lib, x, _SIGNS))),
    DiffOp("multilabel_soft_margin_loss", lambda lib, x: nnf(lib).multilabel_soft_margin_loss(
        x, _const(lib, x, _LABELS), weight=_const(lib, x, _COUNTS[2]), reduction="none")),
    DiffOp("poisson_nll_loss", lambda lib, x: nnf(lib).poisson_nll_loss(
        x, _const(lib, x, _COUNTS), full=True)),
    DiffOp("poisson_nll_loss_rates", lambda lib, x: nnf(lib).poisson_nll_loss(
        x, _const(lib, x, _COUNTS), log_input=False, reduction="sum"), low=0.2, high=2.0,
        ops=("poisson_nll_loss",)),
    DiffOp("gaussian_nll_loss", lambda lib, x, y, v: nnf(lib).gaussian_nll_loss(
        x, y, v, full=True), make=lambda rng: [rng.uniform(-2, 2, (3, 4)),
                                               rng.uniform(-2, 2, (3, 4)),
                                               rng.uniform(0.2, 2.0, (3, 4))]),
    DiffOp("margin_ranking_loss", lambda lib, a, b: nnf(lib).margin_ranking_loss(
        a, b, _const(lib, a, _SIGNS), margin=0.1), make=_apart),
    DiffOp("hinge_embedding_loss", lambda lib, x: nnf(lib).hinge_embedding_loss(
        x + 1.0, _const(lib, x, _SIGNS)), make=_away_from_zero((3, 4))),
    DiffOp("cosine_embedding_loss", lambda lib, a, b: nnf(lib).cosine_embedding_loss(
        a, b, _const(lib, a, [1.0, -1.0, -1.0])),
        make=lambda rng: (lambda a: [a, a + 0.3 * rng.uniform(-1, 1, (3, 4))])(
            rng.uniform(-2, 2, (3, 4)))),
    DiffOp("triplet_margin_loss", lambda lib, a, p, n: nnf(lib).triplet_margin_loss(
        a, p, n, margin=2.0), make=_near),
]

# -- elementwise math (issue 16) ---------------------------------------------------------------


def _math_binary(name: str, f: Callable[..., Any], ops: tuple[str, ...], **kw: Any
                 ) -> list[DiffOp]:
    """Two of `_binary`'s broadcasting pairs (same shape, and column x row)."""
    return [e for e in _binary(name, f, ops, **kw) if e.name.endswith(("[3,4][3,4]",
                                                                       "[3,1][1,4]"))]


def _special(lib: Any) -> Any:
    return lib.special


_ELEMENTWISE_MATH: list[DiffOp] = [
    DiffOp("sinh", lambda lib, x: lib.sinh(x)),
    DiffOp("cosh", lambda lib, x: lib.cosh(x)),
    DiffOp("asinh", lambda lib, x: lib.arcsinh(x), ops=("asinh",)),
    DiffOp("acosh", lambda lib, x: lib.acosh(x), low=1.2, high=3.0),
    DiffOp("atanh", lambda lib, x: x.arctanh(), low=-0.8, high=0.8, ops=("atanh",)),
    DiffOp("exp2", lambda lib, x: lib.exp2(x)),
    DiffOp("log10", lambda lib, x: lib.log10(x), low=0.2, high=3.0),
    DiffOp("erfc", lambda lib, x: lib.erfc(x)),
    DiffOp("erfinv", lambda lib, x: lib.erfinv(x), low=-0.9, high=0.9),
    DiffOp("lgamma", lambda lib, x: lib.lgamma(x), low=0.2, high=4.0),
    # (gradients are polygammas, where SciPy's and PyTorch's differ by ~1e-9 relative:
    # tests/test_compat_elem.py compares them with torch at a fitting tolerance)
    DiffOp("digamma", lambda lib, x: lib.digamma(x), low=0.2, high=4.0, torch=False),
    DiffOp("polygamma", lambda lib, x: lib.polygamma(1, x) + x.polygamma(0), low=0.5,
           high=4.0, torch=False),
    DiffOp("i0", lambda lib, x: lib.i0(x)),
    DiffOp("special_i0e", lambda lib, x: _special(lib).i0e(x), make=_away_from_zero((3, 4))),
    DiffOp("special_i1", lambda lib, x: _special(lib).i1(x)),
    DiffOp("special_i1e", lambda lib, x: _special(lib).i1e(x), make=_away_from_zero((3, 4))),
    DiffOp("special_erfcx", lambda lib, x: _special(lib).erfcx(x)),
    DiffOp("special_ndtr", lambda lib, x: _special(lib).ndtr(x), ops=("special_ndtr", "erfc")),
    DiffOp("special_ndtri", lambda lib, x: _special(lib).ndtri(x), low=0.1, high=0.9),
    DiffOp("special_log_ndtr", lambda lib, x: _special(lib).log_ndtr(x * 3.0),
           ops=("special_log_ndtr", "special_erfcx", "erfc")),
    DiffOp("special_entr", lambda lib, x: _special(lib).entr(x), low=0.2, high=3.0),
    DiffOp("deg2rad", lambda lib, x: lib.deg2rad(x) + x.rad2deg(), ops=("deg2rad", "rad2deg")),
    DiffOp("frac", lambda lib, x: lib.frac(x) * x, make=_off_grid),
    DiffOp("sinc", lambda lib, x: lib.sinc(x)),
    DiffOp("sinc_at_zero", lambda lib, x: lib.sinc(x * 0.0) * x, ops=("sinc",)),
    DiffOp("logit", lambda lib, x: lib.logit(x), low=0.1, high=0.9),
    DiffOp("logit_eps", lambda lib, x: x.logit(0.2), low=0.05, high=0.95, ops=("logit",)),
    DiffOp("nan_to_num", lambda lib, x: lib.nan_to_num(x.log(), 1.5) * x,
           make=_away_from_zero((3, 4))),
    DiffOp("mvlgamma", lambda lib, x: lib.mvlgamma(x, 3), low=1.5, high=4.0),
    DiffOp("frexp", lambda lib, x: lib.frexp(x)[0], make=_away_from_zero((3, 4))),
    DiffOp("float_power", lambda lib, a, b: lib.float_power(a, b) + lib.float_power(a, 2),
           make=lambda rng: [rng.uniform(0.5, 2, (3, 4)), rng.uniform(-2, 2, (4,))]),
    # (non-negative exponents: PyTorch's LdexpBackward0 computes 2**other in the integer
    # dtype, so its gradient is 0 where other < 0)
    DiffOp("ldexp", lambda lib, x: lib.ldexp(x, _idx(lib, x, [1, 2, 0, 3]))),
    DiffOp("copysign", lambda lib, a, b: lib.copysign(a, b), shapes=((3, 4), (4,)),
           make=lambda rng: [_nonzero(rng, (3, 4)), _nonzero(rng, (4,))]),
    DiffOp("copysign_scalar", lambda lib, x: x.copysign(-1.0), make=_away_from_zero((3, 4)),
           ops=("copysign",)),
    *_math_binary("fmod", lambda lib, a, b: lib.fmod(a, b), ("fmod",), make_b=_nonzero),
    *_math_binary("hypot", lambda lib, a, b: lib.hypot(a, b), ("hypot",), make_b=_nonzero),
    *_math_binary("logaddexp2", lambda lib, a, b: lib.logaddexp2(a, b), ("logaddexp2",),
                  gradgrad=True),
    *_math_binary("xlogy", lambda lib, a, b: lib.xlogy(a, b), ("xlogy",), make_b=_positive),
    *_math_binary("fmax", lambda lib, a, b: lib.fmax(a, b), ("fmax",)),
    *_math_binary("fmin", lambda lib, a, b: lib.fmin(a, b), ("fmin",)),
    DiffOp("xlogy_scalar", lambda lib, x: lib.xlogy(2.0, x) + x.xlogy(3.0), low=0.5,
           high=2.0, ops=("xlogy",)),
    DiffOp("special_xlog1py", lambda lib, a, b: _special(lib).xlog1py(a, b),
           make=lambda rng: [rng.uniform(-2, 2, (3, 4)), rng.uniform(-0.5, 2, (4,))]),
    DiffOp("hardshrink", lambda lib, x: x.hardshrink(0.4) + lib.hardshrink(x),
           make=lambda rng: [rng.uniform(0.6, 2, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))]),
    DiffOp("prelu", lambda lib, x, w: x.prelu(w), shapes=((2, 3, 4), (3,)),
           make=lambda rng: [_nonzero(rng, (2, 3, 4)), rng.uniform(0.1, 0.5, (3,))]),
    DiffOp("special_zeta", lambda lib, x: _special(lib).zeta(lib.full_like(x, 2.5), x),
           low=0.5, high=3.0),
    # (PyTorch has no derivative for the first argument of igamma and igammac)
    DiffOp("igamma", lambda lib, x: lib.igamma(lib.full_like(x, 1.5), x), low=0.5, high=3.0),
    DiffOp("igammac", lambda lib, x: lib.igammac(lib.full_like(x, 2.5), x), low=0.5,
           high=3.0),
]

# -- nnmisc family (issue 16): multi-class margins and CTC ------------------------------


def _ctc_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    """(6, 2, 4) logits; log_softmax makes them log-probabilities inside `fn` (PyTorch's
    CTC gradient is that of log-softmaxed inputs)."""
    return [rng.uniform(-2, 2, (6, 2, 4))]


def _ctc(reduction: str) -> Callable[..., Any]:
    return lambda lib, x: nnf(lib).ctc_loss(
        nnf(lib).log_softmax(x, 2), _idx(lib, x, [[1, 2, 2], [3, 1, 0]]),
        _idx(lib, x, [6, 5]), _idx(lib, x, [3, 2]), reduction=reduction)


_NNMISC: list[DiffOp] = [
    DiffOp("multi_margin_loss", lambda lib, x: nnf(lib).multi_margin_loss(
        x, _idx(lib, x, [1, 0, 3]), margin=0.3, weight=_const(lib, x, _CLASS_W[:4])),
        make=_away_from_zero((3, 4))),
    DiffOp("multi_margin_loss_p2", lambda lib, x: nnf(lib).multi_margin_loss(
        x, _idx(lib, x, [2, 3, 0]), p=2, reduction="none"), ops=("multi_margin_loss",)),
    DiffOp("multilabel_margin_loss", lambda lib, x: nnf(lib).multilabel_margin_loss(
        x, _idx(lib, x, [[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 3]]), reduction="sum"),
        make=lambda rng: [rng.permutation(12).reshape(3, 4) * 0.37]),
    DiffOp("ctc_loss", _ctc("mean"), make=_ctc_inputs, ops=("ctc_loss", "_ctc_nll")),
    DiffOp("ctc_loss_none", _ctc("none"), make=_ctc_inputs, ops=("ctc_loss", "_ctc_nll")),
]

# -- SHAPE family: views, splits, joins, diagonals, index grids ------------------------
_SHAPE_FAMILY: list[DiffOp] = [
    DiffOp("diagonal", lambda lib, x: lib.diagonal(x, 1, 0, 2).sum(0) * x.diagonal(-1, -1, 1)[0],
           shapes=((3, 4, 3),), ops=("diagonal", "strided_view")),
    DiffOp("tensor_unfold", lambda lib, x: x.unfold(1, 2, 1) * 2,
           ops=("unfold", "strided_view")),
    DiffOp("as_strided", lambda lib, x: lib.as_strided(x, (3, 3), (1, 2), 1) +
           x.as_strided((2,), (5,)).sum()),
    DiffOp("diag", lambda lib, x: lib.diag(x, 1) + lib.diag(x[0], -1)[:3, :3].sum()),
    DiffOp("diag_embed", lambda lib, x: lib.diag_embed(x, 1, 0, 2), shapes=((2, 3),)),
    DiffOp("diagflat", lambda lib, x: lib.diagflat(x, -1), shapes=((2, 2),)),
    DiffOp("diagonal_scatter", lambda lib, x, s: lib.diagonal_scatter(x, s, 1, 1, 0),
           shapes=((4, 3), (3,))),
    DiffOp("select_scatter", lambda lib, x, s: lib.select_scatter(x, s, 1, -1),
           shapes=((3, 4), (3,))),
    DiffOp("slice_scatter", lambda lib, x, s: lib.slice_scatter(x, s, 1, 1, None, 2),
           shapes=((3, 4), (3, 2))),
    DiffOp("as_strided_scatter", lambda lib, x, s: lib.as_strided_scatter(x, s, (2, 2),
                                                                           (1, 4), 1),
           # PyTorch 2.13's gradient of `input` is zero off the written part and not on it
           # (its AsStridedScatterBackward0); gradcheck checks ember's
           shapes=((3, 4), (2, 2)), torch=False),
    DiffOp("roll", lambda lib, x: lib.roll(x, (1, -2), (0, 1)) * lib.roll(x, 5)),
    DiffOp("rot90", lambda lib, x: lib.rot90(x, 1, (0, 1)) * x.rot90(3).flipud(),
           shapes=((3, 3),), ops=("rot90", "flipud")),
    DiffOp("fliplr", lambda lib, x: lib.fliplr(x) * x),
    DiffOp("ravel", lambda lib, x: x.t().ravel() * lib.ravel(x)),
    DiffOp("atleast_nd", lambda lib, x, y: (lib.atleast_1d(x[0, 0]), lib.atleast_2d(y)) +
           lib.atleast_3d(x, y), shapes=((3, 4), (4,)),
           ops=("atleast_1d", "atleast_2d", "atleast_3d")),
    DiffOp("column_row_dstack", lambda lib, x, y: (lib.column_stack([x, y]),
                                                   lib.row_stack([x.t(), y]),
                                                   lib.dstack((x, x.t()))),
           shapes=((4, 4), (4,)), ops=("column_stack", "row_stack", "dstack")),
    DiffOp("numpy_splits", lambda lib, x: lib.hsplit(x, 2) + x.vsplit([1]) + lib.dsplit(x, 2),
           shapes=((2, 4, 2),), ops=("hsplit", "vsplit", "dsplit")),
    DiffOp("split_with_sizes", lambda lib, x: lib.split_with_sizes(x, [1, 3], 1) +
           x.unsafe_split(2, 1) + lib.unsafe_split_with_sizes(x, [2, 1]) +
           x.unsafe_chunk(2, 1),
           ops=("split_with_sizes", "unsafe_split", "unsafe_split_with_sizes",
                "unsafe_chunk")),
    DiffOp("block_diag", lambda lib, a, b: lib.block_diag(a, b, a[0, 0]),
           shapes=((2, 3), (3,))),
    DiffOp("cartesian_prod", lambda lib, a, b: lib.cartesian_prod(a, b) * 2,
           shapes=((3,), (2,))),
    DiffOp("combinations", lambda lib, a: lib.combinations(a, 2) +
           lib.combinations(a, 2, with_replacement=True)[:6], shapes=((4,),)),
    DiffOp("meshgrid", lambda lib, a, b: lib.meshgrid(a, b, indexing="xy")[0] *
           lib.meshgrid([a, b], indexing="ij")[1].t(), shapes=((3,), (2,))),
    DiffOp("repeat_interleave", lambda lib, x: (lib.repeat_interleave(x, 2),
                                                x.repeat_interleave(lib.tensor([1, 0, 2]), 0)),
           shapes=((3, 2),)),
    DiffOp("view_copies", lambda lib, x: (
        lib.alias_copy(x), lib.diagonal_copy(x), lib.expand_copy(x[:1], (2, 4)),
        lib.narrow_copy(x, 1, 1, 2), lib.permute_copy(x, (1, 0)), lib.select_copy(x, 0, 1),
        lib.slice_copy(x, 1, 0, 3, 2), lib.squeeze_copy(x[:1]), lib.t_copy(x),
        lib.transpose_copy(x, 0, 1), lib.unsqueeze_copy(x, 1), lib.view_copy(x, (4, 3)),
        lib.unfold_copy(x, 1, 2, 2), lib.as_strided_copy(x, (2,), (3,))) +
        lib.split_copy(x, 2, 1) + lib.split_with_sizes_copy(x, [1, 2]) + lib.unbind_copy(x),
        ops=("alias_copy", "diagonal_copy", "expand_copy", "narrow_copy", "permute_copy",
             "select_copy", "slice_copy", "squeeze_copy", "t_copy", "transpose_copy",
             "unsqueeze_copy", "view_copy", "unfold_copy", "as_strided_copy", "split_copy",
             "split_with_sizes_copy", "unbind_copy")),
    DiffOp("adjoint", lambda lib, x: lib.adjoint(x) * x.mH * x.H.T.t(), shapes=((3, 3),)),
    DiffOp("type_as", lambda lib, x: x.type_as(x * 2) * lib.resolve_neg(x),
           ops=("type_as", "resolve_neg")),
]

# -- linear algebra: products, factorizations, norms (family: linalg) --


def _square(n: int = 3, batch: tuple = (), shift: float = 3.0):
    """Well-conditioned square matrices (the diagonal shifted away from singular)."""
    def make(rng: np.random.Generator) -> list[np.ndarray]:
        return [rng.uniform(-1, 1, batch + (n, n)) + shift * np.eye(n)]
    return make


def _spd(rng: np.random.Generator) -> list[np.ndarray]:
    a = rng.uniform(-1, 1, (2, 3, 3))
    return [a @ a.swapaxes(-1, -2) + 3 * np.eye(3)]


def _sym(rng: np.random.Generator) -> list[np.ndarray]:
    a = rng.uniform(-1, 1, (3, 3)) + np.diag([0.0, 2.0, 4.0])  # distinct eigenvalues
    return [a + a.T]


_FIXED_MATRIX = [[0.5, 2.0, -1.0], [3.0, 0.25, 1.0], [-1.0, 1.0, 2.0]]  # LU pivots rows


def _la(lib: Any) -> Any:
    return lib.linalg


def _sym_of(x: Any) -> Any:
    return x + x.mT  # differentiate through a symmetric input, as PyTorch's own tests do


_LINALG_FACTOR: list[DiffOp] = [
    DiffOp("addbmm", lambda lib, c, a, b: lib.addbmm(c, a, b, beta=0.5, alpha=2.0),
           shapes=((3, 2), (2, 3, 4), (2, 4, 2))),
    DiffOp("baddbmm", lambda lib, c, a, b: c.baddbmm(a, b, alpha=-1.0),
           shapes=((2, 3, 2), (2, 3, 4), (2, 4, 2))),
    DiffOp("addmv", lambda lib, c, a, b: lib.addmv(c, a, b, beta=2.0),
           shapes=((3,), (3, 4), (4,))),
    DiffOp("addr", lambda lib, c, a, b: c.addr(a, b, alpha=0.5), shapes=((3, 4), (3,), (4,))),
    DiffOp("inner", lambda lib, a, b: lib.inner(a, b), shapes=((2, 4), (3, 4))),
    DiffOp("vdot", lambda lib, a, b: lib.vdot(a, b), shapes=((4,), (4,))),
    DiffOp("kron", lambda lib, a, b: lib.kron(a, b), shapes=((2, 3), (3, 2))),
    DiffOp("tensordot", lambda lib, a, b: lib.tensordot(a, b, ([0, 2], [1, 0])),
           shapes=((2, 3, 4), (4, 2, 3))),
    DiffOp("multi_dot", lambda lib, a, b, c: _la(lib).multi_dot([a, b, c]),
           shapes=((3,), (3, 4), (4, 2)), ops=("linalg_multi_dot",)),
    DiffOp("chain_matmul", lambda lib, a, b, c: lib.chain_matmul(a, b, c),
           shapes=((2, 3), (3, 4), (4, 2))),
    DiffOp("cross", lambda lib, a, b: lib.cross(a, b, dim=1), shapes=((2, 3), (2, 3))),
    DiffOp("linalg_cross", lambda lib, a, b: _la(lib).cross(a, b), shapes=((2, 3), (1, 3))),
    DiffOp("vecdot", lambda lib, a, b: _la(lib).vecdot(a, b, dim=0), shapes=((3, 4), (3, 1)),
           ops=("linalg_vecdot",)),
    DiffOp("det", lambda lib, a: lib.det(a), make=_square(3, (2,))),
    DiffOp("slogdet", lambda lib, a: lib.slogdet(a).logabsdet, make=_square(3, (2,)),
           ops=("slogdet", "_linalg_slogdet")),
    DiffOp("logdet", lambda lib, a: lib.logdet(a), make=_square(3)),
    DiffOp("inv", lambda lib, a: _la(lib).inv(a), make=_square(3, (2,)),
           ops=("linalg_inv", "_linalg_inv_ex")),
    DiffOp("inverse", lambda lib, a: a.inverse(), make=_square(3)),
    DiffOp("solve", lambda lib, a, b: _la(lib).solve(a, b),
           make=lambda rng: _square(3, (2,))(rng) + [rng.uniform(-1, 1, (3, 2))],
           ops=("linalg_solve", "_linalg_solve_ex")),
    DiffOp("solve_triangular", lambda lib, a, b: _la(lib).solve_triangular(
        a, b, upper=False, left=False), make=lambda rng: _square(3)(rng) + [
        rng.uniform(-1, 1, (2, 3))], ops=("linalg_solve_triangular",
                                         "_linalg_solve_triangular")),
    DiffOp("triangular_solve", lambda lib, b, a: lib.triangular_solve(b, a).solution,
           make=lambda rng: [rng.uniform(-1, 1, (3, 2))] + _square(3)(rng)),
    DiffOp("cholesky", lambda lib, a: _la(lib).cholesky(_sym_of(a)), make=_spd,
           ops=("linalg_cholesky", "_linalg_cholesky_ex")),
    DiffOp("cholesky_upper", lambda lib, a: lib.cholesky(_sym_of(a), upper=True), make=_spd,
           ops=("cholesky",)),
    # (the factor's gradient is PyTorch's, for the whole matrix: give it a triangular one)
    DiffOp("cholesky_solve", lambda lib, b, a: lib.cholesky_solve(b, a.tril()),
           make=lambda rng: [rng.uniform(-1, 1, (3, 2))] + [np.tril(_square(3)(rng)[0])]),
    DiffOp("cholesky_inverse", lambda lib, a: lib.cholesky_inverse(a.triu(), upper=True),
           make=lambda rng: [np.triu(_square(3)(rng)[0])]),
    DiffOp("qr", lambda lib, a: (lambda q, r: (q, r))(*_la(lib).qr(a)), shapes=((4, 3),),
           ops=("linalg_qr", "_linalg_qr")),
    DiffOp("qr_wide", lambda lib, a: (lambda q, r: (q, r))(*lib.qr(a)), shapes=((3, 4),),
           ops=("qr",)),
    # singular vectors are defined up to sign: differentiate what does not depend on it
    DiffOp("svd", lambda lib, a: (lambda u, s, vh: (u @ vh, s))(
        *_la(lib).svd(a, full_matrices=False)), shapes=((4, 3),),
        ops=("linalg_svd", "_linalg_svd")),
    DiffOp("svd_v", lambda lib, a: (lambda u, s, v: (u * s.unsqueeze(-2)) @ v.mT)(
        *lib.svd(a)), shapes=((3, 4),), ops=("svd",)),
    DiffOp("svdvals", lambda lib, a: _la(lib).svdvals(a), shapes=((2, 3, 4),),
           ops=("linalg_svdvals",)),
    DiffOp("eigh", lambda lib, a: (lambda w, v: (w, v * v))(*_la(lib).eigh(_sym_of(a))),
           make=_sym, ops=("linalg_eigh", "_linalg_eigh")),
    DiffOp("eigvalsh", lambda lib, a: _la(lib).eigvalsh(_sym_of(a), UPLO="U"), make=_sym,
           ops=("linalg_eigvalsh",)),
    DiffOp("pinv", lambda lib, a: _la(lib).pinv(a), shapes=((4, 3),), ops=("linalg_pinv",)),
    DiffOp("pinverse", lambda lib, a: lib.pinverse(a), shapes=((3, 4),)),
    DiffOp("lstsq", lambda lib, a, b: _la(lib).lstsq(a, b).solution, shapes=((4, 3), (4, 2)),
           ops=("linalg_lstsq",)),
    DiffOp("lu_solve", lambda lib, b: (lambda lu, piv: _la(lib).lu_solve(
        lu, piv, b, adjoint=True) + lib.lu_solve(b, lu, piv))(*_la(lib).lu_factor(
            lib.tensor(_FIXED_MATRIX, dtype=b.dtype, device=b.device))), shapes=((3, 2),),
           ops=("linalg_lu_solve", "lu_solve", "lu_unpack")),
    DiffOp("lu_factor", lambda lib, a: _la(lib).lu_factor(a).LU, make=_square(3, (2,)),
           ops=("linalg_lu_factor", "_linalg_lu_factor_ex")),
    DiffOp("linalg_lu_tall", lambda lib, a: (lambda p, lo, up: (lo, up))(*_la(lib).lu(a)),
           shapes=((4, 3),), ops=("linalg_lu", "lu_unpack")),
    DiffOp("lu_solve_through_a", lambda lib, a, b: _la(lib).lu_solve(*_la(lib).lu_factor(a),
                                                                      b.mT, left=False),
           make=lambda rng: _square(3)(rng) + [rng.uniform(-1, 1, (3, 2))],
           ops=("linalg_lu_solve",)),
    DiffOp("matrix_power", lambda lib, a: lib.matrix_power(a, 3) + a.matrix_power(-2),
           make=_square(3)),
    DiffOp("matrix_exp", lambda lib, a: lib.matrix_exp(a), shapes=((2, 3, 3),), low=-1.0,
           high=1.0),
    DiffOp("vector_norm", lambda lib, a: _la(lib).vector_norm(a, 3, dim=-1),
           make=_away_from_zero((3, 4)), ops=("linalg_vector_norm",)),
    DiffOp("matrix_norm", lambda lib, a: (_la(lib).matrix_norm(a), _la(lib).matrix_norm(
        a, "nuc"), _la(lib).matrix_norm(a, -2), _la(lib).matrix_norm(a, float("inf"))),
        shapes=((2, 3, 4),), ops=("linalg_matrix_norm",)),
    DiffOp("linalg_norm", lambda lib, a: (_la(lib).norm(a), _la(lib).norm(a, 1, dim=(0, 1))),
           shapes=((3, 4),), ops=("linalg_norm",)),
    DiffOp("frobenius_norm", lambda lib, a: lib.frobenius_norm(a, (0, 1)),
           shapes=((3, 4, 2),)),
    DiffOp("nuclear_norm", lambda lib, a: lib.nuclear_norm(a), shapes=((3, 4),)),
    DiffOp("cond", lambda lib, a: _la(lib).cond(a), make=_square(3), ops=("linalg_cond",)),
    # (PyTorch's own backward of cond with a matrix-norm order fails: an in-place change
    # to the inverse it saved)
    DiffOp("cond_fro", lambda lib, a: _la(lib).cond(a, "fro"), make=_square(3),
           ops=("linalg_cond",), torch=False),
    DiffOp("tensorinv", lambda lib, a: _la(lib).tensorinv(a.reshape(2, 2, 4), ind=2),
           make=_square(4), ops=("linalg_tensorinv",)),
    DiffOp("tensorsolve", lambda lib, a, b: _la(lib).tensorsolve(a.reshape(2, 2, 4), b),
           make=lambda rng: _square(4)(rng) + [rng.uniform(-1, 1, (2, 2))],
           ops=("linalg_tensorsolve",)),
    DiffOp("linalg_diagonal", lambda lib, a: _la(lib).diagonal(a, offset=1, dim1=0, dim2=2),
           shapes=((3, 2, 4),), ops=("linalg_diagonal",)),
    DiffOp("vander", lambda lib, a: _la(lib).vander(a, N=4), shapes=((2, 3),),
           ops=("linalg_vander",)),
    DiffOp("householder_product", lambda lib, a, t: _la(lib).householder_product(a, t),
           shapes=((4, 3), (2,)), ops=("linalg_householder_product",)),
    DiffOp("orgqr", lambda lib, a, t: lib.orgqr(a, t), shapes=((2, 3, 2), (2, 2))),
    DiffOp("ormqr", lambda lib, a, t, c: (lib.ormqr(a, t, c, transpose=True),
                                          a.ormqr(t, c.mT, left=False)),
           shapes=((4, 3), (3,), (4, 2))),
    DiffOp("cov", lambda lib, a: lib.cov(a, correction=0), shapes=((3, 5),)),
    DiffOp("corrcoef", lambda lib, a: a.corrcoef(), shapes=((3, 5),)),
    DiffOp("dist", lambda lib, a, b: lib.dist(a, b, 3), shapes=((3, 4), (4,))),
    DiffOp("cdist", lambda lib, a, b: (lib.cdist(a, b), lib.cdist(a, b, p=1.5)),
           shapes=((2, 3, 4), (2, 5, 4))),
]
# -- end linalg --

DIFF_OPS: list[DiffOp] = (_UNARY + _BINARY + _REDUCTIONS + _SHAPES + _INDEXING + _LINALG +
                          _NN + _LOSSES + _SHAPE_FAMILY + _LINALG_FACTOR + _ELEMENTWISE_MATH +
                          _NNMISC)
"""Every differentiable op the Tensor API exposes, with inputs in its smooth domain."""

# -- reductions, sorting, scans, search and index writes (the REDUCE family) ----------


def _q(lib: Any, x: Any, values: list) -> Any:
    """Quantile levels as a tensor of `x`'s dtype and device."""
    return lib.tensor(values, dtype=x.dtype, device=x.device)


def _with_zeros(rng: np.random.Generator) -> list[np.ndarray]:
    x = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
    x[1, 1] = x[2, 0] = x[2, 2] = 0.0  # one zero in a row, two in another
    return [x]


_REDUCE_FAMILY: list[DiffOp] = [
    DiffOp("sort", lambda lib, x: lib.sort(x, 1).values, ops=("sort", "gather")),
    DiffOp("sort_descending", lambda lib, x: x.sort(0, descending=True)[0],
           ops=("sort",)),
    DiffOp("argsort", lambda lib, x: x.gather(1, lib.argsort(x, 1, descending=True)),
           ops=("argsort", "gather")),
    DiffOp("msort", lambda lib, x: lib.msort(x)),
    DiffOp("kthvalue", lambda lib, x: lib.kthvalue(x, 2, 1).values),
    DiffOp("kthvalue_keepdim", lambda lib, x: x.kthvalue(3, 0, keepdim=True)[0],
           ops=("kthvalue",)),
    DiffOp("median", lambda lib, x: lib.median(x)),
    DiffOp("median_dim", lambda lib, x: lib.median(x, 1).values, ops=("median",)),
    DiffOp("nanmedian", lambda lib, x: x.nanmedian(0, keepdim=True).values),
    DiffOp("nanmedian_all", lambda lib, x: lib.nanmedian(x), ops=("nanmedian",)),
    DiffOp("mode", lambda lib, x: lib.mode(x.round(), 1).values * 0 + lib.mode(x, 1).values,
           ops=("mode",)),
    DiffOp("quantile", lambda lib, x: lib.quantile(x, 0.3, 1)),
    DiffOp("quantile_levels", lambda lib, x: lib.quantile(x, _q(lib, x, [0.1, 0.5, 0.95]),
                                                          keepdim=True), ops=("quantile",)),
    DiffOp("quantile_midpoint", lambda lib, x: x.quantile(0.4, 0, interpolation="midpoint"),
           ops=("quantile",)),
    DiffOp("nanquantile", lambda lib, x: lib.nanquantile(x, _q(lib, x, [0.25, 0.75]), 1,
                                                         interpolation="nearest")),
    DiffOp("cumprod", lambda lib, x: lib.cumprod(x, 1)),
    DiffOp("cumprod_zeros", lambda lib, x: x.cumprod(1), make=_with_zeros, ops=("cumprod",)),
    DiffOp("cummax", lambda lib, x: lib.cummax(x, 1).values),
    DiffOp("cummin", lambda lib, x: x.cummin(0)[0]),
    DiffOp("logcumsumexp", lambda lib, x: lib.logcumsumexp(x, 1)),
    DiffOp("logcumsumexp_dim0", lambda lib, x: x.logcumsumexp(0), shapes=((5, 2),),
           ops=("logcumsumexp",)),
    DiffOp("nansum", lambda lib, x: lib.nansum(x.where(x > -1.5, float("nan")), 1),
           ops=("nansum", "where")),
    DiffOp("nanmean", lambda lib, x: x.where(x > -1.5, float("nan")).nanmean((0, 1))),
    DiffOp("aminmax", lambda lib, x: lib.aminmax(x, dim=1)),
    DiffOp("aminmax_all", lambda lib, x: lib.aminmax(x), ops=("aminmax",)),
    DiffOp("trace", lambda lib, x: lib.trace(x)),
    DiffOp("renorm", lambda lib, x: lib.renorm(x, 2, 0, 1.5)),
    DiffOp("renorm_p1", lambda lib, x: x.renorm(1, 1, 2.0), ops=("renorm",)),
    DiffOp("diff", lambda lib, x, y: lib.diff(x, 2, 0, prepend=y), shapes=((3, 4), (1, 4))),
    DiffOp("diff_append", lambda lib, x: x.diff(append=x[:, :1]), ops=("diff",)),
    DiffOp("trapezoid", lambda lib, y, x: lib.trapezoid(y, x, dim=0), shapes=((3, 4), (3,))),
    DiffOp("trapz", lambda lib, y: lib.trapz(y, dx=0.5)),
    DiffOp("cumulative_trapezoid", lambda lib, y, x: lib.cumulative_trapezoid(y, x),
           shapes=((3, 4), (3, 4))),
    DiffOp("take", lambda lib, x: lib.take(x, _idx(lib, x, [[0, -1], [5, 5]])),
           ops=("take", "gather")),
    DiffOp("put", lambda lib, x, s: x.put(_idx(lib, x, [0, -1, 0]), s, accumulate=True),
           shapes=((3, 4), (3,)), ops=("put", "index_put")),
    DiffOp("index_copy", lambda lib, x, s: lib.index_copy(x, 1, _idx(lib, x, [3, 0]), s),
           shapes=((3, 4), (3, 2)), ops=("index_copy", "scatter")),
    DiffOp("index_put", lambda lib, x, v: lib.index_put(
        x, (_idx(lib, x, [0, 2]), _idx(lib, x, [1, 1])), v), shapes=((3, 4), (2,))),
    DiffOp("index_put_accumulate", lambda lib, x, v: x.index_put(
        (_idx(lib, x, [0, 0]),), v, accumulate=True), shapes=((3, 4), (4,)),
        ops=("index_put",)),
    DiffOp("masked_scatter", lambda lib, x, s: lib.masked_scatter(x, x > 0, s),
           shapes=((3, 4), (12,))),
    *[DiffOp(f"scatter_reduce_{reduce}{'' if include_self else '_exclude_self'}",
             lambda lib, x, s, r=reduce, i=include_self: lib.scatter_reduce(
                 x, 0, _idx(lib, x, [[0, 1, 0, 2], [0, 0, 0, 1]]), s, r, include_self=i),
             shapes=((3, 4), (2, 4)), low=0.5, high=2.0, ops=("scatter_reduce",))
      for reduce in ("sum", "prod", "mean", "amax", "amin") for include_self in (True, False)],
    DiffOp("scatter_reduce_prod_zeros", lambda lib, x, s: x.scatter_reduce(
        1, _idx(lib, x, [[0, 0, 1], [2, 2, 2], [3, 3, 0]]), s, "prod"),
        make=lambda rng: [rng.uniform(0.5, 1.5, (3, 4)),
                          np.array([[0.0, 1.5, 0.7], [0.0, 0.0, 1.2], [0.9, 1.1, 0.0]])],
        ops=("scatter_reduce",)),
    *[DiffOp(f"segment_reduce_{reduce}", lambda lib, x, r=reduce: lib.segment_reduce(
        x, r, lengths=_idx(lib, x, [[1, 0, 3], [2, 2, 0], [4, 0, 0]]), axis=1, initial=0.5),
        shapes=((3, 4, 2),), low=0.5, high=2.0, ops=("segment_reduce",))
      for reduce in ("sum", "mean", "max", "min", "prod")],
    DiffOp("gradient", lambda lib, x: lib.gradient(x, spacing=0.5, edge_order=2)),
    DiffOp("gradient_coordinates", lambda lib, x, c: lib.gradient(x, spacing=(c,), dim=1),
           make=lambda rng: [rng.uniform(-2, 2, (3, 4)), np.cumsum(rng.uniform(0.5, 1.5, 4))],
           ops=("gradient",)),
    DiffOp("index_reduce", lambda lib, x, s: lib.index_reduce(
        x, 1, _idx(lib, x, [0, 0, 3]), s, "amax", include_self=False),
        shapes=((3, 4), (3, 3))),
]
DIFF_OPS += _REDUCE_FAMILY
# -- end of the REDUCE family's entries --

# issue 16's last names: the short-time Fourier transform (PyTorch's real view) and
# weight normalization's norm
DIFF_OPS += [
    DiffOp("stft", lambda lib, x: lib.stft(x, 8, hop_length=3, return_complex=False),
           shapes=((2, 21),)),
    DiffOp("stft_window_centred", lambda lib, x, w: lib.stft(
        x, 8, hop_length=2, win_length=5, window=w, pad_mode="constant", normalized=True,
        onesided=False, return_complex=False), shapes=((17,), (5,)), ops=("stft",)),
    DiffOp("norm_except_dim", lambda lib, x: lib.norm_except_dim(x, 2, 1),
           make=_away_from_zero((3, 4, 2))),
    DiffOp("norm_except_dim_last", lambda lib, x: lib.norm_except_dim(x, 3, 2),
           make=_away_from_zero((3, 4, 2)), ops=("norm_except_dim",)),
    # weight_norm's fused form, w = g * v / ||v|| (torch._weight_norm)
    DiffOp("_weight_norm", lambda lib, v, g: lib._weight_norm(v, g, 0),
           make=lambda rng: [_away_from_zero((3, 4))(rng)[0], rng.uniform(0.5, 2.0, (3, 1))]),
]


# complex numbers and torch.fft: real inputs and outputs, complex in between (a complex
# gradient flows back through every op named, PyTorch's conjugate convention)
def _complex_ops(lib: Any, a: Any, b: Any) -> Any:
    z = lib.complex(a, b)
    w = lib.polar(b.abs() + 0.5, a)
    y = (z * w.conj()) / (w + 2.0) + lib.conj_physical(z) * lib.view_as_complex(
        lib.stack([b, a], -1))
    return lib.view_as_real(y.resolve_conj()).sum(-1) + y.real * y.imag + z.angle() + \
        (z @ w.t()).abs().sum() + z.exp().sqrt().abs()


def _fft_ops(lib: Any, x: Any) -> Any:
    f = lib.fft
    y = f.irfft(f.rfft(x, dim=1) * 1.5j, n=5, dim=1).sum() + f.hfft(f.ihfft(x)).sum()
    y = y + f.hfft2(f.ihfft2(x) * 2j).sum() + \
        f.hfftn(f.ihfftn(x, dim=0), dim=0, norm="ortho").sum()
    z = f.fft(x) * f.ifft2(x, norm="ortho") + f.fftn(x, s=(2, 3)).sum()
    z = f.ifftn(z, norm="forward") + f.fft2(f.fftshift(x)) + f.ifftshift(f.ifft(z))
    r = f.irfft2(f.rfft2(x) * 2.0) + f.irfftn(f.rfftn(x, norm="ortho"), s=(3, 4))
    return z.real * 0.3 + z.imag + r + y + f.fftfreq(4, dtype=x.dtype, device=x.device) + \
        f.rfftfreq(6, dtype=x.dtype, device=x.device)


def _complex_math(lib: Any, a: Any, b: Any) -> Any:
    z = lib.complex(a, b) * 0.3  # |Re|, |Im| < 0.6: off the branch cuts of the ones below
    u = z + 2.0  # (Re > 1: off those of log, rsqrt and acosh)
    y = z.sin() * z.cos() + z.tan() + z.sinh() - z.cosh() * z.tanh() + z.asin() + z.acos()
    y = y + z.atan() * z.asinh() + u.acosh() + z.atanh() + z.sigmoid() + u.log2()
    y = y * u.log10() + z.log1p() + z.expm1() + u.rsqrt() + z.exp2() + z.square()
    y = y + z.prod(1, keepdim=True) + z.cumprod(1) + lib.outer(z[0], z[1]).sum()
    return lib.view_as_real(y).sum(-1) + lib.vdot(z[0], z[1]).abs() + lib.dot(z[1], z[2]).real


def _eig(lib: Any, a: Any) -> Any:
    # what does not depend on the eigenvectors' phases (each is unique up to one)
    values, vectors = lib.linalg.eig(a)
    return values.real, values.imag, vectors.abs(), lib.linalg.eigvals(a * 2).imag


DIFF_OPS += [
    DiffOp("complex_math", _complex_math, shapes=((3, 4), (3, 4)), complex=True, ops=(
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh",
        "acosh", "atanh", "sigmoid", "log2", "log10", "log1p", "expm1", "rsqrt", "exp2",
        "square", "prod", "cumprod", "outer", "vdot", "dot")),
    DiffOp("eig", _eig, shapes=((3, 3),), complex=True,
           ops=("linalg_eig", "_linalg_eig", "linalg_eigvals")),
    DiffOp("complex_ops", _complex_ops, shapes=((3, 4), (3, 4)), complex=True, ops=(
        "complex", "polar", "conj", "conj_physical", "view_as_complex", "view_as_real",
        "resolve_conj", "real", "imag", "angle")),
    DiffOp("fft_ops", _fft_ops, complex=True, ops=(
        "_fft_c2c", "_fft_r2c", "_fft_c2r", "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2",
        "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2", "fft_irfft2",
        "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft", "fft_fftshift", "fft_ifftshift",
        "fft_fftfreq", "fft_rfftfreq", "fft_hfft2", "fft_ihfft2", "fft_hfftn", "fft_ihfftn")),
]

_names = [op.name for op in DIFF_OPS]
assert len(_names) == len(set(_names)), "duplicate DiffOp names"
