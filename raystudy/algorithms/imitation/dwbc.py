"""DWBC: discriminator-weighted behaviour cloning from expert and unlabeled data.

Xu, Zhan, Yin, Qin, "Discriminator-Weighted Offline Imitation Learning from Suboptimal
Demonstrations" (ICML 2022). ``D_E`` is the good set, ``D_O`` the unlabeled one; the bad
labels are not used. The discriminator ``d(s, a, log pi(a|s))`` (sigmoid, clipped to
[0.1, 0.9]) sees the policy's log-likelihood as an extra input (gradient stopped) and is
trained with the positive-unlabeled loss (unlabeled = ``eta`` expert + ``1 - eta`` other)::

    L_d = eta E_E[-log d] + E_O[-log(1 - d)] - eta E_E[-log(1 - d)]

and the policy with the discriminator's weights (no gradient through ``d``)::

    L_pi = alpha E_E[-log pi] - E_E[-log pi * eta / (d (1 - d))] + E_O[-log pi / (1 - d)]

These are the paper's equations, with ``alpha = 10`` and ``eta = 0.5`` from the authors'
``main.py`` (ryanxhr/DWBC). The authors' learner differs from them: by default it trains the
discriminator with plain cross-entropy (``pu_learning=False``), and its policy loss weighs
expert samples by ``eta / (d (1 - d)) + 1`` and unlabeled ones by ``1 / (1 - d) - 1``, zero
where ``d < 0.5``; here every unlabeled sample keeps a weight ``1 / (1 - d) >= 1.11``.
The extra input is ``clip(log pi, -20, 20) / 20`` (summed over action dimensions), so it
stays in [-1, 1] however peaked the policy gets.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .dice import inputs
from .nets import Discriminator, GaussianPolicy, GradHook, Learner, adam


@dataclass
class DWBCConfig:
    alpha: float = 10.0
    """Weight of plain BC on the expert data."""
    eta: float = 0.5
    """Assumed share of expert-like data in the unlabeled set (PU prior)."""
    lr: float = 3e-4
    """Learning rate of the policy and the discriminator."""
    weight_decay: float = 1e-3
    """L2 of the policy's Adam (the authors' code)."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden widths of both networks."""


def dwbc_discriminator_loss(d_expert: torch.Tensor, d_other: torch.Tensor,
                            eta: float) -> torch.Tensor:
    """``eta E_E[-log d] + E_O[-log(1 - d)] - eta E_E[-log(1 - d)]``."""
    return (eta * -torch.log(d_expert).mean() - torch.log1p(-d_other).mean()
            + eta * torch.log1p(-d_expert).mean())


def dwbc_policy_loss(log_pi_expert: torch.Tensor, log_pi_other: torch.Tensor,
                     d_expert: torch.Tensor, d_other: torch.Tensor, alpha: float,
                     eta: float) -> torch.Tensor:
    """``alpha E_E[-log pi] - E_E[-log pi eta / (d(1-d))] + E_O[-log pi / (1 - d)]``."""
    d_e, d_o = d_expert.detach(), d_other.detach()
    return (alpha * -log_pi_expert.mean()
            - (-log_pi_expert * eta / (d_e * (1.0 - d_e))).mean()
            + (-log_pi_other / (1.0 - d_o)).mean())


class DWBC(Learner):
    """DWBC learner on ``good`` (expert) and ``unlabeled`` minibatches."""

    sources = ("good", "unlabeled")

    def __init__(self, obs_dim: int, act_dim: int, config: DWBCConfig | None = None,
                 grad_hook: GradHook | None = None) -> None:
        super().__init__(grad_hook)
        cfg = self.config = config or DWBCConfig()
        self.actor = GaussianPolicy(obs_dim, act_dim, cfg.hidden)
        self.disc = Discriminator(obs_dim + act_dim + 1, cfg.hidden, low=0.1, high=0.9)
        self.modules = {"actor": self.actor, "disc": self.disc}
        self.optimizers = {"actor": adam(self.actor, cfg.lr, cfg.weight_decay),
                           "disc": adam(self.disc, cfg.lr)}

    def discriminate(self, part: dict, log_pi: torch.Tensor) -> torch.Tensor:
        feature = (log_pi.detach().clamp(-20.0, 20.0) / 20.0)[:, None]
        return self.disc(torch.cat([inputs(part), feature], -1))

    def update(self, batch) -> dict[str, float]:
        self.steps += 1
        cfg, expert, other = self.config, batch["good"], batch["unlabeled"]
        log_pi_e = self.actor.log_prob(expert["observations"], expert["actions"])
        log_pi_o = self.actor.log_prob(other["observations"], other["actions"])
        d_e, d_o = self.discriminate(expert, log_pi_e), self.discriminate(other, log_pi_o)
        losses = {"train/disc_loss": self.step("disc", dwbc_discriminator_loss(d_e, d_o,
                                                                                 cfg.eta))}
        losses["train/actor_loss"] = self.step("actor", dwbc_policy_loss(
            log_pi_e, log_pi_o, d_e, d_o, cfg.alpha, cfg.eta))
        return losses
