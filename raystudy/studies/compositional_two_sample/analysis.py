"""The two-sample study's report: claims, tables and figures from the trials' batches.

Each trial reports one row per batch (``mc/batch``); a resumed trial may report a batch
twice, and the last report of each batch is kept. The batch is the unit of every test
here: its rejection rate per method (``batch/reject/METHOD``) and ms per test
(``batch/time_ms/METHOD``), every method on the batch's same replicates. Claims are read
per *reading* of the proposed test (studentization, degree, distance), each with:

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
   log n, the clusters being the sample sizes (3 are needed).
3. **power**: on the same-mean alternatives (concentration, shape, mixture), above each
   log-ratio mean test (Hotelling, James, Cao-Lin-Li), paired over the batches of all
   those configurations, Holm over the three tests.
4. **cost**: non-inferior to the permutation energy test within 5 points at every
   alternative (``stats.non_inferiority`` over its batches; all-of, read like the size
   claim, since a bound on the loss must hold where the loss is, and a mean over
   alternatives would let saturated ones, both tests at power 1, hide it; the pooled mean
   is in the note), and at a fraction of its time per test (the per-batch ratio - 1 < 0,
   paired over every batch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from raystudy import Analysis, Claim, RunResults, Table, claims
from raystudy.algorithms import stats
from raystudy.algorithms.two_sample import SAME_MEAN

QQ_LEVELS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95,
             0.975, 0.99, 0.995)
"""Probabilities of the null quantiles each null trial reports for the QQ plot."""
SIZE_MARGIN = 0.02
POWER_MARGIN = 0.05
MEAN_TESTS = ("hotelling_ilr", "james_ilr", "cao_lin_li")
"""The log-ratio mean tests of the power claim (the Dirichlet LRT tests the model, not
the mean, and is left out)."""
KS_FLOOR = 0.8687
"""E[sup |F_N - Phi|] * sqrt(N) for an exact N(0, 1) sample, large N (Kolmogorov's
distribution's mean, sqrt(pi / 2) log 2)."""


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

    @property
    def null(self) -> bool:
        return self.effect == 0

    @property
    def batches(self) -> int:
        return len(next(iter(self.reject.values())))

    @property
    def label(self) -> str:
        return f"{self.scenario} n={self.n} m={self.m} D={self.D}"


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
        trials.append(Trial(
            record.trial_id, str(c["data.scenario"]), family, float(effect or 0.0), n,
            max(4, round(float(c["data.m_ratio"]) * n)), int(c["data.D"]),
            int(c["harmonic.degree"]), str(c["harmonic.distance"]), float(c["mc.alpha"]),
            int(c["mc.reps"]),
            {k: np.array([r[f"batch/reject/{k}"] for r in ordered], float) for k in names},
            {k: np.array([r[f"batch/time_ms/{k}"] for r in ordered], float) for k in names},
            ordered[-1]))
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
    found = {Reading(m, t.degree, t.distance) for t in trials for m in t.reject
             if m.startswith("harmonic_")}
    return sorted(found, key=lambda r: (r.method, r.degree, r.distance))


def of_reading(trials: Sequence[Trial], r: Reading) -> list[Trial]:
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


# ----------------------------------------------------------------------------- claims
def size_rows(trial: Trial, method: str) -> tuple[stats.PairedComparison, Claim]:
    """TOST of one null trial's per-batch size against alpha, within the margin."""
    result = stats.equivalence(trial.reject[method], [trial.alpha] * trial.batches,
                               SIZE_MARGIN)
    return result, claims.equivalence_claim(f"size within +-{SIZE_MARGIN:g} of alpha at "
                                            f"{trial.label}", "size - alpha", result,
                                            SIZE_MARGIN)


def non_inferiority_rows(trial: Trial, method: str) -> tuple[stats.PairedComparison, Claim]:
    """One alternative's power against the permutation energy test, within the margin."""
    result = stats.non_inferiority(trial.reject[method], trial.reject["energy_perm"],
                                   POWER_MARGIN)
    return result, claims.paired_claim(f"power within {POWER_MARGIN:g} of energy_perm at "
                                       f"{trial.label}", "power difference", result, "greater",
                                       margin=POWER_MARGIN)


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
    statement = f"{name}: size within +-{SIZE_MARGIN:g} of alpha at every null configuration"
    nulls = [t for t in trials if t.null]
    if not nulls:
        return claims.missing_claim(statement, "TOST over batches", "size - alpha",
                                    "no null configuration (effect 0) in this run")
    t, result, note = binding([(t, *size_rows(t, r.method)) for t in nulls])
    return claims.equivalence_claim(statement, f"size - alpha at {t.label} (binding)", result,
                                    SIZE_MARGIN, note=note)


def ks_claim(name: str, r: Reading, trials: Sequence[Trial]) -> Claim:
    statement = f"{name}: the KS distance to N(0, 1) falls with n"
    points = [(math.log(t.n), t.last.get(f"eval/ks/{r.method}", math.nan), t.n,
               t.batches * t.reps) for t in trials if t.null]
    if not points:
        return claims.missing_claim(statement, "clustered slope", "KS per unit log n",
                                    "no null configuration (effect 0) in this run")
    x, y, n, draws = zip(*points, strict=True)
    floor = KS_FLOOR / math.sqrt(min(draws))
    return claims.slope_claim(statement, "KS distance per unit log n",
                              stats.clustered_slope(x, y, n), "less",
                              note=f"clusters: the sample sizes n; an exact N(0, 1) sample "
                                   f"of {min(draws)} draws has KS about {floor:.3f}")


def power_claims(name: str, r: Reading, trials: Sequence[Trial]) -> list[Claim]:
    alternatives = [t for t in trials if not t.null and t.family in SAME_MEAN]
    tests, missing = [], []
    for baseline in MEAN_TESTS:
        statement = f"{name}: more power than {baseline} on the same-mean alternatives"
        effect = f"power: {r.method} - {baseline}"
        h, b, k = pooled(alternatives, r.method, baseline)
        if k:
            tests.append(claims.Test(statement, effect, stats.paired_comparison(h, b),
                                     "greater", note=f"units: the batches of {k} "
                                                     "configurations"))
            continue
        why = ("no same-mean alternative (concentration, shape, mixture) in this run"
               if not alternatives else f"{baseline} was not run on them")
        missing.append(claims.missing_claim(statement, "paired over batches", effect, why))
    family = claims.holm_family(tests, f"{len(tests)} log-ratio mean tests") if tests else []
    return [*family, *missing]


def cost_claims(name: str, r: Reading, trials: Sequence[Trial]) -> list[Claim]:
    power = f"{name}: power within {POWER_MARGIN:g} of the permutation energy test"
    time = f"{name}: at a fraction of the permutation energy test's time per test"
    out = []
    alternatives = [t for t in trials if not t.null and "energy_perm" in t.reject]
    if alternatives:
        t, result, note = binding([(t, *non_inferiority_rows(t, r.method))
                                   for t in alternatives])
        h, e, _ = pooled(alternatives, r.method, "energy_perm")
        mean = stats.non_inferiority(h, e, POWER_MARGIN)
        out.append(claims.paired_claim(
            power, f"power: {r.method} - energy_perm at {t.label} (binding)", result,
            "greater", margin=POWER_MARGIN,
            note=f"non-inferiority margin {POWER_MARGIN:g}; {note}; pooled over every "
                 f"alternative: {mean.mean_difference:+.3f} [{mean.ci_low:+.3f}, "
                 f"{mean.ci_high:+.3f}]"))
    else:
        out.append(claims.missing_claim(power, "non-inferiority over batches",
                                        f"power: {r.method} - energy_perm",
                                        "no alternative with energy_perm in this run"))
    th, te, k = pooled(trials, r.method, "energy_perm", "time_ms")
    if k:
        ratio = th / te
        out.append(claims.paired_claim(
            time, f"time per test: {r.method} / energy_perm - 1",
            stats.paired_comparison(ratio, np.ones_like(ratio)), "less",
            note=f"median ratio {np.median(ratio):.2f}; units: the batches of {k} trials "
                 "(wall ms per test, one BLAS thread, on the trials' CPUs)"))
    else:
        out.append(claims.missing_claim(time, "paired over batches", "time ratio - 1",
                                        "energy_perm was not run"))
    return out


def all_claims(trials: Sequence[Trial]) -> list[Claim]:
    found = readings(trials)
    several = len({(r.degree, r.distance) for r in found}) > 1
    out: list[Claim] = []
    for r in found:
        mine, name = of_reading(trials, r), r.name(several)
        out += [size_claim(name, r, mine), ks_claim(name, r, mine),
                *power_claims(name, r, mine), *cost_claims(name, r, mine)]
    return out


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
    rows = []
    for t in (t for t in trials if t.null):
        for method in t.reject:
            result, claim = size_rows(t, method)
            rows.append([t.label, t.degree, method, float(t.reject[method].mean()),
                         f"[{result.ci_low:+.3f}, {result.ci_high:+.3f}]",
                         result.p_value, claim.verdict])
    return Table(f"Size at the null configurations (TOST within +-{SIZE_MARGIN:g})",
                 ["configuration", "L", "method", "size", "size - alpha 90 % CI",
                  "TOST p", "verdict"], rows,
                 note="per configuration and method, at its own p (the claim is all-of)")


def power_table(trials: Sequence[Trial]) -> Table:
    rows = []
    for t in (t for t in trials if not t.null):
        means = [m for m in MEAN_TESTS if m in t.reject]
        best = max(means, key=lambda m: t.reject[m].mean()) if means else None
        for method in (m for m in t.reject if m.startswith("harmonic_")):
            power = float(t.reject[method].mean())
            row: list[Any] = [t.label, t.degree, method, power]
            if "energy_perm" in t.reject:
                result, claim = non_inferiority_rows(t, method)
                row += [float(t.reject["energy_perm"].mean()), result.mean_difference,
                        f"[{result.ci_low:+.3f}, {result.ci_high:+.3f}]", claim.verdict]
            else:
                row += ["-"] * 4
            row += ([best, power - float(t.reject[best].mean())] if best else ["-", "-"])
            rows.append(row)
    return Table("Power against the permutation energy test and the log-ratio mean tests",
                 ["configuration", "L", "method", "power", "energy_perm", "difference",
                  "95 % CI", f"within {POWER_MARGIN:g}", "best mean test", "difference"],
                 rows, note="per alternative, over its batches; the non-inferiority claim "
                            "is all-of over these rows")


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


def _null_of(t: Trial, nulls: Sequence[Trial]) -> Trial | None:
    """The null trial an alternative's curve starts from: same base distribution and sizes
    (the Dirichlet families share Dir(a 1); shape's null is logistic_normal)."""
    base = {"shape": "logistic_normal", "concentration": "dirichlet", "mixture": "dirichlet",
            "mean_shift": "dirichlet"}.get(t.family, t.family)
    for u in nulls:
        if (u.family, u.n, u.m, u.D, u.degree, u.distance) == (base, t.n, t.m, t.D, t.degree,
                                                               t.distance):
            return u
    return None


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
def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """Claims per reading of the proposed test, the rate/size/null/time tables, and the
    size, power, QQ and time figures (module docstring)."""
    trials = collect(results)
    if not trials:
        return Analysis(notes=["no trial reported a batch yet"],
                        claims=[claims.missing_claim("size, convergence and power of the "
                                                     "harmonic test", "Monte Carlo", "-",
                                                     "no trial reported a batch")])
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
                      for t in trials if t.null}}
    return Analysis(tables=[rate_table(trials), size_table(trials), null_table(trials),
                            power_table(trials), time_table(trials)],
                    figures=figures, summary=summary, notes=notes, claims=all_claims(trials))
