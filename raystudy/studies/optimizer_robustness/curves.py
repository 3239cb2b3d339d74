"""Metric-vs-hyperparameter curves over seeds, and how robust each curve is.

Used by any study that sweeps one hyperparameter on a log grid per method (the
optimizer study's loss vs learning rate). Definitions, for a minimised metric L:

* per method and grid point: mean and std of the final L over seeds; a point with
  any diverged seed counts as diverged (L = inf);
* best: the lowest mean over the grid; L* = the best over all methods;
* robust width (decades): the longest run of consecutive grid points whose mean is
  within ``tolerance`` (10 %) of L*, measured as log10(x_hi / x_lo) -- one point alone
  is 0 decades, and a method that never gets within 10 % has no width (``-``);
* per-seed robust width (for the claim, seeds as the unit): the same on one seed's
  curves, against that seed's own L*; a method with no point within 10 % counts 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from raystudy import Analysis, RunResults, Table

Curves = dict[str, dict[float, list[float]]]


def collect(results: RunResults, group: str, x: str, metric: str) -> Curves:
    """``{group value: {x: [final metric per seed]}}`` from finished and diverged trials."""
    curves: Curves = defaultdict(lambda: defaultdict(list))
    for trial in results.trials:
        if trial.status not in ("finished", "diverged"):
            continue
        value = math.inf if trial.status == "diverged" else trial.metric(metric)
        curves[str(trial.config[group])][float(trial.config[x])].append(value)
    return {g: dict(sorted(points.items())) for g, points in curves.items()}


def collect_by_seed(results: RunResults, group: str, x: str, metric: str,
                    seed: str) -> dict[int, dict[str, dict[float, float]]]:
    """``{seed: {group value: {x: final metric}}}`` (diverged = inf), from the same trials
    as :func:`collect`; a repeated (seed, group, x) keeps the mean."""
    by_seed: dict[int, Curves] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for trial in results.trials:
        if trial.status not in ("finished", "diverged"):
            continue
        value = math.inf if trial.status == "diverged" else trial.metric(metric)
        by_seed[int(trial.config[seed])][str(trial.config[group])][float(trial.config[x])] \
            .append(value)
    return {s: {g: {x: point_stats(v)[0] for x, v in sorted(pts.items())}
                for g, pts in groups.items()} for s, groups in sorted(by_seed.items())}


def widths_by_seed(by_seed: dict[int, dict[str, dict[float, float]]],
                   tolerance: float = 0.10) -> dict[str, dict[int, float]]:
    """``{group: {seed: robust width}}``: each seed's curves against that seed's best."""
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for seed, groups in by_seed.items():
        finite = [v for pts in groups.values() for v in pts.values() if math.isfinite(v)]
        if not finite:
            continue
        threshold = min(finite) * (1 + tolerance)
        for group, points in groups.items():
            width = robust_width(list(points), list(points.values()), threshold)
            out[group][seed] = 0.0 if width is None else width
    return dict(out)


def point_stats(values: list[float]) -> tuple[float, float]:
    """Mean and std over seeds; inf if any seed diverged or returned nan."""
    if any(not math.isfinite(v) for v in values):
        return math.inf, math.nan
    return float(np.mean(values)), float(np.std(values))


def robust_span(xs: list[float], means: list[float], threshold: float
                ) -> tuple[int, int] | None:
    """First and last index of the longest run of consecutive points with mean <=
    threshold (the widest in decades of x; the first of equally wide runs), or None."""
    best, start = None, None
    for i, mean in enumerate([*means, math.inf]):
        if mean <= threshold:
            start = i if start is None else start
            continue
        if start is not None:
            if best is None or math.log10(xs[i - 1] / xs[start]) > math.log10(
                    xs[best[1]] / xs[best[0]]):
                best = (start, i - 1)
            start = None
    return best


def robust_width(xs: list[float], means: list[float], threshold: float) -> float | None:
    """Longest run of consecutive points with mean <= threshold, in decades of x."""
    span = robust_span(xs, means, threshold)
    return None if span is None else math.log10(xs[span[1]] / xs[span[0]])


def robustness_table(curves: Curves, tolerance: float = 0.10) -> tuple[Table, dict]:
    """One row per method: best mean metric, where, robust width, diverged count."""
    stats = {g: {x: point_stats(v) for x, v in pts.items()} for g, pts in curves.items()}
    finite = [m for pts in stats.values() for m, _ in pts.values() if math.isfinite(m)]
    overall = min(finite) if finite else math.nan
    threshold = overall * (1 + tolerance) if finite else -math.inf
    rows, summary = [], {}
    for group, points in sorted(stats.items()):
        xs = list(points)
        means = [points[x][0] for x in xs]
        best_i = int(np.argmin(means))
        width = robust_width(xs, means, threshold)
        diverged = sum(1 for v in curves[group].values() for s in v if not math.isfinite(s))
        seeds = max(len(v) for v in curves[group].values())
        rows.append([group, means[best_i], points[xs[best_i]][1], xs[best_i],
                     "-" if width is None else round(width, 2), diverged, seeds])
        summary[group] = {"best": means[best_i], "best_std": points[xs[best_i]][1],
                          "best_x": xs[best_i], "robust_width_decades": width,
                          "diverged_trials": diverged, "seeds": seeds}
    table = Table(
        "Robustness", ["method", "best mean", "std at best", "best at", "width (decades)",
                       "diverged", "seeds"], rows,
        note=f"width: longest run of grid points within {tolerance:.0%} of the best over "
             f"all methods ({overall:.4g})",
    )
    return table, {"best_overall": overall, "tolerance": tolerance, "methods": summary}


def plot_curves(curves: Curves, path: Path, x_label: str, y_label: str,
                threshold: float | None = None, clip: float = 1.6) -> Path:
    """Mean over seeds with a +-std band, log x.

    The y axis stops at ``clip`` times the best mean, as in the paper's figures: points
    above it are drawn on the top edge as triangles, diverged points as crosses.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    means = [point_stats(v)[0] for pts in curves.values() for v in pts.values()]
    finite = [m for m in means if math.isfinite(m)]
    bottom = min(finite) if finite else 0.0
    top = min(max(finite), bottom * clip) if finite else 1.0
    span = max(top - bottom, 1e-9)
    edge = top + 0.04 * span
    for group, points in sorted(curves.items()):
        xs = np.array(list(points))
        stats = np.array([point_stats(v) for v in points.values()])
        mean, std = stats[:, 0], np.nan_to_num(stats[:, 1])
        ok = np.isfinite(mean)
        shown = np.where(ok, np.minimum(mean, edge), np.nan)
        (line,) = ax.plot(xs, shown, marker="o", label=group)
        color = line.get_color()
        ax.fill_between(xs[ok], np.minimum(mean - std, edge)[ok],
                        np.minimum(mean + std, edge)[ok], color=color, alpha=0.2)
        above = ok & (mean > edge)
        ax.scatter(xs[above], np.full(above.sum(), edge), marker="^", color=color)
        ax.scatter(xs[~ok], np.full((~ok).sum(), edge), marker="x", color=color)
    if threshold is not None and math.isfinite(threshold):
        ax.axhline(threshold, color="gray", linestyle="--", linewidth=1,
                   label="within 10% of best")
    ax.set_ylim(bottom - 0.05 * span, edge + 0.04 * span)
    ax.set_xscale("log")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(f"{y_label} vs {x_label} (band: std over seeds; ^ off scale, x diverged)",
                 fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def analyze_curves(curves: Curves, figures_dir: Path, metric: str, group_label: str,
                   x_label: str, tolerance: float = 0.10) -> Analysis:
    """Table + figure + summary for a metric-vs-x sweep, ready for the report."""
    if not curves:
        return Analysis(notes=["no finished trials yet: nothing to plot"])
    table, summary = robustness_table(curves, tolerance)
    table.columns[0] = group_label
    threshold = summary["best_overall"] * (1 + tolerance)
    figure = plot_curves(curves, figures_dir / "robustness.png", x_label, metric, threshold)
    return Analysis(tables=[table], figures=[(f"{metric} vs {x_label}", figure)],
                    summary=summary)
