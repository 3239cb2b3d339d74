"""Fault tolerance through the real CLI, with the test-only ``fault_test`` study:

(a) a Ray Train worker SIGKILLs itself mid-run: Train restarts it from the last
    checkpoint (FailureConfig) and the reported steps have no gap and no repeat;
(b) the sweep driver is SIGKILLed mid-sweep: ``sweep --resume --name`` runs only the
    trials that had not finished, and the run folder stays readable;
(c) a trial raises: it is recorded with its error, the others finish, report.md lists it,
    the command exits 1 (that sweep also runs with ``--mlflow`` and checks the offline
    MLflow file store shared by the runs of the storage root).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from ft_helpers import _cli, _env, _run, _space, _steps, _terminated

from raystudy.platform.runs.results import load_results

pytestmark = pytest.mark.ray


def test_train_worker_killed_resumes_from_checkpoint(tmp_path: Path) -> None:
    _run(_cli(tmp_path, "run", "fault_test", "--workers", "1", "--name", "a",
              "--set", "steps=5", "--set", "kill_at=2"))
    assert (tmp_path / "killed").exists()
    (trial,) = load_results(tmp_path / "runs" / "a").trials
    assert trial.status == "finished"
    assert [row["train/step"] for row in trial.history] == [1, 2, 3, 4, 5]  # no gap/repeat
    killed_pid = int((tmp_path / "killed").read_text())
    by_pid = [int(row["worker_pid"]) == killed_pid for row in trial.history]
    last_before = by_pid.index(False)  # steps 1..last_before came from the killed worker
    assert last_before >= 1 and not any(by_pid[last_before:])
    restarted = [step for _, step, pid in _steps(tmp_path) if pid != killed_pid]
    assert restarted == list(range(last_before + 1, 6))  # resumed from its last checkpoint


def test_sweep_driver_killed_then_resumed(tmp_path: Path) -> None:
    space = _space(tmp_path, "params:\n  tag: {grid: [0, 1, 2, 3, 4]}\n")
    run_dir = tmp_path / "runs" / "b"
    cmd = _cli(tmp_path, "sweep", "fault_test", "--space", space, "--name", "b",
               "--max-concurrent", "1", "--set", "steps=3", "--set", "sleep_s=0.5")
    driver = subprocess.Popen(cmd, env=_env(), text=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 180
    try:
        while len(_terminated(run_dir)) < 2 and driver.poll() is None:
            assert time.monotonic() < deadline, "no two trials finished in time"
            time.sleep(0.2)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and the Ray it embedded
        driver.wait(timeout=60)
    finished_before = _terminated(run_dir)
    assert 2 <= len(finished_before) < 5
    request_before = (run_dir / "raystudy.json").read_text()

    _run(_cli(tmp_path, "sweep", "fault_test", "--resume", "--name", "b"))
    results = load_results(run_dir)
    assert sorted(t.params["tag"] for t in results) == [0, 1, 2, 3, 4]
    assert all(t.status == "finished" and t.history for t in results)
    assert {int(p.name.split("-")[1]) for p in tmp_path.glob("done-*")} == {0, 1, 2, 3, 4}
    starts: dict[int, int] = {}
    for tag, step, _ in _steps(tmp_path):
        starts[tag] = starts.get(tag, 0) + (step == 1)
    assert all(starts[tag] == 1 for tag in finished_before), starts  # not redone
    assert (run_dir / "raystudy.json").read_text() == request_before
    assert json.loads((run_dir / "summary.json").read_text())
    assert (run_dir / "report.md").exists()


def test_trial_that_raises_is_reported_and_sweep_goes_on(tmp_path: Path) -> None:
    space = _space(tmp_path, "params:\n  tag: {grid: [0, 1, 2]}\n")
    done = _run(_cli(tmp_path, "sweep", "fault_test", "--space", space, "--name", "c",
                     "--set", "steps=2", "--set", "sleep_s=0.05", "--set", "fail_tag=1",
                     "--mlflow"), code=1)
    assert "raystudy: 1 of 3 trial(s) failed; errors in " in done.stderr
    run_dir = tmp_path / "runs" / "c"
    by_tag = {t.params["tag"]: t for t in load_results(run_dir)}
    assert [by_tag[k].status for k in (0, 1, 2)] == ["finished", "error", "finished"]
    assert "failed on purpose" in by_tag[1].error
    report = (run_dir / "report.md").read_text()
    assert by_tag[1].trial_id in report and "failed on purpose" in report
    summary = json.loads((run_dir / "summary.json").read_text())
    assert "failed on purpose" in json.dumps(summary)
    # --mlflow: the storage root's store; experiment fault_test; a run per trial + the report
    import mlflow

    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    client = mlflow.MlflowClient(tracking_uri=f"file:{tmp_path / 'runs' / 'mlruns'}")
    experiment = client.get_experiment_by_name("fault_test")
    runs = client.search_runs([experiment.experiment_id], "tags.`raystudy.run` = 'c'")
    names = sorted(r.info.run_name for r in runs)
    assert len(names) == 4 and names[0] == "c (report)", names
    trial_runs = [r for r in runs if r.data.tags.get("raystudy.trial")]
    assert {r.data.params["tag"] for r in trial_runs} == {"0", "1", "2"}
    assert all("steps" in r.data.params for r in trial_runs)     # the whole config
    (report_run,) = [r for r in runs if r.info.run_name == "c (report)"]
    artifacts = {a.path for a in client.list_artifacts(report_run.info.run_id)}
    assert {"report.md", "summary.json"} <= artifacts
