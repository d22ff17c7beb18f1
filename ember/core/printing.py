"""`repr(tensor)` in PyTorch's format: `tensor([1.0000, 2.5000], requires_grad=True)`."""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtype as dt
from ember.core import forward_ad as fw
from ember.core.host import host_array

# PyTorch's print options: set_printoptions(profile=...) starts from one of these
_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


class _PrintOptions:
    precision = 4  # digits after the point
    threshold: float = 1000  # more elements than this are summarised with "..."
    edgeitems = 3  # items shown at each end of a summarised dimension
    linewidth = 80  # characters per line
    sci_mode: bool | None = None  # None: scientific notation when the values call for it


PRINT_OPTIONS = _PrintOptions()


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    r"""Set options for printing tensors (as `torch.set_printoptions`).

    Args:
        precision: number of digits of precision for floating point output (default = 4).
        threshold: total number of array elements which trigger summarization rather than
            full `repr` (default = 1000).
        edgeitems: number of array items in summary at beginning and end of each dimension
            (default = 3).
        linewidth: the number of characters per line for the purpose of inserting line
            breaks (default = 80).
        profile: sane defaults for pretty printing; overrides the options above when given:
            one of `default`, `short`, `full`.
        sci_mode: enable (True) or disable (False) scientific notation; None (default)
            lets the values decide.
    """
    if profile in _PROFILES:  # PyTorch ignores an unknown profile's name
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTIONS, name, value)
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTIONS, name, value)
    PRINT_OPTIONS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options (as `torch._tensor_str.get_printoptions`)."""
    return {name: getattr(PRINT_OPTIONS, name)
            for name in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


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
            if measured.size:  # (none: plain `0.`/`nan`, whatever sci_mode says)
                hi, lo = np.abs(measured).max(), np.abs(measured).min()
                with np.errstate(over="ignore"):  # (a subnormal lo: the ratio is inf)
                    ratio = hi / lo
                self.sci = ratio > 1000 or hi > 1e8 or (not self.int_mode and lo < 1e-4)
                if PRINT_OPTIONS.sci_mode is not None:
                    self.sci = PRINT_OPTIONS.sci_mode
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
            return f"{v:.{PRINT_OPTIONS.precision}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{PRINT_OPTIONS.precision}f}"

    def __call__(self, v) -> str:
        return self.raw(v).rjust(self.width)


class _ComplexFormatter:
    """PyTorch's complex elements: the real parts formatted alike, then the imaginary parts
    alike (each by its own `_Formatter`), as `1.+2.j` / `3.-4.j`."""

    kind = "complex"

    def __init__(self, values: np.ndarray, dtype: dt.dtype) -> None:
        self.real = _Formatter(values.real, dtype.to_real())
        self.imag = _Formatter(values.imag, dtype.to_real())
        self.width = self.real.width + self.imag.width + 1  # (the "j")

    def __call__(self, v) -> str:
        imag = (self.imag(v.imag) + "j").lstrip()
        return self.real(v.real) + (imag if imag[0] in "+-" else "+" + imag)


def _summarize(a: np.ndarray) -> np.ndarray:
    """Keep only the edge items of every dimension (for choosing the format)."""
    if a.ndim == 0:
        return a.reshape(1)
    edge = PRINT_OPTIONS.edgeitems
    if a.shape[0] > 2 * edge:
        a = np.concatenate([a[:edge], a[-edge:]])
    return np.concatenate([_summarize(x) for x in a]) if a.ndim > 1 else a


def _format(a: np.ndarray, fmt: _Formatter, indent: int, summarize: bool) -> str:
    if a.ndim == 0:
        return fmt(a.item() if fmt.kind != "float" else a.astype(np.float64).item())
    # (a complex element is read as NumPy's complex scalar, which has .real and .imag)
    if a.ndim == 1:
        # PyTorch's ellipsis element is " ..." (so ",  ..., " in a summarised row), a
        # lone "..." where no edge item is shown
        dots = " ..." if PRINT_OPTIONS.edgeitems else "..."
        items = [dots if isinstance(v, str) else fmt(v) for v in _edge(a, summarize)]
        per_line = max(1, (PRINT_OPTIONS.linewidth - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [_format(x, fmt, indent + 1, summarize) if not isinstance(x, str) else x
            for x in _edge(a, summarize)]
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def _edge(a: np.ndarray, summarize: bool) -> list:
    edge = PRINT_OPTIONS.edgeitems
    if summarize and a.shape[0] > 2 * edge:
        return list(a[:edge]) + ["..."] + (list(a[-edge:]) if edge else [])
    return list(a)


def tensor_body(t, indent: int) -> str:
    """The bracketed values of `t` (`[[1., 2.], ...]`), each line after the first indented
    by `indent` columns; `[]` when it has no element."""
    values = host_array(t.detach())
    if t.dtype in (dt.float16, dt.bfloat16) or t.dtype in dt.FLOAT8_DTYPES:
        values = values.astype(np.float32)
    if values.size == 0:
        return "[]"
    summarize = values.size > PRINT_OPTIONS.threshold
    shown = _summarize(values) if summarize else values.reshape(-1)
    if t.dtype is dt.float8_e8m0fnu:  # its smallest value equals 0 cast to it: PyTorch's
        shown = np.where(shown == 2.0**-127, np.float32(0), shown)  # formatter skips it
    fmt = (_ComplexFormatter if t.dtype.is_complex else _Formatter)(shown, t.dtype)
    return _format(values, fmt, indent, summarize)


def tensor_repr(t) -> str:
    suffix = []
    # a subclass prints under its own name (`LoggingTensor([1., 2.])`), except a class
    # that prints as a plain tensor (nn.Parameter, whose repr adds its own header)
    prefix = "tensor(" if type(t).__dict__.get("_prints_as_tensor", False) else \
        type(t).__name__ + "("
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    default_float = dt.get_default_dtype()
    default_dtypes = (default_float, dt.default_complex_dtype(), dt.int64, dt.bool_)
    if t._backend.shape_only:  # no values to show: PyTorch prints the size instead
        body = "..."
        suffix.append(f"size={tuple(t.shape)}")
        if t.dtype is not default_float:
            suffix.append(f"dtype={t.dtype!r}")
    elif t.numel() == 0:
        body = "[]"
        if t.ndim != 1:
            suffix.insert(0, f"size={tuple(t.shape)}")
        if t.dtype is not default_float:  # (no element shows an empty tensor's dtype)
            suffix.append(f"dtype={t.dtype!r}")
    else:
        body = tensor_body(t, len(prefix))
        if not PRINT_OPTIONS.edgeitems:  # (PyTorch's: no edge items, so the shape)
            suffix.append(f"size={tuple(t.shape)}")
        if t.dtype not in default_dtypes:
            suffix.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        # (a C++ node's name is printed without its namespace: CopyBackwards)
        suffix.append(f"grad_fn=<{t.grad_fn.name().rpartition('::')[2]}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    tangent = fw.tangent_of(t)
    if tangent is not None:  # a dual tensor, as PyTorch prints it
        suffix.append(f"tangent={tangent!r}")
    return add_suffixes(prefix + body, suffix, len(prefix))


def add_suffixes(text: str, suffixes: list[str], indent: int,
                 force_newline: bool = False) -> str:
    """`text` and its suffixes (`dtype=...`, `grad_fn=...`): a suffix that would pass the
    line width goes on a line of its own, indented (PyTorch's `_add_suffixes`, including
    its count of the last line's length); with `force_newline` (sparse tensors), the
    first suffix does too."""
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if force_newline or last_line_len + len(s) + 2 > PRINT_OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
            force_newline = False
        else:
            parts.append(", " + s)
            last_line_len += len(s) + 2
    parts.append(")")
    return "".join(parts)
