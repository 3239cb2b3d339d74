"""The claim test's numbers on constructed histories, and the metrics pass's keys."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from raystudy.algorithms.plasticity import MLP
from raystudy.algorithms.plasticity.analysis import (
    Run,
    claim_test,
    drop_onset,
    r_squared,
)
from raystudy.algorithms.plasticity.metrics import (
    EPS_GRID,
    eps_key,
    feature_metrics,
    hessian_metrics,
)
from raystudy.algorithms.plasticity.ranks import effective_rank, srank


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


def make_run(spec, method, seed, eps_ranks, scores, hessian_every=2):
    rows = []
    for i, score in enumerate(scores):
        row = {"task/index": i + 1, "task/score": score, "eval/late_score": np.mean(scores[-3:])}
        if i % hessian_every == 0:
            row["hessian/eps_rank"] = eps_ranks[i]
            row["hessian/eps_rank_rel"] = 3 * eps_ranks[i]  # a rescaled copy
            for e in EPS_GRID:  # only eps = 0.1 tracks the score exactly
                row[eps_key(e)] = 100 * score if e == 0.1 else eps_ranks[i] + (i % 3) * e
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
    assert claim["best_eps"] == 0.1 and claim["r2_best"] == pytest.approx(1.0)
    # fixed eps: seed-mean points of none and the two l2_er strengths, tasks 3, 5, ..., 11
    x = [eps[i] for i in range(2, tasks, 2)] + [50.0] * 5 + [45.0] * 5
    y = [fall[i] + 0.005 for i in range(2, tasks, 2)] + [0.9] * 5 + [0.85] * 5
    assert claim["points"] == 15
    assert claim["r2_fixed"] == pytest.approx(r_squared(x, y)) and claim["slope_fixed"] > 0
    assert claim["r2_relative"] == pytest.approx(claim["r2_fixed"])  # R^2 is scale-free
    assert claim["onsets"]["eps_first"] == 2  # both seeds of "none"
    assert claim["onsets"]["neither"] == 3     # the flat l2_er runs
    versus = claim["l2er_vs_reset"]["l2_er"]
    assert versus["spec"] == "l2_er/1/1" and versus["at_or_above_reset"]
    assert versus["difference"] == pytest.approx(0.02)


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
    out = hessian_metrics(model, torch.nn.functional.cross_entropy, x, y, iterations=12,
                          top_k=3, eps=0.02, generator=torch.Generator().manual_seed(1))
    assert 0.02 in EPS_GRID and out["hessian/eps_rank"] == out[eps_key(0.02)]
    assert out["hessian/lambda_1"] >= out["hessian/lambda_2"] >= out["hessian/lambda_3"]
    ranks = [out[eps_key(e)] for e in EPS_GRID]
    assert all(a >= b for a, b in zip(ranks, ranks[1:], strict=False))  # falls with eps
    assert 0 <= ranks[-1] <= ranks[0] <= 100
