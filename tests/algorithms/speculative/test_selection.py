"""select_diverse on clustered embeddings: one point per cluster before any cluster's second,
near-duplicates last, and every pick the max-min cosine distance point (checked by brute
force with numpy)."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.algorithms.speculative import select_diverse

K, PER, D = 6, 7, 12


def _clusters(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K tight clusters around orthogonal directions, then near-duplicates of 5 points.
    Returns the embeddings, each row's cluster and the rows that are near-duplicates."""
    rng = np.random.default_rng(seed)
    centres = np.linalg.qr(rng.normal(size=(D, D)))[0][:K] * rng.uniform(1, 5, size=(K, 1))
    points = np.repeat(centres, PER, axis=0) + 0.05 * rng.normal(size=(K * PER, D))
    cluster = np.repeat(np.arange(K), PER)
    twins = rng.choice(K * PER, size=5, replace=False)
    duplicates = points[twins] * 1.5 + 1e-7 * rng.normal(size=(5, D))  # same direction
    order = rng.permutation(K * PER + 5)  # duplicates not at the end of the array
    embeddings = np.concatenate([points, duplicates])[order]
    labels = np.concatenate([cluster, cluster[twins]])[order]
    is_duplicate = np.concatenate([np.zeros(K * PER, bool), np.ones(5, bool)])[order]
    return embeddings, labels, is_duplicate


def _cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return 1 - a @ b.T


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_per_cluster_first_and_near_duplicates_last(seed):
    embeddings, labels, _ = _clusters(seed)
    n = len(embeddings)
    order = select_diverse(embeddings, n, seed=seed).numpy()
    assert sorted(order.tolist()) == list(range(n))  # a permutation
    assert len(set(labels[order[:K]])) == K  # the first K picks cover every cluster
    # the last 5 picks are each within 1e-6 of an earlier pick: the near-duplicate pairs
    for t in range(n - 5, n):
        assert _cosine_distance(embeddings[order[t]], embeddings[order[:t]]).min() < 1e-6
    assert _cosine_distance(embeddings[order[n - 6]], embeddings[order[:n - 6]]).min() > 1e-4


def test_every_pick_maximises_the_distance_to_the_nearest_pick():
    embeddings, _, _ = _clusters(3)
    order = select_diverse(embeddings, 20, seed=5).numpy()
    distance = _cosine_distance(embeddings, embeddings)
    for t in range(1, 20):
        nearest = distance[:, order[:t]].min(axis=1)
        nearest[order[:t]] = -np.inf
        assert nearest[order[t]] == pytest.approx(nearest.max(), abs=1e-12)


def test_the_seed_picks_the_first_point_and_the_order_is_reproducible():
    embeddings, _, _ = _clusters(4)
    firsts = {int(select_diverse(embeddings, 1, seed=s)[0]) for s in range(10)}
    assert len(firsts) > 1
    a, b = select_diverse(embeddings, 15, seed=7), select_diverse(embeddings, 15, seed=7)
    assert a.tolist() == b.tolist()
    assert a.tolist()[:5] == select_diverse(embeddings, 5, seed=7).tolist()


def test_bad_input_is_one_line():
    embeddings, _, _ = _clusters(0)
    for m in (0, len(embeddings) + 1):
        with pytest.raises(ValueError, match=f"m={m}"):
            select_diverse(embeddings, m)
    with pytest.raises(ValueError, match="embeddings must be"):
        select_diverse(embeddings[0], 1)
    bad = embeddings.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        select_diverse(bad, 2)
