r"""Multi-state linear attention: one state cache, five merging policies, two exact forms.

Per head, token :math:`t` contributes :math:`s_t = k_t v_t^\top \in \mathbb{R}^{d_k \times d_v}`.
A multi-state layer keeps the past as a chronological list of states
:math:`S_1, \dots, S_m`, each the decayed sum of the contributions of one contiguous
block :math:`C_i` of tokens, and reads

.. math::  o_t = \sum_{i=1}^{m} \lambda_{t, r_i}\, \mathrm{scale}\; q_t^\top S_i, \qquad
           S_i = \sum_{s \in C_i} \Big(\prod_{r=s+1}^{t} a_r\Big) s_s,

with :math:`\log a_t` the log-decay (0: plain linear attention; learned: Mamba-2 /
Simple-GLA style) and :math:`\lambda_t` per-query weights indexed by :math:`r_i`, the
state's recency rank (0 = newest) or, for Log-Linear, its Fenwick level. A **policy**
decides the blocks after each step:

* ``linear``: one state (single-state linear attention);
* ``fixed_chunk``: a new state every :math:`c = \lceil T/K \rceil` tokens (at most K states);
* ``fifo``: every token opens a state; over capacity K the two *oldest* merge;
* ``loglinear`` (Guo et al. 2025, "Log-Linear Attention", arXiv 2506.04761): Fenwick
  buckets, token s sits at level :math:`\mathrm{bit\_length}(t \oplus s)` for query t
  (0 on the diagonal), :math:`\mathrm{popcount}(t) + 1 \le` ``loglinear_levels(T)`` states;
* ``dla`` (Wang et al. 2026, "Dynamic Linear Attention", arXiv 2606.10650; **raystudy's
  reading** of a third-party paper note and proof of concept, the paper's text and code are
  not public). With :math:`N(X) = X / (\|X\|_F + 10^{-12})` and :math:`S` the open (newest)
  state after this step's decay, the information of token t is

  - ``state_drift`` (the note): :math:`I_t = \|N(S + s_t) - N(S)\|_F`,
  - ``token_vs_state`` (the proof of concept): :math:`I_t = \|N(s_t) - N(S)\|_F`,

  :math:`I_0 = 0` and token 0 opens the first state. If :math:`I_t \ge \tau` a new state
  opens (:math:`n = 1, \bar I = I_t`); otherwise :math:`s_t`, 1 and :math:`I_t` are added
  to the open state's :math:`S, n, \bar I`. With more than K states the adjacent pair with
  the least information density :math:`(\bar I_i + \bar I_{i+1}) / (n_i + n_{i+1})` is
  summed (ties to the older pair): only adjacent states merge, so order is kept.

Each step runs: decay every state, open or add, merge, read. Merging commutes with the
decay, so with the partition fixed the output is the **materialised form**

.. math::  o_t = \sum_{s \le t} \lambda_{t,\, \mathrm{rank}[t,s]}\; \mathrm{scale}\,
           (q_t \cdot k_s)\, e^{\sum_{r=s+1}^{t} \log a_r}\, v_s,

where ``rank[t, s]`` is the rank of s's block after step t (-1 for s > t):
``multistate_attention`` computes it in O(T^2) and is differentiable (the training path);
``multistate_recurrent`` runs the cache step by step (the tests' reference and the
decoding path); ``dla_partition`` computes DLA's blocks fast and without grad, to be
turned into ``rank`` by ``partition_rank``. DLA trains with soft gating in the paper,
which is unpublished; raystudy uses hard partitions computed on detached scores.

Shapes: B batch, H heads, T length, dk / dv head dims, K capacity, R = ``lam``'s last dim
(at least the number of ranks used). Reference paths are float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

SCORES = ("state_drift", "token_vs_state")
"""DLA's two readings of the state information score (module docstring)."""

POLICIES = ("linear", "fixed_chunk", "fifo", "loglinear", "dla")
"""The state-merging policies ``multistate_recurrent`` runs."""

EPS = 1e-12
"""The epsilon of :math:`N(X) = X / (\\|X\\|_F + \\epsilon)`."""


@dataclass(frozen=True)
class Partition:
    """The blocks of a multi-state cache after every step.

    Attributes:
        starts: (B, H, T, W) long, the block starts after step t, ascending, padded with T
            (W = the capacity, or 1 for ``linear``, ``loglinear_levels(T)`` for ``loglinear``).
        nstates: (B, H, T) long, the number of states after step t.
        info: (B, H, T) float64, :math:`I_t` (0 for policies without a score).
        opened: (B, H, T) bool, token t opened a state (``opened[..., 0]`` is True).
        merged: (B, H, T) bool, a merge happened at step t.
    """

    starts: Tensor
    nstates: Tensor
    info: Tensor
    opened: Tensor
    merged: Tensor


def loglinear_levels(T: int) -> int:
    """Log-Linear's number of levels (weights) for length T: ceil(log2 T) + 1."""
    if T < 1:
        raise ValueError(f"T={T} must be >= 1")
    return (T - 1).bit_length() + 1


def fenwick_rank(T: int, device: torch.device | str | None = None) -> Tensor:
    """(T, T) long: bit_length(t xor s) for s < t, 0 on the diagonal, -1 above (Log-Linear)."""
    t = torch.arange(T, device=device)
    x = t[:, None] ^ t[None, :]
    level = torch.zeros_like(x)
    for bit in range(max(T - 1, 1).bit_length()):
        level += (x >> bit) > 0
    return torch.where(t[None, :] <= t[:, None], level, -1)


def chunk_rank(T: int, capacity: int, device: torch.device | str | None = None) -> Tensor:
    """(T, T) long recency ranks of fixed blocks of c = ceil(T / capacity) tokens, -1 above."""
    _check_capacity(capacity)
    c = math.ceil(T / capacity)
    t = torch.arange(T, device=device)
    rank = t[:, None] // c - t[None, :] // c
    return torch.where(t[None, :] <= t[:, None], rank, -1)


def fifo_partition(T: int, capacity: int, device: torch.device | str | None = None) -> Partition:
    """The ``fifo`` policy's blocks in closed form, shapes (1, 1, T, ...).

    Every token opens a state and over capacity K the two oldest merge, so after step t the
    blocks are [0, t-K+1] and the singletons t-K+2 .. t (every token its own for t < K).
    """
    _check_capacity(capacity)
    t = torch.arange(T, device=device)[:, None]
    i = torch.arange(capacity, device=device)[None, :]
    first = torch.clamp(t - capacity + 1, min=0)           # the oldest block ends here
    starts = torch.where(i == 0, 0, first + i)
    starts = torch.where(starts <= t, starts, T)
    nstates = torch.clamp(t[:, 0] + 1, max=capacity)
    return Partition(
        starts=starts[None, None],
        nstates=nstates[None, None],
        info=torch.zeros(1, 1, T, dtype=torch.float64, device=device),
        opened=torch.ones(1, 1, T, dtype=torch.bool, device=device),
        merged=(t[:, 0] >= capacity)[None, None],
    )


def partition_rank(p: Partition) -> Tensor:
    """(B, H, T, T) long recency rank of s's block after step t (0 = newest), -1 for s > t.

    The rank is the number of block starts in (s, t]: nstates_t minus the starts <= s.
    """
    B, H, T, W = p.starts.shape
    is_start = torch.zeros(B, H, T, T + 1, dtype=torch.long, device=p.starts.device)
    is_start.scatter_(-1, p.starts, 1)                      # the padding T lands in column T
    rank = p.nstates[..., None] - torch.cumsum(is_start[..., :T], -1)
    t = torch.arange(T, device=p.starts.device)
    return torch.where(t[None, :] <= t[:, None], rank, -1)


def states_per_query(rank: Tensor) -> Tensor:
    """(..., T) long: how many states query t reads, the distinct ranks in row t of ``rank``.

    Blocks are contiguous, so this is 1 plus the number of rank changes along s <= t.
    """
    change = (rank[..., 1:] != rank[..., :-1]) & (rank[..., 1:] >= 0)
    return change.sum(-1) + 1


def information(S: Tensor, s: Tensor, score: str = "state_drift") -> Tensor:
    """DLA's :math:`I_t` of contributions s (..., dk, dv) against open states S (..., dk, dv)."""
    _check_score(score)
    if score == "state_drift":
        return _frobenius(_normalise(S + s) - _normalise(S))
    return _frobenius(_normalise(s) - _normalise(S))


@torch.no_grad()
def dla_partition(
    k: Tensor,
    v: Tensor,
    log_a: Tensor | None = None,
    *,
    tau: float,
    capacity: int,
    score: str = "state_drift",
) -> Partition:
    """DLA's blocks after every step (module docstring), computed in float64 without grad.

    Args:
        k: (B, H, T, dk) keys; v: (B, H, T, dv) values.
        log_a: (B, H, T) log-decay (None = 0, no decay).
        tau: the boundary threshold :math:`\\tau \\ge 0` (0: every token opens a state;
            ``math.inf``: one state).
        capacity: K >= 1, the most states kept.
        score: ``state_drift`` or ``token_vs_state``.

    Vectorised over B*H rows, one pass over t: the K+1 state matrices live in slots at one
    common scale per row (so the decay is a scalar per step), the chronological order is a
    small index array, and every step runs the same ops (a row without a merge "merges" its
    free last position, a no-op).
    """
    B, H, T, dk, dv = _check_kv(k, v, log_a)
    _check_tau(tau)
    _check_capacity(capacity)
    _check_score(score)
    K, N, dev = capacity, B * H, k.device
    s_all = torch.einsum("ntk,ntv->ntkv", k.detach().reshape(N, T, dk).double(),
                         v.detach().reshape(N, T, dv).double())
    la = (torch.zeros(N, T, dtype=torch.float64, device=dev) if log_a is None
          else log_a.detach().reshape(N, T).double())
    worst_drop = (-la).amax(0).tolist()
    S = torch.zeros(N, K + 1, dk, dv, dtype=torch.float64, device=dev)  # true = e^logc * S
    logc = torch.zeros(N, dtype=torch.float64, device=dev)
    drop = 0.0
    slot = torch.arange(K + 1, device=dev).repeat(N, 1)     # chronological position -> slot
    start = torch.full((N, K + 1), T, dtype=torch.long, device=dev)
    # n and Ibar per chronological position; a free position holds start T, n 0, Ibar 0
    nI = torch.zeros(N, 2, K + 1, dtype=torch.float64, device=dev)
    m = torch.zeros(N, dtype=torch.long, device=dev)
    rows = torch.arange(N, device=dev)
    pos_all = torch.arange(K + 1, device=dev)
    one = torch.ones(N, 1, dtype=torch.float64, device=dev)
    starts, nstates, infos, opened, merged = [], [], [], [], []
    for t in range(T):
        logc += la[:, t]                                    # every state decays by a_t
        drop += worst_drop[t]
        if drop > 300:                                      # keep the stored scale finite
            S *= torch.exp(logc)[:, None, None, None]
            logc.zero_()
            drop = 0.0
        c = torch.exp(logc)[:, None, None]
        s = s_all[:, t]
        if t == 0:
            I = torch.zeros(N, dtype=torch.float64, device=dev)
            new = torch.ones(N, dtype=torch.bool, device=dev)
        else:
            I = information(c * S[rows, slot[rows, m - 1]], s, score)
            new = I >= tau
        pos = (m - 1 + new.long())[:, None]                 # open a state, or add to the open one
        S.index_put_((rows, slot.gather(1, pos)[:, 0]), s / c, accumulate=True)
        start.scatter_reduce_(1, pos, torch.full_like(pos, t), "amin")
        nI.scatter_add_(2, pos[:, None].expand(N, 2, 1), torch.stack([one, I[:, None]], 1))
        m = m + new.long()
        over = m > K                                        # Algorithm 2: merge the least
        pair = nI[:, :, :-1] + nI[:, :, 1:]                 # dense adjacent pair
        i = torch.where(over, (pair[:, 1] / pair[:, 0].clamp(min=1)).argmin(-1), K - 1)
        a, b = slot[rows, i], slot[rows, i + 1]             # argmin: first minimum, the older pair
        S.index_put_((rows, a), S[rows, b], accumulate=True)
        S[rows, b] = 0.0
        nI.scatter_add_(2, i[:, None, None].expand(N, 2, 1),
                        nI.gather(2, (i + 1)[:, None, None].expand(N, 2, 1)))
        src = (pos_all + (pos_all > i[:, None]).long()).clamp(max=K)  # drop position i + 1
        slot, start = slot.gather(1, src), start.gather(1, src)
        nI = nI.gather(2, src[:, None].expand(N, 2, K + 1))
        slot[:, K], start[:, K], nI[:, :, K] = b, T, 0.0    # the freed slot goes last
        m = m - over.long()
        starts.append(start[:, :K].clone())
        nstates.append(m)
        infos.append(I)
        opened.append(new)
        merged.append(over)
    return Partition(
        starts=torch.stack(starts, 1).reshape(B, H, T, K),
        nstates=torch.stack(nstates, 1).reshape(B, H, T),
        info=torch.stack(infos, 1).reshape(B, H, T),
        opened=torch.stack(opened, 1).reshape(B, H, T),
        merged=torch.stack(merged, 1).reshape(B, H, T),
    )


def multistate_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    log_a: Tensor | None,
    lam: Tensor,
    rank: Tensor,
    *,
    scale: float | None = None,
) -> Tensor:
    """The materialised form (module docstring), differentiable in q, k, v, log_a and lam.

    Args:
        q: (B, H, T, dk) queries; k: (B, H, T, dk) keys; v: (B, H, T, dv) values.
        log_a: (B, H, T) log-decay, or None for no decay.
        lam: (B, H, T, R) per-query weight of each rank.
        rank: (T, T) or (B, H, T, T) (any dim may be 1) long, the rank of s's state for
            query t, -1 for s > t; a constant (the partition carries no gradient).
        scale: the logit scale, default dk ** -0.5.

    Returns:
        o: (B, H, T, dv). Cost O(B H T^2 (dk + dv)).
    """
    B, H, T, dk, dv = _check_kv(k, v, log_a)
    _check_q(q, k)
    _check_lam(lam, (B, H, T))
    if rank.dim() == 2:
        rank = rank[None, None]
    if rank.dim() != 4 or rank.shape[-2:] != (T, T) or any(
            r not in (1, full) for r, full in zip(rank.shape[:2], (B, H), strict=True)):
        raise ValueError(f"rank has shape {tuple(rank.shape)}, expected (T, T) or (B, H, T, T) "
                         f"with T={T}, B={B}, H={H}")
    if int(rank.max()) >= lam.shape[-1]:
        raise ValueError(f"rank reaches {int(rank.max())} but lam has only R={lam.shape[-1]} "
                         "weights")
    scale = dk ** -0.5 if scale is None else scale
    t = torch.arange(T, device=k.device)
    causal = (t[None, :] <= t[:, None]) & (rank >= 0)      # s <= t; rank above it is ignored
    Lam = torch.gather(lam, -1, rank.clamp(min=0).expand(B, H, T, T))  # lam[t, rank[t, s]]
    if log_a is None:
        W = Lam.masked_fill(~causal, 0.0)
    else:
        cum = torch.cumsum(log_a, -1)                       # D[t,s] = exp(sum_{r=s+1..t} log a_r)
        W = Lam * torch.exp((cum[..., :, None] - cum[..., None, :]).masked_fill(~causal, -math.inf))
    return ((q * scale) @ k.transpose(-1, -2) * W) @ v


def multistate_recurrent(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    log_a: Tensor | None,
    lam: Tensor,
    policy: str,
    *,
    capacity: int | None = None,
    tau: float | None = None,
    score: str = "state_drift",
    scale: float | None = None,
) -> tuple[Tensor, Partition]:
    """The state cache step by step: decay, open or add, merge, read (module docstring).

    Args:
        q: (B, H, T, dk); k: (B, H, T, dk); v: (B, H, T, dv); log_a: (B, H, T) or None.
        lam: (B, H, T, R) read weights; ``loglinear`` reads ``lam[t, level]``, every other
            policy ``lam[t, recency rank]``.
        policy: one of ``POLICIES``.
        capacity: K, required by ``fixed_chunk``, ``fifo`` and ``dla`` (``linear`` and
            ``loglinear`` fix their own counts).
        tau, score: DLA's threshold and score (``dla`` only).
        scale: the logit scale, default dk ** -0.5.

    Returns:
        o (B, H, T, dv) float64, without grad, and the Partition the cache went through. A
        plain loop over (b, h, t) with explicit state matrices: slow, written to be read and
        trusted.
    """
    B, H, T, dk, dv = _check_kv(k, v, log_a)
    _check_q(q, k)
    _check_lam(lam, (B, H, T))
    if policy not in POLICIES:
        raise ValueError(f"policy={policy!r} is not one of {', '.join(POLICIES)}")
    if policy in ("fixed_chunk", "fifo", "dla"):
        if capacity is None:
            raise ValueError(f"capacity is required by policy {policy!r}")
        _check_capacity(capacity)
        width = capacity
    else:
        width = 1 if policy == "linear" else loglinear_levels(T)
    if policy == "dla":
        if tau is None:
            raise ValueError("tau is required by policy 'dla'")
        _check_tau(tau)
        _check_score(score)
    if lam.shape[-1] < width:
        raise ValueError(f"lam has R={lam.shape[-1]} weights, policy {policy!r} needs {width}")
    scale = dk ** -0.5 if scale is None else scale
    chunk = math.ceil(T / capacity) if policy == "fixed_chunk" and capacity else 1
    q64, k64, v64, lam64 = (x.detach().double() for x in (q, k, v, lam))
    la = (torch.zeros(B, H, T, dtype=torch.float64, device=k.device) if log_a is None
          else log_a.detach().double())
    o = torch.zeros(B, H, T, dv, dtype=torch.float64, device=k.device)
    starts = torch.full((B, H, T, width), T, dtype=torch.long, device=k.device)
    nstates = torch.zeros(B, H, T, dtype=torch.long, device=k.device)
    info = torch.zeros(B, H, T, dtype=torch.float64, device=k.device)
    opened = torch.zeros(B, H, T, dtype=torch.bool, device=k.device)
    merged = torch.zeros(B, H, T, dtype=torch.bool, device=k.device)
    for b in range(B):
        for h in range(H):
            blocks: list[_Block] = []
            for t in range(T):
                a = math.exp(float(la[b, h, t]))
                for blk in blocks:
                    blk.S = a * blk.S
                s = torch.outer(k64[b, h, t], v64[b, h, t])
                I = 0.0
                if policy == "dla" and blocks:
                    I = float(information(blocks[-1].S, s, score))
                if policy == "loglinear" and t > 0:
                    z = (t & -t).bit_length() - 1          # trailing zeros of t: a binary carry
                    merged[b, h, t] = z > 0
                    while len(blocks) > 1 and blocks[-2].level <= z:
                        _absorb(blocks, len(blocks) - 2)
                    blocks[-1].level = z + 1
                opens = _opens(policy, t, chunk, I, tau)
                if opens:
                    blocks.append(_Block(s, 1, I, t))
                else:
                    blk = blocks[-1]
                    blk.S, blk.n, blk.Ibar = blk.S + s, blk.n + 1, blk.Ibar + I
                if policy in ("fifo", "dla") and len(blocks) > width:
                    pairs = [(blocks[j].Ibar + blocks[j + 1].Ibar) / (blocks[j].n + blocks[j + 1].n)
                             for j in range(len(blocks) - 1)]
                    _absorb(blocks, 0 if policy == "fifo" else pairs.index(min(pairs)))
                    merged[b, h, t] = True
                m = len(blocks)
                for j, blk in enumerate(blocks):
                    r = blk.level if policy == "loglinear" else m - 1 - j
                    o[b, h, t] += lam64[b, h, t, r] * scale * (q64[b, h, t] @ blk.S)
                starts[b, h, t, :m] = torch.tensor([blk.start for blk in blocks])
                nstates[b, h, t], info[b, h, t], opened[b, h, t] = m, I, opens
    return o, Partition(starts, nstates, info, opened, merged)


def _opens(policy: str, t: int, chunk: int, I: float, tau: float | None) -> bool:
    """Whether token t opens a new state under ``policy`` (token 0 always does)."""
    if t == 0 or policy in ("fifo", "loglinear"):
        return True
    if policy == "fixed_chunk":
        return t % chunk == 0
    return policy == "dla" and I >= (tau if tau is not None else math.inf)


@dataclass
class _Block:
    """One state of the recurrent cache: its matrix, token count, summed info, first token."""

    S: Tensor
    n: int
    Ibar: float
    start: int
    level: int = 0


def _absorb(blocks: list[_Block], i: int) -> None:
    """Sum block i + 1 into block i (an adjacent merge), keeping i's start."""
    left, right = blocks[i], blocks.pop(i + 1)
    left.S, left.n, left.Ibar = left.S + right.S, left.n + right.n, left.Ibar + right.Ibar


def _normalise(X: Tensor) -> Tensor:
    return X / (_frobenius(X)[..., None, None] + EPS)


def _frobenius(X: Tensor) -> Tensor:
    return torch.linalg.vector_norm(X, dim=(-2, -1))


def _check_kv(k: Tensor, v: Tensor, log_a: Tensor | None) -> tuple[int, int, int, int, int]:
    if k.dim() != 4:
        raise ValueError(f"k has shape {tuple(k.shape)}, expected (B, H, T, dk)")
    if v.dim() != 4 or v.shape[:3] != k.shape[:3]:
        raise ValueError(f"v has shape {tuple(v.shape)}, expected (B, H, T, dv) with "
                         f"(B, H, T)={tuple(k.shape[:3])} from k")
    if log_a is not None and log_a.shape != k.shape[:3]:
        raise ValueError(f"log_a has shape {tuple(log_a.shape)}, expected (B, H, T)="
                         f"{tuple(k.shape[:3])}")
    B, H, T, dk = k.shape
    return B, H, T, dk, v.shape[-1]


def _check_q(q: Tensor, k: Tensor) -> None:
    if q.shape != k.shape:
        raise ValueError(f"q has shape {tuple(q.shape)}, expected k's {tuple(k.shape)}")


def _check_lam(lam: Tensor, bht: tuple[int, int, int]) -> None:
    if lam.dim() != 4 or tuple(lam.shape[:3]) != bht or lam.shape[-1] < 1:
        raise ValueError(f"lam has shape {tuple(lam.shape)}, expected (B, H, T, R) with "
                         f"(B, H, T)={bht}")


def _check_tau(tau: float) -> None:
    if not tau >= 0:                                        # also catches NaN
        raise ValueError(f"tau={tau} must be >= 0")


def _check_capacity(capacity: int) -> None:
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"capacity={capacity!r} must be an integer >= 1")


def _check_score(score: str) -> None:
    if score not in SCORES:
        raise ValueError(f"score={score!r} is not one of {', '.join(SCORES)}")
