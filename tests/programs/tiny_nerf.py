"""Tiny NeRF in the style of yenchenlin/nerf-pytorch and bmild's tiny_nerf notebook: rays from
a pinhole camera (torch.meshgrid indexing='xy'), positional encoding with sin/cos bands,
stratified sampling along each ray, volume rendering with an exclusive cumprod transmittance,
and hierarchical (fine) sampling by inverse-CDF with torch.searchsorted; fitted to a
synthetic 8x8 image of a coloured sphere."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cpu")
img2mse = lambda x, y: torch.mean((x - y) ** 2)
mse2psnr = lambda x: -10. * torch.log(x) / torch.log(torch.Tensor([10.]))


class Embedder:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.create_embedding_fn()

    def create_embedding_fn(self):
        embed_fns = []
        d = self.kwargs['input_dims']
        out_dim = 0
        if self.kwargs['include_input']:
            embed_fns.append(lambda x: x)
            out_dim += d
        max_freq = self.kwargs['max_freq_log2']
        N_freqs = self.kwargs['num_freqs']
        if self.kwargs['log_sampling']:
            freq_bands = 2. ** torch.linspace(0., max_freq, steps=N_freqs)
        else:
            freq_bands = torch.linspace(2. ** 0., 2. ** max_freq, steps=N_freqs)
        for freq in freq_bands:
            for p_fn in self.kwargs['periodic_fns']:
                embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
                out_dim += d
        self.embed_fns = embed_fns
        self.out_dim = out_dim

    def embed(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)


def get_embedder(multires):
    embed_kwargs = {'include_input': True, 'input_dims': 3, 'max_freq_log2': multires - 1,
                    'num_freqs': multires, 'log_sampling': True,
                    'periodic_fns': [torch.sin, torch.cos]}
    embedder_obj = Embedder(**embed_kwargs)
    return (lambda x, eo=embedder_obj: eo.embed(x)), embedder_obj.out_dim


class NeRF(nn.Module):
    def __init__(self, D=4, W=32, input_ch=3, input_ch_views=3, output_ch=4, skips=[2],
                 use_viewdirs=True):
        super(NeRF, self).__init__()
        self.D = D
        self.W = W
        self.input_ch = input_ch
        self.input_ch_views = input_ch_views
        self.skips = skips
        self.use_viewdirs = use_viewdirs
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)] + [nn.Linear(W, W) if i not in self.skips else
                                        nn.Linear(W + input_ch, W) for i in range(D - 1)])
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
        if use_viewdirs:
            self.feature_linear = nn.Linear(W, W)
            self.alpha_linear = nn.Linear(W, 1)
            self.rgb_linear = nn.Linear(W // 2, 3)
        else:
            self.output_linear = nn.Linear(W, output_ch)

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
        h = input_pts
        for i, l in enumerate(self.pts_linears):
            h = self.pts_linears[i](h)
            h = F.relu(h)
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        if self.use_viewdirs:
            alpha = self.alpha_linear(h)
            feature = self.feature_linear(h)
            h = torch.cat([feature, input_views], -1)
            for i, l in enumerate(self.views_linears):
                h = self.views_linears[i](h)
                h = F.relu(h)
            rgb = self.rgb_linear(h)
            outputs = torch.cat([rgb, alpha], -1)
        else:
            outputs = self.output_linear(h)
        return outputs


def get_rays(H, W, K, c2w):
    i, j = torch.meshgrid(torch.linspace(0, W - 1, W), torch.linspace(0, H - 1, H),
                          indexing='ij')
    i = i.t()
    j = j.t()
    dirs = torch.stack([(i - K[0][2]) / K[0][0], -(j - K[1][2]) / K[1][1],
                        -torch.ones_like(i)], -1)
    rays_d = torch.sum(dirs[..., np.newaxis, :] * c2w[:3, :3], -1)
    rays_o = c2w[:3, -1].expand(rays_d.shape)
    return rays_o, rays_d


def raw2outputs(raw, z_vals, rays_d, raw_noise_std=0., white_bkgd=False):
    raw2alpha = lambda raw, dists, act_fn=F.relu: 1. - torch.exp(-act_fn(raw) * dists)
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[..., :1].shape)], -1)
    dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
    rgb = torch.sigmoid(raw[..., :3])
    noise = 0.
    if raw_noise_std > 0.:
        noise = torch.randn(raw[..., 3].shape) * raw_noise_std
    alpha = raw2alpha(raw[..., 3] + noise, dists)
    weights = alpha * torch.cumprod(
        torch.cat([torch.ones((alpha.shape[0], 1)), 1. - alpha + 1e-10], -1), -1)[:, :-1]
    rgb_map = torch.sum(weights[..., None] * rgb, -2)
    depth_map = torch.sum(weights * z_vals, -1)
    disp_map = 1. / torch.max(1e-10 * torch.ones_like(depth_map), depth_map / torch.sum(weights, -1))
    acc_map = torch.sum(weights, -1)
    if white_bkgd:
        rgb_map = rgb_map + (1. - acc_map[..., None])
    return rgb_map, disp_map, acc_map, weights, depth_map


def sample_pdf(bins, weights, N_samples, det=False):
    weights = weights + 1e-5
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    if det:
        u = torch.linspace(0., 1., steps=N_samples)
        u = u.expand(list(cdf.shape[:-1]) + [N_samples])
    else:
        u = torch.rand(list(cdf.shape[:-1]) + [N_samples])
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.max(torch.zeros_like(inds - 1), inds - 1)
    above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = (cdf_g[..., 1] - cdf_g[..., 0])
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    samples = bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])
    return samples


def render_rays(ray_batch, network_fn, network_fine, embed_fn, embeddirs_fn, N_samples,
                N_importance, perturb=1., near=2., far=6.):
    N_rays = ray_batch.shape[0]
    rays_o, rays_d = ray_batch[:, 0:3], ray_batch[:, 3:6]
    viewdirs = ray_batch[:, -3:]
    t_vals = torch.linspace(0., 1., steps=N_samples)
    z_vals = near * (1. - t_vals) + far * (t_vals)
    z_vals = z_vals.expand([N_rays, N_samples])
    if perturb > 0.:
        mids = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
        upper = torch.cat([mids, z_vals[..., -1:]], -1)
        lower = torch.cat([z_vals[..., :1], mids], -1)
        t_rand = torch.rand(z_vals.shape)
        z_vals = lower + (upper - lower) * t_rand
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]

    def run(fn, pts):
        inputs_flat = torch.reshape(pts, [-1, pts.shape[-1]])
        embedded = embed_fn(inputs_flat)
        input_dirs = viewdirs[:, None].expand(pts.shape)
        input_dirs_flat = torch.reshape(input_dirs, [-1, input_dirs.shape[-1]])
        embedded = torch.cat([embedded, embeddirs_fn(input_dirs_flat)], -1)
        outputs_flat = fn(embedded)
        return torch.reshape(outputs_flat, list(pts.shape[:-1]) + [outputs_flat.shape[-1]])

    raw = run(network_fn, pts)
    rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(raw, z_vals, rays_d)
    rgb_map_0 = rgb_map
    z_vals_mid = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
    z_samples = sample_pdf(z_vals_mid, weights[..., 1:-1], N_importance, det=(perturb == 0.))
    z_samples = z_samples.detach()
    z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
    raw = run(network_fine, pts)
    rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(raw, z_vals, rays_d)
    return {'rgb_map': rgb_map, 'disp_map': disp_map, 'acc_map': acc_map, 'rgb0': rgb_map_0,
            'z_std': torch.std(z_samples, dim=-1, unbiased=False)}


# ---- synthetic scene: a red-green sphere seen from a camera at z=4 ----
H = W = 8
focal = 10.
K = np.array([[focal, 0, 0.5 * W], [0, focal, 0.5 * H], [0, 0, 1]])
c2w = torch.eye(4)[:3]
c2w[2, 3] = 4.
rays_o, rays_d = get_rays(H, W, K, c2w)
print('rays_o', tuple(rays_o.shape), 'rays_d', tuple(rays_d.shape))
print('corner ray', rays_d[0, 0], rays_d[-1, -1])
yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
r2 = ((xx - 3.5) ** 2 + (yy - 3.5) ** 2) / 9.
target = np.stack([np.clip(1 - r2, 0, 1), xx / (W - 1) * (r2 < 1), 0.2 * np.ones_like(xx)], -1)
target = torch.from_numpy(target.astype(np.float32))
print('target', target.shape, target.dtype, 'mean %.4f' % target.mean().item())

embed_fn, input_ch = get_embedder(4)
embeddirs_fn, input_ch_views = get_embedder(2)
print('embedding dims', input_ch, input_ch_views)
model = NeRF(input_ch=input_ch, input_ch_views=input_ch_views)
model_fine = NeRF(input_ch=input_ch, input_ch_views=input_ch_views)
print(model)
grad_vars = list(model.parameters()) + list(model_fine.parameters())
print('parameters', sum(p.numel() for p in grad_vars))
optimizer = torch.optim.Adam(params=grad_vars, lr=5e-3, betas=(0.9, 0.999))

# deterministic pieces of the renderer
bins = torch.linspace(2., 6., 9).expand(3, 9)
w = torch.tensor([[0., 1., 0., 0., 0., 0., 0.], [1., 1., 1., 1., 1., 1., 1.],
                  [0., 0., 0., 0., 0., 0., 5.]])
print('sample_pdf det', sample_pdf(bins[:, :8] + 0.25, w, 5, det=True))
z = torch.linspace(2., 6., 5).expand(2, 5)
raw = torch.zeros(2, 5, 4)
raw[0, 2, 3] = 10.
raw[1, :, 3] = 0.5
rgb, disp, acc, weights, depth = raw2outputs(raw, z, torch.ones(2, 3))
print('weights', weights)
print('acc', acc, 'depth', depth)

rays = torch.cat([rays_o, rays_d, F.normalize(rays_d, dim=-1)], -1).reshape(-1, 9)
target_s = target.reshape(-1, 3)
N_rand = 32
for i in range(1, 31):
    select_inds = np.random.choice(H * W, size=[N_rand], replace=False)
    batch = rays[select_inds]
    out = render_rays(batch, model, model_fine, embed_fn, embeddirs_fn, N_samples=16,
                      N_importance=8)
    optimizer.zero_grad()
    img_loss = img2mse(out['rgb_map'], target_s[select_inds])
    loss = img_loss + img2mse(out['rgb0'], target_s[select_inds])
    psnr = mse2psnr(img_loss)
    loss.backward()
    optimizer.step()
    decay_rate = 0.1
    new_lrate = 5e-3 * (decay_rate ** (i / 100))
    for param_group in optimizer.param_groups:
        param_group['lr'] = new_lrate
    if i % 5 == 0:
        print(f"[TRAIN] Iter: {i} Loss: {loss.item():.5f}  PSNR: {psnr.item():.3f}")

with torch.no_grad():
    out = render_rays(rays, model, model_fine, embed_fn, embeddirs_fn, 16, 8, perturb=0.)
    img = out['rgb_map'].reshape(H, W, 3)
    print('render', img.shape, 'disp', out['disp_map'].shape, 'acc range',
          '%.3f %.3f' % (out['acc_map'].min().item(), out['acc_map'].max().item()))
    print('test psnr %.2f' % mse2psnr(img2mse(img, target)).item())
    to8b = lambda x: (255 * np.clip(x, 0, 1)).astype(np.uint8)
    print('8-bit image', to8b(img.numpy()).shape, to8b(img.numpy()).dtype)
