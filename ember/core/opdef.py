"""What an op declaration holds, and the registry of every declared op.

Every op ember has — primitive, composite or fused kernel — is declared exactly once, in
the op family module that implements it (ember/core/ops/*.py, ember/core/creation.py),
with `ember.core.declare`. Everything else reads the declarations: dispatch takes an op's
shape/dtype rule from here, autograd its gradient formulas, `ember` and `Tensor` their
functions, methods, operators and in-place variants, the conformance suite its op list,
`ember ops` its table. Each op's precision class (autocast) and cost (the profiler's
FLOPs, the scheduler's estimates) are declared here for those features to read; until
they land, `ember ops` lists them and tests check them. PyTorch's native_functions.yaml
and derivatives.yaml are the model, kept in Python and without a code generator.

Three kinds of declaration:

- a **primitive** has a kernel in each backend (or runs on the CPU backend's, copying
  its operands, when a backend lacks it). Its `rule` checks the operands and gives the
  output's shape and dtype; the rule's parameters *are* the kernel's: `kernel(*buffers,
  **attrs)` receives the operands the rule takes positionally and, by keyword, the
  attributes it takes as keyword-only parameters.
- a **composite** is written with other ops (its `fn`). It may have its own gradient
  (then its decomposition runs without recording, and one node records it), and
  backends may replace it with **fused kernels**.
- a **fused kernel** (`FusedKernel`) is an optional backend kernel that does the work of
  a composite, or of a gradient formula, in one call. Core runs one only through
  `dispatch.run_fused`, which checks devices, dtypes and tracing once for all of them.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ember.core import dtype as dt


class Kind(enum.Enum):
    PRIMITIVE = "primitive"
    COMPOSITE = "composite"


class Precision(enum.Enum):
    """What autocast does to an op's floating inputs (PyTorch's autocast op lists)."""

    LOWER = "lower"      # cast to the region's low-precision dtype (float16 / bfloat16)
    FLOAT32 = "float32"  # cast up to float32
    PROMOTE = "promote"  # cast to the widest floating dtype among the inputs
    KEEP = "keep"        # left as they are


class OutMeta(NamedTuple):
    """A rule's answer: the output's shape and dtype, and the dtype tensor operands are
    cast to before the kernel runs (None: they are passed as they are)."""

    shape: tuple[int, ...]
    dtype: dt.dtype
    compute: dt.dtype | None


def metadata_rule(rule: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a shape/dtype rule whose answer depends only on its tensor operands' shapes
    and dtypes, its Python scalars (type and value), its attributes and the default
    dtype: never on a tensor's values, its device or strides, or other global state.
    Dispatch then keeps the rule's answers per such key (`Op.rule_answers`), so a
    repeated call skips the rule (ember.core.dispatch.run)."""
    rule.metadata_only = True
    return rule


@dataclass(frozen=True)
class Cost:
    """The work of one call: floating-point operations and bytes read plus written."""

    flops: float = 0.0
    bytes: float = 0.0


class Formula(NamedTuple):
    fn: Callable[..., Any]
    reads: tuple[str, ...]  # the names of its parameters after the gradient


def _formula(fn: Callable[..., Any]) -> Formula:
    params = list(inspect.signature(fn).parameters)
    return Formula(fn, tuple(params[1:]))


class Grad:
    """How an op sends its output's gradient back to its operands.

    Either one formula per differentiable operand, keyed by the operand's name::

        Grad(input=lambda grad, other: grad * other,
             other=lambda grad, input: grad * input)

    or `each=`, one formula that returns a gradient for every operand (None where `needs`
    is false), for ops whose operands are a list (`cat`, `einsum`) or whose gradients are
    computed together (a composite then names its operands in `operands`).

    A formula's first parameter is the output gradient; the names of the rest say what it
    reads, and only what the formulas of the operands that need a gradient read is kept:

    - an operand's name: its value (a tensor is saved for backward, and changing it in
      place afterwards makes backward raise; a Python number is kept as it is);
    - `result`: the op's output (saved);
    - an attribute's name (a keyword-only parameter of the rule, or a key of the attrs a
      composite records): its value (saved, if it is a tensor);
    - `<operand>_shape`: that operand's shape (nothing saved);
    - `needs`: which operands need a gradient (a tuple of bools).

    `wrapped` names the operands PyTorch types as tensors that a Python number may fill
    (mul's and div's `other`): its binding makes the number a tensor, so a formula that
    reads it saves it, and a second backward through the node raises as for a saved
    tensor (`grad_fn._saved_other` shows it as a 0-d tensor).

    A returned gradient is summed down to its operand's shape (broadcasting) and cast to
    its dtype when they differ, so formulas need not do either. Formulas are written with
    ember ops, so gradients run on the forward's device and can be differentiated again
    (`create_graph=True`).
    """

    def __init__(self, label: str | None = None, *, each: Callable[..., Any] | None = None,
                 operands: tuple[str, ...] = (), wrapped: tuple[str, ...] = (),
                 **formulas: Callable[..., Any]) -> None:
        if (each is None) == (not formulas):
            raise TypeError("Grad: give one formula per operand, or `each=`, not both")
        self.label = label  # the node's name (PyTorch's, e.g. "MulBackward0")
        self.formulas = {name: _formula(f) for name, f in formulas.items()}
        self.each = None if each is None else _formula(each)
        self.operands = operands
        self.wrapped = wrapped
        self.plans: dict[tuple[bool, ...], Any] = {}  # ember.core.apply's, by `needs`


@dataclass(eq=False)
class Op:
    """One op's declaration. See the module docstring for the kinds.

    Attributes:
        name: the op's name: `ember.<name>`, `Tensor.<name>`, and its kernel's key.
        kind: PRIMITIVE or COMPOSITE.
        fn: the Python implementation, with the public signature (its parameters are the
            op's inputs and attributes, with their types and defaults).
        doc: the documentation (`fn.__doc__` unless given).
        rule: primitives: the shape/dtype rule, `rule(*operands, **attrs) -> OutMeta`
            (None when the data decides the shape); it raises on bad input, naming the op
            and the shapes. Its parameters are the kernel's: positional ones are operands
            (tensors, or Python scalars where the op allows them), keyword-only ones are
            attributes.
        grad: how to differentiate it (None: not differentiable, or, for a composite,
            differentiated through the ops it is written with).
        precision: the autocast class on accelerators (PyTorch's CUDA lists).
        cpu_precision: the autocast class on the CPU (PyTorch's CPU lists).
        cost: `cost(*args, **kwargs) -> Cost`, called like the rule (primitives) or like
            `fn` (composites): FLOPs and bytes from the inputs' shapes. None: not declared.
        variants: which of "function" (`ember.<name>`), "method" (`Tensor.<name>`),
            "inplace" (`Tensor.<name>_`) and "out" (an `out=` keyword) exist.
        method: the method when it differs from `fn` (e.g. `x.view(2, 3)` takes sizes as
            separate arguments).
        inplace_method: the in-place method when the generic one (compute, then write
            into the tensor through autograd's in-place machinery) is not enough.
        operators: Python operators that run this op (`__add__`, `__radd__`, `__iadd__`):
            `__r<op>__` swaps the operands, `__i<op>__` is the in-place method.
        operator_impl: what the operators call, when not `fn` (a two-operand fast path).
        reflected_impl: what the reflected operator (`other / x`) calls, as
            `reflected_impl(other, x)`, when PyTorch computes it otherwise than `fn`.
        aliases: other names of the same function and method (`clip` for `clamp`).
        fused: composites: the fused kernels that may do its work (see FusedKernel).
        traced_as_node: composites: `ember.jit.trace` records a call as one node with its
            ops inside, so an exporter can map it whole (ONNX `Conv`, `Softmax` ...).
        view: primitives: the output shares storage with operand 0.
        mutates: primitives: the kernel writes into operand 0 and returns nothing.
        creation: primitives: no tensor operands; the kernel takes a `device` index.
        uncast: primitives: operands never cast to the compute dtype (`where`'s condition).
        exact_out: an `out=` tensor must have the result's dtype (PyTorch's rule for its
            ops outside TensorIterator, such as `mm` and `where`, and for the unary ops
            that keep their input's dtype); else any dtype the result casts to. True, or
            the style of PyTorch's message (ember.core.declare.OUT_DTYPE_ERRORS).
        out_is_dtype: an `out=` tensor's dtype is the op's `dtype=` (PyTorch's `sum` and
            `prod` compute in it), which, given as well, must be the same.
        complex: the op takes complex tensors, with PyTorch's values and gradients (the
            conjugate convention: `z.grad` is dL/dRe + i dL/dIm). An op without it refuses
            a complex operand before anything runs, as PyTorch refuses a dtype its kernel
            lacks (`"clamp_cpu" not implemented for 'ComplexFloat'`), never computing a
            silently wrong result: dispatch checks a primitive's operands, and the public
            function of a composite checks its arguments.
        node_label: composites differentiated through their decomposition: the name of
            the node their result shows (PyTorch's, `StackBackward0`), or a function of the
            call's arguments giving it; None: the last step's node shows.
    """

    name: str
    kind: Kind
    fn: Callable[..., Any] | None = None
    doc: str = ""
    rule: Callable[..., Any] | None = None
    grad: Grad | None = None
    precision: Precision = Precision.KEEP
    cpu_precision: Precision = Precision.KEEP
    cost: Callable[..., Cost] | None = None
    variants: frozenset[str] = frozenset()
    method: Callable[..., Any] | None = None
    inplace_method: Callable[..., Any] | None = None
    operators: tuple[str, ...] = ()
    operator_impl: Callable[..., Any] | None = None
    reflected_impl: Callable[..., Any] | None = None
    aliases: tuple[str, ...] = ()
    fused: tuple[str, ...] = ()
    traced_as_node: bool = False
    view: bool = False
    mutates: bool = False
    creation: bool = False
    uncast: tuple[int, ...] = ()
    exact_out: bool | str = False
    out_is_dtype: bool = False
    complex: bool = False
    node_label: str | Callable[..., str] | None = None
    rule_answers: dict | None = field(default=None, repr=False)
    """The rule's answers by call key, when the rule is a `metadata_rule`; set by
    register."""
    public: Callable[..., Any] | None = field(default=None, repr=False)
    """The function users call (`fn`, wrapped for `out=` and tracing); set by declare."""
    public_inplace: Callable[..., Any] | None = field(default=None, repr=False)
    """The in-place method `Tensor.<name>_` (also PyTorch's `torch.<name>_` where it
    exists); set by declare."""

    @property
    def signature(self) -> inspect.Signature | None:
        """The public inputs and attributes, with their types and defaults."""
        return None if self.fn is None else inspect.signature(self.fn)

    @property
    def kernel_signature(self) -> inspect.Signature | None:
        """Primitives: what a backend's kernel receives (the rule's parameters)."""
        return None if self.rule is None else inspect.signature(self.rule)

    @property
    def operand_names(self) -> tuple[str, ...]:
        """Primitives: the positional operands of the kernel, in order."""
        sig = self.kernel_signature
        if sig is None:
            return ()
        return tuple(p.name for p in sig.parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL))


@dataclass(eq=False)
class FusedKernel:
    """An optional backend kernel that does the work of a composite (or of a gradient
    formula) in one call; without it, the composite's decomposition runs.

    Attributes:
        name: the kernel's key in a backend's table.
        replaces: what it does the work of: an op's name, or "<op> backward".
        signature: its calling convention, for backend authors.
        doc: what it computes.
        outputs: one entry per output: "like" (the first tensor argument's dtype),
            "int64", or "opaque" (handed back to core unchanged, e.g. a workspace only
            the backend's own backward kernel reads). An output may be None.
        backward: it computes a gradient, so it is skipped while the backward pass is
            itself recorded (`create_graph=True`): the formula in ember ops runs then.
        same_dtype: every tensor argument must have the first one's dtype.
        writes: positions of the arguments it writes in place (their versions advance).
    """

    name: str
    replaces: str
    signature: str
    doc: str
    outputs: tuple[str, ...] = ("like",)
    backward: bool = False
    same_dtype: bool = True
    writes: tuple[int, ...] = ()
    one_like: bool = field(init=False, repr=False)
    """One output, of the first tensor argument's dtype (the common case)."""
    all_like: bool = field(init=False, repr=False)
    """Several outputs, each of the first tensor argument's dtype (or None)."""

    def __post_init__(self) -> None:
        self.one_like = self.outputs == ("like",)
        self.all_like = len(self.outputs) > 1 and set(self.outputs) == {"like"}


OPS: dict[str, Op] = {}
"""Every declared op by name."""

FUSED: dict[str, FusedKernel] = {}
"""Every declared fused kernel by name."""


def register(op: Op) -> Op:
    """Add `op` to the registry (see ember.core.declare, which also makes its variants)."""
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} is declared twice")
    if op.kind is Kind.PRIMITIVE and op.rule is None:
        raise ValueError(f"primitive {op.name!r} needs a shape/dtype rule")
    if op.grad is not None and op.grad.formulas and op.kind is Kind.PRIMITIVE:
        unknown = set(op.grad.formulas) - set(op.operand_names)
        if unknown:
            raise ValueError(f"op {op.name!r}: gradient formulas for {sorted(unknown)}, "
                             f"which are not operands of its rule {op.operand_names}")
    if getattr(op.rule, "metadata_only", False):
        op.rule_answers = {}
    OPS[op.name] = op
    return op


def register_fused(kernel: FusedKernel) -> FusedKernel:
    """Add a fused kernel's declaration to the registry."""
    if kernel.name in FUSED:
        raise ValueError(f"fused kernel {kernel.name!r} is declared twice")
    FUSED[kernel.name] = kernel
    return kernel
