"""torch.autograd.functional and torch.func the way research code uses them: Jacobians
and Hessians of small models (create_graph, strict, vectorize), hvp/vhp/vjp/jvp,
jacrev/jacfwd/hessian/vmap with in_dims, functional_call with tied weights,
autograd.grad with allow_unused/materialize_grads and retain_graph, gradcheck on
float64, and a Newton-step / Gauss-Newton fit of a tiny regression."""
import torch
import torch.nn as nn
from torch.autograd import gradcheck, gradgradcheck
from torch.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp
from torch.func import functional_call, grad, grad_and_value, jacfwd, jacrev, vmap
from torch.func import hessian as func_hessian

torch.manual_seed(0)
torch.set_printoptions(precision=4)


def pow_reducer(x):
    return x.pow(3).sum()


def pow_adder_reducer(x, y):
    return (2 * x.pow(2) + 3 * y.pow(2)).sum()


def exp_adder(x, y):
    return 2 * x.exp() + 3 * y


x = torch.tensor([0.5, -1.0, 2.0])
y = torch.tensor([1.0, 0.25, -0.5])
print('jacobian', jacobian(exp_adder, (x, y)))
print('jacobian vectorize', jacobian(exp_adder, (x, y), vectorize=True)[0].diagonal())
print('jacobian forward', jacobian(exp_adder, (x, y), vectorize=True,
                                   strategy='forward-mode')[1].diagonal())
J = jacobian(lambda t: t.sin(), x, create_graph=True)
print('jacobian create_graph', J.requires_grad, J.grad_fn is not None)
print('hessian', hessian(pow_reducer, x))
H = hessian(pow_adder_reducer, (x, y))
print('hessian pair', [[h.diagonal() for h in row] for row in H])
v = torch.ones(3)
out, hv = hvp(pow_reducer, x, v)
print('hvp', out, hv)
out, vh = vhp(pow_reducer, x, v)
print('vhp', out, vh)
out, vj = vjp(exp_adder, (x, y), v)
print('vjp', out, vj)
out, jv = jvp(exp_adder, (x, y), (v, v))
print('jvp', out, jv)
try:
    jacobian(lambda a: torch.ones(2), x, strict=True)
except RuntimeError as e:
    print('strict error', e)
print('non-strict zeros', jacobian(lambda a: torch.ones(2), x))

# --- torch.autograd.grad flags ---
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0], requires_grad=True)
c = torch.tensor([5.0], requires_grad=True)
loss = (a * b).sum()
ga, gc = torch.autograd.grad(loss, (a, c), allow_unused=True, retain_graph=True)
print('allow_unused', ga, gc)
ga, gc = torch.autograd.grad(loss, (a, c), allow_unused=True, materialize_grads=True,
                             retain_graph=True)
print('materialize_grads', ga, gc)
gb, = torch.autograd.grad(loss, b, retain_graph=True)
loss.backward()
print('retain_graph then backward', gb, a.grad, b.grad)
try:
    torch.autograd.grad(loss, c)
except RuntimeError as e:
    print('unused error', e)
z = a.pow(2).sum()
g1, = torch.autograd.grad(z, a, create_graph=True)
g2, = torch.autograd.grad(g1.sum(), a)
print('double backward', g1, g2)
gs = torch.autograd.grad([a.sum(), b.sum()], [a, b], grad_outputs=[torch.tensor(2.0), None])
print('grad_outputs', gs)

# --- gradcheck on float64 ---
lin = nn.Linear(3, 2).double()
inp = torch.randn(4, 3, dtype=torch.double, requires_grad=True)
print('gradcheck linear', gradcheck(lambda t: torch.tanh(lin(t)), (inp,), eps=1e-6, atol=1e-4))
print('gradgradcheck', gradgradcheck(lambda t: (t ** 3).sin(), (inp,)))
print('gradcheck softmax', gradcheck(lambda t: torch.softmax(t, dim=-1), (inp,)))
print('gradcheck fast', gradcheck(torch.cumprod, (inp, 1), fast_mode=True))


class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return t * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


print('gradcheck wrong backward', gradcheck(Bad.apply, (inp,), raise_exception=False))

# --- torch.func ---
def f(t):
    return torch.sin(t).sum()


t = torch.tensor([0.1, 0.2, 0.3])
print('func grad', grad(f)(t))
g, val = grad_and_value(f)(t)
print('grad_and_value', g, val)
print('jacrev', jacrev(torch.sin)(t))
print('jacfwd', jacfwd(torch.sin)(t))
print('func hessian', func_hessian(f)(t))
print('jacrev argnums', [j.shape for j in jacrev(exp_adder, argnums=(0, 1))(x, y)])
print('vmap dot', vmap(torch.dot)(torch.ones(4, 3), torch.arange(12.).reshape(4, 3)))
print('vmap in_dims', vmap(torch.mul, in_dims=(0, None))(torch.arange(6.).reshape(2, 3), 2.0))
print('vmap in_dims 1', vmap(torch.sum, in_dims=1)(torch.arange(6.).reshape(2, 3)))
print('vmap out_dims', vmap(lambda r: r * 2, out_dims=1)(torch.arange(6.).reshape(2, 3)).shape)
print('per-example jac', vmap(jacrev(torch.sin))(torch.ones(2, 3)).shape)


class NumpySin(torch.autograd.Function):
    """A Function in the torch.func style: forward without ctx, then setup_context."""
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * torch.cos(x)


print('setup_context grad', grad(lambda v: NumpySin.apply(v).sum())(t))
print('setup_context vmap', vmap(NumpySin.apply)(torch.ones(2, 3) * 0.5))
print('setup_context per-sample grad', vmap(grad(lambda v: NumpySin.apply(v).sum()))(torch.zeros(2, 3)))
print('vmap out_dims None', vmap(lambda r: (r.sum(), 'rows'), out_dims=(0, None))(torch.ones(2, 3)))


class TiedLM(nn.Module):
    def __init__(self, vocab=6, dim=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight  # weight tying, as in GPT-2

    def forward(self, idx):
        return self.head(self.emb(idx))


lm = TiedLM()
print(lm)
print('tied params', [n for n, _ in lm.named_parameters()], len(list(lm.parameters())))
print('tied state_dict', list(lm.state_dict().keys()))
idx = torch.tensor([0, 3, 5])
new_w = torch.ones(6, 3)
out = functional_call(lm, {'emb.weight': new_w}, (idx,))
print('functional_call tied', out[0])
out = functional_call(lm, {'emb.weight': new_w, 'head.weight': new_w}, (idx,), tie_weights=True)
print('functional_call both', out.sum())
params = {k: v.detach() for k, v in lm.named_parameters()}


def lm_loss(p, inp, target):
    logits = functional_call(lm, p, (inp,))
    return nn.functional.cross_entropy(logits, target)


g = grad(lm_loss)(params, idx, torch.tensor([1, 2, 3]))
print('grad over dict', list(g.keys()), g['emb.weight'].shape)
per_sample = vmap(grad(lm_loss), in_dims=(None, 0, 0))(params, idx.unsqueeze(1),
                                                         torch.tensor([[1], [2], [3]]))
print('per-sample grads', per_sample['emb.weight'].shape)

# --- Newton's method and Gauss-Newton on a tiny regression ---
X = torch.randn(32, 3, dtype=torch.double)
w_true = torch.tensor([1.5, -2.0, 0.5], dtype=torch.double)
Y = torch.tanh(X @ w_true) + 0.01 * torch.randn(32, dtype=torch.double)


def residuals(w):
    return torch.tanh(X @ w) - Y


def objective(w):
    return 0.5 * residuals(w).pow(2).sum()


w = torch.zeros(3, dtype=torch.double)
for step in range(6):
    Jr = jacobian(residuals, w)
    r = residuals(w)
    delta = torch.linalg.solve(Jr.T @ Jr + 1e-6 * torch.eye(3, dtype=torch.double), Jr.T @ r)
    w = w - delta
    print(f'gauss-newton step {step} loss {objective(w).item():.6f}')
print('recovered', w.round(decimals=2))
w = w_true + 0.2  # Newton from nearby: its quadratic convergence
for step in range(4):
    g = jacobian(objective, w)
    Hm = hessian(objective, w)
    w = w - torch.linalg.solve(Hm, g)
    print(f'newton step {step} loss {objective(w).item():.6f}')
