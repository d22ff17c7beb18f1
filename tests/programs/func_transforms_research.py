"""torch.func transforms the way research code drives them: grad with argnums tuples and
has_aux, grad_and_value, vjp/jvp with has_aux, jacrev/jacfwd with argnums, chunk_size and
has_aux, hessian, vmap with None / nested tuple / dict in_dims, out_dims, chunk_size and
every randomness mode, nested vmap, functional_call with (params, buffers) tuples and strict,
stack_module_state ensembles, linearize, torch.autograd.functional with both strategies,
forward-mode dual numbers with a custom Function's jvp, and the errors transforms raise."""
import copy

import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
import torch.nn.functional as F
from torch.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp,
                        linearize, stack_module_state, vjp, vmap)

torch.manual_seed(0)
torch.set_printoptions(precision=5)


def show(tag, value):
    print(tag, value)


# --- grad: argnums tuples, has_aux ---------------------------------------------------------
def loss_fn(w, b, x, y):
    pred = x @ w + b
    loss = ((pred - y) ** 2).mean()
    return loss, {'pred': pred.detach(), 'norm': w.norm()}


x = torch.randn(5, 3)
y = torch.randn(5)
w = torch.randn(3)
b = torch.tensor(0.3)
(gw, gb), aux = grad(loss_fn, argnums=(0, 1), has_aux=True)(w, b, x, y)
show('grad argnums', (gw, gb))
show('grad aux keys', sorted(aux))
show('grad aux pred', aux['pred'])
gx = grad(loss_fn, argnums=2, has_aux=True)(w, b, x, y)[0]
show('grad argnums=2 shape', gx.shape)
g, (val, aux) = grad_and_value(loss_fn, has_aux=True)(w, b, x, y)
show('grad_and_value', (g, val))
show('grad_and_value aux norm', aux['norm'])
gv = grad_and_value(lambda a, c: (a * c).sum(), argnums=(0, 1))(w, w.flip(0))
show('grad_and_value argnums', gv)
# gradients through a dict of tensors (pytrees)
tree = {'a': torch.tensor([1.0, 2.0]), 'b': (torch.tensor(3.0), torch.tensor([0.5]))}
g_tree = grad(lambda t: (t['a'] ** 2).sum() * t['b'][0] + t['b'][1].exp().sum())(tree)
show('grad pytree', g_tree)

# --- vjp / jvp with has_aux ------------------------------------------------------------
def f_aux(t):
    out = torch.sin(t) * t
    return out, out.sum()


t = torch.tensor([0.1, 0.7, -1.2])
out, vjp_fn, aux = vjp(f_aux, t, has_aux=True)
show('vjp out', out)
show('vjp aux', aux)
show('vjp cotangent', vjp_fn(torch.ones(3)))
out2, vjp2 = vjp(lambda a, c: a * c.exp(), t, t.flip(0))
show('vjp two primals', vjp2(torch.tensor([1.0, 0.0, 2.0])))
po, to, aux = jvp(f_aux, (t,), (torch.ones(3),), has_aux=True)
show('jvp has_aux', (po, to, aux))
po, to = jvp(lambda a, c: (a * c, a + c), (t, t * 2), (torch.ones(3), torch.zeros(3)))
show('jvp tuple out', (po, to))

# --- jacrev / jacfwd ---------------------------------------------------------------------
def mlp(w1, w2, inp):
    return torch.tanh(inp @ w1) @ w2


w1 = torch.randn(3, 4)
w2 = torch.randn(4, 2)
inp = torch.randn(3)
J1, J2 = jacrev(mlp, argnums=(0, 1))(w1, w2, inp)
show('jacrev argnums shapes', (J1.shape, J2.shape))
Jc = jacrev(mlp, argnums=2, chunk_size=1)(w1, w2, inp)
Jf = jacfwd(mlp, argnums=2)(w1, w2, inp)
show('jacrev chunk_size == jacfwd', torch.allclose(Jc, Jf, atol=1e-6))
show('jacfwd', Jf)
Jr, aux = jacrev(lambda v: (v.sin(), v.cos().sum()), has_aux=True)(t)
show('jacrev has_aux', (Jr.diagonal(), aux))
Jf2, aux = jacfwd(lambda v: (v ** 3, {'sq': v ** 2}), has_aux=True, randomness='same')(t)
show('jacfwd has_aux', (Jf2.diagonal(), aux))
H = hessian(lambda v: (v ** 3).sum() + v.prod())(t)
show('hessian', H)
H2 = hessian(lambda a, c: (a * a * c).sum(), argnums=1)(t, t)
show('hessian argnums=1', H2)
Jd = jacrev(lambda d: {'s': d['x'].sum() * d['y'], 'p': d['x'] * 2})(
    {'x': torch.tensor([1.0, 2.0]), 'y': torch.tensor(3.0)})
show('jacrev dict', Jd)

# --- vmap ---------------------------------------------------------------------------------
batch = torch.arange(12.0).reshape(4, 3)
show('vmap None', vmap(torch.mul, in_dims=(0, None))(batch, torch.tensor([1.0, -1.0, 2.0])))
show('vmap nested tuple', vmap(lambda p, s: p[0] * p[1] + s, in_dims=((0, 1), None))(
    (batch, batch.T), torch.tensor(0.5)))
show('vmap dict', vmap(lambda d: d['a'].sum() + d['b'], in_dims=({'a': 0, 'b': None},))(
    {'a': batch, 'b': torch.tensor(100.0)}))
show('vmap out_dims', vmap(lambda r: (r, r.sum()), out_dims=(1, 0))(batch))
show('vmap chunk_size', vmap(torch.outer, chunk_size=3)(batch, batch).sum((1, 2)))
show('vmap in_dims=1 out_dims=1', vmap(lambda c: c.cumsum(0), in_dims=1, out_dims=1)(batch))
show('nested vmap', vmap(vmap(torch.dot, in_dims=(0, None)), in_dims=(None, 0))(
    batch, batch[:2]))
pairwise = vmap(vmap(lambda u, v: (u - v).norm(), in_dims=(None, 0)), in_dims=(0, None))
show('pairwise distances', pairwise(batch, batch))
show('vmap kwargs', vmap(lambda v, scale=1.0: v * scale)(batch[:2], scale=3.0))
torch.manual_seed(1)
diff = vmap(lambda v: F.dropout(v, 0.5, training=True), randomness='different')(torch.ones(4, 6))
show('randomness different rows differ', bool((diff != diff[0]).any()))
same = vmap(lambda v: F.dropout(v, 0.5, training=True), randomness='same')(torch.ones(4, 6))
show('randomness same rows equal', bool((same == same[0]).all()))
same_r = vmap(lambda v: v + torch.rand(()), randomness='same')(torch.zeros(3))
show('randomness same scalar', bool((same_r == same_r[0]).all()))
try:
    vmap(lambda v: v + torch.rand(3), randomness='error')(torch.zeros(2, 3))
except RuntimeError as e:
    show('randomness error', e)
try:
    vmap(lambda v: v * 2, randomness='sometimes')(torch.zeros(2, 3))
except RuntimeError as e:
    show('randomness bad', e)

# --- functional_call with (params, buffers), strict; stack_module_state ensembles ----------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 8)
        self.bn = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, v):
        return self.fc2(F.relu(self.bn(self.fc1(v))))


net = Net().eval()
params = dict(net.named_parameters())
buffers = dict(net.named_buffers())
xb = torch.randn(6, 3)
out_ref = net(xb)
out_fc = functional_call(net, (params, buffers), (xb,))
show('functional_call tuple', torch.equal(out_ref, out_fc))
zero_params = {k: torch.zeros_like(v) for k, v in params.items()}
show('functional_call zeros', functional_call(net, zero_params, xb))
show('functional_call kwargs', functional_call(net, params, args=(), kwargs={'v': xb}).shape)
try:
    functional_call(net, {'fc1.weight': params['fc1.weight']}, (xb,), strict=True)
except RuntimeError as e:
    show('strict error', e)
try:
    functional_call(net, ({'fc1.weight': torch.ones(8, 3)}, {'fc1.weight': torch.ones(8, 3)}),
                    (xb,))
except ValueError as e:
    show('duplicate key error', e)
show('params untouched', torch.equal(net.fc1.weight, params['fc1.weight']))

models = [nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1)) for _ in range(4)]
ens_params, ens_buffers = stack_module_state(models)
show('stacked', {k: tuple(v.shape) for k, v in ens_params.items()})
show('stacked requires_grad', all(v.requires_grad for v in ens_params.values()))
base = copy.deepcopy(models[0]).to('meta')


def one_model(p, bufs, data):
    return functional_call(base, (p, bufs), (data,))


data = torch.randn(7, 3)
ens_same = vmap(one_model, in_dims=(0, 0, None))(ens_params, ens_buffers, data)
ens_diff = vmap(one_model)(ens_params, ens_buffers, data.expand(4, 7, 3))
show('ensemble shape', ens_same.shape)
show('ensemble agrees', torch.allclose(ens_same[2], models[2](data), atol=1e-6))
show('ensemble same==diff', torch.allclose(ens_same, ens_diff))
# per-model gradients of an ensemble loss
ens_loss = lambda p, bufs: one_model(p, bufs, data).pow(2).mean()  # noqa: E731
ens_grads = vmap(grad(ens_loss))(ens_params, ens_buffers)
show('ensemble grads', {k: tuple(v.shape) for k, v in ens_grads.items()})
show('ensemble grad[1] bias', ens_grads['2.bias'][1])

# per-sample gradients of a module with a buffer
model = Net().eval()
p = {k: v.detach() for k, v in model.named_parameters()}
bufs = {k: v for k, v in model.named_buffers()}
targets = torch.tensor([0, 1, 1, 0, 1, 0])


def sample_loss(p, bufs, sample, target):
    logits = functional_call(model, (p, bufs), (sample.unsqueeze(0),))
    return F.cross_entropy(logits, target.unsqueeze(0))


ps = vmap(grad(sample_loss), in_dims=(None, None, 0, 0))(p, bufs, xb, targets)
show('per-sample grad fc2.bias', ps['fc2.bias'])
full = grad(lambda p: vmap(sample_loss, in_dims=(None, None, 0, 0))(
    p, bufs, xb, targets).mean())(p)
show('mean of per-sample == full', torch.allclose(ps['fc2.weight'].mean(0), full['fc2.weight'],
                                                  atol=1e-6))

# --- linearize ---------------------------------------------------------------------------
lin_out, jvp_fn = linearize(lambda v: v.sin() * v, t)
show('linearize out', lin_out)
show('linearize jvp', jvp_fn(torch.ones(3)))
show('linearize == jvp', torch.allclose(jvp_fn(torch.ones(3)),
                                        jvp(lambda v: v.sin() * v, (t,), (torch.ones(3),))[1]))

# --- torch.autograd.functional ----------------------------------------------------------
from torch.autograd import functional as AF  # noqa: E402


def two_in(a, c):
    return (a.exp() * c).sum(-1, keepdim=True) + a


a0 = torch.tensor([[0.2, -0.4], [1.0, 0.5]])
c0 = torch.tensor([[1.0, 2.0], [3.0, -1.0]])
jac_loop = AF.jacobian(two_in, (a0, c0))
jac_vec = AF.jacobian(two_in, (a0, c0), vectorize=True)
jac_fwd = AF.jacobian(two_in, (a0, c0), vectorize=True, strategy='forward-mode')
show('jacobian shapes', [j.shape for j in jac_loop])
show('jacobian strategies agree', all(torch.allclose(u, v) and torch.allclose(u, w)
                                      for u, v, w in zip(jac_loop, jac_vec, jac_fwd)))
try:
    AF.jacobian(two_in, (a0, c0), strategy='forward-mode')
except NotImplementedError as e:
    show('forward-mode needs vectorize', e)
quartic = lambda v: (v ** 4).sum() + (v[0] * v[1])  # noqa: E731
v0 = torch.tensor([1.0, -2.0, 0.5])
show('AF hessian', AF.hessian(quartic, v0))
show('AF hessian outer_jacobian_strategy', torch.equal(
    AF.hessian(quartic, v0), AF.hessian(quartic, v0, vectorize=True,
                                        outer_jacobian_strategy='forward-mode')))
o, hv = AF.hvp(quartic, v0, torch.tensor([1.0, 0.0, 0.0]))
show('AF hvp', (o, hv))
o, vh = AF.vhp(quartic, v0, torch.tensor([0.0, 1.0, 0.0]))
show('AF vhp', (o, vh))
o, jv = AF.jvp(lambda v: v ** 2, v0, torch.ones(3), create_graph=True)
show('AF jvp create_graph', (jv, jv.requires_grad))
o, vj = AF.vjp(lambda v: v.cumsum(0), v0, torch.ones(3))
show('AF vjp', vj)
o, vj = AF.vjp(lambda v: v.sum(), v0)
show('AF vjp scalar no v', vj)
try:
    AF.vjp(lambda v: v * 2, v0)
except RuntimeError as e:
    show('AF vjp needs v', e)
Hg = AF.hessian(quartic, v0.clone().requires_grad_(), create_graph=True)
show('AF hessian create_graph', Hg.requires_grad)

# --- forward-mode dual numbers, a custom Function with jvp -------------------------------
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp):
        ctx.save_for_forward(inp)
        ctx.save_for_backward(inp)
        return inp ** 2

    @staticmethod
    def backward(ctx, g):
        inp, = ctx.saved_tensors
        return 2 * inp * g

    @staticmethod
    def jvp(ctx, t_in):
        inp, = ctx.saved_tensors
        return 2 * inp * t_in


primal = torch.tensor([1.0, 2.0, 3.0])
tangent = torch.tensor([1.0, 0.5, -1.0])
with fwAD.dual_level():
    dual = fwAD.make_dual(primal, tangent)
    out = Square.apply(dual).sin()
    p_out, t_out = fwAD.unpack_dual(out)
    show('dual primal', p_out)
    show('dual tangent', t_out)
    unpacked = fwAD.unpack_dual(out)
    show('unpack namedtuple', (type(unpacked).__name__, unpacked._fields))
    show('plain tensor tangent', fwAD.unpack_dual(primal).tangent)
    lin_dual = fwAD.make_dual(torch.ones(2, 3), torch.eye(2, 3))
    t_lin = fwAD.unpack_dual(nn.functional.linear(lin_dual, torch.ones(4, 3))).tangent
    show('linear tangent', t_lin)

# --- errors ---------------------------------------------------------------------------------
def err(tag, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        print(tag, type(e).__name__, str(e).splitlines()[0])
    else:
        print(tag, 'no error')


err('grad non-scalar', lambda: grad(lambda v: v * 2)(t))
err('grad int argnums out of range', lambda: grad(lambda v: v.sum(), argnums=1)(t))
err('grad aux not tuple', lambda: grad(lambda v: v.sum(), has_aux=True)(t))
err('vmap unbatched output', lambda: vmap(lambda v: torch.ones(2), out_dims=0)(batch))
err('vmap item', lambda: vmap(lambda v: v.sum().item())(batch))
err('vmap control flow', lambda: vmap(lambda v: v if v.sum() > 0 else -v)(batch))
err('vmap size mismatch', lambda: vmap(torch.add)(batch, torch.ones(3, 3)))
err('vmap in_dims length', lambda: vmap(torch.add, in_dims=(0,))(batch, batch))
err('vmap in_dims bad dim', lambda: vmap(torch.sum, in_dims=2)(batch))
err('vmap no tensors', lambda: vmap(lambda v: v, in_dims=None)(batch))
err('jacrev non-tensor out', lambda: jacrev(lambda v: 3.0)(t))
err('old-style Function under jvp', lambda: jvp(Square.apply, (primal,), (tangent,)))
err('vjp wrong cotangent shape', lambda: vjp(torch.sin, t)[1](torch.ones(4)))
err('grad argnums list', lambda: grad(lambda a, c: (a * c).sum(), argnums=[0, 1])(t, t))
err('grad argnums repeated', lambda: grad(lambda a, c: (a * c).sum(), argnums=(0, 0))(t, t))
err('vmap chunk_size 0', lambda: vmap(torch.sin, chunk_size=0))
err('jacrev chunk_size 0', lambda: jacrev(torch.sin, chunk_size=0))
err('vmap out_dims structure', lambda: vmap(lambda v: v, out_dims=(0, 1))(batch))
err('jvp primals list', lambda: jvp(torch.sin, [t], (t,)))
err('jvp structure', lambda: jvp(torch.sin, (t,), (t, t)))
err('jvp tangent shape', lambda: jvp(torch.sin, (t,), (torch.ones(2),)))
err('jacfwd random op', lambda: jacfwd(lambda v: v * torch.rand(3))(t))
err('ensemble of mixed modes', lambda: stack_module_state([nn.Linear(1, 1),
                                                           nn.Linear(1, 1).eval()]))
show('vmap empty batch', [o.shape for o in vmap(lambda v: (v.sum(), v * 2), out_dims=(0, 1))(
    torch.ones(0, 3))])
show('vmap over linalg.solve', vmap(torch.linalg.solve)(
    torch.eye(2).expand(3, 2, 2) * torch.tensor([1.0, 2.0, 4.0]).view(3, 1, 1),
    torch.ones(3, 2)))
err('vmap over a training BatchNorm', lambda: vmap(nn.BatchNorm1d(3))(torch.randn(2, 4, 3)))
show('vmap over BatchNorm without running stats', vmap(nn.BatchNorm1d(
    3, track_running_stats=False))(torch.randn(2, 4, 3)).shape)
err('vmap of nothing batched', lambda: vmap(lambda v: v, in_dims=(None,))(batch))
err('vmap without inputs', lambda: vmap(lambda: batch)())
