"""The two-sample study's report: claims, tables and figures from the trials' batches.

Each trial reports one row per batch (``mc/batch``); a resumed trial may report a batch
twice, and the last report of each batch is kept. The batch is the unit of every test
here: its rejection rate per method (``batch/reject/METHOD``), ms per test
(``batch/time_ms/METHOD``) and p-value CDF at multiples of alpha
(``batch/pvalue_cdf/METHOD/Malpha``), every method on the batch's same replicates. Claims
are read per *reading* of the proposed test (studentization, degree, distance), each with:

1. **size**: at every null configuration (effect 0), the rejection rate is within +-0.02
   of alpha: TOST over the batches (``stats.equivalence`` of rate - alpha). "At every"
   is an all-of claim, read by intersection-union: it holds when every configuration's
   own test does, so the row shown is the binding configuration (the first that is not
   supported, else the one with the largest p) and no multiplicity correction is needed
   (Berger, "Multiparameter hypothesis testing and acceptance sampling", Technometrics
   1982). Holm would only make it harder: with 6 batches the exact sign-flip p cannot
   fall below 1/64, and Holm over k > 3 configurations could then never decide.
2. **convergence**: the KS distance of the studentized statistic (all B x R null
   statistics of a trial) to N(0, 1) falls with n: ``stats.clustered_slope`` of KS on
   log n, the clusters being the sample sizes (3 are needed). Precondition: at the
   smallest n the distance exceeds Kolmogorov's 95 % point for an exact N(0, 1) sample of
   as many draws (a departure for larger n to shrink).
3. **power**: on the same-mean alternatives (concentration, shape, mixture), above every
   other general-purpose test the run has (the permutation energy and MMD tests, cross-MMD,
   the log-ratio mean tests Hotelling, James and Cao-Lin-Li, the Dirichlet likelihood-ratio
   test), paired over the batches of all those configurations, Holm over the tests,
   reported whichever way each goes.
4. **cost**: non-inferior to the permutation energy test within 5 points at every
   alternative (``stats.non_inferiority`` over its batches; all-of, read like the size
   claim, since a bound on the loss must hold where the loss is, and a mean over
   alternatives would let saturated ones, both tests at power 1, hide it; the pooled mean
   is in the note), and at a fraction of its time per test (the per-batch ratio - 1 < 0,
   paired over every batch).

Every power verdict (3 and the non-inferiority of 4) is **gated on size**: a precondition
per compared test that it holds its size at the null configuration of every alternative
compared (the same family's null at the same n, m, D and data parameters, in this run):
rejection rate at most alpha + ``SIZE_GATE_SE`` binomial standard errors of a rate at
alpha over that null's replicates. Power of a test that does not hold its size is not
evidence, so a failed gate reads "precondition failed" (and so does a null the run did not
measure: "size not measured in this run"). Beside it, **size-adjusted power**: each test
rejecting at its own empirical null critical p-value (``size_adjusted``), so every test has
size alpha exactly on its null's replicates; a size-adjusted row joins the claims where it
reads differently from the nominal one. Regimes the paper claims that the run did not
cover (directional data, real data, the paper profile's scale) are ``not run`` rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from raystudy import Analysis, Claim, RunResults, Table, claims
from raystudy.algorithms import stats
from raystudy.algorithms.two_sample import SAME_MEAN
from raystudy.algorithms.two_sample.batch import DIRECTIONAL_ONLY
from raystudy.studies.compositional_two_sample.config import BASELINES

QQ_LEVELS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95,
             0.975, 0.99, 0.995)
"""Probabilities of the null quantiles each null trial reports for the QQ plot."""
PVALUE_LEVELS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.4, 1.6,
                 2.0, 3.0, 4.0)
"""Multiples M of alpha at which every batch reports, per method, the fraction of its
replicates with p-value <= M alpha (M = 1: the rejection rate): the p-value CDF from which
the size-adjusted power is read. Dense around alpha, where a test's null critical p lies
unless its size is off by a factor of 20 (then size-adjusted power is not read)."""
SIZE_MARGIN = 0.02
"""Half-width of the size claim's equivalence band around alpha."""
POWER_MARGIN = 0.05
"""Non-inferiority margin of the power claim against the permutation energy test."""
SIZE_GATE_SE = 2.0
"""The size gate on every power verdict: a test holds its size at a null configuration
when its rejection rate there is at most alpha + SIZE_GATE_SE standard errors of a rate at
alpha over that null's N replicates, sqrt(alpha (1 - alpha) / N) (at alpha = 0.05: bound
0.068 at 600 replicates, 0.060 at 2,000, 0.056 at 5,000). That is the Monte Carlo noise
of an exactly sized test, which fails it about 2.3 % of the time per null; a size above it
is measurably liberal, and part of that test's power is its excess size."""
MEAN_TESTS = ("hotelling_ilr", "james_ilr", "cao_lin_li")
"""The log-ratio mean tests (the seed abstract's comparators: "only detect mean
differences")."""
KERNEL_TESTS = ("energy_perm", "mmd_perm", "cross_mmd")
"""The kernel and distance tests on sqrt(x) (the poster abstract's comparators: "kernel or
distance-based tests ... designed for Euclidean data")."""
POWER_BASELINES = tuple(m for m in BASELINES if m not in DIRECTIONAL_ONLY)
"""Every general-purpose test the power claim compares with on the (compositional)
same-mean alternatives: the kernel tests, the mean tests and the Dirichlet LRT."""
KS_FLOOR = 0.8687
"""E[sup |F_N - Phi|] * sqrt(N) for an exact N(0, 1) sample, large N (Kolmogorov's
distribution's mean, sqrt(pi / 2) log 2)."""
KS_EXCESS_LEVEL = 0.95
"""The KS claim's precondition: at the smallest n the statistic's KS distance exceeds this
quantile of Kolmogorov's distribution for an exact N(0, 1) sample of as many draws, so
there is a departure from the limit for larger n to shrink (below it the distance is
Monte Carlo noise at every n, and a slope through it reads nothing)."""
PAPER_PROFILE_D = 20
"""The largest D of the paper space (spaces/paper.yaml), standing for the paper's
unpublished dimensions."""
PAPER_PROFILE_N = 400
"""The largest n of the paper space."""
PAPER_PROFILE_M_RATIO = 1.2
"""m / n of the paper profile (profiles/paper.yaml): unequal sample sizes."""
PAPER_PROFILE_REPLICATES = 5000
"""Replicates per configuration of the paper profile (10 batches x 500)."""


def pvalue_cdf_key(method: str, multiple: float) -> str:
    """The metric key of ``method``'s p-value CDF at ``multiple`` x alpha in one batch."""
    return f"batch/pvalue_cdf/{method}/{multiple:g}alpha"


@dataclass
class Trial:
    """One trial's Monte Carlo: its configuration and per-batch outcomes per method."""

    trial_id: str
    scenario: str
    family: str
    effect: float
    n: int
    m: int
    D: int
    degree: int
    distance: str
    alpha: float
    reps: int
    reject: dict[str, np.ndarray]
    """Method -> ``(B,)`` rejection rate per batch."""
    time_ms: dict[str, np.ndarray]
    """Method -> ``(B,)`` ms per test per batch."""
    last: dict[str, Any]
    """The last report (the null statistics' KS, moments and quantiles so far)."""
    pvalue_cdf: dict[str, np.ndarray] = field(default_factory=dict)
    """Method -> ``(B, len(PVALUE_LEVELS))`` p-value CDF per batch (empty for a run whose
    trials did not report it)."""
    data_key: tuple[Any, ...] = ()
    """The data parameters a null shares with its alternatives (a, sigma, kappa, depth,
    path, group column, groups)."""
    path: str = ""
    """file: the user's table."""
    permutations: int = 0
    """B of the permutation tests."""

    @property
    def null(self) -> bool:
        return self.effect == 0

    @property
    def batches(self) -> int:
        return len(next(iter(self.reject.values())))

    @property
    def replicates(self) -> int:
        return self.batches * self.reps

    @property
    def label(self) -> str:
        return f"{self.scenario} n={self.n} m={self.m} D={self.D}"


DATA_KEYS = ("a", "sigma", "kappa", "depth", "path", "group_column", "groups")
"""The data config keys (``data.KEY``) a null must share with an alternative."""


def collect(results: RunResults) -> list[Trial]:
    """Every trial with at least one reported batch (finished or not: batches are units)."""
    trials = []
    for record in results.trials:
        rows = {int(r["mc/batch"]): r for r in record.history if "mc/batch" in r}
        if not rows or not record.config:
            continue
        ordered = [rows[b] for b in sorted(rows)]
        names = [k.removeprefix("batch/reject/") for k in ordered[-1]
                 if k.startswith("batch/reject/")]
        c = record.config
        family, _, effect = str(c["data.scenario"]).partition("/")
        n = int(c["data.n"])
        cdf = {k: np.array([[r[pvalue_cdf_key(k, M)] for M in PVALUE_LEVELS]
                            for r in ordered], float)
               for k in names if all(pvalue_cdf_key(k, M) in r for r in ordered
                                     for M in PVALUE_LEVELS)}
        trials.append(Trial(
            trial_id=record.trial_id, scenario=str(c["data.scenario"]), family=family,
            effect=float(effect or 0.0), n=n, m=max(4, round(float(c["data.m_ratio"]) * n)),
            D=int(c["data.D"]), degree=int(c["harmonic.degree"]),
            distance=str(c["harmonic.distance"]), alpha=float(c["mc.alpha"]),
            reps=int(c["mc.reps"]),
            reject={k: np.array([r[f"batch/reject/{k}"] for r in ordered], float)
                    for k in names},
            time_ms={k: np.array([r[f"batch/time_ms/{k}"] for r in ordered], float)
                     for k in names},
            last=ordered[-1], pvalue_cdf=cdf,
            data_key=tuple(c.get(f"data.{k}") for k in DATA_KEYS),
            path=str(c.get("data.path") or ""),
            permutations=int(c.get("baselines.permutations") or 0)))
    return sorted(trials, key=lambda t: (t.null is False, t.family, t.effect, t.D, t.n,
                                         t.degree, t.distance))


# ----------------------------------------------------------------------------- readings
@dataclass(frozen=True)
class Reading:
    """One reading of the proposed test: a studentization at a degree and a distance."""

    method: str
    degree: int
    distance: str

    def name(self, several: bool) -> str:
        short = self.method.replace("harmonic_", "harmonic (") + ")"
        return f"{short} L={self.degree} {self.distance}" if several else short


def readings(trials: Sequence[Trial]) -> list[Reading]:
    """Every reading of the proposed test the trials ran."""
    found = {Reading(m, t.degree, t.distance) for t in trials for m in t.reject
             if m.startswith("harmonic_")}
    return sorted(found, key=lambda r: (r.method, r.degree, r.distance))


def of_reading(trials: Sequence[Trial], r: Reading) -> list[Trial]:
    """The trials that ran reading ``r`` (its studentization at its degree and distance)."""
    return [t for t in trials if r.method in t.reject
            and (t.degree, t.distance) == (r.degree, r.distance)]


def pooled(trials: Sequence[Trial], a: str, b: str, what: str = "reject"
           ) -> tuple[np.ndarray, np.ndarray, int]:
    """Batches of every trial that ran both methods, concatenated: ``(a, b, trials)``."""
    both = [t for t in trials if a in t.reject and b in t.reject]
    pick = [getattr(t, what) for t in both]
    if not both:
        return np.empty(0), np.empty(0), 0
    return (np.concatenate([p[a] for p in pick]), np.concatenate([p[b] for p in pick]),
            len(both))


NULL_FAMILY = {"shape": "logistic_normal", "concentration": "dirichlet",
               "mixture": "dirichlet", "mean_shift": "dirichlet"}
"""The null family of each alternative family whose base is another family (the Dirichlet
families share Dir(a 1); shape's null is logistic_normal); the others are their own."""


def _null_of(t: Trial, nulls: Sequence[Trial], method: str | None = None) -> Trial | None:
    """The null trial of an alternative: the same base distribution, sizes, data
    parameters, harmonic options and alpha (and, given ``method``, one that ran it)."""
    base = NULL_FAMILY.get(t.family, t.family)
    for u in nulls:
        if (u.family, u.n, u.m, u.D, u.degree, u.distance, u.data_key, u.alpha) == (
                base, t.n, t.m, t.D, t.degree, t.distance, t.data_key, t.alpha) and (
                method is None or method in u.reject):
            return u
    return None


def _few(items: Sequence[str], shown: int = 3) -> str:
    more = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {more} more" if more > 0 else "")


def _values(values: set[Any]) -> str:
    ordered = sorted(values)
    return str(ordered[0]) if len(ordered) == 1 else f"{{{', '.join(map(str, ordered))}}}"


def _set(name: str, values: set[Any]) -> str:
    return f"{name} {'=' if len(values) == 1 else 'in'} {_values(values)}"


def scope_of(trials: Sequence[Trial], r: Reading | None = None) -> str:
    """What a claim over ``trials`` holds for: the data (generated stand-ins named by their
    generators, or the user's table), the sizes, the Monte Carlo and the hardware."""
    if not trials:
        return ("no such configuration in this run (generated stand-in data from "
                "raystudy's generators; CPU)")
    generated = sorted({t.scenario for t in trials if t.family != "file"})
    tables = sorted({t.path for t in trials if t.family == "file"})
    parts = []
    if generated:
        parts.append(f"generated stand-in data from raystudy's generators ("
                     f"{', '.join(generated)}), not the paper's simulation designs or data "
                     "sets (neither is public)")
    if tables:
        parts.append(f"rows resampled from the user's table {', '.join(tables)}, not the "
                     "paper's data sets")
    sizes = _set("n", {t.n for t in trials})
    parts += [_set("D", {t.D for t in trials}),
              sizes + (", m = n" if all(t.m == t.n for t in trials)
                       else f", {_set('m', {t.m for t in trials})}"),
              f"{_values({t.batches for t in trials})} batches x "
              f"{_values({t.reps for t in trials})} replicates per configuration"]
    if r is not None:
        parts.append(f"harmonic kernel L = {r.degree}, {r.distance}")
    parts.append("CPU (NumPy, one BLAS thread)")
    return "; ".join(parts)


# ----------------------------------------------------------------------------- size gate
def size_bound(null: Trial) -> float:
    """The size gate's bound at a null: alpha + ``SIZE_GATE_SE`` standard errors of a
    rejection rate at alpha over the null's replicates."""
    return null.alpha + SIZE_GATE_SE * math.sqrt(null.alpha * (1 - null.alpha)
                                                 / null.replicates)


def size_gate(method: str, alternatives: Sequence[Trial],
              nulls: Sequence[Trial]) -> claims.Precondition:
    """``method`` holds its size at the null of every alternative compared (module
    docstring; "size not measured in this run" where an alternative has no null)."""
    statement = (f"{method} holds its size at the nulls of the compared alternatives "
                 f"(rejection rate <= alpha + {SIZE_GATE_SE:g} s.e. of a rate at alpha)")
    matched: dict[str, Trial] = {}
    unmeasured = []
    for t in alternatives:
        u = _null_of(t, nulls, method)
        if u is None:
            unmeasured.append(t.label)
        else:
            matched[u.trial_id] = u
    checks = [(u, float(u.reject[method].mean()), size_bound(u)) for u in matched.values()]
    over = [c for c in checks if c[1] > c[2]]
    evidence = []
    if unmeasured or not checks:
        evidence.append("size not measured in this run" + (
            f": no null configuration for {_few(unmeasured)}" if unmeasured else ""))
    if checks:
        u, size, bound = max(checks, key=lambda c: c[1] - c[2])
        evidence.append(f"{len(checks) - len(over)} of {len(checks)} nulls within their "
                        f"bound; {'worst' if over else 'closest'}: size {size:.4f} against "
                        f"{bound:.4f} at {u.label} ({u.replicates} replicates, alpha "
                        f"{u.alpha:g})")
    return claims.Precondition(statement, bool(checks) and not unmeasured and not over,
                               "; ".join(evidence))


# ----------------------------------------------------------------------------- size-adjusted
def critical_mix(null: Trial, method: str) -> tuple[int, float] | None:
    """Where ``method``'s size-adjusted test rejects, from its p-value CDF at ``null``:
    ``(j, w)`` for the randomized test that rejects at p <= M_j alpha, and with probability
    w at M_j alpha < p <= M_{j+1} alpha (M of ``PVALUE_LEVELS``), w chosen so that its
    rejection rate over the null's replicates is alpha exactly (the CDF interpolated
    linearly between two levels); None when the CDF was not reported or no two levels
    bracket alpha."""
    cdf = null.pvalue_cdf.get(method)
    if cdf is None or not cdf.size:
        return None
    at_null = cdf.mean(axis=0)  # every batch has the same replicates
    within = np.flatnonzero(at_null <= null.alpha + 1e-12)  # 1e-12: float sums of rates
    if within.size == 0:
        return None
    j = int(within[-1])
    if at_null[j] >= null.alpha - 1e-12:
        return j, 0.0
    if j + 1 == at_null.size:
        return None
    return j, float((null.alpha - at_null[j]) / (at_null[j + 1] - at_null[j]))


def critical_p(null: Trial, method: str) -> float:
    """The p-value at which ``method``'s size-adjusted test rejects at ``null`` (nan when
    it cannot be read): alpha for a test sized exactly, below it for a liberal one."""
    mix = critical_mix(null, method)
    if mix is None:
        return math.nan
    j, w = mix
    levels = PVALUE_LEVELS[j:j + 2] if w else PVALUE_LEVELS[j:j + 1] * 2
    return null.alpha * (levels[0] + w * (levels[1] - levels[0]))


def size_adjusted(t: Trial, null: Trial | None, method: str) -> np.ndarray | None:
    """``method``'s size-adjusted power at the alternative ``t``, per batch ``(B,)``: its
    rejection rate at the critical p-value of its null ``null`` (``critical_mix``), or
    None when that cannot be read."""
    if null is None or method not in t.pvalue_cdf:
        return None
    mix = critical_mix(null, method)
    if mix is None:
        return None
    j, w = mix
    cdf = t.pvalue_cdf[method]
    return cdf[:, j] if not w else cdf[:, j] + w * (cdf[:, j + 1] - cdf[:, j])


def adjusted_why(t: Trial, nulls: Sequence[Trial], method: str) -> str:
    """Why ``method``'s size-adjusted power at ``t`` cannot be read ("" when it can)."""
    u = _null_of(t, nulls, method)
    if u is None:
        return f"no null configuration for {t.label}"
    if method not in u.pvalue_cdf or method not in t.pvalue_cdf:
        return f"{t.label} or its null did not report the p-value CDF"
    if critical_mix(u, method) is None:
        return (f"the null rate at {t.label} does not cross alpha between "
                f"{PVALUE_LEVELS[0]:g} and {PVALUE_LEVELS[-1]:g} alpha")
    return ""


def adjusted_gate(methods: Sequence[str], alternatives: Sequence[Trial],
                  nulls: Sequence[Trial]) -> claims.Precondition:
    """The size-adjusted power of each of ``methods`` is read at every alternative: each
    test's critical p-value found at the alternative's null."""
    statement = ("size-adjusted power read at every compared alternative (each test's "
                 "critical p-value at its null)")
    missing = [f"{m}: {why}" for m in methods for t in alternatives
               if (why := adjusted_why(t, nulls, m))]
    if missing or not alternatives:
        return claims.Precondition(statement, False, "size-adjusted power not read in this "
                                   "run" + (f": {_few(missing, 2)}" if missing else ""))
    spans = []
    for m in methods:
        found = [critical_p(u, m) for u in {id(u): u for u in
                                            (_null_of(t, nulls, m) for t in alternatives)
                                            if u is not None}.values()]
        spans.append(f"{m} {min(found):.4f}" + (f"-{max(found):.4f}"
                                                 if max(found) > min(found) else ""))
    return claims.Precondition(statement, True, "critical p-values: " + ", ".join(spans))


@dataclass(frozen=True)
class PowerView:
    """How a power claim reads power: nominal (each test's rejection rate at alpha, gated
    on size) or size-adjusted (at each test's empirical null critical p-value)."""

    adjusted: bool
    nulls: tuple[Trial, ...]

    @property
    def word(self) -> str:
        return "size-adjusted power" if self.adjusted else "power"

    def of(self, t: Trial, method: str) -> np.ndarray | None:
        """``method``'s power per batch at ``t`` (None where it cannot be read)."""
        if not self.adjusted:
            return t.reject.get(method)
        return size_adjusted(t, _null_of(t, self.nulls, method), method)

    def preconditions(self, methods: Sequence[str],
                      alternatives: Sequence[Trial]) -> tuple[claims.Precondition, ...]:
        """Nominal: one size gate per compared test; size-adjusted: that it was read."""
        if self.adjusted:
            return (adjusted_gate(methods, alternatives, self.nulls),)
        return tuple(size_gate(m, alternatives, self.nulls) for m in methods)


def pooled_power(trials: Sequence[Trial], a: str, b: str, view: PowerView,
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """Batches of every trial where both powers can be read, concatenated:
    ``(a, b, trials)``."""
    pairs = [(view.of(t, a), view.of(t, b)) for t in trials]
    kept = [(x, y) for x, y in pairs if x is not None and y is not None]
    if not kept:
        return np.empty(0), np.empty(0), 0
    return (np.concatenate([x for x, _ in kept]), np.concatenate([y for _, y in kept]),
            len(kept))


def changes_reading(nominal: Claim, adjusted: Claim) -> bool:
    """A size-adjusted row joins the claims where it reads, and reads otherwise."""
    return adjusted.verdict != "precondition failed" and adjusted.verdict != nominal.verdict


# ----------------------------------------------------------------------------- claims
def size_rows(trial: Trial, method: str) -> tuple[stats.PairedComparison, Claim]:
    """TOST of one null trial's per-batch size against alpha, within the margin."""
    result = stats.equivalence(trial.reject[method], [trial.alpha] * trial.batches,
                               SIZE_MARGIN, unit="batches")
    return result, claims.equivalence_claim(f"size within +-{SIZE_MARGIN:g} of alpha at "
                                            f"{trial.label}", "size - alpha", result,
                                            SIZE_MARGIN, scope=scope_of([trial]))


def non_inferiority_rows(trial: Trial, method: str, view: PowerView | None = None,
                         ) -> tuple[stats.PairedComparison, Claim] | None:
    """One alternative's power against the permutation energy test, within the margin
    (None where the view cannot read both)."""
    view = view or PowerView(False, ())
    h, e = view.of(trial, method), view.of(trial, "energy_perm")
    if h is None or e is None:
        return None
    result = stats.non_inferiority(h, e, POWER_MARGIN, unit="batches")
    return result, claims.paired_claim(f"{view.word} within {POWER_MARGIN:g} of energy_perm "
                                       f"at {trial.label}", f"{view.word} difference", result,
                                       "greater", margin=POWER_MARGIN, scope=scope_of([trial]))


VERDICT_ORDER = {"contradicted": 0, "inconclusive at this scale": 1, "supported": 2}


def binding(rows: Sequence[tuple[Trial, stats.PairedComparison, Claim]]
            ) -> tuple[Trial, stats.PairedComparison, str]:
    """The row an all-of claim is read at (intersection-union): a contradicted one, else an
    inconclusive one, else the one with the largest p (ties: the largest effect); and
    "k of K supported" for its note."""
    t, result, _ = min(rows, key=lambda row: (VERDICT_ORDER[row[2].verdict], -row[1].p_value,
                                              -abs(row[1].mean_difference)))
    supported = sum(row[2].verdict == "supported" for row in rows)
    return t, result, (f"all-of over {len(rows)} configurations (intersection-union): "
                       f"{supported} of {len(rows)} supported on their own; shown: the "
                       "binding one")


def size_claim(name: str, r: Reading, trials: Sequence[Trial]) -> Claim:
    """Size within the margin at every null configuration (intersection-union)."""
    statement = f"{name}: size within +-{SIZE_MARGIN:g} of alpha at every null configuration"
    nulls = [t for t in trials if t.null]
    if not nulls:
        return claims.missing_claim(statement, "TOST over batches", "size - alpha",
                                    "no null configuration (effect 0) in this run",
                                    scope=scope_of(trials, r))
    t, result, note = binding([(t, *size_rows(t, r.method)) for t in nulls])
    return claims.equivalence_claim(statement, f"size - alpha at {t.label} (binding)", result,
                                    SIZE_MARGIN, note=note, scope=scope_of(nulls, r))


def ks_excess(method: str, nulls: Sequence[Trial]) -> claims.Precondition:
    """At the smallest n, the statistic departs from N(0, 1) by more than Monte Carlo noise
    (``KS_EXCESS_LEVEL``)."""
    from scipy import stats as sps

    statement = (f"a departure to shrink: at the smallest n the KS distance exceeds "
                 f"Kolmogorov's {KS_EXCESS_LEVEL:.0%} point for an exact N(0, 1) sample of "
                 "as many draws")
    measured = [t for t in nulls if math.isfinite(t.last.get(f"eval/ks/{method}", math.nan))]
    if not measured:
        return claims.Precondition(statement, False, "KS not measured in this run")
    smallest = min(t.n for t in measured)
    points = [(t, t.last[f"eval/ks/{method}"], float(sps.kstwo.ppf(KS_EXCESS_LEVEL,
                                                                    t.replicates)))
              for t in measured if t.n == smallest]
    t, ks, point = max(points, key=lambda p: p[1] - p[2])
    return claims.Precondition(statement, ks > point,
                               f"KS {ks:.4f} against {point:.4f} at {t.label} "
                               f"({t.replicates} draws)")


def ks_claim(name: str, r: Reading, trials: Sequence[Trial]) -> Claim:
    """The KS distance to N(0, 1) falls with n (a slope through the sample sizes)."""
    statement = f"{name}: the KS distance to N(0, 1) falls with n"
    nulls = [t for t in trials if t.null]
    points = [(math.log(t.n), t.last.get(f"eval/ks/{r.method}", math.nan), t.n,
               t.replicates) for t in nulls]
    if not points:
        return claims.missing_claim(statement, "clustered slope", "KS per unit log n",
                                    "no null configuration (effect 0) in this run",
                                    scope=scope_of(trials, r))
    x, y, n, draws = zip(*points, strict=True)
    floor = KS_FLOOR / math.sqrt(min(draws))
    return claims.slope_claim(statement, "KS distance per unit log n",
                              stats.clustered_slope(x, y, n), "less",
                              note=f"clusters: the sample sizes n; an exact N(0, 1) sample "
                                   f"of {min(draws)} draws has KS about {floor:.3f}",
                              scope=scope_of(nulls, r),
                              preconditions=[ks_excess(r.method, nulls)])


COMPARATOR_NOTE = {**dict.fromkeys(MEAN_TESTS, "a log-ratio mean test (the seed abstract's "
                                               "comparators)"),
                   **dict.fromkeys(KERNEL_TESTS, "a kernel or distance test on sqrt(x) (the "
                                                 "poster abstract's comparators)"),
                   "dirichlet_lrt": "the Dirichlet likelihood-ratio test (the true model of "
                                    "the Dirichlet alternatives)"}


def power_family(name: str, r: Reading, alternatives: Sequence[Trial], view: PowerView,
                 scope: str) -> dict[str, Claim]:
    """Baseline -> the claim that reading ``r`` has more (nominal or size-adjusted) power
    than it on ``alternatives``: one Holm family over the baselines that ran (a nominal
    row for each one that did not)."""
    tests, missing, order = [], {}, []
    for baseline in POWER_BASELINES:
        statement = f"{name}: more {view.word} than {baseline} on the same-mean alternatives"
        effect = f"{view.word}: {r.method} - {baseline}"
        h, b, k = pooled_power(alternatives, r.method, baseline, view)
        ran = any(baseline in t.reject for t in alternatives)
        if ran:
            order.append(baseline)
            tests.append(claims.Test(
                statement, effect, stats.paired_comparison(h, b, unit="batches"), "greater",
                note=f"{COMPARATOR_NOTE.get(baseline, 'a baseline')}; units: the batches of "
                     f"{k} configurations",
                preconditions=view.preconditions((r.method, baseline), alternatives)))
        elif not view.adjusted:
            why = ("no same-mean alternative (concentration, shape, mixture) in this run"
                   if not alternatives else f"{baseline} was not run on them")
            missing[baseline] = claims.missing_claim(statement, "paired over batches", effect,
                                                     why, scope=scope)
    label = f"{len(tests)} tests" + (", size-adjusted" if view.adjusted else "")
    family = claims.holm_family(tests, label, scope=scope) if tests else []
    return {**dict(zip(order, family, strict=True)), **missing}


def power_claims(name: str, r: Reading, trials: Sequence[Trial]) -> list[Claim]:
    """More power than every other general-purpose test on the same-mean alternatives,
    each nominal row gated on size, and its size-adjusted row where that reads otherwise."""
    nulls = tuple(t for t in trials if t.null)
    alternatives = [t for t in trials if not t.null and t.family in SAME_MEAN]
    matched = {u.trial_id: u for u in (_null_of(t, nulls) for t in alternatives)
               if u is not None}
    scope = scope_of([*alternatives, *matched.values()], r)
    nominal = power_family(name, r, alternatives, PowerView(False, nulls), scope)
    adjusted = power_family(name, r, alternatives, PowerView(True, nulls), scope)
    out = []
    for baseline in POWER_BASELINES:
        out.append(nominal[baseline])
        if baseline in adjusted and changes_reading(nominal[baseline], adjusted[baseline]):
            out.append(adjusted[baseline])
    return out


def non_inferiority_claim(name: str, r: Reading, alternatives: Sequence[Trial],
                          view: PowerView, scope: str) -> Claim | None:
    """Power within the margin of the permutation energy test at every alternative (all-of,
    read at the binding one), gated on both tests' size; None for a size-adjusted view
    that reads no alternative."""
    statement = (f"{name}: {view.word} within {POWER_MARGIN:g} of the permutation energy "
                 "test")
    read = [(t, row) for t in alternatives if (row := non_inferiority_rows(t, r.method, view))]
    if not read:
        return None if view.adjusted else claims.missing_claim(
            statement, "non-inferiority over batches", f"{view.word}: {r.method} - energy_perm",
            "no alternative with energy_perm in this run", scope=scope)
    t, result, note = binding([(t, *row) for t, row in read])
    h, e, _ = pooled_power([t for t, _ in read], r.method, "energy_perm", view)
    mean = stats.non_inferiority(h, e, POWER_MARGIN, unit="batches")
    return claims.paired_claim(
        statement, f"{view.word}: {r.method} - energy_perm at {t.label} (binding)", result,
        "greater", margin=POWER_MARGIN,
        note=f"non-inferiority margin {POWER_MARGIN:g}; {note}; pooled over every "
             f"alternative: {mean.mean_difference:+.3f} [{mean.ci_low:+.3f}, "
             f"{mean.ci_high:+.3f}]", scope=scope,
        preconditions=view.preconditions((r.method, "energy_perm"), alternatives))


def cost_claims(name: str, r: Reading, trials: Sequence[Trial]) -> list[Claim]:
    """Power within the margin of the permutation energy test (gated on size, with its
    size-adjusted row where that reads otherwise) at a fraction of its time per test."""
    nulls = tuple(t for t in trials if t.null)
    alternatives = [t for t in trials if not t.null and "energy_perm" in t.reject]
    matched = {u.trial_id: u for u in (_null_of(t, nulls) for t in alternatives)
               if u is not None}
    scope = scope_of([*alternatives, *matched.values()] or trials, r)
    nominal = non_inferiority_claim(name, r, alternatives, PowerView(False, nulls), scope)
    adjusted = non_inferiority_claim(name, r, alternatives, PowerView(True, nulls), scope)
    out = [nominal] if nominal is not None else []
    if nominal is not None and adjusted is not None and changes_reading(nominal, adjusted):
        out.append(adjusted)
    time = f"{name}: at a fraction of the permutation energy test's time per test"
    timed = [t for t in trials if r.method in t.time_ms and "energy_perm" in t.time_ms]
    permutations = _set("B", {t.permutations for t in timed}) if timed else "B unknown"
    time_scope = f"{scope_of(timed or trials, r)}; wall ms per test, {permutations} permutations"
    th, te, k = pooled(trials, r.method, "energy_perm", "time_ms")
    if k:
        ratio = th / te
        out.append(claims.paired_claim(
            time, f"time per test: {r.method} / energy_perm - 1",
            stats.paired_comparison(ratio, np.ones_like(ratio), unit="batches"), "less",
            note=f"median ratio {np.median(ratio):.2f}; units: the batches of {k} trials "
                 "(wall ms per test, one BLAS thread, on the trials' CPUs)",
            scope=time_scope))
    else:
        out.append(claims.missing_claim(time, "paired over batches", "time ratio - 1",
                                        "energy_perm was not run", scope=time_scope))
    return out


def not_run_claims(trials: Sequence[Trial]) -> list[Claim]:
    """The paper's regimes this run did not cover: directional data, real compositional
    data, the paper profile's scale (each decided from the run's trials)."""
    out = []
    if not any(t.family == "vmf" for t in trials):
        out.append(claims.not_run(
            "size, normality and power on directional data (the title's 'Directional Data')",
            "generated von Mises-Fisher directions (data.scenario=vmf, vmf/E), CPU",
            "this run had no directional configuration; the paper space sweeps vmf and "
            "vmf/0.05 to vmf/0.4 (raystudy sweep compositional_two_sample --profile paper)"))
    if not any(t.family == "file" for t in trials):
        out.append(claims.not_run(
            "the test on real compositional data (the abstract's microbiome data; the seed "
            "version also names financial portfolios)",
            "a real count or proportion table (data.scenario=file/E, data.path); the paper's "
            "data sets are not public",
            "this run used generated stand-in data only; run your own table with --set "
            "data.scenario=file/1 --set data.path=/abs/table.tsv (docs/compositional_two_"
            "sample.md, 'Your own data')"))
    Ds, ns = {t.D for t in trials}, {t.n for t in trials}
    replicates = max((t.replicates for t in trials), default=0)
    unequal = any(t.m != t.n for t in trials)
    if (max(Ds, default=0) < PAPER_PROFILE_D or max(ns, default=0) < PAPER_PROFILE_N
            or replicates < PAPER_PROFILE_REPLICATES or not unequal):
        reached = (f"this run: {_set('D', Ds)}, {_set('n', ns)}, "
                   f"{'m != n' if unequal else 'm = n'}, at most {replicates} replicates "
                   "per configuration" if trials else "this run reported no batch")
        out.append(claims.not_run(
            "size, normality and power at the paper profile's scale (the paper's own sizes "
            "are not public)",
            f"generated data at D up to {PAPER_PROFILE_D}, n up to {PAPER_PROFILE_N}, m = "
            f"{PAPER_PROFILE_M_RATIO:g} n, {PAPER_PROFILE_REPLICATES} replicates per "
            "configuration (profiles/paper.yaml, spaces/paper.yaml: 2240 trials, a cluster "
            "job)", reached))
    return out


def all_claims(trials: Sequence[Trial]) -> list[Claim]:
    """Every reading's claims, then the regimes the run did not cover."""
    found = readings(trials)
    several = len({(r.degree, r.distance) for r in found}) > 1
    out: list[Claim] = []
    for r in found:
        mine, name = of_reading(trials, r), r.name(several)
        out += [size_claim(name, r, mine), ks_claim(name, r, mine),
                *power_claims(name, r, mine), *cost_claims(name, r, mine)]
    return out + not_run_claims(trials)


# ----------------------------------------------------------------------------- tables
def methods_of(trials: Sequence[Trial]) -> list[str]:
    return list(dict.fromkeys(m for t in trials for m in t.reject))


def rate_table(trials: Sequence[Trial]) -> Table:
    names = methods_of(trials)
    rows = [[t.scenario, t.n, t.m, t.D, t.degree, f"{t.batches}x{t.reps}",
             *(float(t.reject[m].mean()) if m in t.reject else "-" for m in names)]
            for t in trials]
    return Table("Rejection rate per configuration (size at effect 0, power otherwise)",
                 ["scenario", "n", "m", "D", "L", "batches x reps", *names], rows,
                 note="mean over the batches; every method on the same replicates; "
                      "Monte Carlo s.e. sqrt(p (1 - p) / (batches x reps))")


def size_table(trials: Sequence[Trial]) -> Table:
    """Each method's size at each null: its TOST against alpha and the size gate."""
    rows = []
    for t in (t for t in trials if t.null):
        bound = size_bound(t)
        for method in t.reject:
            result, claim = size_rows(t, method)
            size = float(t.reject[method].mean())
            rows.append([t.label, t.degree, method, size,
                         f"[{result.ci_low:+.3f}, {result.ci_high:+.3f}]",
                         result.p_value, claim.verdict, bound,
                         "yes" if size <= bound else "no"])
    return Table(f"Size at the null configurations (TOST within +-{SIZE_MARGIN:g}; the "
                 "size gate of the power claims)",
                 ["configuration", "L", "method", "size", "size - alpha 90 % CI",
                  "TOST p", "verdict", "gate bound", "holds size"], rows,
                 note="per configuration and method, at its own p (the claim is all-of); "
                      f"gate bound: alpha + {SIZE_GATE_SE:g} s.e. of a rate at alpha over "
                      "the null's replicates, which every power verdict needs both its "
                      "tests to stay under at the nulls of its alternatives")


def power_table(trials: Sequence[Trial]) -> Table:
    """The harmonic tests' nominal and size-adjusted power at each alternative, against
    the permutation energy test and the best log-ratio mean test."""
    nulls = [t for t in trials if t.null]
    rows = []
    for t in (t for t in trials if not t.null):
        means = [m for m in MEAN_TESTS if m in t.reject]
        best = max(means, key=lambda m: t.reject[m].mean()) if means else None
        for method in (m for m in t.reject if m.startswith("harmonic_")):
            power = float(t.reject[method].mean())
            adjusted = size_adjusted(t, _null_of(t, nulls, method), method)
            row: list[Any] = [t.label, t.degree, method, power,
                              float(adjusted.mean()) if adjusted is not None else "-"]
            compared = non_inferiority_rows(t, method)
            if compared is not None:
                result, claim = compared
                row += [float(t.reject["energy_perm"].mean()), result.mean_difference,
                        f"[{result.ci_low:+.3f}, {result.ci_high:+.3f}]", claim.verdict]
            else:
                row += ["-"] * 4
            row += ([best, power - float(t.reject[best].mean())] if best else ["-", "-"])
            rows.append(row)
    return Table("Power against the permutation energy test and the log-ratio mean tests",
                 ["configuration", "L", "method", "power", "size-adjusted", "energy_perm",
                  "difference", "95 % CI", f"within {POWER_MARGIN:g}", "best mean test",
                  "difference"],
                 rows, note="per alternative, over its batches (nominal power; the "
                            "size-adjusted power rejects at the test's own null critical "
                            "p-value, '-' where the run has no null for it); the "
                            "non-inferiority claim is all-of over these rows")


def adjusted_table(trials: Sequence[Trial]) -> Table:
    """Every method's size-adjusted power at each alternative, and its critical p-value."""
    nulls = [t for t in trials if t.null]
    names = methods_of(trials)
    rows = []
    for t in (t for t in trials if not t.null):
        cells: list[Any] = []
        for m in names:
            adjusted = size_adjusted(t, u := _null_of(t, nulls, m), m)
            cells.append("-" if adjusted is None or u is None else
                         f"{adjusted.mean():.3f} (p <= {critical_p(u, m):.4f})")
        null = _null_of(t, nulls)
        rows.append([t.scenario, t.n, t.m, t.D, t.degree, null.scenario if null else "-",
                     *cells])
    return Table("Size-adjusted power per alternative (each test at its own null critical "
                 "p-value)", ["scenario", "n", "m", "D", "L", "null", *names], rows,
                 note="size-adjusted power (the critical p-value at which the test rejects "
                      "alpha of its null's replicates, the p-value CDF interpolated between "
                      f"{len(PVALUE_LEVELS)} levels from {PVALUE_LEVELS[0]:g} to "
                      f"{PVALUE_LEVELS[-1]:g} alpha: a randomized test of size alpha exactly "
                      "on those replicates); '-' where the run has no null or no CDF for it; "
                      "nominal power is in the rejection-rate table")


def null_table(trials: Sequence[Trial]) -> Table:
    from scipy import stats as sps

    rows = []
    for t in (t for t in trials if t.null):
        for method in (m for m in t.reject if m.startswith("harmonic_")):
            ks = t.last.get(f"eval/ks/{method}", math.nan)
            draws = t.batches * t.reps
            rows.append([t.label, t.degree, method, draws,
                         *(t.last.get(f"null/{method}/{k}", math.nan)
                           for k in ("mean", "sd", "skew")), ks,
                         float(sps.kstwo.sf(ks, draws)) if math.isfinite(ks) else math.nan])
    return Table("The studentized statistic at the nulls against N(0, 1)",
                 ["configuration", "L", "method", "statistics", "mean", "sd", "skewness",
                  "KS", "KS p"], rows,
                 note="N(0, 1) has mean 0, sd 1, skewness 0; KS p: Kolmogorov's exact "
                      "distribution for that many draws")


def time_table(trials: Sequence[Trial]) -> Table:
    names = methods_of(trials)
    sizes = sorted({(t.n, t.m, t.D) for t in trials})
    rows = []
    for n, m, D in sizes:
        here = [t for t in trials if (t.n, t.m, t.D) == (n, m, D)]
        rows.append([n, m, D, *(float(np.mean([t.time_ms[k].mean() for t in here
                                               if k in t.time_ms]))
                                if any(k in t.time_ms for t in here) else "-"
                                for k in names)])
    return Table("Time per test (ms)", ["n", "m", "D", *names], rows,
                 note="wall time of each method on a batch over its replicates, one BLAS "
                      "thread, averaged over the trials of that size")


# ----------------------------------------------------------------------------- figures
def _style(method: str) -> dict[str, Any]:
    if method.startswith("harmonic_"):
        return {"lw": 2.4, "marker": "o", "zorder": 3}
    return {"lw": 1.0, "marker": ".", "alpha": 0.8}


def _grid(rows: int, cols: int) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(max(3.6 * cols, 6.5), 2.9 * rows + 1.0), layout="constrained")
    axes = np.asarray(fig.subplots(rows, cols, squeeze=False))
    return fig, axes


def _legend(fig: Figure, axes: np.ndarray) -> None:
    handles, labels = {}, {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
            labels.setdefault(lab, lab)
    fig.legend(list(handles.values()), list(labels), loc="outside lower center", fontsize=8,
               ncol=min(5, len(labels)), frameon=False)


def size_figure(trials: Sequence[Trial], path: Path) -> bool:
    nulls = [t for t in trials if t.null]
    panels = sorted({(t.scenario, t.D) for t in nulls})
    if not panels:
        return False
    fig, axes = _grid(1, len(panels))
    for ax, (scenario, D) in zip(axes.flat, panels, strict=True):
        here = [t for t in nulls if (t.scenario, t.D) == (scenario, D)]
        alpha = here[0].alpha
        ns = sorted({t.n for t in here})
        ax.axhspan(alpha - SIZE_MARGIN, alpha + SIZE_MARGIN, color="0.9", zorder=0)
        ax.axhline(alpha, color="0.5", lw=0.8)
        series = [(method, L) for method in methods_of(here)
                  for L in (sorted({t.degree for t in here}) if method.startswith("harmonic_")
                            else [None])]
        several = len({t.degree for t in here}) > 1
        for i, (method, L) in enumerate(series):
            pts = [(t.n, t.reject[method].mean(), t.batches * t.reps) for t in here
                   if method in t.reject and L in (None, t.degree)]
            pts = sorted({p[0]: p for p in pts}.values())
            x, p, N = (np.array(v, float) for v in zip(*pts, strict=True))
            dodge = 1.04 ** (i - (len(series) - 1) / 2)  # side by side at each n
            ax.errorbar(x * dodge, p, yerr=1.96 * np.sqrt(p * (1 - p) / N), capsize=2,
                        label=f"{method} L={L}" if several and L is not None else method,
                        **_style(method))
        ax.set(xscale="log", xticks=ns, xticklabels=[str(n) for n in ns], xlabel="n",
               ylabel="rejection rate under H0", title=f"{scenario}, D={D}")
        ax.minorticks_off()
    fig.suptitle(f"Size vs n (band: alpha +- {SIZE_MARGIN:g}; bars: 95 % Monte Carlo "
                 "intervals)")
    _legend(fig, axes)
    fig.savefig(path, dpi=110)
    return True


def power_figures(trials: Sequence[Trial], figures_dir: Path) -> list[tuple[str, Path]]:
    nulls = [t for t in trials if t.null]
    alternatives = [t for t in trials if not t.null]
    out = []
    for D in sorted({t.D for t in alternatives}):
        families = sorted({t.family for t in alternatives if t.D == D})
        ns = sorted({t.n for t in alternatives if t.D == D})
        fig, axes = _grid(len(families), len(ns))
        for i, family in enumerate(families):
            for j, n in enumerate(ns):
                ax = axes[i, j]
                here = [t for t in alternatives if (t.family, t.n, t.D) == (family, n, D)]
                start = [u for u in (_null_of(t, nulls) for t in here[:1]) if u is not None]
                for method in methods_of(here):
                    pts = sorted({t.effect: float(t.reject[method].mean())
                                  for t in [*start, *here] if method in t.reject}.items())
                    if pts:
                        ax.plot(*zip(*pts, strict=True), label=method, **_style(method))
                ax.axhline(here[0].alpha if here else 0.05, color="0.5", lw=0.8)
                ax.set(ylim=(-0.02, 1.02), xlabel="effect", ylabel="power",
                       title=f"{family}, n={n}")
        fig.suptitle(f"Power vs effect, D={D} (effect 0: the family's null)")
        _legend(fig, axes)
        path = figures_dir / f"power_D{D}.png"
        fig.savefig(path, dpi=110)
        out.append((f"Power vs effect size, D={D}", path))
    return out


def qq_figure(trials: Sequence[Trial], path: Path) -> bool:
    from scipy import stats as sps

    nulls = [t for t in trials if t.null]
    rows = sorted({(t.scenario, t.D) for t in nulls})
    ns = sorted({t.n for t in nulls})
    if not rows:
        return False
    z = sps.norm.ppf(QQ_LEVELS)
    fig, axes = _grid(len(rows), len(ns))
    for i, (scenario, D) in enumerate(rows):
        for j, n in enumerate(ns):
            ax = axes[i, j]
            ax.plot(z, z, color="0.5", lw=0.8, label="N(0, 1)")
            k = 0
            for t in (t for t in nulls if (t.scenario, t.D, t.n) == (scenario, D, n)):
                for method in (m for m in t.reject if m.startswith("harmonic_")):
                    q = [t.last.get(f"null/{method}/q{p:g}", math.nan) for p in QQ_LEVELS]
                    ks = t.last.get(f"eval/ks/{method}", math.nan)
                    ax.plot(z, q, label=f"{method} L={t.degree}", **_style(method))
                    ax.annotate(f"{method.removeprefix('harmonic_')} L={t.degree}: KS "
                                f"{ks:.3f}", (0.03, 0.92 - 0.09 * k), xycoords="axes fraction",
                                fontsize=8)
                    k += 1
            ax.set(xlabel="N(0, 1) quantile", ylabel="statistic quantile",
                   title=f"{scenario}, D={D}, n={n}")
    fig.suptitle("QQ plots of the studentized statistic under H0")
    _legend(fig, axes)
    fig.savefig(path, dpi=110)
    return True


def time_figure(trials: Sequence[Trial], path: Path) -> bool:
    Ds = sorted({t.D for t in trials})
    if not trials:
        return False
    fig, axes = _grid(1, len(Ds))
    for ax, D in zip(axes.flat, Ds, strict=True):
        here = [t for t in trials if t.D == D]
        ns = sorted({t.n for t in here})
        for method in methods_of(here):
            y = [np.mean([t.time_ms[method].mean() for t in here
                          if t.n == n and method in t.time_ms] or [math.nan]) for n in ns]
            ax.plot(ns, y, label=method, **_style(method))
        ax.set(xscale="log", yscale="log", xticks=ns, xticklabels=[str(n) for n in ns],
               xlabel="n", ylabel="ms per test", title=f"D={D}")
        ax.minorticks_off()
    fig.suptitle("Time per test (one BLAS thread)")
    _legend(fig, axes)
    fig.savefig(path, dpi=110)
    return True


# ----------------------------------------------------------------------------- report
def size_adjusted_summary(trials: Sequence[Trial]) -> dict[str, dict[str, float]]:
    """Configuration -> method -> size-adjusted power, at every alternative where read."""
    nulls = [t for t in trials if t.null]
    out = {}
    for t in (t for t in trials if not t.null):
        read = {m: size_adjusted(t, _null_of(t, nulls, m), m) for m in t.reject}
        out[f"{t.label} L={t.degree}"] = {m: float(v.mean()) for m, v in read.items()
                                          if v is not None}
    return out


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """Claims per reading of the proposed test and the not-run rows, the
    rate/size/null/power/size-adjusted/time tables, and the size, power, QQ and time
    figures (module docstring)."""
    trials = collect(results)
    if not trials:
        return Analysis(notes=["no trial reported a batch yet"],
                        claims=[claims.missing_claim("size, convergence and power of the "
                                                     "harmonic test", "Monte Carlo", "-",
                                                     "no trial reported a batch",
                                                     scope=scope_of([])),
                                *not_run_claims([])])
    figures = []
    if size_figure(trials, figures_dir / "size_vs_n.png"):
        figures.append(("Size vs n per method", figures_dir / "size_vs_n.png"))
    figures += power_figures(trials, figures_dir)
    if qq_figure(trials, figures_dir / "qq.png"):
        figures.append(("QQ plots under H0", figures_dir / "qq.png"))
    if time_figure(trials, figures_dir / "time_per_test.png"):
        figures.append(("Time per test", figures_dir / "time_per_test.png"))
    partial = sorted({r.trial_id for r in results.trials if r.status != "finished"})
    notes = [f"{len(partial)} trial(s) not finished; their reported batches are used"
             ] if partial else []
    summary = {"rates": {f"{t.label} L={t.degree}": {k: float(v.mean())
                                                     for k, v in t.reject.items()}
                         for t in trials},
               "ks": {f"{t.label} L={t.degree}": {k: t.last.get(f"eval/ks/{k}")
                                                  for k in t.reject if k.startswith("harm")}
                      for t in trials if t.null},
               "size_adjusted": size_adjusted_summary(trials)}
    return Analysis(tables=[rate_table(trials), size_table(trials), null_table(trials),
                            power_table(trials), adjusted_table(trials), time_table(trials)],
                    figures=figures, summary=summary, notes=notes, claims=all_claims(trials))
