"""Tests for ember/backends/cpu/blas.py.

The module is loaded by file path so these tests do not depend on the rest of
the ember package.  No timing assertions: speed depends on the machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

BLAS_PATH = Path(__file__).resolve().parents[1] / "ember" / "backends" / "cpu" / "blas.py"
VALID_CORES = {"Cooperlake", "SkylakeX", "Zen", "Haswell", "Sandybridge"}
LINUX_X86 = sys.platform.startswith("linux") and platform.machine() == "x86_64"


def load_blas(name: str = "ember_blas_under_test") -> ModuleType:
    """Import blas.py by path as a fresh module (own globals, own lazy state)."""
    spec = importlib.util.spec_from_file_location(name, BLAS_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


blas = load_blas()


def run_py(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter with ``blas`` preloaded by path; return its JSON."""
    prelude = (
        "import importlib.util, json, os, sys\n"
        f"spec = importlib.util.spec_from_file_location('blas', {str(BLAS_PATH)!r})\n"
        "blas = importlib.util.module_from_spec(spec); spec.loader.exec_module(blas)\n"
    )
    full_env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", prelude + code],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    rtol = 1e-5 if want.dtype == np.float32 else 1e-12
    assert np.linalg.norm(got - want) <= rtol * max(np.linalg.norm(want), 1e-30)


# ---------------------------------------------------------------- detection


@pytest.mark.skipif(not LINUX_X86, reason="CPU detection reads x86 /proc/cpuinfo")
def test_detect_coretype_returns_valid_name() -> None:
    assert blas.detect_coretype() in VALID_CORES


def test_detect_coretype_never_below_running_kernels() -> None:
    # OpenBLAS's own autodetection never picks kernels the CPU lacks, so our
    # pick must be at least that tier.  Fresh process: no OPENBLAS_CORETYPE.
    out = run_py(
        "import numpy\n"
        "print(json.dumps({'core': blas.openblas_info()['corename'],\n"
        "  'best': blas.detect_coretype()}))\n"
    )
    if out["core"] is None:
        pytest.skip("NumPy is not linked against OpenBLAS")
    assert blas._tier(out["best"]) >= blas._tier(out["core"])


@pytest.mark.skipif(not LINUX_X86, reason="needs an x86 core type to set")
def test_configure_before_numpy_sets_env_in_fresh_process() -> None:
    out = run_py(
        "import time\n"
        "t = time.perf_counter(); status = blas.configure_before_numpy()\n"
        "ms = (time.perf_counter() - t) * 1e3\n"
        "print(json.dumps({'status': status, 'env': os.environ.get('OPENBLAS_CORETYPE'),\n"
        "  'numpy': 'numpy' in sys.modules, 'best': blas.detect_coretype(), 'ms': ms}))\n"
    )
    assert out["numpy"] is False  # must not import numpy
    assert out["env"] == out["best"] and out["env"] in VALID_CORES
    assert out["status"].startswith("set OPENBLAS_CORETYPE=")


def test_configure_before_numpy_is_too_late_after_numpy() -> None:
    out = run_py(
        "import numpy\n"
        "print(json.dumps({'status': blas.configure_before_numpy(),\n"
        "  'env': os.environ.get('OPENBLAS_CORETYPE')}))\n"
    )
    assert out["env"] is None and out["status"].startswith("unchanged: numpy")


def test_configure_before_numpy_respects_user_setting() -> None:
    out = run_py(
        "print(json.dumps({'status': blas.configure_before_numpy(),\n"
        "  'env': os.environ.get('OPENBLAS_CORETYPE')}))\n",
        OPENBLAS_CORETYPE="Haswell",
    )
    assert out["env"] == "Haswell" and "set by the user" in out["status"]


# ---------------------------------------------------------------- reporting


def test_openblas_info_reports_corename() -> None:
    info = blas.openblas_info()
    for key in ("library", "corename", "config", "best", "slow", "advice", "fast_path"):
        assert key in info
    if info["library"] is None:
        pytest.skip("NumPy is not linked against OpenBLAS")
    assert os.path.exists(info["library"])
    assert isinstance(info["corename"], str) and info["corename"]
    assert isinstance(info["slow"], bool) and info["advice"]


def test_benchmark_matmul_small() -> None:
    result = blas.benchmark_matmul(n=128)
    assert result["numpy_gflops"] > 0
    assert result["fast_gflops"] is None or result["fast_gflops"] > 0


# ---------------------------------------------------------------- fast_matmul

rng = np.random.default_rng(1234)


def rand(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def private_available() -> bool:
    return blas.fast_matmul(rand(4, 4), rand(4, 4)) is not None


CASES = {
    "square": lambda d: (rand(64, 64, dtype=d), rand(64, 64, dtype=d)),
    "rectangular": lambda d: (rand(37, 91, dtype=d), rand(91, 13, dtype=d)),
    "a_transposed_view": lambda d: (rand(91, 37, dtype=d).T, rand(91, 13, dtype=d)),
    "b_transposed_view": lambda d: (rand(37, 91, dtype=d), rand(13, 91, dtype=d).T),
    "both_fortran": lambda d: (
        np.asfortranarray(rand(50, 60, dtype=d)),
        np.asfortranarray(rand(60, 70, dtype=d)),
    ),
    "row_slices": lambda d: (rand(40, 100, dtype=d)[:, 10:90], rand(100, 30, dtype=d)[20:100]),
    "step_slices": lambda d: (rand(80, 60, dtype=d)[::2, ::3], rand(40, 50, dtype=d)[::2, 1::2]),
    "negative_strides": lambda d: (rand(30, 20, dtype=d)[::-1], rand(20, 10, dtype=d)[:, ::-1]),
    "broadcast_zero_stride": lambda d: (
        np.broadcast_to(rand(1, 25, dtype=d), (33, 25)),
        rand(25, 7, dtype=d),
    ),
    "row_vector_as_matrix": lambda d: (rand(1, 50, dtype=d), rand(50, 9, dtype=d)),
    "column_result": lambda d: (rand(9, 50, dtype=d), rand(50, 1, dtype=d)),
    "strided_single_row": lambda d: (rand(3, 100, dtype=d)[1:2, ::2], rand(50, 4, dtype=d)),
    "batched": lambda d: (rand(5, 20, 30, dtype=d), rand(5, 30, 10, dtype=d)),
    "batched_transposed": lambda d: (
        rand(5, 30, 20, dtype=d).transpose(0, 2, 1),
        rand(5, 30, 10, dtype=d),
    ),
    "batch_broadcast_2d_b": lambda d: (rand(4, 20, 30, dtype=d), rand(30, 10, dtype=d)),
    "batch_broadcast_1_a": lambda d: (rand(1, 20, 30, dtype=d), rand(6, 30, 10, dtype=d)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_fast_matmul_matches_numpy(case: str, dtype: type) -> None:
    if not private_available():
        pytest.skip(f"private BLAS unavailable: {blas.openblas_info()['fast_path']['state']}")
    a, b = CASES[case](dtype)
    got = blas.fast_matmul(a, b)
    assert got is not None, "all these layouts are supported"
    assert_close(got, np.matmul(a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_fast_matmul_out(order: str, dtype: type) -> None:
    if not private_available():
        pytest.skip("private BLAS unavailable")
    a, b = rand(33, 44, dtype=dtype), rand(44, 55, dtype=dtype)
    out = np.full((33, 55), np.nan, dtype=dtype, order=order)
    assert blas.fast_matmul(a, b, out=out) is out
    assert_close(out, a @ b)


def test_fast_matmul_out_slice_of_larger_buffer() -> None:
    if not private_available():
        pytest.skip("private BLAS unavailable")
    a, b = rand(10, 20), rand(20, 30)
    buf = np.zeros((12, 40), dtype=np.float32)
    view = buf[1:11, 5:35]  # row stride 40 > 30: exercised as ldc
    assert blas.fast_matmul(a, b, out=view) is view
    assert_close(view, a @ b)
    assert not buf[0].any() and not buf[:, :5].any() and not buf[:, 35:].any()


def test_fast_matmul_declines_unsupported_cases() -> None:
    a = rand(8, 8)
    assert blas.fast_matmul(a.astype(np.int64), a.astype(np.int64)) is None
    assert blas.fast_matmul(a, a.astype(np.float64)) is None  # mixed dtypes
    assert blas.fast_matmul(a.astype(">f4"), a.astype(">f4")) is None  # byte-swapped
    assert blas.fast_matmul(a[0], a) is None  # 1-D
    assert blas.fast_matmul(rand(2, 2, 8, 8), rand(2, 2, 8, 8)) is None  # 4-D
    assert blas.fast_matmul(rand(8, 5), rand(6, 8)) is None  # shape mismatch
    assert blas.fast_matmul(rand(3, 8, 8), rand(2, 8, 8)) is None  # batch mismatch
    assert blas.fast_matmul(rand(0, 8), rand(8, 8)) is None  # empty
    sub = a.view(type("Sub", (np.ndarray,), {}))
    assert blas.fast_matmul(sub, sub) is None  # subclasses keep their own semantics
    assert blas.fast_matmul(a, a, out=a) is None  # out overlaps an input
    assert blas.fast_matmul(a, a, out=np.empty((8, 8), np.float64)) is None
    assert blas.fast_matmul(a, a, out=np.empty((16, 16), np.float32)[::2, ::2]) is None


def test_fast_matmul_lazy_load_is_thread_safe() -> None:
    fresh = load_blas("ember_blas_threads")  # its private copy is not loaded yet
    a, b = rand(128, 96), rand(96, 64)
    want = a @ b
    results: list[np.ndarray | None] = [None] * 8

    def work(i: int) -> None:
        results[i] = fresh.fast_matmul(a, b)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if results[0] is None:
        pytest.skip("private BLAS unavailable")
    for r in results:
        assert r is not None
        assert_close(r, want)


def test_should_use_fast_path_small_work_is_false() -> None:
    assert blas.should_use_fast_path(8, 8, 8) is False
    n = 2048
    assert isinstance(blas.should_use_fast_path(n, n, n), bool)
    # On a CPU where NumPy already runs the best tier it must decline at any size.
    if not blas.openblas_info()["slow"]:
        assert blas.should_use_fast_path(n, n, n) is False


@pytest.mark.skipif(not LINUX_X86, reason="needs x86 OpenBLAS core types")
def test_private_copy_rescues_numpy_imported_with_slow_kernels() -> None:
    # Simulate "NumPy loaded before ember and picked weak kernels": force NumPy
    # onto Sandybridge (AVX) kernels, then drop the variable as if never set.
    if blas._tier(blas.detect_coretype()) <= blas._AVX:
        pytest.skip("CPU has no kernel tier above Sandybridge")
    out = run_py(
        "import numpy as np\n"
        "del os.environ['OPENBLAS_CORETYPE']\n"
        "use = blas.should_use_fast_path(1024, 1024, 1024)\n"
        "a = np.random.rand(300, 200).astype(np.float32)\n"
        "b = np.random.rand(200, 100).astype(np.float32)\n"
        "c = blas.fast_matmul(a, b); ref = a @ b\n"
        "err = float(np.linalg.norm(c - ref) / np.linalg.norm(ref))\n"
        "info = blas.openblas_info()\n"
        "print(json.dumps({'use': use, 'err': err, 'info': info,\n"
        "  'env': os.environ.get('OPENBLAS_CORETYPE')}))\n",
        OPENBLAS_CORETYPE="Sandybridge",
    )
    info = out["info"]
    assert info["corename"] == "Sandybridge" and info["slow"] is True
    assert "OPENBLAS_CORETYPE=" in info["advice"]
    assert out["use"] is True, info["fast_path"]
    assert info["fast_path"]["state"] == "loaded"
    assert blas._tier(info["fast_path"]["corename"]) > blas._AVX  # independent instance
    assert out["err"] < 1e-5
    assert out["env"] is None  # environment restored after loading the copy


@pytest.mark.skipif(not LINUX_X86, reason="needs x86 OpenBLAS core types")
def test_probe_rejects_kernels_the_cpu_cannot_run() -> None:
    if blas._tier(blas.detect_coretype()) >= blas._AVX512:
        pytest.skip("this CPU runs AVX-512 kernels")
    ref = blas._numpy_blas()
    if ref is None:
        pytest.skip("NumPy has no OpenBLAS")
    copy, temporary = blas._private_copy(ref.path)
    try:
        # SkylakeX kernels die with SIGILL here; the probe must catch that in a
        # child process instead of crashing us.
        why = blas._probe(copy, "SkylakeX", ref)
        assert why is not None and "SkylakeX" in why
        assert not os.path.exists(blas._probe_marker(copy, "SkylakeX"))
        assert blas._probe(copy, blas.detect_coretype(), ref) is None
    finally:
        if temporary:
            os.unlink(copy)


@pytest.mark.skipif(not LINUX_X86, reason="needs x86 OpenBLAS core types")
def test_unusable_cache_dir_falls_back_to_unlinked_temp_copy(tmp_path: Path) -> None:
    if blas._tier(blas.detect_coretype()) <= blas._AVX:
        pytest.skip("CPU has no kernel tier above Sandybridge")
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = run_py(
        "import numpy as np\n"
        "del os.environ['OPENBLAS_CORETYPE']\n"
        "use = blas.should_use_fast_path(1024, 1024, 1024)\n"
        "a = np.random.rand(64, 48); b = np.random.rand(48, 32)\n"
        "ok = bool(np.allclose(blas.fast_matmul(a, b), a @ b))\n"
        "print(json.dumps({'use': use, 'ok': ok, 'fast': blas.openblas_info()['fast_path']}))\n",
        OPENBLAS_CORETYPE="Sandybridge",
        XDG_CACHE_HOME=str(not_a_dir),
        TMPDIR=str(tmpdir),
    )
    assert out["use"] is True and out["ok"] is True, out
    assert out["fast"]["library"].startswith(str(tmpdir))
    assert list(tmpdir.iterdir()) == []  # copy unlinked after dlopen, no probe marker


def test_private_copy_is_reused_and_stale_copies_pruned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "libfakeopenblas64_.so"
    src.write_bytes(b"\x7fELF fake library bytes")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first, temporary = blas._private_copy(str(src))
    assert not temporary and first != str(src)
    assert Path(first).read_bytes() == src.read_bytes()
    assert os.stat(first).st_ino != os.stat(src).st_ino  # a real copy, not a link
    assert blas._private_copy(str(src)) == (first, False)  # reused, not copied again
    # A stale copy from an older install of the same library is pruned when a
    # new copy is made; a recently used one is kept.
    folder = Path(first).parent
    stale, fresh = folder / f"{src.stem}-1-1.so", folder / f"{src.stem}-2-2.so"
    stale.write_bytes(b"old")
    fresh.write_bytes(b"new")
    os.utime(stale, (0, 0))
    src.write_bytes(b"\x7fELF reinstalled, different size")
    second, _ = blas._private_copy(str(src))
    assert second != first and not stale.exists() and fresh.exists()


# ---------------------------------------------------------------- level 1 and gemm_fn


NUMPY_BLAS = blas._numpy_blas() is not None


@pytest.mark.skipif(not NUMPY_BLAS, reason="NumPy's OpenBLAS is not reachable")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axpy_updates_in_place(dtype: type) -> None:
    rng = np.random.default_rng(0)
    n = blas.level1_min_size + 5
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    want = y + dtype(-0.25) * x
    assert blas.axpy(-0.25, x, y)
    assert_close(y, want)
    assert blas.axpy(1.0, y, y)  # x is y: each element reads itself
    assert_close(y, 2 * want)


def test_axpy_declines_what_it_cannot_do_exactly() -> None:
    n = blas.level1_min_size
    y = np.ones(2 * n, np.float32)
    before = y.copy()
    assert not blas.axpy(1.0, np.ones(8, np.float32), np.ones(8, np.float32))  # small
    assert not blas.axpy(1.0, y[1:n + 1], y[:n])        # overlapping, not the same
    assert not blas.axpy(1.0, y[::2], y[:n])            # strided operand
    assert not blas.axpy(1.0, np.ones(2 * n), y)        # another dtype
    assert not blas.axpy(1.0, np.ones(2 * n, np.int32), np.ones(2 * n, np.int32))
    inf = np.full(2 * n, np.inf, np.float32)
    assert not blas.axpy(0.0, inf, y)                   # BLAS would skip inf * 0 = nan
    np.testing.assert_array_equal(y, before)


@pytest.mark.skipif(not NUMPY_BLAS, reason="NumPy's OpenBLAS is not reachable")
def test_gemm_fn_accumulates_with_beta() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((3, 4))
    c = rng.standard_normal((5, 4))
    want = c + a @ b
    gemm = blas.gemm_fn(np.float64)
    gemm(101, 111, 111, 5, 4, 3, 1.0, a.ctypes.data, 3, b.ctypes.data, 4, 1.0,
         c.ctypes.data, 4)
    assert_close(c, want)
    assert blas.gemm_fn(np.int64) is None


@pytest.mark.skipif(not NUMPY_BLAS, reason="NumPy's OpenBLAS is not reachable")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transpose_is_the_exact_transpose(dtype: type) -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((blas.transpose_min_size // 60 + 3, 61)).astype(dtype)
    a[0, :3] = [np.nan, np.inf, -0.0]  # copied bit for bit
    out = blas.transpose(a)
    assert out.flags.c_contiguous and out.dtype == a.dtype
    np.testing.assert_array_equal(out, a.T)
    assert np.signbit(out[2, 0])


def test_transpose_declines_what_it_cannot_do() -> None:
    n = blas.transpose_min_size
    assert blas.transpose(np.ones((8, 8), np.float32)) is None           # small
    assert blas.transpose(np.ones((n, 4), np.float32)[::2]) is None      # strided
    assert blas.transpose(np.ones((4, n), np.float32).T) is None         # not C order
    assert blas.transpose(np.ones((n, 4), np.int32)) is None             # not a BLAS dtype
    assert blas.transpose(np.ones((n, 2, 2), np.float32)) is None        # not 2-D


@pytest.mark.skipif(not NUMPY_BLAS, reason="NumPy's OpenBLAS is not reachable")
def test_serial_gemms_runs_small_gemms_on_one_thread_and_restores() -> None:
    numpy_blas = blas._numpy_blas()
    before = numpy_blas.num_threads()
    numpy_blas.set_num_threads(2)
    try:
        if numpy_blas.num_threads() != 2:
            pytest.skip("this OpenBLAS runs one thread only")
        with blas.serial_gemms(2 * 32 * 512 * 128):  # an LSTM step's recurrent GEMM
            assert numpy_blas.num_threads() == 1
        assert numpy_blas.num_threads() == 2
        with blas.serial_gemms(blas.serial_gemm_flops):  # large enough to share out
            assert numpy_blas.num_threads() == 2
        with pytest.raises(ValueError), blas.serial_gemms(1):  # restored on an error too
            raise ValueError
        assert numpy_blas.num_threads() == 2
    finally:
        numpy_blas.set_num_threads(before)
