"""``--optuna-storage postgresql://...``: the sweep database on a cluster is a server.

A real PostgreSQL server (tests/platform/pg_helpers.py) takes the Optuna mirror of a sweep
whose trials run on two worker nodes at once, of two sweeps whose drivers write at the
same time, and of several processes that open one new database at the same moment; the
dashboard serves it by URL. A database that cannot be used is one line before Ray starts.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
from cluster_helpers import (
    BIN,
    LocalCluster,
    alive_nodes,
    free_port,
    get_json,
    local_cluster,
)
from ft_helpers import HERE, _node_steps

from raystudy.cli import main
from raystudy.platform.configuration import registry
from raystudy.platform.execution import runner
from raystudy.platform.tracking import optuna_store

STATE = {"finished": optuna.trial.TrialState.COMPLETE,  # summary.json status -> Optuna
         "diverged": optuna.trial.TrialState.COMPLETE,  # value inf, user attr diverged=1
         "error": optuna.trial.TrialState.FAIL}


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[LocalCluster]:
    """A 0-CPU head with two 1-CPU static worker nodes."""
    with local_cluster(0, "--workers", "2") as cluster:
        yield cluster


def _sweep(cluster: LocalCluster, tmp: Path, name: str, url: str, tags: str,
           *args: str) -> subprocess.Popen[str]:
    """``raystudy sweep fault_test`` (the real CLI, ft_cli.py) attached to ``cluster``,
    mirroring into ``url``; started, not waited for. Its steps log to ``tmp/name``."""
    log_dir = tmp / name
    log_dir.mkdir()
    space, profile = tmp / f"{name}-space.yaml", tmp / "quick.yaml"
    space.write_text(f"params:\n  tag: {{grid: {tags}}}\n")
    profile.write_text("config: {}\n")
    env = dict(cluster.env, PYTHONPATH=f"{HERE}:{cluster.env['PYTHONPATH']}")
    cmd = [str(BIN / "python"), str(HERE / "ft_cli.py"), "sweep", "fault_test",
           "--space", str(space), "--profile", str(profile), "--name", name,
           "--storage", str(tmp / "runs"), "--optuna-storage", url,
           "--address", cluster.gcs_address, "--set", f"log_dir={log_dir}", *args]
    return subprocess.Popen(cmd, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen[str], timeout: float = 240, code: int = 0) -> None:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == code, out[-3000:] + err[-3000:]


def _history(run_dir: Path, tune_id: str) -> list[dict[str, Any]]:
    """The result rows one trial reported (its result.json)."""
    path = next(run_dir.glob(f"*{tune_id}*/result.json"))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _study_matches_summary(url: str, run_dir: Path) -> list[optuna.trial.FrozenTrial]:
    """The run's Optuna study in ``url`` holds exactly the trials of its summary.json,
    with their params, states, final values and (finite) intermediate values; returns
    the study's trials."""
    summary = json.loads((run_dir / "summary.json").read_text())
    trials = optuna.load_study(study_name=run_dir.name, storage=url).trials
    by_tune_id = {t.user_attrs["tune_trial_id"]: t for t in trials}
    assert len(trials) == len(summary["trials"]) == len(by_tune_id)
    assert set(by_tune_id) == {r["trial_id"] for r in summary["trials"]}
    for record in summary["trials"]:
        trial = by_tune_id[record["trial_id"]]
        assert trial.params == record["params"]
        assert trial.state == STATE[record["status"]], (record, trial.state)
        if record["status"] != "error":
            assert trial.value == pytest.approx(record["metrics"]["train/loss"])
        assert bool(trial.user_attrs.get("diverged")) == (record["status"] == "diverged")
        assert trial.intermediate_values == {
            row["training_iteration"]: row["train/loss"]
            for row in _history(run_dir, record["trial_id"])
            if math.isfinite(row["train/loss"])}
    return trials


def _overlap(a: optuna.trial.FrozenTrial, b: optuna.trial.FrozenTrial) -> bool:
    return a.datetime_start < b.datetime_complete and b.datetime_start < a.datetime_complete


@pytest.mark.cluster
def test_sweep_on_two_nodes_at_once_is_mirrored_into_postgres(two_nodes, postgres, tmp_path):
    """Four trials, two at a time on two 1-CPU nodes: the PostgreSQL study equals the
    run's summary.json (a COMPLETE, a FAIL and a diverged trial among them), the trials
    ran on both worker nodes, and two trials on different nodes ran at the same time."""
    nodes = alive_nodes(two_nodes)
    assert sorted(n["cpus"] for n in nodes) == [0, 1, 1], "a 0-CPU head, two 1-CPU workers"
    workers = {n["id"] for n in nodes if n["cpus"] == 1}
    url = postgres.create_database("sweep")
    _finish(_sweep(two_nodes, tmp_path, "pg", url, "[0, 1, 2, 3]", "--max-concurrent", "2",
                   "--set", "steps=3", "--set", "sleep_s=0.5", "--set", "fail_tag=1",
                   "--set", "nan_tag=2"), code=1)
    run_dir = tmp_path / "runs" / "pg"
    trials = _study_matches_summary(url, run_dir)
    states = sorted(t.state.name for t in trials)
    assert states == ["COMPLETE", "COMPLETE", "COMPLETE", "FAIL"]
    assert sum(bool(t.user_attrs.get("diverged")) for t in trials) == 1
    node = {}
    for trial in trials:
        (node[trial.number],) = {row["node_id"] for row in
                                 _history(run_dir, trial.user_attrs["tune_trial_id"])}
    assert set(node.values()) == workers, "the trials ran on both worker nodes"
    assert any(node[a.number] != node[b.number] and _overlap(a, b)
               for a in trials for b in trials), "two nodes ran trials at the same time"



@pytest.mark.cluster
def test_two_sweeps_write_one_new_database_at_once(two_nodes, postgres, tmp_path):
    """Two drivers attached to one cluster, one trial at a time each (so one node each),
    mirror into the same new database at the same time (one through
    ``postgresql+psycopg://``): both finish, each study equals its own summary.json, their
    trials' times overlap, and ``raystudy dashboard --optuna-storage URL`` serves both."""
    url = postgres.create_database("shared")
    explicit = url.replace("postgresql://", "postgresql+psycopg://")
    args = ("--set", "steps=3", "--set", "sleep_s=0.5", "--max-concurrent", "1")
    first = _sweep(two_nodes, tmp_path, "sa", url, "[0, 1]", *args)
    second = _sweep(two_nodes, tmp_path, "sb", explicit, "[5, 6]", *args)
    _finish(first)
    _finish(second)
    spans = {}
    for name in ("sa", "sb"):
        trials = _study_matches_summary(url, tmp_path / "runs" / name)
        assert len(trials) == 2
        assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
        tags = [tag for tag, _, _, _ in _node_steps(tmp_path / name)]
        assert tags == sorted(tags, key=tags.index), "--max-concurrent 1: one at a time"
        spans[name] = (min(t.datetime_start for t in trials),
                       max(t.datetime_complete for t in trials))
    (a_start, a_end), (b_start, b_end) = spans["sa"], spans["sb"]
    assert a_start < b_end and b_start < a_end, "the two drivers wrote at the same time"

    port = free_port()
    server = subprocess.Popen([str(BIN / "raystudy"), "dashboard", "--optuna-storage", url,
                               "--port", str(port)], env=two_nodes.env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        api = f"http://127.0.0.1:{port}/api/studies"
        studies = get_json(api, deadline)["study_summaries"]
        assert sorted(s["study_name"] for s in studies) == ["sa", "sb"]
        for study in studies:
            detail = get_json(f"{api}/{study['study_id']}", deadline)
            assert len(detail["trials"]) == 2
    finally:
        server.send_signal(signal.SIGINT)
        try:
            out, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()  # leave no server behind; the test fails on the timeout
            raise
    assert server.returncode == 0, err
    assert f"optuna-dashboard for {url} at http://127.0.0.1:{port}/dashboard/" in out


def test_writers_that_open_a_new_database_at_once_all_get_in(postgres):
    """Processes that open one new database at the same moment race to create Optuna's
    tables; each writer gets in and writes its study (with a single try instead of
    open_storage's retries, this test failed 3 runs of 3)."""
    from pg_helpers import open_and_write

    names = [f"w{i}" for i in range(4)]
    url = postgres.create_database("race")
    context = multiprocessing.get_context("spawn")  # this process may hold Ray's threads
    barrier, results = context.Barrier(len(names)), context.Queue()
    writers = [context.Process(target=open_and_write, args=(url, name, barrier, results))
               for name in names]
    for writer in writers:
        writer.start()
    written = dict(results.get(timeout=120) for _ in names)
    for writer in writers:
        writer.join(timeout=60)
    assert written == {name: 3 for name in names}
    summaries = optuna.get_all_study_summaries(storage=url)
    assert sorted((s.study_name, s.n_trials) for s in summaries) == [(n, 3) for n in names]


# ---------------------------------------------------------------- one line, before Ray
@pytest.fixture
def fault_study(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test-only fault_test study in this process; Ray must not start."""
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setitem(registry._ADDED, "fault_test", registry.StudyEntry(
        "fault_test", "ft_study", "test-only"))

    def no_ray(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Ray started before the database was checked")

    monkeypatch.setattr(runner, "ray_session", no_ray)


@contextlib.contextmanager
def _silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


@pytest.mark.parametrize("case, says", [
    ("refused", "Connection refused"),
    ("silent", "connection timeout expired"),
    ("no database", 'database "nosuchdb" does not exist'),
    ("no driver", "pip install 'raystudy[postgres]' (psycopg)"),
])
def test_a_database_that_cannot_be_used_is_one_line_before_ray(
        case, says, fault_study, tmp_path, capsys, monkeypatch, request):
    """No server on the port, a server that does not answer (10 s by default, 2 s here),
    a database that does not exist, no driver installed: ``raystudy: error:`` naming
    --optuna-storage with the password hidden, exit 2, no run folder, no Ray."""
    monkeypatch.setattr(optuna_store, "_CONNECT_TIMEOUT_S", 2)  # libpq takes no less
    with contextlib.ExitStack() as stack:
        port = stack.enter_context(_silent_server()) if case == "silent" else free_port()
        url = f"postgresql://u:s3cret@127.0.0.1:{port}/x"
        if case == "no database":
            url = request.getfixturevalue("postgres").url("nosuchdb")
        if case == "no driver":
            monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` fails
        profile = tmp_path / "quick.yaml"
        profile.write_text("config: {}\n")
        started = time.monotonic()
        code = main(["run", "fault_test", "--profile", str(profile), "--storage",
                     str(tmp_path / "runs"), "--name", "r", "--optuna-storage", url,
                     "--set", f"log_dir={tmp_path}"])
        took = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = err.strip().splitlines()
    shown = url.replace(":s3cret@", ":***@")
    assert line.startswith(f"raystudy: error: --optuna-storage {shown}: "), line
    assert says in line and "s3cret" not in line, line
    assert took < 8
    assert not (tmp_path / "runs" / "r").exists()


def test_dashboard_takes_a_run_folder_or_a_url(tmp_path, capsys):
    assert main(["dashboard"]) == 2
    assert main(["dashboard", str(tmp_path), "--optuna-storage", "sqlite://"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["raystudy: error: raystudy dashboard takes RUN_DIR or "
                     "--optuna-storage URL (one of them)"] * 2


def test_the_postgres_fixture_stops_its_server(tmp_path):
    """pg_helpers leaves no server behind: after the context, nothing listens on its port
    and its folder is gone."""
    from pg_helpers import postgres_server, why_not

    if why_not():
        pytest.skip(why_not())
    with postgres_server() as server:
        url = server.create_database("probe")
        assert optuna.storages.RDBStorage(url).get_all_studies() == []
        folder = server.log.parent
        assert folder.is_dir()
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", server.port)) != 0
    assert not folder.exists()
