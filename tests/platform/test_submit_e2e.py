"""End to end: a real token-protected Ray cluster (``ray start --head`` through
``clusters/local-cluster.sh``), a sweep submitted with ``raystudy submit``, followed with
``raystudy jobs``, and its results and report checked on disk.

Also checks the errors a user meets: no token (says what to set, exit 2), a wrong
token, an unknown job id, and no cluster at the address.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cluster_helpers import REPO, base_env, free_port, local_cluster, raystudy

from raystudy.platform.runs.results import load_results

pytestmark = pytest.mark.ray

TINY_SPACE = """\
description: two optimizers, one learning rate (the end-to-end test)
params:
  optimizer.name: {grid: [adamw, sgd]}
  optimizer.lr: 0.01
"""


def _one_error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(lines) == 1 and lines[0].startswith("raystudy: error:"), result.stderr
    return lines[0]


def test_submit_sweep_to_a_token_cluster(tmp_path: Path) -> None:
    space = tmp_path / "tiny.yaml"
    space.write_text(TINY_SPACE)
    storage = tmp_path / "runs"
    with local_cluster(num_cpus=2) as cluster:
        address = ["--address", cluster.address]
        submitted = raystudy(
            "submit", *address, "--working-dir", ".", "--env", "RAYSTUDY_E2E=1", "--",
            "raystudy", "sweep", "optimizer_robustness", "--space", str(space),
            "--set", "train.steps=20", "--set", "train.eval_every=10",
            "--storage", str(storage), "--name", "e2e", env=cluster.env, timeout=120)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        job_id = submitted.stdout.split("submitted job ")[1].split()[0]
        assert f"{cluster.address}/#/jobs/{job_id}" in submitted.stdout

        waited = raystudy("jobs", "wait", job_id, *address, env=cluster.env, timeout=400)
        logs = raystudy("jobs", "logs", job_id, *address, env=cluster.env)
        assert waited.returncode == 0, waited.stdout + logs.stdout[-3000:]
        assert f"{job_id}: SUCCEEDED" in waited.stdout
        assert "report written to" in logs.stdout
        assert "raystudy: 2 trial(s): 2 finished" in logs.stdout  # plain progress lines
        assert "Trial status" not in logs.stdout  # Tune's tables: in the run's log only
        listed = raystudy("jobs", "list", *address, env=cluster.env)
        assert job_id in listed.stdout and "SUCCEEDED" in listed.stdout
        status = raystudy("jobs", "status", job_id, *address, env=cluster.env)
        assert status.stdout.startswith(f"{job_id}: SUCCEEDED")

        no_token = base_env()
        line = _one_error_line(raystudy("jobs", "list", *address, env=no_token))
        assert "RAY_AUTH_MODE=token" in line and "RAY_AUTH_TOKEN" in line
        wrong = base_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 32)
        assert "rejected the token" in _one_error_line(
            raystudy("jobs", "list", *address, env=wrong))
        assert "no job 'raysubmit_nope'" in _one_error_line(
            raystudy("jobs", "status", "raysubmit_nope", *address, env=cluster.env))
        # A study file travels in the job's working directory, its profiles beside it.
        own = tmp_path / "own"
        shutil.copytree(REPO / "examples" / "quadratic_study" / "quadratic_study", own)
        (own / "study.py").rename(own / "quadratic_file.py")
        (own / "spaces" / "two.yaml").write_text(
            "params:\n  optimizer: {grid: [sgd, adam]}\n")
        submitted = raystudy(
            "submit", *address, "--working-dir", str(own), "--", "raystudy", "sweep",
            "quadratic_file.py", "--space", "two", "--set", "steps=50", "--storage",
            str(storage), "--name", "file", env=cluster.env, timeout=120)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        file_job = submitted.stdout.split("submitted job ")[1].split()[0]
        waited = raystudy("jobs", "wait", file_job, *address, env=cluster.env, timeout=400)
        assert f"{file_job}: SUCCEEDED" in waited.stdout, raystudy(
            "jobs", "logs", file_job, *address, env=cluster.env).stdout[-3000:]
        counts = json.loads((storage / "file" / "summary.json").read_text())["counts"]
        assert counts["finished"] == 2  # the space beside the file, found by its name
        # Attached: a trial the cluster can never place is refused before it is queued.
        gcs = f"127.0.0.1:{cluster.env['RAY_PORT']}"
        line = _one_error_line(raystudy(
            "run", "optimizer_robustness", "--address", gcs, "--workers", "1",
            "--gpus-per-worker", "1", "--storage", str(tmp_path / "never"), env=cluster.env))
        assert f"GPU 1 in one place, but no node of the Ray cluster at {gcs}" in line
        assert not (tmp_path / "never").exists()

    run_dir = storage / "e2e"
    request = json.loads((run_dir / "raystudy.json").read_text())
    assert request["study"] == "optimizer_robustness"
    results = load_results(run_dir)
    assert sorted(t.params["optimizer.name"] for t in results) == ["adamw", "sgd"]
    assert all(t.status == "finished" and t.last["training_iteration"] == 2 for t in results)
    assert all(list(t.logdir.glob("events.out.tfevents.*")) for t in results)
    assert json.loads((run_dir / "summary.json").read_text())
    assert "adamw" in (run_dir / "report.md").read_text()
    assert (run_dir / "report.html").exists()


def test_no_cluster_is_one_line_exit_2() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    assert "cannot reach the Ray Jobs API" in _one_error_line(
        raystudy("jobs", "list", "--address", dead, env=base_env()))
    assert "nothing to submit" in _one_error_line(
        raystudy("submit", "--address", dead, env=base_env()))
