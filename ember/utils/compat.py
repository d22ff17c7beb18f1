"""How much of PyTorch's public API ember has, measured against the installed PyTorch.

`ember compat` prints it. The names come from PyTorch itself, so the report follows
whichever PyTorch is installed:

- Tensor methods, ``torch.*`` functions and ``torch.nn.functional``: PyTorch's own list of
  public overridable functions, ``torch.overrides.get_testing_overrides()``;
- nn modules: every ``torch.nn.Module`` class in ``torch.nn``;
- optimizers and LR schedulers: every class in ``torch.optim`` and
  ``torch.optim.lr_scheduler``.

Left out of every count, and said so in the report: names private to PyTorch (a leading
underscore), sparse and quantized tensors, complex dtypes (ember has none), and the
families that belong to one vendor's library (mkldnn, cudnn, miopen, fbgemm, vulkan,
nnpack) or to PyTorch's own compiler (symbolic shapes, nested tensors).
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any

# A name is left out when it contains one of these: the families above.
EXCLUDED_FAMILIES = (
    "sparse", "quantiz", "q_per_channel", "q_scale", "q_zero_point", "qscheme", "int_repr",
    "dequantize", "choose_qparams", "fake_quant", "mkldnn", "cudnn", "miopen", "fbgemm",
    "vulkan", "nnpack", "nested", "to_padded", "coalesce", "crow_indices", "col_indices",
    "ccol_indices", "row_indices", "complex", "conj", "angle", "polar", "view_as_real",
    "imag", "real", "chalf", "cfloat", "cdouble", "sym_", "ipu", "mtia", "xpu",
    "record_stream", "dim_order", "segment_reduce", "hash_tensor", "values_copy",
    "indices_copy", "dense_dim", "sspaddmm", "to_dense",
)
# ... and these names exactly: the accessors of sparse tensors and their products.
EXCLUDED_NAMES = {"values", "indices", "smm", "dsmm", "hsmm", "saddmm", "isreal"}


@dataclasses.dataclass
class Coverage:
    """One namespace: the names PyTorch has there, and those ember lacks."""
    namespace: str
    names: list[str]
    missing: list[str]

    @property
    def have(self) -> int:
        return len(self.names) - len(self.missing)

    @property
    def fraction(self) -> float:
        return self.have / len(self.names) if self.names else 1.0


def _counted(name: str) -> bool:
    return (not name.startswith("_") and name not in EXCLUDED_NAMES
            and not any(f in name for f in EXCLUDED_FAMILIES))


def _overridable_names(torch: Any) -> tuple[set[str], set[str], set[str]]:
    """Tensor members, torch.* functions and torch.nn.functional names PyTorch overrides."""
    from torch.overrides import get_testing_overrides
    functional = torch.nn.functional
    tensor, functions, nn_functional = set(), set(), set()
    for f in get_testing_overrides():
        if type(f).__name__ == "method-wrapper":  # a property's __get__: Tensor.T, .grad ...
            owner = getattr(f, "__self__", None)
            name = getattr(owner, "__name__", None)
            if name and getattr(torch.Tensor, name, None) is not None:
                tensor.add(name)
            continue
        name = getattr(f, "__name__", None)
        if name is None:
            continue
        if getattr(torch.Tensor, name, None) is f or getattr(f, "__objclass__", None) in (
                torch.Tensor, torch._C.TensorBase):
            tensor.add(name)
        elif getattr(functional, name, None) is f:
            nn_functional.add(name)
        elif getattr(torch, name, None) is f:
            functions.add(name)
    return tensor, functions, nn_functional


def _classes(module: Any, base: type, skip: tuple[str, ...] = ()) -> set[str]:
    return {n for n, c in vars(module).items()
            if inspect.isclass(c) and issubclass(c, base) and c is not base
            and not n.startswith("_") and not n.startswith(skip)}


def measure() -> list[Coverage]:
    """Coverage of each namespace against the installed PyTorch (ImportError without it)."""
    import torch
    import torch.optim.lr_scheduler as torch_sched

    import ember
    import ember.nn.functional as ember_functional
    import ember.optim.lr_scheduler as ember_sched

    tensor, functions, nn_functional = _overridable_names(torch)
    optimizers = _classes(torch.optim, torch.optim.Optimizer)
    schedulers = _classes(torch_sched, torch_sched.LRScheduler, ("LRScheduler",))
    schedulers.add("ReduceLROnPlateau")  # not an LRScheduler subclass in every release
    namespaces = [
        ("Tensor methods", tensor, ember.Tensor),
        ("torch functions", functions, ember),
        ("nn.functional", nn_functional, ember_functional),
        ("nn modules", _classes(torch.nn, torch.nn.Module), ember.nn),
        ("optimizers", optimizers, ember.optim),
        ("LR schedulers", schedulers, ember_sched),
    ]
    report = []
    for label, names, where in namespaces:
        counted = sorted(n for n in names if _counted(n))
        report.append(Coverage(label, counted, [n for n in counted if not hasattr(where, n)]))
    return report


def format_report(report: list[Coverage], show_missing: bool = True) -> str:
    """The report `ember compat` prints: a line per namespace, then what each lacks."""
    import torch
    lines = [f"ember's coverage of PyTorch {torch.__version__}'s public API",
             "(complex, sparse, quantized, vendor-private and compiler-private names left out)", ""]
    for c in report:
        lines.append(f"  {c.namespace:<16} {c.have:>4} / {len(c.names):<4} {c.fraction:6.1%}")
    if show_missing:
        for c in report:
            if c.missing:
                lines += ["", f"missing from {c.namespace} ({len(c.missing)}):"]
                lines += _wrap(c.missing)
    return "\n".join(lines)


def _wrap(names: list[str], width: int = 88) -> list[str]:
    lines, line = [], "  "
    for n in names:
        if len(line) + len(n) + 1 > width:
            lines.append(line.rstrip())
            line = "  "
        line += n + " "
    return lines + [line.rstrip()]
