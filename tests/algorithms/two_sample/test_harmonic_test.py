"""The proposed test end to end: size under H0, invariances, zeros, dtypes, batches."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.transform import Rotation

from raystudy.algorithms.two_sample import two_sample_test
from raystudy.algorithms.two_sample.samples import to_sphere


def dirichlet(R, n, alpha, seed):
    return np.random.default_rng(seed).dirichlet(alpha, size=(R, n))


def test_cross_test_has_its_size_and_a_normal_null_at_n_50():
    """400 null replicates (Monte Carlo s.e. of a 5 % rate: 0.011); deterministic seeds."""
    X, Y = dirichlet(400, 50, [2, 2, 2], 0), dirichlet(400, 60, [2, 2, 2], 1)
    res = two_sample_test(X, Y, seed=7)
    assert res.statistic.shape == (400,)
    assert 0.02 <= res.reject.mean() <= 0.09
    assert stats.kstest(res.statistic, "norm").pvalue > 0.01
    np.testing.assert_allclose(res.pvalue, stats.norm.sf(res.statistic))


def test_full_studentization_at_fixed_degree_is_right_skewed_under_h0():
    X, Y = dirichlet(300, 40, [2, 2, 2], 2), dirichlet(300, 40, [2, 2, 2], 3)
    full = two_sample_test(X, Y, studentize="full", degree=6).statistic
    cross = two_sample_test(X, Y, studentize="cross", degree=6).statistic
    assert stats.skew(full) > 1.0 > abs(stats.skew(cross))


def test_power_against_the_same_mean_concentration_alternative():
    X, Y = dirichlet(100, 50, [2, 2, 2], 4), dirichlet(100, 50, [8, 8, 8], 5)
    assert two_sample_test(X, Y).reject.mean() > 0.7
    assert two_sample_test(X, Y, studentize="full").reject.mean() > 0.7


@pytest.mark.parametrize("studentize", ["cross", "full"])
def test_a_common_permutation_of_the_parts_leaves_the_statistic_unchanged(studentize):
    x, y = dirichlet(1, 30, [1, 2, 3], 6)[0], dirichlet(1, 25, [2, 2, 1], 7)[0]
    perm = [2, 0, 1]
    a = two_sample_test(x, y, seed=3, studentize=studentize)
    b = two_sample_test(x[:, perm], y[:, perm], seed=3, studentize=studentize)
    assert b.statistic == pytest.approx(a.statistic, rel=1e-10)


def test_a_common_rotation_of_directional_data_leaves_the_statistic_unchanged():
    u = to_sphere(dirichlet(1, 30, [1, 2, 3], 8)[0])
    v = to_sphere(dirichlet(1, 30, [3, 2, 2], 9)[0])
    Q = Rotation.random(random_state=0).as_matrix()
    a = two_sample_test(u, v, data="directional", degree=8)
    b = two_sample_test(u @ Q.T, v @ Q.T, data="directional", degree=8)
    assert b.statistic == pytest.approx(a.statistic, rel=1e-9)


def test_exact_zeros_are_fine():
    rng = np.random.default_rng(10)
    x = rng.multinomial(5, [0.2, 0.3, 0.5], 40) / 5
    y = rng.multinomial(5, [0.4, 0.3, 0.3], 40) / 5
    assert (x == 0).any()
    for studentize in ("cross", "full"):
        res = two_sample_test(x, y, studentize=studentize)
        assert np.isfinite(res.statistic) and 0 <= res.pvalue <= 1


def test_float32_input_gives_the_float64_answer():
    x, y = dirichlet(1, 40, [2, 2, 2], 11)[0], dirichlet(1, 40, [3, 2, 2], 12)[0]
    a = two_sample_test(x, y)
    b = two_sample_test(x.astype(np.float32), y.astype(np.float32))
    assert b.statistic == pytest.approx(a.statistic, rel=1e-3, abs=1e-3)


def test_a_batch_of_one_is_the_single_test():
    x, y = dirichlet(1, 20, [2, 2, 2], 13), dirichlet(1, 22, [2, 2, 2], 14)
    for studentize in ("cross", "full"):
        single = two_sample_test(x[0], y[0], seed=5, studentize=studentize)
        batch = two_sample_test(x, y, seed=5, studentize=studentize)
        assert isinstance(single.statistic, float) and isinstance(single.reject, bool)
        assert batch.statistic[0] == pytest.approx(single.statistic, rel=1e-12)


def test_untruncated_degree_zero_runs_and_detects_a_mean_shift():
    X, Y = dirichlet(50, 60, [2, 2, 2], 15), dirichlet(50, 60, [4, 2, 2], 16)
    assert two_sample_test(X, Y, degree=0).reject.mean() > 0.5
