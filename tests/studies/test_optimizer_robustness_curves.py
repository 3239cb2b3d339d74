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


def _results(widths_by_method: dict[str, list[int]], seeds: int):
    """Trials on a 5-point lr grid: a method is at the best loss (1.0) on its first
    ``k`` points on seed s (k from ``widths_by_method[method][s]``), far above elsewhere."""
    from raystudy.contract.results import RunResults, TrialRecord

    lrs = [1e-4, 1e-3, 1e-2, 1e-1, 1.0]
    trials = []
    for method, ks in widths_by_method.items():
        for seed in range(seeds):
            for i, lr in enumerate(lrs):
                loss = 1.0 if i < ks[seed] else 3.0
                trials.append(TrialRecord(
                    f"{method}-{seed}-{i}", {}, "finished", history=[{"eval/loss": loss}],
                    config={"optimizer.name": method, "optimizer.lr": lr, "train.seed": seed}))
    return RunResults(run_dir=None, request={}, trials=trials)


def test_widths_by_seed_use_each_seeds_own_best():
    from raystudy.studies.optimizer_robustness.curves import collect_by_seed, widths_by_seed

    results = _results({"a": [3, 1], "b": [1, 0]}, seeds=2)
    widths = widths_by_seed(collect_by_seed(results, "optimizer.name", "optimizer.lr",
                                            "eval/loss", "train.seed"))
    assert widths == {"a": {0: 2.0, 1: 0.0}, "b": {0: 0.0, 1: 0.0}}  # b never within: 0


def test_analyze_claim_supported_with_seven_seeds_and_inconclusive_with_fewer(tmp_path):
    from raystudy.studies.optimizer_robustness.recipe import analyze

    wide = {"muonmax_momo": [5] * 7, "muon_adam_momo": [4] * 7,
            "muon_adam": [1, 2, 1, 2, 1, 1, 1]}
    analysis = analyze(_results(wide, seeds=7), tmp_path)
    assert [c.verdict for c in analysis.claims] == ["supported", "supported"]
    first = analysis.claims[0]
    assert first.n == 7 and first.effect_size == pytest.approx(4 - 2 / 7)
    assert first.p_value == pytest.approx(2 * 2 / 128)   # exact 2/128, Holm x2
    assert "Holm" in first.test and first.ci_low > 0

    # 6 seeds all agreeing: raw p = 2/64, Holm over two = 0.0625 > 0.05
    six = analyze(_results({k: v[:6] for k, v in wide.items()}, seeds=6), tmp_path)
    assert {c.verdict for c in six.claims} == {"inconclusive at this scale"}
    assert six.claims[0].ci_low > 0 and six.claims[0].p_value == pytest.approx(0.0625)
    assert any(t.title == "Robust width per seed (decades)" for t in analysis.tables)

    few = analyze(_results({k: v[:2] for k, v in wide.items()}, seeds=2), tmp_path)
    assert {c.verdict for c in few.claims} == {"inconclusive at this scale"}
    assert "too few" in few.claims[0].note

    missing = analyze(_results({"muonmax_momo": [5] * 3}, seeds=3), tmp_path)
    assert missing.claims[0].verdict == "inconclusive at this scale"
    assert "muon_adam" in missing.claims[0].note
