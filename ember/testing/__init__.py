"""ember's backend conformance suite, and gradient checking.

The tests that the built-in backends pass ship inside the package, so the author of a
backend plugin runs exactly the same tests against their device:

.. code-block:: sh

    pip install "ember[test]" torch   # pytest + hypothesis; torch (optional) is the oracle
    pip install -e ./my-ember-plugin  # registers your `ember.backends` entry point
    pytest --pyargs ember.testing --ember-device mydev

The options come from the pytest plugin ``ember.testing.plugin``, which ember registers
as a ``pytest11`` entry point. Where that entry point is not installed (an ember built
before it), name the plugin yourself:
``pytest -p ember.testing.plugin --pyargs ember.testing --ember-device mydev``, or run the
package by path (``pytest /path/to/site-packages/ember/testing ...``: its conftest.py
registers the plugin).

``--ember-device`` may be repeated (``--ember-device mydev:0 --ember-device cpu``); with
none, every available device is tested. ``--ember-examples N`` makes each Hypothesis
property test draw N examples (default 15) for a longer run; the usual pytest options
apply (``-x``, ``-k matmul``, ``--lf`` ...). The run's header lists, per device, the
primitive ops its backend has no kernel for: those still pass, because ember runs them
on the CPU backend (with a ``FallbackWarning``); run with ``EMBER_STRICT=1`` to make the
suite fail until every primitive is native. On the CPU backend the whole suite (about
1,470 tests) takes about 20 s of one core, plus the start-up.

What the suite checks, on the chosen device, for every op declared in
``ember.core.opdef.OPS`` (primitive or composite) and every fused kernel in ``FUSED``:

* values against NumPy references over shapes, dtypes, memory layouts (transposed,
  strided) and broadcasting drawn by Hypothesis, and result dtypes against PyTorch's type
  promotion (``test_elementwise``, ``test_reductions``, ``test_shapes``,
  ``test_indexing``, ``test_linalg``, ``test_nn``, ``test_losses``, ``test_creation``);
  the list ops of the optimizers (``test_foreach``); moves between devices
  (``test_transfers``);
* every in-place (``x.add_()``) and ``out=`` variant the declarations give: it writes what
  the op returns into its tensor, as PyTorch does (``test_variants``);
* every fused kernel the backend has: the op it replaces gives the same values and
  gradients with the kernel and without it (``test_fused``);
* gradients against central finite differences in float64, and second derivatives for a
  few ops (``test_grads``);
* forward and backward against PyTorch, float32 and float64, where torch is installed
  (``test_torch_parity``);
* views: writes through slices, ``view`` and ``t()`` reach the base (``test_shapes``);
* that every result stays on the device under test, and (``test_coverage``) that every
  declared op and fused kernel has a test: every primitive a value test, and every op
  declaring a gradient formula a gradient test.

A plugin's own tests get the ``device`` fixture and the options too (through the entry
point, or ``pytest_plugins = ["ember.testing.plugin"]`` in their top-level conftest.py),
and may call ``gradcheck`` on their own ops.

Public API:
    assert_close(actual, expected, *, rtol=None, atol=None, ...): torch.testing's.
    assert_allclose(actual, expected, rtol=None, atol=None): its deprecated older form.
    gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3): check first derivatives.
    gradgradcheck(fn, inputs, grad_outputs=None, ...): check second derivatives.
    GradcheckError: raised by both on a mismatch (a RuntimeError, as PyTorch's).
"""

from ember.testing.comparison import assert_allclose, assert_close
from ember.testing.creation import make_tensor
from ember.testing.gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["GradcheckError", "assert_allclose", "assert_close", "gradcheck", "gradgradcheck",
           "make_tensor"]
