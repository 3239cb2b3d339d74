r"""Sample-quality metrics for diffusion LMs on data with an exact likelihood.

The paper reports Gen PPL under GPT-2 Large and the per-sample unigram entropy. On a
``MarkovSource`` the evaluator can be exact (raystudy's choice, see
``docs/uniform_diffusion.md``). For n samples :math:`x^{(j)} \in [V]^L`:

* **Oracle Gen NLL**: :math:`\frac{1}{nL}\sum_j -\log p_\text{data}(x^{(j)})` in nats per
  token, Gen PPL with a perfect evaluator; for true samples its expectation is the
  source's ``entropy(L)``. Low-entropy (collapsed) samples can score *below* it, so read
  it with the next two.
* **Sample entropy** (Duo, ``metrics.py`` ``record_entropy``): per sample, the entropy of
  its unigram histogram :math:`\hat u^{(j)}_v = \#\{\ell: x^{(j)}_\ell = v\}/L`,
  :math:`-\sum_v \hat u_v \log \hat u_v` in nats, averaged over samples. It falls when
  samples collapse.
* **Bigram Jensen-Shannon divergence**: :math:`\hat J` the histogram of all adjacent pairs
  :math:`(x_\ell, x_{\ell+1})` over all samples (n(L-1) pairs), :math:`J` the source's
  exact ``bigram_marginal()``, :math:`M = (\hat J + J)/2` and
  :math:`\mathrm{JS} = \tfrac12 \mathrm{KL}(\hat J\|M) + \tfrac12\mathrm{KL}(J\|M)` in
  nats, in [0, log 2]. It is two-sided (noise and collapse both raise it); finite samples
  give it a floor, which the study measures with as many true samples.

Shapes: ``samples`` is (n, L) integer ids (a tensor or a NumPy array).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from ._checks import check_ids
from .markov import MarkovSource


def _as_ids(samples: Tensor | np.ndarray, vocab_size: int | None = None) -> Tensor:
    x = torch.as_tensor(samples)
    if x.dim() != 2:
        raise ValueError(f"samples must be (n, L), got shape {tuple(x.shape)}")
    if vocab_size is not None:
        check_ids(x, vocab_size, "samples")
    return x.long()


def oracle_gen_nll(samples: Tensor | np.ndarray, source: MarkovSource) -> float:
    """Mean exact negative log-likelihood per token of ``samples`` under ``source`` (nats).

    The per-sample values (for a standard error) are ``-source.log_prob(samples) / L``.
    """
    x = _as_ids(samples, source.vocab_size)
    return float(-source.log_prob(x).mean() / x.shape[1])


def sample_entropy(samples: Tensor | np.ndarray) -> float:
    """Duo's per-sample unigram entropy (nats), averaged over samples."""
    x = _as_ids(samples)
    if x.numel() == 0:
        raise ValueError("samples is empty")
    if int(x.min()) < 0:
        raise ValueError(f"samples holds negative token ids: min {int(x.min())}")
    V = int(x.max()) + 1
    counts = torch.zeros(x.shape[0], V, dtype=torch.float64)
    counts.scatter_add_(1, x, torch.ones_like(x, dtype=torch.float64))
    u = counts / x.shape[1]
    return float(torch.special.entr(u).sum(1).mean())


def bigram_js(samples: Tensor | np.ndarray, source: MarkovSource) -> float:
    """Jensen-Shannon divergence (nats) of the samples' adjacent-pair histogram from the
    source's exact bigram marginal."""
    x = _as_ids(samples, source.vocab_size).numpy()
    if x.shape[1] < 2:
        raise ValueError(f"samples need L >= 2 for bigrams, got L = {x.shape[1]}")
    V = source.vocab_size
    pairs = (x[:, :-1] * V + x[:, 1:]).ravel()
    J_hat = np.bincount(pairs, minlength=V * V) / pairs.size
    J = source.bigram_marginal().ravel()
    M = (J_hat + J) / 2

    def kl_to_m(p: np.ndarray) -> float:
        support = p > 0                                                # 0 log 0 = 0
        return float((p[support] * np.log(p[support] / M[support])).sum())

    return 0.5 * kl_to_m(J_hat) + 0.5 * kl_to_m(J)
