"""DualCOIL: offline imitation from contrasting (good and bad) demonstrations.

Hoang, Mai, Varakantham, Verma, "DualCOIL: Offline Imitation Learning from Contrasting
Demonstrations" (ICML 2026; arXiv 2505.21182 as ContraDICE; JAX code hmhuy0/ContraDICE).

Objective over state-action visitation distributions ``d`` (Bellman-flow constrained)::

    min_d  KL(d || d_G) - alpha KL(d || d_B)
         = (1 - alpha) KL(d || d*) + const,   d* ~ d_G^{1/(1-alpha)} d_B^{-alpha/(1-alpha)}

convex iff ``alpha <= 1``; the weight's exponent ``1/(1-alpha)`` needs ``alpha < 1`` and
``alpha >= 0`` keeps the bad data repelling, so ``alpha`` must lie in [0, 1).

What one update does (as the public code does it; ``G``, ``B``, ``U``: good, bad,
unlabeled minibatches of equal size):

1. Discriminators, pre-trained for ``pretrain_steps`` and then frozen, see states only:
   ``D_G`` good vs unlabeled and ``D_B`` bad vs unlabeled, each ``clip(sigmoid, 0.05,
   0.95)``, trained with ``-E_pos[log D] - E_U[log(1 - D)]``.
2. Weights (the implicit reward): ``w = c`` on ``G``, ``w = -c alpha`` on ``B`` and, on
   ``U``, from the next state ``s'``::

       w(s') = clip(exp((log(c D_G(s')) - alpha log(c D_B(s'))) / (1 - alpha)), -c alpha, c)

   (the public code uses ``c D`` where the density ratio would be ``D / (1 - D)``).
3. Value (extreme-Q / Gumbel regression) on ``G + B + U`` against the target critic,
   ``z = min((min(Q'_1, Q'_2)(s, a) - V(s)) / beta, 7)``::

       L_V = E[exp(z - m) - z exp(-m) - exp(-m)],   m = max(max_batch z, -1) (no gradient)

   i.e. ``exp(-m) E[e^z - z - 1]`` up to a constant: the max-shift keeps ``e^z`` finite.
4. Actor: Q-weighted behaviour cloning on ``U`` only::

       L_pi = -E_U[min(exp(q_scale / beta * min(Q'_1, Q'_2)(s, a)), 100) log pi(a|s)]

5. Critic (IQ-Learn style), for each of ``Q_1, Q_2`` with the just-updated ``V``::

       r = Q(s, a) - gamma (1 - terminal) clip(V(s'), -c alpha / (1 - gamma), c / (1 - gamma))
       L_Q = E[-w r] + 0.5 E[r^2]

   whose minimiser has ``r = w``: soft Q-learning with the weights as rewards.
6. Target critic: ``theta' <- tau theta + (1 - tau) theta'``.

The public code also offers advantage weights for step 4 (``adv_policy_extraction``,
off by default): ``w = min(exp(3 min(Q' - V, 7)), 100)`` with ``V`` (clipped as in
step 5) taken before V's own step; ``extraction="advantage"`` selects it.

Optimisers as the public code: Adam with L2 ``weight_decay`` for the actor and the
discriminators, AdamW (decay 1e-4) for the critic and ``V``, learning rate 3e-4.
Per-environment constants of the paper (``PAPER_CONSTANTS``): weight decay, actor Q
scale, beta, c, alpha, tau and whether states are normalised.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .nets import (
    Batch,
    Discriminator,
    DoubleQ,
    GaussianPolicy,
    GradHook,
    Learner,
    adam,
    adamw,
    binary_loss,
    polyak,
    state_value,
)

# hmhuy0/ContraDICE configs/: weight_decay, actor_Q_scale, v_beta (beta), r_scale (c),
# r_alpha (alpha), tau, state_norm. Keys: "<task>-<bad source>".
PAPER_CONSTANTS = {
    "hopper-random": (0.001, 1.0, 30.0, 3.0, 0.4, 0.005, False),
    "hopper-medium": (0.001, 2.0, 20.0, 3.0, 0.4, 0.005, True),
    "halfcheetah-random": (0.01, 2.0, 20.0, 3.0, 0.6, 0.005, True),
    "halfcheetah-medium": (0.01, 0.5, 15.0, 3.0, 0.6, 0.005, True),
    "walker2d-random": (0.01, 2.0, 20.0, 3.0, 0.6, 0.005, True),
    "walker2d-medium": (0.01, 2.0, 20.0, 3.0, 0.6, 0.005, True),
    "ant-random": (0.01, 0.5, 15.0, 3.0, 0.6, 0.005, False),
    "ant-medium": (0.01, 0.5, 15.0, 3.0, 0.6, 0.005, False),
}


def check_alpha(alpha: float) -> float:
    """``alpha`` itself if it lies in [0, 1), else a one-line ValueError saying why."""
    if 0.0 <= alpha < 1.0:
        return alpha
    if alpha > 1.0:
        why = "above 1 the objective KL(d||d_G) - alpha KL(d||d_B) is not convex"
    elif alpha == 1.0:
        why = "at 1 the weight's exponent 1/(1 - alpha) is undefined"
    elif alpha < 0.0:
        why = "below 0 the bad demonstrations would attract instead of repel"
    else:
        why = "not a number"
    raise ValueError(f"alpha={alpha} is outside [0, 1): {why}")


def unlabeled_weight(d_good: torch.Tensor, d_bad: torch.Tensor, alpha: float,
                     c: float) -> torch.Tensor:
    """``clip(exp((log(c D_G) - alpha log(c D_B)) / (1 - alpha)), -c alpha, c)``."""
    check_alpha(alpha)
    log_w = (torch.log(c * d_good) - alpha * torch.log(c * d_bad)) / (1.0 - alpha)
    return torch.exp(log_w).clamp(-c * alpha, c)


def gumbel_value_loss(q: torch.Tensor, v: torch.Tensor, beta: float,
                      max_z: float = 7.0) -> torch.Tensor:
    """``E[exp(z - m) - z exp(-m) - exp(-m)]``, ``z = min((q - v) / beta, max_z)``."""
    z = ((q - v) / beta).clamp(max=max_z)
    m = z.max().detach().clamp(min=-1.0)
    return (torch.exp(z - m) - z * torch.exp(-m) - torch.exp(-m)).mean()


def iq_critic_loss(q: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``E[-w r] + 0.5 E[r^2]`` with ``r = Q - target`` (target = discounted next value)."""
    r = q - target
    return (-weight * r).mean() + 0.5 * (r * r).mean()


def q_weighted_bc_loss(log_prob: torch.Tensor, q: torch.Tensor, temperature: float,
                       max_weight: float = 100.0) -> torch.Tensor:
    """``-E[min(exp(temperature q), max_weight) log pi(a|s)]`` (weights without gradient)."""
    weight = torch.exp(temperature * q.detach()).clamp(0.0, max_weight)
    return -(weight * log_prob).mean()


def advantage_weighted_bc_loss(log_prob: torch.Tensor, q: torch.Tensor, v: torch.Tensor,
                               temperature: float = 3.0, max_advantage: float = 7.0,
                               max_weight: float = 100.0) -> torch.Tensor:
    """``-E[min(exp(temperature min(Q - V, max_advantage)), max_weight) log pi(a|s)]``."""
    advantage = (q.detach() - v.detach()).clamp(max=max_advantage)
    weight = torch.exp(temperature * advantage).clamp(0.0, max_weight)
    return -(weight * log_prob).mean()


@dataclass
class DualCOILConfig:
    alpha: float = 0.6
    """Repulsion from the bad data, in [0, 1)."""
    c: float = 3.0
    """Weight scale ``c``: good samples weigh ``c``, bad ``-c alpha``."""
    beta: float = 20.0
    """Temperature of the Gumbel value loss."""
    actor_q_scale: float = 2.0
    """Actor weights ``exp(actor_q_scale / beta * Q)``."""
    gamma: float = 0.99
    """Discount."""
    tau: float = 0.005
    """Target critic step."""
    lr: float = 3e-4
    """Learning rate of every network."""
    weight_decay: float = 0.01
    """L2 of the actor's and discriminators' Adam."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden widths of every network."""
    pretrain_steps: int = 100_000
    """Discriminator-only updates before the main loop."""
    max_z: float = 7.0
    """Clip of the Gumbel loss's ``z``."""
    max_actor_weight: float = 100.0
    """Clip of the actor's Q weights."""
    extraction: str = "q"
    """q: the paper's Q-weighted BC; advantage: the public code's optional
    ``adv_policy_extraction``, weights ``exp(3 min(Q - V, 7))``."""

    def __post_init__(self) -> None:
        check_alpha(self.alpha)
        if self.extraction not in ("q", "advantage"):
            raise ValueError(f"extraction={self.extraction!r} is not q or advantage")


class DualCOIL(Learner):
    """DualCOIL learner: ``update(batch)`` on ``good``, ``bad`` and ``unlabeled`` minibatches."""

    sources = ("good", "bad", "unlabeled")

    def __init__(self, obs_dim: int, act_dim: int, config: DualCOILConfig | None = None,
                 grad_hook: GradHook | None = None) -> None:
        super().__init__(grad_hook)
        cfg = self.config = config or DualCOILConfig()
        hidden: Sequence[int] = cfg.hidden
        self.pretrain_steps = cfg.pretrain_steps
        self.actor = GaussianPolicy(obs_dim, act_dim, hidden)
        self.critic = DoubleQ(obs_dim, act_dim, hidden)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.value = state_value(obs_dim, hidden)
        self.d_good = Discriminator(obs_dim, hidden)
        self.d_bad = Discriminator(obs_dim, hidden)
        self.modules = {"actor": self.actor, "critic": self.critic, "value": self.value,
                        "target_critic": self.target_critic, "d_good": self.d_good,
                        "d_bad": self.d_bad}
        self.optimizers = {"actor": adam(self.actor, cfg.lr, cfg.weight_decay),
                           "critic": adamw(self.critic, cfg.lr),
                           "value": adamw(self.value, cfg.lr),
                           "d_good": adam(self.d_good, cfg.lr, cfg.weight_decay),
                           "d_bad": adam(self.d_bad, cfg.lr, cfg.weight_decay)}

    def update_discriminators(self, batch: Batch) -> dict[str, float]:
        """One step of ``D_G`` (good vs unlabeled) and ``D_B`` (bad vs unlabeled), states only."""
        s_u = batch["unlabeled"]["observations"]
        return {
            "train/d_good_loss": self.step("d_good", binary_loss(
                self.d_good(batch["good"]["observations"]), self.d_good(s_u))),
            "train/d_bad_loss": self.step("d_bad", binary_loss(
                self.d_bad(batch["bad"]["observations"]), self.d_bad(s_u))),
        }

    def weights(self, batch: Batch) -> torch.Tensor:
        """``w`` on the concatenated ``B, G, U`` minibatches (step 2 of the docstring)."""
        cfg = self.config
        u_next = batch["unlabeled"]["next_observations"]
        with torch.no_grad():
            w_u = unlabeled_weight(self.d_good(u_next), self.d_bad(u_next), cfg.alpha, cfg.c)
        n_bad, n_good = len(batch["bad"]["rewards"]), len(batch["good"]["rewards"])
        return torch.cat([w_u.new_full((n_bad,), -cfg.c * cfg.alpha),
                          w_u.new_full((n_good,), cfg.c), w_u])

    def update(self, batch: Batch) -> dict[str, float]:
        self.steps += 1
        if self.steps <= self.pretrain_steps:
            return self.update_discriminators(batch)
        cfg = self.config
        parts = [batch["bad"], batch["good"], batch["unlabeled"]]
        s, a, s_next, done = (torch.cat([p[k] for p in parts]) for k in (
            "observations", "actions", "next_observations", "terminals"))
        w = self.weights(batch)
        n_u = len(batch["unlabeled"]["rewards"])
        v_range = (-cfg.c * cfg.alpha / (1 - cfg.gamma), cfg.c / (1 - cfg.gamma))
        with torch.no_grad():
            q_target = torch.min(*self.target_critic(s, a))
            v_unlabeled = self.value(s[-n_u:]).clamp(*v_range)  # before V's step, as the code
        # Step 3: V by the Gumbel loss against the target critic.
        losses = {"train/value_loss": self.step(
            "value", gumbel_value_loss(q_target, self.value(s), cfg.beta, cfg.max_z))}
        # Step 4: Q-weighted (or advantage-weighted) BC on the unlabeled part only.
        log_prob = self.actor.log_prob(s[-n_u:], a[-n_u:])
        if cfg.extraction == "q":
            actor_loss = q_weighted_bc_loss(log_prob, q_target[-n_u:],
                                            cfg.actor_q_scale / cfg.beta, cfg.max_actor_weight)
            actor_w = torch.exp(cfg.actor_q_scale / cfg.beta * q_target[-n_u:])
        else:
            actor_loss = advantage_weighted_bc_loss(log_prob, q_target[-n_u:], v_unlabeled,
                                                    max_weight=cfg.max_actor_weight)
            actor_w = torch.exp(3.0 * (q_target[-n_u:] - v_unlabeled).clamp(max=7.0))
        actor_w = actor_w.clamp(0.0, cfg.max_actor_weight)
        losses["train/actor_loss"] = self.step("actor", actor_loss)
        # Step 5: IQ critic with the updated V, clipped to the range the weights allow.
        with torch.no_grad():
            v_next = self.value(s_next).clamp(*v_range)
            target = cfg.gamma * (1.0 - done) * v_next
        q1, q2 = self.critic(s, a)
        losses["train/critic_loss"] = self.step(
            "critic", iq_critic_loss(q1, target, w) + iq_critic_loss(q2, target, w))
        polyak(self.target_critic, self.critic, cfg.tau)  # step 6
        losses["train/w_unlabeled"] = float(w[-n_u:].mean())
        hidden = batch["unlabeled"].get("is_expert")
        if hidden is not None and 0 < hidden.sum() < len(hidden):  # diagnostics only
            mask = hidden > 0.5
            losses["train/w_unlabeled_expert"] = float(w[-n_u:][mask].mean())
            losses["train/w_unlabeled_other"] = float(w[-n_u:][~mask].mean())
            # the share of the actor's BC weight that falls on expert transitions
            losses["train/actor_expert_share"] = float(actor_w[mask].sum() / actor_w.sum())
            losses["train/q_unlabeled_expert"] = float(q_target[-n_u:][mask].mean())
            losses["train/q_unlabeled_other"] = float(q_target[-n_u:][~mask].mean())
        return losses
