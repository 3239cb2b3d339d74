r"""A small bidirectional, noise-level-conditioned transformer for discrete diffusion.

The denoiser :math:`\mathbf{x}_\theta(z_t, t)` of a uniform-state diffusion LM
(``raystudy.algorithms.discrete_diffusion``): it reads a whole noised sequence and
returns, at every position, logits over the clean token. A reduced form of Duo's DiT
(Peebles & Xie 2023, "Scalable Diffusion Models with Transformers", as used by
``s-sahoo/duo`` ``models/dit.py``), written for CPU-sized runs:

* **non-causal** scaled-dot-product attention (every position sees every other);
* **conditioning on** :math:`\sigma_t = -\log \alpha_t` (Duo's ``_sigma_from_alphat``),
  with :math:`\alpha_t` from ``schedule`` (default ``LinearAlpha()``, eps 1e-3):
  sinusoidal features of :math:`\sigma` (Vaswani et al. 2017, max period 10,000) then an
  MLP give a vector :math:`c`;
* **adaLN** blocks (DiT): ``x + Attn(LN(x) (1 + scale_1(c)) + shift_1(c))`` and
  ``x + MLP(LN(x) (1 + scale_2(c)) + shift_2(c))``, LayerNorms without affine parameters,
  and a modulated final LayerNorm before an untied output head. DiT's residual gates and
  zero initialisation are left out (raystudy's simplification): with the modulation
  initialised like the other weights (normal, std 0.02) the output depends on
  :math:`t` from the first step;
* learned token and position embeddings, as ``GPT``; no dropout.

Shapes: ``z`` (B, L) int64 ids in [0, V), L <= ``seq_len``; ``t`` (B,) float times in
[0, 1]; ``forward`` returns logits (B, L, V).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..discrete_diffusion.schedules import LinearAlpha, Schedule
from .gpt import SelfAttention


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """adaLN: ``x (1 + scale) + shift``, shift and scale (B, d) broadcast over positions."""
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class AdaLNBlock(nn.Module):
    """Pre-LN transformer block whose LayerNorms are shifted and scaled by the condition."""

    def __init__(self, d_model: int, n_heads: int, mlp_ratio: int, cond_dim: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model, elementwise_affine=False)
        self.attn = SelfAttention(d_model, n_heads, causal=False)
        self.ln2 = nn.LayerNorm(d_model, elementwise_affine=False)
        self.fc = nn.Linear(d_model, mlp_ratio * d_model)
        self.fc_out = nn.Linear(mlp_ratio * d_model, d_model)
        self.modulation = nn.Linear(cond_dim, 4 * d_model)

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift1, scale1, shift2, scale2 = self.modulation(F.silu(c)).chunk(4, dim=-1)
        x = x + self.attn(modulate(self.ln1(x), shift1, scale1))
        return x + self.fc_out(F.gelu(self.fc(modulate(self.ln2(x), shift2, scale2))))


def sinusoidal_features(sigma: torch.Tensor, dim: int, max_period: float = 10_000.0
                        ) -> torch.Tensor:
    """(B,) -> (B, dim): cos and sin of sigma at geometrically spaced frequencies."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=sigma.dtype,
                                                           device=sigma.device) / half)
    angles = sigma[:, None] * freqs[None]
    features = torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)
    if dim % 2:
        features = F.pad(features, (0, 1))
    return features


class Denoiser(nn.Module):
    """Bidirectional transformer :math:`f_\\theta(z_t, \\sigma_t)` returning clean-token logits.

    Args:
        vocab_size: V, the number of token ids.
        seq_len: the longest sequence (position embeddings).
        d_model: residual width (default 64).
        n_layers: number of blocks (default 2).
        n_heads: attention heads (default 4).
        mlp_ratio: MLP hidden width over d_model (default 4).
        cond_dim: width of the noise-level embedding c (default: d_model).
        schedule: maps t to alpha_t for sigma_t = -log alpha_t (default ``LinearAlpha()``).
    """

    def __init__(
        self,
        vocab_size: int,
        seq_len: int,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        mlp_ratio: int = 4,
        cond_dim: int | None = None,
        schedule: Schedule | None = None,
    ) -> None:
        super().__init__()
        cond_dim = d_model if cond_dim is None else cond_dim
        self.vocab_size, self.seq_len, self.cond_dim = vocab_size, seq_len, cond_dim
        self.schedule = LinearAlpha() if schedule is None else schedule
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(seq_len, d_model)
        self.sigma_mlp = nn.Sequential(nn.Linear(cond_dim, cond_dim), nn.SiLU(),
                                       nn.Linear(cond_dim, cond_dim))
        self.blocks = nn.ModuleList(AdaLNBlock(d_model, n_heads, mlp_ratio, cond_dim)
                                    for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model, elementwise_affine=False)
        self.final_modulation = nn.Linear(cond_dim, 2 * d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def sigma(self, t: torch.Tensor) -> torch.Tensor:
        """:math:`\\sigma_t = -\\log \\alpha_t`, (B,)."""
        return -torch.log(torch.as_tensor(self.schedule.alpha(t)))

    def forward(self, z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Logits (B, L, V) of the clean tokens given noised ids z (B, L) at times t (B,)."""
        if z.dim() != 2:
            raise ValueError(f"z must be (B, L) token ids, got shape {tuple(z.shape)}")
        batch, length = z.shape
        if z.dtype.is_floating_point or z.dtype == torch.bool:
            raise ValueError(f"z must hold integer token ids, got dtype {z.dtype}")
        if length > self.seq_len:
            raise ValueError(f"sequence length {length} is longer than seq_len={self.seq_len}")
        if z.numel() and (int(z.min()) < 0 or int(z.max()) >= self.vocab_size):
            raise ValueError(f"z holds token ids outside [0, {self.vocab_size}): "
                             f"min {int(z.min())}, max {int(z.max())}")
        t = torch.as_tensor(t, device=z.device)
        if t.shape != (batch,):
            raise ValueError(f"t must have shape ({batch},), got {tuple(t.shape)}")
        dtype = self.tok_emb.weight.dtype
        sigma = self.sigma(t.to(dtype))
        c = self.sigma_mlp(sinusoidal_features(sigma, self.cond_dim))
        positions = torch.arange(length, device=z.device)
        x = self.tok_emb(z) + self.pos_emb(positions)
        for block in self.blocks:
            x = block(x, c)
        shift, scale = self.final_modulation(F.silu(c)).chunk(2, dim=-1)
        return self.head(modulate(self.ln_f(x), shift, scale))
