"""Behaviour cloning: maximum likelihood of the demonstrated actions.

Pomerleau, "Efficient Training of Artificial Neural Networks for Autonomous Navigation"
(Neural Computation 1991); the offline-imitation papers' BC baseline::

    min_pi  L_BC = -E_{(s, a) ~ D}[log pi(a|s)]

with ``D`` the good demonstrations (``data="good"``: BC on good data) or every
transition of every set, good, bad and unlabeled, each episode once (``data="all"``:
BC on all data, which imitates the mixture). ``data="oracle"`` is a reference, not a
method: BC on the unlabeled set's expert episodes picked by their hidden labels, what a
perfect filter of the unlabeled data would reach. The policy is the shared Gaussian of
``nets.py``; its optimiser is Adam with L2 ``weight_decay``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .nets import Batch, GaussianPolicy, GradHook, Learner, adam


@dataclass
class BCConfig:
    lr: float = 3e-4
    """Learning rate."""
    weight_decay: float = 0.0
    """L2 of the actor's Adam."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden widths of the policy."""


def bc_loss(log_prob):
    """``-E[log pi(a|s)]``."""
    return -log_prob.mean()


class BC(Learner):
    """Behaviour cloning on ``batch["good"]``, ``batch["all"]`` (or ``batch["oracle"]``)."""

    def __init__(self, obs_dim: int, act_dim: int, data: str = "good",
                 config: BCConfig | None = None, grad_hook: GradHook | None = None) -> None:
        super().__init__(grad_hook)
        if data not in ("good", "all", "oracle"):
            raise ValueError(f"BC data={data!r}: expected 'good', 'all' or 'oracle'")
        cfg = self.config = config or BCConfig()
        self.data = data
        self.sources = (data,)
        self.actor = GaussianPolicy(obs_dim, act_dim, cfg.hidden)
        self.modules = {"actor": self.actor}
        self.optimizers = {"actor": adam(self.actor, cfg.lr, cfg.weight_decay)}

    def update(self, batch: Batch) -> dict[str, float]:
        self.steps += 1
        part = batch[self.data]
        loss = bc_loss(self.actor.log_prob(part["observations"], part["actions"]))
        return {"train/actor_loss": self.step("actor", loss)}
