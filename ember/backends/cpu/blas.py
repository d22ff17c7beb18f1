"""Keep NumPy's matrix multiply on the fastest OpenBLAS kernels this CPU supports.

NumPy wheels bundle a ``DYNAMIC_ARCH`` OpenBLAS that picks its kernel set once,
in the library constructor, from CPUID -- or from the ``OPENBLAS_CORETYPE``
environment variable if that is set at that moment.  On some (virtualised)
CPUs the autodetection lands on a lower tier than the CPU can run (e.g. AVX2
"Haswell" kernels on an AVX-512 Xeon), which can cost 2x or more in sgemm
throughput.  Forcing a tier the CPU cannot run is worse: the process dies with
SIGILL (e.g. ``OPENBLAS_CORETYPE=SkylakeX`` on a VM that hides AVX-512), so
every choice here is derived from what the CPU and OS actually enable.

This module offers three layers of defence, cheapest first:

1. :func:`configure_before_numpy` -- called from ``ember/_early`` -- sets
   ``OPENBLAS_CORETYPE`` from :func:`detect_coretype` if NumPy is not loaded yet.
2. :func:`openblas_info` reports which kernels NumPy's OpenBLAS really runs and
   how to fix it when they are slower than the CPU allows.
3. A *private fast BLAS*: when NumPy was imported first (so the variable came
   too late), a byte copy of NumPy's OpenBLAS is loaded under another path --
   the dynamic loader identifies libraries by file (device+inode), so the copy
   is a second, independent instance whose constructor sees the variable.
   :func:`fast_matmul` calls its ``cblas_?gemm`` through ctypes;
   :func:`should_use_fast_path` says when that is worth it.

Only the standard library is imported at module level; NumPy is imported
lazily so that :func:`configure_before_numpy` can run before it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = [
    "axpy",
    "benchmark_matmul",
    "configure_before_numpy",
    "detect_coretype",
    "fast_matmul",
    "fast_matmul_threshold",
    "gemm_fn",
    "openblas_info",
    "serial_gemms",
    "should_use_fast_path",
    "transpose",
]

#: Minimum work (in FLOPs, 2*m*n*k) before :func:`should_use_fast_path` says
#: yes.  :func:`fast_matmul` costs ~10 us more per call than ``np.matmul``
#: (argument checks, pointer lookups, the ctypes call); 2*128**3 FLOPs take
#: ~40 us on AVX2 kernels, so above this a ~2x faster kernel set wins.
fast_matmul_threshold: int = 2 * 128**3

# Kernel tiers by the widest vector ISA the kernel set uses.  Two names in the
# same tier run equally fast sgemm/dgemm (e.g. NumPy's build aliases Zen to the
# Haswell kernels and Cooperlake to SkylakeX), so "slow" compares tiers.
_AVX512, _AVX2, _AVX, _OLD = 4, 3, 2, 1
_TIERS = {
    "sapphirerapids": _AVX512,
    "cooperlake": _AVX512,
    "skylakex": _AVX512,
    "zen": _AVX2,
    "haswell": _AVX2,
    "sandybridge": _AVX,
    "bulldozer": _AVX,
    "piledriver": _AVX,
    "steamroller": _AVX,
    "excavator": _AVX,
}

# CBLAS enum values (cblas.h).
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

# Set EMBER_PRIVATE_BLAS=0 to switch the private-copy fast path off entirely.
_DISABLE_ENV = "EMBER_PRIVATE_BLAS"

_lock = threading.RLock()
_UNSET: Any = object()
_coretype_cache: Any = _UNSET
_cpu_cache: Any = _UNSET
_numpy_blas_cache: Any = _UNSET
_private: _Blas | None = None
_private_state = "not loaded (it is loaded lazily, on first use)"
_private_tried = False
_useful: bool | None = None


def _tier(name: str | None) -> int:
    """Rank an OpenBLAS core name; unknown names are old/generic kernels."""
    if not name:
        return 0
    return _TIERS.get(name.lower(), _OLD)


# --------------------------------------------------------------------------
# CPU detection (must stay cheap: runs at ``import ember``)
# --------------------------------------------------------------------------


def _cpu_info() -> dict[str, Any] | None:
    """Vendor, family, model and flags of CPU 0 from /proc/cpuinfo (x86 Linux only)."""
    global _cpu_cache
    if _cpu_cache is not _UNSET:
        return _cpu_cache
    info: dict[str, Any] | None = None
    if sys.platform.startswith("linux") and os.uname().machine in ("x86_64", "amd64"):
        fields: dict[str, str] = {}
        try:
            # Read only the first processor block: on many-core hosts the whole
            # file is large and slow to generate, and all cores are alike.
            with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
                for line in f:
                    if not line.strip():
                        break
                    key, _, value = line.partition(":")
                    fields[key.strip()] = value.strip()
        except OSError:
            fields = {}
        if "flags" in fields:
            info = {
                "vendor": fields.get("vendor_id", ""),
                "family": fields.get("cpu family", ""),
                "model": fields.get("model", ""),
                "flags": frozenset(fields["flags"].split()),
            }
    _cpu_cache = info
    return info


def _os_enables_avx512() -> bool:
    """Whether the kernel enabled the AVX-512 register state (XCR0 opmask/ZMM bits).

    /proc/cpuinfo flags mirror CPUID, but a hypervisor can advertise AVX-512
    while the guest's XCR0 leaves ZMM state off; AVX-512 code then dies with
    SIGILL.  arch_prctl(ARCH_GET_XCOMP_SUPP) (Linux >= 5.16) returns the
    enabled xstate mask.  Older kernels lack it; we then trust the flags.
    """
    try:
        import ctypes  # NumPy imports ctypes anyway, so this is not extra cost

        libc = ctypes.CDLL(None, use_errno=True)
        mask = ctypes.c_uint64(0)
        sys_arch_prctl, arch_get_xcomp_supp = 158, 0x1021
        if libc.syscall(sys_arch_prctl, arch_get_xcomp_supp, ctypes.byref(mask)) != 0:
            return True
        needed = 0b1110_0110  # SSE, AVX(YMM), opmask, ZMM_Hi256, Hi16_ZMM
        return mask.value & needed == needed
    except Exception:
        return True


def detect_coretype() -> str | None:
    """Return the best ``OPENBLAS_CORETYPE`` name this CPU and OS can run, or None.

    Mirrors the rules of OpenBLAS's ``driver/others/dynamic.c``:

    * ``"Cooperlake"``: AVX-512 F/BW/VL/DQ/CD plus ``avx512_bf16``;
    * ``"SkylakeX"``: AVX-512 F/BW/VL/DQ/CD (Knights Landing, which lacks
      BW/VL, correctly falls through to AVX2);
    * ``"Zen"`` (AMD/Hygon) or ``"Haswell"`` (others): AVX2 + FMA;
    * ``"Sandybridge"``: AVX on Intel;
    * None: not x86-64 Linux, flags unreadable, or nothing worth forcing
      (e.g. pre-AVX2 AMD, where OpenBLAS's own Bulldozer-family pick is best).

    ``"SapphireRapids"`` is never returned: OpenBLAS 0.3.31 (NumPy 2.4 wheels)
    rejects it in ``OPENBLAS_CORETYPE`` ("Core not found") and its AMX kernels
    only help bf16 anyway; ``"Cooperlake"`` selects the same sgemm/dgemm kernels.
    """
    global _coretype_cache
    if _coretype_cache is not _UNSET:
        return _coretype_cache
    info = _cpu_info()
    name: str | None = None
    if info is not None:
        flags = info["flags"]
        amd = info["vendor"] in ("AuthenticAMD", "HygonGenuine")
        avx512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"}
        if avx512 <= flags and _os_enables_avx512():
            name = "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
        elif {"avx", "avx2", "fma"} <= flags:
            name = "Zen" if amd else "Haswell"
        elif "avx" in flags and not amd:
            name = "Sandybridge"
    _coretype_cache = name
    return name


def configure_before_numpy() -> str:
    """Point NumPy's OpenBLAS at the best kernels, if it is not too late.

    Called by ``ember/_early`` at import time.  Sets ``OPENBLAS_CORETYPE``
    only when NumPy is not imported yet (OpenBLAS reads the variable once, when
    it loads) and the user has not set it.  Never imports NumPy; costs about
    0.1 ms (one read of the first /proc/cpuinfo block).  Returns a one-line
    status for logs and ``ember devices``.
    """
    if "numpy" in sys.modules:
        return (
            "unchanged: numpy was imported before ember, so OPENBLAS_CORETYPE "
            "would come too late (large matmuls can use the private fast BLAS)"
        )
    current = os.environ.get("OPENBLAS_CORETYPE")
    if current:
        return f"unchanged: OPENBLAS_CORETYPE={current} was set by the user"
    best = detect_coretype()
    if best is None:
        return "unchanged: no OpenBLAS core type to force on this platform"
    # The variable is inherited by child processes; that is fine because they
    # run on the same CPU.
    os.environ["OPENBLAS_CORETYPE"] = best
    return f"set OPENBLAS_CORETYPE={best}"


# --------------------------------------------------------------------------
# ctypes bindings to a loaded OpenBLAS
# --------------------------------------------------------------------------


class _Blas:
    """ctypes bindings to one loaded OpenBLAS instance.

    Exported names differ between builds: scipy-openblas64 (NumPy wheels) uses
    ``scipy_cblas_sgemm64_``, older NumPy wheels ``cblas_sgemm64_``, system
    libraries plain ``cblas_sgemm``.  Integer width follows the ``64_`` suffix,
    or ``USE64BITINT`` in the build config for suffix-less ILP64 builds.
    """

    def __init__(self, path: str, lib: Any) -> None:
        import ctypes

        self.path = path
        self._lib = lib
        self._corename = self._fn("openblas_get_corename", ctypes.c_char_p, [])
        self._config = self._fn("openblas_get_config", ctypes.c_char_p, [])
        self._get_threads = self._fn("openblas_get_num_threads", ctypes.c_int, [])
        self._set_threads = self._fn("openblas_set_num_threads", None, [ctypes.c_int])
        sgemm_name = self._name("cblas_sgemm")
        if sgemm_name is None or self._name("cblas_dgemm") is None:
            raise OSError(f"{path}: no cblas_sgemm/cblas_dgemm export")
        self.ilp64 = sgemm_name.endswith("64_") or "USE64BITINT" in (self.config() or "")
        i = ctypes.c_int64 if self.ilp64 else ctypes.c_int
        e, p = ctypes.c_int, ctypes.c_void_p  # CBLAS enums are plain C ints
        f, d = ctypes.c_float, ctypes.c_double
        self.sgemm = self._fn("cblas_sgemm", None, [e, e, e, i, i, i, f, p, i, p, i, f, p, i])
        self.dgemm = self._fn("cblas_dgemm", None, [e, e, e, i, i, i, d, p, i, p, i, d, p, i])
        # level 1, for optimizer updates (y += a * x in one threaded pass, no temporary)
        self.saxpy = self._fn("cblas_saxpy", None, [i, f, p, i, p, i])
        self.daxpy = self._fn("cblas_daxpy", None, [i, d, p, i, p, i])
        # OpenBLAS's out-of-place transpose (cache-blocked: 3-7x NumPy's strided copy)
        self.somatcopy = self._fn("cblas_somatcopy", None, [e, e, i, i, f, p, i, p, i])
        self.domatcopy = self._fn("cblas_domatcopy", None, [e, e, i, i, d, p, i, p, i])
        self.sgemm_name = sgemm_name

    def _name(self, base: str) -> str | None:
        for name in (f"scipy_{base}64_", f"{base}64_", f"scipy_{base}", base):
            if hasattr(self._lib, name):
                return name
        return None

    def _fn(self, base: str, restype: Any, argtypes: list[Any]) -> Any:
        name = self._name(base)
        if name is None:
            return None
        fn = getattr(self._lib, name)
        fn.restype, fn.argtypes = restype, argtypes
        return fn

    def corename(self) -> str | None:
        return self._corename().decode() if self._corename else None

    def config(self) -> str | None:
        return self._config().decode().strip() if self._config else None

    def num_threads(self) -> int | None:
        return int(self._get_threads()) if self._get_threads else None

    def set_num_threads(self, n: int) -> None:
        if self._set_threads and n > 0:
            self._set_threads(n)


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ember", "blas")


def _numpy_blas_path() -> str | None:
    """Path of the OpenBLAS that NumPy loaded, from this process's memory map."""
    import numpy

    site = os.path.dirname(os.path.dirname(os.path.realpath(numpy.__file__)))
    private_dir = os.path.realpath(_cache_dir())
    found: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                base = os.path.basename(path).lower()
                # Skip our own private copies (cache dir, or unlinked temp files).
                if "openblas" not in base or ".so" not in base or path.endswith("(deleted)"):
                    continue
                if path.startswith(private_dir) or (_private and path == _private.path):
                    continue
                if path not in found:
                    found.append(path)
    except OSError:
        pass
    if not found:  # no /proc (non-Linux): look where wheels put it
        import glob

        found = sorted(glob.glob(os.path.join(site, "numpy.libs", "*openblas*.so*")))
    # SciPy brings its own OpenBLAS too; prefer the one shipped with NumPy.
    mine = [p for p in found if p.startswith(os.path.join(site, "numpy"))]
    return (mine or found or [None])[0]


def _numpy_blas() -> _Blas | None:
    """Bindings to NumPy's own (already loaded) OpenBLAS, or None."""
    global _numpy_blas_cache
    if _numpy_blas_cache is not _UNSET:
        return _numpy_blas_cache
    with _lock:
        if _numpy_blas_cache is _UNSET:
            blas = None
            try:
                import ctypes

                path = _numpy_blas_path()
                if path:
                    # RTLD_NOLOAD: bind to the instance NumPy uses, never load a new one.
                    mode = os.RTLD_LOCAL | getattr(os, "RTLD_NOLOAD", 0)
                    blas = _Blas(path, ctypes.CDLL(path, mode=mode))
            except (OSError, AttributeError, ImportError):
                blas = None
            _numpy_blas_cache = blas
    return _numpy_blas_cache


# --------------------------------------------------------------------------
# Private copy of NumPy's OpenBLAS
# --------------------------------------------------------------------------


_STALE_AFTER_S = 7 * 24 * 3600


def _private_copy(src: str) -> tuple[str, bool]:
    """Return (path of a byte copy of ``src``, whether it is a temp file to unlink).

    A copy, not a hard/symbolic link: the loader deduplicates by device+inode.
    Copies live in ~/.cache/ember/blas keyed by source name+size+mtime so each
    process reuses one file; if that directory is unusable, a temp file is used
    and unlinked right after dlopen (the mapping survives), so nothing leaks.
    """
    import shutil
    import tempfile

    st = os.stat(src)
    stem = os.path.basename(src).split(".so")[0]
    dst = os.path.join(_cache_dir(), f"{stem}-{st.st_size}-{st.st_mtime_ns}.so")
    try:
        if os.path.getsize(dst) == st.st_size:
            os.utime(dst)  # mtime = last use, so _prune_stale keeps copies in use
            return dst, False
    except OSError:
        pass
    try:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        tmp = f"{dst}.{os.getpid()}.{threading.get_ident()}.tmp"
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)  # atomic: concurrent processes never see a partial file
        _prune_stale(dst, stem)
        return dst, False
    except OSError:
        fd, tmp = tempfile.mkstemp(prefix="ember-openblas-", suffix=".so")
        os.close(fd)
        shutil.copyfile(src, tmp)
        return tmp, True


def _prune_stale(dst: str, stem: str) -> None:
    """Delete copies of the same library (other NumPy installs) unused for a week.

    Each reinstall of NumPy changes the source mtime and so the cache key;
    without pruning every reinstall would leave another ~25 MB behind.  Removing
    a copy that some process still has mapped is safe on Linux.
    """
    import time

    folder, keep = os.path.dirname(dst), os.path.basename(dst)
    cutoff = time.time() - _STALE_AFTER_S
    for name in os.listdir(folder):
        if name.startswith(f"{stem}-") and not name.startswith(keep):
            path = os.path.join(folder, name)
            try:
                if os.path.getmtime(path) < cutoff:
                    os.unlink(path)  # stale copy, its probe markers, or a crashed .tmp
            except OSError:
                pass


def _probe_marker(copy: str, coretype: str) -> str:
    import zlib

    info = _cpu_info() or {}
    fields = ("vendor", "family", "model")
    key = "|".join([*(str(info.get(f)) for f in fields), *sorted(info.get("flags", ()))])
    # Keyed by CPU too: a cache dir in an NFS home is shared between machines.
    return f"{copy}.{coretype}.{zlib.crc32(key.encode()):08x}.ok"


def _sibling_libs(path: str) -> list[str]:
    """Libraries this process loaded from ``path``'s directory (its bundled deps).

    In this process the copy finds them already loaded (matched by soname); a
    fresh child process must load them explicitly before the copy.
    """
    folder = os.path.dirname(path) + os.sep
    libs: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                dep = line.split(None, 5)[-1].strip()
                if dep.startswith(folder) and "openblas" not in dep.lower() and dep not in libs:
                    libs.append(dep)
    except OSError:
        pass
    return libs


_PROBE_SCRIPT = r"""
import ctypes, sys
path, core_sym, s_sym, d_sym, ilp64, *deps = sys.argv[1:]
for dep in deps:  # the copy's $ORIGIN rpath cannot find e.g. libgfortran next to it
    ctypes.CDLL(dep)
lib = ctypes.CDLL(path)
I = ctypes.c_int64 if ilp64 == "1" else ctypes.c_int
n = 96
for sym, T in ((s_sym, ctypes.c_float), (d_sym, ctypes.c_double)):
    A = (T * (n * n))(*([1.0] * (n * n)))
    B = (T * (n * n))(*[float((k + j) % 5) for k in range(n) for j in range(n)])
    C = (T * (n * n))()
    f = getattr(lib, sym)
    f.restype = None
    e = ctypes.c_int
    f(e(101), e(111), e(111), I(n), I(n), I(n), T(1.0), A, I(n), B, I(n), T(0.0), C, I(n))
    col = [sum((k + j) % 5 for k in range(n)) for j in range(n)]
    if any(C[i * n + j] != col[j] for i in range(n) for j in range(n)):
        sys.exit(3)
get = getattr(lib, core_sym)
get.restype = ctypes.c_char_p
print(get().decode())
"""


def _probe(copy: str, coretype: str, blas: _Blas, remember: bool = True) -> str | None:
    """Run gemm with ``coretype`` kernels in a child process; None if OK, else why not.

    Forcing kernels the CPU cannot execute kills the process with SIGILL
    (e.g. SkylakeX on a VM that hides AVX-512), so try it where a crash is
    harmless.  Success is remembered by a marker file next to a cached copy
    (``remember``), so the ~0.1 s probe runs once per machine, not per process.
    """
    import subprocess

    marker = _probe_marker(copy, coretype)
    if remember and os.path.exists(marker):
        return None
    names = [blas._name(f) for f in ("openblas_get_corename", "cblas_sgemm", "cblas_dgemm")]
    args = [*names, "1" if blas.ilp64 else "0", *_sibling_libs(blas.path)]
    env = dict(os.environ, OPENBLAS_CORETYPE=coretype, OPENBLAS_NUM_THREADS="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", _PROBE_SCRIPT, copy, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"probe could not run: {exc}"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [""])[-1][:200]
        status = proc.returncode  # negative: killed by that signal (-4 is SIGILL)
        return f"probe of OPENBLAS_CORETYPE={coretype} failed (exit status {status}) {tail}".strip()
    got = proc.stdout.strip().splitlines()[-1:] or [""]
    if _tier(got[0]) < _tier(coretype):
        return f"OpenBLAS did not accept OPENBLAS_CORETYPE={coretype} (ran {got[0] or 'unknown'})"
    if remember:
        try:
            open(marker, "w").close()
        except OSError:
            pass
    return None


def _load_private() -> _Blas | None:
    """Load (once, thread-safely) the private OpenBLAS copy; None if unavailable."""
    global _private, _private_state, _private_tried
    if _private_tried:
        return _private
    with _lock:
        if _private_tried:
            return _private
        try:
            _private = _load_private_unlocked()
            _private_state = "loaded"
        except Exception as exc:  # any failure just disables the fast path
            _private = None
            _private_state = f"disabled: {exc}"
        _private_tried = True
    return _private


def _load_private_unlocked() -> _Blas:
    import ctypes

    if os.environ.get(_DISABLE_ENV, "1") == "0":
        raise RuntimeError(f"{_DISABLE_ENV}=0")
    # Respect a user's explicit choice (they may have forced a lower tier on purpose).
    coretype = os.environ.get("OPENBLAS_CORETYPE") or detect_coretype()
    if coretype is None:
        raise RuntimeError("no OpenBLAS core type detected for this CPU")
    ref = _numpy_blas()
    if ref is None:
        raise RuntimeError("NumPy's OpenBLAS library not found (NumPy may use another BLAS)")
    copy, temporary = _private_copy(ref.path)
    try:
        if _tier(coretype) > _tier(ref.corename()):
            # Kernels that NumPy's own autodetection declined: test them out of process.
            why = _probe(copy, coretype, ref, remember=not temporary)
            if why:
                raise RuntimeError(why)
        # The copy's constructor reads these via getenv(); os.environ assignment
        # calls putenv(), so setting them around dlopen is enough.  Other threads
        # could see the values briefly; both are valid settings, so that is harmless.
        # THREAD_TIMEOUT=4 (2**4 cycles instead of 2**28, ~0.1 s) puts the copy's
        # worker threads to sleep right after each call instead of spinning:
        # spinning workers of one pool steal the cores the other pool needs
        # (measured: alternating np.matmul/fast_matmul ran 3x slower without it).
        env = {
            "OPENBLAS_CORETYPE": coretype,
            "OPENBLAS_THREAD_TIMEOUT": os.environ.get("OPENBLAS_THREAD_TIMEOUT", "4"),
        }
        saved = {key: os.environ.get(key) for key in env}
        os.environ.update(env)
        try:
            lib = ctypes.CDLL(copy, mode=os.RTLD_LOCAL)
        finally:
            for key, value in saved.items():
                if value is None:
                    del os.environ[key]
                else:
                    os.environ[key] = value
        blas = _Blas(copy, lib)
    finally:
        if temporary:
            os.unlink(copy)  # already mapped; unlinking only frees the name
    threads = ref.num_threads()
    if threads:
        blas.set_num_threads(threads)  # a second pool must not oversubscribe cores
    return blas


# --------------------------------------------------------------------------
# Matmul through the private copy
# --------------------------------------------------------------------------


def _layout(x: Any, rows: int, cols: int) -> tuple[bool, int] | None:
    """Describe a 2-D ``rows x cols`` view for row-major CBLAS as (transposed, ld).

    Row-major views map to NoTrans, column-major ones (e.g. ``c.T``) to Trans;
    the stride of a length-1 axis never matters.  None when the strides fit
    neither (step slicing, negative or zero strides, unaligned data).
    """
    if not x.flags.aligned:
        return None
    item = x.itemsize
    s0, s1 = x.strides
    if s0 % item or s1 % item:
        return None
    r, c = s0 // item, s1 // item
    if (cols == 1 or c == 1) and (rows == 1 or r >= max(cols, 1)):
        return False, (r if rows > 1 else max(cols, 1))
    if (rows == 1 or r == 1) and (cols == 1 or c >= max(rows, 1)):
        return True, (c if cols > 1 else max(rows, 1))
    return None


def _gemm2d(gemm: Any, a: Any, b: Any, out: Any) -> bool:
    """out[...] = a @ b for 2-D operands; False if ``out``'s layout is unusable.

    Kept lean (no imports, few attribute lookups): it is the per-call overhead.
    """
    m, k = a.shape
    n = b.shape[1]
    lay_c = _layout(out, m, n)
    if lay_c is None:
        return False
    lay_a, lay_b = _layout(a, m, k), _layout(b, k, n)
    # Copying an odd-strided operand is O(mk) against the O(mnk) gemm.
    if lay_a is None:
        a = a.copy(order="C")
        lay_a = (False, max(k, 1))
    if lay_b is None:
        b = b.copy(order="C")
        lay_b = (False, max(n, 1))
    pa = a.__array_interface__["data"][0]
    pb = b.__array_interface__["data"][0]
    pc = out.__array_interface__["data"][0]
    (ta, lda), (tb, ldb), (tc, ldc) = lay_a, lay_b, lay_c
    if tc:
        # Column-major out: compute out.T (n x m, row-major) = b.T @ a.T instead.
        m, n, pa, pb, lda, ldb, ta, tb = n, m, pb, pa, ldb, lda, not tb, not ta
    fa, fb = (_TRANS if ta else _NO_TRANS), (_TRANS if tb else _NO_TRANS)
    gemm(_ROW_MAJOR, fa, fb, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, pc, ldc)
    return True


def _sync_threads(blas: _Blas) -> None:
    """Follow NumPy's thread count (the user may change it, e.g. via threadpoolctl)."""
    ref = _numpy_blas()
    if ref is not None:
        n = ref.num_threads()
        if n and n != blas.num_threads():
            blas.set_num_threads(n)


def fast_matmul(a: Any, b: Any, out: Any = None) -> Any:
    """``a @ b`` through the private OpenBLAS copy, or None if this case is not handled.

    Handles float32/float64 ndarrays (both the same dtype) that are 2-D, or 3-D
    batches (either side may be 2-D or have batch size 1, broadcast as in
    ``np.matmul``); batches loop one gemm per matrix, so they only pay off when
    each matrix is large.  Row- and column-major views (transposes) are passed
    as CBLAS trans flags without copying; other strided operands are copied
    first.  ``out`` must have the exact result shape and dtype, a row- or
    column-major layout, and not overlap the inputs.  Returns None for anything
    else (1-D, >3-D, other dtypes, subclasses, empty, shape mismatch) or when
    the private library is unavailable -- the caller then uses ``np.matmul``.
    """
    import numpy as np

    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        return None
    if a.dtype != b.dtype or a.dtype not in (np.float32, np.float64) or not a.dtype.isnative:
        return None
    if not (2 <= a.ndim <= 3 and 2 <= b.ndim <= 3) or a.shape[-1] != b.shape[-2]:
        return None
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch_a = a.shape[0] if a.ndim == 3 else 1
    batch_b = b.shape[0] if b.ndim == 3 else 1
    if batch_a != batch_b and 1 not in (batch_a, batch_b):
        return None
    batch = max(batch_a, batch_b)
    if 0 in (m, n, k, batch):
        return None
    shape = (batch, m, n) if 3 in (a.ndim, b.ndim) else (m, n)
    if out is not None and (
        type(out) is not np.ndarray
        or out.shape != shape
        or out.dtype != a.dtype
        or not out.flags.writeable
        or np.may_share_memory(out, a)  # gemm would read what it overwrites
        or np.may_share_memory(out, b)
    ):
        return None
    blas = _load_private()
    if blas is None:
        return None
    _sync_threads(blas)
    gemm = blas.sgemm if a.dtype == np.float32 else blas.dgemm
    result = np.empty(shape, dtype=a.dtype) if out is None else out
    if len(shape) == 2:
        return result if _gemm2d(gemm, a, b, result) else None
    for i in range(batch):
        ai = a[i if batch_a > 1 else 0] if a.ndim == 3 else a
        bi = b[i if batch_b > 1 else 0] if b.ndim == 3 else b
        if not _gemm2d(gemm, ai, bi, result[i]):
            return None
    return result


def _fast_path_useful() -> bool:
    """True once the private copy is loaded and runs a higher kernel tier than NumPy."""
    global _useful
    if _useful is None:
        ref = _numpy_blas()
        if ref is None or _tier(ref.corename()) >= _tier(detect_coretype()):
            _useful = False  # NumPy already runs the best kernels: no need to load anything
        else:
            private = _load_private()
            _useful = private is not None and _tier(private.corename()) > _tier(ref.corename())
    return _useful


def should_use_fast_path(m: int, n: int, k: int) -> bool:
    """Whether an ``(m, k) @ (k, n)`` matmul should go through :func:`fast_matmul`.

    True only when the work exceeds :data:`fast_matmul_threshold` FLOPs, NumPy's
    OpenBLAS runs a lower kernel tier than the CPU supports, and the private
    copy loaded with a higher tier (loading happens here, lazily, once).
    """
    if 2 * m * n * k < fast_matmul_threshold:
        return False
    return _fast_path_useful()


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def openblas_info() -> dict[str, Any]:
    """Report which kernels NumPy's OpenBLAS runs and whether that is slow.

    Keys: ``library`` (path or None), ``corename``, ``config``,
    ``num_threads``, ``best`` (:func:`detect_coretype`), ``slow`` (running
    kernels are a lower tier than ``best``), ``advice``, ``coretype_env``
    (current ``OPENBLAS_CORETYPE``), and ``fast_path`` -- the private copy's
    ``state`` (loaded / not loaded / disabled with the reason), ``library``
    and ``corename``.  Imports NumPy; does not load the private copy.
    """
    ref = _numpy_blas()
    best = detect_coretype()
    corename = ref.corename() if ref else None
    slow = ref is not None and _tier(corename) < _tier(best)
    if ref is None:
        advice = "NumPy does not use a loadable OpenBLAS (e.g. MKL or Accelerate); nothing to tune."
    elif slow:
        advice = (
            f"NumPy's OpenBLAS runs {corename} kernels but this CPU supports {best}: "
            f"export OPENBLAS_CORETYPE={best} before starting Python, or import ember "
            "before numpy. Until then ember sends large float32/float64 matmuls "
            f"through a private {best} copy of OpenBLAS."
        )
    else:
        advice = f"OK: NumPy's OpenBLAS already runs the best kernels for this CPU ({corename})."
    private = _private
    return {
        "library": ref.path if ref else None,
        "corename": corename,
        "config": ref.config() if ref else None,
        "num_threads": ref.num_threads() if ref else None,
        "best": best,
        "slow": slow,
        "advice": advice,
        "coretype_env": os.environ.get("OPENBLAS_CORETYPE"),
        "fast_path": {
            "state": _private_state,
            "library": private.path if private else None,
            "corename": private.corename() if private else None,
        },
    }


def benchmark_matmul(n: int = 1024) -> dict[str, Any]:
    """Measure float32 ``n x n`` matmul GFLOP/s of ``np.matmul`` and :func:`fast_matmul`.

    Best of several runs after a warm-up; ``fast_gflops`` is None when the
    private copy is unavailable.  Loads the private copy if needed.
    """
    import time

    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    flops = 2.0 * n**3

    def gflops(fn: Any) -> float:
        fn()  # warm-up: thread pool start, page faults
        t0 = time.perf_counter()
        fn()
        once = max(time.perf_counter() - t0, 1e-9)
        best = once
        for _ in range(max(2, min(20, int(0.5 / once)))):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        return flops / best / 1e9

    numpy_gflops = gflops(lambda: np.matmul(a, b, out=out))
    fast_gflops = None
    if fast_matmul(a, b, out=out) is not None:
        fast_gflops = gflops(lambda: fast_matmul(a, b, out=out))
    ref, private = _numpy_blas(), _private
    return {
        "n": n,
        "dtype": "float32",
        "numpy_gflops": numpy_gflops,
        "fast_gflops": fast_gflops,
        "numpy_corename": ref.corename() if ref else None,
        "fast_corename": private.corename() if private else None,
        "num_threads": ref.num_threads() if ref else None,
    }


if __name__ == "__main__":  # python ember/backends/cpu/blas.py: quick report
    import json

    print(configure_before_numpy())
    print(json.dumps(openblas_info(), indent=2))
    print(json.dumps(benchmark_matmul(), indent=2))
    print(json.dumps(openblas_info()["fast_path"], indent=2))


# --------------------------------------------------------------------------
# Level-1 updates through NumPy's own OpenBLAS
# --------------------------------------------------------------------------

# Below this many elements NumPy's own loops are as fast (measured: an axpy of 401k
# float32 takes 34 us, NumPy's multiply-then-add 94 us; at 50k they are even).
level1_min_size = 65536


def _level1_fn(x: Any, name: str) -> Any:
    """NumPy's OpenBLAS ``?<name>`` for x's dtype when x is a large, writable, contiguous
    float32/float64 ndarray and the library exports it; else None."""
    import numpy as np

    if type(x) is not np.ndarray or x.size < level1_min_size or \
            not (x.flags.c_contiguous and x.flags.writeable and x.flags.aligned):
        return None
    if x.dtype == np.float32:
        which = "s"
    elif x.dtype == np.float64:
        which = "d"
    else:
        return None
    blas = _numpy_blas()
    if blas is None:
        return None
    return getattr(blas, which + name)


def _operands(fn: Any, x: Any, y: Any) -> tuple[int, int] | None:
    """(address of x, address of y) when `fn` exists and x matches y's shape, dtype and
    layout and overlaps it only by being it; else None."""
    import numpy as np

    if fn is None or type(x) is not np.ndarray or x.shape != y.shape or \
            x.dtype != y.dtype or not (x.flags.c_contiguous and x.flags.aligned):
        return None
    px, py = x.__array_interface__["data"][0], y.__array_interface__["data"][0]
    if px != py and np.may_share_memory(x, y):
        return None
    return px, py


def axpy(alpha: float, x: Any, y: Any) -> bool:
    """``y += alpha * x`` in place, in one pass; False (nothing done) when it does not
    apply (see `_level1_fn` and `_operands`)."""
    if getattr(y, "size", 0) < level1_min_size:  # small: NumPy's two passes are cheaper
        return False
    fn = _level1_fn(y, "axpy") if alpha != 0 else None  # BLAS skips alpha 0: inf * 0 is nan
    ptrs = _operands(fn, x, y)
    if ptrs is None:
        return False
    fn(y.size, alpha, ptrs[0], 1, ptrs[1], 1)
    return True


#: Below this many FLOPs a GEMM runs on one thread inside :func:`serial_gemms`: waking
#: OpenBLAS's other threads costs more than they save, and on a loaded machine a step
#: waits for a worker thread the scheduler has not run yet (an LSTM's 50 recurrent
#: (32, 128) x (128, 512) GEMMs per step ran 30x slower with two busy processes beside).
serial_gemm_flops: int = 2 * 256**3


@contextlib.contextmanager
def serial_gemms(flops: int) -> Iterator[None]:
    """Run the GEMMs of the block on one OpenBLAS thread when each is smaller than
    `serial_gemm_flops` (a recurrent layer's time loop: many small GEMMs in a row)."""
    blas = _numpy_blas() if flops < serial_gemm_flops else None
    threads = blas.num_threads() if blas is not None else None
    if not threads or threads == 1:
        yield
        return
    blas.set_num_threads(1)
    try:
        yield
    finally:
        blas.set_num_threads(threads)


def gemm_fn(dtype: Any) -> Any:
    """NumPy's own OpenBLAS ``cblas_sgemm``/``cblas_dgemm`` for a float32/float64 dtype
    (row-major CBLAS arguments), or None: for kernels that need what ``np.matmul`` lacks,
    such as accumulating into the output (beta = 1)."""
    import numpy as np

    blas = _numpy_blas()
    if blas is None:
        return None
    return {np.dtype(np.float32): blas.sgemm, np.dtype(np.float64): blas.dgemm}.get(
        np.dtype(dtype))



# --------------------------------------------------------------------------
# Transposes through NumPy's own OpenBLAS
# --------------------------------------------------------------------------

# Below this many elements NumPy's copy is as fast (the ctypes call costs a few us).
transpose_min_size = 16384


def transpose(a: Any) -> Any:
    """``a.T`` of a 2-D C-contiguous float32/float64 ndarray as a new C-contiguous array,
    through OpenBLAS's ``?omatcopy`` (a cache-blocked transpose: (7744, 64) floats in
    0.07 ms against NumPy's 0.42 ms, which walks one side with a stride); None (nothing
    done) where it does not apply."""
    import numpy as np

    if type(a) is not np.ndarray or a.ndim != 2 or a.size < transpose_min_size or \
            not (a.flags.c_contiguous and a.flags.aligned):
        return None
    blas = _numpy_blas()
    if blas is None:
        return None
    if a.dtype == np.float32:
        fn = blas.somatcopy
    elif a.dtype == np.float64:
        fn = blas.domatcopy
    else:
        return None
    if fn is None:
        return None
    rows, cols = a.shape
    out = np.empty((cols, rows), a.dtype)
    fn(_ROW_MAJOR, _TRANS, rows, cols, 1.0, a.__array_interface__["data"][0], cols,
       out.__array_interface__["data"][0], rows)
    return out
