r"""One statistics layer for every study's verdict: seeds (or clusters) are the unit.

Plain NumPy/SciPy. The functions a study's analysis needs to turn its runs into a claim
with an interval and a verdict:

* :func:`paired_comparison` -- a method against a baseline run on the *same* seeds.
  With :math:`d_i = m_i - b_i` the per-seed difference over :math:`n` seeds,

  .. math:: \bar d = \frac1n \sum_i d_i,

  a percentile bootstrap interval of :math:`\bar d` (:func:`bootstrap_mean_ci`: resample
  the :math:`n` differences with replacement, fixed RNG seed, 10,000 resamples) and a
  p-value from the paired sign-flip permutation test (:func:`sign_flip_test`): under
  :math:`H_0` each :math:`d_i` is symmetric about 0, so every sign pattern
  :math:`\epsilon \in \{-1, 1\}^n` is equally likely, and

  .. math:: p = \Pr_\epsilon\big(|\tfrac1n \textstyle\sum_i \epsilon_i d_i| \ge |\bar d|\big),

  exact over all :math:`2^n` patterns for :math:`n \le 16`, Monte Carlo
  (:math:`(1 + \#\{\ge\}) / (1 + R)`) above. Two-sided by default; the same numbers as
  ``scipy.stats.permutation_test(..., permutation_type='samples')`` on ``(m, b)``.
* :func:`equivalence` -- the same paired differences tested for *equivalence* within a
  margin :math:`\delta` by two one-sided sign-flip tests (TOST): :math:`H_0^-: \mu \le
  -\delta` is tested on :math:`d_i + \delta` (greater) and :math:`H_0^+: \mu \ge \delta`
  on :math:`d_i - \delta` (less); p is the larger of the two, and the interval is the
  :math:`1 - 2\alpha` (90 %) bootstrap interval that TOST at level :math:`\alpha` reads.
  :func:`non_inferiority` is the one side of it: the method is no worse than the baseline
  by more than :math:`\delta`.
* :func:`holm` -- Holm's step-down correction of a family of p-values: with the
  :math:`m` p-values sorted, :math:`p_{(1)} \le \dots \le p_{(m)}`,
  :math:`\tilde p_{(j)} = \max_{k \le j} \min(1, (m - k + 1)\, p_{(k)})` (monotone,
  capped at 1), returned in the input order.
* :func:`clustered_slope` -- the slope of :math:`y` on :math:`x` when the observations
  come in clusters (the seeds of one dataset share its homophily): fit the line through
  the :math:`k` cluster means :math:`(\bar x_c, \bar y_c)` by OLS, with a t interval on
  :math:`k - 2` degrees of freedom. Five datasets are five points, not thirty runs.
* :func:`verdict` -- ``supported`` when the whole interval lies on the claimed side of 0
  (of :math:`-\delta` / :math:`+\delta` with a non-inferiority margin; inside
  :math:`(-\delta, \delta)` for ``"within"``, an equivalence),
  ``contradicted`` when it lies wholly on the other side, ``inconclusive at this scale``
  otherwise, or with fewer than 3 units, or (when a p-value is given) when the test does
  not reach ``alpha``. The last rule matters at 3-5 seeds, where a percentile bootstrap
  interval is too narrow: there the interval excludes 0 as soon as every seed agrees,
  while the exact sign-flip p-value cannot fall below :math:`2 / 2^n` (0.25 at 3 seeds,
  0.0625 at 5): a two-sided test at 5 % needs at least 6 seeds.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Alternative = Literal["two-sided", "greater", "less"]
Direction = Literal["greater", "less", "within"]
Verdict = Literal["supported", "contradicted", "inconclusive at this scale"]
SUPPORTED: Verdict = "supported"
CONTRADICTED: Verdict = "contradicted"
INCONCLUSIVE: Verdict = "inconclusive at this scale"

MAX_EXACT = 16
"""Largest n for which the sign-flip test enumerates all 2^n sign patterns (65,536)."""


@dataclass(frozen=True)
class PairedComparison:
    """A method against a baseline over the same ``n`` seeds (see :func:`paired_comparison`)."""

    mean_difference: float
    """:math:`\\bar d`, the mean of method minus baseline over the seeds."""
    ci_low: float
    ci_high: float
    p_value: float
    n: int
    test: str
    """Which test and interval, in words (exact or Monte Carlo, resamples, level)."""
    unit: str = "seeds"
    """What a pair is (``seeds``, or ``batches`` of a Monte Carlo, ``blocks`` of timings)."""


@dataclass(frozen=True)
class ClusteredSlope:
    """OLS slope through cluster means with a t interval (see :func:`clustered_slope`)."""

    slope: float
    intercept: float
    ci_low: float
    ci_high: float
    p_value: float
    clusters: int
    """k: the number of clusters (the n of the test)."""
    observations: int
    test: str


def paired_differences(method: Sequence[float], baseline: Sequence[float]) -> np.ndarray:
    """``method - baseline`` per seed, keeping the seeds where both are finite."""
    m, b = np.asarray(method, dtype=float), np.asarray(baseline, dtype=float)
    if m.shape != b.shape or m.ndim != 1:
        raise ValueError(f"paired samples need the same 1-D shape, got {m.shape} and {b.shape}")
    d = m - b
    return d[np.isfinite(d)]


def bootstrap_mean_ci(values: Sequence[float], level: float = 0.95,
                      resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (finite ones).

    Resamples the values with replacement ``resamples`` times from
    ``numpy.random.default_rng(seed)`` and returns the ``(1 - level) / 2`` and
    ``(1 + level) / 2`` quantiles of the resampled means; ``(nan, nan)`` when empty.
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def _sign_patterns(n: int) -> np.ndarray:
    """All 2^n rows of +-1 signs, shape (2^n, n)."""
    bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    return 1.0 - 2.0 * bits


def sign_flip_test(differences: Sequence[float], alternative: Alternative = "two-sided",
                   max_exact: int = MAX_EXACT, resamples: int = 100_000,
                   seed: int = 0) -> tuple[float, bool]:
    """p-value of the paired sign-flip permutation test on the mean difference.

    Returns ``(p, exact)``: exact over all 2^n sign patterns when ``n <= max_exact``,
    else Monte Carlo with ``resamples`` random patterns and the ``(1 + hits) / (1 +
    resamples)`` estimate. Two-sided p is ``min(1, 2 min(p_less, p_greater))``, which for
    this symmetric null equals :math:`\\Pr(|T| \\ge |t|)`. ``nan`` for no differences.
    """
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    n = d.size
    if n == 0:
        return math.nan, True
    observed = d.mean()
    exact = n <= max_exact
    if exact:
        null = _sign_patterns(n) @ d / n
    else:
        rng = np.random.default_rng(seed)
        null = rng.choice([-1.0, 1.0], size=(resamples, n)) @ d / n
    tol = 1e-12 * max(1.0, abs(observed))  # the observed pattern must count as a hit

    def p_side(hits: int) -> float:
        return hits / null.size if exact else (1 + hits) / (1 + null.size)

    p_greater = p_side(int(np.sum(null >= observed - tol)))
    p_less = p_side(int(np.sum(null <= observed + tol)))
    if alternative == "greater":
        return p_greater, exact
    if alternative == "less":
        return p_less, exact
    return min(1.0, 2 * min(p_greater, p_less)), exact


def paired_comparison(method: Sequence[float], baseline: Sequence[float],
                      alternative: Alternative = "two-sided", level: float = 0.95,
                      resamples: int = 10_000, seed: int = 0,
                      unit: str = "seeds") -> PairedComparison:
    """Mean difference (method - baseline), its bootstrap interval and sign-flip p-value.

    ``method[i]`` and ``baseline[i]`` are the two runs on seed ``i``; a seed where either
    is not finite is left out (``n`` counts the rest). ``unit`` names what a pair is in
    the test's words (``seeds``; ``batches`` of a Monte Carlo, ``blocks`` of timings).
    """
    d = paired_differences(method, baseline)
    n = int(d.size)
    low, high = bootstrap_mean_ci(d, level, resamples, seed)
    p, exact = sign_flip_test(d, alternative, seed=seed)
    how = (f"exact over all {2**n} sign patterns" if exact
           else "Monte Carlo, 100,000 sign patterns")
    sided = "two-sided" if alternative == "two-sided" else f"one-sided ({alternative})"
    test = (f"paired over {n} {unit}: sign-flip permutation test ({how}, {sided}); "
            f"{level:.0%} percentile bootstrap CI ({resamples:,} resamples)")
    mean = float(d.mean()) if n else math.nan
    return PairedComparison(mean, low, high, p, n, test, unit)


def equivalence(method: Sequence[float], baseline: Sequence[float], margin: float,
                level: float = 0.90, resamples: int = 10_000, seed: int = 0,
                unit: str = "seeds") -> PairedComparison:
    """Equivalence of method and baseline within ``margin`` over paired seeds (TOST).

    ``p`` is the larger of the two one-sided sign-flip p-values (differences shifted by
    ``+margin``, tested greater; by ``-margin``, tested less); the interval is the
    ``level`` (default 90 %, TOST's ``1 - 2 alpha``) bootstrap interval of the mean
    difference. Read it with ``verdict(..., "within", margin=margin)``.
    """
    if not (margin > 0 and math.isfinite(margin)):
        raise ValueError(f"equivalence needs a finite margin > 0, got {margin}")
    d = paired_differences(method, baseline)
    n = int(d.size)
    low, high = bootstrap_mean_ci(d, level, resamples, seed)
    p_low, exact = sign_flip_test(d + margin, "greater", seed=seed)
    p_high, _ = sign_flip_test(d - margin, "less", seed=seed)
    how = (f"exact over all {2**n} sign patterns" if exact
           else "Monte Carlo, 100,000 sign patterns")
    test = (f"equivalence within +-{margin:g} over {n} paired {unit}: two one-sided sign-flip "
            f"tests ({how}); {level:.0%} percentile bootstrap CI ({resamples:,} resamples)")
    mean = float(d.mean()) if n else math.nan
    return PairedComparison(mean, low, high, max(p_low, p_high), n, test, unit)


def non_inferiority(method: Sequence[float], baseline: Sequence[float], margin: float,
                    direction: Literal["greater", "less"] = "greater", level: float = 0.95,
                    resamples: int = 10_000, seed: int = 0,
                    unit: str = "seeds") -> PairedComparison:
    """The method no worse than the baseline by more than ``margin`` over paired seeds.

    ``direction`` is the better side (``"greater"``: higher is better, so H0 is
    ``mean(method - baseline) <= -margin``, tested one-sided on the differences shifted by
    ``+margin``). Read it with ``verdict(..., direction, margin=margin)``.
    """
    if not (margin >= 0 and math.isfinite(margin)):
        raise ValueError(f"non_inferiority needs a finite margin >= 0, got {margin}")
    if direction not in ("greater", "less"):
        raise ValueError(f"direction must be 'greater' or 'less', not {direction!r}")
    d = paired_differences(method, baseline)
    n = int(d.size)
    low, high = bootstrap_mean_ci(d, level, resamples, seed)
    shift = margin if direction == "greater" else -margin
    p, exact = sign_flip_test(d + shift, direction, seed=seed)
    how = (f"exact over all {2**n} sign patterns" if exact
           else "Monte Carlo, 100,000 sign patterns")
    worse = "below" if direction == "greater" else "above"
    test = (f"non-inferiority (not {margin:g} {worse}) over {n} paired {unit}: one-sided "
            f"sign-flip test ({how}); {level:.0%} percentile bootstrap CI ({resamples:,} "
            "resamples)")
    mean = float(d.mean()) if n else math.nan
    return PairedComparison(mean, low, high, p, n, test, unit)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values, in the input order (nan entries stay nan).

    The family is the finite p-values; with ``m`` of them sorted ascending, the ``j``-th
    (from 1) becomes ``max over k <= j of min(1, (m - k + 1) p_(k))``.
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, math.nan)
    finite = np.flatnonzero(np.isfinite(p))
    m = finite.size
    if m == 0:
        return out
    order = finite[np.argsort(p[finite], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def clustered_slope(x: Sequence[float], y: Sequence[float], clusters: Sequence[Hashable],
                    level: float = 0.95) -> ClusteredSlope:
    """Slope of ``y`` on ``x`` over cluster means, with a t interval on k - 2 df.

    ``clusters[i]`` names observation ``i``'s cluster (a dataset, a homophily value);
    pairs with a non-finite ``x`` or ``y`` are dropped first. Each cluster contributes
    one point, the mean of its ``x`` and of its ``y``; the line through the ``k`` points
    is fit by OLS, its standard error is
    :math:`\\sqrt{\\sum_c r_c^2 / (k - 2) / \\sum_c (\\bar x_c - \\bar x)^2}` and the interval
    is :math:`\\hat\\beta \\pm t_{k-2, (1+level)/2}\\,\\mathrm{se}`; p is the two-sided t-test
    of a zero slope. Slope and interval are ``nan`` with fewer than 3 clusters or when
    every cluster has the same ``x``.
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    labels = list(clusters)
    if not (len(xs) == len(ys) == len(labels)):
        raise ValueError("x, y and clusters need the same length")
    groups: dict[Hashable, list[int]] = {}
    for i, label in enumerate(labels):
        if math.isfinite(xs[i]) and math.isfinite(ys[i]):
            groups.setdefault(label, []).append(i)
    observations = sum(len(v) for v in groups.values())
    cx = np.array([xs[v].mean() for v in groups.values()])
    cy = np.array([ys[v].mean() for v in groups.values()])
    k = len(groups)
    test = (f"OLS slope over {k} cluster means ({observations} runs), "
            f"{level:.0%} t interval on {max(k - 2, 0)} df")
    if k < 3 or np.ptp(cx) == 0:
        return ClusteredSlope(math.nan, math.nan, math.nan, math.nan, math.nan, k,
                              observations, test)
    xc = cx - cx.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (cy - cy.mean()) / sxx)
    intercept = float(cy.mean() - slope * cx.mean())
    residual = cy - (intercept + slope * cx)
    se = math.sqrt(float(residual @ residual) / (k - 2) / sxx)
    from scipy import stats as sps  # here: scipy.stats takes a second to import

    half = float(sps.t.ppf((1 + level) / 2, k - 2)) * se
    if se > 0:
        p = float(2 * sps.t.sf(abs(slope) / se, k - 2))
    else:
        p = 0.0 if slope != 0 else 1.0
    return ClusteredSlope(slope, intercept, slope - half, slope + half, p, k, observations,
                          test)


def verdict(ci_low: float, ci_high: float, direction: Direction, n: int | None = None,
            p_value: float | None = None, alpha: float = 0.05, min_n: int = 3,
            margin: float = 0.0) -> Verdict:
    """Read an effect's interval against the claimed side of the effect.

    ``direction`` is the side the claim puts the effect on: ``"greater"`` (above
    ``-margin``: positive for ``margin = 0``, "not worse by more than the margin" for a
    non-inferiority margin), ``"less"`` (below ``+margin``), or ``"within"`` (inside
    ``(-margin, +margin)``: an equivalence, which needs ``margin > 0``). ``supported`` when
    the whole interval lies on the claimed side; ``contradicted`` when it lies wholly on
    the other side (for ``"within"``: wholly outside the margins); ``inconclusive at this
    scale`` otherwise, when the interval is not finite, or ``n`` is below ``min_n``.
    ``p_value`` (when given) must reach ``alpha`` for ``supported`` (and, without a margin,
    where it is the two-sided test, for ``contradicted`` too); with a margin it tests the
    claimed side only (TOST, non-inferiority), so the interval alone contradicts.
    A wide interval around 0 is not a match.
    """
    if direction not in ("greater", "less", "within"):
        raise ValueError(f"direction must be 'greater', 'less' or 'within', not {direction!r}")
    if not (margin >= 0 and math.isfinite(margin)) or (direction == "within" and margin == 0):
        raise ValueError(f"margin must be finite and >= 0 (> 0 for 'within'), got {margin}")
    if n is not None and n < min_n:
        return INCONCLUSIVE
    if not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return INCONCLUSIVE
    significant = p_value is None or (math.isfinite(p_value) and p_value <= alpha)
    if direction == "within":
        side = (SUPPORTED if -margin < ci_low and ci_high < margin else
                CONTRADICTED if ci_high < -margin or ci_low > margin else INCONCLUSIVE)
    elif direction == "greater":
        side = (SUPPORTED if ci_low > -margin else
                CONTRADICTED if ci_high < -margin else INCONCLUSIVE)
    else:
        side = (SUPPORTED if ci_high < margin else
                CONTRADICTED if ci_low > margin else INCONCLUSIVE)
    if side == SUPPORTED or (direction != "within" and margin == 0):
        return side if significant else INCONCLUSIVE
    return side  # a margin's p tests the claimed side only: the interval contradicts
