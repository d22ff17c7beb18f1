"""ember's CPU random streams against PyTorch's: the same seed gives the same numbers,
bit for bit (float32 normals of 16 or more elements included: PyTorch's AVX2 kernel and
its SIMD log/sin/cos are reproduced operation by operation).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.core import cpu_random

torch = pytest.importorskip("torch")

SIZES = [0, 1, 15, 16, 17, 100]

# PyTorch with MKL draws bernoulli_(p) for a number p (dropout) from MKL's stream on Intel
# CPUs (its cpuinfo vendor test); ember follows PyTorch's default kernel (AMD and others)
mkl_bernoulli = pytest.mark.skipif(
    cpu_random.intel_cpu() and torch.backends.mkl.is_available(),
    reason="PyTorch draws bernoulli_(p) from MKL's stream on Intel CPUs")
FLOATS = ["float32", "float64"]


def seeded(seed: int = 0) -> None:
    ember.manual_seed(seed)
    torch.manual_seed(seed)


def same(a, b) -> None:
    a = a.detach().numpy() if hasattr(a, "numpy") else np.asarray(a)
    b = b.detach().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)


def draw_both(expr: str, dtype: str | None = None):
    """Evaluate `expr` with `lib` bound to ember and to torch, from the same seed."""
    ember.manual_seed(0)
    ours = eval(expr, {"lib": ember, "dt": getattr(ember, dtype) if dtype else None})
    torch.manual_seed(0)
    theirs = eval(expr, {"lib": torch, "dt": getattr(torch, dtype) if dtype else None})
    return ours, theirs


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS + ["float16", "bfloat16"])
def test_rand(n: int, dtype: str) -> None:
    ours, theirs = draw_both(f"lib.rand({n}, dtype=dt)", dtype)
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


@pytest.mark.parametrize("n", SIZES + [1000, 100003])
@pytest.mark.parametrize("dtype", FLOATS)
def test_randn(n: int, dtype: str) -> None:
    ours, theirs = draw_both(f"lib.randn({n}, dtype=dt)", dtype)
    same(ours, theirs)


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_and_normal_with_parameters(dtype: str) -> None:
    same(*draw_both("lib.empty(3, 1000, dtype=dt).uniform_(-0.37, 1.91)", dtype))
    same(*draw_both("lib.empty(1000, dtype=dt).normal_(0.5, 3.3)", dtype))
    same(*draw_both("lib.empty(7, dtype=dt).normal_(-2, 0.1)", dtype))


@pytest.mark.parametrize("fill", ["uniform_(-1, 2)", "normal_(0.5, 2)",
                                  pytest.param("bernoulli_(0.3)", marks=mkl_bernoulli),
                                  "exponential_(1.5)", "cauchy_(0.5, 2)", "log_normal_()",
                                  "geometric_(0.2)", "random_()", "random_(3, 77)",
                                  "random_(10)"])
def test_fills_of_non_contiguous_views_walk_memory(fill: str) -> None:
    # transposed and sliced: PyTorch writes in memory order, not index order
    same(*draw_both(f"lib.empty(5, 33).t()[1:].{fill}"))
    same(*draw_both(f"lib.empty(6, 40, dtype=lib.float64)[:, ::2].{fill}"))


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "float32",
                                   "float64", "bool"])
def test_random_without_bounds(dtype: str) -> None:
    same(*draw_both("lib.empty(50, dtype=dt).random_()", dtype))


@pytest.mark.parametrize("args", ["0, 10, (20,)", "-5, 2**40, (20,)", "3, (4, 5)",
                                  "-2**62, 2**62, (9,)", "0, 2**20, (5,), dtype=lib.int32",
                                  "-3, 2**35, (6,), dtype=lib.float64"])
def test_randint(args: str) -> None:
    same(*draw_both(f"lib.randint({args})"))


@pytest.mark.parametrize("n", [0, 1, 2, 10, 1000])
def test_randperm(n: int) -> None:
    same(*draw_both(f"lib.randperm({n})"))
    same(*draw_both(f"lib.randperm({n}, dtype=lib.int32)"))


def test_bernoulli_of_tensor_probabilities() -> None:
    for dtype in FLOATS:
        same(*draw_both("lib.bernoulli(lib.rand(4, 9, dtype=dt))", dtype))
        same(*draw_both("lib.zeros(4, 9, dtype=dt).bernoulli_(lib.rand(9))", dtype))


@mkl_bernoulli
def test_bernoulli_of_a_number() -> None:
    for dtype in FLOATS:
        same(*draw_both("lib.bernoulli(lib.rand(4, 9, dtype=dt), p=0.25)", dtype))
    same(*draw_both("lib.empty(100, dtype=lib.bool).bernoulli_(0.5)"))


@pytest.mark.parametrize("dtype", FLOATS)
def test_exponential_cauchy_log_normal_geometric(dtype: str) -> None:
    for fill in ["exponential_(0.7)", "cauchy_(0.5, 2)", "log_normal_(0.5, 2)",
                 "geometric_(0.3)"]:
        same(*draw_both(f"lib.empty(300, dtype=dt).{fill}", dtype))


@pytest.mark.parametrize("replacement", [False, True])
@pytest.mark.parametrize("samples", [1, 3, 6])
@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial(replacement: bool, samples: int, dtype: str) -> None:
    same(*draw_both(f"lib.multinomial(lib.rand(4, 6, dtype=dt), {samples}, {replacement})",
                    dtype))
    same(*draw_both(f"lib.multinomial(lib.rand(6, dtype=dt), {samples}, {replacement})",
                    dtype))


def test_interleaved_streams_share_one_state() -> None:
    # the normal sample cached by an odd-sized small randn carries into the next call
    expr = ("lib.cat([lib.rand(3).double(), lib.randn(3, dtype=lib.float64), "
            "lib.randperm(7).double(), lib.randn(5, dtype=lib.float64), "
            "lib.empty(4, dtype=lib.float64).normal_(), lib.randint(0, 9, (3,)).double(), "
            "lib.randn(17, dtype=lib.float64), lib.randn(1, dtype=lib.float64), "
            "lib.bernoulli(lib.full((5,), 0.5)).double(), lib.rand(2, dtype=lib.float64)])")
    same(*draw_both(expr))


def test_rng_state_is_pytorchs_layout() -> None:
    seeded(123)
    ember.randn(3, dtype=ember.float64)  # leaves a cached normal in the state
    torch.randn(3, dtype=torch.float64)
    ours, theirs = ember.get_rng_state(), torch.get_rng_state()
    assert ours.dtype is ember.uint8 and tuple(ours.shape) == (5056,)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # a state moves between the libraries and goes on drawing the same numbers
    torch.set_rng_state(torch.from_numpy(ours.numpy()))
    ember.set_rng_state(ember.tensor(theirs.numpy()))
    same(ember.randn(5, dtype=ember.float64), torch.randn(5, dtype=torch.float64))


def test_generator_objects() -> None:
    g, tg = ember.Generator(), torch.Generator()
    assert g.initial_seed() == tg.initial_seed() == 67280421310721
    same(ember.rand(4, generator=g), torch.rand(4, generator=tg))
    assert g.manual_seed(2 ** 40 + 7) is g
    tg.manual_seed(2 ** 40 + 7)
    assert g.initial_seed() == 2 ** 40 + 7
    same(ember.randn(20, generator=g), torch.randn(20, generator=tg))
    state = g.get_state()
    np.testing.assert_array_equal(state.numpy(), tg.get_state().numpy())
    first = ember.randperm(9, generator=g)
    g.set_state(state)
    same(ember.randperm(9, generator=g), torch.randperm(9, generator=tg))
    np.testing.assert_array_equal(first.numpy(), ember.randperm(9, generator=g.set_state(
        state)).numpy())
    # the default generator is untouched by a generator's draws
    seeded(5)
    ember.rand(3, generator=g)
    same(ember.rand(2), torch.rand(2))


def test_seed_and_initial_seed() -> None:
    s = ember.seed()
    assert ember.initial_seed() == s and 0 <= s < 2 ** 64
    ember.manual_seed(-1)  # wraps to 64 bits as PyTorch's
    assert ember.initial_seed() == 2 ** 64 - 1
    torch.manual_seed(-1)
    same(ember.rand(3), torch.rand(3))
    with pytest.raises(ValueError, match="Overflow"):  # (PyTorch's type: torch raises it too)
        ember.manual_seed(2 ** 64)
    with pytest.raises(RuntimeError, match="size"):
        ember.set_rng_state(ember.zeros(10, dtype=ember.uint8))


def test_bad_arguments_raise_before_drawing() -> None:
    seeded()
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        ember.empty(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match="'from' to be less than 'to'"):
        ember.randint(3, 3, (2,))
    with pytest.raises(RuntimeError, match="uniform_ expects"):
        ember.empty(3).uniform_(2, 1)
    same(ember.rand(3), torch.rand(3))  # nothing was drawn


def test_a_million_floats_is_fast() -> None:
    # vectorised over NumPy (a Python loop per element would take seconds); generous for
    # a loaded 2-core machine
    import time

    start = time.perf_counter()
    ember.rand(10 ** 6)
    ember.randn(10 ** 6)
    ember.randn(10 ** 6, dtype=ember.float64)
    assert time.perf_counter() - start < 8.0


# -- what consumes the generator: layers, init, dropout, data loading -----------------------

def _both(build):
    ember.manual_seed(7)
    ours = build(ember)
    torch.manual_seed(7)
    theirs = build(torch)
    return ours, theirs


@pytest.mark.parametrize("make", [
    "L.nn.Linear(7, 5)", "L.nn.Conv2d(3, 4, 3)", "L.nn.Conv1d(3, 4, 3, bias=False)",
    "L.nn.ConvTranspose2d(3, 4, 3)", "L.nn.LSTM(5, 6, num_layers=2)",
    "L.nn.GRU(5, 6, bidirectional=True)", "L.nn.Embedding(10, 4)", "L.nn.BatchNorm1d(4)",
    "L.nn.MultiheadAttention(8, 2, kdim=4, vdim=6, add_bias_kv=True)",
    "L.nn.TransformerEncoderLayer(8, 2, 16)", "L.nn.Bilinear(3, 4, 5)"])
def test_layer_initialisation(make: str) -> None:
    ours, theirs = _both(lambda L: eval(make, {"L": L}))
    ours, theirs = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert list(ours) == list(theirs)
    for name, p in theirs.items():
        same(ours[name].detach(), p.detach())
    same(ember.rand(3), torch.rand(3))  # and the stream is left where PyTorch leaves it


@pytest.mark.parametrize("init", [
    "uniform_(t, -2, 3)", "xavier_uniform_(t)", "kaiming_uniform_(t, a=0.1)",
    "trunc_normal_(t)", "trunc_normal_(t, 2.0, 0.5, 1.0, 3.0)", "normal_(t, 0.5, 2)",
    "xavier_normal_(t)", "kaiming_normal_(t)", "orthogonal_(t)", "sparse_(t, 0.5)"])
def test_nn_init(init: str) -> None:
    ours, theirs = _both(lambda L: eval(f"L.nn.init.{init}", {"L": L, "t": L.empty(6, 40)}))
    if init.startswith("orthogonal_"):  # the same normals, factored by another QR
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
    else:
        same(ours, theirs)
    same(ember.rand(3), torch.rand(3))


@pytest.mark.parametrize("call", [
    "F.dropout(L.ones(4, 50), 0.3)", "F.dropout(L.ones(4, 50), 0.3, inplace=True)",
    "F.dropout2d(L.ones(4, 5, 3, 3), 0.4)", "F.dropout1d(L.ones(5, 6), 0.4)",
    "F.alpha_dropout(L.ones(4, 50), 0.3, True)",
    "F.feature_alpha_dropout(L.ones(3, 4, 5), 0.3, True)",
    "L.native_dropout(L.ones(4, 50), 0.3, True)[1]", "L.nn.Dropout(0.2)(L.ones(3, 70))",
    "F.rrelu(L.arange(-20.0, 21.0) * 0.05, training=True)"])
def test_dropout_masks(call: str) -> None:
    if "rrelu" not in call and cpu_random.intel_cpu() and torch.backends.mkl.is_available():
        pytest.skip("PyTorch draws bernoulli_(p) from MKL's stream on Intel CPUs")
    ours, theirs = _both(lambda L: eval(call, {"L": L, "F": L.nn.functional}))
    same(ours, theirs)


def test_normal_with_tensor_parameters() -> None:
    for call in ["L.normal(L.arange(20.), 0.5)", "L.normal(L.zeros(3, 1), L.ones(1, 20))",
                 "L.normal(1.0, 2.0, (5, 7))", "L.normal(0.5, L.ones(3, 20))"]:
        ours, theirs = _both(lambda L, c=call: eval(c, {"L": L}))
        same(ours, theirs)


def test_data_loading_draws_pytorchs_indices() -> None:
    def run(L):
        from importlib import import_module

        data = import_module(f"{L.__name__}.utils.data")
        ds = data.TensorDataset(L.arange(50))
        out = [b.tolist() for _ in range(2)
               for (b,) in data.DataLoader(ds, batch_size=16, shuffle=True)]
        out += [list(s.indices) for s in data.random_split(range(10), [0.3, 0.7])]
        out += list(data.WeightedRandomSampler([0.1, 0.5, 2.0, 0.0, 1.0], 7))
        out += list(data.WeightedRandomSampler([0.1, 0.5, 2.0, 0.0, 1.0], 3, False))
        loader = data.DataLoader(ds, batch_size=10, shuffle=True,
                                 generator=L.Generator().manual_seed(9))
        out += [b[0].tolist() for b in loader]
        out += list(data.RandomSampler(range(9), replacement=True, num_samples=40))
        return out + [L.rand(1).item()]
    ours, theirs = _both(run)
    assert ours == theirs


def test_fork_rng_restores_the_stream() -> None:
    seeded(1)
    with ember.random.fork_rng():
        ember.rand(5)
    same(ember.rand(2), torch.rand(2))


def test_thread_safe_generator_is_none_outside_thread_workers() -> None:
    """torch.random.thread_safe_generator: None in the main process and in a (process)
    DataLoader worker, so the draws are the default generator's."""
    class Draws(ember.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return ember.tensor(ember.random.thread_safe_generator() is None)

    assert ember.random.thread_safe_generator() is torch.random.thread_safe_generator() is None
    loader = ember.utils.data.DataLoader(Draws(), batch_size=2, num_workers=1)
    assert next(iter(loader)).tolist() == [True, True]
    seeded(2)
    same(ember.randint(0, 10, (5,), generator=ember.random.thread_safe_generator()),
         torch.randint(0, 10, (5,), generator=torch.random.thread_safe_generator()))


@mkl_bernoulli
def test_a_training_step_gives_pytorchs_loss() -> None:
    """A whole program: model initialisation, a shuffled DataLoader, dropout, one SGD step
    and a second forward — the same numbers as PyTorch's."""
    def program(L):
        from importlib import import_module

        data = import_module(f"{L.__name__}.utils.data")
        model = L.nn.Sequential(L.nn.Conv1d(2, 4, 3), L.nn.ReLU(), L.nn.Flatten(),
                                L.nn.Dropout(0.25), L.nn.Linear(24, 3))
        x = L.rand(40, 2, 8)
        y = L.randint(0, 3, (40,))
        loader = data.DataLoader(data.TensorDataset(x, y), batch_size=8, shuffle=True)
        opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses, seen = [], []
        for xb, yb in loader:
            seen.append(yb.tolist())
            loss = L.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, seen, [p.detach().numpy().copy() for p in model.parameters()]
    (ours, our_batches, our_params), (theirs, their_batches, their_params) = _both(program)
    assert our_batches == their_batches
    np.testing.assert_allclose(ours, theirs, rtol=2e-5)
    for a, b in zip(our_params, their_params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_a_compiled_step_draws_fresh_masks_from_the_stream() -> None:
    """`ember.compile` replays the host draws as kernel calls: each replayed step draws a
    new dropout mask, the same ones eager execution draws."""
    def run(compiled: bool) -> list[float]:
        ember.manual_seed(0)
        model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Dropout(0.5),
                                    ember.nn.Linear(8, 1))
        opt = ember.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        fn = ember.compile(step) if compiled else step
        return [fn(ember.ones(16, 4)).item() for _ in range(6)]
    eager = run(False)
    assert len(set(eager)) == 6
    assert run(True) == eager


@pytest.mark.parametrize("rates", ["L.rand(50) * 3", "L.rand(7, 9, dtype=L.float64) * 40",
                                   "L.tensor([0.0, 0.5, 9.99, 10.0, 100.0, 1e4])"])
def test_poisson(rates: str) -> None:
    ours, theirs = _both(lambda L: L.poisson(eval(rates, {"L": L})))
    same(ours, theirs)
    same(ember.rand(3), torch.rand(3))  # as many draws as PyTorch's rejection loops took


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fill", ["normal_()", "normal_(0.5, 2)", "uniform_()",
                                  "uniform_(-1.3, 2.7)", "exponential_(0.7)", "cauchy_()",
                                  "log_normal_(0.1, 0.5)", "geometric_(0.3)", "random_()",
                                  "random_(-5, 90)"])
@pytest.mark.parametrize("shape", ["7", "17", "(40, 9)", "30000"])
def test_half_precision_fills(dtype: str, fill: str, shape: str) -> None:
    # float16/bfloat16 compute in float (normal_ over whole blocks of 16 only), round to
    # the dtype, and turn a uniform that rounds up to `to` into `from`
    ours, theirs = draw_both(f"lib.empty({shape}, dtype=dt).{fill}", dtype)
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


def test_a_trace_records_replayable_random_ops() -> None:
    """While `ember.jit.trace` records, the fills run as composites of the random
    primitives, so the traced graph replays (with fresh draws)."""
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Dropout(0.5),
                                ember.nn.Linear(8, 1))
    x = ember.ones(3, 4)
    assert tuple(ember.jit.trace(model, x)(x).shape) == (3, 1)

    def draws(x):
        return (x + ember.empty(3, 4).uniform_(0, 1) + ember.empty(3, 4).cauchy_()
                + ember.empty(3, 4).log_normal_() + ember.empty(3, 4).geometric_(0.5)
                + ember.empty(3, 4).normal_() + ember.empty(3, 4).exponential_()
                + ember.empty(3, 4).random_(0, 5) + ember.randn(3, 4))
    with pytest.warns(Warning):  # PyTorch's warning for a non-deterministic trace
        traced = ember.jit.trace(draws, x)
    assert tuple(traced(x).shape) == (3, 4)


@pytest.mark.parametrize("expr", [
    "lib.rand_like(lib.ones(5, 33).t())", "lib.randn_like(lib.ones(4, 3, 20).permute(2, 0, 1))",
    "lib.randint_like(lib.ones(6, 7).t(), 0, 100)",
    "lib.rand_like(lib.ones(6, 40)[:, ::2])",  # (gaps: PyTorch's result is contiguous)
    pytest.param("lib.nn.functional.dropout(lib.ones(5, 2, 16).transpose(1, 0), 0.3)",
                 marks=mkl_bernoulli),
    pytest.param("lib.nn.functional.dropout(lib.ones(3, 1, 4, 5).permute(0, 3, 1, 2), 0.5)",
                 marks=mkl_bernoulli),
    pytest.param("lib.nn.functional.dropout(lib.ones(6, 8)[:, 1:7], 0.5)", marks=mkl_bernoulli),
])
def test_like_draws_of_transposed_tensors_walk_memory(expr: str) -> None:
    """PyTorch's rand_like and dropout's mask keep a transposed input's strides, so they
    draw in memory order: batch_first attention's output (a transposed view) through
    nn.Dropout drew other masks than PyTorch's."""
    same(*draw_both(expr))


@pytest.mark.parametrize("expr", [
    "lib.rand_like(lib.ones(5, 33).t(), memory_format=lib.contiguous_format)",
    "lib.randn_like(lib.ones(2, 3, 4, 5), memory_format=lib.channels_last)",
    "lib.rand_like(lib.ones(2, 3, 2, 4, 5), memory_format=lib.channels_last_3d)",
    "lib.randint_like(lib.ones(2, 3, 4, 5), 0, 9, memory_format=lib.channels_last)",
    "lib.rand_like(lib.ones(4, 6), generator=lib.Generator().manual_seed(5))",
    "lib.randn_like(lib.ones(4, 6), generator=lib.Generator().manual_seed(5), dtype=lib.float64)",
    "lib.randint_like(lib.ones(4, 6), 3, generator=lib.Generator().manual_seed(5))",
])
def test_like_draws_follow_memory_format_and_generator(expr: str) -> None:
    """`*_like(memory_format=...)` draws in the order of the layout asked for (channels
    innermost for channels_last), and `generator=` draws from that generator: timm-style
    code passes both."""
    ours, theirs = draw_both(expr)
    same(ours, theirs)
    assert ours.stride() == theirs.stride()


@pytest.mark.parametrize("expr", [
    "lib.distributions.Beta(lib.tensor([0.4]), lib.tensor([0.4])).sample((8,))",
    "lib.distributions.Beta(0.2, 3.0).sample((5,))",
    "lib.distributions.Gamma(lib.tensor([0.3, 2.0, 9.0]), lib.tensor([1.0, 0.5, 2.0]))"
    ".sample((4,))",
    "lib.distributions.Gamma(lib.tensor([0.7, 1.5], dtype=lib.float64), 1.0).sample((3,))",
    "lib.distributions.Dirichlet(lib.tensor([0.5, 1.0, 2.0])).sample((4,))",
    "lib.distributions.Dirichlet(lib.ones(3, dtype=lib.float64)).sample()",
    "lib.distributions.Chi2(lib.tensor([3.0])).sample((5,))",
    "lib.cat([lib.distributions.Beta(1.0, 1.0).sample((3,)), lib.randn(5), lib.rand(3)])",
])
def test_gamma_family_draws_pytorchs_stream(expr: str) -> None:
    """Gamma, Beta (a Dirichlet of two), Dirichlet and Chi2 draw PyTorch's numbers on the
    CPU (its `sample_gamma`, element by element, uniforms and cached Box-Muller normals from
    the one generator), and leave the generator where PyTorch's is: a mixup's
    `Beta(alpha, alpha).sample()` and the draws after it are PyTorch's."""
    ours, theirs = draw_both(expr)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-7, atol=0)
    assert ours.dtype == getattr(ember, str(theirs.dtype).split(".")[1])


@pytest.mark.parametrize("expr", [
    "lib.binomial((lib.rand(400) * 500).floor(), lib.rand(400))",
    "lib.binomial((lib.rand(300, dtype=lib.float64) * 3000).floor(), "
    "lib.rand(300, dtype=lib.float64))",
    "lib.binomial(lib.tensor([0., 1., 5., 10., 20., 37., 100., 1000., 7.]), "
    "lib.tensor([0.3, 0.5, 0.9, 0.45, 0.6, 0.2, 0.95, 0.51, 1.0]))",
    "lib.cat([lib.distributions.Binomial(10, lib.tensor([0.3, 0.6])).sample((4,)).flatten(), "
    "lib.rand(3)])",
])
def test_binomial_draws_pytorchs_stream(expr: str) -> None:
    """torch.binomial (and Binomial.sample) on the CPU is PyTorch's sample_binomial per
    element: inversion below a mean of 10, BTRS above, in the dtype's arithmetic where
    PyTorch's is, and leaves the generator where PyTorch's is."""
    same(*draw_both(expr))


def test_generator_is_named_and_printed_as_torchs() -> None:
    """torch.Generator is torch._C.Generator (`<torch._C.Generator object at 0x...>`);
    ember's prints `ember._C.Generator` (torch._C under the alias), and pickles and
    copies with its state, whatever name it prints."""
    import copy
    import pickle

    for L in (torch, ember):
        g = L.Generator().manual_seed(3)
        assert type(g) is L._C.Generator and type(g).__name__ == "Generator"
        assert repr(g).startswith(f"<{L.__name__}._C.Generator object at 0x")
        twins = (pickle.loads(pickle.dumps(g)), copy.deepcopy(g))
        expected = L.rand(3, generator=g).tolist()
        assert [L.rand(3, generator=t).tolist() for t in twins] == [expected, expected]


# -- the compiled transforms (numba, backends/cpu/numba_random.py) ------------------------

@pytest.fixture
def compiled_random(monkeypatch):
    """The CPU backend's compiled random transforms, taken from their smallest size on
    (numba's import is already paid in a test run)."""
    pytest.importorskip("numba")
    from ember.backends.cpu import compiled
    monkeypatch.setattr(compiled, "_RANDOM_FIRST_USE", compiled._RANDOM_MIN)
    if compiled.random_kernels(compiled._RANDOM_MIN) is None:
        pytest.skip(f"numba is off: {compiled.unavailable}")


def _reference(monkeypatch, build):
    """`build()` drawn with the NumPy reference transforms (no compiled kernel)."""
    with monkeypatch.context() as m:
        m.setattr(cpu_random, "_compiled", lambda kernel: None)
        return build()


@pytest.mark.parametrize("expr", [
    "lib.randn(1024 + 16 * 7 + 5)", "lib.randn(64, 33, dtype=lib.float64)",
    "lib.empty(4000).normal_(0.5, 0.02)", "lib.empty(2048, dtype=lib.float64).normal_(-3, 7.5)",
    "lib.empty(3000, dtype=lib.float16).normal_(2, 3)",
    "lib.empty(3000, dtype=lib.bfloat16).normal_()",
    "lib.randperm(1024)", "lib.randperm(5003)", "lib.randperm(3000, dtype=lib.int32)",
    "lib.randn(40, 50).t().contiguous()"])
def test_compiled_transforms_draw_the_reference_and_pytorchs_numbers(
        compiled_random, monkeypatch, expr: str) -> None:
    """Bit for bit: the compiled Box-Muller (hardware fused multiply-adds where PyTorch's
    AVX2 code has them, libm for float64) and shuffles against the NumPy reference, and
    against PyTorch from the same seed."""
    ember.manual_seed(5)
    reference = _reference(monkeypatch, lambda: eval(expr, {"lib": ember}))
    ember.manual_seed(5)
    ours = eval(expr, {"lib": ember})
    np.testing.assert_array_equal(ours.float().numpy(), reference.float().numpy())
    torch.manual_seed(5)
    theirs = eval(expr, {"lib": torch})
    if "0.02" not in expr:  # (half floats with an inexact std: see the half fills test)
        np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


def test_compiled_transforms_keep_the_stream_in_step(compiled_random) -> None:
    """Draws after a compiled one continue PyTorch's stream (the same words consumed)."""
    seeded(11)
    ours = [ember.randn(2000), ember.randperm(1500), ember.rand(5), ember.randn(7)]
    theirs = [torch.randn(2000), torch.randperm(1500), torch.rand(5), torch.randn(7)]
    for a, b in zip(ours, theirs):
        same(a, b)
