"""DINO self-distillation in the style of facebookresearch/dino (main_dino.py, utils.py,
vision_transformer.py): a DINOHead with weight_norm'd last layer whose weight_g is filled
with 1 and frozen, multi-crop (2 global + 4 local crops, antialiased resizes) through a MultiCropWrapper that
groups crops by resolution with torch.unique_consecutive(return_counts=True).cumsum, the
teacher's centering buffer updated by EMA, temperature-sharpened softmax and the loss loop
over crop pairs, cosine schedules with warmup computed in NumPy (lr, weight decay, teacher
momentum), freezing the last layer for the first epoch (cancel_gradients_last_layer),
gradient clipping per parameter, and the teacher EMA under torch.no_grad."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)


def trunc_normal_(tensor, mean=0., std=1., a=-2., b=2.):
    return nn.init.trunc_normal_(tensor, mean, std, a, b)


def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0, start_warmup_value=0):
    warmup_schedule = np.array([])
    warmup_iters = warmup_epochs * niter_per_ep
    if warmup_epochs > 0:
        warmup_schedule = np.linspace(start_warmup_value, base_value, warmup_iters)
    iters = np.arange(epochs * niter_per_ep - warmup_iters)
    schedule = final_value + 0.5 * (base_value - final_value) * (1 + np.cos(np.pi * iters / len(iters)))
    schedule = np.concatenate((warmup_schedule, schedule))
    assert len(schedule) == epochs * niter_per_ep
    return schedule


def clip_gradients(model, clip):
    norms = []
    for name, p in model.named_parameters():
        if p.grad is not None:
            param_norm = p.grad.data.norm(2)
            norms.append(param_norm.item())
            clip_coef = clip / (param_norm + 1e-6)
            if clip_coef < 1:
                p.grad.data.mul_(clip_coef)
    return norms


def cancel_gradients_last_layer(epoch, model, freeze_last_layer):
    if epoch >= freeze_last_layer:
        return
    for n, p in model.named_parameters():
        if "last_layer" in n:
            p.grad = None


def get_params_groups(model):
    regularized = []
    not_regularized = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        # we do not regularize biases nor Norm parameters
        if name.endswith(".bias") or len(param.shape) == 1:
            not_regularized.append(param)
        else:
            regularized.append(param)
    return [{'params': regularized}, {'params': not_regularized, 'weight_decay': 0.}]


class DINOHead(nn.Module):
    def __init__(self, in_dim, out_dim, use_bn=False, norm_last_layer=True, nlayers=3, hidden_dim=32, bottleneck_dim=16):
        super().__init__()
        nlayers = max(nlayers, 1)
        if nlayers == 1:
            self.mlp = nn.Linear(in_dim, bottleneck_dim)
        else:
            layers = [nn.Linear(in_dim, hidden_dim)]
            if use_bn:
                layers.append(nn.BatchNorm1d(hidden_dim))
            layers.append(nn.GELU())
            for _ in range(nlayers - 2):
                layers.append(nn.Linear(hidden_dim, hidden_dim))
                if use_bn:
                    layers.append(nn.BatchNorm1d(hidden_dim))
                layers.append(nn.GELU())
            layers.append(nn.Linear(hidden_dim, bottleneck_dim))
            self.mlp = nn.Sequential(*layers)
        self.apply(self._init_weights)
        self.last_layer = nn.utils.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
        self.last_layer.weight_g.data.fill_(1)
        if norm_last_layer:
            self.last_layer.weight_g.requires_grad = False

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            trunc_normal_(m.weight, std=.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.mlp(x)
        x = nn.functional.normalize(x, dim=-1, p=2)
        x = self.last_layer(x)
        return x


class Backbone(nn.Module):
    """A small conv net that takes any resolution (as the ViT with interpolated pos. embeds)."""
    def __init__(self, embed_dim=24):
        super().__init__()
        self.embed_dim = embed_dim
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.GELU(),
                                      nn.Conv2d(16, embed_dim, 3, stride=2, padding=1), nn.GELU())
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.head = nn.Identity()

    def forward(self, x):
        x = self.features(x).mean(dim=(-2, -1))
        return self.head(self.norm(x))


class MultiCropWrapper(nn.Module):
    def __init__(self, backbone, head):
        super(MultiCropWrapper, self).__init__()
        # disable layers dedicated to ImageNet labels classification
        backbone.fc, backbone.head = nn.Identity(), nn.Identity()
        self.backbone = backbone
        self.head = head

    def forward(self, x):
        # convert to list
        if not isinstance(x, list):
            x = [x]
        idx_crops = torch.cumsum(torch.unique_consecutive(
            torch.tensor([inp.shape[-1] for inp in x]),
            return_counts=True,
        )[1], 0)
        start_idx, output = 0, torch.empty(0).to(x[0].device)
        for end_idx in idx_crops:
            _out = self.backbone(torch.cat(x[start_idx: end_idx]))
            # The output is a tuple with XCiT model. See:
            # https://github.com/facebookresearch/xcit/blob/master/xcit.py#L404-L405
            if isinstance(_out, tuple):
                _out = _out[0]
            # accumulate outputs
            output = torch.cat((output, _out))
            start_idx = end_idx
        # Run the head forward on the concatenated features.
        return self.head(output)


class DINOLoss(nn.Module):
    def __init__(self, out_dim, ncrops, warmup_teacher_temp, teacher_temp,
                 warmup_teacher_temp_epochs, nepochs, student_temp=0.1,
                 center_momentum=0.9):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.ncrops = ncrops
        self.register_buffer("center", torch.zeros(1, out_dim))
        # we apply a warm up for the teacher temperature because
        # a too high temperature makes the training instable at the beginning
        self.teacher_temp_schedule = np.concatenate((
            np.linspace(warmup_teacher_temp, teacher_temp, warmup_teacher_temp_epochs),
            np.ones(nepochs - warmup_teacher_temp_epochs) * teacher_temp
        ))

    def forward(self, student_output, teacher_output, epoch):
        """
        Cross-entropy between softmax outputs of the teacher and student networks.
        """
        student_out = student_output / self.student_temp
        student_out = student_out.chunk(self.ncrops)
        # teacher centering and sharpening
        temp = self.teacher_temp_schedule[epoch]
        teacher_out = F.softmax((teacher_output - self.center) / temp, dim=-1)
        teacher_out = teacher_out.detach().chunk(2)
        total_loss = 0
        n_loss_terms = 0
        for iq, q in enumerate(teacher_out):
            for v in range(len(student_out)):
                if v == iq:
                    # we skip cases where student and teacher operate on the same view
                    continue
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                total_loss += loss.mean()
                n_loss_terms += 1
        total_loss /= n_loss_terms
        self.update_center(teacher_output)
        return total_loss

    @torch.no_grad()
    def update_center(self, teacher_output):
        """
        Update center used for teacher output.
        """
        batch_center = torch.sum(teacher_output, dim=0, keepdim=True)
        batch_center = batch_center / len(teacher_output)
        # ema update
        self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)


class DataAugmentationDINO(object):
    def __init__(self, local_crops_number):
        self.local_crops_number = local_crops_number

    def crop(self, image, size):
        i, j = np.random.randint(0, image.shape[-1] - size + 1, 2)
        out = image[..., i:i + size, j:j + size]
        return F.interpolate(out, size=size, mode='bilinear', align_corners=False) if size != out.shape[-1] else out

    def __call__(self, image):
        crops = []
        for _ in range(2):
            g = F.interpolate(self.crop(image, 12), size=(16, 16), mode='bicubic', align_corners=False)
            crops.append(torch.where(torch.rand(image.shape[0], 1, 1, 1) < 0.5, g.flip(-1), g))
        for _ in range(self.local_crops_number):  # (torchvision's Resize: antialiased)
            crops.append(F.interpolate(self.crop(image, 12), size=(8, 8), mode='bilinear', antialias=True))
        return crops


print('cosine', np.round(cosine_scheduler(0.5, 0.1, 3, 2, warmup_epochs=1), 4))
epochs, niter_per_ep, out_dim = 4, 4, 32
student = MultiCropWrapper(Backbone(), DINOHead(24, out_dim, norm_last_layer=True))
teacher = MultiCropWrapper(Backbone(), DINOHead(24, out_dim))
teacher.load_state_dict(student.state_dict())
for p in teacher.parameters():
    p.requires_grad = False
print(student.head)
print('weight_g', student.head.last_layer.weight_g.shape, student.head.last_layer.weight_g.requires_grad,
      'weight_v', student.head.last_layer.weight_v.shape)
print('state_dict keys', [k for k in student.state_dict() if 'last_layer' in k])
ncrops = 6
dino_loss = DINOLoss(out_dim, ncrops, 0.04, 0.07, 2, epochs)
print('teacher temps', dino_loss.teacher_temp_schedule)
params_groups = get_params_groups(student)
optimizer = torch.optim.AdamW(params_groups)
lr_schedule = cosine_scheduler(5e-3, 1e-5, epochs, niter_per_ep, warmup_epochs=1)
wd_schedule = cosine_scheduler(0.04, 0.4, epochs, niter_per_ep)
momentum_schedule = cosine_scheduler(0.99, 1, epochs, niter_per_ep)
print('lr schedule', np.round(lr_schedule[:6], 6))
print('momentum schedule', momentum_schedule.dtype, momentum_schedule.shape, np.round(momentum_schedule[-3:], 5))

data = torch.rand(32, 3, 16, 16)
transform = DataAugmentationDINO(local_crops_number=4)
for epoch in range(epochs):
    for it_local, images in enumerate(data.split(8)):
        it = niter_per_ep * epoch + it_local
        for i, param_group in enumerate(optimizer.param_groups):
            param_group["lr"] = lr_schedule[it]
            if i == 0:  # only the first group is regularized
                param_group["weight_decay"] = wd_schedule[it]
        images = transform(images)
        teacher_output = teacher(images[:2])  # only the 2 global views pass through the teacher
        student_output = student(images)
        loss = dino_loss(student_output, teacher_output, epoch)
        if not math.isfinite(loss.item()):
            raise SystemExit(1)
        optimizer.zero_grad()
        loss.backward()
        param_norms = clip_gradients(student, 3.0)
        cancel_gradients_last_layer(epoch, student, 1)
        optimizer.step()
        # EMA update for the teacher
        with torch.no_grad():
            m = momentum_schedule[it]  # momentum parameter
            for param_q, param_k in zip(student.parameters(), teacher.parameters()):
                param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)
    print(f"Epoch: [{epoch}/{epochs}] loss: {loss.item():.6f} lr: {optimizer.param_groups[0]['lr']:.6f} "
          f"wd: {optimizer.param_groups[0]['weight_decay']:.6f}")
    if epoch == 0:
        print('last layer frozen in epoch 0:', student.head.last_layer.weight_v.grad is None)
print('crops', [tuple(c.shape) for c in images])
print('student output', student_output.shape, 'teacher output', teacher_output.shape)
print('center', dino_loss.center.shape, 'finite:', bool(torch.isfinite(dino_loss.center).all()))
print('weight_g still ones:', bool((student.head.last_layer.weight_g == 1).all()))
with torch.no_grad():
    probs = F.softmax((teacher_output - dino_loss.center) / 0.04, dim=-1)
    entropy = -(probs * probs.clamp_min(1e-12).log()).sum(-1).mean()
print('teacher entropy below log(K):', entropy.item() < math.log(out_dim))
