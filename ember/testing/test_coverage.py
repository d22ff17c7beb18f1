"""The suite covers every declared op: each op in ember.core.opdef.OPS (primitive or
composite) and each fused kernel in FUSED is exercised by a conformance test, so an op
cannot be declared in core without one.

What covers what is written next to the tests, and read here:

* `COVERS` in each value-test module (`_VALUE_MODULES`): the ops whose values its tests
  check, against NumPy or PyTorch;
* `DiffOp.ops` in ember.testing.opinfo: the ops each gradient (gradcheck) and
  PyTorch-parity entry exercises (by default, the op the entry is named after);
* `CASES` in test_fused: one case per fused kernel;
* test_variants takes the in-place and `out=` variants from the declarations themselves.

The rules: every declared op is covered (`declared - covered` must be empty); every
primitive has a value test of its own (a DiffOp's values are compared only where PyTorch
is installed); every op that declares a gradient formula (`Op.grad`) has a DiffOp; and
every name a list gives is declared (a typo would hide a missing test).
"""

from __future__ import annotations

import importlib

import ember  # noqa: F401 - declares every op
from ember.core.opdef import FUSED, OPS, Kind
from ember.testing.opinfo import DIFF_OPS, DiffOp

_VALUE_MODULES = ["test_elementwise", "test_reductions", "test_shapes", "test_indexing",
                  "test_linalg", "test_nn", "test_losses", "test_creation", "test_foreach",
                  "test_transfers", "test_fused",
                  "test_elementwise_math",  # elementwise math (issue 16)
                  "test_complex"]  # complex tensors and torch.fft


def _module(name: str):
    return importlib.import_module(f"ember.testing.{name}")


def value_covered() -> dict[str, set[str]]:
    """Module name -> the ops whose values it checks (its `COVERS`)."""
    return {name: set(_module(name).COVERS) for name in _VALUE_MODULES}


def diff_op_covers(op: DiffOp) -> tuple[str, ...]:
    """The declared ops a DiffOp exercises: its `ops`, or else the op it is named after."""
    return op.ops or ((op.name,) if op.name in OPS else ())


def gradient_covered() -> set[str]:
    return {name for op in DIFF_OPS for name in diff_op_covers(op)}


def _unknown(names: set[str]) -> list[str]:
    return sorted(names - set(OPS))


def test_every_declared_op_has_a_test() -> None:
    covered = set().union(*value_covered().values()) | gradient_covered()
    missing = sorted(set(OPS) - covered)
    assert not missing, f"declared ops without a conformance test: {missing} (test them, " \
                        "and name them in a module's COVERS or a DiffOp's ops)"


def test_every_primitive_has_a_value_test() -> None:
    tested = set().union(*value_covered().values())
    missing = sorted(name for name, op in OPS.items()
                     if op.kind is Kind.PRIMITIVE and name not in tested)
    assert not missing, f"primitive ops without a conformance test of their values: {missing}"


def test_every_op_with_a_gradient_formula_has_a_gradient_test() -> None:
    missing = sorted(name for name, op in OPS.items()
                     if op.grad is not None and name not in gradient_covered())
    assert not missing, f"ops declaring a gradient without a DiffOp (gradcheck) entry: " \
                        f"{missing}"


def test_every_fused_kernel_has_a_case() -> None:
    cases = set(_module("test_fused").CASES)
    assert not sorted(set(FUSED) - cases), \
        f"fused kernels without a test_fused case: {sorted(set(FUSED) - cases)}"
    assert not sorted(cases - set(FUSED)), \
        f"test_fused cases for kernels that are not declared: {sorted(cases - set(FUSED))}"


def test_coverage_lists_name_declared_ops() -> None:
    for module, names in value_covered().items():
        assert not _unknown(names), f"{module}.COVERS names undeclared ops: {_unknown(names)}"
    for op in DIFF_OPS:
        assert not _unknown(set(op.ops)), \
            f"DiffOp {op.name!r} names undeclared ops: {_unknown(set(op.ops))}"
