"""MarkovSource against enumeration of every sequence and scipy's entropy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy import stats

from raystudy.algorithms.discrete_diffusion import MarkovSource


def all_sequences(V: int, L: int) -> torch.Tensor:
    return torch.tensor(list(itertools.product(range(V), repeat=L)))


@pytest.mark.parametrize("order", [1, 2])
def test_probabilities_sum_to_one_and_entropy_matches_scipy(order):
    V, L = 3, 5
    source = MarkovSource(V, order=order, concentration=0.5, seed=order)
    log_p = source.log_prob(all_sequences(V, L))
    assert log_p.shape == (V**L,) and log_p.dtype == torch.float64
    p = log_p.exp().numpy()
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert source.entropy(L) == pytest.approx(stats.entropy(p) / L, rel=1e-10)


def test_log_prob_is_the_chain_rule_written_out_by_hand():
    source = MarkovSource(4, order=1, seed=7)
    x = torch.tensor([[0, 3, 3, 1, 2], [2, 2, 0, 1, 1]])
    P, pi = source.transition, source.stationary
    for row, seq in enumerate(x.tolist()):
        want = np.log(pi[seq[0]]) + sum(np.log(P[a, b]) for a, b in itertools.pairwise(seq))
        assert float(source.log_prob(x)[row]) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("order", [1, 2])
def test_start_is_stationary_and_the_bigram_marginal_is_every_positions(order):
    V, L = 3, 4
    source = MarkovSource(V, order=order, concentration=0.3, seed=11)
    sequences = all_sequences(V, L)
    p = source.log_prob(sequences).exp().numpy()
    joint = source.bigram_marginal()
    assert joint.sum() == pytest.approx(1.0, abs=1e-12)
    for ell in range(L - 1):                                           # same at each position
        at_ell = np.zeros((V, V))
        np.add.at(at_ell, (sequences[:, ell].numpy(), sequences[:, ell + 1].numpy()), p)
        np.testing.assert_allclose(at_ell, joint, atol=1e-12)


def test_entropy_rate_is_the_limit_of_the_per_token_entropy_and_matches_scipy_rows():
    source = MarkovSource(32, seed=0)
    rows = np.array([stats.entropy(row) for row in source.transition])
    assert source.entropy_rate() == pytest.approx(float(source.stationary @ rows), rel=1e-10)
    assert source.entropy(10_000) == pytest.approx(source.entropy_rate(), rel=1e-3)
    assert 0 < source.entropy_rate() < np.log(32)


def test_samples_follow_log_prob():
    V, L = 3, 3
    source = MarkovSource(V, order=1, concentration=1.0, seed=5)
    n = 20_000
    samples = source.sample(n, L, generator=torch.Generator().manual_seed(0))
    assert samples.shape == (n, L) and samples.dtype == torch.int64
    index = (samples * torch.tensor([V * V, V, 1])).sum(1).numpy()
    observed = np.bincount(index, minlength=V**L)
    expected = source.log_prob(all_sequences(V, L)).exp().numpy() * n
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_order_two_samples_follow_log_prob_and_sampling_is_seeded():
    source = MarkovSource(2, order=2, concentration=1.0, seed=1)
    samples = source.sample(20_000, 4, generator=torch.Generator().manual_seed(2))
    index = (samples * torch.tensor([8, 4, 2, 1])).sum(1).numpy()
    observed = np.bincount(index, minlength=16)
    expected = source.log_prob(all_sequences(2, 4)).exp().numpy() * 20_000
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    again = source.sample(20_000, 4, generator=torch.Generator().manual_seed(2))
    assert torch.equal(samples, again)
    assert np.array_equal(MarkovSource(2, order=2, concentration=1.0, seed=1).transition,
                          source.transition)


def test_bad_input_raises_one_line():
    source = MarkovSource(5)
    with pytest.raises(ValueError, match=r"outside \[0, 5\)") as info:
        source.log_prob(torch.tensor([[0, 5, 1]]))
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="contexts"):
        MarkovSource(256, order=2)
    with pytest.raises(ValueError, match="seq_len"):
        MarkovSource(5, order=2).sample(3, 1)
