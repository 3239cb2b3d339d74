"""A small decoder-only LM whose token mixer is chosen: softmax attention or multi-state.

Pre-LayerNorm blocks ``x + Mixer(LN(x))``, ``x + MLP(LN(x))`` as ``GPT``, token
embeddings, a final LayerNorm and an untied head. ``mixer="softmax"`` is the reference
(causal scaled-dot-product attention, ``GPT``'s ``SelfAttention``, plus learned position
embeddings, which it alone needs); every other name is a
``raystudy.algorithms.linear_attention.MultiStateMixer`` policy (``linear``,
``fixed_chunk``, ``fifo``, ``loglinear``, ``dla``, ``dla_tau0``), position-free: the
short convolution and the decay give order.

Shapes: ``idx`` (B, T) token ids, T <= ``seq_len``; ``forward`` returns logits (B, T, V).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..linear_attention.mixer import MIXER_POLICIES, MultiStateMixer
from .gpt import SelfAttention

MIXERS = ("softmax", *MIXER_POLICIES)
"""Every mixer ``MixerLM`` builds."""


class MixerBlock(nn.Module):
    """``x + Mixer(LN(x))`` then ``x + MLP(LN(x))``."""

    def __init__(self, d_model: int, mixer: nn.Module, mlp_ratio: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.mixer = mixer
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, mlp_ratio * d_model)
        self.fc_out = nn.Linear(mlp_ratio * d_model, d_model)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.mixer(self.ln1(x))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))


class MixerLM(nn.Module):
    """Decoder-only LM with a softmax or multi-state mixer in every block.

    Args:
        vocab_size: V, the number of token ids.
        seq_len: the longest sequence (softmax's position embeddings; sizes lambda).
        d_model: residual width (default 64).
        n_layers: number of blocks (default 2).
        n_heads: heads per mixer (default 4).
        mixer: one of ``MIXERS`` (default ``dla``).
        capacity: the state budget K of bounded policies; None = ``loglinear_levels(T)``,
            the Log-Linear count at the length seen (the equal budget).
        tau: DLA's threshold; score: ``state_drift`` or ``token_vs_state``.
        short_conv: the mixers' causal convolution width (default 4; 0 = none).
        mlp_ratio: MLP hidden width over d_model (default 4).
    """

    def __init__(
        self,
        vocab_size: int,
        seq_len: int,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        mixer: str = "dla",
        capacity: int | None = None,
        tau: float = 0.1,
        score: str = "state_drift",
        short_conv: int = 4,
        mlp_ratio: int = 4,
    ) -> None:
        super().__init__()
        if mixer not in MIXERS:
            raise ValueError(f"mixer={mixer!r} is not one of {', '.join(MIXERS)}")
        self.seq_len, self.mixer = seq_len, mixer
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(seq_len, d_model) if mixer == "softmax" else None

        def make() -> nn.Module:
            if mixer == "softmax":
                return SelfAttention(d_model, n_heads, causal=True)
            return MultiStateMixer(d_model, n_heads, mixer, capacity, tau, score, short_conv,
                                   max_len=seq_len)

        self.blocks = nn.ModuleList(MixerBlock(d_model, make(), mlp_ratio)
                                    for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        for name, module in self.named_modules():
            if isinstance(module, (nn.Embedding, nn.Linear)) and ".mixer.decay" not in (
                    "." + name) and ".mixer.lam" not in ("." + name):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    nn.init.zeros_(module.bias)

    def forward(self, idx: Tensor) -> Tensor:
        if idx.shape[1] > self.seq_len:
            raise ValueError(f"idx has length {idx.shape[1]} > seq_len={self.seq_len}")
        x = self.tok_emb(idx)
        if self.pos_emb is not None:
            x = x + self.pos_emb(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def state_stats(self) -> dict[str, float]:
        """``states/mean`` and ``states/max`` read per query over the last forward's layers
        (empty for softmax)."""
        counts = [b.mixer.last_nstates.double() for b in self.blocks
                  if isinstance(b.mixer, MultiStateMixer) and b.mixer.last_nstates is not None]
        if not counts:
            return {}
        return {"states/mean": float(torch.stack([c.mean() for c in counts]).mean()),
                "states/max": float(max(c.max() for c in counts))}
