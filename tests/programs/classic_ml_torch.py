"""Classic machine learning written in torch, as tutorials and scikit-learn ports
(kmeans_pytorch, pytorch-pca, GMM notebooks) write it: k-means++ seeding with
torch.multinomial and cdist/argmin/scatter_add_/bincount centroid updates; PCA by
torch.pca_lowrank, torch.svd_lowrank, torch.linalg.svd and torch.linalg.eigh of torch.cov
with sign-fixed components; Gaussian-mixture EM with logsumexp, MultivariateNormal.log_prob
and torch.linalg.cholesky; logistic regression with LBFGS(strong_wolfe); kernel ridge
regression (RBF, linalg.solve); k-NN with topk and mode; a t-SNE gradient loop."""
import torch
from torch.distributions import MultivariateNormal

torch.manual_seed(0)
torch.set_printoptions(precision=4)

# ---------------------------------------------------------------- data: 3 blobs in 4-d
centers = torch.tensor([[0.0, 0.0, 0.0, 0.0], [4.0, 4.0, 0.0, 1.0], [-4.0, 3.0, 2.0, -1.0]])
labels = torch.arange(3).repeat_interleave(40)
X = centers[labels] + torch.randn(120, 4) * 0.8
print("data", X.shape, X.dtype, labels.bincount())


# ---------------------------------------------------------------- k-means++
def kmeans_pp_init(x, k, gen):
    n = x.shape[0]
    first = torch.randint(n, (1,), generator=gen)
    cents = x[first]
    for _ in range(1, k):
        d2 = torch.cdist(x, cents).pow(2).min(dim=1).values
        idx = torch.multinomial(d2 / d2.sum(), 1, generator=gen)
        cents = torch.cat([cents, x[idx]], dim=0)
    return cents


def kmeans(x, k, iters=20, seed=0):
    gen = torch.Generator().manual_seed(seed)
    cents = kmeans_pp_init(x, k, gen)
    it = 0
    for it in range(iters):  # noqa: B007 (the iteration count is printed)
        dist = torch.cdist(x, cents)
        assign = dist.argmin(dim=1)
        index = assign.unsqueeze(1).expand(-1, x.shape[1])
        sums = torch.zeros_like(cents).scatter_add_(0, index, x)
        counts = torch.bincount(assign, minlength=k).clamp_min(1).unsqueeze(1)
        new = sums / counts
        shift = (new - cents).norm(dim=1).sum()
        cents = new
        if shift < 1e-6:
            break
    inertia = (x - cents[assign]).pow(2).sum()
    return cents, assign, inertia, it


cents, assign, inertia, iters = kmeans(X, 3)
order = cents[:, 0].argsort()
print("kmeans iterations", iters)
print("kmeans centroids", cents[order])
print("kmeans sizes", torch.bincount(assign, minlength=3).sort().values)
print("kmeans inertia", round(inertia.item(), 3))
remap = torch.empty(3, dtype=torch.long)
remap[order] = torch.arange(3)
print("kmeans index_add check", torch.zeros(3, 4).index_add_(0, assign, X).shape)
gen = torch.Generator().manual_seed(1)
print("multinomial seeds",
      torch.multinomial(torch.tensor([0.1, 0.2, 0.7]), 6, replacement=True, generator=gen))

# ---------------------------------------------------------------- PCA four ways
def sign_fix(v):
    # make the largest-|.| entry of every component positive (sklearn's svd_flip)
    idx = v.abs().argmax(dim=0)
    signs = torch.sign(v[idx, torch.arange(v.shape[1])])
    return v * signs


Xc = X - X.mean(dim=0, keepdim=True)
C = torch.cov(X.T)
print("cov", C)
print("cov correction=0 close",
      torch.allclose(torch.cov(X.T, correction=0), Xc.T @ Xc / 120, atol=1e-5))
evals, evecs = torch.linalg.eigh(C)
evals, evecs = evals.flip(0), evecs.flip(1)
print("eigh values", evals)
print("eigh vectors", sign_fix(evecs)[:, :2])
U, S, Vh = torch.linalg.svd(Xc, full_matrices=False)
print("svd shapes", U.shape, S.shape, Vh.shape)
print("svd explained", (S ** 2 / 119))
print("svd components", sign_fix(Vh.T)[:, :2])
print("explained ratio", (S ** 2 / (S ** 2).sum()))
torch.manual_seed(3)
U2, S2, V2 = torch.pca_lowrank(X, q=2, center=True, niter=4)
print("pca_lowrank shapes", U2.shape, S2.shape, V2.shape)
print("pca_lowrank S", S2)
print("pca_lowrank V", sign_fix(V2))
torch.manual_seed(3)
U3, S3, V3 = torch.svd_lowrank(Xc, q=3, niter=3)
print("svd_lowrank S", S3)
proj = Xc @ sign_fix(V3)[:, :2]
print("projection", proj.shape, proj.std(dim=0))
U4, S4, V4 = torch.svd(Xc)
print("torch.svd some", U4.shape, V4.shape, torch.allclose(S4, S, atol=1e-4))

# ---------------------------------------------------------------- GMM EM
def gmm_em(x, k, iters=15):
    n, d = x.shape
    means = cents.clone()
    covs = torch.eye(d).expand(k, d, d).clone()
    weights = torch.full((k,), 1.0 / k)
    for it in range(iters):
        dist = MultivariateNormal(means, covariance_matrix=covs)
        log_p = dist.log_prob(x.unsqueeze(1)) + weights.log()
        ll = torch.logsumexp(log_p, dim=1)
        resp = (log_p - ll.unsqueeze(1)).exp()
        nk = resp.sum(0)
        weights = nk / n
        means = (resp.T @ x) / nk.unsqueeze(1)
        diff = x.unsqueeze(1) - means
        covs = torch.einsum("nk,nki,nkj->kij", resp, diff, diff) / nk.view(-1, 1, 1)
        covs = covs + 1e-4 * torch.eye(d)
        if it % 5 == 0:
            print(f"gmm iter {it} loglik {ll.mean().item():.4f}")
    return weights, means, covs, ll.mean()


w, mu, cov = gmm_em(X, 3)[:3]
o = mu[:, 0].argsort()
print("gmm weights", w[o])
print("gmm means", mu[o])
L = torch.linalg.cholesky(cov)
print("cholesky", L.shape, torch.allclose(L @ L.mT, cov, atol=1e-4))
print("cholesky diag", torch.diagonal(L[o], dim1=-2, dim2=-1))
mvn = MultivariateNormal(mu[o], scale_tril=L[o])
print("mvn scale_tril log_prob", mvn.log_prob(X[:3].unsqueeze(1)))
print("mvn entropy", mvn.entropy())
Lc, info = torch.linalg.cholesky_ex(cov)
print("cholesky_ex info", info)

# ---------------------------------------------------------------- logistic regression LBFGS
yb = (labels == 1).float()
w_lr = torch.zeros(4, requires_grad=True)
b_lr = torch.zeros(1, requires_grad=True)
opt = torch.optim.LBFGS([w_lr, b_lr], lr=1, max_iter=50, line_search_fn="strong_wolfe")
crit = torch.nn.BCEWithLogitsLoss()


def closure():
    opt.zero_grad()
    loss = crit(X @ w_lr + b_lr, yb) + 1e-2 * w_lr.pow(2).sum()
    loss.backward()
    return loss


for step in range(3):
    loss = opt.step(closure)
    print(f"lbfgs step {step} loss {loss.item():.5f}")
st = opt.state[opt._params[0]]
print("lbfgs state keys", sorted(opt.state_dict()["state"][0].keys()))
print("lbfgs n_iter", st["n_iter"], "func_evals", st["func_evals"])
with torch.no_grad():
    acc = ((X @ w_lr + b_lr > 0).float() == yb).float().mean()
print("logreg accuracy", acc.item())

# ---------------------------------------------------------------- kernel ridge regression
xs = torch.linspace(-3, 3, 50).unsqueeze(1)
ys = torch.sin(xs).squeeze(1) + 0.1 * torch.randn(50)


def rbf(a, b, gamma=0.5):
    return torch.exp(-gamma * torch.cdist(a, b).pow(2))


K = rbf(xs, xs)
alpha = torch.linalg.solve(K + 0.1 * torch.eye(50), ys)
xt = torch.linspace(-2.5, 2.5, 7).unsqueeze(1)
pred = rbf(xt, xs) @ alpha
print("krr pred", pred)
print("krr err", (pred - torch.sin(xt).squeeze(1)).abs().max().item() < 0.3)
print("cdist p=1", torch.cdist(xt[:3], xt[:4], p=1))
print("cdist inf", torch.cdist(X[:2], X[:3], p=float("inf")))
design = torch.cat([xs, torch.ones_like(xs)], 1)
print("lstsq", torch.linalg.lstsq(design, ys.unsqueeze(1)).solution.squeeze())

# ---------------------------------------------------------------- k-NN
perm = torch.randperm(120)
tr, te = perm[:90], perm[90:]
d = torch.cdist(X[te], X[tr])
vals, nn_idx = d.topk(5, dim=1, largest=False)
votes = labels[tr][nn_idx]
pred_knn, _ = torch.mode(votes, dim=1)
print("knn votes", votes[:4])
print("knn mode", torch.mode(torch.tensor([[1, 2, 2, 3], [3, 3, 1, 1]]), dim=1))
print("knn accuracy", (pred_knn == labels[te]).float().mean().item())
print("knn topk sorted", vals[0])
print("knn kthvalue", torch.kthvalue(d[0], 3))

# ---------------------------------------------------------------- t-SNE
def binary_search_p(dist2, perplexity=10.0, tol=1e-5, steps=50):
    n = dist2.shape[0]
    target = torch.log(torch.tensor(perplexity))
    beta = torch.ones(n)
    lo = torch.full((n,), -float("inf"))
    hi = torch.full((n,), float("inf"))
    for _ in range(steps):
        p = torch.exp(-dist2 * beta.unsqueeze(1))
        p.fill_diagonal_(0.0)
        sp = p.sum(1, keepdim=True).clamp_min(1e-12)
        h = torch.log(sp.squeeze(1)) + beta * (dist2 * p).sum(1) / sp.squeeze(1)
        diff = h - target
        if diff.abs().max() < tol:
            break
        up = diff > 0
        lo = torch.where(up, beta, lo)
        hi = torch.where(up, hi, beta)
        beta = torch.where(up, torch.where(torch.isinf(hi), beta * 2, (beta + hi) / 2),
                           torch.where(torch.isinf(lo), beta / 2, (beta + lo) / 2))
    return p / sp, beta


D2 = torch.cdist(X, X).pow(2)
P, beta = binary_search_p(D2)
P = (P + P.T) / (2 * P.shape[0])
P = torch.clamp_min(P, 1e-12)
print("tsne P sum", round(P.sum().item(), 4), "beta range", beta.min().item() > 0)
Y = (torch.randn(120, 2) * 1e-2).requires_grad_()
opt_t = torch.optim.SGD([Y], lr=50.0, momentum=0.8)
for it in range(60):
    num = 1.0 / (1.0 + torch.cdist(Y, Y).pow(2))
    num = num.clone().fill_diagonal_(0.0)
    Q = torch.clamp_min(num / num.sum(), 1e-12)
    exag = 4.0 if it < 20 else 1.0
    kl = (exag * P * torch.log(exag * P / Q)).sum()
    opt_t.zero_grad()
    kl.backward()
    opt_t.step()
    if it % 20 == 0 or it == 59:
        print(f"tsne step {it} kl {kl.item():.4f}")
emb = Y.detach()
sil = torch.stack([emb[labels == c].mean(0) for c in range(3)])
print("tsne clusters separated", bool(torch.pdist(sil).min() > emb.std()))
print("pdist", torch.pdist(X[:4]))
print("fill_diagonal_ wrap", torch.zeros(5, 2).fill_diagonal_(1.0, wrap=True).sum().item())
