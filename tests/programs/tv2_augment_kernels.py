"""Image augmentation in pure torch, as torchvision.transforms.v2.functional's tensor kernels
write it (no torchvision import): _rgb_to_hsv/_hsv_to_rgb, adjust_brightness/contrast/
saturation/hue with _blend, affine via _get_inverse_affine_matrix + F.affine_grid +
F.grid_sample (all modes, padding modes, align_corners), rotate and shear, resize with
F.interpolate(antialias=True) on uint8 and float images, gaussian blur with conv2d(groups=C),
RandomErasing, flips, rot90, normalize, and uint8 round trips; then a tiny CNN trained on
augmented batches."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def _max_value(dtype):
    return 255 if dtype == torch.uint8 else 1.0


def _blend(image1, image2, ratio):
    ratio = float(ratio)
    fp = image1.is_floating_point()
    bound = _max_value(image1.dtype)
    output = image1.mul(ratio).add_(image2.mul(1.0 - ratio)).clamp_(0, bound)
    return output if fp else output.to(image1.dtype)


def rgb_to_grayscale(image):
    r, g, b = image.unbind(dim=-3)
    l_img = r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114)
    if not image.is_floating_point():
        l_img = l_img.round_()
    l_img = l_img.unsqueeze(dim=-3)
    return l_img.to(image.dtype)


def adjust_brightness(image, brightness_factor):
    fp = image.is_floating_point()
    bound = _max_value(image.dtype)
    output = image.mul(brightness_factor).clamp_(0, bound)
    return output if fp else output.to(image.dtype)


def adjust_saturation(image, saturation_factor):
    grayscale = rgb_to_grayscale(image)
    if not image.is_floating_point():
        grayscale = grayscale.floor_()
    return _blend(image, grayscale, saturation_factor)


def adjust_contrast(image, contrast_factor):
    fp = image.is_floating_point()
    grayscale = rgb_to_grayscale(image)
    if not fp:
        grayscale = grayscale.to(torch.float32)
    mean = torch.mean(grayscale, dim=(-3, -2, -1), keepdim=True)
    return _blend(image, mean, contrast_factor)


def _rgb_to_hsv(image):
    r, g, _ = image.unbind(dim=-3)
    minc, maxc = torch.aminmax(image, dim=-3)
    eqc = maxc == minc
    channels_range = maxc - minc
    ones = torch.ones_like(maxc)
    s = channels_range / torch.where(eqc, ones, maxc)
    channels_range_divisor = torch.where(eqc, ones, channels_range).unsqueeze_(dim=-3)
    rc, gc, bc = ((maxc.unsqueeze(dim=-3) - image) / channels_range_divisor).unbind(dim=-3)
    mask_maxc_neq_r = maxc != r
    mask_maxc_eq_g = maxc == g
    hg = rc.add(2.0).sub_(bc).mul_(mask_maxc_eq_g & mask_maxc_neq_r)
    hr = bc.sub_(gc).mul_(~mask_maxc_neq_r)
    hb = gc.add_(4.0).sub_(rc).mul_(mask_maxc_neq_r.logical_and_(mask_maxc_eq_g.logical_not_()))
    h = hr.add_(hg).add_(hb)
    h = h.mul_(1.0 / 6.0).add_(1.0).fmod_(1.0)
    return torch.stack((h, s, maxc), dim=-3)


def _hsv_to_rgb(img):
    h, s, v = img.unbind(dim=-3)
    h6 = h.mul(6)
    i = torch.floor(h6)
    f = h6.sub_(i)
    i = i.to(dtype=torch.int32)
    sxf = s * f
    one_minus_s = 1.0 - s
    q = (1.0 - sxf).mul_(v).clamp_(0.0, 1.0)
    t = sxf.add_(one_minus_s).mul_(v).clamp_(0.0, 1.0)
    p = one_minus_s.mul_(v).clamp_(0.0, 1.0)
    i.remainder_(6)
    vpqt = torch.stack((v, p, q, t), dim=-3)
    select = torch.tensor([[0, 2, 1, 1, 3, 0], [3, 0, 0, 2, 1, 1], [1, 1, 3, 0, 0, 2]],
                          dtype=torch.long)
    select = select[:, i] if select.device == i.device else select
    if select.ndim > 3:
        select = select.transpose(0, -3)
    return vpqt.gather(-3, select.expand(vpqt.shape[:-3] + select.shape[-3:]))


def adjust_hue(image, hue_factor):
    orig_dtype = image.dtype
    image = image.to(torch.float32) / 255.0 if orig_dtype == torch.uint8 else image
    image_hsv = _rgb_to_hsv(image)
    h, s, v = image_hsv.unbind(dim=-3)
    h.add_(hue_factor).remainder_(1.0)
    image_rgb = _hsv_to_rgb(image_hsv)
    if orig_dtype == torch.uint8:
        return image_rgb.mul(255.0).round_().to(torch.uint8)
    return image_rgb


def _get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=True):
    rot = math.radians(angle)
    sx = math.radians(shear[0])
    sy = math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    cos_sy = math.cos(sy)
    tan_sx = math.tan(sx)
    rot_minus_sy = rot - sy
    cx_plus_tx = cx + tx
    cy_plus_ty = cy + ty
    a = math.cos(rot_minus_sy) / cos_sy
    b = -(a * tan_sx + math.sin(rot))
    c = math.sin(rot_minus_sy) / cos_sy
    d = math.cos(rot) - c * tan_sx
    if inverted:
        matrix = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]
        matrix[2] += cx - matrix[0] * cx_plus_tx - matrix[1] * cy_plus_ty
        matrix[5] += cy - matrix[3] * cx_plus_tx - matrix[4] * cy_plus_ty
    else:
        matrix = [a * scale, b * scale, 0.0, c * scale, d * scale, 0.0]
        matrix[2] += cx_plus_tx - matrix[0] * cx - matrix[1] * cy
        matrix[5] += cy_plus_ty - matrix[3] * cx - matrix[4] * cy
    return matrix


def _affine_grid(theta, w, h, ow, oh):
    dtype = theta.dtype
    device = theta.device
    base_grid = torch.empty(1, oh, ow, 3, dtype=dtype, device=device)
    x_grid = torch.linspace((1.0 - ow) * 0.5, (ow - 1.0) * 0.5, steps=ow, device=device)
    base_grid[..., 0].copy_(x_grid)
    y_grid = torch.linspace((1.0 - oh) * 0.5, (oh - 1.0) * 0.5, steps=oh,
                            device=device).unsqueeze_(-1)
    base_grid[..., 1].copy_(y_grid)
    base_grid[..., 2].fill_(1)
    rescaled_theta = theta.transpose(1, 2).div_(torch.tensor([0.5 * w, 0.5 * h], dtype=dtype,
                                                             device=device))
    output_grid = base_grid.view(1, oh * ow, 3).bmm(rescaled_theta)
    return output_grid.view(1, oh, ow, 2)


def _apply_grid_transform(img, grid, interpolation, fill):
    input_shape = img.shape
    output_height, output_width = grid.shape[1], grid.shape[2]
    num_channels, input_height, input_width = input_shape[-3:]
    output_shape = input_shape[:-3] + (num_channels, output_height, output_width)
    if img.numel() == 0:
        return img.reshape(output_shape)
    img = img.reshape(-1, num_channels, input_height, input_width)
    squashed_batch_size = img.shape[0]
    if squashed_batch_size > 1:
        grid = grid.expand(squashed_batch_size, -1, -1, -1)
    fp = img.dtype == grid.dtype
    float_img = img if fp else img.to(grid.dtype)
    if fill is not None:
        mask = torch.ones((squashed_batch_size, 1, input_height, input_width),
                          dtype=float_img.dtype, device=float_img.device)
        float_img = torch.cat((float_img, mask), dim=1)
    float_img = F.grid_sample(float_img, grid, mode=interpolation, padding_mode="zeros",
                              align_corners=False)
    if fill is not None:
        float_img, mask = torch.tensor_split(float_img, indices=(-1,), dim=-3)
        mask = mask.expand_as(float_img)
        fill_list = fill if isinstance(fill, (tuple, list)) else [float(fill)]
        fill_img = torch.tensor(fill_list, dtype=float_img.dtype,
                                device=float_img.device).view(1, -1, 1, 1)
        if interpolation == "nearest":
            bool_mask = mask < 0.5
            float_img[bool_mask] = fill_img.expand_as(float_img)[bool_mask]
        else:
            float_img = float_img.sub_(fill_img).mul_(mask).add_(fill_img)
    img = float_img.round_().to(img.dtype) if not fp else float_img
    return img.reshape(output_shape)


def affine(image, angle, translate, scale, shear, interpolation="nearest", fill=None,
           center=None):
    height, width = image.shape[-2:]
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [(c - s * 0.5) for c, s in zip(center, [width, height])]
    translate_f = [float(t) for t in translate]
    matrix = _get_inverse_affine_matrix(center_f, angle, translate_f, scale, shear)
    dtype = image.dtype if torch.is_floating_point(image) else torch.float32
    theta = torch.tensor(matrix, dtype=dtype, device=image.device).reshape(1, 2, 3)
    grid = _affine_grid(theta, w=width, h=height, ow=width, oh=height)
    return _apply_grid_transform(image, grid, interpolation, fill=fill)


def rotate(image, angle, interpolation="nearest", expand=False, center=None, fill=None):
    return affine(image, angle=-angle, translate=[0, 0], scale=1.0, shear=[0.0, 0.0],
                  interpolation=interpolation, fill=fill, center=center)


def resize(image, size, interpolation="bilinear", antialias=True):
    shape = image.shape
    image = image.reshape(-1, shape[-3], shape[-2], shape[-1])
    acceptable_dtypes = [torch.float32, torch.float64]
    if interpolation in ("bilinear", "bicubic"):
        acceptable_dtypes.append(torch.uint8)
    dtype = image.dtype
    need_cast = dtype not in acceptable_dtypes
    if need_cast:
        image = image.to(dtype=torch.float32)
    antialias = antialias and interpolation in ("bilinear", "bicubic")
    image = F.interpolate(image, size=size, mode=interpolation,
                          align_corners=False if interpolation != "nearest" else None,
                          antialias=antialias)
    if need_cast:
        if interpolation == "bicubic" and dtype == torch.uint8:
            image = image.clamp_(min=0, max=255)
        image = image.round_().to(dtype=dtype)
    return image.reshape(shape[:-2] + image.shape[-2:])


def _get_gaussian_kernel1d(kernel_size, sigma, dtype, device):
    lim = (kernel_size - 1) / (2.0 * math.sqrt(2.0))
    x = torch.linspace(-lim, lim, steps=kernel_size, dtype=dtype, device=device).div_(sigma)
    kernel1d = torch.softmax(x.pow_(2).neg_(), dim=0)
    return kernel1d


def _get_gaussian_kernel2d(kernel_size, sigma, dtype, device):
    kernel1d_x = _get_gaussian_kernel1d(kernel_size[0], sigma[0], dtype, device)
    kernel1d_y = _get_gaussian_kernel1d(kernel_size[1], sigma[1], dtype, device)
    kernel2d = kernel1d_y.unsqueeze(-1) * kernel1d_x
    return kernel2d


def gaussian_blur(image, kernel_size, sigma):
    shape = image.shape
    ndim = image.ndim
    if ndim == 3:
        image = image.unsqueeze(dim=0)
    elif ndim > 4:
        image = image.reshape((-1,) + shape[-3:])
    fp = torch.is_floating_point(image)
    kernel = _get_gaussian_kernel2d(kernel_size, sigma,
                                    dtype=image.dtype if fp else torch.float32,
                                    device=image.device)
    kernel = kernel.expand(shape[-3], 1, kernel.shape[0], kernel.shape[1])
    output = image if fp else image.to(dtype=torch.float32)
    padding = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2,
               kernel_size[1] // 2]
    output = F.pad(output, padding, mode="reflect")
    output = F.conv2d(output, kernel, groups=shape[-3])
    if ndim == 3:
        output = output.squeeze(dim=0)
    elif ndim > 4:
        output = output.reshape(shape)
    if not fp:
        output = output.round_().to(dtype=image.dtype)
    return output


def erase(image, i, j, h, w, v, inplace=False):
    if not inplace:
        image = image.clone()
    image[..., i:i + h, j:j + w] = v
    return image


def random_erasing_params(img, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=None):
    img_c, img_h, img_w = img.shape[-3:]
    area = img_h * img_w
    log_ratio = torch.log(torch.tensor(ratio))
    for _ in range(10):
        erase_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
        aspect_ratio = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
        h = int(round(math.sqrt(erase_area * aspect_ratio)))
        w = int(round(math.sqrt(erase_area / aspect_ratio)))
        if not (h < img_h and w < img_w):
            continue
        if value is None:
            v = torch.empty([img_c, h, w], dtype=torch.float32).normal_()
        else:
            v = torch.tensor(value)[:, None, None]
        i = torch.randint(0, img_h - h + 1, size=(1,)).item()
        j = torch.randint(0, img_w - w + 1, size=(1,)).item()
        return i, j, h, w, v
    return 0, 0, img_h, img_w, img


def normalize(image, mean, std, inplace=False):
    dtype = image.dtype
    device = image.device
    mean = torch.as_tensor(mean, dtype=dtype, device=device)
    std = torch.as_tensor(std, dtype=dtype, device=device)
    if mean.ndim == 1:
        mean = mean.view(-1, 1, 1)
    if std.ndim == 1:
        std = std.view(-1, 1, 1)
    if inplace:
        image = image.sub_(mean)
    else:
        image = image.sub(mean)
    return image.div_(std)


def to_dtype(image, dtype=torch.float32, scale=True):
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        return image.mul(255.0).round_().clamp_(0, 255).to(dtype)
    return image.to(dtype).div_(255.0)


# ---- a fixed test image: smooth gradients plus a checker ---------------------------
H, W = 12, 16
yy, xx = torch.meshgrid(torch.arange(H, dtype=torch.float32),
                        torch.arange(W, dtype=torch.float32), indexing="ij")
checker = ((yy // 3 + xx // 4) % 2)
img_f = torch.stack([xx / (W - 1), yy / (H - 1), 0.3 + 0.5 * checker]).clamp(0, 1)
img_u8 = img_f.mul(255).round().to(torch.uint8)
print("image", img_f.shape, img_f.dtype, img_u8.dtype, img_u8.stride())
print("uint8 corner", img_u8[:, :2, :3])

# colour
hsv = _rgb_to_hsv(img_f)
back = _hsv_to_rgb(hsv)
print("hsv round trip max err", f"{(back - img_f).abs().max().item():.6f}")
print("hsv pixel", hsv[:, 5, 7])
for name, out in [("brightness", adjust_brightness(img_u8, 1.4)),
                  ("contrast", adjust_contrast(img_u8, 0.6)),
                  ("saturation", adjust_saturation(img_u8, 1.7)),
                  ("hue", adjust_hue(img_u8, 0.2))]:
    print(f"{name:10s} {out.dtype} sum {int(out.sum())} row {out[0, 6, :6].tolist()}")
print("hue float", adjust_hue(img_f, -0.3)[:, 3, 3])
print("gray", rgb_to_grayscale(img_u8).shape, rgb_to_grayscale(img_u8)[0, 0, :5])

# geometry
for interp in ["nearest", "bilinear"]:
    out = rotate(img_u8, 30.0, interpolation=interp, fill=[0, 0, 0])
    print(f"rotate {interp:8s} {out.dtype} sum {int(out.sum())}", out[1, 5, 4:10].tolist())
out = affine(img_f, angle=-10.0, translate=[2, -1], scale=1.1, shear=[15.0, 5.0],
             interpolation="bilinear", fill=0.5)
print("affine float", out.shape, f"{out.mean().item():.6f}", out[0, 4, 4:8])
theta = torch.tensor([[[0.9, -0.2, 0.1], [0.25, 1.1, -0.05]]])
x4 = img_f.unsqueeze(0)
for align in [False, True]:
    grid = F.affine_grid(theta, list(x4.shape), align_corners=align)
    print("affine_grid", align, grid.shape, grid[0, 0, :2])
    for mode in ["bilinear", "nearest", "bicubic"]:
        for pad in ["zeros", "border", "reflection"]:
            y = F.grid_sample(x4, grid, mode=mode, padding_mode=pad, align_corners=align)
            print(f"grid_sample {mode:8s} {pad:10s} {align!s:5s}",
                  f"{y.sum().item():.4f}", f"{y[0, 2, 0, 0].item():.5f}")

# resize
for size in [(6, 8), (18, 20)]:
    r8 = resize(img_u8, list(size), antialias=True)
    rf = resize(img_f, list(size), antialias=True)
    rb = resize(img_u8, list(size), interpolation="bicubic", antialias=True)
    print("resize", size, r8.dtype, int(r8.sum()), rf.dtype, f"{rf.sum().item():.4f}",
          rb.dtype, int(rb.sum()))
print("resize u8 row", resize(img_u8, [6, 8])[0, 2].tolist())
print("nearest", resize(img_u8, [5, 7], interpolation="nearest")[2, 1].tolist())

# blur, erase, flips, normalize
blur = gaussian_blur(img_u8, [5, 5], [1.2, 1.2])
print("blur", blur.dtype, blur.shape, blur[0, 3, :6].tolist())
blurf = gaussian_blur(img_f, [3, 5], [0.8, 1.5])
print("blur float", f"{blurf.sum().item():.5f}")
print("kernel1d", _get_gaussian_kernel1d(5, 1.2, torch.float32, "cpu"))
i, j, h, w, v = random_erasing_params(img_f, value=[0.0])
erased = erase(img_f, i, j, h, w, v)
print("erase box", i, j, h, w, "zeros", int((erased == 0).sum()))
print("hflip", torch.flip(img_u8, dims=[-1])[0, 0, :4].tolist(),
      "vflip", img_u8.flip(-2)[1, 0, :4].tolist())
r90 = torch.rot90(img_u8, 1, dims=[-2, -1])
print("rot90", r90.shape, r90.stride(), r90[0, 0, :4].tolist(), r90.is_contiguous())
print("rot90 k=-1", torch.rot90(img_f, -1, [1, 2]).shape, torch.rot90(img_f, 2, [1, 2])[2, 0, :3])
norm = normalize(to_dtype(img_u8), mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
print("normalize", norm.dtype, f"{norm.mean().item():.5f}", norm[:, 0, 0])
print("round trip u8", torch.equal(to_dtype(to_dtype(img_u8), torch.uint8), img_u8))
print("clamp overflow", (img_f * 300).clamp(0, 255).round().to(torch.uint8)[0, 0, -3:])
print("uint8 arith", (img_u8[0, 0, -2:] + 10), (img_u8[0, 0, -2:] * 2).dtype)

# ---- train a tiny CNN on augmented batches ------------------------------------------
N = 32
labels = torch.randint(0, 2, (N,))
base = torch.rand(N, 3, 16, 16) * 0.3
base[labels == 1, 0, 4:12, 4:12] += 0.6  # class 1: a red square
data_u8 = base.clamp(0, 1).mul(255).round().to(torch.uint8)


def augment(batch):
    out = []
    for im in batch:
        if torch.rand(1) < 0.5:
            im = im.flip(-1)
        im = adjust_brightness(im, float(torch.empty(1).uniform_(0.8, 1.2)))
        im = rotate(im, float(torch.empty(1).uniform_(-15, 15)), interpolation="bilinear",
                    fill=[0, 0, 0])
        out.append(im)
    x = to_dtype(torch.stack(out))
    return normalize(x, mean=[0.5, 0.5, 0.5], std=[0.25, 0.25, 0.25])


model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
    nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 2))
print(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
for step in range(8):
    idx = torch.randperm(N)[:16]
    x = augment(data_u8[idx])
    loss = F.cross_entropy(model(x), labels[idx], label_smoothing=0.1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"aug step {step} loss {loss.item():.4f} x {tuple(x.shape)}")
