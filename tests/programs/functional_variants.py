"""torch.nn.functional's argument variants as vision and NLP code passes them (torchvision
transforms, timm, detectron-style heads, fairseq/HF losses): interpolate in every mode
(align_corners, antialias, scale_factor with recompute_scale_factor, 3-d and 5-d inputs),
pad modes and negative pads, unfold/fold, embedding (padding_idx, max_norm, scale_grad_by_freq),
the classification, regression and metric losses with their options, grid_sample with
affine_grid, pixel_shuffle, normalize, cosine_similarity, pairwise_distance, one_hot,
gumbel_softmax and the dropout variants (seeded), with gradients of the differentiable ones."""

import torch
import torch.nn.functional as F

torch.manual_seed(0)


def show(name, fn):
    """Print a result, or the error PyTorch raises (type and message)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the point is to print the error
        print(name, "error", type(e).__name__, str(e).splitlines()[0])
        return
    print(name, out)


def grad(name, fn, *inputs):
    """Print the output and the gradients of a weighted sum of it."""
    ts = [t.detach().clone().requires_grad_(True) for t in inputs]
    try:
        out = fn(*ts)
        w = torch.arange(1.0, out.numel() + 1).reshape(out.shape) / out.numel()
        (out * w).sum().backward()
    except Exception as e:  # noqa: BLE001
        print(name, "error", type(e).__name__, str(e).splitlines()[0])
        return
    print(name, "out", list(out.shape), fmt(out))
    for i, t in enumerate(ts):
        print(name, "grad", i, None if t.grad is None else fmt(t.grad))


def fmt(t):
    """The values on one line, to 7 significant digits (float32's)."""
    return " ".join(f"{v:.7g}" for v in t.detach().flatten().tolist())


img = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5) / 10
img = img + torch.sin(img * 3)
seq = torch.linspace(-1, 1, 2 * 3 * 7).reshape(2, 3, 7)
vol = torch.linspace(0, 1, 1 * 2 * 3 * 4 * 4).reshape(1, 2, 3, 4, 4)

print("section interpolate")
small = img[:1, :1]
for mode in ("nearest", "nearest-exact"):
    grad(f"interp {mode} up", lambda t, m=mode: F.interpolate(t, size=(6, 7), mode=m), small)
    grad(f"interp {mode} down", lambda t, m=mode: F.interpolate(t, scale_factor=0.6, mode=m), small)
for mode in ("bilinear", "bicubic"):
    for ac in (False, True):
        grad(
            f"interp {mode} ac={ac}",
            lambda t, m=mode, a=ac: F.interpolate(t, size=(5, 3), mode=m, align_corners=a),
            small,
        )
    grad(
        f"interp {mode} antialias",
        lambda t, m=mode: F.interpolate(t, size=(2, 3), mode=m, antialias=True),
        small,
    )
    grad(
        f"interp {mode} antialias up",
        lambda t, m=mode: F.interpolate(t, scale_factor=1.5, mode=m, antialias=True),
        small,
    )
grad(
    "interp recompute",
    lambda t: F.interpolate(t, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
    small,
)
grad(
    "interp no recompute",
    lambda t: F.interpolate(t, scale_factor=1.7, mode="bilinear", recompute_scale_factor=False),
    small,
)
grad(
    "interp scale tuple", lambda t: F.interpolate(t, scale_factor=(0.5, 1.5), mode="nearest"), small
)
grad("interp linear 1d", lambda t: F.interpolate(t, size=10, mode="linear"), seq[:1, :2])
grad(
    "interp linear ac",
    lambda t: F.interpolate(t, scale_factor=2, mode="linear", align_corners=True),
    seq[:1, :1],
)
grad("interp nearest 1d", lambda t: F.interpolate(t, size=4), seq[:1, :1])
grad("interp area", lambda t: F.interpolate(t, size=(3, 2), mode="area"), small)
grad("interp trilinear", lambda t: F.interpolate(t, size=(2, 3, 5), mode="trilinear"), vol)
grad(
    "interp trilinear ac",
    lambda t: F.interpolate(t, scale_factor=(1, 0.5, 1.5), mode="trilinear", align_corners=True),
    vol,
)
grad("interp nearest 3d", lambda t: F.interpolate(t, scale_factor=1.5, mode="nearest-exact"), vol)
cl = img.to(memory_format=torch.channels_last)
print(
    "interp channels_last",
    F.interpolate(cl, size=(8, 10), mode="bilinear").stride(),
    F.interpolate(cl, scale_factor=2, mode="nearest").stride(),
)
show("interp both", lambda: F.interpolate(small, size=3, scale_factor=2))
show("interp neither", lambda: F.interpolate(small))
show("interp ac nearest", lambda: F.interpolate(small, size=3, align_corners=True))
show("interp bad mode", lambda: F.interpolate(small, size=3, mode="cubic"))
show("interp bilinear 3d", lambda: F.interpolate(seq, size=3, mode="bilinear"))
show("interp antialias nearest", lambda: F.interpolate(small, size=3, antialias=True))
show("interp size len", lambda: F.interpolate(small, size=(2, 3, 4)))
show("interp half", lambda: F.interpolate(small.half(), size=(2, 3), mode="bilinear"))
show(
    "interp uint8",
    lambda: F.interpolate(
        (small * 20).to(torch.uint8), size=(2, 3), mode="bilinear", antialias=True
    ),
)
show("upsample", lambda: F.upsample(small, scale_factor=0.5).shape)
show("upsample_bilinear", lambda: F.upsample_bilinear(small, size=(2, 2)))

print("section pad")
p = torch.arange(1.0, 13.0).reshape(1, 1, 3, 4)
show("pad constant", lambda: F.pad(p, (1, 2), value=-1.5))
show("pad constant 2d", lambda: F.pad(p, (1, 0, 0, 2)))
show("pad negative", lambda: F.pad(p, (-1, 1, 0, -2)))
for mode in ("reflect", "replicate", "circular"):
    grad(f"pad {mode}", lambda t, m=mode: F.pad(t, (2, 1, 1, 2), mode=m), p)
    grad(f"pad {mode} 1d", lambda t, m=mode: F.pad(t, (2, 3), mode=m), seq[:1, :1])
    grad(f"pad {mode} 3d", lambda t, m=mode: F.pad(t, (1, 1, 1, 0, 1, 1), mode=m), vol)
show("pad circular negative", lambda: F.pad(p, (-1, 2, 1, 1), mode="circular"))
show("pad reflect too big", lambda: F.pad(p, (4, 0), mode="reflect"))
show("pad replicate bad", lambda: F.pad(p[0, 0, 0], (1, 1), mode="replicate"))
show("pad odd", lambda: F.pad(p, (1, 2, 3)))
show("pad int", lambda: F.pad(torch.tensor([[1, 2]]), (1, 1), value=7))
show("pad bool", lambda: F.pad(torch.tensor([[True]]), (1, 0)))
show("pad reflect int", lambda: F.pad(torch.tensor([[[1, 2, 3]]]), (1, 1), mode="reflect"))
show("pad bad mode", lambda: F.pad(p, (1, 1), mode="wrap"))
show("pad value reflect", lambda: F.pad(p, (1, 1), mode="reflect", value=1.0))

print("section fold")
u = torch.arange(1.0, 1 + 2 * 5 * 6).reshape(1, 2, 5, 6)
grad("unfold", lambda t: F.unfold(t, kernel_size=2), u)
grad(
    "unfold all",
    lambda t: F.unfold(t, kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(2, 3)),
    u,
)
cols = F.unfold(u, 3, padding=1)
grad("fold", lambda t: F.fold(t, (5, 6), 3, padding=1), cols)
grad(
    "fold stride",
    lambda t: F.fold(
        t, output_size=(5, 6), kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(2, 3)
    ),
    F.unfold(u, (2, 3), dilation=(2, 1), padding=1, stride=(2, 3)),
)
ones = torch.ones_like(u)
print("fold overlap count", F.fold(F.unfold(ones, 3, padding=1), (5, 6), 3, padding=1)[0, 0])
show("unfold 3d input", lambda: F.unfold(u[0], 2).shape)
show("fold 2d input", lambda: F.fold(cols[0], (5, 6), 3, padding=1).shape)
show("fold bad size", lambda: F.fold(cols, (4, 6), 3, padding=1))
show("unfold too big", lambda: F.unfold(u, 7))
show("fold bad channels", lambda: F.fold(torch.ones(1, 7, 30), (5, 6), 3, padding=1))

print("section embedding")
weight = torch.randn(6, 3)
ids = torch.tensor([[0, 2, 2, 5], [1, 0, 4, 2]])
grad("embedding", lambda w: F.embedding(ids, w), weight)
grad("embedding padding", lambda w: F.embedding(ids, w, padding_idx=2), weight)
grad("embedding neg padding", lambda w: F.embedding(ids, w, padding_idx=-1), weight)
grad("embedding freq", lambda w: F.embedding(ids, w, scale_grad_by_freq=True), weight)
w2 = weight.clone() * 3
out = F.embedding(ids, w2, max_norm=1.0)
print("max_norm out norms", fmt(out.norm(dim=-1)))
print("max_norm renormed rows", fmt(w2.norm(dim=1)))
w3 = weight.clone() * 3
F.embedding(ids, w3, max_norm=2.0, norm_type=1.0)
print("max_norm p1 rows", fmt(w3.abs().sum(1)))
emb = torch.nn.Embedding(6, 3, padding_idx=0, max_norm=1.5)
print("module padding row", emb.weight[0])
print("module max_norm", emb(torch.tensor([0, 3])).norm(dim=1) <= 1.5 + 1e-6)
show("embedding bad idx", lambda: F.embedding(torch.tensor([6]), weight))
show("embedding float idx", lambda: F.embedding(torch.tensor([1.0]), weight))
show("embedding bad padding", lambda: F.embedding(ids, weight, padding_idx=6))
show("embedding_bag", lambda: F.embedding_bag(ids, weight, mode="max"))
show(
    "embedding_bag offsets",
    lambda: F.embedding_bag(
        torch.tensor([0, 2, 2, 5, 1]), weight, torch.tensor([0, 2]), mode="sum"
    ),
)

print("section classification losses")
logits = torch.randn(5, 4)
target = torch.tensor([0, 3, 1, 3, 2])
cw = torch.tensor([1.0, 2.0, 0.5, 1.5])
grad("ce", lambda x: F.cross_entropy(x, target), logits)
grad("ce smoothing", lambda x: F.cross_entropy(x, target, label_smoothing=0.1), logits)
grad(
    "ce weight smoothing",
    lambda x: F.cross_entropy(x, target, weight=cw, label_smoothing=0.2),
    logits,
)
grad("ce ignore", lambda x: F.cross_entropy(x, torch.tensor([0, -100, 1, 3, -100])), logits)
grad("ce ignore 3", lambda x: F.cross_entropy(x, target, ignore_index=3, weight=cw), logits)
grad(
    "ce ignore smoothing",
    lambda x: F.cross_entropy(x, target, ignore_index=3, label_smoothing=0.3),
    logits,
)
grad("ce none", lambda x: F.cross_entropy(x, target, reduction="none", weight=cw), logits)
grad("ce sum", lambda x: F.cross_entropy(x, target, reduction="sum", label_smoothing=0.1), logits)
probs = torch.softmax(torch.randn(5, 4), 1)
grad("ce probs", lambda x: F.cross_entropy(x, probs), logits)
grad(
    "ce probs smoothing weight",
    lambda x: F.cross_entropy(x, probs, weight=cw, label_smoothing=0.1),
    logits,
)
grad("ce probs none", lambda x: F.cross_entropy(x, probs, reduction="none"), logits)
seg = torch.randn(2, 3, 2, 2)
seg_t = torch.tensor([[[0, 2], [1, -100]], [[2, 2], [0, 1]]])
grad("ce k-dim", lambda x: F.cross_entropy(x, seg_t), seg)
grad(
    "ce k-dim none", lambda x: F.cross_entropy(x, seg_t, reduction="none", label_smoothing=0.1), seg
)
grad("ce k-dim weight", lambda x: F.cross_entropy(x, seg_t, weight=cw[:3]), seg)
grad("ce 1d", lambda x: F.cross_entropy(x, torch.tensor(2)), logits[0])
grad("ce all ignored", lambda x: F.cross_entropy(x, torch.full((5,), -100)), logits)
show("ce bad target", lambda: F.cross_entropy(logits, torch.tensor([0, 4, 1, 3, 2])))
show("ce float target shape", lambda: F.cross_entropy(logits, torch.rand(5, 3)))
show("ce target dtype", lambda: F.cross_entropy(logits, target.int()))
show("ce batch mismatch", lambda: F.cross_entropy(logits, target[:3]))
show("ce smoothing range", lambda: F.cross_entropy(logits, target, label_smoothing=1.5))
logp = F.log_softmax(logits, 1)
grad("nll", lambda x: F.nll_loss(x, target), logp)
grad("nll weight ignore", lambda x: F.nll_loss(x, target, weight=cw, ignore_index=1), logp)
grad("nll none", lambda x: F.nll_loss(x, target, reduction="none"), logp)
grad("nll k-dim", lambda x: F.nll_loss(x, seg_t, reduction="sum"), F.log_softmax(seg, 1))
show("nll bad reduction", lambda: F.nll_loss(logp, target, reduction="avg"))
bl = torch.randn(3, 4)
bt = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0], [0.3, 0.7, 1.0, 0.0]])
grad("bce logits", lambda x: F.binary_cross_entropy_with_logits(x, bt), bl)
grad(
    "bce pos_weight",
    lambda x: F.binary_cross_entropy_with_logits(
        x, bt, pos_weight=torch.tensor([1.0, 2.0, 3.0, 0.5])
    ),
    bl,
)
grad(
    "bce weight none",
    lambda x: F.binary_cross_entropy_with_logits(
        x, bt, weight=torch.tensor([1.0, 0.0, 2.0, 1.0]), reduction="none"
    ),
    bl,
)
grad(
    "bce extreme",
    lambda x: F.binary_cross_entropy_with_logits(x, torch.tensor([1.0, 0.0])),
    torch.tensor([-100.0, 100.0]),
)
grad("bce", lambda x: F.binary_cross_entropy(torch.sigmoid(x), bt), bl)
show("bce shape", lambda: F.binary_cross_entropy_with_logits(bl, bt[:2]))
show("bce out of range", lambda: F.binary_cross_entropy(bt + 1, bt))
grad("multilabel soft margin", lambda x: F.multilabel_soft_margin_loss(x, bt), bl)
grad(
    "multilabel soft margin w",
    lambda x: F.multilabel_soft_margin_loss(
        x, bt, weight=torch.tensor([1.0, 2.0, 0.0, 1.0]), reduction="none"
    ),
    bl,
)
grad("multi margin", lambda x: F.multi_margin_loss(x, target, margin=0.5, p=2), logits)
grad(
    "multilabel margin",
    lambda x: F.multilabel_margin_loss(
        x, torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1], [0, -1, 2, 2]])
    ),
    bl,
)
grad("soft margin", lambda x: F.soft_margin_loss(x, bt * 2 - 1), bl)

print("section divergence and regression losses")
lp = F.log_softmax(torch.randn(3, 5), 1)
lq = F.log_softmax(torch.randn(3, 5), 1)
for red in ("batchmean", "sum", "mean", "none"):
    grad(f"kl {red}", lambda x, r=red: F.kl_div(x, lq.exp(), reduction=r), lp)
    grad(f"kl log_target {red}", lambda x, r=red: F.kl_div(x, lq, reduction=r, log_target=True), lp)
grad(
    "kl zero target",
    lambda x: F.kl_div(x, torch.tensor([[0.0, 1.0]]), reduction="sum"),
    torch.tensor([[-1.0, -0.5]]),
)
pred = torch.tensor([0.5, -1.0, 3.0, 0.2, 2.0])
tgt = torch.tensor([0.0, -1.2, 1.0, 0.25, -2.0])
for beta in (0.5, 1.0, 2.5):
    grad(f"huber delta={beta}", lambda x, b=beta: F.huber_loss(x, tgt, delta=b), pred)
    grad(f"smooth_l1 beta={beta}", lambda x, b=beta: F.smooth_l1_loss(x, tgt, beta=b), pred)
grad("smooth_l1 beta=0", lambda x: F.smooth_l1_loss(x, tgt, beta=0.0, reduction="none"), pred)
grad("huber none", lambda x: F.huber_loss(x, tgt, reduction="none"), pred)
grad("l1 sum", lambda x: F.l1_loss(x, tgt, reduction="sum"), pred)
grad("mse broadcast", lambda x: F.mse_loss(x, tgt[:1].expand(5)), pred)
show("mse broadcast warn", lambda: F.mse_loss(pred, tgt[:1]))
show("smooth_l1 negative beta", lambda: F.smooth_l1_loss(pred, tgt, beta=-1.0))
show("huber negative delta", lambda: F.huber_loss(pred, tgt, delta=0.0))
rates = torch.tensor([0.5, 1.0, 2.0, 4.0])
counts = torch.tensor([0.0, 1.0, 3.0, 2.0])
grad("poisson log_input", lambda x: F.poisson_nll_loss(x, counts), rates.log())
grad("poisson rate", lambda x: F.poisson_nll_loss(x, counts, log_input=False), rates)
grad(
    "poisson full",
    lambda x: F.poisson_nll_loss(x, counts, full=True, reduction="none"),
    rates.log(),
)
grad(
    "poisson rate full sum",
    lambda x: F.poisson_nll_loss(x, counts, log_input=False, full=True, eps=1e-3, reduction="sum"),
    rates,
)
mu = torch.tensor([[0.1, 1.0], [2.0, -1.0], [0.0, 0.5]])
yv = torch.tensor([[0.0, 1.5], [2.5, -1.0], [1.0, 0.0]])
var = torch.tensor([[0.5, 1.0], [2.0, 1e-8], [1.0, 0.1]])
grad("gaussian nll", lambda m, v: F.gaussian_nll_loss(m, yv, v), mu, var)
grad(
    "gaussian nll full",
    lambda m, v: F.gaussian_nll_loss(m, yv, v, full=True, eps=1e-3, reduction="sum"),
    mu,
    var,
)
grad(
    "gaussian nll var col",
    lambda m, v: F.gaussian_nll_loss(m, yv, v, reduction="none"),
    mu,
    var[:, :1],
)
show("gaussian nll negative var", lambda: F.gaussian_nll_loss(mu, yv, -var))
show("gaussian nll bad shape", lambda: F.gaussian_nll_loss(mu, yv, var[:2]))

print("section metric losses")
a = torch.randn(4, 5)
b = torch.randn(4, 5)
c = torch.randn(4, 5)
y = torch.tensor([1.0, -1.0, 1.0, -1.0])
grad("margin ranking", lambda s, t: F.margin_ranking_loss(s, t, y, margin=0.3), a[:, 0], b[:, 0])
grad(
    "margin ranking none",
    lambda s, t: F.margin_ranking_loss(s, t, y, reduction="none"),
    a[:, 0],
    b[:, 0],
)
grad("triplet", lambda x, p, n: F.triplet_margin_loss(x, p, n, margin=2.0), a, b, c)
grad("triplet swap", lambda x, p, n: F.triplet_margin_loss(x, p, n, swap=True, p=1.0), a, b, c)
grad(
    "triplet eps none",
    lambda x, p, n: F.triplet_margin_loss(x, p, n, eps=1e-3, reduction="none"),
    a,
    b,
    c,
)
grad(
    "triplet distance fn",
    lambda x, p, n: F.triplet_margin_with_distance_loss(
        x, p, n, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.5, swap=True
    ),
    a,
    b,
    c,
)
grad("cosine embedding", lambda s, t: F.cosine_embedding_loss(s, t, y, margin=0.2), a, b)
grad("cosine embedding none", lambda s, t: F.cosine_embedding_loss(s, t, y, reduction="none"), a, b)
grad("hinge embedding", lambda s: F.hinge_embedding_loss(s, y, margin=0.5), a[:, 0])
show("margin ranking shape", lambda: F.margin_ranking_loss(a[:, 0], b[:3, 0], y))
show("cosine embedding 3d", lambda: F.cosine_embedding_loss(a[None], b[None], y))

print("section sampling")
theta = torch.tensor([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]]])
for ac in (False, True):
    grid = F.affine_grid(theta, (1, 1, 4, 5), align_corners=ac)
    print(f"affine_grid ac={ac}", fmt(grid[0, 0]), grid.shape)
    for mode in ("bilinear", "nearest", "bicubic"):
        for pm in ("zeros", "border", "reflection"):
            grad(
                f"grid_sample {mode} {pm} ac={ac}",
                lambda t, g, m=mode, q=pm, c=ac: F.grid_sample(
                    t, g, mode=m, padding_mode=q, align_corners=c
                ),
                img[:1, :1],
                grid * 1.3,
            )
grad("affine_grid grad", lambda th: F.affine_grid(th, (1, 1, 2, 3), align_corners=False), theta)
theta3 = torch.tensor([[[1.0, 0.1, 0.0, 0.1], [0.0, 0.9, 0.2, 0.0], [0.1, 0.0, 1.1, -0.1]]])
g3 = F.affine_grid(theta3, (1, 2, 2, 3, 3), align_corners=False)
grad(
    "grid_sample 3d",
    lambda t: F.grid_sample(t, g3, align_corners=False, padding_mode="border"),
    vol,
)
show("affine_grid bad", lambda: F.affine_grid(theta, (1, 1, 4)))
show("grid_sample bad mode", lambda: F.grid_sample(img, torch.zeros(2, 3, 3, 2), mode="area"))
show("grid_sample batch", lambda: F.grid_sample(img, torch.zeros(1, 3, 3, 2)))

print("section reshuffle")
ps_in = torch.arange(2 * 8 * 2 * 3, dtype=torch.float32).reshape(2, 8, 2, 3)
print("pixel_shuffle", F.pixel_shuffle(ps_in, 2)[0, 0], F.pixel_shuffle(ps_in, 2).shape)
print("pixel_unshuffle", F.pixel_unshuffle(F.pixel_shuffle(ps_in, 2), 2).equal(ps_in))
print("pixel_unshuffle 3x", F.pixel_unshuffle(torch.arange(36.0).reshape(1, 1, 6, 6), 3)[0, :, 0])
print(
    "pixel_shuffle stride", F.pixel_shuffle(ps_in.to(memory_format=torch.channels_last), 2).stride()
)
grad("pixel_shuffle grad", lambda t: F.pixel_shuffle(t, 2), ps_in[:1, :4, :1, :2])
show("pixel_shuffle bad", lambda: F.pixel_shuffle(ps_in, 3))
show("pixel_unshuffle bad", lambda: F.pixel_unshuffle(ps_in, 2))

print("section similarity")
v = torch.tensor([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [1.0, -1.0, 2.0]])
grad("normalize", lambda t: F.normalize(t), v)
grad("normalize p1 dim0", lambda t: F.normalize(t, p=1, dim=0), v)
grad("normalize eps", lambda t: F.normalize(t, eps=10.0), v)
grad("normalize inf", lambda t: F.normalize(t, p=float("inf"), dim=1), v)
grad("cosine_similarity", lambda s, t: F.cosine_similarity(s, t), v, v.flip(0))
grad(
    "cosine_similarity broadcast",
    lambda s, t: F.cosine_similarity(s, t, dim=-1, eps=1e-3),
    v[:, None, :],
    v[None, :, :],
)
grad("cosine_similarity zero", lambda s, t: F.cosine_similarity(s, t, dim=1), v[1:2], v[1:2])
grad("pairwise_distance", lambda s, t: F.pairwise_distance(s, t), v, v.flip(1))
grad(
    "pairwise_distance p1 keepdim",
    lambda s, t: F.pairwise_distance(s, t, p=1, keepdim=True),
    v,
    v[:1],
)
grad(
    "pairwise_distance inf",
    lambda s, t: F.pairwise_distance(s, t, p=float("inf"), eps=0.0),
    v,
    v.flip(0),
)
grad("pdist", lambda t: F.pdist(t), v + torch.tensor([0.0, 1.0, 2.0]))
grad("cdist", lambda s, t: torch.cdist(s, t, p=1.0), v, v[:2] + 1)
show("cosine_similarity mismatch", lambda: F.cosine_similarity(v, v[:, :2]))

print("section one_hot")
lab = torch.tensor([[0, 2], [3, 1]])
show("one_hot", lambda: F.one_hot(lab))
show("one_hot num_classes", lambda: F.one_hot(lab, num_classes=5).dtype)
show("one_hot -1", lambda: F.one_hot(lab, num_classes=-1).shape)
show("one_hot empty", lambda: F.one_hot(torch.tensor([], dtype=torch.long), 3))
show("one_hot empty auto", lambda: F.one_hot(torch.tensor([], dtype=torch.long)))
show("one_hot too small", lambda: F.one_hot(lab, 3))
show("one_hot negative", lambda: F.one_hot(torch.tensor([-1, 0])))
show("one_hot float", lambda: F.one_hot(torch.tensor([1.0])))

print("section random")
torch.manual_seed(1)
gl = torch.randn(3, 5)
print("gumbel soft", fmt(F.gumbel_softmax(gl, tau=0.5)))
print("gumbel hard", F.gumbel_softmax(gl, tau=1.0, hard=True))
torch.manual_seed(2)
gt = gl.clone().requires_grad_(True)
hard = F.gumbel_softmax(gt, hard=True, dim=0)
(hard * torch.arange(15.0).reshape(3, 5)).sum().backward()
print("gumbel hard grad", hard, fmt(gt.grad))
torch.manual_seed(3)
x4 = torch.ones(2, 4, 3, 3)
x5 = torch.ones(1, 3, 2, 2, 2)
print("dropout", F.dropout(torch.ones(3, 4), 0.5))
print("dropout eval", F.dropout(torch.ones(2, 2), 0.5, training=False))
print("dropout1d", F.dropout1d(torch.ones(2, 4, 3), 0.5)[:, :, 0])
print("dropout2d", F.dropout2d(x4, 0.5)[:, :, 0, 0])
print("dropout3d", F.dropout3d(x5, 0.5)[0, :, 0, 0, 0])
print("dropout2d 3d input", F.dropout2d(torch.ones(4, 3, 3), 0.5)[:, 0, 0])
print("alpha_dropout", fmt(F.alpha_dropout(torch.ones(2, 5), 0.4, training=True)))
print("feature_alpha_dropout", fmt(F.feature_alpha_dropout(x4, 0.3, training=True)[:, :, 0, 0]))
print("dropout p=1", F.dropout(torch.ones(3), 1.0), F.dropout(torch.ones(3), 0.0))
dx = torch.ones(2, 4, 3, requires_grad=True)
F.dropout1d(dx, 0.5).sum().backward()
print("dropout1d grad", dx.grad[:, :, 0])
mod = torch.nn.Dropout2d(0.5)
mod.eval()
print("Dropout2d eval", mod(x4).equal(x4), mod)
show("dropout bad p", lambda: F.dropout(torch.ones(2), 1.5))
show("dropout1d bad dim", lambda: F.dropout1d(torch.ones(2, 2, 2, 2), 0.5))

print("section edge cases")
xe = torch.randn(1, 2, 5, 7)
show(
    "aa ac",
    lambda: F.interpolate(xe, size=(3, 3), mode="bilinear", antialias=True, align_corners=True),
)
show(
    "aa bicubic ac",
    lambda: F.interpolate(xe, size=(2, 4), mode="bicubic", antialias=True, align_corners=True),
)
show("aa 3d", lambda: F.interpolate(xe[0], size=3, mode="linear", antialias=True))
show("aa size int", lambda: F.interpolate(xe, size=3, mode="bilinear"))
show("scale list", lambda: F.interpolate(xe, scale_factor=[2, 1]).shape)
show("scale neg", lambda: F.interpolate(xe, scale_factor=-1.0))
show("size zero", lambda: F.interpolate(xe, size=(0, 3)))
show("scale tuple wrong", lambda: F.interpolate(xe, scale_factor=(2, 2, 2)))
show(
    "nearest-exact scale",
    lambda: F.interpolate(
        torch.arange(10.0).reshape(1, 1, 10), scale_factor=0.35, mode="nearest-exact"
    ),
)
show(
    "nearest scale 0.35",
    lambda: F.interpolate(torch.arange(10.0).reshape(1, 1, 10), scale_factor=0.35, mode="nearest"),
)
show(
    "nearest recompute",
    lambda: F.interpolate(
        torch.arange(10.0).reshape(1, 1, 10),
        scale_factor=0.35,
        mode="nearest",
        recompute_scale_factor=True,
    ),
)
show(
    "bilinear int scale",
    lambda: F.interpolate(torch.arange(6.0).reshape(1, 1, 2, 3), scale_factor=2, mode="bilinear"),
)
show("area 1d", lambda: F.interpolate(torch.arange(10.0).reshape(1, 1, 10), size=4, mode="area"))
show(
    "area 3d", lambda: F.interpolate(torch.arange(27.0).reshape(1, 1, 3, 3, 3), size=2, mode="area")
)
show(
    "bicubic ac scale",
    lambda: F.interpolate(
        torch.arange(6.0).reshape(1, 1, 2, 3), scale_factor=1.5, mode="bicubic", align_corners=True
    ),
)
show("interp no batch", lambda: F.interpolate(torch.ones(3, 3), size=2))
show("interp int", lambda: F.interpolate(torch.ones(1, 1, 3, dtype=torch.long), size=2))
show(
    "interp int bilinear",
    lambda: F.interpolate(torch.ones(1, 1, 3, 3, dtype=torch.long), size=2, mode="bilinear"),
)
show(
    "interp uint8 bilinear",
    lambda: F.interpolate(
        torch.arange(9, dtype=torch.uint8).reshape(1, 1, 3, 3), size=2, mode="bilinear"
    ),
)
show(
    "interp uint8 nearest",
    lambda: F.interpolate(torch.arange(9, dtype=torch.uint8).reshape(1, 1, 3, 3), size=5),
)
show("interp bool", lambda: F.interpolate(torch.ones(1, 1, 3, dtype=torch.bool), size=2))
show("pad neg too much", lambda: F.pad(torch.ones(1, 3), (-2, -2)))
show("pad reflect neg", lambda: F.pad(torch.arange(5.0).reshape(1, 1, 5), (-1, 2), mode="reflect"))
show(
    "pad replicate neg",
    lambda: F.pad(torch.arange(5.0).reshape(1, 1, 5), (-1, 2), mode="replicate"),
)
show("pad list", lambda: F.pad(torch.ones(1, 2), [1, 1]))
show("pad tensor value", lambda: F.pad(torch.ones(1, 2), (1, 1), value=float("nan")))
show(
    "pad circular 2d input", lambda: F.pad(torch.arange(4.0).reshape(1, 4), (1, 1), mode="circular")
)
show("pad reflect 1d input", lambda: F.pad(torch.arange(4.0), (1, 1), mode="reflect"))
show("pad constant 5 dims", lambda: F.pad(torch.ones(1, 1), (1, 1, 1, 1, 1, 1)))
show(
    "pad half reflect",
    lambda: F.pad(torch.arange(4.0).half().reshape(1, 1, 4), (1, 1), mode="reflect"),
)
show(
    "pad circular too much",
    lambda: F.pad(torch.arange(4.0).reshape(1, 1, 4), (5, 0), mode="circular"),
)
show("pad reflect empty", lambda: F.pad(torch.ones(1, 0, 4), (1, 1), mode="reflect"))
show(
    "pad stride cl",
    lambda: F.pad(
        torch.ones(1, 3, 2, 2).to(memory_format=torch.channels_last), (1, 1, 1, 1)
    ).stride(),
)
show(
    "pad stride cl reflect",
    lambda: F.pad(
        torch.ones(1, 3, 2, 2).to(memory_format=torch.channels_last), (1, 1, 1, 1), mode="reflect"
    ).stride(),
)
we = torch.randn(5, 3)
show(
    "emb max_norm dup",
    lambda: F.embedding(torch.tensor([1, 1, 2]), we * 5, max_norm=1.0).norm(dim=1),
)
show("emb 0-d idx", lambda: F.embedding(torch.tensor(2), we).shape)
show("emb int32 idx", lambda: F.embedding(torch.tensor([2], dtype=torch.int32), we).shape)
show("emb padding neg bad", lambda: F.embedding(torch.tensor([1]), we, padding_idx=-6))
show("emb sparse", lambda: F.embedding(torch.tensor([1]), we, sparse=True).shape)
wt = we.clone().requires_grad_(True)
F.embedding(torch.tensor([1, 1, 3]), wt, sparse=True).sum().backward()
show("emb sparse grad", lambda: (wt.grad.is_sparse, wt.grad.to_dense()))
me = torch.nn.Embedding.from_pretrained(we, freeze=True, padding_idx=1, max_norm=2.0)
show("from_pretrained", lambda: (me, me.weight.requires_grad))
lg = torch.randn(4, 3)
pr = torch.softmax(torch.randn(4, 3), 1)
show("ce pr ignore", lambda: F.cross_entropy(lg, pr, ignore_index=1))
show(
    "ce pr kdim",
    lambda: F.cross_entropy(
        torch.randn(2, 3, 2), torch.softmax(torch.randn(2, 3, 2), 1), label_smoothing=0.2
    ),
)
show("ce half", lambda: F.cross_entropy(lg.half(), torch.tensor([0, 1, 2, 0])))
show("ce bf16 pr", lambda: F.cross_entropy(lg.bfloat16(), pr.bfloat16()))
show(
    "ce weight wrong", lambda: F.cross_entropy(lg, torch.tensor([0, 1, 2, 0]), weight=torch.ones(4))
)
show("ce pr dtype", lambda: F.cross_entropy(lg, pr.double()))
show("ce int lg", lambda: F.cross_entropy(torch.ones(2, 3, dtype=torch.long), torch.tensor([0, 1])))
show(
    "ce mean all weights zero",
    lambda: F.cross_entropy(lg, torch.tensor([0, 1, 2, 0]), weight=torch.zeros(3)),
)
show("nll 1d", lambda: F.nll_loss(torch.log_softmax(lg[0], 0), torch.tensor(1)))
show("nll target 2d", lambda: F.nll_loss(lg, torch.zeros(4, 1, dtype=torch.long)))
show("nll bad class", lambda: F.nll_loss(lg, torch.tensor([0, 1, 2, 3])))
show(
    "bce lg pos_weight broadcast",
    lambda: F.binary_cross_entropy_with_logits(lg, pr, pos_weight=torch.tensor(2.0)),
)
show(
    "bce target int",
    lambda: F.binary_cross_entropy_with_logits(lg, torch.ones(4, 3, dtype=torch.long)),
)
show(
    "bce weight broadcast",
    lambda: F.binary_cross_entropy(pr, pr, weight=torch.tensor([1.0, 0.0, 2.0])),
)
show("kl batchmean 1d", lambda: F.kl_div(torch.log(pr[0]), pr[1], reduction="batchmean"))
show("kl neg target", lambda: F.kl_div(torch.log(pr[0]), torch.tensor([-1.0, 0.5, 0.5])))
show(
    "huber int",
    lambda: F.huber_loss(torch.ones(2, dtype=torch.long), torch.zeros(2, dtype=torch.long)),
)
show("l1 int", lambda: F.l1_loss(torch.ones(2, dtype=torch.long), torch.zeros(2, dtype=torch.long)))
show(
    "poisson neg",
    lambda: F.poisson_nll_loss(torch.tensor([-1.0]), torch.tensor([2.0]), log_input=False),
)
show("gauss var scalar", lambda: F.gaussian_nll_loss(torch.ones(2, 3), torch.zeros(2, 3), 0.5))
show(
    "gauss var 1d", lambda: F.gaussian_nll_loss(torch.ones(2, 3), torch.zeros(2, 3), torch.ones(2))
)
show(
    "triplet bad dims",
    lambda: F.triplet_margin_loss(torch.ones(3), torch.ones(2, 3), torch.ones(2, 3)),
)
show("triplet 1d", lambda: F.triplet_margin_loss(torch.ones(3), torch.zeros(3), torch.ones(3) * 2))
show(
    "margin ranking bad target",
    lambda: F.margin_ranking_loss(torch.ones(2), torch.ones(2), torch.ones(3)),
)
show("cos sim 1d", lambda: F.cosine_similarity(torch.ones(3), torch.ones(3), dim=0))
show(
    "cos sim int",
    lambda: F.cosine_similarity(
        torch.ones(3, dtype=torch.long), torch.ones(3, dtype=torch.long), dim=0
    ),
)
show("cos sim half", lambda: F.cosine_similarity(torch.ones(2, 3).half(), torch.ones(2, 3).half()))
show("pairwise 1d", lambda: F.pairwise_distance(torch.ones(3), torch.zeros(3)))
show("pairwise p0", lambda: F.pairwise_distance(torch.ones(2, 3), torch.zeros(2, 3), p=0))
show("normalize 1d", lambda: F.normalize(torch.tensor([3.0, 4.0]), dim=0))
show("normalize int", lambda: F.normalize(torch.tensor([3, 4]), dim=0))
show("normalize out", lambda: F.normalize(torch.tensor([3.0, 4.0]), dim=0, out=torch.empty(2)))
show("one_hot int32", lambda: F.one_hot(torch.tensor([1], dtype=torch.int32)))
show("one_hot 0-d", lambda: F.one_hot(torch.tensor(2), 4))
show("gumbel dim", lambda: F.gumbel_softmax(torch.zeros(2, 3), dim=0, tau=0.1).sum(0))
show("gumbel eps", lambda: F.gumbel_softmax(torch.zeros(2, 3), eps=1e-3).shape)
show("dropout inplace", lambda: F.dropout(torch.ones(4), 0.5, inplace=True))
show("dropout int", lambda: F.dropout(torch.ones(4, dtype=torch.long), 0.5))
show("dropout2d 2d input", lambda: F.dropout2d(torch.ones(3, 3), 0.5))
show("dropout3d 4d input", lambda: F.dropout3d(torch.ones(2, 2, 2, 2), 0.5).shape)
show("alpha p=1", lambda: F.alpha_dropout(torch.ones(3), 1.0, training=True))
show("alpha eval", lambda: F.alpha_dropout(torch.ones(3), 0.5))
show("feature alpha 2d", lambda: F.feature_alpha_dropout(torch.ones(2, 3), 0.5, training=True))
show("pixel_shuffle 3d", lambda: F.pixel_shuffle(torch.arange(8.0).reshape(4, 1, 2), 2))
show(
    "pixel_shuffle 5d", lambda: F.pixel_shuffle(torch.arange(16.0).reshape(1, 1, 4, 2, 2), 2).shape
)
show("pixel_shuffle bad ndim", lambda: F.pixel_shuffle(torch.ones(4, 2), 2))
show("pixel_shuffle factor 0", lambda: F.pixel_shuffle(torch.ones(1, 4, 2, 2), 0))
show(
    "channel_shuffle", lambda: F.channel_shuffle(torch.arange(6.0).reshape(1, 6, 1, 1), 2).flatten()
)
show(
    "affine_grid size 5",
    lambda: F.affine_grid(torch.eye(3, 4)[None], (1, 1, 2, 2, 2), align_corners=True)[0, 0, 0],
)
show(
    "affine_grid bad theta",
    lambda: F.affine_grid(torch.eye(3)[None], (1, 1, 2, 2), align_corners=False),
)
show(
    "grid_sample 3d bicubic",
    lambda: F.grid_sample(
        torch.ones(1, 1, 2, 2, 2), torch.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False
    ),
)
show(
    "grid_sample nearest 3d",
    lambda: F.grid_sample(
        torch.arange(8.0).reshape(1, 1, 2, 2, 2),
        torch.full((1, 1, 1, 1, 3), 0.3),
        mode="nearest",
        align_corners=True,
    ),
)
show(
    "grid_sample half",
    lambda: F.grid_sample(
        torch.ones(1, 1, 2, 2).half(), torch.zeros(1, 1, 1, 2).half(), align_corners=True
    ),
)
show(
    "grid_sample dtype mismatch",
    lambda: F.grid_sample(
        torch.ones(1, 1, 2, 2), torch.zeros(1, 1, 1, 2).double(), align_corners=True
    ),
)
show("fold bad kernel", lambda: F.fold(torch.ones(1, 4, 4), (3, 3), 2, stride=2))
show("unfold int", lambda: F.unfold(torch.ones(1, 1, 3, 3, dtype=torch.long), 2))
show("unfold half", lambda: F.unfold(torch.ones(1, 1, 3, 3).half(), 2).dtype)
show("unfold padding tuple", lambda: F.unfold(torch.ones(1, 1, 3, 3), 2, padding=(1, 0)).shape)
show("unfold 1d", lambda: F.unfold(torch.ones(1, 3, 3), 2).shape)
show("unfold 5d", lambda: F.unfold(torch.ones(1, 1, 3, 3, 3), 2))
print("section integer inputs")
L = torch.ones(2, dtype=torch.long)
Fl = torch.zeros(2)
B = torch.ones(2, dtype=torch.bool)
I32 = torch.ones(2, dtype=torch.int32)
for name, fn in [
    ("mse", F.mse_loss),
    ("smooth", F.smooth_l1_loss),
    ("huber", F.huber_loss),
    ("l1", F.l1_loss),
]:
    for tag, u, v in (
        ("LL", L, L),
        ("LF", L, Fl),
        ("FL", Fl, L),
        ("II", I32, I32),
        ("BB", B, B),
        ("FB", Fl, B),
    ):
        show(f"{name} {tag}", lambda f=fn, u=u, v=v: f(u, v))
    show(f"{name} LL none", lambda f=fn: f(L, L, reduction="none"))
show("smooth beta0 LL", lambda: F.smooth_l1_loss(L, L, beta=0.0))
show("ce int", lambda: F.cross_entropy(torch.ones(2, 3, dtype=torch.long), torch.tensor([0, 1])))
show("ce int probs", lambda: F.cross_entropy(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3)))
show("logsm int", lambda: torch.log_softmax(torch.ones(2, 3, dtype=torch.long), 1))
show(
    "logsm int dtype",
    lambda: torch.log_softmax(torch.ones(2, 3, dtype=torch.long), 1, dtype=torch.float32),
)
show("sm int", lambda: torch.softmax(torch.ones(2, 3, dtype=torch.long), 1))
show("drop int", lambda: F.dropout(L, 0.5))
show("drop bool", lambda: F.dropout(B, 0.5))
show("drop int p1", lambda: F.dropout(L, 1.0))
show("drop2d int", lambda: F.dropout2d(torch.ones(1, 2, 2, 2, dtype=torch.long), 0.5))
show("drop1d int", lambda: F.dropout1d(torch.ones(1, 2, 2, dtype=torch.long), 0.5))
show("drop int inplace", lambda: F.dropout(L.clone(), 0.5, inplace=True))
show("alpha int", lambda: F.alpha_dropout(L, 0.5, True))
show("alpha int p1", lambda: F.alpha_dropout(L, 1.0, True))
show(
    "falpha int",
    lambda: F.feature_alpha_dropout(torch.ones(1, 2, 2, 2, dtype=torch.long), 0.5, True),
)
print("after the refusals", torch.rand(3))

print("section node names and layouts")
torch.manual_seed(0)
emb = torch.nn.Embedding(5, 3, max_norm=1.0, padding_idx=1)
ids = torch.tensor([[0, 1, 2, 0]])
out = emb(ids)
(out * torch.arange(12.0).reshape(1, 4, 3)).sum().backward()
print(emb.weight.norm(dim=1), emb.weight.grad, emb.weight._version)
emb2 = torch.nn.Embedding(5, 3, sparse=True)
emb2(torch.tensor([0, 0, 3])).sum().backward()
print(emb2.weight.grad)
print(emb2.weight.grad.coalesce().indices(), emb2.weight.grad.coalesce().values())
opt = torch.optim.SparseAdam(emb2.parameters(), lr=0.1)
opt.step()
print(emb2.weight[0], emb2.weight[1])
bag = torch.nn.EmbeddingBag(5, 2, mode="mean", padding_idx=0)
print(bag(torch.tensor([[0, 1, 2], [0, 0, 0]])))
x = torch.randn(2, 3, 4, 4, requires_grad=True)
y = F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True)
y.sum().backward()
print(y.shape, x.grad.sum(), x.grad[0, 0, 0])
print(
    F.interpolate(x.detach().bfloat16(), size=(5, 5), mode="bicubic", align_corners=True)[0, 0, 0]
)
print(F.interpolate(x.detach(), size=(5, 5), mode="bicubic", align_corners=True).stride())
u = F.unfold(x, 2, stride=2)
print(u.shape, u.stride(), u.is_contiguous())
f = F.fold(u, (4, 4), 2, stride=2)
print(torch.allclose(f, x), f.grad_fn.name())
print(F.one_hot(torch.tensor([1, 2])).stride(), F.one_hot(torch.tensor([[1], [2]]), 4).shape)
print(F.pixel_shuffle(x, 1).shape if False else F.pixel_unshuffle(x, 2).stride())
print(
    F.normalize(x, dim=1).grad_fn.name(),
    F.cosine_similarity(x, x).grad_fn.name(),
    F.pairwise_distance(x[:, 0], x[:, 1]).grad_fn.name(),
)
print(
    F.pad(x, (1, 1, 1, 1), mode="reflect").grad_fn.name(),
    F.pad(x, (1, 1, 1, 1), mode="replicate").grad_fn.name(),
    F.pad(x, (1, 1, 1, 1), mode="circular").grad_fn.name(),
    F.pad(x, (1, 1)).grad_fn.name(),
)
print(
    F.interpolate(x, size=2).grad_fn.name(),
    F.interpolate(x, size=2, mode="bilinear").grad_fn.name(),
    F.interpolate(x, size=2, mode="bicubic").grad_fn.name(),
    F.interpolate(x, size=2, mode="nearest-exact").grad_fn.name(),
    F.interpolate(x, size=2, mode="area").grad_fn.name(),
    y.grad_fn.name(),
)
print(
    F.grid_sample(x, torch.zeros(2, 2, 2, 2), align_corners=False).grad_fn.name(),
    F.affine_grid(
        torch.eye(2, 3)[None].requires_grad_(), (1, 1, 2, 2), align_corners=False
    ).grad_fn.name(),
)
print(F.embedding(ids, emb.weight).grad_fn.name(), F.one_hot(ids).dtype)
for name, loss in [
    ("ce", F.cross_entropy(x[:, :, 0, 0], torch.tensor([0, 1]))),
    ("ces", F.cross_entropy(x[:, :, 0, 0], torch.tensor([0, 1]), label_smoothing=0.1)),
    ("nll", F.nll_loss(x[:, :, 0, 0], torch.tensor([0, 1]))),
    ("bce", F.binary_cross_entropy_with_logits(x, x.detach().sigmoid())),
    ("kl", F.kl_div(x, x.detach(), reduction="batchmean")),
    ("hub", F.huber_loss(x, x.detach() * 0)),
    ("sl1", F.smooth_l1_loss(x, x.detach() * 0)),
    ("mrl", F.margin_ranking_loss(x[0, 0, 0], x[1, 0, 0], torch.ones(4))),
    ("tml", F.triplet_margin_loss(x[0, 0], x[1, 0], x[0, 1])),
    ("cel", F.cosine_embedding_loss(x[0, 0], x[1, 0], torch.ones(4))),
    ("mlsm", F.multilabel_soft_margin_loss(x[:, :, 0, 0], torch.ones(2, 3))),
    ("pnll", F.poisson_nll_loss(x, x.detach().exp())),
    ("gnll", F.gaussian_nll_loss(x, x.detach(), x.detach().exp())),
]:
    print(name, loss.grad_fn.name(), loss.dtype)
