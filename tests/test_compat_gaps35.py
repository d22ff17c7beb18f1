"""Round 35 of small PyTorch-compatibility gaps, each checked against torch."""

import pytest

import ember
from ember.core.dtype import API_NAME

torch = pytest.importorskip("torch")


def _outcome(fn):
    """The error (type, message) `fn` raises, or the dtype name and values it returns."""
    try:
        out = fn()
    except Exception as err:  # noqa: BLE001 - the error is what is compared
        return type(err), str(err).replace("torch.", API_NAME + ".")
    if hasattr(out, "dtype"):
        return str(out.dtype).split(".")[-1], tuple(out.shape), out.tolist()
    return out


def _same(call):
    """`call(lib)` behaves alike in torch and ember: the same error or the same result."""
    assert _outcome(lambda: call(ember)) == _outcome(lambda: call(torch))


# -- 1. a kernel's "not implemented for '<Dtype>'", in one place ------------------------

@pytest.mark.parametrize("call", [
    lambda lib: lib.logcumsumexp(lib.arange(3), 0),
    lambda lib: lib.arange(3).float().kthvalue(1) and lib.ones(3, dtype=lib.bool).kthvalue(1),
    lambda lib: lib.ones(2, 2, dtype=lib.bool).trace(),
    lambda lib: lib.bincount(lib.ones(3)),
    lambda lib: lib.histc(lib.arange(3)),
    lambda lib: lib.poisson(lib.ones(3, dtype=lib.int64)),
    lambda lib: lib.tril_indices(3, 3, dtype=lib.float32),
    lambda lib: lib.arange(4).round(decimals=1),
    lambda lib: lib.rand(2, dtype=lib.int64),
    lambda lib: lib.div(lib.ones(2, dtype=lib.bool), lib.ones(2, dtype=lib.bool),
                        rounding_mode="trunc"),
], ids=["logcumsumexp", "kthvalue", "trace", "bincount", "histc", "poisson", "tril_indices",
        "round", "rand", "div_trunc"])
def test_kernel_refusals(call):
    _same(call)


@pytest.mark.parametrize("shapes", [
    ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 2)), ((4, 2, 3), (3, 2)),
    ((4, 2, 3), (4, 3, 2)), ((3,), (4, 3, 2)), ((4, 2, 3), (3,)), ((2, 3), (4, 2)),
    ((0, 3), (3, 2)), ((2, 0), (0, 3)), ((0,), (0,)), ((3,), (3, 0)), ((2, 2, 0), (2, 0, 3)),
])
def test_matmul_of_bool_tensors(shapes):
    a, b = shapes
    _same(lambda lib: lib.ones(*a, dtype=lib.bool) @ lib.ones(*b, dtype=lib.bool))
