"""S3's prompt subsets and their errors: which prompts a subset rule picks from the pooled real
prompts, and how far its per-domain acceptance length lies from the pool's. The rules are
``select_diverse`` (farthest-point on cosine distance: raystudy's reading of SPEED-Bench's
Qualitative selection), a uniform random subset, and the nearest neighbours of one seeded
prompt (a near-duplicate-heavy subset); the embeddings are normalised token histograms."""

from __future__ import annotations

import numpy as np
from torch import Tensor

from raystudy.algorithms.speculative import select_diverse
from raystudy.studies.speculative_decoding.config import SUBSETS


def histograms(prompts: list[Tensor], vocab: int) -> np.ndarray:
    """Each prompt's normalised token histogram, ``(N, vocab)``: S3's embeddings."""
    counts = np.stack([np.bincount(p.cpu().numpy(), minlength=vocab) for p in prompts])
    return counts / counts.sum(1, keepdims=True)


def nearest(embeddings: np.ndarray, anchor: int, m: int) -> np.ndarray:
    """The ``m`` rows nearest row ``anchor`` by cosine distance, the anchor first (ties by
    index): a near-duplicate-heavy subset."""
    unit = embeddings / np.clip(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-300, None)
    distance = 1 - unit @ unit[anchor]
    distance[anchor] = -np.inf
    return np.argsort(distance, kind="stable")[:m]


def subset_error(al: np.ndarray, domains: np.ndarray, chosen: np.ndarray) -> float:
    """Mean over domains of |a subset's estimate of the domain's AL - the pool's|; the
    estimate is the mean AL of the subset's prompts of that domain, or of the whole subset
    where it holds none (what a benchmark without the category would report)."""
    errors = []
    for d in np.unique(domains):
        members = chosen[domains[chosen] == d]
        estimate = al[members].mean() if members.size else al[chosen].mean()
        errors.append(abs(estimate - al[domains == d].mean()))
    return float(np.mean(errors))


def subset_errors(al: np.ndarray, domains: np.ndarray, embeddings: np.ndarray,
                  fraction: float, draws: int, seed: int) -> dict[str, float]:
    """S3: each rule's ``subset_error`` at ``round(fraction N)`` prompts (at least 1),
    averaged over ``draws`` seeded draws."""
    n = len(al)
    m = max(1, round(fraction * n))
    errors: dict[str, list[float]] = {name: [] for name in SUBSETS}
    for draw in range(draws):
        rng = np.random.default_rng([draw, seed % 2**32])
        chosen = {"diverse": select_diverse(embeddings, m, seed=int(rng.integers(2**31))).numpy(),
                  "random": rng.choice(n, m, replace=False),
                  "near_duplicate": nearest(embeddings, int(rng.integers(n)), m)}
        for name, rows in chosen.items():
            errors[name].append(subset_error(al, domains, np.asarray(rows)))
    return {name: float(np.mean(values)) for name, values in errors.items()}
