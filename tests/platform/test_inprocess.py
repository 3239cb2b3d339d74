"""``raystudy run --in-process``: the loop in this process, no Ray, the same run folder."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from raystudy.cli import main

STUDY_FILE = '''
"""Counts to config.steps; crashes, fails or diverges where told (in-process tests)."""
import math
import os
from dataclasses import dataclass
from pathlib import Path

from raystudy import Metric, Study, TrialContext


@dataclass
class Config:
    steps: int = 6
    checkpoint_every: int = 1
    crash_at: int = 0
    """Step at which the process dies (os._exit) the first time (marker file beside)."""
    marker: str = ""
    fail: bool = False
    diverge_at: int = 0
    chunks: int = 0


def double(items):
    return [2 * x for x in items]


def loop(config: Config, ctx: TrialContext) -> None:
    state = ctx.load_checkpoint() or {"total": 0}
    cadence = ctx.cadence(config.steps, 1, config.checkpoint_every)
    for step in cadence:
        if config.fail:
            raise ValueError("told to fail")
        if step == config.crash_at and not Path(config.marker).exists():
            Path(config.marker).touch()
            os._exit(3)
        state["total"] += step
        value = math.nan if step == config.diverge_at else float(state["total"])
        extra = {"map/sum": float(sum(ctx.map_chunks(double, range(config.chunks))))}
        ctx.report({"eval/total": value, "train/step": step, **extra},
                   dict(state) if cadence.checkpoints(step) else None, step=step)


STUDY = Study("counter", "counts", Config, loop, (Metric("eval/total", "max"),))
'''


@pytest.fixture
def study_file(tmp_path):
    path = tmp_path / "counter.py"
    path.write_text(STUDY_FILE)
    return str(path)


def run(study_file, tmp_path, *args, name="r"):
    return main(["run", study_file, "--in-process", "--storage", str(tmp_path / "runs"),
                 "--name", name, *args])


def history(run_dir):
    (trial,) = [p for p in run_dir.iterdir() if p.name.startswith("counter_")]
    return [json.loads(line) for line in (trial / "result.json").read_text().splitlines()]


def test_an_in_process_run_writes_the_run_folder_without_importing_ray(study_file, tmp_path):
    code = ("import sys; from raystudy.cli import main; "
            f"code = main(['run', {study_file!r}, '--in-process', '--storage', "
            f"{str(tmp_path / 'runs')!r}, '--name', 'r', '--set', 'chunks=5', "
            "'--map-tasks', '2']); "
            "assert 'ray' not in sys.modules, 'ray was imported'; sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("raystudy: run counter in this process (no Ray)")
    assert "raystudy: step 6/6: eval/total 21" in lines[-2]
    run_dir = tmp_path / "runs" / "r"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["finished"] == 1
    assert summary["trials"][0]["metrics"]["eval/total"] == 21.0
    rows = history(run_dir)
    assert [r["train/step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(r["map/sum"] == 20.0 for r in rows)        # 2 * (0 + 1 + 2 + 3 + 4)
    assert (run_dir / "report.md").exists() and (run_dir / "raystudy.json").exists()
    trial = next(p for p in run_dir.iterdir() if p.name.startswith("counter_"))
    index = json.loads((run_dir / "trials.json").read_text())
    assert index["in_process"] and [t["status"] for t in index["trials"]] == ["done"]
    assert index["trials"][0]["logdir"] == trial.name
    assert not list(run_dir.glob("experiment_state-*"))   # no Tune state is forged
    assert len(list(trial.glob("checkpoint_*"))) == 2      # as num_to_keep=2 under Tune
    assert list(trial.glob("events.out.tfevents.*"))


def test_a_run_killed_mid_way_resumes_after_its_last_checkpoint(study_file, tmp_path):
    """The process dies at step 5 (after reports 1-4, checkpoints at 2 and 4): the resume
    starts at step 5, and no step is in result.json twice."""
    marker = tmp_path / "crashed"
    argv = [sys.executable, "-m", "raystudy", "run", study_file, "--in-process", "--storage",
            str(tmp_path / "runs"), "--name", "k", "--set", "crash_at=5", "--set",
            f"marker={marker}", "--set", "checkpoint_every=2"]
    first = subprocess.run(argv, capture_output=True, text=True)
    assert first.returncode == 3 and marker.exists()
    run_dir = tmp_path / "runs" / "k"
    assert [r["train/step"] for r in history(run_dir)] == [1, 2, 3, 4]
    assert main(["run", study_file, "--resume", "--name", "k", "--storage",
                 str(tmp_path / "runs")]) == 0
    rows = history(run_dir)
    assert [r["train/step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert rows[-1]["eval/total"] == 21.0                   # the state came back with step 4
    assert [r["training_iteration"] for r in rows] == [1, 2, 3, 4, 5, 6]


def test_a_profile_edited_after_the_start_changes_neither_the_resume_nor_the_report(
        study_file, tmp_path):
    """raystudy.json records the config as resolved at the start: the profile file is
    edited while the run is down (steps 6 -> 9), and the resume still counts to 6, and the
    report (rebuilt later) still shows 6."""
    profile = tmp_path / "mine.yaml"
    profile.write_text("config:\n  steps: 6\n  checkpoint_every: 2\n")
    marker = tmp_path / "crashed"
    argv = [sys.executable, "-m", "raystudy", "run", study_file, "--in-process", "--storage",
            str(tmp_path / "runs"), "--name", "p", "--profile", str(profile), "--set",
            "crash_at=5", "--set", f"marker={marker}"]
    assert subprocess.run(argv, capture_output=True, text=True).returncode == 3
    run_dir = tmp_path / "runs" / "p"
    recorded = json.loads((run_dir / "raystudy.json").read_text())["config"]
    assert recorded["steps"] == 6 and recorded["crash_at"] == 5
    profile.write_text("config:\n  steps: 9\n  checkpoint_every: 2\n")
    assert main(["run", study_file, "--resume", "--name", "p", "--storage",
                 str(tmp_path / "runs")]) == 0
    assert [r["train/step"] for r in history(run_dir)] == [1, 2, 3, 4, 5, 6]
    assert main(["report", str(run_dir)]) == 0
    assert json.loads((run_dir / "summary.json").read_text())["config"]["steps"] == 6
    assert json.loads((run_dir / "raystudy.json").read_text())["config"] == recorded


def test_a_failing_loop_is_recorded_and_fails_the_command(study_file, tmp_path, capsys):
    assert run(study_file, tmp_path, "--set", "fail=true") == 1
    run_dir = tmp_path / "runs" / "r"
    summary = json.loads((run_dir / "summary.json").read_text())
    (trial,) = summary["trials"]
    assert trial["status"] == "error" and "told to fail" in trial["error"]
    error_file = run_dir / trial["error_file"]
    assert "ValueError: told to fail" in error_file.read_text()
    assert capsys.readouterr().err.endswith(f"errors in {error_file}\n")


def test_a_diverged_loop_is_a_result(study_file, tmp_path):
    assert run(study_file, tmp_path, "--set", "diverge_at=3") == 0
    summary = json.loads((tmp_path / "runs" / "r" / "summary.json").read_text())
    assert summary["counts"]["diverged"] == 1


@pytest.mark.parametrize("flag, value", [("--workers", "1"), ("--address", "127.0.0.1:6379"),
                                         ("--mlflow", None), ("--gpus-per-worker", "1"),
                                         ("--placement-timeout", "30"),
                                         ("--cluster-config", "c.yaml")])
def test_options_that_need_ray_are_refused_in_one_line(study_file, tmp_path, capsys, flag,
                                                       value):
    assert run(study_file, tmp_path, *([flag, value] if value else [flag])) == 2
    err = capsys.readouterr().err
    assert err == (f"raystudy: error: {flag} needs Ray; --in-process runs the loop in this "
                   f"process without it: drop {flag} or --in-process\n")
    assert not (tmp_path / "runs" / "r").exists()


def test_the_dashboard_database_is_made_on_first_look(study_file, tmp_path):
    import optuna

    from raystudy.platform.tracking.dashboard import run_storage_url

    assert run(study_file, tmp_path) == 0
    run_dir = tmp_path / "runs" / "r"
    assert not (run_dir / "optuna.db").exists()
    url = run_storage_url(run_dir)
    assert url == run_storage_url(run_dir)                  # made once, found the next time
    (study,) = optuna.get_all_study_summaries(url)
    (trial,) = optuna.load_study(study_name=study.study_name, storage=url).trials
    assert trial.state.name == "COMPLETE" and trial.value == 21.0
    assert trial.intermediate_values == {i: float(sum(range(1, i + 1))) for i in range(1, 7)}
