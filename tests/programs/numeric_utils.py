"""Numeric helpers a data pipeline uses (feature binning, quantile normalisation,
vocabulary counts, cleaning, bit tricks), in the style of torchrec / torchaudio / tabular
preprocessing code: torch.bucketize, torch.searchsorted, torch.histc, torch.quantile,
torch.unique(return_counts=True), torch.nan_to_num, Tensor.view(dtype) bit views and a
torch.jit.script'ed function."""
import argparse

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument('--rows', type=int, default=1000)
args = parser.parse_args()

rng = np.random.default_rng(0)
raw = rng.standard_normal((args.rows, 3)).astype(np.float32) * np.array([1.0, 10.0, 0.1], np.float32)
raw[::97, 1] = np.nan
raw[::131, 2] = np.inf
x = torch.from_numpy(raw)
print(x.dtype, x.shape, int(torch.isnan(x).sum()), int(torch.isinf(x).sum()))

# cleaning
clean = torch.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0)
print("after nan_to_num", bool(torch.isfinite(clean).all()))
print(torch.nan_to_num(torch.tensor([float('nan'), float('inf'), -float('inf'), 1.5])))

# quantile binning
col = clean[:, 0]
q = torch.tensor([0.1, 0.25, 0.5, 0.75, 0.9])
boundaries = torch.quantile(col, q)
print("quantiles", boundaries)
print("median", torch.quantile(col, 0.5).item(), col.median().item())
print("quantile interpolation", [f"{torch.quantile(col[:10], 0.3, interpolation=m).item():.4f}"
                                  for m in ("linear", "lower", "higher", "midpoint", "nearest")])
print("nanquantile", torch.nanquantile(x[:, 1], 0.5).item())
bins = torch.bucketize(col, boundaries)
print("bucketize", bins[:12], bins.dtype)
print("bucket counts", torch.bincount(bins, minlength=len(boundaries) + 1))
right = torch.bucketize(torch.tensor([-1.0, 0.0, 1.0]), torch.tensor([-1.0, 0.0, 1.0]), right=True)
print("right", right)
print("searchsorted", torch.searchsorted(boundaries, torch.tensor([[-2.0, 0.0], [0.5, 3.0]])))
print("searchsorted side", torch.searchsorted(torch.tensor([1, 2, 2, 3]), torch.tensor([2]), side='right'))
print("searchsorted int32", torch.searchsorted(boundaries, col[:4], out_int32=True).dtype)
print(torch.histc(col, bins=8, min=-3, max=3))
print(torch.histc(torch.tensor([1., 2, 1]), bins=4, min=0, max=3))

# vocabulary counts
tokens = torch.from_numpy(rng.integers(0, 20, size=200)).long()
vocab, inverse, counts = torch.unique(tokens, sorted=True, return_inverse=True, return_counts=True)
print("vocab", vocab.shape, "counts", counts[:5], "total", counts.sum().item())
print(torch.equal(vocab[inverse], tokens))
order = counts.argsort(descending=True, stable=True)
print("most common", vocab[order[:3]].tolist(), counts[order[:3]].tolist())
u, c = torch.unique(torch.tensor([[1, 2], [1, 2], [3, 4]]), dim=0, return_counts=True)
print(u, c)
print(torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True))

# bit views of floats
f = torch.tensor([1.0, -2.0, 0.5, 0.0])
bits = f.view(torch.int32)
print(bits)
print([f"{b:#010x}" for b in bits.tolist()])
sign = (bits >> 31) & 1
exponent = ((bits >> 23) & 0xFF) - 127
print("sign", sign, "exponent", exponent)
print(bits.view(torch.float32))
print(f.view(torch.uint8).shape, f.view(torch.int16).shape, f.view(torch.float16).dtype)
half = torch.tensor([1.0, 2.0], dtype=torch.float16)
print(half.view(torch.int16), half.view(torch.uint8))
print(torch.arange(8, dtype=torch.uint8).view(torch.int32))
d = torch.tensor([1.0], dtype=torch.float64).view(torch.int64)
print(d, hex(d.item()))


@torch.jit.script
def standardize(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    mean = x.mean(dim=0, keepdim=True)
    std = x.std(dim=0, keepdim=True)
    return (x - mean) / (std + eps)


z = standardize(clean)
print("standardized", [f"{v:.3f}" for v in z.mean(0).tolist()], [f"{v:.3f}" for v in z.std(0).tolist()])
