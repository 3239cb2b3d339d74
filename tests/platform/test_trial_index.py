"""The run's trial index (raystudy/platform/runs/trials.py) and its Tune-side writer
(raystudy/platform/execution/trial_index.py), without starting Ray."""

from __future__ import annotations

import json
import pickle
from types import SimpleNamespace

import pytest

from raystudy.errors import DataError
from raystudy.platform.runs.results import load_results
from raystudy.platform.runs.rundir import has_run_state, trial_counts
from raystudy.platform.runs.trials import (
    TRIALS_FILE,
    TrialEntry,
    TrialIndex,
    read_index,
    trial_entries,
    write_index,
)


def make_run(tmp_path, tune_status: str | None = None):
    """A run folder with one trial ``t0`` (two reports) and, optionally, Tune's state."""
    run = tmp_path / "run"
    (run / "t").mkdir(parents=True)
    (run / "raystudy.json").write_text(json.dumps({"study": "x", "kind": "run"}))
    (run / "t" / "result.json").write_text(
        "".join(json.dumps({"training_iteration": i, "eval/loss": 1.0 / i}) + "\n"
                for i in (1, 2)))
    if tune_status is not None:
        trial = {"trial_id": "t0", "config": {"lr": 0.1}, "status": tune_status,
                 "relative_logdir": "t"}
        (run / "experiment_state-1.json").write_text(json.dumps(
            {"trial_data": [[json.dumps(trial), json.dumps({})]]}))
    return run


def test_the_index_round_trips_and_a_corrupt_one_is_one_data_error(tmp_path):
    index = TrialIndex([TrialEntry("a", {"lr": 0.1}, "done", "a_dir"),
                        TrialEntry("b", {"lr": 1.0}, "error", "b_dir", "error.txt"),
                        TrialEntry("c", {"lr": 9.0})], in_process=False)
    write_index(tmp_path, index)
    assert read_index(tmp_path) == index
    assert not list(tmp_path.glob(".*tmp*"))              # written aside, renamed over
    (tmp_path / TRIALS_FILE).write_text('{"trials": [{"trial_')
    with pytest.raises(DataError, match="trials.json is corrupt"):
        read_index(tmp_path)
    assert read_index(tmp_path / "nowhere") is None


def test_results_read_the_index_before_tunes_state(tmp_path):
    """Tune's state says the trial is still running; the index, written later, says it
    ended: the index is what the results (and the counts) read."""
    run = make_run(tmp_path, tune_status="RUNNING")
    assert load_results(run).trials[0].status == "unfinished"   # an older run: Tune's state
    write_index(run, TrialIndex([TrialEntry("t0", {"lr": 0.1}, "done", "t")]))
    (trial,) = load_results(run).trials
    assert (trial.status, trial.params, len(trial.history)) == ("finished", {"lr": 0.1}, 2)
    assert trial_counts(run) == (1, 1)


def test_an_errored_entry_reads_its_error_file(tmp_path):
    run = make_run(tmp_path)
    (run / "t" / "error.txt").write_text("Traceback ...\nValueError: told to fail\n")
    write_index(run, TrialIndex([TrialEntry("t0", {}, "error", "t", "error.txt"),
                                 TrialEntry("t1", {"lr": 2.0})]))
    failed, pending = load_results(run).trials
    assert (failed.status, failed.error) == ("error", "ValueError: told to fail")
    assert (pending.status, pending.history) == ("unfinished", [])
    assert trial_counts(run) == (0, 2)


def test_an_in_process_index_makes_a_folder_resumable_a_ray_one_needs_tunes_state(tmp_path):
    run = make_run(tmp_path)
    write_index(run, TrialIndex([TrialEntry("t0", {}, "running", "t")], in_process=False))
    assert not has_run_state(run)                   # Tuner.restore needs Tune's own state
    write_index(run, TrialIndex([TrialEntry("t0", {}, "running", "t")], in_process=True))
    assert has_run_state(run)
    assert [e.trial_id for e in trial_entries(run)] == ["t0"]


def fake_trial(trial_id: str, status: str, folder, error_file=None):
    """The attributes of a Tune ``Trial`` the callback reads."""
    return SimpleNamespace(trial_id=trial_id, config={"x": trial_id}, status=status,
                           relative_logdir=f"dir_{trial_id}" if status != "PENDING" else None,
                           run_metadata=SimpleNamespace(error_filename=error_file),
                           local_experiment_path=str(folder))


def test_the_callback_writes_on_each_end_and_batches_other_changes(tmp_path):
    from raystudy.platform.execution.trial_index import TrialIndexCallback

    clock = [100.0]
    callback = TrialIndexCallback(clock=lambda: clock[0])

    def statuses():
        return [(t.trial_id, t.status, t.logdir) for t in read_index(tmp_path).trials]

    a, b = fake_trial("a", "RUNNING", tmp_path), fake_trial("b", "PENDING", tmp_path)
    callback.on_step_end(1, [a, b])
    assert statuses() == [("a", "running", "dir_a"), ("b", "pending", "")]
    b.status, b.relative_logdir = "RUNNING", "dir_b"
    clock[0] += 0.2
    callback.on_step_end(2, [a, b])                  # a start, within WRITE_EVERY_S: batched
    assert statuses()[1] == ("b", "pending", "")
    a.status = "TERMINATED"
    callback.on_step_end(3, [a, b])                  # an end: written at once, with b's start
    assert statuses() == [("a", "done", "dir_a"), ("b", "running", "dir_b")]
    b.status, b.run_metadata.error_filename = "ERROR", "error.txt"
    callback.on_step_end(4, [a, b])
    assert read_index(tmp_path).trials[1].error_file == "error.txt"
    (tmp_path / TRIALS_FILE).unlink()
    callback.on_step_end(5, [a, b])                  # nothing changed: nothing written
    assert not (tmp_path / TRIALS_FILE).exists()
    callback.on_experiment_end([a, b])               # the end always writes
    assert [e.status for e in read_index(tmp_path).trials] == ["done", "error"]
    restored = pickle.loads(pickle.dumps(callback))  # in Tune's tuner state: starts afresh
    (tmp_path / TRIALS_FILE).unlink()
    restored.on_step_end(1, [a, b])
    assert (tmp_path / TRIALS_FILE).exists()
