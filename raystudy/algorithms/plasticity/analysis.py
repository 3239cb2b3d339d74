"""Numbers behind the claim test: R^2 of a linear fit, and when a series starts to fall.

* ``r_squared(x, y)``: the coefficient of determination of the least-squares line
  :math:`y \\approx a x + b`, equal to the squared Pearson correlation (what
  ``scipy.stats.linregress`` gives the authors); ``nan`` for fewer than 3 points or a
  constant series.
* ``claim_test(groups, eps)`` on one stream's runs (per-task histories grouped by
  intervention): R^2 of the end-of-task score on the start-of-task epsilon-rank, pooled
  over interventions and tasks as seed means (reset runs and the first task left out, as
  the authors do), at the fixed ``eps`` and at every eps of ``EPS_GRID`` (the post-hoc
  best is the authors' choice) and for the relative epsilon-rank (threshold a fraction of
  the largest eigenvalue); how many runs saw the epsilon-rank fall before the score;
  and the best L2-ER strength's late score against full reset's.
* ``drop_onset(tasks, values)``: the first task at which a series, smoothed by a centred
  moving average of ``window`` points, has fallen ``fraction`` (half) of the way from its
  early level (mean of its first ``early`` points) to its lowest smoothed value; ``None``
  when the whole fall is smaller than ``min_drop`` of the early level (no collapse).
  Comparing the onset of the epsilon-rank with that of accuracy answers "does the
  spectrum collapse before performance does?".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .metrics import EPS_GRID, eps_key


def r_squared(x: Sequence[float], y: Sequence[float]) -> float:
    """R^2 of the least-squares line through the finite (x, y) pairs."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1] ** 2)


def fit_line(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Slope and intercept of the least-squares line (nan, nan if it is undefined)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 2 or np.ptp(x[ok]) == 0:
        return math.nan, math.nan
    slope, intercept = np.polyfit(x[ok], y[ok], 1)
    return float(slope), float(intercept)


def smooth(values: Sequence[float], window: int = 3) -> np.ndarray:
    """Centred moving average; the ends average over the points that exist."""
    v = np.asarray(values, dtype=float)
    half = window // 2
    return np.array([v[max(0, i - half):i + half + 1].mean() for i in range(len(v))])


def drop_onset(tasks: Sequence[int], values: Sequence[float], fraction: float = 0.5,
               early: int = 3, window: int = 3, min_drop: float = 0.1) -> int | None:
    """First task where the smoothed series is ``fraction`` of the way down its fall."""
    tasks, values = np.asarray(tasks), np.asarray(values, dtype=float)
    ok = np.isfinite(values)
    tasks, values = tasks[ok], values[ok]
    if len(values) < early + 2:
        return None
    level = smooth(values, window)
    start = float(values[:early].mean())
    floor = float(level.min())
    fall = start - floor
    if fall <= min_drop * abs(start) or fall <= 0:
        return None
    below = np.nonzero(level <= start - fraction * fall)[0]
    return int(tasks[below[0]]) if len(below) else None


@dataclass
class Run:
    """One trial's per-task history, with what it swept."""

    trial_id: str
    status: str
    stream: str
    spec: str
    method: str
    seed: int
    eps: float
    rows: list[dict[str, Any]]

    @property
    def is_reset(self) -> bool:
        return "reset" in self.method.split("+")

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(task indices, values) of the rows that report ``key`` (task index from 1)."""
        pairs = [(int(r["task/index"]), float(r[key])) for r in self.rows
                 if isinstance(r.get(key), (int, float))]
        return (np.array([p[0] for p in pairs], dtype=int),
                np.array([p[1] for p in pairs], dtype=float))

    @property
    def late(self) -> float:
        return float(self.rows[-1].get("eval/late_score", math.nan)) if self.rows else math.nan


def mean_curve(runs: list[Run], key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tasks, mean and std over seeds of ``key`` (tasks every seed reached)."""
    by_task: dict[int, list[float]] = {}
    for run in runs:
        for task, value in zip(*run.series(key), strict=True):
            by_task.setdefault(int(task), []).append(value)
    tasks = np.array(sorted(t for t, v in by_task.items() if len(v) == len(runs)), dtype=int)
    values = [by_task[t] for t in tasks]
    return (tasks, np.array([np.mean(v) for v in values]),
            np.array([np.std(v) for v in values]))


def late_stats(runs: list[Run]) -> tuple[float, float]:
    values = [r.late for r in runs if math.isfinite(r.late)]
    return (float(np.mean(values)), float(np.std(values))) if values else (math.nan, math.nan)


def claim_points(groups: dict[str, list[Run]], key: str) -> tuple[list[float], list[float]]:
    """Seed-mean (key at a task's start, score at its end) per intervention and task.

    Reset runs and the first task (the untrained network) are left out, as the authors do.
    """
    xs, ys = [], []
    for runs in groups.values():
        if runs[0].is_reset:
            continue
        tasks_x, mean_x, _ = mean_curve(runs, key)
        tasks_y, mean_y, _ = mean_curve(runs, "task/score")
        score = dict(zip(tasks_y.tolist(), mean_y.tolist(), strict=True))
        for task, value in zip(tasks_x.tolist(), mean_x.tolist(), strict=True):
            if task > 1 and task in score:
                xs.append(value)
                ys.append(score[task])
    return xs, ys


def claim_test(groups: dict[str, list[Run]], eps: float) -> dict[str, Any]:
    """R^2 at the fixed and the post-hoc best eps, onsets, and L2-ER against reset.

    ``groups`` maps an intervention spec to its runs (seeds) on one stream.
    """
    x, y = claim_points(groups, "hessian/eps_rank")
    grid = {e: r_squared(*claim_points(groups, eps_key(e))) for e in EPS_GRID}
    finite = {e: v for e, v in grid.items() if math.isfinite(v)}
    best = max(finite, key=finite.get) if finite else math.nan
    onsets = {"eps_first": 0, "same": 0, "score_first": 0, "eps_only": 0, "score_only": 0,
              "neither": 0}
    for runs in groups.values():
        if runs[0].is_reset:
            continue
        for run in runs:
            e = drop_onset(*run.series("hessian/eps_rank"))
            a = drop_onset(*run.series("task/score"), early=5, window=5)
            key = ("neither" if e is None and a is None else "eps_only" if a is None else
                   "score_only" if e is None else "eps_first" if e < a else
                   "same" if e == a else "score_first")
            onsets[key] += 1
    reset = [r for runs in groups.values() for r in runs if r.method == "reset"]
    reset_mean, reset_std = late_stats(reset)
    versus = {}
    for family in ("l2_er", "l2_er_penalty"):
        options = {spec: late_stats(runs) for spec, runs in groups.items()
                   if runs[0].method == family}
        options = {k: v for k, v in options.items() if math.isfinite(v[0])}
        if options and math.isfinite(reset_mean):
            spec = max(options, key=lambda k: options[k][0])
            versus[family] = {"spec": spec, "late": options[spec][0], "late_std": options[spec][1],
                              "reset": reset_mean, "reset_std": reset_std,
                              "difference": options[spec][0] - reset_mean,
                              "at_or_above_reset": options[spec][0] >= reset_mean}
    return {"eps": eps, "points": len(x), "r2_fixed": r_squared(x, y),
            "slope_fixed": fit_line(x, y)[0],
            "r2_relative": r_squared(*claim_points(groups, "hessian/eps_rank_rel")),
            "best_eps": best,
            "r2_best": finite.get(best, math.nan), "r2_by_eps": grid, "onsets": onsets,
            "l2er_vs_reset": versus}
