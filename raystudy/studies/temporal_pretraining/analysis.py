"""The temporal study's report: final-checkpoint metrics per schedule, per-year accuracy
over training, and the claims, paired over seeds (a seed fixes the world, the rows, their
within-snapshot order and the init; schedules share them). Effect = sequential - shuffled
at the final checkpoint, at the profile's ``data.hist_share``:

* T1 fresher (``acc_last``, ``freshness``: greater), T2 a recency slope above shuffled's,
  T4 a smaller year error, T5 lower first-year accuracy (forgetting): Holm over the five;
* T3 parity: ``val_loss`` within +-0.02 nats/byte and ``invariant_acc`` within +-0.03,
  ``stats.equivalence`` (TOST, 90 % interval);
* T6 the mechanism: shuffled's recency slope at the largest ``hist_share`` minus at 0,
  ``less`` (read when the run has the ``mechanism`` space).

Calibration: when the mean final-year accuracy of the claim trials does not clear chance by
``CALIBRATION_MARGIN``, the model did not learn the facts and no claim is read.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from raystudy import Analysis, Claim, RunResults, Table, claims
from raystudy.algorithms import stats

CALIBRATION_MARGIN = 0.15
"""Final-year accuracy must clear chance by this much before any claim is read."""
LOSS_MARGIN = 0.02
"""T3: general-text loss equivalence margin (nats per byte), raystudy's choice."""
INVARIANT_MARGIN = 0.03
"""T3: invariant-fact accuracy equivalence margin (3 points), raystudy's choice."""
DIRECTIONAL = (
    ("T1: sequential is more up-to-date (final-year accuracy)", "eval/acc_last", "greater"),
    ("T1: sequential is fresher (undated probes choose the latest value)", "eval/freshness",
     "greater"),
    ("T2: sequential's recency slope is above shuffled's (shuffled peaks on older data)",
     "eval/recency_slope", "greater"),
    ("T4: sequential is more temporally precise (smaller year error)", "eval/year_error",
     "less"),
    ("T5: sequential forgets older history (lower first-year accuracy)", "eval/acc_first",
     "less"),
)
Runs = dict[tuple[str, float], dict[int, dict[str, Any]]]


def collect(results: RunResults) -> Runs:
    """(schedule, hist_share) -> seed -> last report (with ``_history``)."""
    out: Runs = defaultdict(dict)
    for t in results.trials:
        if not t.history or not t.config or "eval/acc_last" not in t.history[-1]:
            continue
        k = (str(t.config["train.schedule"]), float(t.config.get("data.hist_share", 0.2)))
        out[k][int(t.config["train.seed"])] = {**t.history[-1], "_history": t.history}
    return out


def _pair(runs: Runs, a: tuple[str, float], b: tuple[str, float], m: str
          ) -> tuple[list[float], list[float]]:
    seeds = sorted(set(runs.get(a, {})) & set(runs.get(b, {})))
    return [runs[a][s][m] for s in seeds], [runs[b][s][m] for s in seeds]


def claim_rows(runs: Runs, h: float) -> tuple[list[Claim], list[str]]:
    seq, shu = ("sequential", h), ("shuffled", h)
    statements = [d[0] for d in DIRECTIONAL] + [
        f"T3: sequential matches shuffled on general text (val loss within +-{LOSS_MARGIN})",
        f"T3: sequential matches shuffled on invariant facts (within +-{INVARIANT_MARGIN})",
        "T6: shuffled's recency slope falls as factual repetition (hist_share) rises"]
    x, _ = _pair(runs, seq, shu, "eval/acc_last")
    if not x:
        return [claims.missing_claim(s, "paired over seeds", "sequential - shuffled",
                                     f"sequential or shuffled not run at hist_share={h:g}")
                for s in statements], []
    finals = [runs[k][s]["eval/acc_last"] for k in (seq, shu) for s in runs[k]]
    chance = float(np.mean([runs[k][s]["eval/chance"] for k in (seq, shu) for s in runs[k]]))
    mean = float(np.mean(finals))
    calib = (f"calibration: mean final-year accuracy {mean:.3f} vs chance {chance:.3f} "
             f"(needs + {CALIBRATION_MARGIN:g})")
    if mean < chance + CALIBRATION_MARGIN:
        why = f"the model did not learn the facts ({calib}); no claim is read"
        return [claims.missing_claim(s, "paired over seeds", "sequential - shuffled", why)
                for s in statements], [why]
    tests = []
    for statement, m, direction in DIRECTIONAL:
        a, b = _pair(runs, seq, shu, m)
        tests.append(claims.Test(statement, f"{m}: sequential - shuffled",
                                 stats.paired_comparison(a, b), direction))
    rows = claims.holm_family(tests, f"{len(tests)} directional claims")
    for statement, m, margin in ((statements[5], "eval/val_loss", LOSS_MARGIN),
                                 (statements[6], "eval/invariant_acc", INVARIANT_MARGIN)):
        a, b = _pair(runs, seq, shu, m)
        rows.append(claims.equivalence_claim(statement, f"{m}: sequential - shuffled",
                                             stats.equivalence(a, b, margin), margin))
    shares = sorted(k[1] for k in runs if k[0] == "shuffled")
    if len(shares) >= 2 and shares[0] == 0.0:
        a, b = _pair(runs, ("shuffled", shares[-1]), ("shuffled", 0.0), "eval/recency_slope")
        rows.append(claims.paired_claim(statements[7], f"shuffled recency slope: hist_share="
                                        f"{shares[-1]:g} - 0", stats.paired_comparison(a, b),
                                        "less", note="the repetition is built into the "
                                        "generator: this tests its effect, not that real "
                                        "crawls repeat old facts"))
    else:
        rows.append(claims.missing_claim(statements[7], "paired over seeds", "slope(h) - "
                                         "slope(0)", "shuffled not run at hist_share 0 and "
                                         "above (space mechanism)"))
    return rows, [calib + ": passed"]


def final_table(runs: Runs) -> Table:
    cols = ["eval/acc_last", "eval/acc_first", "eval/acc_mean", "eval/recency_slope",
            "eval/peak_year", "eval/year_error", "eval/freshness", "eval/forgetting",
            "eval/val_loss", "eval/invariant_acc", "eval/gen_f1_last"]
    rows = []
    for k in sorted(runs):
        r = list(runs[k].values())
        ci = stats.bootstrap_mean_ci([x["eval/acc_last"] for x in r]) if len(r) > 1 \
            else (np.nan, np.nan)
        rows.append([k[0], k[1], len(r), f"[{ci[0]:.3f}, {ci[1]:.3f}]",
                     *[float(np.mean([x.get(c, np.nan) for x in r])) for c in cols]])
    return Table("Final checkpoint per schedule (means over seeds)",
                 ["schedule", "hist_share", "seeds", "acc_last 95 % CI",
                  *[c.removeprefix("eval/") for c in cols]], rows,
                 note="accuracy: dated cloze, character normalisation, 4 choices (chance "
                      "~0.25); controls (reverse, replay, shuffled_upto) carry no claim")


def years_of(report: dict[str, Any]) -> list[int]:
    return sorted(int(k.rsplit("_", 1)[1]) for k in report
                  if k.startswith("eval/acc_") and k.rsplit("_", 1)[1].isdigit())


def per_year_table(runs: Runs) -> Table:
    years = years_of(next(iter(next(iter(runs.values())).values())))
    rows = [[k[0], k[1], *[float(np.mean([x[f"eval/acc_{y}"] for x in runs[k].values()]))
                           for y in years]] for k in sorted(runs)]
    return Table("Final per-year accuracy (the question's year)", ["schedule", "hist_share",
                 *map(str, years)], rows)


def accuracy_matrix(runs: Runs, k: tuple[str, float]
                    ) -> tuple[list[int], list[int], np.ndarray, float]:
    """A schedule's accuracy per question year (columns) at each yearly checkpoint (rows,
    the years trained through), means over seeds; and chance."""
    hist = [[r for r in v["_history"] if "eval/acc_last" in r] for v in runs[k].values()]
    n = min(len(hh) for hh in hist)
    years = years_of(hist[0][n - 1])
    matrix = np.array([[np.mean([hh[i][f"eval/acc_{y}"] for hh in hist]) for y in years]
                       for i in range(n)])
    return ([int(hist[0][i]["train/year"]) for i in range(n)], years, matrix,
            float(hist[0][n - 1]["eval/chance"]))


def forgetting_tables(runs: Runs, h: float) -> list[Table]:
    """The accuracy matrix of each schedule of the pair; a column falling down the rows is
    forgetting."""
    tables = []
    for k in (("sequential", h), ("shuffled", h)):
        if k not in runs:
            continue
        trained, years, matrix, _ = accuracy_matrix(runs, k)
        rows = [[t, *map(float, row)] for t, row in zip(trained, matrix, strict=True)]
        tables.append(Table(f"Forgetting matrix: {k[0]} (hist_share {k[1]:g}), accuracy per "
                            "question year after each year of training", [
                                "trained through", *map(str, years)], rows,
                            note=f"means over {len(runs[k])} seeds; eval/forgetting = the "
                                 "mean over years of (best accuracy from the year's own "
                                 "checkpoint on) - (final accuracy)"))
    return tables


def figure(runs: Runs, h: float, figures_dir: Path) -> list[tuple[str, Path]]:
    schedules = [k for k in (("sequential", h), ("shuffled", h)) if k in runs]
    if not schedules:
        return []
    fig = Figure(figsize=(4.6 * len(schedules), 3.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(schedules), sharey=True))
    for ax, k in zip(axes, schedules, strict=True):
        trained, years, matrix, chance = accuracy_matrix(runs, k)
        for j, y in enumerate(years):
            ax.plot(trained, matrix[:, j], "o-", ms=3, label=str(y))
        ax.axhline(chance, color="grey", lw=0.8, ls=":")
        ax.set(title=f"{k[0]} (hist_share {k[1]:g})", xlabel="trained through year",
               ylabel="dated cloze accuracy")
    axes[0].legend(title="question year", fontsize=6, title_fontsize=7, ncol=2, loc="upper left")
    path = figures_dir / "per_year_accuracy.png"
    fig.savefig(path, dpi=110)
    return [("Per-year accuracy over training (mean over seeds)", path)]


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    runs = collect(results)
    if not runs:
        return Analysis(notes=["no trial reported"], claims=[claims.missing_claim(
            "sequential vs shuffled pretraining", "paired over seeds", "-", "no trial")])
    pairs = sorted(k[1] for k in runs if k[0] == "sequential" and ("shuffled", k[1]) in runs)
    h = 0.2 if 0.2 in pairs else (pairs[0] if pairs else 0.2)
    rows, notes = claim_rows(runs, h)
    summary = {f"{k[0]} h={k[1]:g}": float(np.mean([x["eval/acc_last"] for x in v.values()]))
               for k, v in runs.items()}
    return Analysis(tables=[final_table(runs), per_year_table(runs),
                            *forgetting_tables(runs, h)],
                    figures=figure(runs, h, figures_dir), summary={"acc_last": summary},
                    claims=rows, notes=[*notes, "a generated world: the claims test the "
                                        "effect of order on facts built in, not Common Crawl"])
