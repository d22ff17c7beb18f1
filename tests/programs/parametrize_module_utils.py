"""Parametrizations and nn.Module utilities the way library code uses them: orthogonal,
spectral_norm and weight_norm from torch.nn.utils.parametrizations, a custom
parametrization with right_inverse, parametrize.cached(), remove_parametrizations,
state_dict keys of parametrized modules; forward pre-hooks with kwargs, full backward
hooks, state_dict pre-hooks, load_state_dict(strict=False) results,
named_modules(remove_duplicate=False), apply, to(float64), requires_grad_,
get_submodule/set_submodule; then a small classifier with these pieces trains."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize
from torch.nn.utils.parametrizations import orthogonal, spectral_norm, weight_norm

torch.manual_seed(0)
torch.set_printoptions(precision=4)


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class MatrixExponential(nn.Module):
    def forward(self, X):
        return torch.matrix_exp(X)

    def right_inverse(self, A):
        # not a true inverse: for the example, any preimage of a symmetric A will do
        return A.triu()


class PositiveScale(nn.Module):
    """A scale kept positive: softplus of an unconstrained parameter."""

    def forward(self, x):
        return F.softplus(x)

    def right_inverse(self, y):
        return torch.log(torch.expm1(y))


# --- a custom parametrization ---
layer = nn.Linear(3, 3)
parametrize.register_parametrization(layer, 'weight', Symmetric())
print(layer)
W = layer.weight
print('symmetric', torch.allclose(W, W.T), parametrize.is_parametrized(layer),
      parametrize.is_parametrized(layer, 'bias'))
print('original shape', layer.parametrizations.weight.original.shape)
print('state_dict keys', list(layer.state_dict().keys()))
print('named parameters', [n for n, _ in layer.named_parameters()])
parametrize.register_parametrization(layer, 'weight', MatrixExponential())
print('chained', type(layer.parametrizations.weight).__name__, len(layer.parametrizations.weight))
print('chained symmetric', torch.allclose(layer.weight, layer.weight.T, atol=1e-6))
expo = nn.Linear(3, 3)
parametrize.register_parametrization(expo, 'weight', MatrixExponential())
with torch.no_grad():
    expo.weight = torch.eye(3) * 2  # through right_inverse
print('after assignment', expo.parametrizations.weight.original.diagonal())
with parametrize.cached():
    a = layer.weight
    b = layer.weight
    print('cached same object', a is b)
print('uncached same object', layer.weight is layer.weight)
parametrize.remove_parametrizations(layer, 'weight', leave_parametrized=True)
print('removed', parametrize.is_parametrized(layer), type(layer.weight).__name__,
      list(layer.state_dict().keys()))

scale_holder = nn.Module()
scale_holder.scale = nn.Parameter(torch.tensor([0.5, 1.0, 2.0]))
parametrize.register_parametrization(scale_holder, 'scale', PositiveScale())
print('right_inverse keeps value', scale_holder.scale)
print('unconstrained', scale_holder.parametrizations.scale.original)

# --- the built-in parametrizations ---
q = orthogonal(nn.Linear(4, 4))
Q = q.weight
print('orthogonal', torch.allclose(Q @ Q.T, torch.eye(4), atol=1e-5),
      list(q.state_dict().keys()))
print(q)
u = orthogonal(nn.Linear(3, 3, dtype=torch.cfloat))  # complex weights become unitary
U = u.weight
print('unitary', U.dtype, torch.allclose(U.mH @ U, torch.eye(3, dtype=torch.cfloat), atol=1e-5))
sn = spectral_norm(nn.Linear(5, 3))
for _ in range(20):
    sn(torch.randn(2, 5))  # power iterations run in training mode
sigma = torch.linalg.matrix_norm(sn.weight.detach(), ord=2)
print('spectral sigma', round(sigma.item(), 2), sorted(sn.state_dict().keys()))
sn.eval()
print('spectral eval keeps u', sn.parametrizations.weight[0]._u.shape)
wn = weight_norm(nn.Linear(4, 2), name='weight', dim=0)
print('weight_norm keys', sorted(wn.state_dict().keys()))
print('weight_norm g', wn.parametrizations.weight.original0.shape,
      'v', wn.parametrizations.weight.original1.shape)
print('weight_norm value', torch.allclose(wn.weight, wn.parametrizations.weight.original1 *
      (wn.parametrizations.weight.original0 / wn.parametrizations.weight.original1.norm(dim=1, keepdim=True))))
parametrize.remove_parametrizations(wn, 'weight')
print('weight_norm removed', sorted(wn.state_dict().keys()))

# --- hooks ---
calls = []


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, scale=1.0):
        return self.norm(x + scale * torch.relu(self.fc(x)))


def pre_hook(module, args, kwargs):
    calls.append(('pre', type(module).__name__, kwargs.get('scale')))
    kwargs = dict(kwargs, scale=kwargs.get('scale', 1.0) * 0.5)
    return args, kwargs


def backward_hook(module, grad_input, grad_output):
    calls.append(('backward', type(module).__name__, [g.shape for g in grad_input if g is not None],
                  [g.shape for g in grad_output]))


block = Block(4)
h1 = block.register_forward_pre_hook(pre_hook, with_kwargs=True)
h2 = block.register_full_backward_hook(backward_hook)
h3 = block.register_forward_hook(lambda m, args, kwargs, out: calls.append(('post', kwargs)),
                                 with_kwargs=True)
x = torch.randn(2, 4, requires_grad=True)
out = block(x, scale=2.0)
out.sum().backward()
for c in calls:
    print('hook call', c)
h1.remove()
h2.remove()
h3.remove()
calls.clear()
block(x).sum().backward()
print('hooks removed', calls)


def sd_pre_hook(module, prefix, keep_vars):
    calls.append(('state_dict pre', type(module).__name__, prefix, keep_vars))


block.register_state_dict_pre_hook(sd_pre_hook)
keys = list(block.state_dict(prefix='blk.').keys())
print('state_dict with prefix', keys)
print('state_dict pre hook', calls)

# --- load_state_dict(strict=False) ---
sd = block.state_dict()
sd['extra.weight'] = torch.zeros(1)
del sd['norm.bias']
result = block.load_state_dict(sd, strict=False)
print('load result', result)
print('missing', result.missing_keys, 'unexpected', result.unexpected_keys)
try:
    block.load_state_dict(sd)
except RuntimeError as e:
    print('strict load error', str(e).splitlines()[0])
bad = dict(block.state_dict(), **{'fc.weight': torch.zeros(3, 3)})
try:
    block.load_state_dict(bad)
except RuntimeError as e:
    print('shape error', str(e).splitlines()[1].strip())

# --- module utilities ---
shared = nn.Linear(4, 4)
net = nn.Sequential(shared, nn.ReLU(), shared, nn.Sequential(nn.Linear(4, 2)))
print('named_modules', [n for n, _ in net.named_modules()])
print('named_modules dup', [n for n, _ in net.named_modules(remove_duplicate=False)])
print('parameters dedup', len(list(net.parameters())),
      len(list(net.named_parameters(remove_duplicate=False))))


@torch.no_grad()
def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.constant_(m.weight, 0.1)
        nn.init.zeros_(m.bias)


net.apply(init_weights)
print('after apply', net[3][0].weight[0])
net.to(torch.float64)
print('to float64', {p.dtype for p in net.parameters()})
net.requires_grad_(False)
print('requires_grad_', [p.requires_grad for p in net.parameters()])
net[3].requires_grad_()
print('partial requires_grad_', [p.requires_grad for p in net.parameters()])
print('get_submodule', net.get_submodule('3.0'))
net.set_submodule('3.0', nn.Linear(4, 3, dtype=torch.float64))
print('set_submodule', net[3])
try:
    net.get_submodule('3.5')
except AttributeError as e:
    print('get_submodule error', e)
print('get_parameter', net.get_parameter('3.0.bias').shape)
print('extra_repr', nn.Linear(2, 3).extra_repr())

# --- Grad-CAM with the (deprecated) register_backward_hook and a forward hook ---
cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                    nn.Linear(4, 3))
activations, gradients = {}, {}
cnn[0].register_forward_hook(lambda m, i, o: activations.__setitem__('conv', o.detach()))
cnn[0].register_backward_hook(lambda m, gi, go: gradients.__setitem__('conv', go[0].detach()))
image = torch.randn(1, 1, 6, 6)
scores = cnn(image)
scores[0, scores.argmax()].backward()
weights = gradients['conv'].mean(dim=(2, 3), keepdim=True)
cam = F.relu((weights * activations['conv']).sum(1))
print('grad-cam', tuple(gradients['conv'].shape), tuple(cam.shape), bool((cam >= 0).all()))

# --- a classifier built from these pieces trains ---


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = spectral_norm(nn.Linear(2, 16))
        self.hidden = orthogonal(nn.Linear(16, 16))
        self.out = weight_norm(nn.Linear(16, 2))

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(torch.tanh(self.inp(x)))))


X = torch.randn(128, 2)
y = ((X[:, 0] * X[:, 1]) > 0).long()
model = Classifier()
print(model)
opt = torch.optim.Adam(model.parameters(), lr=0.03)
for step in range(30):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f'step {step:2d} loss {loss.item():.4f}')
model.eval()
with torch.no_grad(), parametrize.cached():
    acc = (model(X).argmax(1) == y).float().mean().item()
print('train accuracy above chance', acc > 0.6)
print('classifier keys', list(model.state_dict().keys()))
