"""The SNN study's report: accuracy per dataset x T x neuron in each evaluation mode, and
the claims, paired over seeds (the unit), Holm within each family:

* U-C1 (soft, the authors' protocol) and U-C1h (hard spikes: the network run as an SNN):
  at T = 1, UltraLIF - SG-LIF, UltraPLIF - SG-PLIF, UltraDLIF - SG-LIF, UltraDPLIF -
  SG-PLIF, ``greater``, Holm over pairs x datasets;
* U-C2 (reproduction against the authors' own smooth baselines): UltraLIF, UltraDLIF -
  soft_lif; UltraPLIF, UltraDPLIF - soft_plif; UltraPLIF, UltraDLIF - DSpike;
* U-C3: gain(T = 1) > 0 and gain(T = 1) - gain(T = 5) > 0 for the U-C1 pairs (both
  must hold: an intersection-union test);
* U-C4: UltraLIF - SigmaLIF at T = 1 (is it log-sum-exp or the learnable scale?);
* sparsity and depth: read when the run has them, else ``missing_claim``;
* the ablation table: every (eps learned/fixed, theta, UltraDLIF form) variant apart, mean
  and interval over seeds; the claims read the library defaults' variant.

Accuracy is ``eval/acc`` (test at the best-validation epoch); ``eval/acc_best_test`` (the
authors' best-test-epoch figure) is tabulated, labelled, and never used in a claim.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from raystudy import Analysis, Claim, RunResults, Table, claims
from raystudy.algorithms import stats

PAIRS = (("ultralif", "sg_lif"), ("ultraplif", "sg_plif"), ("ultradlif", "sg_lif"),
         ("ultradplif", "sg_plif"))
"""Each Ultra neuron against its surrogate-gradient counterpart (learnable tau with SG-PLIF)."""
AUTHORS = (("ultralif", "soft_lif"), ("ultradlif", "soft_lif"), ("ultraplif", "soft_plif"),
           ("ultradplif", "soft_plif"), ("ultraplif", "dspike"), ("ultradlif", "dspike"))
"""Against the authors' own smooth baselines (LIF, PLIF, DSpike): the reproduction."""
SPARSITY_MARGIN = 0.005
"""Accuracy non-inferiority margin of the sparsity claim (0.5 points)."""


LSE_OR_EPS = ("ultralif", "ultraplif", "ultradlif", "ultradplif", "sigmalif")
"""The neurons with a learnable eps and an Ultra threshold (neuron.learn_eps/threshold)."""
DEFAULT_VARIANT = ("learned", "0", "library")
"""(eps, theta, UltraDLIF form) of the library defaults: the variant the claims read."""

Runs = dict[tuple[Any, ...], dict[int, dict[str, float]]]


def key(c: dict[str, Any]) -> tuple[str, int, int, float]:
    """(dataset, T, layers, lambda); the conv network's trials are their own dataset row
    (``digits conv``), so every table and claim family reads them apart from the fc's."""
    data = str(c["data.name"])
    if c.get("train.network", "fc") == "conv":
        data += " conv"
    return (data, int(c["data.timesteps"]), int(c["train.layers"]),
            float(c["train.sparsity_lambda"]))


def variant(c: dict[str, Any]) -> tuple[str, str, str]:
    """(eps learned|fixed, theta, dlif form) of a trial; ``-`` where the neuron has no such
    knob (so the ablation's ultralif x dlif_form trials, identical, share one cell)."""
    name = str(c["neuron.name"])
    uses = name in LSE_OR_EPS
    eps = ("learned" if c.get("neuron.learn_eps", True) else "fixed") if uses else "-"
    theta = f"{float(c.get('neuron.threshold', 0.0)):g}" if uses else "-"
    form = str(c.get("neuron.dlif_form", "library")) if name == "ultradlif" else "-"
    return eps, theta, form


def is_default(v: tuple[str, str, str]) -> bool:
    return all(x in ("-", d) for x, d in zip(v, DEFAULT_VARIANT, strict=True))


def collect(results: RunResults) -> Runs:
    """(dataset, T, layers, lambda, neuron, eps, theta, dlif form) -> seed -> last report."""
    out: Runs = defaultdict(dict)
    for t in results.trials:
        if not t.history or not t.config or "eval/acc" not in t.history[-1]:
            continue
        cell = (*key(t.config), str(t.config["neuron.name"]), *variant(t.config))
        out[cell][int(t.config["train.seed"])] = \
            {**t.history[-1], "_history": t.history}  # type: ignore[dict-item]
    return out


def main_variants(cells: Runs) -> Runs:
    """(dataset, T, layers, lambda, neuron) -> seed -> report: per neuron cell the library
    defaults' variant, or the only variant run (a whole sweep under --set)."""
    by_base: dict[tuple[Any, ...], list[tuple[Any, ...]]] = defaultdict(list)
    for k in cells:
        by_base[k[:5]].append(k)
    out: Runs = {}
    for base, ks in by_base.items():
        chosen = [k for k in ks if is_default(k[5:])] or (ks if len(ks) == 1 else [])
        if chosen:
            out[base] = cells[chosen[0]]
    return out


def paired(runs: Runs, a: tuple[Any, ...],
           b: tuple[Any, ...], metric_a: str, metric_b: str) -> tuple[list[float], list[float]]:
    seeds = sorted(set(runs.get(a, {})) & set(runs.get(b, {})))
    return ([runs[a][s][metric_a] for s in seeds], [runs[b][s][metric_b] for s in seeds])


def family(runs: Runs, label: str,
           pairs: tuple[tuple[str, str], ...], metric: str, base_metric: str,
           T: int = 1) -> list[Claim]:
    datasets = sorted({k[0] for k in runs})
    tests, missing = [], []
    for ds in datasets:
        for m, b in pairs:
            statement = f"{label}: {m} beats {b} at T={T} on {ds}"
            effect = f"{metric}: {m} - {b}"
            x, y = paired(runs, (ds, T, 1, 0.0, m), (ds, T, 1, 0.0, b), metric, base_metric)
            if x:
                tests.append(claims.Test(statement, effect, stats.paired_comparison(x, y),
                                         "greater"))
            else:
                missing.append(claims.missing_claim(statement, "paired over seeds", effect,
                                                    f"{m} or {b} not run at T={T} on {ds}"))
    return [*(claims.holm_family(tests, f"{len(tests)} pairs x datasets") if tests else []),
            *missing]


def gain_family(runs: Runs) -> list[Claim]:
    """U-C3, "most pronounced at T = 1", as the conjunction it states: the gain at T = 1 is
    positive AND larger than at T = 5. An intersection-union test: its p is the larger of
    the two paired tests' (Holm over the family); supported only when both are, contradicted
    when either is (a negative gain at T = 1 is no gain, however it compares with T = 5)."""
    rows, missing = [], []
    for ds in sorted({k[0] for k in runs}):
        for m, b in PAIRS:
            statement = (f"U-C3: the gain of {m} over {b} is positive at T=1 and larger than "
                         f"at T=5 on {ds}")
            effect = f"[{m} - {b}](T=1) - [{m} - {b}](T=5)"
            cells = [(ds, T, 1, 0.0, n) for T in (1, 5) for n in (m, b)]
            seeds = sorted(set.intersection(*(set(runs.get(c, {})) for c in cells)))
            if not seeds:
                missing.append(claims.missing_claim(statement, "paired over seeds", effect,
                                                    "a cell of T in {1, 5} is missing"))
                continue
            a1 = [runs[cells[0]][s]["eval/acc"] for s in seeds]
            b1 = [runs[cells[1]][s]["eval/acc"] for s in seeds]
            g1 = [x - y for x, y in zip(a1, b1, strict=True)]
            g5 = [runs[cells[2]][s]["eval/acc"] - runs[cells[3]][s]["eval/acc"] for s in seeds]
            rows.append((statement, effect, stats.paired_comparison(g1, g5),
                         stats.paired_comparison(a1, b1)))
    adjusted: Any = stats.holm([max(d.p_value, g.p_value) for _, _, d, g in rows]) if rows else []
    out = []
    for (statement, effect, diff, gain), p in zip(rows, adjusted, strict=True):
        parts = [stats.verdict(r.ci_low, r.ci_high, "greater", r.n, float(p))
                 for r in (diff, gain)]
        verdict = (stats.SUPPORTED if all(v == stats.SUPPORTED for v in parts) else
                   stats.CONTRADICTED if stats.CONTRADICTED in parts else stats.INCONCLUSIVE)
        out.append(Claim(statement, f"{diff.test}; intersection-union with the gain at T=1 "
                         f"(p = the larger of the two); Holm-adjusted p over {len(rows)} "
                         "pairs x datasets", effect, diff.mean_difference, diff.ci_low,
                         diff.ci_high, diff.n, verdict, p_value=float(p),
                         note=f"gain at T=1: {gain.mean_difference:.3g} [{gain.ci_low:.3g}, "
                              f"{gain.ci_high:.3g}] ({parts[1]}); difference: {parts[0]}"))
    return [*out, *missing]


def sparsity_claims(runs: Runs) -> list[Claim]:
    cells = [k for k in runs if k[3] > 0 and k[4] == "ultraplif"]
    statement = ("U-C5: the sparsity penalty cuts UltraPLIF's spike rate with accuracy "
                 f"non-inferior within {SPARSITY_MARGIN * 100:g} points")
    if not cells:
        return [claims.missing_claim(statement, "paired over seeds", "rate, accuracy",
                                     "no trial with train.sparsity_lambda > 0 (space "
                                     "sparsity)")]
    out = []
    for k in sorted(cells):
        base = (k[0], k[1], k[2], 0.0, "ultraplif")
        r1, r0 = paired(runs, k, base, "eval/spike_rate_soft", "eval/spike_rate_soft")
        a1, a0 = paired(runs, k, base, "eval/acc", "eval/acc")
        where = f"{k[0]} T={k[1]} lambda={k[3]:g}"
        out.append(claims.paired_claim(f"{statement}: rate at {where}", "spike rate: "
                                       "lambda - 0", stats.paired_comparison(r1, r0), "less"))
        out.append(claims.paired_claim(f"{statement}: accuracy at {where}", "acc: lambda - 0",
                                       stats.non_inferiority(a1, a0, SPARSITY_MARGIN),
                                       "greater", margin=SPARSITY_MARGIN))
    return out


def depth_claims(runs: Runs) -> list[Claim]:
    statement = "U-C6: UltraDLIF loses less accuracy than SG-LIF from 1 to 2 layers at T=1"
    out = []
    for ds in sorted({k[0] for k in runs if k[2] == 2}):
        cells = [(ds, 1, L, 0.0, n) for n in ("ultradlif", "sg_lif") for L in (1, 2)]
        seeds = sorted(set.intersection(*(set(runs.get(c, {})) for c in cells)))
        if not seeds:
            continue
        u = [runs[cells[0]][s]["eval/acc"] - runs[cells[1]][s]["eval/acc"] for s in seeds]
        g = [runs[cells[2]][s]["eval/acc"] - runs[cells[3]][s]["eval/acc"] for s in seeds]
        note = ("temporal_order caps every T=1 network at 50 %: no drop to compare"
                if ds == "temporal_order" else "")
        out.append(claims.paired_claim(f"{statement} on {ds}", "drop(SG-LIF) - drop(UltraDLIF)",
                                       stats.paired_comparison(g, u), "greater", note=note))
    return out or [claims.missing_claim(statement, "paired over seeds", "drop difference",
                                        "no 2-layer trials (space depth)")]


def accuracy_table(runs: Runs) -> Table:
    rows = []
    for k in sorted(runs):
        r = list(runs[k].values())

        def mean(m: str, r: list[dict[str, float]] = r) -> float:
            return float(np.mean([x[m] for x in r]))
        ci = stats.bootstrap_mean_ci([x["eval/acc"] for x in r]) if len(r) > 1 else (np.nan,) * 2
        rows.append([k[0], k[1], k[2], k[3], k[4], len(r), mean("eval/acc"),
                     f"[{ci[0]:.3f}, {ci[1]:.3f}]", mean("eval/acc_hard"),
                     mean("eval/acc_tropical"), mean("eval/acc_best_test"),
                     mean("eval/spike_rate_soft"), mean("eval/binary_fraction"),
                     mean("train/eps") if "train/eps" in r[0] else "-"])
    return Table("Test accuracy per dataset x T x neuron (epoch chosen on validation)",
                 ["data", "T", "layers", "lambda", "neuron", "seeds", "acc soft", "95 % CI",
                  "acc hard", "acc tropical", "best-test epoch (authors', not a claim)",
                  "spike rate", "near-binary share", "eps"], rows,
                 note="hard/tropical: Heaviside spikes (tropical: max in place of LSE), each "
                      "mode's epoch chosen on its own validation accuracy")


def ablation_table(cells: Runs) -> Table | None:
    """Every variant of a neuron cell run in more than one variant (space ablation): mean
    and 95 % bootstrap interval over seeds, soft and hard."""
    bases: dict[tuple[Any, ...], int] = defaultdict(int)
    for k in cells:
        bases[k[:5]] += 1
    rows = []
    for k in sorted(c for c in cells if bases[c[:5]] > 1):
        r = list(cells[k].values())
        row: list[Any] = [*k[:5], k[5], k[6], k[7], len(r)]
        for m in ("eval/acc", "eval/acc_hard"):
            v = [x[m] for x in r]
            ci = stats.bootstrap_mean_ci(v) if len(v) > 1 else (np.nan,) * 2
            row += [float(np.mean(v)), f"[{ci[0]:.3f}, {ci[1]:.3f}]"]
        row.append(float(np.mean([x["train/eps"] for x in r])) if "train/eps" in r[0] else "-")
        rows.append(row)
    if not rows:
        return None
    return Table("Ablation: eps learned vs fixed, threshold, UltraDLIF form (space ablation)",
                 ["data", "T", "layers", "lambda", "neuron", "eps", "theta", "dlif form",
                  "seeds", "acc soft", "95 % CI", "acc hard", "95 % CI (hard)", "final eps"],
                 rows, note="epoch chosen on validation; '-': the neuron has no such knob; "
                            "the claims read the library defaults (eps learned, theta 0, "
                            "library form)")


def figures(runs: Runs,
            figures_dir: Path) -> list[tuple[str, Path]]:
    out = []
    datasets = sorted({k[0] for k in runs})
    fig = Figure(figsize=(5 * len(datasets), 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(datasets)))
    for ax, ds in zip(axes, datasets, strict=True):
        for n in sorted({k[4] for k in runs if k[0] == ds}):
            pts = sorted((k[1], np.mean([x["eval/acc"] for x in v.values()]))
                         for k, v in runs.items() if k[0] == ds and k[4] == n and k[2] == 1
                         and k[3] == 0)
            if pts:
                ax.plot(*zip(*pts, strict=True), "o-", label=n)
        ax.set(title=ds, xlabel="T", ylabel="test accuracy (soft)")
    axes[0].legend(fontsize=7)
    fig.savefig(figures_dir / "acc_vs_T.png", dpi=110)
    out.append(("Accuracy vs T", figures_dir / "acc_vs_T.png"))
    fig = Figure(figsize=(5, 3.6), layout="constrained")
    ax = fig.subplots()
    for k, v in sorted(runs.items()):
        h: list[dict[str, float]] = v[min(v)]["_history"]  # type: ignore[assignment]
        pts_eps = [(r["train/epoch"], r["train/eps"]) for r in h if "train/eps" in r]
        if pts_eps and k[2] == 1 and k[3] == 0:
            ax.plot(*zip(*pts_eps, strict=True), label=f"{k[4]} {k[0]} T={k[1]}", lw=1)
    ax.set(xlabel="epoch", ylabel="eps (first seed)")
    if ax.lines:
        ax.legend(fontsize=5)
    fig.savefig(figures_dir / "eps.png", dpi=110)
    out.append(("eps over training", figures_dir / "eps.png"))
    return out


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    cells = collect(results)
    runs = main_variants(cells)
    if not runs:
        return Analysis(notes=["no trial reported"], claims=[claims.missing_claim(
            "UltraLIF vs surrogate-gradient LIF", "paired over seeds", "-", "no trial")])
    claim_rows = [*family(runs, "U-C1 soft", PAIRS, "eval/acc", "eval/acc"),
                  *family(runs, "U-C1h hard spikes", PAIRS, "eval/acc_hard", "eval/acc_hard"),
                  *family(runs, "U-C2 vs the authors' baselines", AUTHORS, "eval/acc", "eval/acc"),
                  *gain_family(runs),
                  *family(runs, "U-C4 LSE vs SigmaLIF", (("ultralif", "sigmalif"),),
                          "eval/acc", "eval/acc"),
                  *sparsity_claims(runs), *depth_claims(runs)]
    summary = {f"{k[0]} T={k[1]} L={k[2]} lambda={k[3]:g} {k[4]}":
               float(np.mean([x["eval/acc"] for x in v.values()])) for k, v in runs.items()}
    ablation = ablation_table(cells)
    tables = [accuracy_table(runs), *([ablation] if ablation else [])]
    return Analysis(tables=tables, figures=figures(runs, figures_dir),
                    summary={"acc": summary}, claims=claim_rows,
                    notes=["temporal_order: counts (T = 1) cannot beat 50 % (pairs differ "
                           "only in order)"])
