"""Sample metrics against scipy and direct loops."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats
from scipy.spatial.distance import jensenshannon

from raystudy.algorithms.discrete_diffusion import (
    MarkovSource,
    bigram_js,
    oracle_gen_nll,
    sample_entropy,
)


def test_sample_entropy_is_the_mean_per_sample_unigram_entropy():
    samples = torch.tensor([[0, 0, 1, 2], [3, 3, 3, 3], [1, 2, 5, 4]])
    per_sample = [stats.entropy(np.unique(row, return_counts=True)[1]) for row in samples.numpy()]
    assert sample_entropy(samples) == pytest.approx(float(np.mean(per_sample)), rel=1e-12)
    assert sample_entropy(np.array([[7, 7, 7]])) == 0.0


def test_bigram_js_matches_scipy_and_is_zero_only_for_the_exact_marginal():
    source = MarkovSource(4, concentration=0.5, seed=3)
    samples = source.sample(300, 6, generator=torch.Generator().manual_seed(0))
    pairs = np.zeros((4, 4))
    np.add.at(pairs, (samples[:, :-1].numpy(), samples[:, 1:].numpy()), 1)
    reference = jensenshannon(pairs.ravel() / pairs.sum(), source.bigram_marginal().ravel()) ** 2
    assert bigram_js(samples, source) == pytest.approx(float(reference), rel=1e-10)
    collapsed = torch.zeros(300, 6, dtype=torch.long)
    assert bigram_js(collapsed, source) > bigram_js(samples, source)
    more = source.sample(30_000, 6, generator=torch.Generator().manual_seed(1))
    assert bigram_js(more, source) < bigram_js(samples, source)       # the floor falls with n


def test_oracle_gen_nll_of_true_samples_is_the_entropy_within_three_standard_errors():
    source = MarkovSource(32, seed=0)
    L = 32
    samples = source.sample(4000, L, generator=torch.Generator().manual_seed(4))
    per_sample = (-source.log_prob(samples) / L).numpy()
    se = per_sample.std(ddof=1) / np.sqrt(len(per_sample))
    nll = oracle_gen_nll(samples, source)
    assert nll == pytest.approx(float(per_sample.mean()), rel=1e-12)
    assert abs(nll - source.entropy(L)) < 3 * se
    uniform = torch.randint(32, (4000, L), generator=torch.Generator().manual_seed(5))
    assert oracle_gen_nll(uniform, source) > source.entropy(L) + 1.0


def test_metrics_reject_ids_outside_the_vocabulary():
    source = MarkovSource(4)
    with pytest.raises(ValueError, match=r"outside \[0, 4\)"):
        oracle_gen_nll(torch.tensor([[0, 4]]), source)
    with pytest.raises(ValueError, match=r"outside \[0, 4\)"):
        bigram_js(torch.tensor([[0, 9]]), source)
