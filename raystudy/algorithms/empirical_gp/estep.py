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
covariances is one product of stacked matrices, never S dense M x M matrices.

**Frame** (what is computed). With :math:`\Sigma = R R^\top` (Cholesky) and the base
kernel's :math:`K_{ZZ} = L L^\top`, :math:`W_i = V_i^\top L^{-1}` for the whitened rows
:math:`V_i^\top = K(X_i, Z) L^{-\top}`, so

.. math::
    P_i &= W_i R = V_i^\top F, \quad F = L^{-1} R, \qquad
    A_i = P_i P_i^\top + \Lambda_i + \sigma^2 I = L_i L_i^\top, \\
    Y_i &= L_i^{-1} P_i, \quad z_i = L_i^{-1} r_i, \quad
    r_i = y_i - m(X_i) - V_i^\top L^{-1} (\mu - m(Z)), \quad v_i = Y_i^\top z_i = R^\top u_i,

and the statistics are kept in the frame R (Eq. frame):
:math:`b_R = \sum_i v_i = R^\top b`, :math:`Q_R = \sum_i v_i v_i^\top = R^\top Q R`,
:math:`H = \sum_i Y_i^\top Y_i = R^\top G R`, so that :math:`\Sigma b = R b_R` and
:math:`\Sigma G \Sigma = R H R^\top` need no inverse of R. W itself is never formed: the
precomputation is one kernel call K(X, Z) and one GEMM for all :math:`V^\top`; the
log-likelihood is :math:`-\frac12 \sum_i (\|z_i\|^2 + 2 \sum \log \mathrm{diag} L_i + n_i
\log 2\pi)`, and :math:`\|a_i\|^2 = \|L_i^{-\top} z_i\|^2`,
:math:`\mathrm{tr} A_i^{-1} = \|L_i^{-1}\|_F^2`.

Layout (``Corpus``): datasets sorted by size, all their rows stacked into one (N, M)
matrix, so the two products that cost O(N M^2) -- :math:`P = V^\top F` and
:math:`H = \mathbf{Y}^\top \mathbf{Y}` for the (N, M) stack of all :math:`Y_i` -- are one
GEMM each over all datasets; everything per dataset is O(n_i^2 M) (:math:`P_i P_i^\top`,
:math:`Y_i = L_i^{-1} P_i`, a triangular solve written over :math:`P_i`, so that H is the
Gram matrix of the same buffer) or O(n_i^3), batched per size group, or per bucket of sizes padded
to the bucket's largest (``bucket_width``; padded rows have :math:`V^\top = 0`, r = 0 and
A = I there, so they add nothing). Measured on one thread (``bench/egp.py``, section
"layout"), per-size groups are the fastest: padding adds O(n^2 M) and O(n^3) work per
dataset while the loop over 21 sizes costs well under 1 ms.
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
from .products import gram, times_triangular

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
        x = as_inputs(torch.as_tensor(item[0], dtype=Z.dtype, device=Z.device), d)
        y = torch.as_tensor(item[1], dtype=Z.dtype, device=Z.device)
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
    r"""Sums over datasets that the M-step needs, in the frame R of the E-step's Sigma.

    ``frame`` is R (M, M), lower triangular with :math:`R R^\top = \Sigma`; ``b_R`` (M,),
    ``Q_R`` (M, M) and ``H`` (M, M) are :math:`R^\top b`, :math:`R^\top Q R` and
    :math:`R^\top G R` (module docstring, Eq. frame). All four are None after a
    log-likelihood-only step. ``b``, ``Q`` and ``G`` return the statistics in Z's
    coordinates (two triangular solves with R each; the M-step does not need them).
    """

    count: int
    n_obs: int
    frame: Tensor | None
    b_R: Tensor | None
    Q_R: Tensor | None
    H: Tensor | None
    log_likelihood: float
    a_sq: float
    trace_inv: float

    @property
    def b(self) -> Tensor | None:
        """sum_i u_i = R^-T b_R (M,)."""
        if self.b_R is None:
            return None
        return torch.linalg.solve_triangular(self.frame.mT, self.b_R.unsqueeze(-1),
                                             upper=True).squeeze(-1)

    @property
    def Q(self) -> Tensor | None:
        """sum_i u_i u_i^T = R^-T Q_R R^-1 (M, M)."""
        return None if self.Q_R is None else unframe(self.frame, self.Q_R)

    @property
    def G(self) -> Tensor | None:
        """sum_i W_i^T A_i^-1 W_i = R^-T H R^-1 (M, M)."""
        return None if self.H is None else unframe(self.frame, self.H)

    def __add__(self, other: SufficientStats) -> SufficientStats:
        def add(x: Tensor | None, y: Tensor | None) -> Tensor | None:
            return None if x is None or y is None else x + y

        if self.frame is not None and other.frame is not None and \
                not torch.equal(self.frame, other.frame):
            raise ValueError("statistics of E-steps at different Sigma cannot be added "
                             "(pass the same frame to every shard)")
        return SufficientStats(
            self.count + other.count, self.n_obs + other.n_obs,
            self.frame if other.frame is not None else None, add(self.b_R, other.b_R),
            add(self.Q_R, other.Q_R), add(self.H, other.H),
            self.log_likelihood + other.log_likelihood,
            self.a_sq + other.a_sq, self.trace_inv + other.trace_inv)


def unframe(R: Tensor, X: Tensor) -> Tensor:
    """R^-T X R^-1 for R (M, M) lower triangular, X (M, M)."""
    left = torch.linalg.solve_triangular(R.mT, X, upper=True)                 # R^-T X
    return torch.linalg.solve_triangular(R.mT, left.mT, upper=True).mT


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

    ``V_T`` (rows (N', M), the whitened rows :math:`V^\top = K(X, Z) L^{-\top}` of all
    datasets), ``Lambda`` and ``r0`` = y - m(X) depend only on the base GP and the
    locations, so they are computed once per fit, all datasets at once: one kernel call
    K(X, Z) for every location, one triangular product with :math:`L^{-\top}` (both in
    blocks of rows, ``ShiftBasis.whitened_rows``), one batched K(X_i, X_i) per group.
    Datasets are sorted into groups by size; ``bucket_width`` > 1 pads the sizes of a
    bucket to its largest (padded rows of V^T are zero and padded diagonal entries of A_i
    are 1, so the statistics are unchanged) for fewer, larger groups. The E-step's two large
    products, :math:`P = V^\top F` and :math:`H = \mathbf{Y}^\top \mathbf{Y}`, run over all
    N' rows at once; only the n x n algebra is per group.

    ``matmul_dtype`` (default: the reference points' dtype) is the precision of V^T, P, Y,
    r, z and of the per-dataset n x n algebra (A_i, its Cholesky factor, the solves;
    where a float32 factorisation fails, that group is factorised in the reference dtype
    with ``safe_cholesky``'s jitter). V^T and Lambda_i are computed in float64 and rounded
    once (Lambda_i = K(X_i, X_i) - V_i^T V_i with the rounded V_i, an error of the size of
    P_i P_i^T's own); sums are accumulated in float64 and the M-step stays in the reference
    dtype. ``torch.float32`` takes about 0.6x the time of a float64 fit and moves the
    statistics by about 1e-6 relative, the learned covariance by about 3e-7 (see
    ``bench/egp.py``); keep float64 for exact comparisons.
    """

    def __init__(self, datasets: list[Dataset], basis: ShiftBasis, bucket_width: int = 1,
                 matmul_dtype: torch.dtype | None = None) -> None:
        if bucket_width < 1:
            raise ValueError(f"bucket_width={bucket_width} must be >= 1")
        Z = basis.Z
        self.basis = basis
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
            V_T = basis.whitened_rows(X, dtype=self.matmul_dtype)         # V^T (N, M)
            r0 = Y - basis.m(X)                                            # y_i - m(X_i)
            if rows > len(Y):                                              # padding: zero rows
                V_T, r0, X = (torch.zeros(rows, *t.shape[1:], dtype=t.dtype).index_put_(
                    (real,), t) for t in (V_T, r0, X))
                X[~real] = Z[0]                                            # any valid location
            self.groups = []
            start = 0
            for n, members in sorted(by_size.items()):
                B = len(members)
                part = slice(start, start + B * n)
                keep = real[part].view(B, n).to(Z.dtype)
                Xg = X[part].view(B, n, -1)
                Vg = V_T[part].view(B, n, M).mT                            # (B, M, n)
                Lam = basis.residual(Xg, Xg, Vg, Vg)    # Lambda_i (Eq. shift), K - V^T V in dt
                pad = None
                if not bool(keep.all()):
                    Lam = Lam * (keep.unsqueeze(-1) * keep.unsqueeze(-2))
                    pad = 1.0 - keep
                self.groups.append(SizeGroup(torch.tensor(members), start, n,
                                             0.5 * (Lam + Lam.mT), r0[part].view(B, n),
                                             pad, int(keep.sum())))
                start += B * n
        self.r0 = r0                                                       # (N',)
        self.r0_mm = r0.to(self.matmul_dtype)
        self.V_T = V_T                                                     # (N', M)
        self._P = torch.empty(rows, M, dtype=self.matmul_dtype, device=Z.device)  # P, then Y
        self._offset: list[Tensor] = []
        self._offset_noise: float | None = None

    @property
    def rows(self) -> int:
        """N': observations plus padded rows."""
        return self.V_T.shape[0]

    def statistics(self, mu: Tensor, Sigma: Tensor, noise: float, need_noise: bool = False,
                   need_moments: bool = True, frame: Tensor | None = None) -> SufficientStats:
        """The E-step at mu (M,), Sigma (M, M) and the noise variance.

        ``frame``: R (M, M) with R R^T = Sigma (default: its Cholesky factor); shards of
        one E-step pass the same R so that their statistics add. ``need_moments=False``
        computes only the log-likelihood (b, Q, G are None): what the last E-step of a fit
        needs.
        """
        M, dt, mm, basis = self.M, self.dtype, self.matmul_dtype, self.basis
        R = safe_cholesky(Sigma) if frame is None else frame
        a_sq = trace_inv = 0.0
        vs, sums = [], []
        with torch.no_grad():
            f = torch.linalg.solve_triangular(basis.L, (mu - basis.m_Z).unsqueeze(-1),
                                              upper=False)                  # L^-1 (mu - m(Z))
            if torch.equal(R, basis.L):               # Sigma = K_ZZ (EM's start): F = I
                P = self._P.copy_(self.V_T)
            else:
                F = torch.linalg.solve_triangular(basis.L, R, upper=False)  # L^-1 R
                P = times_triangular(self.V_T, F.to(mm), out=self._P)      # P_i = V_i^T F
            r = torch.addmv(self.r0_mm, self.V_T, f.squeeze(-1).to(mm), alpha=-1)  # r_i
            for g, A0 in zip(self.groups, self._offsets(noise), strict=True):
                B, n = g.r0.shape
                P_g = P[g.rows].view(B, n, M)
                A = torch.baddbmm(A0, P_g, P_g.mT)           # A_i = P_i P_i^T + Lam + s2 I
                L = self._factor(A)
                z = torch.linalg.solve_triangular(L, r[g.rows].view(B, n, 1), upper=False)
                sums.append(torch.stack([(z * z).sum(dtype=torch.float64),    # z_i = L_i^-1 r_i
                                         L.diagonal(dim1=-2, dim2=-1).log().sum(
                                             dtype=torch.float64)]))
                if not need_moments:
                    continue
                Y_g = torch.linalg.solve_triangular(L, P_g, upper=False, out=P_g)  # Y_i, in P
                vs.append((z.mT @ Y_g).squeeze(-2))                         # v_i = Y_i^T z_i
                if need_noise:
                    eye = torch.eye(n, dtype=L.dtype, device=L.device).expand(B, n, n)
                    L_inv = torch.linalg.solve_triangular(L, eye, upper=False)   # L_i^-1
                    a = L_inv.mT @ z                                        # a_i = A_i^-1 r_i
                    a_sq += float((a * a).sum(dtype=torch.float64))
                    trace_inv += float((L_inv * L_inv).sum(dtype=torch.float64))  # |L_i^-1|_F^2
                    if g.pad is not None:
                        trace_inv -= float(g.pad.sum())             # pads: A^-1 = I there
            zz, half_logdet = torch.stack(sums).sum(0).tolist()
            loglik = -0.5 * (zz + 2 * half_logdet + self.n_obs * LOG_2PI)
            if not need_moments:
                return SufficientStats(self.count, self.n_obs, None, None, None, None, loglik,
                                       a_sq, trace_inv)
            v = torch.cat(vs)                                               # (S, M)
            H = gram(P).to(dt)                                              # sum_i Y_i^T Y_i
        return SufficientStats(self.count, self.n_obs, R, v.sum(0, dtype=dt), gram(v).to(dt),
                               H, loglik, a_sq, trace_inv)

    def _offsets(self, noise: float) -> list[Tensor]:
        """Lambda_i + s2 I per group (identity at padded rows), in the products' dtype.

        Kept between E-steps with the same noise (every E-step unless it is learned).
        """
        if self._offset_noise != noise:
            self._offset = []
            for g in self.groups:
                A0 = g.Lam.clone()
                A0.diagonal(dim1=-2, dim2=-1).add_(
                    noise if g.pad is None else noise * (1 - g.pad) + g.pad)
                self._offset.append(A0.to(self.matmul_dtype))
            self._offset_noise = noise
        return self._offset

    def _factor(self, A: Tensor) -> Tensor:
        """Cholesky factors of A (B, n, n) in its dtype; where that fails, the jittered
        ``safe_cholesky`` in the reference dtype (float32 products, ill-conditioned A_i)."""
        L, info = torch.linalg.cholesky_ex(A)
        if bool((info > 0).any()):
            L = safe_cholesky(A.to(self.dtype)).to(A.dtype)
        return L


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
    ``Corpus`` instead of rebuilding it. ``frame`` is the Cholesky factor of Sigma that
    every shard of one E-step uses (so that their statistics add); None: computed here.
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
    frame: Tensor | None = None

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
    return corpus.statistics(job.mu, job.Sigma, job.noise, job.need_noise, job.need_moments,
                             job.frame)


def clear_cache() -> None:
    """Forget the precomputed shards of this process."""
    _CORPORA.clear()
