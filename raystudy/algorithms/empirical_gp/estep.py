r"""The batched E-step: sufficient statistics of S dataset posteriors, without a loop over S.

Dataset i has inputs :math:`X_i` (n_i, d) and observations :math:`y_i` (n_i,).
Through shift interpolation (``prior.py``) its likelihood given the latent
:math:`\theta = f(Z)` is :math:`y_i \mid \theta \sim N(c_i + W_i \theta, R_i)`, with
:math:`W_i = K(X_i, Z) K_{ZZ}^{-1}`, :math:`c_i = m(X_i) - W_i m(Z)` and
:math:`R_i = \Lambda_i + \sigma^2 I`. With :math:`\theta \sim N(\mu, \Sigma)`:

.. math::
    A_i &= W_i \Sigma W_i^\top + R_i, \qquad r_i = y_i - c_i - W_i \mu,
    \qquad a_i = A_i^{-1} r_i, \qquad u_i = W_i^\top a_i, \\
    m_i &= E[\theta \mid y_i] = \mu + \Sigma u_i, \qquad
    C_i = Cov[\theta \mid y_i] = \Sigma - \Sigma W_i^\top A_i^{-1} W_i \Sigma .

The M-step needs only sums, so the E-step returns, per corpus (or shard of it):
:math:`S`, :math:`N = \sum n_i`, :math:`b = \sum_i u_i`, :math:`Q = \sum_i u_i u_i^\top`,
:math:`G = \sum_i W_i^\top A_i^{-1} W_i`, the log-likelihood
:math:`\sum_i \log N(y_i; c_i + W_i\mu, A_i)`, and for the noise update
:math:`\sum_i \|a_i\|^2` and :math:`\sum_i \mathrm{tr} A_i^{-1}`. Then
:math:`\sum_i m_i = S\mu + \Sigma b` and
:math:`\sum_i C_i = S\Sigma - \Sigma G \Sigma` -- the sum of the S conditional
covariances is one product of stacked matrices, never S dense M x M matrices:
:math:`G = \mathbf{W}^\top \mathbf{X}` for :math:`\mathbf{W}` the (N, M) stack of all
W_i and :math:`\mathbf{X}` the stack of all :math:`A_i^{-1} W_i`.

Layout (``Corpus``): datasets sorted by size, all their rows of W stacked into one
(N, M) matrix, so the two products that cost O(N M^2) -- :math:`W_i \Sigma` for every i,
and :math:`G = \sum_i W_i^\top (A_i^{-1} W_i)` -- are one GEMM each over all datasets.
The n x n algebra (A_i, its Cholesky factor, :math:`A_i^{-1}`) is batched per size
group, or per bucket of sizes padded to the bucket's largest (``bucket_width``; padded
rows have W = 0, r = 0 and A = I there, so they add nothing). Measured on one thread
(``bench/egp.py``, section "layout"), per-size groups are the fastest: padding adds
O(n^2 M) and O(n^3) work per dataset while the loop over 21 sizes costs well under 1 ms.
:func:`loop_statistics` is the same math one dataset at a time (the reference the
tests and ``bench/egp.py`` compare with).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import torch
from torch import Tensor

from .prior import ShiftBasis, as_inputs, safe_cholesky

Dataset = tuple[Tensor, Tensor]
LOG_2PI = math.log(2 * math.pi)


def check_datasets(datasets, reference_points: Tensor, check_range: bool = True
                   ) -> list[Dataset]:
    """Validate and convert ``[(x, y), ...]`` to ``[(x (n, d), y (n,)), ...]``.

    One ``ValueError`` naming the dataset for: an empty corpus or dataset, a pair
    that is not (x, y), shapes that disagree, NaN/inf values, and (``check_range``)
    a location outside the bounding box of the reference points.
    """
    if not isinstance(datasets, (list, tuple)) or len(datasets) == 0:
        raise ValueError("datasets must be a non-empty list of (x, y) pairs")
    Z = reference_points
    if Z.dim() != 2 or Z.shape[0] < 1:
        raise ValueError(f"reference_points must be (M, d), got shape {tuple(Z.shape)}")
    d = Z.shape[1]
    lo, hi = Z.min(0).values, Z.max(0).values
    slack = 1e-9 * (hi - lo).clamp_min(1.0)
    out: list[Dataset] = []
    shape_error: tuple[int, str] | None = None          # the first, raised in dataset order
    for i, item in enumerate(datasets):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            shape_error = (i, f"datasets[{i}] is not an (x, y) pair")
            break
        x = as_inputs(torch.as_tensor(item[0]).to(Z), d)
        y = torch.as_tensor(item[1]).to(Z)
        if y.dim() == 2 and y.shape[-1] == 1:
            y = y[:, 0]
        if x.dim() != 2 or x.shape[1] != d or y.dim() != 1 or x.shape[0] != y.shape[0]:
            shape_error = (i, f"datasets[{i}]: x of shape {tuple(x.shape)} and y of shape "
                              f"{tuple(y.shape)} do not match (expected x (n, {d}) or (n,), "
                              "y (n,))")
            break
        if x.shape[0] == 0:
            shape_error = (i, f"datasets[{i}] is empty (0 observations)")
            break
        out.append((x, y))
    # values: one vectorised pass over all datasets, the loop only to name the first bad one
    bad = None
    if out:
        xs, ys = torch.cat([x for x, _ in out]), torch.cat([y for _, y in out])
        sizes = torch.tensor([len(y) for _, y in out])
        per_dataset = ~torch.isfinite(ys) | ~torch.isfinite(xs).all(1)
        if check_range:
            per_dataset |= ((xs < lo - slack) | (xs > hi + slack)).any(1)
        flagged = torch.zeros(len(out), dtype=torch.long).index_add_(
            0, torch.repeat_interleave(torch.arange(len(out)), sizes), per_dataset.long())
        if bool(flagged.any()):
            bad = int(flagged.nonzero()[0])
    if bad is not None and (shape_error is None or bad < shape_error[0]):
        x, y = out[bad]
        if not bool(torch.isfinite(y).all()) or not bool(torch.isfinite(x).all()):
            raise ValueError(f"datasets[{bad}] has NaN or inf values in "
                             f"{'y' if torch.isfinite(x).all() else 'x'}")
        outside = x[((x < lo - slack) | (x > hi + slack)).any(1)][0].tolist()
        raise ValueError(f"datasets[{bad}]: location {outside} is outside the range of the "
                         f"reference points [{lo.tolist()}, {hi.tolist()}]")
    if shape_error is not None:
        raise ValueError(shape_error[1])
    return out


@dataclass
class SufficientStats:
    """Sums over datasets that the M-step needs (see the module docstring)."""

    count: int
    n_obs: int
    b: Tensor | None
    Q: Tensor | None
    G: Tensor | None
    log_likelihood: float
    a_sq: float
    trace_inv: float

    def __add__(self, other: SufficientStats) -> SufficientStats:
        def add(x: Tensor | None, y: Tensor | None) -> Tensor | None:
            return None if x is None or y is None else x + y

        return SufficientStats(
            self.count + other.count, self.n_obs + other.n_obs, add(self.b, other.b),
            add(self.Q, other.Q), add(self.G, other.G),
            self.log_likelihood + other.log_likelihood,
            self.a_sq + other.a_sq, self.trace_inv + other.trace_inv)


@dataclass
class SizeGroup:
    """B datasets padded to n points, rows ``[start, start + B n)`` of the corpus layout.

    ``Lam`` (B, n, n) is Lambda_i (zero at padded rows and columns), ``r0`` (B, n) is
    y_i - c_i (zero at padding), ``pad`` (B, n) is 1.0 at padded rows, else 0.0;
    ``count`` the real observations of the group.
    """

    index: Tensor
    start: int
    n: int
    Lam: Tensor
    r0: Tensor
    pad: Tensor | None
    count: int

    @property
    def rows(self) -> slice:
        return slice(self.start, self.start + self.r0.numel())


def bucket_sizes(sizes: list[int], width: int) -> dict[int, int]:
    """Padded size of each dataset size: sizes grouped into buckets of ``width`` sizes.

    ``width=1`` keeps every size its own group (no padding); a width covering all sizes
    pads every dataset to the largest (one group).
    """
    lo = min(sizes)
    return {n: min(max(sizes), lo + ((n - lo) // width + 1) * width - 1) for n in set(sizes)}


class Corpus:
    r"""Datasets laid out for the batched E-step, shift-interpolation quantities precomputed.

    ``W`` (rows (N', M)), ``Lambda`` and ``c`` depend only on the base GP and the
    locations, so they are computed once per fit, all datasets at once: one kernel
    call K(Z, X) for every location, two triangular solves with K(Z, Z)'s Cholesky
    factor, one batched K(X_i, X_i) per group. Datasets are sorted into groups by size;
    ``bucket_width`` > 1 pads the sizes of a bucket to its largest (padded rows of W are
    zero and padded diagonal entries of A_i are 1, so the statistics are unchanged) for
    fewer, larger groups. The E-step's two large products, :math:`W_i\Sigma` and
    :math:`\sum_i W_i^\top A_i^{-1} W_i`, run over all N' rows at once; only the n x n
    algebra is per group.

    ``matmul_dtype`` (default: the reference points' dtype) is the precision of those two
    products and of W; the n x n algebra and the sums stay in the reference dtype.
    ``torch.float32`` halves the time of a float64 fit and moves the statistics by
    about 1e-5 relative (see ``bench/egp.py``); keep float64 for exact comparisons.
    """

    def __init__(self, datasets: list[Dataset], basis: ShiftBasis, bucket_width: int = 1,
                 matmul_dtype: torch.dtype | None = None) -> None:
        if bucket_width < 1:
            raise ValueError(f"bucket_width={bucket_width} must be >= 1")
        Z = basis.Z
        self.dtype = Z.dtype
        self.matmul_dtype = matmul_dtype or Z.dtype
        self.count = len(datasets)
        sizes = [int(x.shape[0]) for x, _ in datasets]
        self.n_obs = sum(sizes)
        self.M = M = Z.shape[0]
        padded = bucket_sizes(sizes, bucket_width)
        by_size: dict[int, list[int]] = {}
        for i, n in enumerate(sizes):
            by_size.setdefault(padded[n], []).append(i)
        rows = sum(n * len(members) for n, members in by_size.items())
        order = [i for _, members in sorted(by_size.items()) for i in members]
        real = torch.cat([(torch.arange(n) < torch.tensor([sizes[i] for i in members])[:, None])
                          .reshape(-1) for n, members in sorted(by_size.items())])  # (N',)
        with torch.no_grad():
            X = torch.cat([datasets[i][0] for i in order])                 # (N, d)
            Y = torch.cat([datasets[i][1] for i in order])                 # (N,)
            W, V = basis.row_weights(X)                                    # (N, M), V^T (N, M)
            r0 = Y - (basis.m(X) - W @ basis.m_Z)                          # y_i - c_i
            if rows > len(Y):                                              # padding: zero rows
                W, r0, V, X = (None if t is None else
                               torch.zeros(rows, *t.shape[1:], dtype=t.dtype).index_put_(
                                   (real,), t) for t in (W, r0, V, X))
                X[~real] = Z[0]                                            # any valid location
            self.groups = []
            start = 0
            for n, members in sorted(by_size.items()):
                B = len(members)
                part = slice(start, start + B * n)
                keep = real[part].view(B, n).to(Z.dtype)
                Xg = X[part].view(B, n, -1)
                Vg = None if V is None else V[part].view(B, n, M).mT        # (B, M, n)
                Lam = basis.residual(Xg, Xg, Vg, Vg)                       # Lambda_i (Eq. shift)
                pad = None
                if not bool(keep.all()):
                    Lam = Lam * (keep.unsqueeze(-1) * keep.unsqueeze(-2))
                    pad = 1.0 - keep
                self.groups.append(SizeGroup(torch.tensor(members), start, n,
                                             0.5 * (Lam + Lam.mT), r0[part].view(B, n),
                                             pad, int(keep.sum())))
                start += B * n
        self.r0 = r0                                                       # (N',)
        self.W = W.to(self.matmul_dtype)                                   # (N', M)
        self._WS = torch.empty(M, rows, dtype=self.matmul_dtype, device=Z.device)
        self._X = torch.empty(rows, M, dtype=self.matmul_dtype, device=Z.device)

    def statistics(self, mu: Tensor, Sigma: Tensor, noise: float, need_noise: bool = False,
                   need_moments: bool = True) -> SufficientStats:
        """The E-step at (mu, Sigma, noise).

        ``need_moments=False`` computes only the log-likelihood (b, Q, G are None): what
        the last E-step of a fit needs.
        """
        M, dt, mm = self.M, self.dtype, self.matmul_dtype
        loglik = a_sq = trace_inv = 0.0
        us = []
        with torch.no_grad():
            WS = torch.matmul(Sigma.to(mm), self.W.mT, out=self._WS)        # (W Sigma)^T, (M, N')
            r = self.r0 - (self.W @ mu.to(mm)).to(dt)                      # r_i, all datasets
            for g in self.groups:
                B, n = g.r0.shape
                W_g = self.W[g.rows].view(B, n, M)
                A = (W_g @ WS[:, g.rows].view(M, B, n).transpose(0, 1)).to(dt) + g.Lam
                diag = A.diagonal(dim1=-2, dim2=-1)         # A_i = W Sigma W^T + Lam + s2 I
                diag.add_(noise if g.pad is None else noise * (1 - g.pad) + g.pad)  # pads: A = I
                L = safe_cholesky(A)
                r_g = r[g.rows].view(B, n)
                logdet = 2 * torch.log(L.diagonal(dim1=-2, dim2=-1)).sum()
                if not need_moments:
                    z = torch.linalg.solve_triangular(L, r_g.unsqueeze(-1), upper=False)
                    loglik -= 0.5 * (float((z * z).sum() + logdet) + g.count * LOG_2PI)
                    continue
                A_inv = torch.cholesky_inverse(L)                           # (B, n, n)
                a = (A_inv @ r_g.unsqueeze(-1)).squeeze(-1)                 # a_i = A_i^-1 r_i
                us.append((W_g.mT @ a.to(mm).unsqueeze(-1)).squeeze(-1).to(dt))  # u_i = W_i^T a_i
                torch.matmul(A_inv.to(mm), W_g, out=self._X[g.rows].view(B, n, M))
                loglik -= 0.5 * (float((r_g * a).sum() + logdet) + g.count * LOG_2PI)
                if need_noise:
                    a_sq += float((a * a).sum())
                    trace_inv += float(A_inv.diagonal(dim1=-2, dim2=-1).sum())
                    if g.pad is not None:
                        trace_inv -= float(g.pad.sum())             # pads: A^-1 = I there
        if not need_moments:
            return SufficientStats(self.count, self.n_obs, None, None, None, loglik, a_sq,
                                   trace_inv)
        u = torch.cat(us)                                                   # (S, M)
        G = (self.W.mT @ self._X).to(dt)                                    # sum_i W_i^T A_i^-1 W_i
        return SufficientStats(self.count, self.n_obs, u.sum(0), u.mT @ u, G, loglik, a_sq,
                               trace_inv)


def loop_statistics(datasets: list[Dataset], basis: ShiftBasis, mu: Tensor, Sigma: Tensor,
                    noise: float) -> tuple[Tensor, Tensor, Tensor, float, float, float]:
    """The E-step one dataset at a time, the dense way (the reference for the batched one).

    Returns ``sum_i m_i``, ``sum_i C_i``, ``sum_i m_i m_i^T``, the log-likelihood,
    and the noise statistics ``sum |a_i|^2``, ``sum tr A_i^-1``.
    """
    M = mu.shape[0]
    sum_m = torch.zeros(M, dtype=mu.dtype)
    sum_C = torch.zeros(M, M, dtype=mu.dtype)
    sum_mm = torch.zeros(M, M, dtype=mu.dtype)
    loglik = a_sq = trace_inv = 0.0
    with torch.no_grad():
        for x, y in datasets:
            W, V = basis.weights(x)
            mu_S = basis.m(x) + W @ (mu - basis.m_Z)
            cross = Sigma @ W.mT                                          # Cov(theta, f(X_i))
            A = basis.residual(x, x, V, V) + W @ cross + noise * torch.eye(len(y), dtype=mu.dtype)
            A = 0.5 * (A + A.mT)
            L = safe_cholesky(A)
            alpha = torch.cholesky_solve((y - mu_S).unsqueeze(-1), L).squeeze(-1)
            m_i = mu + cross @ alpha
            C_i = Sigma - cross @ torch.cholesky_solve(cross.mT, L)
            sum_m += m_i
            sum_C += C_i
            sum_mm += torch.outer(m_i, m_i)
            loglik += float(torch.distributions.MultivariateNormal(
                mu_S, scale_tril=L).log_prob(y))
            a_sq += float(alpha @ alpha)
            trace_inv += float(torch.cholesky_inverse(L).diagonal().sum())
    return sum_m, sum_C, sum_mm, loglik, a_sq, trace_inv


# ----------------------------------------------------------------------------- shards
@dataclass
class ShardJob:
    """One shard's E-step: its datasets, the base GP, and the current parameters.

    The datasets travel packed as three tensors (all x (N, d), all y (N,), sizes (S,)):
    pickling S pairs of small tensors costs more than the E-step. ``key`` names the shard
    within one fit, so a process that sees the same shard again reuses its precomputed
    ``Corpus`` instead of rebuilding it.
    """

    key: str
    x: Tensor
    y: Tensor
    sizes: Tensor
    basis: ShiftBasis
    mu: Tensor
    Sigma: Tensor
    noise: float
    need_noise: bool
    threads: int = 1
    need_moments: bool = True
    matmul_dtype: torch.dtype | None = None

    @classmethod
    def pack(cls, key: str, datasets: list[Dataset], **kwargs) -> ShardJob:
        sizes = torch.tensor([len(y) for _, y in datasets])
        return cls(key, torch.cat([x for x, _ in datasets]), torch.cat([y for _, y in datasets]),
                   sizes, **kwargs)

    def datasets(self) -> list[Dataset]:
        sizes = self.sizes.tolist()
        return list(zip(self.x.split(sizes), self.y.split(sizes), strict=True))


_CORPORA: OrderedDict[str, Corpus] = OrderedDict()
_MAX_CACHED = 8


def shard_statistics(job: ShardJob) -> SufficientStats:
    """E-step of one shard (module-level, so ``map_fn`` can send it to other processes)."""
    if job.threads:
        torch.set_num_threads(job.threads)
    corpus = _CORPORA.get(job.key)
    if corpus is None:
        corpus = Corpus(job.datasets(), job.basis, matmul_dtype=job.matmul_dtype)
        _CORPORA[job.key] = corpus
        while len(_CORPORA) > _MAX_CACHED:
            _CORPORA.popitem(last=False)
    _CORPORA.move_to_end(job.key)
    return corpus.statistics(job.mu, job.Sigma, job.noise, job.need_noise, job.need_moments)


def clear_cache() -> None:
    """Forget the precomputed shards of this process."""
    _CORPORA.clear()
