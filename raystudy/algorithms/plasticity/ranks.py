r"""Ranks of a layer's features and its dormant and dead units.

For a features matrix :math:`\Phi \in \mathbb{R}^{n \times d}` (``n`` samples, ``d`` units,
post-activation) with singular values :math:`s_1 \ge \dots \ge s_q`, :math:`q = \min(n, d)`:

* **Effective rank** (Roy & Vetterli 2007, "The effective rank: a measure of effective
  dimensionality"): :math:`p_k = s_k / \sum_j s_j`,
  :math:`\operatorname{erank}(\Phi) = \exp(-\sum_k p_k \log p_k)`, between 1 (one
  direction) and :math:`q` (all singular values equal). Differentiable, so it can be
  maximised (:mod:`.interventions`, the ER term of L2-ER). The zero matrix has erank 0
  here (Roy & Vetterli leave it undefined; 0 marks a fully collapsed layer).
* **srank** (Kumar et al. 2021, "Implicit under-parameterization", Eq. 1):
  :math:`\operatorname{srank}_\delta(\Phi) = \min\{k : \sum_{i \le k} s_i \ge
  (1-\delta) \sum_i s_i\}`, :math:`\delta = 0.01` by default; 0 for the zero matrix.
* **Dormant units** (Sokar et al. 2023, ReDo, Eq. 1): the score of unit :math:`i` is
  :math:`\sigma_i = \mathbb{E}_x|h_i(x)| \,/\, \tfrac{1}{d}\sum_j \mathbb{E}_x|h_j(x)|`; a
  unit is :math:`\tau`-dormant when :math:`\sigma_i \le \tau`. With every unit silent
  all are dormant.
* **Dead units**: zero activation on every sample (for ReLU: never active).

Shapes: ``features`` is ``n x d`` (any further trailing dimensions, e.g. conv channels x
height x width, are flattened into ``d``).
"""

from __future__ import annotations

import torch
from torch import Tensor


def _as_matrix(features: Tensor) -> Tensor:
    if features.dim() < 2:
        raise ValueError(f"features must be samples x units, got shape {tuple(features.shape)}")
    return features.reshape(features.shape[0], -1)


def singular_values(features: Tensor) -> Tensor:
    """Singular values of the ``n x d`` features matrix, descending."""
    return torch.linalg.svdvals(_as_matrix(features))


def effective_rank(features: Tensor) -> Tensor:
    r"""Roy & Vetterli's effective rank :math:`\exp H(p)`, a differentiable 0-dim tensor."""
    return effective_rank_of(singular_values(features))


def effective_rank_of(s: Tensor) -> Tensor:
    """Effective rank from singular values ``s`` (saves an SVD when both ranks are needed)."""
    total = s.sum()
    if total <= 0:
        return total * 0.0  # zero matrix: keeps the graph and dtype, value 0
    p = s / total
    # p log p with 0 log 0 = 0; the clamp keeps the gradient finite where p = 0.
    entropy = -(p * torch.log(p.clamp_min(torch.finfo(p.dtype).tiny))).sum()
    return torch.exp(entropy)


def srank(features: Tensor, delta: float = 0.01) -> int:
    r"""Smallest :math:`k` whose top-:math:`k` singular values hold :math:`1-\delta` of the sum."""
    return srank_of(singular_values(features.detach()), delta)


def srank_of(s: Tensor, delta: float = 0.01) -> int:
    """srank from singular values ``s``."""
    if not 0 <= delta < 1:
        raise ValueError(f"delta={delta} must be in [0, 1)")
    s = s.detach().double()
    total = float(s.sum())
    if total <= 0:
        return 0
    cumulative = torch.cumsum(s, 0) / total
    # A relative tolerance so that an exact split (delta = 0, or a hand-built case) counts.
    return int(torch.searchsorted(cumulative, torch.tensor(1 - delta - 1e-12, dtype=s.dtype))) + 1


def dormant_scores(features: Tensor) -> Tensor:
    r"""ReDo's per-unit score :math:`\sigma_i` (length ``d``); zeros if every unit is silent."""
    activity = _as_matrix(features.detach()).abs().mean(0)
    mean = activity.mean()
    if mean <= 0:
        return torch.zeros_like(activity)
    return activity / mean


def dormant_mask(features: Tensor, tau: float = 0.025) -> Tensor:
    r"""Boolean mask of the :math:`\tau`-dormant units (:math:`\sigma_i \le \tau`)."""
    if tau < 0:
        raise ValueError(f"tau={tau} must be >= 0")
    return dormant_scores(features) <= tau


def dormant_fraction(features: Tensor, tau: float = 0.025) -> float:
    r"""Fraction of :math:`\tau`-dormant units (ReDo; :math:`\tau = 0.025` as Sokar et al.)."""
    return float(dormant_mask(features, tau).double().mean())


def dead_units(features: Tensor) -> int:
    """Number of units whose activation is zero on every sample."""
    return int((_as_matrix(features.detach()).abs().amax(0) == 0).sum())
