r"""TinyJudge: a small transformer judge with a pairwise verdict head and a pointwise score head.

FairJudge fine-tunes an LLM that answers either mode; here both modes share one backbone
and differ by their input (a pair ending in VERDICT, one response ending in SCORE, see
:mod:`.world`) and their head, read at the last token as a causal LM reads its next-token
prediction:

.. math::
    p_\theta(v \mid x) = \mathrm{softmax}(W_v h_T(x)), \quad v \in \{0, 1, 2\}; \qquad
    p_\theta(s \mid x) = \mathrm{softmax}(W_s h_T(x)), \quad s \in \{1, \dots, 10\},

with :math:`h_T` the final hidden state of the last position. :meth:`TinyJudge.verdict_logps`
gives :math:`\log p_\theta(v \mid x)` for DPO and GRPO (:mod:`.objectives`).

The backbone is the project's GPT blocks (:class:`~raystudy.algorithms.models.gpt.Block`,
pre-LayerNorm, causal) over learned token and position embeddings, or any ``encoder``
mapping ``idx (B, T) -> hidden (B, T, H)`` with a ``hidden_size`` attribute, such as
:func:`raystudy.algorithms.models.hf.load_encoder`'s (the paper profile's backbone).
"""

from __future__ import annotations

import torch
from torch import nn

from ..models.gpt import GPT, Block

N_VERDICTS = 3


class TinyJudge(nn.Module):
    """A judge over world tokens (module docstring).

    Args:
        vocab_size: token ids (``JudgePairs.vocab_size``); unused with an ``encoder``.
        seq_len: the longest input, pairwise or pointwise (position embeddings).
        d_model: residual width (default 64).
        n_layers: GPT blocks (default 2).
        n_heads: attention heads (default 4).
        n_scores: pointwise score levels 1..n_scores (default 10).
        encoder: None builds the GPT-block backbone; otherwise a module
            ``idx (B, T) -> hidden (B, T, H)`` with ``hidden_size`` H, used instead.
    """

    def __init__(self, vocab_size: int, seq_len: int, d_model: int = 64, n_layers: int = 2,
                 n_heads: int = 4, n_scores: int = 10, encoder: nn.Module | None = None) -> None:
        super().__init__()
        self.seq_len, self.n_scores = seq_len, n_scores
        self.encoder = encoder
        width = d_model
        if encoder is None:
            self.tok_emb = nn.Embedding(vocab_size, d_model)
            self.pos_emb = nn.Embedding(seq_len, d_model)
            self.blocks = nn.ModuleList(Block(d_model, n_heads, 4) for _ in range(n_layers))
            self.ln_f = nn.LayerNorm(d_model)
        else:
            if not isinstance(getattr(encoder, "hidden_size", None), int):
                raise ValueError("encoder must have an int hidden_size (its output width)")
            width = int(encoder.hidden_size)
        self.verdict_head = nn.Linear(width, N_VERDICTS)
        self.score_head = nn.Linear(width, n_scores)
        for name, module in self.named_modules():
            if not name.startswith("encoder"):
                GPT._init_weights(module)

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """``h_T``: the last position's final hidden state, ``B x d`` for ``idx`` ``B x T``."""
        if idx.dim() != 2 or idx.shape[1] > self.seq_len:
            raise ValueError(f"idx must be batch x seq_len with seq_len <= {self.seq_len}, "
                             f"got shape {tuple(idx.shape)}")
        if self.encoder is not None:
            return self.encoder(idx)[:, -1]
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x[:, -1])

    def verdict_logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """``B x 3`` verdict logits (0 first, 1 second, 2 tie) for pair ``tokens`` ``B x L``."""
        return self.verdict_head(self.hidden(tokens))

    def score_logits(self, point_tokens: torch.Tensor) -> torch.Tensor:
        """``B x n_scores`` logits of scores 1..n_scores for one response, ``B x Lp``."""
        return self.score_head(self.hidden(point_tokens))

    def verdict_logps(self, tokens: torch.Tensor, verdicts: torch.Tensor) -> torch.Tensor:
        r""":math:`\log p_\theta(v \mid x)`, ``B``, of ``verdicts`` (``B`` ints) on ``tokens``."""
        logp = torch.log_softmax(self.verdict_logits(tokens), dim=-1)
        return logp.gather(1, verdicts.long().view(-1, 1)).squeeze(1)

    def score_logps(self, point_tokens: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        r""":math:`\log p_\theta(s \mid x)`, ``B``, of ``scores`` (``B`` ints in 1..n_scores)."""
        logp = torch.log_softmax(self.score_logits(point_tokens), dim=-1)
        return logp.gather(1, (scores.long() - 1).view(-1, 1)).squeeze(1)

    @torch.no_grad()
    def judge(self, tokens: torch.Tensor) -> torch.Tensor:
        """Greedy verdicts, ``B`` ints, for pair ``tokens`` ``B x L``."""
        return self.verdict_logits(tokens).argmax(-1)

    @torch.no_grad()
    def score(self, point_tokens: torch.Tensor) -> torch.Tensor:
        """Greedy pointwise scores, ``B`` ints in 1..n_scores, for ``point_tokens`` ``B x Lp``."""
        return self.score_logits(point_tokens).argmax(-1) + 1
