"""exact_kcenter: its brute force and MILP agree, and both match independent references."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.algorithms.kcenter import exact_kcenter

from ._reference import assignment_milp_opt, brute_opt, radius_of


def instance(n, seed, d=2):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(0, 1, (n - 2, d)), rng.uniform(-20, 20, (2, d))])


@pytest.mark.parametrize(("n", "k", "z", "seed"),
                         [(8, 1, 0, 0), (10, 2, 1, 1), (12, 3, 2, 2), (13, 2, 3, 3),
                          (14, 4, 1, 4), (11, 3, 0, 5)])
def test_brute_and_milp_agree_and_match_an_enumeration_with_cdist(n, k, z, seed):
    X = instance(n, seed)
    brute = exact_kcenter(X, k, z, method="brute")
    mip = exact_kcenter(X, k, z, method="milp")
    opt = brute_opt(X, k, z)
    assert brute.radius == pytest.approx(opt, rel=1e-12)
    assert mip.radius == pytest.approx(opt, rel=1e-12)
    for sol in (brute, mip):                             # the centers achieve the radius
        r, beyond = radius_of(X, X[list(sol.centers)], z)
        assert r == pytest.approx(sol.radius, rel=1e-12) and len(sol.centers) <= k
        assert sol.outliers == tuple(np.flatnonzero(beyond)) and len(sol.outliers) <= z


def test_milp_above_brute_force_size_matches_the_assignment_milp():
    X = instance(16, 7, d=3)
    assert exact_kcenter(X, 3, 2).radius == pytest.approx(assignment_milp_opt(X, 3, 2),
                                                          rel=1e-9)


def test_closed_forms():
    # the corners of a unit square, one center (a corner: centers are input points): the
    # opposite corner is sqrt 2 away, so OPT = sqrt 2; discarding it leaves OPT = 1
    square = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert exact_kcenter(square, 1, 0).radius == pytest.approx(np.sqrt(2), rel=1e-15)
    assert exact_kcenter(square, 1, 1).radius == pytest.approx(1.0, rel=1e-15)
    assert exact_kcenter(square, 2, 2).radius == 0.0
    assert exact_kcenter(square, 1, 4, method="milp").radius == 0.0
    # two points 1e-9 apart at 1e3: the difference survives
    pair = np.array([[1e3, 1e3], [1e3 + 1e-9, 1e3]])
    for method in ("brute", "milp"):
        assert exact_kcenter(pair, 1, 0, method=method).radius == pytest.approx(1e-9, abs=1e-12)


def test_bad_method_and_input():
    with pytest.raises(ValueError, match="method must be one of"):
        exact_kcenter(np.ones((3, 2)), 1, 0, method="lp")
    with pytest.raises(ValueError, match="finite"):
        exact_kcenter(np.array([[np.nan, 0.0]]), 1, 0)
