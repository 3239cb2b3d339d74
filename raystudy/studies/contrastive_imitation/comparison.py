"""Comparing imitation methods from plain numbers: the claim check and the figures.

* :func:`claim`: is DualCOIL ahead of BC on all data and level with the best other
  method (not a reference such as the hidden-label oracle)?
* :func:`plot_learning_curves`: normalised score vs gradient steps, mean over seeds with
  a +-std band, one panel per data mix, one line per method;
* :func:`plot_final_scores`: the final score per method and mix, bars of the mean with
  every seed as a dot.

Inputs: ``curves[mix][method]`` is a list (one per seed) of ``(step, score)`` lists;
``scores[mix][method]`` a list of final scores (one per seed). Methods keep the order of
``METHOD_ORDER`` where they appear in it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

METHOD_ORDER = ("dualcoil", "bc_all", "bc_good", "demodice", "safedice", "dwbc", "bc_oracle")
COLORS = {"dualcoil": "tab:red", "bc_all": "tab:gray", "bc_good": "tab:brown",
          "demodice": "tab:blue", "safedice": "tab:green", "dwbc": "tab:purple",
          "bc_oracle": "black"}
REFERENCES = ("bc_oracle",)  # rows that use hidden labels: drawn dashed, never "best"


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and std (ddof 0) of the finite values; nan, nan if there are none."""
    finite = [v for v in values if math.isfinite(v)]
    return (float(np.mean(finite)), float(np.std(finite))) if finite else (math.nan, math.nan)


def claim(scores: dict[str, list[float]]) -> dict[str, Any]:
    """DualCOIL vs BC-on-all and the best other method (not the oracle), on seed means.

    "level" with the best baseline: within the larger of the two seed stds.
    """
    if "dualcoil" not in scores:
        return {}
    stats = {m: mean_std(v) for m, v in scores.items()}
    ours, our_std = stats["dualcoil"]
    others = {m: s for m, s in stats.items()
              if m not in ("dualcoil", *REFERENCES) and math.isfinite(s[0])}
    best = max(others, key=lambda m: others[m][0]) if others else None
    out = {"dualcoil": ours, "bc_all": stats.get("bc_all", (math.nan,))[0],
           "best_baseline": best, "best_baseline_score": others[best][0] if best else math.nan}
    out["ahead_of_bc_all"] = bool(ours > out["bc_all"])
    if best:
        margin = max(our_std, others[best][1])
        out["level_with_best"] = bool(ours >= others[best][0] - margin)
    return out


def _ordered(methods) -> list[str]:
    known = [m for m in METHOD_ORDER if m in methods]
    return known + sorted(m for m in methods if m not in METHOD_ORDER)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_learning_curves(curves: dict[str, dict[str, list[list[tuple[float, float]]]]],
                         path: Path) -> Path:
    """Score vs gradient steps per method, one panel per mix (band: std over seeds)."""
    plt = _pyplot()
    mixes = sorted(curves)
    fig, axes = plt.subplots(1, len(mixes), figsize=(6.2 * len(mixes), 4.2), squeeze=False)
    for ax, mix in zip(axes[0], mixes, strict=True):
        for method in _ordered(curves[mix]):
            runs = [dict(run) for run in curves[mix][method] if run]
            steps = sorted(set.intersection(*(set(r) for r in runs))) if runs else []
            if not steps:
                continue
            values = np.array([[r[s] for s in steps] for r in runs], dtype=float)
            mean, std = np.nanmean(values, 0), np.nanstd(values, 0)
            color = COLORS.get(method)
            ax.plot(steps, mean, label=f"{method} ({len(runs)})", color=color, linewidth=2
                    if method == "dualcoil" else 1.3,
                    linestyle="--" if method in REFERENCES else "-")
            ax.fill_between(steps, mean - std, mean + std, color=color, alpha=0.15)
        ax.axhline(100, color="black", linestyle=":", linewidth=0.8)
        ax.axhline(0, color="black", linestyle=":", linewidth=0.8)
        ax.set_title(f"mix {mix}", fontsize=10)
        ax.set_xlabel("gradient steps (after discriminator pre-training)")
        ax.set_ylabel("normalised score (0 random, 100 expert)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, title="method (seeds)", title_fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_final_scores(scores: dict[str, dict[str, list[float]]], path: Path) -> Path:
    """Final score per method: bar = mean over seeds, dots = seeds, one group per mix."""
    plt = _pyplot()
    mixes = sorted(scores)
    methods = _ordered({m for mix in mixes for m in scores[mix]})
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(methods) * len(mixes)), 4.2))
    width = 0.8 / max(1, len(mixes))
    for j, mix in enumerate(mixes):
        for i, method in enumerate(methods):
            values = np.asarray(scores[mix].get(method, []), dtype=float)
            if not len(values):
                continue
            x = i + (j - (len(mixes) - 1) / 2) * width
            mean, std = np.nanmean(values), np.nanstd(values)
            ax.bar(x, mean, width * 0.9, color=COLORS.get(method, "tab:cyan"),
                   alpha=0.55 + 0.4 * (j == 0), edgecolor="black", linewidth=0.5)
            ax.scatter(np.full(len(values), x), values, color="black", s=10, zorder=3)
            ax.annotate(f"{mean:.1f}\n+-{std:.1f}", (x, max(0.0, mean, np.nanmax(values))),
                        xytext=(0, 4), textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks(range(len(methods)), methods)
    ax.axhline(100, color="black", linestyle=":", linewidth=0.8)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("final normalised score")
    ax.set_title("final score per method" + (f" (groups: {', '.join(mixes)})"
                                             if len(mixes) > 1 else f" (mix {mixes[0]})"),
                 fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
