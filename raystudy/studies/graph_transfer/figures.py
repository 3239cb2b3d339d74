"""The study's figures (matplotlib, Agg): gain heatmaps, gain vs homophily, CTS, protocols.

Inputs are plain dicts, so the figures can be redrawn from a ``summary.json``:
``summary[(dataset, backbone, row)] = (mean, std, n)`` over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

Summary = Mapping[tuple[str, str, str], tuple[float, float, int]]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_heatmaps(summary: Summary, datasets: Sequence[str], backbones: Sequence[str],
                  rows: Sequence[str], path: Path, title: str, center: float = 0.0,
                  labels: Mapping[str, str] | None = None) -> Path:
    """One panel per backbone: rows x datasets, colour = mean, text = mean and +-std."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(backbones), squeeze=False,
                             figsize=(1.3 + 1.25 * len(datasets) * len(backbones),
                                      1.2 + 0.42 * len(rows)))
    values = [summary[k][0] for k in summary if math.isfinite(summary[k][0])]
    span = max([abs(v - center) for v in values] + [1e-3])
    for ax, backbone in zip(axes[0], backbones, strict=True):
        grid = np.full((len(rows), len(datasets)), np.nan)
        for i, row in enumerate(rows):
            for j, dataset in enumerate(datasets):
                mean, std, n = summary.get((dataset, backbone, row), (math.nan, math.nan, 0))
                grid[i, j] = mean
                if n:
                    ax.text(j, i, f"{mean:+.3f}\n±{std:.3f}" if center == 0 else
                            f"{mean:.2f}\n±{std:.2f}", ha="center", va="center", fontsize=6.5)
        image = ax.imshow(grid, cmap="RdBu", vmin=center - span, vmax=center + span,
                          aspect="auto")
        ax.set_xticks(range(len(datasets)), [(labels or {}).get(d, d) for d in datasets],
                      rotation=35, ha="right", fontsize=7)
        ax.set_yticks(range(len(rows)), rows if ax is axes[0][0] else [""] * len(rows),
                      fontsize=7)
        ax.set_title(backbone, fontsize=9)
    fig.colorbar(image, ax=list(axes[0]), shrink=0.8)
    fig.suptitle(title, fontsize=9, y=1.04)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_gain_vs_homophily(summary: Summary, homophily: Mapping[str, float],
                           backbones: Sequence[str], rows: Sequence[str],
                           predictions: Mapping[tuple[str, str], Mapping[str, tuple[float, float]]],
                           trends: Mapping[str, Mapping[str, float]], path: Path) -> Path:
    """Per row: observed gain (+-std) per backbone, the predictor in-sample and LODO."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(rows), figsize=(5.2 * len(rows), 4), squeeze=False)
    colors = dict(zip(backbones, plt.rcParams["axes.prop_cycle"].by_key()["color"],
                      strict=False))
    for ax, row in zip(axes[0], rows, strict=True):
        for backbone in backbones:
            pts = sorted((homophily[d], *summary[(d, b, r)][:2]) for (d, b, r) in summary
                         if b == backbone and r == row and d in homophily)
            if not pts:
                continue
            x, mean, std = map(np.array, zip(*pts, strict=True))
            ax.errorbar(x, mean, yerr=std, marker="o", capsize=3, color=colors[backbone],
                        label=f"{backbone} observed")
            pred = predictions.get((backbone, row), {})
            fitted = sorted((homophily[d], p[0], p[1]) for d, p in pred.items())
            if fitted:
                hx, ins, lodo = map(np.array, zip(*fitted, strict=True))
                ax.plot(hx, ins, linestyle="--", color=colors[backbone], alpha=0.7,
                        label=f"{backbone} predictor (fit)")
                ax.scatter(hx, lodo, facecolors="none", edgecolors=colors[backbone], s=50,
                           label=f"{backbone} predictor (LODO)")
        trend = trends.get(row, {})
        if math.isfinite(trend.get("slope", math.nan)):
            grid = np.linspace(min(homophily.values()), max(homophily.values()), 20)
            ax.plot(grid, trend["intercept"] + trend["slope"] * grid, color="gray",
                    linewidth=2, alpha=0.5,
                    label=f"OLS over dataset means, slope {trend['slope']:+.3f}")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xlabel("edge homophily (training graph)")
        ax.set_ylabel("gain over single-task baseline")
        ax.set_title(row, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def plot_protocols(pairs: Mapping[str, Sequence[tuple[float, float, str]]], path: Path) -> Path:
    """Per panel: leakage-free (x) against leaky (y) values, one point per cell, y = x line."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(pairs), figsize=(4.2 * len(pairs), 4), squeeze=False)
    markers = {"gcn": "o", "sage": "s", "gps": "^"}
    for ax, (title, points) in zip(axes[0], pairs.items(), strict=True):
        finite = [(x, y, b) for x, y, b in points if math.isfinite(x) and math.isfinite(y)]
        if not finite:
            ax.set_title(f"{title}: no runs", fontsize=9)
            continue
        for backbone in sorted({b for _, _, b in finite}):
            xs = [x for x, _, b in finite if b == backbone]
            ys = [y for _, y, b in finite if b == backbone]
            ax.scatter(xs, ys, marker=markers.get(backbone, "o"), label=backbone, alpha=0.8)
        lo = min(min(x, y) for x, y, _ in finite)
        hi = max(max(x, y) for x, y, _ in finite)
        pad = 0.05 * max(hi - lo, 1e-3)
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="gray", linestyle="--")
        ax.set_xlabel("leakage-free")
        ax.set_ylabel("RandomLinkSplit (leaky)")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
