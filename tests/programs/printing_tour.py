"""Printed forms, as debugging and teaching scripts print things: print(t) / repr(t) of
every dtype with edge values (nan, +-inf, -0.0, tiny, huge, mixed magnitudes that switch to
scientific notation), 0-d, empty, summarised, 3-D/4-D tensors, requires_grad / grad_fn
forms, torch.set_printoptions (precision, sci_mode, threshold, edgeitems, linewidth,
profile), torch.Size / dtype / device / finfo / iinfo reprs, nn.Parameter, the reprs of many
nn modules and optimizers, f-strings and format() of 0-d tensors, tolist / item / numpy."""
import math

import torch
import torch.nn as nn

torch.manual_seed(0)


def show(title, obj):
    print(f"== {title}")
    print(obj)


# --- floating dtypes with edge values
edge = [0.0, -0.0, 1.0, -1.5, float("nan"), float("inf"), -float("inf")]
for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
    show(f"edge {dt}", torch.tensor(edge, dtype=dt))
show("tiny", torch.tensor([1e-8, 1.0, 2.0]))
show("huge", torch.tensor([1e10, 1.0, 2.0]))
show("mixed", torch.tensor([1e-4, 123.456, 1e5]))
show("mixed 2", torch.tensor([0.001, 1000.0]))
show("sci with nan", torch.tensor([1e-8, float("nan"), 1e8]))
show("integral floats", torch.tensor([1.0, 2.0, -3.0, 100.0]))
show("integral large", torch.tensor([1e8, 2.0, 3.0]))
show("integral inf", torch.tensor([1.0, float("inf"), 3.0]))
show("all nan", torch.tensor([float("nan"), float("nan")]))
show("float64 precise", torch.tensor([1 / 3, 2 / 3], dtype=torch.float64))
show("half mixed", torch.tensor([0.1, 1000.0, 65504.0], dtype=torch.float16))
show("bf16 values", torch.tensor([0.1, 3.14159, 1e30], dtype=torch.bfloat16))
show("float32 small", torch.tensor([1.2e-5, 3.4e-6]))
show("negative zero only", torch.tensor([-0.0]))

# --- complex
show("complex64", torch.tensor([1 + 2j, -0.5j, 3.0]))
show("complex128", torch.tensor([1e-8 + 1j, 1e5 - 2j], dtype=torch.complex128))
show("complex nan", torch.tensor([complex(float("nan"), 1.0), complex(1.0, float("inf"))]))
show("complex 0-d", torch.tensor(2 - 3j))

# --- integer and bool dtypes
for dt in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
    info = torch.iinfo(dt)
    show(f"int {dt}", torch.tensor([info.min, -1 if info.min < 0 else 0, 0, info.max], dtype=dt))
show("huge int64", torch.tensor([2 ** 62, -(2 ** 63), 7]))
show("bool", torch.tensor([True, False, True]))
show("bool 2-d", torch.tensor([[True], [False]]))

# --- shapes: 0-d, empty, summarised, n-d
show("0-d float", torch.tensor(3.5))
show("0-d int", torch.tensor(7))
show("0-d bool", torch.tensor(True))
show("0-d nan", torch.tensor(float("nan")))
show("0-d half", torch.tensor(1.5, dtype=torch.float16))
show("empty (0,)", torch.tensor([]))
show("empty (0,3)", torch.empty(0, 3))
show("empty int (2,0)", torch.zeros(2, 0, dtype=torch.int64))
show("empty half (0,)", torch.zeros(0, dtype=torch.float16))
show("large 1-d", torch.arange(2000.0))
show("large int", torch.arange(1500))
show("large 2-d", torch.arange(40000).reshape(200, 200))
show("3-d", torch.arange(24.0).reshape(2, 3, 4) / 7)
show("4-d", torch.arange(16).reshape(2, 2, 2, 2))
show("wide row", torch.linspace(-1, 1, 30))
show("column", torch.arange(5.0).reshape(5, 1))
show("randn", torch.randn(3, 4))
show("transposed", torch.arange(6.0).reshape(2, 3).t())

# --- autograd forms
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = a + 1
show("requires_grad", a)
show("AddBackward0", b)
show("MulBackward0", a * 2)
show("SumBackward0", (a * a).sum())
show("MeanBackward0", a.mean())
show("PowBackward0", a ** 2)
show("DivBackward0", a / 3)
show("ExpBackward0", a.exp())
show("ViewBackward0", a.view(2, 1))
show("SelectBackward0", a[0])
show("MmBackward0", a.view(1, 2) @ torch.ones(2, 2))
print(type(b.grad_fn).__name__, b.grad_fn.name())
show("detached", b.detach())
with torch.no_grad():
    show("no_grad", a * 2)
c = torch.tensor(2.0, requires_grad=True)
show("0-d requires_grad", c)
show("int tensor complex", torch.tensor([1, 2]) * 1j)
p = nn.Parameter(torch.tensor([[0.5, -0.25]]))
show("Parameter", p)
show("Parameter no grad", nn.Parameter(torch.ones(2), requires_grad=False))
print("repr(p) == str(p)", repr(p) == str(p))
show("repr of tensor", repr(torch.tensor([1.0, 2.5])))

# --- printoptions
x = torch.tensor([math.pi, math.e * 100, 1 / 7])
torch.set_printoptions(precision=2)
show("precision=2", x)
torch.set_printoptions(precision=6)
show("precision=6", x)
torch.set_printoptions(sci_mode=True)
show("sci_mode=True", x)
torch.set_printoptions(sci_mode=False)
show("sci_mode=False", torch.tensor([1e-8, 1e8]))
torch.set_printoptions(sci_mode=None, precision=4)
show("threshold default 1000", torch.arange(1001.0))
torch.set_printoptions(threshold=5, edgeitems=2)
show("threshold=5 edgeitems=2", torch.arange(10))
show("threshold=5 2-d", torch.arange(36.0).reshape(6, 6))
torch.set_printoptions(threshold=1000, edgeitems=3)
torch.set_printoptions(linewidth=40)
show("linewidth=40", torch.arange(30.0))
torch.set_printoptions(profile="short")
show("profile short", torch.tensor([math.pi, 1.0]))
show("profile short large", torch.arange(100))
torch.set_printoptions(profile="full")
show("profile full", torch.arange(1200).reshape(2, 600)[:, :5])
torch.set_printoptions(profile="default")
show("profile default", torch.tensor([math.pi, 1.0]))

# --- Size, dtype, device, finfo, iinfo
t = torch.zeros(2, 3, 4)
show("Size", t.shape)
show("Size repr", repr(t.size()))
print("Size index", t.shape[1], t.size(-1), t.shape[1:], len(t.shape), t.numel())
print("Size ops", t.shape + (5,), torch.Size([1, 2]) == (1, 2), torch.Size([]))
print("Size numel", torch.Size([2, 3]).numel(), type(t.shape[0]).__name__)
for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool,
           torch.complex64, torch.uint8, torch.int8):
    print("dtype", dt, repr(dt), str(dt), dt.is_floating_point, dt.is_complex, dt.itemsize)
show("device", t.device)
print("device repr", repr(t.device), repr(torch.device("cpu")), repr(torch.device("cuda:1")),
      repr(torch.device("cuda", 0)), torch.device("meta"))
print("device str", str(torch.device("cpu")), torch.device("cpu").type, torch.device("cpu").index)
for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
    show(f"finfo {dt}", torch.finfo(dt))
    fi = torch.finfo(dt)
    print("finfo fields", fi.bits, fi.eps, fi.max, fi.min, fi.tiny, fi.smallest_normal,
          fi.resolution, fi.dtype)
for dt in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64):
    show(f"iinfo {dt}", torch.iinfo(dt))
    ii = torch.iinfo(dt)
    print("iinfo fields", ii.bits, ii.min, ii.max, ii.dtype)

# --- nn modules
modules = [
    nn.Conv2d(3, 16, 3),
    nn.Conv2d(3, 16, kernel_size=(3, 5), stride=2, padding=(1, 2), dilation=2, groups=1,
              bias=False, padding_mode="reflect"),
    nn.Conv2d(8, 8, 3, padding="same", groups=8),
    nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1, output_padding=0, bias=False),
    nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=1),
    nn.Conv1d(4, 8, 5, padding=2),
    nn.Conv3d(1, 2, (1, 3, 3)),
    nn.Linear(10, 5),
    nn.Linear(10, 5, bias=False),
    nn.Bilinear(3, 4, 5),
    nn.BatchNorm1d(10),
    nn.BatchNorm2d(16, eps=1e-3, momentum=0.01, affine=False, track_running_stats=False),
    nn.LayerNorm(64),
    nn.LayerNorm((4, 8), eps=1e-6, elementwise_affine=False),
    nn.GroupNorm(4, 16),
    nn.InstanceNorm2d(8, affine=True),
    nn.Embedding(100, 16, padding_idx=0),
    nn.Embedding(100, 16, max_norm=1.0),
    nn.Embedding(10, 3, padding_idx=1, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True,
                 sparse=True),
    nn.EmbeddingBag(10, 3, mode="mean"),
    nn.LSTM(10, 20),
    nn.LSTM(10, 20, num_layers=2, bidirectional=True, batch_first=True, dropout=0.1),
    nn.GRU(8, 16, num_layers=3, dropout=0.2),
    nn.GRU(8, 16, bias=False, batch_first=True),
    nn.RNN(4, 8, nonlinearity="relu"),
    nn.LSTMCell(4, 8),
    nn.GRUCell(4, 8, bias=False),
    nn.MultiheadAttention(32, 4),
    nn.MultiheadAttention(32, 4, dropout=0.1, batch_first=True, kdim=16, vdim=8),
    nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.1),
    nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, norm_first=True, activation="gelu"),
    nn.Dropout(0.3),
    nn.Dropout2d(),
    nn.AlphaDropout(0.2),
    nn.ReLU(inplace=True),
    nn.LeakyReLU(0.2),
    nn.ELU(alpha=0.5),
    nn.GELU(approximate="tanh"),
    nn.GELU(),
    nn.Softmax(dim=1),
    nn.LogSoftmax(dim=-1),
    nn.Hardtanh(-2.0, 2.0),
    nn.PReLU(num_parameters=3),
    nn.Softplus(beta=2, threshold=10),
    nn.SiLU(),
    nn.Tanh(),
    nn.Sigmoid(),
    nn.Threshold(0.1, 20),
    nn.CELU(1.5),
    nn.RReLU(0.1, 0.3),
    nn.Hardswish(),
    nn.Mish(),
    nn.MaxPool2d(2),
    nn.MaxPool2d(3, stride=2, padding=1, dilation=1, ceil_mode=True),
    nn.AvgPool2d(2, stride=1, count_include_pad=False),
    nn.AdaptiveAvgPool2d((1, 1)),
    nn.AdaptiveMaxPool1d(4),
    nn.MaxPool1d(2, return_indices=True),
    nn.AvgPool1d(3),
    nn.LPPool2d(2, 3),
    nn.Upsample(scale_factor=2, mode="nearest"),
    nn.Upsample(size=(8, 8), mode="bilinear", align_corners=False),
    nn.PixelShuffle(2),
    nn.Flatten(),
    nn.Unflatten(1, (2, 5)),
    nn.Identity(),
    nn.ZeroPad2d(1),
    nn.ReflectionPad2d((1, 2, 0, 1)),
    nn.CrossEntropyLoss(label_smoothing=0.1),
    nn.MSELoss(reduction="sum"),
    nn.CosineSimilarity(dim=1),
    nn.PairwiseDistance(),
]
for m in modules:
    print(m)

seq = nn.Sequential(
    nn.Conv2d(1, 4, 3),
    nn.BatchNorm2d(4),
    nn.ReLU(),
    nn.Sequential(nn.Flatten(), nn.Linear(4, 2)),
)
show("Sequential", seq)
show("ModuleList", nn.ModuleList([nn.Linear(2, 2) for _ in range(3)]))
show("ModuleList mixed", nn.ModuleList([nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)]))
show("ModuleDict", nn.ModuleDict({"enc": nn.Linear(3, 4), "act": nn.Tanh(),
                                  "blocks": nn.ModuleList([nn.Identity(), nn.Identity()])}))
show("empty Sequential", nn.Sequential())
from collections import OrderedDict  # noqa: E402

show("OrderedDict Sequential", nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)),
                                                            ("act", nn.ReLU())])))
show("TransformerEncoder", nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2,
                                                 enable_nested_tensor=False))


class Block(nn.Module):
    def __init__(self, dim, scale):
        super().__init__()
        self.dim = dim
        self.scale = scale
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def extra_repr(self):
        return f"dim={self.dim}, scale={self.scale}"

    def forward(self, x):
        return self.norm(self.proj(x)) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(8, 0.5) for _ in range(2)])
        self.head = nn.Linear(8, 1)
        self.register_buffer("steps", torch.zeros(()))
        self.temperature = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return self.head(self.blocks(x))


net = Net()
show("custom Net", net)
show("Block", Block(4, 2.0))
print("named_modules", [n for n, _ in net.named_modules()])
print("named_parameters", [(n, tuple(p.shape)) for n, p in net.named_parameters()])
print("state_dict keys", list(net.state_dict().keys()))
print("param count", sum(p.numel() for p in net.parameters()))

# --- optimizers
params = list(net.parameters())
optimizers = [
    torch.optim.SGD(params, lr=0.1),
    torch.optim.SGD(params, lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-4),
    torch.optim.Adam(params, lr=1e-3),
    torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, amsgrad=True),
    torch.optim.RMSprop(params, lr=0.01, alpha=0.9),
    torch.optim.Adagrad(params),
    torch.optim.Adam([{"params": net.blocks.parameters()},
                      {"params": net.head.parameters(), "lr": 1e-2}], lr=1e-3),
]
for opt in optimizers:
    print(opt)

# --- formatting scalars
s = torch.tensor(3.14159265)
print(f"{s:.3f}", f"{s:8.2f}|", f"{s:e}", format(s, ".1%"), f"{torch.tensor(42):d}",
      f"{torch.tensor(42):5d}|", f"{s}")
print("format 0-d", format(torch.tensor(2.5), ""), "{:.2f}".format(torch.tensor(1 / 3)))
print("str of 0-d", str(torch.tensor(0.1)), str(torch.tensor(-0.0)))
print("item", s.item(), torch.tensor(5).item(), torch.tensor(True).item(),
      torch.tensor(1.5, dtype=torch.float16).item(), torch.tensor(1 + 1j).item())
print("item types", type(s.item()).__name__, type(torch.tensor(5).item()).__name__,
      type(torch.tensor(True).item()).__name__)
print("tolist", torch.tensor([[1.5, 2.0], [3.0, 4.0]]).tolist(), torch.tensor(3).tolist(),
      torch.tensor([True, False]).tolist(), torch.arange(3, dtype=torch.uint8).tolist())
print("tolist float32", torch.tensor([0.1, 0.2]).tolist())
print("tolist bfloat16", torch.tensor([0.1, 0.2], dtype=torch.bfloat16).tolist())
print("numpy", torch.tensor([[0.5, 1.0]]).numpy(), torch.arange(4).numpy(),
      torch.tensor([True]).numpy())
print("numpy repr", repr(torch.tensor([0.1, 2.0]).numpy()), repr(torch.arange(3).numpy()))
print("str(dtype)", str(torch.tensor(1.0).dtype), str(torch.tensor(1).dtype))
print("in list", [torch.tensor(1.0), torch.tensor([1, 2])])
print("in dict", {"loss": torch.tensor(0.25)})
print("tuple", (torch.tensor(1), torch.tensor(2.0, requires_grad=True)))
print("int()", int(torch.tensor(3.9)), float(torch.tensor(2)), bool(torch.tensor([1])),
      complex(torch.tensor(1.0)))
print("named tensor of ones", torch.ones(2, 2, dtype=torch.float64))
print("is_tensor", torch.is_tensor(s), torch.is_floating_point(s), s.dim(), s.ndim,
      s.element_size(), s.is_contiguous())
print("type()", s.type(), torch.tensor([1]).type(), torch.tensor([True]).type(),
      torch.tensor([1.0], dtype=torch.float64).type())

# --- dtype suffixes, requires_grad together with dtype, views, more grad_fn names
show("float64 suffix", torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True))
show("int32 suffix", torch.tensor([1, 2], dtype=torch.int32))
show("empty int32", torch.tensor([], dtype=torch.int32))
show("empty float64 (0,3)", torch.empty(0, 3, dtype=torch.float64))
show("empty bool", torch.zeros(0, 2, 2, dtype=torch.bool))
show("empty requires_grad", torch.zeros(0, requires_grad=True))
show("half randn", torch.randn(2, 3).half())
show("bf16 randn", torch.randn(2, 3).bfloat16())
show("expanded", torch.tensor([1.0, 2.0]).expand(3, 2))
show("strided", torch.arange(10.0)[::3])
show("float64 wide", torch.tensor([1e-10, 1e10], dtype=torch.float64))
show("int negative wide", torch.tensor([[-1000000, 2], [3, 40]]))
show("large negative summarised", -torch.arange(3000.0).reshape(30, 100) / 3)
show("large 3-d", torch.arange(2 * 40 * 30).reshape(2, 40, 30))
show("large sci", torch.logspace(-10, 10, 1500))
show("large bool", torch.arange(1200) % 3 == 0)
show("large complex", torch.arange(1100.0).to(torch.complex64) * (1 - 1j))
show("uint8 image", torch.arange(0, 256, 37, dtype=torch.uint8).reshape(1, 7))
show("complex float16 edge", torch.tensor([1e-5 + 2j, 3 - 1e4j]))
w = torch.randn(3, 2, requires_grad=True)
lin = nn.Linear(2, 3)
x2 = torch.randn(4, 2)
for name, out in [
    ("linear", lin(x2)), ("relu", torch.relu(w)), ("sigmoid", torch.sigmoid(w)),
    ("tanh", torch.tanh(w)), ("transpose", w.t()), ("permute", w.permute(1, 0)),
    ("unsqueeze", w.unsqueeze(0)), ("squeeze", w.unsqueeze(0).squeeze(0)),
    ("expand", w[:1].expand(3, 2)), ("index", w[[0, 2]]), ("slice", w[1:]),
    ("cat", torch.cat([w, w])), ("stack", torch.stack([w, w])), ("clone", w.clone()),
    ("neg", -w), ("rsub", 1 - w), ("sub", w - 1), ("max", w.max()), ("max dim", w.max(0)[0]),
    ("log_softmax", torch.log_softmax(w, 1)), ("softmax", w.softmax(-1)),
    ("nll", nn.functional.nll_loss(torch.log_softmax(w, 1), torch.tensor([0, 1, 0]))),
    ("cross_entropy", nn.functional.cross_entropy(w, torch.tensor([0, 1, 0]))),
    ("mse", nn.functional.mse_loss(w, torch.zeros(3, 2))), ("to half", w.half()),
    ("to float64", w.double()), ("reshape", w.reshape(6)), ("flatten", w.flatten()),
    ("matmul", w @ w.t()), ("bmm", torch.bmm(w[None], w.t()[None])), ("abs", w.abs()),
    ("sqrt", w.abs().sqrt()), ("sum dim", w.sum(1)), ("norm", w.norm()), ("where",
    torch.where(w > 0, w, 0.0)), ("clamp", w.clamp(min=0)), ("masked_fill",
    w.masked_fill(w > 0, 0.0)), ("unbind", w.unbind(0)[0]), ("split", w.split(1)[0]),
    ("chunk", w.chunk(3)[1]), ("gather", w.gather(1, torch.zeros(3, 1, dtype=torch.long))),
    ("mul scalar", w * 2), ("add tensor", w + w), ("div tensor", w / (w.abs() + 1)),
    ("pow tensor", w.abs() ** w), ("dropout", nn.functional.dropout(w, 0.0)),
    ("layer_norm", nn.functional.layer_norm(w, (2,))), ("embedding",
    nn.functional.embedding(torch.tensor([0, 1]), w)), ("conv2d", nn.functional.conv2d(
    w.view(1, 1, 3, 2), torch.ones(1, 1, 2, 2))), ("var", w.var()), ("std", w.std(0)),
    ("cumsum", w.cumsum(0)), ("exp2", torch.exp2(w)), ("logsumexp", w.logsumexp(1)),
    ("einsum", torch.einsum("ij,ij->i", w, w)), ("repeat", w.repeat(2, 1)),
    ("mean dim", w.mean(dim=0, keepdim=True)), ("amax", w.amax(1)), ("sort", w.sort(1)[0]),
    ("topk", w.topk(1, dim=1)[0]), ("narrow", w.narrow(0, 0, 2)), ("contiguous",
    w.t().contiguous()), ("diag", torch.diag(w[:2])), ("tril", w.tril()),
]:
    print(name, type(out.grad_fn).__name__ if out.grad_fn is not None else None)
y = w.clone()
y[0] = 0
print("setitem", type(y.grad_fn).__name__)
z = w * 2
z.add_(1)
print("inplace", type(z.grad_fn).__name__, z._version)
print("next_functions", [type(f).__name__ if f is not None else None
                         for f, _ in (w * 2 + 1).grad_fn.next_functions])
print("leaf grad_fn", w.grad_fn, w.is_leaf, (w * 2).is_leaf, w.grad)

# --- named tuples, packed sequences, distributions, containers of parameters
v = torch.tensor([[3.0, 1.0, 2.0], [0.5, 0.25, 4.0]])
print(v.max(dim=1))
print(torch.sort(v, dim=1, descending=True))
print(v.topk(2))
print(torch.min(v, 0))
print(v.median(dim=1))
print(torch.linalg.eigh(torch.tensor([[2.0, 1.0], [1.0, 2.0]])))
print(torch.aminmax(v))
print(torch.unique(torch.tensor([3, 1, 3, 2]), return_counts=True))
print(v.kthvalue(2, dim=1))
print(torch.var_mean(v, dim=1))
print(torch.frexp(torch.tensor([8.0, 0.75])))
print(type(v.max(dim=1)).__name__, isinstance(v.max(dim=1), tuple), len(v.max(dim=1)))
packed = nn.utils.rnn.pack_padded_sequence(torch.arange(12.0).reshape(3, 2, 2),
                                           torch.tensor([3, 2]))
print(packed)
print(nn.utils.rnn.pack_sequence([torch.tensor([1.0, 2.0, 3.0]), torch.tensor([4.0])]))
print(torch.distributions.Normal(torch.tensor(0.0), torch.tensor(1.0)))
print(torch.distributions.Categorical(probs=torch.tensor([0.25, 0.75])))
print(torch.distributions.Bernoulli(logits=torch.tensor([0.5, -1.0])))
print(torch.distributions.Uniform(0.0, 2.0))
print(torch.distributions.MultivariateNormal(torch.zeros(2), torch.eye(2)))
print(nn.ParameterList([nn.Parameter(torch.ones(2)), nn.Parameter(torch.zeros(2, 3))]))
print(nn.ParameterDict({"a": nn.Parameter(torch.ones(2)), "b": nn.Parameter(torch.zeros(1, 2))}))

# --- more module reprs
more = [
    nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular"),
    nn.Conv2d(2, 4, 3, padding="valid", bias=False),
    nn.Conv1d(2, 2, 3, stride=(2,), dilation=(1,)),
    nn.ConvTranspose1d(2, 2, 3, output_padding=0),
    nn.ConvTranspose3d(1, 1, 2, stride=2),
    nn.LSTM(4, 8, proj_size=2),
    nn.LSTM(4, 8, bias=False, num_layers=1),
    nn.RNN(4, 8, num_layers=2, nonlinearity="tanh", bidirectional=True),
    nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                   dim_feedforward=32),
    nn.TransformerDecoderLayer(16, 2, 32, batch_first=True),
    nn.Upsample(scale_factor=2.0, mode="bicubic", align_corners=True),
    nn.Upsample(scale_factor=(2, 3), mode="nearest"),
    nn.UpsamplingBilinear2d(scale_factor=2),
    nn.UpsamplingNearest2d(size=4),
    nn.Softmax2d(), nn.Softmin(1), nn.GLU(), nn.Hardshrink(0.3), nn.Softshrink(),
    nn.Tanhshrink(), nn.LogSigmoid(), nn.Softsign(), nn.ReLU6(), nn.SELU(), nn.Hardsigmoid(),
    nn.MaxUnpool2d(2, stride=2), nn.Fold(output_size=(4, 4), kernel_size=2),
    nn.Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1), nn.ChannelShuffle(2),
    nn.PixelUnshuffle(2), nn.ConstantPad1d(2, 3.5), nn.ReplicationPad2d(1),
    nn.CircularPad2d(1), nn.ZeroPad1d((1, 2)), nn.AdaptiveAvgPool1d(3), nn.AdaptiveMaxPool2d(
        (None, 3)), nn.AdaptiveAvgPool3d(1), nn.MaxPool3d(2), nn.AvgPool3d(2, stride=1),
    nn.FractionalMaxPool2d(2, output_size=3),
    nn.BCEWithLogitsLoss(pos_weight=torch.ones(2)), nn.BCELoss(), nn.NLLLoss(ignore_index=0),
    nn.SmoothL1Loss(beta=0.5), nn.HuberLoss(delta=2.0), nn.KLDivLoss(reduction="batchmean",
    log_target=True), nn.CTCLoss(blank=0, zero_infinity=True), nn.TripletMarginLoss(margin=0.5),
    nn.CosineEmbeddingLoss(), nn.MarginRankingLoss(0.1), nn.L1Loss(), nn.GaussianNLLLoss(),
    nn.LazyLinear(10), nn.LazyConv2d(8, 3), nn.RMSNorm(8), nn.RMSNorm([2, 4], eps=1e-5),
    nn.LocalResponseNorm(2), nn.BatchNorm3d(4), nn.InstanceNorm1d(4), nn.SyncBatchNorm(4),
    nn.CrossMapLRN2d(3) if hasattr(nn, "CrossMapLRN2d") else nn.Identity(),
    nn.Embedding.from_pretrained(torch.ones(3, 2)),
    nn.EmbeddingBag(10, 4, mode="sum", padding_idx=0),
    nn.AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[10, 50]),
]
for m in more:
    print(m)
print(nn.utils.parametrizations.weight_norm(nn.Linear(3, 2)))
print(nn.utils.parametrizations.spectral_norm(nn.Linear(3, 2)))
print(nn.utils.weight_norm(nn.Conv1d(2, 2, 3)))
print(nn.utils.spectral_norm(nn.Linear(3, 2)))
for opt in [
    torch.optim.Adamax(params), torch.optim.NAdam(params), torch.optim.RAdam(params),
    torch.optim.Adadelta(params), torch.optim.ASGD(params), torch.optim.Rprop(params),
    torch.optim.LBFGS(params), torch.optim.SGD(params, lr=0.1, maximize=True, foreach=False),
    torch.optim.Adam(params, lr=torch.tensor(0.01), fused=False),
]:
    print(opt)

# --- dtype aliases, layout, memory formats, printoptions on other dtypes
print("aliases", torch.float, torch.double, torch.half, torch.long, torch.int, torch.short,
      torch.cfloat, torch.cdouble, torch.float == torch.float32, torch.bool)
print("layout", torch.strided, torch.tensor([1]).layout, torch.sparse_coo)
print("memory formats", torch.channels_last, torch.contiguous_format, torch.preserve_format,
      torch.channels_last_3d)
print("extra dtypes", torch.uint16, torch.uint32, torch.uint64, torch.float8_e4m3fn,
      torch.float8_e5m2, torch.complex32)
print("uint16", torch.tensor([1, 65535], dtype=torch.uint16))
print("uint32", torch.tensor([1, 2 ** 32 - 1], dtype=torch.uint32))
print("float8", torch.tensor([0.1, 1.0, 448.0], dtype=torch.float8_e4m3fn))
torch.set_printoptions(precision=2)
print("precision 2 half", torch.tensor([1.23456, 2.5], dtype=torch.float16))
print("precision 2 complex", torch.tensor([1.23456 + 2.34567j]))
print("precision 2 float64", torch.tensor([1 / 3], dtype=torch.float64))
torch.set_printoptions(precision=10)
print("precision 10 float32", torch.tensor([1 / 3]))
print("precision 10 float64", torch.tensor([1 / 3], dtype=torch.float64))
torch.set_printoptions(sci_mode=True, precision=3)
print("sci ints", torch.tensor([1, 2000]))
print("sci 0-d", torch.tensor(12345.678))
print("sci integral floats", torch.tensor([1.0, 2.0]))
torch.set_printoptions(profile="default")
torch.set_printoptions(linewidth=30)
print("linewidth 30 2-d", torch.randn(3, 8))
print("linewidth 30 requires grad", torch.arange(10.0, requires_grad=True) * 1)
torch.set_printoptions(profile="default")
print("grad after backward", end=" ")
q = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
(q ** 2).sum().backward()
print(q.grad)
print("subnormal", torch.tensor([5e-324, 1.0], dtype=torch.float64))
print("float16 range", torch.tensor([65504.0, 6e-8], dtype=torch.float16))
q2 = torch.zeros(3)
q2[0] = q * 0 + 1 if False else q[0] * 2
print("row filled from graph", q2)

# --- storages, as tutorials print them
import warnings  # noqa: E402

warnings.filterwarnings("ignore", message="TypedStorage is deprecated")
st = torch.tensor([1.0, 2.5]).storage()
print(st)
print(type(st).__name__, st.size(), st.dtype, isinstance(st, torch.tensor([1.0]).storage_type()),
      torch.tensor([1.0]).storage_type().__name__)
print(torch.tensor([1.0, 2.5]).untyped_storage())
print(torch.tensor([1, 2]).storage())
print(torch.tensor([True, False]).untyped_storage().tolist(), len(torch.ones(3).untyped_storage()))
print(torch.arange(6.0).reshape(2, 3).t().storage().tolist())
print(torch.tensor([1.0]).storage_offset(), torch.arange(6.0)[2:].storage_offset())

# --- printoptions corners: no edge items, precision 0, tiny threshold
torch.set_printoptions(edgeitems=0, threshold=2)
print(torch.tensor([math.pi, -1e-3, 12345.678]), torch.tensor([1.0, 2.0]))
print(torch.arange(20.0).reshape(4, 5), torch.tensor(0.5))
torch.set_printoptions(profile="default")
torch.set_printoptions(precision=0)
print(torch.tensor([math.pi, -1e-3, 12345.678]), torch.tensor([1 + 2j, 1e-4 - 3j]))
torch.set_printoptions(threshold=1, edgeitems=1)
print(torch.arange(27).reshape(3, 3, 3))
torch.set_printoptions(profile="default")
# --- whole-tensor writes in the graph, as printed
a = torch.tensor([1.0, 2.0], requires_grad=True)
buf = torch.zeros(2)
buf.copy_(a)
print("copy_ into a buffer", buf)
(buf * torch.tensor([3.0, 4.0])).sum().backward()
print("its gradient", a.grad)
for method, args in (("zero_", ()), ("fill_", (2.0,)), ("fill_", (torch.tensor(3.0),)),
                     ("copy_", (torch.ones(2),))):
    z = a * 1
    getattr(z, method)(*args)
    print(method, z)
print("done")
