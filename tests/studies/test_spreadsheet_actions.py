"""The spreadsheet_actions study: the loop without Ray (every condition's metrics, counts
that add up, the openpyxl gate, a resume that neither refits nor replays), the claims on
synthetic trials with their gates, the data command and the file source, bad input as one
line, and a sweep through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from raystudy import LocalContext, RunResults, TrialRecord
from raystudy.algorithms.spreadsheet import generate_trajectory, make_predictor, online_evaluate
from raystudy.cli import main
from raystudy.errors import ConfigError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.spreadsheet_actions.analysis import analyze
from raystudy.studies.spreadsheet_actions.config import SpreadsheetActionsConfig
from raystudy.studies.spreadsheet_actions.data import sheets
from raystudy.studies.spreadsheet_actions.recipe import STUDY, train_loop

TINY = {"data.n_train": 4, "data.n_test": 4, "data.n_rows": 4, "data.n_cols": 3,
        "predictor.steps": 20, "predictor.d_model": 16, "predictor.n_heads": 2,
        "predictor.contexts": [4], "predictor.context": 8, "eval.sheets_per_report": 2}


def config(**overrides) -> SpreadsheetActionsConfig:
    return validate(apply_overrides(SpreadsheetActionsConfig(), {**TINY, **overrides}))


def run(cfg: SpreadsheetActionsConfig, checkpoint=None) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint)
    train_loop(cfg, ctx)
    return ctx


def test_training_and_test_sheets_are_disjoint_and_fixed_by_the_seed():
    cfg = config()
    train, test = sheets(cfg.data, 3)
    assert len(train) == 4 and len(test) == 4
    assert not {tuple(t) for t in train} & {tuple(t) for t in test}
    assert sheets(cfg.data, 3) == (train, test)
    assert sheets(cfg.data, 4)[1] != test


@pytest.mark.parametrize("name", ["fill_pattern", "ngram", "transformer", "oracle"])
def test_the_loop_reports_each_condition_and_its_counts_add_up(name):
    ctx = run(config(**{"predictor.name": name, "data.profile": "column_major"}))
    assert [r["eval/sheets"] for r in ctx.reports] == [2, 4]
    last = ctx.reports[-1]
    assert last["eval/xlsx_mismatches"] == 0 and last["eval/unreached"] == 0
    for prefix in ("eval/", "eval/next_action/", "eval/cheap/", "eval/k4/"):
        assert 0 <= last[prefix + "saved_rate"] <= 1, prefix
        assert last[prefix + "net_saved_rate"] <= last[prefix + "saved_rate"]
    assert ("eval/no_abstain/saved_rate" in last) == (name in ("ngram", "transformer"))
    assert ("eval/context@4/saved_rate" in last) == (name == "transformer")
    # the trial's own rate is the pooled rate of the online loop over its test sheets
    cfg = config(**{"predictor.name": name, "data.profile": "column_major"})
    train, test = sheets(cfg.data, 0)
    if name == "oracle":
        expected = [online_evaluate(t, make_predictor("oracle", trajectory=t)) for t in test]
        assert last["eval/offline_accuracy"] == 1.0
    elif name == "fill_pattern":
        expected = [online_evaluate(t, make_predictor("fill_pattern")) for t in test]
    else:
        return
    assert last["eval/saved_rate"] == pytest.approx(
        sum(r.saved for r in expected) / sum(len(t) for t in test))


def test_a_resumed_trial_neither_refits_nor_replays_and_ends_where_a_whole_one_does():
    cfg = config(**{"predictor.name": "transformer"})
    whole = run(cfg)
    part = run(config(**{"predictor.name": "transformer", "data.n_test": 2}))
    checkpoint = part.last_checkpoint
    checkpoint["fitted"]["main"].marker = "fitted before"     # a refit would drop it
    resumed = run(cfg, checkpoint=checkpoint)
    assert [r["eval/sheets"] for r in resumed.reports] == [4]
    assert resumed.last_checkpoint["fitted"]["main"].marker == "fitted before"
    assert resumed.last_checkpoint["sheets"][:2] == checkpoint["sheets"]
    for key in ("eval/saved_rate", "eval/context@4/saved_rate", "eval/offline_accuracy",
                "eval/cheap/calls_per_user_action"):
        assert resumed.reports[-1][key] == whole.reports[-1][key], key


def _trial(trial_id: str, name: str, profile: str, seed: int, saved: float, **metrics
           ) -> TrialRecord:
    values = {"eval/saved_rate": saved, "eval/net_saved_rate": saved - 0.05,
              "eval/next_action/saved_rate": saved - 0.03, "eval/cheap/saved_rate": saved,
              "eval/calls_per_user_action": 1.2, "eval/cheap/calls_per_user_action": 0.4,
              "eval/offline_accuracy": 0.2, "ref/repeat/offline_accuracy": 0.0,
              "eval/xlsx_mismatches": 0.0, "eval/sheets": 6.0, "data/test_sheets": 6.0,
              "eval/unreached": 0.0, "kind/INPUT/saved_rate": saved, **metrics}
    if name in ("ngram", "transformer"):
        values.update({"eval/no_abstain/saved_rate": saved,
                       "eval/no_abstain/net_saved_rate": saved - 0.09})
    if name == "transformer":
        values.update({"eval/context@4/saved_rate": saved - 0.04,
                       "eval/context@4/offline_accuracy": 0.15,
                       "eval/context@8/saved_rate": saved - 0.02,
                       "eval/context@8/offline_accuracy": 0.18})
    settings = {"predictor.name": name, "data.profile": profile, "run.seed": seed,
                "predictor.context": 32, "predictor.threshold": 0.3, "eval.trigger": "always",
                "data.source": "generated", "data.n_rows": 8, "data.n_cols": 4}
    return TrialRecord(trial_id, settings, "TERMINATED", [values], config=settings)


def _results(mismatches: float = 0.0) -> RunResults:
    rng = np.random.default_rng(0)
    trials = []
    for seed in range(6):
        for profile, shift in (("row_major", 0.0), ("column_major", 0.08)):
            for name, base in (("ngram", 0.2), ("transformer", 0.25), ("oracle", 0.98)):
                trials.append(_trial(f"{name}{profile}{seed}", name, profile, seed,
                                     base + shift + 0.01 * rng.standard_normal(),
                                     **{"eval/xlsx_mismatches": mismatches}))
    return RunResults(Path("."), {}, trials)


def _claim(analysis, prefix: str, case: str = ""):
    return next(c for c in analysis.claims if c.statement.startswith(prefix) and case in
                c.statement)


def test_the_claims_read_their_gates(tmp_path):
    good = analyze(_results(), tmp_path)
    assert _claim(good, "N1", "ngram").verdict == "supported"
    assert not any(c.statement.startswith("N1") and "oracle" in c.statement
                   for c in good.claims)
    assert _claim(good, "N2", "transformer").verdict == "supported"
    assert _claim(good, "N3a", "ngram").verdict == "supported"       # 0.4 < 0.5 x 1.2
    assert _claim(good, "N3b", "ngram").verdict == "supported"
    assert _claim(good, "N4").verdict == "supported"
    n5 = _claim(good, "N5", "column_major")
    assert n5.verdict == "supported" and n5.effect.startswith("saved rate: column_major")
    assert [c.verdict for c in good.claims[-3:]] == ["not run"] * 3
    assert all("generated" in c.scope for c in good.claims if c.verdict != "not run")
    # a state model that disagrees with openpyxl gates every tested row
    bad = analyze(_results(mismatches=2.0), tmp_path)
    tested = [c for c in bad.claims if c.verdict != "not run"]
    assert tested and all(c.verdict == "precondition failed" for c in tested)
    assert "openpyxl" in tested[0].note


def test_the_context_claim_needs_a_transformer_that_beats_repeat(tmp_path):
    results = _results()
    for t in results.trials:
        t.history[-1]["ref/repeat/offline_accuracy"] = 0.5
    row = _claim(analyze(results, tmp_path), "N4")
    assert row.verdict == "precondition failed" and "beats repeat" in row.note


def test_the_data_command_writes_what_the_file_source_reads(tmp_path, capsys):
    folder = tmp_path / "sheets"
    assert main(["data", "make-spreadsheets", str(folder), "--sheets", "2", "--rows", "3",
                 "--cols", "3", "--profile", "column_major"]) == 0
    assert sorted(p.name for p in folder.iterdir()) == [
        "sheet_00000.txt", "sheet_00000.xlsx", "sheet_00001.txt", "sheet_00001.xlsx"]
    cfg = config(**{"data.source": "file", "data.path": str(folder),
                    "predictor.name": "fill_pattern"})
    train, test = sheets(cfg.data, 0)
    assert test == [generate_trajectory(s, "column_major", n_rows=3, n_cols=3)
                    for s in (0, 1)]
    last = run(cfg).reports[-1]
    assert last["data/test_sheets"] == 2 and last["eval/xlsx_mismatches"] == 0


def test_bad_input_is_one_line(tmp_path, capsys):
    with pytest.raises(ConfigError, match="eval.conditions"):
        config(**{"eval.conditions": ["always_accept"]})
    with pytest.raises(ConfigError, match="predictor.name"):
        config(**{"predictor.name": "gpt5"})
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.txt").write_text("INPUT | A1 | \"x\"\nPAINT | A1 | red\n")
    for path, expected in ((tmp_path / "none", "make-spreadsheets"),
                           (tmp_path / "bad", "a.txt:2")):
        assert main(["run", "spreadsheet_actions", "--in-process", "--set",
                     "data.source=file", "--set", f"data.path={path}", "--storage",
                     str(tmp_path / "runs")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected in err[0], err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.json"))


@pytest.mark.ray
def test_a_sweep_through_the_cli_reads_every_claim(tmp_path, ray_session):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  predictor.name: {grid: [ngram, transformer]}\n"
                     "  data.profile: {grid: [row_major, column_major]}\n"
                     "  run.seed: {grid: [0]}\n")
    assert main(["sweep", "spreadsheet_actions", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "q",
                 *[a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]]) == 0
    run_dir = tmp_path / "runs" / "q"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["finished"] == 4, summary["counts"]
    verdicts = {c["statement"].split(":")[0]: c["verdict"] for c in summary["claims"]}
    assert {"N1", "N2", "N3a", "N3b", "N4", "N5"} <= set(verdicts)
    assert all(c["scope"] for c in summary["claims"])
    assert all(math.isfinite(c["effect_size"]) for c in summary["claims"]
               if c["verdict"] != "not run" and c["statement"].startswith("N1"))
    assert (run_dir / "figures" / "saved_rates.png").exists()
