"""The PyTorch pruning tutorial and parametrizations tutorial on LeNet: l1_unstructured,
random_unstructured, the weight_orig / weight_mask pair, forward pre-hooks, global
pruning, prune.remove, then weight_norm / spectral_norm parametrizations and a custom
nn.utils.parametrize.register_parametrization (a symmetric matrix), with a short fine-tune."""
import torch
from torch import nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune
import torch.nn.utils.parametrize as parametrize
from torch.nn.utils import parametrizations

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        # 1 input image channel, 6 output channels, 5x5 square conv kernel
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)  # 5x5 image dimension
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


model = LeNet().to(device=device)
module = model.conv1
print(list(module.named_parameters())[1])
print(list(module.named_buffers()))

prune.random_unstructured(module, name="weight", amount=0.3)
print([name for name, _ in module.named_parameters()])
print([name for name, _ in module.named_buffers()])
print(module._forward_pre_hooks)

prune.l1_unstructured(module, name="bias", amount=3)
print([name for name, _ in module.named_parameters()])
print(module.bias_mask)
print("bias zeros", int(torch.sum(module.bias == 0)))
prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
print("zero filters", int((module.weight.flatten(1).abs().sum(1) == 0).sum()))
for hook in module._forward_pre_hooks.values():
    if hook._tensor_name == "weight":
        break
print(list(hook))

prune.remove(module, 'weight')
print([name for name, _ in module.named_parameters()])
print([name for name, _ in module.named_buffers()])

new_model = LeNet()
for name, module in new_model.named_modules():
    if isinstance(module, torch.nn.Conv2d):
        prune.l1_unstructured(module, name='weight', amount=0.2)
    elif isinstance(module, torch.nn.Linear):
        prune.l1_unstructured(module, name='weight', amount=0.4)
print(dict(new_model.named_buffers()).keys())

model = LeNet()
parameters_to_prune = (
    (model.conv1, 'weight'),
    (model.conv2, 'weight'),
    (model.fc1, 'weight'),
    (model.fc2, 'weight'),
    (model.fc3, 'weight'),
)
prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
for name, m in (("conv1", model.conv1), ("fc1", model.fc1)):
    print("Sparsity in {}.weight: {:.2f}%".format(
        name, 100. * float(torch.sum(m.weight == 0)) / float(m.weight.nelement())))
total_zero = sum(float(torch.sum(m.weight == 0)) for m, _ in parameters_to_prune)
total = sum(float(m.weight.nelement()) for m, _ in parameters_to_prune)
print("Global sparsity: {:.2f}%".format(100. * total_zero / total))

# fine-tune the pruned network: masked weights stay zero
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.randn(64, 1, 32, 32)
y = torch.randint(0, 10, (64,))
for step in range(15):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if step % 5 == 0 or step == 14:
        print(f"finetune step {step} loss {loss.item():.4f}")
print("still sparse:", bool((model.fc1.weight[model.fc1.weight_mask == 0] == 0).all()))
for m, name in parameters_to_prune:
    prune.remove(m, name)
print(sorted(model.state_dict().keys())[:4])

# parametrizations
class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


layer = nn.Linear(3, 3)
parametrize.register_parametrization(layer, "weight", Symmetric())
A = layer.weight
print(torch.dist(A, A.T) == 0)
print(layer)
print(parametrize.is_parametrized(layer), parametrize.is_parametrized(layer, "bias"))
print([name for name, _ in layer.named_parameters()])
print(layer.parametrizations.weight.original.shape)

wn = parametrizations.weight_norm(nn.Linear(20, 40))
print(wn)
print([(name, tuple(p.shape)) for name, p in wn.named_parameters()])
print(torch.allclose(wn.weight.norm(dim=1), wn.parametrizations.weight.original0.flatten(), atol=1e-5))

sn = parametrizations.spectral_norm(nn.Linear(20, 40))
for _ in range(10):
    sn(torch.randn(4, 20))
print([name for name, _ in sn.named_buffers()])
print(f"spectral norm ~ 1: {torch.linalg.matrix_norm(sn.weight, ord=2).item():.2f}")

with parametrize.cached():
    w1 = layer.weight
    w2 = layer.weight
print("cached same object:", w1 is w2)
parametrize.remove_parametrizations(layer, "weight")
print(layer)
print([name for name, _ in layer.named_parameters()])
