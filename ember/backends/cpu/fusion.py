"""One numba kernel for a chain of elementwise ops (`CPUBackend.fuse_elementwise`, asked by
`ember.compile` when it plans a recorded step, see ember/jit/plan.py).

The kernel's source is generated from a table of scalar formulas, one per op, and written
to a file in ember's cache folder named by the source's hash, so that numba's disk cache
keeps the machine code across processes (a chain compiles once per machine, ~1 s; later
processes load it in milliseconds). The loops run over the result's dimensions, merged
where every input is either present or broadcast alike: a bias over rows is read as
`b[i1]`, a conv bias over (N, C, H, W) as `b[i1]` in an (N, C, H*W) loop nest, and the
innermost loop runs over contiguous memory, which LLVM vectorises.

Semantics are NumPy's kernels': NaN propagates through `relu`, `maximum` and `minimum`;
`relu_backward` passes the gradient where the output is not <= 0 (NaN included); the
transcendental functions are numba_kernels.py's float32 ones (a few ulps, tested there)
and libm's on float64. No `fastmath`: a chain of +, -, *, / rounds exactly as the
unfused NumPy ops do.

Used only where it pays: float32/float64 chains of at least `MIN_ELEMENTS` results
(below, numba's call costs more than NumPy's passes), with numba present and not turned
off (`EMBER_NUMBA=0`). The loops run on one core: a replay's chains sit between GEMMs
whose OpenBLAS threads are still spinning, and measured on the 2-core machine under
load, the CNN step's `prange` ReLU backward (1.4M elements) made the replay 1.5-2.5x
slower than the serial loop (which runs it in ~0.5 ms).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.backends.cpu import compiled
from ember.core.backend import ElementwiseChain, cache_dir, float32, float64

MIN_ELEMENTS = 1024
MAX_DIMS = 3  # loop nests deeper than this (after merging dims) are not generated

# op -> scalar formula of its operands {0}, {1}; Z and O are 0 and 1 of the chain's dtype
FORMULAS: dict[str, str] = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
    "neg": "-{0}", "abs": "abs({0})", "sqrt": "np.sqrt({0})", "reciprocal": "O / {0}",
    "rsqrt": "O / np.sqrt({0})", "exp": "exp({0})", "log": "log({0})",
    "tanh": "tanh({0})", "sigmoid": "sigmoid({0})",
    "relu": "Z if {0} <= Z else {0}",
    "maximum": "{0} if ({0} >= {1} or {0} != {0}) else {1}",
    "minimum": "{0} if ({0} <= {1} or {0} != {0}) else {1}",
    "relu_backward": "Z if {0} <= Z else {1}",
    "tanh_backward": "(O - {0} * {0}) * {1}",
    "sigmoid_backward": "((O - {0}) * {0}) * {1}",
    "exp_backward": "{1} * {0}",
    "log_backward": "{1} / {0}",
}
FUSIBLE = frozenset(FORMULAS)

_NP = {float32: np.dtype(np.float32), float64: np.dtype(np.float64)}
_HEADER = """import numpy as np
from numba import njit
from ember.backends.cpu.numba_kernels import exp, log, sigmoid, tanh
Z, O = np.{dtype}(0), np.{dtype}(1)


def _njit(f):
    try:
        return njit(cache=True, error_model="numpy")(f)
    except RuntimeError:  # no cache locator: compile in memory
        return njit(cache=False, error_model="numpy")(f)


@_njit
"""
_loaded: dict[str, Callable[..., Any]] = {}  # source hash -> compiled function
_failed: set[str] = set()  # sources numba refused (warned once each)


def _source(chain: ElementwiseChain, dims: tuple[int, ...],
            patterns: list[tuple[bool, ...]], scalars: list[Any]) -> str:
    n_in = len(chain.inputs)
    names = ["out"] + [f"a{i}" for i in range(n_in)] + [f"c{i}" for i in range(len(scalars))]
    lines = [f"def chain({', '.join(names)}):"]
    indent = "    "
    for d in range(len(dims)):
        lines.append(f"{indent}for i{d} in range(out.shape[{d}]):")
        indent += "    "
    for i, pattern in enumerate(patterns):
        index = ", ".join(f"i{d}" for d, kept in enumerate(pattern) if kept) or "0"
        lines.append(f"{indent}x{i} = a{i}[{index}]")
    expressions = chain.expressions(FORMULAS, lambda i: f"x{i}", lambda k, _: f"c{k}")
    lines += [f"{indent}v{j} = {e}" for j, e in enumerate(expressions)]
    target = ", ".join(f"i{d}" for d in range(len(dims)))
    lines.append(f"{indent}out[{target}] = v{len(chain.ops) - 1}")
    header = _HEADER.format(dtype=_NP[chain.dtype].name)
    return header + "\n".join(lines) + "\n"


def _cache_dir() -> str | None:
    """ember's cache folder's `fused_kernels`, made if need be; None where not writable."""
    folder = os.path.join(cache_dir(), "fused_kernels")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def _load(source: str) -> Callable[..., Any]:
    """The compiled `chain` of `source`, from a module file in the cache folder (numba's
    cache then lives beside it), or compiled in memory where no folder is writable."""
    key = hashlib.sha256(source.encode()).hexdigest()[:24]
    fn = _loaded.get(key)
    if fn is not None:
        return fn
    name = f"ember_fused_{key}"
    folder = _cache_dir()
    if folder is None:
        namespace: dict[str, Any] = {}
        exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102
        fn = namespace["chain"]
    else:
        path = os.path.join(folder, name + ".py")
        if not os.path.exists(path):
            handle, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(handle, "w") as f:
                f.write(source)
            os.replace(tmp, path)  # atomically: another process may be writing it too
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules.setdefault(name, module)
        fn = module.chain
    _loaded[key] = fn
    return fn


def fuse(chain: ElementwiseChain) -> Callable[..., Any] | None:
    """`kernel(*buffers, out=None)` computing `chain` in one compiled loop nest, or None
    where it does not apply (see the module's docstring)."""
    dtype = _NP.get(chain.dtype)
    if dtype is None or any(op not in FORMULAS or d is not chain.dtype
                            for op, _, d in chain.ops):
        return None
    if any(d is not chain.dtype for _, d in chain.inputs):
        return None
    size = int(np.prod(chain.shape))
    if size < MIN_ELEMENTS or compiled.kernels() is None:
        return None
    merged = chain.loop_dims()
    if merged is None or len(merged[0]) > MAX_DIMS:
        return None
    dims, patterns = merged
    numbers = [v for _, operands, _ in chain.ops for kind, v in operands if kind == "scalar"]
    if any(not isinstance(v, (int, float, np.floating)) or isinstance(v, bool)
           for v in numbers):
        return None
    scalars = [dtype.type(v) for v in numbers]
    source = _source(chain, dims, patterns, scalars)
    if source in _failed:
        return None
    try:
        fn = _load(source)
    except Exception as e:  # noqa: BLE001 - a numba failure: this chain runs op by op
        _failed.add(source)
        warnings.warn(f"ember.compile: the CPU could not compile the fused kernel "
                      f"{chain.name} ({type(e).__name__}: {e}); its ops run one by one",
                      RuntimeWarning, stacklevel=2)
        return None
    shape = tuple(chain.shape)
    views = [tuple(n for n, kept in zip(dims, p) if kept) or (1,) for p in patterns]
    return _kernel(fn, shape, dtype, dims, views, scalars)


def _kernel(fn: Callable[..., Any], shape: tuple[int, ...], dtype: np.dtype,
            dims: tuple[int, ...], views: list[tuple[int, ...]], scalars: list[Any]
            ) -> Callable[..., Any]:
    def kernel(*buffers: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        target = out
        if target is None or not _writable_into(target, shape, dtype, buffers):
            target = np.empty(shape, dtype)
        # reshape: a view of a contiguous buffer (a copy of another, which is only read)
        fn(target.reshape(dims), *[b.reshape(v) for b, v in zip(buffers, views)], *scalars)
        if out is not None and target is not out:
            out[...] = target
            return out
        return target
    return kernel


def _writable_into(out: np.ndarray, shape: tuple[int, ...], dtype: np.dtype,
                   buffers: tuple[np.ndarray, ...]) -> bool:
    """Whether the loop may write straight into `out`: contiguous, of the result's shape
    and dtype, and overlapping no input except one that is `out` itself (read at the
    index it is written, before the write)."""
    if out.shape != shape or out.dtype != dtype or not out.flags.c_contiguous or \
            not out.flags.writeable:
        return False
    return all(b is out or not np.may_share_memory(b, out) for b in buffers)
