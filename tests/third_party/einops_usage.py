"""einops on torch tensors: rearrange, reduce, repeat, einsum, pack/unpack, its layers
in an nn.Sequential, EinMix, and gradients through a rearrange."""
import torch
from einops import einsum, pack, rearrange, reduce, repeat, unpack
from einops.layers.torch import EinMix, Rearrange, Reduce

torch.manual_seed(0)
x = torch.randn(2, 3, 4, 6)
print(rearrange(x, "b c h w -> b (h w) c").shape)
print(reduce(x, "b c (h h2) w -> b c h w", "mean", h2=2).shape)
print(reduce(x, "b c h w -> b c", "max"))
print(repeat(x[0, 0], "h w -> c h w", c=3).shape)
print(einsum(x, x, "b c h w, b c h w -> b c").shape)
packed, shapes = pack([x, x[:, :1]], "b * h w")
print(packed.shape, shapes)
print([t.shape for t in unpack(packed, shapes, "b * h w")])
model = torch.nn.Sequential(Rearrange("b c h w -> b (c h w)"), torch.nn.Linear(72, 5),
                            Reduce("b n -> b", "max"))
print(model)
print(model(x).shape)
mix = EinMix("b c h w -> b d h w", weight_shape="c d", c=3, d=5)
print(mix(x).shape)
x.requires_grad_()
rearrange(x, "b c h w -> (b c) h w").pow(2).sum().backward()
print(torch.allclose(x.grad, 2 * x))
try:
    rearrange(x, "b c h -> b c")
except Exception as e:  # einops' error for a wrong pattern
    print(type(e).__name__, str(e).splitlines()[0])
