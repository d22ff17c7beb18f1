"""ONNX's own backend test suite (`onnx.backend.test.BackendTest`) run with ember's ONNX
backend (`ember.exporters.onnx_backend.EmberBackend`, i.e. `ember.onnx.load`).

onnx 1.23 builds the 1,884 "node" cases in memory, offline; the "simple",
"pytorch-converted" and "pytorch-operator" models ship in its wheel. Every case runs (the
whole suite takes seconds); each test prints its pass count, and fails if a case that is
not excluded fails, or if an excluded case passes (so the list below stays true).

`EMBER_ONNX_BACKEND_CASES=1 pytest tests/test_onnx_backend.py -k <name>` also collects
every case as its own unittest test, for debugging one.
"""

from __future__ import annotations

import functools
import os
import re
import unittest
import warnings

import pytest

pytest.importorskip("onnx")

import onnx.backend.test  # noqa: E402

from ember.exporters.onnx_backend import EmberBackend  # noqa: E402

KINDS = {"node": "OnnxBackendNodeModelTest", "simple": "OnnxBackendSimpleModelTest",
         "pytorch-converted": "OnnxBackendPyTorchConvertedModelTest",
         "pytorch-operator": "OnnxBackendPyTorchOperatorModelTest"}

# Every exclusion, in one place: a regular expression (searched in the case's name) and
# why the case cannot pass. Grouped by reason; keep it true (see the module docstring).
_NO_DTYPE = "ember has no such dtype"
EXCLUDED: dict[str, str] = {
    # -- dtypes ember does not have (its dtypes: bool, (u)int8, int16/32/64, float16,
    #    bfloat16, float32/64; the importer holds uint16/32/64, float8, float4 and 4- and
    #    2-bit integers in wider ones) --
    r"test_image_decoder_": "decodes image file bytes (strings of bytes): not a tensor op",
    # -- ops without a converter yet --
    r"test_ai_onnx_ml_tree_ensemble": "TreeEnsemble of ai.onnx.ml: no converter",
    # -- reference outputs ember cannot (or should not) match --
    r"test_dft_inverse(_opset19)?_cpu": "the expected output holds float32 FFT noise "
                                        "(1.9e-7 where 0 is exact) above the runner's atol",
    r"test_loop16_seq_none": "onnx's runner cannot compare its optional-sequence output",
    r"test_attention_4d_causal_fp16_expanded": "float16 softmax and matmul round as "
        "PyTorch's (in float32, once); the reference rounds every step in float16: 2 of 192 "
        "elements 2 ulps apart, past the runner's rtol of 1e-3",
}

# Random ops: ember's generator draws other values than onnx's reference, so these fail
# almost always, but may match by chance (a few 0/1 draws): excluded, and not held to
# failing.
RANDOM: dict[str, str] = {
    r"test_bernoulli|test_training_dropout(?!_zero_ratio)":
        "random: ember's generator draws other values",
}

# ember's cases that also fail on OpenCL (PoCL) only, beside those above.
OPENCL_EXCLUDED: dict[str, str] = {}

# Pass counts reached on the CPU (onnx 1.23): a change that loses a case fails here.
PASSING = {"node": 1859, "simple": 23, "pytorch-converted": 82, "pytorch-operator": 35}


@functools.cache
def _backend_test() -> onnx.backend.test.BackendTest:
    """Built once (onnx generates the node cases in about 15 s); the runner reads its
    `backend` when a case runs, so one build serves every device."""
    with warnings.catch_warnings():  # onnx's case generators warn about their own data
        warnings.simplefilter("ignore")
        return onnx.backend.test.BackendTest(EmberBackend, __name__)


def _run_kind(kind: str, device: str) -> tuple[list[str], dict[str, str]]:
    """Run every case of `kind` on `device`: the names that passed, and why each other
    one failed."""
    suite = _backend_test()
    suite.backend = EmberBackend.on(device)
    cases = suite.test_cases[KINDS[kind]]
    names = sorted(n for n in dir(cases) if n.startswith("test_") and n.endswith("_cpu"))
    result = unittest.TestResult()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unittest.TestSuite(cases(n) for n in names).run(result)
    failed = {case._testMethodName: tb.strip().splitlines()[-1][:200]
              for case, tb in result.failures + result.errors}
    return [n for n in names if n not in failed], failed


def _random_cases(kind: str) -> int:
    cases = _backend_test().test_cases[KINDS[kind]]
    return sum(1 for n in dir(cases) if n.endswith("_cpu") and _excluded(n, RANDOM))


def _excluded(name: str, table: dict[str, str]) -> str | None:
    return next((why for pattern, why in table.items() if re.search(pattern, name)), None)


def _check(kind: str, device: str, table: dict[str, str], capsys, strict: bool = True
           ) -> int:
    passed, failed = _run_kind(kind, device)
    total = len(passed) + len(failed)
    unexpected = {n: why for n, why in failed.items()
                  if _excluded(n, {**table, **RANDOM}) is None}
    stale = [n for n in passed if _excluded(n, table) is not None]
    with capsys.disabled():
        print(f"\nONNX backend suite, {kind} cases on {device}: {len(passed)} of {total} "
              f"pass ({len(failed)} excluded)")
    assert not unexpected, "cases that fail and are not excluded:\n" + "\n".join(
        f"  {n}: {why}" for n, why in sorted(unexpected.items()))
    assert not (strict and stale), "excluded cases that now pass (remove their exclusion):\n  " + \
        "\n  ".join(stale)
    return len(passed)


@pytest.mark.parametrize("kind", list(KINDS))
def test_onnx_backend_suite_on_cpu(kind, capsys):
    passed = _check(kind, "cpu", EXCLUDED, capsys)
    assert PASSING[kind] <= passed <= PASSING[kind] + _random_cases(kind)


def test_onnx_backend_node_suite_on_opencl(capsys):
    pytest.importorskip("pyopencl")
    from ember.core import plugins

    reason = plugins.safe_unavailable_reason(plugins.get_backend("opencl"))
    if reason is not None:
        pytest.skip(f"no usable OpenCL device: {reason}")
    # (not strict: an exclusion made for the CPU may pass here)
    passed = _check("node", "opencl", {**EXCLUDED, **OPENCL_EXCLUDED}, capsys, strict=False)
    assert passed >= PASSING["node"] - len(OPENCL_EXCLUDED)


if os.environ.get("EMBER_ONNX_BACKEND_CASES"):  # every case as a test of its own
    _cases = _backend_test()
    for _pattern in {**EXCLUDED, **RANDOM}:
        _cases.exclude(_pattern)
    globals().update(_cases.test_cases)
