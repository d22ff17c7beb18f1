"""Process-wide switches PyTorch programs set at start-up: thread counts and the
deterministic-algorithms flag, with PyTorch's argument checks and messages."""

from __future__ import annotations

import re
import warnings

import pytest

import ember
from ember.core import determinism, threads


@pytest.fixture
def restore(monkeypatch):
    """Put the switches back as they were (module state, and the BLAS pool's threads)."""
    for module, names in ((threads, ("_num_threads", "_num_interop_threads")),
                          (determinism, ("_enabled", "_warn_only"))):
        for name in names:
            monkeypatch.setattr(module, name, getattr(module, name))
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    original = threadpool_limits(limits=None)  # records the pools' limits, changes nothing
    yield
    original.restore_original_limits()


def test_num_threads_round_trip_and_errors_match_torch(restore):
    torch = pytest.importorskip("torch")
    assert ember.get_num_threads() >= 1 and ember.get_num_interop_threads() >= 1
    ember.set_num_threads(1)
    ember.set_num_interop_threads(3)
    assert ember.get_num_threads() == 1 and ember.get_num_interop_threads() == 3
    for bad in (0, -2, 2.5, "2"):
        with pytest.raises(RuntimeError) as theirs:
            torch.set_num_threads(bad)
        with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
            ember.set_num_threads(bad)
    assert ember.get_num_threads() == 1  # a refused value changes nothing


def test_deterministic_algorithms_flag_matches_torch(restore):
    torch = pytest.importorskip("torch")
    assert ember.are_deterministic_algorithms_enabled() is False
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert ember.are_deterministic_algorithms_enabled() is True
    assert ember.is_deterministic_algorithms_warn_only_enabled() is True
    ember.use_deterministic_algorithms(False)
    assert ember.are_deterministic_algorithms_enabled() is False
    assert ember.is_deterministic_algorithms_warn_only_enabled() is False
    with pytest.raises(TypeError) as theirs:
        torch.use_deterministic_algorithms("yes")
    with pytest.raises(TypeError, match=re.escape(str(theirs.value))):
        ember.use_deterministic_algorithms("yes")


def test_put_without_accumulation_alerts_under_deterministic_algorithms(restore):
    """put_ (and put) without accumulate have no deterministic implementation in
    PyTorch: an error under use_deterministic_algorithms(True), a warning with warn_only;
    accumulating is deterministic."""
    torch = pytest.importorskip("torch")

    def run(L):
        outcomes = []
        for warn_only in (False, True):
            L.use_deterministic_algorithms(True, warn_only=warn_only)
            src = L.tensor([[4, 3, 5], [6, 7, 8]])
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for call in (lambda s=src: s.put_(L.tensor([1, 3]), L.tensor([9, 10])),
                             lambda s=src: s.put(L.tensor([1]), L.tensor([2]),
                                                 accumulate=True)):
                    try:
                        outcomes.append(call().tolist())
                    except RuntimeError as err:
                        outcomes.append(str(err).replace(L.__name__, "torch"))
            # (PyTorch's warning names its C++ source: that part left out)
            outcomes.append([str(w.message).replace(L.__name__, "torch").split(" (Triggered")[0]
                             for w in caught])
        L.use_deterministic_algorithms(False)
        return outcomes

    assert run(ember) == run(torch)
