"""ember's ops, declared once each, one module per family (see ember.core.opdef).

Importing this package declares every op: the registry (`ember.core.opdef.OPS`) is then
complete, and `Tensor` has all its methods and operators. The families import one
another one way only: elementwise <- shape <- indexing <- reduction <- scans <- sorting
<- search <- linalg <- factorizations <- norms <- nn <- losses, and writes, foreach,
elementwise_math (which reads complex), polynomials (on elementwise_math and
shape); complex builds on elementwise, shape and indexing; fft on complex, nn and
rearrange; rearrange builds on
shape and indexing, predicates on shape, spectral
on shape and nn, lobpcg on
factorizations, segments on indexing and search, hashing on elementwise. A gradient
formula that needs an op of a later family calls it as a Tensor method
(`grad.sum_to_size(...)`), bound by the time any backward runs.
"""

from ember.core.ops import (  # noqa: F401 - imported for their declarations
    complex,
    elementwise,
    elementwise_math,
    factorizations,
    fft,
    foreach,
    hashing,
    indexing,
    linalg,
    lobpcg,
    losses,
    nn,
    norms,
    polynomials,
    predicates,
    rearrange,
    reduction,
    scans,
    search,
    segments,
    shape,
    sorting,
    spectral,
    writes,
)
