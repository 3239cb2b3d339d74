r"""``MultiStateMixer``: a multi-state linear-attention token mixer for small LMs.

Per layer, for input :math:`x \in \mathbb{R}^{B \times T \times d}` and H heads of width
:math:`d_h = d / H`:

1. :math:`q, k, v = \mathrm{SiLU}(\mathrm{conv}(W_{qkv} x))`, a causal depthwise short
   convolution of width ``short_conv`` (as fla's ``ShortConvolution`` in Mamba-2 / GLA
   layers; Zoology-style recall needs the token shift); q and k L2-normalised per head,
   scale :math:`d_h^{-1/2}`.
2. Scalar decay per head (Mamba-2 style): :math:`\log a_t = -\mathrm{softplus}(w_a x_t +
   b_a)`, :math:`b_a` set so that :math:`a \approx 0.99` at init.
3. :math:`\lambda_t = \mathrm{softplus}(W_\lambda x_t + b_\lambda)`, R weights per head
   indexed by recency rank (Fenwick level for ``loglinear``), :math:`b_\lambda = \log(e-1)`
   so :math:`\lambda \approx 1` at init. Modelled on fla's Log-Linear
   (``fla/layers/log_linear_mamba2.py``); DLA's "query-dependent weights" are not published,
   so this is **raystudy's reading**.
4. The partition: fixed for ``linear`` / ``fixed_chunk`` / ``fifo`` / ``loglinear``; for
   ``dla`` (``dla_tau0``: :math:`\tau = 0`, Algorithm 2 alone) computed by
   ``dla_partition`` on the detached k, v and decay, a **hard, no-grad** partition (the
   paper's soft gating is unpublished). Then ``multistate_attention`` (differentiable).
5. Per-head RMSNorm, a SiLU output gate, the output projection.

The number of states each query read and (DLA) which tokens opened one are kept after each
forward in ``last_nstates`` (B or 1, H or 1, T) and ``last_opened`` (B, H, T) or None.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .multistate import (
    SCORES,
    chunk_rank,
    dla_partition,
    fenwick_rank,
    fifo_partition,
    loglinear_levels,
    multistate_attention,
    partition_rank,
    states_per_query,
)

MIXER_POLICIES = ("linear", "fixed_chunk", "fifo", "loglinear", "dla", "dla_tau0")
"""The policies ``MultiStateMixer`` takes (``softmax`` lives in ``MixerLM``)."""


class MultiStateMixer(nn.Module):
    """Multi-state linear attention with a chosen state-merging policy (module docstring).

    Args:
        d_model: residual width d.
        n_heads: H, dividing d_model.
        policy: one of ``MIXER_POLICIES``.
        capacity: K, the state budget of ``fixed_chunk`` / ``fifo`` / ``dla``; None (and
            always for ``loglinear``) means ``loglinear_levels(T)`` at the sequence length
            seen, the equal budget. ``linear`` uses 1.
        tau: DLA's threshold (``dla`` only; ``dla_tau0`` uses 0).
        score: ``state_drift`` or ``token_vs_state`` (DLA's two readings).
        short_conv: width of the causal depthwise convolution (0 = none).
        max_len: the longest sequence, which sizes lambda when ``capacity`` is None.

    Shapes: ``x`` (B, T, d) -> (B, T, d).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        policy: str = "dla",
        capacity: int | None = None,
        tau: float = 0.1,
        score: str = "state_drift",
        short_conv: int = 4,
        max_len: int = 256,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        if policy not in MIXER_POLICIES:
            raise ValueError(f"policy={policy!r} is not one of {', '.join(MIXER_POLICIES)}")
        if capacity is not None and (isinstance(capacity, bool) or capacity < 1):
            raise ValueError(f"capacity={capacity!r} must be an integer >= 1")
        if not tau >= 0:
            raise ValueError(f"tau={tau} must be >= 0")
        if score not in SCORES:
            raise ValueError(f"score={score!r} is not one of {', '.join(SCORES)}")
        if short_conv < 0:
            raise ValueError(f"short_conv={short_conv} must be >= 0")
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.policy, self.capacity, self.score = policy, capacity, score
        self.tau = 0.0 if policy == "dla_tau0" else tau
        if policy == "linear":
            self.R = 1
        elif policy == "loglinear" or capacity is None:
            self.R = loglinear_levels(max_len)
        else:
            self.R = capacity
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.conv = (nn.Conv1d(3 * d_model, 3 * d_model, short_conv, groups=3 * d_model,
                               padding=short_conv - 1) if short_conv else None)
        self.decay = nn.Linear(d_model, n_heads)
        self.lam = nn.Linear(d_model, n_heads * self.R)
        self.norm = nn.RMSNorm(self.d_head)
        self.gate = nn.Linear(d_model, d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        nn.init.normal_(self.decay.weight, std=0.02)
        nn.init.constant_(self.decay.bias, math.log(math.expm1(-math.log(0.99))))  # a = 0.99
        nn.init.normal_(self.lam.weight, std=0.02)
        nn.init.constant_(self.lam.bias, math.log(math.e - 1))                     # lambda = 1
        self.last_nstates: Tensor | None = None
        self.last_opened: Tensor | None = None
        self._fixed: dict[tuple[int, str], Tensor] = {}

    def forward(self, x: Tensor) -> Tensor:
        B, T, d = x.shape
        H, dh = self.n_heads, self.d_head
        qkv = self.qkv(x)
        if self.conv is not None:
            qkv = self.conv(qkv.transpose(1, 2))[..., :T].transpose(1, 2)
        q, k, v = F.silu(qkv).view(B, T, 3, H, dh).permute(2, 0, 3, 1, 4)   # (B, H, T, dh) each
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        log_a = -F.softplus(self.decay(x)).transpose(1, 2)                  # (B, H, T)
        lam = F.softplus(self.lam(x)).view(B, T, H, self.R).transpose(1, 2)  # (B, H, T, R)
        rank = self._rank(k, v, log_a)
        o = multistate_attention(q, k, v, log_a, lam, rank)                 # (B, H, T, dh)
        o = self.norm(o).transpose(1, 2).reshape(B, T, d)
        return self.out(o * F.silu(self.gate(x)))

    def _rank(self, k: Tensor, v: Tensor, log_a: Tensor) -> Tensor:
        """The partition as ranks, (T, T) for a fixed policy or (B, H, T, T) for DLA."""
        T = k.shape[2]
        K = self.capacity if self.capacity is not None else loglinear_levels(T)
        need = {"linear": 1, "loglinear": loglinear_levels(T)}.get(self.policy, K)
        if need > self.R:
            raise ValueError(f"T={T} needs {need} lambda weights but the mixer has R={self.R}; "
                             "raise max_len")
        self.last_opened = None
        if self.policy in ("dla", "dla_tau0"):
            p = dla_partition(k, v, log_a, tau=self.tau, capacity=K, score=self.score)
            self.last_opened = p.opened
            self.last_nstates = p.nstates
            return partition_rank(p)
        key = (T, str(k.device))
        if key not in self._fixed:
            if self.policy == "linear":
                t = torch.arange(T, device=k.device)
                rank = torch.where(t[None, :] <= t[:, None], 0, -1)
            elif self.policy == "fixed_chunk":
                rank = chunk_rank(T, K, device=k.device)
            elif self.policy == "fifo":
                rank = partition_rank(fifo_partition(T, K, device=k.device))[0, 0]
            else:
                rank = fenwick_rank(T, device=k.device)
            self._fixed[key] = rank
        rank = self._fixed[key]
        self.last_nstates = states_per_query(rank)[None, None]
        return rank
