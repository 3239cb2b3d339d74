"""Sweeps, report, resume and bad URIs on an S3-compatible store that is not AWS (moto on
loopback, ``--storage 's3://bucket/runs?endpoint_override=http://127.0.0.1:PORT&region=...'``),
through the CLI on the session's embedded Ray."""

from __future__ import annotations

import json

import pytest
from cluster_helpers import base_env, free_port, raystudy

from raystudy.cli import main
from raystudy.contract import storage

pytestmark = pytest.mark.ray

TINY = ["--set", "model.d_model=16", "--set", "model.n_layers=1", "--set", "model.seq_len=16",
        "--set", "train.steps=6", "--set", "train.eval_every=3", "--set", "train.eval_batches=1",
        "--set", "data.max_bytes=40000", "--optuna-storage", "off"]


def _state_key(s3, run: str) -> str:
    (name,) = [k for k in s3.keys(f"runs/{run}") if k.startswith("experiment_state-")]
    return f"runs/{run}/{name}"


def _mark_unfinished(s3, run: str) -> str:
    """What a driver killed mid-sweep leaves: one trial not ended in Tune's saved state and
    in raystudy's trial index, and no summary; returns the id of that trial."""
    key = _state_key(s3, run)
    state = json.loads(s3.read(key))
    trial = json.loads(state["trial_data"][1][0])
    trial["status"] = "PENDING"
    state["trial_data"][1][0] = json.dumps(trial)
    index = json.loads(s3.read(f"runs/{run}/trials.json"))
    for entry in index["trials"]:
        if entry["trial_id"] == trial["trial_id"]:
            entry["status"] = "running"
    fs = s3.filesystem()
    for name, data in ((key, state), (f"runs/{run}/trials.json", index)):
        with fs.open_output_stream(f"{s3.bucket}/{name}") as f:
            f.write(json.dumps(data).encode())
    fs.delete_file(f"{s3.bucket}/runs/{run}/summary.json")
    return trial["trial_id"]


def test_sweep_report_and_resume_on_an_s3_compatible_store(ray_session, s3_server, tmp_path,
                                                           capsys):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  optimizer.lr: {grid: [1.0e-3, 1.0e-2]}\n")
    runs = s3_server.uri(prefix="runs")
    run = storage.join(runs, "s3sweep")
    argv = ["sweep", "optimizer_robustness", "--space", str(space), "--storage", runs,
            "--name", "s3sweep", *TINY, "--set", "train.checkpoint_every=1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"results in {run}\n" in out
    assert f"report written to {storage.join(run, 'report.md')}\n" in out
    keys = set(s3_server.keys("runs/s3sweep"))
    assert {"raystudy.json", "summary.json", "report.md", "report.html",
            "figures/robustness.png", "tuner.pkl", "trials.json"} <= keys  # the index synced
    results = sorted(k for k in keys if k.endswith("/result.json"))
    assert len(results) == 2
    assert any("/checkpoint_" in k for k in keys), "checkpoints went to the store"
    assert not any(k.startswith("train/") for k in keys)  # no --workers: no Train run
    summary = json.loads(s3_server.read("runs/s3sweep/summary.json"))
    assert summary["counts"] == {"finished": 2, "diverged": 0, "error": 0, "unfinished": 0}
    assert main(argv) == 2  # the same name again is refused, on the store too
    assert "run folder s3://" in capsys.readouterr().err

    # `raystudy report URI` rebuilds the report from the store; --out keeps it local
    s3_server.filesystem().delete_file(f"{s3_server.bucket}/runs/s3sweep/report.md")
    assert main(["report", run]) == 0
    assert "report.md" in s3_server.keys("runs/s3sweep")
    assert main(["report", run, "--out", str(tmp_path / "local")]) == 0
    assert f"tensorboard --logdir {run}`" in (tmp_path / "local" / "report.md").read_text()
    capsys.readouterr()

    # a driver killed mid-sweep: --resume (no --name) finds it on the store; the finished
    # trial is kept, the unfinished one resumes from its last checkpoint on the store
    # (it had reported its last step, so it trains no further step: no result changes)
    pending = _mark_unfinished(s3_server, "s3sweep")
    kept = {k: s3_server.read(f"runs/s3sweep/{k}") for k in results}
    assert main(["sweep", "optimizer_robustness", "--resume", "--storage", runs]) == 0
    out = capsys.readouterr().out
    assert f"resuming {run} (1 of 2 trials finished)" in out
    # Tune's own lines are in the run's log on the store, the resumed run's appended
    log = s3_server.read("runs/s3sweep/logs/driver.log").decode()
    first, resumed = log.split("raystudy: sweep optimizer_robustness (", 2)[1:]
    assert first.count(" started with configuration") == 2
    assert f"Trial optimizer_robustness_{pending} started" in resumed  # only that one ran
    assert resumed.count(" started with configuration") == 1
    assert f"report written to {storage.join(run, 'report.md')}" in out
    assert {k: s3_server.read(f"runs/s3sweep/{k}") for k in kept} == kept
    summary = json.loads(s3_server.read("runs/s3sweep/summary.json"))
    assert summary["counts"]["finished"] == 2
    assert summary["request"]["name"] == "s3sweep"

    # --resume --name on a finished sweep restores it from the store and runs nothing
    assert main(["sweep", "optimizer_robustness", "--resume", "--name", "s3sweep",
                 "--storage", runs]) == 0
    assert {k: s3_server.read(f"runs/s3sweep/{k}") for k in kept} == kept
    assert "--resume: no unfinished" not in capsys.readouterr().err


def test_a_run_with_train_workers_keeps_its_train_folder_on_the_store(ray_session, s3_server):
    """--workers: each trial's TorchTrainer gets storage_path RUN/train?endpoint_override=...
    (the query at the end), and its workers write their checkpoints there."""
    runs = s3_server.uri(prefix="runs")
    assert main(["run", "optimizer_robustness", "--workers", "1", "--cpus-per-worker", "0.5",
                 "--storage", runs, "--name", "ddp", *TINY,
                 "--set", "train.checkpoint_every=1"]) == 0
    keys = s3_server.keys("runs/ddp")
    train = [k for k in keys if k.startswith("train/train-")]
    assert any(k.endswith("/checkpoint_manager_snapshot.json") for k in train), keys
    assert len([k for k in train if k.endswith("/state.pt")]) == 2  # written by the worker
    summary = json.loads(s3_server.read("runs/ddp/summary.json"))
    assert summary["counts"]["finished"] == 1


def test_bad_store_uris_are_one_line_exit_2(s3_server, capsys):
    argv = ["run", "optimizer_robustness", *TINY, "--storage"]
    assert main([*argv, s3_server.uri("no-such-bucket", "runs")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("raystudy: error: --storage s3://no-such-bucket/runs?endpoint_override")
    assert "not writable" in err and err.count("\n") == 1
    assert main(["report", s3_server.uri(prefix="runs/nothing")]) == 2
    assert "is not a raystudy run folder (no raystudy.json)" in capsys.readouterr().err
    assert main(["sweep", "optimizer_robustness", "--resume", "--storage",
                 s3_server.uri(prefix="runs")]) == 2
    assert "--resume: no unfinished optimizer_robustness run under s3://" in (
        capsys.readouterr().err)
    assert main([*argv, "s3://raystudy-test/runs?endpoint=http://127.0.0.1:1"]) == 2
    assert "Unexpected query parameter" in capsys.readouterr().err
    assert s3_server.keys("runs") == []  # no failed start left behind


def test_a_store_that_does_not_answer_is_one_line_in_a_subprocess(s3_server):
    down = f"s3://raystudy-test/runs?endpoint_override=http://127.0.0.1:{free_port()}" \
           "&region=us-east-1"
    done = raystudy("run", "optimizer_robustness", *TINY, "--storage", down, env=base_env(),
                    timeout=120)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"raystudy: error: --storage {down} is not writable: ")
    assert "connect" in line.lower()
    assert "Traceback" not in done.stderr
