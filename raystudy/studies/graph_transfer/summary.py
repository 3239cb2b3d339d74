"""The study's report from runs alone: tables (plain dicts), figures, notes and a summary.

:func:`build` takes the runs indexed by (protocol, dataset, backbone, mechanism, seed)
(:func:`.gains.index`) and writes the figures into a folder. Tables are dicts with
``title``, ``columns``, ``rows`` and ``note``, so a caller can wrap them in its own
table type; ``fits`` holds the homophily slopes of the headline rows
(:class:`~raystudy.algorithms.stats.ClusteredSlope`) and ``snr_fit`` the LP->NC gain's
slope on feature SNR (None unless the run varies it), for the caller's claims. Robust to
missing cells: a cell without its baseline, a failed trial or a missing seed just leaves
a gap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from raystudy.algorithms.graph_transfer import gains as G
from raystudy.algorithms.graph_transfer.cts import CTS_LABEL
from raystudy.algorithms.graph_transfer.models import BACKBONES
from raystudy.algorithms.graph_transfer.stats import STATISTICS
from raystudy.algorithms.stats import ClusteredSlope
from raystudy.studies.graph_transfer import figures

FREE, LEAKY = "leakage_free", "randomlinksplit"
HEADLINE = ("warm_nc_lp", "warm_lp_nc")


def _pm(mean: float, std: float) -> str:
    return "-" if not math.isfinite(mean) else f"{mean:+.3f} ± {std:.3f}"


def _table(title: str, columns: list[str], rows: list[list[Any]], note: str = "") -> dict:
    return {"title": title, "columns": columns, "rows": rows, "note": note}


def _mean_metric(runs, protocol, dataset, backbone, mechanism, metric) -> float:
    return G.mean_std(m.get(metric, math.nan) for (p, d, b, mech, _), m in runs.items()
                      if (p, d, b, mech) == (protocol, dataset, backbone, mechanism))[0]


def build(runs: Mapping[G.Key, Mapping[str, float]], figures_dir: Path) -> dict[str, Any]:
    """Tables, figures, notes and summary of a sweep (see the module docstring)."""
    if not runs:
        return {"tables": [], "figures": [], "notes": ["no finished trials yet"], "summary": {},
                "fits": {}, "snr_fit": None}
    stats = G.dataset_statistics(runs)
    homophily = {d: s.get("edge_homophily", math.nan) for d, s in stats.items()}
    datasets = sorted({k[1] for k in runs}, key=lambda d: (homophily.get(d, math.inf), d))
    backbones = [b for b in BACKBONES if any(k[2] == b for k in runs)]
    free = G.paired_gains(runs, FREE)
    summary = {k: G.mean_std(v.values()) for k, v in free.items()}
    rows = [label for label, _, _ in G.transfer_rows() if any(k[2] == label for k in free)]
    tables, figs, notes = [], [], []
    out: dict[str, Any] = {"statistics": stats}

    tables.append(_table(
        "Graph statistics (training graph and labels of each seed's leakage-free split)",
        ["dataset", *STATISTICS],
        [[d, *(stats.get(d, {}).get(s, math.nan) for s in STATISTICS)] for d in datasets]))

    tables.append(_table(
        "Transfer gain over the single-task baseline (leakage-free), mean ± std over seeds",
        ["backbone", "mechanism:target", *datasets],
        [[b, r, *(_pm(*summary.get((d, b, r), (math.nan, math.nan, 0))[:2]) for d in datasets)]
         for b in backbones for r in rows],
        "gain = target test metric minus the baseline's of the same seed (NC accuracy, "
        "LP ROC-AUC); joint rows name the task"))
    out["gains"] = {f"{d}|{b}|{r}": {"mean": v[0], "std": v[1], "seeds": v[2]}
                    for (d, b, r), v in summary.items()}
    if rows:
        figs.append(("Transfer gain over the single-task baseline (leakage-free)",
                     figures.plot_heatmaps(summary, datasets, backbones, rows,
                                           figures_dir / "gain_heatmaps.png",
                                           "gain over single-task baseline (mean ± std over "
                                           "seeds); columns by edge homophily")))

    # Trend with homophily, and the statistics-based predictor.
    trend_rows, trends, fits = [], {}, {}
    for row in HEADLINE:
        fits[row] = G.homophily_fit(free, stats, row)
        trends[row] = G.homophily_trend(free, stats, row)
        for backbone in [*backbones, None]:
            t = trends[row] if backbone is None else G.homophily_trend(free, stats, row, backbone)
            trend_rows.append([row, backbone or "pooled", t["slope"], t["low"], t["high"],
                               t["p"], t["n"], t["runs"], G.verdict(t, row)])
    tables.append(_table("Gain vs edge homophily (OLS over dataset means)",
                         ["mechanism", "backbone", "slope", "95% low", "95% high", "p",
                          "datasets", "runs", "reading"], trend_rows,
                         "each dataset's seeds (and, pooled, backbones) averaged into one "
                         "point; t interval on datasets - 2 df"))
    notes.append(G.verdict(trends["warm_nc_lp"], "NC->LP (warm start)"))
    notes.append(G.verdict(trends["warm_lp_nc"], "LP->NC (warm start)"))
    out["homophily_trend"] = trends
    out["verdict_nc_to_lp"] = notes[0]
    for row, what in zip(HEADLINE, ("NC->LP", "LP->NC"), strict=True):
        by_dataset = [(homophily.get(d, math.nan), G.mean_std(
            v for b in backbones for v in free.get((d, b, row), {}).values())[0])
            for d in datasets]
        if any(math.isfinite(g) for _, g in by_dataset):
            notes.append(f"{what} warm-start gain by edge homophily (mean over backbones and "
                         "seeds): " + ", ".join(f"h={h:.2f}: {g:+.3f}" for h, g in by_dataset))

    snr_fit = _snr_part(runs, free, backbones, tables, notes, out)

    rec_rows, lodo_rows, predictions, out["recommendation"] = [], [], {}, {}
    for backbone in backbones:
        for task in ("lp", "nc"):
            result = G.recommendations(free, stats, backbone, task)
            out["recommendation"][f"{backbone}|{task}"] = result
            lodo = result["lodo"]
            for d in datasets:
                if d not in result["in_sample"]:
                    continue
                fit = result["in_sample"][d]
                held = lodo["datasets"].get(d, {})
                rec_rows.append([d, backbone, task.upper(), fit["recommended"],
                                 fit["observed_best"], held.get("recommended", "-"),
                                 held.get("recommended") == held.get("observed_best")
                                 if held else "-"])
            lodo_rows.append([backbone, task.upper(), lodo["accuracy"],
                              lodo["yardstick_accuracy"], lodo["mean_regret"], lodo["n"]])
            for row in HEADLINE:
                if row.endswith(task):
                    predictions[(backbone, row)] = {
                        d: (v["predicted"].get(row, math.nan),
                            lodo["datasets"].get(d, {}).get("predicted", {}).get(row, math.nan))
                        for d, v in result["in_sample"].items()}
    tables.append(_table(
        "Recommended mechanism per dataset (ridge on the graph statistics)",
        ["dataset", "backbone", "target", "recommended (fit on all)", "observed best",
         "recommended (LODO)", "LODO correct"], rec_rows,
        "single-task = no predicted (or observed) gain above 0"))
    tables.append(_table(
        "Leave-one-dataset-out accuracy of the recommendation",
        ["backbone", "target", "LODO accuracy", "yardstick accuracy", "mean regret", "datasets"],
        lodo_rows, "yardstick: always the mechanism best on average over the other datasets; "
        "regret: observed gain of the observed best minus that of the recommendation"))
    if any(r in rows for r in HEADLINE):
        figs.append(("Gain vs homophily with the fitted predictor",
                     figures.plot_gain_vs_homophily(summary, homophily, backbones,
                                                    [r for r in HEADLINE if r in rows],
                                                    predictions, trends,
                                                    figures_dir / "gain_vs_homophily.png")))

    cts = {k: G.mean_std(v.values()) for k, v in G.cts_by_seed(runs, FREE).items()}
    cts_rows = []
    for b in backbones:
        for mech in ("joint_grid", "joint_uw"):
            for d in datasets:
                if (d, b, mech) not in cts:
                    continue
                mean, std, n = cts[(d, b, mech)]
                cts_rows.append([d, b, mech, mean, std, n,
                                 _mean_metric(runs, FREE, d, b, mech, "nc_acc"),
                                 _mean_metric(runs, FREE, d, b, "nc", "nc_acc"),
                                 _mean_metric(runs, FREE, d, b, mech, "lp_auc"),
                                 _mean_metric(runs, FREE, d, b, "lp", "lp_auc")])
    tables.append(_table(
        "CoTask Score of the shared encoder (raystudy's definition; leakage-free)",
        ["dataset", "backbone", "mechanism", "CTS", "std", "seeds", "NC acc", "NC acc single",
         "LP AUC", "LP AUC single"], cts_rows,
        f"{CTS_LABEL}: harmonic mean of the chance-adjusted skill ratios to the single-task "
        "baselines, 1 = as good as two specialists (docs/graph_transfer.md)"))
    out["cts_definition"] = CTS_LABEL
    out["cts"] = {f"{d}|{b}|{m}": {"mean": v[0], "std": v[1], "seeds": v[2]}
                  for (d, b, m), v in cts.items()}
    if cts:
        cts_rows_labels = ["joint_grid", "joint_uw"]
        figs.append(("CoTask Score of the shared encoder (raystudy's definition)",
                     figures.plot_heatmaps(cts, datasets, backbones, cts_rows_labels,
                                           figures_dir / "cts.png",
                                           f"{CTS_LABEL}; 1 = as good as both specialists",
                                           center=1.0)))

    _protocol_part(runs, free, datasets, backbones, figures_dir, tables, figs, notes, out)
    return {"tables": tables, "figures": figs, "notes": notes, "summary": out, "fits": fits,
            "snr_fit": snr_fit}


SNR_ROW = "warm_lp_nc"


def _snr_part(runs, free, backbones, tables, notes, out) -> ClusteredSlope | None:
    """The LP->NC warm-start gain against the synthetic graphs' feature SNR ``s``, when the
    run varies it (``--space snr``): is the gain larger where features leave NC
    unsaturated while LP stays easy? None when fewer than two SNR levels ran."""
    snr = G.dataset_parameter(runs, "feature_snr")
    if len(set(snr.values())) < 2:
        return None
    rows = []
    for d in sorted(snr, key=lambda d: (snr[d], d)):
        nc = G.mean_std(m.get("nc_acc", math.nan) for (p, dd, _, mech, _), m in runs.items()
                        if (p, dd, mech) == (FREE, d, "nc"))[0]
        lp = G.mean_std(m.get("lp_auc", math.nan) for (p, dd, _, mech, _), m in runs.items()
                        if (p, dd, mech) == (FREE, d, "lp"))[0]
        gain = G.mean_std(v for b in backbones for v in free.get((d, b, SNR_ROW), {}).values())
        rows.append([d, snr[d], nc, lp, _pm(*gain[:2]), gain[2]])
    tables.append(_table(
        "LP->NC warm-start gain vs feature SNR (synthetic graphs)",
        ["dataset", "feature SNR s", "NC acc single", "LP AUC single", "LP->NC gain", "runs"],
        rows, "s: class means s*sqrt(2) noise SDs apart; low s leaves NC unsaturated by "
        "features; means over backbones and seeds, leakage-free"))
    fit = G.gain_fit(free, snr, SNR_ROW)
    out["feature_snr_trend"] = {"slope": fit.slope, "low": fit.ci_low, "high": fit.ci_high,
                                   "p": fit.p_value, "n": fit.clusters,
                                   "runs": fit.observations}
    notes.append(f"LP->NC (warm start) gain vs feature SNR: slope {fit.slope:+.3f} per unit of "
                 f"s, 95% CI [{fit.ci_low:+.3f}, {fit.ci_high:+.3f}], n={fit.clusters} "
                 f"datasets ({fit.observations} runs)")
    return fit


def _protocol_part(runs, free, datasets, backbones, figures_dir, tables, figs, notes, out):
    """Leakage-free against RandomLinkSplit, cell by cell, where both were run."""
    leaky = G.paired_gains(runs, LEAKY)
    if not leaky:
        return
    rows, pairs = [], {"NC->LP warm-start gain": [], "LP->NC warm-start gain": [],
                       "LP baseline ROC-AUC": [], "NC baseline accuracy": []}
    shifts = []
    for d in datasets:
        for b in backbones:
            cells = [_mean_metric(runs, p, d, b, mech, metric)
                     for mech, metric in (("lp", "lp_auc"), ("nc", "nc_acc"))
                     for p in (FREE, LEAKY)]
            g = [G.mean_std(src.get((d, b, r), {}).values())[0]
                 for r in HEADLINE for src in (free, leaky)]
            if all(not math.isfinite(v) for v in cells + g):
                continue
            rows.append([d, b, *cells, *g])
            for (title, x, y) in zip(pairs, (g[0], g[2], cells[0], cells[2]),
                                     (g[1], g[3], cells[1], cells[3]), strict=True):
                pairs[title].append((x, y, b))
            shifts.append(g[1] - g[0])
    tables.append(_table(
        "Leakage-free vs RandomLinkSplit (leaky), same seeds",
        ["dataset", "backbone", "LP AUC free", "LP AUC leaky", "NC acc free", "NC acc leaky",
         "NC->LP gain free", "NC->LP gain leaky", "LP->NC gain free", "LP->NC gain leaky"],
        rows, "leaky: NC trains on the full graph, LP tests with validation edges in its "
        "graph, training negatives resampled per epoch (see docs)"))
    figs.append(("Leakage-free vs leaky protocol",
                 figures.plot_protocols(pairs, figures_dir / "protocols.png")))
    finite = [s for s in shifts if math.isfinite(s)]
    if finite:
        mean = sum(finite) / len(finite)
        notes.append(f"RandomLinkSplit shifts the measured NC->LP warm-start gain by "
                     f"{mean:+.3f} on average over {len(finite)} dataset x backbone cells "
                     "(leaky minus leakage-free)")
        out["leaky_minus_free_nc_to_lp_gain"] = mean
