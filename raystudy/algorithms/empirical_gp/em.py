r"""EM for an empirical GP prior: closed-form updates of mean, covariance and noise.

Lin et al., "Empirical Gaussian Processes" (arXiv 2602.12082, ICML 2026), Sec. 3.
Corpus :math:`\{(X_i, y_i)\}_{i=1}^S`, latent :math:`\theta = f(Z)` on M reference
points, :math:`\theta \sim N(\mu, \Sigma)` and, through shift interpolation
(``prior.py``), :math:`y_i \mid \theta \sim N(c_i + W_i\theta, \Lambda_i + \sigma^2 I)`.
EM maximises the corpus marginal log-likelihood
:math:`\sum_i \log N(y_i;\ c_i + W_i\mu,\ W_i\Sigma W_i^\top + \Lambda_i + \sigma^2 I)`:

* **E-step** (``estep.py``): posteriors :math:`N(m_i, C_i)` of :math:`\theta` given
  each :math:`y_i`, summarised as sufficient statistics b, Q, G.
* **M-step** (ML):

  .. math::
      \mu' = \tfrac1S \textstyle\sum_i m_i = \mu + \Sigma b / S, \qquad
      T = \textstyle\sum_i C_i + (m_i - \mu')(m_i - \mu')^\top
        = S\Sigma + \Sigma (Q - b b^\top / S - G) \Sigma, \qquad \Sigma' = T / S ,

  computed in the E-step's frame :math:`\Sigma = R R^\top` (``estep.py``):
  :math:`\Sigma b = R b_R`, :math:`T = S\Sigma + R (Q_R - b_R b_R^\top / S - H) R^\top`.

* **Inverse-Wishart MAP** (``prior="inverse_wishart"``): :math:`\Sigma \sim IW(\Psi, \nu)`
  with :math:`\Psi = (\nu + M + 1) K(Z, Z)` (mode at the base kernel's Gram matrix),
  :math:`\nu = M + 2` by default: :math:`\Sigma' = (T + \Psi) / (S + \nu + M + 1)`.
  EM then increases the log posterior, recorded in ``objectives``.
* **Shrinkage** (``shrinkage=a`` in [0, 1]): :math:`\Sigma' \leftarrow (1-a)\Sigma'
  + a\,\mathrm{tr}(\Sigma')/\mathrm{tr}(K_{ZZ})\, K_{ZZ}` (trace-matched, as BoTorch).
* **PSD safeguard**: :math:`\Sigma'` symmetrised, eigenvalues clipped at 1e-10.
* **Noise** (``learn_noise=True``; BoTorch keeps it fixed): with :math:`f_i = f(X_i)`
  also latent, :math:`E\|y_i - f_i\|^2 = \sigma^4\|a_i\|^2 + n_i\sigma^2 - \sigma^4
  \mathrm{tr}A_i^{-1}`, so :math:`\sigma'^2 = \frac{1}{N}\sum_i
  [\sigma^4 \|A_i^{-1} r_i\|^2 + n_i \sigma^2 - \sigma^4\,\mathrm{tr} A_i^{-1}]`,
  N the total number of observations (the exact EM update; it reduces to
  :math:`\frac1N\sum_i \|y_i - W_i m_i\|^2 + \mathrm{tr}(W_i C_i W_i^\top)` when
  :math:`\Lambda_i = 0`).

Initialisation is the base GP (:math:`\mu = m(Z)`, :math:`\Sigma = K(Z, Z)`), or
``init`` (an EmpiricalPrior) to continue a fit.
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import torch
from gpytorch.kernels import Kernel
from gpytorch.means import Mean
from torch import Tensor

from .estep import Corpus, ShardJob, SufficientStats, check_datasets, shard_statistics
from .prior import EmpiricalPrior, ShiftBasis, dense, project_psd, safe_cholesky

MapFn = Callable[[Callable[[Any], Any], list[Any]], list[Any]]
PRIORS = (None, "none", "inverse_wishart")


def m_step(stats: SufficientStats, mu: Tensor, Sigma: Tensor, noise: float, K_ZZ: Tensor,
           prior: str | None = None, nu: float | None = None, shrinkage: float = 0.0,
           learn_noise: bool = False) -> tuple[Tensor, Tensor, float]:
    """Closed-form M-step from summed statistics; returns (mu', Sigma', noise')."""
    S, M, R = stats.count, mu.shape[0], stats.frame     # R R^T = Sigma (estep.py, Eq. frame)
    mu_new = mu + R @ stats.b_R / S                     # mu + Sigma b / S
    D = stats.Q_R - torch.outer(stats.b_R, stats.b_R) / S - stats.H
    T = S * Sigma + R @ D @ R.mT                        # sum_i C_i + scatter about mu'
    if prior == "inverse_wishart":
        nu = M + 2.0 if nu is None else nu
        Psi = (nu + M + 1) * K_ZZ                       # IW mode (Psi / (nu + M + 1)) = K_ZZ
        Sigma_new = (T + Psi) / (S + nu + M + 1)
    else:
        Sigma_new = T / S
    if shrinkage > 0:
        target = torch.trace(Sigma_new) / torch.trace(K_ZZ) * K_ZZ
        Sigma_new = (1 - shrinkage) * Sigma_new + shrinkage * target
    Sigma_new = project_psd(Sigma_new)
    if learn_noise:
        s2 = noise
        noise = (s2 * s2 * stats.a_sq + stats.n_obs * s2 - s2 * s2 * stats.trace_inv) / stats.n_obs
        noise = max(noise, 1e-12)
    return mu_new, Sigma_new, noise


def inverse_wishart_log_density(Sigma: Tensor, K_ZZ: Tensor, nu: float) -> float:
    """log IW(Sigma; Psi = (nu + M + 1) K_ZZ, nu) up to a constant in Sigma."""
    M = Sigma.shape[0]
    L = safe_cholesky(Sigma)
    logdet = 2 * torch.log(L.diagonal()).sum()
    psi = (nu + M + 1) * K_ZZ
    return float(-0.5 * (nu + M + 1) * logdet - 0.5 * torch.trace(torch.cholesky_solve(psi, L)))


def shards_of(datasets: list, shards: int) -> list[list]:
    """Split ``datasets`` into ``shards`` interleaved parts (similar sizes in each)."""
    shards = max(1, min(shards, len(datasets)))
    return [datasets[s::shards] for s in range(shards)]


def em_fit(
    datasets: Sequence[tuple[Tensor, Tensor]],
    reference_points: Tensor,
    base_kernel: Kernel,
    base_mean: Mean | None = None,
    noise: float = 1e-4,
    iterations: int = 16,
    learn_noise: bool = False,
    prior: str | None = None,
    nu: float | None = None,
    shrinkage: float = 0.0,
    init: EmpiricalPrior | None = None,
    map_fn: MapFn | None = None,
    shards: int = 1,
    tol: float | None = None,
    callback: Callable[[int, EmpiricalPrior], None] | None = None,
    matmul_dtype: torch.dtype | None = None,
) -> EmpiricalPrior:
    """Learn a GP prior on ``reference_points`` from a corpus of datasets by EM.

    Args:
        datasets: ``[(x, y), ...]``, x (n_i, d) or (n_i,), y (n_i,); sizes and locations
            may differ; every location inside the reference points' bounding box.
        reference_points: Z (M, d); its dtype/device is used throughout (float64 advised).
        base_kernel, base_mean: GPyTorch modules of the base GP (shift interpolation and
            initialisation); ``base_mean=None`` is a zero mean. Copied, never modified.
        noise: observation noise variance sigma^2 (the initial value if ``learn_noise``).
        iterations: EM iterations.
        learn_noise: update sigma^2 in closed form each M-step.
        prior: ``None`` (ML) or ``"inverse_wishart"`` (MAP, mode at K(Z, Z)); ``nu`` its
            degrees of freedom (default M + 2).
        shrinkage: trace-matched shrinkage intensity toward K(Z, Z), in [0, 1].
        init: start from this prior instead of the base GP.
        map_fn: ``map_fn(fn, items) -> [fn(item) ...]`` (e.g. a trial's ``ctx.map``); the
            corpus is split into ``shards`` parts whose E-steps it runs (each returns its
            sufficient statistics; the M-step adds them).
        tol: stop early when the log-likelihood gains less than ``tol`` per observation.
        callback: called as ``callback(iteration, prior)`` after every iteration.
        matmul_dtype: precision of the E-step's O(N M^2) and O(n_i^2 M) products and of
            its n x n factorisations. Default: ``torch.float32`` where Z is float64 (the
            fast path: about 0.6x the time of a float64 fit, the learned covariance moved by
            about 3e-7 relative, ``bench/egp.py``, S = 2,000, far below EM's own error),
            else Z's dtype. Pass ``torch.float64`` for exact comparisons. The
            precomputation is float64 (rounded once), the sums and the M-step stay in Z's
            dtype.

    Returns:
        An :class:`EmpiricalPrior` with mean (M,), covariance (M, M), noise,
        log_likelihoods (one per iteration) and objectives.
    """
    Z = torch.as_tensor(reference_points)
    if not Z.is_floating_point():
        Z = Z.to(torch.get_default_dtype())
    if prior not in PRIORS:
        raise ValueError(f"prior={prior!r} is not one of None, 'inverse_wishart'")
    if not 0.0 <= shrinkage <= 1.0:
        raise ValueError(f"shrinkage={shrinkage} must be in [0, 1]")
    if not (noise > 0 and math.isfinite(noise)):
        raise ValueError(f"noise={noise} must be a positive variance")
    if iterations < 0:
        raise ValueError(f"iterations={iterations} must be >= 0")
    prior = None if prior == "none" else prior
    if matmul_dtype is None:
        matmul_dtype = torch.float32 if Z.dtype == torch.float64 else Z.dtype
    data = check_datasets(list(datasets), Z)
    M = Z.shape[0]
    if prior == "inverse_wishart" and nu is not None and nu <= M - 1:
        raise ValueError(f"nu={nu} must exceed M - 1 = {M - 1}")
    basis = ShiftBasis(Z, base_kernel, base_mean)
    with torch.no_grad():
        K_ZZ = dense(basis.base_kernel(basis.Z, basis.Z))
    if init is not None:
        mu, Sigma = init.mean.to(Z).clone(), init.covariance.to(Z).clone()
    else:
        mu, Sigma = basis.m_Z.clone(), K_ZZ.clone()

    if map_fn is None:
        corpus = Corpus(data, basis, matmul_dtype=matmul_dtype)

        def estep(mu: Tensor, Sigma: Tensor, noise: float, moments: bool) -> SufficientStats:
            return corpus.statistics(mu, Sigma, noise, need_noise=learn_noise,
                                     need_moments=moments, frame=safe_cholesky(Sigma))
    else:
        token = uuid.uuid4().hex
        packed = [ShardJob.pack(f"{token}/{s}", part, basis=basis, mu=basis.m_Z, Sigma=K_ZZ,
                                noise=noise, need_noise=learn_noise,
                                threads=torch.get_num_threads(), matmul_dtype=matmul_dtype)
                  for s, part in enumerate(shards_of(data, shards))]  # the data once

        def estep(mu: Tensor, Sigma: Tensor, noise: float, moments: bool) -> SufficientStats:
            frame = safe_cholesky(Sigma)                # one R for all shards: stats add
            jobs = [dataclasses.replace(job, mu=mu, Sigma=Sigma, noise=noise,
                                        need_moments=moments, frame=frame) for job in packed]
            results = map_fn(shard_statistics, jobs)
            total = results[0]
            for r in results[1:]:
                total = total + r
            return total

    nu_used = (M + 2.0 if nu is None else nu) if prior == "inverse_wishart" else None

    def objective(ll: float, Sigma: Tensor) -> float:
        return ll + (inverse_wishart_log_density(Sigma, K_ZZ, nu_used) if nu_used else 0.0)

    result = EmpiricalPrior(Z, mu, Sigma, float(noise), basis)
    stats = estep(mu, Sigma, noise, iterations > 0)
    result.initial_log_likelihood = stats.log_likelihood
    for it in range(iterations):
        mu, Sigma, noise = m_step(stats, mu, Sigma, noise, K_ZZ, prior, nu, shrinkage,
                                  learn_noise)
        # the LL after this iteration; the moments only where another M-step follows
        stats = estep(mu, Sigma, noise, it < iterations - 1)
        previous = result.log_likelihoods[-1] if result.log_likelihoods else \
            result.initial_log_likelihood
        result.mean, result.covariance, result.noise = mu, Sigma, float(noise)
        result.log_likelihoods.append(stats.log_likelihood)
        result.objectives.append(objective(stats.log_likelihood, Sigma))
        if callback is not None:
            callback(it, result)
        if tol is not None and abs(stats.log_likelihood - previous) < tol * stats.n_obs:
            break
    return result
