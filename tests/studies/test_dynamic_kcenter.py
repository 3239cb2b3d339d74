"""The dynamic_kcenter study: the loop without Ray (costs against hand counts, the extent
against scipy's pdist, the references against the algorithm layer on the same rows, no
violation on any stream, a bit-identical resume), the claims on synthetic trials (their
preconditions, Holm's reach, the rows not run), bad input as one line, the make-kcenter
CSV read back exactly, and a sweep through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from raystudy import LocalContext, RunResults, TrialRecord
from raystudy.algorithms.kcenter import exact_kcenter, generate, offline_greedy
from raystudy.cli import main
from raystudy.errors import ConfigError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.dynamic_kcenter.analysis import analyze
from raystudy.studies.dynamic_kcenter.config import ALGORITHMS, STREAMS, DynamicKCenterConfig
from raystudy.studies.dynamic_kcenter.data import check_data, points_of
from raystudy.studies.dynamic_kcenter.recipe import STUDY, train_loop

LS, RG, OR = ALGORITHMS
TINY = {"stream.window": 200, "stream.updates": 200, "eval.every": 50, "problem.z": 4,
        "eval.tiny_n": 12}
"""200 rows in the window, then 200 updates (300 rows read), z = 4: the generator places
round(4 * 300 / 200) = 6 outliers; budget floor(1.5 * 4) = 6; 4 evaluations."""


def _config(**overrides) -> DynamicKCenterConfig:
    return validate(apply_overrides(DynamicKCenterConfig(), {**TINY, **overrides}))


def _run(cfg: DynamicKCenterConfig, checkpoint=None) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint)
    train_loop(cfg, ctx)
    return ctx


@pytest.mark.parametrize("name", ALGORITHMS)
def test_the_loop_reports_costs_and_references_that_independent_code_reproduces(name):
    reports = _run(_config(**{"algorithm.name": name, "data.log10_delta": 9})).reports
    assert [r["progress/step"] for r in reports] == [50, 100, 150, 200]
    last = reports[-1]
    X = generate("twins", 300, d=2, k=5, z=6, log10_delta=9, seed=0)
    D = pdist(X)
    assert last["data/log10_delta_realised"] == pytest.approx(math.log10(D.max() / D.min()),
                                                              abs=1e-9)
    assert abs(last["data/log10_delta_realised"] - 9) < 0.5
    # after 200 sliding-window updates rows 100..299 are live (100 inserted, 100 deleted)
    live = X[100:300]
    assert last["data/n_live"] == 200
    assert last["data/offline_radius"] == offline_greedy(live, 5, 4).radius
    assert last["eval/ratio_vs_offline"] == pytest.approx(last["eval/radius"]
                                                          / last["data/offline_radius"])
    assert last["eval/violations"] == 0 and last["eval/queries"] == 4
    assert last["eval/centers"] <= 5 and last["eval/outliers_used"] <= 6
    # the tiny instance: no answer discarding <= floor(1.5 * 2) = 3 points beats OPT with 3
    tiny = X[288:300]
    floor = exact_kcenter(tiny, 5, 3).radius / exact_kcenter(tiny, 5, 2, method="milp").radius
    assert last["eval/ratio_vs_opt"] >= floor - 1e-12
    if name == OR:   # a query is the greedy on every pair; an update evaluates nothing
        assert last["eval/dist_evals_per_query"] == 200 * 199 / 2
        assert last["eval/dist_evals_per_update"] == 0
    if name == RG:   # levels d_min (1 + eps)^i up to d_max, from scipy's extremes
        assert last["algo/levels"] == 1 + math.ceil(math.log(D.max() / D.min()) / math.log1p(0.5))
    if name in (LS, OR):   # the greedy with budget 3 on 12 points (LS: all in U) is within 3
        assert last["eval/ratio_vs_opt"] <= 3 + 1e-9
    if name == LS:
        assert last["eval/dist_evals_per_update"] > 0 and last["algo/builds"] >= 1


class _Crash(Exception):
    pass


class _Interrupted(LocalContext):
    """Dies right after the report that carries the second evaluation's checkpoint."""

    def _send(self, metrics, checkpoint):
        super()._send(metrics, checkpoint)
        if checkpoint is not None and len(self.reports) == 2:
            raise _Crash


def _without_time(reports: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in reports]


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("name", ALGORITHMS)
def test_a_resumed_trial_is_bit_identical_and_no_stream_breaks_an_invariant(name, stream):
    cfg = _config(**{"algorithm.name": name, "stream.kind": stream, "data.log10_delta": 12})
    full = _run(cfg)
    part = _Interrupted(STUDY.metrics)
    with pytest.raises(_Crash):
        train_loop(cfg, part)
    resumed = _run(cfg, checkpoint=part.last_checkpoint)
    assert [r["progress/step"] for r in resumed.reports] == [150, 200]
    assert _without_time(part.reports + resumed.reports) == _without_time(full.reports)
    assert full.reports[-1]["eval/violations"] == 0     # delete_centers: no dead center
    assert all(math.isfinite(v) for v in full.reports[-1].values())


# ----------------------------------------------------------------------------- claims
_CELL = {"data.kind": "twins", "data.d": 2, "stream.kind": "sliding_window",
         "stream.window": 2000, "stream.updates": 4000, "problem.k": 5, "problem.z": 20,
         "problem.z_per_window": 0.0, "problem.eps": 0.5}


def _trial(name: str, target: float, seed: int, update: float, query: float, ratio: float,
           offline: float, violations: float = 0.0) -> TrialRecord:
    metrics = {"eval/dist_evals_per_update": update, "eval/dist_evals_per_query": query,
               "eval/radius": ratio * offline, "eval/ratio_vs_offline_mean": ratio,
               "eval/ratio_vs_offline_max": ratio, "eval/ratio_vs_opt_max": 1.2,
               "eval/ratio_vs_opt_mean": 1.1, "eval/violations": violations,
               "eval/queries": 8.0, "data/offline_radius_mean": offline, "data/z": 20.0,
               "data/log10_delta_target": target,
               "data/log10_delta_realised": max(target, 2.77),   # the twins' floor
               "time/update_us": 10.0, "time/query_ms": 1.0}
    settings = {**_CELL, "algorithm.name": name, "data.log10_delta": target, "seed": seed}
    return TrialRecord(f"{name}-{target:g}-{seed}", settings, "TERMINATED", [metrics],
                       config=settings)


def _results(seeds: int = 8, spread: float = 0.0, violations: float = 0.0,
             algorithms: tuple[str, ...] = ALGORITHMS) -> RunResults:
    """LS's costs flat in Delta, RG's growing by e^0.2 (update) and e^0.03 (query) per
    realised decade, one noise factor per seed shared by every Delta (so the per-seed
    slopes are exact); the offline radius moves by ``spread`` at Delta = 1e12."""
    rng = np.random.default_rng(0)
    trials = []
    for seed in range(seeds):
        noise = 1 + 0.03 * rng.standard_normal()
        for target in (2.0, 6.0, 12.0):
            x = max(target, 2.77) - 2.77
            offline = 30.0 * (1 + spread * (target == 12.0))
            rows = {LS: (235 * noise, 55_000 * noise, 0.9 + 0.01 * seed),
                    RG: (224 * noise * math.exp(0.2 * x), 2_000 * noise * math.exp(0.03 * x),
                         5.0),
                    OR: (0.0, 1_999_000.0, 0.9)}
            trials += [_trial(name, target, seed, *rows[name], offline,
                              violations if name == LS else 0.0) for name in algorithms]
    return RunResults(Path("."), {}, trials)


def _claim(analysis, prefix: str, words: str = ""):
    return next(c for c in analysis.claims if c.statement.startswith(prefix)
                and words in c.statement)


def test_the_claims_pair_seeds_under_holm_and_name_their_scope(tmp_path):
    good = analyze(_results(), tmp_path)
    k1 = _claim(good, "K1", "below RG's")
    assert k1.verdict == "supported" and k1.n == 8
    assert k1.effect_size == pytest.approx(-0.2)              # LS 0, RG 0.2 per decade
    assert k1.p_value == pytest.approx(6 / 2**8)              # Holm over six exact tests
    assert "Holm-adjusted p over 6 tests" in k1.test
    assert _claim(good, "K1", "below 0.05").effect_size == pytest.approx(-0.05)
    assert _claim(good, "K2", "below RG's").effect_size == pytest.approx(-0.03)
    k3 = _claim(good, "K3")
    assert "1e12" in k3.statement and k3.verdict == "supported"
    assert k3.effect_size == pytest.approx(math.log(235 / 224) - 0.2 * (12 - 2.77))
    assert _claim(good, "K4").verdict == "supported"
    assert [c.verdict for c in good.claims[-5:]] == ["not run"] * 5
    assert all(c.verdict == "supported" for c in good.claims[:-5])
    for c in good.claims[:-5]:
        for words in ("twins", "n = 2000", "k = 5", "z = 20", "eps = 0.5", "2-12",
                      "operation counts"):
            assert words in c.scope, (words, c.scope)
    assert [f.name for _, f in good.figures] == ["cost_vs_delta.png", "ratio_vs_delta.png"]
    assert all(f.stat().st_size > 10_000 for _, f in good.figures)
    assert len(good.tables[0].rows) == 9          # 3 algorithms x 3 Delta


def test_a_failed_precondition_gates_only_the_claims_that_need_it(tmp_path):
    moved = analyze(_results(spread=0.2), tmp_path)     # the offline radius moves 20 %
    for prefix in ("K1", "K2", "K3"):
        row = _claim(moved, prefix)
        assert row.verdict == "precondition failed"
        assert "precondition failed: Delta is isolated" in row.note and "20.0%" in row.note
    assert _claim(moved, "K4").verdict == "supported"
    broken = analyze(_results(violations=1.0), tmp_path)
    k4 = _claim(broken, "K4")
    assert k4.verdict == "precondition failed" and "24 violations over 192 queries" in k4.note
    assert _claim(broken, "K1").verdict == "supported"


def test_six_seeds_cannot_reach_holm_and_a_missing_arm_is_a_row(tmp_path):
    six = analyze(_results(seeds=6), tmp_path)
    row = _claim(six, "K1", "below RG's")
    assert row.p_value == pytest.approx(6 / 2**6) and row.verdict.startswith("inconclusive")
    alone = analyze(_results(algorithms=(LS,)), tmp_path)
    row = _claim(alone, "K1", "below RG's")
    assert row.verdict.startswith("inconclusive") and row.n == 0 and "not both" in row.note
    assert _claim(alone, "K1", "below 0.05").n == 8


# ----------------------------------------------------------------------------- bad input
def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_bad_input_is_one_line(tmp_path, capsys):
    with pytest.raises(ConfigError, match="problem.k"):
        _config(**{"problem.k": 0})
    with pytest.raises(ConfigError, match="delay"):
        _config(**{"algorithm.delay": 50})      # more than floor(1.5 * 4) - 4 = 2
    with pytest.raises(ConfigError, match="data.path"):
        _config(**{"data.kind": "file"})
    base = ["run", "dynamic_kcenter", "--in-process", "--storage", str(tmp_path)]
    assert main([*base, "--set", "problem.k=0"]) == 2
    assert "problem.k" in _one_line(capsys)
    bad = tmp_path / "bad.csv"
    bad.write_text("x1,x2\n0.5,1.5\n0.25,oops\n")
    assert main([*base, "--set", "data.kind=file", "--set", f"data.path={bad}"]) == 2
    line = _one_line(capsys)
    assert "line 3" in line and "non-numeric" in line
    nan = tmp_path / "nan.csv"
    nan.write_text("1.0,2.0\nnan,3.0\n")
    assert main([*base, "--set", "data.kind=file", "--set", f"data.path={nan}"]) == 2
    assert "NaN" in _one_line(capsys)
    assert main([*base, "--set", "data.kind=file", "--set",
                 f"data.path={tmp_path / 'none.csv'}"]) == 2
    line = _one_line(capsys)
    assert "no such file" in line and "make-kcenter" in line


def test_make_kcenter_writes_the_csv_the_file_kind_reads_exactly(tmp_path, capsys):
    path = tmp_path / "points.csv"
    assert main(["data", "make-kcenter", str(path), "--rows", "300", "--z", "6",
                 "--log10-delta", "9"]) == 0
    cfg = _config(**{"data.kind": "file", "data.path": str(path)})
    check_data(cfg)
    np.testing.assert_array_equal(points_of(cfg), generate("twins", 300, d=2, k=5, z=6,
                                                           log10_delta=9, seed=0))
    last = _run(cfg).reports[-1]
    assert last["eval/violations"] == 0 and "data/log10_delta_target" not in last
    capsys.readouterr()
    assert main(["data", "make-kcenter", str(tmp_path)]) == 2
    assert "is a folder" in _one_line(capsys)


# ----------------------------------------------------------------------------- sweep
@pytest.mark.ray
def test_a_sweep_through_the_cli_reads_every_claim(tmp_path, ray_session):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  algorithm.name: {grid: [layered_reconstructed, "
                     "radius_guessing]}\n  data.log10_delta: {grid: [3, 12]}\n"
                     "  seed: {grid: [0]}\n")
    assert main(["sweep", "dynamic_kcenter", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "q",
                 *[a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]]) == 0
    run_dir = tmp_path / "runs" / "q"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["finished"] == 4, summary["counts"]
    verdicts = [(c["statement"].split(":")[0], c["verdict"]) for c in summary["claims"]]
    assert {"K1", "K2", "K3", "K4"} <= {label for label, _ in verdicts}
    assert sum(v == "not run" for _, v in verdicts) == 5
    assert all(v in ("inconclusive at this scale", "precondition failed", "not run")
               for _, v in verdicts)   # one seed: too few for a verdict
    assert all(c["scope"] for c in summary["claims"])
    for figure in ("cost_vs_delta.png", "ratio_vs_delta.png"):
        assert (run_dir / "figures" / figure).exists()
