"""The claim check and the figures of a comparison, from hand-made scores."""

from __future__ import annotations

import math

from raystudy.studies.contrastive_imitation.comparison import (
    claim,
    mean_std,
    plot_final_scores,
    plot_learning_curves,
)


def test_claim_ignores_the_oracle_and_uses_the_larger_std_as_margin():
    scores = {"dualcoil": [10.0, 12.0], "bc_all": [5.0, 7.0], "demodice": [13.0, 15.0],
              "bc_oracle": [100.0, 100.0], "dwbc": [float("nan"), 1.0]}
    verdict = claim(scores)
    assert verdict["best_baseline"] == "demodice" and verdict["best_baseline_score"] == 14.0
    assert verdict["ahead_of_bc_all"] and not verdict["level_with_best"]  # 11 < 14 - 1
    scores["demodice"] = [11.0, 13.0]  # 12 - 1 = 11 <= 11: level
    assert claim(scores)["level_with_best"]
    assert claim({"bc_all": [1.0]}) == {}
    assert mean_std([1.0, float("inf"), 3.0]) == (2.0, 1.0)
    assert all(math.isnan(v) for v in mean_std([]))


def test_figures_are_written(tmp_path):
    curves = {"random/1/10/30": {"dualcoil": [[(1, 0.0), (2, 5.0)], [(1, 2.0), (2, 3.0)]],
                                 "bc_oracle": [[(1, 50.0), (2, 100.0)]]}}
    scores = {"random/1/10/30": {"dualcoil": [5.0, 3.0], "bc_oracle": [100.0]}}
    for path in (plot_learning_curves(curves, tmp_path / "c.png"),
                 plot_final_scores(scores, tmp_path / "s.png")):
        assert path.stat().st_size > 10_000
