r"""Training-free streams and measures of a partition: DLA's Theorem 3.1, recall, boundaries.

**Theorem 3.1** (DLA, as given by the third-party paper note). Token contributions
:math:`u_t \in \mathbb{R}^D` are kept as block sums over a partition
:math:`\pi = (C_1, \dots, C_m)` of contiguous blocks; inside block i every token is
represented by the block mean :math:`\bar u_i`. The note does not say what the read-out
:math:`y` is; raystudy's reading (derived): with per-token read weights :math:`|g_t| \le 1`,
:math:`y(q) = \sum_t g_t \langle q, u_t\rangle` and
:math:`\tilde y_\pi(q) = \sum_t g_t \langle q, \bar u_{i(t)}\rangle`, and then

.. math::  |y(q) - \tilde y_\pi(q)| \le \|q\|_2\, B(\pi), \qquad
           B(\pi) = \sum_i \sqrt{|C_i|}\, \sqrt{\textstyle\sum_{t \in C_i} \|u_t - \bar u_i\|^2}

(triangle inequality, then Cauchy-Schwarz per block). Corollary 3.2: on a piecewise-constant
stream a change-point-aligned partition has :math:`B = 0`, a block across a change point
does not.

Streams (float64, seeded, offline): ``piecewise_stream`` (Corollary 3.2's setting) and
``needle_stream`` (rare distinct key-value needles in themed filler, the proof of concept's
setting). Measures: ``deviation_bound``, ``realised_deviation``, ``boundary_f1`` and
``recall_best_state`` (which state answers a needle's key, chosen without an oracle).

Shapes: T length, dk / dv dims, D = dk * dv for contributions ``U`` (T, D), block
``starts`` (m,) long ascending from 0, entries >= T ignored (so a ``Partition`` row
``p.starts[b, h, t]`` can be passed as is).
"""

from __future__ import annotations

import torch
from torch import Tensor


def piecewise_stream(
    seg_lens: list[int] | tuple[int, ...],
    dk: int,
    dv: int,
    *,
    noise: float = 0.0,
    seed: int = 0,
) -> tuple[Tensor, Tensor, Tensor]:
    """Piecewise-constant keys and values (Corollary 3.2's non-stationary stream).

    Segment j has one unit key direction (orthogonal to segment j-1's) and one unit value
    direction, every token of the segment carries them, plus N(0, noise^2) per coordinate.

    Returns:
        k (T, dk), v (T, dv) float64 with T = sum(seg_lens), and ``change_points`` (J-1,)
        long, the segment starts after 0.
    """
    if not seg_lens or any(n < 1 for n in seg_lens):
        raise ValueError(f"seg_lens={list(seg_lens)} must be a non-empty list of lengths >= 1")
    if dk < 2 or dv < 1:
        raise ValueError(f"dk={dk} must be >= 2 (consecutive keys orthogonal) and dv={dv} >= 1")
    if noise < 0:
        raise ValueError(f"noise={noise} must be >= 0")
    gen = torch.Generator().manual_seed(seed)
    keys, values, prev = [], [], None
    for n in seg_lens:
        key = torch.randn(dk, generator=gen, dtype=torch.float64)
        if prev is not None:
            key = key - (key @ prev) * prev                 # orthogonal to the previous segment
        key = key / key.norm()
        value = torch.randn(dv, generator=gen, dtype=torch.float64)
        keys.append(key.expand(n, dk))
        values.append((value / value.norm()).expand(n, dv))
        prev = key
    k, v = torch.cat(keys), torch.cat(values)
    k = k + noise * torch.randn(k.shape, generator=gen, dtype=torch.float64)
    v = v + noise * torch.randn(v.shape, generator=gen, dtype=torch.float64)
    change_points = torch.cumsum(torch.tensor(seg_lens), 0)[:-1]
    return k, v, change_points


def needle_stream(
    n_needles: int,
    filler_len: int,
    dk: int,
    dv: int,
    *,
    theme_noise: float = 0.1,
    seed: int = 0,
) -> tuple[Tensor, Tensor, Tensor]:
    """Themed filler with rare distinct needles (the proof of concept's recall setting).

    The stream is ``n_needles`` segments of ``filler_len + 1`` tokens; each holds one needle
    at a uniform position. Filler keys / values are one theme direction plus
    N(0, theme_noise^2) per coordinate, normalised; each needle has its own unit key,
    orthogonal to the key theme, and its own unit value.

    Returns:
        k (T, dk), v (T, dv) float64 with T = n_needles * (filler_len + 1), and
        ``needle_pos`` (n_needles,) long, ascending.
    """
    if n_needles < 1 or filler_len < 0:
        raise ValueError(f"n_needles={n_needles} must be >= 1 and filler_len={filler_len} >= 0")
    if dk < 2 or dv < 1:
        raise ValueError(f"dk={dk} must be >= 2 and dv={dv} >= 1")
    gen = torch.Generator().manual_seed(seed)
    seg = filler_len + 1
    T = n_needles * seg

    def unit(*shape: int) -> Tensor:
        x = torch.randn(*shape, generator=gen, dtype=torch.float64)
        return x / x.norm(dim=-1, keepdim=True)

    theme_k, theme_v = unit(dk), unit(dv)
    k = theme_k + theme_noise * torch.randn(T, dk, generator=gen, dtype=torch.float64)
    v = theme_v + theme_noise * torch.randn(T, dv, generator=gen, dtype=torch.float64)
    k, v = k / k.norm(dim=-1, keepdim=True), v / v.norm(dim=-1, keepdim=True)
    needle_pos = torch.arange(n_needles) * seg + torch.randint(seg, (n_needles,), generator=gen)
    needle_k = unit(n_needles, dk)
    needle_k = needle_k - (needle_k @ theme_k)[:, None] * theme_k
    k[needle_pos] = needle_k / needle_k.norm(dim=-1, keepdim=True)
    v[needle_pos] = unit(n_needles, dv)
    return k, v, needle_pos


def contributions(k: Tensor, v: Tensor) -> Tensor:
    """(T, dk), (T, dv) -> U (T, dk * dv): the flattened token contributions k_t v_t^T."""
    return (k[:, :, None] * v[:, None, :]).reshape(k.shape[0], -1)


def deviation_bound(U: Tensor, starts: Tensor) -> float:
    """Theorem 3.1's B(pi) per unit ||q||: sum over blocks of sqrt|C| sqrt(sum ||u_t - u_C||^2).

    Args:
        U: (T, D) contributions; starts: (m,) block starts (module docstring).
    """
    total = 0.0
    for lo, hi in _blocks(starts, U.shape[0]):
        block = U[lo:hi]
        total += ((hi - lo) * float(((block - block.mean(0)) ** 2).sum())) ** 0.5
    return total


def realised_deviation(U: Tensor, starts: Tensor, q: Tensor, g: Tensor | None = None) -> float:
    """|y(q) - y~(q)|: the read-out of every token against its block mean's (module docstring).

    Args:
        U: (T, D) contributions; starts: (m,) block starts; q: (D,) query;
        g: (T,) read weights, |g_t| <= 1 for the bound to hold (default all ones, which
            gives 0: block sums are kept).
    """
    T = U.shape[0]
    if q.shape != (U.shape[1],):
        raise ValueError(f"q has shape {tuple(q.shape)}, expected (D,)=({U.shape[1]},)")
    g = torch.ones(T, dtype=U.dtype) if g is None else g
    if g.shape != (T,):
        raise ValueError(f"g has shape {tuple(g.shape)}, expected (T,)=({T},)")
    U_bar = torch.empty_like(U)
    for lo, hi in _blocks(starts, T):
        U_bar[lo:hi] = U[lo:hi].mean(0)
    return abs(float(g @ ((U - U_bar) @ q)))


def boundary_f1(predicted: Tensor, true: Tensor, tol: int = 0) -> float:
    """F1 of predicted boundary positions against true ones, one-to-one within ``tol``.

    Args:
        predicted: (P,) positions (e.g. where ``opened`` is True, or block starts), position
            0 dropped (it opens the first state, not a change); true: (J,) change points.
        tol: a match needs |p - c| <= tol.

    Greedy matching in sorted order is a maximum matching for intervals on a line. With
    neither side having a boundary the F1 is 1.
    """
    if tol < 0:
        raise ValueError(f"tol={tol} must be >= 0")
    pred = sorted({int(p) for p in predicted if int(p) != 0})
    gold = sorted({int(c) for c in true})
    if not pred and not gold:
        return 1.0
    hits, i = 0, 0
    for p in pred:
        while i < len(gold) and gold[i] < p - tol:
            i += 1
        if i < len(gold) and abs(gold[i] - p) <= tol:
            hits += 1
            i += 1
    if hits == 0:
        return 0.0
    precision, recall = hits / len(pred), hits / len(gold)
    return 2 * precision * recall / (precision + recall)


def recall_best_state(k: Tensor, v: Tensor, starts: Tensor, needle_pos: Tensor) -> Tensor:
    """Cosine between each needle's value and the answer of the best-matching state.

    The states are the block sums :math:`S_i = \\sum_{t \\in C_i} k_t v_t^\\top` of the
    final partition (no decay). For needle key :math:`k^*` the state maximising
    :math:`\\|S_i^\\top k^*\\| / \\|S_i\\|_F` answers :math:`S_i^\\top k^*`; no oracle says
    which block holds the needle.

    Args:
        k: (T, dk); v: (T, dv); starts: (m,) final block starts; needle_pos: (n,) long.

    Returns:
        (n,) float64 cosines.
    """
    T = k.shape[0]
    S = torch.stack([k[lo:hi].T @ v[lo:hi] for lo, hi in _blocks(starts, T)])  # (m, dk, dv)
    k_star, v_star = k[needle_pos], v[needle_pos]                             # (n, dk), (n, dv)
    answers = torch.einsum("nk,mkv->nmv", k_star, S)
    strength = answers.norm(dim=-1) / torch.linalg.vector_norm(S, dim=(-2, -1)).clamp_min(1e-300)
    best = answers[torch.arange(len(needle_pos)), strength.argmax(-1)]
    return torch.nn.functional.cosine_similarity(best, v_star, dim=-1)


def _blocks(starts: Tensor, T: int) -> list[tuple[int, int]]:
    """[(lo, hi)] half-open blocks from ascending starts; checks they begin at 0."""
    lows = [int(s) for s in starts if int(s) < T]
    if not lows or lows[0] != 0 or any(b <= a for a, b in zip(lows, lows[1:], strict=False)):
        raise ValueError(f"starts={lows} must ascend strictly from 0 below T={T}")
    return list(zip(lows, [*lows[1:], T], strict=True))
