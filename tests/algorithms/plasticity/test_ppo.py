"""PPO pieces against hand computations, and a short run that learns CartPole."""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest
import torch

from raystudy.algorithms.plasticity import Compose, FullReset, hessian_eigenvalues
from raystudy.algorithms.plasticity.envs import make_env
from raystudy.algorithms.plasticity.ppo import (
    PPO,
    ActorCritic,
    PPOConfig,
    Rollout,
    gae,
    ppo_loss,
)


def test_gae_matches_a_hand_computed_episode_boundary():
    # one env, 3 steps; the episode ends after step 1 (so obs 2 starts a new episode)
    rewards = torch.tensor([[1.0], [2.0], [3.0]])
    values = torch.tensor([[0.5], [1.0], [1.5]])
    dones = torch.tensor([[0.0], [0.0], [1.0]])
    g, lam = 0.9, 0.8
    adv = gae(rewards, values, dones, torch.tensor([2.0]), torch.tensor([0.0]), g, lam)
    d2 = 3.0 + g * 2.0 - 1.5            # bootstraps from the next value
    d1 = 2.0 + 0.0 - 1.0                # step 1 ended the episode
    d0 = 1.0 + g * 1.0 - 0.5
    expected = [d0 + g * lam * d1, d1, d2]
    assert adv.squeeze(1).tolist() == pytest.approx(expected)


def test_ppo_loss_at_the_old_policy_is_value_and_entropy_only():
    torch.manual_seed(0)
    agent = ActorCritic(4, gym.spaces.Discrete(2), (8,))
    obs = torch.randn(16, 4)
    with torch.no_grad():
        head, log_std, value = agent(obs)
        dist = torch.distributions.Categorical(logits=head)
        actions = dist.sample()
        batch = Rollout(obs, actions, dist.log_prob(actions), value, torch.randn(16),
                        torch.randn(16))
        config = PPOConfig(ent_coef=0.01, vf_coef=0.5)
        loss = ppo_loss(agent(obs), batch, config)
    # ratio = 1 and normalised advantages have mean 0: the policy term vanishes
    expected = -0.01 * dist.entropy().mean() + 0.5 * 0.5 * ((value - batch.returns) ** 2).mean()
    assert float(loss) == pytest.approx(float(expected), abs=1e-6)


def test_continuous_agent_and_hessian_of_the_ppo_loss():
    torch.manual_seed(1)
    agent = ActorCritic(3, gym.spaces.Box(-1, 1, (2,)), (6,)).double()
    obs = torch.randn(20, 3, dtype=torch.float64)
    with torch.no_grad():
        head, log_std, value = agent(obs)
        assert log_std.shape == head.shape == (20, 2)
        dist = torch.distributions.Independent(torch.distributions.Normal(head, log_std.exp()), 1)
        actions = dist.sample()
        batch = Rollout(obs, actions, dist.log_prob(actions), value,
                        torch.randn(20, dtype=torch.float64), torch.randn(20, dtype=torch.float64))
    loss_fn = functools.partial(ppo_loss, config=PPOConfig())
    dense = hessian_eigenvalues(agent, loss_fn, obs, batch, k=3, method="dense")
    lanczos = hessian_eigenvalues(agent, loss_fn, obs, batch, k=3,
                                  iterations=sum(p.numel() for p in agent.parameters()),
                                  generator=torch.Generator().manual_seed(0))
    assert torch.allclose(dense, lanczos, atol=1e-8) and float(dense[0]) > 0
    agent.log_std.data.fill_(0.7)
    FullReset(seed=1).task_start(agent, torch.optim.SGD(agent.parameters(), 0.1), 2)
    assert torch.equal(agent.log_std.data, torch.zeros(2, dtype=torch.float64))


def test_ppo_learns_cartpole_in_a_few_thousand_steps():
    torch.manual_seed(0)
    envs = gym.vector.SyncVectorEnv(
        [functools.partial(make_env, "CartPole-v1", 0, 1.0, False)] * 4,
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    agent = ActorCritic(4, envs.single_action_space, (32, 32))
    ppo = PPO(agent, envs, PPOConfig(lr=2.5e-3), Compose([]), seed=0)
    returns = []
    for _ in range(10):  # 10 x 512 steps
        ppo.iterate()
        returns.append(float(np.mean(ppo.episode_returns)))
        ppo.episode_returns = []
    envs.close()
    start, end = np.mean(returns[:2]), np.mean(returns[-2:])
    assert start < 40 and end > 2.5 * start  # random play lasts ~22 steps
