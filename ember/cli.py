"""The `ember` command: `ember devices`, `ember ops`, `ember demo`, `ember export`,
`ember onnx run`, `ember run`, `ember compat`, `ember tour`."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any


def _described(err: BaseException) -> str:
    """An error's message and its notes (ember's context: what devices there are ...)."""
    return "\n".join([str(err), *getattr(err, "__notes__", ())])


def _fmt_bytes(n: int | None) -> str:
    if not n:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return str(n)


def cmd_devices(args: argparse.Namespace) -> int:
    """List every backend found, its devices and their state, and why any is unusable."""
    from ember.core import plugins
    from ember.scheduling import cli as sched_cli

    status = sched_cli.run(args)  # --calibrate, --explain SPEC
    if status is not None:
        return status
    registry = plugins.registry
    try:
        registry.ensure_loaded()
    except RuntimeError as err:  # EMBER_BACKENDS makes plugin errors loud
        print(f"error: {err}", file=sys.stderr)
        return 1
    print("ember backends:")
    for name, backend in registry.backends.items():
        reason = plugins.safe_unavailable_reason(backend)
        origin = next((p for p in registry.plugins if name in p.backends), None)
        where = f" [plugin {origin.distribution or origin.name}: {origin.target}]" if origin \
            else ""
        if reason is not None:
            print(f"  {name}: unavailable — {reason}{where}")
            continue
        print(f"  {name}: available{where}")
        try:
            count = backend.device_count()
        except plugins.PLUGIN_ERRORS as err:  # a device probe must not break the listing
            print(f"    (device_count failed: {type(err).__name__}: {err})")
            continue
        for i in range(count):
            label = name if name == "cpu" else f"{name}:{i}"
            try:
                info = backend.device_info(i)
            except plugins.PLUGIN_ERRORS as err:  # a device probe must not break the listing
                print(f"    {label}: (device_info failed: {type(err).__name__}: {err})")
                continue
            extra = []
            if info.memory_bytes:
                extra.append(f"memory {_fmt_bytes(info.memory_bytes)}")
            if info.compute_units:
                extra.append(f"{info.compute_units} compute units")
            print(f"    {label}: {info.name}" + (f" ({', '.join(extra)})" if extra else ""))
            for key, value in info.details.items():
                if key != "warning":
                    print(f"      {key}: {value}")
            if "warning" in info.details:
                print(f"      WARNING: {info.details['warning']}")
            for line in sched_cli.trait_lines(label):
                print(f"      {line}")
    for name, error in registry.errors.items():
        print(f"  {name}: BROKEN plugin — {error}")
    if args.explain:
        print(f"\n{sched_cli.auto_line()}")
    return 0


def cmd_ops(args: argparse.Namespace) -> int:
    """List every declared op (or, with --kernels, the kernels a backend implements)."""
    import ember  # noqa: F401 - declares every op
    from ember.core import plugins
    from ember.core.opdef import FUSED, OPS, Kind

    backend = None
    if args.device:
        try:
            backend = plugins.get_backend(args.device.split(":")[0])
        except RuntimeError as err:
            print(f"error: {_described(err)}", file=sys.stderr)
            return 1
    if args.kernels:
        head = ["kernel", "kind", "signature"] + (["on " + args.device] if backend else [])
        rows = [[name, "primitive", f"{name}{_plain(op.kernel_signature)}"]
                for name, op in sorted(OPS.items()) if op.kind is Kind.PRIMITIVE]
        rows += [[name, f"fused ({k.replaces})", k.signature] for name, k in sorted(FUSED.items())]
        if backend is not None:
            for row in rows:
                row.append("native" if row[0] in backend.kernels else "-")
    else:
        head = ["op", "kind", "variants", "autocast (accelerators / cpu)", "cost", "gradient",
                "fused kernels"]
        rows = []
        for name, op in sorted(OPS.items()):
            grad = "declared" if op.grad is not None else (
                "through its ops" if op.kind is Kind.COMPOSITE else "none")
            rows.append([name, op.kind.value, " ".join(sorted(op.variants)) or "internal",
                         f"{op.precision.value} / {op.cpu_precision.value}",
                         _cost_column(op), grad, " ".join(op.fused)])
    _print_table(head, rows, args.markdown)
    if not args.markdown:
        kinds = [op.kind for op in OPS.values()]
        print(f"\n{len(OPS)} ops ({kinds.count(Kind.PRIMITIVE)} primitives, "
              f"{kinds.count(Kind.COMPOSITE)} composites) and {len(FUSED)} fused kernels")
    return 0


def _cost_column(op: Any) -> str:
    """"yes": a declared cost function; "through its ops": a composite whose work is the
    declared costs of the ops it runs; "no": a composite a fused kernel may replace
    without a cost of its own."""
    if op.cost is not None:
        return "yes"
    return "no" if op.fused else "through its ops"


def _plain(sig: Any) -> str:
    """A signature without its annotations: `(input, *, dims=None, keepdim=False)`."""
    empty = sig.empty
    params = [p.replace(annotation=empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=empty))


def _print_table(head: list[str], rows: list[list[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(" --- " for _ in head) + "|")
        for row in rows:
            print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
        return
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for row in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


def cmd_tour(args: argparse.Namespace) -> int:
    """A short tour: tensors, autograd and a few steps of gradient descent."""
    import ember

    device = args.device
    print(f"ember {ember.__version__} — a short tour on device {device!r}\n")
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
    print("x =", x)
    y = (x @ x.T).relu().sum()
    y.backward()
    print("y = relu(x @ x.T).sum() =", y.item())
    print("dy/dx =", x.grad, "\n")

    ember.manual_seed(0)
    true_w = ember.tensor([[2.0], [-3.0]], device=device)
    data = ember.randn(256, 2, device=device)
    target = data @ true_w + 0.5
    w = ember.zeros(2, 1, device=device, requires_grad=True)
    b = ember.zeros(1, device=device, requires_grad=True)
    start = time.perf_counter()
    for step in range(200):
        loss = ((data @ w + b - target) ** 2).mean()
        loss.backward()
        with ember.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        w.grad = None
        b.grad = None
        if step % 50 == 0 or step == 199:
            print(f"step {step:3d}  loss {loss.item():.6f}")
    elapsed = time.perf_counter() - start
    print(f"\nlearned w = {w.detach().reshape(-1).tolist()} (true [2.0, -3.0]), "
          f"b = {b.item():.4f} (true 0.5)  in {elapsed * 1000:.0f} ms")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Train a small CNN on the digits, checkpoint it, reload it, and report."""
    from ember import demo
    from ember.core.placement import resolve

    if args.device != "auto":
        try:  # an unknown or unusable device is a usage error, not a traceback
            resolve(args.device)
        except (RuntimeError, ValueError, TypeError, AssertionError) as err:
            print(f"ember demo: error: --device {args.device}: {_described(err)}",
                  file=sys.stderr)
            return 2
    return demo.main(args)


def cmd_onnx(args: argparse.Namespace) -> int:
    """Run an ONNX model (implemented in ember.exporters.onnx_run)."""
    from ember.exporters import onnx_run

    return onnx_run.run(args)


def cmd_export(args: argparse.Namespace) -> int:
    """Export a model to ONNX (implemented in ember.exporters.cli)."""
    from ember.exporters import cli as export_cli

    return export_cli.run(args)


def cmd_run(args: argparse.Namespace) -> int:
    """Start N ranks of a script through mpiexec (implemented in ember.distributed.run)."""
    from ember.distributed import run

    return run.run_from_args(args)


def cmd_compat(args: argparse.Namespace) -> int:
    """Print ember's coverage of the installed PyTorch's public API, per namespace (or,
    with --examples, how PyTorch's docstring examples run under ember)."""
    from ember.utils import compat

    if args.examples or args.only:
        return _compat_examples(args)
    try:
        report = compat.measure()
    except ImportError:
        print("ember compat: PyTorch is not installed; it is what ember's coverage is "
              "measured against (pip install torch)", file=sys.stderr)
        return 1
    print(compat.format_report(report, show_missing=not args.summary))
    return 0


def _compat_examples(args: argparse.Namespace) -> int:
    from ember.utils import doc_examples

    try:
        import torch  # noqa: F401 - only asked whether it is there
    except ImportError:
        print("ember compat --examples: PyTorch is not installed; its docstring examples "
              "are what ember is run against (pip install torch)", file=sys.stderr)
        return 1
    names = args.only.split(",") if args.only else None
    same, differing = doc_examples.compare(names)
    print(doc_examples.format_report(same, differing, summary=args.summary))
    return 0


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type: `kind` of the text, which must be above zero (else exit 2)."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
        return value
    parse.__name__ = kind.__name__
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ember", description="ember command-line tools")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("devices", help="list backends and devices, and why any is unusable")
    p.add_argument("--explain", nargs="?", const=True, default=False, metavar="SPEC",
                   help="say what 'auto' picks; with SPEC (as `ember export`'s) and "
                   "--input-shape, print the plan for that model")
    p.add_argument("--input-shape", default=None, help="with --explain SPEC: e.g. 64,784")
    p.add_argument("--input-dtype", default="float32", help="with --explain SPEC: the "
                   "input's dtype (default float32)")
    p.add_argument("--inference", action="store_true", help="with --explain SPEC: plan a "
                   "forward pass instead of a training step")
    p.add_argument("--calibrate", action="store_true", help="measure every device's traits "
                   "again (a few seconds) and cache them")
    p.set_defaults(func=cmd_devices)
    p = sub.add_parser("ops", help="list every declared op: kind, variants, autocast class, "
                       "cost, gradient, fused kernels")
    p.add_argument("--kernels", action="store_true", help="list the kernels a backend "
                   "implements instead: every primitive's and fused kernel's signature")
    p.add_argument("--device", default=None, help="with --kernels: mark the kernels this "
                   "device's backend has natively")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.set_defaults(func=cmd_ops)
    p = sub.add_parser("demo", help="train a small CNN on handwritten digits, end to end")
    p.add_argument("--device", default="auto", help="cpu, opencl, cuda, auto (the best "
                   "available), or a plugin's device")
    p.add_argument("--epochs", type=_positive(int), default=15, help="passes over the "
                   "training set (default 15; the 97%% accuracy check needs them all)")
    p.add_argument("--batch-size", type=_positive(int), default=32, help="images per "
                   "training step (default 32)")
    p.add_argument("--lr", type=_positive(float), default=2e-3, help="Adam's learning rate "
                   "(default 0.002)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data split, the "
                   "initial weights and the shuffling (default 0)")
    p.add_argument("--checkpoint", default=None, help="where to save the trained weights")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--amp", choices=["bfloat16", "float16"], default=None,
                   help="train in mixed precision: autocast in this dtype (float16 with a "
                   "GradScaler)")
    p.add_argument("--tensorboard", metavar="DIR", default=None, help="log loss, accuracy "
                   "and learning rate to TensorBoard event files in DIR")
    p.add_argument("--profile", action="store_true", help="print the profiler's op table "
                   "of one training step instead of training")
    p.set_defaults(func=cmd_demo)
    from ember.exporters.onnx_run import add_parser as add_onnx_parser  # `ember onnx run`

    add_onnx_parser(sub)
    sub.choices["onnx"].set_defaults(func=cmd_onnx)
    p = sub.add_parser("export", help="export a model to ONNX",
                       description="Export SPEC (path/to/file.py:factory_or_class or "
                       "package.module:factory) to ONNX.")
    p.add_argument("spec", metavar="SPEC", help="path/to/file.py:name or "
                   "package.module:name (found from the current folder too): a Module class "
                   "or a function that returns the model")
    p.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    p.add_argument("--input-shape", required=True,
                   help="comma-separated input shape, e.g. 1,1,28,28")
    p.add_argument("--input-dtype", default="float32", help="the input's dtype (default "
                   "float32)")
    p.add_argument("--opset", type=int, default=None, help="ONNX opset version")
    p.add_argument("--dynamic-batch", action="store_true",
                   help="make the first dimension of inputs and outputs dynamic")
    p.add_argument("--checkpoint", default=None, help="weights to load (ember.save file)")
    p.add_argument("--check", action="store_true", help="run onnx.checker (full_check) and "
                   "compare onnxruntime's output with ember's on random inputs")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("run", help="start N ranks of a script through mpiexec, as torchrun "
                       "does (ember.distributed)",
                       description="Start N ranks of a script through the mpiexec of the "
                       "installed MPI. Every rank gets RANK, WORLD_SIZE, LOCAL_RANK and "
                       "LOCAL_WORLD_SIZE; Ctrl-C stops them all; the exit status is the "
                       "failing rank's.")
    from ember.distributed import run as dist_run  # argparse only: no MPI import

    dist_run.add_arguments(p)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("compat", help="how much of the installed PyTorch's public API ember "
                       "has, per namespace, and what it lacks")
    p.add_argument("--summary", action="store_true", help="the coverage figures only, "
                   "without the missing names")
    p.add_argument("--examples", action="store_true", help="run PyTorch's docstring "
                   "examples under PyTorch and under ember and compare their results")
    p.add_argument("--only", metavar="NAMES", help="with --examples: only these "
                   "docstrings, comma-separated qualified names (torch.add,torch.nn.Linear)")
    p.set_defaults(func=cmd_compat)
    p = sub.add_parser("tour", help="a short tour of tensors and autograd")
    p.add_argument("--device", default="cpu", help="where the tour's tensors live "
                   "(default cpu)")
    p.set_defaults(func=cmd_tour)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
