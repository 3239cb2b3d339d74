"""Reading a run folder back (raystudy/platform/results.py) from Tune's own files."""

from __future__ import annotations

import json

import pytest

from raystudy.platform.runs.results import load_results


def test_a_step_redone_after_a_restore_is_read_once_the_later_report_kept(tmp_path):
    """Tune appends the steps a restored trial redoes after its checkpoint: iterations
    1, 2, 3 then (restored from the checkpoint at 1) 2, 3, 4 read as 1, 2', 3', 4."""
    run = tmp_path / "run"
    (run / "t").mkdir(parents=True)
    (run / "raystudy.json").write_text(json.dumps({"study": "x", "kind": "run"}))
    trial = {"trial_id": "t0", "config": {}, "status": "TERMINATED", "relative_logdir": "t"}
    (run / "experiment_state-1.json").write_text(json.dumps(
        {"trial_data": [[json.dumps(trial), json.dumps({})]]}))
    rows = [(1, "a"), (2, "a"), (3, "a"), (2, "b"), (3, "b"), (4, "b")]
    (run / "t" / "result.json").write_text("".join(
        json.dumps({"training_iteration": i, "leg": leg}) + "\n" for i, leg in rows)
        + '{"training_iteration": 5, "le')               # a line cut short by a crash
    (only,) = load_results(run).trials
    assert [(r["training_iteration"], r["leg"]) for r in only.history] == [
        (1, "a"), (2, "b"), (3, "b"), (4, "b")]
    assert only.status == "finished"


def test_last_checkpoint_is_the_newest_state_or_none(tmp_path):
    import torch

    from raystudy.contract.results import TrialRecord

    trial = TrialRecord("t0", {}, "finished", logdir=tmp_path)
    assert trial.last_checkpoint() is None
    assert TrialRecord("t1", {}, "finished").last_checkpoint() is None  # not a local run
    for i in (0, 2, 1):
        (tmp_path / f"checkpoint_{i:06d}").mkdir()
        torch.save({"step": i}, tmp_path / f"checkpoint_{i:06d}" / "state.pt")
    assert trial.last_checkpoint() == {"step": 2}


def test_the_analysis_helpers_read_seeds_pairs_and_finite_means():
    from raystudy import TrialRecord, by_seed, mean_metric, paired

    def trial(seed, value):
        return TrialRecord(f"t{seed}", {"train.seed": seed}, "finished",
                           history=[{"acc": value}])

    trials = [trial(0, 0.5), trial(0, 0.7), trial(1, float("nan")), trial(2, 0.9)]
    assert mean_metric(trials, "acc") == pytest.approx(0.7)     # the nan left out
    assert mean_metric(trials[2:3], "acc") != mean_metric(trials[2:3], "acc")  # nan
    assert by_seed(trials, "acc") == pytest.approx({0: 0.6, 2: 0.9})
    assert by_seed([TrialRecord("x", {"run.seed": 4}, "finished", history=[{"acc": 1.0}])],
                   "acc", seed_key="run.seed") == {4: 1.0}
    assert paired({2: 0.9, 0: 0.6, 5: 1.0}, {0: 0.1, 2: 0.2, 3: 0.3}) == ([0.6, 0.9], [0.1, 0.2])
