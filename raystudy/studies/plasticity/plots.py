"""Figures of the plasticity study from plain per-task histories (:class:`Run`): per-task
curves with seed bands, late-task score relative to reset, and the claim-test panels."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from raystudy.algorithms.plasticity.metrics import eps_key
from raystudy.studies.plasticity.curves import (
    Run,
    claim_points,
    fit_line,
    late_stats,
    mean_curve,
    smooth,
)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colors(specs: list[str]) -> dict[str, Any]:
    plt = _pyplot()
    cmap = plt.get_cmap("tab20" if len(specs) > 10 else "tab10")
    return {spec: cmap(i % cmap.N) for i, spec in enumerate(sorted(specs))}


def _smooth(values: np.ndarray, window: int) -> np.ndarray:
    return smooth(values, window) if window > 1 and len(values) > window else values


def _score_label(stream: str) -> str:
    return "return (last quarter of task)" if stream.startswith("rl") else "accuracy at task end"


def _online_label(stream: str) -> str:
    return ("return over the task" if stream.startswith("rl")
            else "online training accuracy over the task")


def plot_per_task(streams: dict[str, dict[str, list[Run]]], keys: list[tuple[str, str]],
                  path: Path, title: str) -> Path:
    """One row per stream, one column per (key, label): seed mean with a +-std band."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(streams), len(keys), figsize=(6.2 * len(keys) + 2.6,
                                                               3.6 * len(streams)),
                             squeeze=False)
    for row, (stream, groups) in zip(axes, streams.items(), strict=True):
        colors = _colors(list(groups))
        for ax, (key, label) in zip(row, keys, strict=True):
            for spec, runs in sorted(groups.items()):
                tasks, mean, std = mean_curve(runs, key)
                if not len(tasks):
                    continue
                window = max(1, len(tasks) // 25) if key.startswith("task/") else 1
                mean, std = _smooth(mean, window), _smooth(std, window)
                ax.plot(tasks, mean, color=colors[spec], lw=1.4,
                        label=f"{spec} (n={len(runs)})", marker="." if len(tasks) < 30 else None)
                ax.fill_between(tasks, mean - std, mean + std, color=colors[spec], alpha=0.15)
            if key.startswith("hessian/"):  # LayerNorm's spectrum sits 10x above the rest
                ax.set_yscale("symlog", linthresh=1.0)
            ax.set_xlabel("task")
            ax.set_ylabel(label.replace("{score}", _score_label(stream))
                          .replace("{online}", _online_label(stream)))
            ax.set_title(stream, fontsize=10)
            ax.grid(alpha=0.3)
        row[-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_relative(streams: dict[str, dict[str, list[Run]]], path: Path) -> Path:
    """Late-task performance of each intervention relative to full reset (1 = reset)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(streams), figsize=(6.5 * len(streams), 4.2), squeeze=False)
    for ax, (stream, groups) in zip(axes[0], streams.items(), strict=True):
        reset = [r for runs in groups.values() for r in runs if r.method == "reset"]
        base = late_stats(reset)[0]
        specs = sorted(groups, key=lambda k: late_stats(groups[k])[0])
        if not math.isfinite(base) or base == 0:
            ax.set_title(f"{stream}: no reset trials to compare with", fontsize=10)
            continue
        means = [late_stats(groups[k])[0] / base for k in specs]
        errs = [late_stats(groups[k])[1] / abs(base) for k in specs]
        colors = _colors(list(groups))
        ax.barh(specs, means, xerr=errs, color=[colors[k] for k in specs], alpha=0.85)
        ax.axvline(1.0, color="k", lw=1, ls="--")
        ax.set_xlabel("late-task score / reset's (bars: seed std)")
        ax.set_title(f"{stream}: reset late score {base:.3g}", fontsize=10)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _normalised(values: np.ndarray) -> np.ndarray:
    span = np.ptp(values) if len(values) else 0.0
    return (values - values.min()) / span if span > 0 else values * 0.0


def plot_claim(stream: str, groups: dict[str, list[Run]], claim: dict[str, Any],
               path: Path) -> Path:
    """Score vs epsilon-rank at the fixed and the best eps, R^2 across eps, and which falls
    first for the intervention that loses the most."""
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.8))
    axes = axes.flatten()
    colors = _colors(list(groups))
    panels = [(axes[0], "hessian/eps_rank", claim["eps"], claim["r2_fixed"], "fixed in advance")]
    if math.isfinite(claim["best_eps"]):
        panels.append((axes[2], eps_key(claim["best_eps"]), claim["best_eps"],
                       claim["r2_best"], "post-hoc best"))
    for ax, key, eps, r2, what in panels:
        for spec, runs in sorted(groups.items()):
            x, y = claim_points({spec: runs}, key)
            ax.scatter(x, y, s=14, color=colors[spec], label=spec, alpha=0.8)
        x, y = claim_points(groups, key)
        slope, intercept = fit_line(x, y)
        if math.isfinite(slope):
            grid = np.linspace(min(x), max(x), 20)
            ax.plot(grid, slope * grid + intercept, color="k", lw=1)
        ax.set_xlabel(f"Hessian epsilon-rank at task start (%), eps={eps:g}")
        ax.set_ylabel(_online_label(stream))
        ax.set_title(f"eps {what}: R^2 = {r2:.2f} ({len(x)} points)", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=6, ncol=2)
    grid = sorted(claim["r2_by_eps"].items())
    axes[1].plot([e for e, _ in grid], [v for _, v in grid], marker=".")
    axes[1].axvline(claim["eps"], color="tab:blue", ls="--", label=f"fixed {claim['eps']:g}")
    if math.isfinite(claim["best_eps"]):
        axes[1].axvline(claim["best_eps"], color="tab:red", ls=":",
                        label=f"best {claim['best_eps']:g}")
    axes[1].set_xscale("log")
    axes[1].set_xlabel("eps")
    axes[1].set_ylabel("R^2 of score on epsilon-rank")
    axes[1].set_title(f"{stream}: R^2 depends on the choice of eps", fontsize=10)
    axes[1].legend(fontsize=8)
    axes[1].grid(alpha=0.3)
    losing = {spec: late_stats(runs)[0] - np.mean([r.rows[0]["task/score"] for r in runs])
              for spec, runs in groups.items() if not runs[0].is_reset}
    if losing:  # plain backprop if it ran, else the intervention that loses the most
        worst = "none" if "none" in losing else min(losing, key=losing.get)
        ax = axes[3]
        online = groups[worst][0].score_key
        for key, label, style in ((online, "online score", "-"),
                                  ("hessian/eps_rank", f"eps-rank (eps={claim['eps']:g})", "o-"),
                                  ("features/erank", "feature erank", "--")):
            tasks, mean, _ = mean_curve(groups[worst], key)
            window = max(1, len(tasks) // 25) if key == online else 1
            ax.plot(tasks, _normalised(_smooth(mean, window)), style, label=label, ms=3)
        ax.set_xlabel("task")
        ax.set_ylabel("seed mean, scaled to [0, 1]")
        ax.set_title(f"which falls first: {worst}", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
