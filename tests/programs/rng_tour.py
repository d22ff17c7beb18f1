"""An RNG and reproducibility tour as a "make your runs reproducible" notebook walks
through it: manual_seed, torch.Generator objects (get_state/set_state, initial_seed, seed,
manual_seed), torch.random.fork_rng, get_rng_state/set_rng_state, bit-for-bit draws of
rand/randn/randint/randperm/normal/bernoulli/multinomial/poisson and the in-place samplers
(exponential_, geometric_, cauchy_, log_normal_, random_, uniform_, normal_), dropout
masks, the nn.init functions, generator= draws in float64/float16/complex, randint dtypes,
and torch.use_deterministic_algorithms; then a seeded training run repeated twice."""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_printoptions(precision=4)

print("manual_seed returns", type(torch.manual_seed(42)).__name__)
print("initial_seed", torch.initial_seed())
a = torch.rand(3)
torch.manual_seed(42)
b = torch.rand(3)
print("rand", a, "repeat equal", torch.equal(a, b))
print("randn", torch.randn(2, 3))
print("randint", torch.randint(0, 10, (6,)), torch.randint(5, (2, 2)), torch.randint(3, 7, (3,)).dtype)
print("randint dtypes", torch.randint(0, 255, (4,), dtype=torch.uint8), torch.randint(-5, 5, (3,), dtype=torch.int32),
      torch.randint(0, 2, (3,), dtype=torch.bool), torch.randint(0, 5, (3,), dtype=torch.float32))
print("randperm", torch.randperm(10), torch.randperm(5, dtype=torch.int32))
print("normal", torch.normal(0.0, 1.0, size=(4,)), torch.normal(torch.zeros(3), torch.ones(3)),
      torch.normal(torch.arange(3.0), 0.5))
print("normal mean tensor std float", torch.normal(torch.tensor([10.0, 20.0]), 2.0))
print("bernoulli", torch.bernoulli(torch.tensor([0.1, 0.5, 0.9, 0.3])), torch.bernoulli(torch.full((4,), 0.5), p=0.2))
print("multinomial", torch.multinomial(torch.tensor([0.1, 0.2, 0.7]), 5, replacement=True),
      torch.multinomial(torch.tensor([1.0, 2.0, 3.0, 4.0]), 3))
print("multinomial 2d", torch.multinomial(torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.1, 0.9]]), 2))
print("poisson", torch.poisson(torch.tensor([0.5, 2.0, 10.0, 50.0])))
t = torch.empty(5)
print("exponential_", t.exponential_(lambd=2.0))
print("geometric_", t.geometric_(0.3))
print("cauchy_", t.cauchy_(median=0.0, sigma=1.0))
print("log_normal_", t.log_normal_(mean=0.0, std=0.5))
print("uniform_", t.uniform_(-2, 2))
print("normal_", t.normal_(mean=1.0, std=0.1))
print("random_", torch.empty(5).random_(0, 100), torch.empty(3, dtype=torch.int64).random_(10),
      torch.empty(3, dtype=torch.uint8).random_())
print("bernoulli_", torch.empty(6).bernoulli_(0.5), torch.empty(3).bernoulli_(torch.tensor([0.0, 1.0, 0.5])))
print("rand_like", torch.rand_like(torch.zeros(2, 2)), torch.randn_like(torch.zeros(3, dtype=torch.float64)))
print("randint_like", torch.randint_like(torch.zeros(4), 10), torch.randint_like(torch.zeros(2), 3, 6))
print("float64", torch.rand(3, dtype=torch.float64), torch.randn(2, dtype=torch.float64))
print("float16", torch.rand(3, dtype=torch.float16), torch.randn(3, dtype=torch.float16))
print("bfloat16", torch.rand(3, dtype=torch.bfloat16), torch.randn(2, dtype=torch.bfloat16))
print("complex", torch.randn(2, dtype=torch.complex64), torch.randn(2, dtype=torch.cdouble))
print("rand scalar shape", torch.rand(()).shape, torch.randn([]).dim(), torch.rand(0).shape)

# generators
g = torch.Generator()
print("generator", g.initial_seed(), g.device)
g.manual_seed(123)
print("generator manual_seed returns", type(g.manual_seed(123)).__name__, g.initial_seed())
x1 = torch.rand(3, generator=g)
state = g.get_state()
print("state", state.dtype, state.shape, state.device)
x2 = torch.randn(3, generator=g)
g.set_state(state)
x3 = torch.randn(3, generator=g)
print("generator draws", x1, x2, "restored equal", torch.equal(x2, x3))
print("generator float64", torch.randn(2, generator=g, dtype=torch.float64))
print("generator float16", torch.rand(3, generator=g, dtype=torch.float16))
print("generator complex", torch.randn(2, generator=g, dtype=torch.complex64))
print("generator randint", torch.randint(0, 100, (4,), generator=g), torch.randperm(6, generator=g))
print("generator multinomial", torch.multinomial(torch.ones(5), 3, generator=g))
print("generator normal", torch.normal(0.0, 1.0, (3,), generator=g), torch.empty(2).normal_(generator=g))
print("generator bernoulli", torch.bernoulli(torch.full((5,), 0.5), generator=g))
print("generator uniform_", torch.empty(3).uniform_(0, 1, generator=g))
g2 = torch.Generator().manual_seed(123)
print("two generators agree", torch.equal(torch.rand(3, generator=g2), x1))
print("global unaffected", torch.rand(1))
seeded = torch.Generator()
s = seeded.seed()
print("seed() is int", isinstance(s, int), s == seeded.initial_seed())
print("default_generator", torch.default_generator.initial_seed(), type(torch.default_generator).__name__)
print("generator clone state", torch.Generator().set_state(g.get_state()).initial_seed())
gen_dl = torch.Generator().manual_seed(0)
loader = torch.utils.data.DataLoader(list(range(10)), batch_size=4, shuffle=True, generator=gen_dl)
print("loader order", [b.tolist() for b in loader])
print("random_split", [list(s) for s in torch.utils.data.random_split(range(8), [5, 3], generator=torch.Generator().manual_seed(42))])



# the reproducibility docs' DataLoader idiom: seed NumPy and random in each worker
class NoisyDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = torch.utils.data.get_worker_info()
        return i, int(np.random.randint(1000)), random.randint(0, 1000), info.id, torch.initial_seed()


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


g_loader = torch.Generator()
g_loader.manual_seed(0)
worker_loader = torch.utils.data.DataLoader(NoisyDataset(), batch_size=2, num_workers=2, shuffle=True,
                                            worker_init_fn=seed_worker, generator=g_loader)
for batch in worker_loader:
    print("worker batch", [t.tolist() for t in batch])

# global state
torch.manual_seed(7)
st = torch.get_rng_state()
print("rng state", st.dtype, st.shape)
u1 = torch.rand(4)
torch.set_rng_state(st)
u2 = torch.rand(4)
print("set_rng_state replays", torch.equal(u1, u2))
with torch.random.fork_rng():
    torch.manual_seed(999)
    inner = torch.rand(2)
print("fork_rng inner", inner)
outer = torch.rand(2)
torch.set_rng_state(st)
torch.rand(4)
print("fork_rng restored", torch.equal(outer, torch.rand(2)))
with torch.random.fork_rng(devices=[], enabled=False):
    torch.rand(1)
print("fork_rng disabled consumed", torch.rand(1))
print("torch.random", torch.random.initial_seed(), torch.random.get_rng_state().shape)
torch.random.manual_seed(3)
print("torch.random.manual_seed", torch.rand(2))
print("torch.seed is int", isinstance(torch.seed(), int))

# dropout masks and nn.init
torch.manual_seed(0)
drop = nn.Dropout(p=0.5)
print("dropout", drop(torch.ones(8)))
print("functional dropout", F.dropout(torch.ones(2, 4), p=0.25, training=True))
print("dropout eval", F.dropout(torch.ones(3), p=0.5, training=False))
print("dropout2d", F.dropout2d(torch.ones(1, 4, 2, 2), p=0.5).sum((-1, -2)))
print("alpha_dropout", F.alpha_dropout(torch.zeros(6), p=0.5, training=True))
print("feature_alpha_dropout", F.feature_alpha_dropout(torch.zeros(1, 3, 2), p=0.5, training=True))
w = torch.empty(3, 5)
print("uniform_", nn.init.uniform_(w, -0.1, 0.1))
print("normal_", nn.init.normal_(w, 0.0, 0.02))
print("trunc_normal_", nn.init.trunc_normal_(w, std=0.02, a=-0.04, b=0.04))
print("trunc_normal_ default", nn.init.trunc_normal_(torch.empty(4)))
print("xavier_uniform_", nn.init.xavier_uniform_(w, gain=nn.init.calculate_gain("relu")))
print("xavier_normal_", nn.init.xavier_normal_(w, gain=2.0))
for mode in ("fan_in", "fan_out"):
    for nl in ("relu", "leaky_relu"):
        print("kaiming_uniform_", mode, nl, nn.init.kaiming_uniform_(torch.empty(2, 4), a=0.1, mode=mode, nonlinearity=nl))
        print("kaiming_normal_", mode, nl, nn.init.kaiming_normal_(torch.empty(2, 4), mode=mode, nonlinearity=nl))
print("orthogonal_", nn.init.orthogonal_(torch.empty(3, 5)))
o = nn.init.orthogonal_(torch.empty(4, 4), gain=2.0)
print("orthogonal gain", torch.allclose(o @ o.T, 4 * torch.eye(4), atol=1e-5))
print("sparse_", nn.init.sparse_(torch.empty(4, 3), sparsity=0.5, std=0.01))
gi = torch.Generator().manual_seed(11)
print("init generator=", nn.init.kaiming_uniform_(torch.empty(2, 3), generator=gi),
      nn.init.trunc_normal_(torch.empty(3), generator=gi), nn.init.orthogonal_(torch.empty(2, 2), generator=gi))
print("sparse_ generator=", nn.init.sparse_(torch.empty(3, 4), sparsity=0.5, generator=gi))
print("after sparse_", torch.rand(2, generator=gi), torch.rand(2))
print("eye_ dirac_", nn.init.eye_(torch.empty(2, 3)), nn.init.dirac_(torch.empty(2, 2, 3)).sum())
print("constant_ zeros_ ones_", nn.init.constant_(torch.empty(2), 0.3), nn.init.zeros_(torch.empty(1)), nn.init.ones_(torch.empty(1)))
print("calculate_gain", nn.init.calculate_gain("tanh"), nn.init.calculate_gain("leaky_relu", 0.2),
      nn.init.calculate_gain("selu"), nn.init.calculate_gain("conv2d"), nn.init.calculate_gain("sigmoid"))
print("fan in/out", nn.init._calculate_fan_in_and_fan_out(torch.empty(8, 4, 3, 3)))
try:
    nn.init.kaiming_uniform_(torch.empty(3), mode="fan_in")
except ValueError as e:
    print("fan error", e)
try:
    nn.init.calculate_gain("softmax")
except ValueError as e:
    print("gain error", e)
lin = nn.Linear(4, 3)
print("default Linear init", lin.weight, lin.bias)
conv = nn.Conv2d(2, 3, 3)
print("default Conv2d init", conv.weight.flatten()[:6], conv.bias)
emb = nn.Embedding(5, 2, padding_idx=0)
print("default Embedding init", emb.weight)
lstm = nn.LSTM(2, 3)
print("default LSTM init", lstm.weight_hh_l0[:2])

for bad in (lambda: torch.bernoulli(torch.tensor([0.2, 1.5])),
            lambda: torch.empty(3, dtype=torch.uint8).random_(-1, 5),
            lambda: torch.empty(3, dtype=torch.int8).random_(0, 300),
            lambda: torch.empty(2).normal_(0.0, -1.0),
            lambda: torch.randint(5, 2, (3,)),
            lambda: torch.multinomial(torch.tensor([0.5, 0.5]), 3),
            lambda: torch.empty(3).uniform_(2, 1)):
    try:
        bad()
    except RuntimeError as e:
        print("rng error", e)

# determinism switches
print("deterministic", torch.are_deterministic_algorithms_enabled())
torch.use_deterministic_algorithms(True)
print("deterministic on", torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
torch.use_deterministic_algorithms(True, warn_only=True)
print("warn_only", torch.is_deterministic_algorithms_warn_only_enabled())
torch.use_deterministic_algorithms(False)
print("deterministic off", torch.are_deterministic_algorithms_enabled())
print("cudnn flags", torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
print("cudnn set", torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)


# a seeded run, twice: identical losses
def run(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    X = torch.randn(64, 4)
    y = X.sum(1, keepdim=True)
    losses = []
    for step in range(30):
        idx = torch.randperm(64)[:16]
        loss = F.mse_loss(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


first = run(0)
second = run(0)
for step in range(0, 30, 6):
    print(f"seeded step {step:3d} loss {first[step]:.5f}")
print("runs identical", first == second, "other seed differs", run(1) != first)
