"""MoCo v2 in the style of facebookresearch/moco (moco/builder.py) and BYOL in the style of
lucidrains/byol-pytorch: a momentum key encoder updated under @torch.no_grad() with
param.data.mul_().add_(), a registered queue buffer with a queue_ptr enqueued/dequeued by
index, batch shuffle/unshuffle by argsort of randperm, the InfoNCE logits from
torch.einsum('nc,nc->n') and ('nc,ck->nk'), then BYOL's EMA target built by copy.deepcopy,
a predictor, the normalized cosine loss 2 - 2 cos, and a timm-style ModelEmaV2 on the
state_dict with torch._foreach ops."""
import copy
from functools import wraps

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def encoder(num_classes=128):
    """A tiny ResNet-ish backbone whose last layer is `fc` (as torchvision's resnet)."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.relu = nn.ReLU(inplace=True)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(8, num_classes)

        def forward(self, x):
            x = self.relu(self.bn1(self.conv1(x)))
            x = torch.flatten(self.avgpool(x), 1)
            return self.fc(x)
    return Net()


class MoCo(nn.Module):
    def __init__(self, base_encoder, dim=16, K=64, m=0.999, T=0.07, mlp=False):
        super(MoCo, self).__init__()
        self.K = K
        self.m = m
        self.T = T
        # create the encoders
        # num_classes is the output fc dimension
        self.encoder_q = base_encoder(num_classes=dim)
        self.encoder_k = base_encoder(num_classes=dim)
        if mlp:  # hack: brute-force replacement
            dim_mlp = self.encoder_q.fc.weight.shape[1]
            self.encoder_q.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_q.fc)
            self.encoder_k.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_k.fc)
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)  # initialize
            param_k.requires_grad = False  # not update by gradient
        # create the queue
        self.register_buffer("queue", torch.randn(dim, K))
        self.queue = nn.functional.normalize(self.queue, dim=0)
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        """
        Momentum update of the key encoder
        """
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data = param_k.data * self.m + param_q.data * (1. - self.m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)
        assert self.K % batch_size == 0  # for simplicity
        # replace the keys at ptr (dequeue and enqueue)
        self.queue[:, ptr:ptr + batch_size] = keys.T
        ptr = (ptr + batch_size) % self.K  # move pointer
        self.queue_ptr[0] = ptr

    @torch.no_grad()
    def _batch_shuffle_single_gpu(self, x):
        # random shuffle index
        idx_shuffle = torch.randperm(x.shape[0])
        # index for restoring
        idx_unshuffle = torch.argsort(idx_shuffle)
        return x[idx_shuffle], idx_unshuffle

    @torch.no_grad()
    def _batch_unshuffle_single_gpu(self, x, idx_unshuffle):
        return x[idx_unshuffle]

    def forward(self, im_q, im_k):
        # compute query features
        q = self.encoder_q(im_q)  # queries: NxC
        q = nn.functional.normalize(q, dim=1)
        # compute key features
        with torch.no_grad():  # no gradient to keys
            self._momentum_update_key_encoder()  # update the key encoder
            # shuffle for making use of BN
            im_k, idx_unshuffle = self._batch_shuffle_single_gpu(im_k)
            k = self.encoder_k(im_k)  # keys: NxC
            k = nn.functional.normalize(k, dim=1)
            # undo shuffle
            k = self._batch_unshuffle_single_gpu(k, idx_unshuffle)
        # compute logits
        # Einstein sum is more intuitive
        # positive logits: Nx1
        l_pos = torch.einsum('nc,nc->n', [q, k]).unsqueeze(-1)
        # negative logits: NxK
        l_neg = torch.einsum('nc,ck->nk', [q, self.queue.clone().detach()])
        # logits: Nx(1+K)
        logits = torch.cat([l_pos, l_neg], dim=1)
        # apply temperature
        logits /= self.T
        # labels: positive key indicators
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        # dequeue and enqueue
        self._dequeue_and_enqueue(k)
        return logits, labels


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def augment(x):
    flip = torch.rand(x.shape[0], 1, 1, 1) < 0.5
    x = torch.where(flip, x.flip(-1), x)
    return x * (0.8 + 0.4 * torch.rand(x.shape[0], 3, 1, 1)) + 0.1 * torch.randn_like(x)


images = torch.randn(32, 3, 8, 8)
model = MoCo(encoder, dim=16, K=64, m=0.99, T=0.2, mlp=True)
print(model.encoder_q)
print('buffers', [(n, tuple(b.shape), b.dtype) for n, b in model.named_buffers() if 'queue' in n])
print('queue column norms', model.queue.norm(dim=0)[:4])
print('key encoder frozen:', all(not p.requires_grad for p in model.encoder_k.parameters()))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), 0.03,
                            momentum=0.9, weight_decay=1e-4)
print('optimizing', sum(len(g['params']) for g in optimizer.param_groups), 'tensors')
for epoch in range(3):
    for i, batch in enumerate(images.split(8)):
        output, target = model(im_q=augment(batch), im_k=augment(batch))
        loss = criterion(output, target)
        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i == 3:
            print(f'moco epoch {epoch} loss {loss.item():.4f} acc@1 {acc1[0]:.2f} acc@5 {acc5[0]:.2f}'
                  f' queue_ptr {model.queue_ptr.item()}')
print('logits', output.shape, 'labels', target[:4])
print('key encoder drifted:', not torch.equal(model.encoder_k.fc[0].weight, model.encoder_q.fc[0].weight))


# ---------------- BYOL ----------------
def default(val, def_val):
    return def_val if val is None else val


def singleton(cache_key):
    def inner_fn(fn):
        @wraps(fn)
        def wrapper(self, *args, **kwargs):
            instance = getattr(self, cache_key)
            if instance is not None:
                return instance
            instance = fn(self, *args, **kwargs)
            setattr(self, cache_key, instance)
            return instance
        return wrapper
    return inner_fn


def set_requires_grad(model, val):
    for p in model.parameters():
        p.requires_grad = val


def loss_fn(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)


class EMA():
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def update_average(self, old, new):
        if old is None:
            return new
        return old * self.beta + (1 - self.beta) * new


def update_moving_average(ema_updater, ma_model, current_model):
    for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
        old_weight, up_weight = ma_params.data, current_params.data
        ma_params.data = ema_updater.update_average(old_weight, up_weight)


def MLP(dim, projection_size, hidden_size=32):
    return nn.Sequential(nn.Linear(dim, hidden_size), nn.BatchNorm1d(hidden_size),
                         nn.ReLU(inplace=True), nn.Linear(hidden_size, projection_size))


class NetWrapper(nn.Module):
    def __init__(self, net, projection_size, projection_hidden_size, layer=-2):
        super().__init__()
        self.net = net
        self.layer = layer
        self.projector = None
        self.projection_size = projection_size
        self.projection_hidden_size = projection_hidden_size
        self.hidden = {}
        self.hook_registered = False

    def _find_layer(self):
        if type(self.layer) == str:
            modules = dict([*self.net.named_modules()])
            return modules.get(self.layer, None)
        elif type(self.layer) == int:
            children = [*self.net.children()]
            return children[self.layer]
        return None

    def _hook(self, _, input, output):
        device = input[0].device
        self.hidden[device] = output.flatten(1)

    def _register_hook(self):
        layer = self._find_layer()
        assert layer is not None, f'hidden layer ({self.layer}) not found'
        handle = layer.register_forward_hook(self._hook)
        self.hook_registered = True

    @singleton('projector')
    def _get_projector(self, hidden):
        _, dim = hidden.shape
        projector = MLP(dim, self.projection_size, self.projection_hidden_size)
        return projector.to(hidden)

    def get_representation(self, x):
        if not self.hook_registered:
            self._register_hook()
        self.hidden.clear()
        _ = self.net(x)
        hidden = self.hidden[x.device]
        self.hidden.clear()
        assert hidden is not None, f'hidden layer {self.layer} never emitted an output'
        return hidden

    def forward(self, x, return_projection=True):
        representation = self.get_representation(x)
        if not return_projection:
            return representation
        projector = self._get_projector(representation)
        projection = projector(representation)
        return projection, representation


class BYOL(nn.Module):
    def __init__(self, net, hidden_layer=-2, projection_size=16, projection_hidden_size=32,
                 moving_average_decay=0.99, use_momentum=True):
        super().__init__()
        self.net = net
        self.online_encoder = NetWrapper(net, projection_size, projection_hidden_size, layer=hidden_layer)
        self.use_momentum = use_momentum
        self.target_encoder = None
        self.target_ema_updater = EMA(moving_average_decay)
        self.online_predictor = MLP(projection_size, projection_size, projection_hidden_size)
        # send a mock image tensor to instantiate singleton parameters
        self.forward(torch.randn(2, 3, 8, 8))

    @singleton('target_encoder')
    def _get_target_encoder(self):
        target_encoder = copy.deepcopy(self.online_encoder)
        set_requires_grad(target_encoder, False)
        return target_encoder

    def update_moving_average(self):
        assert self.use_momentum, 'you do not need to update the moving average, since you have turned off momentum for the target encoder'
        assert self.target_encoder is not None, 'target encoder has not been created yet'
        update_moving_average(self.target_ema_updater, self.target_encoder, self.online_encoder)

    def forward(self, x, return_embedding=False, return_projection=True):
        assert not (self.training and x.shape[0] == 1), 'you must have greater than 1 sample when training, due to the batchnorm in the projection layer'
        if return_embedding:
            return self.online_encoder(x, return_projection=return_projection)
        image_one, image_two = augment(x), augment(x)
        images = torch.cat((image_one, image_two), dim=0)
        online_projections, _ = self.online_encoder(images)
        online_predictions = self.online_predictor(online_projections)
        online_pred_one, online_pred_two = online_predictions.chunk(2, dim=0)
        with torch.no_grad():
            target_encoder = self._get_target_encoder() if self.use_momentum else self.online_encoder
            target_projections, _ = target_encoder(images)
            target_projections = target_projections.detach()
            target_proj_one, target_proj_two = target_projections.chunk(2, dim=0)
        loss_one = loss_fn(online_pred_one, target_proj_two.detach())
        loss_two = loss_fn(online_pred_two, target_proj_one.detach())
        loss = loss_one + loss_two
        return loss.mean()


print('cosine loss', loss_fn(torch.tensor([[1., 0.], [0., 2.]]), torch.tensor([[2., 0.], [1., 0.]])))
learner = BYOL(encoder(num_classes=10), hidden_layer='avgpool')
print(learner.online_encoder.projector)
print('target params frozen:', not any(p.requires_grad for p in learner.target_encoder.parameters()),
      'same values:', all(torch.equal(a, b) for a, b in zip(learner.target_encoder.parameters(), learner.online_encoder.parameters())))
opt = torch.optim.Adam(learner.parameters(), lr=3e-3)
for step in range(12):
    loss = learner(images[:16])
    opt.zero_grad()
    loss.backward()
    opt.step()
    learner.update_moving_average()  # update moving average of target encoder
    if step % 3 == 0:
        print(f'byol step {step:2d} loss {loss.item():.4f}')
embedding = learner(images[:4], return_embedding=True, return_projection=False)
print('embedding', embedding.shape, embedding.requires_grad)


# timm's ModelEmaV3-style update over the state_dict with foreach ops
class ModelEma(nn.Module):
    def __init__(self, model, decay=0.9):
        super().__init__()
        self.module = copy.deepcopy(model).eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        ema_lerp_values, model_lerp_values = [], []
        for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
            if ema_v.is_floating_point():
                ema_lerp_values.append(ema_v)
                model_lerp_values.append(model_v)
            else:
                ema_v.copy_(model_v)
        torch._foreach_lerp_(ema_lerp_values, model_lerp_values, weight=1. - self.decay)


ema = ModelEma(learner.net, decay=0.5)
before = ema.module.fc.weight.clone()
ema.update(learner.net)
print('ema moved half way:', torch.allclose(ema.module.fc.weight, before), 'num_batches_tracked',
      ema.module.bn1.num_batches_tracked.item())
