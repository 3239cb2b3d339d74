r"""A Markov source over V tokens with an exact likelihood and exact entropies.

The data of the ``uniform_diffusion`` study's quick profile (raystudy's choice: the
paper trains on LM1B/OWT, where no exact likelihood exists). An order-k chain: every
context :math:`c = (x_{\ell-k}, \dots, x_{\ell-1}) \in [V]^k` has a transition row
:math:`P_c \sim \mathrm{Dirichlet}(\beta \mathbf{1}_V)` (:math:`\beta` the
``concentration``; 0.1 gives sparse, predictable rows). The first k tokens are drawn
from the stationary distribution :math:`\pi` of the chain on contexts, so every position
has the same marginals. Then

.. math::
    \log p(x) = \log \pi(x_{1:k}) + \sum_{\ell > k} \log P_{x_{\ell-k:\ell-1}}[x_\ell],
    \qquad h = \sum_c \pi(c)\, H(P_c)\ \ \text{(entropy rate)},

and the exact per-token entropy of a length-L sequence is
:math:`H(x_{1:L})/L = (H(\pi) + (L - k)\,h)/L`, all in nats. The adjacent-pair marginal
:math:`J[a, b] = \Pr(x_\ell = a, x_{\ell+1} = b) = \sum_{c:\,c_k = a} \pi(c) P_c[b]`
is the same at every position.

Contexts are indexed base V with the oldest token most significant; the next context
is :math:`(cV + v) \bmod V^k`. The stationary distribution is solved for exactly (a
dense :math:`V^k \times V^k` system, so :math:`V^k \le 4096`).

Shapes: sequences are (n, L) int64 ids in [0, V).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from ._checks import check_ids

MAX_CONTEXTS = 4096


def _entropy(p: np.ndarray) -> np.ndarray:
    """Shannon entropy in nats along the last axis, 0 log 0 = 0."""
    positive = np.where(p > 0, p, 1.0)
    return -(p * np.log(positive)).sum(-1)


class MarkovSource:
    """An order-``order`` Markov chain with Dirichlet(``concentration``) transition rows.

    Args:
        vocab_size: V.
        order: k, the number of previous tokens a transition depends on (default 1).
        concentration: the symmetric Dirichlet parameter of each row (default 0.1).
        seed: NumPy seed of the rows (default 0); the source is a pure function of
            (vocab_size, order, concentration, seed).

    Attributes:
        transition: (V^k, V) float64, row c is :math:`P_c`.
        stationary: (V^k,) float64, :math:`\\pi` over contexts.
    """

    def __init__(self, vocab_size: int, order: int = 1, concentration: float = 0.1,
                 seed: int = 0) -> None:
        if vocab_size < 2:
            raise ValueError(f"vocab_size={vocab_size} must be >= 2")
        if order < 1:
            raise ValueError(f"order={order} must be >= 1")
        if concentration <= 0:
            raise ValueError(f"concentration={concentration} must be > 0")
        n_contexts = vocab_size**order
        if n_contexts > MAX_CONTEXTS:
            raise ValueError(f"vocab_size**order = {n_contexts} contexts is more than "
                             f"{MAX_CONTEXTS}; use a smaller vocabulary or order")
        self.vocab_size, self.order, self.concentration, self.seed = (
            vocab_size, order, concentration, seed)
        self.n_contexts = n_contexts
        rng = np.random.default_rng(seed)
        self.transition = rng.dirichlet(np.full(vocab_size, concentration), size=n_contexts)
        self.stationary = self._stationary()
        with np.errstate(divide="ignore"):                             # log 0 = -inf
            self._log_transition = np.log(self.transition)

    def _next_context(self, context: np.ndarray, token: np.ndarray) -> np.ndarray:
        return (context * self.vocab_size + token) % self.n_contexts

    def _stationary(self) -> np.ndarray:
        """Solve pi T = pi, sum pi = 1 for the chain on contexts."""
        V, C = self.vocab_size, self.n_contexts
        T = np.zeros((C, C))
        contexts = np.repeat(np.arange(C), V)
        tokens = np.tile(np.arange(V), C)
        np.add.at(T, (contexts, self._next_context(contexts, tokens)), self.transition.ravel())
        A = T.T - np.eye(C)
        A[-1] = 1.0                                                    # replace one equation
        b = np.zeros(C)
        b[-1] = 1.0
        try:
            pi = np.linalg.solve(A, b)
        except np.linalg.LinAlgError:
            raise ValueError(f"the chain drawn with seed={self.seed} has no unique stationary "
                             "distribution; use a larger concentration") from None
        if pi.min() < -1e-9:
            raise ValueError(f"the chain drawn with seed={self.seed} has no unique stationary "
                             "distribution; use a larger concentration")
        pi = np.clip(pi, 0.0, None)
        return pi / pi.sum()

    def _first_context(self, x: np.ndarray) -> np.ndarray:
        context = np.zeros(x.shape[0], dtype=np.int64)
        for j in range(self.order):
            context = context * self.vocab_size + x[:, j]
        return context

    def sample(self, n: int, seq_len: int, generator: torch.Generator | None = None) -> Tensor:
        """``n`` sequences of length ``seq_len`` (>= order), (n, L) int64, a stationary start."""
        if seq_len < self.order:
            raise ValueError(f"seq_len={seq_len} must be >= order={self.order}")
        V = self.vocab_size
        pi = torch.from_numpy(self.stationary)
        rows = torch.from_numpy(self.transition)
        context = torch.multinomial(pi, n, replacement=True, generator=generator)
        out = torch.empty(n, seq_len, dtype=torch.int64)
        c = context.clone()
        for j in reversed(range(self.order)):                          # decode base V
            out[:, j] = c % V
            c = c // V
        for ell in range(self.order, seq_len):
            token = torch.multinomial(rows[context], 1, generator=generator).squeeze(1)
            out[:, ell] = token
            context = (context * V + token) % self.n_contexts
        return out

    def log_prob(self, x: Tensor | np.ndarray) -> Tensor:
        r"""Exact :math:`\log p(x)` of each sequence, (n,) float64 (nats)."""
        x = torch.as_tensor(x)
        if x.dim() != 2 or x.shape[1] < self.order:
            raise ValueError(f"x must be (n, L) with L >= order={self.order}, got shape "
                             f"{tuple(x.shape)}")
        check_ids(x, self.vocab_size, "x")
        xs = x.cpu().numpy().astype(np.int64)
        context = self._first_context(xs)
        with np.errstate(divide="ignore"):
            total = np.log(self.stationary[context])
        for ell in range(self.order, xs.shape[1]):
            total = total + self._log_transition[context, xs[:, ell]]
            context = self._next_context(context, xs[:, ell])
        return torch.from_numpy(total)

    def entropy_rate(self) -> float:
        r"""Entropy rate :math:`h = \sum_c \pi(c) H(P_c)` in nats per token."""
        return float(self.stationary @ _entropy(self.transition))

    def entropy(self, seq_len: int) -> float:
        r"""Exact per-token entropy :math:`H(x_{1:L})/L` of a length-L sequence, nats."""
        if seq_len < self.order:
            raise ValueError(f"seq_len={seq_len} must be >= order={self.order}")
        start = float(_entropy(self.stationary))
        return (start + (seq_len - self.order) * self.entropy_rate()) / seq_len

    def bigram_marginal(self) -> np.ndarray:
        r"""(V, V) float64 :math:`J[a, b] = \Pr(x_\ell = a, x_{\ell+1} = b)`, sums to 1."""
        V = self.vocab_size
        joint = np.zeros((V, V))
        np.add.at(joint, np.arange(self.n_contexts) % V,
                  self.stationary[:, None] * self.transition)
        return joint

    def __repr__(self) -> str:
        return (f"MarkovSource(vocab_size={self.vocab_size}, order={self.order}, "
                f"concentration={self.concentration}, seed={self.seed})")
