"""DemoDICE: offline imitation with expert plus supplementary imperfect demonstrations.

Kim, Seo, Lee, Jeon, Hwang, Yang, Kim, "DemoDICE: Offline Imitation Learning with
Supplementary Imperfect Demonstrations" (ICLR 2022). Here the expert set ``D_E`` is
the good set and the union ``D_U = D_E u D_I`` is every transition (``batch["all"]``);
DemoDICE does not use the bad labels.

Objective (Eq. 4 of the paper)::

    max_d  -KL(d || d_E) - alpha KL(d || d_U)   (Bellman-flow constrained)

1. A state-action discriminator ``c(s, a) = sigmoid(f(s, a))``, expert vs union, trained
   with ``-E_E[log c] - E_U[log(1 - c)]`` plus a gradient penalty (coefficient 10) on
   interpolates; its optimum gives ``log d_E / d_U`` as the reward (Eq. 8)::

       r(s, a) = -log(1 / c(s, a) - 1) = f(s, a)

2. The dual (Eq. 11), with ``A = r + gamma nu(s') - nu(s)`` on union samples::

       min_nu (1 - gamma) E[nu(s_0)] + (1 + alpha) log E_U[exp(A / (1 + alpha))]

3. Weighted BC with ``w = exp(A / (1 + alpha))`` (Eq. 13), self-normalised.

The discriminator keeps training in the main loop, as in the paper's algorithm; it may
also be pre-trained alone (``pretrain_steps``). ``alpha = 0.05`` as in the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .dice import DICELearner, inputs
from .nets import GradHook


@dataclass
class DemoDICEConfig:
    alpha: float = 0.05
    """Weight of KL(d || d_U), the pull towards the union data."""
    gamma: float = 0.99
    """Discount."""
    lr: float = 3e-4
    """Learning rate of every network."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden widths of every network."""
    disc_penalty: float = 10.0
    """Gradient penalty of the discriminator."""
    nu_penalty: float = 1e-4
    """Gradient penalty of nu."""
    pretrain_steps: int = 0
    """Discriminator-only updates before the main loop."""


def demodice_reward(logits: torch.Tensor) -> torch.Tensor:
    """``-log(1/c - 1)`` with ``c = sigmoid(logits)`` (Eq. 8), logits clipped to +-15."""
    c = torch.sigmoid(logits.clamp(-15.0, 15.0))
    return -torch.log(1.0 / c - 1.0)


class DemoDICE(DICELearner):
    """DemoDICE learner on ``good`` (expert), ``all`` (union) and ``initial`` states."""

    sources = ("good", "all")

    def __init__(self, obs_dim: int, act_dim: int, config: DemoDICEConfig | None = None,
                 grad_hook: GradHook | None = None) -> None:
        super().__init__(obs_dim, act_dim, config or DemoDICEConfig(), grad_hook)

    def update(self, batch) -> dict[str, float]:
        self.steps += 1
        losses = {"train/disc_loss": self.discriminator_step(batch["good"], batch["all"])}
        if self.steps <= self.pretrain_steps:
            return losses
        union = batch["all"]
        with torch.no_grad():
            reward = demodice_reward(self.logits(inputs(union)))
        losses.update(self.dual_and_policy_step(union, reward, batch["initial"],
                                                1.0 + self.config.alpha))
        losses["train/reward"] = float(reward.mean())
        return losses
