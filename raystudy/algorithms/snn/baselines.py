"""The authors' baselines as their code computes them (JomaMinoza/UltraLIF
``ultralif/neurons/lif.py``, ``baselines.py``), all smooth in the forward pass, and
SigmaLIF, the control that isolates log-sum-exp.

* ``SoftLIF`` (their "LIF"): ``V = tau V + I; s = sigmoid(10 (V - 0.5)); V = V (1 - s)``,
  tau 0.9; ``SoftPLIF``: tau = sigmoid(tau_raw), tau_raw init 0.9 (tau 0.711).
* ``DSpike``: ``x = V / (2 theta)``, ``s = clip([tanh(b (x - 0.5)) + tanh(b / 2)] / (2
  tanh(b / 2)), 0, 1)``, b = softplus(b_raw).clamp(0.5, 50), b_raw init 4, theta 1.
* ``SigmaLIF``: ``V = tau V + I; s = sigmoid((V - theta) / eps); V = V (1 - s)`` with
  UltraLIF's learnable clamped eps: UltraLIF without LSE.

``hard`` / ``tropical`` modes replace the spike by a Heaviside at the function's midpoint.
"""

from __future__ import annotations

import torch
from torch import nn

from .neurons import LearnableEps, SpikingNeuron


class _LinearMembrane(SpikingNeuron):
    def __init__(self, dim: int, tau: float = 0.9, learn_tau: bool = False) -> None:
        super().__init__(dim)
        self.learn_tau = learn_tau
        self.tau_raw = nn.Parameter(torch.tensor(0.9 if learn_tau else tau),
                                    requires_grad=learn_tau)

    @property
    def tau(self) -> torch.Tensor:
        return torch.sigmoid(self.tau_raw) if self.learn_tau else self.tau_raw

    def spike(self, u: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def midpoint(self) -> float:
        raise NotImplementedError

    def forward(self, current: torch.Tensor) -> torch.Tensor:
        assert self.v is not None, "call reset(batch, like) first"
        u = self.tau * self.v + current
        s = self.spike(u) if self.mode == "soft" else (u > self.midpoint()).to(u.dtype)
        self.v = u * (1 - s)
        return s

    def scales(self) -> dict[str, float]:
        return {"tau": float(self.tau.detach())}


class SoftLIF(_LinearMembrane):
    """The authors' LIF (``learn_tau=False``) and PLIF (``learn_tau=True``)."""

    def __init__(self, dim: int, tau: float = 0.9, learn_tau: bool = False,
                 beta: float = 10.0, threshold: float = 0.5) -> None:
        super().__init__(dim, tau, learn_tau)
        self.beta, self.threshold = beta, threshold

    def spike(self, u: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.beta * (u - self.threshold))

    def midpoint(self) -> float:
        return self.threshold


class DSpike(_LinearMembrane):
    """The authors' DSpike (Li et al. 2021 as they coded it)."""

    def __init__(self, dim: int, tau: float = 0.9, threshold: float = 1.0) -> None:
        super().__init__(dim, tau)
        self.threshold = threshold
        self.b_raw = nn.Parameter(torch.tensor(4.0))

    def spike(self, u: torch.Tensor) -> torch.Tensor:
        b = torch.nn.functional.softplus(self.b_raw).clamp(0.5, 50.0)
        x = u / (2 * self.threshold)
        t = torch.tanh(b / 2)
        return ((torch.tanh(b * (x - 0.5)) + t) / (2 * t)).clamp(0.0, 1.0)

    def midpoint(self) -> float:
        return self.threshold


class SigmaLIF(_LinearMembrane):
    """Linear membrane, UltraLIF's spike ``sigmoid((V - theta) / eps)`` with learnable eps."""

    def __init__(self, dim: int, tau: float = 0.9, init_eps: float = 1.0,
                 eps_min: float = 0.1, eps_max: float = 20.0, learn_eps: bool = True,
                 threshold: float = 0.0) -> None:
        super().__init__(dim, tau)
        self.eps = LearnableEps(init_eps, eps_min, eps_max, learn_eps)
        self.threshold = threshold

    def spike(self, u: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid((u - self.threshold) / self.eps())

    def midpoint(self) -> float:
        return self.threshold

    def scales(self) -> dict[str, float]:
        return {"eps": float(self.eps().detach()), "tau": float(self.tau.detach())}


