r"""Log-ratio mean tests: Hotelling's T^2 and James's test on ILR coordinates, Cao-Lin-Li.

Aitchison's log-ratio analysis: a composition :math:`x \in \Delta^{D-1}` with all parts
positive has centred log-ratio :math:`\mathrm{clr}(x) = \log x - \overline{\log x}\,1`
and isometric log-ratio coordinates :math:`\mathrm{ilr}(x) = V^\top \mathrm{clr}(x) \in
\mathbb{R}^{D-1}`, with :math:`V` (D x (D-1)) the orthonormal Helmert balance basis
:math:`v_j = \sqrt{j/(j+1)}\,(1/j, \dots, 1/j, -1, 0, \dots, 0)` (j ones over j, Egozcue et
al., Math. Geol. 35, 2003). Hotelling and James are invariant to the choice of basis.

**Zeros** are replaced multiplicatively (Martin-Fernandez, Barcelo-Vidal &
Pawlowsky-Glahn, Math. Geol. 35, 2003): in a row with :math:`k` zeros, each zero
becomes :math:`\delta` and each non-zero part :math:`x_j` becomes
:math:`(1 - k\delta) x_j`. raystudy's default :math:`\delta` is 0.65 times the smallest
non-zero entry of the pooled replicate (the authors' 65 % of the detection limit; for
counts closed at depth N that limit is 1/N). scikit-bio and composition-stats default to
:math:`\delta = 1/D^2` instead, which is far above the detection limit at small D.

* **Hotelling's** :math:`T^2 = \frac{nm}{n+m} \bar d^\top S_p^{-1} \bar d` with
  :math:`\bar d` the difference of ILR means and :math:`S_p` the pooled covariance;
  :math:`\frac{n+m-p-1}{p(n+m-2)} T^2 \sim F_{p,\, n+m-p-1}` under normality, p = D - 1.
* **James** (Biometrika 41, 1954; the first-order test of R ``Compositional::james``,
  ``R = 1``): :math:`J = \bar d^\top (S_x/n + S_y/m)^{-1} \bar d` against the corrected
  critical value :math:`\chi^2_{p,1-\alpha}(A + B \chi^2_{p,1-\alpha})`, with
  :math:`W = S_x/n + S_y/m`, :math:`B_i = W^{-1} S_i / n_i`,
  :math:`A = 1 + \frac{1}{2p} \sum_i \frac{(\mathrm{tr} B_i)^2}{n_i - 1}`,
  :math:`B = \frac{1}{p(p+2)} \sum_i \frac{\mathrm{tr}(B_i^2) + (\mathrm{tr} B_i)^2/2}
  {n_i - 1}`; :math:`p = P(\chi^2_p > J / (A + B\chi^2_{p,1-\alpha}))`, so the p-value
  depends on :math:`\alpha` as the correction does.
* **Cao, Lin & Li** (Biometrika 105(1), 2018; R ``Compositional::hd.meantest2``): with
  :math:`\bar z_x, \bar z_y` the CLR means and :math:`\gamma_{jj}` the pooled CLR variances
  (divisor n + m),
  :math:`M_n = \frac{nm}{n+m} \max_j (\bar z_{xj} - \bar z_{yj})^2 / \gamma_{jj}`, and
  :math:`p = 1 - \exp\{-\pi^{-1/2} \exp(-(M_n - 2\log D + \log\log D)/2)\}`, the Gumbel
  limit of the max-type statistic.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .samples import TwoSampleResult, check_alpha, check_samples, result

REPLACEMENT_FRACTION = 0.65
"""Martin-Fernandez et al. (2003): replace a zero by 65 % of the detection limit."""


def closure(x: np.ndarray) -> np.ndarray:
    """Rows ``(..., D)`` of non-negative parts divided by their sums."""
    x = np.asarray(x, dtype=np.float64)
    return x / x.sum(-1, keepdims=True)


def detection_delta(Z: np.ndarray) -> np.ndarray:
    """0.65 times the smallest non-zero entry of each replicate ``(R, N, D)``: ``(R,)``."""
    positive = np.where(Z > 0, Z, np.inf)
    return REPLACEMENT_FRACTION * positive.min(axis=(-1, -2))


def multiplicative_replacement(x: np.ndarray, delta: float | np.ndarray) -> np.ndarray:
    """Zeros of closed rows ``(..., n, D)`` to ``delta``, non-zeros scaled by ``1 - k delta``.

    ``delta``: a float, or one value per replicate ``(R,)`` for ``x`` of shape ``(R, n, D)``.
    """
    x = closure(x)
    delta = np.asarray(delta, dtype=np.float64)
    if delta.ndim == 1:
        delta = delta[:, None, None]
    zero = x == 0
    k = zero.sum(-1, keepdims=True)
    if np.any(k * delta >= 1):
        raise ValueError("delta times the number of zeros in a row reaches 1; choose a smaller "
                         "delta.")
    return np.where(zero, delta, (1.0 - k * delta) * x)


def clr(x: np.ndarray) -> np.ndarray:
    """Centred log-ratio of positive rows ``(..., D)`` -> ``(..., D)``."""
    L = np.log(x)
    return L - L.mean(-1, keepdims=True)


def helmert_basis(D: int) -> np.ndarray:
    """The orthonormal balance basis ``(D, D - 1)`` of the CLR plane (module docstring)."""
    V = np.zeros((D, D - 1))
    for j in range(1, D):
        V[:j, j - 1] = 1.0 / j
        V[j, j - 1] = -1.0
        V[:, j - 1] *= math.sqrt(j / (j + 1))
    return V


def ilr(x: np.ndarray) -> np.ndarray:
    """Isometric log-ratio coordinates of positive rows ``(..., D)`` -> ``(..., D - 1)``."""
    return clr(x) @ helmert_basis(x.shape[-1])


def _replaced_pair(x, y, method: str, min_points: int):
    X, Y, batched = check_samples(x, y, data="compositional", min_points=min_points,
                                  method=method)
    delta = detection_delta(np.concatenate([X, Y], axis=1))
    return multiplicative_replacement(X, delta), multiplicative_replacement(Y, delta), batched


def _mean_cov(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Means ``(R, p)`` and unbiased covariances ``(R, p, p)`` of ``(R, n, p)``."""
    mean = Z.mean(1)
    C = Z - mean[:, None, :]
    return mean, np.swapaxes(C, -1, -2) @ C / (Z.shape[1] - 1)


def hotelling_test(x, y, *, alpha: float = 0.05) -> TwoSampleResult:
    r"""Hotelling's two-sample :math:`T^2` on ILR coordinates, F-calibrated (module docstring).

    ``x`` ``(n, D)`` or ``(R, n, D)``, ``y`` ``(m, D)`` or ``(R, m, D)`` compositions;
    needs n + m >= D + 2. The statistic returned is :math:`T^2`.
    """
    alpha = check_alpha(alpha)
    X, Y, batched = _replaced_pair(x, y, "Hotelling's test", 2)
    n, m, p = X.shape[1], Y.shape[1], X.shape[2] - 1
    if n + m - p - 1 < 1:
        raise ValueError(f"Hotelling's test needs n + m >= D + 2, got n + m = {n + m} with "
                         f"D = {p + 1}.")
    (mx, Sx), (my, Sy) = _mean_cov(ilr(X)), _mean_cov(ilr(Y))
    Sp = ((n - 1) * Sx + (m - 1) * Sy) / (n + m - 2)
    d = mx - my
    T2 = n * m / (n + m) * (d * np.linalg.solve(Sp, d[..., None])[..., 0]).sum(-1)
    F = (n + m - p - 1) / (p * (n + m - 2)) * T2
    return result(T2, stats.f.sf(F, p, n + m - p - 1), alpha, "hotelling_ilr", batched)


def james_test(x, y, *, alpha: float = 0.05) -> TwoSampleResult:
    r"""James's (1954) test for means under unequal covariances, on ILR coordinates.

    Shapes as :func:`hotelling_test`; needs n, m >= D. The statistic returned is :math:`J`.
    """
    alpha = check_alpha(alpha)
    X, Y, batched = _replaced_pair(x, y, "James's test", 2)
    n, m, p = X.shape[1], Y.shape[1], X.shape[2] - 1
    if min(n, m) <= p:
        raise ValueError(f"James's test needs n, m >= D, got n = {n}, m = {m}, D = {p + 1}.")
    (mx, Sx), (my, Sy) = _mean_cov(ilr(X)), _mean_cov(ilr(Y))
    A1, A2 = Sx / n, Sy / m
    W = A1 + A2
    d = mx - my
    J = (d * np.linalg.solve(W, d[..., None])[..., 0]).sum(-1)
    B1, B2 = np.linalg.solve(W, A1), np.linalg.solve(W, A2)
    tr1, tr2 = np.trace(B1, axis1=-2, axis2=-1), np.trace(B2, axis1=-2, axis2=-1)
    sq1 = (B1 * np.swapaxes(B1, -1, -2)).sum((-1, -2))  # tr(B1^2)
    sq2 = (B2 * np.swapaxes(B2, -1, -2)).sum((-1, -2))
    A = 1.0 + (tr1**2 / (n - 1) + tr2**2 / (m - 1)) / (2 * p)
    Bc = (sq1 / (n - 1) + sq2 / (m - 1) + 0.5 * tr1**2 / (n - 1)
          + 0.5 * tr2**2 / (m - 1)) / (p * (p + 2))
    chi2 = stats.chi2.ppf(1 - alpha, p)
    return result(J, stats.chi2.sf(J / (A + Bc * chi2), p), alpha, "james_ilr", batched)


def cao_lin_li_test(x, y, *, alpha: float = 0.05) -> TwoSampleResult:
    r"""Cao, Lin & Li's max-type CLR mean test with its Gumbel p-value (module docstring).

    Shapes as :func:`hotelling_test`; the statistic returned is :math:`M_n`.
    """
    alpha = check_alpha(alpha)
    X, Y, batched = _replaced_pair(x, y, "the Cao-Lin-Li test", 2)
    n, m, D = X.shape[1], Y.shape[1], X.shape[2]
    Zx, Zy = clr(X), clr(Y)
    mx, my = Zx.mean(1), Zy.mean(1)
    gamma = (((Zx - mx[:, None]) ** 2).sum(1) + ((Zy - my[:, None]) ** 2).sum(1)) / (n + m)
    with np.errstate(divide="ignore", invalid="ignore"):
        Mn = n * m / (n + m) * np.max((mx - my) ** 2 / gamma, axis=-1)
    stat = Mn - 2.0 * math.log(D) + math.log(math.log(D))
    pvalue = -np.expm1(-math.exp(-0.5 * math.log(math.pi)) * np.exp(-stat / 2.0))
    return result(Mn, pvalue, alpha, "cao_lin_li", batched)
