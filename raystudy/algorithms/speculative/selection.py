r"""Diverse prompt subsets: raystudy's reading of SPEED-Bench's Qualitative selection ("a custom
selection algorithm to minimize semantic redundancy" on prompt embeddings; the algorithm is not
published).

Greedy farthest-point traversal (Gonzalez 1985) on cosine distance
:math:`d(a, b) = 1 - a^\top b / (\lVert a \rVert \lVert b \rVert)`: the first point is drawn
from a seeded generator, then each next point maximises its distance to the nearest point
already chosen, :math:`i_{t+1} = \arg\max_i \min_{s \le t} d(e_i, e_{i_s})` (ties: the smaller
index). A cluster's second point comes only after every farther cluster has one, and
near-duplicates of chosen points (distance about 0) come last.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def select_diverse(embeddings: Tensor | np.ndarray, m: int, *, seed: int = 0) -> Tensor:
    """The first ``m`` indices of the farthest-point order of ``embeddings (N, D)`` on cosine
    distance, from a first point drawn with ``seed``; returns ``(m,)`` long. A zero row is at
    distance 1 from every point."""
    e = torch.as_tensor(np.asarray(embeddings) if not isinstance(embeddings, Tensor)
                        else embeddings).double()
    if e.dim() != 2 or e.shape[0] == 0:
        raise ValueError(f"embeddings must be (N, D) with N >= 1, got shape {tuple(e.shape)}")
    if not bool(torch.isfinite(e).all()):
        raise ValueError("embeddings hold NaN or inf")
    n = e.shape[0]
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= n:
        raise ValueError(f"m={m!r} must be an integer in [1, N={n}]")
    unit = e / e.norm(dim=1, keepdim=True).clamp_min(1e-300)
    generator = torch.Generator().manual_seed(seed)
    first = int(torch.randint(n, (1,), generator=generator))
    chosen = [first]
    nearest = 1 - unit @ unit[first]  # min over chosen of the cosine distance, (N,)
    nearest[first] = -np.inf
    for _ in range(m - 1):
        i = int(nearest.argmax())  # argmax returns the first maximum: ties by smaller index
        chosen.append(i)
        nearest = torch.minimum(nearest, 1 - unit @ unit[i])
        nearest[i] = -np.inf
    return torch.tensor(chosen, dtype=torch.long)
