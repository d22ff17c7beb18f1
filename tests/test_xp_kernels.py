"""ember/backends/xp: the kernels written once against an array module `xp` (NumPy on the
CPU backend, CuPy on the CUDA backend).

No GPU is needed here: the shared kernels run on NumPy, and once more on NumPy seen
through only the names CuPy also has, so a kernel that reaches for a NumPy-only function
fails here rather than on the first GPU machine.
"""

from __future__ import annotations

import ast
import math
import pathlib
import sys
import warnings

import numpy as np
import pytest

from ember.backends.xp import OVERLAP, Hooks, make_kernels
from ember.core import plugins
from ember.core.backend import ViewNotPossible, bfloat16, float32, int16, numpy_dtype

XP_DIR = pathlib.Path(__file__).resolve().parents[1] / "ember" / "backends" / "xp"

# The table before the kernels moved out of backends/cpu, less what stays CPU-only.
SHARED_OPS = frozenset("""
    _foreach_add _foreach_add_ _foreach_addcdiv_ _foreach_addcmul_ _foreach_copy_
    _foreach_div _foreach_div_ _foreach_lerp_ _foreach_maximum_ _foreach_mul _foreach_mul_
    _foreach_neg _foreach_neg_ _foreach_sqrt _foreach_sqrt_ _foreach_sub_ _foreach_zero_
    _fused_sgd_
    abs acos add all any arange argmax argmin asin assign atan atan2 bitwise_and
    bitwise_not bitwise_or bitwise_xor cast cat ceil clamp clone col2im constant_pad conv
    conv_backward cos cross_entropy cross_entropy_backward cumsum div einsum eq erf exp
    exp_backward expand expm1 flip floor floor_divide full gather ge getitem gt im2col
    index_select isfinite isinf isnan le linear linear_backward log log1p log2
    log_backward logical_and logical_not logical_or logical_xor lstm_cell
    lstm_cell_backward lt matmul max max_min_dim max_pool max_pool_backward maximum min
    minimum mul ne
    neg nonzero opmath_addcdiv opmath_addcmul opmath_axpy opmath_lerp
    permute pow prod reciprocal relu relu_backward remainder reshape round
    rsqrt scatter scatter_add scatter_reduce setitem sigmoid sigmoid_backward sign sin
    softmax log_softmax sqrt sub sum tan
    tanh tanh_backward topk tril triu trunc where
""".split())
CPU_ONLY = frozenset({"rand", "randn", "randint", "randperm", "lstm_layer",
                      "lstm_layer_backward", "gru_layer", "gru_layer_backward",
                      "searchsorted", "mode_index", "pytorch_normal_fill16",
                      "pytorch_randperm_shuffle", "bincount", "bincount_weighted", "unique",
                      "nll_loss"})

# Every top-level `xp` name the shared kernels use, checked to exist in CuPy 13.6 and 14.2
# (hasattr on the installed packages; CuPy imports without a GPU). `errstate` is the one
# NumPy-only name, and the kernels look for it with hasattr.
CUPY_NAMES = frozenset("""
    abs add all any arange arccos arcsin arctan arctan2 argmax argmin argpartition argsort argwhere
    array asarray
    ascontiguousarray bitwise_and bitwise_or bitwise_xor broadcast_to ceil clip concatenate
    copyto cos cumprod cumsum divide dot einsum empty_like equal exp expm1 flip float32 float64
    floor floor_divide full greater greater_equal iinfo int64 int8 integer invert isfinite isinf
    isnan issubdtype less less_equal lib log log1p log2 logical_and logical_not logical_or
    logical_xor matmul max maximum min minimum moveaxis multiply ndarray negative nonzero
    not_equal
    ones pad power prod reciprocal remainder reshape result_type round sign sin sqrt
    subtract sum take take_along_axis tan tanh transpose tril triu true_divide trunc where
    zeros
""".split())

# elementwise math (issue 16): NumPy's own functions are shared kernels; the special
# functions come through the `special` hook (SciPy on the CPU, cupyx.scipy.special on CUDA)
MATH_OPS = frozenset("""
    sinh cosh asinh acosh atanh exp2 log10 signbit hypot nextafter gcd lcm fmod
    bitwise_left_shift bitwise_right_shift
""".split())
SPECIAL_OPS = frozenset("""
    erfc erfinv lgamma digamma i0 polygamma igamma igammac special_zeta special_i0e
    special_i1 special_i1e special_erfcx special_ndtri special_bessel_j0 special_bessel_j1
    special_bessel_y0 special_bessel_y1 special_modified_bessel_i0 special_modified_bessel_i1
    special_modified_bessel_k0 special_modified_bessel_k1 special_scaled_modified_bessel_k0
    special_scaled_modified_bessel_k1 special_airy_ai
""".split())
SHARED_OPS = SHARED_OPS | MATH_OPS
CPU_ONLY = CPU_ONLY | SPECIAL_OPS  # (the CPU passes the hook; a bare make_kernels has none)
CUPY_NAMES = CUPY_NAMES | frozenset("""
    sinh cosh arcsinh arccosh arctanh exp2 log10 signbit hypot nextafter gcd lcm fmod
    left_shift right_shift inf nan
""".split())

# linear algebra (issue 16): the factorizations run xp.linalg (numpy.linalg, cupy.linalg);
# LU with partial pivoting and the Bunch-Kaufman LDL are written against xp itself
LINALG_OPS = frozenset("""
    det _linalg_slogdet _linalg_inv_ex _linalg_solve_ex _linalg_cholesky_ex _linalg_qr
    _geqrf _linalg_svd _linalg_eigh _linalg_lu_factor_ex _linalg_solve_triangular
    _linalg_ldl_factor_ex _linalg_ldl_solve
""".split())
SHARED_OPS = SHARED_OPS | LINALG_OPS | {"strided_view", "view_dtype"}
NUMPY_LINALG_ONLY = frozenset({"_linalg_eig"})  # (listed where xp.linalg has eig: not CuPy's)
CUPY_NAMES = CUPY_NAMES | frozenset("eye diagonal swapaxes empty linalg finfo".split())

# complex tensors and torch.fft: the view of the parts, the conjugate, the three transforms
# (xp.fft: numpy.fft's pocketfft, cupy.fft's cuFFT)
COMPLEX_OPS = frozenset({"view_as_real", "conj_physical", "_fft_c2c", "_fft_r2c",
                         "_fft_c2r"})
SHARED_OPS = SHARED_OPS | COMPLEX_OPS
SHARED_OPS = SHARED_OPS | {"variance"}  # var/std/var_mean/std_mean's fused kernel
CUPY_NAMES = CUPY_NAMES | frozenset("conj fft complex64".split())
CUPY_NAMES = CUPY_NAMES | frozenset(["copysign"])  # erf's sign, remainder's zero
CUPY_NAMES = CUPY_NAMES | frozenset(["zeros_like"])  # cholesky_ex's partial factor


def _complex_calls() -> list:
    x = _f32(3, 8)
    z = (x + 1j * _f32(3, 8, seed=1)).astype(np.complex64)
    fft = {"dims": (1,), "normalization": 1}
    return [("view_as_real", (z[:, ::2],), {}), ("conj_physical", (z,), {}),
            ("_fft_c2c", (z,), dict(fft, forward=False)),
            ("_fft_r2c", (x,), dict(fft, onesided=True)),
            ("_fft_c2r", (z[:, :5],), dict(fft, last_dim_size=8))]


def _math_calls() -> list:
    x, y = _f32(3, 4), _f32(3, 4, seed=1) + 5
    i, s = np.array([12, -7, 5, 1 << 20]), np.array([8, 3, 70, -1])
    calls = [(op, (x,), {}) for op in "sinh cosh asinh atanh exp2 log10 signbit".split()]
    calls += [("acosh", (y,), {})]
    calls += [(op, (x, y), {}) for op in "hypot nextafter fmod".split()]
    calls += [(op, (i, s), {}) for op in
              "gcd lcm bitwise_left_shift bitwise_right_shift".split()]
    calls += [("fmod", (i, s), {}), ("bitwise_right_shift", (-i, 2), {})]
    return calls


def _linalg_calls() -> list:
    rng = np.random.default_rng(3)
    a = (rng.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3)).astype(np.float32)
    spd = a @ a.transpose(0, 2, 1)
    b = rng.uniform(-1, 1, (2, 3, 2)).astype(np.float32)
    sym = a + a.transpose(0, 2, 1) - 6 * np.eye(3, dtype=np.float32)  # indefinite
    sym[:, 0, 0] = 0  # a zero pivot: a 2x2 block, an interchange
    packed = plugins.get_backend("cpu").kernels["_linalg_ldl_factor_ex"](sym, hermitian=False)
    ld, pivots = packed[:, :9].reshape(2, 3, 3), packed[:, 9:12].astype(np.int64)
    return [("det", (a,), {}), ("_linalg_slogdet", (a,), {}), ("_linalg_inv_ex", (a,), {}),
            ("_linalg_solve_ex", (a, b), {}), ("_linalg_cholesky_ex", (spd,), {"upper": False}),
            ("_linalg_qr", (a,), {"mode": "reduced"}), ("_geqrf", (a,), {}),
            ("_linalg_svd", (a,), {"full_matrices": False}),
            ("_linalg_eigh", (spd,), {"UPLO": "L"}), ("_linalg_lu_factor_ex", (a,), {}),
            ("_linalg_solve_triangular", (a, b), {"upper": True, "unitriangular": False}),
            ("_linalg_ldl_factor_ex", (sym,), {"hermitian": False}),
            ("_linalg_ldl_solve", (ld, pivots, b), {"hermitian": False}),
            ("strided_view", (_f32(3, 4),), {"shape": (2, 2), "steps": ((1, 0), (1, 1)),
                                             "start": (0, 0)}),
            ("view_dtype", (_f32(3, 4),), {"dtype": int16})]


def test_special_functions_come_through_the_hook():
    """With a `special` module, the special-function kernels run on CuPy's names as the
    CPU's do; without one there are none."""
    import scipy.special

    assert not SPECIAL_OPS & set(make_kernels(np))
    shared = make_kernels(CupyShapedNumpy(), hooks=Hooks(special=lambda: scipy.special))
    cpu = plugins.get_backend("cpu").kernels
    x, y = np.abs(_f32(3, 4)) + 0.5, np.abs(_f32(3, 4, seed=1)) + 0.5
    for op in sorted(SPECIAL_OPS):
        args = (x, y) if op in ("igamma", "igammac", "special_zeta") else (x,)
        attrs = {"n": 2} if op == "polygamma" else {}
        _assert_same(shared[op](*args, **attrs), cpu[op](*args, **attrs), op)
    lgamma = shared["lgamma"](np.array([-np.inf, 0.5], np.float16))
    assert lgamma.dtype == np.float16 and lgamma[0] == np.inf


class CupyShapedNumpy:
    """NumPy, with only the names CuPy also has: any other raises AttributeError."""

    def __getattr__(self, name: str):
        if name not in CUPY_NAMES:
            raise AttributeError(f"xp.{name} is not among the names checked in CuPy")
        return getattr(np, name)


def _imports(path: pathlib.Path) -> list[str]:
    """Every module a file imports, at any depth (relative imports resolved)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = ["ember", "backends", "xp"][:4 - node.level]
                base = ".".join(parent + ([node.module] if node.module else []))
            names.append(base)
    return names


def test_xp_imports_nothing_of_ember_but_the_contract_and_no_array_module():
    files = sorted(XP_DIR.glob("*.py"))
    assert files
    for path in files:
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "ember":
                assert name == "ember.core.backend" or name.startswith("ember.backends.xp"), \
                    f"{path.name} imports {name}"
            else:
                assert top in sys.stdlib_module_names or top == "__future__", \
                    f"{path.name} imports {name}: the array module is a parameter"


def test_make_kernels_covers_the_shared_ops():
    assert set(make_kernels(np)) == SHARED_OPS | NUMPY_LINALG_ONLY
    cpu = plugins.get_backend("cpu")
    assert set(cpu.kernels) == SHARED_OPS | NUMPY_LINALG_ONLY | CPU_ONLY


def test_xp_uses_only_names_checked_in_cupy():
    names = set()
    for path in XP_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "xp":
                names.add(node.attr)
    from ember.backends.xp.elementwise import _XP_FUNCTIONS

    names |= set(_XP_FUNCTIONS.values())
    assert names - {"errstate"} <= CUPY_NAMES


def _f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _calls():
    """(op, args, attrs): one call of every shared kernel."""
    x, y = _f32(3, 4), _f32(3, 4, seed=1) + 5
    img, w = _f32(2, 3, 6, 6), _f32(4, 3, 3, 3)
    pool = dict(kernel_size=(2, 2), stride=(2, 2), padding=(1, 1), dilation=(1, 1),
                extra=(0, 0))
    values, idx = make_kernels(np)["max_pool"](img, **pool)
    conv_attrs = dict(stride=(1, 1), padding=(1, 1), dilation=(1, 1))
    out, cols = make_kernels(np)["conv"](img, w, None, **conv_attrs)
    target = np.array([0, 3, 1])
    gates = _f32(3, 16)
    window = dict(kernel_size=(3, 3), dilation=(1, 1), padding=(1, 1), stride=(2, 2))
    calls = [(op, (x,), {}) for op in (
        "neg abs sign floor ceil round trunc relu exp log log2 log1p expm1 sqrt rsqrt sin "
        "cos tan tanh sigmoid erf asin acos atan reciprocal isnan isinf isfinite").split()]
    calls += [(op, (x, y), {}) for op in (
        "add sub mul div pow maximum minimum remainder floor_divide atan2 eq ne lt le gt "
        "ge").split()]
    calls += [(op, (x > 0, y > 0), {}) for op in
              "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor".split()]
    calls += [("logical_not", (x > 0,), {}), ("bitwise_not", (target,), {}),
              ("where", (x > 0, x, 2.0), {}), ("clamp", (x,), {"min": -0.5}),
              ("cast", (x,), {"dtype": float32})]
    calls += [(op, (x,), {"dims": (1,), "keepdim": True}) for op in
              "sum prod max min all any".split()]
    calls += [("argmax", (x,), {"dim": 1}), ("argmin", (x,), {"dim": None}),
              ("cumsum", (x,), {"dim": 0}),
              ("variance", (x,), {"dims": (0,), "correction": 1, "keepdim": False,
                                  "root": True, "own_mean": False}),
              ("topk", (x,), {"k": 2, "dim": 1}),
              ("topk", (x,), {"k": 3, "dim": 0, "largest": False}),
              ("max_min_dim", (x,), {"dim": 1, "keepdim": False, "largest": True}),
              ("max_min_dim", (x,), {"dim": 0, "keepdim": True, "largest": False}),
              ("softmax", (x,), {"dim": 1}), ("log_softmax", (x,), {"dim": 0})]
    calls += [("reshape", (x,), {"shape": (4, 3), "copy": False}),
              ("permute", (x,), {"dims": (1, 0)}), ("expand", (x[:1],), {"shape": (2, 3, 4)}),
              ("flip", (x,), {"dims": (0,)}), ("clone", (x.T,), {}),
              ("tril", (x,), {}), ("triu", (x,), {"diagonal": 1}), ("cat", (x, y), {"dim": 0}),
              ("constant_pad", (x,), {"pad": [(1, 0), (0, 2)], "value": 1.0}),
              ("full", (), {"shape": (2,), "fill_value": 3, "dtype": float32}),
              ("arange", (), {"start": 0, "end": 2, "step": 0.5, "dtype": float32})]
    calls += [("getitem", (x, target % 3), {"index": (("tensor", 0), ("int", 1))}),
              ("setitem", (x.copy(), np.float32(1), target % 3),
               {"index": (("tensor", 0),), "accumulate": True}),
              ("assign", (x.copy(), y), {}),
              ("gather", (x, np.array([[0, 0], [3, 1]])), {"dim": 1}),
              ("scatter", (x, np.array([[0, 2]]), y), {"dim": 1}),
              ("scatter_add", (x, np.array([[0, 0]]), y), {"dim": 1}),
              ("scatter_reduce", (x, np.array([[0, 0], [2, 2]]), y), {"dim": 1,
                                                                      "reduce": "prod"}),
              ("index_select", (x, target), {"dim": 1}), ("nonzero", (x > 0,), {})]
    calls += [("matmul", (x, y.T), {}), ("einsum", (x, y), {"equation": "ij,ij->i"}),
              ("linear", (x, y, y[:, 0]), {}), ("linear_backward", (x, y, _f32(3, 3)), {})]
    calls += [(op, (y / 10, x), {}) for op in
              "tanh_backward sigmoid_backward relu_backward exp_backward log_backward".split()]
    calls += [("cross_entropy", (x, target), {}),
              ("cross_entropy_backward", (x, target, np.float32(1.0)), {}),
              ("lstm_cell", (gates, gates, x), {}),
              ("lstm_cell_backward", (x, x, x, x, np.abs(gates) / 4), {})]
    calls += [("im2col", (img,), window),
              ("col2im", (make_kernels(np)["im2col"](img, **window),),
               dict(window, output_size=(6, 6))),
              ("conv", (img, w, _f32(4)), conv_attrs),
              ("conv_backward", (out, img.shape, w, cols), conv_attrs),
              ("max_pool", (img,), pool),
              ("max_pool_backward", (values, img, values, idx),
               dict(pool, input_shape=img.shape))]
    xs = [_f32(3), _f32(2, 2)]
    calls += [(op, ([a.copy() for a in xs], [a + 1 for a in xs]), {}) for op in
              "_foreach_add_ _foreach_add _foreach_sub_ _foreach_mul_ _foreach_mul "
              "_foreach_div_ _foreach_div _foreach_maximum_ _foreach_copy_".split()]
    calls += [(op, ([a.copy() for a in xs], xs, xs), {"value": 0.5}) for op in
              ("_foreach_addcmul_", "_foreach_addcdiv_")]
    calls += [("_foreach_lerp_", ([a.copy() for a in xs], xs), {"weight": 0.3})]
    calls += [(op, ([np.abs(a) for a in xs],), {}) for op in
              "_foreach_sqrt _foreach_sqrt_ _foreach_neg _foreach_neg_ _foreach_zero_".split()]
    half = y.astype(numpy_dtype(bfloat16))
    calls += [("opmath_axpy", (x, y), {"alpha": 0.3}),
              ("opmath_axpy", (half, half[0]), {"alpha": -0.3}),
              ("opmath_axpy", (x, 2.5), {"alpha": 3})]
    calls += [(op, args, {"value": 0.7}) for op in ("opmath_addcmul", "opmath_addcdiv")
              for args in ((x, x, y), (half, half, half[:1]))]
    calls += [("opmath_lerp", (x, y, w), {}) for w in (0.3, 0.7, x)] + \
        [("opmath_lerp", (half, half, 0.7), {})]
    calls += [("_fused_sgd_", ([a.copy() for a in xs], xs, [a.copy() for a in xs]),
               dict(lr=0.1, momentum=0.9, dampening=0, weight_decay=0.01, nesterov=True,
                    maximize=False))]
    return calls


def _copied(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value


def _assert_same(got, want, what):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), what
        for g, w in zip(got, want):
            _assert_same(g, w, what)
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), what
        assert got.dtype == want.dtype and got.shape == want.shape, what
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=what)
    else:  # None, or a scalar or shape passed in
        assert got == want, what


def test_every_shared_kernel_runs_on_cupy_names_as_on_the_cpu_backend():
    """Each kernel, built for an array module with only CuPy's names (and so without its
    CPU hooks), computes what the CPU backend's does, inputs written in place included."""
    calls = _calls() + _math_calls() + _linalg_calls() + _complex_calls()
    assert {op for op, _, _ in calls} == SHARED_OPS
    shared = make_kernels(CupyShapedNumpy())
    cpu = plugins.get_backend("cpu").kernels
    for op, args, attrs in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no errstate: NumPy warns
            ours_args, cpu_args = _copied(list(args)), _copied(list(args))
            ours = shared[op](*ours_args, **attrs)
            want = cpu[op](*cpu_args, **attrs)
        _assert_same(ours, want, op)
        _assert_same(ours_args, cpu_args, f"{op} (its inputs afterwards)")


def test_half_precision_sums_accumulate_in_float32():
    x = np.array([256, 1, 1, 1, 1, 1, 1], numpy_dtype(bfloat16))  # in bfloat16, 256 + 1 == 256
    total = make_kernels(np)["sum"](x)
    assert total.dtype == x.dtype and float(total) == 262


def test_erf_without_the_hook_is_cephes_accurate_and_the_hook_is_exact():
    x = np.concatenate([np.linspace(-7, 7, 2001), np.geomspace(1e-300, 1.0, 200)])
    exact = np.array([math.erf(v) for v in x])
    polynomial = make_kernels(np)["erf"](x)
    np.testing.assert_allclose(polynomial, exact, rtol=5e-16, atol=0)
    hooked = make_kernels(np, hooks=Hooks(exact_erf=np.vectorize(math.erf)))["erf"](x)
    np.testing.assert_array_equal(hooked, exact)


def test_float32_erf_is_correctly_rounded_with_exact_zeros_and_limits():
    x = np.concatenate([np.linspace(-6, 6, 100_001, dtype=np.float32),
                        np.array([0.0, -0.0, 1e-45, -1e-30, np.inf, -np.inf, np.nan], np.float32)])
    got = make_kernels(np)["erf"](x)
    want = np.array([math.erf(v) for v in x.astype(np.float64)]).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)  # NaN compares equal to NaN here
    assert np.signbit(got[-6]) and not np.signbit(got[-7])  # erf(-0.0) is -0.0


def test_scatter_add_and_accumulating_setitem_add_every_repeated_index():
    k = make_kernels(np)
    out = k["scatter_add"](np.zeros((2, 3)), np.array([[1, 1, 1], [0, 2, 0]]),
                           np.ones((2, 3)), dim=1)
    np.testing.assert_array_equal(out, [[0, 3, 0], [2, 0, 1]])
    x = np.zeros(3)
    k["setitem"](x, np.ones(4), np.array([0, 0, 2, 0]), index=(("tensor", 0),),
                 accumulate=True)
    np.testing.assert_array_equal(x, [3, 0, 1])


def test_reshape_without_a_view_raises_view_not_possible():
    with pytest.raises(ViewNotPossible):
        make_kernels(np)["reshape"](np.zeros((3, 4)).T, (12,), copy=False)


def test_writes_into_read_only_buffers_raise_the_overlap_error():
    hooks = Hooks(read_only=lambda buffer: not buffer.flags.writeable)
    k = make_kernels(np, hooks=hooks)
    expanded = np.broadcast_to(np.zeros(3), (2, 3))
    for write in (lambda: k["add"](expanded, 1.0, out=expanded),
                  lambda: k["assign"](expanded, np.ones((2, 3))),
                  lambda: k["setitem"](expanded, np.ones(3), index=(("int", 0),))):
        with pytest.raises(RuntimeError, match="more than one element"):
            write()
    assert "clone()" in OVERLAP


def test_hooks_replace_what_they_name():
    seen = []

    def product(a, b):
        seen.append("matmul")
        return np.matmul(a, b)

    def axpy(alpha, x, y):
        seen.append("axpy")
        return False  # "does not apply": the shared code does the update

    def call(f, args, out):
        seen.append("call")
        return np.asarray(f(*args, out=out))

    k = make_kernels(np, hooks=Hooks(matmul=product, axpy=axpy, call_elementwise=call,
                                     elementwise={"relu": lambda x, out=None: x * 0 + 7}))
    x = np.ones((2, 2), np.float32)
    k["matmul"](x, x)
    k["linear"](x, x)
    k["add"](x, x)
    np.testing.assert_array_equal(k["relu"](x), np.full((2, 2), 7))
    p = [x.copy()]
    k["_foreach_add_"](p, [x], alpha=-0.5)
    np.testing.assert_array_equal(p[0], np.full((2, 2), 0.5))
    assert seen == ["matmul", "matmul", "call", "call", "axpy"]
