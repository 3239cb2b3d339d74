r"""Two studentized MMD statistics from kernel blocks: the cross U-statistic and Chen-Qin.

The paper's studentization is not public (its abstract names "recent developments of
studentization" and U-statistics theory, and an N(0, 1) limit with no permutation or
bootstrap); these are the two readings of raystudy, both for any positive-definite
kernel :math:`k` (``harmonic_test.py`` passes :math:`k_L`, ``kernel_baselines.py`` a
Gaussian kernel). Every block carries a leading replicate axis ``R``.

**Cross** (Shekhar, Kim & Ramdas, "A permutation-free kernel two-sample test", NeurIPS
2022, arXiv 2211.14908, Eqs. 2 and 4; the formulas of their ``crossMMD2sampleUnpaired``).
Split :math:`X = (X_1, X_2)` with :math:`n_1 = \lfloor n/2 \rfloor` and
:math:`Y = (Y_1, Y_2)` with :math:`m_1 = \lfloor m/2 \rfloor`; with
:math:`K_{xx} = k(X_1, X_2)`, :math:`K_{xy} = k(X_1, Y_2)`, :math:`K_{yx} = k(Y_1, X_2)`,
:math:`K_{yy} = k(Y_1, Y_2)`,

.. math::
    U_x = \overline{K_{xx}} - \overline{K_{xy}}, \quad
    U_y = \overline{K_{yx}} - \overline{K_{yy}}, \quad U = U_x - U_y, \\
    \hat\sigma_x^2 = \frac{1}{n_1} \sum_{i \le n_1}
        \big(\overline{K_{xx}}_{i\cdot} - \overline{K_{xy}}_{i\cdot} - U_x\big)^2, \quad
    \hat\sigma_y^2 \text{ likewise over the rows of } K_{yx}, K_{yy}, \\
    T = U \big/ \sqrt{\hat\sigma_x^2 / n_1 + \hat\sigma_y^2 / m_1} \;\to\; N(0, 1)
    \text{ under } H_0 ,

(:math:`\overline{A}` the mean of all entries, :math:`\overline{A}_{i\cdot}` of row i).
The limit holds for a fixed kernel, because conditioning on the second halves makes
:math:`U` a sum of independent terms.

**Full** (Chen & Qin, "A two-sample test for high-dimensional data with applications to
gene-set testing", Ann. Statist. 38(2), 2010, Eqs. 2.1-2.3, with inner products replaced by
:math:`k`): the unbiased

.. math::
    U = \frac{\sum_{i \ne j} k(x_i, x_j)}{n(n-1)} + \frac{\sum_{i \ne j} k(y_i, y_j)}{m(m-1)}
        - \frac{2 \sum_{i, j} k(x_i, y_j)}{nm}, \qquad
    \hat\sigma^2 = \frac{2\, \widehat{\mathrm{tr}\Sigma_x^2}}{n(n-1)}
        + \frac{2\, \widehat{\mathrm{tr}\Sigma_y^2}}{m(m-1)}
        + \frac{4\, \widehat{\mathrm{tr}\Sigma_x\Sigma_y}}{nm},

with Chen & Qin's leave-out estimators
:math:`\widehat{\mathrm{tr}\Sigma_x^2} = \frac{1}{n(n-1)} \sum_{j \ne k}
a_{jk} a_{kj}`, :math:`a_{jk} = k(x_j, x_k) - \mathrm{mean}_{l \notin \{j, k\}} k(x_j, x_l)`
and :math:`\widehat{\mathrm{tr}\Sigma_x\Sigma_y} = \frac{1}{nm} \sum_{l, k}
[k(x_l, y_k) - \mathrm{mean}_{l' \ne l} k(x_{l'}, y_k)]
[k(x_l, y_k) - \mathrm{mean}_{k' \ne k} k(x_l, y_{k'})]`; :math:`T = U / \hat\sigma`. It is
exactly Chen & Qin's test on the kernel's feature vectors. Its normal limit needs
:math:`\mathrm{tr}\Sigma^4 / (\mathrm{tr}\Sigma^2)^2 \to 0`, i.e. a growing effective
dimension: at a fixed truncation :math:`L` the null law is a weighted sum of centred
chi-squares, right-skewed. A growing :math:`L` does not rescue it on a fixed sphere: the
eigenvalues :math:`a_l / \dim H_l` decay fast enough that the ratio stays bounded (on
:math:`S^2` under the uniform law :math:`\mathrm{tr}\Sigma^2 \propto \sum_l a_l^2/(2l+1)`
converges), and the measured null skewness at n = m = 200, Dir(2, 2, 2), is 1.8, 1.6, 1.6
at L = 5, 40 and untruncated (cross: -0.1 at each).

A zero variance estimate (all points equal) gives :math:`T` = NaN.
"""

from __future__ import annotations

import numpy as np


def _ratio(U: np.ndarray, var: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var > 0, U / np.sqrt(np.where(var > 0, var, 1.0)), np.nan)


def cross_statistic(K_xx: np.ndarray, K_xy: np.ndarray, K_yx: np.ndarray,
                    K_yy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Shekhar et al.'s cross statistic (module docstring): returns ``(U, T)``, each ``(R,)``.

    Shapes: ``K_xx`` ``(R, n1, n2)`` = k(X1, X2), ``K_xy`` ``(R, n1, m2)`` = k(X1, Y2),
    ``K_yx`` ``(R, m1, n2)`` = k(Y1, X2), ``K_yy`` ``(R, m1, m2)`` = k(Y1, Y2).
    """
    n1, m1 = K_xx.shape[-2], K_yx.shape[-2]
    row_x = K_xx.mean(-1) - K_xy.mean(-1)              # (R, n1)
    row_y = K_yx.mean(-1) - K_yy.mean(-1)              # (R, m1)
    U_x, U_y = row_x.mean(-1), row_y.mean(-1)          # Eq. 2
    sigma_x2 = ((row_x - U_x[:, None]) ** 2).mean(-1)  # Eq. 4
    sigma_y2 = ((row_y - U_y[:, None]) ** 2).mean(-1)
    U = U_x - U_y
    return U, _ratio(U, sigma_x2 / n1 + sigma_y2 / m1)


def _trace_sq(K: np.ndarray) -> np.ndarray:
    """Chen & Qin's leave-two-out estimate of tr(Sigma^2) from a within-sample Gram ``K``."""
    n = K.shape[-1]
    diag = np.diagonal(K, axis1=-2, axis2=-1)
    rows = K.sum(-1)
    # a_jk = K_jk - (r_j - K_jj - K_jk) / (n - 2): mean over l not in {j, k}
    A = K - (rows[..., :, None] - diag[..., :, None] - K) / (n - 2)
    prod = A * np.swapaxes(A, -1, -2)
    off = prod.sum((-1, -2)) - np.diagonal(prod, axis1=-2, axis2=-1).sum(-1)
    return off / (n * (n - 1))


def chen_qin_statistic(K_xx: np.ndarray, K_yy: np.ndarray,
                       K_xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The full U-statistic with Chen & Qin's variance: returns ``(U, T)``, each ``(R,)``.

    Shapes: ``K_xx`` ``(R, n, n)``, ``K_yy`` ``(R, m, m)``, ``K_xy`` ``(R, n, m)``; n, m >= 3.
    """
    n, m = K_xx.shape[-1], K_yy.shape[-1]
    tr_x = np.trace(K_xx, axis1=-2, axis2=-1)
    tr_y = np.trace(K_yy, axis1=-2, axis2=-1)
    U = ((K_xx.sum((-1, -2)) - tr_x) / (n * (n - 1))
         + (K_yy.sum((-1, -2)) - tr_y) / (m * (m - 1))
         - 2.0 * K_xy.mean((-1, -2)))
    cols = K_xy.sum(-2, keepdims=True)                 # (R, 1, m)
    rows = K_xy.sum(-1, keepdims=True)                 # (R, n, 1)
    left = K_xy - (cols - K_xy) / (n - 1)              # leave x_l out of the x-mean
    right = K_xy - (rows - K_xy) / (m - 1)             # leave y_k out of the y-mean
    tr_xy = (left * right).mean((-1, -2))
    var = (2.0 * _trace_sq(K_xx) / (n * (n - 1)) + 2.0 * _trace_sq(K_yy) / (m * (m - 1))
           + 4.0 * tr_xy / (n * m))
    return U, _ratio(U, var)
