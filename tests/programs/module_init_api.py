"""nn.Module and nn.init as libraries (timm, HuggingFace, Lightning) drive them: every init
with its gain / mode / nonlinearity, named_modules / named_parameters variants, tied
weights, apply, non-persistent buffers, get/set_submodule, load_state_dict's strictness,
errors and hooks, forward hooks with kwargs, full backward hooks, dtype and memory-format
moves, container operations and reprs, deepcopy, train/eval, attribute errors."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_printoptions(precision=6)

# --- nn.init: every initializer, seeded, printed exactly ------------------------------
for nl, param in [('linear', None), ('conv2d', None), ('sigmoid', None), ('tanh', None),
                  ('relu', None), ('leaky_relu', None), ('leaky_relu', 0.2), ('selu', None)]:
    print('gain', nl, param, nn.init.calculate_gain(nl, param))
try:
    nn.init.calculate_gain('swish')
except ValueError as e:
    print('gain error', e)


def fresh(*shape):
    return torch.empty(*shape)


def show(name, t):
    print(name, tuple(t.shape), t.flatten()[:6])


torch.manual_seed(1)
show('uniform_', nn.init.uniform_(fresh(3, 4), a=-0.5, b=2.0))
show('normal_', nn.init.normal_(fresh(3, 4), mean=1.0, std=0.1))
show('trunc_normal_', nn.init.trunc_normal_(fresh(3, 4), mean=0.0, std=1.0, a=-0.5, b=0.5))
t = nn.init.trunc_normal_(fresh(200), std=0.02)
print('trunc_normal_ bounds', bool((t.abs() <= 2.0).all()))
show('constant_', nn.init.constant_(fresh(2, 3), 0.25))
show('ones_', nn.init.ones_(fresh(2, 2)))
show('zeros_', nn.init.zeros_(fresh(2, 2)))
show('eye_', nn.init.eye_(fresh(3, 5)))
show('dirac_', nn.init.dirac_(fresh(4, 2, 3)))
show('dirac_ groups', nn.init.dirac_(fresh(4, 2, 3, 3), groups=2))
show('xavier_uniform_', nn.init.xavier_uniform_(fresh(4, 5), gain=nn.init.calculate_gain('tanh')))
show('xavier_normal_', nn.init.xavier_normal_(fresh(4, 5), gain=2.0))
show('kaiming_uniform_', nn.init.kaiming_uniform_(fresh(4, 5), a=0.1, mode='fan_out',
                                                   nonlinearity='leaky_relu'))
show('kaiming_normal_', nn.init.kaiming_normal_(fresh(6, 3, 2, 2), mode='fan_in',
                                                 nonlinearity='relu'))
show('kaiming_uniform_ a=sqrt5', nn.init.kaiming_uniform_(fresh(3, 7), a=5 ** 0.5))
show('orthogonal_', nn.init.orthogonal_(fresh(3, 5), gain=1.5))
q = nn.init.orthogonal_(fresh(5, 3))
print('orthogonal_ columns', torch.allclose(q.T @ q, torch.eye(3), atol=1e-5))
s = nn.init.sparse_(fresh(6, 4), sparsity=0.5, std=0.01)
print('sparse_ zeros per column', (s == 0).sum(0).tolist())
g = torch.Generator().manual_seed(7)
show('uniform_ generator', nn.init.uniform_(fresh(4), generator=g))
show('normal_ generator', nn.init.normal_(fresh(4), generator=g))
for fn, args in [(nn.init.xavier_uniform_, (fresh(3),)), (nn.init.eye_, (fresh(2, 2, 2),)),
                 (nn.init.dirac_, (fresh(3, 3),)), (nn.init.orthogonal_, (fresh(3),)),
                 (nn.init.kaiming_normal_, (fresh(3, 3),), )]:
    try:
        fn(*args, **({'mode': 'fan_avg'} if fn is nn.init.kaiming_normal_ else {}))
    except (ValueError, RuntimeError) as e:
        print('init error', fn.__name__, type(e).__name__, e)
print('init no grad', nn.init.normal_(torch.zeros(2, requires_grad=True)).requires_grad)


# --- a model with tied weights, buffers, nested children -------------------------------
class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)
        self.register_buffer('scale', torch.ones(dim))
        self.register_buffer('cache', torch.zeros(2), persistent=False)

    def forward(self, x, *, gate=1.0):
        return x + gate * self.fc(self.norm(x)) * self.scale


class TinyLM(nn.Module):
    def __init__(self, vocab=7, dim=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(2)])
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight
        self.alias = self.blocks[0]

    def forward(self, idx, gate=1.0):
        h = self.embed(idx)
        for b in self.blocks:
            h = b(h, gate=gate)
        return self.head(h)

    def extra_repr(self):
        return 'vocab=7, tied=True'


torch.manual_seed(2)
model = TinyLM()
print(model)
print('named_modules', [n for n, _ in model.named_modules()])
print('named_modules dup', [n for n, _ in model.named_modules(remove_duplicate=False)])
print('named_modules prefix', [n for n, _ in model.named_modules(prefix='lm')][:4])
print('named_parameters', [n for n, _ in model.named_parameters()])
print('named_parameters dup', len(list(model.named_parameters(remove_duplicate=False))))
print('recurse=False', [n for n, _ in model.blocks[0].named_parameters(recurse=False)],
      [n for n, _ in model.blocks[0].named_buffers(recurse=False)])
print('named_buffers', [n for n, _ in model.named_buffers()])
print('param count', sum(p.numel() for p in model.parameters()))
print('named_children', [n for n, _ in model.named_children()])
print('state_dict keys', list(model.state_dict().keys()))
print('cache in state_dict', any('cache' in k for k in model.state_dict()))
print('state_dict prefix', list(model.blocks.state_dict(prefix='m.').keys())[:3])
print('keep_vars', type(model.state_dict(keep_vars=True)['embed.weight']).__name__,
      model.state_dict()['embed.weight'].requires_grad)
print('get_submodule', model.get_submodule('blocks.1.fc'))
print('get_parameter', model.get_parameter('blocks.1.fc.bias').shape)
print('get_buffer', model.get_buffer('blocks.0.scale'))
for getter, target in [(model.get_submodule, 'blocks.5'), (model.get_submodule, 'blocks.0.nope'),
                       (model.get_parameter, 'blocks.0.scale'),
                       (model.get_buffer, 'blocks.0.fc.weight')]:
    try:
        getter(target)
    except AttributeError as e:
        print('getter error', getter.__name__, e)
model.set_submodule('blocks.1.fc', nn.Linear(4, 4, bias=False))
print('set_submodule', model.blocks[1].fc)


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=0.02)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.LayerNorm):
        nn.init.ones_(m.weight)


torch.manual_seed(3)
visited = []
model.apply(lambda m: visited.append(type(m).__name__))
print('apply order', visited)
model.apply(init_weights)
print('after apply', model.blocks[0].fc.weight[0], model.blocks[0].fc.bias)

# --- load_state_dict --------------------------------------------------------------------
sd = copy.deepcopy(model.state_dict())
print('load strict', model.load_state_dict(sd))
partial = {k: v for k, v in sd.items() if not k.startswith('blocks.1')}
partial['extra.weight'] = torch.zeros(1)
result = model.load_state_dict(partial, strict=False)
print('load non-strict', result.missing_keys, result.unexpected_keys)
print('result fields', type(result).__name__, result._fields)
try:
    model.load_state_dict(partial)
except RuntimeError as e:
    print('load error', e)
bad = dict(sd)
bad['embed.weight'] = torch.zeros(3, 4)
try:
    model.load_state_dict(bad)
except RuntimeError as e:
    print('size mismatch', e)
try:
    model.load_state_dict(bad, strict=False)
except RuntimeError as e:
    print('size mismatch non-strict', str(e).splitlines()[1])
new_w = torch.full((7, 4), 0.5)
model2 = TinyLM()
sd2 = dict(model2.state_dict())
sd2['embed.weight'] = new_w
model2.load_state_dict(sd2, assign=True)
print('assign keeps object', model2.embed.weight.data_ptr() == new_w.data_ptr(),
      type(model2.embed.weight).__name__)
model2.load_state_dict(sd, strict=False)
print('load copies', model2.embed.weight.data_ptr() == new_w.data_ptr())


def pre_hook(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
    if prefix + 'old_fc.weight' in state_dict:
        state_dict[prefix + 'fc.weight'] = state_dict.pop(prefix + 'old_fc.weight')


blk = Block(4)
blk.register_load_state_dict_pre_hook(pre_hook)
renamed = {('old_fc.weight' if k == 'fc.weight' else k): v for k, v in blk.state_dict().items()}
renamed['old_fc.weight'] = torch.ones(4, 4)
print('pre hook rename', blk.load_state_dict(renamed), blk.fc.weight.sum().item())


def post_hook(module, incompatible_keys):
    print('post hook', incompatible_keys.missing_keys, incompatible_keys.unexpected_keys)
    incompatible_keys.unexpected_keys.clear()


h = blk.register_load_state_dict_post_hook(post_hook)
print('post hook cleared', blk.load_state_dict(dict(blk.state_dict(), junk=torch.ones(1))))
h.remove()


def sd_post(module, state_dict, prefix, local_metadata):
    state_dict[prefix + 'note'] = torch.tensor(1.0)


h = blk._register_state_dict_hook(sd_post)
print('state_dict hook', list(blk.state_dict().keys()))
h.remove()
print('metadata', blk.state_dict()._metadata[''], blk.state_dict()._metadata.get('fc'))

# --- forward hooks -------------------------------------------------------------------
calls = []
blk = model.blocks[0]


def fpre(module, args, kwargs):
    calls.append(('pre', len(args), sorted(kwargs)))
    return args, dict(kwargs, gate=0.0)


def fpost(module, args, kwargs, output):
    calls.append(('post', kwargs['gate']))
    return output * 2


def plain_pre(module, args):
    calls.append(('plain pre', args[0].shape))
    return None


def always(module, args, output):
    calls.append(('always',))


h1 = blk.register_forward_pre_hook(fpre, with_kwargs=True)
h2 = blk.register_forward_hook(fpost, with_kwargs=True)
h3 = blk.register_forward_pre_hook(plain_pre, prepend=True)
h4 = blk.register_forward_hook(always, always_call=True)
xin = torch.randn(2, 4)
out = blk(xin, gate=0.5)
print('hooks order', calls)
print('hooked out == 2x', torch.allclose(out, 2 * xin))
for h in (h1, h2, h3):
    h.remove()
calls.clear()
blk(xin)
print('after remove', calls)


def boom(module, args, output):
    raise ValueError('hook failed')


h5 = blk.register_forward_hook(boom)
calls.clear()
try:
    blk(xin)
except ValueError as e:
    print('hook raised', e, calls)
h4.remove()
h5.remove()

# --- full backward hooks -------------------------------------------------------------
lin = nn.Linear(3, 2)
with torch.no_grad():
    lin.weight.copy_(torch.arange(6.0).reshape(2, 3) / 10)
    lin.bias.fill_(0.1)


def bhook(module, grad_input, grad_output):
    print('backward hook', [None if g is None else g.shape for g in grad_input],
          [g for g in grad_output])
    return (grad_input[0] * 10,)


def bpre(module, grad_output):
    print('backward pre hook', grad_output)
    return (grad_output[0] * 0.5,)


hb = lin.register_full_backward_hook(bhook)
hp = lin.register_full_backward_pre_hook(bpre)
xg = torch.ones(1, 3, requires_grad=True)
lin(xg).sum().backward()
print('input grad scaled', xg.grad, 'weight grad', lin.weight.grad)
hb.remove()
hp.remove()
lin.zero_grad()
print('zero_grad', lin.weight.grad)
lin(xg).sum().backward()
lin.zero_grad(set_to_none=False)
print('zero_grad keep', lin.weight.grad)

# --- dtypes, memory format, requires_grad_ -----------------------------------------------
conv = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
print('half', conv.half()[0].weight.dtype, conv[1].running_mean.dtype,
      conv[1].num_batches_tracked.dtype)
print('double', conv.double()[0].weight.dtype)
print('to float', conv.to(torch.float32)[1].weight.dtype)
conv.to(memory_format=torch.channels_last)
print('channels_last', conv[0].weight.is_contiguous(memory_format=torch.channels_last),
      conv[0].weight.stride(), conv[0].bias.stride())
conv.requires_grad_(False)
print('requires_grad_', [p.requires_grad for p in conv.parameters()])
conv[1].requires_grad_()
print('partial', [p.requires_grad for p in conv.parameters()])
try:
    conv.to(torch.int64)
except TypeError as e:
    print('to int error', e)

# --- containers --------------------------------------------------------------------------
ml = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
ml.append(nn.Tanh())
ml.extend([nn.Sigmoid(), nn.Identity()])
ml.insert(1, nn.Dropout(0.1))
print('ModuleList', ml)
print('pop', ml.pop(2), len(ml))
print('slice', ml[1:3])
print('plus', type(ml[:2] + ml[3:]).__name__, len(ml[:2] + ml[3:]))
del ml[0]
print('del', [type(m).__name__ for m in ml])
ml[0] = nn.GELU()
print('setitem', ml[0], ml[-1])
md = nn.ModuleDict({'b': nn.ReLU(), 'a': nn.Linear(1, 1)})
md.update([('c', nn.Tanh())])
md['d'] = nn.Identity()
print('ModuleDict', md)
print('keys', list(md.keys()), 'pop', md.pop('b'), 'in', 'b' in md, len(md))
sq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
print('Sequential slice', sq[:2])
sq.append(nn.Sigmoid())
sq.insert(0, nn.Identity())
print('Sequential', sq, len(sq))
print('Sequential plus', len(sq + nn.Sequential(nn.ReLU())), type(sq[-1]).__name__)
pl = nn.ParameterList([nn.Parameter(torch.ones(2)), torch.zeros(3)])
pl.append(nn.Parameter(torch.full((1,), 2.0)))
pl.extend([torch.ones(2, 2)])
print('ParameterList', pl)
print('ParameterList types', [type(p).__name__ for p in pl], [p.requires_grad for p in pl])
pd = nn.ParameterDict({'w': nn.Parameter(torch.ones(2)), 'b': torch.zeros(1)})
pd.update({'g': torch.ones(3)})
pd['s'] = 'not a tensor'
print('ParameterDict', pd)
print('ParameterDict keys', list(pd.keys()), pd.get('missing', 'default'), pd.pop('s'))
holder = nn.Module()
holder.plist, holder.pdict = pl, pd
print('nested names', [n for n, _ in holder.named_parameters()])

# --- deepcopy, train/eval ------------------------------------------------------------------
clone = copy.deepcopy(model)
print('deepcopy tied kept', clone.head.weight is clone.embed.weight,
      clone.embed.weight is not model.embed.weight,
      torch.equal(clone.embed.weight, model.embed.weight))
print('deepcopy alias kept', clone.alias is clone.blocks[0])
net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.Sequential(nn.BatchNorm1d(2)))
net.train(False)
print('train(False)', [m.training for m in net.modules()])
net.train()
net[2].eval()
print('mixed', [m.training for m in net.modules()])
try:
    net.train('yes')
except ValueError as e:
    print('train error', e)

# --- attribute errors and __setattr__ -----------------------------------------------------
lin = nn.Linear(2, 2)
try:
    lin.weight = torch.ones(2, 2)
except TypeError as e:
    print('setattr error', e)
try:
    lin.nope
except AttributeError as e:
    print('getattr error', e)
try:
    model.blocks.nope
except AttributeError as e:
    print('getattr error 2', e)
try:
    lin.register_buffer('weight', torch.ones(1))
except KeyError as e:
    print('register_buffer error', e)
try:
    lin.register_parameter('a.b', nn.Parameter(torch.ones(1)))
except KeyError as e:
    print('register_parameter error', e)
try:
    lin.add_module('', nn.ReLU())
except KeyError as e:
    print('add_module error', e)
lin.weight = nn.Parameter(torch.zeros(2, 2))
lin.extra = torch.ones(1)
print('plain tensor attr', 'extra' in dict(lin.named_buffers()), lin.extra)
lin.weight = None
print('weight None', lin.weight, [n for n, _ in lin.named_parameters()])
print('dir has', all(k in dir(model) for k in ('embed', 'blocks', 'head', 'forward')))
del model.alias
print('del child', 'alias' in dict(model.named_children()))


# --- more registration errors, extra state, moves -----------------------------------------
def err(tag, fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001
        print(tag, type(e).__name__, e)
    else:
        print(tag, 'ok', r)


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.register_buffer('nb', None)
        self.register_parameter('p', None)
        self.step = 0

    def get_extra_state(self):
        return {'step': self.step}

    def set_extra_state(self, state):
        self.step = state['step']


hm = Holder()
print('None entries', list(hm.state_dict().keys()), hm.nb, hm.p)
err('buffer non-tensor', lambda: hm.register_buffer('q', 3))
err('buffer assign non-tensor', lambda: setattr(hm, 'nb', 3))
err('param assign module', lambda: setattr(hm, 'p', nn.ReLU()))
err('module assign tensor', lambda: setattr(hm, 'a', torch.ones(1)))
err('param not Parameter', lambda: hm.register_parameter('z', torch.ones(1)))
err('load list', lambda: hm.load_state_dict([1, 2]))
err('no forward', lambda: nn.Module()(1))
err('half forward', lambda: nn.Linear(2, 2).half()(torch.ones(1, 2)))
err('get_extra_state base', lambda: nn.Module().get_extra_state())
hsd = hm.state_dict()
hsd['_extra_state'] = {'step': 9}
print('extra state load', hm.load_state_dict(hsd), hm.step)
err('extra state missing', lambda: hm.load_state_dict({k: v for k, v in hsd.items()
                                                       if k != '_extra_state'}))
lin = nn.Linear(2, 3)
err('to device dtype', lambda: lin.to(torch.device('cpu'), torch.float64,
                                      non_blocking=True).weight.dtype)
err('to tensor', lambda: lin.to(torch.ones(1, dtype=torch.float16)).weight.dtype)
err('to bad', lambda: lin.to('cpu', 'cpu'))
err('tensor to bad', lambda: torch.ones(1).to(torch.float32, torch.float32))
err('to too many', lambda: torch.ones(1).to('cpu', torch.float64, False, False, False))
err('to_empty', lambda: lin.to_empty(device='cpu').weight.shape)
print('public dir', [k for k in dir(nn.Linear(1, 1)) if not k.startswith('_')][:14])
print('repeated repr', nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()] * 2))

# --- global hooks (profilers, debuggers), hook refusals, deepcopy of trained params ----------
from torch.nn.modules import module as module_api  # noqa: E402

seen = []
handles = [
    module_api.register_module_forward_pre_hook(lambda m, a: seen.append(('pre', type(m).__name__))),
    module_api.register_module_full_backward_pre_hook(
        lambda m, go: seen.append(('bpre', type(m).__name__))),
    module_api.register_module_full_backward_hook(
        lambda m, gi, go: seen.append(('bh', type(m).__name__, [None if g is None else
                                                                tuple(g.shape) for g in gi]))),
    module_api.register_module_parameter_registration_hook(
        lambda m, n, p: seen.append(('param', n))),
    module_api.register_module_module_registration_hook(lambda m, n, s: seen.append(('mod', n))),
    module_api.register_module_buffer_registration_hook(lambda m, n, b: seen.append(('buf', n))),
]
gnet = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
gnet(torch.ones(3, 2, requires_grad=True)).sum().backward()
for h in handles:
    h.remove()
print('global hooks', seen)
wrong = nn.Linear(2, 2)
wrong.register_full_backward_hook(lambda m, gi, go: (torch.ones(3),))
err('hook changes size', lambda: wrong(torch.ones(1, 2, requires_grad=True)).sum().backward())
wrong = nn.Linear(2, 2)
wrong.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
err('hook count', lambda: wrong(torch.ones(1, 2, requires_grad=True)).sum().backward())
trained = nn.Linear(2, 1)
trained(torch.ones(1, 2)).sum().backward()
print('deepcopy drops .grad', copy.deepcopy(trained).weight.grad, trained.weight.grad)
