"""The mean-direction test: scipy's directional statistics, invariance, level and power."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.transform import Rotation

from raystudy.algorithms.two_sample import mean_direction_test
from raystudy.algorithms.two_sample.directional import mean_direction

MU = np.array([0.0, 0.0, 1.0])


def vmf(mu, kappa, shape, seed):
    rng = np.random.default_rng(seed)
    return stats.vonmises_fisher(mu, kappa).rvs(shape[0] * shape[1],
                                                 random_state=rng).reshape(*shape, len(mu))


def test_mean_direction_and_resultant_length_match_scipy():
    U = vmf(MU, 4.0, (1, 40), 0)
    mu, R_bar, tau2 = mean_direction(U)
    ref = stats.directional_stats(U[0])
    np.testing.assert_allclose(mu[0], ref.mean_direction, atol=1e-12)
    assert R_bar[0] == pytest.approx(ref.mean_resultant_length, rel=1e-12)
    assert tau2[0] > 0


def test_a_common_rotation_leaves_the_statistic_unchanged():
    U, V = vmf(MU, 5.0, (1, 30), 1)[0], vmf(MU, 5.0, (1, 35), 2)[0]
    Q = Rotation.random(random_state=3).as_matrix()
    a, b = mean_direction_test(U, V), mean_direction_test(U @ Q.T, V @ Q.T)
    assert b.statistic == pytest.approx(a.statistic, rel=1e-9)


def test_level_under_the_vmf_null_power_against_a_rotated_mean_blind_to_concentration():
    X, Y = vmf(MU, 10.0, (400, 50), 4), vmf(MU, 10.0, (400, 50), 5)
    assert 0.025 <= mean_direction_test(X, Y).reject.mean() <= 0.085
    turned = np.array([np.sin(0.3), 0.0, np.cos(0.3)])
    assert mean_direction_test(X[:100], vmf(turned, 10.0, (100, 50), 6)).reject.mean() > 0.9
    wide = vmf(MU, 3.0, (400, 50), 7)   # same mean direction, another concentration
    assert mean_direction_test(X, wide).reject.mean() <= 0.09
