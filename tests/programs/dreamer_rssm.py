"""A Dreamer-lite world model in the style of danijar/dreamer ports (dreamer-pytorch,
jurgisp/pydreamer): an RSSM with a deterministic GRUCell path and a stochastic state,
Gaussian latents as torch.distributions.Independent(Normal(...), 1) with free-nats KL
(torch.max(kl, free)), DreamerV2 discrete latents with OneHotCategoricalStraightThrough and
KL balancing (kl_divergence of Independent OneHotCategorical with .detach() on each side),
an imagined rollout with torch.stack(..., 0) of states, lambda-returns computed backwards in a
Python loop, and actor/critic losses."""
import torch
import torch.distributions as td
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Independent, Normal, kl_divergence

torch.manual_seed(0)

T, B, OBS, ACT = 6, 4, 10, 3
DETER, STOCH, CLASSES, HID = 16, 4, 4, 24


class RSSM(nn.Module):
    def __init__(self, discrete=False):
        super().__init__()
        self.discrete = discrete
        stoch_size = STOCH * CLASSES if discrete else STOCH
        self.stoch_size = stoch_size
        out = STOCH * CLASSES if discrete else 2 * STOCH
        self.img_in = nn.Sequential(nn.Linear(stoch_size + ACT, HID), nn.ELU())
        self.cell = nn.GRUCell(HID, DETER)
        self.img_out = nn.Sequential(nn.Linear(DETER, HID), nn.ELU(), nn.Linear(HID, out))
        self.obs_out = nn.Sequential(nn.Linear(DETER + OBS, HID), nn.ELU(), nn.Linear(HID, out))

    def initial(self, batch):
        return dict(stoch=torch.zeros(batch, self.stoch_size), deter=torch.zeros(batch, DETER))

    def stats(self, x):
        if self.discrete:
            return {"logit": x.reshape(*x.shape[:-1], STOCH, CLASSES)}
        mean, std = torch.chunk(x, 2, dim=-1)
        std = F.softplus(std) + 0.1
        return {"mean": mean, "std": std}

    def dist(self, stats):
        if self.discrete:
            return Independent(td.OneHotCategoricalStraightThrough(logits=stats["logit"]), 1)
        return Independent(Normal(stats["mean"], stats["std"]), 1)

    def sample(self, stats):
        s = self.dist(stats).rsample()
        return s.flatten(-2) if self.discrete else s

    def img_step(self, prev, action):
        x = self.img_in(torch.cat([prev["stoch"], action], -1))
        deter = self.cell(x, prev["deter"])
        stats = self.stats(self.img_out(deter))
        return dict(stoch=self.sample(stats), deter=deter, **stats)

    def obs_step(self, prev, action, embed):
        prior = self.img_step(prev, action)
        stats = self.stats(self.obs_out(torch.cat([prior["deter"], embed], -1)))
        post = dict(stoch=self.sample(stats), deter=prior["deter"], **stats)
        return post, prior

    def observe(self, embed, action):
        state = self.initial(embed.shape[1])
        posts, priors = [], []
        for t in range(embed.shape[0]):
            state, prior = self.obs_step(state, action[t], embed[t])
            posts.append(state)
            priors.append(prior)
        stack = lambda xs: {k: torch.stack([x[k] for x in xs], 0) for k in xs[0]}
        return stack(posts), stack(priors)

    def kl_loss(self, post, prior, free=1.0, balance=0.8):
        if not self.discrete:
            kl = kl_divergence(self.dist(post), self.dist(prior))
            return torch.max(kl, torch.tensor(free)).mean(), kl
        sg = lambda d: {k: v.detach() for k, v in d.items()}
        lhs = kl_divergence(self.dist(post), self.dist(sg(prior)))
        rhs = kl_divergence(self.dist(sg(post)), self.dist(prior))
        kl = balance * rhs.clamp(min=free).mean() + (1 - balance) * lhs.clamp(min=free).mean()
        return kl, lhs


def lambda_return(reward, value, pcont, bootstrap, lambda_):
    # Setting lambda=1 gives a discounted Monte Carlo return.
    next_values = torch.cat([value[1:], bootstrap[None]], 0)
    inputs = reward + pcont * next_values * (1 - lambda_)
    outputs = []
    last = bootstrap
    for index in reversed(range(reward.shape[0])):
        last = inputs[index] + pcont[index] * lambda_ * last
        outputs.append(last)
    return torch.stack(list(reversed(outputs)), 0)


# sanity prints of the distribution API
d = Independent(Normal(torch.zeros(2, 3), torch.ones(2, 3)), 1)
print(d)
print("batch/event", d.batch_shape, d.event_shape, d.log_prob(torch.ones(2, 3)))
oh = td.OneHotCategoricalStraightThrough(logits=torch.tensor([[0.0, 1.0, 2.0]]))
print(oh, oh.probs, oh.mean, oh.event_shape)
print("entropy", oh.entropy(), Independent(oh, 1).entropy())
print("kl normal", kl_divergence(d, Independent(Normal(torch.ones(2, 3), 2 * torch.ones(2, 3)), 1)))
s = oh.rsample()
print("st sample", s.sum().item(), s.requires_grad)

obs = torch.randn(T, B, OBS)
act = F.one_hot(torch.randint(0, ACT, (T, B)), ACT).float()
reward_target = obs[..., :1].sum(-1).tanh()

for discrete in (False, True):
    torch.manual_seed(1)
    rssm = RSSM(discrete)
    reward_head = nn.Sequential(nn.Linear(DETER + rssm.stoch_size, HID), nn.ELU(), nn.Linear(HID, 1))
    decoder = nn.Sequential(nn.Linear(DETER + rssm.stoch_size, HID), nn.ELU(), nn.Linear(HID, OBS))
    tag = "discrete" if discrete else "gauss"
    if discrete:
        print(rssm)
    params = [*rssm.parameters(), *reward_head.parameters(), *decoder.parameters()]
    opt = torch.optim.Adam(params, lr=3e-3, eps=1e-5)
    for step in range(6):
        post, prior = rssm.observe(obs, act)
        feat = torch.cat([post["stoch"], post["deter"]], -1)
        recon = Independent(Normal(decoder(feat), 1.0), 1)
        recon_loss = -recon.log_prob(obs).mean()
        reward_loss = -Normal(reward_head(feat).squeeze(-1), 1.0).log_prob(reward_target).mean()
        kl, raw_kl = rssm.kl_loss(post, prior)
        loss = recon_loss + reward_loss + kl
        opt.zero_grad()
        loss.backward()
        gnorm = nn.utils.clip_grad_norm_(params, 100.0)
        opt.step()
        print(f"{tag} step {step} loss {loss.item():.4f} kl {raw_kl.mean().item():.4f} "
              f"gnorm {gnorm.item():.3f}")
    print(tag, "post shapes", {k: tuple(v.shape) for k, v in post.items()})

# imagination with an actor and a critic on top of the discrete model
actor = nn.Sequential(nn.Linear(DETER + rssm.stoch_size, HID), nn.ELU(), nn.Linear(HID, ACT))
critic = nn.Sequential(nn.Linear(DETER + rssm.stoch_size, HID), nn.ELU(), nn.Linear(HID, 1))
actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
horizon = 5
for step in range(4):
    start = {k: v.detach().reshape(-1, *v.shape[2:]) for k, v in post.items()}
    states, actions, ents = [start], [], []
    for _ in range(horizon):
        f = torch.cat([states[-1]["stoch"], states[-1]["deter"]], -1).detach()
        pi = td.OneHotCategoricalStraightThrough(logits=actor(f))
        a = pi.rsample()
        ents.append(pi.entropy())
        actions.append(a)
        states.append(rssm.img_step(states[-1], a))
    feats = torch.stack([torch.cat([s["stoch"], s["deter"]], -1) for s in states[1:]], 0)
    reward = reward_head(feats).squeeze(-1)
    value = critic(feats).squeeze(-1)
    pcont = 0.99 * torch.ones_like(reward)
    returns = lambda_return(reward[:-1], value[:-1], pcont[:-1], value[-1], 0.95)
    discount = torch.cumprod(torch.cat([torch.ones_like(pcont[:1]), pcont[:-2]], 0), 0).detach()
    actor_loss = -(discount * returns).mean() - 1e-3 * torch.stack(ents[:-1], 0).mean()
    actor_opt.zero_grad()
    actor_loss.backward(retain_graph=True)
    actor_opt.step()
    value_pred = Normal(critic(feats[:-1].detach()).squeeze(-1), 1)
    critic_loss = -(discount * value_pred.log_prob(returns.detach())).mean()
    critic_opt.zero_grad()
    critic_loss.backward()
    critic_opt.step()
    print(f"imagine step {step} returns {tuple(returns.shape)} actor {actor_loss.item():.4f} "
          f"critic {critic_loss.item():.4f}")
