"""`repr(tensor)` in PyTorch's format: `tensor([1.0000, 2.5000], requires_grad=True)`."""

from __future__ import annotations

import numpy as np

from ember.core import dtype as dt
from ember.core.host import host_array

LINE_WIDTH = 80
THRESHOLD = 1000  # more elements than this are summarised with "..."
EDGE_ITEMS = 3
PRECISION = 4
SCI_MODE: bool | None = None  # None: chosen from the values, as PyTorch does

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, float("inf"), 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how tensors print, as torch.set_printoptions.

    Args:
        precision: digits after the point for floats (default 4).
        threshold: more elements than this are summarised with "..." (default 1000).
        edgeitems: items kept at each edge of a summarised dimension (default 3).
        linewidth: characters per line (default 80).
        profile: "default", "short" or "full": sets the four above, then the explicit
            ones apply.
        sci_mode: True or False forces scientific notation on or off; None chooses.
    """
    global PRECISION, THRESHOLD, EDGE_ITEMS, LINE_WIDTH, SCI_MODE
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): profile must be one of "
                             f"{sorted(_PROFILES)}, got {profile!r}")
        PRECISION, THRESHOLD, EDGE_ITEMS, LINE_WIDTH = _PROFILES[profile]
    if precision is not None:
        PRECISION = precision
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGE_ITEMS = edgeitems
    if linewidth is not None:
        LINE_WIDTH = linewidth
    SCI_MODE = sci_mode


def get_printoptions() -> dict:
    """The current print options, as torch.get_printoptions."""
    return {"precision": PRECISION, "threshold": THRESHOLD, "edgeitems": EDGE_ITEMS,
            "linewidth": LINE_WIDTH, "sci_mode": SCI_MODE}


class _Formatter:
    """Chooses one format for every element, so columns line up."""

    def __init__(self, values: np.ndarray, dtype: dt.dtype) -> None:
        self.kind = "bool" if dtype is dt.bool_ else ("float" if dtype.is_floating_point
                                                       else "int")
        self.sci = False
        self.int_mode = False
        measured = values.reshape(-1)
        if self.kind == "float":
            # PyTorch looks only at nonzero finite values, for the mode and the width
            measured = values[np.isfinite(values) & (values != 0)].astype(np.float64)
            self.int_mode = bool(np.all(measured == np.round(measured)))
            if measured.size:
                hi, lo = np.abs(measured).max(), np.abs(measured).min()
                self.sci = hi / lo > 1000 or hi > 1e8 or (not self.int_mode and lo < 1e-4)
            if SCI_MODE is not None:
                self.sci = SCI_MODE
        self.width = max((len(self.raw(v)) for v in measured), default=1)

    def raw(self, v) -> str:
        if self.kind == "bool":
            return "True" if v else "False"
        if self.kind == "int":
            return str(int(v))
        v = float(v)
        if not np.isfinite(v):
            return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
        if self.sci:
            return f"{v:.{PRECISION}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{PRECISION}f}"

    def __call__(self, v) -> str:
        return self.raw(v).rjust(self.width)


def _summarize(a: np.ndarray) -> np.ndarray:
    """Keep only the edge items of every dimension (for choosing the format)."""
    if a.ndim == 0:
        return a.reshape(1)
    if a.shape[0] > 2 * EDGE_ITEMS:
        a = np.concatenate([a[:EDGE_ITEMS], a[-EDGE_ITEMS:]])
    return np.concatenate([_summarize(x) for x in a]) if a.ndim > 1 else a


def _format(a: np.ndarray, fmt: _Formatter, indent: int, summarize: bool) -> str:
    if a.ndim == 0:
        return fmt(a.item() if fmt.kind != "float" else a.astype(np.float64).item())
    if a.ndim == 1:
        # PyTorch's ellipsis element is " ..." (so ",  ..., " in a summarised row)
        items = [" ..." if isinstance(v, str) else fmt(v) for v in _edge(a, summarize)]
        per_line = max(1, (LINE_WIDTH - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [_format(x, fmt, indent + 1, summarize) if not isinstance(x, str) else x
            for x in _edge(a, summarize)]
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def _edge(a: np.ndarray, summarize: bool) -> list:
    if summarize and a.shape[0] > 2 * EDGE_ITEMS:
        return list(a[:EDGE_ITEMS]) + ["..."] + list(a[-EDGE_ITEMS:])
    return list(a)


def tensor_repr(t) -> str:
    values = host_array(t.detach())
    if t.dtype in (dt.float16, dt.bfloat16):
        values = values.astype(np.float32)
    suffix = []
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    if values.size == 0:
        body = "[]"
        if values.ndim != 1:
            suffix.insert(0, f"size={tuple(values.shape)}")
    else:
        summarize = values.size > THRESHOLD
        fmt = _Formatter(_summarize(values) if summarize else values.reshape(-1), t.dtype)
        body = _format(values, fmt, len("tensor("), summarize)
    default_float = dt.get_default_dtype()
    if t.dtype not in (default_float, dt.int64, dt.bool_):
        suffix.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + s for s in suffix) + ")"
