"""The op declarations (ember.core.opdef) and what is made from them: every op declared
once, its variants bound, the public namespace PyTorch's, core without import cycles,
gradients that save only what their formulas read, fused kernels run through one checked
path, backends held to their dtypes, and autocast classes that match PyTorch's."""

from __future__ import annotations

import ast
import inspect
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
from ember.core import dispatch, plugins, tracing
from ember.core.backend import REQUIRED_COMPLEX_KERNELS, REQUIRED_KERNELS
from ember.core.opdef import FUSED, OPS, Kind
from ember.core.opdef import Precision as P
from ember.core.tensor import Tensor

ROOT = pathlib.Path(ember.__file__).parent


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


# -- imports point one way ------------------------------------------------------------------


def _module_names() -> dict[str, tuple[pathlib.Path, bool]]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return mods


def _module_level_imports(name: str, path: pathlib.Path, is_pkg: bool):
    """The modules `name` imports when it is imported (not inside functions or classes,
    nor under `if TYPE_CHECKING`)."""
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    stack = list(ast.parse(path.read_text()).body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and \
                node.test.id == "TYPE_CHECKING":
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = here[: len(here) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _import_graph() -> dict[str, set[str]]:
    mods = _module_names()
    graph = {}
    for name, (path, is_pkg) in mods.items():
        edges = set()
        for target in _module_level_imports(name, path, is_pkg):
            while target and target not in mods:
                target = target.rpartition(".")[0]
            # importing one's own package runs first anyway: not an edge of a cycle
            if target and target != name and not name.startswith(target + "."):
                edges.add(target)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def test_no_module_of_ember_is_in_an_import_cycle():
    """Module-level imports point one way everywhere in ember (importing each module
    first would prove nothing: ember/__init__.py runs before it)."""
    cycles = _cycles(_import_graph())
    assert cycles == [], "modules that import each other at module level:\n" + \
        "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_every_core_module_imports_first():
    """Any module of core can be the first one imported (in a fresh interpreter), with
    only what it imports itself: `ember` is a bare package there, so that `ember/__init__`
    (which imports everything, in one fixed order, before any submodule) does not run."""
    names = sorted(n for n in _module_names() if n.startswith("ember.core."))
    script = ("import importlib, sys, types\n"
              f"for name in {names!r}:\n"
              "    for loaded in [m for m in sys.modules if m == 'ember' or "
              "m.startswith('ember.')]:\n"
              "        del sys.modules[loaded]\n"
              "    bare = types.ModuleType('ember')\n"
              f"    bare.__path__ = [{str(ROOT)!r}]\n"
              "    sys.modules['ember'] = bare\n"
              "    importlib.import_module(name)\n"
              "print('ok')\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


# -- the public namespace --------------------------------------------------------------------


def test_public_names_are_an_explicit_list_without_internals():
    assert len(ember.__all__) == len(set(ember.__all__))
    for name in ember.__all__:
        assert hasattr(ember, name), name
    for internal in ("run", "record", "bind_methods", "write_into", "host_array", "tracing",
                     "resolve", "to_dtype", "to_device", "functions", "nnops"):
        assert not hasattr(ember, internal), internal


def test_every_function_variant_is_exported_as_declared():
    for name, op in OPS.items():
        if "function" not in op.variants:
            continue
        for public in (name,) + op.aliases:
            assert _runs_op(getattr(ember, public), op.public), public
            assert public in ember.__all__, public


def test_exported_ops_are_declared():
    """Every function ember exports is a declared op's, or one of the few non-op names."""
    not_ops = {"is_tensor", "devices", "get_default_dtype", "set_default_dtype",
               "promote_types", "can_cast", "get_default_device", "set_default_device",
               "manual_seed", "initial_seed", "seed", "get_rng_state", "set_rng_state",
               "is_grad_enabled",
               "is_inference_mode_enabled", "save", "load", "get_float32_matmul_precision",
               "set_float32_matmul_precision", "broadcast_shapes",
               # global settings: anomaly mode, determinism, printing, threads
               "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
               "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
               "is_deterministic_algorithms_warn_only_enabled", "set_printoptions",
               "get_printoptions", "set_num_threads", "get_num_threads",
               "set_num_interop_threads", "get_num_interop_threads",
               "set_default_tensor_type", "set_flush_denormal", "typename", "is_storage",
               # sparse COO and compressed tensors: written with the dense ops
               # (ember.core.sparse_ops, ember.core.sparse_compressed)
               "sparse_coo_tensor", "spmm", "hspmm", "smm", "sspaddmm", "sparse_csr_tensor",
               "sparse_csc_tensor",
               "sparse_bsr_tensor", "sparse_bsc_tensor", "sparse_compressed_tensor",
               # quantized tensors: written with the dense ops on their integers
               # (ember.core.quantized)
               "quantize_per_tensor", "quantize_per_channel", "dequantize",
               "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine",
               "_make_per_tensor_quantized_tensor", "_make_per_channel_quantized_tensor",
               "quantize_per_tensor_dynamic", "quantized_batch_norm",
               # global switches and device probes (the surface brief), and the
               # top-level spellings of two Tensor methods that are not ops
               "set_anomaly_enabled", "set_warn_always", "is_warn_always_enabled",
               "set_deterministic_debug_mode", "get_deterministic_debug_mode",
               "is_vulkan_available", "get_device_module", "detach_", "resize_as_",
               # DLPack export and the symbolic-size utilities on plain numbers
               # (surface brief, round 31)
               "to_dlpack", "sym_int", "sym_float", "sym_max", "sym_min", "sym_not",
               "sym_ite", "sym_sum", "sym_sqrt", "compiled_with_cxx11_abi",
               "init_num_threads"}
    publics = [op.public for op in OPS.values()]
    publics += [op.public_inplace for op in OPS.values()]  # torch.sin_ & co
    for name in ember.__all__:
        value = getattr(ember, name)
        if callable(value) and not isinstance(value, type) and name not in not_ops:
            assert any(_runs_op(value, p) for p in publics), \
                f"ember.{name} is not a declared op's function"


def _runs_op(fn, public) -> bool:
    """`fn` is the op's public function, or an alias of it (`arcsin` for `asin`: a function
    object of its own, named as called, with the same code and closure)."""
    if fn is public:
        return True
    return public is not None and getattr(fn, "__code__", None) is public.__code__ and \
        all(a is b for a, b in zip(fn.__closure__ or (), public.__closure__ or ()))


def test_methods_in_place_variants_and_operators_are_bound():
    for name, op in OPS.items():
        names = (name,) + op.aliases
        if "method" in op.variants:
            for n in names:
                # (bound through the op-entry check: see test_op_entry_hooks)
                assert inspect.unwrap(getattr(Tensor, n)) is (op.method or op.fn), n
        if "inplace" in op.variants:
            for n in names:
                assert callable(getattr(Tensor, n + "_")), n + "_"
        for dunder in op.operators:
            assert callable(getattr(Tensor, dunder)), dunder


def test_declared_names_are_pytorchs(torch):
    """ember's functions and methods use PyTorch's names (private `_fused_*` aside)."""
    for name, op in OPS.items():
        for n in (name,) + op.aliases:
            if "function" in op.variants and not n.startswith("_fused"):
                assert hasattr(torch, n), f"torch has no function {n}"
            if "method" in op.variants or "inplace" in op.variants:
                if "method" in op.variants:
                    assert hasattr(torch.Tensor, n), f"torch.Tensor has no method {n}"
                if "inplace" in op.variants:
                    assert hasattr(torch.Tensor, n + "_"), f"torch.Tensor has no {n}_"


# -- what each declaration holds -----------------------------------------------------------


def test_every_op_is_documented_and_primitives_are_complete():
    for name, op in OPS.items():
        assert op.doc, f"{name} has no documentation"
        assert op.fn is not None and op.public is not None, name
        if op.kind is Kind.PRIMITIVE:
            assert op.rule is not None and op.cost is not None, name


def test_the_required_kernels_are_the_declared_views_and_writes():
    declared = {n for n, op in OPS.items() if op.view or op.mutates}
    assert declared == set(REQUIRED_KERNELS | REQUIRED_COMPLEX_KERNELS)


def test_fused_kernels_replace_declared_ops():
    for name, kernel in FUSED.items():
        target = kernel.replaces.removesuffix(" backward")
        assert target in OPS, f"fused kernel {name} replaces unknown {kernel.replaces!r}"
        assert name in OPS[target].fused, f"{target} does not list its fused kernel {name}"
    listed = {k for op in OPS.values() for k in op.fused}
    assert listed <= set(FUSED), listed - set(FUSED)


@pytest.mark.parametrize("backend_name", ["cpu", "countdev"])
def test_backend_kernels_are_declared(backend_name):
    """A kernel under a name no declaration knows would never run: a typo, or a stale op."""
    try:
        backend = plugins.get_backend(backend_name)
    except RuntimeError:
        pytest.skip(f"{backend_name} is not installed")
    unknown = set(backend.kernels) - set(OPS) - set(FUSED)
    assert unknown == set()


def test_opencl_kernel_table_is_declared():
    kernels = pytest.importorskip("ember.backends.opencl.kernels")
    assert set(kernels.TABLE) - set(OPS) - set(FUSED) == set()


def test_costs_count_flops_and_bytes():
    a, b = ember.ones(8, 16), ember.ones(16, 4)
    assert OPS["matmul"].cost(a, b).flops == 2 * 8 * 16 * 4
    assert OPS["add"].cost(a, 1.0).flops == 8 * 16
    assert OPS["add"].cost(a, a).bytes == 3 * 8 * 16 * 4
    assert OPS["reshape"].cost(a, shape=(128,)).bytes == 0
    conv = OPS["conv2d"].cost(ember.ones(2, 3, 8, 8), ember.ones(5, 3, 3, 3), padding=1)
    assert conv.flops == 2 * (2 * 5 * 8 * 8) * (3 * 3 * 3)


# -- gradients save what their formulas read -------------------------------------------------


def _saved(t: Tensor) -> int:
    return len(t.grad_fn._saved)


def test_a_scalar_operand_saves_no_tensor():
    y = ember.ones(3, requires_grad=True) * 1.5
    z = y * 2
    assert _saved(z) == 0
    y.add_(1)  # y is not saved by z: changing it in place leaves z's backward valid
    z.sum().backward()


def test_only_the_operands_the_needed_formulas_read_are_saved():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3)
    z = a * b  # a's gradient reads b; b needs none, so a is not saved
    assert [s.tensor for s in z.grad_fn._saved] == [b]
    both = a * ember.ones(3, requires_grad=True)
    assert _saved(both) == 2


def test_a_saved_tensor_changed_in_place_makes_backward_raise():
    x = ember.ones(3, requires_grad=True)
    y = x * 1.0
    z = y.exp()  # exp's gradient reads its result, not y
    w = y * y
    y.add_(1)
    z.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()


def test_gradients_are_reduced_to_the_operands_shape_and_dtype(torch):
    a = ember.ones(3, 1, dtype=ember.float64, requires_grad=True)
    b = ember.ones(4, dtype=ember.float32, requires_grad=True)
    (a * b).sum().backward()
    ta = torch.ones(3, 1, dtype=torch.float64, requires_grad=True)
    tb = torch.ones(4, dtype=torch.float32, requires_grad=True)
    (ta * tb).sum().backward()
    assert a.grad.dtype is ember.float64 and b.grad.dtype is ember.float32
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy())


# -- fused kernels run through one checked path ------------------------------------------------


def test_run_fused_declines_what_its_kernel_cannot_take():
    x = ember.ones(2, 3)
    w = ember.ones(4, 3)
    assert dispatch.run_fused("linear", x, w, None) is not None
    assert dispatch.run_fused("linear", x.double(), w, None) is None  # dtypes differ
    tracing.active = object()
    try:
        assert dispatch.run_fused("linear", x, w, None) is None  # a trace keeps primitives
    finally:
        tracing.active = None
    g = ember.ones(2, 4)
    with ember.enable_grad():  # a backward kernel while the backward itself is recorded
        assert dispatch.run_fused("linear_backward", x, w, g, (True, True, False)) is None
    with ember.no_grad():
        assert dispatch.run_fused("linear_backward", x, w, g, (True, True, False)) is not None


def test_a_backend_without_the_fused_kernel_runs_the_decomposition(monkeypatch, torch):
    cpu = plugins.get_backend("cpu")
    calls = []
    for name in ("linear", "linear_backward"):
        kernel = cpu.kernels[name]
        monkeypatch.setitem(cpu.kernels, name,
                            lambda *a, _k=kernel, _n=name: calls.append(_n) or _k(*a))
    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal((2, 3)), rng.standard_normal((4, 3))
    grads = []
    for fused in (True, False):
        if not fused:
            monkeypatch.delitem(cpu.kernels, "linear")
            monkeypatch.delitem(cpu.kernels, "linear_backward")
        x, w = ember.tensor(x0, requires_grad=True), ember.tensor(w0, requires_grad=True)
        y = ember.nn.functional.linear(x, w)
        (y * y).sum().backward()
        grads.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    assert calls == ["linear", "linear_backward"]  # the first pass took the fused kernels
    tx, tw = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    ty = torch.nn.functional.linear(tx, tw)
    (ty * ty).sum().backward()
    for ours in grads:
        for a, b in zip(ours, (ty.detach().numpy(), tx.grad.numpy(), tw.grad.numpy())):
            np.testing.assert_allclose(a, b, rtol=1e-12)


# -- backends hold only their dtypes ----------------------------------------------------------


def test_a_backend_is_held_to_the_dtypes_it_declares(monkeypatch):
    cpu = plugins.get_backend("cpu")
    monkeypatch.setattr(cpu, "dtypes", frozenset(d for d in cpu.dtypes
                                                 if d is not ember.float64))
    x = ember.ones(2)
    with pytest.raises(RuntimeError, match=r"full: device cpu cannot hold ember.float64 "
                                           r"tensors \(it holds bool, "):
        ember.zeros(2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="cast: device cpu cannot hold ember.float64"):
        x.double()
    assert (x + 1).dtype is ember.float32


# -- variants ---------------------------------------------------------------------------------


def test_out_writes_into_the_given_tensor(torch):
    out = ember.empty(3)
    result = ember.add(ember.ones(3), ember.tensor([1.0, 2.0, 3.0]), out=out)
    assert result is out and out.tolist() == [2.0, 3.0, 4.0]
    ints = ember.zeros(2, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the "
                                           "desired output type Long\n"):
        ember.mul(ember.ones(2), 1.5, out=ints)
    assert ints.tolist() == [0, 0]  # nothing half-written


def test_out_resizes_a_wrong_shape_with_pytorchs_warning(torch):
    out = ember.zeros(2)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        ember.matmul(ember.ones(2, 3), ember.ones(3, 4), out=out)
    assert tuple(out.shape) == (2, 4) and out.tolist() == [[3.0] * 4] * 2
    empty = ember.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out= is resized silently
        ember.sum(ember.ones(2, 2), 0, out=empty)
    assert empty.tolist() == [2.0, 2.0]


def test_out_refuses_autograd_like_pytorch(torch):
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as ours:
        ember.exp(x, out=ember.empty(2))
    with pytest.raises(RuntimeError) as theirs:
        torch.exp(torch.ones(2, requires_grad=True), out=torch.empty(2))
    assert str(ours.value) == str(theirs.value)


def test_sub_in_place_with_a_scalar(torch):
    for op in ("sub_", "add_"):
        for alpha in (1, 2, -0.5):
            y = ember.tensor([1.0, 2.0])
            ty = torch.tensor([1.0, 2.0])
            getattr(y, op)(0.25, alpha=alpha)
            getattr(ty, op)(0.25, alpha=alpha)
            assert y.tolist() == ty.tolist()
    assert ember.sub(ember.tensor([1.0]), 0.25, alpha=2).tolist() == [0.5]


def test_flip_takes_dims_by_keyword(torch):
    x = ember.arange(6).reshape(2, 3)
    tx = torch.arange(6).reshape(2, 3)
    assert ember.flip(x, dims=[1]).tolist() == torch.flip(tx, dims=[1]).tolist()
    assert x.flip(0, 1).tolist() == tx.flip(0, 1).tolist()
    assert x.flip(dims=(0,)).tolist() == tx.flip(dims=(0,)).tolist()
    assert ember.permute(x, dims=(1, 0)).tolist() == torch.permute(tx, dims=(1, 0)).tolist()
    assert ember.reshape(x, shape=(3, 2)).tolist() == torch.reshape(tx, shape=(3, 2)).tolist()
    assert ember.pow(x, exponent=2).tolist() == torch.pow(tx, exponent=2).tolist()


def test_a_third_party_primitive_is_one_declaration(monkeypatch):
    """A plugin adds an op with one declaration and a kernel; the rest follows from it."""
    from ember.core.declare import primitive
    from ember.core.opdef import Grad, OutMeta

    def rule(input):
        return OutMeta(tuple(input.shape), input.dtype, None)

    monkeypatch.setattr(plugins.get_backend("cpu"), "kernels",
                        dict(plugins.get_backend("cpu").kernels, test_cube=lambda x: x ** 3))
    try:
        @primitive(variants="method", rule=rule,
                   grad=Grad(input=lambda grad, input: grad * 3 * input * input))
        def test_cube(input):
            """Cubes each element."""
            from ember.core.apply import apply
            return apply(OPS["test_cube"], input)
        x = ember.tensor([1.0, 2.0], requires_grad=True)
        y = x.test_cube()
        y.sum().backward()
        assert y.tolist() == [1.0, 8.0] and x.grad.tolist() == [3.0, 12.0]
        assert y.grad_fn.name() == "TestCubeBackward0"
    finally:
        OPS.pop("test_cube", None)
        if hasattr(Tensor, "test_cube"):
            delattr(Tensor, "test_cube")


# -- autocast classes follow PyTorch's CPU lists ------------------------------------------------

_F32 = (3, 4)


def _autocast_cases(torch):
    """op (or "op (how it is called)") -> PyTorch's call, given the inputs' dtype."""
    F = torch.nn.functional
    r = torch.randn
    return {
        "matmul": lambda d: torch.matmul(r(3, 4, dtype=d), r(4, 5, dtype=d)),
        "mm": lambda d: torch.mm(r(3, 4, dtype=d), r(4, 5, dtype=d)),
        "bmm": lambda d: torch.bmm(r(2, 3, 4, dtype=d), r(2, 4, 5, dtype=d)),
        "mv": lambda d: torch.mv(r(3, 4, dtype=d), r(4, dtype=d)),
        "addmm": lambda d: torch.addmm(r(3, 5, dtype=d), r(3, 4, dtype=d), r(4, 5, dtype=d)),
        "einsum": lambda d: torch.einsum("ij,jk->ik", r(3, 4, dtype=d), r(4, 5, dtype=d)),
        "conv1d": lambda d: torch.conv1d(r(1, 2, 8, dtype=d), r(3, 2, 3, dtype=d)),
        "conv2d": lambda d: torch.conv2d(r(1, 2, 8, 8, dtype=d), r(3, 2, 3, 3, dtype=d)),
        "conv_transpose2d": lambda d: torch.conv_transpose2d(r(1, 2, 5, 5, dtype=d),
                                                             r(2, 3, 3, 3, dtype=d)),
        "linear": lambda d: F.linear(r(3, 4, dtype=d), r(5, 4, dtype=d)),
        "prod": lambda d: torch.prod(r(3, dtype=d)),
        "cross_entropy": lambda d: F.cross_entropy(r(3, 4, dtype=d), torch.tensor([0, 1, 2])),
        "sum": lambda d: torch.sum(r(3, dtype=d)),
        "exp": lambda d: torch.exp(r(3, dtype=d)),
        "softmax": lambda d: torch.softmax(r(3, dtype=d), 0),
        "layer_norm": lambda d: torch.layer_norm(r(3, 4, dtype=d), (4,)),
        "add": lambda d: torch.add(r(3, dtype=d), r(3, dtype=d)),
        "max_pool2d": lambda d: F.max_pool2d(r(1, 1, 4, 4, dtype=d), 2),
        **_loss_autocast_cases(torch),
    }


def _loss_autocast_cases(torch):
    """The losses (ember.core.ops.losses): two tensors of one shape, unless named."""
    F = torch.nn.functional
    r = torch.randn

    def pair(loss):
        return lambda d: loss(r(3, 4, dtype=d), r(3, 4, dtype=d))

    def probabilities(d):
        return torch.rand(3, 4, dtype=d) * 0.8 + 0.1

    labels = torch.tensor([0, 1, 3])
    return {
        "mse_loss": pair(F.mse_loss),
        "l1_loss": pair(F.l1_loss),
        "smooth_l1_loss": pair(F.smooth_l1_loss),
        "huber_loss": pair(F.huber_loss),
        "nll_loss": lambda d: F.nll_loss(r(3, 4, dtype=d), labels),
        "cross_entropy (weights, smoothing)": lambda d: F.cross_entropy(
            r(3, 4, dtype=d), labels, weight=torch.rand(4, dtype=d), label_smoothing=0.1),
        "binary_cross_entropy": lambda d: F.binary_cross_entropy(probabilities(d),
                                                                 probabilities(d)),
        "binary_cross_entropy_with_logits": lambda d: F.binary_cross_entropy_with_logits(
            r(3, 4, dtype=d), probabilities(d)),
        "kl_div": lambda d: F.kl_div(r(3, 4, dtype=d), probabilities(d),
                                     reduction="batchmean"),
        "soft_margin_loss": pair(F.soft_margin_loss),
        "multilabel_soft_margin_loss": lambda d: F.multilabel_soft_margin_loss(
            r(3, 4, dtype=d), (r(3, 4) > 0).to(d)),
        "poisson_nll_loss": lambda d: F.poisson_nll_loss(r(3, 4, dtype=d), probabilities(d)),
        "gaussian_nll_loss": lambda d: F.gaussian_nll_loss(r(3, 4, dtype=d), r(3, 4, dtype=d),
                                                           probabilities(d)),
        "margin_ranking_loss": lambda d: F.margin_ranking_loss(r(3, dtype=d), r(3, dtype=d),
                                                               r(3, dtype=d).sign()),
        "hinge_embedding_loss": lambda d: F.hinge_embedding_loss(r(3, 4, dtype=d),
                                                                 r(3, 4, dtype=d).sign()),
        "cosine_embedding_loss": lambda d: F.cosine_embedding_loss(
            r(3, 4, dtype=d), r(3, 4, dtype=d), r(3, dtype=d).sign()),
        "triplet_margin_loss": lambda d: F.triplet_margin_loss(
            r(3, 4, dtype=d), r(3, 4, dtype=d), r(3, 4, dtype=d)),
    }


def test_cpu_autocast_classes_match_pytorchs(torch):
    """What PyTorch's CPU autocast does to each op is the op's declared `cpu_precision`:
    float32 inputs come out bfloat16 for LOWER ops, bfloat16 inputs float32 for FLOAT32
    ops, and other ops keep their input's dtype."""
    for name, call in _autocast_cases(torch).items():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            from_f32, from_bf16 = call(torch.float32).dtype, call(torch.bfloat16).dtype
        seen = P.LOWER if from_f32 == torch.bfloat16 else \
            P.FLOAT32 if from_bf16 == torch.float32 else P.KEEP
        assert OPS[name.split(" ")[0]].cpu_precision is seen, name  # (op, or "op (how)")


def test_promoting_ops_are_declared(torch):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cat = torch.cat([torch.ones(2, dtype=torch.bfloat16), torch.ones(2)])
    assert cat.dtype == torch.float32 and OPS["cat"].cpu_precision is P.PROMOTE
    assert OPS["stack"].cpu_precision is P.PROMOTE
    for name in ("addcmul", "addcdiv", "atan2", "dot", "scatter_add"):  # PyTorch's CUDA list
        assert OPS[name].precision is P.PROMOTE, name


def test_op_entry_hooks():
    """Every way of calling a declared op passes its entry hooks (ember.core.interpose),
    outermost first by order; a hook may change the arguments; with none installed,
    `active` is None."""
    from ember.core import interpose
    seen = []

    def outer(op, name, call, args, kwargs):
        seen.append(("outer", op.name, name))
        return call(args, kwargs)

    def doubling(op, name, call, args, kwargs):
        seen.append(("inner", op.name, name))
        if name == "exp":
            args = (args[0] * 2,)  # nested: `*` passes the hooks too
        return call(args, kwargs)

    x = ember.tensor([0.0, 1.0])
    interpose.install(doubling, 10)
    interpose.install(outer, 0)
    try:
        assert ember.exp(x).tolist() == pytest.approx([1.0, np.exp(2.0)])
        x.exp()
        _ = x + 1
        _ = 1 - x
        _ = -x
        x.clone().add_(1)
        _ = x[0]
        ember.add(x, x, out=ember.empty(2))
    finally:
        interpose.remove(outer)
        interpose.remove(doubling)
    assert interpose.active is None
    names = [s[1:] for s in seen if s[0] == "outer"]
    assert names == [("exp", "exp"), ("mul", "__mul__"), ("exp", "exp"), ("mul", "__mul__"),
                     ("add", "__add__"), ("sub", "__rsub__"), ("neg", "__neg__"),
                     ("clone", "clone"), ("add", "add_"), ("getitem", "__getitem__"),
                     ("empty", "empty"), ("add", "add")]
    assert seen[0] == ("outer", "exp", "exp") and seen[1] == ("inner", "exp", "exp")


def test_top_level_in_place_functions_are_torchs():
    # "The Fundamentals of Autograd" calls torch.sin_(a) on a leaf that requires grad
    torch = pytest.importorskip("torch")
    torch_names = {n for n in dir(torch) if n.endswith("_") and callable(getattr(torch, n))}
    ours = {n for n in ember.__all__ if n.endswith("_")}
    assert ours <= torch_names, ours - torch_names
    for lib in (torch, ember):
        x = lib.tensor([-1.0, 0.25, 2.0])
        assert lib.relu_(x) is x and x.tolist() == [0.0, 0.25, 2.0]
        assert lib.clamp_(x, 0.5, 1.0) is x and x.tolist() == [0.5, 0.5, 1.0]
        leaf = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                               "used in an in-place operation."):
            lib.sin_(leaf)
    assert ember.sin_ is ember.Tensor.sin_ and ember.sin_.__doc__


def test_numpy_keyword_names_are_accepted_as_torchs_parser_does(torch):
    """PyTorch's argument parser takes NumPy's names for its own (`axis` for `dim`,
    `keepdims` for `keepdim`, `x`/`a` for `input`): makemore's `P.sum(1, keepdims=True)`.
    Naming both, or an unknown keyword, is still the TypeError it was."""
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    e, t = ember.tensor(a), torch.tensor(a)
    for call in (lambda m, x: x.sum(1, keepdims=True),
                 lambda m, x: m.sum(x, axis=0),
                 lambda m, x: x.mean(axis=1, keepdims=True),
                 lambda m, x: x.std(axis=0, keepdims=True),
                 lambda m, x: x.max(axis=1).values,
                 lambda m, x: m.cat([x, x], axis=0),
                 lambda m, x: m.exp(x=x)):
        got, want = call(ember, e), call(torch, t)
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    x = ember.tensor(a, requires_grad=True)
    x.sum(axis=1, keepdims=True).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 4), np.float32))
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
        e.sum(dim=1, axis=0)
    with pytest.raises(TypeError, match="keepdimz"):
        e.sum(1, keepdimz=True)


@pytest.mark.parametrize("call", [
    "x.argmax(axis=1)", "lib.argmax(x, axis=1)", "x.sum(axis=0, keepdims=True)",
    "lib.mean(a=x, dim=0)", "lib.cat([x, x], axis=0)", "x.softmax(axis=1)",
    "lib.add(x, x2=x)", "x.max(axis=1).indices", "x.clone().unsqueeze_(axis=0)",
])
def test_numpy_keyword_names_are_torchs(torch, call):
    """PyTorch's argument parser takes NumPy's names for dim, keepdim, input and other on
    every op (d2l's `y_hat.argmax(axis=1)`); naming a parameter twice is its TypeError."""
    values = np.arange(6.0).reshape(2, 3)
    e = eval(call, {"lib": ember, "x": ember.tensor(values)})
    t = eval(call, {"lib": torch, "x": torch.tensor(values)})
    assert e.dtype == getattr(ember, str(t.dtype).split(".")[1])
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
    for lib in (torch, ember):
        with pytest.raises(TypeError, match=r"^sum\(\) got an unexpected keyword argument 'axis'$"):
            lib.ones(2).sum(dim=0, axis=0)


@pytest.mark.parametrize("call", [
    "lib.sqrt(2 * math.pi)", "lib.exp(2.0)", "lib.sum(3)", "lib.mean(a=2.0)",
    "lib.matmul([1.0], [2.0])", "lib.relu(None)", "lib.argmax(2.0)", "lib.sqrt(input=4)",
    "lib.nn.functional.linear(2.0, lib.ones(1, 1))",
])
def test_an_input_that_is_not_a_tensor_is_torchs_type_error(torch, call):
    """d2l's `torch.sqrt(2 * torch.pi * sigma**2)` with a float: PyTorch's TypeError naming
    the op, the argument and the type, not an AttributeError from inside the op."""
    import math

    messages = []
    for lib in (torch, ember):
        with pytest.raises(TypeError) as err:
            eval(call, {"lib": lib, "math": math})
        messages.append(str(err.value))
    assert messages[1] == messages[0]
    assert "must be Tensor, not" in messages[1]
