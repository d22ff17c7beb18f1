"""TD3 and DDPG (in the style of sfujim/TD3's TD3.py, DDPG.py and utils.ReplayBuffer):
actor and twin critics, target networks by copy.deepcopy, soft updates over
zip(parameters()) with param.data.copy_(tau * param.data + (1 - tau) * target_param.data)
(TD3) and lerp_ / mul_ / add_ (DDPG), a NumPy replay buffer, target policy smoothing
noise (randn_like(action) * policy_noise).clamp(-noise_clip, noise_clip), delayed policy
updates, state_dict save/load; on a tiny inline 1-D "reach the goal" environment."""
import copy
import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ReplayBuffer(object):
    def __init__(self, state_dim, action_dim, max_size=int(1e6)):
        self.max_size = max_size
        self.ptr = 0
        self.size = 0

        self.state = np.zeros((max_size, state_dim))
        self.action = np.zeros((max_size, action_dim))
        self.next_state = np.zeros((max_size, state_dim))
        self.reward = np.zeros((max_size, 1))
        self.not_done = np.zeros((max_size, 1))

        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def add(self, state, action, next_state, reward, done):
        self.state[self.ptr] = state
        self.action[self.ptr] = action
        self.next_state[self.ptr] = next_state
        self.reward[self.ptr] = reward
        self.not_done[self.ptr] = 1. - done

        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def sample(self, batch_size):
        ind = np.random.randint(0, self.size, size=batch_size)

        return (
            torch.FloatTensor(self.state[ind]).to(self.device),
            torch.FloatTensor(self.action[ind]).to(self.device),
            torch.FloatTensor(self.next_state[ind]).to(self.device),
            torch.FloatTensor(self.reward[ind]).to(self.device),
            torch.FloatTensor(self.not_done[ind]).to(self.device)
        )


class Actor(nn.Module):
    def __init__(self, state_dim, action_dim, max_action):
        super(Actor, self).__init__()

        self.l1 = nn.Linear(state_dim, 64)
        self.l2 = nn.Linear(64, 64)
        self.l3 = nn.Linear(64, action_dim)

        self.max_action = max_action

    def forward(self, state):
        a = F.relu(self.l1(state))
        a = F.relu(self.l2(a))
        return self.max_action * torch.tanh(self.l3(a))


class Critic(nn.Module):
    def __init__(self, state_dim, action_dim):
        super(Critic, self).__init__()

        # Q1 architecture
        self.l1 = nn.Linear(state_dim + action_dim, 64)
        self.l2 = nn.Linear(64, 64)
        self.l3 = nn.Linear(64, 1)

        # Q2 architecture
        self.l4 = nn.Linear(state_dim + action_dim, 64)
        self.l5 = nn.Linear(64, 64)
        self.l6 = nn.Linear(64, 1)

    def forward(self, state, action):
        sa = torch.cat([state, action], 1)

        q1 = F.relu(self.l1(sa))
        q1 = F.relu(self.l2(q1))
        q1 = self.l3(q1)

        q2 = F.relu(self.l4(sa))
        q2 = F.relu(self.l5(q2))
        q2 = self.l6(q2)
        return q1, q2

    def Q1(self, state, action):
        sa = torch.cat([state, action], 1)

        q1 = F.relu(self.l1(sa))
        q1 = F.relu(self.l2(q1))
        q1 = self.l3(q1)
        return q1


class TD3(object):
    def __init__(self, state_dim, action_dim, max_action, discount=0.99, tau=0.005,
                 policy_noise=0.2, noise_clip=0.5, policy_freq=2):
        self.actor = Actor(state_dim, action_dim, max_action).to(device)
        self.actor_target = copy.deepcopy(self.actor)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-4)

        self.critic = Critic(state_dim, action_dim).to(device)
        self.critic_target = copy.deepcopy(self.critic)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=3e-4)

        self.max_action = max_action
        self.discount = discount
        self.tau = tau
        self.policy_noise = policy_noise
        self.noise_clip = noise_clip
        self.policy_freq = policy_freq

        self.total_it = 0

    def select_action(self, state):
        state = torch.FloatTensor(state.reshape(1, -1)).to(device)
        return self.actor(state).cpu().data.numpy().flatten()

    def train(self, replay_buffer, batch_size=256):
        self.total_it += 1

        # Sample replay buffer
        state, action, next_state, reward, not_done = replay_buffer.sample(batch_size)

        with torch.no_grad():
            # Select action according to policy and add clipped noise
            noise = (
                torch.randn_like(action) * self.policy_noise
            ).clamp(-self.noise_clip, self.noise_clip)

            next_action = (
                self.actor_target(next_state) + noise
            ).clamp(-self.max_action, self.max_action)

            # Compute the target Q value
            target_Q1, target_Q2 = self.critic_target(next_state, next_action)
            target_Q = torch.min(target_Q1, target_Q2)
            target_Q = reward + not_done * self.discount * target_Q

        # Get current Q estimates
        current_Q1, current_Q2 = self.critic(state, action)

        # Compute critic loss
        critic_loss = F.mse_loss(current_Q1, target_Q) + F.mse_loss(current_Q2, target_Q)

        # Optimize the critic
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()

        actor_loss = None
        # Delayed policy updates
        if self.total_it % self.policy_freq == 0:

            # Compute actor losse
            actor_loss = -self.critic.Q1(state, self.actor(state)).mean()

            # Optimize the actor
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()

            # Update the frozen target models
            for param, target_param in zip(self.critic.parameters(), self.critic_target.parameters()):
                target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)

            for param, target_param in zip(self.actor.parameters(), self.actor_target.parameters()):
                target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
        return critic_loss.item(), None if actor_loss is None else actor_loss.item()

    def save(self, f):
        torch.save({"critic": self.critic.state_dict(),
                    "critic_optimizer": self.critic_optimizer.state_dict(),
                    "actor": self.actor.state_dict(),
                    "actor_optimizer": self.actor_optimizer.state_dict()}, f)

    def load(self, f):
        ckpt = torch.load(f)
        self.critic.load_state_dict(ckpt["critic"])
        self.critic_optimizer.load_state_dict(ckpt["critic_optimizer"])
        self.critic_target = copy.deepcopy(self.critic)
        self.actor.load_state_dict(ckpt["actor"])
        self.actor_optimizer.load_state_dict(ckpt["actor_optimizer"])
        self.actor_target = copy.deepcopy(self.actor)


class DDPGCritic(nn.Module):
    def __init__(self, state_dim, action_dim):
        super().__init__()
        self.l1 = nn.Linear(state_dim, 64)
        self.l2 = nn.Linear(64 + action_dim, 64)
        self.l3 = nn.Linear(64, 1)

    def forward(self, state, action):
        q = F.relu(self.l1(state))
        q = F.relu(self.l2(torch.cat([q, action], 1)))
        return self.l3(q)


class DDPG(object):
    def __init__(self, state_dim, action_dim, max_action, discount=0.99, tau=0.005):
        self.actor = Actor(state_dim, action_dim, max_action).to(device)
        self.actor_target = copy.deepcopy(self.actor)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=1e-4)

        self.critic = DDPGCritic(state_dim, action_dim).to(device)
        self.critic_target = copy.deepcopy(self.critic)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), weight_decay=1e-2)

        self.discount = discount
        self.tau = tau

    @torch.no_grad()
    def soft_update(self, net, target):
        for p, tp in zip(net.parameters(), target.parameters()):
            tp.lerp_(p, self.tau)

    def train(self, replay_buffer, batch_size=64):
        state, action, next_state, reward, not_done = replay_buffer.sample(batch_size)
        target_Q = self.critic_target(next_state, self.actor_target(next_state))
        target_Q = reward + (not_done * self.discount * target_Q).detach()
        current_Q = self.critic(state, action)
        critic_loss = F.mse_loss(current_Q, target_Q)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()
        actor_loss = -self.critic(state, self.actor(state)).mean()
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        self.actor_optimizer.step()
        self.soft_update(self.critic, self.critic_target)
        with torch.no_grad():  # the same soft update, the older mul_/add_ way
            for p, tp in zip(self.actor.parameters(), self.actor_target.parameters()):
                tp.mul_(1 - self.tau).add_(p, alpha=self.tau)
        return critic_loss.item(), actor_loss.item()


class ReachEnv:
    """Position x in [-1, 1], goal g; action a in [-1, 1] moves x by 0.2 a; reward -|x - g|."""
    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)

    def reset(self):
        self.x = self.rng.uniform(-1, 1)
        self.g = self.rng.uniform(-0.5, 0.5)
        self.t = 0
        return np.array([self.x, self.g], dtype=np.float32)

    def step(self, a):
        self.x = float(np.clip(self.x + 0.2 * float(a[0]), -1, 1))
        self.t += 1
        reward = -abs(self.x - self.g)
        done = self.t >= 10
        return np.array([self.x, self.g], dtype=np.float32), reward, done


def evaluate(policy, seed, episodes=3):
    env = ReachEnv(seed + 100)
    total = 0.0
    for _ in range(episodes):
        state, done = env.reset(), False
        while not done:
            state, reward, done = env.step(policy.select_action(state) if hasattr(policy, "select_action")
                                           else policy.actor(torch.FloatTensor(state.reshape(1, -1))).detach().numpy().flatten())
            total += reward
    return total / episodes


torch.manual_seed(0)
np.random.seed(0)
torch.set_printoptions(precision=4)
state_dim, action_dim, max_action = 2, 1, 1.0
policy = TD3(state_dim, action_dim, max_action, policy_noise=0.2 * max_action,
             noise_clip=0.5 * max_action, policy_freq=2)
print(policy.actor)
print(policy.critic)
print("target is a copy", policy.actor_target is not policy.actor,
      all(torch.equal(p, q) for p, q in zip(policy.actor.parameters(), policy.actor_target.parameters())))
print("target params require grad", next(policy.actor_target.parameters()).requires_grad)

env = ReachEnv(0)
replay_buffer = ReplayBuffer(state_dim, action_dim, max_size=2000)
state, done = env.reset(), False
print("initial action", policy.select_action(state))
expl_noise = 0.1
for t in range(300):
    if t < 100:
        action = np.random.uniform(-max_action, max_action, size=action_dim)
    else:
        action = (policy.select_action(np.array(state))
                  + np.random.normal(0, max_action * expl_noise, size=action_dim)
                  ).clip(-max_action, max_action)
    next_state, reward, done = env.step(action)
    replay_buffer.add(state, action, next_state, reward, float(done))
    state = next_state
    if done:
        state, done = env.reset(), False
    if t >= 100:
        critic_loss, actor_loss = policy.train(replay_buffer, batch_size=32)
        if t % 40 == 0 or t == 299:
            print(f"td3 it {policy.total_it:3d} critic loss {critic_loss:.5f} actor loss {actor_loss}")

print("buffer", replay_buffer.size, replay_buffer.ptr, replay_buffer.state.dtype)
s, a, ns, r, nd = replay_buffer.sample(4)
print("sample", s.shape, a.dtype, r.shape, nd.sum().item() <= 4)
print("target moved", not torch.equal(policy.actor.l3.weight, policy.actor_target.l3.weight))
noise = (torch.randn(1000, 1) * 0.2).clamp(-0.5, 0.5)
print("noise within clip", noise.abs().max().item() <= 0.5)

buf = io.BytesIO()
policy.save(buf)
buf.seek(0)
clone = TD3(state_dim, action_dim, max_action)
clone.load(buf)
probe = torch.tensor([[0.3, -0.2], [-0.8, 0.1]])
print("reloaded actor agrees", torch.allclose(clone.actor(probe), policy.actor(probe)))
print("optimizer state steps", clone.actor_optimizer.state_dict()["state"][0]["step"])
print(f"td3 eval return finite {np.isfinite(evaluate(policy, 0))}")

ddpg = DDPG(state_dim, action_dim, max_action)
print(ddpg.critic)
before = ddpg.actor_target.l1.weight.clone()
for it in range(60):
    critic_loss, actor_loss = ddpg.train(replay_buffer, batch_size=32)
    if it % 20 == 0 or it == 59:
        print(f"ddpg it {it:2d} critic loss {critic_loss:.5f} actor loss {actor_loss:.5f}")
print("soft update moved by tau", (ddpg.actor_target.l1.weight - before).abs().max().item() < 0.05)
