"""A tiny CartPole-v1 written inline (the classic-control equations gym uses), so the RL
examples run without gym. Imported by reinforce.py and actor_critic.py."""
import math
import random


class CartPoleEnv:
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def __init__(self, max_episode_steps=200):
        self.total_mass = self.masspole + self.masscart
        self.polemass_length = self.masspole * self.length
        self.max_episode_steps = max_episode_steps
        self.rng = random.Random()
        self.spec = type('Spec', (), {'reward_threshold': 195.0})()

    def reset(self, seed=None):
        if seed is not None:
            self.rng.seed(seed)
        self.state = [self.rng.uniform(-0.05, 0.05) for _ in range(4)]
        self.steps = 0
        return list(self.state), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + self.polemass_length * theta_dot ** 2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta ** 2 / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = [x, x_dot, theta, theta_dot]
        self.steps += 1
        terminated = (x < -self.x_threshold or x > self.x_threshold
                      or theta < -self.theta_threshold_radians or theta > self.theta_threshold_radians)
        truncated = self.steps >= self.max_episode_steps
        return list(self.state), 1.0, terminated, truncated, {}


def make(name):
    assert name == 'CartPole-v1'
    return CartPoleEnv()
