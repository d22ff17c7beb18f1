"""ember: a define-by-run deep-learning framework with PyTorch's API and pluggable
hardware backends.

    import ember
    x = ember.randn(3, 4, requires_grad=True)
    (x @ x.T).sum().backward()

The names below are ember's public API: PyTorch's names, each op's function taken from
its one declaration (ember/core/ops). `ember.nn`, `ember.optim` and the other
subpackages load on first use.
"""

from __future__ import annotations

import builtins as _builtins
import math as _math
from types import ModuleType as _ModuleType
from typing import Any

from ember import (
    _early,  # noqa: F401 - first: before anything loads NumPy (see the module)
    _linalg_utils,  # noqa: F401 - Tensor.symeig & co (PyTorch's removal errors)
    autograd,
    utils,
)
from ember.core import sparse_compressed_ops as _sparse_compressed_ops  # noqa: F401 - (methods)
from ember.core.anomaly_mode import (
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)
from ember.core.backend import (
    OutOfMemoryError,
    get_float32_matmul_precision,
    set_float32_matmul_precision,
)
from ember.core.backend import api_name as _api_name
from ember.core.creation import (
    Generator,
    arange,
    as_tensor,
    default_generator,
    empty,
    empty_like,
    empty_permuted,
    empty_strided,
    eye,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    initial_seed,
    linspace,
    logspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    scalar_tensor,
    seed,
    set_rng_state,
    tensor,
    zeros,
    zeros_like,
)
from ember.core.creation import deprecated_range as range  # noqa: A004 - PyTorch's name
from ember.core.determinism import (
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode,
    use_deterministic_algorithms,
)
from ember.core.device import device
from ember.core.device import device as _Device
from ember.core.dlpack import from_dlpack, to_dlpack
from ember.core.dtype import (
    bfloat16,
    can_cast,
    complex32,
    complex64,
    complex128,
    dtype,
    float4_e2m1fn_x2,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    qint8,
    qint32,
    quint4x2,
    quint8,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ember.core.dtype import bool_ as bool  # noqa: A004 - PyTorch's name
from ember.core.errors import is_warn_always_enabled, set_warn_always
from ember.core.from_memory import asarray, from_file, frombuffer
from ember.core.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.core.legacy_types import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    set_default_tensor_type,
)
from ember.core.memory_format import (  # SHAPE family
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from ember.core.ops.complex import (
    angle,
    complex,
    conj,
    conj_physical,
    imag,
    is_complex,
    is_conj,
    polar,
    real,
    resolve_conj,
    view_as_complex,
    view_as_real,
)
from ember.core.ops.elementwise import (
    abs,
    absolute,
    acos,
    add,
    addcdiv,
    addcmul,
    allclose,
    arccos,
    arcsin,
    arctan,
    arctan2,
    asin,
    atan,
    atan2,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    ceil,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    cos,
    div,
    divide,
    eq,
    equal,
    erf,
    exp,
    expm1,
    fix,
    floor,
    floor_divide,
    ge,
    greater,
    greater_equal,
    gt,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    lerp,
    less,
    less_equal,
    log,
    log1p,
    log2,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    maximum,
    minimum,
    mul,
    multiply,
    ne,
    neg,
    negative,
    not_equal,
    positive,
    pow,
    reciprocal,
    relu,
    remainder,
    result_type,
    round,
    rsqrt,
    rsub,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    sub,
    subtract,
    tan,
    tanh,
    true_divide,
    trunc,
    where,
)
from ember.core.ops.elementwise_math import (
    acosh,
    arccosh,
    arcsinh,
    arctanh,
    asinh,
    atanh,
    bitwise_left_shift,
    bitwise_right_shift,
    copysign,
    cosh,
    deg2rad,
    digamma,
    erfc,
    erfinv,
    exp2,
    float_power,
    fmax,
    fmin,
    fmod,
    frac,
    frexp,
    gcd,
    hardshrink,
    heaviside,
    hypot,
    i0,
    igamma,
    igammac,
    isneginf,
    isposinf,
    isreal,
    lcm,
    ldexp,
    lgamma,
    log10,
    logaddexp2,
    logit,
    mvlgamma,
    nan_to_num,
    nextafter,
    polygamma,
    prelu,
    rad2deg,
    sgn,
    signbit,
    sinc,
    sinh,
    xlogy,
)

# linear algebra: factorizations (family: linalg)
from ember.core.ops.factorizations import (
    cholesky,
    cholesky_inverse,
    cholesky_solve,
    det,
    geqrf,
    inverse,
    logdet,
    lu,
    lu_solve,
    lu_unpack,
    matrix_exp,
    matrix_power,
    orgqr,
    ormqr,
    pca_lowrank,
    pinverse,
    qr,
    slogdet,
    svd,
    svd_lowrank,
    triangular_solve,
    vander,
)
from ember.core.ops.foreach import (
    _foreach_abs,
    _foreach_abs_,
    _foreach_acos,
    _foreach_acos_,
    _foreach_add,
    _foreach_add_,
    _foreach_addcdiv,
    _foreach_addcdiv_,
    _foreach_addcmul,
    _foreach_addcmul_,
    _foreach_asin,
    _foreach_asin_,
    _foreach_atan,
    _foreach_atan_,
    _foreach_ceil,
    _foreach_ceil_,
    _foreach_clamp_max,
    _foreach_clamp_max_,
    _foreach_clamp_min,
    _foreach_clamp_min_,
    _foreach_clone,
    _foreach_copy_,
    _foreach_cos,
    _foreach_cos_,
    _foreach_cosh,
    _foreach_cosh_,
    _foreach_div,
    _foreach_div_,
    _foreach_erf,
    _foreach_erf_,
    _foreach_erfc,
    _foreach_erfc_,
    _foreach_exp,
    _foreach_exp_,
    _foreach_expm1,
    _foreach_expm1_,
    _foreach_floor,
    _foreach_floor_,
    _foreach_frac,
    _foreach_frac_,
    _foreach_lerp,
    _foreach_lerp_,
    _foreach_lgamma,
    _foreach_lgamma_,
    _foreach_log,
    _foreach_log1p,
    _foreach_log1p_,
    _foreach_log2,
    _foreach_log2_,
    _foreach_log10,
    _foreach_log10_,
    _foreach_log_,
    _foreach_max,
    _foreach_maximum,
    _foreach_maximum_,
    _foreach_minimum,
    _foreach_minimum_,
    _foreach_mul,
    _foreach_mul_,
    _foreach_neg,
    _foreach_neg_,
    _foreach_norm,
    _foreach_pow,
    _foreach_pow_,
    _foreach_reciprocal,
    _foreach_reciprocal_,
    _foreach_round,
    _foreach_round_,
    _foreach_rsqrt,
    _foreach_rsqrt_,
    _foreach_sigmoid,
    _foreach_sigmoid_,
    _foreach_sign,
    _foreach_sign_,
    _foreach_sin,
    _foreach_sin_,
    _foreach_sinh,
    _foreach_sinh_,
    _foreach_sqrt,
    _foreach_sqrt_,
    _foreach_sub,
    _foreach_sub_,
    _foreach_tan,
    _foreach_tan_,
    _foreach_tanh,
    _foreach_tanh_,
    _foreach_trunc,
    _foreach_trunc_,
    _foreach_zero_,
    _fused_sgd_,
)
from ember.core.ops.hashing import hash_tensor
from ember.core.ops.indexing import (
    argwhere,
    chunk,
    gather,
    index_add,
    index_copy,
    index_fill,
    index_put,
    index_reduce,
    index_select,
    masked_fill,
    masked_scatter,
    masked_select,
    narrow,
    nonzero,
    nonzero_static,
    put,
    scatter,
    scatter_add,
    scatter_reduce,
    select,
    split,
    take,
    take_along_dim,
    tensor_split,
    unbind,
)
from ember.core.ops.linalg import (
    addbmm,
    addmm,
    addmv,
    addr,
    baddbmm,
    bmm,
    chain_matmul,
    cross,
    dot,
    einsum,
    ger,
    inner,
    kron,
    matmul,
    mm,
    mv,
    outer,
    tensordot,
    vdot,
)
from ember.core.ops.lobpcg import lobpcg
from ember.core.ops.nn import (
    adaptive_avg_pool1d,
    adaptive_max_pool1d,
    affine_grid_generator,
    avg_pool1d,
    constant_pad_nd,
    conv1d,
    conv2d,
    conv3d,
    conv_tbc,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    convolution,
    grid_sampler,
    grid_sampler_2d,
    grid_sampler_3d,
    layer_norm,
    log_softmax,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool3d,
    softmax,
)
from ember.core.ops.norms import (
    _weight_norm,
    cdist,
    corrcoef,
    cov,
    dist,
    frobenius_norm,
    native_norm,
    norm_except_dim,
    nuclear_norm,
)

# SHAPE family: views, splits, joins, diagonals, index grids, predicates
from ember.core.ops.predicates import (
    adjoint,
    detach,
    get_device,
    is_distributed,
    is_floating_point,
    is_inference,
    is_neg,
    is_nonzero,
    is_same_size,
    is_signed,
    numel,
    resolve_neg,
)
from ember.core.ops.rearrange import (
    alias_copy,
    as_strided,
    as_strided_copy,
    as_strided_scatter,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    cartesian_prod,
    column_stack,
    combinations,
    detach_copy,
    diag,
    diag_embed,
    diagflat,
    diagonal_copy,
    diagonal_scatter,
    dsplit,
    dstack,
    expand_copy,
    fliplr,
    flipud,
    hsplit,
    meshgrid,
    narrow_copy,
    permute_copy,
    ravel,
    repeat_interleave,
    roll,
    rot90,
    row_stack,
    select_copy,
    select_scatter,
    slice_copy,
    slice_inverse,
    slice_scatter,
    split_copy,
    split_with_sizes,
    split_with_sizes_copy,
    squeeze_copy,
    t_copy,
    transpose_copy,
    tril_indices,
    triu_indices,
    unbind_copy,
    unfold_copy,
    unravel_index,
    unsafe_chunk,
    unsafe_split,
    unsafe_split_with_sizes,
    unsqueeze_copy,
    view_copy,
    vsplit,
)
from ember.core.ops.reduction import (
    all,
    amax,
    amin,
    aminmax,
    any,
    argmax,
    argmin,
    count_nonzero,
    cumsum,
    logsumexp,
    max,
    mean,
    min,
    nanmean,
    nansum,
    norm,
    prod,
    renorm,
    std,
    std_mean,
    sum,
    topk,
    trace,
    var,
    var_mean,
)
from ember.core.ops.scans import (  # the REDUCE family
    cummax,
    cummin,
    cumprod,
    cumulative_trapezoid,
    diff,
    gradient,
    logcumsumexp,
    trapezoid,
    trapz,
)
from ember.core.ops.search import (  # the REDUCE family
    bincount,
    bucketize,
    histc,
    histogram,
    histogramdd,
    isin,
    searchsorted,
    unique,
    unique_consecutive,
)
from ember.core.ops.segments import segment_reduce
from ember.core.ops.shape import (
    broadcast_shapes,
    broadcast_tensors,
    broadcast_to,
    cat,
    clone,
    concat,
    concatenate,
    diagonal,  # SHAPE family
    flatten,
    flip,
    hstack,
    moveaxis,
    movedim,
    permute,
    reshape,
    squeeze,
    stack,
    swapaxes,
    swapdims,
    t,
    tile,
    transpose,
    tril,
    triu,
    unflatten,
    unsqueeze,
    vstack,
)
from ember.core.ops.sorting import (
    argsort,
    kthvalue,
    median,
    mode,
    msort,
    nanmedian,
    nanquantile,
    quantile,
    sort,
)
from ember.core.ops.spectral import (
    bartlett_window,
    blackman_window,
    hamming_window,
    hann_window,
    istft,
    kaiser_window,
    stft,
)
from ember.core.ops.writes import (
    bernoulli,
    binomial,
    fill,
    fill_,
    multinomial,
    normal,
    poisson,
    zero_,
)
from ember.core.placement import get_default_device, set_default_device
from ember.core.printing import get_printoptions, set_printoptions
from ember.core.quantized import (
    _make_per_channel_quantized_tensor,
    _make_per_tensor_quantized_tensor,
    dequantize,
    fake_quantize_per_channel_affine,
    fake_quantize_per_tensor_affine,
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qscheme,
    quantize_per_channel,
    quantize_per_tensor,
)
from ember.core.quantized_functions import quantize_per_tensor_dynamic, quantized_batch_norm
from ember.core.sparse_compressed import (
    sparse_bsc_tensor,
    sparse_bsr_tensor,
    sparse_compressed_tensor,
    sparse_csc_tensor,
    sparse_csr_tensor,
)
from ember.core.sparse_coo import (
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_coo_tensor,
    sparse_csc,
    sparse_csr,
)
from ember.core.sparse_ops import hspmm, smm, spmm, sspaddmm
from ember.core.storage import TypedStorage, UntypedStorage, layout, storage_type, strided
from ember.core.symbolic import (
    SymBool,
    SymFloat,
    SymInt,
    sym_float,
    sym_int,
    sym_ite,
    sym_max,
    sym_min,
    sym_not,
    sym_sqrt,
    sym_sum,
)
from ember.core.tensor import Size, Tensor
from ember.core.threads import (
    get_num_interop_threads,
    get_num_threads,
    set_num_interop_threads,
    set_num_threads,
)
from ember.core.typeinfo import finfo, iinfo
from ember.serialization import load, save

# the legacy storage classes: `torch.FloatStorage(3)` is a TypedStorage of float32
FloatStorage = storage_type(float32)
DoubleStorage = storage_type(float64)
HalfStorage = storage_type(float16)
BFloat16Storage = storage_type(bfloat16)
LongStorage = storage_type(int64)
IntStorage = storage_type(int32)
ShortStorage = storage_type(int16)
CharStorage = storage_type(int8)
ByteStorage = storage_type(uint8)
BoolStorage = storage_type(bool)

half, double, long, short = float16, float64, int64, int16
float = float32  # noqa: A001 - PyTorch's alias
cfloat, cdouble, chalf = complex64, complex128, complex32
int = int32  # noqa: A001

# PyTorch's numeric constants (`torch.pi`, `-torch.inf`, `x[:, torch.newaxis]`)
pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan
newaxis = None

__version__ = "0.1.0"


def is_tensor(obj: object) -> bool:
    """True if `obj` is an ember Tensor."""
    return isinstance(obj, Tensor)


def is_storage(obj: object) -> bool:
    """True if `obj` is a storage (`untyped_storage()`, `storage()`)."""
    return isinstance(obj, TypedStorage)


def typename(obj: object) -> str:
    """The type of `obj` as a string: a tensor's legacy type (`'torch.LongTensor'`), else
    the module-qualified name of the object (or of its class)."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def set_flush_denormal(mode: bool) -> bool:
    """Whether denormal floats can be flushed to zero: PyTorch's answer on CPUs without
    the control, False, since ember's NumPy kernels cannot set it."""
    return False


def _assert(condition: object, message: str) -> None:
    """`assert condition, message` as a function: PyTorch's `torch._assert`, which model
    code (timm, torchvision) calls to check input shapes."""
    assert condition, message


# what this build has (PyTorch's build flags): LAPACK through NumPy / SciPy, FFTs through
# NumPy's pocketfft; no MKL and no OpenMP thread pool of ember's own
has_lapack = has_spectral = True
has_mkl = has_openmp = False


def compiled_with_cxx11_abi() -> bool:
    """Whether PyTorch was built with _GLIBCXX_USE_CXX11_ABI=1: True, as PyTorch's wheels
    are (ember builds no C++ extensions; programs check it to pick prebuilt ones)."""
    return True


def init_num_threads() -> None:
    """Initialize the thread pool's number of threads (nothing to do: ember's CPU kernels
    take their threads from NumPy's BLAS and numba, set by `set_num_threads`)."""


def is_vulkan_available() -> bool:
    """False: ember has no Vulkan backend."""
    return False


def get_device_module(device: _Device | str | None = None) -> _ModuleType:
    """Returns the module associated with a given device (e.g., ``torch.device('cuda')``,
    ``"mtia:0"``, ``"xpu"``, ...). If no device is given, return the module for the
    current accelerator or CPU if none is present."""
    from ember.core.dtype import API_NAME

    if isinstance(device, (str, _Device)):
        name = _Device(device).type
    elif device is None:
        current = __getattr__("accelerator").current_accelerator()
        name = "cpu" if current is None else current.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect {API_NAME}.device, "
                           "str, or None")
    try:
        module = globals()[name] if name in globals() else __getattr__(name)
    except AttributeError:
        module = None
    if not isinstance(module, _ModuleType):
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered "
                           f"as '{API_NAME}.{name}'.")
    return module


def detach_(input: Tensor) -> Tensor:
    """Detaches `input` from the graph that created it, making it a leaf, in place."""
    return input.detach_()


def resize_as_(input: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    """Resizes `input` to the size of `the_template`, in place (``Tensor.resize_as_``)."""
    return input.resize_as_(the_template, memory_format=memory_format)


def devices() -> list:
    """Every device that can be used now, e.g. `[device(type='cpu'), ...]`."""
    from ember.core import scheduler

    out = []
    for backend in sorted(scheduler.available_backends(), key=lambda b: b.name != "cpu"):
        if backend.name == "cpu":
            out.append(device("cpu"))
        else:
            # (builtins.range: `range` here is torch.range)
            out.extend(device(backend.name, i)
                       for i in _builtins.range(backend.device_count()))
    return out


_SUBMODULES = {"nn", "optim", "jit", "onnx", "exporters", "testing", "demo", "cli", "amp",
               "cuda", "cpu", "profiler", "accelerator", "backends", "distributions",
               "distributed", "hub"}
_FROM_AMP = {"autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype",
             "is_autocast_available", "clear_autocast_cache", "is_autocast_cache_enabled"}
# PyTorch's top-level autocast state setters (not in torch.amp)
_FROM_AUTOCAST_MODE = {"set_autocast_enabled", "set_autocast_dtype",
                       "set_autocast_cache_enabled", "autocast_increment_nesting",
                       "autocast_decrement_nesting"}
# PyTorch's deprecated top-level getters (they warn)
_FROM_AMP_DEPRECATED = {"is_autocast_cpu_enabled", "get_autocast_cpu_dtype",
                        "get_autocast_gpu_dtype", "set_autocast_cpu_enabled",
                        "set_autocast_cpu_dtype", "set_autocast_gpu_dtype"}
_FROM_SCHEDULING = {"plan", "Plan"}  # auto-scheduling: imported on first use
_FROM_COMPILED = {"compile"}  # ember.compile: kernel replay (ember.jit.compiled)
_SUBMODULES = _SUBMODULES | {"scheduling"}  # ember.scheduling.learn & co
_SUBMODULES = _SUBMODULES | {"special", "random"}  # ember.special: torch.special's functions
_SUBMODULES = _SUBMODULES | {"return_types"}  # the named results: torch.return_types
# nnmisc family (issue 16): torch.batch_norm, torch.kl_div, torch.lstm ... with ATen's
# signatures, from ember.nn.torch_functions (imported on first use: ember.nn is heavy)
_FROM_NN_TORCH_FUNCTIONS = {
    "batch_norm", "instance_norm", "group_norm", "rms_norm", "native_batch_norm",
    "native_group_norm", "native_layer_norm", "native_dropout", "dropout", "dropout_",
    "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
    "feature_alpha_dropout", "feature_alpha_dropout_", "embedding", "celu", "celu_", "selu",
    "selu_", "threshold", "threshold_", "rrelu", "rrelu_", "binary_cross_entropy_with_logits",
    "cosine_embedding_loss", "hinge_embedding_loss", "kl_div", "margin_ranking_loss",
    "poisson_nll_loss", "triplet_margin_loss", "ctc_loss", "lstm", "gru", "rnn_tanh",
    "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
    "batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats",
    "batch_norm_gather_stats_with_counts", "batch_norm_backward_reduce",
    "batch_norm_backward_elemt", "batch_norm_update_stats", "embedding_bag",
    "embedding_renorm_", "cosine_similarity", "pairwise_distance", "pdist", "pixel_shuffle",
    "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "bilinear",
}
_SUBMODULES = _SUBMODULES | {"linalg"}  # ember.linalg, as torch.linalg
_SUBMODULES = _SUBMODULES | {"version"}  # torch.version.cuda & co
_SUBMODULES = _SUBMODULES | {"multiprocessing"}  # torch.multiprocessing: tensors in shared memory
_SUBMODULES = _SUBMODULES | {"func"}  # torch.func.functional_call
_SUBMODULES = _SUBMODULES | {"signal"}  # torch.signal.windows: SciPy-style windows
_SUBMODULES = _SUBMODULES | {"sparse"}  # torch.sparse.mm & co (ember.core.sparse_ops)
_SUBMODULES = _SUBMODULES | {"compiler", "_dynamo", "_inductor"}  # torch.compiler.reset() & co
_SUBMODULES = _SUBMODULES | {"fft"}  # torch.fft: discrete Fourier transforms
_SUBMODULES = _SUBMODULES | {"fx"}  # torch.fx: symbolic tracing, Graph, GraphModule
_SUBMODULES = _SUBMODULES | {"library"}  # torch.library: Python custom operators
_SUBMODULES = _SUBMODULES | {"ao", "quantization"}  # torch.ao.quantization & its old name
_SUBMODULES = _SUBMODULES | {"overrides", "_C", "_tensor"}  # __torch_function__
_SUBMODULES = _SUBMODULES | {"masked"}  # torch.masked: mask= reductions, MaskedTensor
_SUBMODULES = _SUBMODULES | {"nested"}  # torch.nested: nested tensors of the strided layout
_SUBMODULES = _SUBMODULES | {"xpu", "mps", "mtia"}  # absent devices' probes: torch.xpu & co
_SUBMODULES = _SUBMODULES | {"export"}  # torch.export: ExportedProgram, save/load, Dim
_SUBMODULES = _SUBMODULES | {"quasirandom"}  # torch.quasirandom.SobolEngine
_SUBMODULES = _SUBMODULES | {"functional", "storage"}  # torch.functional, torch.storage
_SUBMODULES = _SUBMODULES | {"types"}  # torch.types: Device, Number & co
_SUBMODULES = _SUBMODULES | {"futures", "__future__"}  # torch.futures, torch.__future__
_FROM_JIT_SCRIPT = {"fork", "wait", "Future"}  # torch.fork & co: TorchScript's futures


# PyTorch's deprecated build flags: the module and function each one now points to
_DEPRECATED_BUILD_FLAGS = {"has_cuda": ("cuda", "is_built"), "has_cudnn": ("cudnn", "is_available"),
                           "has_mps": ("mps", "is_built"), "has_mkldnn": ("mkldnn", "is_available")}


def _deprecated_build_flag(name: str) -> bool:
    import importlib
    import warnings

    from ember.core.dtype import API_NAME

    module, function = _DEPRECATED_BUILD_FLAGS[name]
    warnings.warn(f"'{name}' is deprecated, please use '{API_NAME}.backends.{module}.{function}()'",
                  UserWarning, stacklevel=3)
    if module == "mkldnn":  # ember has no oneDNN
        return False
    return getattr(importlib.import_module(f"ember.backends.{module}"), function)()


_FROM_GAMMA_SAMPLING = {"_standard_gamma": "standard_gamma",
                        "_sample_dirichlet": "sample_dirichlet"}
_REMOVED_LINALG = ("symeig", "solve", "eig", "matrix_rank", "lstsq")


def __getattr__(name: str):
    """`ember.nn`, `ember.optim` ... import on first use (keeps `import ember` fast)."""
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"ember.{name}")
    if name in _FROM_AMP:  # torch.autocast & co
        return getattr(importlib.import_module("ember.amp"), name)
    if name in _FROM_AUTOCAST_MODE:
        return getattr(importlib.import_module("ember.amp.autocast_mode"), name)
    if name in _FROM_AMP_DEPRECATED:
        return getattr(importlib.import_module("ember.amp.deprecated"), name)
    if name in _FROM_SCHEDULING:
        return getattr(importlib.import_module("ember.scheduling"), name)
    if name in _FROM_COMPILED:
        return getattr(importlib.import_module("ember.jit.compiled"), name)
    if name in _FROM_NN_TORCH_FUNCTIONS:
        return getattr(importlib.import_module("ember.nn.torch_functions"), name)
    if name == "ops":  # torch.ops.mylib.foo: the operators ember.library registered
        return importlib.import_module("ember.library.registry").ops
    if name in ("PyTorchFileReader", "PyTorchFileWriter"):  # torch.save's zip records
        return getattr(importlib.import_module("ember.stream_file"), name)
    if name in ("ScriptModule", "ScriptMethod", "ScriptFunction"):  # torch._C's classes
        return getattr(importlib.import_module("ember._C"), name)
    if name in ("Event", "Stream"):  # torch.Event, torch.Stream: the device-generic ones
        return getattr(importlib.import_module("ember.event"), name)
    if name in _DEPRECATED_BUILD_FLAGS:  # torch.has_cuda & co: warn, then answer
        return _deprecated_build_flag(name)
    if name in ("cond", "while_loop"):  # torch.cond, torch.while_loop: run eagerly
        return getattr(importlib.import_module("ember.control_flow"), name)
    if name in _FROM_JIT_SCRIPT:  # (ember runs a forked call at once)
        return getattr(importlib.import_module("ember.jit.script"), name)
    if name == "vmap":  # torch.vmap, the same as torch.func.vmap
        return importlib.import_module("ember.func").vmap
    if name in _FROM_GAMMA_SAMPLING:  # torch._standard_gamma, torch._sample_dirichlet
        return getattr(importlib.import_module("ember.distributions.gamma_sampling"),
                       _FROM_GAMMA_SAMPLING[name])
    if name in _REMOVED_LINALG:  # torch.symeig & co: PyTorch 1.9's, removed with an error
        return getattr(importlib.import_module("ember._linalg_utils"), name)
    if name == "__config__":
        return importlib.import_module("ember.__config__")
    raise AttributeError(f"module '{_api_name()}' has no attribute {name!r}")


__all__ = [
    # tensors, dtypes, devices
    "Tensor", "Size", "dtype", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor",
    "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor",
    "device", "is_tensor", "devices", "from_dlpack", "to_dlpack",
    "SymInt", "SymFloat", "SymBool", "sym_int", "sym_float", "sym_max", "sym_min", "sym_not",
    "sym_ite", "sym_sum", "sym_sqrt",
    "OutOfMemoryError",
    "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32",
    "float64", "half", "double", "long", "short", "float", "int", "complex64", "complex128",
    "cfloat", "cdouble", "complex32", "chalf", "float8_e4m3fn", "float8_e5m2",
    "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
    # quantized tensors (ember.core.quantized)
    "qint8", "quint8", "qint32", "quint4x2", "qscheme", "per_tensor_affine",
    "per_channel_affine", "per_tensor_symmetric", "per_channel_symmetric",
    "per_channel_affine_float_qparams", "quantize_per_tensor", "quantize_per_channel",
    "quantize_per_tensor_dynamic", "quantized_batch_norm",
    "dequantize", "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine",
    "_make_per_tensor_quantized_tensor", "_make_per_channel_quantized_tensor",
    "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    "set_warn_always", "is_warn_always_enabled", "set_deterministic_debug_mode",
    "get_deterministic_debug_mode", "has_lapack", "has_spectral", "has_mkl", "has_openmp",
    "is_vulkan_available", "get_device_module", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "get_default_dtype", "set_default_dtype", "promote_types", "can_cast", "result_type",
    "get_default_device", "set_default_device", "get_float32_matmul_precision",
    "set_float32_matmul_precision",
    # autograd
    "autograd", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
    "is_grad_enabled", "is_inference_mode_enabled",
    # factories and random numbers
    "tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "from_file",
    "empty_strided", "empty_permuted", "range", "set_default_tensor_type", "typename",
    "is_storage", "set_flush_denormal", "pi", "e", "inf", "nan", "newaxis", "zeros", "ones",
    "empty", "full", "zeros_like",
    "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace", "eye", "rand",
    "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli",
    "multinomial",
    "Generator", "default_generator", "manual_seed", "initial_seed", "seed",
    "get_rng_state", "set_rng_state",
    # printing, threads, dtype limits
    "set_printoptions", "get_printoptions", "set_num_threads", "get_num_threads",
    "init_num_threads", "compiled_with_cxx11_abi", "TypedStorage", "UntypedStorage",
    "FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage", "LongStorage",
    "IntStorage", "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage",
    "set_num_interop_threads", "get_num_interop_threads", "finfo", "iinfo",
    # elementwise
    "abs", "absolute", "neg", "negative", "positive", "sign", "floor", "ceil", "trunc",
    "fix", "round", "relu", "exp", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin",
    "cos", "tan", "tanh", "sigmoid", "erf", "asin", "arcsin", "acos", "arccos", "atan",
    "arctan", "reciprocal", "square", "logaddexp", "add", "sub", "subtract", "rsub", "mul",
    "multiply",
    "div", "divide", "true_divide", "floor_divide", "remainder", "pow", "maximum", "minimum",
    "atan2", "lerp", "addcmul", "addcdiv", "clamp", "clip", "clamp_min", "clamp_max", "where",
    "eq", "ne", "not_equal", "lt", "less", "le", "less_equal", "gt", "greater", "ge",
    "greater_equal", "equal", "allclose", "isclose", "isnan", "isinf", "isfinite",
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "fill_", "fill", "zero_",
    "scalar_tensor", "detach_", "resize_as_",
    # elementwise math (issue 16)
    "arctan2", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh",
    "exp2", "log10", "erfc", "erfinv", "lgamma", "digamma", "i0", "polygamma", "signbit",
    "fmod", "hypot", "nextafter", "igamma", "igammac", "gcd", "lcm", "bitwise_left_shift",
    "bitwise_right_shift", "deg2rad", "rad2deg", "frac", "sinc", "sgn", "logit", "nan_to_num",
    "isposinf", "isneginf", "isreal", "mvlgamma", "frexp", "copysign", "heaviside", "logaddexp2",
    "xlogy", "fmax", "fmin", "float_power", "ldexp", "hardshrink", "prelu",
    # reductions
    "sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "topk", "all", "any",
    "count_nonzero", "var", "std", "var_mean", "std_mean", "logsumexp", "norm", "cumsum",
    # shapes, views and joins
    "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "permute", "transpose",
    "swapaxes", "swapdims", "t", "movedim", "moveaxis", "broadcast_to", "broadcast_tensors",
    "broadcast_shapes",
    "tile", "flip", "tril", "triu", "clone", "cat", "concat", "concatenate", "stack",
    "hstack", "vstack",
    # indexing
    "narrow", "select", "unbind", "split", "chunk", "tensor_split", "gather", "scatter",
    "scatter_add", "index_select", "index_fill", "index_add", "masked_fill", "masked_select",
    "nonzero", "take_along_dim",
    # linear algebra
    "matmul", "mm", "bmm", "mv", "dot", "outer", "ger", "addmm", "einsum",
    # linear algebra (family: linalg)
    "addbmm", "addmv", "addr", "baddbmm", "chain_matmul", "cross", "inner", "kron",
    "tensordot", "vdot", "cdist", "cholesky", "cholesky_inverse", "cholesky_solve",
    "corrcoef", "cov", "det", "dist", "frobenius_norm", "inverse", "logdet", "lu", "lu_solve",
    "lu_unpack", "matrix_exp", "matrix_power", "nuclear_norm", "pinverse", "qr", "slogdet",
    "norm_except_dim", "_weight_norm", "native_norm", "lobpcg",
    "svd", "triangular_solve", "geqrf", "orgqr", "ormqr",
    "svd_lowrank", "pca_lowrank", "vander",
    # neural-network ops
    "conv1d", "conv2d", "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool1d",
    "adaptive_avg_pool1d", "constant_pad_nd", "layer_norm", "softmax", "log_softmax",
    # random draws (nnmisc family, issue 16)
    "poisson", "binomial", "normal",
    # convolutions, pooling and resampling (nnconv)
    "conv3d", "conv_transpose1d", "conv_transpose3d", "conv_tbc", "convolution", "max_pool3d",
    "max_pool1d_with_indices", "adaptive_max_pool1d", "affine_grid_generator", "grid_sampler",
    "grid_sampler_2d", "grid_sampler_3d",
    # list ops (optimizers)
    "_foreach_add", "_foreach_add_", "_foreach_sub", "_foreach_sub_", "_foreach_mul",
    "_foreach_mul_", "_foreach_div", "_foreach_div_", "_foreach_maximum_", "_foreach_addcmul_",
    "_foreach_addcdiv_", "_foreach_lerp", "_foreach_lerp_", "_foreach_sqrt", "_foreach_sqrt_",
    "_foreach_neg", "_foreach_neg_",
    "_foreach_zero_", "_foreach_copy_", "_foreach_norm", "_fused_sgd_",
    "_foreach_abs", "_foreach_abs_", "_foreach_acos", "_foreach_acos_", "_foreach_addcdiv",
    "_foreach_addcmul", "_foreach_asin", "_foreach_asin_", "_foreach_atan", "_foreach_atan_",
    "_foreach_ceil", "_foreach_ceil_", "_foreach_clamp_max", "_foreach_clamp_max_",
    "_foreach_clamp_min", "_foreach_clamp_min_", "_foreach_clone", "_foreach_cos",
    "_foreach_cos_", "_foreach_cosh", "_foreach_cosh_", "_foreach_erf", "_foreach_erf_",
    "_foreach_erfc", "_foreach_erfc_", "_foreach_exp", "_foreach_exp_", "_foreach_expm1",
    "_foreach_expm1_", "_foreach_floor", "_foreach_floor_", "_foreach_frac", "_foreach_frac_",
    "_foreach_lgamma", "_foreach_lgamma_", "_foreach_log", "_foreach_log10", "_foreach_log10_",
    "_foreach_log1p", "_foreach_log1p_", "_foreach_log2", "_foreach_log2_", "_foreach_log_",
    "_foreach_max", "_foreach_maximum", "_foreach_minimum", "_foreach_minimum_", "_foreach_pow",
    "_foreach_pow_", "_foreach_reciprocal", "_foreach_reciprocal_", "_foreach_round",
    "_foreach_round_", "_foreach_rsqrt", "_foreach_rsqrt_", "_foreach_sigmoid",
    "_foreach_sigmoid_", "_foreach_sign", "_foreach_sign_", "_foreach_sin", "_foreach_sin_",
    "_foreach_sinh", "_foreach_sinh_", "_foreach_tan", "_foreach_tan_", "_foreach_tanh",
    "_foreach_tanh_", "_foreach_trunc", "_foreach_trunc_",
    # SHAPE family: views, splits, joins, diagonals, index grids, predicates
    "adjoint", "alias_copy", "as_strided", "as_strided_copy", "as_strided_scatter",
    "slice_inverse",
    # spectral
    "stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window",
    "kaiser_window",
    # complex numbers
    "angle", "complex", "conj", "conj_physical", "imag", "is_complex", "is_conj", "polar",
    "real", "resolve_conj", "view_as_complex", "view_as_real",
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "unravel_index", "cartesian_prod",
    "column_stack",
    "combinations", "detach", "detach_copy", "diag", "diag_embed", "diagflat",
    "diagonal_copy", "diagonal_scatter", "dsplit", "dstack", "expand_copy", "fliplr",
    "flipud", "get_device", "hsplit", "is_distributed", "is_floating_point", "is_inference",
    "is_neg", "is_nonzero", "is_same_size", "is_signed", "meshgrid", "narrow_copy", "numel",
    "permute_copy", "ravel", "repeat_interleave", "resolve_neg", "roll", "rot90",
    "row_stack", "select_copy", "select_scatter", "slice_copy", "slice_scatter",
    "split_copy", "split_with_sizes", "split_with_sizes_copy", "squeeze_copy", "t_copy",
    "transpose_copy", "tril_indices", "triu_indices", "unbind_copy", "unfold_copy",
    "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "unsqueeze_copy",
    "view_copy", "vsplit", "diagonal", "layout", "strided", "memory_format",
    "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
    # reductions, sorting, scans, search and index writes (the REDUCE family)
    "sort", "argsort", "msort", "kthvalue", "median", "nanmedian", "mode", "quantile",
    "nanquantile", "cumprod", "cummax", "cummin", "logcumsumexp", "nansum", "nanmean",
    "aminmax", "trace", "renorm", "diff", "trapezoid", "trapz", "cumulative_trapezoid",
    "searchsorted", "bucketize", "isin", "unique", "unique_consecutive", "bincount", "histc",
    "histogram", "take", "put", "index_copy", "index_put", "index_reduce", "scatter_reduce",
    "masked_scatter", "argwhere", "nonzero_static", "gradient", "histogramdd",
    "segment_reduce", "hash_tensor",
    # (end of the REDUCE family's names)
    # sparse COO tensors
    "sparse_coo", "sparse_coo_tensor", "spmm", "hspmm", "smm", "sspaddmm", "sparse_csr",
    "sparse_csc", "sparse_bsr", "sparse_bsc", "sparse_csr_tensor", "sparse_csc_tensor",
    "sparse_bsr_tensor", "sparse_bsc_tensor", "sparse_compressed_tensor",
    # checkpoints, subpackages
    "save", "load", "utils",
]

# PyTorch's top-level in-place functions: `torch.sin_(x)` is `x.sin_()`, the op's in-place
# variant (bound where ember declares it)
_INPLACE_FUNCTIONS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
    "arctan_", "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_",
    "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "detach_",
    "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "gcd_", "i0_",
    "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_",
    "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_",
    "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
    "trunc_", "xlogy_", "conj_physical_",
)


def _bind_inplace_functions() -> list[str]:
    from ember.core.opdef import OPS

    by_name = {n: op for op in OPS.values() if op.public_inplace is not None
               for n in (op.name, *op.aliases)}
    bound = [name for name in _INPLACE_FUNCTIONS
             if name not in globals() and name[:-1] in by_name]
    for name in bound:
        globals()[name] = by_name[name[:-1]].public_inplace
    return bound


__all__ += _bind_inplace_functions()


def _name_sub_byte_dtypes() -> list[str]:
    """`ember.uint1` ... `uint7`, `int1` ... `int7` and the bits dtypes (`bits8` ...):
    PyTorch's names of dtypes no backend holds."""
    from ember.core.dtype import BITS_DTYPES, SUB_BYTE_INTS

    globals().update((d.name, d) for d in SUB_BYTE_INTS + BITS_DTYPES)
    return [d.name for d in SUB_BYTE_INTS + BITS_DTYPES]


__all__ += _name_sub_byte_dtypes()
