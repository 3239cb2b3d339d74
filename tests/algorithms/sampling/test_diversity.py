"""Minibatch entropy on hand-computed cases."""

import numpy as np
import pytest

from raystudy.algorithms.sampling import (
    entropy_bits,
    expected_random_entropy,
    minibatch_entropies,
    monte_carlo_random_entropy,
)


@pytest.mark.parametrize(
    ("labels", "bits"),
    [
        ([3, 3, 3, 3], 0.0),
        ([0, 0, 1, 1], 1.0),
        ([0, 1, 2, 3], 2.0),
        (["a", "a", "b"], np.log2(3) - 2 / 3),
        (np.arange(14.0), np.log2(14)),
        ([], 0.0),
    ],
)
def test_entropy_bits(labels, bits):
    assert entropy_bits(labels) == pytest.approx(bits, abs=1e-12)


def test_minibatch_entropies_shape():
    out = minibatch_entropies([[0, 0], [0, 1], np.array([1, 2, 3, 4], np.int8)])
    assert out.shape == (3,) and out.dtype == np.float64
    assert out.tolist() == pytest.approx([0.0, 1.0, 2.0])


def test_expected_entropy_hand_computed():
    # two classes of 2 rows, B = 2: P(mixed) = 4/6 without and 1/2 with replacement
    assert expected_random_entropy([2, 2], 2) == pytest.approx(2 / 3)
    assert expected_random_entropy([2, 2], 2, replace=True) == pytest.approx(0.5)
    # B = N: every minibatch is the whole population
    assert expected_random_entropy([1, 1, 2], 4) == pytest.approx(1.5)
    assert expected_random_entropy([5], 3) == 0.0
    assert expected_random_entropy([3, 0, 3], 1) == 0.0


def test_expected_entropy_matches_monte_carlo():
    labels = np.repeat(np.arange(14), np.arange(1, 15) * 50)
    exact = expected_random_entropy(np.bincount(labels), 64)
    estimate = monte_carlo_random_entropy(labels, 64, n_batches=4000, seed=0)
    assert estimate == pytest.approx(exact, abs=0.01)
    assert exact < np.log2(14)


def test_expected_entropy_rejects_oversized_batch():
    with pytest.raises(ValueError):
        expected_random_entropy([1, 1], 3)
