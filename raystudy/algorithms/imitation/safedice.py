"""SafeDICE: offline safe imitation from non-preferred (bad) and unlabeled demonstrations.

Jang, Kim, Kim, Lee, "SafeDICE: Offline Safe Imitation Learning with Non-Preferred
Demonstrations" (NeurIPS 2023). SafeDICE uses the bad set ``D_N`` and the unlabeled
set ``D_U``, not the good one: it models ``d_U = alpha d_N + (1 - alpha) d_P`` and
imitates the preferred part ``d_P = (d_U - alpha d_N) / (1 - alpha)``::

    min_d KL(d || d_P)   (Bellman-flow constrained)

1. A state-action discriminator ``c(s, a) = sigmoid(f(s, a))``, bad vs unlabeled
   (``c* = d_N / (d_N + d_U)``, so ``d_N / d_U = c / (1 - c)``), with a gradient penalty
   (coefficient 10) on interpolates; pre-trained and then frozen, as in the authors' code.
2. Reward ``log d_P / d_U``::

       r(s, a) = log[(1 - (1 + alpha) c) / ((1 - alpha)(1 - c))]

   defined for ``c < 1 / (1 + alpha)``: ``c`` is clipped to ``(1 - 1e-3) / (1 + alpha)``
   (the authors' code does not clip and would produce NaN there). Rewards are
   standardised over the minibatch (the authors use dataset statistics).
3. The dual ``min_nu (1 - gamma) E[nu(s_0)] + log E_U[exp(A)]`` with
   ``A = r + gamma nu(s') - nu(s)``, and a small gradient penalty on ``nu`` (1e-6).
4. Weighted BC on ``D_U`` with ``w = exp(A)`` self-normalised over the batch.

``alpha`` is the assumed share of non-preferred data in ``D_U``, a hyperparameter of
the method (default 0.5 here; an oracle would set the true share).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .dice import DICELearner, inputs
from .nets import GradHook


@dataclass
class SafeDICEConfig:
    alpha: float = 0.5
    """Assumed share of non-preferred data in the unlabeled set, in (0, 1)."""
    gamma: float = 0.99
    """Discount."""
    lr: float = 3e-4
    """Learning rate of every network."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden widths of every network."""
    disc_penalty: float = 10.0
    """Gradient penalty of the discriminator."""
    nu_penalty: float = 1e-6
    """Gradient penalty of nu."""
    pretrain_steps: int = 10_000
    """Discriminator-only updates; the discriminator is frozen afterwards."""

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"SafeDICE alpha={self.alpha} must lie in (0, 1)")


def safedice_reward(c: torch.Tensor, alpha: float) -> torch.Tensor:
    """``log[(1 - (1 + alpha) c) / ((1 - alpha)(1 - c))]``, ``c`` clipped below 1/(1+alpha)."""
    c = c.clamp(max=(1.0 - 1e-3) / (1.0 + alpha))
    return torch.log((1.0 - (1.0 + alpha) * c) / ((1.0 - alpha) * (1.0 - c)))


class SafeDICE(DICELearner):
    """SafeDICE learner on ``bad``, ``unlabeled`` and ``initial`` states."""

    sources = ("bad", "unlabeled")

    def __init__(self, obs_dim: int, act_dim: int, config: SafeDICEConfig | None = None,
                 grad_hook: GradHook | None = None) -> None:
        super().__init__(obs_dim, act_dim, config or SafeDICEConfig(), grad_hook)

    def update(self, batch) -> dict[str, float]:
        self.steps += 1
        unlabeled = batch["unlabeled"]
        if self.steps <= self.pretrain_steps:
            return {"train/disc_loss": self.discriminator_step(batch["bad"], unlabeled)}
        with torch.no_grad():
            c = torch.sigmoid(self.logits(inputs(unlabeled)))
            reward = safedice_reward(c, self.config.alpha)
            raw_mean = float(reward.mean())
            reward = (reward - reward.mean()) / (reward.std() + 1e-6)
        losses = self.dual_and_policy_step(unlabeled, reward, batch["initial"], 1.0)
        losses["train/reward"] = raw_mean
        return losses
