"""PyTorch behaviours the set-AB programs (torchvision-style augmentation kernels, an audio
front-end, Set Transformer blocks, neural processes) needed, checked against torch itself."""

from __future__ import annotations

import pytest

import ember
from ember.core import dtype as dt

torch = pytest.importorskip("torch")


def _outcome(fn, mod) -> tuple[str, object]:
    """What `fn(mod)` gives: its value (nested lists for tensors), or its error's type and
    text."""
    try:
        out = fn(mod)
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return type(err).__name__, str(err)
    if isinstance(out, (torch.Tensor, ember.Tensor)):
        return "ok", (str(out.dtype), out.tolist())
    if isinstance(out, (tuple, list)):
        return "ok", [(str(o.dtype), o.tolist()) if isinstance(o, (torch.Tensor, ember.Tensor))
                      else o for o in out]
    return "ok", out


def _same(fn) -> None:
    """`fn` does under ember what it does under torch, as a program run through the alias
    sees it (ember's printed names are "torch...")."""
    saved, dt.API_NAME = dt.API_NAME, "torch"
    try:
        assert _outcome(fn, ember) == _outcome(fn, torch)
    finally:
        dt.API_NAME = saved


# -- torch.tensor_split: the keyword of each overload ------------------------------------

@pytest.mark.parametrize("call", [
    lambda m, x: m.tensor_split(x, indices=(-1,), dim=-3),  # torchvision's mask split
    lambda m, x: m.tensor_split(x, sections=2, dim=1),
    lambda m, x: x.tensor_split(indices=[1, 2], dim=2),
    lambda m, x: m.tensor_split(x, tensor_indices_or_sections=m.tensor(2)),
    lambda m, x: m.tensor_split(x, 2, -1),
])
def test_tensor_split_overload_keywords(call) -> None:
    _same(lambda m: call(m, m.arange(24.0).reshape(2, 3, 4)))


# -- F.interpolate of uint8 images (torchvision's resize of a uint8 tensor) --------------

def _uint8_image(m, channels_last: bool = False):
    g = torch.Generator().manual_seed(0)
    arr = (torch.rand(2, 3, 7, 9, generator=g) * 255).round().to(torch.uint8).numpy()
    x = m.from_numpy(arr.copy())
    return x.to(memory_format=m.channels_last) if channels_last else x


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(4, 5), (11, 13), (7, 4), (3, 16)])
def test_interpolate_uint8_matches_fixed_point(mode, antialias, align_corners, size) -> None:
    """ATen resamples uint8 in int16 fixed point, rounding to uint8 between the width's and
    the height's pass: the values agree exactly, not within one."""
    _same(lambda m: m.nn.functional.interpolate(_uint8_image(m), size=size, mode=mode,
                                                align_corners=align_corners,
                                                antialias=antialias))


def test_interpolate_uint8_scale_factor_and_channels_last() -> None:
    def run(m):
        f = m.nn.functional
        a = f.interpolate(_uint8_image(m), scale_factor=1.7, mode="bilinear", antialias=True)
        b = f.interpolate(_uint8_image(m, channels_last=True), scale_factor=0.6,
                          mode="bicubic")
        return a, b, a.stride(), b.stride()
    _same(run)


def test_interpolate_uint8_lanczos() -> None:
    _same(lambda m: m.nn.functional.interpolate(_uint8_image(m), size=(4, 13), mode="lanczos",
                                                antialias=True))


# -- dtypes the CPU kernels refuse, named by the kernel (what a resize of an int image or a
# grid of the wrong precision meets) -------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool", "float16"])
@pytest.mark.parametrize("ndim,mode,antialias", [
    (3, "nearest", False), (3, "linear", False), (3, "area", False),
    (4, "nearest-exact", False), (4, "bilinear", False), (4, "bicubic", False),
    (4, "area", False), (4, "bilinear", True), (4, "bicubic", True), (5, "trilinear", False),
    (5, "nearest", False), (5, "area", False)])
def test_interpolate_refuses_dtype_as_its_kernel(dtype, ndim, mode, antialias) -> None:
    def run(m):
        x = m.zeros((2, 3, 4, 5, 5)[:ndim], dtype=getattr(m, dtype))
        scale = 0.5 if antialias else 2
        return m.nn.functional.interpolate(x, scale_factor=scale, mode=mode,
                                           antialias=antialias).shape
    _same(run)


@pytest.mark.parametrize("dtype", ["uint8", "int64", "bool"])
def test_pooling_refuses_dtype_as_its_kernel(dtype) -> None:
    def pools(m):
        f = m.nn.functional
        x2, x3 = m.zeros(1, 2, 4, 4, dtype=getattr(m, dtype)), m.zeros(1, 2, 4, 4, 4,
                                                                        dtype=getattr(m, dtype))
        calls = [lambda: f.adaptive_avg_pool2d(x2, 1), lambda: f.adaptive_avg_pool2d(x2, 2),
                 lambda: f.adaptive_avg_pool2d(x2.to(memory_format=m.channels_last), 2),
                 lambda: f.adaptive_avg_pool1d(x2[0], 3), lambda: f.adaptive_avg_pool3d(x3, 2),
                 lambda: f.avg_pool2d(x2, 2), lambda: f.avg_pool3d(x3, 2),
                 lambda: f.avg_pool2d(x2.to(memory_format=m.channels_last), 2)]
        return [_outcome(lambda _, call=call: call().shape, m) for call in calls]
    saved, dt.API_NAME = dt.API_NAME, "torch"
    try:
        assert pools(ember) == pools(torch)
    finally:
        dt.API_NAME = saved


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("dtypes", [("uint8", "float32"), ("int64", "int64"),
                                    ("float64", "float32"), ("float32", "float64")])
def test_grid_sample_refuses_dtypes_as_the_cpu_kernel(dims, dtypes) -> None:
    def run(m):
        x = m.zeros((1, 2, 3, 4, 4)[:dims + 2], dtype=getattr(m, dtypes[0]))
        grid = m.zeros((1, 2, 2, 2, 3)[:dims + 1] + (dims,), dtype=getattr(m, dtypes[1]))
        return m.nn.functional.grid_sample(x, grid, align_corners=False)
    _same(run)


def test_grid_sample_checks_shapes_before_dtypes() -> None:
    _same(lambda m: m.nn.functional.grid_sample(m.zeros(1, 2, 4, 4, dtype=m.float64),
                                                m.zeros(2, 2, 2, 2), align_corners=False))


# -- torch.distributions --------------------------------------------------------------

def test_sample_n_warns_as_torch() -> None:
    def run(m):
        with pytest.warns(FutureWarning) as seen:
            shape = m.distributions.Normal(m.zeros(2), m.ones(2)).sample_n(3).shape
        return tuple(shape), [str(w.message) for w in seen]
    assert run(ember) == run(torch)


# -- nn.MultiheadAttention --------------------------------------------------------------

def _padded_attention(m, heads: int, batch_first: bool, same: bool, training: bool):
    m.manual_seed(0)
    mha = m.nn.MultiheadAttention(4, heads, batch_first=batch_first).train(training)
    x = m.randn(2, 5, 4) if batch_first else m.randn(5, 2, 4)
    kpm = m.tensor([[False] * 5, [True] * 5])  # the second sequence wholly padded
    with m.no_grad():
        out, w = mha(x, x if same else x.clone(), x, key_padding_mask=kpm, need_weights=False)
    return out.isnan().any(-1), w


@pytest.mark.parametrize("heads,batch_first,same,training", [
    (2, True, True, False),  # PyTorch's fused inference path: NaN for the padded sequence
    (1, True, True, False), (2, False, True, False), (2, True, False, False),
    (2, True, True, True)])  # the others: scaled_dot_product_attention's zeros
def test_mha_fully_padded_sequence_as_the_path_torch_takes(heads, batch_first, same,
                                                           training) -> None:
    _same(lambda m: _padded_attention(m, heads, batch_first, same, training))


def test_mha_separate_projection_shape_checks() -> None:
    def run(m):
        mha = m.nn.MultiheadAttention(6, 3, kdim=4, vdim=5)
        q, k, v = m.randn(3, 2, 6), m.randn(7, 2, 4), m.randn(7, 2, 5)
        return [_outcome(lambda _: mha(q, k, v[:, :, :4])[0].shape, m),
                _outcome(lambda _: mha(q, k[:, :, :3], v)[0].shape, m),
                _outcome(lambda _: mha(q, k, v)[0].shape, m)]
    saved, dt.API_NAME = dt.API_NAME, "torch"
    try:
        assert run(ember) == run(torch)
    finally:
        dt.API_NAME = saved


def _causal_and_mask(m, math_only: bool = False, **shape):
    m.manual_seed(0)
    q, k, v = m.randn(2, 2, 3, 4), m.randn(2, 2, 5, 4), m.randn(2, 2, 5, 4)
    keep = m.ones(3, 5, dtype=m.bool)
    keep[1] = False  # a query the mask takes out wholly
    f = m.nn.functional
    kwargs = dict(attn_mask=keep, is_causal=True, **shape)
    if math_only:
        with m.nn.attention.sdpa_kernel(m.nn.attention.SDPBackend.MATH):
            return f.scaled_dot_product_attention(q, k, v, **kwargs)
    if kwargs.pop("unbatched", False):
        q, k, v = q[0], k[0], v[0]
    return f.scaled_dot_product_attention(q, k, v, **kwargs).round(decimals=4)


@pytest.mark.parametrize("case", [{}, {"dropout_p": 0.5}, {"unbatched": True},
                                  {"math_only": True}, {"scale": 0.3}])
def test_sdpa_mask_with_is_causal_as_the_cpu_kernels(case) -> None:
    """PyTorch's CPU flash kernel (4-D, no dropout) applies both the mask and the causal
    triangle; its math kernel refuses the pair."""
    _same(lambda m: _causal_and_mask(m, **case))


# -- torch.stft / torch.istft: their kernels' errors and warnings ------------------------

@pytest.mark.parametrize("call", [
    # F.pad's refusals of a signal shorter than the centring pad (viewed as (1, B, L))
    lambda m: m.stft(m.zeros(2, 100), 256, window=m.hann_window(256), return_complex=True),
    lambda m: m.stft(m.zeros(100), 256, window=m.hann_window(256), return_complex=True),
    lambda m: m.stft(m.zeros(100), 256, window=m.hann_window(256), pad_mode="circular",
                     return_complex=True),
    lambda m: m.stft(m.zeros(300), 64, window=m.hann_window(64), pad_mode="wrap",
                     return_complex=True),
    # the kernel's dtype check, naming the padded signal (C++ type names)
    lambda m: m.stft(m.zeros(300, dtype=m.int64), 64, window=m.hann_window(64),
                     return_complex=True),
    lambda m: m.stft(m.zeros(2, 300, dtype=m.bool), 64, window=m.hann_window(64),
                     pad_mode="constant", return_complex=True),
    lambda m: m.stft(m.zeros(2, 300, dtype=m.bfloat16), 64,
                     window=m.zeros(65, dtype=m.bfloat16), center=False, return_complex=True),
    # istft's nonzero overlap-add constraint, the call printed
    lambda m: m.istft(m.ones(65, 19, dtype=m.complex64), 128, 32, window=m.zeros(128)),
    lambda m: m.istft(m.ones(2, 65, 19, dtype=m.complex128), 128, 32, win_length=64,
                      window=m.zeros(64, dtype=m.float64), normalized=True, length=500),
])
def test_stft_istft_errors(call) -> None:
    _same(call)


def test_istft_warns_when_length_outruns_the_signal() -> None:
    from ember.core import errors

    def run(m):
        spec = m.stft(m.arange(600.0).sin(), 128, 32, window=m.hann_window(128),
                      return_complex=True)
        m.set_warn_always(True)  # (a warn-once warning: seen here whatever ran before)
        try:
            with pytest.warns(UserWarning) as seen:
                out = m.istft(spec, 128, 32, window=m.hann_window(128), length=700)
        finally:
            m.set_warn_always(False)
        return tuple(out.shape), [str(w.message).split(" (Triggered")[0] for w in seen]
    assert run(ember) == run(torch)
    assert not errors._warn_always


@pytest.mark.parametrize("dtype", ["uint8", "int64", "bool", "float16"])
def test_unfold_fold_dtypes(dtype) -> None:
    def run(m):
        f, d = m.nn.functional, getattr(m, dtype)
        return [_outcome(lambda _: f.unfold(m.ones(1, 1, 4, 4, dtype=d), 2).shape, m),
                _outcome(lambda _: f.fold(m.ones(1, 4, 4, dtype=d), (3, 3), 2).shape, m),
                _outcome(lambda _: m.nn.Unfold(2)(m.ones(1, 4, 4, dtype=d)).shape, m)]
    saved, dt.API_NAME = dt.API_NAME, "torch"
    try:
        assert run(ember) == run(torch)
    finally:
        dt.API_NAME = saved


# -- convolutions: a weight of another dtype, in the words of the kernel PyTorch picks --

@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("fn,x_shape,w_shape,kwargs", [
    ("conv1d", (2, 1, 50), (3, 1, 9), {}),  # a batch: oneDNN
    ("conv1d", (1, 1, 50), (3, 1, 9), {}),  # one signal, small kernel: the native kernel
    ("conv1d", (1, 4, 50), (4, 1, 9), {"groups": 4}),
    ("conv2d", (2, 3, 8, 8), (4, 3, 1, 1), {}),  # 1x1 on one thread: native
    ("conv2d", (1, 3, 8, 8), (4, 3, 5, 5), {}),
    ("conv2d", (3, 8, 8), (4, 3, 3, 3), {}),
    ("conv2d", (1, 3, 100, 100), (4, 3, 1, 1), {"stride": 2}),
    ("conv3d", (2, 3, 4, 4, 4), (4, 3, 3, 3, 3), {}),
    ("conv_transpose1d", (2, 4, 8), (4, 1, 3), {"groups": 2}),
    ("conv_transpose2d", (1, 4, 8, 8), (4, 2, 3, 3), {})])
def test_conv_weight_dtype_mismatch(threads, fn, x_shape, w_shape, kwargs) -> None:
    def run(m):
        saved = m.get_num_threads()
        m.set_num_threads(threads)
        try:
            return getattr(m.nn.functional, fn)(m.zeros(x_shape),
                                                m.zeros(w_shape, dtype=m.float64), **kwargs)
        finally:
            m.set_num_threads(saved)
    _same(run)


@pytest.mark.parametrize("kwargs", [{"padding": "same", "stride": 2}, {"padding": "full"}])
def test_functional_conv_padding_string_errors(kwargs) -> None:
    _same(lambda m: m.nn.functional.conv1d(m.zeros(1, 1, 20), m.zeros(2, 1, 3), **kwargs))


# -- __torch_function__: the function a method call hands over ---------------------------

def test_torch_function_is_handed_the_method_not_the_function() -> None:
    """torchvision's TVTensor keeps its subclass for `func in {Tensor.clone, Tensor.to,
    ...}`: a method call hands `Tensor.<name>` even where the function form runs the same
    code (clone, unsqueeze, masked_fill have no `out=` form)."""
    def run(m):
        seen = []

        class Sub(m.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append(func)
                return super().__torch_function__(func, types, args, kwargs or {})

        x = m.zeros(2, 1).as_subclass(Sub)
        calls = [(lambda: x.clone(), m.Tensor.clone), (lambda: m.clone(x), m.clone),
                 (lambda: x.unsqueeze(0), m.Tensor.unsqueeze),
                 (lambda: m.unsqueeze(x, 0), m.unsqueeze),
                 (lambda: x.masked_fill(m.ones(2, 1, dtype=m.bool), 1.0),
                  m.Tensor.masked_fill), (lambda: x.add(1), m.Tensor.add)]
        out = []
        for call, want in calls:
            seen.clear()
            result = call()
            out.append((seen[0] is want, type(result).__name__))
        return out
    assert run(ember) == run(torch)


def test_stft_warns_of_no_window_before_its_checks() -> None:
    def run(m):
        m.set_warn_always(True)  # (a warn-once warning: seen here whatever ran before)
        try:
            with pytest.warns(UserWarning) as seen:
                outcome = _outcome(lambda _: m.stft(m.zeros(300), 64), m)
        finally:
            m.set_warn_always(False)
        return outcome, [str(w.message).split(" (Triggered")[0] for w in seen]
    saved, dt.API_NAME = dt.API_NAME, "torch"
    try:
        assert run(ember) == run(torch)
    finally:
        dt.API_NAME = saved
