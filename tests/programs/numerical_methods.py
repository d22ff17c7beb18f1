"""Numerical methods in torch, as scientific-computing notebooks write them: PCA three ways
(torch.linalg.svd of the centred data, torch.pca_lowrank, torch.svd_lowrank) with explained
variance; Newton's method on a smooth function with torch.autograd.functional.hessian and
jacobian (and a Newton solve of a nonlinear system); least-squares curve fitting with
torch.linalg.lstsq, the normal equations with torch.linalg.solve, and a Gauss-Newton fit of
a nonlinear model; FFT low-pass filtering of a noisy signal with torch.fft.rfft / irfft /
rfftfreq and a 2-D fft2 / fftshift; then summary statistics with quantile, histc,
bucketize, median and mode."""
import math

import torch
from torch.autograd.functional import hessian, jacobian, hvp, vjp

torch.manual_seed(0)
torch.set_printoptions(precision=4)

# ---------------------------------------------------------------- PCA
n, d, k = 200, 6, 2
latent = torch.randn(n, k) * torch.tensor([3.0, 1.0])
mixing = torch.linalg.qr(torch.randn(d, d)).Q[:k]  # orthonormal rows
X = latent @ mixing + 0.05 * torch.randn(n, d) + torch.arange(d).float()
mean = X.mean(0, keepdim=True)
Xc = X - mean
U, S, Vh = torch.linalg.svd(Xc, full_matrices=False)
print("svd shapes", U.shape, S.shape, Vh.shape)
explained = S ** 2 / (n - 1)
ratio = explained / explained.sum()
print("explained variance ratio", ratio[:3])
print(f"first two components explain {ratio[:2].sum().item():.4f}")
print("reconstruction from full svd ok", torch.allclose(U @ torch.diag(S) @ Vh, Xc, atol=1e-4))
U2, S2, V2 = torch.pca_lowrank(X, q=k, center=True, niter=4)
print("pca_lowrank shapes", U2.shape, S2.shape, V2.shape)
print("pca_lowrank singular values match", torch.allclose(S2, S[:k], rtol=1e-3))
align = (V2.T @ Vh[:k].T).abs()
print("components agree up to sign", torch.allclose(align, torch.eye(k), atol=1e-3))
Us, Ss, Vs = torch.svd_lowrank(Xc, q=k + 2, niter=3)
print("svd_lowrank top values", torch.allclose(Ss[:k], S[:k], rtol=1e-3))
projected = Xc @ V2[:, :k]
print("projected", projected.shape, f"var {projected.var(0)[0].item() / explained[0].item():.3f} of pc1")
U3, S3, V3 = torch.svd(Xc)  # the older API returns V, not Vh
print("torch.svd V is Vh.T", torch.allclose(V3[:, :k].abs(), Vh[:k].T.abs(), atol=1e-5))
print("svdvals", torch.linalg.svdvals(Xc)[:2], "matrix_rank", torch.linalg.matrix_rank(Xc, atol=1.0).item())


# ---------------------------------------------------------------- Newton's method
def rosenbrock(v):
    return (1 - v[0]) ** 2 + 100 * (v[1] - v[0] ** 2) ** 2


v = torch.tensor([-1.2, 1.0])
for it in range(8):
    g = jacobian(rosenbrock, v)
    H = hessian(rosenbrock, v)
    step = torch.linalg.solve(H, g)
    v = v - step
    print(f"newton {it} f={rosenbrock(v).item():.6e} |grad|={g.norm().item():.4e}")
print("newton minimum", v)
print("hessian at minimum", hessian(rosenbrock, torch.tensor([1.0, 1.0])))
_, hv = hvp(rosenbrock, torch.tensor([1.0, 1.0]), torch.tensor([1.0, 0.0]))
print("hvp", hv)


def system(z):
    # x^2 + y^2 = 4, x * y = 1
    return torch.stack([z[0] ** 2 + z[1] ** 2 - 4, z[0] * z[1] - 1])


z = torch.tensor([2.0, 0.5])
for it in range(6):
    J = jacobian(system, z)
    z = z - torch.linalg.solve(J, system(z))
print("nonlinear system root", z, "residual", f"{system(z).abs().max().item():.2e}")
out, vjp_val = vjp(system, z, torch.ones(2))
print("vjp", vjp_val)
batched_J = jacobian(lambda a: a.sin() * 2, torch.tensor([0.0, 1.0, 2.0]))
print("jacobian of elementwise", batched_J.diagonal())
ms = hessian(lambda a, b: (a * b ** 2).sum(), (torch.tensor([1.0]), torch.tensor([2.0])))
print("hessian of two inputs", [[tuple(h.shape) for h in row] for row in ms], ms[0][1], ms[1][1])

# ---------------------------------------------------------------- least squares
t = torch.linspace(0, 2, 50)
ys = 1.0 + 2.0 * t - 0.7 * t ** 2 + 0.05 * torch.randn(50)
A = torch.stack([torch.ones_like(t), t, t ** 2], 1)
sol = torch.linalg.lstsq(A, ys.unsqueeze(1))
print("lstsq coefficients", sol.solution.squeeze(1))
print("lstsq rank", sol.rank, "residuals", sol.residuals, "singular values", sol.singular_values)
print(torch.linalg.lstsq(A[:4, :2], ys[:4].unsqueeze(1), driver='gelsd'))
normal_eq = torch.linalg.solve(A.T @ A, A.T @ ys)
print("normal equations agree", torch.allclose(normal_eq, sol.solution.squeeze(1), atol=1e-3))
print("pinv agrees", torch.allclose(torch.linalg.pinv(A) @ ys, normal_eq, atol=1e-3))
rss = ((A @ normal_eq - ys) ** 2).sum()
print(f"residual sum of squares {rss.item():.4f}")
B = torch.stack([ys, 2 * ys], 1)
print("multi-rhs lstsq", torch.linalg.lstsq(A, B).solution.shape)
X_solve = torch.linalg.solve(torch.tensor([[3.0, 1.0], [1.0, 2.0]]), torch.tensor([9.0, 8.0]))
print("solve", X_solve)

# Gauss-Newton for y = a * exp(-b t) + c
true = torch.tensor([2.0, 1.3, 0.5])
yt = true[0] * torch.exp(-true[1] * t) + true[2] + 0.02 * torch.randn(50)


def model(p):
    return p[0] * torch.exp(-p[1] * t) + p[2]


p = torch.tensor([1.0, 1.0, 0.0])
for it in range(6):
    r = model(p) - yt
    J = jacobian(model, p)
    delta = torch.linalg.lstsq(J, -r.unsqueeze(1)).solution.squeeze(1)
    p = p + delta
    print(f"gauss-newton {it} loss {0.5 * (r ** 2).sum().item():.6f}")
print("fitted", p)

# ---------------------------------------------------------------- FFT filtering
fs = 200.0
tt = torch.arange(0, 1, 1 / fs)
clean = torch.sin(2 * math.pi * 5 * tt) + 0.5 * torch.sin(2 * math.pi * 12 * tt)
noisy = clean + 0.4 * torch.sin(2 * math.pi * 60 * tt) + 0.2 * torch.randn(tt.shape)
spec = torch.fft.rfft(noisy)
freqs = torch.fft.rfftfreq(noisy.shape[-1], d=1 / fs)
print("spectrum", spec.shape, spec.dtype, "freqs", freqs[:4], freqs[-1])
peaks = torch.topk(spec.abs(), 3).indices.sort().values
print("peak frequencies", freqs[peaks])
spec[freqs > 20] = 0
filtered = torch.fft.irfft(spec, n=noisy.shape[-1])
print(f"error before {(noisy - clean).pow(2).mean().sqrt().item():.4f} "
      f"after {(filtered - clean).pow(2).mean().sqrt().item():.4f}")
print("fft/ifft round trip", torch.allclose(torch.fft.ifft(torch.fft.fft(noisy)).real, noisy, atol=1e-5))
power = torch.fft.fft(clean).abs() ** 2 / len(clean)
print(f"parseval {power.sum().item():.3f} {clean.pow(2).sum().item():.3f}")
print("fftfreq", torch.fft.fftfreq(8, d=0.5))
img = torch.zeros(8, 8)
img[2:6, 3:5] = 1.0
F2 = torch.fft.fftshift(torch.fft.fft2(img))
print("fft2 dc at centre", F2.abs().argmax().item(), F2[4, 4].real.item())
print("ifftshift undoes fftshift", torch.equal(torch.fft.ifftshift(torch.fft.fftshift(img)), img))
kernel = torch.tensor([0.25, 0.5, 0.25])
conv = torch.fft.irfft(torch.fft.rfft(clean, n=210) * torch.fft.rfft(kernel, n=210), n=210)[1:201]
print("fft convolution matches conv1d", torch.allclose(
    conv, torch.nn.functional.conv1d(clean.view(1, 1, -1), kernel.view(1, 1, -1), padding=1).view(-1),
    atol=1e-4))
print("norm='ortho'", torch.fft.fft(torch.tensor([1.0, 2.0, 3.0, 4.0]), norm="ortho"))

# ---------------------------------------------------------------- statistics
samples = torch.randn(1000) * 2 + 1
q = torch.quantile(samples, torch.tensor([0.05, 0.5, 0.95]))
print("quantiles", q)
print("nanquantile", torch.nanquantile(torch.tensor([1.0, float('nan'), 3.0, 2.0]), 0.5))
print("quantile interpolations", [torch.quantile(torch.arange(5.0), 0.3, interpolation=m).item()
                                  for m in ("linear", "lower", "higher", "midpoint", "nearest")])
hist = torch.histc(samples, bins=8, min=-5, max=7)
print("histc", hist, int(hist.sum()))
counts, edges = torch.histogram(samples, bins=4, range=(-3.0, 5.0))
print("histogram", counts, edges)
buckets = torch.bucketize(samples[:8], boundaries=torch.tensor([-1.0, 1.0, 3.0]))
print("bucketize", samples[:8], buckets)
print("right=True", torch.bucketize(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]), right=True))
print("median", samples.median(), "mode", torch.tensor([1, 2, 2, 3, 3, 3]).mode())
print("std/var unbiased", samples.std().item() > 0, torch.var_mean(samples[:10], correction=0))
print("cov", torch.cov(torch.stack([samples[:100], 2 * samples[:100] + 1])))
print("corrcoef", torch.corrcoef(torch.stack([samples[:100], -samples[:100]])))
print("cummax", torch.cummax(torch.tensor([1.0, 3.0, 2.0, 5.0]), 0))
print("logsumexp", torch.logsumexp(torch.tensor([1000.0, 1000.0]), 0))
