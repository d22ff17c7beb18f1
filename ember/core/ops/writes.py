"""Ops that write new values into a tensor: `fill_`, `zero_`, `copy_`, and the random
fills (`uniform_`, `normal_`, `bernoulli_`, `exponential_`, `random_`, `cauchy_`,
`log_normal_`, `geometric_`), plus `bernoulli` and `multinomial`. Through
ember.core.inplace, they are differentiable where PyTorch's are (`copy_` and a tensor
`fill_` pass the gradient to their source).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.core import costs, cpu_random, tracing
from ember.core import dtype as dt
from ember.core.backend import numpy_dtype
from ember.core.creation import (
    WIDE_RANDOM,
    arange,
    default_generator,
    empty,
    empty_like,
    full,
    full_like,
    host_generator,
    host_random,
    rand,
    randint,
    randn,
    tensor,
)
from ember.core.declare import composite, fused_kernel
from ember.core.dispatch import kernel_refuses
from ember.core.grad_mode import no_grad, state
from ember.core.graph import record, relabel
from ember.core.host import host_array
from ember.core.inplace import apply_inplace
from ember.core.mt19937 import MT19937
from ember.core.ops.complex import view_as_real
from ember.core.ops.elementwise import eq, isfinite, lt, to_device, to_dtype, where
from ember.core.ops.indexing import SCALAR_TYPE_NAMES
from ember.core.ops.reduction import all as all_
from ember.core.ops.reduction import argmax, cumsum
from ember.core.ops.reduction import sum as sum_
from ember.core.ops.shape import cat, expand, squeeze, unsqueeze
from ember.core.shapes import broadcast_shapes
from ember.core.storage import cpp_type_name
from ember.core.tensor import Tensor
from ember.core.typeinfo import finfo, iinfo


@composite(complex=True, variants="function method", cost=costs.creation)
def fill_(input: Tensor, value: Any) -> Tensor:
    """Fills `input` with `value` (a number or a 0-d tensor), in place."""
    if isinstance(value, Tensor):
        _check_fill_value(value)
        return _named_write(apply_inplace(input, lambda old: expand(
            to_dtype(value, input._dtype), tuple(input.shape)), value, op="fill_"),
            "FillBackward3")
    return _named_write(apply_inplace(input, lambda old: full_like(old, value), op="fill_"),
                        "FillBackward2")


def _named_write(x: Tensor, label: str) -> Tensor:
    """`x` after an in-place write of its whole value, its new graph node named as
    PyTorch's (FillBackward2 for fill_ of a number ...). A view keeps its own node: its
    base's CopySlices holds the write."""
    if state.enabled and x._requires_grad and x._view_fn is None:
        relabel(x, label, ())
    return x


def _copy_backwards() -> str:
    """PyTorch's copy_ node, a C++ one named in full (under the API's name as run)."""
    return f"{dt.API_NAME}::autograd::CopyBackwards"


def _copied(old: Tensor, value: Tensor, named: bool) -> Tensor:
    """copy_'s new value. Where `named` (the public `y.copy_(x)`) and `x` requires grad, a
    tensor of a node of its own, PyTorch's CopyBackwards: the gradient reaches `x`, and
    `y`'s old value as zeros. Else a leaf `x` still gets one (y would take x's place in
    the graph as it is: no node, no gradient to x), and another value's node stays y's,
    so the ops written as a copy into their input (`write_value`) keep their nodes'
    names: ThresholdBackward1."""
    if not (state.enabled and value._requires_grad and (named or value._node is None)):
        return value
    out = value.detach()
    record(_copy_backwards(), _copy_back, (old, value), out)
    return out


def _copy_back(node: Any, g: Tensor) -> tuple:
    return (g.new_zeros(g.shape) if node.needs[0] else None), g


@composite(complex=True, variants="function", cost=costs.creation)
def fill(input: Tensor, value: Any) -> Tensor:
    """A tensor of `input`'s shape, dtype and device filled with `value` (a number or a
    0-d tensor): the out-of-place `fill_`. Its gradient reaches a tensor `value` (summed),
    and `input` as zeros."""
    if isinstance(value, Tensor):
        _check_fill_value(value)
        source = expand(to_dtype(value, input._dtype), tuple(input.shape))
    else:
        source = full_like(input, value)
    # (a `where` taking every element from `source`: `input`'s gradient is zeros, as
    # PyTorch's FillBackward0 gives it)
    out = where(full_like(input, True, dtype=dt.bool_), source, input)
    if out._node is not None:  # PyTorch's node: FillBackward0 (number), FillBackward1
        relabel(out, "FillBackward1" if isinstance(value, Tensor) else "FillBackward0", ())
    return out


def _check_fill_value(value: Tensor) -> None:
    if value.ndim:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                           f"with {value.ndim} dimensions.")


@composite(complex=True, variants="function method", cost=costs.creation)
def zero_(input: Tensor) -> Tensor:
    """Fills `input` with zeros, in place."""
    return _named_write(fill_(input, 0), "ZeroBackward0")


@composite(complex=True, variants="method", cost=costs.movement)
def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copies `src` (broadcastable; any device or dtype) into this tensor, in place."""
    return _copy_into(self, src, True)


def write_value(self: Tensor, value: Tensor) -> Tensor:
    """`self.copy_(value)` for an op written as a copy of its result into its input
    (`relu_`, `add_`): `self` takes `value`'s own graph node (ReluBackward0), not a
    CopyBackwards of it."""
    return _copy_into(self, value, False)


def _copy_into(self: Tensor, src: Any, named: bool) -> Tensor:
    if not isinstance(src, Tensor):
        src = Tensor._from_data(src, device=self.device)

    def compute(old: Tensor) -> Tensor:
        moved = to_dtype(to_device(src, self.device), self._dtype)
        return _copied(old, expand(moved, tuple(self.shape))
                       if tuple(moved.shape) != tuple(self.shape) else moved, named)
    out = apply_inplace(self, compute, src, op="copy_")
    if isinstance(src, Tensor) and src._requires_grad:
        return out
    return _named_write(out, _copy_backwards())  # (its node gives `self` zero gradient)


# -- random fills ----------------------------------------------------------------------
# On the CPU (or with a generator given) each fill draws PyTorch's CPU stream from the
# host generator (ember.core.cpu_random), in the order PyTorch's kernel writes the
# tensor: its memory order. Elsewhere it runs on the device's own generator.

def _memory_order(x: Tensor) -> tuple[int, ...]:
    """The dims of `x` ordered so that a row-major walk of them walks its memory
    (PyTorch's TensorIterator order for a write): by stride, largest first."""
    strides = x.stride()
    return tuple(sorted(range(x.ndim), key=lambda d: -strides[d]))


def _on_host(generator: Any, device: Any) -> Any:
    """The host generator a random op on `device` draws PyTorch's stream from, or None:
    the op then runs as a composite of the random primitives on the device's generator.
    Also None while `ember.jit.trace` records, so a trace holds replayable primitives."""
    if tracing.replaying():
        return None
    return host_generator(generator, device)


def _host_fill(self: Tensor, op: str, generator: Any,
               draw: Callable[[MT19937, int, np.dtype], np.ndarray], *others: Any) -> Tensor | None:
    """Fill `self` in place with `draw(engine, count, numpy dtype)` from the host
    generator, in memory order; None when `self` runs on its device's generator."""
    host = _on_host(generator, self.device)
    if host is None:
        return None
    order = _memory_order(self)
    walked = tuple(self.shape[d] for d in order)
    n, npd = self.numel(), numpy_dtype(self.dtype)

    def compute(old: Tensor) -> Tensor:
        values = host_random(op, walked, self.dtype, self.device,
                             lambda: draw(host._engine, n, npd), shape=walked)
        if order != tuple(range(self.ndim)):
            values = values.permute(tuple(order.index(d) for d in range(self.ndim)))
        return values
    with no_grad():
        return apply_inplace(self, compute, *others, op=op)


def _in_memory_order(self: Tensor, values: Tensor) -> np.ndarray:
    """`values` (broadcast to `self`'s shape) as a flat host array in `self`'s memory
    order."""
    order = _memory_order(self)
    arr = host_array(expand(values, tuple(self.shape)).detach())
    return np.ascontiguousarray(arr.transpose(order)).reshape(-1)


def _type_word(self: Tensor) -> str:
    return SCALAR_TYPE_NAMES.get(self.dtype.name, self.dtype.name)


def _check_float(op: str, self: Tensor) -> None:
    """PyTorch's refusals of a continuous distribution's fill of an integer tensor, each
    worded as its kernel words it."""
    if self.dtype.is_floating_point:
        return
    if op == "exponential":
        raise RuntimeError(f"Exponential distribution is a continuous probability "
                           f"distribution. dtype must be a floating point but you specified "
                           f"{_type_word(self)}")
    if op == "cauchy":
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{cpp_type_name(self.dtype)}")
    kernel = {"normal": "normal_kernel", "uniform": "check_uniform_bounds"}.get(op, op)
    raise NotImplementedError(f'"{kernel}{"" if op == "uniform" else "_cpu"}" not implemented '
                              f"for '{_type_word(self)}'")


@composite(complex=True, variants="method", cost=costs.creation)
def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills this tensor with numbers drawn uniformly from [a, b), in place (a complex
    tensor: each real and imaginary part, as PyTorch fills its real view)."""
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a} > to={b}")
    if self.dtype.is_complex:
        view_as_real(self).uniform_(a, b, generator=generator)
        return self
    _check_float("uniform", self)
    done = _host_fill(self, "uniform_", generator,
                      lambda e, n, d: cpu_random.uniform(e, n, d, a, b))
    if done is not None:
        return done
    r = rand(tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
    return apply_inplace(self, lambda old: r * (b - a) + a, op="uniform_")


@composite(variants="method", cost=costs.creation, fused=("pytorch_normal_fill16",))
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *,
            generator: Any = None) -> Tensor:
    """Fills this tensor with numbers drawn from N(mean, std²), in place."""
    if not self.dtype.is_complex:
        _check_float("normal", self)
    if std < 0:  # (the number as C++ prints a double)
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    contiguous = self.is_contiguous()
    done = _host_fill(self, "normal_", generator,
                      lambda e, n, d: cpu_random.normal(e, n, d, mean, std, contiguous))
    if done is not None:
        return done
    r = randn(tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
    return apply_inplace(self, lambda old: r * std + mean, op="normal_")


fused_kernel("pytorch_normal_fill16", replaces="normal_", same_dtype=False,
             signature="pytorch_normal_fill16(uniforms, mean, std) -> normals or None",
             doc="PyTorch's CPU normal_fill_16 (ember/core/cpu_random.py's NumPy reference) "
                 "on host arrays: a flat float32 or float64 array of uniforms in blocks of "
                 "16 to as many normals, or None where the kernel does not run (the "
                 "reference then does). Drawn by normal_, randn and their kin.")


@composite(variants="function method", cost=costs.creation)
def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """1 with probability `input` (or `p`) for each element, else 0."""
    if _on_host(generator, input.device) is not None:
        out = empty(tuple(input.shape), dtype=input.dtype, device=input.device)
        return bernoulli_(out, input if p is None else p, generator=generator)
    probs = input if p is None else full_like(input, p)
    r = rand(tuple(input.shape), dtype=probs.dtype if probs.dtype.is_floating_point else
             dt.get_default_dtype(), device=input.device, generator=generator)
    return to_dtype(lt(r, probs), input.dtype)


def _check_probabilities(p: Tensor) -> None:
    """PyTorch's CPU kernel's check of a tensor of probabilities (NaN fails it too)."""
    if p.numel() and not bool(((p >= 0) & (p <= 1)).all().item()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")


@composite(variants="method", cost=costs.creation)
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fills this tensor with 1 with probability `p` (else 0), in place."""
    if isinstance(p, Tensor):
        _check_probabilities(p)
        probs = _in_memory_order(self, p) if _on_host(generator, self.device) else None
        done = _host_fill(self, "bernoulli_", generator,
                          lambda e, n, d: cpu_random.bernoulli_tensor(e, probs))
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        done = _host_fill(self, "bernoulli_", generator,
                          lambda e, n, d: cpu_random.bernoulli(e, n, p))
    if done is not None:
        return done
    probs = p if isinstance(p, Tensor) else full(tuple(self.shape), p, dtype=dt.float32,
                                                  device=self.device)
    return copy_(self, bernoulli(probs, generator=generator))


@composite(variants="method", cost=costs.creation)
def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills this tensor with numbers drawn from the exponential distribution, in place."""
    _check_float("exponential", self)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    done = _host_fill(self, "exponential_", generator,
                      lambda e, n, d: cpu_random.exponential(e, n, d, lambd))
    if done is not None:
        return done
    u = rand(tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
    return copy_(self, -(-u).log1p() / lambd)


@composite(variants="function", cost=costs.creation)
def normal(mean: Any = 0.0, std: Any = 1.0, size: Sequence[int] | None = None, *,
           generator: Any = None, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Numbers drawn from N(mean, std²), `mean` and `std` numbers or tensors (broadcast
    together); with two numbers, `size` gives the shape. Drawn as PyTorch draws them:
    standard normals (or N(0, std) for a number `std`) scaled, then shifted by `mean`."""
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mean_t and not std_t:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: two "
                            "numbers need a size")
        if not isinstance(size, (tuple, list)):  # (PyTorch's four overloads)
            api = dt.API_NAME
            raise TypeError(
                f"normal() received an invalid combination of arguments - got "
                f"({type(mean).__name__}, {type(std).__name__}, {type(size).__name__}), but "
                f"expected one of:\n"
                f" * (Tensor mean, Tensor std, *, {api}.Generator generator = None, Tensor out "
                f"= None)\n"
                f" * (Tensor mean, float std = 1, *, {api}.Generator generator = None, Tensor "
                f"out = None)\n"
                f" * (float mean, Tensor std, *, {api}.Generator generator = None, Tensor out "
                f"= None)\n"
                f" * (float mean, float std, tuple of ints size, *, {api}.Generator generator = "
                f"None, Tensor out = None, {api}.dtype dtype = None, {api}.layout layout = "
                f"None, {api}.device device = None, bool pin_memory = False, bool "
                f"requires_grad = False)\n")
        out = empty(*size, dtype=dtype, device=device)
        out = normal_(out, mean, std, generator=generator)
        return out.requires_grad_(True) if requires_grad else out
    if std_t and bool((std < 0).any().item()):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    like = mean if mean_t else std
    shape = broadcast_shapes("normal", tuple(mean.shape), tuple(std.shape)) if mean_t and \
        std_t else tuple(like.shape)
    out = empty(shape, dtype=like.dtype, device=like.device)
    with no_grad():
        if mean_t and not std_t:
            if std < 0:
                raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
            out = normal_(out, 0.0, std, generator=generator)
            return out + mean
        out = normal_(out, 0.0, 1.0, generator=generator)
    return out * std + mean


def _on_host_only(op: str, self: Tensor, generator: Any,
                  draw: Callable[[MT19937, int, np.dtype], np.ndarray],
                  traced: Callable[[Tensor], Tensor]) -> Tensor:
    """A fill drawn from the host generator on every device (a non-CPU tensor without a
    generator draws from the default generator and receives the values). While a trace
    records: `traced(u)` of a primitive uniform draw `u`, which a trace can replay."""
    if tracing.replaying():
        u = rand(tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
        return copy_(self, traced(u))
    done = _host_fill(self, op, generator if generator is not None or self.device.type ==
                      "cpu" else default_generator, draw)
    assert done is not None
    return done


@composite(variants="method", cost=costs.creation)
def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *,
            generator: Any = None) -> Tensor:
    """Fills this tensor with numbers drawn from the Cauchy distribution, in place."""
    _check_float("cauchy", self)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _on_host_only("cauchy_", self, generator,
                         lambda e, n, d: cpu_random.cauchy(e, n, d, median, sigma),
                         lambda u: ((u - 0.5) * math.pi).tan() * sigma + median)


@composite(variants="method", cost=costs.creation)
def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator: Any = None) -> Tensor:
    """Fills this tensor with numbers drawn from the log-normal distribution of the given
    normal `mean` and `std`, in place."""
    _check_float("log_normal", self)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _on_host_only("log_normal_", self, generator,
                         lambda e, n, d: cpu_random.log_normal(e, n, d, mean, std),
                         lambda u: (randn(tuple(self.shape), dtype=self.dtype,
                                          device=self.device) * std + mean).exp())


@composite(variants="method", cost=costs.creation)
def geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fills this tensor with the number of trials until a success of probability `p`,
    in place."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _on_host_only("geometric_", self, generator,
                         lambda e, n, d: cpu_random.geometric(e, n, d, p),
                         lambda u: ((1 - u).log() / math.log1p(-p)).ceil())


# the exclusive upper bound of `random_()` with no bounds: every integer the dtype holds
# exactly (floats: up to 2**digits of their mantissa), from 0 (PyTorch's)
_RANDOM_TO = {"float64": 2 ** 53 + 1, "float32": 2 ** 24 + 1, "float16": 2 ** 11 + 1,
              "bfloat16": 2 ** 8 + 1, "int64": 2 ** 63, "int32": 2 ** 31, "int16": 2 ** 15,
              "int8": 2 ** 7, "uint8": 2 ** 8, "bool": 2}


@composite(variants="method", cost=costs.creation)
def random_(self: Tensor, from_: int | None = None, to: int | None = None, *,
            generator: Any = None) -> Tensor:
    """Fills this tensor with integers drawn uniformly from [from_, to), in place:
    `random_(to)` draws from [0, to); `random_()` from 0 to the largest integer the dtype
    holds exactly."""
    if from_ is None and to is None:
        done = _host_fill(self, "random_", generator,
                          lambda e, n, d: cpu_random.integers_default(e, n, d))
        if done is not None:
            return done
    if to is None:
        from_, to = 0, (_RANDOM_TO[self.dtype.name] if from_ is None else from_)
    low, high = int(from_), int(to)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    _check_random_range(self.dtype, low, high - 1)
    wide = self.dtype.name in WIDE_RANDOM
    done = _host_fill(self, "random_", generator,
                      lambda e, n, d: cpu_random.integers(e, n, low, high, wide))
    if done is not None:
        return done
    return copy_(self, randint(low, high, tuple(self.shape), device=self.device,
                               generator=generator))


def _check_random_range(dtype: dt.dtype, low: int, high: int) -> None:
    """PyTorch's check that `random_`'s bounds fit the dtype (its lowest to its max)."""
    if dtype is dt.bool_:
        lowest, largest = 0, 1
    elif dtype.is_floating_point:
        largest = finfo(dtype).max
        lowest = -largest
    else:
        lowest, largest = iinfo(dtype).min, iinfo(dtype).max
    for value, name in ((low, "from"), (high, "to - 1")):
        if not lowest <= value <= largest:
            raise RuntimeError(f"{name} is out of bounds for {cpp_type_name(dtype)}")


@composite(variants="function method", cost=costs.creation)
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Any = None) -> Tensor:
    """Indices drawn from the categorical distribution of each row of `input`
    (non-negative weights, not necessarily normalized): `num_samples` per row, as int64,
    shaped `(num_samples,)` for a 1-d `input` and `(rows, num_samples)` for a 2-d one.
    Without `replacement` a row never repeats an index."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{SCALAR_TYPE_NAMES[input.dtype.name]}")
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    with no_grad():
        probs = input if input.ndim == 2 else unsqueeze(input, 0)
        rows = probs.shape[0]
        if rows == 0:
            out = full((0, num_samples), 0, dtype=dt.int64, device=input.device)
            return squeeze(out, 0) if input.ndim == 1 else out
        scanned = replacement and num_samples > 1  # (PyTorch's CPU kernels: see below)
        if categories == 0 and not scanned:  # (PyTorch's exponential race reduces first)
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        if not all_(isfinite(probs).logical_and(probs >= 0)).item():
            raise RuntimeError(_bad_probability(probs, scanned))
        if not all_(sum_(probs, 1) > 0).item():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities "
                               "<= 0)")
        if _on_host(generator, input.device) is not None:
            out = _host_multinomial(probs, num_samples, replacement, generator)
        else:
            # float16/bfloat16 weights are drawn in float32 (cumulative sums need range)
            work = probs.dtype if probs.dtype.itemsize >= 4 else dt.float32
            probs = to_dtype(probs, work)
            out = (_draw_with_replacement if replacement else _draw_without_replacement)(
                probs, num_samples, generator)
        return squeeze(out, 0) if input.ndim == 1 else out


def _bad_probability(probs: Tensor, scanned: bool) -> str:
    """PyTorch's message for weights with an entry < 0, inf or NaN. Its CPU draw with
    replacement (`scanned`) checks entry by entry, `>= 0` then finite, and names the first
    bad entry's fault; its other draws check all at once."""
    if not scanned:
        return "probability tensor contains either `inf`, `nan` or element < 0"
    first = probs.reshape(-1)[argmax(to_dtype(~(isfinite(probs) & (probs >= 0)), dt.uint8)
                                     .reshape(-1))].item()
    if first >= 0:  # (+inf: non-negative, not finite)
        return "invalid multinomial distribution (encountering probability entry = infinity " \
               "or NaN)"
    return "invalid multinomial distribution (encountering probability entry < 0)"


def _host_multinomial(probs: Tensor, num_samples: int, replacement: bool,
                      generator: Any) -> Tensor:
    """PyTorch's CPU multinomial. Without replacement, or for one sample: the exponential
    race `argmax`/`topk` of `p / q`, q ~ Exp(1) drawn by `exponential_` in `p`'s dtype.
    With replacement: per row, the cumulative sums (in `p`'s dtype, normalised), then a
    binary search for each double uniform."""
    if not replacement or num_samples == 1:
        # (empty_like: a transposed `probs` draws its exponentials in its memory order)
        q = exponential_(empty_like(probs), 1.0, generator=generator)
        keys = host_array((probs / q).detach())
        if num_samples == 1:
            picks = np.argmax(keys, axis=1)[:, None]
        else:
            picks = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
        return tensor(picks.astype(np.int64), device=probs.device)
    host = host_generator(generator, probs.device)
    weights = host_array(probs.detach())
    acc = np.float32 if weights.dtype.itemsize < 4 else weights.dtype
    cdf = np.cumsum(weights.astype(acc), axis=1)
    cdf = cdf / cdf[:, -1:]
    cdf[:, -1] = 1
    out = np.empty((weights.shape[0], num_samples), np.int64)
    for row in range(weights.shape[0]):
        u = cpu_random.unit(host._engine, num_samples, np.dtype(np.float64))
        out[row] = np.searchsorted(cdf[row].astype(np.float64), u, side="left")
    return tensor(out, device=probs.device)


def _draw_with_replacement(probs: Tensor, num_samples: int, generator: Any) -> Tensor:
    # inverse CDF: a uniform draw u·total lands in category j when cdf[j-1] <= it < cdf[j];
    # the index is how many of the first k-1 cumulative sums it passed (a zero-weight
    # category has an empty interval, so it is never drawn)
    cdf = cumsum(probs, 1)
    target = rand((probs.shape[0], num_samples), dtype=probs.dtype, device=probs.device,
                  generator=generator) * cdf[:, -1:]
    return sum_(unsqueeze(cdf[:, :-1], 1) <= unsqueeze(target, 2), 2)


def _draw_without_replacement(probs: Tensor, num_samples: int, generator: Any) -> Tensor:
    # an exponential race (PyTorch's algorithm): each category gets weight / Exp(1), and
    # the num_samples largest keys, in order, are a draw without replacement
    u = rand(tuple(probs.shape), dtype=probs.dtype, device=probs.device, generator=generator)
    keys = probs / (-(-u).log1p()).clamp_min(1e-30)
    columns = unsqueeze(arange(probs.shape[1], device=probs.device), 0)
    picks = []
    for _ in range(num_samples):
        pick = argmax(keys, 1, keepdim=True)
        picks.append(pick)
        keys = where(eq(columns, pick), -1.0, keys)  # taken: below every weight (>= 0)
    return cat(picks, 1)


# -- nnmisc family (issue 16): Poisson and binomial draws -------------------------------
# PyTorch's samplers, vectorised: every element draws until it is accepted, the loop
# running while any element is still drawing (a host check per round). Small means use
# PyTorch's direct methods; large ones its transformed rejection (PTRS for Poisson, BTRS
# for the binomial, Hörmann 1993), whose acceptance test reads log k!.

# log k! for k < 10, exactly; Stirling's series beyond (error < 1e-10 there)
_LOG_FACTORIALS = [0.0, 0.0, 0.6931471805599453, 1.791759469228055, 3.1780538303479458,
                   4.787491742782046, 6.579251212010101, 8.525161361065415,
                   10.60460290274525, 12.801827480081469]


def _log_factorial(k: Tensor) -> Tensor:
    from ember.core.creation import tensor
    from ember.core.ops import elementwise as E
    from ember.core.ops.indexing import gather
    table = tensor(_LOG_FACTORIALS, dtype=k.dtype, device=k.device)
    small = gather(table, 0, to_dtype(E.clamp(k, 0, 9), dt.int64).reshape(-1)).reshape(k.shape)
    n = E.maximum_of(k, 10.0) + 1.0  # log k! = lgamma(k + 1)
    inv = 1.0 / n
    inv2 = inv * inv
    stirling = ((n - 0.5) * E.log(n) - n + 0.9189385332046727
                + inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 / 1260)))
    return where(k < 10, small, stirling)


def _draw_until_accepted(shape: tuple, like: Tensor, pending: Tensor, draw: Any) -> Tensor:
    """Run `draw(out, pending) -> (value, accepted)` until no element is pending; each
    element keeps the value of the round that accepted it."""
    out = full(shape, 0.0, dtype=like.dtype, device=like.device)
    while bool(pending.any().item()):
        value, accepted = draw(pending)
        accepted = accepted.logical_and(pending)
        out = where(accepted, value, out)
        pending = pending.logical_and(accepted.logical_not())
    return out


def _uniform(like: Tensor, generator: Any) -> Tensor:
    return rand(tuple(like.shape), dtype=like.dtype, device=like.device, generator=generator)


@composite(variants="function", cost=costs.creation)
def poisson(input: Tensor, generator: Any = None) -> Tensor:
    r"""A draw from the Poisson distribution of each element's rate (>= 0), in the input's
    (floating) dtype."""
    from ember.core.ops import elementwise as E
    if not input.dtype.is_floating_point:
        raise kernel_refuses(f"poisson_{input.device.type}", input.dtype)
    with no_grad():
        if input.numel() and bool((input < 0).any().item()):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        host = _on_host(generator, input.device)
        if host is not None:  # PyTorch's sampler, element by element
            # the rates in the memory order of the (contiguous) output, not of the input,
            # which may be an expanded view
            out = empty(tuple(input.shape), dtype=input.dtype, device=input.device)
            rates = _in_memory_order(out, input)
            return _host_fill(out, "poisson", generator,
                              lambda e, n, d: cpu_random.poisson(e, rates))
        lam = input
        # small rates: count uniforms until their product falls below exp(-rate)
        limit = E.exp(-lam)
        count = full(tuple(lam.shape), 0.0, dtype=lam.dtype, device=lam.device)
        product = full(tuple(lam.shape), 1.0, dtype=lam.dtype, device=lam.device)
        active = (lam < 10).logical_and(lam > 0)
        while bool(active.any().item()):
            product = where(active, product * _uniform(lam, generator), product)
            active = active.logical_and(product > limit)
            count = count + to_dtype(active, lam.dtype)
        large = lam >= 10
        if not bool(large.any().item()):
            return count
        # large rates: PTRS
        lam_safe = where(large, lam, 10.0)
        slam, loglam = E.sqrt(lam_safe), E.log(lam_safe)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        v_r = 0.9277 - 3.6224 / (b - 2)

        def draw(pending: Tensor) -> tuple[Tensor, Tensor]:
            u = _uniform(lam, generator) - 0.5
            v = _uniform(lam, generator)
            us = 0.5 - E.abs(u)
            k = E.floor((2 * a / us + b) * u + lam_safe + 0.43)
            quick = (us >= 0.07).logical_and(v <= v_r)
            bad = (k < 0).logical_or((us < 0.013).logical_and(v > us))
            log_ratio = E.log(v) + E.log(inv_alpha) - E.log(a / (us * us) + b)
            exact = log_ratio <= -lam_safe + k * loglam - _log_factorial(E.clamp(k, min=0))
            return k, quick.logical_or(bad.logical_not().logical_and(exact))

        return where(large, _draw_until_accepted(tuple(lam.shape), lam, large, draw), count)


@composite(variants="function", cost=costs.creation)
def binomial(count: Tensor, prob: Tensor, generator: Any = None) -> Tensor:
    r"""A draw from the binomial distribution of ``count`` trials with success probability
    ``prob`` (broadcast together; floating dtypes), as floats."""
    from ember.core.ops import elementwise as E
    from ember.core.ops.shape import broadcast_tensors
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{SCALAR_TYPE_NAMES.get(t.dtype.name, t.dtype.name)}")
    with no_grad():
        n, p = broadcast_tensors(count, to_dtype(prob, count.dtype))
        host = _on_host(generator, n.device)
        if host is not None and n.dtype.name in ("float32", "float64"):
            # PyTorch's sampler, element by element, in the output's (row-major) order
            out = empty(tuple(n.shape), dtype=n.dtype, device=n.device)
            counts, probs = _in_memory_order(out, n), _in_memory_order(out, p)
            return _host_fill(out, "binomial", generator,
                              lambda e, k, d: cpu_random.binomial(e, counts, probs))
        n = E.clamp(E.floor(n), min=0.0)
        flip = p > 0.5  # draw failures instead: q = min(p, 1 - p) <= 0.5
        q = where(flip, 1.0 - p, p)
        # small means: count geometric waiting times until they pass n
        inversion = (n * q < 10).logical_and(q > 0).logical_and(n > 0)
        log_q = E.log1p(-E.clamp(q, max=0.5))
        successes = full(tuple(n.shape), 0.0, dtype=n.dtype, device=n.device)
        waited = full(tuple(n.shape), 0.0, dtype=n.dtype, device=n.device)
        active = inversion
        while bool(active.any().item()):
            u = E.clamp(_uniform(n, generator), min=1e-300)
            waited = where(active, waited + E.ceil(E.log(u) / log_q), waited)
            active = active.logical_and(waited <= n)
            successes = successes + to_dtype(active, n.dtype)
        large = (n * q >= 10).logical_and(q > 0)
        if bool(large.any().item()):
            # BTRS
            nl, ql = where(large, n, 20.0), where(large, q, 0.5)
            spq = E.sqrt(nl * ql * (1 - ql))
            b = 1.15 + 2.53 * spq
            a = -0.0873 + 0.0248 * b + 0.01 * ql
            c = nl * ql + 0.5
            v_r = 0.92 - 4.2 / b
            alpha = (2.83 + 5.1 / b) * spq
            lpq = E.log(ql / (1 - ql))
            m = E.floor((nl + 1) * ql)
            h = _log_factorial(m) + _log_factorial(nl - m)

            def draw(pending: Tensor) -> tuple[Tensor, Tensor]:
                u = _uniform(n, generator) - 0.5
                v = _uniform(n, generator)
                us = 0.5 - E.abs(u)
                k = E.floor((2 * a / us + b) * u + c)
                inside = (k >= 0).logical_and(k <= nl)
                quick = (us >= 0.07).logical_and(v <= v_r)
                kk = E.clamp(k, 0.0, None)
                log_v = E.log(v * alpha / (a / (us * us) + b))
                exact = log_v <= h - _log_factorial(kk) - _log_factorial(E.clamp(nl - kk, min=0))\
                    + (k - m) * lpq
                return k, inside.logical_and(quick.logical_or(exact))

            successes = where(large, _draw_until_accepted(tuple(n.shape), n, large, draw),
                              successes)
        return where(flip, n - successes, successes)


@composite(variants="method", cost=costs.movement)
def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """How `Module.load_state_dict` turns the state dict's `other` into the value of
    parameter or buffer `self` when parameters are swapped rather than copied into:
    `other.detach()` with `assign`, else `self.copy_(other).detach()` (PyTorch's default;
    a subclass may override it)."""
    if assign:
        return other.detach()
    return copy_(self, other).detach()
