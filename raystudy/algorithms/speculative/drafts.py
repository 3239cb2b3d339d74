r"""Drafts beside a small GPT: a byte n-gram model and a vocabulary-pruned wrapper.

* :class:`ByteNGramDraft`: counts of the next byte after each context of up to
  :math:`n - 1` bytes, add-:math:`k` smoothed,
  :math:`q(b \mid c) = (N(c, b) + k) / (N(c) + kV)`; a context never seen in training backs
  off to its longest seen suffix (down to the unigram, whose context is empty). A model in
  the callable sense of :mod:`.sampling`: ``idx (B, T) -> logits (B, T, V)`` (log
  probabilities), ``seq_len = n - 1``.
* :class:`PrunedDraft`: a draft whose logits outside the kept vocabulary :math:`K` are
  :math:`-\infty`, so its softmax at any temperature is
  :func:`~.sampling.prune_vocab` of the full draft's (and its argmax is the best kept
  token). :func:`top_tokens` picks :math:`K` as the ``m`` most frequent training bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from .sampling import Model, keep_mask


class ByteNGramDraft(nn.Module):
    """Add-k smoothed n-gram over tokens (bytes by default) with backoff to the longest seen
    context.

    Args:
        order: n, the context is the last ``order - 1`` tokens (default 3).
        k: add-k pseudo-count per token (default 0.01).
        vocab_size: V (default 256).
    """

    def __init__(self, order: int = 3, *, k: float = 0.01, vocab_size: int = 256) -> None:
        super().__init__()
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise ValueError(f"order={order!r} must be an integer >= 1")
        if not k > 0:
            raise ValueError(f"k={k} must be > 0 (add-k smoothing)")
        if vocab_size < 2 or vocab_size ** max(order - 1, 1) >= 2 ** 62:
            raise ValueError(f"vocab_size={vocab_size} with order={order} does not fit int64 ids")
        self.order, self.k, self.vocab_size = order, float(k), vocab_size
        self.seq_len = max(order - 1, 1)
        for m in range(order):
            self.register_buffer(f"contexts_{m}", torch.zeros(0, dtype=torch.long))
            self.register_buffer(f"counts_{m}", torch.zeros(0, vocab_size))

    def fit(self, tokens: np.ndarray | Tensor) -> ByteNGramDraft:
        """Count ``tokens (N,)`` (ints in ``[0, V)``); returns ``self``."""
        x = torch.from_numpy(np.array(tokens, dtype=np.int64).reshape(-1))
        if x.numel() < 2:
            raise ValueError(f"tokens must hold at least 2 ids, got {x.numel()}")
        if int(x.min()) < 0 or int(x.max()) >= self.vocab_size:
            raise ValueError(f"tokens must lie in [0, {self.vocab_size})")
        # the empty context precedes every token; a context of m >= 1 tokens ending at t
        # precedes token t + 1
        self.contexts_0 = torch.zeros(1, dtype=torch.long)
        self.counts_0 = torch.bincount(x, minlength=self.vocab_size).float().unsqueeze(0)
        ids = self._context_ids(x[:-1].unsqueeze(0))  # (order, 1, N - 1)
        following = x[1:].numpy()
        for m in range(1, self.order):
            context = ids[m, 0].numpy()
            valid = context >= 0
            # N(c, b) by sorting the keys c V + b (numpy's unique is the fast one on CPU)
            keys, counts = np.unique(context[valid] * self.vocab_size + following[valid],
                                     return_counts=True)
            contexts, row = np.unique(keys // self.vocab_size, return_inverse=True)
            table = torch.zeros(len(contexts), self.vocab_size)
            table[torch.from_numpy(row), torch.from_numpy(keys % self.vocab_size)] = (
                torch.from_numpy(counts).float())
            setattr(self, f"contexts_{m}", torch.from_numpy(contexts))
            setattr(self, f"counts_{m}", table)
        return self

    def _context_ids(self, idx: Tensor) -> Tensor:
        """``(order, B, T)``: for context length m, the id sum_i idx[t - i] V^i over the m tokens
        ending at t (0 for m = 0), -1 where fewer than m tokens precede."""
        batch, length = idx.shape
        ids = torch.full((self.order, batch, length), -1, dtype=torch.long, device=idx.device)
        ids[0] = 0
        for m in range(1, self.order):
            shifted = torch.full_like(idx, -1)
            shifted[:, m - 1:] = idx[:, : length - m + 1]  # idx[t - m + 1]
            ok = (ids[m - 1] >= 0) & (shifted >= 0)
            ids[m] = torch.where(ok, ids[m - 1] + shifted * self.vocab_size ** (m - 1), -1)
        return ids

    def forward(self, idx: Tensor) -> Tensor:
        """Log probabilities ``(B, T, V)`` of the token after each position of ``idx (B, T)``."""
        if self.counts_0.numel() == 0:
            raise ValueError("ByteNGramDraft is not fitted: call fit(tokens) first")
        ids = self._context_ids(idx.long())
        counts = self.counts_0.expand(*idx.shape, self.vocab_size).clone()
        for m in range(1, self.order):  # longer seen contexts override shorter ones
            contexts: Tensor = getattr(self, f"contexts_{m}")
            if contexts.numel() == 0:
                continue
            pos = torch.searchsorted(contexts, ids[m]).clamp_max(len(contexts) - 1)
            seen = (ids[m] >= 0) & (contexts[pos] == ids[m])
            counts[seen] = getattr(self, f"counts_{m}")[pos[seen]]
        smoothed = counts + self.k
        return (smoothed / smoothed.sum(-1, keepdim=True)).log()


class PrunedDraft(nn.Module):
    """``draft`` restricted to the kept token ids ``keep (m,)``: logits ``-inf`` outside them.
    ``seq_len`` is the draft's."""

    def __init__(self, draft: Model, keep: Tensor | Sequence[int], vocab_size: int) -> None:
        super().__init__()
        self.draft = draft
        self.register_buffer("mask", keep_mask(keep, vocab_size))
        if getattr(draft, "seq_len", None):
            self.seq_len = int(draft.seq_len)  # type: ignore[attr-defined]

    def forward(self, idx: Tensor) -> Tensor:
        """``(B, T, V)`` logits of the draft, ``-inf`` outside ``keep``."""
        logits = self.draft(idx)
        return logits.masked_fill(~self.mask.to(logits.device), float("-inf"))


def top_tokens(tokens: np.ndarray | Tensor, m: int, vocab_size: int = 256) -> Tensor:
    """The ``m`` most frequent ids in ``tokens (N,)``, ties by the smaller id; ``(m,)`` long,
    sorted ascending."""
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= vocab_size:
        raise ValueError(f"m={m!r} must be an integer in [1, vocab_size={vocab_size}]")
    ids = np.asarray(tokens, dtype=np.int64).reshape(-1)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"tokens must lie in [0, {vocab_size})")
    counts = np.bincount(ids, minlength=vocab_size)
    order = np.lexsort((np.arange(vocab_size), -counts))  # by count descending, then id
    return torch.from_numpy(np.sort(order[:m]))
