"""offline_greedy and OfflineRecompute against brute force, an assignment MILP and cdist."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from raystudy.algorithms.kcenter import KCenterSolution, OfflineRecompute, offline_greedy

from ._reference import assignment_milp_opt, brute_opt, radius_of

TINY = [(11, 2, 1, 0), (12, 3, 2, 1), (10, 1, 3, 2), (12, 4, 0, 3), (9, 2, 4, 4), (12, 3, 1, 5)]


def tiny_instance(n, seed):
    rng = np.random.default_rng(seed)
    # two Gaussian groups plus a few far points: OPT is decided by the outlier choice
    pts = np.concatenate([rng.normal(0, 1, (n // 2, 2)), rng.normal(6, 1, (n - n // 2 - 2, 2)),
                          rng.uniform(-30, 30, (2, 2))])
    return pts[rng.permutation(n)]


@pytest.mark.parametrize(("n", "k", "z", "seed"), TINY)
def test_greedy_is_within_three_times_brute_force_opt(n, k, z, seed):
    X = tiny_instance(n, seed)
    sol = offline_greedy(X, k, z)
    opt = brute_opt(X, k, z)
    assert sol.radius <= 3 * opt + 1e-12
    assert sol.radius >= opt - 1e-12                     # nothing beats OPT
    assert len(sol.centers) <= k and len(sol.outliers) <= z


@pytest.mark.parametrize(("n", "k", "z", "seed"), [(14, 2, 2, 10), (14, 3, 1, 11)])
def test_greedy_is_within_three_times_milp_opt(n, k, z, seed):
    X = tiny_instance(n, seed)
    opt = assignment_milp_opt(X, k, z)
    assert offline_greedy(X, k, z).radius <= 3 * opt + 1e-9


def test_radius_and_outliers_match_a_cdist_recomputation():
    X = np.random.default_rng(3).normal(size=(80, 3))
    sol = offline_greedy(X, 4, 6)
    r, beyond = radius_of(X, X[list(sol.centers)], 6)
    assert sol.radius == pytest.approx(r, rel=1e-12)
    assert sol.outliers == tuple(np.flatnonzero(beyond))
    assert len(set(sol.centers)) == len(sol.centers) <= 4


def test_three_groups_and_two_far_points_closed_form():
    # groups of 5 points 0.1 apart at 0, 10, 20 on a line, outliers at 1000 and 2000:
    # OPT (k=3, z=2) = 0.2 (the middle point of each group); the greedy's 3r cover can't
    # join groups 10 apart, so it takes one center per group and discards the far points
    line = np.concatenate([np.arange(5) * 0.1 + c for c in (0.0, 10.0, 20.0)] + [[1e3, 2e3]])
    X = np.c_[line, np.zeros_like(line)]
    sol = offline_greedy(X, 3, 2)
    assert sol.outliers == (15, 16)
    assert sorted(c // 5 for c in sol.centers) == [0, 1, 2]
    assert 0.2 - 1e-12 <= sol.radius <= 0.6 + 1e-12
    # no budget: the far points take two centers, one center covers 0..20.4, OPT = 10.2
    tight = offline_greedy(X, 3, 0)
    assert {15, 16} <= set(tight.centers) and tight.outliers == ()
    assert 10.2 - 1e-12 <= tight.radius <= 3 * 10.2 + 1e-12


def test_more_centers_than_points_and_budget_above_n():
    X = np.random.default_rng(0).normal(size=(4, 2))
    assert offline_greedy(X, 10, 0).radius == 0.0
    sol = offline_greedy(X, 1, 4)
    assert sol.radius == 0.0 and len(sol.outliers) == 3
    assert offline_greedy(np.zeros((0, 2)), 1, 0) == KCenterSolution((), 0.0, ())


BAD = [
    (np.array([[0.0, np.nan], [1.0, 1.0]]), 1, 0, "finite"),
    (np.ones((3, 2)), 0, 0, "k must be an integer >= 1"),
    (np.ones((3, 2)), 1, -1, "z must be an integer >= 0"),
    (np.ones(3), 1, 0, "shape (n, d)"),
]


@pytest.mark.parametrize(("X", "k", "z", "message"), BAD)
def test_bad_input_raises_one_line(X, k, z, message):
    with pytest.raises(ValueError) as err:
        offline_greedy(X, k, z)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_offline_recompute_is_the_greedy_on_the_live_points_with_the_slack_budget():
    X = np.random.default_rng(5).normal(size=(60, 2))
    alg = OfflineRecompute(3, 4, eps=0.5)
    ids = [alg.insert(p) for p in X]
    for i in ids[::3]:
        alg.delete(i)
    live = np.array([i for i in ids if i % 3 != 0])
    sol = alg.query()
    ref = offline_greedy(X[live], 3, 6)                  # floor(1.5 * 4) = 6
    assert sol.centers == tuple(int(live[c]) for c in ref.centers)
    assert sol.radius == ref.radius
    assert sol.outliers == tuple(int(live[o]) for o in ref.outliers)
    assert len(alg) == 40 and alg.ops == 40 * 39 // 2    # updates are free, one matrix a query
    alg.query()
    assert alg.ops == 40 * 39


def test_two_points_a_nanometre_apart_at_a_thousand():
    X = np.array([[1e3, 1e3], [1e3 + 1e-9, 1e3]])
    expanded = np.sqrt(max(0.0, 2 * (X[0] @ X[0]) - 2 * (X[0] @ X[1]) - X[0] @ X[0]
                           + X[1] @ X[1]))
    assert abs(expanded - 1e-9) > 1e-12                  # |a|^2+|b|^2-2ab loses the digits
    assert offline_greedy(X, 1, 0).radius == pytest.approx(1e-9, abs=1e-12)
    assert cdist(X[:1], X[1:])[0, 0] == pytest.approx(1e-9, abs=1e-12)
