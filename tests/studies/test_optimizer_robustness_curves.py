"""Robustness metrics on hand-computed curves."""

from __future__ import annotations

import math

import pytest

from raystudy.studies.optimizer_robustness.curves import (
    plot_curves,
    point_stats,
    robust_width,
    robustness_table,
)


def test_point_stats_mean_std_and_divergence():
    assert point_stats([1.0, 3.0]) == (2.0, 1.0)
    mean, std = point_stats([1.0, math.inf])
    assert mean == math.inf and math.isnan(std)


def test_robust_width_longest_run_in_decades():
    xs = [1e-4, 1e-3, 1e-2, 1e-1, 1.0]
    assert robust_width(xs, [5, 1, 1, 5, 1], threshold=1.1) == pytest.approx(1.0)
    assert robust_width(xs, [1, 1, 1, 1, 1], threshold=1.1) == pytest.approx(4.0)
    assert robust_width(xs, [5, 5, 1, 5, 5], threshold=1.1) == 0.0
    assert robust_width(xs, [5, 5, 5, 5, 5], threshold=1.1) is None


def test_robustness_table_against_hand_computation(tmp_path):
    curves = {
        "a": {1e-3: [2.0, 2.2], 1e-2: [1.0, 1.0], 1e-1: [1.05, 1.05]},
        "b": {1e-3: [1.5, 1.5], 1e-2: [math.inf, 1.0], 1e-1: [9.0, 9.0]},
    }
    table, summary = robustness_table(curves, tolerance=0.10)
    assert summary["best_overall"] == 1.0
    a, b = summary["methods"]["a"], summary["methods"]["b"]
    assert a["best"] == 1.0 and a["best_x"] == 1e-2
    assert a["robust_width_decades"] == pytest.approx(1.0)  # 1e-2 and 1e-1 within 1.1
    assert b["best"] == 1.5 and b["robust_width_decades"] is None and b["diverged_trials"] == 1
    assert table.rows[0][0] == "a" and table.rows[0][4] == pytest.approx(1.0)
    path = plot_curves(curves, tmp_path / "c.png", "lr", "loss", threshold=1.1)
    assert path.stat().st_size > 1000
