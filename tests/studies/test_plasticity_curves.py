"""The claim test's numbers on constructed histories, and the metrics pass's keys."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from raystudy.algorithms.plasticity import MLP
from raystudy.algorithms.plasticity.hessian import epsilon_rank, hessian_spectral_density
from raystudy.algorithms.plasticity.metrics import (
    EPS_GRID,
    eps_key,
    feature_metrics,
    hessian_metrics,
)
from raystudy.algorithms.plasticity.ranks import effective_rank, srank
from raystudy.studies.plasticity.curves import (
    Run,
    aligned,
    claim_test,
    drop_onset,
    onset_order,
    r_squared,
    select_strength,
)


def test_r_squared_equals_one_minus_residual_over_total_variance():
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    y = 2 * x + rng.normal(scale=0.7, size=40)
    slope, intercept = np.polyfit(x, y, 1)
    residual = ((y - slope * x - intercept) ** 2).sum()
    total = ((y - y.mean()) ** 2).sum()
    assert r_squared(x, y) == pytest.approx(1 - residual / total)
    assert r_squared([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert math.isnan(r_squared([1, 2], [3, 4])) and math.isnan(r_squared([1, 1, 1], [1, 2, 3]))


def test_drop_onset_is_the_first_task_half_way_down():
    tasks = np.arange(1, 11)
    values = [10, 10, 10, 10, 9, 5, 2, 1, 1, 1]  # early 10, floor 1: half-way is 5.5
    assert drop_onset(tasks, values, window=1) == 6
    assert drop_onset(tasks, [10, 10.2, 9.9, 10, 10.1, 9.8, 10, 10, 9.9, 10]) is None
    assert drop_onset(tasks[:4], values[:4]) is None  # too short to tell


TRACKS = EPS_GRID[20]  # the one eps of the constructed runs whose rank tracks the score


def make_run(spec, method, seed, eps_ranks, scores, hessian_every=2, online=None):
    rows = []
    for i, score in enumerate(scores):
        row = {"task/index": i + 1, "task/score": score, "eval/late_score": np.mean(scores[-3:])}
        if online is not None:
            row["task/online_score"] = online[i]
        if i % hessian_every == 0:
            row["hessian/eps_rank"] = eps_ranks[i]
            row["hessian/eps_rank_riemann"] = 3 * eps_ranks[i]  # a rescaled copy
            row["hessian/eps_rank_quad"] = eps_ranks[i] ** 2    # not a line
            row["hessian/eps_rank_quad_rel"] = 100 - eps_ranks[i]
            row["hessian/eps_rank_rel"] = 3 * eps_ranks[i]
            for e in EPS_GRID:  # only eps = TRACKS tracks the score exactly
                row[eps_key(e)] = 100 * score if e == TRACKS else eps_ranks[i] + (i % 3) * e
        rows.append(row)
    return Run(f"{spec}-{seed}", "finished", "s", spec, method, seed, 0.02, rows)


def test_claim_test_on_constructed_runs():
    tasks = 12
    fall = [0.9] * 4 + [0.8, 0.6, 0.4, 0.3, 0.2, 0.2, 0.2, 0.2]            # score falls at 7
    eps = [50.0] * 2 + [40.0, 20.0, 10.0, 8.0] + [5.0] * 6                # eps-rank at 4
    groups = {
        "none": [make_run("none", "none", s, eps, [v + 0.01 * s for v in fall])
                 for s in (0, 1)],
        "l2_er/1/1": [make_run("l2_er/1/1", "l2_er", s, [50.0] * tasks, [0.9] * tasks)
                      for s in (0, 1)],
        "l2_er/1/2": [make_run("l2_er/1/2", "l2_er", 0, [45.0] * tasks, [0.85] * tasks)],
        "reset": [make_run("reset", "reset", s, [60.0] * tasks, [0.88] * tasks)
                  for s in (0, 1)],
    }
    claim = claim_test(groups, eps=0.02)
    assert claim["best_eps"] == TRACKS and claim["r2_best"] == pytest.approx(1.0)
    # fixed eps: seed-mean points of none and the two l2_er strengths, tasks 3, 5, ..., 11
    x = [eps[i] for i in range(2, tasks, 2)] + [50.0] * 5 + [45.0] * 5
    y = [fall[i] + 0.005 for i in range(2, tasks, 2)] + [0.9] * 5 + [0.85] * 5
    assert claim["points"] == 15
    assert claim["r2_fixed"] == pytest.approx(r_squared(x, y)) and claim["slope_fixed"] > 0
    variants = claim["r2_variants"]
    assert variants["riemann"] == pytest.approx(claim["r2_fixed"])  # R^2 is scale-free
    assert variants["quadrature_relative"] == pytest.approx(claim["r2_fixed"])
    assert variants["quadrature"] != pytest.approx(claim["r2_fixed"])
    # aligned on tasks 3, 5, ..., 11: the eps-rank is half-way down at 7, the score at 9
    assert claim["onsets"]["eps_first"] == 2  # both seeds of "none"
    assert claim["onsets"]["neither"] == 3     # the flat l2_er runs
    versus = claim["l2er_vs_reset"]["l2_er"]
    # chosen on seed 0 (the only seed both strengths ran), compared on seed 1 only
    assert versus["spec"] == "l2_er/1/1" and versus["at_or_above_reset"]
    assert versus["select_seeds"] == [0] and versus["compare_seeds"] == [1]
    assert versus["difference"] == pytest.approx(0.02)


def test_claim_points_pair_the_eps_rank_with_the_online_score_over_the_task():
    scores, online = [0.9, 0.8, 0.7, 0.6, 0.5], [0.5, 0.45, 0.4, 0.35, 0.3]
    eps = [50.0, 40.0, 30.0, 20.0, 10.0]
    run = make_run("none", "none", 0, eps, scores, hessian_every=1, online=online)
    assert run.score_key == "task/online_score"
    claim = claim_test({"none": [run]}, eps=0.02)
    # tasks 2..5: the online scores 0.45 .. 0.3 against eps 40 .. 10: slope 0.005 per point
    assert claim["points"] == 4 and claim["slope_fixed"] == pytest.approx(0.005)
    old = make_run("none", "none", 0, eps, scores, hessian_every=1)  # no online score
    assert old.score_key == "task/score"
    assert claim_test({"none": [old]}, eps=0.02)["slope_fixed"] == pytest.approx(0.01)


def every_ten(tasks=60):
    """Tasks where the quick profile measures the Hessian: 1, 11, ..., 51 and the last."""
    return sorted({*range(1, tasks + 1, 10), tasks})


def series_run(eps_of, score_of, tasks=60):
    """A run whose epsilon-rank is measured every ten tasks and its score every task."""
    measured = set(every_ten(tasks))
    rows = [{"task/index": t, "task/online_score": score_of(t), "task/score": score_of(t),
             **({"hessian/eps_rank": eps_of(t)} if t in measured else {})}
            for t in range(1, tasks + 1)]
    return Run("r", "finished", "s", "none", "none", 0, 0.02, rows)


def test_onsets_compare_series_at_the_same_resolution():
    # Both fall at task 25: the score, seen every task, falls at 25; the eps-rank is only
    # seen at 21 (before) and 31 (after). Compared raw, the score "falls first".
    both = series_run(lambda t: 50.0 if t < 25 else 10.0, lambda t: 0.9 if t < 25 else 0.2)
    raw_eps = drop_onset(*both.series("hessian/eps_rank"))
    raw_score = drop_onset(*both.series("task/online_score"), early=5, window=5)
    assert raw_score < raw_eps == 31
    tasks, eps_ranks, scores = aligned(both, "hessian/eps_rank")
    assert tasks.tolist() == [11, 21, 31, 41, 51, 60]  # task 1 (untrained) left out
    assert scores.tolist() == [0.9, 0.9, 0.2, 0.2, 0.2, 0.2]
    assert onset_order(tasks, eps_ranks, scores) == "same"
    # The eps-rank falls at 15, the score at 35: eps first, at any resolution.
    lead = series_run(lambda t: 50.0 if t < 15 else 10.0, lambda t: 0.9 if t < 35 else 0.2)
    assert onset_order(*aligned(lead, "hessian/eps_rank")) == "eps_first"
    lag = series_run(lambda t: 50.0 if t < 35 else 10.0, lambda t: 0.9 if t < 15 else 0.2)
    assert onset_order(*aligned(lag, "hessian/eps_rank")) == "score_first"


def test_the_untrained_first_task_does_not_count_as_a_fall():
    # The untrained net's spectrum (task 1) sits far above the trained ones, then flat.
    flat = series_run(lambda t: 90.0 if t == 1 else 50.0, lambda t: 0.9)
    assert drop_onset(*flat.series("hessian/eps_rank")) is not None  # raw: a "fall"
    assert onset_order(*aligned(flat, "hessian/eps_rank")) == "neither"


def test_the_l2er_strength_is_chosen_on_held_out_seeds():
    def runs(spec, lates):
        return [Run(f"{spec}-{s}", "finished", "s", spec, "l2_er", s, 0.02,
                    [{"task/index": 1, "task/score": v, "eval/late_score": v}])
                for s, v in enumerate(lates)]

    # a is better on seeds 0 and 1 (the lowest third of six), b on the other four
    groups = {"l2_er/1/a": runs("l2_er/1/a", [0.9, 0.8, 0.1, 0.1, 0.1, 0.1]),
              "l2_er/1/b": runs("l2_er/1/b", [0.5, 0.5, 0.6, 0.6, 0.6, 0.6])}
    chosen = select_strength(groups, "l2_er")
    assert chosen.spec == "l2_er/1/a"  # b has the best mean over all six seeds
    assert chosen.select_seeds == [0, 1] and chosen.compare_seeds == [2, 3, 4, 5]
    one = select_strength({"l2_er/1/b": groups["l2_er/1/b"]}, "l2_er")
    assert one.select_seeds == [] and one.compare_seeds == [0, 1, 2, 3, 4, 5]
    assert select_strength(groups, "l2_er_penalty") is None


def test_feature_metrics_match_the_rank_functions():
    h1 = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [1.0, 2.0, 0.0]])
    h2 = torch.eye(4)
    out = feature_metrics([h1, h2], tau=0.0)
    assert out["features/erank/l1"] == pytest.approx(float(effective_rank(h1)))
    assert out["features/srank/l1"] == srank(h1) and out["features/erank/l2"] == pytest.approx(4)
    assert out["features/dead/l1"] == 1 and out["features/dead"] == 1
    assert out["features/dormant/l1"] == pytest.approx(1 / 3)
    assert out["features/erank"] == pytest.approx((out["features/erank/l1"] + 4) / 2)


def test_hessian_metrics_keys_and_consistency():
    torch.manual_seed(0)
    model = MLP(3, (6,), 2)
    x, y = torch.randn(20, 3), torch.randint(0, 2, (20,))
    loss = torch.nn.functional.cross_entropy
    out = hessian_metrics(model, loss, x, y, iterations=12, top_k=3, eps=0.02,
                          rel_eps=0.05, generator=torch.Generator().manual_seed(1))
    density = hessian_spectral_density(model, loss, x, y, iterations=12,
                                       generator=torch.Generator().manual_seed(1))
    # the authors' post-hoc grid: 50 log-spaced values from 1e-2 to 1 (lop-jax fig5.py)
    assert len(EPS_GRID) == 50 and EPS_GRID[0] == 0.01 and EPS_GRID[-1] == 1.0
    for key, eps, relative, method in (
            ("hessian/eps_rank", 0.02, False, "trapezoid"),
            ("hessian/eps_rank_riemann", 0.02, False, "riemann"),
            ("hessian/eps_rank_quad", 0.02, False, "quadrature"),
            ("hessian/eps_rank_quad_rel", 0.05, True, "quadrature"),
            ("hessian/eps_rank_rel", 0.05, True, "trapezoid"),
            (eps_key(EPS_GRID[7]), EPS_GRID[7], False, "trapezoid")):
        assert out[key] == pytest.approx(epsilon_rank(density, eps, relative, method)), key
    assert out["hessian/lambda_1"] >= out["hessian/lambda_2"] >= out["hessian/lambda_3"]
    ranks = [out[eps_key(e)] for e in EPS_GRID]
    assert all(0 <= r <= 100 for r in ranks) and ranks[-1] <= ranks[0]
