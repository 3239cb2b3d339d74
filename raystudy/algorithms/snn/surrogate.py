"""A true surrogate-gradient LIF: Heaviside spike forward, a surrogate derivative backward
(Neftci, Mostafa & Zenke 2019; fast sigmoid = SuperSpike, Zenke & Ganguli 2018; atan as
snntorch's default). PLIF learns tau = sigmoid(w) (Fang et al. 2021); ``learn_threshold``
makes theta one learnable scalar per layer (initialised at ``threshold``; its gradient is the
surrogate's, with the sign flipped), a tuned baseline's answer to inputs whose scale a fixed
theta = 1 does not fit. Written here; the paper's own baselines are all smooth in the forward
pass (``baselines.py``).

One step: ``U = tau V + I``; ``s = H(U - theta)`` (exactly 0/1); reset ``zero``: ``V = U (1 -
s)``, ``subtract``: ``V = U - s theta``. Backward: ``ds/dU = 1 / (k |U - theta| + 1)^2``
(fast_sigmoid), ``1 / (1 + (pi k (U - theta) / 2)^2)`` (atan, up to snntorch's scale), or
``k sigmoid'(k (U - theta))`` (sigmoid), slope ``k``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from torch import nn

from .neurons import SpikingNeuron

Surrogate = Literal["fast_sigmoid", "atan", "sigmoid"]


class HeavisideSurrogate(torch.autograd.Function):
    """``H(u)`` forward (``u > 0``), a surrogate derivative backward."""

    @staticmethod
    def forward(ctx: Any, u: torch.Tensor, kind: str, slope: float) -> torch.Tensor:
        ctx.save_for_backward(u)
        ctx.kind, ctx.slope = kind, slope
        return (u > 0).to(u.dtype)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (u,) = ctx.saved_tensors
        k = ctx.slope
        if ctx.kind == "fast_sigmoid":
            d = 1 / (k * u.abs() + 1) ** 2
        elif ctx.kind == "atan":
            d = 1 / (1 + (math.pi * k * u / 2) ** 2)
        else:
            sig = torch.sigmoid(k * u)
            d = k * sig * (1 - sig)
        return grad * d, None, None


def spike_fn(u: torch.Tensor, surrogate: Surrogate = "fast_sigmoid",
             slope: float = 25.0) -> torch.Tensor:
    if surrogate not in ("fast_sigmoid", "atan", "sigmoid"):
        raise ValueError(f"surrogate={surrogate!r}: choose fast_sigmoid, atan or sigmoid")
    return HeavisideSurrogate.apply(u, surrogate, slope)


def surrogate_lif_step(v: torch.Tensor, current: torch.Tensor, tau: torch.Tensor | float,
                       threshold: torch.Tensor | float = 1.0,
                       surrogate: Surrogate = "fast_sigmoid",
                       slope: float = 25.0, reset: Literal["zero", "subtract"] = "zero",
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """One surrogate-gradient LIF step (module docstring): ``(v_next, spike)``, spike in
    {0, 1}; ``v``, ``current`` ``B x N``."""
    u = tau * v + current
    s = spike_fn(u - threshold, surrogate, slope)
    if reset == "zero":
        return u * (1 - s), s
    if reset == "subtract":
        return u - s * threshold, s
    raise ValueError(f"reset={reset!r}: choose zero or subtract")


class SGLIF(SpikingNeuron):
    """Surrogate-gradient LIF (``learn_tau=False``) or PLIF (tau = sigmoid(w), w init
    logit(tau)); with ``learn_threshold`` theta is one learnable scalar of the layer, init
    ``threshold``. Its spikes are binary in every mode."""

    def __init__(self, dim: int, tau: float = 0.9, threshold: float = 1.0,
                 surrogate: Surrogate = "fast_sigmoid", slope: float = 25.0,
                 reset: Literal["zero", "subtract"] = "zero", learn_tau: bool = False,
                 learn_threshold: bool = False) -> None:
        super().__init__(dim)
        self.surrogate, self.slope, self.reset_kind = surrogate, slope, reset
        self.learn_tau, self.learn_threshold = learn_tau, learn_threshold
        self.w = nn.Parameter(torch.tensor(math.log(tau / (1 - tau))), requires_grad=learn_tau)
        self.theta: torch.Tensor | float = (  # a fixed theta stays out of the state dict
            nn.Parameter(torch.tensor(float(threshold))) if learn_threshold else float(threshold))

    @property
    def tau(self) -> torch.Tensor:
        return torch.sigmoid(self.w)

    @property
    def threshold(self) -> torch.Tensor | float:
        return self.theta

    def forward(self, current: torch.Tensor) -> torch.Tensor:
        assert self.v is not None, "call reset(batch, like) first"
        self.v, s = surrogate_lif_step(self.v, current, self.tau, self.theta,
                                       self.surrogate, self.slope, self.reset_kind)
        return s

    def scales(self) -> dict[str, float]:
        out = {"tau": float(self.tau.detach())}
        if isinstance(self.theta, torch.Tensor):  # learned
            out["threshold"] = float(self.theta.detach())
        return out
