"""Faults on a real multi-node cluster with runs in an S3-compatible store (moto on
loopback): a Ray Job submitted with token authentication, a killed sweep driver, and a
killed worker node under a 2-worker Train trial.

One cluster serves the module: a head and three static worker nodes of 1 CPU each,
started with the store's credentials in their environment (as a cloud cluster's nodes
would have them). The node-loss test runs last: it ends one of the worker nodes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import BIN, LocalCluster, alive_nodes, local_cluster, raystudy
from ft_helpers import HERE, _node_steps
from s3_helpers import CREDENTIALS, S3Server, s3_server

from raystudy.contract import storage
from raystudy.platform.runs.results import load_results

pytestmark = pytest.mark.cluster

SPACE = "params:\n  tag: {grid: [0, 1, 2, 3, 4]}\n"


@pytest.fixture(scope="module")
def store() -> Iterator[S3Server]:
    saved = {key: os.environ.get(key) for key in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    try:
        with s3_server() as server:
            yield server
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def cluster(store: S3Server) -> Iterator[LocalCluster]:
    with local_cluster(1, "--workers", "3") as running:
        yield running


def _files(tmp: Path) -> tuple[Path, Path]:
    (tmp / "quick.yaml").write_text("config: {}\n")
    (tmp / "space.yaml").write_text(SPACE)
    return tmp / "quick.yaml", tmp / "space.yaml"


def _ft_cmd(cluster: LocalCluster, tmp: Path, runs: str, *args: str) -> list[str]:
    profile, _ = _files(tmp)
    return [str(BIN / "python"), str(HERE / "ft_cli.py"), *args, "--profile", str(profile),
            "--storage", runs, "--optuna-storage", "off", "--set", f"log_dir={tmp}",
            "--address", cluster.gcs_address]


def _env(cluster: LocalCluster) -> dict[str, str]:
    return dict(cluster.env, PYTHONPATH=f"{HERE}:{cluster.env['PYTHONPATH']}")


def _trial_errors(store: S3Server, stdout: str) -> str:
    """The error files a sweep's output names (``details in BUCKET/KEY/error.txt``), read
    from the store, so that a failed assertion says why the trial failed."""
    keys = re.findall(rf"details in {re.escape(store.bucket)}/(\S+/error\.txt)", stdout)
    return "".join(f"\n--- {key}:\n{store.read(key).decode()[-3000:]}" for key in keys)


def _starts(tmp: Path) -> dict[int, int]:
    """How often each trial started from step 1."""
    starts: dict[int, int] = {}
    for tag, step, _, _ in _node_steps(tmp):
        starts[tag] = starts.get(tag, 0) + (step == 1)
    return starts


def test_submitted_sweep_writes_to_the_store_and_report_rebuilds(
        cluster: LocalCluster, store: S3Server, tmp_path: Path) -> None:
    runs = store.uri(prefix="jobs")
    _, space = _files(tmp_path)
    entry = _ft_cmd(cluster, tmp_path, runs, "sweep", "fault_test", "--space", str(space),
                    "--name", "job", "--set", "steps=2", "--set", "sleep_s=0.1")
    entry[:2] = ["python", "tests/platform/ft_cli.py"]  # inside the job's working dir
    address = ["--address", cluster.address]
    submitted = raystudy("submit", *address, "--working-dir", ".",
                         "--env", f"PYTHONPATH={HERE}",  # the test-only study, on every node
                         "--", *entry, env=cluster.env, timeout=120)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    assert "AWS_ACCESS_KEY_ID" in submitted.stderr and "testing" not in submitted.stderr
    job_id = submitted.stdout.split("submitted job ")[1].split()[0]
    followed = raystudy("jobs", "logs", job_id, "--follow", *address, env=cluster.env,
                        timeout=400)
    assert followed.returncode == 0, followed.stdout[-3000:] + followed.stderr[-2000:]
    run = storage.join(runs, "job")
    assert f"report written to {storage.join(run, 'report.md')}" in followed.stdout
    status = raystudy("jobs", "status", job_id, *address, env=cluster.env)
    assert status.stdout.startswith(f"{job_id}: SUCCEEDED"), status.stdout + status.stderr
    summary = json.loads(store.read("jobs/job/summary.json"))
    assert summary["counts"]["finished"] == 5

    store.filesystem().delete_file(f"{store.bucket}/jobs/job/report.md")
    rebuilt = subprocess.run([str(BIN / "python"), str(HERE / "ft_cli.py"), "report", run],
                             env=_env(cluster), text=True, capture_output=True, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert "fault_test" in store.read("jobs/job/report.md").decode()


def test_killed_driver_resumes_from_the_store_without_redoing_trials(
        cluster: LocalCluster, store: S3Server, tmp_path: Path) -> None:
    runs = store.uri(prefix="driver")
    _, space = _files(tmp_path)
    cmd = _ft_cmd(cluster, tmp_path, runs, "sweep", "fault_test", "--space", str(space),
                  "--name", "b", "--max-concurrent", "1", "--set", "steps=3",
                  "--set", "sleep_s=0.5")
    driver = subprocess.Popen(cmd, env=_env(cluster), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 180
    try:
        while len(list(tmp_path.glob("done-*"))) < 2 and driver.poll() is None:
            assert time.monotonic() < deadline, "no two trials finished in time"
            time.sleep(0.2)
        time.sleep(1.5)  # two of Tune's 1-second state saves after the second trial ended
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=60)
    done_before = {int(p.name.split("-")[1]) for p in tmp_path.glob("done-*")}
    assert 2 <= len(done_before) < 5
    request_before = store.read("driver/b/raystudy.json")

    resume = [*cmd[:cmd.index("--space")], "--resume", "--name", "b",
              *cmd[cmd.index("--profile"):]]
    resumed = subprocess.run(resume, env=_env(cluster), text=True, capture_output=True,
                             timeout=300)
    assert resumed.returncode == 0, (resumed.stdout[-3000:] + resumed.stderr[-3000:]
                                     + _trial_errors(store, resumed.stdout))
    assert {int(p.name.split("-")[1]) for p in tmp_path.glob("done-*")} == set(range(5))
    starts = _starts(tmp_path)
    assert all(starts[tag] == 1 for tag in done_before), starts  # finished: not redone
    assert store.read("driver/b/raystudy.json") == request_before
    with storage.local_copy(storage.join(runs, "b")) as local:
        results = load_results(local)
        assert sorted(t.params["tag"] for t in results) == list(range(5))
        assert all(t.status == "finished" for t in results)


def _node_of(pid: int, cluster: LocalCluster) -> int:
    """The static worker node (its `ray start` pid) whose process tree holds ``pid``."""
    import psutil

    state = json.loads((cluster.state_dir / "cluster.json").read_text())
    ancestors = {p.pid for p in psutil.Process(pid).parents()}
    nodes = [w for w in state["worker_pids"] if w in ancestors]
    return nodes[0] if nodes else 0


def test_lost_node_under_a_train_trial_resumes_from_its_checkpoint(
        cluster: LocalCluster, store: S3Server, tmp_path: Path) -> None:
    import psutil

    from raystudy.platform.cluster.localcluster import _kill, _tree

    runs = store.uri(prefix="nodeloss")
    cmd = _ft_cmd(cluster, tmp_path, runs, "run", "fault_test", "--workers", "2",
                  "--name", "n", "--set", "steps=8", "--set", "sleep_s=1.0")
    driver = subprocess.Popen(cmd, env=_env(cluster), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 180
    while True:
        assert driver.poll() is None, driver.stdout.read()[-3000:]
        assert time.monotonic() < deadline, "the trial did not reach step 2"
        steps = _node_steps(tmp_path) if (tmp_path / "steps.log").exists() else []
        if len({node for _, step, _, node in steps if step >= 2}) == 2:
            break
        time.sleep(0.2)
    workers = {node: pid for _, _, pid, node in steps}
    assert len(workers) == 2, "the two Train workers run on two nodes"
    victim_node, victim_pid = max(workers.items(), key=lambda kv: _node_of(kv[1], cluster))
    assert _node_of(victim_pid, cluster), "a Train worker on a worker node, not the head"
    _kill(_tree(_node_of(victim_pid, cluster)))
    assert not psutil.pid_exists(victim_pid)
    out, _ = driver.communicate(timeout=400)
    assert driver.returncode == 0, out[-4000:]

    after = [row for row in _node_steps(tmp_path)[len(steps):]]
    assert after and victim_node not in {node for _, _, _, node in after}
    with storage.local_copy(storage.join(runs, "n")) as local:
        (trial,) = load_results(local).trials
        assert trial.status == "finished"
        assert [row["train/step"] for row in trial.history] == list(range(1, 9))
    assert len(alive_nodes(cluster)) == 3  # the head and the two workers left
