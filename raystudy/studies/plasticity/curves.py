"""Numbers behind the claim test: R^2 of a linear fit, when a series starts to fall, and
which L2-ER strength to compare with reset.

* ``r_squared(x, y)``: the coefficient of determination of the least-squares line
  :math:`y \\approx a x + b`, equal to the squared Pearson correlation (what
  ``scipy.stats.linregress`` gives the authors); ``nan`` for fewer than 3 points or a
  constant series.
* ``claim_test(groups, eps)`` on one stream's runs (per-task histories grouped by
  intervention): R^2 of the task's score on the start-of-task epsilon-rank, pooled over
  interventions and tasks as seed means (reset runs and the first task left out, as the
  authors do), at the fixed ``eps`` and at every eps of ``EPS_GRID`` (the post-hoc best
  is the authors' choice), and for the variants of the epsilon-rank (grid-point sum,
  quadrature weights, relative thresholds); how many runs saw the epsilon-rank fall
  before the score; and the L2-ER strength chosen on held-out seeds against full reset
  on the other seeds. The score paired with the epsilon-rank is the online training
  accuracy over the task (``task/online_score``: each minibatch's accuracy before its
  update, averaged over the task, as lop-jax records it); histories without it use the
  end-of-task score.
* ``drop_onset(tasks, values)``: the first task at which a series, smoothed by a centred
  moving average of ``window`` points, has fallen ``fraction`` (half) of the way from its
  early level (mean of its first ``early`` points) to its lowest smoothed value; ``None``
  when the whole fall is smaller than ``min_drop`` of the early level (no collapse).
  ``onset_order`` compares the onsets of the epsilon-rank and of the score on the same
  tasks (``aligned``: the tasks where the Hessian was measured, the first task, the
  untrained net, left out), with the same smoothing, so neither series is seen at a finer
  resolution than the other: "does the spectrum collapse before performance does?".
* ``select_strength(groups, family)``: the family's strength with the best mean late
  score on the lowest third of the seeds (held out), and the remaining seeds, on which it
  is then compared with reset: a strength is never chosen on the seeds that test it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from raystudy.algorithms.plasticity.metrics import EPS_GRID, eps_key


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


ONLINE = "task/online_score"
"""The score over the task (online training accuracy, or RL return over the whole task)."""
SCORE = "task/score"
"""The score at the task's end."""
ONSETS = ("eps_first", "same", "score_first", "eps_only", "score_only", "neither")
VARIANTS: dict[str, str] = {
    "riemann": "hessian/eps_rank_riemann", "quadrature": "hessian/eps_rank_quad",
    "quadrature_relative": "hessian/eps_rank_quad_rel", "relative": "hessian/eps_rank_rel"}
"""The epsilon-rank's variants beside the authors' (``hessian/eps_rank``), by report key."""


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

    @property
    def score_key(self) -> str:
        """``task/online_score`` where the history has it, else ``task/score``."""
        return ONLINE if any(ONLINE in r for r in self.rows) else SCORE

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(task indices, values) of the rows that report ``key`` (task index from 1)."""
        pairs = [(int(r["task/index"]), float(r[key])) for r in self.rows
                 if isinstance(r.get(key), (int, float))]
        return (np.array([p[0] for p in pairs], dtype=int),
                np.array([p[1] for p in pairs], dtype=float))

    @property
    def late(self) -> float:
        return float(self.rows[-1].get("eval/late_score", math.nan)) if self.rows else math.nan


def aligned(run: Run, key: str, score_key: str | None = None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tasks, ``key``, score) at the tasks that report both, the first task left out:
    the two series at the same resolution (``key`` is measured every few tasks)."""
    score = dict(zip(*run.series(score_key or run.score_key), strict=True))
    rows = [(t, v, score[t]) for t, v in zip(*run.series(key), strict=True)
            if t > 1 and t in score]
    return (np.array([r[0] for r in rows], dtype=int), np.array([r[1] for r in rows]),
            np.array([r[2] for r in rows]))


def onset_order(tasks: Sequence[int], eps_ranks: Sequence[float], scores: Sequence[float],
                **onset: Any) -> str:
    """Which of two aligned series falls first (one of ``ONSETS``), by ``drop_onset`` with
    the same settings for both."""
    e, a = drop_onset(tasks, eps_ranks, **onset), drop_onset(tasks, scores, **onset)
    if e is None or a is None:
        return "neither" if e is None and a is None else "eps_only" if a is None else "score_only"
    return "eps_first" if e < a else "same" if e == a else "score_first"


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
    """Seed-mean (key at a task's start, score over that task) per intervention and task.

    Reset runs and the first task (the untrained network) are left out, as the authors do.
    """
    xs, ys = [], []
    for runs in groups.values():
        if runs[0].is_reset:
            continue
        tasks_x, mean_x, _ = mean_curve(runs, key)
        tasks_y, mean_y, _ = mean_curve(runs, runs[0].score_key)
        score = dict(zip(tasks_y.tolist(), mean_y.tolist(), strict=True))
        for task, value in zip(tasks_x.tolist(), mean_x.tolist(), strict=True):
            if task > 1 and task in score:
                xs.append(value)
                ys.append(score[task])
    return xs, ys


@dataclass
class Selection:
    """An L2-ER strength chosen on held-out seeds, and the seeds left to compare it on."""

    spec: str
    select_seeds: list[int]
    """Seeds whose late scores chose ``spec`` (empty: the family ran one strength)."""
    compare_seeds: list[int]
    """The spec's other seeds: the comparison with reset uses only these."""


def late_by_seed(runs: list[Run]) -> dict[int, float]:
    out: dict[int, list[float]] = {}
    for run in runs:
        if math.isfinite(run.late):
            out.setdefault(run.seed, []).append(run.late)
    return {seed: float(np.mean(v)) for seed, v in out.items()}


def select_strength(groups: dict[str, list[Run]], family: str,
                    held_out: float = 1 / 3) -> Selection | None:
    """The ``family``'s strength with the best mean late score over the lowest
    ``ceil(held_out * n)`` of the ``n`` seeds every strength ran; compared on the rest.

    With one strength nothing is chosen: every seed compares. ``None`` if the family did
    not run (or no seed finished).
    """
    options = {spec: late_by_seed(runs) for spec, runs in groups.items()
               if runs[0].method == family}
    options = {spec: seeds for spec, seeds in options.items() if seeds}
    if not options:
        return None
    if len(options) == 1:
        (spec, seeds), = options.items()
        return Selection(spec, [], sorted(seeds))
    common = sorted(set.intersection(*(set(seeds) for seeds in options.values())))
    if not common:
        return None
    chosen = common[:max(1, math.ceil(held_out * len(common)))]
    spec = max(sorted(options), key=lambda k: float(np.mean([options[k][s] for s in chosen])))
    return Selection(spec, chosen, sorted(set(options[spec]) - set(chosen)))


def claim_test(groups: dict[str, list[Run]], eps: float) -> dict[str, Any]:
    """R^2 at the fixed and the post-hoc best eps and for each variant, onsets on aligned
    series, and L2-ER (strength chosen on held-out seeds) against reset.

    ``groups`` maps an intervention spec to its runs (seeds) on one stream.
    """
    x, y = claim_points(groups, "hessian/eps_rank")
    grid = {e: r_squared(*claim_points(groups, eps_key(e))) for e in EPS_GRID}
    finite = {e: v for e, v in grid.items() if math.isfinite(v)}
    best = max(finite, key=finite.get) if finite else math.nan
    onsets = dict.fromkeys(ONSETS, 0)
    for runs in groups.values():
        if runs[0].is_reset:
            continue
        for run in runs:
            onsets[onset_order(*aligned(run, "hessian/eps_rank"))] += 1
    reset = late_by_seed([r for runs in groups.values() for r in runs if r.method == "reset"])
    versus = {}
    for family in ("l2_er", "l2_er_penalty"):
        chosen = select_strength(groups, family)
        if chosen is None or not reset:
            continue
        mine = late_by_seed(groups[chosen.spec])
        seeds = [s for s in chosen.compare_seeds if s in reset]
        late = [mine[s] for s in seeds]
        base = [reset[s] for s in seeds]
        versus[family] = {
            "spec": chosen.spec, "select_seeds": chosen.select_seeds, "compare_seeds": seeds,
            "late": float(np.mean(late)) if seeds else math.nan,
            "late_std": float(np.std(late)) if seeds else math.nan,
            "reset": float(np.mean(base)) if seeds else math.nan,
            "reset_std": float(np.std(base)) if seeds else math.nan,
            "difference": float(np.mean(late) - np.mean(base)) if seeds else math.nan}
        versus[family]["at_or_above_reset"] = bool(versus[family]["difference"] >= 0)
    return {"eps": eps, "points": len(x), "r2_fixed": r_squared(x, y),
            "slope_fixed": fit_line(x, y)[0],
            "r2_variants": {name: r_squared(*claim_points(groups, key))
                            for name, key in VARIANTS.items()},
            "best_eps": best, "r2_best": finite.get(best, math.nan), "r2_by_eps": grid,
            "onsets": onsets, "l2er_vs_reset": versus}
