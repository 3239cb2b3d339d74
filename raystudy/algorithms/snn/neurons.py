"""UltraLIF neurons: the LIF step ultradiscretized (Minoza, arXiv 2602.11206; code
JomaMinoza/UltraLIF ``ultralif/neurons/ultra.py``, ``ultradlif.py``).

Ultradiscretization maps ``tau V + I`` to ``LSE_eps(V + log tau, I)`` (``+`` -> LSE,
``x tau`` -> ``+ log tau``). One step of UltraLIF, as the authors' code computes it::

    V~  = LSE_eps(V + log tau, I_t)
    s_t = sigmoid((V~ - theta) / eps)
    V   = V~ (1 - s_t)

eps is one learnable scalar per layer, stored as log eps (init 1), used as
``exp(log eps).clamp(0.1, 20)``; theta = 0 in the library, 1 in the authors' ablations.
UltraPLIF learns log tau (the library does not clamp it). UltraDLIF couples neighbours by
``torch.roll`` over the unit index, in two published forms:

* ``library``: ``V = tau V + I; V' = LSE_eps(roll(V,+1), V, roll(V,-1)); s = sigmoid((V' -
  theta)/eps); V = V (1 - s)``;
* ``readme`` (README + ablation): ``V = LSE_eps(roll(V,+1), V, roll(V,-1)) + I; s =
  sigmoid((V - theta)/eps); V = V (1 - s)`` (no tau).

UltraDPLIF: the library form with ``tau = sigmoid(tau_raw)``, ``tau_raw`` init 0.9.

Evaluation modes (``neuron.mode``): ``soft`` (the authors' forward, training and test),
``hard`` (the same membrane, a Heaviside spike ``H(V~ - theta)``), ``tropical`` (max in
place of LSE and a Heaviside spike: the eps -> 0 model).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from .lse import lse, tropical

Mode = Literal["soft", "hard", "tropical"]
MODES = ("soft", "hard", "tropical")


def ultralif_step(v: torch.Tensor, current: torch.Tensor, eps: torch.Tensor | float,
                  log_tau: torch.Tensor | float, threshold: float = 0.0,
                  mode: Mode = "soft") -> tuple[torch.Tensor, torch.Tensor]:
    """One UltraLIF step (module docstring) on membrane ``v`` and input ``current`` (same
    shape ``B x N``); returns ``(v_next, spike)``. ``eps`` and ``log_tau`` are tensors
    (broadcast) or floats; no clamp here, so eps may go below the training clamp."""
    log_tau = torch.as_tensor(log_tau, dtype=v.dtype, device=v.device)
    stack = torch.stack([v + log_tau, current])
    v_tilde = tropical(stack) if mode == "tropical" else lse(stack, eps)
    if mode == "soft":
        s = torch.sigmoid((v_tilde - threshold) / eps)
    else:
        s = (v_tilde > threshold).to(v.dtype)
    return v_tilde * (1 - s), s


def closed_form_t1(current: torch.Tensor, eps: float, log_tau: float,
                   threshold: float = 0.0) -> torch.Tensor:
    """The T = 1 spike from V0 = 0: ``sigmoid((log tau + eps softplus((I - log tau)/eps) -
    theta) / eps)``, a pointwise activation."""
    v_tilde = log_tau + eps * torch.nn.functional.softplus((current - log_tau) / eps)
    return torch.sigmoid((v_tilde - threshold) / eps)


class SpikingNeuron(nn.Module):
    """Base of every neuron here: state ``v``, ``reset(batch)``, ``forward(I_t) -> s_t``."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.mode: Mode = "soft"
        self.v: torch.Tensor | None = None

    def reset(self, batch: int, like: torch.Tensor) -> None:
        self.v = torch.zeros(batch, self.dim, dtype=like.dtype, device=like.device)

    def scales(self) -> dict[str, float]:
        """Learned scalars to log (``eps``, ``tau``)."""
        return {}


class LearnableEps(nn.Module):
    """One learnable eps per layer, stored as log eps, clamped to ``[eps_min, eps_max]``."""

    def __init__(self, init_eps: float = 1.0, eps_min: float = 0.1, eps_max: float = 20.0,
                 learn: bool = True) -> None:
        super().__init__()
        self.log_eps = nn.Parameter(torch.tensor(math.log(init_eps)), requires_grad=learn)
        self.eps_min, self.eps_max = eps_min, eps_max

    def forward(self) -> torch.Tensor:
        return self.log_eps.exp().clamp(self.eps_min, self.eps_max)


class UltraLIF(SpikingNeuron):
    """UltraLIF (``learn_tau=False``) and UltraPLIF (``learn_tau=True``): module docstring."""

    def __init__(self, dim: int, tau: float = 0.9, init_eps: float = 1.0, eps_min: float = 0.1,
                 eps_max: float = 20.0, learn_eps: bool = True, threshold: float = 0.0,
                 learn_tau: bool = False) -> None:
        super().__init__(dim)
        self.eps = LearnableEps(init_eps, eps_min, eps_max, learn_eps)
        self.log_tau = nn.Parameter(torch.tensor(math.log(tau)), requires_grad=learn_tau)
        self.threshold = threshold

    def forward(self, current: torch.Tensor) -> torch.Tensor:
        assert self.v is not None, "call reset(batch, like) first"
        self.v, s = ultralif_step(self.v, current, self.eps(), self.log_tau, self.threshold,
                                  self.mode)
        return s

    def scales(self) -> dict[str, float]:
        return {"eps": float(self.eps().detach()), "tau": float(self.log_tau.detach().exp())}


def UltraPLIF(dim: int, **kwargs: float | bool) -> UltraLIF:  # noqa: N802 (a class name)
    """UltraLIF with a learnable log tau (init log 0.9, unclamped as in the library)."""
    return UltraLIF(dim, learn_tau=True, **kwargs)  # type: ignore[arg-type]


def neighbours(v: torch.Tensor) -> torch.Tensor:
    """``(roll(V, +1), V, roll(V, -1))`` over the unit index (periodic): ``3 x B x N``."""
    return torch.stack([torch.roll(v, 1, dims=-1), v, torch.roll(v, -1, dims=-1)])


class UltraDLIF(SpikingNeuron):
    """UltraDLIF / UltraDPLIF (``learn_tau``: tau = sigmoid(tau_raw), library form only)."""

    def __init__(self, dim: int, form: Literal["library", "readme"] = "library",
                 tau: float = 0.9, init_eps: float = 1.0, eps_min: float = 0.1,
                 eps_max: float = 20.0, learn_eps: bool = True, threshold: float = 0.0,
                 learn_tau: bool = False) -> None:
        super().__init__(dim)
        if form not in ("library", "readme"):
            raise ValueError(f"UltraDLIF form={form!r}: choose library or readme")
        if learn_tau and form == "readme":
            raise ValueError("UltraDPLIF has no readme form: that form has no tau")
        self.form, self.threshold, self.learn_tau = form, threshold, learn_tau
        self.eps = LearnableEps(init_eps, eps_min, eps_max, learn_eps)
        self.tau_raw = nn.Parameter(torch.tensor(0.9 if learn_tau else tau),
                                    requires_grad=learn_tau)

    @property
    def tau(self) -> torch.Tensor:
        return torch.sigmoid(self.tau_raw) if self.learn_tau else self.tau_raw

    def forward(self, current: torch.Tensor) -> torch.Tensor:
        assert self.v is not None, "call reset(batch, like) first"
        eps = self.eps()
        smooth = (lambda a: tropical(a)) if self.mode == "tropical" else (lambda a: lse(a, eps))
        if self.form == "library":
            v = self.tau * self.v + current
            u = smooth(neighbours(v))
        else:
            v = u = smooth(neighbours(self.v)) + current
        if self.mode == "soft":
            s = torch.sigmoid((u - self.threshold) / eps)
        else:
            s = (u > self.threshold).to(v.dtype)
        self.v = v * (1 - s)
        return s

    def scales(self) -> dict[str, float]:
        return {"eps": float(self.eps().detach()), "tau": float(self.tau.detach())}


def UltraDPLIF(dim: int, **kwargs: float | bool) -> UltraDLIF:  # noqa: N802
    """UltraDLIF (library form) with tau = sigmoid(tau_raw), tau_raw init 0.9 (tau 0.711)."""
    return UltraDLIF(dim, form="library", learn_tau=True, **kwargs)  # type: ignore[arg-type]
