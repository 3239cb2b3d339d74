"""Log-sum-exp, the max-plus semiring's differentiable soft maximum (UltraLIF, Minoza 2026).

``LSE_eps(a_1..a_n) = m + eps log sum_i exp((a_i - m) / eps)``, ``m = max_i a_i`` (the
stable form of the authors' code). Bounds: ``max a <= LSE_eps(a) <= max a + eps log n``;
``dLSE/da_i`` are softmax weights summing to 1. As ``eps -> 0`` it is ``max`` (``tropical``).
"""

from __future__ import annotations

import torch


def lse(stack: torch.Tensor, eps: torch.Tensor | float, dim: int = 0) -> torch.Tensor:
    """Soft maximum over ``dim`` of ``stack`` (``n x ...``) at temperature ``eps`` (> 0)."""
    m = stack.max(dim=dim, keepdim=True).values.detach()
    return (m + eps * torch.log(torch.exp((stack - m) / eps).sum(dim=dim, keepdim=True))
            ).squeeze(dim)


def tropical(stack: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """The eps -> 0 limit of :func:`lse`: the max-plus sum ``max_i a_i``."""
    return stack.max(dim=dim).values
