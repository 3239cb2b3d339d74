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
with :math:`A_i = L_i L_i^\top` and :math:`V_i = L_i^{-1} W_i`,
:math:`G = \mathbf{V}^\top \mathbf{V}` for :math:`\mathbf{V}` the (N, M) stack of all V_i.

Datasets are grouped by size n, so each group is one batched Cholesky and a few
batched triangular solves; the only Python loop is over distinct sizes.
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
    out = []
    for i, item in enumerate(datasets):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ValueError(f"datasets[{i}] is not an (x, y) pair")
        x = as_inputs(torch.as_tensor(item[0]).to(Z), d)
        y = torch.as_tensor(item[1]).to(Z)
        if y.dim() == 2 and y.shape[-1] == 1:
            y = y[:, 0]
        if x.dim() != 2 or x.shape[1] != d or y.dim() != 1 or x.shape[0] != y.shape[0]:
            raise ValueError(f"datasets[{i}]: x of shape {tuple(x.shape)} and y of shape "
                             f"{tuple(y.shape)} do not match (expected x (n, {d}) or (n,), "
                             "y (n,))")
        if x.shape[0] == 0:
            raise ValueError(f"datasets[{i}] is empty (0 observations)")
        if not bool(torch.isfinite(y).all()) or not bool(torch.isfinite(x).all()):
            raise ValueError(f"datasets[{i}] has NaN or inf values in "
                             f"{'y' if torch.isfinite(x).all() else 'x'}")
        if check_range and bool(((x < lo - slack) | (x > hi + slack)).any()):
            bad = x[((x < lo - slack) | (x > hi + slack)).any(1)][0].tolist()
            raise ValueError(f"datasets[{i}]: location {bad} is outside the range of the "
                             f"reference points [{lo.tolist()}, {hi.tolist()}]")
        out.append((x, y))
    return out


@dataclass
class SufficientStats:
    """Sums over datasets that the M-step needs (see the module docstring)."""

    count: int
    n_obs: int
    b: Tensor
    Q: Tensor
    G: Tensor
    log_likelihood: float
    a_sq: float
    trace_inv: float

    def __add__(self, other: SufficientStats) -> SufficientStats:
        return SufficientStats(
            self.count + other.count, self.n_obs + other.n_obs, self.b + other.b,
            self.Q + other.Q, self.G + other.G, self.log_likelihood + other.log_likelihood,
            self.a_sq + other.a_sq, self.trace_inv + other.trace_inv)


@dataclass
class SizeGroup:
    """B datasets of n points each: W (B, n, M), Lambda (B, n, n), y - c (B, n)."""

    index: Tensor
    W: Tensor
    Lam: Tensor
    r0: Tensor


class Corpus:
    """Datasets grouped by size with their shift-interpolation quantities precomputed.

    ``W``, ``Lambda`` and ``c`` depend only on the base GP and the locations, so they
    are computed once per fit, not once per EM iteration.
    """

    def __init__(self, datasets: list[Dataset], basis: ShiftBasis) -> None:
        self.count = len(datasets)
        self.n_obs = sum(int(x.shape[0]) for x, _ in datasets)
        self.M = basis.Z.shape[0]
        by_size: dict[int, list[int]] = {}
        for i, (x, _) in enumerate(datasets):
            by_size.setdefault(int(x.shape[0]), []).append(i)
        self.groups = []
        with torch.no_grad():
            for _, members in sorted(by_size.items()):
                X = torch.stack([datasets[i][0] for i in members])       # (B, n, d)
                Y = torch.stack([datasets[i][1] for i in members])       # (B, n)
                W, V = basis.weights(X)
                Lam = basis.residual(X, X, V, V)
                c = basis.m(X) - W @ basis.m_Z
                self.groups.append(SizeGroup(torch.tensor(members), W, 0.5 * (Lam + Lam.mT),
                                             Y - c))

    def statistics(self, mu: Tensor, Sigma: Tensor, noise: float,
                   need_noise: bool = False) -> SufficientStats:
        """The E-step at (mu, Sigma, noise), batched per size group."""
        M = self.M
        b = torch.zeros(M, dtype=mu.dtype, device=mu.device)
        Q = torch.zeros(M, M, dtype=mu.dtype, device=mu.device)
        G = torch.zeros(M, M, dtype=mu.dtype, device=mu.device)
        loglik = a_sq = trace_inv = 0.0
        with torch.no_grad():
            for g in self.groups:
                B, n = g.r0.shape
                eye = torch.eye(n, dtype=mu.dtype, device=mu.device)
                W_flat = g.W.reshape(B * n, M)
                WS = (W_flat @ Sigma).reshape(B, n, M)                   # W_i Sigma, one GEMM
                A = WS @ g.W.mT + g.Lam + noise * eye                     # A_i
                L = safe_cholesky(A)                                      # reads the lower triangle
                r = g.r0 - (W_flat @ mu).reshape(B, n)                    # r_i
                V = torch.linalg.solve_triangular(L, g.W, upper=False)    # L_i^-1 W_i
                z = torch.linalg.solve_triangular(L, r.unsqueeze(-1), upper=False)
                u = (V.mT @ z).squeeze(-1)                                # u_i = W_i^T a_i
                V_flat = V.reshape(B * n, M)
                G += V_flat.mT @ V_flat                                   # sum V_i^T V_i
                Q += u.mT @ u
                b += u.sum(0)
                logdet = 2 * torch.log(L.diagonal(dim1=-2, dim2=-1)).sum()
                loglik -= 0.5 * (float((z * z).sum() + logdet) + B * n * LOG_2PI)
                if need_noise:
                    a = torch.linalg.solve_triangular(L.mT, z, upper=True)
                    L_inv = torch.linalg.solve_triangular(L, eye.expand(B, n, n), upper=False)
                    a_sq += float((a * a).sum())
                    trace_inv += float((L_inv * L_inv).sum())            # tr A^-1 = |L^-1|_F^2
        return SufficientStats(self.count, self.n_obs, b, Q, G, loglik, a_sq, trace_inv)


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
        corpus = Corpus(job.datasets(), job.basis)
        _CORPORA[job.key] = corpus
        while len(_CORPORA) > _MAX_CACHED:
            _CORPORA.popitem(last=False)
    _CORPORA.move_to_end(job.key)
    return corpus.statistics(job.mu, job.Sigma, job.noise, job.need_noise)


def clear_cache() -> None:
    """Forget the precomputed shards of this process."""
    _CORPORA.clear()
