r"""PPO for continual reinforcement learning, in the style of CleanRL's ppo.py.

Schulman et al. 2017, "Proximal Policy Optimization Algorithms"; the details follow
CleanRL (vwxyzjn/cleanrl ``ppo.py`` and ``ppo_continuous_action.py``): a rollout of
``num_steps`` steps in each of ``num_envs`` environments, generalized advantage
estimation, then ``update_epochs`` passes over ``num_minibatches`` shuffled minibatches.

.. math::
    \delta_t &= r_t + \gamma V(s_{t+1})(1 - d_{t+1}) - V(s_t), \qquad
    A_t = \delta_t + \gamma\lambda (1 - d_{t+1}) A_{t+1}, \qquad R_t = A_t + V(s_t), \\
    \rho_t &= \pi_\theta(a_t|s_t) / \pi_{\text{old}}(a_t|s_t), \qquad
    L^{pg} = \mathbb{E}\max\big(-\hat A_t \rho_t,\ -\hat A_t \operatorname{clip}(\rho_t,
    1-\epsilon, 1+\epsilon)\big), \\
    L^{v} &= \tfrac12 \mathbb{E}\max\big((V-R)^2, (V_{\text{old}} + \operatorname{clip}(V -
    V_{\text{old}}, \pm\epsilon) - R)^2\big), \qquad
    L = L^{pg} - c_{ent}\,\mathbb{E}[\mathcal H(\pi_\theta)] + c_v L^v,

with :math:`\hat A` the advantages normalised per minibatch, :math:`d` the done flags
(termination or truncation, as CleanRL), :math:`\gamma` ``gamma``, :math:`\lambda`
``gae_lambda``, :math:`\epsilon` ``clip_coef``. Actor and critic are separate
:class:`~.models.MLP` s (ReLU, as Dohare et al.'s Slippery-Ant PPO); a discrete action
space gets a categorical policy, a continuous one a Gaussian with a state-independent
log-std parameter (actions clipped to the bounds in the environment, not in the
log-probability, as CleanRL). The learning rate is constant: a continual learner has no
end to anneal towards.

Continual use: ``PPO.iterate()`` collects one rollout and updates; the caller switches
tasks (``env.set_task``) and calls the intervention's ``task_start``. The intervention's
``penalty`` gets the minibatch's hidden features (actor then critic), ``after_step``
the minibatch's observations, as in the supervised loop, and ``scoring_data`` each
rollout's observations (ReDo scores dormancy on them). ``ppo_loss`` has the
``loss_fn(model(inputs), targets)`` form, so the Hessian of the PPO loss on a rollout is
``hessian_eigenvalues(agent, functools.partial(ppo_loss, config=c), obs, rollout)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from .interventions import Intervention
from .models import MLP, UnitPair


@dataclass
class PPOConfig:
    num_envs: int = 4
    """Parallel environments."""
    num_steps: int = 128
    """Steps per environment per rollout."""
    update_epochs: int = 4
    """Passes over each rollout."""
    num_minibatches: int = 4
    """Minibatches per pass."""
    lr: float = 2.5e-4
    """Adam learning rate."""
    gamma: float = 0.99
    """Discount."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_coef: float = 0.2
    """Ratio (and value) clip epsilon."""
    ent_coef: float = 0.01
    """Entropy bonus c_ent."""
    vf_coef: float = 0.5
    """Value loss weight c_v."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""

    @property
    def batch_size(self) -> int:
        """Derived: transitions per rollout."""
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        """Derived: transitions per minibatch."""
        return self.batch_size // self.num_minibatches


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs; ``forward`` gives (policy head, log-std, value)."""

    def __init__(self, obs_dim: int, action_space: gym.Space, hidden: Sequence[int],
                 layernorm: bool = False) -> None:
        super().__init__()
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        out = int(action_space.n) if self.discrete else int(np.prod(action_space.shape))
        self.actor = MLP(obs_dim, hidden, out, layernorm=layernorm)
        self.critic = MLP(obs_dim, hidden, 1, layernorm=layernorm)
        self.log_std = None if self.discrete else nn.Parameter(torch.zeros(out))

    def reset_parameters(self) -> None:
        """The log-std back to 0 (the MLPs' layers reset themselves)."""
        if self.log_std is not None:
            nn.init.zeros_(self.log_std)

    def forward_features(self, obs: Tensor) -> tuple[tuple, list[Tensor]]:
        head, actor_features = self.actor.forward_features(obs)
        value, critic_features = self.critic.forward_features(obs)
        log_std = None if self.discrete else self.log_std.expand_as(head)
        return (head, log_std, value.squeeze(-1)), actor_features + critic_features

    def forward(self, obs: Tensor) -> tuple:
        return self.forward_features(obs)[0]

    def unit_pairs(self) -> list[UnitPair]:
        return self.actor.unit_pairs() + self.critic.unit_pairs()


def distribution(head: Tensor, log_std: Tensor | None) -> torch.distributions.Distribution:
    """Categorical over logits, or a diagonal Gaussian (independent per action dimension)."""
    if log_std is None:
        return torch.distributions.Categorical(logits=head)
    return torch.distributions.Independent(torch.distributions.Normal(head, log_std.exp()), 1)


@dataclass
class Rollout:
    """A flattened batch: ``n`` transitions (obs ``n x obs_dim``, the rest ``n`` or n x a)."""

    obs: Tensor
    actions: Tensor
    logprobs: Tensor
    values: Tensor
    advantages: Tensor
    returns: Tensor

    def __getitem__(self, index: Tensor) -> Rollout:
        return Rollout(*(getattr(self, k)[index] for k in self.__dataclass_fields__))


def gae(rewards: Tensor, values: Tensor, dones: Tensor, next_value: Tensor, next_done: Tensor,
        gamma: float, gae_lambda: float) -> Tensor:
    """Generalized advantage estimates ``A_t`` (``steps x envs``; ``dones[t]`` = d_t, the
    flag of the step that produced observation t)."""
    steps = len(rewards)
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros_like(next_value)
    for t in reversed(range(steps)):
        nextnonterminal = 1.0 - (next_done if t == steps - 1 else dones[t + 1])
        nextvalues = next_value if t == steps - 1 else values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
        advantages[t] = lastgaelam
    return advantages


def ppo_loss(outputs: tuple, batch: Rollout, config: PPOConfig) -> Tensor:
    """The clipped PPO objective L (see the module docstring) on ``batch``."""
    head, log_std, value = outputs
    dist = distribution(head, log_std)
    ratio = (dist.log_prob(batch.actions) - batch.logprobs).exp()
    adv = batch.advantages
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    pg_loss1 = -adv * ratio
    pg_loss2 = -adv * torch.clamp(ratio, 1 - config.clip_coef, 1 + config.clip_coef)
    pg_loss = torch.max(pg_loss1, pg_loss2).mean()
    v_clipped = batch.values + torch.clamp(value - batch.values, -config.clip_coef,
                                           config.clip_coef)
    v_loss = 0.5 * torch.max((value - batch.returns) ** 2,
                             (v_clipped - batch.returns) ** 2).mean()
    return pg_loss - config.ent_coef * dist.entropy().mean() + config.vf_coef * v_loss


class PPO:
    """Rollouts in a vector env and clipped-surrogate updates, with intervention hooks."""

    def __init__(self, agent: ActorCritic, envs: gym.vector.VectorEnv, config: PPOConfig,
                 intervention: Intervention, device: torch.device | str = "cpu",
                 seed: int = 0) -> None:
        self.agent, self.envs, self.config = agent, envs, config
        self.intervention, self.device = intervention, torch.device(device)
        self.optimizer = torch.optim.Adam(agent.parameters(), lr=config.lr, eps=1e-5)
        self.generator = torch.Generator().manual_seed(seed)
        obs, _ = envs.reset(seed=seed)
        self.next_obs = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
        self.next_done = torch.zeros(config.num_envs, device=self.device)
        self.running_return = np.zeros(config.num_envs)
        self.episode_returns: list[float] = []

    def restart(self, seed: int) -> None:
        """Reset every environment (at a task boundary), dropping unfinished episodes."""
        obs, _ = self.envs.reset(seed=seed)
        self.next_obs = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
        self.next_done = torch.zeros(self.config.num_envs, device=self.device)
        self.running_return[:] = 0

    @torch.no_grad()
    def collect(self, num_steps: int | None = None) -> Rollout:
        """One rollout of ``num_steps`` (default ``config.num_steps``) steps per env, with GAE.

        Episodes that end during it add their undiscounted return to ``episode_returns``.
        """
        c, steps = self.config, num_steps or self.config.num_steps
        obs, actions, logprobs, rewards, dones, values = [], [], [], [], [], []
        for _ in range(steps):
            obs.append(self.next_obs)
            dones.append(self.next_done)
            head, log_std, value = self.agent(self.next_obs)
            dist = distribution(head, log_std)
            action = dist.sample()
            actions.append(action)
            logprobs.append(dist.log_prob(action))
            values.append(value)
            env_action = action.cpu().numpy()
            if not self.agent.discrete:
                space = self.envs.single_action_space
                env_action = np.clip(env_action, space.low, space.high)
            next_obs, reward, terminated, truncated, _ = self.envs.step(env_action)
            done = np.logical_or(terminated, truncated)
            self.running_return += reward
            self.episode_returns.extend(self.running_return[done].tolist())
            self.running_return[done] = 0
            rewards.append(torch.as_tensor(reward, dtype=torch.float32, device=self.device))
            self.next_obs = torch.as_tensor(next_obs, dtype=torch.float32, device=self.device)
            self.next_done = torch.as_tensor(done, dtype=torch.float32, device=self.device)
        next_value = self.agent(self.next_obs)[2]
        values_t = torch.stack(values)
        advantages = gae(torch.stack(rewards), values_t, torch.stack(dones), next_value,
                         self.next_done, c.gamma, c.gae_lambda)
        return Rollout(torch.stack(obs).flatten(0, 1), torch.stack(actions).flatten(0, 1),
                       torch.stack(logprobs).flatten(0, 1), values_t.flatten(0, 1),
                       advantages.flatten(0, 1), (advantages + values_t).flatten(0, 1))

    def update(self, rollout: Rollout) -> float:
        """``update_epochs`` passes of minibatch steps; returns the last minibatch loss."""
        c, n = self.config, len(rollout.obs)
        loss = torch.tensor(float("nan"))
        self.intervention.scoring_data(rollout.obs)  # e.g. ReDo scores on the rollout
        for _ in range(c.update_epochs):
            order = torch.randperm(n, generator=self.generator).to(self.device)
            for start in range(0, n - c.minibatch_size + 1, c.minibatch_size):
                mb = rollout[order[start:start + c.minibatch_size]]
                outputs, features = self.agent.forward_features(mb.obs)
                loss = ppo_loss(outputs, mb, c)
                self.optimizer.zero_grad(set_to_none=True)
                (loss + self.intervention.penalty(self.agent, features)).backward()
                nn.utils.clip_grad_norm_(self.agent.parameters(), c.max_grad_norm)
                self.optimizer.step()
                self.intervention.after_step(self.agent, self.optimizer, mb.obs)
        return float(loss.detach())

    def iterate(self) -> float:
        """Collect one rollout and learn from it."""
        return self.update(self.collect())
