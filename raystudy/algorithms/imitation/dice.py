"""Pieces shared by the DICE baselines (DemoDICE, SafeDICE): the dual loss and its weights.

Both solve ``min_d KL(d || d_target)`` (plus, for DemoDICE, ``alpha KL(d || d_U)``) over
Bellman-flow-feasible ``d`` through the dual variable ``nu(s)``. With the advantage

    A_nu(s, a, s') = r(s, a) + gamma (1 - terminal) nu(s') - nu(s)

on unlabeled (or union) samples and initial states ``s_0``, the dual loss is

    L_nu = (1 - gamma) E[nu(s_0)] + T log E_U[exp(A_nu / T)]

(``T = 1 + alpha`` in DemoDICE, 1 in SafeDICE), and the optimal ratio
``d*/d_U = exp(A_nu / T)`` (up to normalisation) weights behaviour cloning:

    L_pi = -E_U[w log pi(a|s)],   w = exp((A - max A) / T) / mean(exp((A - max A) / T))

normalised over the minibatch (both authors' codes self-normalise), without gradient.
``log E`` is ``logsumexp - log n``. Gradient penalties keep the discriminator
(``E[(||grad_x f(x)|| - 1)^2]`` on interpolates, WGAN-GP style) and ``nu``
(``E[||grad_s nu(s)||^2]``) smooth, as in both papers' code. :class:`DICELearner` holds
the networks and these two steps; the methods differ in the discriminator's data and the
reward built from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .nets import GaussianPolicy, GradHook, Learner, adam, mlp, state_value


def dual_loss(nu_initial: torch.Tensor, advantage: torch.Tensor, gamma: float,
              temperature: float = 1.0) -> torch.Tensor:
    """``(1 - gamma) E[nu(s_0)] + T log E[exp(A / T)]``."""
    n = advantage.shape[0]
    log_mean_exp = torch.logsumexp(advantage / temperature, dim=0) - math.log(n)
    return (1.0 - gamma) * nu_initial.mean() + temperature * log_mean_exp


def dice_weights(advantage: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """``exp(A / T)`` normalised to mean 1 over the batch, without gradient."""
    a = advantage.detach() / temperature
    w = torch.exp(a - a.max())
    return w / w.mean()


def advantage(nu: Callable[[torch.Tensor], torch.Tensor], part: dict, reward: torch.Tensor,
              gamma: float) -> torch.Tensor:
    """``r + gamma (1 - terminal) nu(s') - nu(s)`` on one source's minibatch."""
    return (reward + gamma * (1.0 - part["terminals"]) * nu(part["next_observations"])
            - nu(part["observations"]))


def interpolate(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``u a + (1 - u) b`` with one ``u ~ U(0, 1)`` per row."""
    u = torch.rand(a.shape[0], 1, device=a.device)
    return u * a + (1.0 - u) * b


def gradient_penalty(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                     target: float) -> torch.Tensor:
    """``E[(||grad_x f(x)|| - target)^2]`` (differentiable in ``f``'s parameters)."""
    x = x.detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
    return ((grad.norm(dim=-1) - target) ** 2).mean()


def inputs(part: dict) -> torch.Tensor:
    """``[s, a]``: the input of a state-action discriminator."""
    return torch.cat([part["observations"], part["actions"]], -1)


class DICELearner(Learner):
    """Actor, state-action discriminator ``f(s, a)`` and ``nu(s)``; the two shared steps."""

    def __init__(self, obs_dim: int, act_dim: int, config: Any,
                 grad_hook: GradHook | None = None) -> None:
        super().__init__(grad_hook)
        self.config = config
        self.pretrain_steps = config.pretrain_steps
        self.actor = GaussianPolicy(obs_dim, act_dim, config.hidden)
        self.disc = mlp(obs_dim + act_dim, config.hidden, 1)
        self.nu = state_value(obs_dim, config.hidden)
        self.modules = {"actor": self.actor, "disc": self.disc, "nu": self.nu}
        self.optimizers = {k: adam(m, config.lr) for k, m in self.modules.items()}

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.disc(x).squeeze(-1)

    def discriminator_step(self, positive: dict, negative: dict) -> float:
        """``-E_pos[log c] - E_neg[log(1 - c)]`` + gradient penalty on interpolates."""
        pos, neg = inputs(positive), inputs(negative)
        n = min(len(pos), len(neg))
        loss = (torch.nn.functional.softplus(-self.logits(pos)).mean()
                + torch.nn.functional.softplus(self.logits(neg)).mean()
                + self.config.disc_penalty * gradient_penalty(
                    self.logits, interpolate(pos[:n], neg[:n]), 1.0))
        return self.step("disc", loss)

    def dual_and_policy_step(self, part: dict, reward: torch.Tensor, initial: torch.Tensor,
                             temperature: float) -> dict[str, float]:
        """One step of ``nu`` on the dual loss and one of the actor on weighted BC."""
        gamma = self.config.gamma
        adv = advantage(self.nu, part, reward, gamma)
        states = torch.cat([part["observations"], part["next_observations"]])
        nu_loss = (dual_loss(self.nu(initial), adv, gamma, temperature)
                   + self.config.nu_penalty * gradient_penalty(self.nu, states, 0.0))
        losses = {"train/nu_loss": self.step("nu", nu_loss)}
        w = dice_weights(adv, temperature)
        log_prob = self.actor.log_prob(part["observations"], part["actions"])
        losses["train/actor_loss"] = self.step("actor", -(w * log_prob).mean())
        return losses
