"""A2C with generalized advantage estimation as ikostrikov's pytorch-a2c-ppo-acktr-gail
writes it: an orthogonally initialised MLPBase (separate actor and critic towers), a
FixedCategorical subclass of torch.distributions.Categorical, a RolloutStorage of
tensors whose compute_returns runs GAE in a reversed loop with episode masks, the A2C
loss with `advantages.detach()`, an entropy bonus and clip_grad_norm_, RMSprop(eps, alpha)
— on 8 vectorised copies of the inline CartPole instead of gym.
"""
import argparse
import time
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

from _cartpole import CartPoleEnv


class FixedCategorical(torch.distributions.Categorical):
    def sample(self):
        return super().sample().unsqueeze(-1)

    def log_probs(self, actions):
        return (
            super()
            .log_prob(actions.squeeze(-1))
            .view(actions.size(0), -1)
            .sum(-1)
            .unsqueeze(-1)
        )

    def mode(self):
        return self.probs.argmax(dim=-1, keepdim=True)


def init(module, weight_init, bias_init, gain=1):
    weight_init(module.weight.data, gain=gain)
    bias_init(module.bias.data)
    return module


class Categorical(nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super(Categorical, self).__init__()

        init_ = lambda m: init(
            m,
            nn.init.orthogonal_,
            lambda x: nn.init.constant_(x, 0),
            gain=0.01)

        self.linear = init_(nn.Linear(num_inputs, num_outputs))

    def forward(self, x):
        x = self.linear(x)
        return FixedCategorical(logits=x)


class MLPBase(nn.Module):
    def __init__(self, num_inputs, hidden_size=64):
        super(MLPBase, self).__init__()

        init_ = lambda m: init(m, nn.init.orthogonal_, lambda x: nn.init.
                               constant_(x, 0), np.sqrt(2))

        self.actor = nn.Sequential(
            init_(nn.Linear(num_inputs, hidden_size)), nn.Tanh(),
            init_(nn.Linear(hidden_size, hidden_size)), nn.Tanh())

        self.critic = nn.Sequential(
            init_(nn.Linear(num_inputs, hidden_size)), nn.Tanh(),
            init_(nn.Linear(hidden_size, hidden_size)), nn.Tanh())

        self.critic_linear = init_(nn.Linear(hidden_size, 1))

        self.train()

    @property
    def output_size(self):
        return self.actor[-2].out_features

    def forward(self, inputs):
        hidden_critic = self.critic(inputs)
        hidden_actor = self.actor(inputs)

        return self.critic_linear(hidden_critic), hidden_actor


class Policy(nn.Module):
    def __init__(self, obs_shape, num_actions):
        super(Policy, self).__init__()
        self.base = MLPBase(obs_shape[0])
        self.dist = Categorical(self.base.output_size, num_actions)

    def act(self, inputs, deterministic=False):
        value, actor_features = self.base(inputs)
        dist = self.dist(actor_features)

        if deterministic:
            action = dist.mode()
        else:
            action = dist.sample()

        action_log_probs = dist.log_probs(action)
        return value, action, action_log_probs

    def get_value(self, inputs):
        value, _ = self.base(inputs)
        return value

    def evaluate_actions(self, inputs, action):
        value, actor_features = self.base(inputs)
        dist = self.dist(actor_features)

        action_log_probs = dist.log_probs(action)
        dist_entropy = dist.entropy().mean()

        return value, action_log_probs, dist_entropy


class RolloutStorage(object):
    def __init__(self, num_steps, num_processes, obs_shape):
        self.obs = torch.zeros(num_steps + 1, num_processes, *obs_shape)
        self.rewards = torch.zeros(num_steps, num_processes, 1)
        self.value_preds = torch.zeros(num_steps + 1, num_processes, 1)
        self.returns = torch.zeros(num_steps + 1, num_processes, 1)
        self.action_log_probs = torch.zeros(num_steps, num_processes, 1)
        self.actions = torch.zeros(num_steps, num_processes, 1).long()
        self.masks = torch.ones(num_steps + 1, num_processes, 1)
        self.num_steps = num_steps
        self.step = 0

    def insert(self, obs, actions, action_log_probs, value_preds, rewards, masks):
        self.obs[self.step + 1].copy_(obs)
        self.actions[self.step].copy_(actions)
        self.action_log_probs[self.step].copy_(action_log_probs)
        self.value_preds[self.step].copy_(value_preds)
        self.rewards[self.step].copy_(rewards)
        self.masks[self.step + 1].copy_(masks)
        self.step = (self.step + 1) % self.num_steps

    def after_update(self):
        self.obs[0].copy_(self.obs[-1])
        self.masks[0].copy_(self.masks[-1])

    def compute_returns(self, next_value, use_gae, gamma, gae_lambda):
        if use_gae:
            self.value_preds[-1] = next_value
            gae = 0
            for step in reversed(range(self.rewards.size(0))):
                delta = self.rewards[step] + gamma * self.value_preds[
                    step + 1] * self.masks[step + 1] - self.value_preds[step]
                gae = delta + gamma * gae_lambda * self.masks[step + 1] * gae
                self.returns[step] = gae + self.value_preds[step]
        else:
            self.returns[-1] = next_value
            for step in reversed(range(self.rewards.size(0))):
                self.returns[step] = self.returns[step + 1] * \
                    gamma * self.masks[step + 1] + self.rewards[step]


class A2C():
    def __init__(self, actor_critic, value_loss_coef, entropy_coef, lr=None, eps=None,
                 alpha=None, max_grad_norm=None):
        self.actor_critic = actor_critic
        self.value_loss_coef = value_loss_coef
        self.entropy_coef = entropy_coef
        self.max_grad_norm = max_grad_norm
        self.optimizer = optim.RMSprop(actor_critic.parameters(), lr, eps=eps, alpha=alpha)

    def update(self, rollouts):
        obs_shape = rollouts.obs.size()[2:]
        action_shape = rollouts.actions.size()[-1]
        num_steps, num_processes, _ = rollouts.rewards.size()

        values, action_log_probs, dist_entropy = self.actor_critic.evaluate_actions(
            rollouts.obs[:-1].view(-1, *obs_shape),
            rollouts.actions.view(-1, action_shape))

        values = values.view(num_steps, num_processes, 1)
        action_log_probs = action_log_probs.view(num_steps, num_processes, 1)

        advantages = rollouts.returns[:-1] - values
        value_loss = advantages.pow(2).mean()

        action_loss = -(advantages.detach() * action_log_probs).mean()

        self.optimizer.zero_grad()
        (value_loss * self.value_loss_coef + action_loss -
         dist_entropy * self.entropy_coef).backward()

        nn.utils.clip_grad_norm_(self.actor_critic.parameters(), self.max_grad_norm)

        self.optimizer.step()

        return value_loss.item(), action_loss.item(), dist_entropy.item()


class VecCartPole:
    """gym's SyncVectorEnv in miniature: auto-reset, float tensors out."""
    def __init__(self, n, seed):
        self.envs = [CartPoleEnv() for _ in range(n)]
        for i, env in enumerate(self.envs):
            env.reset(seed=seed + i)
        self.returns = [0.0] * n

    def reset(self):
        return torch.tensor([env.reset()[0] for env in self.envs], dtype=torch.float32)

    def step(self, actions):
        obs, rewards, dones, infos = [], [], [], []
        for i, (env, a) in enumerate(zip(self.envs, actions.view(-1).tolist())):
            o, r, terminated, truncated, _ = env.step(a)
            self.returns[i] += r
            info = {}
            if terminated or truncated:
                info['episode'] = {'r': self.returns[i]}
                self.returns[i] = 0.0
                o, _ = env.reset()
            obs.append(o)
            rewards.append([r])
            dones.append(terminated or truncated)
            infos.append(info)
        return (torch.tensor(obs, dtype=torch.float32), torch.tensor(rewards), dones, infos)


def main():
    parser = argparse.ArgumentParser(description='A2C')
    parser.add_argument('--lr', type=float, default=2e-3)
    parser.add_argument('--eps', type=float, default=1e-5)
    parser.add_argument('--alpha', type=float, default=0.99)
    parser.add_argument('--gamma', type=float, default=0.99)
    parser.add_argument('--use-gae', action='store_false', default=True)
    parser.add_argument('--gae-lambda', type=float, default=0.95)
    parser.add_argument('--entropy-coef', type=float, default=0.01)
    parser.add_argument('--value-loss-coef', type=float, default=0.5)
    parser.add_argument('--max-grad-norm', type=float, default=0.5)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--num-processes', type=int, default=8)
    parser.add_argument('--num-steps', type=int, default=16)
    parser.add_argument('--log-interval', type=int, default=5)
    parser.add_argument('--num-env-steps', type=int, default=4000)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    envs = VecCartPole(args.num_processes, args.seed)
    obs_shape = (4,)
    actor_critic = Policy(obs_shape, 2)
    print(actor_critic)
    agent = A2C(actor_critic, args.value_loss_coef, args.entropy_coef, lr=args.lr,
                eps=args.eps, alpha=args.alpha, max_grad_norm=args.max_grad_norm)
    rollouts = RolloutStorage(args.num_steps, args.num_processes, obs_shape)

    obs = envs.reset()
    rollouts.obs[0].copy_(obs)

    episode_rewards = deque(maxlen=20)

    start = time.time()
    num_updates = int(args.num_env_steps) // args.num_steps // args.num_processes
    for j in range(num_updates):
        for step in range(args.num_steps):
            # Sample actions
            with torch.no_grad():
                value, action, action_log_prob = actor_critic.act(rollouts.obs[step])

            # Obser reward and next obs
            obs, reward, done, infos = envs.step(action)

            for info in infos:
                if 'episode' in info.keys():
                    episode_rewards.append(info['episode']['r'])

            # If done then clean the history of observations.
            masks = torch.FloatTensor([[0.0] if done_ else [1.0] for done_ in done])
            rollouts.insert(obs, action, action_log_prob, value, reward, masks)

        with torch.no_grad():
            next_value = actor_critic.get_value(rollouts.obs[-1]).detach()

        rollouts.compute_returns(next_value, args.use_gae, args.gamma, args.gae_lambda)

        value_loss, action_loss, dist_entropy = agent.update(rollouts)

        rollouts.after_update()

        if j % args.log_interval == 0 and len(episode_rewards) > 1:
            total_num_steps = (j + 1) * args.num_processes * args.num_steps
            end = time.time()
            print(
                "Updates {}, num timesteps {}, FPS {} \n Last {} training episodes: mean/median reward {:.1f}/{:.1f}, min/max reward {:.1f}/{:.1f}"
                .format(j, total_num_steps,
                        int(total_num_steps / (end - start)),
                        len(episode_rewards), np.mean(episode_rewards),
                        np.median(episode_rewards), np.min(episode_rewards),
                        np.max(episode_rewards)))
            print(f" entropy {dist_entropy:.4f} value loss {value_loss:.4f} "
                  f"action loss {action_loss:.4f}")
    with torch.no_grad():
        probe = torch.zeros(1, 4)
        value, action, logp = actor_critic.act(probe, deterministic=True)
    print('greedy action at the upright state', action.tolist(), 'value', value.shape,
          'log prob', logp.shape)


if __name__ == "__main__":
    main()
