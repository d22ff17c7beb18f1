"""IMPALA V-trace in the style of facebookresearch/torchbeast (core/vtrace.py, monobeast.py)
and PPO-style GAE on a batch of trajectories in the style of cleanrl: importance weights
clamped with torch.clamp(rhos, max=1.0), the reversed accumulation loop starting from
torch.zeros_like, Categorical(logits=...).log_prob/entropy, discounted returns by
torch.flip + cumulative discounting, nn.utils.clip_grad_norm_ (its returned norm printed),
and RMSprop(eps=0.01, alpha=0.99) with a LambdaLR."""
import collections

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VTraceFromLogitsReturns = collections.namedtuple(
    "VTraceFromLogitsReturns",
    ["vs", "pg_advantages", "log_rhos", "behavior_action_log_probs", "target_action_log_probs"],
)
VTraceReturns = collections.namedtuple("VTraceReturns", "vs pg_advantages")


def action_log_probs(policy_logits, actions):
    return -F.nll_loss(
        F.log_softmax(torch.flatten(policy_logits, 0, -2), dim=-1),
        torch.flatten(actions),
        reduction="none",
    ).view_as(actions)


@torch.no_grad()
def from_importance_weights(log_rhos, discounts, rewards, values, bootstrap_value,
                            clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0):
    rhos = torch.exp(log_rhos)
    if clip_rho_threshold is not None:
        clipped_rhos = torch.clamp(rhos, max=clip_rho_threshold)
    else:
        clipped_rhos = rhos
    cs = torch.clamp(rhos, max=1.0)
    # Append bootstrapped value to get [v1, ..., v_t+1]
    values_t_plus_1 = torch.cat([values[1:], torch.unsqueeze(bootstrap_value, 0)], dim=0)
    deltas = clipped_rhos * (rewards + discounts * values_t_plus_1 - values)
    acc = torch.zeros_like(bootstrap_value)
    result = []
    for t in range(discounts.shape[0] - 1, -1, -1):
        acc = deltas[t] + discounts[t] * cs[t] * acc
        result.append(acc)
    result.reverse()
    vs_minus_v_xs = torch.stack(result)
    # Add V(x_s) to get v_s.
    vs = torch.add(vs_minus_v_xs, values)
    # Advantage for policy gradient.
    broadcasted_bootstrap_values = torch.ones_like(vs[0]) * bootstrap_value
    vs_t_plus_1 = torch.cat([vs[1:], broadcasted_bootstrap_values.unsqueeze(0)], dim=0)
    if clip_pg_rho_threshold is not None:
        clipped_pg_rhos = torch.clamp(rhos, max=clip_pg_rho_threshold)
    else:
        clipped_pg_rhos = rhos
    pg_advantages = clipped_pg_rhos * (rewards + discounts * vs_t_plus_1 - values)
    # Make sure no gradients backpropagated through the returned values.
    return VTraceReturns(vs=vs, pg_advantages=pg_advantages)


def from_logits(behavior_policy_logits, target_policy_logits, actions, discounts, rewards,
                values, bootstrap_value, clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0):
    target_action_log_probs = action_log_probs(target_policy_logits, actions)
    behavior_action_log_probs = action_log_probs(behavior_policy_logits, actions)
    log_rhos = target_action_log_probs - behavior_action_log_probs
    vtrace_returns = from_importance_weights(
        log_rhos=log_rhos, discounts=discounts, rewards=rewards, values=values,
        bootstrap_value=bootstrap_value, clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold)
    return VTraceFromLogitsReturns(
        log_rhos=log_rhos, behavior_action_log_probs=behavior_action_log_probs,
        target_action_log_probs=target_action_log_probs, **vtrace_returns._asdict())


def compute_baseline_loss(advantages):
    return 0.5 * torch.sum(advantages ** 2)


def compute_entropy_loss(logits):
    """Return the entropy loss, i.e., the negative entropy of the policy."""
    policy = F.softmax(logits, dim=-1)
    log_policy = F.log_softmax(logits, dim=-1)
    return torch.sum(policy * log_policy)


def compute_policy_gradient_loss(logits, actions, advantages):
    cross_entropy = F.nll_loss(
        F.log_softmax(torch.flatten(logits, 0, 1), dim=-1),
        target=torch.flatten(actions, 0, 1),
        reduction="none",
    )
    cross_entropy = cross_entropy.view_as(advantages)
    return torch.sum(cross_entropy * advantages.detach())


class AtariNetLite(nn.Module):
    def __init__(self, obs_dim, num_actions):
        super().__init__()
        self.num_actions = num_actions
        self.fc = nn.Linear(obs_dim, 32)
        core_output_size = self.fc.out_features + num_actions + 1
        self.policy = nn.Linear(core_output_size, self.num_actions)
        self.baseline = nn.Linear(core_output_size, 1)

    def forward(self, inputs):
        x = inputs["frame"]
        T, B, *_ = x.shape
        x = torch.flatten(x, 0, 1)  # Merge time and batch.
        x = F.relu(self.fc(x))
        one_hot_last_action = F.one_hot(
            inputs["last_action"].view(T * B), self.num_actions).float()
        clipped_reward = torch.clamp(inputs["reward"], -1, 1).view(T * B, 1)
        core_output = torch.cat([x, clipped_reward, one_hot_last_action], dim=-1)
        policy_logits = self.policy(core_output)
        baseline = self.baseline(core_output)
        if self.training:
            action = torch.multinomial(F.softmax(policy_logits, dim=1), num_samples=1)
        else:
            # Don't sample when testing.
            action = torch.argmax(policy_logits, dim=1)
        policy_logits = policy_logits.view(T, B, self.num_actions)
        baseline = baseline.view(T, B)
        action = action.view(T, B)
        return dict(policy_logits=policy_logits, baseline=baseline, action=action)


def compute_gae(rewards, values, dones, next_value, gamma=0.99, gae_lambda=0.95):
    num_steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = 0
    for t in reversed(range(num_steps)):
        if t == num_steps - 1:
            nextnonterminal = 1.0 - dones[t]
            nextvalues = next_value
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            nextvalues = values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
    returns = advantages + values
    return advantages, returns


def discount_cumsum(x, gamma):
    """Discounted cumulative sums by flipping in time (rl-baselines style)."""
    n = x.shape[0]
    powers = gamma ** torch.arange(n, dtype=x.dtype)
    flipped = torch.flip(x, dims=[0]) * powers.flip(0).unsqueeze(-1)
    return torch.flip(torch.cumsum(flipped, 0), dims=[0]) / powers.flip(0).unsqueeze(-1).flip(0) \
        if False else torch.stack([(x[t:] * powers[:n - t, None]).sum(0) for t in range(n)])


T, B, OBS, A = 8, 5, 6, 4
model = AtariNetLite(OBS, A)
print(model)
optimizer = torch.optim.RMSprop(model.parameters(), lr=4e-3, momentum=0, eps=0.01, alpha=0.99)
print(optimizer)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 1 - min(epoch, 40) / 40)

target = torch.randn(OBS, A)
for step in range(14):
    frames = torch.randn(T + 1, B, OBS)
    with torch.no_grad():
        model.train()
        behav = model(dict(frame=frames, last_action=torch.zeros(T + 1, B, dtype=torch.long),
                           reward=torch.zeros(T + 1, B)))
    actions = behav["action"]
    rewards = (frames @ target).gather(-1, actions.unsqueeze(-1)).squeeze(-1).tanh()
    done = torch.rand(T + 1, B) < 0.1
    last_action = torch.cat([torch.zeros(1, B, dtype=torch.long), actions[:-1]])
    prev_reward = torch.cat([torch.zeros(1, B), rewards[:-1]])
    learner_outputs = model(dict(frame=frames, last_action=last_action, reward=prev_reward))
    bootstrap_value = learner_outputs["baseline"][-1]
    batch = {"policy_logits": behav["policy_logits"][1:], "action": actions[1:],
             "reward": rewards[1:], "done": done[1:]}
    learner_outputs = {key: tensor[:-1] for key, tensor in learner_outputs.items()}
    clipped_rewards = torch.clamp(batch["reward"], -1, 1)
    discounts = (~batch["done"]).float() * 0.99
    vtrace_returns = from_logits(
        behavior_policy_logits=batch["policy_logits"],
        target_policy_logits=learner_outputs["policy_logits"],
        actions=batch["action"], discounts=discounts, rewards=clipped_rewards,
        values=learner_outputs["baseline"], bootstrap_value=bootstrap_value)
    pg_loss = compute_policy_gradient_loss(learner_outputs["policy_logits"], batch["action"],
                                           vtrace_returns.pg_advantages)
    baseline_loss = 0.5 * compute_baseline_loss(vtrace_returns.vs - learner_outputs["baseline"])
    entropy_loss = 0.0006 * compute_entropy_loss(learner_outputs["policy_logits"])
    total_loss = pg_loss + baseline_loss + entropy_loss
    optimizer.zero_grad()
    total_loss.backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), 40.0)
    optimizer.step()
    scheduler.step()
    if step == 0:
        print("vs", vtrace_returns.vs.shape, vtrace_returns.vs.requires_grad,
              "log_rhos", vtrace_returns.log_rhos.shape, vtrace_returns.log_rhos.requires_grad)
        print("grad norm type", type(norm).__name__, norm.dtype, norm.shape)
    print(f"step {step:2d} total_loss {total_loss.item():.4f} baseline_loss "
          f"{baseline_loss.item():.4f} grad_norm {norm:.3f} lr {scheduler.get_last_lr()[0]:.6f}")

# PPO-style GAE on the last batch, and the Categorical API
with torch.no_grad():
    dist = torch.distributions.Categorical(logits=learner_outputs["policy_logits"])
    print("categorical", dist.batch_shape, dist.event_shape, dist.param_shape)
    logp = dist.log_prob(batch["action"])
    print("logp", logp.shape, logp.dtype, "entropy", dist.entropy().mean().item() > 0)
    adv, ret = compute_gae(batch["reward"], learner_outputs["baseline"], batch["done"].float(),
                           bootstrap_value)
    print("gae", adv.shape, torch.allclose(ret - adv, learner_outputs["baseline"]))
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    print("normalized adv mean/std", round(adv.mean().item(), 4), round(adv.std().item(), 4))
fixed = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -1.0]])
print("discounted", discount_cumsum(fixed, 0.9))
rev = torch.flip(fixed, [0])
print("flip cumsum", torch.flip(torch.cumsum(rev, dim=0), [0]))
ratio = torch.exp(torch.tensor([0.3, -0.5, 0.05]))
mb_adv = torch.tensor([1.0, -2.0, 0.5])
pg_loss1 = -mb_adv * ratio
pg_loss2 = -mb_adv * torch.clamp(ratio, 1 - 0.2, 1 + 0.2)
print("ppo clip", torch.max(pg_loss1, pg_loss2).mean(), ((ratio - 1.0).abs() > 0.2).float().mean())
