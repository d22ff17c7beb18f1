"""A Decision Transformer (in the style of kzl/decision-transformer's gym/decision_transformer
and min-decision-transformer): returns-to-go by discounted cumulative sums, timestep
embedding, (R, s, a) tokens stacked with torch.stack(...).permute(0, 2, 1, 3).reshape,
a GPT with a causal mask from a torch.tril buffer, action prediction from state tokens,
a padded batch with attention masks, trained on offline trajectories of a tiny 1-D
point-mass environment, then evaluated conditioned on a target return."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def discount_cumsum(x, gamma):
    discount_cumsum = np.zeros_like(x)
    discount_cumsum[-1] = x[-1]
    for t in reversed(range(x.shape[0] - 1)):
        discount_cumsum[t] = x[t] + gamma * discount_cumsum[t + 1]
    return discount_cumsum


class MaskedCausalAttention(nn.Module):
    def __init__(self, h_dim, max_T, n_heads, drop_p):
        super().__init__()
        self.n_heads = n_heads
        self.max_T = max_T
        self.q_net = nn.Linear(h_dim, h_dim)
        self.k_net = nn.Linear(h_dim, h_dim)
        self.v_net = nn.Linear(h_dim, h_dim)
        self.proj_net = nn.Linear(h_dim, h_dim)
        self.att_drop = nn.Dropout(drop_p)
        self.proj_drop = nn.Dropout(drop_p)
        ones = torch.ones((max_T, max_T))
        mask = torch.tril(ones).view(1, 1, max_T, max_T)
        # register buffer makes sure mask does not get updated during backpropagation
        self.register_buffer('mask', mask)

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape  # batch size, seq length, h_dim * n_heads
        N, D = self.n_heads, C // self.n_heads  # N = num heads, D = attention dim
        # rearrange q, k, v as (B, N, T, D)
        q = self.q_net(x).view(B, T, N, D).transpose(1, 2)
        k = self.k_net(x).view(B, T, N, D).transpose(1, 2)
        v = self.v_net(x).view(B, T, N, D).transpose(1, 2)
        # weights (B, N, T, T)
        weights = q @ k.transpose(2, 3) / math.sqrt(D)
        # causal mask applied to weights
        weights = weights.masked_fill(self.mask[..., :T, :T] == 0, float('-inf'))
        if attention_mask is not None:
            key_mask = attention_mask[:, None, None, :].bool()
            weights = weights.masked_fill(~key_mask, torch.finfo(weights.dtype).min)
        # normalize weights, all -inf -> 0 after softmax
        normalized_weights = F.softmax(weights, dim=-1)
        # attention (B, N, T, D)
        attention = self.att_drop(normalized_weights @ v)
        # gather heads and project (B, N, T, D) -> (B, T, N*D)
        attention = attention.transpose(1, 2).contiguous().view(B, T, N * D)
        out = self.proj_drop(self.proj_net(attention))
        return out


class Block(nn.Module):
    def __init__(self, h_dim, max_T, n_heads, drop_p):
        super().__init__()
        self.attention = MaskedCausalAttention(h_dim, max_T, n_heads, drop_p)
        self.mlp = nn.Sequential(
            nn.Linear(h_dim, 4 * h_dim),
            nn.GELU(),
            nn.Linear(4 * h_dim, h_dim),
            nn.Dropout(drop_p),
        )
        self.ln1 = nn.LayerNorm(h_dim)
        self.ln2 = nn.LayerNorm(h_dim)

    def forward(self, x, attention_mask=None):
        # Attention -> LayerNorm -> MLP -> LayerNorm
        x = x + self.attention(x, attention_mask)  # residual
        x = self.ln1(x)
        x = x + self.mlp(x)  # residual
        x = self.ln2(x)
        return x


class DecisionTransformer(nn.Module):
    def __init__(self, state_dim, act_dim, n_blocks, h_dim, context_len,
                 n_heads, drop_p, max_timestep=4096):
        super().__init__()
        self.state_dim = state_dim
        self.act_dim = act_dim
        self.h_dim = h_dim

        ### transformer blocks
        input_seq_len = 3 * context_len
        self.blocks = nn.ModuleList([Block(h_dim, input_seq_len, n_heads, drop_p)
                                     for _ in range(n_blocks)])

        ### projection heads (project to embedding)
        self.embed_ln = nn.LayerNorm(h_dim)
        self.embed_timestep = nn.Embedding(max_timestep, h_dim)
        self.embed_rtg = torch.nn.Linear(1, h_dim)
        self.embed_state = torch.nn.Linear(state_dim, h_dim)
        self.embed_action = torch.nn.Linear(act_dim, h_dim)

        ### prediction heads
        self.predict_rtg = torch.nn.Linear(h_dim, 1)
        self.predict_state = torch.nn.Linear(h_dim, state_dim)
        self.predict_action = nn.Sequential(*([nn.Linear(h_dim, act_dim)] + [nn.Tanh()]))

    def forward(self, timesteps, states, actions, returns_to_go, attention_mask=None):
        B, T, _ = states.shape

        time_embeddings = self.embed_timestep(timesteps)

        # time embeddings are treated similar to positional embeddings
        state_embeddings = self.embed_state(states) + time_embeddings
        action_embeddings = self.embed_action(actions) + time_embeddings
        returns_embeddings = self.embed_rtg(returns_to_go) + time_embeddings

        # stack rtg, states and actions and reshape sequence as
        # (r_0, s_0, a_0, r_1, s_1, a_1, r_2, s_2, a_2 ...)
        h = torch.stack(
            (returns_embeddings, state_embeddings, action_embeddings), dim=1
        ).permute(0, 2, 1, 3).reshape(B, 3 * T, self.h_dim)

        h = self.embed_ln(h)

        if attention_mask is not None:
            attention_mask = torch.stack(
                (attention_mask, attention_mask, attention_mask), dim=1
            ).permute(0, 2, 1).reshape(B, 3 * T)

        # transformer and prediction
        for block in self.blocks:
            h = block(h, attention_mask)

        # get h reshaped such that its size = (B x 3 x T x h_dim) and
        # h[:, 0, t] is conditioned on the input sequence r_0, s_0, a_0 ... r_t
        # h[:, 1, t] is conditioned on the input sequence r_0, s_0, a_0 ... r_t, s_t
        # h[:, 2, t] is conditioned on the input sequence r_0, s_0, a_0 ... r_t, s_t, a_t
        h = h.reshape(B, T, 3, self.h_dim).permute(0, 2, 1, 3)

        # get predictions
        return_preds = self.predict_rtg(h[:, 2])  # predict next rtg given r, s, a
        state_preds = self.predict_state(h[:, 2])  # predict next state given r, s, a
        action_preds = self.predict_action(h[:, 1])  # predict action given r, s

        return state_preds, action_preds, return_preds


# a 1-D point mass: state (position, velocity); action in [-1, 1]; reward -|position - 1|
def env_step(s, a):
    pos, vel = s
    vel = 0.9 * vel + 0.1 * a
    pos = pos + vel
    return np.array([pos, vel], dtype=np.float32), float(-abs(pos - 1.0))


def rollout(policy, rng, T=20):
    s = np.array([rng.uniform(-0.5, 0.5), 0.0], dtype=np.float32)
    states, actions, rewards = [], [], []
    for t in range(T):
        a = float(np.clip(policy(s, rng), -1, 1))
        states.append(s)
        actions.append([a])
        s, r = env_step(s, a)
        rewards.append(r)
    return dict(observations=np.array(states, dtype=np.float32),
                actions=np.array(actions, dtype=np.float32),
                rewards=np.array(rewards, dtype=np.float32))


torch.manual_seed(0)
rng = np.random.default_rng(0)
torch.set_printoptions(precision=4)

# offline data: a mix of good (proportional controller) and random behaviour
expert = lambda s, rng: 2.0 * (1.0 - s[0]) - 3.0 * s[1] + rng.normal(0, 0.1)
randomp = lambda s, rng: rng.uniform(-1, 1)
trajectories = [rollout(expert if i % 2 == 0 else randomp, rng) for i in range(40)]
returns = np.array([t['rewards'].sum() for t in trajectories])
print(f"trajectories {len(trajectories)} return mean {returns.mean():.3f} "
      f"max {returns.max():.3f} min {returns.min():.3f}")
print("rtg of first", np.round(discount_cumsum(trajectories[0]['rewards'], 1.0)[:5], 4))

states = np.concatenate([t['observations'] for t in trajectories], axis=0)
state_mean, state_std = states.mean(axis=0), states.std(axis=0) + 1e-6
print("state mean", np.round(state_mean, 4), "std", np.round(state_std, 4))
rtg_scale = 10.0
context_len = 5
state_dim, act_dim = 2, 1


def get_batch(batch_size):
    s, a, rtg, ts, mask = [], [], [], [], []
    for _ in range(batch_size):
        traj = trajectories[rng.integers(len(trajectories))]
        si = rng.integers(0, traj['rewards'].shape[0] - 1)
        ss = traj['observations'][si:si + context_len]
        aa = traj['actions'][si:si + context_len]
        rr = discount_cumsum(traj['rewards'][si:], 1.0)[:ss.shape[0]].reshape(-1, 1)
        tlen = ss.shape[0]
        # left padding as in the original repo
        s.append(np.concatenate([np.zeros((context_len - tlen, state_dim)),
                                 (ss - state_mean) / state_std]))
        a.append(np.concatenate([np.ones((context_len - tlen, act_dim)) * -10., aa]))
        rtg.append(np.concatenate([np.zeros((context_len - tlen, 1)), rr]) / rtg_scale)
        ts.append(np.concatenate([np.zeros(context_len - tlen), np.arange(si, si + tlen)]))
        mask.append(np.concatenate([np.zeros(context_len - tlen), np.ones(tlen)]))
    s = torch.from_numpy(np.stack(s)).to(dtype=torch.float32)
    a = torch.from_numpy(np.stack(a)).to(dtype=torch.float32)
    rtg = torch.from_numpy(np.stack(rtg)).to(dtype=torch.float32)
    ts = torch.from_numpy(np.stack(ts)).to(dtype=torch.long)
    mask = torch.from_numpy(np.stack(mask))
    return ts, s, a, rtg, mask


model = DecisionTransformer(state_dim=state_dim, act_dim=act_dim, n_blocks=2, h_dim=32,
                            context_len=context_len, n_heads=2, drop_p=0.1, max_timestep=64)
print(model.blocks[0])
print("parameters", sum(p.numel() for p in model.parameters()))
print("mask buffer", model.blocks[0].attention.mask.shape, model.blocks[0].attention.mask[0, 0, :4, :4])

ts, s, a, rtg, mask = get_batch(8)
print("batch", ts.shape, s.shape, a.shape, rtg.shape, mask.shape, ts.dtype, mask.dtype)
print("padded mask rows", mask[:3])

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
warmup_steps = 10
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda steps: min((steps + 1) / warmup_steps, 1))
model.train()
for step in range(40):
    ts, s, a, rtg, mask = get_batch(16)
    action_target = torch.clone(a).detach()
    state_preds, action_preds, return_preds = model(ts, s, a, rtg, attention_mask=mask)
    # only consider non padded elements
    action_preds = action_preds.view(-1, act_dim)[mask.view(-1,) > 0]
    action_target = action_target.view(-1, act_dim)[mask.view(-1,) > 0]
    action_loss = F.mse_loss(action_preds, action_target, reduction='mean')
    optimizer.zero_grad()
    action_loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    optimizer.step()
    scheduler.step()
    if step % 10 == 0 or step == 39:
        print(f"step {step:2d} action loss {action_loss.item():.5f} lr {scheduler.get_last_lr()[0]:.6f}")

# evaluation: condition on a high target return, feed back predicted actions
model.eval()
with torch.no_grad():
    for target in (-2.0, -8.0):
        s_np = np.array([0.0, 0.0], dtype=np.float32)
        states_t = torch.zeros((1, 20, state_dim))
        actions_t = torch.zeros((1, 20, act_dim))
        rtg_t = torch.zeros((1, 20, 1))
        timesteps = torch.arange(start=0, end=20, step=1).repeat(1, 1)
        running_rtg, total = target / rtg_scale, 0.0
        for t in range(20):
            states_t[0, t] = torch.from_numpy((s_np - state_mean) / state_std)
            rtg_t[0, t] = running_rtg
            lo = max(0, t - context_len + 1)
            _, act_preds, _ = model(timesteps[:, lo:t + 1], states_t[:, lo:t + 1],
                                    actions_t[:, lo:t + 1], rtg_t[:, lo:t + 1])
            act = act_preds[0, -1].detach()
            actions_t[0, t] = act
            s_np, r = env_step(s_np, act.item())
            total += r
            running_rtg = running_rtg - (r / rtg_scale)
        print(f"target {target} achieved return finite {math.isfinite(total)}")
