"""A diffusion UNet-lite in the style of lucidrains/denoising-diffusion-pytorch and the DDIM
sampler of ermongroup/ddim: sinusoidal time embeddings, ResNet blocks with GroupNorm, SiLU
and a scale-shift from the time MLP (chunk(2, dim=1)), a linear-attention block,
downsampling by pixel-unshuffle rearrange, upsampling by F.interpolate(nearest), skip
connections with torch.cat, a cosine beta schedule with register_buffer lambdas, the
gather-based `extract`, training on v-free eps-prediction with F.mse_loss, an EMA copy,
and a deterministic DDIM sampling loop (eta = 0) plus one DDPM p_sample step."""
import copy
import math
from functools import partial

import torch
import torch.nn.functional as F
from torch import einsum, nn

torch.manual_seed(0)


def exists(x):
    return x is not None


def default(val, d):
    if exists(val):
        return val
    return d() if callable(d) else d


def extract(a, t, x_shape):
    b, *_ = t.shape
    out = a.gather(-1, t)
    return out.reshape(b, *((1,) * (len(x_shape) - 1)))


def cosine_beta_schedule(timesteps, s=0.008):
    steps = timesteps + 1
    t = torch.linspace(0, timesteps, steps, dtype=torch.float64) / timesteps
    alphas_cumprod = torch.cos((t + s) / (1 + s) * math.pi * 0.5) ** 2
    alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
    betas = 1 - (alphas_cumprod[1:] / alphas_cumprod[:-1])
    return torch.clip(betas, 0, 0.999)


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, *args, **kwargs):
        return self.fn(x, *args, **kwargs) + x


def Upsample(dim, dim_out=None):
    return nn.Sequential(nn.Upsample(scale_factor=2, mode='nearest'),
                         nn.Conv2d(dim, default(dim_out, dim), 3, padding=1))


class Downsample(nn.Module):
    """'b c (h p1) (w p2) -> b (c p1 p2) h w' then a 1x1 conv (einops' Rearrange, written out)."""
    def __init__(self, dim, dim_out=None):
        super().__init__()
        self.conv = nn.Conv2d(dim * 4, default(dim_out, dim), 1)

    def forward(self, x):
        return self.conv(F.pixel_unshuffle(x, 2))


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = dim ** 0.5
        self.g = nn.Parameter(torch.ones(1, dim, 1, 1))

    def forward(self, x):
        return F.normalize(x, dim=1) * self.g * self.scale


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim, theta=10000):
        super().__init__()
        self.dim = dim
        self.theta = theta

    def forward(self, x):
        device = x.device
        half_dim = self.dim // 2
        emb = math.log(self.theta) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, device=device) * -emb)
        emb = x[:, None] * emb[None, :]
        emb = torch.cat((emb.sin(), emb.cos()), dim=-1)
        return emb


class Block(nn.Module):
    def __init__(self, dim, dim_out, groups=8):
        super().__init__()
        self.proj = nn.Conv2d(dim, dim_out, 3, padding=1)
        self.norm = nn.GroupNorm(groups, dim_out)
        self.act = nn.SiLU()

    def forward(self, x, scale_shift=None):
        x = self.proj(x)
        x = self.norm(x)
        if exists(scale_shift):
            scale, shift = scale_shift
            x = x * (scale + 1) + shift
        x = self.act(x)
        return x


class ResnetBlock(nn.Module):
    def __init__(self, dim, dim_out, *, time_emb_dim=None, groups=8):
        super().__init__()
        self.mlp = nn.Sequential(nn.SiLU(), nn.Linear(time_emb_dim, dim_out * 2)) if exists(time_emb_dim) else None
        self.block1 = Block(dim, dim_out, groups=groups)
        self.block2 = Block(dim_out, dim_out, groups=groups)
        self.res_conv = nn.Conv2d(dim, dim_out, 1) if dim != dim_out else nn.Identity()

    def forward(self, x, time_emb=None):
        scale_shift = None
        if exists(self.mlp) and exists(time_emb):
            time_emb = self.mlp(time_emb)
            time_emb = time_emb[:, :, None, None]  # 'b c -> b c 1 1'
            scale_shift = time_emb.chunk(2, dim=1)
        h = self.block1(x, scale_shift=scale_shift)
        h = self.block2(h)
        return h + self.res_conv(x)


class LinearAttention(nn.Module):
    def __init__(self, dim, heads=2, dim_head=8):
        super().__init__()
        self.scale = dim_head ** -0.5
        self.heads = heads
        hidden_dim = dim_head * heads
        self.norm = RMSNorm(dim)
        self.to_qkv = nn.Conv2d(dim, hidden_dim * 3, 1, bias=False)
        self.to_out = nn.Sequential(nn.Conv2d(hidden_dim, dim, 1), RMSNorm(dim))

    def forward(self, x):
        b, c, h, w = x.shape
        x = self.norm(x)
        qkv = self.to_qkv(x).chunk(3, dim=1)
        q, k, v = map(lambda t: t.reshape(b, self.heads, -1, h * w), qkv)  # 'b (h c) x y -> b h c (x y)'
        q = q.softmax(dim=-2)
        k = k.softmax(dim=-1)
        q = q * self.scale
        context = torch.einsum('b h d n, b h e n -> b h d e', k, v)
        out = torch.einsum('b h d e, b h d n -> b h e n', context, q)
        out = out.reshape(b, -1, h, w)  # 'b h c (x y) -> b (h c) x y'
        return self.to_out(out)


class Unet(nn.Module):
    def __init__(self, dim, init_dim=None, out_dim=None, dim_mults=(1, 2), channels=1, resnet_block_groups=4):
        super().__init__()
        self.channels = channels
        input_channels = channels
        init_dim = default(init_dim, dim)
        self.init_conv = nn.Conv2d(input_channels, init_dim, 7, padding=3)
        dims = [init_dim, *map(lambda m: dim * m, dim_mults)]
        in_out = list(zip(dims[:-1], dims[1:]))
        block_klass = partial(ResnetBlock, groups=resnet_block_groups)
        time_dim = dim * 4
        self.time_mlp = nn.Sequential(SinusoidalPosEmb(dim), nn.Linear(dim, time_dim), nn.GELU(),
                                      nn.Linear(time_dim, time_dim))
        self.downs = nn.ModuleList([])
        self.ups = nn.ModuleList([])
        num_resolutions = len(in_out)
        for ind, (dim_in, dim_out) in enumerate(in_out):
            is_last = ind >= (num_resolutions - 1)
            self.downs.append(nn.ModuleList([
                block_klass(dim_in, dim_in, time_emb_dim=time_dim),
                Residual(LinearAttention(dim_in)),
                Downsample(dim_in, dim_out) if not is_last else nn.Conv2d(dim_in, dim_out, 3, padding=1)
            ]))
        mid_dim = dims[-1]
        self.mid_block1 = block_klass(mid_dim, mid_dim, time_emb_dim=time_dim)
        self.mid_block2 = block_klass(mid_dim, mid_dim, time_emb_dim=time_dim)
        for ind, (dim_in, dim_out) in enumerate(reversed(in_out)):
            is_last = ind == (len(in_out) - 1)
            self.ups.append(nn.ModuleList([
                block_klass(dim_out + dim_in, dim_out, time_emb_dim=time_dim),
                Residual(LinearAttention(dim_out)),
                Upsample(dim_out, dim_in) if not is_last else nn.Conv2d(dim_out, dim_in, 3, padding=1)
            ]))
        self.out_dim = default(out_dim, channels)
        self.final_res_block = block_klass(dim * 2, dim, time_emb_dim=time_dim)
        self.final_conv = nn.Conv2d(dim, self.out_dim, 1)

    def forward(self, x, time):
        x = self.init_conv(x)
        r = x.clone()
        t = self.time_mlp(time)
        h = []
        for block1, attn, downsample in self.downs:
            x = block1(x, t)
            x = attn(x)
            h.append(x)
            x = downsample(x)
        x = self.mid_block1(x, t)
        x = self.mid_block2(x, t)
        for block1, attn, upsample in self.ups:
            x = torch.cat((x, h.pop()), dim=1)
            x = block1(x, t)
            x = attn(x)
            x = upsample(x)
        x = torch.cat((x, r), dim=1)
        x = self.final_res_block(x, t)
        return self.final_conv(x)


class GaussianDiffusion(nn.Module):
    def __init__(self, model, *, image_size, timesteps=100, sampling_timesteps=10, ddim_sampling_eta=0.):
        super().__init__()
        self.model = model
        self.channels = self.model.channels
        self.image_size = image_size
        betas = cosine_beta_schedule(timesteps)
        alphas = 1. - betas
        alphas_cumprod = torch.cumprod(alphas, dim=0)
        alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.)
        timesteps, = betas.shape
        self.num_timesteps = int(timesteps)
        self.sampling_timesteps = default(sampling_timesteps, timesteps)
        assert self.sampling_timesteps <= timesteps
        self.ddim_sampling_eta = ddim_sampling_eta
        # helper function to register buffer from float64 to float32
        register_buffer = lambda name, val: self.register_buffer(name, val.to(torch.float32))
        register_buffer('betas', betas)
        register_buffer('alphas_cumprod', alphas_cumprod)
        register_buffer('alphas_cumprod_prev', alphas_cumprod_prev)
        register_buffer('sqrt_alphas_cumprod', torch.sqrt(alphas_cumprod))
        register_buffer('sqrt_one_minus_alphas_cumprod', torch.sqrt(1. - alphas_cumprod))
        register_buffer('sqrt_recip_alphas_cumprod', torch.sqrt(1. / alphas_cumprod))
        register_buffer('sqrt_recipm1_alphas_cumprod', torch.sqrt(1. / alphas_cumprod - 1))
        posterior_variance = betas * (1. - alphas_cumprod_prev) / (1. - alphas_cumprod)
        register_buffer('posterior_variance', posterior_variance)
        register_buffer('posterior_log_variance_clipped', torch.log(posterior_variance.clamp(min=1e-20)))
        register_buffer('posterior_mean_coef1', betas * torch.sqrt(alphas_cumprod_prev) / (1. - alphas_cumprod))
        register_buffer('posterior_mean_coef2', (1. - alphas_cumprod_prev) * torch.sqrt(alphas) / (1. - alphas_cumprod))

    def predict_start_from_noise(self, x_t, t, noise):
        return (extract(self.sqrt_recip_alphas_cumprod, t, x_t.shape) * x_t -
                extract(self.sqrt_recipm1_alphas_cumprod, t, x_t.shape) * noise)

    def predict_noise_from_start(self, x_t, t, x0):
        return ((extract(self.sqrt_recip_alphas_cumprod, t, x_t.shape) * x_t - x0) /
                extract(self.sqrt_recipm1_alphas_cumprod, t, x_t.shape))

    def q_posterior(self, x_start, x_t, t):
        posterior_mean = (extract(self.posterior_mean_coef1, t, x_t.shape) * x_start +
                          extract(self.posterior_mean_coef2, t, x_t.shape) * x_t)
        posterior_log_variance_clipped = extract(self.posterior_log_variance_clipped, t, x_t.shape)
        return posterior_mean, posterior_log_variance_clipped

    @torch.inference_mode()
    def p_sample(self, x, t: int):
        b, *_, device = *x.shape, x.device
        batched_times = torch.full((b,), t, device=device, dtype=torch.long)
        pred_noise = self.model(x, batched_times)
        x_start = self.predict_start_from_noise(x, batched_times, pred_noise).clamp_(-1., 1.)
        model_mean, model_log_variance = self.q_posterior(x_start, x, batched_times)
        noise = torch.randn_like(x) if t > 0 else 0.  # no noise if t == 0
        return model_mean + (0.5 * model_log_variance).exp() * noise, x_start

    @torch.inference_mode()
    def ddim_sample(self, shape):
        batch, total_timesteps, sampling_timesteps, eta = shape[0], self.num_timesteps, self.sampling_timesteps, self.ddim_sampling_eta
        times = torch.linspace(-1, total_timesteps - 1, steps=sampling_timesteps + 1)  # [-1, 0, 1, 2, ..., T-1] when sampling_timesteps == total_timesteps
        times = list(reversed(times.int().tolist()))
        time_pairs = list(zip(times[:-1], times[1:]))  # [(T-1, T-2), (T-2, T-3), ..., (1, 0), (0, -1)]
        img = torch.randn(shape)
        for time, time_next in time_pairs:
            time_cond = torch.full((batch,), time, dtype=torch.long)
            pred_noise = self.model(img, time_cond)
            x_start = self.predict_start_from_noise(img, time_cond, pred_noise)
            x_start = torch.clamp(x_start, min=-1., max=1.)
            pred_noise = self.predict_noise_from_start(img, time_cond, x_start)
            if time_next < 0:
                img = x_start
                continue
            alpha = self.alphas_cumprod[time]
            alpha_next = self.alphas_cumprod[time_next]
            sigma = eta * ((1 - alpha / alpha_next) * (1 - alpha_next) / (1 - alpha)).sqrt()
            c = (1 - alpha_next - sigma ** 2).sqrt()
            noise = torch.randn_like(img)
            img = x_start * alpha_next.sqrt() + c * pred_noise + sigma * noise
        return img, time_pairs

    def q_sample(self, x_start, t, noise=None):
        noise = default(noise, lambda: torch.randn_like(x_start))
        return (extract(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start +
                extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise)

    def p_losses(self, x_start, t, noise=None):
        noise = default(noise, lambda: torch.randn_like(x_start))
        x = self.q_sample(x_start=x_start, t=t, noise=noise)
        model_out = self.model(x, t)
        loss = F.mse_loss(model_out, noise, reduction='none')
        loss = loss.reshape(loss.shape[0], -1).mean(dim=1)  # 'b ... -> b'
        return loss.mean()

    def forward(self, img):
        b, c, h, w, device, img_size, = *img.shape, img.device, self.image_size
        assert h == img_size and w == img_size, f'height and width of image must be {img_size}'
        t = torch.randint(0, self.num_timesteps, (b,), device=device).long()
        img = img * 2 - 1  # normalize_to_neg_one_to_one
        return self.p_losses(img, t)


model = Unet(dim=8, dim_mults=(1, 2), channels=1)
print(model.downs[0])
print('parameters', sum(p.numel() for p in model.parameters()))
diffusion = GaussianDiffusion(model, image_size=8, timesteps=100, sampling_timesteps=10)
print('betas', diffusion.betas.dtype, diffusion.betas[:3], diffusion.betas[-2:])
print('buffers', len(list(diffusion.buffers())), diffusion.posterior_log_variance_clipped[:2])
print('time embedding', SinusoidalPosEmb(8)(torch.tensor([0., 1., 50.])))
t = torch.tensor([0, 50, 99])
print('extract', extract(diffusion.sqrt_alphas_cumprod, t, (3, 1, 8, 8)).flatten())
x = torch.randn(2, 8, 8, 8)
print('pixel_unshuffle', F.pixel_unshuffle(x, 2).shape, 'nearest up',
      F.interpolate(x, scale_factor=2, mode='nearest').shape)

# data: blurry blobs in [0, 1]
yy, xx = torch.meshgrid(torch.arange(8.), torch.arange(8.), indexing='ij')
centers = torch.randint(2, 6, (32, 2)).float()
training_images = torch.exp(-((yy - centers[:, 0, None, None]) ** 2 + (xx - centers[:, 1, None, None]) ** 2) / 4.)[:, None]
print('training images', training_images.shape, 'range %.3f %.3f' % (training_images.min(), training_images.max()))

ema_model = copy.deepcopy(diffusion)
ema_model.requires_grad_(False)
opt = torch.optim.Adam(diffusion.parameters(), lr=2e-3, betas=(0.9, 0.99))
for step in range(16):
    idx = torch.randint(0, 32, (8,))
    loss = diffusion(training_images[idx])
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(diffusion.parameters(), 1.0)
    opt.step()
    with torch.no_grad():
        for ema_p, p in zip(ema_model.parameters(), diffusion.parameters()):
            ema_p.lerp_(p, 0.1)
    if step % 3 == 0 or step == 15:
        print(f'step {step:2d} loss: {loss.item():.4f}')

ema_model.eval()
sampled, pairs = ema_model.ddim_sample((2, 1, 8, 8))
print('ddim time pairs', pairs)
print('sampled', sampled.shape, 'in [-1, 1]:', bool(((sampled >= -1) & (sampled <= 1)).all()),
      'inference tensor:', sampled.is_inference())
img, x_start = ema_model.p_sample(torch.randn(2, 1, 8, 8), 5)
print('p_sample', img.shape, x_start.shape, img.requires_grad)
unnormalized = (sampled + 1) * 0.5
print('unnormalized', unnormalized.shape, unnormalized.dtype)


# guided-diffusion's p_sample_loop_progressive: a generator under @torch.no_grad() that
# yields each intermediate sample (the mode holds while it is resumed, not only created)
@torch.no_grad()
def p_sample_loop_progressive(diffusion, shape, indices):
    img = torch.randn(shape)
    for i in indices:
        t = torch.full((shape[0],), i, dtype=torch.long)
        pred_noise = diffusion.model(img, t)
        x_start = diffusion.predict_start_from_noise(img, t, pred_noise).clamp(-1., 1.)
        img, _ = diffusion.q_posterior(x_start, img, t)
        yield {"sample": img, "pred_xstart": x_start}


progressive = [out["sample"] for out in p_sample_loop_progressive(diffusion, (2, 1, 8, 8), [40, 20, 0])]
print('progressive', len(progressive), [tuple(s.shape) for s in progressive],
      'requires_grad:', [s.requires_grad for s in progressive])
