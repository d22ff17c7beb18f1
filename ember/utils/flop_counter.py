"""`torch.utils.flop_counter`: count the FLOPs of the matrix products and convolutions run
inside a context, per module.

PyTorch counts at ATen's level, by a registry of formulas for a few operators (`mm`,
`addmm`, `bmm`, `baddbmm`, `convolution`, `convolution_backward`, and the attention
kernels of GPUs); everything else (elementwise ops, reductions, `dot`, `mv`, CPU
attention) counts nothing. ember counts the same products at its own ops' entry
(`ember.core.interpose`), naming each as the ATen operator PyTorch's op reaches
(`linear` with a bias is `aten.addmm`, a batched `@` is `aten.bmm`), and counts once: the
ops a counted op calls inside it are not counted again.

Backward: the gradient formulas of `@`, `mm` and `bmm` are such ops themselves and count
as they run; `linear`'s and the convolutions' backward kernels are not, so their nodes
count PyTorch's backward products (two `mm`s for a linear layer's input and weight
gradients, `convolution_backward` for a convolution's) for the inputs that required grad.
A backward product counts toward the modules whose forward made its node (PyTorch's
module tracker follows backward hooks instead; its totals are the same).

A graph recorded before the counter was entered is counted as its backward runs ops:
its `@`, `mm` and `bmm` gradients count, its fused linear and convolution backward
kernels do not (PyTorch, which counts at dispatch, sees those too).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ember.core import interpose
from ember.core.tensor import Tensor

__all__ = ["FlopCounterMode", "register_flop_formula"]

suffixes = ["", "K", "M", "B", "T"]


class _AtenOp:
    """The ATen operator a count is filed under, printed as PyTorch prints its
    `OpOverloadPacket` (`aten.mm`)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AtenOp) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return f"aten.{self.name}"

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='aten.{self.name}')>"


MM, ADDMM, BMM, BADDBMM = _AtenOp("mm"), _AtenOp("addmm"), _AtenOp("bmm"), _AtenOp("baddbmm")
CONVOLUTION, CONVOLUTION_BACKWARD = _AtenOp("convolution"), _AtenOp("convolution_backward")


def _shape(t: Any) -> tuple[int, ...]:
    return tuple(t.shape)


def _mm(m: int, k: int, n: int, batch: int = 1) -> int:
    return 2 * batch * m * k * n


def _matmul(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[_AtenOp, int] | None:
    """The product `a @ b` reaches (after at::matmul folds batch dims into rows) and its
    FLOPs; None for `dot` and `mv`, which PyTorch does not count."""
    if len(a) == 0 or len(b) == 0 or len(b) == 1 and len(a) <= 2 or len(a) == 1 and len(b) > 2:
        return None  # dot, mv, or a folded mv
    if len(a) == 1:  # a row vector: (1, k) @ (k, n)
        return MM, _mm(1, a[0], b[1])
    if len(b) == 1:  # (..., m, k) @ (k,): folded into an mv
        return None
    if len(b) == 2:  # rows of every batch at once: one mm
        return MM, _mm(math.prod(a[:-1]), a[-1], b[1])
    if len(a) == 2:  # (m, k) @ (..., k, n): folded through transposes into one mm
        return MM, _mm(math.prod(b[:-2]) * b[-1], b[-2], a[0])
    batch = math.prod(_broadcast(a[:-2], b[:-2]))
    return BMM, _mm(a[-2], a[-1], b[-1], batch)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(max(x, y) for x, y in zip(a, b))


def conv_flop_count(x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                    out_shape: tuple[int, ...], transposed: bool = False) -> int:
    """PyTorch's count for a convolution: every output (input, if transposed) position
    of every sample multiplies the whole filter bank, 2 FLOPs each."""
    conv_shape = x_shape[2:] if transposed else out_shape[2:]
    return 2 * x_shape[0] * math.prod(w_shape) * math.prod(conv_shape)


def _swap01(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (shape[1], shape[0], *shape[2:])


def _conv_backward(x: tuple[int, ...], w: tuple[int, ...], out: tuple[int, ...],
                   transposed: bool, needs_input: bool, needs_weight: bool) -> int:
    """PyTorch's `conv_backward_flop`: the input gradient's convolution and the
    weight gradient's, for those that are computed."""
    flops = 0
    if needs_input:
        flops += conv_flop_count(out, w, x, not transposed)
    if needs_weight:
        if transposed:
            flops += conv_flop_count(_swap01(out), _swap01(x), _swap01(w), False)
        else:
            flops += conv_flop_count(_swap01(x), _swap01(out), _swap01(w), False)
    return flops


_CONVS = {"conv1d": False, "conv2d": False, "conv3d": False, "conv_transpose1d": True,
          "conv_transpose2d": True, "conv_transpose3d": True}


def _einsum(equation: str, operands: list[Tensor]) -> tuple[int, int]:
    """The FLOPs of the `bmm`s PyTorch's einsum reduces to, forward and backward:
    operands contracted left to right, an index found in one operand only (and not kept)
    summed out first, a pair with nothing to contract multiplied elementwise (uncounted);
    each pair's backward is one `bmm` per side that requires grad."""
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if "." in equation or len(terms) != len(operands) or len(terms) < 2:
        return 0, 0
    if not arrow:  # the implicit output: the indices seen once, in order
        out = "".join(sorted(c for c in set(lhs) if c.isalpha() and lhs.count(c) == 1))
    sizes: dict[str, int] = {}
    for term, t in zip(terms, operands):
        sizes.update(zip(term, _shape(t)))
    forward = backward = 0
    left, left_grad = set(terms[0]), operands[0].requires_grad
    for i, term in enumerate(terms[1:], start=1):
        kept = set(out).union(*terms[i + 1:])
        right = set(term)
        left = {c for c in left if c in kept or c in right}  # summed out beforehand
        right = {c for c in right if c in kept or c in left}
        if left & right - kept:  # a contraction: one bmm over every index of the pair
            flops = 2 * math.prod(sizes[c] for c in left | right)
            forward += flops
            backward += flops * (int(left_grad) + int(operands[i].requires_grad))
        left, left_grad = (left | right) & kept, left_grad or operands[i].requires_grad
    return forward, backward


def _forward_count(name: str, args: tuple, kwargs: dict, out: Any
                   ) -> tuple[_AtenOp, int, dict[_AtenOp, int]] | None:
    """(operator, FLOPs, the backward's counts) of a counted op's call."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    if name == "einsum":
        operands = [a for a in (args[1:] if len(args) > 2 else args[1]) if isinstance(a, Tensor)]
        forward, backward = _einsum(args[0], operands)
        return BMM, forward, {BMM: backward}
    if name in ("matmul", "mm", "bmm", "addmm", "baddbmm"):
        a, b = (tensors[-2], tensors[-1]) if name in ("addmm", "baddbmm") else tensors[:2]
        found = _matmul(_shape(a), _shape(b))
        if found is None:
            return None
        op = {"addmm": ADDMM, "baddbmm": BADDBMM}.get(name, found[0])
        back = BMM if op in (BMM, BADDBMM) else MM  # each needed gradient: one product
        return op, found[1], {back: found[1] * (int(a.requires_grad) + int(b.requires_grad))}
    if name == "linear":
        x, w = tensors[0], tensors[1]
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        rows, k, n = math.prod(_shape(x)[:-1]), _shape(x)[-1], _shape(w)[0]
        if x.dim() == 1:
            return None if bias is None else (ADDMM, _mm(1, k, n), {})
        flops = _mm(rows, k, n)
        return (ADDMM if bias is not None else MM), flops, \
            {MM: flops * (int(x.requires_grad) + int(w.requires_grad))}
    if name in _CONVS:
        transposed = _CONVS[name]
        x, w = tensors[0], tensors[1]
        xs, ws, os_ = _shape(x), _shape(w), _shape(out)
        if x.dim() == w.dim() - 1:  # an unbatched input: a batch of one
            xs, os_ = (1, *xs), (1, *os_)
        back = _conv_backward(xs, ws, os_, transposed, x.requires_grad, w.requires_grad)
        return CONVOLUTION, conv_flop_count(xs, ws, os_, transposed), \
            {CONVOLUTION_BACKWARD: back} if x.requires_grad or w.requires_grad else {}
    return None


def _in_cpu_flash_attention() -> bool:
    """Whether the op being counted is called by `scaled_dot_product_attention` where
    PyTorch runs its CPU flash kernel, whose products its counter does not see."""
    from ember.nn import functional

    frame = sys._getframe(2)  # the op's caller is a few frames up (interpose, the entry)
    for _ in range(12):  # (other hooks, autocast's, may sit between)
        if frame is None:
            return False
        if frame.f_code.co_name == "scaled_dot_product_attention" and \
                frame.f_code.co_filename == functional.__file__:
            f = frame.f_locals
            return functional._cpu_flash_applies(f["query"], f["key"], f["value"],
                                                 f["dropout_p"])
        frame = frame.f_back
    return False


_COUNTED = {"matmul", "mm", "bmm", "addmm", "baddbmm", "linear", "einsum", *_CONVS}


def register_flop_formula(targets: Any, get_raw: bool = False) -> Callable:
    """PyTorch registers formulas for ATen operators, which ember does not have: ember
    counts its own ops' products (this module's `_forward_count`)."""
    raise NotImplementedError(
        "register_flop_formula: ember counts FLOPs at its own ops, not ATen's operators")


def get_suffix_str(number: int) -> str:
    """The unit suffix for `number` (1.01B shows as 1001M, not 1.001B)."""
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return suffixes[index]


def convert_num_with_suffix(number: int, suffix: str) -> str:
    index = suffixes.index(suffix)
    return f"{number / 1000 ** index:.3f}" + suffixes[index]


def convert_to_percent_str(num: int, denom: int) -> str:
    if denom == 0:
        return "0%"
    return f"{num / denom:.2%}"


class FlopCounterMode:
    """A context manager that counts the FLOPs of the matrix products and convolutions
    run within it, forward and backward, in total and per module.

    Args:
        mods: not needed (the modules called are tracked); passing it warns, as in
            PyTorch.
        depth (int): the module depth the table shows. Default: 2.
        display (bool): print the table on exit. Default: True.
        custom_mapping: PyTorch's ATen formula overrides; ember has no ATen operators.

    Example::

        >>> with FlopCounterMode(display=False) as counter:
        ...     model(x).sum().backward()
        >>> counter.get_total_flops()
    """

    def __init__(self, mods: Any = None, depth: int = 2, display: bool = True,
                 custom_mapping: dict[Any, Any] | None = None) -> None:
        self.flop_counts: dict[str, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        if custom_mapping:
            raise NotImplementedError("FlopCounterMode(custom_mapping=...): ember counts "
                                      "its own ops, not ATen's operators")
        self._parents: list[str] = ["Global"]  # the module path being called
        self._names: dict[int, str] = {}  # id(module) -> its name in the tracked tree
        self._inside = 0  # counted ops or backward nodes running: inner ops don't count
        self._nodes: dict[Any, tuple[tuple[str, ...], dict[_AtenOp, int]]] = {}
        self._handles: list[Any] = []

    # -- results ---------------------------------------------------------------------------

    def get_total_flops(self) -> int:
        """Every counted FLOP."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict[Any, int]]:
        """The counts as ``{module name: {operator: FLOPs}}``, ``"Global"`` for all."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """The counts as PyTorch's table: each module to `depth`, its operators below."""
        import tabulate

        depth = self.depth if depth is None else depth
        depth = 999999 if depth is None else depth
        tabulate.PRESERVE_WHITESPACE = True
        total = self.get_total_flops()
        suffix = get_suffix_str(total)
        subsumed = False

        def rows_of(name: str, indent: int) -> list[list[str]]:
            nonlocal subsumed
            flops = sum(self.flop_counts[name].values())
            subsumed |= flops >= total
            pad = " " * indent
            rows = [[pad + name, convert_num_with_suffix(flops, suffix),
                     convert_to_percent_str(flops, total)]]
            for op, n in self.flop_counts[name].items():
                rows.append([pad + " - " + str(op), convert_num_with_suffix(n, suffix),
                             convert_to_percent_str(n, total)])
            return rows

        values: list[list[str]] = []
        for name in sorted(self.flop_counts):
            if name == "Global" or name.count(".") + 1 > depth:
                continue
            values.extend(rows_of(name, name.count(".")))
        if "Global" in self.flop_counts and not subsumed:
            for row in values:
                row[0] = " " + row[0]
            values = rows_of("Global", 0) + values
        if not values:
            values = [["Global", "0", "0%"]]
        return tabulate.tabulate(values, headers=["Module", "FLOP", "% Total"],
                                 colalign=("left", "right", "right"))

    # -- counting --------------------------------------------------------------------------

    def _add(self, parents: tuple[str, ...], counts: dict[_AtenOp, int]) -> None:
        for name in set(parents):
            for op, n in counts.items():
                if n:
                    self.flop_counts[name][op] += n

    def _on_op(self, op: Any, name: str, call: Callable, args: tuple, kwargs: dict) -> Any:
        if self._inside:  # inside a counted op: nothing counts again, nor its backward
            out = call(args, kwargs)
            node = getattr(out, "grad_fn", None)
            if node is not None and node not in self._nodes:
                self._nodes[node] = ((), {})
            return out
        if op.name not in _COUNTED or _in_cpu_flash_attention():
            return call(args, kwargs)
        self._inside += 1
        try:
            out = call(args, kwargs)
        finally:
            self._inside -= 1
        found = _forward_count(op.name, args, kwargs, out)
        aten, flops, backward = found if found is not None else (None, 0, {})
        parents = tuple(self._parents)
        if flops:
            self._add(parents, {aten: flops})
        node = getattr(out, "grad_fn", None)
        if node is not None:  # its backward counts as PyTorch's (dot, mv: nothing)
            self._nodes[node] = (parents, backward)
        return out

    def _on_node(self, node: Any, run: Callable[[], Any]) -> Any:
        entry = self._nodes.get(node)
        if entry is None:  # a graph made before the counter: its ops count as they run
            return run()
        self._add(*entry)  # the backward products of a counted op's node
        self._inside += 1
        try:
            return run()
        finally:
            self._inside -= 1

    def _pre_forward(self, module: Any, args: Any) -> None:
        name = self._names.get(id(module))
        if name is None:
            name = type(module).__name__
            self._names[id(module)] = name
        for child_name, child in module.named_children():
            self._names.setdefault(id(child), f"{name}.{child_name}")
        self._parents.append(name)

    def _post_forward(self, module: Any, args: Any, output: Any) -> None:
        name = self._names.get(id(module))
        for i in range(len(self._parents) - 1, 0, -1):
            if self._parents[i] == name:
                del self._parents[i]
                break

    def __enter__(self) -> FlopCounterMode:
        from ember.nn.module import register_module_forward_hook, register_module_forward_pre_hook

        self.flop_counts.clear()
        self._parents, self._names, self._nodes, self._inside = ["Global"], {}, {}, 0
        self._handles = [register_module_forward_pre_hook(self._pre_forward),
                         register_module_forward_hook(self._post_forward, always_call=True)]
        # (one bound method each, kept: `remove` finds a hook by identity)
        self._op_hook, self._node_hook = self._on_op, self._on_node
        interpose.install(self._op_hook, 1)
        interpose.install_backward(self._node_hook)
        return self

    def __exit__(self, *exc: Any) -> None:
        interpose.remove(self._op_hook)
        interpose.remove_backward(self._node_hook)
        for handle in self._handles:
            handle.remove()
        self._handles, self._nodes = [], {}  # drop the graph's nodes
        if self.display:
            print(self.get_table(self.depth))
