"""Every sweep mirrored into an Optuna study (optuna-dashboard), read back with Optuna."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import optuna
import pytest
import ray.cloudpickle
from cluster_helpers import get_json

from raystudy.cli import main
from raystudy.contract import data as contract_data
from raystudy.errors import UserError
from raystudy.platform.configuration import registry
from raystudy.platform.configuration.spaces import optuna_distributions
from raystudy.platform.tracking.optuna_mirror import storage_url
from raystudy.studies.optimizer_robustness.config import OptimizerRobustnessConfig


def test_space_distributions_and_storage_urls(tmp_path):
    dists = optuna_distributions({
        "optimizer.name": {"grid": ["adamw", "sgd"]}, "optimizer.lr": {"loguniform": [1e-4, 1.0]},
        "train.seed": {"randint": [0, 3]}, "train.steps": 10,
        "optimizer.f_star": {"uniform": [0, 2]},
        "optimizer.weight_decay": {"loggrid": [1e-3, 1e-1, 3]},
    }, OptimizerRobustnessConfig())
    assert dists["optimizer.name"] == optuna.distributions.CategoricalDistribution(["adamw", "sgd"])
    assert dists["optimizer.lr"] == optuna.distributions.FloatDistribution(1e-4, 1.0, log=True)
    assert dists["train.seed"] == optuna.distributions.IntDistribution(0, 2)  # hi exclusive
    assert dists["optimizer.weight_decay"].choices == (0.001, 0.01, 0.1)
    assert "train.steps" not in dists  # a fixed value is not a parameter
    assert storage_url(None, tmp_path, local=True) == f"sqlite:///{tmp_path}/optuna.db"
    assert storage_url("off", tmp_path, local=False) is None
    assert storage_url("postgresql://h/db", tmp_path, local=False) == "postgresql://h/db"
    with pytest.raises(UserError, match="object storage needs --optuna-storage URL"):
        storage_url(None, tmp_path, local=False)


def test_dashboard_without_its_extra_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(contract_data, "missing_modules", lambda modules: list(modules))
    assert main(["dashboard", str(tmp_path)]) == 2
    assert "needs optuna_dashboard: pip install 'raystudy[dashboard]'" in capsys.readouterr().err


@pytest.fixture
def fault_study(monkeypatch):
    """The test-only fault_test study, registered in this process and shipped by value."""
    sys.path.insert(0, os.path.dirname(__file__))
    import ft_study

    ray.cloudpickle.register_pickle_by_value(ft_study)
    monkeypatch.setitem(registry._ADDED, "fault_test", registry.StudyEntry(
        "fault_test", "ft_study", "test-only"))
    yield


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]



@pytest.mark.ray
def test_sweep_states_values_and_dashboard(ray_session, fault_study, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  tag: {grid: [0, 1, 2, 3]}\n")
    profile = tmp_path / "quick.yaml"
    profile.write_text("config: {}\n")
    assert main(["sweep", "fault_test", "--profile", str(profile), "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "m", "--set", "steps=3",
                 "--set", "sleep_s=0", "--set", f"log_dir={tmp_path}", "--set", "fail_tag=1",
                 "--set", "nan_tag=2"]) == 1            # the failed trial: exit 1
    run_dir = tmp_path / "runs" / "m"
    summary = {t["trial_id"]: t for t in json.loads((run_dir / "summary.json").read_text())[
        "trials"]}
    study = optuna.load_study(study_name="m", storage=f"sqlite:///{run_dir}/optuna.db")
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    by_tag = {t.params["tag"]: t for t in study.trials}
    assert sorted(by_tag) == [0, 1, 2, 3] and len(study.trials) == 4
    assert study.trials[0].distributions["tag"] == optuna.distributions.CategoricalDistribution(
        [0, 1, 2, 3])
    state = {tag: t.state for tag, t in by_tag.items()}
    assert state == {0: optuna.trial.TrialState.COMPLETE, 1: optuna.trial.TrialState.FAIL,
                     2: optuna.trial.TrialState.COMPLETE, 3: optuna.trial.TrialState.COMPLETE}
    assert "failed on purpose" in by_tag[1].user_attrs["error"]
    assert by_tag[2].user_attrs["diverged"] == 1 and by_tag[2].value == float("inf")
    for tag in (0, 3):
        trial = by_tag[tag]
        record = summary[trial.user_attrs["tune_trial_id"]]
        assert trial.value == pytest.approx(record["metrics"]["train/loss"])
        history = [json.loads(line) for line in
                   next(run_dir.glob(f"*{record['trial_id']}*/result.json")).read_text()
                   .splitlines()]
        assert trial.intermediate_values == {h["training_iteration"]: h["train/loss"]
                                             for h in history}
        assert trial.user_attrs["diverged"] == 0 and trial.user_attrs["train/step"] == 3

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "raystudy", "dashboard", str(run_dir),
                               "--port", str(port)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        studies = get_json(f"http://127.0.0.1:{port}/api/studies", deadline)["study_summaries"]
        assert [s["study_name"] for s in studies] == ["m"]
        detail = get_json(f"http://127.0.0.1:{port}/api/studies/{studies[0]['study_id']}",
                           deadline)
        assert len(detail["trials"]) == 4
        assert {t["state"] for t in detail["trials"]} == {"Complete", "Fail"}
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=30)
    assert server.returncode == 0, err
    assert f"at http://127.0.0.1:{port}/dashboard/" in out and "dashboard stopped" in out


def test_dashboard_finds_a_database_named_with_optuna_storage(tmp_path):
    """A run made with --optuna-storage sqlite:///elsewhere has no optuna.db of its own:
    the dashboard opens the named database instead of refusing the run."""
    from raystudy.platform.tracking.dashboard import run_storage_url

    elsewhere = f"sqlite:///{tmp_path / 'shared.db'}"
    run = tmp_path / "run"
    run.mkdir()
    (run / "raystudy.json").write_text(json.dumps({"optuna_storage": elsewhere}))
    assert run_storage_url(run) == elsewhere
    (run / "raystudy.json").write_text(json.dumps({"optuna_storage": None}))
    with pytest.raises(UserError, match="has no optuna.db"):
        run_storage_url(run)
