"""The suite itself: every primitive op in ember.core.opdef.OPS is exercised by some test,
so a new primitive cannot be added to core without a conformance test for it."""

from __future__ import annotations

import ember  # noqa: F401 - declares every op
from ember.core.opdef import OPS as _ALL
from ember.core.opdef import Kind
from ember.testing import test_elementwise
from ember.testing.opinfo import DIFF_OPS

OPS = {name for name, op in _ALL.items() if op.kind is Kind.PRIMITIVE}

# primitives whose values each module checks against NumPy (beyond the tables it imports)
FORWARD_TESTED = {
    "test_elementwise": {u.name for u in test_elementwise.UNARY} |
    {b.name for b in test_elementwise.BINARY} | {"where", "clamp", "cast"},
    "test_reductions": {"sum", "prod", "max", "min", "all", "any", "argmax", "argmin",
                        "cumsum"},
    "test_shapes": {"reshape", "permute", "expand", "flip", "clone", "tril", "triu", "cat",
                    "getitem", "setitem", "assign"},
    "test_indexing": {"getitem", "setitem", "gather", "scatter", "scatter_add",
                      "index_select", "nonzero", "where"},
    "test_linalg": {"matmul", "einsum"},
    "test_creation": {"full", "arange", "rand", "randn", "randint", "randperm"},
    "test_nn": {"im2col", "col2im", "constant_pad"},
}


def test_every_primitive_has_a_value_test() -> None:
    tested = set().union(*FORWARD_TESTED.values())
    missing = sorted(set(OPS) - tested)
    assert not missing, f"primitive ops without a conformance test of their values: {missing}"
    unknown = sorted(tested - set(OPS))
    assert not unknown, f"FORWARD_TESTED names ops that are not primitives: {unknown}"


def test_every_differentiable_primitive_has_a_gradient_test() -> None:
    not_differentiable = {
        "sign", "floor", "ceil", "round", "trunc",  # zero gradient; their DiffOps check it
        "logical_not", "isnan", "isinf", "isfinite", "bitwise_not", "floor_divide", "eq",
        "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
        "bitwise_and", "bitwise_or", "bitwise_xor", "all", "any", "argmax", "argmin",
        "nonzero", "full", "arange", "rand", "randn", "randint", "randperm", "assign",
    }
    covered = {p for op in DIFF_OPS for p in op.prims}
    missing = sorted(set(OPS) - covered - not_differentiable)
    assert not missing, f"differentiable primitives without a gradcheck entry: {missing}"
    unknown = sorted(covered - set(OPS))
    assert not unknown, f"DiffOp.prims names ops that are not primitives: {unknown}"
