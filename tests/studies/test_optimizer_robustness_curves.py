"""Robustness metrics on hand-computed curves."""

from __future__ import annotations

import math

import pytest

from raystudy.platform.configuration.spaces import log_grid
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


HALF_DECADES = log_grid(1e-4, 1.0, 9)
"""1e-4 .. 1 in half-decade steps, rounded as ``loggrid`` rounds: the shipped spaces' grid."""


def _results(spans: dict[str, list[tuple[int, int]]], grid=HALF_DECADES, best=None,
             configs=None):
    """Trials on a learning-rate grid: on seed s a method is at its best loss (1.0, or
    ``best[method]``) on the grid points ``spans[method][s]`` (first, last) and far above
    it (3.0) elsewhere; ``configs`` adds config keys to every trial."""
    from raystudy.contract.results import RunResults, TrialRecord

    trials = []
    for method, per_seed in spans.items():
        for seed, (first, last) in enumerate(per_seed):
            for i, lr in enumerate(grid):
                loss = (best or {}).get(method, 1.0) if first <= i <= last else 3.0
                trials.append(TrialRecord(
                    f"{method}-{seed}-{i}", {}, "finished", history=[{"eval/loss": loss}],
                    config={"optimizer.name": method, "optimizer.lr": lr, "train.seed": seed,
                            **(configs or {})}))
    return RunResults(run_dir=None, request={}, trials=trials)


def _tested(claims):
    return [c for c in claims if c.verdict != "not run"]


def test_widths_by_seed_use_each_seeds_own_best():
    from raystudy.studies.optimizer_robustness.curves import collect_by_seed, widths_by_seed

    results = _results({"a": [(0, 2), (0, 0)], "b": [(0, 0), (9, 9)]},
                       grid=[1e-4, 1e-3, 1e-2, 1e-1, 1.0])
    widths = widths_by_seed(collect_by_seed(results, "optimizer.name", "optimizer.lr",
                                            "eval/loss", "train.seed"))
    assert widths == {"a": {0: 2.0, 1: 0.0}, "b": {0: 0.0, 1: 0.0}}  # b never within: 0


def test_robust_span_is_the_widest_run_in_decades():
    from raystudy.studies.optimizer_robustness.curves import robust_span

    xs = [1e-4, 1e-3, 1e-2, 1e-1, 1.0]
    assert robust_span(xs, [1, 5, 1, 1, 5], threshold=1.1) == (2, 3)
    assert robust_span(xs, [1, 1, 5, 1, 1], threshold=1.1) == (0, 1)  # first of equals
    assert robust_span(xs, [5, 5, 5, 5, 5], threshold=1.1) is None


WIDE = {"muonmax_momo": [(1, 7)] * 7, "muon_adam_momo": [(2, 7)] * 7,
        "muon_adam": [(3, 4), (3, 5), (3, 4), (3, 5), (3, 4), (3, 4), (3, 4)]}
"""Momo ranges of 3 and 2.5 decades, MuonAdam's of 0.5 or 1, all inside the grid."""


def test_analyze_claim_supported_with_seven_seeds_and_inconclusive_with_fewer(tmp_path):
    from raystudy.studies.optimizer_robustness.analysis import CLAIM, analyze

    analysis = analyze(_results(WIDE), tmp_path)
    width_rows = [c for c in analysis.claims if c.statement.startswith(f"{CLAIM} (")]
    assert [c.verdict for c in width_rows] == ["supported", "supported"]
    first = width_rows[0]
    assert first.n == 7 and first.effect_size == pytest.approx(3 - 4.5 / 7, abs=1e-3)
    assert first.p_value == pytest.approx(2 * 2 / 128)   # exact 2/128, Holm x2
    assert "Holm" in first.test and first.ci_low > 0
    assert "grid step 0.5 decade" in first.effect and "0 of 7 seeds tie" in first.note
    assert all(p.holds for p in first.preconditions)
    assert any(t.title == "Robust width per seed (decades)" for t in analysis.tables)

    # 6 seeds all agreeing: raw p = 2/64, Holm over two = 0.0625 > 0.05
    six = analyze(_results({k: v[:6] for k, v in WIDE.items()}), tmp_path)
    six_rows = [c for c in six.claims if c.statement.startswith(f"{CLAIM} (")]
    assert {c.verdict for c in six_rows} == {"inconclusive at this scale"}
    assert six_rows[0].ci_low > 0 and six_rows[0].p_value == pytest.approx(0.0625)

    few = analyze(_results({k: v[:2] for k, v in WIDE.items()}), tmp_path)
    assert {c.verdict for c in _tested(few.claims)} == {"inconclusive at this scale"}
    assert "too few" in few.claims[0].note

    missing = analyze(_results({"muonmax_momo": [(1, 7)] * 3}), tmp_path)
    assert missing.claims[0].verdict == "inconclusive at this scale"
    assert "muon_adam" in missing.claims[0].note


def test_a_baseline_range_cut_at_the_grids_edge_fails_the_precondition(tmp_path):
    """MuonAdam near the best from the grid's first point: its width is a lower bound, so
    the wider Momo ranges cannot be read against it."""
    from raystudy.studies.optimizer_robustness.analysis import CLAIM, analyze

    cut = analyze(_results(dict(WIDE, muon_adam=[(0, 1)] * 7)), tmp_path)
    rows = [c for c in cut.claims if c.statement.startswith(f"{CLAIM} (")]
    assert [c.verdict for c in rows] == ["precondition failed"] * 2
    (failed,) = rows[0].failed_preconditions
    assert "inside the learning-rate grid" in failed.statement
    assert failed.evidence.startswith("at the grid's edge on 7 of 7 seeds")
    assert rows[0].effect_size > 0 and "precondition failed" in rows[0].note


def test_a_grid_coarser_than_half_a_decade_fails_the_resolution_precondition(tmp_path):
    from raystudy.studies.optimizer_robustness.analysis import CLAIM, analyze

    coarse = [10 ** (-4 + 0.8 * i) for i in range(6)]
    spans = {"muonmax_momo": [(1, 4)] * 7, "muon_adam_momo": [(1, 4)] * 7,
             "muon_adam": [(2, 3)] * 7}
    rows = [c for c in analyze(_results(spans, grid=coarse), tmp_path).claims
            if c.statement.startswith(f"{CLAIM} (")]
    assert {c.verdict for c in rows} == {"precondition failed"}
    (failed,) = rows[0].failed_preconditions
    assert "at most 0.5 decade" in failed.statement and "largest step 0.8" in failed.evidence


def test_the_abstracts_readings_muonmax_width_and_best_loss(tmp_path):
    from raystudy.studies.optimizer_robustness.analysis import (
        BEST_LOSS_CLAIM,
        MUONMAX_CLAIM,
        analyze,
    )

    spans = dict(WIDE, muonmax=[(2, 6)] * 7)
    best = {"muonmax_momo": 0.95, "muon_adam_momo": 0.97}  # all within 10 % of 0.95
    analysis = analyze(_results(spans, best=best), tmp_path)
    (muonmax,) = [c for c in analysis.claims if c.statement == MUONMAX_CLAIM]
    assert muonmax.verdict == "supported" and "Holm" not in muonmax.test
    lower = [c for c in analysis.claims if c.statement.startswith(BEST_LOSS_CLAIM)]
    assert [c.verdict for c in lower] == ["supported", "supported"]
    assert lower[0].effect_size == pytest.approx(-0.05)
    without = analyze(_results(WIDE), tmp_path)
    (missing,) = [c for c in without.claims if c.statement == MUONMAX_CLAIM]
    assert missing.verdict == "not run" and "muonmax" in missing.note


def test_every_claim_names_the_stand_in_and_the_paper_scale_is_not_run(tmp_path):
    from raystudy.studies.optimizer_robustness.analysis import PAPER_SCALE, analyze

    analysis = analyze(_results(WIDE), tmp_path)
    for claim in _tested(analysis.claims):
        assert "a stand-in for FineWeb, not FineWeb" in claim.scope and "CPU" in claim.scope
    (not_run,) = [c for c in analysis.claims if c.scope == PAPER_SCALE]
    assert not_run.verdict == "not run" and analysis.claims[-1] is not_run
    gpt2 = analyze(_results(WIDE, configs={"data.source": "tokens", "data.path": "/tok",
                                           "model.d_model": 768}), tmp_path)
    assert not [c for c in gpt2.claims if c.scope == PAPER_SCALE]
    assert "token files at /tok" in gpt2.claims[0].scope
