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
   (the authors' code does not clip and would produce NaN there). As in the authors'
   ``algorithms/safedice.py`` (jys5609/SafeDICE), the reward is standardised by its mean
   and std over the *whole* unlabeled set, computed once with the frozen discriminator
   (``reward_mean``, ``reward_std`` there; never per minibatch): ``standardise=False``
   uses the raw reward.
3. The dual ``min_nu (1 - gamma) E[nu(s_0)] + log E_U[exp(A)]`` with
   ``A = r + gamma nu(s') - nu(s)``, and a small gradient penalty on ``nu`` (1e-6).
4. Weighted BC on ``D_U`` with ``w = exp(A)`` self-normalised over the batch.

``alpha`` is the share of non-preferred data in ``D_U`` (the paper's mixture weight):
the study sets it to the composed unlabeled set's share of undesirable transitions
(``OfflineMix.undesirable_share``) unless the user sets it. (The authors' public script
estimates it from the discriminator instead, ``min (1 - c) / c`` over ``D_U``.)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .dice import DICELearner, inputs
from .nets import GradHook


@dataclass
class SafeDICEConfig:
    alpha: float = 0.5
    """Share of non-preferred data in the unlabeled set, in (0, 1)."""
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
    standardise: bool = True
    """Standardise the reward by its mean/std over the whole unlabeled set (the authors')."""

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"SafeDICE alpha={self.alpha} must lie in (0, 1)")


def safedice_reward(c: torch.Tensor, alpha: float) -> torch.Tensor:
    """``log[(1 - (1 + alpha) c) / ((1 - alpha)(1 - c))]``, ``c`` clipped below 1/(1+alpha)."""
    c = c.clamp(max=(1.0 - 1e-3) / (1.0 + alpha))
    return torch.log((1.0 - (1.0 + alpha) * c) / ((1.0 - alpha) * (1.0 - c)))


def reward_statistics(reward: torch.Tensor) -> tuple[float, float]:
    """Mean and std (ddof 0, as ``np.std``) of the reward over the whole unlabeled set."""
    return float(reward.mean()), float(reward.std(correction=0))


class SafeDICE(DICELearner):
    """SafeDICE learner on ``bad``, ``unlabeled`` and ``initial`` states.

    With ``standardise`` (the default) it needs the whole unlabeled set's ``[s, a]`` rows
    (:meth:`use_unlabeled`) before its first step after pre-training.
    """

    sources = ("bad", "unlabeled")

    def __init__(self, obs_dim: int, act_dim: int, config: SafeDICEConfig | None = None,
                 grad_hook: GradHook | None = None) -> None:
        super().__init__(obs_dim, act_dim, config or SafeDICEConfig(), grad_hook)
        self.unlabeled_inputs: torch.Tensor | None = None
        self.statistics: tuple[float, float] | None = None

    def use_unlabeled(self, inputs: torch.Tensor) -> None:
        """The whole unlabeled set's ``[s, a]`` rows, over which the reward is standardised."""
        self.unlabeled_inputs, self.statistics = inputs, None

    def reward(self, x: torch.Tensor) -> torch.Tensor:
        """``log d_P / d_U`` of the frozen discriminator at inputs ``x``."""
        return safedice_reward(torch.sigmoid(self.logits(x)), self.config.alpha)

    @torch.no_grad()
    def dataset_statistics(self, chunk: int = 65_536) -> tuple[float, float]:
        """The reward's mean and std over :meth:`use_unlabeled`'s rows (computed once)."""
        if self.statistics is None:
            if self.unlabeled_inputs is None:
                raise RuntimeError("SafeDICE standardises its reward over the whole unlabeled "
                                   "set: call use_unlabeled(rows) first")
            device = next(self.disc.parameters()).device
            reward = torch.cat([self.reward(part.to(device))
                                for part in self.unlabeled_inputs.split(chunk)])
            self.statistics = reward_statistics(reward)
        return self.statistics

    def update(self, batch) -> dict[str, float]:
        self.steps += 1
        unlabeled = batch["unlabeled"]
        if self.steps <= self.pretrain_steps:
            return {"train/disc_loss": self.discriminator_step(batch["bad"], unlabeled)}
        with torch.no_grad():
            reward = self.reward(inputs(unlabeled))
            raw_mean = float(reward.mean())
            if self.config.standardise:
                mean, std = self.dataset_statistics()
                reward = (reward - mean) / (std if std > 0 else 1.0)
        losses = self.dual_and_policy_step(unlabeled, reward, batch["initial"], 1.0)
        losses["train/reward"] = raw_mean
        losses["train/alpha"] = self.config.alpha
        return losses
