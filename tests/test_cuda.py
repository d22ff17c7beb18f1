"""CUDA: `ember.cuda` as torch.cuda, `ember.accelerator`, torch.backends' flags, DLPack,
pinned memory, and the CuPy backend.

Two parts:
- what works on every machine, checked against PyTorch (its CPU build, the oracle here):
  ember.cuda's answers and errors without a GPU, the accelerator query, the flags, DLPack
  on host memory, pin_memory; and with CuPy installed but no GPU (as in CI), that the
  backend's kernel table builds and every CUDA path says why CUDA is unavailable (with
  CuPy hidden, in a subprocess: that CuPy is missing);
- the GPU tests (`gpu` mark): streams and events, memory statistics, out of memory,
  DLPack with CuPy and torch.cuda, mixed devices, moves between cpu/cuda/opencl, values
  against the CPU, the conformance suite under EMBER_STRICT=1 and the demo. They skip
  cleanly without a usable CUDA device.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.core import plugins

ROOT = Path(__file__).resolve().parents[1]
HAVE_CUPY = importlib.util.find_spec("cupy") is not None
GPU = ember.cuda.is_available()
REASON = plugins.safe_unavailable_reason(plugins.get_backend("cuda"))

gpu = pytest.mark.skipif(not GPU, reason=f"CUDA is unavailable: {REASON}")
no_gpu = pytest.mark.skipif(GPU, reason="a CUDA device is available here")
needs_cupy = pytest.mark.skipif(not HAVE_CUPY, reason="CuPy is not installed "
                                "(pip install 'ember[cuda13]'; `make test` does)")


def _outcome(fn, *args):
    """(result, None) or (None, (error type, message)) of `fn(*args)`."""
    try:
        return fn(*args), None
    except Exception as err:  # noqa: BLE001 - the error is what is compared
        return None, (type(err), str(err))


def on(module, call: str):
    """Evaluate `call` (e.g. "set_device(0)") on `module`."""
    return eval(f"m.{call}", {"m": module})


def run_python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("EMBER_STRICT", "EMBER_BACKENDS", "EMBER_PLUGIN_AUTOLOAD")}
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [
        environ.get("PYTHONPATH")] if p])
    environ.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environ, cwd=ROOT, timeout=180)


HIDE_CUPY = "import sys; sys.modules['cupy'] = None  # CuPy absent\n"


# == ember.cuda without a GPU, against torch.cuda ========================================

NO_GPU_CALLS = [  # answered without a GPU, identically by torch.cuda
    "is_available()", "device_count()", "is_initialized()", "manual_seed(3)",
    "manual_seed_all(3)", "seed()", "seed_all()", "memory_allocated()",
    "max_memory_allocated()", "memory_reserved()", "max_memory_reserved()",
    "memory_allocated('cuda:0')", "memory_stats()", "empty_cache()", "set_device(-1)",
    "device(-1).__enter__()", "stream(None).__enter__()", "is_bf16_supported()",
    "get_arch_list()", "set_device('cpu')", "device('cpu')",
]


@no_gpu
@pytest.mark.parametrize("call", NO_GPU_CALLS)
def test_cuda_calls_without_gpu_match_torch(call):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("PyTorch sees a GPU here")
    mine = _outcome(lambda: on(ember.cuda, call))
    theirs = _outcome(lambda: on(torch.cuda, call))
    assert mine == theirs


NEEDS_GPU_CALLS = [  # each initializes CUDA first
    "current_device()", "set_device(0)", "get_device_name()", "get_device_name(0)",
    "get_device_properties(0)", "get_device_capability()", "initial_seed()",
    "synchronize()", "init()", "device(0).__enter__()", "current_stream()",
    "default_stream()", "mem_get_info()", "reset_peak_memory_stats()",
]


@no_gpu
@needs_cupy
@pytest.mark.parametrize("call", NEEDS_GPU_CALLS)
def test_cuda_calls_that_need_a_gpu_raise_the_backends_reason(call):
    # as PyTorch's CPU build (the oracle), with the backend's reason in a note; the
    # device context raises its RuntimeError
    kind = RuntimeError if call.startswith("device(") else AssertionError
    with pytest.raises(kind) as info:
        on(ember.cuda, call)
    assert info.value.__notes__ == [REASON] and "CUDA" in REASON


@no_gpu
@pytest.mark.parametrize("cls", ["Stream()", "Event()", "Event(enable_timing=True)"])
def test_streams_and_events_need_cuda(cls):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as info:
        on(ember.cuda, cls)
    assert str(info.value) == f"ember.cuda.{cls[:cls.index('(')]} requires CUDA support"
    assert info.value.__notes__ == [REASON]
    with pytest.raises(RuntimeError):  # the same type as torch.cuda's
        on(torch.cuda, cls)


def test_cuda_device_argument_errors_match_torch():
    torch = pytest.importorskip("torch")
    for call in ("set_device('cpu')", "device('opencl:0')"):
        mine = _outcome(on, ember.cuda, call)
        theirs = _outcome(on, torch.cuda, call.replace("opencl", "cpu"))
        assert mine[1] is not None and mine[1][0] is theirs[1][0] is ValueError
        assert mine[1][1].startswith("Expected a cuda device, but got: ")


def test_cuda_amp_is_kept():
    assert ember.cuda.amp.GradScaler is not None and ember.cuda.amp.autocast is not None


@no_gpu
def test_without_cupy_cuda_raises_torchs_not_compiled_error():
    torch = pytest.importorskip("torch")
    code = HIDE_CUPY + """
import json, ember
out = {}
for call in ("current_device()", "synchronize()", "get_device_name()", "init()",
             "Stream()", "Event()"):
    try:
        eval("ember.cuda." + call)
        out[call] = None
    except Exception as err:
        out[call] = [type(err).__name__, str(err), getattr(err, "__notes__", [""])[0]]
out["available"] = [ember.cuda.is_available(), ember.cuda.device_count(),
                    ember.cuda.memory_allocated(), ember.backends.cuda.is_built()]
try:
    ember.zeros(2, device="cuda")
except AssertionError as err:
    out["zeros"] = [str(err), err.__notes__[0]]
print(json.dumps(out))
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out.pop("available") == [False, 0, 0, False]
    message, note = out.pop("zeros")
    assert message == "Torch not compiled with CUDA enabled"
    assert "CuPy is not installed" in note and "ember[cuda12]" in note
    for call, got in out.items():
        theirs = _outcome(lambda c=call: on(torch.cuda, c))
        assert got[0] == theirs[1][0].__name__, (call, got, theirs)
        assert got[2].startswith("CuPy is not installed")
        if got[0] == "AssertionError":
            assert got[1] == theirs[1][1] == "Torch not compiled with CUDA enabled"


@no_gpu
@needs_cupy
def test_cuda_device_raises_the_reason_and_ember_devices_shows_it():
    with pytest.raises(AssertionError) as info:
        ember.zeros(2, device="cuda")
    assert str(info.value) == "Torch not compiled with CUDA enabled"
    assert f"device 'cuda' is not available: {REASON}" in info.value.__notes__[0]
    with pytest.raises(AssertionError, match="is not available"):
        ember.ones(2).cuda(non_blocking=True)
    proc = run_python("import sys; from ember.cli import main; sys.exit(main(['devices']))")
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("cuda")]
    assert line and "unavailable" in line[0] and "CUDARuntimeError" in proc.stdout


@no_gpu
def test_ember_devices_without_cupy_says_to_install_it():
    proc = run_python(HIDE_CUPY + "from ember.cli import main; sys.exit(main(['devices']))")
    assert proc.returncode == 0, proc.stderr
    assert "CuPy is not installed" in proc.stdout and "ember[cuda13]" in proc.stdout


def test_import_ember_and_the_flags_never_import_cupy():
    proc = run_python("""
import sys, ember
ember.backends.cudnn.benchmark = True
ember.backends.cuda.matmul.allow_tf32 = True
ember.manual_seed(0); ember.cuda.manual_seed_all(0)
ember.cuda.memory_allocated(); ember.backends.cuda.is_built()
print(sorted(m for m in ("cupy", "pyopencl", "torch") if m in sys.modules))
""", env={"EMBER_BACKENDS": "cpu,cuda"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-1] == "[]"


# == the CUDA backend's code, with CuPy installed and no GPU =============================


@needs_cupy
def test_cuda_kernel_table_builds_on_cupy_and_covers_the_cpus():
    from ember.backends.cuda import kernels

    cpu = set(plugins.get_backend("cpu").kernels)
    # the CPU's whole-layer LSTM and GRU; its host-side search, mode, counting, unique,
    # nll_loss and random transforms
    cpu_only = {"lstm_layer", "lstm_layer_backward", "gru_layer", "gru_layer_backward",
                "searchsorted", "mode_index", "pytorch_normal_fill16",
                "pytorch_randperm_shuffle", "bincount", "bincount_weighted", "nll_loss",
                "unique"}
    assert cpu - cpu_only <= set(kernels.KERNELS), sorted(cpu - cpu_only - set(kernels.KERNELS))
    for name in ("rand", "randn", "randint", "randperm", "relu_backward", "matmul"):
        assert callable(kernels.KERNELS[name])
    backend = plugins.get_backend("cuda")
    assert ember.bfloat16 in backend.dtypes and ember.float16 in backend.dtypes  # CuPy 14's


@needs_cupy
def test_every_array_function_the_shared_kernels_use_exists_in_cupy():
    """The shared kernels (ember/backends/xp) are written against `xp`: each `xp.<name>`
    they call must exist in CuPy (NumPy's `errstate`, which CuPy lacks, is derived in
    lib.py), as must the ufunc methods and stride tricks they use."""
    import ast

    import cupy

    used = set()
    for path in (ROOT / "ember" / "backends" / "xp").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            chain, n = [], node
            while isinstance(n, ast.Attribute):
                chain.insert(0, n.attr)
                n = n.value
            if chain and isinstance(n, ast.Name) and n.id == "xp":
                used.add(".".join(chain))
    assert len(used) > 40 and "matmul" in used and "add.at" in used

    def missing(name):
        obj = cupy
        for part in name.split("."):
            if not hasattr(obj, part):
                return True
            obj = getattr(obj, part)
        return False
    assert sorted(n for n in used if missing(n)) == ["errstate"]


def test_a_backend_without_bfloat16_refuses_it_everywhere(monkeypatch):
    """A backend that does not declare a dtype (bfloat16, say)
    gets no tensor of it, by any road (a real backend object on private NumPy memory, the
    test plugins' own, registered beside the built-ins)."""
    sys.path.insert(0, str(Path(__file__).parent / "plugin_fixtures"))
    try:
        from emb_common import NumpyBackend, borrow_cpu_kernels
    finally:
        sys.path.pop(0)

    class NoBFloat16(NumpyBackend):
        name = "nobf16"

    backend = NoBFloat16()
    backend.dtypes = frozenset(d for d in backend.dtypes if d is not ember.bfloat16)
    borrow_cpu_kernels(backend, plugins.get_backend("cpu"))
    monkeypatch.setitem(plugins.registry.backends, "nobf16", backend)
    bf16 = ember.bfloat16
    for make in (lambda: ember.zeros(2, dtype=bf16).to("nobf16"),
                 lambda: ember.tensor([1.0], dtype=bf16, device="nobf16"),
                 lambda: ember.empty(2, dtype=bf16, device="nobf16"),
                 lambda: ember.zeros(2, dtype=bf16, device="nobf16"),
                 lambda: ember.ones(2, device="nobf16").to(bf16)):
        with pytest.raises(RuntimeError, match=r"device nobf16:0 cannot hold "
                           r"ember.bfloat16 tensors \(it holds bool, "):
            make()
    assert ember.ones(2, device="nobf16").half().dtype == ember.float16


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignored", [0, 3, 16], ids=["all-valid", "some-ignored",
                                                    "all-ignored"])
def test_cuda_cross_entropy_code_matches_the_shared_kernels(reduction, ignored):
    """The CUDA table's sync-free cross_entropy (ember/backends/cuda/losses.py) is written
    against `xp`: run here on NumPy, it gives what the shared kernels give."""
    from ember.backends.cuda import losses

    mine = losses.kernels(np)
    shared = plugins.get_backend("cpu").kernels
    rng = np.random.default_rng(ignored)
    logits = rng.standard_normal((16, 7)).astype(np.float32) * 3
    target = rng.integers(0, 7, 16)
    target[rng.permutation(16)[:ignored]] = -100
    g = rng.standard_normal(16).astype(np.float32) if reduction == "none" else \
        np.asarray(1.7, np.float32)
    loss, probs = mine["cross_entropy"](logits, target, reduction=reduction)
    ref_loss, ref_probs = shared["cross_entropy"](logits, target, reduction=reduction)
    assert loss.dtype == ref_loss.dtype and loss.shape == ref_loss.shape
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(probs, ref_probs, rtol=1e-6)
    grad = mine["cross_entropy_backward"](probs, target, g, reduction=reduction)
    ref = shared["cross_entropy_backward"](ref_probs, target, g, reduction=reduction)
    assert grad.dtype == ref.dtype
    np.testing.assert_allclose(grad, ref, rtol=1e-6, atol=1e-7)


# == ember.accelerator ==================================================================


def _any_accelerator() -> bool:
    return any(b.name != "cpu" and b.is_accelerator for b in
               __import__("ember.core.scheduler").core.scheduler.available_backends())


def test_accelerator_is_none_here_as_torchs():
    torch = pytest.importorskip("torch")
    if _any_accelerator():
        pytest.skip("an accelerator is present here")
    acc = ember.accelerator
    assert acc.current_accelerator() is None and torch.accelerator.current_accelerator() is None
    assert acc.is_available() is torch.accelerator.is_available() is False
    assert acc.device_count() == torch.accelerator.device_count() == 0
    for call in ("current_device_index()", "set_device_index(0)", "synchronize()",
                 "memory_allocated()", "device_index(0).__enter__()", "empty_cache()"):
        mine = _outcome(on, ember.accelerator, call)
        theirs = _outcome(on, torch.accelerator, call)
        assert mine == theirs, call
    assert _outcome(lambda: ember.zeros(2).pin_memory()) == \
        _outcome(lambda: torch.zeros(2).pin_memory())


def test_cpu_event_as_torchs():
    """torch.Event on the CPU: recording (and timing) raise, query/synchronize/wait
    return at once; its printed form."""
    torch = pytest.importorskip("torch")
    if _any_accelerator():
        pytest.skip("an accelerator is present here: the default event is its")

    def story(L):
        e, t1, t2 = L.Event(), L.Event(enable_timing=True), L.Event("cpu", enable_timing=True)
        steps = [repr(e).split(".", 1)[1], repr(t1).split(".", 1)[1], str(e.device)]
        for call in (e.query, e.record, e.synchronize, e.wait, e.ipc_handle,
                     lambda: t1.elapsed_time(t2), lambda: e.elapsed_time(t1)):
            result, error = _outcome(call)
            steps.append((result, error and (error[0].__name__, error[1])))
        return steps

    assert story(ember) == story(torch)
    assert type(ember.Event()).__name__ == "Event"


def test_pocl_is_not_an_accelerator():
    backend = plugins.get_backend("opencl")
    if plugins.safe_unavailable_reason(backend) is not None:
        pytest.skip("OpenCL is not available here")
    from ember.backends.opencl import runtime

    if not all(d.is_cpu for d in runtime.devices()):
        pytest.skip("an OpenCL GPU is present")
    assert backend.is_accelerator is False
    assert ember.accelerator.current_accelerator() != ember.device("opencl")


def test_accelerator_from_a_plugin(tmp_path):
    """A third-party backend that declares `is_accelerator` is the accelerator where there
    is no CUDA (the fake distribution of test_plugins, in a subprocess)."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from test_plugins import Fake, install, probe
    finally:
        sys.path.remove(str(Path(__file__).parent))
    root = install(tmp_path / "site", Fake("gooda", "emb_gooda"))
    out = probe("""
import ember
acc = ember.accelerator
out["current"] = str(acc.current_accelerator())
out["available"], out["count"] = acc.is_available(), acc.device_count()
out["index"] = acc.current_device_index()
acc.set_device_index(0); acc.set_device_index("gooda:0"); acc.synchronize()
with acc.device_index(0):
    out["inside"] = acc.current_device_index()
out["bad"] = attempt(lambda: acc.set_device_index(3))
out["wrong"] = attempt(lambda: acc.set_device_index("cpu"))
out["stats"] = dict(acc.memory_stats())
out["tensor"] = str(ember.ones(2, device=acc.current_accelerator()).device)
""", path=[root], env={"EMBER_BACKENDS": "cpu,gooda"})
    assert out["current"] == "gooda" and out["available"] is True and out["count"] == 1
    assert out["index"] == out["inside"] == 0 and out["stats"] == {}
    assert out["bad"].startswith("RuntimeError: device index 3 is out of range")
    assert out["wrong"] == "ValueError: cpu doesn't match the current accelerator gooda."
    assert out["tensor"] == "gooda:0"


# == torch.backends' flags ==============================================================


def test_backend_flags_defaults_and_checks_match_torch():
    torch = pytest.importorskip("torch")
    for name in ("benchmark", "deterministic", "enabled", "allow_tf32"):
        assert getattr(ember.backends.cudnn, name) == getattr(torch.backends.cudnn, name)
    # ember does not use cuDNN (CuPy 14 dropped it): False, as torch's CPU build says
    assert ember.backends.cudnn.is_available() is False
    if not torch.cuda.is_available():
        assert torch.backends.cudnn.is_available() is False
    assert ember.backends.cudnn.version() is None
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        assert getattr(ember.backends.cuda.matmul, name) == \
            getattr(torch.backends.cuda.matmul, name)
    assert ember.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert ember.backends.mps.is_built() is False
    assert ember.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
    assert ember.backends.cuda.is_built() is HAVE_CUPY
    for obj, name, value in ((ember.backends.cudnn, "benchmark", "yes"),
                             (ember.backends.cudnn, "deterministic", 1),
                             (ember.backends.cuda.matmul, "allow_tf32", None),
                             (ember.backends.cuda.matmul, "no_such_flag", True)):
        theirs = torch.backends.cudnn if obj is ember.backends.cudnn else \
            torch.backends.cuda.matmul
        assert _outcome(setattr, obj, name, value) == _outcome(setattr, theirs, name, value)
    assert _outcome(lambda: ember.backends.cuda.matmul.no_such_flag) == \
        _outcome(lambda: torch.backends.cuda.matmul.no_such_flag)


def test_backend_flags_are_set_and_restored():
    cudnn = ember.backends.cudnn
    cudnn.benchmark = True
    cudnn.deterministic = True
    try:
        assert cudnn.benchmark is True and cudnn.deterministic is True
        with cudnn.flags(enabled=False, benchmark=False):
            assert cudnn.enabled is False and cudnn.benchmark is False
        assert cudnn.enabled is True and cudnn.benchmark is True
        ember.backends.cuda.matmul.allow_tf32 = True
        assert ember.backends.cuda.matmul.allow_tf32 is True
    finally:
        cudnn.benchmark = cudnn.deterministic = False
        ember.backends.cuda.matmul.allow_tf32 = False


def test_float32_matmul_precision_is_the_tf32_switch():
    torch = pytest.importorskip("torch")
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision() \
        == "highest"
    try:
        ember.set_float32_matmul_precision("medium")
        assert ember.backends.cuda.matmul.allow_tf32 is True
        ember.backends.cuda.matmul.allow_tf32 = False
        assert ember.get_float32_matmul_precision() == "highest"
        ember.backends.cuda.matmul.allow_tf32 = True
        assert ember.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="x is not one of 'highest', 'high', or 'medium'"):
            ember.set_float32_matmul_precision("x")
        assert ember.get_float32_matmul_precision() == "high"
        assert _outcome(ember.set_float32_matmul_precision, 1) == \
            _outcome(torch.set_float32_matmul_precision, 1)
    finally:
        ember.set_float32_matmul_precision("highest")


# == DLPack =============================================================================

DLPACK_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                 "float64"]


@pytest.mark.parametrize("name", DLPACK_DTYPES)
def test_dlpack_with_torch_shares_memory_both_ways(name):
    torch = pytest.importorskip("torch")
    t = torch.zeros(2, 3, dtype=getattr(torch, name))
    e = ember.from_dlpack(t)
    assert e.dtype == getattr(ember, name) and tuple(e.shape) == (2, 3)
    one = True if name == "bool" else 1
    e[0, 1] = one  # written through ember: seen by torch
    assert t[0, 1].item() == one
    t[1, 2] = one  # written through torch: seen by ember
    assert e[1, 2].item() == one
    back = torch.from_dlpack(e)
    back[1, 0] = one
    assert e[1, 0].item() == one and back.dtype == t.dtype


def test_dlpack_with_numpy_views_and_capsules():
    torch = pytest.importorskip("torch")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    e = ember.from_dlpack(a)
    a[0, 0] = 42
    assert e[0, 0].item() == 42
    tr = e.t()  # a strided view exports as one
    n = np.from_dlpack(tr)
    assert n.shape == (4, 3) and n[1, 0] == a[0, 1]
    n[2, 1] = -1
    assert a[1, 2] == -1
    assert e.__dlpack_device__() == torch.zeros(1).__dlpack_device__() == (1, 0)
    # legacy capsules, both ways
    cap = ember.utils.dlpack.to_dlpack(e)
    t = torch.utils.dlpack.from_dlpack(cap)
    t[2, 3] = 7
    assert e[2, 3].item() == 7
    e2 = ember.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    e2[2, 2] = 5
    assert t[2, 2].item() == 5
    used = ember.utils.dlpack.to_dlpack(e)
    torch.utils.dlpack.from_dlpack(used)
    with pytest.raises(RuntimeError, match="can be consumed only once"):
        ember.utils.dlpack.from_dlpack(used)
    assert ember.from_dlpack(e) is e


def test_dlpack_negative_strides_and_lifetime():
    import gc
    import weakref

    a = np.arange(6.0).reshape(2, 3)
    view = a[::-1, ::2]
    e = ember.from_dlpack(view)
    assert e.tolist() == view.tolist() == [[3.0, 5.0], [0.0, 2.0]]
    a[1, 0] = 99  # written through NumPy, seen by ember's reversed view
    assert e[0, 0].item() == 99
    b = np.arange(1000.0)
    alive = weakref.ref(b)
    e = ember.from_dlpack(b)
    del b
    gc.collect()
    assert alive() is not None and e[-1].item() == 999  # ember keeps the producer alive
    del e
    gc.collect()
    assert alive() is None  # the producer's deleter ran when ember's tensor went


def test_dlpack_bfloat16_both_ways():
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.5, -2.0, 3.25], dtype=torch.bfloat16)
    e = ember.from_dlpack(t)
    assert e.dtype == ember.bfloat16 and e.tolist() == [1.5, -2.0, 3.25]
    e[0] = 7
    assert t[0].item() == 7
    back = torch.from_dlpack(e)
    assert back.dtype == torch.bfloat16 and back.tolist() == [7.0, -2.0, 3.25]
    back[2] = 0.5
    assert e[2].item() == 0.5
    empty = ember.from_dlpack(torch.zeros(0, 3))
    assert tuple(empty.shape) == (0, 3)


def test_dlpack_errors():
    torch = pytest.importorskip("torch")
    x = ember.ones(2, requires_grad=True)
    mine, theirs = _outcome(lambda: x.__dlpack__()), \
        _outcome(lambda: torch.ones(2, requires_grad=True).__dlpack__())
    assert mine == theirs
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        ember.from_dlpack([1, 2])


# == pinned memory and non_blocking ======================================================


def test_pin_memory_and_non_blocking_match_torch_without_accelerator():
    torch = pytest.importorskip("torch")
    if _any_accelerator():
        pytest.skip("an accelerator is present here")
    assert ember.zeros(2).is_pinned() is torch.zeros(2).is_pinned() is False
    assert _outcome(lambda: ember.zeros(2).pin_memory()) == \
        _outcome(lambda: torch.zeros(2).pin_memory())
    assert _outcome(lambda: ember.tensor([1.0], pin_memory=True)) == \
        _outcome(lambda: torch.tensor([1.0], pin_memory=True))
    x = ember.arange(3.0)
    assert x.get_device() == torch.arange(3.0).get_device() == -1
    assert x.to("cpu", non_blocking=True) is x
    y = x.to("cpu", ember.float64, True)  # (device, dtype, non_blocking) positionally
    assert y.dtype == ember.float64 and y.tolist() == [0.0, 1.0, 2.0]
    z = ember.zeros(3)
    z.copy_(x, non_blocking=True)
    assert z.tolist() == [0.0, 1.0, 2.0]


# == on a GPU ===========================================================================


@gpu
def test_gpu_devices_and_properties():
    import cupy

    assert ember.cuda.device_count() == cupy.cuda.runtime.getDeviceCount() >= 1
    assert ember.cuda.current_device() == 0 and ember.cuda.is_initialized()
    props = ember.cuda.get_device_properties(0)
    assert props.total_memory > 2**30 and props.major >= 7
    assert ember.cuda.get_device_name() == props.name
    assert ember.accelerator.current_accelerator() == ember.device("cuda")
    assert ember.accelerator.device_count() == ember.cuda.device_count()
    x = ember.ones(2, device="cuda")
    assert x.device == ember.device("cuda:0") and x.is_cuda and x.get_device() == 0
    with ember.cuda.device(0):
        assert ember.cuda.current_device() == 0
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.cuda.set_device(ember.cuda.device_count())


@gpu
def test_gpu_streams_and_events():
    a = ember.randn(2048, 2048, device="cuda")
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        start.record()
        b = a @ a
        end.record()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    end.synchronize()
    assert end.query() and s.query()
    assert start.elapsed_time(end) > 0
    ember.cuda.current_stream().wait_stream(s)
    expected = a.cpu().numpy().astype(np.float64) @ a.cpu().numpy().astype(np.float64)
    np.testing.assert_allclose(b.cpu().numpy(), expected, rtol=1e-3, atol=1e-2)
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        ember.cuda.Event().elapsed_time(end)
    ember.cuda.synchronize()


@gpu
def test_gpu_memory_statistics():
    ember.cuda.empty_cache()
    ember.cuda.reset_peak_memory_stats()
    before = ember.cuda.memory_allocated()
    x = ember.empty(1024, 1024, device="cuda")  # 4 MiB
    assert ember.cuda.memory_allocated() - before >= 4 * 2**20
    assert ember.cuda.max_memory_allocated() >= ember.cuda.memory_allocated()
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
    del x
    assert ember.cuda.memory_allocated() == before
    assert ember.cuda.max_memory_allocated() >= before + 4 * 2**20
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == before
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() <= before + 2**20
    free, total = ember.cuda.mem_get_info()
    assert 0 < free <= total


@gpu
def test_gpu_out_of_memory_names_device_and_bytes_and_pool_keeps_working():
    _, total = ember.cuda.mem_get_info()
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.empty(2 * total // 4, device="cuda")  # float32: twice the device's memory
    msg = str(info.value)
    assert "cuda:0" in msg and f"({2 * total // 4 * 4} bytes)" in msg and "is free" in msg
    assert isinstance(info.value, RuntimeError) and ember.cuda.OutOfMemoryError is \
        ember.OutOfMemoryError
    assert ember.cuda.memory_stats()["num_ooms"] >= 1
    y = ember.ones(1000, device="cuda")
    assert y.sum().item() == 1000


@gpu
def test_gpu_dlpack_with_cupy_and_torch_cuda():
    import cupy

    c = cupy.arange(6, dtype=cupy.float32)
    e = ember.from_dlpack(c)
    assert e.device == ember.device("cuda:0")
    c[0] = 9
    assert e[0].item() == 9
    back = cupy.from_dlpack(e)
    back[1] = 8
    assert e[1].item() == 8
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    t = torch.zeros(4, device="cuda")
    e = ember.from_dlpack(t)
    e[2] = 3
    torch.cuda.synchronize()
    assert t[2].item() == 3
    t2 = torch.from_dlpack(ember.ones(3, device="cuda"))
    assert t2.device.type == "cuda" and t2.sum().item() == 3


@gpu
def test_gpu_mixed_devices_raise_and_moves_work():
    x = ember.arange(6.0, requires_grad=True)
    y = x.to("cuda")
    with pytest.raises(RuntimeError, match=r"cuda.*cpu|cpu.*cuda"):
        y + ember.ones(6)
    (y * 2).sum().backward()
    assert x.grad.device == ember.device("cpu") and x.grad.tolist() == [2.0] * 6
    assert y.cpu().tolist() == list(range(6))
    pinned = ember.arange(4.0).pin_memory()
    assert pinned.is_pinned()
    assert pinned.to("cuda", non_blocking=True).cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
    backend = plugins.get_backend("opencl")
    if plugins.safe_unavailable_reason(backend) is None:
        z = y.detach().to("opencl")
        assert z.to("cuda").cpu().tolist() == list(range(6))


@gpu
def test_gpu_values_match_the_cpu():
    ember.manual_seed(0)
    x = ember.randn(64, 3, 28, 28)
    w = ember.randn(8, 3, 3, 3)
    target = ember.randint(0, 10, (64,))
    for dev_x, dev_w in ((x, w), (x.cuda(), w.cuda())):
        out = ember.nn.functional.conv2d(dev_x, dev_w, padding=1)
        pooled = ember.nn.functional.max_pool2d(ember.relu(out), 2)
        logits = pooled.flatten(1)[:, :10]
        loss = ember.nn.functional.cross_entropy(logits, target.to(dev_x.device))
        if dev_x.device.type == "cpu":
            ref = (out.numpy(), pooled.numpy(), loss.item())
    np.testing.assert_allclose(out.cpu().numpy(), ref[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(pooled.cpu().numpy(), ref[1], rtol=1e-4, atol=1e-4)
    assert abs(loss.item() - ref[2]) < 1e-4
    h = ember.randn(256, 256).cuda().half()
    np.testing.assert_allclose((h @ h).cpu().float().numpy(),
                               h.float().cpu().numpy() @ h.float().cpu().numpy(),
                               rtol=2e-2, atol=0.5)
    ember.manual_seed(1)
    r1 = ember.rand(5, device="cuda").tolist()
    ember.manual_seed(1)
    assert ember.rand(5, device="cuda").tolist() == r1


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bidirectional,layers,batch_first", [(False, 1, True), (True, 2, False)])
def test_gpu_lstm_layer_matches_torch(dtype, bidirectional, layers, batch_first):
    """The CUDA backend's fused LSTM layer (cuda/recurrent.py): outputs, h_n, c_n and every
    gradient against PyTorch's LSTM on the CPU, with h0/c0 (run on an H200: float32 rel
    4e-7, float64 6e-16)."""
    torch = pytest.importorskip("torch")
    tdtype, edtype = getattr(torch, dtype), getattr(ember, dtype)
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(7, 12, num_layers=layers, bidirectional=bidirectional,
                           batch_first=batch_first).to(tdtype)
    ours = ember.nn.LSTM(7, 12, num_layers=layers, bidirectional=bidirectional,
                         batch_first=batch_first)
    ours.load_state_dict({k: ember.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    ours = ours.to("cuda", edtype)
    assert "lstm_layer" in ember.zeros(1, device="cuda")._backend.kernels
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 9, 7) if batch_first else (9, 5, 7))
    states = rng.standard_normal((2, (2 if bidirectional else 1) * layers, 5, 12))
    tx = torch.tensor(x, dtype=tdtype, requires_grad=True)
    ex = ember.tensor(x, dtype=edtype, device="cuda", requires_grad=True)
    t_state = [torch.tensor(s, dtype=tdtype, requires_grad=True) for s in states]
    e_state = [ember.tensor(s, dtype=edtype, device="cuda", requires_grad=True) for s in states]
    t_out, (t_h, t_c) = theirs(tx, tuple(t_state))
    e_out, (e_h, e_c) = ours(ex, tuple(e_state))
    g = rng.standard_normal(tuple(t_out.shape))
    ((t_out * torch.tensor(g, dtype=tdtype)).sum() + t_h.sum() * 0.3 + t_c.sum() * 0.7).backward()
    ((e_out * ember.tensor(g, dtype=edtype, device="cuda")).sum() + e_h.sum() * 0.3 +
     e_c.sum() * 0.7).backward()
    pairs = [(t_out, e_out), (t_h, e_h), (t_c, e_c), (tx.grad, ex.grad)]
    pairs += [(a.grad, b.grad) for a, b in zip(t_state, e_state)]
    pairs += [(p.grad, q.grad) for p, q in zip(theirs.parameters(), ours.parameters())]
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for expected, got in pairs:
        expected = expected.detach().numpy()
        np.testing.assert_allclose(got.detach().cpu().numpy(), expected, rtol=rtol,
                                   atol=rtol * float(np.abs(expected).max()))


@gpu
def test_gpu_conformance_suite_passes_strictly(tmp_path):
    """ember.testing against `cuda`, every op native (EMBER_STRICT=1: no CPU fallback)."""
    env = dict(os.environ, EMBER_STRICT="1")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "ember.testing", "--ember-device",
         "cuda", "--ember-examples", "3", "-q", "-p", "no:cacheprovider"],
        capture_output=True, text=True, env=env, timeout=1200)
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-3000:]


@gpu
def test_gpu_demo_trains_to_the_cpus_accuracy():
    from ember import demo

    cpu = demo.run(device="cpu", epochs=3, progress=False)
    cuda = demo.run(device="cuda", epochs=3, progress=False)
    assert cuda["device"] == "cuda:0"
    assert abs(cuda["accuracy"] - cpu["accuracy"]) <= 0.01
    assert cuda["reloaded_accuracy"] == cuda["accuracy"]
    proc = subprocess.run([sys.executable, "-m", "ember.cli", "demo", "--device", "cuda",
                           "--epochs", "1", "--no-progress"], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert proc.returncode == 0 and "cuda:0" in proc.stdout, proc.stdout + proc.stderr
