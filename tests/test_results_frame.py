"""RunResults.frame() and TrialRecord.setting(): the run as a long table and a trial's
settings, checked against the records by hand."""

from __future__ import annotations

import math
from pathlib import Path

from raystudy import RunResults, TrialRecord


def _results() -> RunResults:
    return RunResults(Path("run"), {}, [
        TrialRecord("a", {"optimizer.lr": 0.1, "seed": 0}, "finished",
                    history=[{"eval/loss": 3.0}, {"eval/loss": 1.5, "eval/acc": 0.5,
                                                  "node_id": "n1", "done": True}]),
        TrialRecord("b", {"optimizer.lr": 0.01, "seed": 1}, "diverged",
                    history=[{"eval/loss": math.inf, "diverged": 1}],
                    config={"optimizer.lr": 0.01, "seed": 1, "steps": 10}),
        TrialRecord("c", {"optimizer.lr": 0.3, "seed": 2}, "unfinished"),
    ])


def test_one_row_per_trial_and_final_numeric_metric() -> None:
    frame = _results().frame()
    assert list(frame.columns[:4]) == ["trial_id", "status", "metric", "value"]
    rows = {(r.trial_id, r.metric): r for r in frame.itertuples()}
    assert set(rows) == {("a", "eval/loss"), ("a", "eval/acc"), ("b", "eval/loss"),
                         ("b", "diverged")}  # the last report only; text and bools left out
    assert rows["a", "eval/loss"].value == 1.5
    assert math.isinf(rows["b", "eval/loss"].value)
    assert rows["b", "eval/loss"].status == "diverged"


def test_config_keys_are_columns_and_group() -> None:
    frame = _results().frame()
    assert frame.loc[frame.trial_id == "b", "steps"].iloc[0] == 10  # the filled config
    assert math.isnan(frame.loc[frame.trial_id == "a", "steps"].iloc[0])
    loss = frame[frame.metric == "eval/loss"].groupby("optimizer.lr")["value"].min()
    assert loss[0.1] == 1.5


def test_an_empty_run_is_an_empty_frame_with_the_columns() -> None:
    frame = RunResults(Path("run"), {}, []).frame()
    assert frame.empty and list(frame.columns) == ["trial_id", "status", "metric", "value"]


def test_a_setting_reads_the_config_then_the_params_then_the_default() -> None:
    a, b, _ = _results().trials
    assert b.setting("steps") == 10                 # only in the full config
    assert a.setting("optimizer.lr") == 0.1         # no config: the swept params
    assert a.setting("steps", 7) == 7 and a.setting("steps") is None
    b.config["seed"] = 5                            # the config wins over the params
    assert b.setting("seed") == 5
