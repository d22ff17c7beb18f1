"""SwAV in the style of facebookresearch/swav (main_swav.py, src/resnet50.py): multi-crop
inputs grouped by resolution with torch.cumsum(torch.unique_consecutive(..., return_counts=True)[1], 0),
a projection head and prototypes nn.Linear(bias=False) renormalized under torch.no_grad() with
F.normalize + w.copy_, the Sinkhorn-Knopp codes from torch.exp(out / eps).t() with row/column
normalization, a feature queue, and the swapped-prediction loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SwAVNet(nn.Module):
    def __init__(self, output_dim=8, hidden_mlp=16, nmb_prototypes=10, normalize=True):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.l2norm = normalize
        self.projection_head = nn.Sequential(
            nn.Linear(8, hidden_mlp),
            nn.BatchNorm1d(hidden_mlp),
            nn.ReLU(inplace=True),
            nn.Linear(hidden_mlp, output_dim),
        )
        self.prototypes = nn.Linear(output_dim, nmb_prototypes, bias=False)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward_backbone(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.avgpool(x)
        return torch.flatten(x, 1)

    def forward_head(self, x):
        x = self.projection_head(x)
        if self.l2norm:
            x = nn.functional.normalize(x, dim=1, p=2)
        return x, self.prototypes(x)

    def forward(self, inputs):
        if not isinstance(inputs, list):
            inputs = [inputs]
        idx_crops = torch.cumsum(torch.unique_consecutive(
            torch.tensor([inp.shape[-1] for inp in inputs]),
            return_counts=True,
        )[1], 0)
        start_idx = 0
        for end_idx in idx_crops:
            _out = self.forward_backbone(torch.cat(inputs[start_idx: end_idx]))
            if start_idx == 0:
                output = _out
            else:
                output = torch.cat((output, _out))
            start_idx = end_idx
        return self.forward_head(output)


@torch.no_grad()
def distributed_sinkhorn(out, epsilon=0.05, sinkhorn_iterations=3):
    Q = torch.exp(out / epsilon).t()  # Q is K-by-B for consistency with notations from our paper
    B = Q.shape[1]  # number of samples to assign
    K = Q.shape[0]  # how many prototypes
    # make the matrix sums to 1
    sum_Q = torch.sum(Q)
    Q /= sum_Q
    for it in range(sinkhorn_iterations):
        # normalize each row: total weight per prototype must be 1/K
        sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
        Q /= sum_of_rows
        Q /= K
        # normalize each column: total weight per sample must be 1/B
        Q /= torch.sum(Q, dim=0, keepdim=True)
        Q /= B
    Q *= B  # the colomns must sum to 1 so that Q is an assignment
    return Q.t()


def multi_crop(images, nmb_crops=(2, 2), size_crops=(8, 4)):
    crops = []
    for n, size in zip(nmb_crops, size_crops):
        for _ in range(n):
            i, j = torch.randint(0, images.shape[-1] - size + 1, (2,)).tolist()
            crop = images[..., i:i + size, j:j + size]
            if torch.rand(1).item() < 0.5:
                crop = torch.flip(crop, dims=[3])
            crops.append(crop + 0.05 * torch.randn_like(crop))
    return crops


print(torch.unique_consecutive(torch.tensor([8, 8, 4, 4, 4]), return_counts=True))
print(torch.cumsum(torch.unique_consecutive(torch.tensor([8, 8, 4, 4, 4]),
                                            return_counts=True)[1], 0))
print(torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True))

model = SwAVNet()
print(model)
logits = torch.randn(6, 4)
q = distributed_sinkhorn(logits)
print("sinkhorn", q.shape, q.sum(dim=1))
print("sinkhorn cols", q.sum(dim=0))

crops_for_assign = [0, 1]
nmb_crops = [2, 2]
temperature = 0.1
bs = 8
queue_length = 16
queue = torch.zeros(len(crops_for_assign), queue_length, 8)
use_the_queue = False
optimizer = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9, weight_decay=1e-6)
images = torch.randn(64, 3, 10, 10)

for it in range(14):
    inputs = multi_crop(images[(it % 8) * bs:(it % 8 + 1) * bs])
    if it == 0:
        print("crop shapes", [tuple(c.shape) for c in inputs])
    # normalize the prototypes
    with torch.no_grad():
        w = model.prototypes.weight.data.clone()
        w = nn.functional.normalize(w, dim=1, p=2)
        model.prototypes.weight.copy_(w)
    embedding, output = model(inputs)
    embedding = embedding.detach()
    loss = 0
    for i, crop_id in enumerate(crops_for_assign):
        with torch.no_grad():
            out = output[bs * crop_id: bs * (crop_id + 1)].detach()
            # time to use the queue
            if queue is not None:
                if use_the_queue or not torch.all(queue[i, -1, :] == 0):
                    use_the_queue = True
                    out = torch.cat((torch.mm(
                        queue[i],
                        model.prototypes.weight.t()
                    ), out))
                # fill the queue
                queue[i, bs:] = queue[i, :-bs].clone()
                queue[i, :bs] = embedding[crop_id * bs: (crop_id + 1) * bs]
            # get assignments
            q = distributed_sinkhorn(out)[-bs:]
        # cluster assignment prediction
        subloss = 0
        for v in torch.arange(sum(nmb_crops))[torch.arange(sum(nmb_crops)) != crop_id]:
            x = output[bs * v: bs * (v + 1)] / temperature
            subloss -= torch.mean(torch.sum(q * F.log_softmax(x, dim=1), dim=1))
        loss += subloss / (sum(nmb_crops) - 1)
    loss /= len(crops_for_assign)
    optimizer.zero_grad()
    loss.backward()
    # cancel gradients for the prototypes
    if it < 3:
        for name, p in model.named_parameters():
            if "prototypes" in name:
                p.grad = None
    optimizer.step()
    print(f"iter {it:2d} loss {loss.item():.4f} queue {use_the_queue}")

print("prototype norms", model.prototypes.weight.norm(dim=1))
print("codes argmax", distributed_sinkhorn(output[:bs].detach()).argmax(dim=1).tolist())
